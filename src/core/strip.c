/*
 * Volatile-section strip (see include/kria/strip.h). Rules are compiled
 * once (JIT when available); a digest walks the body with one cursor,
 * keeping for each applicable rule its next match at or after the cursor
 * and re-searching only the rules whose cached match the cursor has
 * passed, so a body costs one pass per rule plus one search per replaced
 * section. The gaps between sections go straight into the caller's SHA-1
 * and each section becomes one space; on any limit the SHA-1 is restarted
 * over the whole body. Sections: rules, applicability, digest.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "kria/strip.h"

#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "kria/error.h"
#include "kria/mem.h"

typedef struct rule {
  char *host;          /* lower case, no trailing dot; NULL: any */
  size_t host_len;
  pcre2_code *url_re;  /* NULL: any URL */
  pcre2_code *re;      /* the volatile section */
  int counted;         /* interpreted with auto-callouts counting steps */
} rule_t;

/* Per-digest state of an applicable rule. */
enum { NEXT_UNKNOWN, NEXT_FOUND, NEXT_NONE };
typedef struct cand {
  size_t rule;
  int state;
  size_t start, end;
} cand_t;

struct kr_strip {
  kr_strip_opts_t o;
  rule_t *rules;
  size_t n, cap;
  cand_t *cand;                /* scratch, cap entries */
  pcre2_match_context *mctx;
  pcre2_match_data *md;
  uint64_t steps, step_budget; /* auto-callouts of interpreted patterns */
};

/* ---- rules ---------------------------------------------------------------------- */

void kr_strip_opts_default(kr_strip_opts_t *o) {
  o->max_size = 1u << 20;
  o->match_limit = 100000;
  o->depth_limit = 10000;
  o->heap_limit_kib = 16384;
  o->max_sections = 100000;
  o->use_jit = 1;
}

/* PCRE2's interpreter restarts its match limit at every start position
 * of an unanchored search, so a body of many candidate starts can cost
 * size x limit: patterns that are not JIT-compiled carry auto-callouts,
 * counted here against a budget per body. (JIT's limit already covers
 * the whole search.) */
static int count_step(pcre2_callout_block *cb, void *data) {
  (void)cb;
  kr_strip_t *s = data;
  return ++s->steps > s->step_budget ? PCRE2_ERROR_MATCHLIMIT : 0;
}

static void budget(kr_strip_t *s, size_t len) {
  s->steps = 0;
  s->step_budget = 8 * (uint64_t)len + s->o.match_limit;
}

kr_strip_t *kr_strip_new(const kr_strip_opts_t *o) {
  kr_strip_t *s = kr_xcalloc(1, sizeof *s);
  if (o) s->o = *o;
  else kr_strip_opts_default(&s->o);
  if (!s->o.match_limit) s->o.match_limit = 100000;
  if (!s->o.depth_limit) s->o.depth_limit = 10000;
  if (!s->o.heap_limit_kib) s->o.heap_limit_kib = 16384;
  s->mctx = pcre2_match_context_create(NULL);
  s->md = pcre2_match_data_create(1, NULL);
  if (!s->mctx || !s->md) abort(); /* out of memory, as kr_xmalloc */
  pcre2_set_match_limit(s->mctx, s->o.match_limit);
  pcre2_set_depth_limit(s->mctx, s->o.depth_limit);
  pcre2_set_heap_limit(s->mctx, s->o.heap_limit_kib);
  pcre2_set_callout(s->mctx, count_step, s);
  return s;
}

void kr_strip_free(kr_strip_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->rules[i].host);
    pcre2_code_free(s->rules[i].url_re);
    pcre2_code_free(s->rules[i].re);
  }
  free(s->rules);
  free(s->cand);
  pcre2_match_context_free(s->mctx);
  pcre2_match_data_free(s->md);
  free(s);
}

