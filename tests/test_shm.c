/*
 * The shared-memory transport with its ranks as processes (shm_runner.h);
 * the transport-independent cases are in test_conformance.c (runners shm
 * and shm_queue), the queue itself in test_shm_queue.c.
 *
 *   colls_cma, colls_queue   allreduce, reduce, allgather and bcast of 1 to
 *            300000 doubles on 5 and 8 ranks (8: more ranks than cores),
 *            every element checked, with cross-memory attach and with the
 *            queue fallback forced; uses_cma says which one ran.
 *   comms    two threads per process on the world and its dup at once,
 *            then a split into halves, one destroyed while the other goes on.
 *   kill9    one of 5 ranks is killed (SIGKILL) in the middle of a loop of
 *            1 MiB allreduces: every survivor fails (REDCOLL_ETRANSPORT or
 *            REDCOLL_EABORTED, at least one ETRANSPORT) within 3 s.
 *   sigstop  one of 5 ranks is stopped (SIGSTOP) mid-loop under a 400 ms
 *            deadline per collective: every survivor fails by its deadline
 *            (REDCOLL_ETIMEDOUT or REDCOLL_EABORTED, at least one
 *            ETIMEDOUT) within 3 s, and none waits for the 30 s timeout.
 *            In both the signal comes 400 ms after the start, and not
 *            before every rank has finished two allreduces (the deadline
 *            applies from the third on).
 *   stale_name        a name left by a job whose creator was killed before
 *            the others came, and one never initialised: a new job with the
 *            name runs, and leaves nothing in /dev/shm.
 *   two_jobs          two jobs of 4 ranks on this host at once.
 *   disagree          ranks that disagree where their messages may never
 *            meet (rank 0 allreduce on float32, the others on int32; rank 0
 *            bcast, the others allreduce; rank 1 barrier, the others
 *            allreduce), p = 3, 5, 7: REDCOLL_EMISMATCH on a rank that
 *            holds a message of the same collective number with another
 *            call, REDCOLL_EABORTED on the others, none at the timeout.
 *   name_in_use       a second job given a name a live job is using is
 *            refused (REDCOLL_EINVAL); the first job goes on.
 *   create_timeout    a rank that never comes: the others' creation fails
 *            with REDCOLL_ETIMEDOUT and the name is removed.
 *   from_env          REDCOLL_RANK, REDCOLL_SIZE, REDCOLL_JOB_ID, and
 *            REDCOLL_SHM_CMA=0 for the fallback.
 *   bad_config        configurations refused with REDCOLL_EINVAL.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/uio.h>

#include "test.h"
#include "disagree.h"
#include "shm_runner.h"
#include "../src/transport/shm/shm_int.h"
#ifdef REDCOLL_TEST_TCP
#include "tcp_runner.h"
#endif

static void *shared_new(size_t n) {
  void *s = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  memset(s, 0, n);
  return s;
}

/* Whether this kernel lets a process read a sibling's memory: what
 * REDCOLL_SHM_COPY_AUTO should find. */
