/* One connection: new, close, control frames, refusal; a peer's retry
 * (conn.c). */
#ifndef REDCOLL_TCP_CONN_H
#define REDCOLL_TCP_CONN_H

#include "tcp_int.h"

/* A connection to or from peer (-1: not known yet), in t's list. */
redcoll__tcp_conn *redcoll__tcp_conn_new(redcoll__tcp *t, int peer, int out);
/* One of t's handles closed (t->handles counts those closing): the last
 * one frees a destroyed transport (t->dying). */
void redcoll__tcp_handle_closed(redcoll__tcp *t);
/* A send is over, all written (status 0) or failed (libuv's status): a
 * detached one is freed, else done with its status (a failure other than
 * a cancel loses the peer's sending side). */
void redcoll__tcp_send_end(redcoll__tcp *t, redcoll__tcp_send *s, int status);
/* Closes c (once) and takes it off its peer; freed by libuv's close. */
void redcoll__tcp_conn_close(redcoll__tcp_conn *c);
void redcoll__tcp_conn_read_stop(redcoll__tcp_conn *c);
/* Connects to peer q again after a backoff (t->on_retry, once). */
void redcoll__tcp_retry_later(redcoll__tcp *t, int q);
/* The same after ms milliseconds (a first probe, redcoll__tcp_peer.probe). */
void redcoll__tcp_retry_later_ms(redcoll__tcp *t, int q, unsigned ms);
/* Writes a frame (n bytes of frame, header and payload, at most
 * REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC); with close,
 * closes c once it is out. */
void redcoll__tcp_ctl_write_bytes(redcoll__tcp_conn *c, const unsigned char *frame, size_t n,
                                  int close);
/* The control frames that waited behind a message written in pieces go
 * out (its last piece is). */
void redcoll__tcp_ctl_flush(redcoll__tcp_conn *c);
/* Writes a frame without payload (BYE), or with a channel (CANCEL, CLOSE). */
void redcoll__tcp_ctl_send(redcoll__tcp_conn *c, unsigned type, uint64_t tag);
void redcoll__tcp_ctl_send_ch(redcoll__tcp_conn *c, unsigned type, uint64_t tag, uint64_t chan);
/* Refuses a connection in its set-up: an AUTH frame of step 0, then the
 * close. */
void redcoll__tcp_conn_refuse(redcoll__tcp_conn *c);
/* A protocol error on c: an unidentified one is dropped, an identified one
 * breaks the communicator. */
void redcoll__tcp_conn_proto(redcoll__tcp_conn *c, const char *what);

#endif /* REDCOLL_TCP_CONN_H */
