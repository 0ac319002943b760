/* Sending a message (send.c). */
#ifndef REDCOLL_TCP_SEND_H
#define REDCOLL_TCP_SEND_H

#include "tcp_int.h"

/* Sends s on the ready connection to s->dst, which no message holds
 * (wr_busy): at once if the socket takes it, else queued (s->queued); on
 * the program's loop a long one in pieces, and the connection is then
 * busy until its last piece is out. */
void redcoll__tcp_send_queue(redcoll__tcp *t, redcoll__tcp_send *s);
/* On the program's loop: the next piece of the message c writes in pieces,
 * if the last is out (c->piece_due); once per turn. */
void redcoll__tcp_send_piece(redcoll__tcp_conn *c);
/* Lets the queued send s finish without its caller (a copy of its unwritten
 * bytes); 0, or -1 without memory. */
int redcoll__tcp_send_detach(redcoll__tcp_send *s);
/* An outgoing connection is set up (and authenticated): use it. */
void redcoll__tcp_out_ready(redcoll__tcp_conn *c);
/* While this rank destroys its communicator (t->leaving): says BYE to rank
 * q on c, once, after what the set-up wrote on it.  A connection that a
 * peer takes for set up gets one before it closes, so the peer learns of
 * the leaving (and of an abort it followed) before the end of any of this
 * rank's connections. */
void redcoll__tcp_bye_if_leaving(redcoll__tcp_conn *c, int q);

#endif /* REDCOLL_TCP_SEND_H */
