/*
 * crawl.log writer (format and flushing policy in crawllog.h). A line is
 * formatted into a reusable scratch buffer (dates from a per-second
 * cache, so a line costs no gmtime and no allocation), then copied into
 * a fixed output buffer that goes to the file with one write(2) when it
 * would overflow, when enough lines wait, or when the loop's tick finds
 * the oldest line old enough. Write errors drop what the buffer held
 * (counted) rather than let it grow. Sections: status codes, dates,
 * fields, line, writer.
 */
#include "crawllog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define LINE_MAX_BYTES (1u << 20)

/* ---- status codes ---- */

int kr_crawllog_status_of_error(int err) {
  switch (err) {
  case 0: return KR_S_UNATTEMPTED;
  case KR_EDNS_NXDOMAIN:
  case KR_EDNS_NODATA:
  case KR_EDNS_TIMEOUT:
  case KR_EDNS_FAIL: return KR_S_DOMAIN_UNRESOLVABLE;
  case KR_ECONNREFUSED:
  case KR_EUNREACH:
  case KR_ECONNECT_TIMEOUT:
  case KR_ETLS:
  case KR_ETLS_VERIFY: return KR_S_CONNECT_FAILED;
  case KR_ECONNRESET:
  case KR_ENET:
  case KR_ETRUNCATED:
  case KR_EEMPTY_REPLY: return KR_S_CONNECT_LOST;
  case KR_EFIRSTBYTE_TIMEOUT:
  case KR_EIDLE_TIMEOUT:
  case KR_ETOTAL_TIMEOUT: return KR_S_TIMEOUT;
  case KR_EURL:
  case KR_ESCHEME: return KR_S_UNFETCHABLE_URI;
  case KR_EROBOTS: return KR_S_ROBOTS_PREREQUISITE_FAILURE;
  case KR_EADDR_REFUSED: return KR_S_BLOCKED_BY_ADDRESS_POLICY;
  default: return KR_S_RUNTIME_EXCEPTION;
  }
}

int kr_crawllog_status_of_scope(kr_scope_rule_t rule, int accepted) {
  if (accepted) return 0;
  switch (rule) {
  case KR_SCOPE_R_HOPS: return KR_S_TOO_MANY_LINK_HOPS;
  case KR_SCOPE_R_TRANS_HOPS: return KR_S_TOO_MANY_EMBED_HOPS;
  case KR_SCOPE_R_TRAP:
  case KR_SCOPE_R_CALENDAR: return KR_S_DEEMED_CHAFF;
  default: return KR_S_OUT_OF_SCOPE;
  }
}

/* ---- dates ---- */

/* Civil date of a day count since 1970-01-01 (proleptic Gregorian; the
 * era arithmetic of Howard Hinnant's days_from_civil, inverted). */
