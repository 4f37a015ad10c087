/*
 * Change signals' claims and what a changed page or feed pulls forward
 * (claims.c), for the revisit processor (proc_wait.c). A claim from
 * outside a fetch (WebSub) comes in through kr__crawl_sig_claim (crawl.h).
 */
#ifndef KRIA_CLAIMS_H
#define KRIA_CLAIMS_H

#include <stdint.h>

#include "crawl.h"

/* The claims' table released (the revisit processor's close). */
void kr__claims_free(kr_crawl_t *c);
/* A visit of a listed URI verifies what its claims said since its
 * previous visit (signal.h), into its host's reliability. 1 when the
 * visit came for a believed claim (signal.h "history"). */
int kr__verify_claim(kr_fetch_t *f, kr_content_t state);
/* The wait's factor from the URI's host's signals (1: none). */
double kr__claim_stretch(kr_fetch_t *f);
/* The dated items of a feed or sitemap read (first visit too): each
 * newer claim is a signal for its URI, counted on its host. */
void kr__record_claims(kr_fetch_t *f, uint64_t now);
/* A changed page's E links due now at HIGH (adaptive.refresh-embeds). */
void kr__refresh_embeds(kr_fetch_t *f, uint64_t now);
/* A changed feed's items due now: dated ones after its previous visit
 * (at HIGH, while their host's signals verify), undated ones up to
 * adaptive.feed-pull-max. */
void kr__pull_feed_items(kr_fetch_t *f, uint64_t now);

#endif
