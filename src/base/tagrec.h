/* The record a transport keeps for the optional check of tags that
 * conflict (redcoll_transport_tags_conflict in redcoll/transport.h): the
 * tag, channel and collective number of the last receive posted inside a
 * collective, and the number of the last collective this rank sent or
 * received in on that channel.  A message kept on that channel is checked
 * against the receive's tag only while its collective is the last: a tag
 * carries only 24 bits of the number, so a record left from long ago (a
 * rank that only sent for 2^24 collectives) must not count.  Used by the
 * TCP, shared-memory and push transports; zeroed memory is an empty
 * record. */
#ifndef REDCOLL_BASE_TAGREC_H
#define REDCOLL_BASE_TAGREC_H

#include <stdint.h>

#include "redcoll/transport.h"

typedef struct redcoll__tagrec {
  uint64_t tag, chan, coll, last;
  int set;
} redcoll__tagrec;

/* A receive with tag on chan in collective coll (not 0) is posted: 1 if
 * its tag is new to the record (the caller then checks the messages it
 * keeps on chan against it), 0 if the record already had it. */
static inline int redcoll__tagrec_enter(redcoll__tagrec *r, uint64_t chan, uint64_t tag,
                                        uint64_t coll) {
  if (chan == r->chan) r->last = coll;
  if (r->set && r->tag == tag && r->chan == chan) return 0;
  r->tag = tag;
  r->chan = chan;
  r->coll = r->last = coll;
  r->set = 1;
  return 1;
}

/* A send on chan in collective coll (0: outside one) is posted. */
static inline void redcoll__tagrec_sent(redcoll__tagrec *r, uint64_t chan, uint64_t coll) {
  if (coll != 0 && chan == r->chan) r->last = coll;
}

/* Whether a message with tag, kept on chan, conflicts with the record. */
static inline int redcoll__tagrec_kept(const redcoll__tagrec *r, uint64_t chan, uint64_t tag) {
  return r->set && chan == r->chan && r->coll == r->last &&
         redcoll_transport_tags_conflict(tag, r->tag);
}

#endif /* REDCOLL_BASE_TAGREC_H */
