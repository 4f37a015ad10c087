/*
 * Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date, the
 * three date formats an HTTP/1.1 recipient must accept.
 */
#include "frontier.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "frontier_int.h"
#include "hostq.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/seen.h"
#include "kria/url.h"
#include "log.h"
#include "turnprof.h"

/* ---- Retry-After ------------------------------------------------------------------------ */

static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const wdays[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const wdays_long[7] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                          "Friday", "Saturday", "Sunday"};

/* Cursor over the header value. */
typedef struct {
  const char *p, *e;
} cur_t;

static int eat(cur_t *c, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(c->e - c->p) < n || memcmp(c->p, lit, n) != 0) return 0;
  c->p += n;
  return 1;
}

/* Exactly n digits (n = 0: 1 or 2 digits, for asctime's day). */
static int digits(cur_t *c, int n, int *out) {
  int v = 0, k = 0, max = n ? n : 2;
  while (k < max && c->p < c->e && isdigit((unsigned char)*c->p)) {
    v = v * 10 + (*c->p++ - '0');
    k++;
  }
  if (n ? k != n : k == 0) return 0;
  *out = v;
  return 1;
}

static int month(cur_t *c, int *m) {
  for (int i = 0; i < 12; i++)
    if (eat(c, months[i])) {
      *m = i;
      return 1;
    }
  return 0;
}

static int wday(cur_t *c, const char *const *names) {
  for (int i = 0; i < 7; i++)
    if (eat(c, names[i])) return 1;
  return 0;
}

static int hms(cur_t *c, int *H, int *M, int *S) {
  return digits(c, 2, H) && eat(c, ":") && digits(c, 2, M) && eat(c, ":") && digits(c, 2, S) &&
         *H < 24 && *M < 60 && *S < 61;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (m 0-11). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m < 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int mp = (m + 10) % 12; /* March = 0 */
  int64_t doy = (153 * mp + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int kr_frontier_parse_retry_after(const char *s, size_t len, uint64_t now_ms,
                                  uint64_t *delay_ms) {
  if (!s) return KR_EINVAL;
  while (len && (*s == ' ' || *s == '\t')) s++, len--;
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
  if (!len || len > 64) return KR_EINVAL;
  if (isdigit((unsigned char)s[0])) { /* delay-seconds = 1*DIGIT */
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
      if (!isdigit((unsigned char)s[i])) return KR_EINVAL;
      if (v < UINT64_C(100000000000)) v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *delay_ms = v * 1000;
    return 0;
  }
  cur_t c = {s, s + len};
  int d = 0, m = 0, y = 0, H = 0, M = 0, S = 0;
  cur_t save = c;
  int ok = 0;
  if (wday(&c, wdays) && eat(&c, ", ")) { /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
    ok = digits(&c, 2, &d) && eat(&c, " ") && month(&c, &m) && eat(&c, " ") &&
         digits(&c, 4, &y) && eat(&c, " ") && hms(&c, &H, &M, &S) && eat(&c, " GMT");
  }
  if (!ok) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
    c = save;
    if (wday(&c, wdays_long) && eat(&c, ", ")) {
      ok = digits(&c, 2, &d) && eat(&c, "-") && month(&c, &m) && eat(&c, "-") &&
           digits(&c, 2, &y) && eat(&c, " ") && hms(&c, &H, &M, &S) && eat(&c, " GMT");
      /* Two-digit years: RFC 9110 5.6.7, more than 50 years ahead is past. */
      if (ok) {
        time_t t = (time_t)(now_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        int cur = tm.tm_year + 1900;
        y += cur / 100 * 100;
        if (y > cur + 50) y -= 100;
      }
    }
  }
  if (!ok) { /* asctime: Sun Nov  6 08:49:37 1994 */
    c = save;
    if (wday(&c, wdays) && eat(&c, " ") && month(&c, &m) && eat(&c, " ")) {
      if (c.p < c.e && *c.p == ' ') c.p++;
      ok = digits(&c, 0, &d) && eat(&c, " ") && hms(&c, &H, &M, &S) && eat(&c, " ") &&
           digits(&c, 4, &y);
    }
  }
  if (!ok || c.p != c.e || d < 1 || d > 31) return KR_EINVAL;
  int64_t secs = days_from_civil(y, m, d) * 86400 + H * 3600 + M * 60 + S;
  int64_t when = secs * 1000;
  *delay_ms = when > (int64_t)now_ms ? (uint64_t)when - now_ms : 0;
  return 0;
}
