/*
 * kts routes: the INI routes file (through inih) turned into a table of
 * kts_route_t, the lookup of a request's route, and the per-path state
 * (request count, version history) that change-every needs.
 *
 * Sections: loading (value parsers, one handler for every key, checks
 * after the whole file), lookup, then the path-state hash table. The
 * format itself is documented in kts.c and README.md.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kts.h"

#define MAX_FILE_BYTES (64u << 20)   /* body-file / raw-file */
#define MAX_INLINE (1u << 20)        /* body / raw / headers after joins */
#define MAX_STATES (1u << 20)        /* paths with their own state */
#define INI_LINE_MAX 198             /* inih (Debian) reads 200-byte lines */

typedef struct loader {
  kts_routes_t *rs;
  const char *file;
  char *dir;           /* of the routes file, for body-file */
  kts_route_t *cur;
  int err;             /* first error reported */
  FILE *f;             /* read line by line by reader() */
  int lineno;
} loader_t;

static void route_free(kts_route_t *r) {
  if (!r) return;
  free(r->path);
  free(r->host);
  free(r->status_line);
  kr_buf_free(&r->headers);
  kr_buf_free(&r->body);
  free(r->file_data);
  kr_buf_free(&r->raw);
  free(r->link_prefix);
  free(r->etag);
  free(r->redirect);
  free(r);
}

static kts_route_t *route_new(const char *path, int line) {
  kts_route_t *r = kr_xcalloc(1, sizeof *r);
  size_t n = strlen(path);
  if (n && path[n - 1] == '*') {
    r->prefix = 1;
    n--;
  }
  r->path = kr_xstrndup(path, n);
  r->path_len = n;
  r->line = line;
  kr_buf_init(&r->headers, MAX_INLINE);
  kr_buf_init(&r->body, MAX_INLINE);
  kr_buf_init(&r->raw, MAX_FILE_BYTES);
  r->chunk_size = 1024;
  r->gzip_level = 6;
  r->drop_after = r->reset_after = r->cl_lie = KTS_INFINITE;
  r->drop_at = r->reset_at = KTS_INFINITE;
  r->keep_alive = 1;
  r->trickle_bytes = 1;
  r->garbage_bytes = 512;
  return r;
}

/* ---- value parsers ---- */

