/*
 * The interposer's state: the configuration (REDCOLL_MPI_COLLS,
 * REDCOLL_MPI_REPORT), the redcoll communicator of each MPI communicator
 * (made at its first collective that redcoll takes, destroyed by
 * MPI_Comm_free, MPI_Comm_disconnect or MPI_Finalize), the user operators
 * (recorded by MPI_Op_create, one redcoll operator per datatype they are
 * used with), the datatype and operator mapping, and the report.
 *
 * REDCOLL_MPI_COLLS: a comma-separated list of collective names (those of
 * IP_COLL_MAP), each optionally with =ALGORITHM to force one, or "all"
 * (the default) or "none".  Algorithms can also be forced with redcoll's
 * own REDCOLL_ALGO_<COLL>.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpose.h"

static const char *const coll_names[] = {
#define IP__NAME(name, str, coll) str,
    IP_COLL_MAP(IP__NAME)
#undef IP__NAME
};
static const redcoll_coll coll_ids[] = {
#define IP__ID(name, str, coll) coll,
    IP_COLL_MAP(IP__ID)
#undef IP__ID
};
static const char *const reason_names[] = {
#define IP__RNAME(name, str) str,
    IP_REASON_MAP(IP__RNAME)
#undef IP__RNAME
};

typedef struct entry {
  MPI_Comm comm;
  redcoll_comm *rc; /* NULL: creation failed */
  int broken;       /* a collective failed on it: the rest fall through */
} entry;

/* A user operator and the redcoll operators made for it, one per
 * datatype. */
typedef struct uop_inst {
  struct uop_inst *next;
  MPI_Datatype dt;
  size_t size;
  MPI_User_function *fn;
  redcoll_op *op;
} uop_inst;

typedef struct uop {
  MPI_Op op;
  MPI_User_function *fn;
  int commute;
  uop_inst *insts;
} uop;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int configured;
static int enabled[IP_COLL_COUNT];
static redcoll_algo forced[IP_COLL_COUNT];
static entry *entries;
static size_t nentries;
static uop *uops;
static size_t nuops;
static long taken[IP_COLL_COUNT], fell[IP_COLL_COUNT][IP_REASON_COUNT];
static __thread int nested;

int ip_enter(void) {
  int prev = nested;
  nested = 1;
  return prev;
}

void ip_leave(int prev) { nested = prev; }

/* ---- configuration --------------------------------------------------------- */

static void configure_locked(void) {
  if (configured) return;
  configured = 1;
  const char *s = getenv("REDCOLL_MPI_COLLS");
  int all = s == NULL || *s == '\0' || strcmp(s, "all") == 0;
  for (int i = 0; i < IP_COLL_COUNT; i++) enabled[i] = all, forced[i] = REDCOLL_ALGO_AUTO;
  if (all || strcmp(s, "none") == 0) return;
  char *copy = strdup(s), *save = NULL;
  for (char *w = copy ? strtok_r(copy, ", ", &save) : NULL; w; w = strtok_r(NULL, ", ", &save)) {
    char *algo = strchr(w, '=');
    if (algo != NULL) *algo++ = '\0';
    int k = -1;
    for (int i = 0; i < IP_COLL_COUNT; i++)
      if (strcmp(w, coll_names[i]) == 0) k = i;
    if (k < 0) {
      fprintf(stderr, "redcoll-mpi: REDCOLL_MPI_COLLS: unknown collective '%s' ignored\n", w);
      continue;
    }
    enabled[k] = 1;
    redcoll_algo a;
    if (algo != NULL && (redcoll_algo_parse(algo, &a) != REDCOLL_OK ||
                         !redcoll_algo_is_supported(coll_ids[k], a)))
      fprintf(stderr, "redcoll-mpi: REDCOLL_MPI_COLLS: %s has no algorithm '%s'; auto\n", w, algo);
    else if (algo != NULL)
      forced[k] = a;
  }
  free(copy);
}

