/*
 * The simulator's two levels (docs/simulator.md, "Hosts"): which host each
 * rank is on (ranks_per_host, the hosts array, uneven hosts), the transport
 * info that tells the core, and the cost model, hand-checked: a message
 * inside a host costs local_alpha + n local_beta and leaves the host's
 * link alone; messages between hosts cost alpha + n beta and queue on the
 * sending host's outgoing and the receiving host's incoming link; every
 * rank its own host gives the one-level numbers exactly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"
#include "redcoll/mock.h"
#include "test.h"

#define MAXR 16

/* What a rank program does: for each rank, whom it sends n bytes to and
 * whom it receives from (-1: nobody), in one exchange; and what info said. */
typedef struct {
  int to[MAXR], from[MAXR];
  size_t n;
  size_t charge[MAXR]; /* bytes reduced before the exchange */
  int rc[MAXR];
  redcoll_transport_info info[MAXR];
  int info_rc[MAXR];
  uint32_t hosts[MAXR][MAXR]; /* info.hosts copied, if not NULL */
} plan;

static int prog_plan(redcoll_comm *c, void *arg) {
  plan *pl = arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  memset(&pl->info[r], 0, sizeof pl->info[r]);
  pl->info_rc[r] = c->ops->info(c->impl, &pl->info[r]);
  if (pl->info[r].hosts != NULL)
    for (int i = 0; i < p; i++) pl->hosts[r][i] = pl->info[r].hosts[i];
  unsigned char sb[64], rb[64];
  memset(sb, r + 1, sizeof sb);
  int to = pl->to[r], from = pl->from[r];
  if (pl->charge[r] > 0) c->ops->charge(c->impl, pl->charge[r]);
  if (to < 0 && from < 0) return pl->rc[r] = REDCOLL_OK;
  if (to >= 0 && from >= 0) pl->rc[r] = raw_exchange(c, to, 5, sb, pl->n, from, 5, rb, pl->n);
  else if (to >= 0) pl->rc[r] = raw_send(c, to, 5, sb, pl->n);
  else pl->rc[r] = raw_recv(c, from, 5, rb, pl->n);
  if (pl->rc[r] == REDCOLL_OK && from >= 0 && pl->n > 0 && rb[0] != (unsigned char)(from + 1))
    pl->rc[r] = REDCOLL_EPROTO;
  return pl->rc[r];
}

/* A plan of p ranks in which nobody talks yet. */
static void plan_init(plan *pl, size_t n) {
  memset(pl, 0, sizeof *pl);
  for (int i = 0; i < MAXR; i++) pl->to[i] = pl->from[i] = -1;
  pl->n = n;
}
static void plan_msg(plan *pl, int src, int dst) {
  pl->to[src] = dst;
  pl->from[dst] = src;
}

/* alpha 1, beta 0.5, local_alpha 0.25, local_beta 0.125, and the seed. */
static redcoll_mock_config cfg_hosts(uint32_t per_host, uint64_t seed) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.alpha = 1;
  cfg.beta = 0.5;
  cfg.local_alpha = 0.25;
  cfg.local_beta = 0.125;
  cfg.ranks_per_host = per_host;
  cfg.seed = seed;
  return cfg;
}

/* Runs the plan and checks every rank returned OK. */
static void run_plan(int p, const redcoll_mock_config *cfg, plan *pl, redcoll_mock_stats *st) {
  CHECK_INT(redcoll_mock_run(p, cfg, prog_plan, pl, st), REDCOLL_OK);
  for (int r = 0; r < p; r++) CHECK_MSG(pl->rc[r] == REDCOLL_OK, "rank %d: %d", r, pl->rc[r]);
}

/* ---- which host -------------------------------------------------------------- */

