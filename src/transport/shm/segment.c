/* The shared segment (shm_int.h): its layout, its creation by rank 0, the
 * other ranks attaching, stale names, and the unlink once all are in. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm_int.h"

/* An uninitialised segment older than this is a creator's crash. */
#define STALE_INIT_S 5

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t ranks_off(void) { return round64(sizeof(shm_header)); }
static size_t cma_off(int p) { return ranks_off() + round64((size_t)p * sizeof(shm_rank)); }
static size_t queues_off(int p) { return cma_off(p) + round64((size_t)p * (size_t)p); }
static size_t total_bytes(int p, size_t cap) {
  size_t pairs = (size_t)p * (size_t)(p - 1);
  return queues_off(p) + pairs * round64(redcoll__shm_queue_bytes(cap));
}

redcoll__shm_queue *redcoll__shm_segment_queue(shm_impl *t, int from, int to) {
  int p = t->size;
  size_t i = (size_t)from * (size_t)(p - 1) + (size_t)(to < from ? to : to - 1);
  return (redcoll__shm_queue *)(t->base + queues_off(p) + i * round64(redcoll__shm_queue_bytes(t->cap)));
}

static unsigned char *cma_row(shm_impl *t, int reader) {
  return t->base + cma_off(t->size) + (size_t)reader * (size_t)t->size;
}

/* The default queue size for p ranks: 256 KiB, less beyond 16 ranks so that
 * the queues take about 64 MiB, at least 4 KiB. */
static size_t default_cap(int p) {
  size_t pairs = (size_t)p * (size_t)(p > 1 ? p - 1 : 1), cap = (size_t)256 << 10;
  while (cap > 4096 && cap * pairs > ((size_t)64 << 20)) cap >>= 1;
  return cap;
}

static uint64_t random_u64(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
    close(fd);
  }
  return v ^ redcoll__shm_now() ^ ((uint64_t)getpid() << 32);
}

/* 1 if the segment behind fd is left over by a crashed job: its creator is
 * dead, or it was never initialised and is old. */
static int is_stale(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  if ((size_t)st.st_size >= sizeof(shm_header)) {
    shm_header *h = mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
    if (h != MAP_FAILED) {
      uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
      int pid = h->creator_pid;
      munmap(h, sizeof *h);
      if (magic == REDCOLL__SHM_MAGIC) return !redcoll__shm_pid_alive(pid);
    }
  }
  return time(NULL) - st.st_mtime > STALE_INIT_S;
}

/* Segments up to this size get their memory at creation and every rank's
 * page tables filled at mapping: a queue's pages are then never touched
 * for the first time in the middle of a message (on a virtual machine a
 * first touch costs microseconds, more than a small message). */
#define PREFAULT_MAX ((size_t)128 << 20)

static int map_fd(shm_impl *t, int fd, size_t bytes) {
  int populate = bytes <= PREFAULT_MAX ? MAP_POPULATE : 0;
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | populate, fd, 0);
  if (m == MAP_FAILED) return REDCOLL_ETRANSPORT;
  t->base = m;
  t->map_bytes = bytes;
  t->hdr = m;
  t->ranks = (shm_rank *)(t->base + ranks_off());
  return REDCOLL_OK;
}

/* Rank 0: makes the segment, replacing a stale one; *fd_out is its fd. */
static int create(shm_impl *t, const redcoll_shm_config *cfg, int *fd_out) {
  int p = t->size;
  t->cap = cfg->queue_bytes != 0 ? cfg->queue_bytes : default_cap(p);
  size_t bytes = total_bytes(p, t->cap);
  for (int attempt = 0;; attempt++) {
    int fd = shm_open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST && attempt < 3) {
      int old = shm_open(t->name, O_RDONLY | O_CLOEXEC, 0);
      if (old < 0) continue; /* gone meanwhile */
      int stale = is_stale(old);
      close(old);
      if (!stale) {
        redcoll__log(0, "shm rank 0: segment %s is in use by a live job (another job with the "
                        "same name?)", t->name);
        return REDCOLL_EINVAL;
      }
      redcoll__log(1, "shm rank 0: removing segment %s left by a crashed job", t->name);
      shm_unlink(t->name);
      continue;
    }
    if (fd < 0) {
      redcoll__log(0, "shm rank 0: cannot create segment %s: %s", t->name, strerror(errno));
      return REDCOLL_ETRANSPORT;
    }
    int sized = ftruncate(fd, (off_t)bytes) == 0;
    if (sized && bytes <= PREFAULT_MAX)
      (void)posix_fallocate(fd, 0, (off_t)bytes); /* best effort: the pages now */
    if (!sized || map_fd(t, fd, bytes) != REDCOLL_OK) {
      redcoll__log(0, "shm rank 0: cannot size or map segment %s of %zu bytes: %s", t->name,
                   bytes, strerror(errno));
      close(fd);
      shm_unlink(t->name);
      return REDCOLL_ETRANSPORT;
    }
    shm_header *h = t->hdr;
    h->version = REDCOLL__SHM_VERSION;
    h->size = p;
    h->total_bytes = bytes;
    h->queue_cap = t->cap;
    h->nonce = random_u64();
    h->creator_pid = (int32_t)getpid();
    __atomic_store_n(&h->magic, REDCOLL__SHM_MAGIC, __ATOMIC_RELEASE);
    *fd_out = fd;
    return REDCOLL_OK;
  }
}

/* The other ranks: waits for the segment and maps it.  REDCOLL__ENV_UNSET
 * (1): not there or not ready yet, or stale; try again. */