/* Compile for JIT, or, when JIT is off or fails, with counted steps. */
static pcre2_code *compile(const char *what, const char *pattern, int jit, int *counted,
                           char *err, size_t errlen) {
  int ec;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_NEVER_UTF,
                                 &ec, &off, NULL);
  *counted = 0;
  if (re && (!jit || pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) != 0)) {
    pcre2_code_free(re);
    re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                       PCRE2_NEVER_UTF | PCRE2_AUTO_CALLOUT, &ec, &off, NULL);
    *counted = 1;
  }
  if (!re) {
    if (errlen) {
      char msg[256];
      pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof msg);
      snprintf(err, errlen, "%s pattern \"%.80s\": %s at offset %zu", what, pattern, msg,
               (size_t)off);
    }
    return NULL;
  }
  return re;
}

int kr_strip_add(kr_strip_t *s, const char *host, const char *url_pattern, const char *pattern,
                 char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  if (!pattern || !pattern[0]) {
    if (errlen) snprintf(err, errlen, "empty strip pattern");
    return KR_EINVAL;
  }
  if (s->n >= KR_STRIP_MAX_RULES) {
    if (errlen) snprintf(err, errlen, "more than %d strip rules", KR_STRIP_MAX_RULES);
    return KR_ETOOBIG;
  }
  rule_t r = {0};
  int counted_url;
  r.re = compile("strip", pattern, s->o.use_jit, &r.counted, err, errlen);
  if (!r.re) return KR_EINVAL;
  if (url_pattern && url_pattern[0]) {
    r.url_re = compile("URL", url_pattern, s->o.use_jit, &counted_url, err, errlen);
    if (!r.url_re) {
      pcre2_code_free(r.re);
      return KR_EINVAL;
    }
  }
  if (host && host[0]) {
    size_t l = strlen(host);
    while (l && host[l - 1] == '.') l--;
    r.host = kr_xstrndup(host, l);
    for (size_t i = 0; i < l; i++)
      if (r.host[i] >= 'A' && r.host[i] <= 'Z') r.host[i] = (char)(r.host[i] + 32);
    r.host_len = l;
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->rules = kr_xrealloc(s->rules, s->cap * sizeof *s->rules);
    s->cand = kr_xrealloc(s->cand, s->cap * sizeof *s->cand);
  }
  s->rules[s->n++] = r;
  return 0;
}

size_t kr_strip_rule_count(const kr_strip_t *s) { return s->n; }

/* ---- applicability ----------------------------------------------------------------- */

static int host_covers(const rule_t *r, kr_slice_t host) {
  if (!r->host) return 1;
  while (host.n && host.p[host.n - 1] == '.') host.n--;
  if (host.n < r->host_len) return 0;
  const char *tail = host.p + host.n - r->host_len;
  for (size_t i = 0; i < r->host_len; i++) {
    char c = tail[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != r->host[i]) return 0;
  }
  return host.n == r->host_len || tail[-1] == '.';
}

/* 1 applies, 0 not, or the negative PCRE2 error of the URL pattern. */
static int rule_applies(kr_strip_t *s, const rule_t *r, kr_slice_t host, kr_slice_t url) {
  if (!host_covers(r, host)) return 0;
  if (!r->url_re) return 1;
  budget(s, url.n);
  int rc = pcre2_match(r->url_re, (PCRE2_SPTR)(url.p ? url.p : ""), url.n, 0, 0, s->md, s->mctx);
  if (rc >= 0) return 1;
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  return rc;
}

int kr_strip_applies(kr_strip_t *s, kr_slice_t host, kr_slice_t url) {
  for (size_t i = 0; i < s->n; i++) {
    int a = rule_applies(s, &s->rules[i], host, url);
    if (a < 0) return KR_ETOOBIG;
    if (a) return 1;
  }
  return 0;
}

/* ---- digest -------------------------------------------------------------------------- */

static int hash_all(kr_sha1_t *sha, const void *body, size_t len, kr_strip_result_t *r) {
  if (kr_sha1_reset(sha) < 0 || (len && kr_sha1_update(sha, body, len) < 0) ||
      kr_sha1_final(sha, r->sha1) < 0)
    return KR_EIO;
  kr_sha1_base32(r->sha1, r->b32);
  return 0;
}