int ip_start(ip_call *c, ip_coll coll, MPI_Comm comm) {
  memset(c, 0, sizeof *c);
  c->coll = coll;
  c->comm = comm;
  if (nested) {
    c->reason = IP_R_NESTED;
    return 0;
  }
  pthread_mutex_lock(&mu);
  configure_locked();
  int on = enabled[coll];
  pthread_mutex_unlock(&mu);
  if (!on) {
    c->reason = IP_R_NOT_LISTED;
    return 0;
  }
  int inter = 1;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    c->reason = IP_R_INTERCOMM;
    return 0;
  }
  return 1;
}

/* ---- datatypes and operators ------------------------------------------------ */

enum kind { K_INT = 1, K_FLOAT = 2, K_BYTE = 4, K_BOOL = 8, K_PAIR = 16 };

typedef struct dt_map {
  MPI_Datatype mpi;
  redcoll_dtype dt;
  int kind;
} dt_map;

static redcoll_dtype int_of(size_t size, int is_signed) {
  switch (size) {
  case 1: return is_signed ? REDCOLL_INT8 : REDCOLL_UINT8;
  case 2: return is_signed ? REDCOLL_INT16 : REDCOLL_UINT16;
  case 4: return is_signed ? REDCOLL_INT32 : REDCOLL_UINT32;
  default: return is_signed ? REDCOLL_INT64 : REDCOLL_UINT64;
  }
}

