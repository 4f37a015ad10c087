/*
 * ARC v1 header lines (see include/kria/arc.h). The rules follow warcio's
 * ARCHeadersParser and timestamp_to_datetime, which cdxj-indexer and pywb
 * index ARC files with.
 */
#include "kria/arc.h"

#include <string.h>

#include "kria/error.h"

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

int kr_arc_parse_line(const char *line, size_t n, kr_arc_header_t *out) {
  memset(out, 0, sizeof *out);
  while (n && is_blank(line[n - 1])) n--;
  /* The last four fields are split off at single spaces from the right,
   * the URL is what is left (it may hold spaces). */
  kr_slice_t f[5];
  size_t end = n;
  for (int k = 4; k > 0; k--) {
    size_t sp = end;
    while (sp > 0 && line[sp - 1] != ' ') sp--;
    if (sp == 0) return KR_EINVAL;
    f[k] = kr_slice(line + sp, end - sp);
    end = sp - 1;
  }
  f[0] = kr_slice(line, end);
  /* Empty fields (two spaces in a row) are kept, as warcio keeps them,
   * except the length. */
  if (f[4].n == 0) return KR_EINVAL;
  out->url = f[0];
  out->ip = f[1];
  out->date = f[2];
  out->mime = f[3];
  out->length_text = f[4];
  out->filedesc = f[0].n >= 11 && !memcmp(f[0].p, "filedesc://", 11);
  /* Python's int(): optional sign, digits; anything else, or a negative
   * length, is an empty record. */
  kr_slice_t v = f[4];
  size_t i = v.p[0] == '+' ? 1 : 0;
  uint64_t len = 0;
  int ok = i < v.n && v.n - i <= 18;
  for (; ok && i < v.n; i++) {
    if (v.p[i] < '0' || v.p[i] > '9') ok = 0;
    else len = len * 10 + (uint64_t)(v.p[i] - '0');
  }
  out->length = ok ? len : 0;
  return 0;
}

/* A part of the date: its digits clamped to [lo, hi], or hi when it is
 * missing or not a number. */
static unsigned part(const char *s, size_t n, size_t at, size_t w, unsigned lo, unsigned hi) {
  if (n < at + w) return hi;
  unsigned v = 0;
  for (size_t i = at; i < at + w; i++) {
    if (s[i] < '0' || s[i] > '9') return hi;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  return v < lo ? lo : v > hi ? hi : v;
}

static unsigned month_days(unsigned y, unsigned m) {
  static const unsigned char d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d[m - 1] + (m == 2 && leap);
}

static char *put(char *p, unsigned v, int w) {
  for (int i = w - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
  return p + w;
}

void kr_arc_timestamp14(kr_slice_t date, char out[15]) {
  char s[14];
  size_t n = date.n < 14 ? date.n : 14;
  memcpy(s, date.p, n);
  if (n < 6) {
    memcpy(s + n, "299912" + n, 6 - n);
    n = 6;
  }
  unsigned y = part(s, n, 0, 4, 1900, 2999), mo = part(s, n, 4, 2, 1, 12);
  unsigned d = part(s, n, 6, 2, 1, month_days(y, mo));
  unsigned h = part(s, n, 8, 2, 0, 23), mi = part(s, n, 10, 2, 0, 59);
  unsigned se = part(s, n, 12, 2, 0, 59);
  char *p = put(out, y, 4);
  p = put(p, mo, 2);
  p = put(p, d, 2);
  p = put(p, h, 2);
  p = put(p, mi, 2);
  p = put(p, se, 2);
  *p = '\0';
}

void kr_arc_iso_date(const char ts[15], char out[KR_ARC_DATE_SIZE]) {
  memcpy(out, ts, 4);
  out[4] = '-';
  memcpy(out + 5, ts + 4, 2);
  out[7] = '-';
  memcpy(out + 8, ts + 6, 2);
  out[10] = 'T';
  memcpy(out + 11, ts + 8, 2);
  out[13] = ':';
  memcpy(out + 14, ts + 10, 2);
  out[16] = ':';
  memcpy(out + 17, ts + 12, 2);
  out[19] = 'Z';
  out[20] = '\0';
}
