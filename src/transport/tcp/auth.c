/* Authentication with a shared secret: the key made from the secret, the
 * nonces, the HMAC of the challenge-response (its steps are in wire.h) and
 * their comparison, through libsodium.  Without libsodium a secret is
 * refused and the rest is never reached. */
#include "auth.h"

#ifdef REDCOLL_HAVE_SODIUM
#include <sodium.h>
#endif

int redcoll__tcp_auth_init(redcoll__tcp *t, const char *secret) {
  t->auth = 0;
  if (secret == NULL || *secret == '\0') return REDCOLL_OK;
#ifdef REDCOLL_HAVE_SODIUM
  if (sodium_init() < 0) {
    redcoll__log(0, "tcp rank %d: libsodium failed to initialize", t->rank);
    return REDCOLL_ENOTSUP;
  }
  crypto_hash_sha256(t->key, (const unsigned char *)secret, strlen(secret));
  t->auth = 1;
  return REDCOLL_OK;
#else
  redcoll__log(0,
               "tcp rank %d: a secret (REDCOLL_SECRET) is set but this build of redcoll has no "
               "crypto library (libsodium) to authenticate with; rebuild with libsodium-dev",
               t->rank);
  return REDCOLL_ENOTSUP;
#endif
}

#ifdef REDCOLL_HAVE_SODIUM
/* The MAC of role 'C' or 'S' over both nonces, both ranks and the size. */
void redcoll__tcp_auth_mac(const redcoll__tcp *t, unsigned char *out, char role,
                           const unsigned char *nc, const unsigned char *ns, int client,
                           int server) {
  unsigned char m[16 + 1 + 2 * REDCOLL__AUTH_NONCE + 12];
  size_t n = 0;
  memcpy(m, "redcoll-auth-v1", 16);
  n = 16;
  m[n++] = (unsigned char)role;
  memcpy(m + n, nc, REDCOLL__AUTH_NONCE);
  n += REDCOLL__AUTH_NONCE;
  memcpy(m + n, ns, REDCOLL__AUTH_NONCE);
  n += REDCOLL__AUTH_NONCE;
  redcoll__tcp_put_le(m + n, (uint64_t)client, 4);
  redcoll__tcp_put_le(m + n + 4, (uint64_t)server, 4);
  redcoll__tcp_put_le(m + n + 8, (uint64_t)t->size, 4);
  n += 12;
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, t->key, sizeof t->key);
  crypto_auth_hmacsha256_update(&st, m, n);
  crypto_auth_hmacsha256_final(&st, out);
}
void redcoll__tcp_auth_nonce(unsigned char *out) { randombytes_buf(out, REDCOLL__AUTH_NONCE); }
int redcoll__tcp_auth_equal(const unsigned char *a, const unsigned char *b) {
  return crypto_verify_32(a, b) == 0;
}
#else
void redcoll__tcp_auth_mac(const redcoll__tcp *t, unsigned char *out, char role,
                           const unsigned char *nc, const unsigned char *ns, int client,
                           int server) {
  (void)t, (void)role, (void)nc, (void)ns, (void)client, (void)server;
  memset(out, 0, REDCOLL__AUTH_MAC);
}
void redcoll__tcp_auth_nonce(unsigned char *out) { memset(out, 0, REDCOLL__AUTH_NONCE); }
int redcoll__tcp_auth_equal(const unsigned char *a, const unsigned char *b) {
  (void)a, (void)b;
  return 0; /* never: t->auth is never set without the library */
}
#endif
