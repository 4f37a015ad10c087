/*
 * Feeds and sitemaps: RSS (0.9x, 2.0), RSS 1.0 (RDF), Atom (0.3, 1.0),
 * XML sitemaps and sitemap indexes (sitemaps.org), read with expat's push
 * parser from chunks as they arrive, each item handed to a callback.
 * Pure: no loop, no database, no globals.
 *
 * What an item is, per kind of document (the root element decides; element
 * names are matched on their local part, so "atom:link" is "link"):
 *   rss      rss/channel/item or rss/item: link (text), else guid when it
 *            is a permalink (isPermaLink not "false"); id = guid
 *   rdf      RDF/item: link, else rdf:about
 *   atom     feed/entry: link href with rel absent or "alternate" (the
 *            first one); id = id
 *   sitemap  urlset/url: loc, lastmod, changefreq, priority
 *   index    sitemapindex/sitemap: loc, lastmod (is_sitemap = 1)
 * updated is the latest of the item's dates: updated, modified,
 * published, pubDate, dc:date, lastmod (RFC 822 dates with any zone, or
 * W3C datetime / ISO 8601). URLs are given as written (trimmed); the
 * caller resolves them against the document URL.
 *
 * Hostile input: entity declarations and DTDs with an internal subset are
 * refused (no entity is ever expanded: no billion laughs, no external
 * entities; parameter entities are never parsed), so are documents over
 * max_bytes, elements nested deeper than max_depth and more than
 * max_items items (the rest is dropped, stats.capped set, not an error).
 * A text field longer than max_text is cut and its item's URL dropped. An
 * error stops the parse: items before it were delivered.
 */
#ifndef KRIA_FEED_H
#define KRIA_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

typedef enum kr_feed_kind {
  KR_FEED_UNKNOWN = 0,       /* no root element yet, or not a feed */
  KR_FEED_RSS = 1,
  KR_FEED_RDF = 2,
  KR_FEED_ATOM = 3,
  KR_FEED_SITEMAP = 4,
  KR_FEED_SITEMAP_INDEX = 5,
} kr_feed_kind_t;

typedef struct kr_feed_item {
  kr_feed_kind_t kind;    /* of the document */
  int is_sitemap;         /* a sitemap of a sitemap index */
  kr_slice_t url;         /* n = 0: the item has none */
  kr_slice_t id;          /* guid / atom id; n = 0: none */
  int64_t updated;        /* epoch s of its latest date; 0 unknown */
  kr_slice_t changefreq;  /* sitemap changefreq as written; n = 0: none */
  double priority;        /* sitemap priority 0..1; -1 none */
} kr_feed_item_t;

/* Called for each item; slices are valid during the call. Return nonzero
 * to stop (kr_feed_parse then returns KR_ECANCELED). */
typedef int (*kr_feed_item_fn)(void *ud, const kr_feed_item_t *item);

typedef struct kr_feed_opts {
  size_t max_bytes;   /* document bytes (50 MiB: the sitemap protocol's cap) */
  size_t max_items;   /* items delivered (50,000, idem) */
  size_t max_text;    /* bytes of one text field (8 KiB) */
  unsigned max_depth; /* element nesting (64) */
} kr_feed_opts_t;

void kr_feed_opts_default(kr_feed_opts_t *o);

typedef struct kr_feed_stats {
  uint64_t bytes;         /* fed */
  uint64_t items;         /* delivered */
  uint64_t dropped;       /* over max_items, or URL cut by max_text */
  int capped;             /* max_items reached */
} kr_feed_stats_t;

typedef struct kr_feed kr_feed_t;

/* A parser (o NULL: defaults) calling fn(ud, item). Never NULL. */
kr_feed_t *kr_feed_new(const kr_feed_opts_t *o, kr_feed_item_fn fn, void *ud);
/* Start a new document with the same options. */
void kr_feed_reset(kr_feed_t *f, kr_feed_item_fn fn, void *ud);
void kr_feed_free(kr_feed_t *f);
/* Feed n bytes. 0, or (the parse is over) KR_EXML for malformed or
 * refused XML or a document that is no feed, KR_ETOOBIG over max_bytes or
 * max_depth, KR_ECANCELED when the callback stopped it. Once it failed,
 * every later call returns the same. */
int kr_feed_parse(kr_feed_t *f, const char *p, size_t n);
/* End of the document: 0, or as kr_feed_parse (a cut document is KR_EXML). */
int kr_feed_finish(kr_feed_t *f);
kr_feed_kind_t kr_feed_kind(const kr_feed_t *f);
const kr_feed_stats_t *kr_feed_stats(const kr_feed_t *f);
/* Why the parse failed ("" when it did not), e.g. "line 3: DTD refused". */
const char *kr_feed_error(const kr_feed_t *f);
/* WebSub discovery (W3C WebSub 4): the first link outside the items
 * whose rel names "hub" (resp. "self"): Atom feed/link, and atom:link in
 * an RSS or RDF channel. As written, trimmed; n = 0: none, or over
 * max_text. Valid until the next reset; known once the parse passed the
 * element (feeds put them before their items). */
kr_slice_t kr_feed_hub(const kr_feed_t *f);
kr_slice_t kr_feed_self(const kr_feed_t *f);
/* "rss", "rdf", "atom", "sitemap", "sitemapindex", "unknown". */
const char *kr_feed_kind_name(kr_feed_kind_t k);

/* A feed or sitemap date: RFC 822 / 2822 ("Sat, 07 Sep 2002 00:00:01
 * GMT", day name optional, seconds optional, 2-digit years, zones GMT UT
 * UTC Z EST EDT CST CDT MST MDT PST PDT or +hhmm) or W3C datetime (YYYY,
 * YYYY-MM, YYYY-MM-DD, then Thh:mm[:ss[.f]] with Z or +hh:mm, none =
 * UTC). Blanks around are ignored; at most 64 bytes are looked at. 0 with
 * *epoch_s, or KR_EINVAL. */
int kr_feed_date_parse(const char *s, size_t n, int64_t *epoch_s);

#endif