static int cma_allowed(void) {
  static volatile uint64_t word = 0x1234567890abcdefull;
  int fds[2];
  if (pipe(fds) != 0) return 0;
  pid_t a = fork();
  if (a == 0) {
    char c;
    if (read(fds[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  pid_t b = fork();
  if (b == 0) {
    uint64_t got = 0;
    struct iovec l = {&got, sizeof got}, r = {(void *)&word, sizeof got};
    ssize_t n = process_vm_readv(a, &l, 1, &r, 1, 0);
    _exit(n == (ssize_t)sizeof got && got == word ? 0 : 1);
  }
  int ws = 0;
  waitpid(b, &ws, 0);
  if (write(fds[1], "x", 1) != 1) kill(a, SIGKILL);
  waitpid(a, NULL, 0);
  close(fds[0]);
  close(fds[1]);
  return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

/* ---- collectives ---------------------------------------------------------- */

typedef struct colls_out {
  int bad[64];
  int cma[64][64];
  int local[64][64];
} colls_out;

static const size_t counts[] = {1, 7, 1000, 5000, 300000};
static double val(int r, size_t i) { return (double)(r * 1000 + (int)(i % 1000)); }

static int colls_rank(redcoll_comm *c, void *arg) {
  colls_out *o = arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c), bad = 0;
  for (int s = 0; s < p; s++) {
    o->cma[r][s] = s == r ? -1 : redcoll_shm_comm_uses_cma(c, s);
    o->local[r][s] = redcoll_shm_comm_is_local(c, s);
  }
  size_t maxn = 300000;
  double *in = malloc(maxn * sizeof *in), *out = malloc(maxn * (size_t)p * sizeof *out);
  if (in == NULL || out == NULL) return REDCOLL_ENOMEM;
  int rc = REDCOLL_OK;
  for (size_t k = 0; k < sizeof counts / sizeof counts[0] && rc == REDCOLL_OK; k++) {
    size_t n = counts[k];
    for (size_t i = 0; i < n; i++) in[i] = val(r, i);
    double sum0 = 0;
    for (int q = 0; q < p; q++) sum0 += q * 1000;
    rc = redcoll_allreduce(c, in, out, n, REDCOLL_FLOAT64, REDCOLL_SUM);
    for (size_t i = 0; i < n && rc == REDCOLL_OK; i++) bad += out[i] != sum0 + p * (double)(i % 1000);
    int root = (int)(k % (size_t)p);
    if (rc == REDCOLL_OK) rc = redcoll_reduce(c, in, out, n, REDCOLL_FLOAT64, REDCOLL_MAX, root);
    for (size_t i = 0; i < n && rc == REDCOLL_OK && r == root; i++) bad += out[i] != val(p - 1, i);
    if (rc == REDCOLL_OK && n * (size_t)p <= maxn * (size_t)p)
      rc = redcoll_allgather(c, in, out, n, REDCOLL_FLOAT64);
    for (int q = 0; q < p && rc == REDCOLL_OK; q++)
      for (size_t i = 0; i < n; i++) bad += out[(size_t)q * n + i] != val(q, i);
    if (r == root) memcpy(out, in, n * sizeof *in);
    if (rc == REDCOLL_OK) rc = redcoll_bcast(c, out, n, REDCOLL_FLOAT64, root);
    for (size_t i = 0; i < n && rc == REDCOLL_OK; i++) bad += out[i] != val(root, i);
  }
  free(in);
  free(out);
  o->bad[r] = bad;
  return rc;
}

static void colls_with(int copy, int expect_cma) {
  static const int ps[] = {5, 8};
  for (size_t k = 0; k < 2; k++) {
    int p = ps[k];
    colls_out *o = shared_new(sizeof *o);
    shm_run_opts opts;
    shm_run_opts_init(&opts);
    opts.copy = copy;
    CHECK_MSG(shm_run_opts_run(p, colls_rank, o, &opts) == REDCOLL_OK, "p=%d copy=%d", p, copy);
    for (int r = 0; r < p; r++) {
      CHECK_MSG(o->bad[r] == 0, "p=%d rank %d: %d wrong elements", p, r, o->bad[r]);
      for (int s = 0; s < p; s++) {
        if (s != r) CHECK_INT(o->cma[r][s], expect_cma);
        CHECK_INT(o->local[r][s], 1);
      }
    }
    munmap(o, sizeof *o);
  }
}

static void colls_cma(void) {
  int allowed = cma_allowed();
  printf("cross-memory attach %s here\n", allowed ? "allowed" : "not allowed");
  colls_with(REDCOLL_SHM_COPY_AUTO, allowed);
}

static void colls_queue(void) { colls_with(REDCOLL_SHM_COPY_QUEUE, 0); }

/* ---- communicators and threads -------------------------------------------- */

#define COMM_ITERS 200

typedef struct comm_worker {
  redcoll_comm *c;
  int bad, status;
} comm_worker;

static void *comm_thread(void *vp) {
  comm_worker *w = vp;
  int r = redcoll_comm_rank(w->c), p = redcoll_comm_size(w->c);
  for (int it = 0; it < COMM_ITERS && w->status == REDCOLL_OK; it++) {
    /* Every tenth one large enough for cross-memory attach. */
    size_t n = it % 10 == 0 ? 20000 : 3;
    int64_t *v = malloc(n * 2 * sizeof *v);
    if (v == NULL) {
      w->status = REDCOLL_ENOMEM;
      break;
    }
    for (size_t i = 0; i < n; i++) v[i] = r + it + (int64_t)i;
    w->status = redcoll_allreduce(w->c, v, v + n, n, REDCOLL_INT64, REDCOLL_SUM);
    for (size_t i = 0; i < n && w->status == REDCOLL_OK; i++)
      w->bad += v[n + i] != (int64_t)p * (p - 1) / 2 + (int64_t)p * (it + (int64_t)i);
    free(v);
  }
  return NULL;
}

typedef struct comms_out {
  int bad[8], half_rc[8], world_rc[8];
} comms_out;

static int comms_rank(redcoll_comm *world, void *arg) {
  comms_out *o = arg;
  int w = redcoll_comm_rank(world), p = redcoll_comm_size(world);
  redcoll_comm *dup = NULL, *half = NULL;
  int rc = redcoll_comm_dup(world, &dup);
  if (rc != REDCOLL_OK) return rc;
  comm_worker a = {world, 0, REDCOLL_OK}, b = {dup, 0, REDCOLL_OK};
  pthread_t t;
  if (pthread_create(&t, NULL, comm_thread, &b) != 0) return REDCOLL_ENOMEM;
  comm_thread(&a);
  pthread_join(t, NULL);
  redcoll_comm_destroy(dup);
  o->bad[w] = a.bad + b.bad;
  if (a.status != REDCOLL_OK || b.status != REDCOLL_OK)
    return a.status != REDCOLL_OK ? a.status : b.status;
  rc = redcoll_comm_split(world, w < p / 2, w, &half);
  if (rc != REDCOLL_OK) return rc;
  int x = w, y = -1;
  o->half_rc[w] = redcoll_allreduce(half, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM);
  int want = 0;
  for (int q = 0; q < p; q++)
    if ((q < p / 2) == (w < p / 2)) want += q;
  o->bad[w] += y != want;
  redcoll_comm_destroy(half);
  o->world_rc[w] = redcoll_allreduce(world, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM);
  o->bad[w] += y != p * (p - 1) / 2;
  return REDCOLL_OK;
}

static void comms(void) {
  comms_out *o = shared_new(sizeof *o);
  CHECK_INT(shm_run(5, comms_rank, o), REDCOLL_OK);
  for (int r = 0; r < 5; r++) {
    CHECK_MSG(o->bad[r] == 0, "rank %d: %d bad", r, o->bad[r]);
    CHECK_INT(o->half_rc[r], REDCOLL_OK);
    CHECK_INT(o->world_rc[r], REDCOLL_OK);
  }
  munmap(o, sizeof *o);
}

/* ---- faults ------------------------------------------------------------------- */

typedef struct fault_out {
  int rc[8];
  int iters[8];
  double took[8];
  uint64_t deadline_ms;
  int ready; /* ranks past their second allreduce */
} fault_out;

/* Allreduces of 1 MiB until one fails (or 100000 of them). */
static int loop_rank(redcoll_comm *c, void *arg) {
  fault_out *o = arg;
  int r = redcoll_comm_rank(c);
  size_t n = (size_t)1 << 17;
  double *v = calloc(2 * n, sizeof *v);
  if (v == NULL) return REDCOLL_ENOMEM;
  int rc = REDCOLL_OK, it = 0;
  for (; it < 100000 && rc == REDCOLL_OK; it++) {
    if (it == 2) {
      /* The deadline from here: the first collective, which calibrates,
       * may take longer on a loaded machine. */
      if (o->deadline_ms != 0) redcoll_comm_set_deadline(c, o->deadline_ms);
      __atomic_add_fetch(&o->ready, 1, __ATOMIC_ACQ_REL);
    }
    rc = redcoll_allreduce(c, v, v + n, n, REDCOLL_FLOAT64, REDCOLL_SUM);
  }
  free(v);
  o->rc[r] = rc;
  o->iters[r] = it;
  return REDCOLL_OK; /* the failure is in o->rc */
}

static void fault_run(int sig, uint64_t deadline_ms, int want_first, int want_other) {
  const int p = 5, victim = 2, after_ms = 400;
  fault_out *o = shared_new(sizeof *o);
  o->deadline_ms = deadline_ms;
  for (int r = 0; r < p; r++) o->rc[r] = 1;
  shm_run_opts opts;
  shm_run_opts_init(&opts);
  opts.signal_rank = victim;
  opts.signal_no = sig;
  opts.signal_after_ms = after_ms;
  /* Not before every rank is in the loop (a loaded machine may take longer
   * than after_ms to get there). */
  opts.signal_gate = &o->ready;
  opts.signal_gate_min = p;
  opts.timeout_ms = 30000;
  opts.deadline_s = 60;
  shm_run_opts_run(p, loop_rank, o, &opts);
  int first = 0;
  for (int r = 0; r < p; r++) {
    if (r == victim) {
      CHECK_INT(opts.statuses[r], REDCOLL_ETRANSPORT); /* died of the signal */
      continue;
    }
    CHECK_INT(opts.statuses[r], REDCOLL_OK);
    CHECK_MSG(o->rc[r] == want_first || o->rc[r] == want_other, "rank %d returned %s", r,
              redcoll_status_name(o->rc[r]));
    first += o->rc[r] == want_first;
    CHECK_MSG(o->iters[r] > 1 && o->iters[r] < 100000, "rank %d: %d iterations", r, o->iters[r]);
    CHECK_MSG(opts.took_s[r] < opts.signal_at_s + 3.0, "rank %d ended %.2f s after the signal", r,
              opts.took_s[r] - opts.signal_at_s);
  }
  CHECK_MSG(first >= 1, "no survivor saw %s itself", redcoll_status_name(want_first));
  munmap(o, sizeof *o);
}

static void kill9(void) { fault_run(SIGKILL, 0, REDCOLL_ETRANSPORT, REDCOLL_EABORTED); }
static void sigstop(void) { fault_run(SIGSTOP, 400, REDCOLL_ETIMEDOUT, REDCOLL_EABORTED); }

/* ---- names -------------------------------------------------------------------- */

static int small_rank(redcoll_comm *c, void *arg) {
  (void)arg;
  int p = redcoll_comm_size(c), x = redcoll_comm_rank(c), y = -1;
  int rc = redcoll_allreduce(c, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM);
  if (rc == REDCOLL_OK && y != p * (p - 1) / 2) rc = REDCOLL_EPROTO;
  return rc;
}

static int create_status(int rank, int p, const char *name, uint64_t timeout_ms) {
  redcoll_shm_config cfg;
  redcoll_shm_config_init(&cfg);
  cfg.rank = rank;
  cfg.size = p;
  cfg.name = name;
  cfg.wait_timeout_ms = timeout_ms;
  redcoll_comm *c = NULL;
  int rc = redcoll_shm_comm_create(&cfg, &c);
  redcoll_comm_destroy(c);
  return rc;
}

static void stale_name(void) {
  char name[64];
  shm_run_fresh_name(name, sizeof name);
  /* A rank 0 that made the segment and was killed waiting for rank 1. */
  pid_t pid = fork();
  if (pid == 0) _exit(-create_status(0, 2, name, 60000));
  for (int i = 0; i < 2000 && !shm_run_name_exists(name); i++) usleep(1000);
  CHECK(shm_run_name_exists(name));
  usleep(20000);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  CHECK(shm_run_name_exists(name)); /* left behind */
  shm_run_opts o;
  shm_run_opts_init(&o);
  o.name = name;
  /* Rank 1 first, so that it finds the stale segment before rank 0 replaces it. */
  o.start_delay_ms[0] = 100;
  CHECK_INT(shm_run_opts_run(3, small_rank, NULL, &o), REDCOLL_OK);
  CHECK(!shm_run_name_exists(name));

  /* A name never initialised (its creator died before writing the header),
   * older than 5 s. */
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0);
  if (fd >= 0) {
    struct timespec old[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
    CHECK_INT(futimens(fd, old), 0);
    close(fd);
  }
  shm_run_opts_init(&o);
  o.name = name;
  CHECK_INT(shm_run_opts_run(3, small_rank, NULL, &o), REDCOLL_OK);
  CHECK(!shm_run_name_exists(name));
}

/* disagree (disagree.h): mode and count in, each rank's status and that of
 * a barrier after it out. */
typedef struct disagree_out {
  int mode;
  size_t n;
  int st[8], next[8];
} disagree_out;

static int disagree_rank(redcoll_comm *c, void *arg) {
  disagree_out *o = arg;
  int r = redcoll_comm_rank(c);
  o->st[r] = disagree_call(c, o->mode, o->n);
  o->next[r] = redcoll_barrier(c);
  return REDCOLL_OK;
}

static void disagree(void) {
  disagree_out *o = shared_new(sizeof *o);
  /* A wait for the timeout would show as REDCOLL_ETIMEDOUT. */
  CHECK_INT(setenv("REDCOLL_TIMEOUT_MS", "60000", 1), 0);
  for (int p = 3; p <= 7; p += 2)
    for (int mode = 0; mode < DISAGREE_MODES; mode++)
      for (size_t n = 1; n <= 1000; n *= 1000) {
        memset(o, 0, sizeof *o);
        o->mode = mode;
        o->n = n;
        CHECK_INT(shm_run(p, disagree_rank, o), REDCOLL_OK);
        disagree_check(p, mode, n, o->st, o->next, 1);
      }
  unsetenv("REDCOLL_TIMEOUT_MS");
  munmap(o, sizeof *o);
}

static void two_jobs(void) {
  pid_t kids[2];
  for (int j = 0; j < 2; j++) {
    kids[j] = fork();
    if (kids[j] == 0) {
      colls_out *o = shared_new(sizeof *o);
      int rc = shm_run(4, colls_rank, o);
      for (int r = 0; r < 4; r++)
        if (o->bad[r] != 0) rc = REDCOLL_EPROTO;
      _exit(rc == REDCOLL_OK ? 0 : 1);
    }
  }
  for (int j = 0; j < 2; j++) {
    int ws = 0;
    waitpid(kids[j], &ws, 0);
    CHECK_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "job %d failed", j);
  }
}

static void name_in_use(void) {
  char name[64];
  shm_run_fresh_name(name, sizeof name);
  pid_t job = fork();
  if (job == 0) {
    shm_run_opts o;
    shm_run_opts_init(&o);
    o.name = name;
    o.start_delay_ms[1] = 1500; /* the segment stays named meanwhile */
    _exit(shm_run_opts_run(2, small_rank, NULL, &o) == REDCOLL_OK ? 0 : 1);
  }
  for (int i = 0; i < 1000 && !shm_run_name_exists(name); i++) usleep(1000);
  CHECK(shm_run_name_exists(name));
  /* Another job's rank 0, and another job's rank 1 (taken: a live rank 1
   * cannot be told from a stranger, so it is refused or it must wait). */
  CHECK_INT(create_status(0, 2, name, 500), REDCOLL_EINVAL);
  int ws = 0;
  waitpid(job, &ws, 0);
  CHECK_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the first job failed");
  CHECK(!shm_run_name_exists(name));
}

static void create_timeout(void) {
  shm_run_opts o;
  shm_run_opts_init(&o);
  o.timeout_ms = 500;
  o.start_delay_ms[2] = 3000; /* comes after the others gave up, and times out itself */
  int rc = shm_run_opts_run(3, small_rank, NULL, &o);
  CHECK_INT(rc, REDCOLL_ETIMEDOUT);
  CHECK_INT(o.statuses[0], REDCOLL_ETIMEDOUT);
  CHECK_INT(o.statuses[1], REDCOLL_ETIMEDOUT);
  CHECK_INT(o.statuses[2], REDCOLL_ETIMEDOUT);
  CHECK_MSG(o.took_s[0] < 2.5 && o.took_s[1] < 2.5, "took %.2f and %.2f s", o.took_s[0], o.took_s[1]);
}

/* ---- environment ----------------------------------------------------------- */

static int env_child(int rank, int p, const char *job, const char *cma, int *uses) {
  char rs[16], ps[16];
  snprintf(rs, sizeof rs, "%d", rank);
  snprintf(ps, sizeof ps, "%d", p);
  setenv("REDCOLL_RANK", rs, 1);
  setenv("REDCOLL_SIZE", ps, 1);
  setenv("REDCOLL_JOB_ID", job, 1);
  unsetenv("REDCOLL_SHM_NAME");
  if (cma != NULL) setenv("REDCOLL_SHM_CMA", cma, 1);
  else unsetenv("REDCOLL_SHM_CMA");
  redcoll_comm *c = NULL;
  int rc = redcoll_shm_comm_create_from_env(&c);
  if (rc == REDCOLL_OK) {
    *uses = redcoll_shm_comm_uses_cma(c, (rank + 1) % p);
    rc = small_rank(c, NULL);
  }
  redcoll_comm_destroy(c);
  return rc;
}

static void from_env(void) {
  int allowed = cma_allowed();
  for (int mode = 0; mode < 2; mode++) {
    int *uses = shared_new(4 * sizeof *uses);
    char job[64];
    snprintf(job, sizeof job, "test-%d-%d", (int)getpid(), mode);
    pid_t kids[4];
    for (int r = 0; r < 4; r++) {
      kids[r] = fork();
      if (kids[r] == 0) _exit(-env_child(r, 4, job, mode ? "0" : NULL, &uses[r]));
    }
    for (int r = 0; r < 4; r++) {
      int ws = 0;
      waitpid(kids[r], &ws, 0);
      CHECK_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "mode %d rank %d: exit %d", mode, r,
                WEXITSTATUS(ws));
      CHECK_INT(uses[r], mode ? 0 : allowed);
    }
    munmap(uses, 4 * sizeof *uses);
  }
  /* Neither a name nor anything to derive one from. */
  pid_t k = fork();
  if (k == 0) {
    setenv("REDCOLL_RANK", "0", 1);
    setenv("REDCOLL_SIZE", "2", 1);
    unsetenv("REDCOLL_JOB_ID");
    unsetenv("REDCOLL_MASTER");
    unsetenv("REDCOLL_HOSTS");
    unsetenv("REDCOLL_SHM_NAME");
    setenv("REDCOLL_LOG_LEVEL", "none", 1);
    redcoll_shm_config cfg;
    _exit(redcoll_shm_config_from_env(&cfg) == REDCOLL_EINVAL ? 0 : 1);
  }
  int ws = 0;
  waitpid(k, &ws, 0);
  CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static void bad_config(void) {
  redcoll_shm_config cfg;
  redcoll_shm_config_init(&cfg);
  redcoll_comm *c = (redcoll_comm *)1;
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL); /* rank, size unset */
  CHECK(c == NULL);
  cfg.rank = 0;
  cfg.size = 2;
  cfg.name = "/a/b";
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL);
  cfg.name = "";
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL);
  cfg.name = "ok";
  cfg.queue_bytes = 5000;
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL);
  cfg.queue_bytes = 0;
  cfg.copy = 7;
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL);
  cfg.copy = 0;
  cfg.size = REDCOLL_SHM_MAX_SIZE + 1;
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_EINVAL);
  CHECK_INT(redcoll_shm_comm_uses_cma(NULL, 0), REDCOLL_EINVAL);
  /* One rank: no segment at all. */
  cfg.size = 1;
  CHECK_INT(redcoll_shm_comm_create(&cfg, &c), REDCOLL_OK);
  CHECK_INT(redcoll_shm_comm_uses_cma(c, 0), REDCOLL_EINVAL);
  int x = 5, y = 0;
  CHECK_INT(redcoll_allreduce(c, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(y, 5);
  redcoll_comm_destroy(c);
}


/* ---- inside TCP --------------------------------------------------------------- */

/* The CPUs this process may run on. */
static int my_cpus(void) {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

/* Does this process's mask hold a CPU beyond the words the library
 * exchanges?  Then the library counts the online CPUs instead. */
static int mask_beyond(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  for (int c = 64 * REDCOLL__CPU_MASK_WORDS; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) return 1;
  return 0;
}

/* The CPUs the library counts for ranks with this process's mask. */
static int lib_cpus(void) {
  return mask_beyond() ? (int)sysconf(_SC_NPROCESSORS_ONLN) : my_cpus();
}

static int shm_cpus_rank(redcoll_comm *c, void *arg) {
  double *out = arg;
  return redcoll_comm_get_ranks_per_cpu(c, &out[redcoll_comm_rank(c)]);
}

/* A shared-memory communicator counts the CPUs its ranks may run on
 * together (the union of their affinity masks, exchanged in the segment),
 * not the online ones, and every rank gets the same ranks per CPU: all
 * three ranks pinned to CPU 0 make 3; four ranks pinned one each to CPU 0
 * or 1 make 2, though each one's own mask holds one CPU. */
static void shm_cpus(void) {
  int cpus = lib_cpus();
  cpu_set_t saved;
  CHECK_INT(sched_getaffinity(0, sizeof saved, &saved), 0);
  int have01 = CPU_ISSET(0, &saved) && CPU_ISSET(1, &saved);
  for (int mode = 0; mode < 3; mode++) {
    if (mode > 0 && !CPU_ISSET(0, &saved)) {
      printf("note: CPU 0 is not ours; shm_cpus ran unpinned only\n");
      break;
    }
    if (mode == 2 && !have01) {
      printf("note: CPUs 0 and 1 are not both ours; shm_cpus's split mode did not run\n");
      break;
    }
    int p = mode == 1 ? 3 : 4;
    double want = mode == 0 ? (double)p / (double)cpus : mode == 1 ? 3 : 2;
    if (want < 1) want = 1;
    shm_run_opts opts;
    shm_run_opts_init(&opts);
    for (int r = 0; r < p && mode > 0; r++) opts.pin[r] = 1 + (mode == 2 ? r % 2 : 0);
    double *f = shared_new((size_t)p * sizeof *f);
    CHECK_MSG(shm_run_opts_run(p, shm_cpus_rank, f, &opts) == REDCOLL_OK, "mode %d", mode);
    for (int r = 0; r < p; r++)
      CHECK_MSG(f[r] == want, "mode %d rank %d: ranks per CPU %g, want %g", mode, r, f[r], want);
    munmap(f, (size_t)p * sizeof *f);
  }
}

#ifdef REDCOLL_TEST_TCP
/* Options of a TCP run with the shared-memory path, rank r on fake host
 * hosts[r] (NULL: all on this host). */
static void hosts_opts(tcp_run_opts *o, const char *const *hosts) {
  memset(o, 0, sizeof *o);
  o->shm = 1;
  for (int r = 0; r < 5 && hosts != NULL; r++) o->shm_hosts[r] = hosts[r];
}

/* Ranks 0-1 on host A, 2-4 on host B (REDCOLL_SHM_HOST_ID), or all on this
 * host, or shared memory off: which pairs are local, and collectives whose
 * exchanges mix both paths, every element checked. */
static void tcp_hosts(void) {
  static const char *const two[5] = {"A", "A", "B", "B", "B"};
  for (int mode = 0; mode < 3; mode++) {
    colls_out *o = shared_new(sizeof *o);
    tcp_run_opts opts;
    hosts_opts(&opts, mode == 1 ? two : NULL);
    opts.shm = mode != 2;
    CHECK_MSG(tcp_run_opts_run(5, colls_rank, o, &opts) == REDCOLL_OK, "mode %d", mode);
    for (int r = 0; r < 5; r++) {
      CHECK_MSG(o->bad[r] == 0, "mode %d rank %d: %d wrong elements", mode, r, o->bad[r]);
      for (int q = 0; q < 5; q++) {
        int want = mode == 0 ? 1 : mode == 2 ? 0 : (r < 2) == (q < 2);
        CHECK_MSG(o->local[r][q] == want, "mode %d: is_local(%d, %d) = %d", mode, r, q,
                  o->local[r][q]);
        if (q != r) CHECK_INT(o->cma[r][q], REDCOLL_EINVAL); /* not a shm communicator */
      }
    }
    munmap(o, sizeof *o);
  }
}

/* Communicators and threads over the two fake hosts. */
static void tcp_hosts_comms(void) {
  static const char *const two[5] = {"A", "B", "A", "B", "B"};
  comms_out *o = shared_new(sizeof *o);
  tcp_run_opts opts;
  hosts_opts(&opts, two);
  CHECK_INT(tcp_run_opts_run(5, comms_rank, o, &opts), REDCOLL_OK);
  for (int r = 0; r < 5; r++) {
    CHECK_MSG(o->bad[r] == 0, "rank %d: %d bad", r, o->bad[r]);
    CHECK_INT(o->half_rc[r], REDCOLL_OK);
    CHECK_INT(o->world_rc[r], REDCOLL_OK);
  }
  munmap(o, sizeof *o);
}

/* Rank 3 (host B) kills itself after 20 allreduces: every survivor, on
 * either host, fails within 3 s. */
static int tcp_kill_rank(redcoll_comm *c, void *arg) {
  fault_out *o = arg;
  int r = redcoll_comm_rank(c);
  size_t n = (size_t)1 << 15;
  double *v = calloc(2 * n, sizeof *v);
  if (v == NULL) return REDCOLL_ENOMEM;
  int rc = REDCOLL_OK, it = 0;
  double t0 = shm_run__now();
  for (; it < 100000 && rc == REDCOLL_OK; it++) {
    if (r == 3 && it == 20) raise(SIGKILL);
    rc = redcoll_allreduce(c, v, v + n, n, REDCOLL_FLOAT64, REDCOLL_SUM);
  }
  free(v);
  o->rc[r] = rc;
  o->iters[r] = it;
  o->took[r] = shm_run__now() - t0;
  return REDCOLL_OK;
}

static void tcp_hosts_kill(void) {
  static const char *const two[5] = {"A", "A", "B", "B", "B"};
  fault_out *o = shared_new(sizeof *o);
  tcp_run_opts opts;
  hosts_opts(&opts, two);
  opts.timeout_ms = 30000;
  tcp_run_opts_run(5, tcp_kill_rank, o, &opts);
  CHECK_INT(opts.statuses[3], REDCOLL_ETRANSPORT);
  for (int r = 0; r < 5; r++) {
    if (r == 3) continue;
    CHECK_INT(opts.statuses[r], REDCOLL_OK);
    CHECK_MSG(o->rc[r] == REDCOLL_ETRANSPORT || o->rc[r] == REDCOLL_EABORTED, "rank %d: %s", r,
              redcoll_status_name(o->rc[r]));
    CHECK_MSG(o->iters[r] >= 20 && o->iters[r] <= 22, "rank %d: %d iterations", r, o->iters[r]);
    CHECK_MSG(o->took[r] < 5.0, "rank %d took %.2f s", r, o->took[r]);
  }
  munmap(o, sizeof *o);
}

static int cpus_rank(redcoll_comm *c, void *arg) {
  double *out = arg;
  return redcoll_comm_get_ranks_per_cpu(c, &out[redcoll_comm_rank(c)]);
}

/* Four ranks on two fake hosts of this one kernel share its CPUs: the ranks
 * per CPU that AUTO's model gets are 4 / the CPUs they may run on together,
 * on every rank; all four pinned to one CPU, 4.  Without the shared-memory
 * path (no exchange of identities) the rendezvous table's online count
 * decides, as before. */
static void tcp_hosts_cpus(void) {
  static const char *const two[5] = {"A", "A", "B", "B", NULL};
  cpu_set_t saved;
  CHECK_INT(sched_getaffinity(0, sizeof saved, &saved), 0);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int mode = 0; mode < 3; mode++) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (mode > 0 && sched_setaffinity(0, sizeof one, &one) != 0) {
      printf("note: cannot pin to CPU 0; the pinned modes did not run\n");
      break;
    }
    double *f = shared_new(4 * sizeof *f);
    tcp_run_opts opts;
    hosts_opts(&opts, two);
    opts.shm = mode != 2;
    CHECK_MSG(tcp_run_opts_run(4, cpus_rank, f, &opts) == REDCOLL_OK, "mode %d", mode);
    int cpus = lib_cpus();
    double want = mode == 2 ? (online > 0 ? 4.0 / (double)online : 1) : 4.0 / (double)cpus;
    if (want < 1) want = 1;
    for (int r = 0; r < 4; r++)
      CHECK_MSG(f[r] == want, "mode %d rank %d: ranks per CPU %g, want %g", mode, r, f[r], want);
    munmap(f, 4 * sizeof *f);
    CHECK_INT(sched_setaffinity(0, sizeof saved, &saved), 0);
  }
}
#else
static void tcp_hosts_cpus(void) { printf("note: built without TCP; tcp_hosts_cpus did not run\n"); }
static void tcp_hosts(void) { printf("note: built without TCP; tcp_hosts did not run\n"); }
static void tcp_hosts_comms(void) { printf("note: built without TCP; tcp_hosts_comms did not run\n"); }
static void tcp_hosts_kill(void) { printf("note: built without TCP; tcp_hosts_kill did not run\n"); }
#endif

