/*
 * Streaming CSS URL extraction (include/kria/extract.h) and the emitter
 * shared with the HTML extractor. The scanner follows the tokenizer of CSS
 * Syntax Level 3 only as far as URLs need: comments, strings (with
 * escapes, line continuations and bad strings), url() as a url token
 * (unquoted, with escapes and bad-url recovery) or as a function whose
 * argument is a string, and @import followed by a string or url(). Every
 * other token is skipped byte by byte without being stored; only the URL
 * being collected is buffered, up to max_value. The state is kept between
 * feeds so any split of the input gives the same URLs. kr__css_feed is
 * one switch over the tokenizer states of CSS Syntax Level 3 (4.3
 * Tokenizer Algorithms), kept whole on purpose: each case reads as its
 * state in the spec.
 *
 * Sections: the emitter and options; character classes; the scanner
 * (feed, finish); the public CSS extractor wrapping it.
 */
#include "extract_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

/* ---- emitter ---- */

void kr_extract_opts_default(kr_extract_opts_t *o) {
  o->max_value = KR_EXTRACT_MAX_VALUE_DEFAULT;
  o->max_links = KR_EXTRACT_MAX_LINKS_DEFAULT;
  o->flags = 0;
}

kr_extract_opts_t kr__extract_opts(const kr_extract_opts_t *o) {
  kr_extract_opts_t r;
  kr_extract_opts_default(&r);
  if (o) r = *o;
  if (r.max_value < 16) r.max_value = 16;
  /* Keeps buffer arithmetic (several values per tag) far from overflow. */
  if (r.max_value > ((size_t)1 << 24)) r.max_value = (size_t)1 << 24;
  return r;
}

static int is_scheme_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

/* 1 if the URL is relative or http(s). Tabs and newlines inside are
 * ignored, as the URL parser removes them ("java\nscript:" is javascript). */
