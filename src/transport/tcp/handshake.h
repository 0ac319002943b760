/* The set-up of a connection after HELLO (handshake.c). */
#ifndef REDCOLL_TCP_HANDSHAKE_H
#define REDCOLL_TCP_HANDSHAKE_H

#include "tcp_int.h"

/* The set-up of this rank's connection to q failed: sending to q is over
 * and the communicator is broken, with the reason `why`. */
void redcoll__tcp_auth_fail(redcoll__tcp *t, int q, const char *why);
/* The payload of a HELLO (the job id and communicator number) has been
 * read into c->abuf: a peer's HELLO, answered and accepted or refused, or
 * (c->out) the answer to this rank's. */
void redcoll__tcp_hello_arrived(redcoll__tcp_conn *c);
/* The payload of an authentication frame has been read into c->abuf. */
void redcoll__tcp_auth_arrived(redcoll__tcp_conn *c);
/* An AUTH frame header: refusal, or the payload to read next. */
void redcoll__tcp_auth_frame(redcoll__tcp_conn *c, const redcoll__tcp_frame *f);

#endif /* REDCOLL_TCP_HANDSHAKE_H */