/* The ranks per CPU from the identities' words: per kernel, its ranks over
 * the union of their CPU masks (or its online CPUs), the busiest kernel's,
 * at least 1. */
static void ranks_per_cpu(void) {
  uint64_t w[8 * ID_WORDS];
  /* r: rank; k: kernel; online; mask (the first word of it). */
  struct {
    int n;
    uint64_t k[8], online[8], mask[8];
    double want;
  } cases[] = {
      {4, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}, 2},         /* one kernel, 2 CPUs */
      {4, {1, 1, 1, 1}, {2, 2, 2, 2}, {1, 2, 1, 2}, 2},         /* pinned, one CPU each: union 2 */
      {6, {1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, 6}, /* all on CPU 0 */
      {4, {1, 1, 1, 2}, {4, 4, 4, 2}, {15, 15, 15, 3}, 1},      /* 0.75 and 0.5: at least 1 */
      {7, {1, 2, 1, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2}, {3, 3, 3, 3, 3, 3, 3}, 2.5}, /* busier */
      {4, {1, 1, 1, 1}, {2, 2, 2, 2}, {0, 0, 0, 0}, 2},         /* no masks: online */
      {3, {1, 1, 1}, {300, 300, 300}, {1, 1, 1}, 3},            /* 300 CPUs, all on CPU 0 */
      {3, {1, 1, 1}, {300, 300, 300}, {1, 0, 1}, 1},            /* one beyond the mask: online */
      {2, {1, 1}, {0, 0}, {0, 0}, 1},                           /* nothing known */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(w, 0, sizeof w);
    for (int r = 0; r < cases[i].n; r++) {
      w[ID_WORDS * r + ID_HOST] = (uint64_t)r; /* every rank a host of its own */
      w[ID_WORDS * r + ID_KERNEL] = cases[i].k[r];
      w[ID_WORDS * r + ID_ONLINE] = cases[i].online[r];
      w[ID_WORDS * r + ID_MASK] = cases[i].mask[r];
    }
    double got = redcoll__shm_ranks_per_cpu(w, cases[i].n);
    CHECK_MSG(got == cases[i].want, "case %zu: %g, want %g", i, got, cases[i].want);
  }
  /* A mask bit beyond the first word counts. */
  memset(w, 0, sizeof w);
  for (int r = 0; r < 4; r++) {
    w[ID_WORDS * r + ID_KERNEL] = 9;
    w[ID_WORDS * r + ID_ONLINE] = 200;
    w[ID_WORDS * r + ID_MASK + 3] = (uint64_t)1 << r; /* CPUs 192..195 */
  }
  CHECK(redcoll__shm_ranks_per_cpu(w, 4) == 1);
  w[ID_WORDS * 3 + ID_MASK + 3] = 1; /* rank 3 on CPU 192 too: 4 ranks on 3 CPUs */
  CHECK(redcoll__shm_ranks_per_cpu(w, 4) == 4.0 / 3.0);
  /* base/cpus.c: the union's count, at least 1; no mask: the online CPUs. */
  uint64_t m[REDCOLL__CPU_MASK_WORDS] = {0x5, 0, 0, (uint64_t)1 << 63};
  CHECK(redcoll__ranks_per_cpu(6, m, REDCOLL__CPU_MASK_WORDS) == 2);
  CHECK(redcoll__ranks_per_cpu(2, m, REDCOLL__CPU_MASK_WORDS) == 1);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK(redcoll__ranks_per_cpu((int)online * 3, NULL, 0) == 3);
  memset(m, 0, sizeof m);
  CHECK(redcoll__ranks_per_cpu((int)online * 2, m, REDCOLL__CPU_MASK_WORDS) == 2);
  /* The union: a known mask adds its CPUs, an empty one adds nothing and
   * says so. */
  uint64_t acc[REDCOLL__CPU_MASK_WORDS] = {0x1, 0, 0, 0};
  uint64_t two[REDCOLL__CPU_MASK_WORDS] = {0x2, 0, 1, 0};
  CHECK_INT(redcoll__cpu_mask_add(acc, two, REDCOLL__CPU_MASK_WORDS), 1);
  CHECK(acc[0] == 0x3 && acc[1] == 0 && acc[2] == 1 && acc[3] == 0);
  CHECK_INT(redcoll__cpu_mask_add(acc, m, REDCOLL__CPU_MASK_WORDS), 0);
  CHECK(acc[0] == 0x3 && acc[2] == 1);
  /* This process's mask: the CPUs sched_getaffinity names, and pinned to
   * one of them, that one alone. */
  int beyond = mask_beyond(), n = 0;
  CHECK_INT(redcoll__cpu_mask(m, REDCOLL__CPU_MASK_WORDS), !beyond);
  for (int i = 0; i < REDCOLL__CPU_MASK_WORDS; i++) n += __builtin_popcountll(m[i]);
  CHECK_INT(n, beyond ? 0 : my_cpus());
  cpu_set_t saved, one;
  CHECK_INT(sched_getaffinity(0, sizeof saved, &saved), 0);
  int c = 0;
  while (c < 64 * REDCOLL__CPU_MASK_WORDS && !CPU_ISSET(c, &saved)) c++;
  if (c == 64 * REDCOLL__CPU_MASK_WORDS) {
    printf("note: no CPU below %d is ours; the pinned check did not run\n", c);
    return;
  }
  CPU_ZERO(&one);
  CPU_SET(c, &one);
  CHECK_INT(sched_setaffinity(0, sizeof one, &one), 0);
  CHECK_INT(redcoll__cpu_mask(m, REDCOLL__CPU_MASK_WORDS), 1);
  CHECK(m[c / 64] == (uint64_t)1 << (c % 64));
  CHECK(redcoll__ranks_per_cpu(3, m, REDCOLL__CPU_MASK_WORDS) == 3);
  CHECK_INT(sched_setaffinity(0, sizeof saved, &saved), 0);
}

TEST_MAIN(TEST(ranks_per_cpu), TEST(shm_cpus), TEST(colls_cma), TEST(colls_queue), TEST(comms), TEST(kill9), TEST(sigstop),
          TEST(stale_name), TEST(two_jobs), TEST(disagree), TEST(name_in_use), TEST(create_timeout),
          TEST(from_env), TEST(bad_config), TEST(tcp_hosts), TEST(tcp_hosts_comms),
          TEST(tcp_hosts_kill), TEST(tcp_hosts_cpus))
