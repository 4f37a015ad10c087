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
 */
#ifndef KRIA_WEBSUB_H
#define KRIA_WEBSUB_H

#include <stddef.h>

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

#endif
