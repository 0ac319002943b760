/*
 * The PMIx bootstrap (pmix_boot.h): under a PMIx server (Open MPI's mpirun,
 * Slurm's srun --mpi=pmix) every rank's listening address travels through
 * PMIx: each rank puts its own under a key of this bootstrap, commits, and
 * after a fence that collects the data gets everybody's.  PMIx is
 * initialised once, at the first bootstrap, and finalised when the process
 * exits (a client that finalises and initialises again between bootstraps
 * sees its later fences fail; one that exits without finalising is taken
 * by mpirun for a crash); an MPI in the same process has its own
 * initialisation, which PMIx counts.
 */
#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pmix_boot.h"
#include "wire.h"

int redcoll__tcp_pmix_present(void) {
  const char *ns = getenv("PMIX_NAMESPACE"), *r = getenv("PMIX_RANK");
  return ns != NULL && *ns != '\0' && r != NULL && *r != '\0';
}

static int failed(const char *what, pmix_status_t st) {
  redcoll__log(0, "tcp: PMIx %s: %s", what, PMIx_Error_string(st));
  return REDCOLL_ETRANSPORT;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static pmix_proc_t self;

static void fini(void) { PMIx_Finalize(NULL, 0); }

/* PMIx_Init once; this process's name in *me. */
static pmix_status_t init_once(pmix_proc_t *me) {
  pthread_mutex_lock(&init_lock);
  pmix_status_t st = PMIX_SUCCESS;
  if (!inited) {
    st = PMIx_Init(&self, NULL, 0);
    if (st == PMIX_SUCCESS) atexit(fini);
  }
  if (st == PMIX_SUCCESS) inited = 1, *me = self;
  pthread_mutex_unlock(&init_lock);
  return st;
}

int redcoll__tcp_pmix_rank_size(int *rank, int *size) {
  pmix_proc_t me, job;
  pmix_status_t st = init_once(&me);
  if (st != PMIX_SUCCESS) return failed("init", st);
  PMIX_PROC_CONSTRUCT(&job);
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t *v = NULL;
  int rc = REDCOLL_OK;
  st = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v);
  if (st != PMIX_SUCCESS || v == NULL || v->type != PMIX_UINT32) {
    rc = failed("job size", st != PMIX_SUCCESS ? st : PMIX_ERR_BAD_PARAM);
  } else {
    *rank = (int)me.rank;
    *size = (int)v->data.uint32;
  }
  if (v != NULL) PMIX_VALUE_RELEASE(v);
  return rc;
}

int redcoll__tcp_pmix_exchange(int rank, int size, uint64_t n, const char *mine, char **all,
                               uint64_t *job) {
  pmix_proc_t me, wild, peer;
  pmix_status_t st = init_once(&me);
  if (st != PMIX_SUCCESS) return failed("init", st);
  if ((int)me.rank != rank) {
    redcoll__log(0, "tcp rank %d: PMIx says this is rank %u", rank, (unsigned)me.rank);
    return REDCOLL_EINVAL;
  }
  char key[PMIX_MAX_KEYLEN + 1];
  snprintf(key, sizeof key, "redcoll.tcp.%llu", (unsigned long long)n);
  pmix_value_t val;
  PMIX_VALUE_CONSTRUCT(&val);
  val.type = PMIX_STRING;
  val.data.string = (char *)mine;
  if ((st = PMIx_Put(PMIX_GLOBAL, key, &val)) != PMIX_SUCCESS ||
      (st = PMIx_Commit()) != PMIX_SUCCESS) {
    return failed("put", st);
  }
  PMIX_PROC_CONSTRUCT(&wild);
  PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
  pmix_info_t info;
  bool collect = true;
  PMIX_INFO_CONSTRUCT(&info);
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  st = PMIx_Fence(&wild, 1, &info, 1);
  PMIX_INFO_DESTRUCT(&info);
  if (st != PMIX_SUCCESS) return failed("fence", st);
  int rc = REDCOLL_OK;
  for (int q = 0; q < size && rc == REDCOLL_OK; q++) {
    pmix_value_t *v = NULL;
    PMIX_PROC_CONSTRUCT(&peer);
    PMIX_LOAD_PROCID(&peer, me.nspace, (pmix_rank_t)q);
    st = PMIx_Get(&peer, key, NULL, 0, &v);
    if (st != PMIX_SUCCESS || v == NULL || v->type != PMIX_STRING) {
      redcoll__log(0, "tcp rank %d: PMIx has no address of rank %d", rank, q);
      rc = REDCOLL_ETRANSPORT;
    } else if ((all[q] = strdup(v->data.string)) == NULL) {
      rc = REDCOLL_ENOMEM;
    }
    if (v != NULL) PMIX_VALUE_RELEASE(v);
  }
  *job = redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, me.nspace, strlen(me.nspace));
  return rc;
}
