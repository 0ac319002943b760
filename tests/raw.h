/*
 * A transport's members called straight, bypassing the algorithms: for the
 * tests of the transports themselves.  Versions 1 and 2 through send, recv
 * and sendrecv; version 3 through exchange, outside any collective (no
 * deadline, collective 0).
 */
#ifndef REDCOLL_TEST_RAW_H
#define REDCOLL_TEST_RAW_H

#include "internal.h"

/* has_send, has_recv: which sides the call has. */
__attribute__((unused)) static int raw_call(redcoll_comm *c, int has_send, int dst, uint64_t stag,
                                            const void *sbuf, size_t slen, int has_recv, int src,
                                            uint64_t rtag, void *rbuf, size_t rlen) {
  const redcoll_transport_ops *o = c->ops;
  if (o->version < 3) {
    if (!has_recv) return o->send(c->impl, dst, stag, sbuf, slen);
    if (!has_send) return o->recv(c->impl, src, rtag, rbuf, rlen);
    return o->sendrecv(c->impl, dst, stag, sbuf, slen, src, rtag, rbuf, rlen);
  }
  redcoll_transport_ctx ctx = {UINT64_MAX, 0, 0};
  redcoll_transport_msg s = {dst, stag, (void *)sbuf, slen}, r = {src, rtag, rbuf, rlen};
  return o->exchange(c->impl, &ctx, has_send ? &s : NULL, has_recv ? &r : NULL);
}

__attribute__((unused)) static int raw_send(redcoll_comm *c, int dst, uint64_t tag,
                                            const void *buf, size_t len) {
  return raw_call(c, 1, dst, tag, buf, len, 0, 0, 0, NULL, 0);
}

__attribute__((unused)) static int raw_recv(redcoll_comm *c, int src, uint64_t tag, void *buf,
                                            size_t len) {
  return raw_call(c, 0, 0, 0, NULL, 0, 1, src, tag, buf, len);
}

__attribute__((unused)) static int raw_exchange(redcoll_comm *c, int dst, uint64_t stag,
                                                const void *sbuf, size_t slen, int src,
                                                uint64_t rtag, void *rbuf, size_t rlen) {
  return raw_call(c, 1, dst, stag, sbuf, slen, 1, src, rtag, rbuf, rlen);
}

#endif