static void civil(int64_t days, int *y, unsigned *m, unsigned *d) {
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  unsigned doe = (unsigned)(days - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Per-second cache of the two date forms. */
typedef struct date_cache {
  uint64_t sec;   /* epoch second cached, UINT64_MAX = none */
  char iso[20];   /* "2026-11-22T10:11:12" */
  char d14[15];   /* "20261122101112" */
} date_cache_t;

static void date_fill(date_cache_t *c, uint64_t sec) {
  if (c->sec == sec) return;
  int y;
  unsigned mo, d;
  civil((int64_t)(sec / 86400), &y, &mo, &d);
  unsigned s = (unsigned)(sec % 86400);
  unsigned hh = s / 3600, mm = s / 60 % 60, ss = s % 60;
  if (y < 0) y = 0;
  if (y > 9999) y = 9999;
  unsigned v[6] = {(unsigned)y, mo, d, hh, mm, ss};
  static const char sep[] = "--T::"; /* after each of the first five */
  char *iso = c->iso, *d14 = c->d14;
  for (int i = 0; i < 6; i++) {
    if (i == 0) {
      for (int k = 3; k >= 0; k--, v[0] /= 10) iso[k] = d14[k] = (char)('0' + v[0] % 10);
      iso += 4, d14 += 4;
    } else {
      iso[0] = d14[0] = (char)('0' + v[i] / 10 % 10);
      iso[1] = d14[1] = (char)('0' + v[i] % 10);
      iso += 2, d14 += 2;
    }
    if (i < 5) *iso++ = sep[i];
  }
  *iso = '\0';
  *d14 = '\0';
  c->sec = sec;
}

/* ---- fields ---- */

static const char hexd[] = "0123456789ABCDEF";

/* Append s with bytes outside 0x21-0x7e (and ',' when comma) as %XX;
 * "-" when empty. */
static int put_field(kr_buf_t *b, kr_slice_t s, int comma) {
  if (s.n == 0) return kr_buf_append(b, "-", 1);
  int rc = kr_buf_reserve(b, s.n);
  if (rc) return rc;
  size_t i = 0;
  while (i < s.n) {
    size_t j = i;
    while (j < s.n) {
      unsigned char c = (unsigned char)s.p[j];
      if (c <= 0x20 || c >= 0x7f || (comma && c == ',')) break;
      j++;
    }
    if (j > i && (rc = kr_buf_append(b, s.p + i, j - i))) return rc;
    if (j == s.n) break;
    unsigned char c = (unsigned char)s.p[j];
    char esc[3] = {'%', hexd[c >> 4], hexd[c & 15]};
    if ((rc = kr_buf_append(b, esc, 3))) return rc;
    i = j + 1;
  }
  return 0;
}

/* MimetypeUtils.truncate: the leading run before whitespace, ';' or ','. */
static kr_slice_t mime_of(kr_slice_t ct) {
  if (!ct.p) return KR_SLICE_LIT("unknown");
  size_t n = 0;
  while (n < ct.n) {
    unsigned char c = (unsigned char)ct.p[n];
    if (c <= 0x20 || c == ';' || c == ',' || c == 0x7f) break;
    n++;
  }
  return n ? kr_slice(ct.p, n) : KR_SLICE_LIT("no-type");
}

/* ---- line ---- */

/* u in decimal (after a '-' when neg), right-aligned in width bytes
 * padded with pad ('0' only when !neg), at out; returns the length.
 * printf's "%5d", "%03u" without printf: a crawl formats a line per URI,
 * and vfprintf was a few per cent of its CPU. out needs max(width, 21). */
static size_t put_num(char *out, unsigned long long u, int neg, unsigned width, char pad) {
  char tmp[1 + KR_U64_DEC_MAX];
  size_t n = 0, k = 0;
  if (neg) tmp[n++] = '-';
  n += kr_u64_dec(tmp + n, u);
  while (n + k < width) out[k++] = pad;
  memcpy(out + k, tmp, n);
  return k + n;
}

static int format_line(date_cache_t *dc, const kr_crawllog_entry_t *e, kr_buf_t *b) {
  int rc;
  date_fill(dc, e->log_ms / 1000);
  char head[96];
  /* "%s.%03uZ %5d %10s " of date, milliseconds, status, size or "-" */
  size_t k = strlen(dc->iso);
  memcpy(head, dc->iso, k);
  head[k++] = '.';
  k += put_num(head + k, e->log_ms % 1000, 0, 3, '0');
  head[k++] = 'Z';
  head[k++] = ' ';
  long long st = e->status;
  k += put_num(head + k, st < 0 ? (unsigned long long)-st : (unsigned long long)st, st < 0, 5, ' ');
  head[k++] = ' ';
  if (e->size >= 0) {
    k += put_num(head + k, (unsigned long long)e->size, 0, 10, ' ');
  } else {
    memcpy(head + k, "         -", 10);
    k += 10;
  }
  head[k++] = ' ';
  if ((rc = kr_buf_append(b, head, k))) return rc;
  if ((rc = put_field(b, e->uri, 0))) return rc;
  if ((rc = kr_buf_append(b, " ", 1))) return rc;
  if ((rc = put_field(b, e->hops, 0))) return rc;
  if ((rc = kr_buf_append(b, " ", 1))) return rc;
  if ((rc = put_field(b, e->via, 0))) return rc;
  if ((rc = kr_buf_append(b, " ", 1))) return rc;
  if ((rc = put_field(b, mime_of(e->mime), 0))) return rc;
  /* " #%03u " of the worker, then "%s%03u+%llu " of the fetch start and
   * its duration, or "- " */
  k = 0;
  head[k++] = ' ';
  head[k++] = '#';
  k += put_num(head + k, e->worker, 0, 3, '0');
  head[k++] = ' ';
  if (e->fetch_ms) {
    date_cache_t fc = *dc;
    date_fill(&fc, e->fetch_ms / 1000);
    memcpy(head + k, fc.d14, 14);
    k += 14;
    k += put_num(head + k, e->fetch_ms % 1000, 0, 3, '0');
    head[k++] = '+';
    k += put_num(head + k, e->duration_ms, 0, 0, ' ');
    head[k++] = ' ';
  } else {
    head[k++] = '-';
    head[k++] = ' ';
  }
  if ((rc = kr_buf_append(b, head, k))) return rc;
  if ((rc = put_field(b, e->digest, 0))) return rc;
  if ((rc = kr_buf_append(b, " ", 1))) return rc;
  if ((rc = put_field(b, e->source, 0))) return rc;
  if ((rc = kr_buf_append(b, " ", 1))) return rc;
  int any = 0;
  for (size_t i = 0; i < e->n_annotations; i++) {
    if (!e->annotations[i].n) continue;
    if (any && (rc = kr_buf_append(b, ",", 1))) return rc;
    if ((rc = put_field(b, e->annotations[i], 1))) return rc;
    any = 1;
  }
  if (!any && (rc = kr_buf_append(b, "-", 1))) return rc;
  return kr_buf_append(b, "\n", 1);
}

int kr_crawllog_format(const kr_crawllog_entry_t *e, kr_buf_t *out) {
  date_cache_t dc = {UINT64_MAX, "", ""};
  size_t len = out->len;
  int rc = format_line(&dc, e, out);
  if (rc) {
    out->len = len;
    if (out->data) out->data[len] = '\0';
  }
  return rc;
}

/* ---- writer ---- */

struct kr_crawllog {
  char *path;
  int fd;
  kr_crawllog_opts_t o;
  char *out;                /* buffer_size bytes of whole lines */
  size_t out_len;
  unsigned out_lines;
  uint64_t first_ms;        /* log_ms of the oldest buffered line */
  kr_buf_t line;            /* scratch for one line */
  date_cache_t dates;
  volatile sig_atomic_t reopen_asked;
  kr_crawllog_stats_t st;
};

void kr_crawllog_opts_init(kr_crawllog_opts_t *o) {
  o->buffer_size = 64 * 1024;
  o->flush_lines = 1000;
  o->flush_ms = 1000;
}

static int open_file(const char *path, int *fd) {
  *fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  struct stat sb;
  /* a new file gets exactly 0644, whatever the umask */
  if (*fd >= 0 && fstat(*fd, &sb) == 0 && sb.st_size == 0) fchmod(*fd, 0644);
  return *fd < 0 ? KR_EIO : 0;
}

int kr_crawllog_open(const char *state_dir, const kr_crawllog_opts_t *opts,
                     kr_crawllog_t **out) {
  *out = NULL;
  kr_crawllog_t *l = kr_xcalloc(1, sizeof *l);
  if (opts)
    l->o = *opts;
  else
    kr_crawllog_opts_init(&l->o);
  if (l->o.buffer_size < 256) l->o.buffer_size = 256;
  if (l->o.flush_lines == 0) l->o.flush_lines = 1;
  char *dir = kr_xasprintf("%s/logs", state_dir);
  if (mkdir(dir, 0755) == 0) {
    chmod(dir, 0755);
  } else if (errno != EEXIST) {
    int e = errno;
    free(dir);
    free(l);
    errno = e;
    return KR_EIO;
  }
  l->path = kr_xasprintf("%s/crawl.log", dir);
  free(dir);
  if (open_file(l->path, &l->fd)) {
    int e = errno;
    free(l->path);
    free(l);
    errno = e;
    return KR_EIO;
  }
  l->out = kr_xmalloc(l->o.buffer_size);
  kr_buf_init(&l->line, LINE_MAX_BYTES);
  l->dates.sec = UINT64_MAX;
  *out = l;
  return 0;
}

static int write_all(kr_crawllog_t *l, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(l->fd, p, n);
    l->st.writes++;
    if (w < 0) {
      if (errno == EINTR) continue;
      l->st.last_errno = errno;
      return KR_EIO;
    }
    p += w;
    n -= (size_t)w;
    l->st.bytes += (uint64_t)w;
  }
  return 0;
}

static int flush_buffer(kr_crawllog_t *l) {
  if (!l->out_len) return 0;
  int rc = write_all(l, l->out, l->out_len);
  if (rc) l->st.dropped += l->out_lines; /* a partial line may remain */
  l->out_len = 0;
  l->out_lines = 0;
  return rc;
}

static int apply_reopen(kr_crawllog_t *l) {
  if (!l->reopen_asked) return 0;
  l->reopen_asked = 0;
  return kr_crawllog_reopen(l);
}

int kr_crawllog_write(kr_crawllog_t *l, const kr_crawllog_entry_t *e) {
  kr_buf_reset(&l->line);
  if (format_line(&l->dates, e, &l->line)) {
    l->st.dropped++;
    return KR_ETOOBIG;
  }
  l->st.lines++;
  int rc = 0;
  if (l->out_len + l->line.len > l->o.buffer_size) rc = flush_buffer(l);
  if (l->line.len > l->o.buffer_size) { /* a line longer than the buffer */
    if (write_all(l, l->line.data, l->line.len)) {
      l->st.dropped++;
      rc = KR_EIO;
    }
    return rc;
  }
  if (!l->out_len) l->first_ms = e->log_ms;
  memcpy(l->out + l->out_len, l->line.data, l->line.len);
  l->out_len += l->line.len;
  l->out_lines++;
  if (l->out_lines >= l->o.flush_lines) {
    int rc2 = flush_buffer(l);
    if (!rc) rc = rc2;
  }
  return rc;
}

int kr_crawllog_flush(kr_crawllog_t *l) {
  int rc = flush_buffer(l);
  int rc2 = apply_reopen(l);
  return rc ? rc : rc2;
}

int kr_crawllog_tick(kr_crawllog_t *l, uint64_t now_ms) {
  int rc = 0;
  if (l->out_len && now_ms >= l->first_ms + l->o.flush_ms) rc = flush_buffer(l);
  int rc2 = apply_reopen(l);
  return rc ? rc : rc2;
}

int kr_crawllog_reopen(kr_crawllog_t *l) {
  int rc = flush_buffer(l);
  int fd;
  if (open_file(l->path, &fd)) {
    l->st.last_errno = errno;
    return KR_EIO;
  }
  close(l->fd);
  l->fd = fd;
  l->st.reopens++;
  return rc;
}

void kr_crawllog_request_reopen(kr_crawllog_t *l) { l->reopen_asked = 1; }

void kr_crawllog_get_stats(const kr_crawllog_t *l, kr_crawllog_stats_t *st) { *st = l->st; }

const char *kr_crawllog_path(const kr_crawllog_t *l) { return l->path; }

int kr_crawllog_close(kr_crawllog_t *l) {
  if (!l) return 0;
  int rc = flush_buffer(l);
  close(l->fd);
  kr_buf_free(&l->line);
  free(l->out);
  free(l->path);
  free(l);
  return rc;
}

/* ---- durations ---------------------------------------------------------------- */

/* Heritrix's crawl.log form (ArchiveUtils.formatMillisecondsToConventional
 * of its 1.x days, as in the thesis' "wt:45s0ms,...,ov:3ms"): days, hours,
 * minutes and seconds while the rest reaches them, then always ms. */
size_t kr_crawllog_duration(char *out, size_t cap, int64_t ms) {
  static const struct {
    int64_t unit;
    const char *name;
  } u[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  size_t n = 0;
  if (ms < 0) {
    n += (size_t)snprintf(out + n, cap - n, "-");
    ms = ms == INT64_MIN ? INT64_MAX : -ms;
  }
  for (size_t i = 0; i < ARRAY_SIZE(u) && n < cap; i++)
    if (ms >= u[i].unit) {
      n += (size_t)snprintf(out + n, cap - n, "%" PRId64 "%s", ms / u[i].unit, u[i].name);
      ms %= u[i].unit;
    }
  if (n < cap) n += (size_t)snprintf(out + n, cap - n, "%" PRId64 "ms", ms);
  return n < cap ? n : cap - 1;
}
