/* Configuration of the TCP transport: redcoll_tcp_config_init and
 * redcoll_tcp_config_from_env (REDCOLL_* and the launchers' variables:
 * Slurm, Open MPI, PMI, torchrun), the job id digested from them, and the
 * entries of a REDCOLL_HOSTS list with the job id made from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base.h"
#include "config.h"
#ifdef REDCOLL_HAVE_PMIX
#include "pmix_boot.h"
#endif
#include "env.h"
#include "redcoll/tcp.h"
#include "wire.h"

/* The job id from digest h and an optional second part; never 0. */
static uint64_t job_digest(uint64_t h, const char *more) {
  if (more != NULL) {
    h = redcoll__tcp_fnv1a(h, ".", 1);
    h = redcoll__tcp_fnv1a(h, more, strlen(more));
  }
  return h != 0 ? h : 1;
}

REDCOLL_API void redcoll_tcp_config_init(redcoll_tcp_config *cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->rank = -1;
  cfg->size = -1;
}

static int env_int(const char *name, long max, long *out) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > max) {
    redcoll__log(0, "tcp: %s=%s is not a number in [0, %ld]", name, s, max);
    return -1;
  }
  *out = v;
  return 1;
}

/* torchrun's rendezvous host and port (MASTER_ADDR, MASTER_PORT): redcoll's
 * runs one port above, so that PyTorch's own store keeps MASTER_PORT.
 * Returns the string for cfg->master (kept per thread), or NULL. */
static const char *torchrun_master(void) {
  static __thread char buf[300];
  const char *a = getenv("MASTER_ADDR");
  long port;
  if (a == NULL || *a == '\0' || env_int("MASTER_PORT", 65534, &port) <= 0) return NULL;
  snprintf(buf, sizeof buf, strchr(a, ':') != NULL ? "[%s]:%ld" : "%s:%ld", a, port + 1);
  return buf;
}

REDCOLL_API int redcoll_tcp_config_from_env(redcoll_tcp_config *cfg) {
  if (cfg == NULL) return REDCOLL_EINVAL;
  redcoll_tcp_config_init(cfg);
  static const char *const pairs[][2] = {{"REDCOLL_RANK", "REDCOLL_SIZE"},
                                         {"SLURM_PROCID", "SLURM_NTASKS"},
                                         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"PMI_RANK", "PMI_SIZE"},
                                         {"RANK", "WORLD_SIZE"}};
  enum { FROM_TORCHRUN = 4 };
  size_t from = 0; /* the pair rank and size came from */
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    long r, s;
    int hr = env_int(pairs[i][0], REDCOLL_TCP_MAX_SIZE - 1, &r),
        hs = env_int(pairs[i][1], REDCOLL_TCP_MAX_SIZE, &s);
    if (hr < 0 || hs < 0) return REDCOLL_EINVAL;
    if (hr && hs) {
      if (s < 1 || r >= s) {
        redcoll__log(0, "tcp: %s=%ld is not below %s=%ld", pairs[i][0], r, pairs[i][1], s);
        return REDCOLL_EINVAL;
      }
      cfg->rank = (int)r;
      cfg->size = (int)s;
      from = i;
      break;
    }
    if (hr || hs) {
      redcoll__log(0, "tcp: %s and %s must be set together", pairs[i][0], pairs[i][1]);
      return REDCOLL_EINVAL;
    }
  }
#ifdef REDCOLL_HAVE_PMIX
  /* Started by a PMIx server without a launcher's variables: PMIx knows. */
  if (cfg->rank < 0 && redcoll__tcp_pmix_present()) {
    int rc = redcoll__tcp_pmix_rank_size(&cfg->rank, &cfg->size);
    if (rc != REDCOLL_OK) return rc;
  }