static int attach(shm_impl *t, int *fd_out) {
  int fd = shm_open(t->name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return errno == ENOENT ? 1 : REDCOLL_ETRANSPORT;
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(shm_header)) goto again;
  shm_header *h = mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
  if (h == MAP_FAILED) goto again;
  uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
  int size = h->size, creator = h->creator_pid;
  uint32_t version = h->version;
  size_t bytes = h->total_bytes, cap = h->queue_cap;
  munmap(h, sizeof *h);
  if (magic != REDCOLL__SHM_MAGIC || !redcoll__shm_pid_alive(creator)) goto again;
  if (version != REDCOLL__SHM_VERSION || size != t->size || bytes != (size_t)st.st_size) {
    redcoll__log(0, "shm rank %d: segment %s is of version %u for %d ranks, not version %u "
                    "for %d ranks", t->rank, t->name, version, size, REDCOLL__SHM_VERSION, t->size);
    close(fd);
    return REDCOLL_EINVAL;
  }
  t->cap = cap;
  if (map_fd(t, fd, bytes) != REDCOLL_OK) {
    close(fd);
    return REDCOLL_ETRANSPORT;
  }
  *fd_out = fd;
  return REDCOLL_OK;
again:
  close(fd);
  return 1;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits until counter *c reaches p: REDCOLL_OK or REDCOLL_ETIMEDOUT. */
static int wait_count(shm_impl *t, uint32_t *c, uint64_t until, const char *what) {
  while (__atomic_load_n(c, __ATOMIC_ACQUIRE) < (uint32_t)t->size) {
    if (redcoll__shm_now() >= until) {
      redcoll__log(0, "shm rank %d: only %u of %d ranks %s segment %s within the timeout", t->rank,
                   __atomic_load_n(c, __ATOMIC_ACQUIRE), t->size, what, t->name);
      return REDCOLL_ETIMEDOUT;
    }
    sleep_ms(1);
  }
  return REDCOLL_OK;
}

int redcoll__shm_segment_open(shm_impl *t, const redcoll_shm_config *cfg) {
  uint64_t start = redcoll__shm_now();
  uint64_t until = t->timeout_ns == UINT64_MAX ? UINT64_MAX : start + t->timeout_ns;
  int fd = -1, rc;
  if (t->rank == 0) {
    rc = create(t, cfg, &fd);
  } else {
    while ((rc = attach(t, &fd)) == 1) {
      if (redcoll__shm_now() >= until) {
        redcoll__log(0, "shm rank %d: segment %s was not created within the timeout", t->rank,
                     t->name);
        return REDCOLL_ETIMEDOUT;
      }
      sleep_ms(1);
    }
  }
  if (rc != REDCOLL_OK) return rc;
  close(fd); /* the mapping stays */
  shm_rank *me = &t->ranks[t->rank];
  int32_t zero = 0;
  if (!__atomic_compare_exchange_n(&me->pid, &zero, (int32_t)getpid(), 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    redcoll__log(0, "shm rank %d: segment %s already has a rank %d (pid %d): two ranks with one "
                    "number, or two jobs with one name", t->rank, t->name, t->rank, (int)zero);
    rc = REDCOLL_EINVAL;
    goto fail;
  }
  redcoll__shm_copy_probe_word(t->hdr->nonce, &me->probe_addr, &me->probe_val);
  redcoll__cpu_mask(me->cpus, REDCOLL__CPU_MASK_WORDS);
  if (__atomic_add_fetch(&t->hdr->attached, 1, __ATOMIC_ACQ_REL) == (uint32_t)t->size)
    shm_unlink(t->name); /* all are in: nothing is left behind by a crash */
  if ((rc = wait_count(t, &t->hdr->attached, until, "attached to")) != REDCOLL_OK) goto fail;
  redcoll__shm_copy_probe(t, cfg->copy != REDCOLL_SHM_COPY_QUEUE);
  __atomic_add_fetch(&t->hdr->probed, 1, __ATOMIC_ACQ_REL);
  if ((rc = wait_count(t, &t->hdr->probed, until, "probed")) != REDCOLL_OK) goto fail;
  /* Every rank has written its mask before it counted itself attached. */
  uint64_t mask[REDCOLL__CPU_MASK_WORDS] = {0};
  int unknown = 0;
  for (int r = 0; r < t->size; r++)
    unknown |= !redcoll__cpu_mask_add(mask, t->ranks[r].cpus, REDCOLL__CPU_MASK_WORDS);
  t->ranks_per_cpu = redcoll__ranks_per_cpu(t->size, unknown ? NULL : mask,
                                            REDCOLL__CPU_MASK_WORDS);
  for (int s = 0; s < t->size; s++) {
    if (s == t->rank) continue;
    t->peers[s].out = redcoll__shm_segment_queue(t, t->rank, s);
    t->peers[s].in = redcoll__shm_segment_queue(t, s, t->rank);
    t->peers[s].cma = cma_row(t, t->rank)[s];
    t->peers[s].peer_cma = cma_row(t, s)[t->rank];
  }
  return REDCOLL_OK;

fail:
  /* A job that did not come together leaves no name behind either. */
  shm_unlink(t->name);
  redcoll__shm_segment_close(t);
  return rc;
}

void redcoll__shm_segment_close(shm_impl *t) {
  if (t->base != NULL) munmap(t->base, t->map_bytes);
  t->base = NULL;
  t->hdr = NULL;
  t->ranks = NULL;
}

unsigned char *redcoll__shm_segment_cma_row(shm_impl *t, int reader) { return cma_row(t, reader); }
