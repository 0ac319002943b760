/* The parts of the configuration (config.c) that the rendezvous uses: the
 * entries of a REDCOLL_HOSTS list and the job id made from them.
 * redcoll_tcp_config_init and redcoll_tcp_config_from_env are public
 * (redcoll/tcp.h). */
#ifndef REDCOLL_TCP_CONFIG_H
#define REDCOLL_TCP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* The next entry of a host list (commas or white space between entries):
 * its start, with its length in *n, and *s moved past it; NULL at the end. */
const char *redcoll__tcp_next_entry(const char **s, size_t *n);
/* The job id of a REDCOLL_HOSTS list without a configured one: a digest of
 * its entries as written, whatever separates them. */
uint64_t redcoll__tcp_hosts_digest(const char *hosts);

#endif /* REDCOLL_TCP_CONFIG_H */
