/* Peer liveness by pidfd (live.h).  pidfds are close-on-exec by
 * definition. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base.h"
#include "live.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int redcoll__shm_pid_alive(int pid) {
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

void redcoll__shm_live_free(redcoll__shm_live *l) {
  if (l->fds != NULL)
    for (int i = 0; i < l->n; i++)
      if (l->fds[i] >= 0) close(l->fds[i]);
  free(l->pids);
  free(l->fds);
  free(l->dead);
  l->pids = l->fds = l->dead = NULL;
  l->n = 0;
}

int redcoll__shm_live_init(redcoll__shm_live *l, const int *pids, int n) {
  l->n = n;
  l->pids = calloc((size_t)n + 1, sizeof *l->pids);
  l->fds = calloc((size_t)n + 1, sizeof *l->fds);
  l->dead = calloc((size_t)n + 1, sizeof *l->dead);
  if (l->pids == NULL || l->fds == NULL || l->dead == NULL) {
    l->n = 0;
    redcoll__shm_live_free(l);
    return REDCOLL_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    l->pids[i] = pids[i];
    l->fds[i] = pids[i] > 0 ? (int)syscall(SYS_pidfd_open, pids[i], 0) : -1;
    if (l->fds[i] < 0 && pids[i] > 0 && errno == ESRCH) l->dead[i] = 1;
  }
  return REDCOLL_OK;
}

int redcoll__shm_live_check(redcoll__shm_live *l) {
  int found = -1;
  for (int i = 0; i < l->n; i++) {
    if (l->dead[i] || l->pids[i] <= 0) continue;
    int gone;
    if (l->fds[i] >= 0) {
      struct pollfd pf = {l->fds[i], POLLIN, 0};
      gone = poll(&pf, 1, 0) > 0;
    } else {
      gone = !redcoll__shm_pid_alive(l->pids[i]);
    }
    if (gone) {
      l->dead[i] = 1;
      if (found < 0) found = i;
    }
  }
  return found;
}