#endif
  if (cfg->rank < 0) {
    redcoll__log(0, "tcp: no rank in the environment (REDCOLL_RANK and REDCOLL_SIZE, or a "
                    "launcher's SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, or torchrun's "
                    "RANK and WORLD_SIZE)");
    return REDCOLL_EINVAL;
  }
  const char *s;
  if ((s = getenv("REDCOLL_HOSTS")) != NULL && *s != '\0') cfg->hosts = s;
  if ((s = getenv("REDCOLL_MASTER")) != NULL && *s != '\0') cfg->master = s;
  else if (from == FROM_TORCHRUN && cfg->hosts == NULL) cfg->master = torchrun_master();
  if ((s = getenv("REDCOLL_LISTEN")) != NULL && *s != '\0') cfg->listen_host = s;
  if ((s = getenv("REDCOLL_IFNAME")) != NULL && *s != '\0') cfg->ifname = s;
  if ((s = getenv("REDCOLL_SECRET")) != NULL && *s != '\0') cfg->secret = s;
  /* The job id: REDCOLL_JOB_ID, else the job (and step) of the launcher
   * that gave the rank, so that every rank takes it from the same place
   * (under mpirun in a Slurm allocation the ranks see different Slurm
   * steps); hashed, so any string names a job. */
  static const char *const jobs[][2] = {{NULL, NULL},
                                        {"SLURM_JOB_ID", "SLURM_STEP_ID"},
                                        {"OMPI_MCA_ess_base_jobid", NULL},
                                        {NULL, NULL},
                                        {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"}};
  const char *jv = getenv("REDCOLL_JOB_ID"), *more = NULL;
  if ((jv == NULL || *jv == '\0') && jobs[from][0] != NULL) {
    jv = getenv(jobs[from][0]);
    if (jobs[from][1] != NULL) more = getenv(jobs[from][1]);
  }
  if (jv != NULL && *jv != '\0')
    cfg->job_id = job_digest(redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, jv, strlen(jv)), more);
  long ms;
  int h = env_int("REDCOLL_TIMEOUT_MS", 0x7fffffffL, &ms);
  if (h < 0) return REDCOLL_EINVAL;
  if (h > 0) cfg->wait_timeout_ms = ms == 0 ? REDCOLL_WAIT_FOREVER : (uint64_t)ms;
  if ((s = getenv("REDCOLL_SHM")) != NULL && strcmp(s, "0") == 0) cfg->no_shm = 1;
  /* redcoll__env_u64 answers REDCOLL__ENV_UNSET (1), REDCOLL_OK (0, um
   * set) or REDCOLL_EINVAL: unlike env_int above, "set" is 0. */
  uint64_t um;
  h = redcoll__env_u64("REDCOLL_UNEXPECTED_MAX", UINT64_MAX, &um);
  if (h == REDCOLL_OK) {
    cfg->unexpected_max = um;
  } else if (h != REDCOLL__ENV_UNSET) {
    redcoll__log(0, "tcp: REDCOLL_UNEXPECTED_MAX=%s is not a number of bytes",
                 redcoll__env("REDCOLL_UNEXPECTED_MAX"));
    return REDCOLL_EINVAL;
  }
  return REDCOLL_OK;
}

/* The next entry of a host list (commas or white space between entries):
 * its start, with its length in *n, and *s moved past it; NULL at the end. */
const char *redcoll__tcp_next_entry(const char **s, size_t *n) {
  const char *b = *s;
  while (*b == ',' || *b == ' ' || *b == '\t' || *b == '\n') b++;
  if (*b == '\0') return NULL;
  const char *e = b;
  while (*e != '\0' && *e != ',' && *e != ' ' && *e != '\t' && *e != '\n') e++;
  *n = (size_t)(e - b);
  *s = e;
  return b;
}

/* The job id of a host list: a digest of its entries as written (not of
 * the addresses they resolve to, which may differ from host to host), with
 * any separators between them counting as one. */
uint64_t redcoll__tcp_hosts_digest(const char *s) {
  uint64_t h = redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, "hosts", 5);
  size_t n;
  for (const char *e; (e = redcoll__tcp_next_entry(&s, &n)) != NULL;) {
    h = redcoll__tcp_fnv1a(h, e, n);
    h = redcoll__tcp_fnv1a(h, ",", 1);
  }
  return job_digest(h, NULL);
}
