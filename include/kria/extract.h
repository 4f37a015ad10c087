/*
 * Link extraction from HTML and CSS, streaming. Pure: no loop, no global
 * state; tests, benches and fuzzers link it alone.
 *
 * Both extractors are fed the (content-decoded) body chunk by chunk as it
 * arrives, split anywhere: a tag, attribute, character reference, comment
 * or CSS token may span chunks, and the links found are the same, in the
 * same order, whatever the split points. Each link is handed to a callback
 * as a raw, whitespace-trimmed URL string; the caller resolves it against
 * the document's base with the url module.
 *
 * Memory is constant per extractor: its state plus two buffers that grow
 * on demand up to a hard maximum derived from max_value (the current tag's
 * interesting attribute values, the current CSS URL). No per-link
 * allocation: the URL slice points into those buffers and is valid only
 * during the callback. Deep nesting costs nothing (no tree is built).
 *
 * What the HTML extractor finds (hop kinds as in DESIGN.md):
 *   L  a/area href, link href (other rel), meta refresh URL, svg a href,
 *      form action and button/input formaction (KR_EXTRACT_FORMS only)
 *   E  img/image src and srcset (every candidate), script/iframe/frame/
 *      embed/source/video/audio/track src, source srcset, video poster,
 *      input type=image src, link href with rel stylesheet, *icon, preload,
 *      modulepreload or manifest, object data, background attributes,
 *      svg image/use/feimage href, CSS url() and @import in style
 *      attributes and <style> elements
 *   B  the href of the first <base> with an href (at most once a document;
 *      even when empty, which means the document URL). HTML applies it to
 *      the whole document, links before it included; a streaming caller
 *      that resolves as links arrive resolves those against the document
 *      URL instead (they are rare: <base> belongs in <head>).
 * Nothing is taken from comments, script text, or raw-text elements other
 * than <style>; links of a tag cut off by the end of the document are
 * dropped (WHATWG: EOF in a tag drops the tag), except CSS URLs of its
 * style attribute that were complete already.
 */
#ifndef KRIA_EXTRACT_H
#define KRIA_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"

/* Hop kind of an extracted URL; the values are the hop-path letters. */
typedef enum kr_extract_kind {
  KR_EXTRACT_NAV = 'L',   /* navigation link */
  KR_EXTRACT_EMBED = 'E', /* embedded resource */
  KR_EXTRACT_BASE = 'B',  /* <base href>: the document's base, not a link */
} kr_extract_kind_t;

typedef struct kr_extract_link {
  kr_extract_kind_t kind;
  kr_slice_t url;      /* raw, trimmed, not resolved; valid during the call */
  const char *context; /* static, e.g. "a/@href", "img/@srcset",
                          "style/url()", "css/@import", "@style/url()" */
} kr_extract_link_t;

/* Called for every URL found. Return 0 to go on; a negative value stops
 * the extractor, and that value is returned by this and every later feed
 * and finish. Must not call back into the same extractor. */
typedef int (*kr_extract_cb)(void *ud, const kr_extract_link_t *link);

enum {
  KR_EXTRACT_FORMS = 1u << 0,     /* also form action, formaction (L) */
  KR_EXTRACT_HTTP_ONLY = 1u << 1, /* drop URLs whose scheme is not http(s)
                                     (javascript:, data:, mailto:, ...);
                                     relative URLs are kept */
};

typedef struct kr_extract_opts {
  size_t max_value;   /* longer attribute values / CSS URLs are skipped;
                         default 8192 (the URL length limit), min 16 */
  uint64_t max_links; /* per document; extraction stops there; 100,000 */
  unsigned flags;     /* KR_EXTRACT_* */
} kr_extract_opts_t;

#define KR_EXTRACT_MAX_VALUE_DEFAULT 8192
#define KR_EXTRACT_MAX_LINKS_DEFAULT 100000

typedef struct kr_extract_stats {
  uint64_t links;    /* delivered to the callback (base included) */
  uint64_t too_long; /* values or CSS URLs skipped for exceeding max_value */
  uint64_t filtered; /* dropped by KR_EXTRACT_HTTP_ONLY */
  uint64_t tags;     /* start and end tags tokenized (HTML only) */
  int capped;        /* max_links reached: the rest was not examined */
} kr_extract_stats_t;

/* Fill o with the defaults above. */
void kr_extract_opts_default(kr_extract_opts_t *o);

/* ---- HTML ---- */
typedef struct kr_html_extractor kr_html_extractor_t;

/* New extractor for one document at a time. opts may be NULL (defaults);
 * it is copied. cb is required. Never NULL (out of memory aborts). */
kr_html_extractor_t *kr_extract_html_new(const kr_extract_opts_t *opts,
                                         kr_extract_cb cb, void *ud);
/* Start a new document with the same options, keeping the buffers. */
void kr_extract_html_reset(kr_html_extractor_t *x, kr_extract_cb cb,
                           void *ud);
/* Feed the next n bytes of the body. 0, or the callback's negative value
 * (then and afterwards). Calls back synchronously. */
int kr_extract_html_feed(kr_html_extractor_t *x, const void *p, size_t n);
/* End of the body: emits what EOF completes (a <style> element's last
 * URL). 0 or the callback's negative value. Feed after finish is invalid
 * until reset. */
int kr_extract_html_finish(kr_html_extractor_t *x);
const kr_extract_stats_t *kr_extract_html_stats(const kr_html_extractor_t *x);
void kr_extract_html_free(kr_html_extractor_t *x);

/* ---- CSS (stylesheets as whole responses) ---- */
typedef struct kr_css_extractor kr_css_extractor_t;

/* Same contract as the HTML functions; every URL is KR_EXTRACT_EMBED with
 * context "css/url()" or "css/@import". */
kr_css_extractor_t *kr_extract_css_new(const kr_extract_opts_t *opts,
                                       kr_extract_cb cb, void *ud);
void kr_extract_css_reset(kr_css_extractor_t *x, kr_extract_cb cb, void *ud);
int kr_extract_css_feed(kr_css_extractor_t *x, const void *p, size_t n);
int kr_extract_css_finish(kr_css_extractor_t *x);
const kr_extract_stats_t *kr_extract_css_stats(const kr_css_extractor_t *x);
void kr_extract_css_free(kr_css_extractor_t *x);

#endif