static void test_info(void) {
  plan pl;
  redcoll_mock_stats st[MAXR];
  /* One level: no hosts, local costs as configured (0). */
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  plan_init(&pl, 8);
  run_plan(5, &cfg, &pl, st);
  for (int r = 0; r < 5; r++) {
    CHECK_INT(pl.info_rc[r], REDCOLL_OK);
    CHECK(pl.info[r].hosts == NULL);
    CHECK_DBL(pl.info[r].local_alpha, 0.0);
    CHECK_DBL(pl.info[r].local_beta, 0.0);
    CHECK_DBL(pl.info[r].alpha, 1.0);
  }
  /* ranks_per_host 1 is one level too. */
  cfg.ranks_per_host = 1;
  run_plan(5, &cfg, &pl, st);
  for (int r = 0; r < 5; r++) CHECK(pl.info[r].hosts == NULL);

  /* 3 per host over 7 ranks: hosts 0 0 0 1 1 1 2, on every rank. */
  cfg = cfg_hosts(3, 1);
  run_plan(7, &cfg, &pl, st);
  static const uint32_t want7[7] = {0, 0, 0, 1, 1, 1, 2};
  for (int r = 0; r < 7; r++) {
    CHECK(pl.info[r].hosts != NULL);
    CHECK(memcmp(pl.hosts[r], want7, sizeof want7) == 0);
    CHECK_DBL(pl.info[r].local_alpha, 0.25);
    CHECK_DBL(pl.info[r].local_beta, 0.125);
    CHECK_DBL(pl.info[r].alpha, 1.0);
    CHECK_DBL(pl.info[r].beta, 0.5);
  }

  /* An array wins over ranks_per_host, any values, copied by the run. */
  uint32_t *h = malloc(5 * sizeof *h);
  static const uint32_t want5[5] = {70, 3, 70, 3, 3};
  memcpy(h, want5, sizeof want5);
  cfg.hosts = h;
  run_plan(5, &cfg, &pl, st);
  for (int r = 0; r < 5; r++) CHECK(memcmp(pl.hosts[r], want5, sizeof want5) == 0);
  free(h);

  /* Every value different: every rank its own host, no hosts in info. */
  static const uint32_t distinct[4] = {9, 4, 7, 1};
  cfg.hosts = distinct;
  run_plan(4, &cfg, &pl, st);
  for (int r = 0; r < 4; r++) CHECK(pl.info[r].hosts == NULL);

  /* All on one host. */
  cfg.hosts = NULL;
  cfg.ranks_per_host = 100;
  run_plan(3, &cfg, &pl, st);
  static const uint32_t one[3] = {0, 0, 0};
  for (int r = 0; r < 3; r++) CHECK(memcmp(pl.hosts[r], one, sizeof one) == 0);
}

/* ---- the cost model ------------------------------------------------------------ */

/* Hosts A = {0, 1}, B = {2, 3}; n = 10 bytes, alpha 1, beta 0.5: n beta = 5.
 * 0 -> 2 and 1 -> 3 at once share A's outgoing and B's incoming link: the
 * first to match ends at 1 + 5 = 6, the second starts when the links are
 * free (5) and ends at 5 + 1 + 5 = 11 = alpha + 2 n beta.  Alone: 6. */
static void test_shared_host_link(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_hosts(2, seed);
    plan pl;
    redcoll_mock_stats st[6];
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2);
    plan_msg(&pl, 1, 3);
    run_plan(4, &cfg, &pl, st);
    double a = st[0].time, b = st[1].time;
    CHECK_DBL(st[2].time, a);
    CHECK_DBL(st[3].time, b);
    CHECK_DBL(a < b ? a : b, 6.0);
    CHECK_DBL(a < b ? b : a, 11.0);
    CHECK_INT(st[0].bytes_sent_host, 10);
    CHECK_INT(st[1].bytes_sent_host, 10);
    CHECK_INT(st[0].rounds, 1);
    CHECK_INT(st[1].rounds, 1);

    /* One alone: alpha + n beta. */
    plan_init(&pl, 10);
    plan_msg(&pl, 1, 3);
    run_plan(4, &cfg, &pl, st);
    CHECK_DBL(st[1].time, 6.0);
    CHECK_DBL(st[3].time, 6.0);

    /* Opposite directions use different links (full duplex): 0 -> 2 and
     * 3 -> 1 both end at 6. */
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2);
    plan_msg(&pl, 3, 1);
    run_plan(4, &cfg, &pl, st);
    for (int r = 0; r < 4; r++) CHECK_DBL(st[r].time, 6.0);

    /* Three hosts of 2: 0 -> 2 (A to B) and 1 -> 4 (A to C) share A's
     * outgoing link only: 6 and 11. */
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2);
    plan_msg(&pl, 1, 4);
    run_plan(6, &cfg, &pl, st);
    a = st[0].time, b = st[1].time;
    CHECK_DBL(a < b ? a : b, 6.0);
    CHECK_DBL(a < b ? b : a, 11.0);
  }
}

