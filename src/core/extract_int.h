/*
 * Shared-internal parts of the extract module (include/kria/extract.h):
 * the emitter every URL goes through (trim, filter, per-document cap,
 * callback) and the streaming CSS scanner, which the HTML extractor embeds
 * for <style> elements and style attributes and the CSS extractor wraps.
 * Not for use outside src/extract_*.c.
 */
#ifndef KRIA_EXTRACT_INT_H
#define KRIA_EXTRACT_INT_H

#include <stdint.h>

#include "kria/buf.h"
#include "kria/extract.h"

/* Return values inside the extractors: 0 go on, KR__EXTRACT_STOP when the
 * link cap was reached (not an error), or the callback's negative value. */
#define KR__EXTRACT_STOP 1

typedef struct kr__emitter {
  kr_extract_cb cb;
  void *ud;
  kr_extract_opts_t o;
  kr_extract_stats_t st;
  int stop; /* sticky: KR__EXTRACT_STOP or a negative callback value */
} kr__emitter_t;

/* Trim the URL (C0 controls and spaces at both ends, as the URL parser
 * does), drop it if empty (except for BASE) or filtered, count it against
 * the cap and call back. 0, KR__EXTRACT_STOP or the callback's error. */
int kr__extract_emit(kr__emitter_t *e, kr_extract_kind_t kind,
                     const char *ctx, const char *p, size_t n);
/* Options with defaults filled in and bounds applied. */
kr_extract_opts_t kr__extract_opts(const kr_extract_opts_t *o);

typedef struct kr__css {
  kr__emitter_t *em;      /* where URLs go; not owned */
  const char *ctx_url;    /* context strings of url() and @import URLs */
  const char *ctx_import;
  kr_buf_t url;           /* the URL being collected, max = max_value */
  uint32_t cp;            /* hex escape value so far */
  uint8_t state;          /* C_* in extract_css.c */
  uint8_t ret;            /* state a hex escape returns to */
  uint8_t sub;            /* keyword letters matched / hex digits seen */
  uint8_t quote;          /* quote of the current string */
  uint8_t prev_name;      /* last token byte continues an identifier */
  uint8_t import_pending; /* after "@import": next string/url is one */
  uint8_t rec;            /* the current string/url is to be emitted */
  uint8_t is_import;      /* ... as an @import */
  uint8_t skip;           /* ... but it grew past max_value */
} kr__css_t;

void kr__css_init(kr__css_t *c, kr__emitter_t *em);
void kr__css_free(kr__css_t *c);
/* Start a new stylesheet (or style attribute, or <style> element). */
void kr__css_begin(kr__css_t *c, const char *ctx_url, const char *ctx_import);
/* 0, KR__EXTRACT_STOP or the callback's error. */
int kr__css_feed(kr__css_t *c, const char *p, size_t n);
/* End of the stylesheet: emits a URL that EOF completes. */
int kr__css_finish(kr__css_t *c);

#endif
