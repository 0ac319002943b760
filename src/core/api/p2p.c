/* Point-to-point on a communicator: exact lengths, FIFO per pair of ranks,
 * the tag checked like a collective's, the same statuses and the same
 * breaking of the communicator on failure. */
#include "internal.h"

/* The transport tag of user tag t: marked so that it cannot pass for a
 * collective's tag on a transport without channels. */
#define P2P_TAG(t) (0x7032700000000000ULL | (uint64_t)(t))

static int check_peer(const redcoll_comm *c, int peer, const void *buf, size_t len) {
  return peer >= 0 && peer < c->size && peer != c->rank && (buf != NULL || len == 0);
}

REDCOLL_API int redcoll_send(redcoll_comm *c, int dst, uint32_t tag, const void *buf, size_t len) {
  if (c == NULL || !check_peer(c, dst, buf, len)) return REDCOLL_EINVAL;
  int rc = redcoll_comm_error(c);
  if (rc != REDCOLL_OK) return rc;
  return redcoll__p2p(c, redcoll__comm_deadline(c), dst, P2P_TAG(tag), buf, len, -1, 0, NULL,
                      0);
}

REDCOLL_API int redcoll_recv(redcoll_comm *c, int src, uint32_t tag, void *buf, size_t len) {
  if (c == NULL || !check_peer(c, src, buf, len)) return REDCOLL_EINVAL;
  int rc = redcoll_comm_error(c);
  if (rc != REDCOLL_OK) return rc;
  return redcoll__p2p(c, redcoll__comm_deadline(c), -1, 0, NULL, 0, src, P2P_TAG(tag), buf,
                      len);
}

REDCOLL_API int redcoll_sendrecv(redcoll_comm *c, int dst, uint32_t stag, const void *sbuf,
                                 size_t slen, int src, uint32_t rtag, void *rbuf, size_t rlen) {
  if (c == NULL || !check_peer(c, dst, sbuf, slen) || !check_peer(c, src, rbuf, rlen))
    return REDCOLL_EINVAL;
  int rc = redcoll_comm_error(c);
  if (rc != REDCOLL_OK) return rc;
  return redcoll__p2p(c, redcoll__comm_deadline(c), dst, P2P_TAG(stag), sbuf, slen, src,
                      P2P_TAG(rtag), rbuf, rlen);
}