/* Inside a host: local_alpha + n local_beta = 0.25 + 10 * 0.125 = 1.5, and
 * the host's link stays free.  Rank 0 sends to 2 (between hosts: 6) and, in
 * the same exchange, receives from 1 (inside A: 1.5). */
static void test_local(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_hosts(2, seed);
    plan pl;
    redcoll_mock_stats st[4];
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2); /* A -> B */
    plan_msg(&pl, 1, 0); /* inside A */
    run_plan(4, &cfg, &pl, st);
    CHECK_DBL(st[1].time, 1.5);
    CHECK_DBL(st[0].time, 6.0);
    CHECK_DBL(st[2].time, 6.0);
    CHECK_INT(st[1].bytes_sent, 10);
    CHECK_INT(st[1].bytes_sent_host, 0);
    CHECK_INT(st[0].bytes_sent_host, 10);

    /* Two local messages at once on one host (0 -> 1, 1 -> 0) and two on
     * the other (2 -> 3, 3 -> 2): 1.5 each, no host link involved. */
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 1);
    plan_msg(&pl, 1, 0);
    plan_msg(&pl, 2, 3);
    plan_msg(&pl, 3, 2);
    run_plan(4, &cfg, &pl, st);
    for (int r = 0; r < 4; r++) CHECK_DBL(st[r].time, 1.5);
    for (int r = 0; r < 4; r++) CHECK_INT(st[r].bytes_sent_host, 0);
  }
}

/* Uneven hosts from an array: {70, 3, 70, 3, 3}: host 70 = {0, 2}, host 3
 * = {1, 3, 4}.  1 -> 0 and 3 -> 2 share host 3's outgoing and host 70's
 * incoming link (6 and 11); rank 4 stays quiet (time 0). */
static void test_uneven(void) {
  static const uint32_t h[5] = {70, 3, 70, 3, 3};
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_hosts(0, seed);
    cfg.hosts = h;
    plan pl;
    redcoll_mock_stats st[5];
    plan_init(&pl, 10);
    plan_msg(&pl, 1, 0);
    plan_msg(&pl, 3, 2);
    run_plan(5, &cfg, &pl, st);
    double a = st[1].time, b = st[3].time;
    CHECK_DBL(a < b ? a : b, 6.0);
    CHECK_DBL(a < b ? b : a, 11.0);
    CHECK_DBL(st[0].time, a);
    CHECK_DBL(st[2].time, b);
    CHECK_DBL(st[4].time, 0.0);

    /* 1 -> 4 inside host 3 and 0 -> 2 inside host 70: both local, 1.5. */
    plan_init(&pl, 10);
    plan_msg(&pl, 1, 4);
    plan_msg(&pl, 0, 2);
    run_plan(5, &cfg, &pl, st);
    CHECK_DBL(st[1].time, 1.5);
    CHECK_DBL(st[4].time, 1.5);
    CHECK_DBL(st[0].time, 1.5);
  }
}

/* Eager messages between hosts queue on the sending host's outgoing link:
 * 0 -> 2 and 1 -> 3, both eager, one starts at 0, the other at 5; each
 * sender returns at its transfer's end (6 and 11). */
static void test_eager(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_hosts(2, seed);
    cfg.eager_limit = 64;
    plan pl;
    redcoll_mock_stats st[4];
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2);
    plan_msg(&pl, 1, 3);
    run_plan(4, &cfg, &pl, st);
    double a = st[0].time, b = st[1].time;
    CHECK_DBL(a < b ? a : b, 6.0);
    CHECK_DBL(a < b ? b : a, 11.0);
    CHECK_DBL(st[2].time, a);
    CHECK_DBL(st[3].time, b);
  }
}

/* Transfers take a host link in the order of their ready times, whatever
 * order the scheduler matched them in: rank 0 first reduces 100 bytes at
 * gamma 1 and sends to 2 at 100, rank 1 sends to 3 at 0.  1 -> 3 ends at
 * 6, 0 -> 2 at 100 + 6 = 106, for every seed. */
static void test_ready_order(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_hosts(2, seed);
    cfg.gamma = 1;
    plan pl;
    redcoll_mock_stats st[4];
    plan_init(&pl, 10);
    plan_msg(&pl, 0, 2);
    plan_msg(&pl, 1, 3);
    pl.charge[0] = 100;
    run_plan(4, &cfg, &pl, st);
    CHECK_DBL(st[1].time, 6.0);
    CHECK_DBL(st[3].time, 6.0);
    CHECK_DBL(st[0].time, 106.0);
    CHECK_DBL(st[2].time, 106.0);
    /* 0 sends at 3 instead: the link is busy until 5, so 0 -> 2 starts
     * at 5 and ends at 11. */
    pl.charge[0] = 3;
    run_plan(4, &cfg, &pl, st);
    CHECK_DBL(st[1].time, 6.0);
    CHECK_DBL(st[0].time, 11.0);
  }
}

