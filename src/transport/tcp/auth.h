/* Authentication with a shared secret (auth.c). */
#ifndef REDCOLL_TCP_AUTH_H
#define REDCOLL_TCP_AUTH_H

#include "tcp_int.h"

/* Sets t->auth and t->key from the secret (NULL or "": no authentication).
 * REDCOLL_ENOTSUP (logged) if this build has no crypto library. */
int redcoll__tcp_auth_init(redcoll__tcp *t, const char *secret);
/* The MAC of role 'C' or 'S' over both nonces, both ranks and the size
 * (REDCOLL__AUTH_MAC bytes into out). */
void redcoll__tcp_auth_mac(const redcoll__tcp *t, unsigned char *out, char role,
                           const unsigned char *nc, const unsigned char *ns, int client,
                           int server);
/* A fresh nonce of REDCOLL__AUTH_NONCE bytes. */
void redcoll__tcp_auth_nonce(unsigned char *out);
/* Two MACs are equal (in constant time). */
int redcoll__tcp_auth_equal(const unsigned char *a, const unsigned char *b);

#endif /* REDCOLL_TCP_AUTH_H */