/* The predefined datatype's redcoll dtype and kind; 0 if none. */
static int map_dtype(MPI_Datatype d, redcoll_dtype *out) {
  const dt_map table[] = {
      {MPI_SIGNED_CHAR, REDCOLL_INT8, K_INT},
      {MPI_UNSIGNED_CHAR, REDCOLL_UINT8, K_INT},
      {MPI_SHORT, int_of(sizeof(short), 1), K_INT},
      {MPI_UNSIGNED_SHORT, int_of(sizeof(short), 0), K_INT},
      {MPI_INT, int_of(sizeof(int), 1), K_INT},
      {MPI_UNSIGNED, int_of(sizeof(int), 0), K_INT},
      {MPI_LONG, int_of(sizeof(long), 1), K_INT},
      {MPI_UNSIGNED_LONG, int_of(sizeof(long), 0), K_INT},
      {MPI_LONG_LONG_INT, int_of(sizeof(long long), 1), K_INT},
      {MPI_UNSIGNED_LONG_LONG, int_of(sizeof(long long), 0), K_INT},
      {MPI_INT8_T, REDCOLL_INT8, K_INT},
      {MPI_UINT8_T, REDCOLL_UINT8, K_INT},
      {MPI_INT16_T, REDCOLL_INT16, K_INT},
      {MPI_UINT16_T, REDCOLL_UINT16, K_INT},
      {MPI_INT32_T, REDCOLL_INT32, K_INT},
      {MPI_UINT32_T, REDCOLL_UINT32, K_INT},
      {MPI_INT64_T, REDCOLL_INT64, K_INT},
      {MPI_UINT64_T, REDCOLL_UINT64, K_INT},
      {MPI_AINT, int_of(sizeof(MPI_Aint), 1), K_INT},
      {MPI_OFFSET, int_of(sizeof(MPI_Offset), 1), K_INT},
      {MPI_COUNT, int_of(sizeof(MPI_Count), 1), K_INT},
      {MPI_FLOAT, REDCOLL_FLOAT32, K_FLOAT},
      {MPI_DOUBLE, REDCOLL_FLOAT64, K_FLOAT},
      {MPI_BYTE, REDCOLL_UINT8, K_BYTE},
      {MPI_C_BOOL, int_of(sizeof(_Bool), 0), K_BOOL},
      {MPI_FLOAT_INT, REDCOLL_FLOAT32_INT32, K_PAIR},
      {MPI_DOUBLE_INT, REDCOLL_FLOAT64_INT32, K_PAIR},
      {MPI_2INT, REDCOLL_INT32_INT32, K_PAIR},
      {MPI_LONG_INT, sizeof(long) == 8 ? REDCOLL_INT64_INT32 : REDCOLL_INT32_INT32, K_PAIR},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (table[i].mpi == d) {
      *out = table[i].dt;
      return table[i].kind;
    }
  return 0;
}

/* The built-in operator and the kinds of datatype MPI allows it on. */
static const redcoll_op *map_op(MPI_Op op, int *kinds) {
  const int arith = K_INT | K_FLOAT, logic = K_INT | K_BOOL, bits = K_INT | K_BYTE;
  struct { MPI_Op mpi; const redcoll_op *op; int kinds; } table[] = {
      {MPI_SUM, REDCOLL_SUM, arith},     {MPI_PROD, REDCOLL_PROD, arith},
      {MPI_MIN, REDCOLL_MIN, arith},     {MPI_MAX, REDCOLL_MAX, arith},
      {MPI_LAND, REDCOLL_LAND, logic},   {MPI_LOR, REDCOLL_LOR, logic},
      {MPI_LXOR, REDCOLL_LXOR, logic},   {MPI_BAND, REDCOLL_BAND, bits},
      {MPI_BOR, REDCOLL_BOR, bits},      {MPI_BXOR, REDCOLL_BXOR, bits},
      {MPI_MINLOC, REDCOLL_MINLOC, K_PAIR}, {MPI_MAXLOC, REDCOLL_MAXLOC, K_PAIR},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (table[i].mpi == op) {
      *kinds = table[i].kinds;
      return table[i].op;
    }
  return NULL;
}

/* Size of a datatype whose data has no gaps and starts at 0; 0 otherwise. */
static size_t dense_size(MPI_Datatype d) {
  int size = 0;
  MPI_Aint lb, ext, tlb, text;
  if (d == MPI_DATATYPE_NULL || PMPI_Type_size(d, &size) != MPI_SUCCESS || size <= 0) return 0;
  if (PMPI_Type_get_extent(d, &lb, &ext) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(d, &tlb, &text) != MPI_SUCCESS)
    return 0;
  return lb == 0 && tlb == 0 && ext == size && text == size ? (size_t)size : 0;
}

size_t ip_extent(MPI_Datatype dt) {
  MPI_Aint lb, ext;
  return PMPI_Type_get_extent(dt, &lb, &ext) == MPI_SUCCESS ? (size_t)ext : 0;
}

int ip_bytes(ip_call *c, MPI_Datatype dt, int count, size_t *bytes) {
  if (count < 0) {
    c->reason = IP_R_ARGS;
    return 0;
  }
  size_t s = dense_size(dt);
  if (s == 0) {
    c->reason = IP_R_DATATYPE;
    return 0;
  }
  *bytes = s * (size_t)count;
  return 1;
}

/* out = left (+) right through the MPI function, which computes
 * inoutvec = invec (+) inoutvec. */
static __thread void *scratch;
static __thread size_t scratch_len;

static void user_apply(void *out, const void *left, const void *right, size_t count, void *ctx) {
  const uop_inst *u = ctx;
  MPI_Datatype dt = u->dt;
  size_t bytes = count * u->size;
  void *acc = out;
  if (out == left && out != right) {
    if (scratch_len < bytes) {
      void *p = realloc(scratch, bytes);
      if (p == NULL) abort(); /* nowhere to put the result */
      scratch = p;
      scratch_len = bytes;
    }
    acc = scratch;
  }
  if (acc != right) memcpy(acc, right, bytes);
  for (size_t done = 0; done < count;) {
    int n = count - done > (size_t)INT32_MAX ? INT32_MAX : (int)(count - done);
    u->fn((char *)left + done * u->size, (char *)acc + done * u->size, &n, &dt);
    done += (size_t)n;
  }
  if (acc != out) memcpy(out, acc, bytes);
}

/* The redcoll operator of user operator op on datatype dt; NULL if op is
 * no user operator we know (or without memory). */
static redcoll_op *user_op(MPI_Op op, MPI_Datatype dt, size_t size) {
  redcoll_op *found = NULL;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < nuops && found == NULL; i++) {
    if (uops[i].op != op) continue;
    for (uop_inst *u = uops[i].insts; u != NULL; u = u->next)
      if (u->dt == dt) found = u->op;
    if (found != NULL) break;
    uop_inst *u = calloc(1, sizeof *u);
    if (u == NULL) break;
    u->dt = dt;
    u->size = size;
    u->fn = uops[i].fn;
    if (redcoll_op_create(user_apply, size, uops[i].commute, u, &u->op) != REDCOLL_OK) {
      free(u);
      break;
    }
    u->next = uops[i].insts;
    uops[i].insts = u;
    found = u->op;
  }
  pthread_mutex_unlock(&mu);
  return found;
}

int ip_reduction(ip_call *c, MPI_Datatype dt, MPI_Op op) {
  int kinds = 0;
  const redcoll_op *bop = map_op(op, &kinds);
  if (bop != NULL) {
    int kind = map_dtype(dt, &c->dt);
    if (kind == 0) {
      c->reason = IP_R_DATATYPE;
      return 0;
    }
    if (!(kind & kinds)) { /* MPI says it is an error: let it */
      c->reason = IP_R_OP;
      return 0;
    }
    c->op = bop;
    c->elem = redcoll_dtype_size(c->dt);
    return 1;
  }
  size_t size = dense_size(dt);
  if (size == 0) {
    c->reason = IP_R_DATATYPE;
    return 0;
  }
  c->op = user_op(op, dt, size);
  if (c->op == NULL) {
    c->reason = IP_R_OP;
    return 0;
  }
  c->dt = REDCOLL_CUSTOM;
  c->elem = size;
  return 1;
}

IP_EXPORT int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op) {
  int rc = PMPI_Op_create(fn, commute, op);
  if (rc != MPI_SUCCESS) return rc;
  pthread_mutex_lock(&mu);
  uop *p = realloc(uops, (nuops + 1) * sizeof *uops);
  if (p != NULL) {
    uops = p;
    uops[nuops++] = (uop){*op, fn, commute, NULL};
  } /* else its calls fall through */
  pthread_mutex_unlock(&mu);
  return rc;
}