/* ---- one level unchanged ----------------------------------------------------- */

typedef struct {
  redcoll_algo algo;
  int nonblocking;        /* two iallreduces at once (posted exchanges), then wait */
  double out[MAXR][40];
  double out2[MAXR][40];
  int rc[MAXR];
} coll_arg;

static int prog_allreduce(redcoll_comm *c, void *arg) {
  coll_arg *a = arg;
  int r = redcoll_comm_rank(c);
  double in[40];
  for (int i = 0; i < 40; i++) in[i] = r * 40 + i;
  int rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, a->algo);
  if (rc == REDCOLL_OK && a->nonblocking) {
    redcoll_request *q[2] = {NULL, NULL};
    rc = redcoll_iallreduce(c, in, a->out[r], 40, REDCOLL_FLOAT64, REDCOLL_SUM, &q[0]);
    if (rc == REDCOLL_OK)
      rc = redcoll_iallreduce(c, in, a->out2[r], 40, REDCOLL_FLOAT64, REDCOLL_SUM, &q[1]);
    int rc2 = redcoll_waitall(q, rc == REDCOLL_OK ? 2 : (q[0] != NULL));
    if (rc == REDCOLL_OK) rc = rc2;
  } else if (rc == REDCOLL_OK) {
    rc = redcoll_allreduce(c, in, a->out[r], 40, REDCOLL_FLOAT64, REDCOLL_SUM);
  }
  return a->rc[r] = rc;
}

/* ranks_per_host 0 and 1, and an array of distinct hosts, give the same
 * statistics as the default configuration (local costs set or not), for
 * allreduces whose numbers are not round. */
static void test_one_level(void) {
  static const redcoll_algo algos[] = {REDCOLL_ALGO_RING, REDCOLL_ALGO_RECURSIVE_DOUBLING,
                                       REDCOLL_ALGO_ELIMINATION};
  uint32_t distinct[11];
  for (int i = 0; i < 11; i++) distinct[i] = (uint32_t)(100 - 7 * i);
  for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++) {
    coll_arg a;
    memset(&a, 0, sizeof a);
    a.algo = algos[k];
    redcoll_mock_config base;
    redcoll_mock_config_init(&base);
    base.alpha = 1.3, base.beta = 0.0071, base.gamma = 0.0003;
    redcoll_mock_stats ref[11], st[11];
    CHECK_INT(redcoll_mock_run(11, &base, prog_allreduce, &a, ref), REDCOLL_OK);
    for (int v = 0; v < 3; v++) {
      redcoll_mock_config cfg = base;
      cfg.local_alpha = 0.01, cfg.local_beta = 0.0001;
      if (v < 2) cfg.ranks_per_host = (uint32_t)v;
      else cfg.hosts = distinct;
      CHECK_INT(redcoll_mock_run(11, &cfg, prog_allreduce, &a, st), REDCOLL_OK);
      for (int r = 0; r < 11; r++) {
        CHECK_DBL(st[r].time, ref[r].time);
        CHECK_INT(st[r].rounds, ref[r].rounds);
        CHECK_INT(st[r].bytes_sent, ref[r].bytes_sent);
        CHECK_INT(st[r].bytes_sent_host, ref[r].bytes_sent);
      }
    }
  }
}

/* A two-host allreduce: the same result on every rank as the sum, the same
 * trace for the same seed, and the bytes between hosts counted. */
