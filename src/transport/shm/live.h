/* Liveness of the peer processes (live.c): a pidfd per peer, opened once
 * every rank has attached; a pidfd becomes readable when its process exits
 * (before it is reaped, and with no race against a reused pid), and one
 * poll() with no timeout asks all of them at once.  Where pidfd_open is
 * missing (Linux before 5.3) kill(pid, 0) stands in. */
#ifndef REDCOLL_SHM_LIVE_H
#define REDCOLL_SHM_LIVE_H

typedef struct redcoll__shm_live {
  int n;       /* peers */
  int *pids;   /* n */
  int *fds;    /* n; -1: no pidfd (kill stands in) */
  int *dead;   /* n; 1 once the process is seen gone */
} redcoll__shm_live;

/* Watches the n processes pids (copied); REDCOLL_OK or REDCOLL_ENOMEM. */
int redcoll__shm_live_init(redcoll__shm_live *l, const int *pids, int n);
void redcoll__shm_live_free(redcoll__shm_live *l);
/* Is process pid alive now (for a segment's creator or a rank's slot)? */
int redcoll__shm_pid_alive(int pid);
/* Updates dead[]; returns the index of a peer newly seen dead, or -1. */
int redcoll__shm_live_check(redcoll__shm_live *l);

#endif /* REDCOLL_SHM_LIVE_H */
