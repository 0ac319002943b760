/* Making and accepting connections (connect.c). */
#ifndef REDCOLL_TCP_CONNECT_H
#define REDCOLL_TCP_CONNECT_H

#include "tcp_int.h"

/* Connects to rank q: the data connection (for_abort 0, 1 when it is made
 * only to carry this rank's CANCELs), or (control 1) an extra connection for
 * the CANCELs alone, which later messages do not wait for. */
void redcoll__tcp_connect_to(redcoll__tcp *t, int q, int for_abort, int control);
/* The data connection to rank q: redcoll__tcp_connect_to(t, q, for_abort, 0). */
void redcoll__tcp_peer_connect(redcoll__tcp *t, int q, int for_abort);
/* The listener's connection callback (tcp.c hands it to the bootstrap). */
void redcoll__tcp_on_accept(uv_stream_t *server, int status);
/* A peer's retry timer: connect again (a send waits) or probe (a receive
 * waits, redcoll__tcp_peer.probe). */
void redcoll__tcp_on_retry(uv_timer_t *tm);

#endif /* REDCOLL_TCP_CONNECT_H */