/* Decimal with optional K/M/G (binary) suffix. */
static int parse_u64(const char *s, uint64_t *out) {
  if (!isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  uint64_t mul = 1;
  if (*end == 'k' || *end == 'K') mul = 1024, end++;
  else if (*end == 'm' || *end == 'M') mul = 1024 * 1024, end++;
  else if (*end == 'g' || *end == 'G') mul = 1024ull * 1024 * 1024, end++;
  if (*end) return -1;
  if (v > UINT64_MAX / mul) return -1;
  *out = (uint64_t)v * mul;
  return 0;
}

static int parse_bool(const char *s, int *out) {
  if (!strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on")) {
    *out = 1;
    return 0;
  }
  if (!strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off")) {
    *out = 0;
    return 0;
  }
  return -1;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Append s with \n \r \t \0 \\ \xHH decoded. */
static int append_unescaped(kr_buf_t *b, const char *s) {
  for (; *s; s++) {
    char c = *s;
    if (c == '\\' && s[1]) {
      s++;
      switch (*s) {
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case '0': c = '\0'; break;
        case '\\': c = '\\'; break;
        case 'x': {
          int h = s[1] ? hexval(s[1]) : -1, l = h >= 0 && s[2] ? hexval(s[2]) : -1;
          if (h < 0 || l < 0) return -1;
          c = (char)(h * 16 + l);
          s += 2;
          break;
        }
        default: return -1;
      }
    }
    if (kr_buf_append(b, &c, 1)) return -1;
  }
  return 0;
}

static int read_file(const char *dir, const char *name, char **data, size_t *len) {
  char *path = name[0] == '/' ? kr_xstrdup(name) : kr_xasprintf("%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  free(path);
  if (!f) return -1;
  kr_buf_t b;
  kr_buf_init(&b, MAX_FILE_BYTES);
  char tmp[65536];
  size_t n;
  int rc = 0;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
    if (kr_buf_append(&b, tmp, n)) {
      rc = -1;
      break;
    }
  if (ferror(f)) rc = -1;
  fclose(f);
  if (rc) {
    kr_buf_free(&b);
    return -1;
  }
  *len = b.len;
  *data = b.data ? b.data : kr_xstrdup("");
  return 0;
}

static int fail(loader_t *L, int line, const char *fmt, const char *arg) {
  if (!L->err) {
    fprintf(stderr, "kts: %s:%d: ", L->file, line);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
  }
  L->err = 1;
  return 0; /* tell inih to go on; we stop after the file */
}

static void routes_add(kts_routes_t *rs, kts_route_t *r) {
  rs->v = kr_xrealloc(rs->v, (rs->n + 1) * sizeof *rs->v);
  rs->v[rs->n++] = r;
}

/* `route "/path"`, `site`, `site "/prefix/"`. */
static int start_section(loader_t *L, const char *section, int line) {
  const char *q = NULL;
  int site = 0;
  if (!strncmp(section, "route", 5) && (section[5] == ' ' || section[5] == '\t'))
    q = section + 5;
  else if (!strcmp(section, "site"))
    site = 1;
  else if (!strncmp(section, "site", 4) && (section[4] == ' ' || section[4] == '\t'))
    q = section + 4, site = 1;
  else
    return fail(L, line, "unknown section [%s] (want [route \"/path\"] or [site])", section);
  char path[1024] = "/p/";
  if (q) {
    while (*q == ' ' || *q == '\t') q++;
    size_t n = strlen(q);
    if (n < 3 || q[0] != '"' || q[n - 1] != '"' || n - 2 >= sizeof path - 1)
      return fail(L, line, "section name must be quoted: [%s]", section);
    memcpy(path, q + 1, n - 2);
    path[n - 2] = '\0';
  }
  if (path[0] != '/' && !(path[0] == '*' && path[1] == '\0'))
    return fail(L, line, "route path must start with '/': %s", path);
  if (site) {
    size_t n = strlen(path);
    if (path[n - 1] != '*') strcat(path, "*");
  }
  kts_route_t *r = route_new(path, line);
  if (site) {
    r->pages = 10;
    r->links = 3;
  }
  routes_add(L->rs, r);
  L->cur = r;
  return 1;
}

static int set_when(const char *v, enum kts_when *w, int *raw) {
  int b;
  if (raw && !strcmp(v, "raw")) {
    *w = KTS_WHEN_ACCEPTED;
    *raw = 1;
    return 0;
  }
  if (!strcmp(v, "force")) {
    *w = KTS_WHEN_FORCE;
    return 0;
  }
  if (parse_bool(v, &b)) return -1;
  *w = b ? KTS_WHEN_ACCEPTED : KTS_WHEN_OFF;
  return 0;
}


#define BAD(fmt) return fail(L, line, fmt, value)

static int handler(void *user, const char *section, const char *name, const char *value) {
  loader_t *L = user;
  int line = L->lineno; /* inih calls us right after reader() gave the line */
  (void)section; /* sections are opened by reader(), which sees them first */
  kts_route_t *r = L->cur;
  if (!r) return fail(L, line, "key %s outside a [route] or [site] section", name);
  uint64_t u;
  if (!strcmp(name, "status")) {
    if (parse_u64(value, &u) || u < 100 || u > 999) BAD("status must be 100..999: %s");
    r->status = (int)u;
  } else if (!strcmp(name, "status-line")) {
    kr_buf_t t;
    kr_buf_init(&t, 4096);
    if (append_unescaped(&t, value)) {
      kr_buf_free(&t);
      BAD("bad escape in status-line: %s");
    }
    free(r->status_line);
    r->status_line = t.data ? t.data : kr_xstrdup("");
  } else if (!strcmp(name, "header")) {
    const char *colon = strchr(value, ':');
    if (!colon || colon == value) BAD("header wants 'Name: Value': %s");
    if (!strncasecmp(value, "content-type:", 13)) r->has_ctype = 1;
    if (append_unescaped(&r->headers, value) || kr_buf_append_str(&r->headers, "\r\n"))
      BAD("header too long or bad escape: %s");
  } else if (!strcmp(name, "content-type")) {
    r->has_ctype = 1;
    if (kr_buf_printf(&r->headers, "Content-Type: %s\r\n", value)) BAD("too long: %s");
  } else if (!strcmp(name, "body")) {
    if (r->has_body && kr_buf_append_str(&r->body, "\n")) BAD("body too long: %s");
    if (append_unescaped(&r->body, value)) BAD("body too long or bad escape: %s");
    r->has_body = 1;
  } else if (!strcmp(name, "body-file")) {
    free(r->file_data);
    r->file_data = NULL;
    if (read_file(L->dir, value, &r->file_data, &r->file_len))
      BAD("cannot read body-file %s (missing, or over 64 MiB)");
    r->has_file = 1;
  } else if (!strcmp(name, "raw")) {
    if (r->has_raw && kr_buf_append_str(&r->raw, "\n")) BAD("raw too long: %s");
    if (append_unescaped(&r->raw, value)) BAD("raw too long or bad escape: %s");
    r->has_raw = 1;
  } else if (!strcmp(name, "raw-file")) {
    char *d;
    size_t n;
    if (read_file(L->dir, value, &d, &n)) BAD("cannot read raw-file %s");
    kr_buf_reset(&r->raw);
    int rc = kr_buf_append(&r->raw, d, n);
    free(d);
    if (rc) BAD("raw-file too big: %s");
    r->has_raw = 1;
  } else if (!strcmp(name, "body-size")) {
    if (!strcmp(value, "infinite")) r->body_size = KTS_INFINITE;
    else if (parse_u64(value, &u) || u == KTS_INFINITE) BAD("bad body-size: %s");
    else r->body_size = u;
  } else if (!strcmp(name, "seed")) {
    if (parse_u64(value, &r->seed)) BAD("bad seed: %s");
  } else if (!strcmp(name, "fill")) {
    if (!strcmp(value, "text")) r->fill = KTS_FILL_TEXT;
    else if (!strcmp(value, "zero")) r->fill = KTS_FILL_ZERO;
    else if (!strcmp(value, "space")) r->fill = KTS_FILL_SPACE;
    else BAD("fill is text, zero or space: %s");
  } else if (!strcmp(name, "links")) {
    if (parse_u64(value, &r->links) || r->links > 100000000) BAD("bad links: %s");
  } else if (!strcmp(name, "link-prefix")) {
    free(r->link_prefix);
    r->link_prefix = kr_xstrdup(value);
  } else if (!strcmp(name, "pages")) {
    if (parse_u64(value, &r->pages) || r->pages == 0) BAD("bad pages: %s");
  } else if (!strcmp(name, "chunked")) {
    if (parse_bool(value, &r->chunked)) BAD("chunked is 0 or 1: %s");
  } else if (!strcmp(name, "chunk-size")) {
    if (parse_u64(value, &u) || u == 0 || u > (1u << 20)) BAD("chunk-size 1..1M: %s");
    r->chunk_size = (size_t)u;
  } else if (!strcmp(name, "no-length")) {
    if (parse_bool(value, &r->no_length)) BAD("no-length is 0 or 1: %s");
  } else if (!strcmp(name, "gzip")) {
    if (set_when(value, &r->gzip, NULL)) BAD("gzip is 0, 1 or force: %s");
  } else if (!strcmp(name, "deflate")) {
    if (set_when(value, &r->deflate, &r->deflate_raw)) BAD("deflate is 0, 1, raw or force: %s");
  } else if (!strcmp(name, "gzip-level")) {
    if (parse_u64(value, &u) || u > 9) BAD("gzip-level 0..9: %s");
    r->gzip_level = (int)u;
  } else if (!strcmp(name, "etag")) {
    free(r->etag);
    r->etag = NULL;
    r->etag_auto = !strcmp(value, "auto");
    if (!r->etag_auto) r->etag = kr_xstrdup(value);
  } else if (!strcmp(name, "last-modified")) {
    r->lm_auto = !strcmp(value, "auto");
    r->lm_set = !r->lm_auto;
    if (r->lm_set && (r->last_modified = kts_parse_http_date(value)) < 0)
      BAD("last-modified is auto or an HTTP date: %s");
  } else if (!strcmp(name, "ignore-conditionals")) {
    if (parse_bool(value, &r->ignore_conditionals)) BAD("ignore-conditionals is 0 or 1: %s");
  } else if (!strcmp(name, "delay-ms")) {
    if (parse_u64(value, &r->delay_ms)) BAD("bad delay-ms: %s");
  } else if (!strcmp(name, "stall")) {
    if (!strcmp(value, "response")) r->stall = KTS_STALL_RESPONSE;
    else if (!strcmp(value, "headers")) r->stall = KTS_STALL_HEADERS;
    else if (!strcmp(value, "body")) r->stall = KTS_STALL_BODY;
    else if (!strcmp(value, "0") || !strcmp(value, "none")) r->stall = KTS_STALL_NONE;
    else BAD("stall is response, headers or body: %s");
  } else if (!strcmp(name, "stall-after")) {
    if (parse_u64(value, &r->stall_after)) BAD("bad stall-after: %s");
    r->stall_after_set = 1;
  } else if (!strcmp(name, "trickle-ms")) {
    if (parse_u64(value, &r->trickle_ms)) BAD("bad trickle-ms: %s");
  } else if (!strcmp(name, "trickle-bytes")) {
    if (parse_u64(value, &r->trickle_bytes) || !r->trickle_bytes || r->trickle_bytes > 65536)
      BAD("trickle-bytes 1..65536: %s");
  } else if (!strcmp(name, "trickle-headers")) {
    if (parse_bool(value, &r->trickle_headers)) BAD("trickle-headers is 0 or 1: %s");
  } else if (!strcmp(name, "drop-after")) {
    if (parse_u64(value, &r->drop_after) || r->drop_after == KTS_INFINITE) BAD("bad drop-after: %s");
  } else if (!strcmp(name, "reset-after")) {
    if (parse_u64(value, &r->reset_after) || r->reset_after == KTS_INFINITE) BAD("bad reset-after: %s");
  } else if (!strcmp(name, "drop-at")) {
    if (parse_u64(value, &r->drop_at) || r->drop_at == KTS_INFINITE) BAD("bad drop-at: %s");
  } else if (!strcmp(name, "reset-at")) {
    if (parse_u64(value, &r->reset_at) || r->reset_at == KTS_INFINITE) BAD("bad reset-at: %s");
  } else if (!strcmp(name, "garbage")) {
    if (parse_bool(value, &r->garbage)) BAD("garbage is 0 or 1: %s");
  } else if (!strcmp(name, "garbage-bytes")) {
    if (parse_u64(value, &u) || u == 0 || u > (16u << 20)) BAD("garbage-bytes 1..16M: %s");
    r->garbage_bytes = (size_t)u;
  } else if (!strcmp(name, "bad-chunk")) {
    if (parse_bool(value, &r->bad_chunk)) BAD("bad-chunk is 0 or 1: %s");
  } else if (!strcmp(name, "header-bytes")) {
    if (parse_u64(value, &u) || u > (64u << 20)) BAD("header-bytes up to 64M: %s");
    r->header_bytes = (size_t)u;
  } else if (!strcmp(name, "header-count")) {
    if (parse_u64(value, &u) || u > 10000000) BAD("header-count up to 10M: %s");
    r->header_count = (size_t)u;
  } else if (!strcmp(name, "content-length-lie")) {
    if (parse_u64(value, &r->cl_lie) || r->cl_lie == KTS_INFINITE) BAD("bad content-length-lie: %s");
  } else if (!strcmp(name, "bad-gzip")) {
    if (parse_bool(value, &r->bad_gzip)) BAD("bad-gzip is 0 or 1: %s");
  } else if (!strcmp(name, "redirect")) {
    free(r->redirect);
    r->redirect = kr_xstrdup(value);
  } else if (!strcmp(name, "keep-alive")) {
    if (parse_bool(value, &r->keep_alive)) BAD("keep-alive is 0 or 1: %s");
  } else if (!strcmp(name, "change-every")) {
    if (parse_u64(value, &r->change_every)) BAD("bad change-every: %s");
  } else if (!strcmp(name, "change-every-ms")) {
    if (parse_u64(value, &r->change_every_ms)) BAD("bad change-every-ms: %s");
  } else if (!strcmp(name, "volatile")) {
    if (parse_bool(value, &r->is_volatile)) BAD("volatile is 0 or 1: %s");
  } else if (!strcmp(name, "host")) {
    free(r->host);
    r->host = kr_xstrdup(value);
  } else {
    return fail(L, line, "unknown key %s", name);
  }
  return 1;
}
#undef BAD

/* inih's line reader. It sees every line before inih parses it, so it
 * opens sections (with their line numbers, even when they hold no keys)
 * and rejects lines inih would silently split at 200 bytes. */
static char *reader(char *str, int num, void *stream) {
  loader_t *L = stream;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, L->f);
  if (n < 0) {
    free(line);
    return NULL;
  }
  L->lineno++;
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  if (n > INI_LINE_MAX || n >= num - 1) {
    fail(L, L->lineno, "line longer than %s bytes: use continuation lines or body-file",
         "198");
    str[0] = '\0';
    free(line);
    return str;
  }
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '[' && p == line) {
    const char *end = strrchr(p, ']');
    if (end) {
      char sec[256];
      size_t sn = (size_t)(end - p - 1);
      if (sn >= sizeof sec) sn = sizeof sec - 1;
      memcpy(sec, p + 1, sn);
      sec[sn] = '\0';
      start_section(L, sec, L->lineno);
    }
  }
  memcpy(str, line, (size_t)n + 1);
  free(line);
  return str;
}

#define BAD(fmt) return fail(L, line, fmt, value)
static int check_route(loader_t *L, kts_route_t *r) {
  int line = r->line;
  const char *value = r->path;
  if (r->pages && !r->prefix) BAD("pages needs a prefix route (path ending in '*'): %s");
  if ((r->has_body + r->has_file + r->has_raw) > 1)
    BAD("route %s: choose one of body, body-file, raw");
  if (r->stall_after_set && r->stall != KTS_STALL_BODY) BAD("route %s: stall-after needs stall = body");
  if (r->body_size == KTS_INFINITE && (r->has_body || r->has_file))
    BAD("route %s: body-size = infinite is for generated bodies");
  return 1;
}
#undef BAD

int kts_routes_load(kts_routes_t *rs, const char *file) {
  memset(rs, 0, sizeof *rs);
  loader_t L = {.rs = rs, .file = file};
  L.f = fopen(file, "r");
  if (!L.f) {
    fprintf(stderr, "kts: %s: %s\n", file, strerror(errno));
    return -1;
  }
  const char *slash = strrchr(file, '/');
  L.dir = slash ? kr_xstrndup(file, (size_t)(slash - file)) : kr_xstrdup(".");
  if (slash == file) {
    free(L.dir);
    L.dir = kr_xstrdup("/");
  }
  int rc = ini_parse_stream(reader, &L, handler, &L);
  fclose(L.f);
  free(L.dir);
  if (rc > 0 && !L.err) {
    fprintf(stderr, "kts: %s:%d: syntax error\n", file, rc);
    L.err = 1;
  } else if (rc < 0 && !L.err) {
    fprintf(stderr, "kts: %s: cannot parse\n", file);
    L.err = 1;
  }
  for (size_t i = 0; !L.err && i < rs->n; i++) check_route(&L, rs->v[i]);
  if (L.err) {
    kts_routes_free(rs);
    return -1;
  }
  return 0;
}

void kts_routes_free(kts_routes_t *rs) {
  for (size_t i = 0; i < rs->n; i++) route_free(rs->v[i]);
  free(rs->v);
  for (size_t i = 0; i < rs->cap; i++) free(rs->states[i].key);
  free(rs->states);
  memset(rs, 0, sizeof *rs);
}

/* ---- lookup ---- */

static int host_matches(const kts_route_t *r, const char *host) {
  if (!r->host) return 1;
  if (!host) return 0;
  size_t n = strlen(r->host);
  if (strncasecmp(host, r->host, n)) return 0;
  return host[n] == '\0' || host[n] == ':';
}

const kts_route_t *kts_routes_match(const kts_routes_t *rs, const char *host,
                                    const char *target) {
  size_t full = strlen(target);
  size_t plen = strcspn(target, "?");
  const kts_route_t *best = NULL;
  int best_score = -1;
  for (size_t i = 0; i < rs->n; i++) {
    const kts_route_t *r = rs->v[i];
    if (!host_matches(r, host)) continue;
    /* A route naming a query matches the whole target. */
    size_t tlen = memchr(r->path, '?', r->path_len) ? full : plen;
    int score;
    if (!r->prefix) {
      if (tlen != r->path_len || memcmp(target, r->path, tlen)) continue;
      score = 1 << 29;
    } else {
      if (tlen < r->path_len || memcmp(target, r->path, r->path_len)) continue;
      score = (int)KR_MIN(r->path_len, (size_t)(1 << 20));
    }
    if (r->host) score += 1 << 28 | 1 << 27; /* host-specific first */
    if (score > best_score) best = r, best_score = score;
  }
  return best;
}

/* ---- per-path state ---- */

kts_pathstate_t *kts_routes_state(kts_routes_t *rs, const kts_route_t *r, const char *path) {
  char *key = kr_xasprintf("%d %s", r->line, path);
  uint64_t h = kts_hash(0, key, strlen(key));
  if (rs->nstates * 2 >= rs->cap) {
    if (rs->cap >= MAX_STATES) {
      free(key);
      return &rs->overflow;
    }
    size_t ncap = rs->cap ? rs->cap * 2 : 64;
    kts_pathstate_t *nv = kr_xcalloc(ncap, sizeof *nv);
    for (size_t i = 0; i < rs->cap; i++) {
      if (!rs->states[i].key) continue;
      uint64_t hh = kts_hash(0, rs->states[i].key, strlen(rs->states[i].key));
      size_t j = hh & (ncap - 1);
      while (nv[j].key) j = (j + 1) & (ncap - 1);
      nv[j] = rs->states[i];
    }
    free(rs->states);
    rs->states = nv;
    rs->cap = ncap;
  }
  size_t j = h & (rs->cap - 1);
  while (rs->states[j].key) {
    if (!strcmp(rs->states[j].key, key)) {
      free(key);
      return &rs->states[j];
    }
    j = (j + 1) & (rs->cap - 1);
  }
  rs->states[j].key = key;
  rs->states[j].lm_sec = INT64_MIN;
  rs->nstates++;
  return &rs->states[j];
}
