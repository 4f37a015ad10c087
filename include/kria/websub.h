/*
 * WebSub (W3C Recommendation, 23 January 2018) pieces that need no loop:
 * discovery from HTTP Link headers, and the signature of a content
 * distribution request. Pure: no loop, no database, no globals.
 *
 * Discovery (WebSub 4): a feed names its hub and its own canonical URL
 * (the topic) with rel="hub" and rel="self" links, in the document
 * (feed.h: kr_feed_hub, kr_feed_self) or in HTTP Link headers (RFC 8288),
 * read here. The header wins when both are present (WebSub 4: "the
 * subscriber SHOULD use the Link headers").
 *
 * Authenticated content distribution (WebSub 8): a subscription made with
 * hub.secret gets each notification with
 *   X-Hub-Signature: method=signature
 * method one of sha1, sha256, sha384, sha512, signature the lowercase hex
 * HMAC of the body under the secret. A notification whose signature is
 * missing, malformed, of another method or wrong MUST be ignored by the
 * subscriber; it MAY still be acknowledged with a 2xx (so a forger learns
 * nothing).
 *
 * Timing of the subscriber's requests (WebSub 5.1, 5.3): a hub verifies
 * intent asynchronously, and may never; a request that got no
 * verification is asked again after a wait that doubles with each
 * request (kr_websub_retry_ms), and a granted lease is renewed a tenth of
 * it before it ends (kr_websub_renew_at).
 */
#ifndef KRIA_WEBSUB_H
#define KRIA_WEBSUB_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

/* The URI of the first link of the Link header value v (n bytes, one
 * header or several joined by ", ") whose rel parameter names rel (a
 * space-separated list, matched case-insensitively): 1 with *uri (inside
 * v, between the angle brackets, untrimmed), or 0 when none. Malformed
 * links are skipped; quoted parameter values may hold ',' and ';'. */
int kr_link_header_rel(const char *v, size_t n, const char *rel, kr_slice_t *uri);

/* 1 when the X-Hub-Signature value sig (n bytes, "method=hex") is the HMAC
 * of body under secret for a method WebSub names, else 0 (missing, a
 * method it does not name, not hex, wrong length, wrong value). The
 * comparison takes the same time wherever the first difference is. */
int kr_websub_sig_ok(const char *sig, size_t n, const char *secret, size_t secret_n,
                     const void *body, size_t body_n);

/* The wait after the attempt-th request (1 the first) of a subscription
 * still unverified: base_ms x 2^(attempt - 1), at most cap_ms (0 and 1
 * both give base_ms; no overflow for any attempt). */
uint64_t kr_websub_retry_ms(uint64_t base_ms, unsigned attempt, uint64_t cap_ms);

/* When to ask again for a lease granted until `until` (epoch ms) that
 * lasts lease_ms: a tenth of it early, at least min_ms early, never
 * before now (a lease too short for that: now). */
uint64_t kr_websub_renew_at(uint64_t now, uint64_t until, uint64_t lease_ms, uint64_t min_ms);

#endif
