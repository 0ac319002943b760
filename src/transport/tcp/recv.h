/* The receiving side of a connection (recv.c). */
#ifndef REDCOLL_TCP_RECV_H
#define REDCOLL_TCP_RECV_H

#include "tcp_int.h"

/* Starts reading c (through recv.c's callbacks). */
void redcoll__tcp_conn_read_start(redcoll__tcp_conn *c);
/* An identified incoming connection: it reads through its buffer. */
int redcoll__tcp_buffered(const redcoll__tcp_conn *c);
/* Matches the DATA header waiting on peer q's connection with the posted
 * receive, if both are there. */
void redcoll__tcp_try_match(redcoll__tcp *t, int q);
/* Delivers what the buffered connection c holds, then reads on. */
void redcoll__tcp_rx_pump(redcoll__tcp_conn *c);
/* The connection is gone (EOF or error uverr). */
void redcoll__tcp_conn_lost(redcoll__tcp_conn *c, int uverr);

#endif /* REDCOLL_TCP_RECV_H */