static int is_http_or_relative(const char *p, size_t n) {
  char scheme[8];
  size_t k = 0, i = 0;
  for (; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '\t' || c == '\n' || c == '\r') continue;
    if (c == ':') break;
    if (!is_scheme_char(c) || (k == 0 && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
      return 1; /* no scheme: relative */
    if (k < sizeof scheme) scheme[k] = (char)(c | 0x20);
    k++;
  }
  if (i == n || k == 0) return 1;
  return (k == 4 && memcmp(scheme, "http", 4) == 0) ||
         (k == 5 && memcmp(scheme, "https", 5) == 0);
}

int kr__extract_emit(kr__emitter_t *e, kr_extract_kind_t kind,
                     const char *ctx, const char *p, size_t n) {
  if (e->stop) return e->stop;
  while (n && (unsigned char)p[0] <= 0x20) p++, n--;
  while (n && (unsigned char)p[n - 1] <= 0x20) n--;
  if (kind != KR_EXTRACT_BASE) {
    if (n == 0) return 0;
    if ((e->o.flags & KR_EXTRACT_HTTP_ONLY) && !is_http_or_relative(p, n)) {
      e->st.filtered++;
      return 0;
    }
  }
  if (e->st.links >= e->o.max_links) {
    e->st.capped = 1;
    return e->stop = KR__EXTRACT_STOP;
  }
  e->st.links++;
  kr_extract_link_t l = {kind, {n ? p : "", n}, ctx};
  int rc = e->cb(e->ud, &l);
  if (rc < 0) return e->stop = rc;
  return 0;
}

/* ---- character classes ---- */

enum { K_WS = 1, K_NAME = 2, K_HEX = 4, K_SPECIAL = 8, K_URLSTOP = 16 };

/* K_SPECIAL: bytes the scanner must look at in the normal state.
 * K_URLSTOP: bytes that end the ordinary run of an unquoted URL. */
static const uint8_t cls[256] = {
    [0] = K_NAME | K_URLSTOP, /* NUL is U+FFFD, a name code point */
    [1 ... 8] = K_URLSTOP, ['\t'] = K_WS | K_URLSTOP,
    ['\n'] = K_WS | K_URLSTOP, [0x0b] = K_URLSTOP, ['\f'] = K_WS | K_URLSTOP,
    ['\r'] = K_WS | K_URLSTOP, [0x0e ... 0x1f] = K_URLSTOP,
    [' '] = K_WS | K_URLSTOP, ['"'] = K_SPECIAL | K_URLSTOP,
    ['#'] = K_SPECIAL, ['\''] = K_SPECIAL | K_URLSTOP,
    ['('] = K_URLSTOP, [')'] = K_URLSTOP, ['-'] = K_NAME,
    ['/'] = K_SPECIAL, ['0' ... '9'] = K_NAME | K_HEX, ['@'] = K_SPECIAL,
    ['A' ... 'F'] = K_NAME | K_HEX, ['G' ... 'T'] = K_NAME,
    ['U'] = K_NAME | K_SPECIAL, ['V' ... 'Z'] = K_NAME,
    ['\\'] = K_SPECIAL | K_URLSTOP, ['_'] = K_NAME,
    ['a' ... 'f'] = K_NAME | K_HEX, ['g' ... 't'] = K_NAME,
    ['u'] = K_NAME | K_SPECIAL, ['v' ... 'z'] = K_NAME, [0x7f] = K_URLSTOP,
    [0x80 ... 0xff] = K_NAME,
};

#define IS(c, k) (cls[(unsigned char)(c)] & (k))

static int hexval(unsigned char c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

/* ---- scanner ---- */

enum {
  C_NORMAL,
  C_SLASH,         /* '/' seen: a comment? */
  C_COMMENT,
  C_COMMENT_STAR,
  C_ESC,           /* '\' outside strings and urls */
  C_KW_URL,        /* sub letters of "url(" matched */
  C_KW_AT,         /* '@' and sub letters of "import" matched */
  C_URL_WS,        /* after "url(": whitespace */
  C_URL,           /* unquoted url */
  C_URL_ESC,
  C_URL_END,       /* whitespace after the url: ')' must follow */
  C_BADURL,
  C_BADURL_ESC,
  C_STR,
  C_STR_ESC,
  C_STR_ESC_CR,    /* '\' CR: a following LF belongs to the continuation */
  C_HEX,           /* hex escape digits; returns to ret */
  C_HEX_CR,        /* hex escape ended by CR: swallow one LF */
};

void kr__css_init(kr__css_t *c, kr__emitter_t *em) {
  memset(c, 0, sizeof *c);
  c->em = em;
  kr_buf_init(&c->url, em->o.max_value);
}

void kr__css_free(kr__css_t *c) { kr_buf_free(&c->url); }

void kr__css_begin(kr__css_t *c, const char *ctx_url, const char *ctx_import) {
  c->ctx_url = ctx_url;
  c->ctx_import = ctx_import;
  c->state = C_NORMAL;
  c->prev_name = c->import_pending = c->rec = c->skip = 0;
  kr_buf_reset(&c->url);
}

static void start_value(kr__css_t *c, int rec) {
  c->rec = (uint8_t)rec;
  c->is_import = c->import_pending;
  c->import_pending = 0;
  c->skip = 0;
  kr_buf_reset(&c->url);
}

static void put(kr__css_t *c, const char *p, size_t n) {
  if (!c->rec || c->skip) return;
  if (kr_buf_append(&c->url, p, n) != 0) {
    c->skip = 1;
    kr_buf_reset(&c->url);
  }
}

static void put_cp(kr__css_t *c, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) cp = 0xfffd;
  if (cp < 0x80) {
    u[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  } else {
    u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  put(c, u, n);
}

/* The current string or url is complete. */
static int end_value(kr__css_t *c) {
  int rc = 0;
  if (c->rec) {
    if (c->skip)
      c->em->st.too_long++;
    else
      rc = kr__extract_emit(c->em, KR_EXTRACT_EMBED,
                            c->is_import ? c->ctx_import : c->ctx_url,
                            c->url.data, c->url.len);
  }
  c->rec = c->skip = 0;
  c->prev_name = 0;
  return rc;
}

int kr__css_feed(kr__css_t *c, const char *p, size_t n) {
  size_t i = 0;
  int rc = c->em->stop;
  if (rc) return rc;
  while (i < n) {
    unsigned char ch = (unsigned char)p[i];
    switch (c->state) {
    case C_NORMAL:
      if (!c->import_pending) {
        /* Fast path: skip bytes that cannot start anything of interest;
         * a 'u' inside an identifier cannot start url(. */
        size_t j = i;
        while (j < n) {
          unsigned char b = (unsigned char)p[j];
          if (IS(b, K_SPECIAL) &&
              !((b | 0x20) == 'u' && (j > i ? IS(p[j - 1], K_NAME) : c->prev_name)))
            break;
          j++;
        }
        if (j > i) {
          c->prev_name = IS(p[j - 1], K_NAME) ? 1 : 0;
          i = j;
          if (i == n) break;
          ch = (unsigned char)p[i];
        }
      }
      i++;
      if (IS(ch, K_WS)) {
        c->prev_name = 0;
      } else if (ch == '/') {
        c->state = C_SLASH;
      } else if (ch == '"' || ch == '\'') {
        c->quote = ch;
        start_value(c, c->import_pending);
        c->state = C_STR;
      } else if (ch == '\\') {
        c->state = C_ESC;
      } else if ((ch | 0x20) == 'u' && !c->prev_name) {
        c->sub = 1;
        c->state = C_KW_URL;
      } else if (ch == '@') {
        c->import_pending = 0;
        c->sub = 0;
        c->state = C_KW_AT;
      } else {
        c->import_pending = 0;
        c->prev_name = (IS(ch, K_NAME) || ch == '#') ? 1 : 0;
      }
      break;
    case C_SLASH:
      if (ch == '*') {
        i++;
        c->state = C_COMMENT;
      } else {
        c->import_pending = 0;
        c->prev_name = 0;
        c->state = C_NORMAL;
      }
      break;
    case C_COMMENT: {
      const char *s = memchr(p + i, '*', n - i);
      if (!s) {
        i = n;
        break;
      }
      i = (size_t)(s - p) + 1;
      c->state = C_COMMENT_STAR;
      break;
    }
    case C_COMMENT_STAR:
      i++;
      if (ch == '/') {
        c->prev_name = 0;
        c->state = C_NORMAL;
      } else if (ch != '*') {
        c->state = C_COMMENT;
      }
      break;
    case C_ESC:
      if (ch == '\n' || ch == '\r' || ch == '\f') { /* not an escape */
        c->prev_name = 0;
        c->state = C_NORMAL;
        break;
      }
      c->import_pending = 0;
      c->prev_name = 1;
      if (IS(ch, K_HEX)) {
        c->cp = 0, c->sub = 0, c->ret = C_NORMAL;
        c->state = C_HEX;
      } else {
        i++;
        c->state = C_NORMAL;
      }
      break;
    case C_KW_URL:
      if (c->sub < 3 && (ch | 0x20) == "url"[c->sub]) {
        i++;
        c->sub++;
      } else if (c->sub == 3 && ch == '(') {
        i++;
        start_value(c, 1);
        c->state = C_URL_WS;
      } else { /* an identifier or function other than url( */
        c->import_pending = 0;
        c->prev_name = 1;
        c->state = C_NORMAL;
      }
      break;
    case C_KW_AT:
      if (c->sub < 6 && (ch | 0x20) == "import"[c->sub]) {
        i++;
        c->sub++;
      } else {
        /* Not @import: the bytes so far and any name byte that follows
         * belong to another at-keyword, so a 'u' here starts no url(. */
        int is_kw = c->sub == 6 && !IS(ch, K_NAME) && ch != '\\';
        c->import_pending = (uint8_t)is_kw;
        c->prev_name = (uint8_t)!is_kw;
        c->state = C_NORMAL;
      }
      break;
    case C_URL_WS:
      if (IS(ch, K_WS)) {
        i++;
      } else if (ch == '"' || ch == '\'') {
        i++;
        c->quote = ch;
        c->state = C_STR;
      } else {
        c->state = C_URL;
      }
      break;
    case C_URL: {
      size_t j = i;
      while (j < n && !IS(p[j], K_URLSTOP)) j++;
      if (j > i) put(c, p + i, j - i);
      i = j;
      if (i == n) break;
      ch = (unsigned char)p[i++];
      if (ch == ')') {
        c->state = C_NORMAL;
        if ((rc = end_value(c))) return rc;
      } else if (IS(ch, K_WS)) {
        c->state = C_URL_END;
      } else if (ch == '\\') {
        c->state = C_URL_ESC;
      } else if (ch == 0) {
        put_cp(c, 0xfffd);
      } else { /* quote, '(' or a non-printable byte */
        c->rec = 0;
        c->state = C_BADURL;
      }
      break;
    }
    case C_URL_ESC:
      if (ch == '\n' || ch == '\r' || ch == '\f') {
        c->rec = 0;
        c->state = C_BADURL;
      } else if (IS(ch, K_HEX)) {
        c->cp = 0, c->sub = 0, c->ret = C_URL;
        c->state = C_HEX;
      } else {
        i++;
        if (ch == 0) put_cp(c, 0xfffd);
        else put(c, (const char *)&p[i - 1], 1);
        c->state = C_URL;
      }
      break;
    case C_URL_END:
      if (IS(ch, K_WS)) {
        i++;
      } else if (ch == ')') {
        i++;
        c->state = C_NORMAL;
        if ((rc = end_value(c))) return rc;
      } else {
        c->rec = 0;
        c->state = C_BADURL;
      }
      break;
    case C_BADURL:
      i++;
      if (ch == ')') {
        c->rec = c->skip = 0;
        c->prev_name = 0;
        c->state = C_NORMAL;
      } else if (ch == '\\') {
        c->state = C_BADURL_ESC;
      }
      break;
    case C_BADURL_ESC:
      i++;
      c->state = C_BADURL;
      break;
    case C_STR: {
      size_t j = i;
      while (j < n && p[j] != (char)c->quote && p[j] != '\\' && p[j] != '\n' &&
             p[j] != '\r' && p[j] != '\f' && p[j] != 0)
        j++;
      if (j > i) put(c, p + i, j - i);
      i = j;
      if (i == n) break;
      ch = (unsigned char)p[i];
      if (ch == c->quote) {
        i++;
        c->state = C_NORMAL;
        if ((rc = end_value(c))) return rc;
      } else if (ch == '\\') {
        i++;
        c->state = C_STR_ESC;
      } else if (ch == 0) {
        i++;
        put_cp(c, 0xfffd);
      } else { /* newline: a bad string, dropped; the newline is reread */
        c->rec = c->skip = 0;
        c->prev_name = 0;
        c->state = C_NORMAL;
      }
      break;
    }
    case C_STR_ESC:
      if (ch == '\n' || ch == '\f') { /* line continuation */
        i++;
        c->state = C_STR;
      } else if (ch == '\r') {
        i++;
        c->state = C_STR_ESC_CR;
      } else if (IS(ch, K_HEX)) {
        c->cp = 0, c->sub = 0, c->ret = C_STR;
        c->state = C_HEX;
      } else {
        i++;
        if (ch == 0) put_cp(c, 0xfffd);
        else put(c, (const char *)&p[i - 1], 1);
        c->state = C_STR;
      }
      break;
    case C_STR_ESC_CR:
      if (ch == '\n') i++;
      c->state = C_STR;
      break;
    case C_HEX:
      if (c->sub < 6 && IS(ch, K_HEX)) {
        i++;
        c->sub++;
        c->cp = (c->cp << 4) | (uint32_t)hexval(ch);
        break;
      }
      if (c->ret != C_NORMAL) put_cp(c, c->cp);
      c->state = c->ret;
      if (IS(ch, K_WS)) { /* one whitespace ends the escape */
        i++;
        if (ch == '\r') c->state = C_HEX_CR;
      }
      break;
    case C_HEX_CR:
      if (ch == '\n') i++;
      c->state = c->ret;
      break;
    }
  }
  return 0;
}

int kr__css_finish(kr__css_t *c) {
  int rc = c->em->stop;
  if (rc) return rc;
  uint8_t s = c->state;
  if (s == C_HEX || s == C_HEX_CR) {
    if (s == C_HEX && c->ret != C_NORMAL) put_cp(c, c->cp);
    s = c->ret;
  }
  if (s == C_URL_ESC) {
    put_cp(c, 0xfffd); /* EOF after '\' in a url: U+FFFD */
    s = C_URL;
  }
  c->state = C_NORMAL;
  switch (s) {
  case C_URL:
  case C_URL_END:
  case C_STR:
  case C_STR_ESC:
  case C_STR_ESC_CR:
    return end_value(c); /* EOF ends a url or string token */
  default:
    c->rec = c->skip = 0;
    return 0;
  }
}

/* ---- the public CSS extractor ---- */

struct kr_css_extractor {
  kr__emitter_t em;
  kr__css_t css;
};

kr_css_extractor_t *kr_extract_css_new(const kr_extract_opts_t *opts,
                                       kr_extract_cb cb, void *ud) {
  kr_css_extractor_t *x = kr_xcalloc(1, sizeof *x);
  x->em.o = kr__extract_opts(opts);
  kr__css_init(&x->css, &x->em);
  kr_extract_css_reset(x, cb, ud);
  return x;
}

void kr_extract_css_reset(kr_css_extractor_t *x, kr_extract_cb cb, void *ud) {
  assert(cb);
  x->em.cb = cb;
  x->em.ud = ud;
  memset(&x->em.st, 0, sizeof x->em.st);
  x->em.stop = 0;
  kr__css_begin(&x->css, "css/url()", "css/@import");
}

static int public_rc(int rc) { return rc < 0 ? rc : 0; }

int kr_extract_css_feed(kr_css_extractor_t *x, const void *p, size_t n) {
  return public_rc(kr__css_feed(&x->css, p, n));
}

int kr_extract_css_finish(kr_css_extractor_t *x) {
  return public_rc(kr__css_finish(&x->css));
}

const kr_extract_stats_t *kr_extract_css_stats(const kr_css_extractor_t *x) {
  return &x->em.st;
}

void kr_extract_css_free(kr_css_extractor_t *x) {
  if (!x) return;
  kr__css_free(&x->css);
  free(x);
}
