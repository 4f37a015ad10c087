/*
 * Shared dedup's Redis value and the decision to ask for it
 * (kria/xdedup.h).
 */
#include "kria/xdedup.h"

#include <stdio.h>
#include <string.h>

#include "kria/warc.h"

size_t kr_xdedup_key(char *out, size_t cap, const char *prefix,
                     const uint8_t d[KR_SHA1_LEN]) {
  char label[KR_SHA1_LABEL_SIZE];
  kr_sha1_label(d, label);
  int n = snprintf(out, cap, "%s:dd:%s", prefix, label);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Bytes of a field: none below 0x21 (space, controls) nor DEL. */
static int field_ok(kr_slice_t s, size_t max) {
  if (!s.n || s.n > max) return 0;
  for (size_t i = 0; i < s.n; i++)
    if ((unsigned char)s.p[i] <= 0x20 || s.p[i] == 0x7f) return 0;
  return 1;
}

static int rid_ok(kr_slice_t r) {
  return field_ok(r, KR_WARC_ID_SIZE - 1) && r.p[0] == '<' && r.p[r.n - 1] == '>';
}

size_t kr_xdedup_encode(char *out, size_t cap, const kr_xdedup_orig_t *o) {
  if (cap > KR_XDEDUP_VALUE_MAX + 1) cap = KR_XDEDUP_VALUE_MAX + 1;
  if (!o->date_ms || !rid_ok(o->rid) || !field_ok(o->node, 64) || !field_ok(o->url, cap))
    return 0;
  int n = snprintf(out, cap, "1 %llu %.*s %.*s %.*s", (unsigned long long)o->date_ms,
                   (int)o->rid.n, o->rid.p, (int)o->node.n, o->node.p, (int)o->url.n, o->url.p);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The next space-separated field of [*p, end); *p moves past its space. */
static kr_slice_t next_field(const char **p, const char *end) {
  const char *s = *p, *sp = memchr(s, ' ', (size_t)(end - s));
  if (!sp) return kr_slice(s, 0);
  *p = sp + 1;
  return kr_slice(s, (size_t)(sp - s));
}

int kr_xdedup_decode(const char *p, size_t n, kr_xdedup_orig_t *o) {
  memset(o, 0, sizeof *o);
  if (!p || n < 2 || n > KR_XDEDUP_VALUE_MAX || p[0] != '1' || p[1] != ' ') return 0;
  const char *q = p + 2, *end = p + n;
  kr_slice_t date = next_field(&q, end);
  if (!date.n || date.n > 19) return 0;
  uint64_t ms = 0;
  for (size_t i = 0; i < date.n; i++) {
    if (date.p[i] < '0' || date.p[i] > '9') return 0;
    ms = ms * 10 + (uint64_t)(date.p[i] - '0');
  }
  o->date_ms = ms;
  o->rid = next_field(&q, end);
  o->node = next_field(&q, end);
  o->url = kr_slice(q, (size_t)(end - q));
  if (!ms || !rid_ok(o->rid) || !field_ok(o->node, 64) || !field_ok(o->url, n)) {
    memset(o, 0, sizeof *o);
    return 0;
  }
  return 1;
}

kr_xdedup_step_t kr_xdedup_decide(const kr_xdedup_visit_t *v) {
  if (!v->on || v->robots || v->not_modified || !v->complete) return KR_XDEDUP_SKIP;
  if (v->status < 200 || v->status >= 300 || v->local) return KR_XDEDUP_SKIP;
  return v->redis_up ? KR_XDEDUP_ASK : KR_XDEDUP_AWAY;
}
