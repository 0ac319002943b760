/* Waiting from any number of threads (wait.c). */
#ifndef REDCOLL_TCP_WAIT_H
#define REDCOLL_TCP_WAIT_H

#include "tcp_int.h"

/* The mutex, the condition variable and the loop's wake-up. */
int redcoll__tcp_wait_init(redcoll__tcp *t);
void redcoll__tcp_wait_fini(redcoll__tcp *t);
/* On the program's loop: the next turn does not wait (nb_idle), for work
 * the transport left for it (a piece of a message, a slice of a copy). */
void redcoll__tcp_ext_soon(redcoll__tcp *t);
/* With t->mu held: runs the loop (as its leader, or waiting for the
 * thread that is) until done(t, arg) or the deadline (uv_hrtime ns,
 * UINT64_MAX: none).  Returns 1 if done.  Once the deadline has passed, a
 * thread free to lead the transport's own loop runs one more turn before
 * done decides, so that what came meanwhile counts (a rank stopped and
 * continued past its deadline finds its peers' abort, which wins over its
 * timeout). */
int redcoll__tcp_progress(redcoll__tcp *t, int (*done)(redcoll__tcp *, void *), void *arg,
                          uint64_t deadline_ns);
/* With t->mu held, after posting work for the loop: wakes the leader's
 * poll so that the loop sees it. */
void redcoll__tcp_kick(redcoll__tcp *t);
/* With t->mu held and no thread leading: one turn of the transport's own
 * loop (not the program's) without waiting. */
void redcoll__tcp_one_turn(redcoll__tcp *t);
/* Ranks per CPU on the busiest kernel: the transport's info, and whether a
 * waiting thread's poll pauses before it yields (redcoll__spin_pause_ns). */
double redcoll__tcp_ranks_per_cpu(const redcoll__tcp *t);

#endif /* REDCOLL_TCP_WAIT_H */