static void uop_free(uop *u) {
  while (u->insts != NULL) {
    uop_inst *x = u->insts;
    u->insts = x->next;
    redcoll_op_destroy(x->op);
    free(x);
  }
}

IP_EXPORT int MPI_Op_free(MPI_Op *op) {
  pthread_mutex_lock(&mu);
  for (size_t i = 0; op != NULL && i < nuops; i++)
    if (uops[i].op == *op) {
      uop_free(&uops[i]);
      uops[i] = uops[--nuops];
      break;
    }
  pthread_mutex_unlock(&mu);
  return PMPI_Op_free(op);
}

/* ---- communicators ---------------------------------------------------------- */

static entry *find_locked(MPI_Comm comm) {
  for (size_t i = 0; i < nentries; i++)
    if (entries[i].comm == comm) return &entries[i];
  return NULL;
}

int ip_attach(ip_call *c) {
  pthread_mutex_lock(&mu);
  entry *e = find_locked(c->comm);
  int known = e != NULL;
  c->rc = known && !e->broken ? e->rc : NULL;
  ip_coll k;
  redcoll_algo algos[IP_COLL_COUNT];
  for (k = 0; k < IP_COLL_COUNT; k++) algos[k] = forced[k];
  pthread_mutex_unlock(&mu);
  if (!known) {
    /* Collective over the communicator: every member takes this call. */
    int prev = ip_enter();
    redcoll_comm *rc = NULL;
    if (redcoll_mpi_comm_create(c->comm, &rc) == REDCOLL_OK)
      for (k = 0; k < IP_COLL_COUNT; k++)
        if (algos[k] != REDCOLL_ALGO_AUTO) redcoll_comm_set_algorithm(rc, coll_ids[k], algos[k]);
    ip_leave(prev);
    pthread_mutex_lock(&mu);
    entry *p = realloc(entries, (nentries + 1) * sizeof *entries);
    if (p != NULL) {
      entries = p;
      entries[nentries++] = (entry){c->comm, rc, 0};
    }
    pthread_mutex_unlock(&mu);
    if (p == NULL) {
      redcoll_comm_destroy(rc);
      rc = NULL;
    }
    c->rc = rc;
  }
  if (c->rc == NULL) c->reason = IP_R_NO_COMM;
  return c->rc != NULL;
}

