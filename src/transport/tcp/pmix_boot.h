/* The PMIx bootstrap's calls into PMIx (pmix_boot.c): built with PMIx only
 * (REDCOLL_HAVE_PMIX); rendezvous.c listens and fills the peers. */
#ifndef REDCOLL_TCP_PMIX_BOOT_H
#define REDCOLL_TCP_PMIX_BOOT_H

#include <stdint.h>

/* 1 if a PMIx server started this process (PMIX_NAMESPACE and PMIX_RANK
 * are set) and redcoll was built with PMIx. */
int redcoll__tcp_pmix_present(void);
/* This process's rank and its job's size from PMIx; REDCOLL_ETRANSPORT
 * (logged) if PMIx fails. */
int redcoll__tcp_pmix_rank_size(int *rank, int *size);
/* Publishes `mine` (this rank's address) under a key of its own for the
 * n-th bootstrap of this process, fences with every rank of the job, and
 * gets every rank's: all[q] (size entries, each freed by the caller with
 * free()).  *job gets a digest of the namespace.  REDCOLL_ETRANSPORT
 * (logged) if PMIx fails; REDCOLL_ENOMEM. */
int redcoll__tcp_pmix_exchange(int rank, int size, uint64_t n, const char *mine, char **all,
                               uint64_t *job);

#endif /* REDCOLL_TCP_PMIX_BOOT_H */