int kr_strip_digest(kr_strip_t *s, kr_sha1_t *sha, kr_slice_t host, kr_slice_t url,
                    const void *body, size_t len, kr_strip_result_t *r) {
  memset(r, 0, sizeof *r);
  const char *b = body ? (const char *)body : "";
  if (!body) len = 0;
  size_t na = 0;
  for (size_t i = 0; i < s->n; i++) {
    int a = rule_applies(s, &s->rules[i], host, url);
    if (a < 0) {
      r->status = KR_STRIP_LIMIT;
      r->pcre2_error = a;
      return hash_all(sha, b, len, r);
    }
    if (a) s->cand[na++] = (cand_t){i, NEXT_UNKNOWN, 0, 0};
  }
  r->rules = (unsigned)na;
  if (!na) {
    r->status = KR_STRIP_NONE;
    return hash_all(sha, b, len, r);
  }
  if (len > s->o.max_size) {
    r->status = KR_STRIP_SKIPPED_SIZE;
    return hash_all(sha, b, len, r);
  }
  if (kr_sha1_reset(sha) < 0) return KR_EIO;
  budget(s, len);
  size_t pos = 0, sections = 0, removed = 0, steps = 0;
  for (;;) {
    cand_t *best = NULL;
    for (size_t k = 0; k < na; k++) {
      cand_t *c = &s->cand[k];
      if (c->state == NEXT_NONE) continue;
      if (c->state == NEXT_UNKNOWN || c->start < pos) {
        int rc = pcre2_match(s->rules[c->rule].re, (PCRE2_SPTR)b, len, pos, PCRE2_NOTEMPTY, s->md,
                             s->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) {
          c->state = NEXT_NONE;
          continue;
        }
        if (rc < 0) {
          r->status = KR_STRIP_LIMIT;
          r->pcre2_error = rc;
          r->rules = (unsigned)na;
          return hash_all(sha, b, len, r);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        c->state = NEXT_FOUND;
        c->start = ov[0];
        c->end = ov[1];
        /* \K or a lookbehind can put the start before pos or the end
         * before the start: clip to what is left */
        if (c->start < pos) c->start = pos;
        if (c->end < c->start) c->end = c->start;
        if (c->end > len) c->end = len;
      }
      if (!best || c->start < best->start) best = c; /* ties: the earlier rule */
    }
    if (!best) break;
    if (++sections > s->o.max_sections || ++steps > 2 * s->o.max_sections + len) {
      r->status = KR_STRIP_LIMIT;
      return hash_all(sha, b, len, r);
    }
    best->state = NEXT_UNKNOWN;
    if (best->end == best->start) {
      /* empty (only through \K): not replaced; step over one byte */
      size_t upto = best->start < len ? best->start + 1 : len;
      if (upto > pos && kr_sha1_update(sha, b + pos, upto - pos) < 0) return KR_EIO;
      pos = upto;
      sections--;
    } else {
      if ((best->start > pos && kr_sha1_update(sha, b + pos, best->start - pos) < 0) ||
          kr_sha1_update(sha, " ", 1) < 0)
        return KR_EIO;
      removed += best->end - best->start;
      pos = best->end;
    }
    if (pos >= len) break;
  }
  if ((len > pos && kr_sha1_update(sha, b + pos, len - pos) < 0) || kr_sha1_final(sha, r->sha1) < 0)
    return KR_EIO;
  kr_sha1_base32(r->sha1, r->b32);
  r->status = KR_STRIP_DONE;
  r->sections = sections;
  r->bytes_removed = removed;
  return 0;
}

const char *kr_strip_annotation(const kr_strip_result_t *r) {
  switch (r->status) {
  case KR_STRIP_DONE: return r->sections ? "stripped" : NULL;
  case KR_STRIP_SKIPPED_SIZE: return "stripSkippedSize";
  case KR_STRIP_LIMIT: return "stripLimit";
  case KR_STRIP_NONE: break;
  }
  return NULL;
}
