/* Sending a message (send.c). */
#ifndef REDCOLL_TCP_SEND_H
#define REDCOLL_TCP_SEND_H

#include "tcp_int.h"

/* Sends s on the ready connection to s->dst: at once if the socket takes
 * it, else queued (s->queued). */
void redcoll__tcp_send_queue(redcoll__tcp *t, redcoll__tcp_send *s);
/* Lets the queued send s finish without its caller (a copy of its unwritten
 * bytes); 0, or -1 without memory. */
int redcoll__tcp_send_detach(redcoll__tcp_send *s);
/* An outgoing connection is set up (and authenticated): use it. */
void redcoll__tcp_out_ready(redcoll__tcp_conn *c);

#endif /* REDCOLL_TCP_SEND_H */
