/* The receiving side of a connection (recv.c). */
#ifndef REDCOLL_TCP_RECV_H
#define REDCOLL_TCP_RECV_H

#include "tcp_int.h"

/* Starts reading c (through recv.c's callbacks). */
void redcoll__tcp_conn_read_start(redcoll__tcp_conn *c);
/* An identified incoming connection: it reads through its buffer. */
int redcoll__tcp_buffered(const redcoll__tcp_conn *c);
/* The receive r ends before its message did (timeout, cancel): the rest of
 * a payload being read into it is dropped. */
void redcoll__tcp_recv_withdraw(redcoll__tcp *t, redcoll__tcp_recv *r);
/* The receive r, posted on pc while the message it takes is being read
 * into a kept copy, takes over the rest of it (1), or not (0). */
int redcoll__tcp_recv_adopt(redcoll__tcp *t, redcoll__tcp_recv *r, redcoll__tcp_pchan *pc);
/* Rank `from` gave up on channel group g with an ABORT tag's why (told by
 * `via`, "" for itself): its calls end with REDCOLL_EABORTED. */
void redcoll__tcp_cancel_learnt(redcoll__tcp *t, const char *via, int from, uint64_t g,
                                uint64_t why);
/* rx_pump on every peer's incoming connection (after a change that may let
 * a waiting frame go on: a cancel, a close). */
void redcoll__tcp_pump_all(redcoll__tcp *t);
/* Takes what the buffered connection c holds, then reads on. */
void redcoll__tcp_rx_pump(redcoll__tcp_conn *c);
/* A new turn of the program's loop (redcoll_tcp_config.loop): the
 * connections read on (REDCOLL__TCP_EXT_TURN), and the receives copying a
 * kept message take their next slice (REDCOLL__TCP_EXT_COPY). */
void redcoll__tcp_ext_turn(redcoll__tcp *t);
/* Sets up t->resume (not on the program's loop); REDCOLL_ENOMEM if libuv
 * refuses. */
int redcoll__tcp_resume_init(redcoll__tcp *t);
/* The connection is gone (EOF or error uverr). */
void redcoll__tcp_conn_lost(redcoll__tcp_conn *c, int uverr);

#endif /* REDCOLL_TCP_RECV_H */