static void test_allreduce_hosts(void) {
  coll_arg a;
  memset(&a, 0, sizeof a);
  a.algo = REDCOLL_ALGO_RING;
  redcoll_mock_config cfg = cfg_hosts(4, 3);
  char *tr[2] = {NULL, NULL};
  size_t trn[2];
  redcoll_mock_stats st[8];
  for (int k = 0; k < 2; k++) {
    FILE *f = open_memstream(&tr[k], &trn[k]);
    cfg.trace = f;
    CHECK_INT(redcoll_mock_run(8, &cfg, prog_allreduce, &a, st), REDCOLL_OK);
    fclose(f);
  }
  CHECK(trn[0] > 0 && trn[0] == trn[1] && memcmp(tr[0], tr[1], trn[0]) == 0);
  for (int r = 0; r < 8; r++)
    for (int i = 0; i < 40; i++) CHECK_DBL(a.out[r][i], 8.0 * i + 40.0 * 28);
  /* Each rank's bytes to the other host, from the trace's lines. */
  uint64_t want[8] = {0};
  int nlines = 0;
  for (char *line = tr[0]; line != NULL && *line != '\0'; nlines++) {
    int src, dst;
    unsigned long long bytes;
    char *b = strstr(line, " bytes=");
    CHECK(sscanf(line, "msg=%*d src=%d dst=%d", &src, &dst) == 2 && b != NULL &&
          sscanf(b, " bytes=%llu", &bytes) == 1);
    if (src / 4 != dst / 4) want[src] += bytes;
    line = strchr(line, '\n');
    if (line != NULL) line++;
  }
  CHECK(nlines > 0);
  uint64_t total = 0;
  for (int r = 0; r < 8; r++) {
    CHECK_INT(st[r].bytes_sent_host, want[r]);
    total += want[r];
  }
  CHECK(total > 0);
  free(tr[0]);
  free(tr[1]);
}

/* Blocking collectives over hosts give the same clocks and volumes for
 * every seed (the host links are taken in ready-time order), on even and
 * uneven hosts; two nonblocking ones at once (posted exchanges) give the
 * right sums and the same volumes. */
static void test_seeds(void) {
  static const redcoll_algo algos[] = {REDCOLL_ALGO_RING, REDCOLL_ALGO_HALVING_DOUBLING,
                                       REDCOLL_ALGO_ELIMINATION, REDCOLL_ALGO_BINARY_TREE};
  static const uint32_t uneven[12] = {1, 1, 1, 1, 1, 2, 2, 2, 0, 1, 2, 3};
  for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++) {
    for (int v = 0; v < 2; v++) {
      coll_arg a;
      memset(&a, 0, sizeof a);
      a.algo = algos[k];
      redcoll_mock_stats ref[12], st[12];
      for (uint64_t seed = 1; seed <= 5; seed++) {
        redcoll_mock_config cfg = cfg_hosts(v == 0 ? 4 : 0, seed);
        cfg.beta = 0.01, cfg.local_beta = 0.001, cfg.gamma = 0.0005;
        if (v == 1) cfg.hosts = uneven;
        CHECK_INT(redcoll_mock_run(12, &cfg, prog_allreduce, &a, seed == 1 ? ref : st),
                  REDCOLL_OK);
        for (int r = 0; r < 12; r++)
          for (int i = 0; i < 40; i++) CHECK_DBL(a.out[r][i], 12.0 * i + 40.0 * 66);
        if (seed == 1) continue;
        for (int r = 0; r < 12; r++) {
          CHECK_DBL(st[r].time, ref[r].time);
          CHECK_INT(st[r].rounds, ref[r].rounds);
          CHECK_INT(st[r].bytes_sent_host, ref[r].bytes_sent_host);
        }
      }
      /* Nonblocking: twice the volume of one blocking allreduce. */
      a.nonblocking = 1;
      for (uint64_t seed = 1; seed <= 3; seed++) {
        redcoll_mock_config cfg = cfg_hosts(v == 0 ? 4 : 0, seed);
        cfg.beta = 0.01, cfg.local_beta = 0.001;
        if (v == 1) cfg.hosts = uneven;
        CHECK_INT(redcoll_mock_run(12, &cfg, prog_allreduce, &a, st), REDCOLL_OK);
        for (int r = 0; r < 12; r++) {
          for (int i = 0; i < 40; i++) {
            CHECK_DBL(a.out[r][i], 12.0 * i + 40.0 * 66);
            CHECK_DBL(a.out2[r][i], 12.0 * i + 40.0 * 66);
          }
          CHECK_INT(st[r].bytes_sent_host, 2 * ref[r].bytes_sent_host);
          CHECK(st[r].time > 0);
        }
      }
    }
  }
}

TEST_MAIN(TEST(test_info), TEST(test_shared_host_link), TEST(test_local), TEST(test_uneven),
          TEST(test_eager), TEST(test_ready_order), TEST(test_one_level),
          TEST(test_allreduce_hosts), TEST(test_seeds))
