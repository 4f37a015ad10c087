/*
 * Seeds file reader (see include/kria/seeds.h for the format). A buffer
 * is cut into lines; each line is trimmed, stripped of its comment,
 * given "http://" when it is a bare host, parsed and canonicalized with
 * the url module, and kept unless an earlier line gave the same canonical
 * URL (an open-addressing table of indexes into the seed array). Every
 * line costs time proportional to its length, lines longer than the cap
 * are skipped before any parsing, and the seed count is capped, so no
 * file can make the reader hang or allocate without bound. Sections:
 * messages, dedupe table, one line, buffer, file.
 */
#include "kria/seeds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kria/buf.h"
#include "kria/error.h"
#include "kria/mem.h"

#define SEED_DUP_REPORTED 0x100u /* internal flag: duplicate reported */
#define TEXT_SHOWN 120            /* bytes of a bad line quoted in messages */

void kr_seeds_opts_init(kr_seeds_opts_t *o) {
  o->max_file = KR_SEEDS_MAX_FILE;
  o->max_line = KR_SEEDS_MAX_LINE;
  o->max_seeds = KR_SEEDS_MAX_SEEDS;
  o->canon = NULL;
}

void kr_seeds_init(kr_seeds_t *s) { memset(s, 0, sizeof *s); }

void kr_seeds_free(kr_seeds_t *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i].url);
  for (size_t i = 0; i < s->n_messages; i++) free(s->messages[i]);
  free(s->v);
  free(s->messages);
  free(s->table);
  memset(s, 0, sizeof *s);
}

/* ---- messages ---- */

