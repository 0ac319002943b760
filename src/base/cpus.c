/* Which CPUs a process may run on, and how many ranks share each: the
 * transports decide from it whether a waiting rank may spin on the pause
 * hint (redcoll__spin_pause_ns), and the core's model what a step costs
 * when ranks outnumber CPUs.
 *
 * The count is of the CPUs in the affinity mask, not of those online: a
 * job started under `taskset -c 0`, or by a launcher that binds each rank
 * to one core, has fewer CPUs than the machine.  Ranks bound one to a core
 * each see a mask of one CPU, so ranks that share a host take the union of
 * their masks (each transport has its own way to exchange them), and the
 * result is the same on every rank.
 *
 * Example: 4 ranks on an 8-CPU machine, each bound to one of CPUs 0-1
 * (masks 0x1, 0x2, 0x1, 0x2): union 0x3, 2 CPUs, 2 ranks per CPU. */
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

int redcoll__cpu_mask(uint64_t *words, int nwords) {
  memset(words, 0, (size_t)nwords * sizeof *words);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    if (c >= 64 * nwords) { /* beyond the mask: it says nothing */
      memset(words, 0, (size_t)nwords * sizeof *words);
      return 0;
    }
    words[c / 64] |= (uint64_t)1 << (c % 64);
  }
  return 1;
}

int redcoll__cpu_mask_add(uint64_t *acc, const uint64_t *mask, int nwords) {
  uint64_t any = 0;
  for (int i = 0; i < nwords; i++) {
    acc[i] |= mask[i];
    any |= mask[i];
  }
  return any != 0;
}

double redcoll__ranks_per_cpu(int ranks, const uint64_t *mask, int nwords) {
  long cpus = 0;
  for (int i = 0; mask != NULL && i < nwords; i++) cpus += __builtin_popcountll(mask[i]);
  if (cpus == 0) cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && ranks > cpus ? (double)ranks / (double)cpus : 1.0;
}