int ip_finish(ip_call *c, int rc, int *mpi_rc) {
  if (rc == REDCOLL_EINVAL || rc == REDCOLL_ENOTSUP) {
    c->reason = IP_R_REFUSED; /* nothing was sent: MPI can have it */
    return 0;
  }
  pthread_mutex_lock(&mu);
  taken[c->coll]++;
  if (rc != REDCOLL_OK) {
    entry *e = find_locked(c->comm);
    if (e != NULL) e->broken = 1; /* for good: later calls fall through */
  }
  pthread_mutex_unlock(&mu);
  if (rc == REDCOLL_OK) {
    *mpi_rc = MPI_SUCCESS;
    return 1;
  }
  fprintf(stderr, "redcoll-mpi: %s failed: %s\n", coll_names[c->coll], redcoll_strerror(rc));
  int err = rc == REDCOLL_EMISMATCH ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
  *mpi_rc = err;
  PMPI_Comm_call_errhandler(c->comm, err);
  return 1;
}

void ip_fell(ip_call *c) {
  if (c->reason == IP_R_NESTED) return; /* redcoll's own calls are not the program's */
  pthread_mutex_lock(&mu);
  fell[c->coll][c->reason]++;
  pthread_mutex_unlock(&mu);
}

/* Removes comm's entry; its redcoll communicator, or NULL. */
static redcoll_comm *forget(MPI_Comm comm) {
  pthread_mutex_lock(&mu);
  entry *e = find_locked(comm);
  redcoll_comm *rc = NULL;
  if (e != NULL) {
    rc = e->rc;
    *e = entries[--nentries];
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

IP_EXPORT int MPI_Comm_free(MPI_Comm *comm) {
  if (comm != NULL) redcoll_comm_destroy(forget(*comm));
  return PMPI_Comm_free(comm);
}

IP_EXPORT int MPI_Comm_disconnect(MPI_Comm *comm) {
  if (comm != NULL) redcoll_comm_destroy(forget(*comm));
  return PMPI_Comm_disconnect(comm);
}

/* ---- the report and MPI_Finalize -------------------------------------------- */

static void report(void) {
  const char *s = getenv("REDCOLL_MPI_REPORT");
  if (s == NULL || *s == '\0' || strcmp(s, "0") == 0) return;
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0 && strcmp(s, "all") != 0) return;
  char buf[8192];
  int n = snprintf(buf, sizeof buf, "redcoll-mpi report, rank %d of %d:\n%-21s %9s %12s  %s\n",
                   rank, size, "collective", "redcoll", "fell through", "why");
  for (int k = 0; k < IP_COLL_COUNT && n < (int)sizeof buf; k++) {
    long f = 0;
    for (int r = 0; r < IP_REASON_COUNT; r++) f += fell[k][r];
    if (taken[k] == 0 && f == 0) continue;
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%-21s %9ld %12ld ", coll_names[k], taken[k], f);
    const char *sep = " ";
    for (int r = 0; r < IP_REASON_COUNT && n < (int)sizeof buf; r++) {
      if (fell[k][r] == 0) continue;
      n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s: %ld", sep, reason_names[r], fell[k][r]);
      sep = "; ";
    }
    if (n < (int)sizeof buf) buf[n++] = '\n';
  }
  if (n >= (int)sizeof buf) n = (int)sizeof buf - 1;
  fwrite(buf, 1, (size_t)n, stderr);
  fflush(stderr);
}

IP_EXPORT int MPI_Finalize(void) {
  pthread_mutex_lock(&mu);
  entry *all = entries;
  size_t n = nentries;
  entries = NULL;
  nentries = 0;
  pthread_mutex_unlock(&mu);
  for (size_t i = 0; i < n; i++) redcoll_comm_destroy(all[i].rc);
  free(all);
  report();
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < nuops; i++) uop_free(&uops[i]);
  free(uops);
  uops = NULL;
  nuops = 0;
  pthread_mutex_unlock(&mu);
  free(scratch);
  scratch = NULL;
  scratch_len = 0;
  return PMPI_Finalize();
}

IP_EXPORT int redcoll_mpi_interposer_counts(const char *name, long *took, long *fell_through) {
  for (int k = 0; k < IP_COLL_COUNT; k++) {
    if (strcmp(name, coll_names[k]) != 0) continue;
    pthread_mutex_lock(&mu);
    long f = 0;
    for (int r = 0; r < IP_REASON_COUNT; r++) f += fell[k][r];
    *took = taken[k];
    *fell_through = f;
    pthread_mutex_unlock(&mu);
    return 0;
  }
  return -1;
}