static void message(kr_seeds_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void message(kr_seeds_t *s, const char *fmt, ...) {
  if (s->n_messages >= KR_SEEDS_MAX_MESSAGES) {
    s->messages_dropped++;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  char *m = NULL;
  if (vasprintf(&m, fmt, ap) < 0) m = NULL;
  va_end(ap);
  if (!m) m = kr_xstrdup("seeds: out of memory while formatting a message");
  if (!s->messages) s->messages = kr_xcalloc(KR_SEEDS_MAX_MESSAGES, sizeof *s->messages);
  s->messages[s->n_messages++] = m;
}

/* Quote at most TEXT_SHOWN bytes of a line, printable ASCII as is and
 * everything else as \xNN, into out (at least 4 * TEXT_SHOWN + 4). */
static const char *quote(const char *p, size_t n, char *out) {
  size_t o = 0;
  size_t lim = n < TEXT_SHOWN ? n : TEXT_SHOWN;
  for (size_t i = 0; i < lim; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out[o++] = (char)c;
    } else {
      static const char hex[] = "0123456789abcdef";
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  if (lim < n) out[o++] = '.', out[o++] = '.', out[o++] = '.';
  out[o] = '\0';
  return out;
}

/* ---- dedupe table ---- */

static uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h ^ (h >> 29);
}

static void table_grow(kr_seeds_t *s) {
  size_t cap = s->table_cap ? s->table_cap * 2 : 1024;
  uint32_t *t = kr_xcalloc(cap, sizeof *t);
  for (size_t i = 0; i < s->n; i++) {
    size_t j = (size_t)hash_bytes(s->v[i].url, s->v[i].len) & (cap - 1);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = (uint32_t)(i + 1);
  }
  free(s->table);
  s->table = t;
  s->table_cap = cap;
}

/* Index of the seed equal to url, or -1; *slot gets the empty slot where
 * it would go. */
static long table_find(const kr_seeds_t *s, const char *url, size_t len, size_t *slot) {
  size_t mask = s->table_cap - 1;
  size_t j = (size_t)hash_bytes(url, len) & mask;
  while (s->table[j]) {
    const kr_seed_t *e = &s->v[s->table[j] - 1];
    if (e->len == len && memcmp(e->url, url, len) == 0) return (long)s->table[j] - 1;
    j = (j + 1) & mask;
  }
  *slot = j;
  return -1;
}

/* ---- one line ---- */

static int is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* 1 when p starts "scheme:" and what follows the colon is not a port
 * ("mailto:a@b", "http:x.org"), 0 for "x.org", "x.org:8080/a". */
static int scheme_colon(const char *p, size_t n) {
  size_t i = 0;
  if (n == 0 || !((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))) return 0;
  while (i < n && ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                   (p[i] >= '0' && p[i] <= '9') || p[i] == '+' || p[i] == '-' || p[i] == '.'))
    i++;
  if (i == n || p[i] != ':') return 0;
  size_t j = i + 1;
  while (j < n && p[j] >= '0' && p[j] <= '9') j++;
  int port = j > i + 1 && (j == n || p[j] == '/' || p[j] == '?' || p[j] == '#');
  return !port;
}

/* 1 when nothing follows the authority of u (scheme ':' slashes host). */
static int has_no_path(const char *u, size_t n) {
  const char *colon = memchr(u, ':', n);
  if (!colon) return 0;
  size_t i = (size_t)(colon - u) + 1;
  while (i < n && (u[i] == '/' || u[i] == '\\')) i++;
  for (; i < n; i++)
    if (u[i] == '/' || u[i] == '\\' || u[i] == '?' || u[i] == '#') return 0;
  return 1;
}

enum line_result { LINE_SKIP, LINE_OK, LINE_FULL };

/* NULL when url's host is one a crawl can reach: an IP address, or a DNS
 * name of letters, digits, '-' and '_' in labels of 1-63 (punycode after
 * the parser's IDNA), at most 253 in all. A bare line ("example.org", no
 * scheme; its text in line, n bytes) must also write its host with a dot,
 * as localhost or as [IPv6]. Else why not: WHATWG URLs allow hosts such
 * as "(", and read "qb" or "7" (0.0.0.7) as hosts: what junk, a random
 * file given as seeds, turns into. */
static const char *host_refused(const kr_url_t *url, const char *line, size_t n, int bare) {
  if (bare) {
    size_t e = 0;
    while (e < n && !strchr(":/?#\\", line[e])) e++;
    if (!memchr(line, '.', e) && !(e == 9 && !strncasecmp(line, "localhost", 9)) &&
        !(n && line[0] == '['))
      return "not a host name (one label; write http://NAME/ for an intranet host)";
  }
  kr_url_host_type_t t = kr_url_host_type(url);
  if (t == KR_URL_HOST_IPV4 || t == KR_URL_HOST_IPV6) return NULL;
  if (t != KR_URL_HOST_DOMAIN) return "no host name";
  kr_slice_t h = kr_url_hostname(url);
  if (h.n && h.p[h.n - 1] == '.') h.n--; /* the root label */
  if (!h.n || h.n > 253) return "not a host name";
  size_t label = 0;
  for (size_t i = 0; i < h.n; i++) {
    unsigned char c = (unsigned char)h.p[i];
    if (c == '.') {
      if (!label) return "not a host name (empty label)";
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
      if (++label > 63) return "not a host name (a label over 63 characters)";
    } else {
      return "not a host name (characters a DNS name does not have)";
    }
  }
  if (!label) return "not a host name (empty label)";
  return NULL;
}

static enum line_result one_line(kr_seeds_t *s, const char *name, uint32_t lineno,
                                 const char *p, size_t n, const kr_seeds_opts_t *o,
                                 kr_buf_t *tmp, kr_buf_t *canon) {
  char q[4 * TEXT_SHOWN + 8];
  if (n > o->max_line) {
    s->bad++;
    message(s, "%s:%u: line too long (%zu bytes, limit %zu), skipped", name, lineno, n,
            o->max_line);
    return LINE_SKIP;
  }
  if (memchr(p, '\0', n)) {
    s->bad++;
    message(s, "%s:%u: NUL byte in line, skipped: %s", name, lineno, quote(p, n, q));
    return LINE_SKIP;
  }
  while (n && is_space((unsigned char)p[0])) p++, n--;
  while (n && is_space((unsigned char)p[n - 1])) n--;
  if (n == 0 || p[0] == '#') return LINE_SKIP;

  /* The URL is the first run of non-space; only a comment may follow. */
  size_t ul = 0;
  while (ul < n && !is_space((unsigned char)p[ul])) ul++;
  if (ul < n) {
    size_t r = ul;
    while (r < n && is_space((unsigned char)p[r])) r++;
    if (p[r] != '#') {
      s->bad++;
      message(s, "%s:%u: text after the URL (a URL has no spaces; comments start with #), "
                 "skipped: %s", name, lineno, quote(p, n, q));
      return LINE_SKIP;
    }
  }

  unsigned flags = 0;
  kr_buf_reset(tmp);
  int has_scheme = memmem(p, ul, "://", 3) != NULL || scheme_colon(p, ul);
  if (!has_scheme) {
    flags |= KR_SEED_IMPLIED_HTTP;
    if (kr_buf_append_str(tmp, "http://")) return LINE_SKIP; /* cannot happen */
  }
  if (kr_buf_append(tmp, p, ul)) return LINE_SKIP; /* bounded by max_line */
  if (has_no_path(tmp->data, tmp->len)) flags |= KR_SEED_NO_PATH;

  kr_url_t *url = NULL;
  if (kr_url_parse_ex(tmp->data, tmp->len, NULL, o->max_line + 16, &url)) {
    s->bad++;
    message(s, "%s:%u: invalid URL, skipped: %s", name, lineno, quote(p, ul, q));
    return LINE_SKIP;
  }
  if (!kr_url_is_http(url)) {
    kr_slice_t sc = kr_url_scheme(url);
    s->bad++;
    message(s, "%s:%u: unsupported scheme \"%.*s\" (only http and https), skipped: %s", name,
            lineno, (int)(sc.n > 32 ? 32 : sc.n), sc.p, quote(p, ul, q));
    kr_url_free(url);
    return LINE_SKIP;
  }
  const char *why = host_refused(url, p, ul, !has_scheme);
  if (why) {
    s->bad++;
    message(s, "%s:%u: %s, skipped: %s", name, lineno, why, quote(p, ul, q));
    kr_url_free(url);
    return LINE_SKIP;
  }
  kr_buf_reset(canon);
  int rc = kr_url_canon(url, o->canon, canon);
  kr_url_free(url);
  if (rc) {
    s->bad++;
    message(s, "%s:%u: cannot canonicalize URL (%s), skipped: %s", name, lineno,
            kr_strerror(rc), quote(p, ul, q));
    return LINE_SKIP;
  }

  if (!s->table_cap || (s->n + 1) * 2 > s->table_cap) table_grow(s);
  size_t slot = 0;
  long dup = table_find(s, canon->data, canon->len, &slot);
  if (dup >= 0) {
    kr_seed_t *first = &s->v[dup];
    s->duplicates++;
    if (!(first->flags & SEED_DUP_REPORTED)) {
      first->flags |= SEED_DUP_REPORTED;
      message(s, "%s:%u: duplicate of line %u (%s), skipped; further duplicates of it "
                 "are not reported", name, lineno, first->line, quote(canon->data, canon->len, q));
    }
    return LINE_SKIP;
  }
  if (s->n >= o->max_seeds) {
    message(s, "%s:%u: more than %zu seeds; this line and the rest of the input are ignored",
            name, lineno, o->max_seeds);
    return LINE_FULL;
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = kr_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  kr_seed_t *e = &s->v[s->n];
  e->url = kr_xstrndup(canon->data, canon->len);
  e->len = canon->len;
  e->line = lineno;
  e->flags = flags;
  s->table[slot] = (uint32_t)(s->n + 1);
  s->n++;
  return LINE_OK;
}

/* ---- buffer ---- */

int kr_seeds_parse(kr_seeds_t *s, const char *name, const char *buf, size_t len,
                   const kr_seeds_opts_t *opts) {
  kr_seeds_opts_t def;
  if (!opts) {
    kr_seeds_opts_init(&def);
    opts = &def;
  }
  if (!name) name = "seeds";
  if (!buf) len = 0;
  if (opts->max_seeds > UINT32_MAX - 1) return KR_EINVAL;
  kr_buf_t tmp, canon;
  kr_buf_init(&tmp, opts->max_line + 16);
  kr_buf_init(&canon, 4 * opts->max_line + 64);
  size_t off = 0;
  if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) off = 3;
  uint32_t lineno = 0;
  int rc = 0;
  while (off < len) {
    const char *p = buf + off;
    const char *nl = memchr(p, '\n', len - off);
    size_t n = nl ? (size_t)(nl - p) : len - off;
    off += n + (nl ? 1 : 0);
    if (lineno < UINT32_MAX) lineno++;
    s->lines++;
    if (one_line(s, name, lineno, p, n, opts, &tmp, &canon) == LINE_FULL) {
      rc = KR_ETOOBIG;
      break;
    }
  }
  kr_buf_free(&tmp);
  kr_buf_free(&canon);
  return rc;
}

/* ---- file ---- */

int kr_seeds_load(kr_seeds_t *s, const char *path, const kr_seeds_opts_t *opts) {
  kr_seeds_opts_t def;
  if (!opts) {
    kr_seeds_opts_init(&def);
    opts = &def;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    message(s, "%s: cannot open: %s", path, strerror(e));
    errno = e;
    return KR_EIO;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > opts->max_file) {
    message(s, "%s: file is larger than the limit of %zu bytes", path, opts->max_file);
    close(fd);
    return KR_ETOOBIG;
  }
  /* Read up to max_file + 1 bytes, growing geometrically (also for pipes
   * and files that grow while being read). */
  size_t cap = 64 * 1024, len = 0;
  if (S_ISREG(st.st_mode) && (size_t)st.st_size + 1 > cap) cap = (size_t)st.st_size + 1;
  if (cap > opts->max_file + 1) cap = opts->max_file + 1;
  char *buf = kr_xmalloc(cap);
  for (;;) {
    if (len == cap) {
      if (cap > opts->max_file) break;
      cap = cap * 2 > opts->max_file + 1 ? opts->max_file + 1 : cap * 2;
      buf = kr_xrealloc(buf, cap);
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      message(s, "%s: cannot read: %s", path, strerror(e));
      free(buf);
      close(fd);
      errno = e;
      return KR_EIO;
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  if (len > opts->max_file) {
    message(s, "%s: file is larger than the limit of %zu bytes", path, opts->max_file);
    free(buf);
    return KR_ETOOBIG;
  }
  int rc = kr_seeds_parse(s, path, buf, len, opts);
  free(buf);
  return rc;
}
