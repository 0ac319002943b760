/* The bootstrap (rendezvous.c). */
#ifndef REDCOLL_TCP_RENDEZVOUS_H
#define REDCOLL_TCP_RENDEZVOUS_H

#include "tcp_int.h"

/* Fills t->peers[*].addr and t->self and makes t->listener listen (with
 * t->on_accept).  Returns a status with the reason logged. */
int redcoll__tcp_bootstrap(redcoll__tcp *t, const redcoll_tcp_config *cfg);

#endif /* REDCOLL_TCP_RENDEZVOUS_H */
