/*
 * kts responses: one complete request in, one response plan out, then a
 * pump that sends it as the socket drains.
 *
 * Sections: small helpers (dates, header tokens, escaping), the request
 * log line, control endpoints under /_kts/, building the plan for a route
 * (version and validators, conditionals, content coding, framing, head,
 * misbehaviour limits), and the pump. The plan is the head bytes, a body
 * pipeline (body.c), and a limit after which the server stalls, closes or
 * resets instead of sending the rest.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "kts.h"

#define HEAD_MAX (128u << 20) /* header-bytes / header-count can be huge */
#define PUMP_MAX 65536

enum end_action { END_NORMAL, END_STALL, END_DROP, END_RESET };

struct kts_resp {
  kr_buf_t head;
  kts_body_t body;
  int has_body;              /* body bytes follow the head */
  uint64_t hlen;             /* where the "body" starts for limits */
  uint64_t sent;             /* bytes handed to the socket */
  uint64_t limit;            /* stop here; KTS_INFINITE: none */
  enum end_action action;    /* at the limit, or at the end if earlier */
  int close_after;
  uint64_t trickle_ms, trickle_bytes, trickle_from;
  int waiting;               /* a write or timer is outstanding */
};

/* ---- helpers ---- */

void kts_format_http_date(int64_t sec, char out[32]) {
  time_t t = (time_t)sec;
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%a, %d %b %Y %H:%M:%S GMT", &tm))
    strcpy(out, "Thu, 01 Jan 1970 00:00:00 GMT");
}

int64_t kts_parse_http_date(const char *s) {
  static const char *const fmts[] = {
      "%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
      "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
      "%a %b %e %H:%M:%S %Y",      /* asctime */
  };
  while (*s == ' ' || *s == '\t') s++;
  for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, fmts[i], &tm);
    if (!end) continue;
    while (*end == ' ' || *end == '\t') end++;
    if (*end) continue;
    time_t t = timegm(&tm);
    if (t < 0) return -1;
    return (int64_t)t;
  }
  return -1;
}

static const char *reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

/* Does an Accept-Encoding value accept coding (q > 0, or "*")? */
static int accepts(const kr_buf_t *ae, int has, const char *coding) {
  if (!has || !ae->data) return 0;
  kr_slice_t rest = kr_slice(ae->data, ae->len), want = kr_slice_cstr(coding);
  while (rest.n) {
    const char *comma = memchr(rest.p, ',', rest.n);
    size_t tn = comma ? (size_t)(comma - rest.p) : rest.n;
    kr_slice_t tok = kr_slice(rest.p, tn);
    rest = comma ? kr_slice(comma + 1, rest.n - tn - 1) : kr_slice(rest.p + tn, 0);
    const char *semi = memchr(tok.p, ';', tok.n);
    kr_slice_t name = kr_slice_trim(kr_slice(tok.p, semi ? (size_t)(semi - tok.p) : tok.n));
    if (!kr_slice_case_eq(name, want) && !kr_slice_eq(name, KR_SLICE_LIT("*"))) continue;
    if (semi) {
      kr_slice_t params = kr_slice_trim(kr_slice(semi + 1, tok.n - (size_t)(semi + 1 - tok.p)));
      if (params.n >= 3 && (params.p[0] == 'q' || params.p[0] == 'Q') && params.p[1] == '=') {
        int nonzero = 0;
        for (size_t i = 2; i < params.n; i++)
          if (params.p[i] >= '1' && params.p[i] <= '9') nonzero = 1;
        if (!nonzero) continue;
      }
    }
    return 1;
  }
  return 0;
}

static kr_slice_t strip_weak(kr_slice_t s) {
  s = kr_slice_trim(s);
  if (s.n >= 2 && s.p[0] == 'W' && s.p[1] == '/') s = kr_slice(s.p + 2, s.n - 2);
  return s;
}

/* If-None-Match list against our ETag, weak comparison (RFC 9110 13.1.2). */
static int inm_matches(const kr_buf_t *inm, const char *etag) {
  if (!inm->data) return 0;
  kr_slice_t mine = strip_weak(kr_slice_cstr(etag));
  kr_slice_t rest = kr_slice(inm->data, inm->len);
  while (rest.n) {
    const char *comma = memchr(rest.p, ',', rest.n);
    size_t tn = comma ? (size_t)(comma - rest.p) : rest.n;
    kr_slice_t tok = strip_weak(kr_slice(rest.p, tn));
    rest = comma ? kr_slice(comma + 1, rest.n - tn - 1) : kr_slice(rest.p + tn, 0);
    if (kr_slice_eq(tok, KR_SLICE_LIT("*")) || kr_slice_eq(tok, mine)) return 1;
  }
  return 0;
}

/* Characters safe inside HTML text and attributes and in log lines. */
static void append_safe_path(kr_buf_t *b, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (isalnum(ch) || strchr("/._~%-?=+,:;@!$()*", ch)) kr_buf_append(b, p + i, 1);
    else kr_buf_printf(b, "%%%02X", ch);
  }
}

typedef struct vars {
  uint64_t version, count;
  int64_t now_ms;
  const char *path;
  size_t path_len;
  int port;
  uint64_t page;  /* site page number */
  int is_page;
} vars_t;

/* Expand {port} {path} {page} {next} in link-prefix and redirect: a
 * site of redirects (/r/{next}) makes a chain, {path} an endless one. */
static char *expand_url(const char *v, const vars_t *vars) {
  kr_buf_t b;
  kr_buf_init(&b, 1u << 16);
  for (const char *p = v; *p; p++) {
    if (!strncmp(p, "{port}", 6)) {
      kr_buf_printf(&b, "%d", vars->port);
      p += 5;
    } else if (!strncmp(p, "{path}", 6)) {
      kr_buf_append(&b, vars->path, KR_MIN(vars->path_len, (size_t)4096));
      p += 5;
    } else if (!strncmp(p, "{page}", 6) && vars->is_page) {
      kr_buf_printf(&b, "%" PRIu64, vars->page);
      p += 5;
    } else if (!strncmp(p, "{next}", 6) && vars->is_page) {
      kr_buf_printf(&b, "%" PRIu64, vars->page + 1);
      p += 5;
    } else {
      kr_buf_append(&b, p, 1);
    }
  }
  return b.data ? b.data : kr_xstrdup("");
}


/* Inline bodies: {version} {count} {clock} are fixed width so a change
 * never moves the bytes after them; {path} {port} as they are. */
static void expand_body(kr_buf_t *out, const kr_buf_t *in, const vars_t *v) {
  const char *p = in->data ? in->data : "", *end = p + in->len;
  while (p < end) {
    const char *brace = memchr(p, '{', (size_t)(end - p));
    if (!brace) brace = end;
    kr_buf_append(out, p, (size_t)(brace - p));
    p = brace;
    if (p == end) break;
    size_t left = (size_t)(end - p);
#define TOK(s) (left >= sizeof(s) - 1 && !memcmp(p, s, sizeof(s) - 1) && (p += sizeof(s) - 1))
    if (TOK("{version}")) kr_buf_printf(out, "%010" PRIu64, v->version);
    else if (TOK("{count}")) kr_buf_printf(out, "%010" PRIu64, v->count);
    else if (TOK("{clock}")) kr_buf_printf(out, "%020" PRId64, v->now_ms);
    else if (TOK("{path}")) append_safe_path(out, v->path, v->path_len);
    else if (TOK("{port}")) kr_buf_printf(out, "%d", v->port);
    else kr_buf_append(out, p++, 1);
#undef TOK
  }
}

/* ---- request log ---- */

void kts_log_request(kts_conn_t *c) {
  FILE *f = c->srv->log;
  if (!f) return;
  static const char *const names[KTS_H_N] = {
      [KTS_H_HOST] = "Host", [KTS_H_UA] = "User-Agent", [KTS_H_AE] = "Accept-Encoding",
      [KTS_H_INM] = "If-None-Match", [KTS_H_IMS] = "If-Modified-Since",
      [KTS_H_CONN] = "Connection"};
  kts_req_t *q = &c->req;
  kr_buf_t line;
  kr_buf_init(&line, 1u << 16);
  if (c->srv->log_times) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    kr_buf_printf(&line, "t=%" PRId64 " ", (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  }
  kr_buf_printf(&line, "c=%" PRIu64 " r=%" PRIu64 " %s ", c->id, c->nreq, q->method);
  append_safe_path(&line, q->target.data ? q->target.data : "", KR_MIN(q->target.len, 2000));
  kr_buf_printf(&line, " HTTP/%d.%d", q->http_major, q->http_minor);
  static const int order[] = {KTS_H_HOST, KTS_H_UA, KTS_H_AE, KTS_H_INM, KTS_H_IMS,
                              KTS_H_CONN};
  for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
    int h = order[i];
    if (!q->has_h[h]) continue;
    kr_buf_printf(&line, " | %s: ", names[h]);
    for (size_t j = 0; j < q->h[h].len && j < 300; j++) {
      char ch = q->h[h].data[j];
      if ((unsigned char)ch < 0x20 || ch == 0x7f || ch == '|') ch = '?';
      kr_buf_append(&line, &ch, 1);
    }
  }
  kr_buf_append_str(&line, "\n");
  fwrite(line.data, 1, line.len, f);
  fflush(f);
  kr_buf_free(&line);
}

/* ---- plan ---- */

static kts_resp_t *resp_new(void) {
  kts_resp_t *r = kr_xcalloc(1, sizeof *r);
  kr_buf_init(&r->head, HEAD_MAX);
  kts_gen_init(&r->body.gen);
  kr_buf_init(&r->body.mat, 0);
  kr_buf_init(&r->body.frame, 0);
  r->limit = KTS_INFINITE;
  return r;
}

void kts_resp_free(kts_resp_t *r) {
  if (!r) return;
  kr_buf_free(&r->head);
  kts_body_free(&r->body);
  free(r);
}

static void start(kts_conn_t *c, kts_resp_t *r, uint64_t delay_ms) {
  c->resp = r;
  c->state = KTS_C_RESPONDING;
  if (delay_ms) {
    r->waiting = 1;
    kts_conn_delay(c, delay_ms);
    return;
  }
  kts_resp_pump(c);
}

static void simple(kts_conn_t *c, int status, const char *ctype, const char *body,
                   int close_after) {
  kts_resp_t *r = resp_new();
  char date[32];
  kts_format_http_date(kts_now_ms(c->srv) / 1000, date);
  size_t blen = strlen(body);
  kr_buf_printf(&r->head,
                "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: kts\r\nContent-Type: %s\r\n"
                "Content-Length: %zu\r\nCache-Control: no-store\r\n%s\r\n",
                status, reason(status), date, ctype, blen,
                close_after ? "Connection: close\r\n" : "");
  if (strcmp(c->req.method, "HEAD")) kr_buf_append(&r->head, body, blen);
  r->hlen = r->head.len;
  r->close_after = close_after;
  start(c, r, 0);
}

void kts_respond_error(kts_conn_t *c, int status) {
  if (!c->req.method[0]) strcpy(c->req.method, "-");
  simple(c, status, "text/plain", reason(status), 1);
}

static int want_close(const kts_conn_t *c) {
  const kts_server_t *s = c->srv;
  return !c->req.keep_alive || s->stopping ||
         (s->keepalive_requests && c->nreq >= s->keepalive_requests);
}

static uint64_t query_ms(const char *target) {
  const char *q = strstr(target, "ms=");
  return q ? strtoull(q + 3, NULL, 10) : 0;
}

static int control(kts_conn_t *c, const char *target) {
  kts_server_t *s = c->srv;
  char out[256];
  if (!strncmp(target, "/_kts/advance", 13)) {
    s->offset_ms += (int64_t)query_ms(target);
  } else if (!strncmp(target, "/_kts/set", 9)) {
    s->offset_ms += (int64_t)query_ms(target) - kts_now_ms(s);
  } else if (!strncmp(target, "/_kts/stats", 11)) {
    snprintf(out, sizeof out,
             "requests %" PRIu64 "\nconnections %" PRIu64 "\nopen %zu\nfresh-max %zu\n",
             s->requests, s->next_conn_id, s->nconns, s->fresh_max);
    simple(c, 200, "text/plain", out, want_close(c));
    return 1;
  } else if (!strncmp(target, "/_kts/paths", 11)) {
    /* ground truth for change tests: every path's count and version */
    kr_buf_t b;
    kr_buf_init(&b, 64u << 20);
    for (size_t i = 0; i < s->routes.cap; i++) {
      const kts_pathstate_t *st = &s->routes.states[i];
      if (!st->key) continue;
      const char *sp = strchr(st->key, ' ');
      kr_buf_printf(&b, "%s count=%" PRIu64 " version=%" PRIu64 "\n", sp ? sp + 1 : st->key,
                    st->count, st->last_version);
    }
    simple(c, 200, "text/plain", b.data ? b.data : "", want_close(c));
    kr_buf_free(&b);
    return 1;
  } else if (strncmp(target, "/_kts/time", 10)) {
    return 0;
  }
  snprintf(out, sizeof out, "%" PRId64 "\n", kts_now_ms(s));
  simple(c, 200, "text/plain", out, want_close(c));
  return 1;
}

/* Request path from an origin-form or absolute-form target. */
static const char *target_path(const char *t) {
  if (!strncasecmp(t, "http://", 7) || !strncasecmp(t, "https://", 8)) {
    const char *p = strchr(t + 8 - (t[4] == ':' ? 1 : 0), '/');
    return p ? p : "/";
  }
  return t;
}

static void garbage(kr_buf_t *b, const kts_route_t *rt, uint64_t count) {
  uint64_t st = rt->seed ^ (count * 0x9e3779b97f4a7c15ull) ^ 0x5eed;
  for (size_t i = 0; i < rt->garbage_bytes; i++) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    char ch = (char)(st >> 56);
    kr_buf_append(b, &ch, 1);
  }
  if (b->len) b->data[0] = (char)0xff; /* never "HTTP/" */
}

static void generated_head(kr_buf_t *b, const vars_t *v, int with_clock) {
  kr_buf_append_str(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kts ");
  append_safe_path(b, v->path, v->path_len);
  kr_buf_append_str(b, "</title></head>\n<body>\n<h1>");
  append_safe_path(b, v->path, v->path_len);
  kr_buf_printf(b, "</h1>\n<p class=\"version\">version %010" PRIu64 "</p>\n", v->version);
  if (with_clock)
    kr_buf_printf(b,
                  "<div class=\"clock\">clock %020" PRId64 " request %010" PRIu64 "</div>\n",
                  v->now_ms, v->count);
}

static const char generated_tail[] = "\n</body></html>\n";

void kts_respond(kts_conn_t *c) {
  kts_server_t *s = c->srv;
  kts_req_t *q = &c->req;
  s->requests++;
  kts_log_request(c);
  const char *target = target_path(q->target.data ? q->target.data : "/");
  size_t path_len = strcspn(target, "?");
  int head_only = !strcmp(q->method, "HEAD");
  int is_get = head_only || !strcmp(q->method, "GET");

  if (!strncmp(target, "/_kts/", 6) && control(c, target)) return;

  const kts_route_t *rt = kts_routes_match(&s->routes, q->has_h[KTS_H_HOST] ? q->h[KTS_H_HOST].data : NULL, target);
  uint64_t page = 0;
  if (rt && rt->pages) {
    /* site page: decimal index below pages, nothing else */
    const char *p = target + rt->path_len, *pe = target + path_len;
    int ok = p < pe && (size_t)(pe - p) <= 19 && !(p[0] == '0' && pe - p > 1);
    for (const char *x = p; ok && x < pe; x++) ok = isdigit((unsigned char)*x);
    if (ok) page = strtoull(p, NULL, 10);
    if (!ok || page >= rt->pages) rt = NULL;
  }
  if (!rt) {
    simple(c, 404, "text/plain", "not found\n", want_close(c));
    return;
  }

  kts_resp_t *r = resp_new();
  char *path = kr_xstrndup(target, path_len);
  kts_pathstate_t *st = kts_routes_state(&s->routes, rt, path);
  st->count++;
  int64_t now_ms = kts_now_ms(s);
  int64_t now_sec = now_ms >= 0 ? now_ms / 1000 : (now_ms - 999) / 1000;

  /* version and validators */
  uint64_t v_req = rt->change_every ? (st->count - 1) / rt->change_every : 0;
  uint64_t v_ms = rt->change_every_ms && now_ms > 0 ? (uint64_t)now_ms / rt->change_every_ms : 0;
  int64_t lm = s->start_sec;
  if (rt->change_every) {
    if (st->lm_sec == INT64_MIN) {
      st->lm_sec = s->start_sec;
      st->version = v_req;
    } else if (v_req > st->version) {
      st->lm_sec = KR_MAX(now_sec, st->lm_sec + 1);
      st->version = v_req;
    }
    lm = st->lm_sec;
  }
  if (rt->change_every_ms) lm = KR_MAX(lm, (int64_t)(v_ms * rt->change_every_ms / 1000));
  if (rt->lm_set) lm = rt->last_modified;
  int has_lm = rt->lm_set || rt->lm_auto;
  vars_t vars = {.version = v_req + v_ms, .count = st->count, .now_ms = now_ms,
                 .path = path, .path_len = path_len, .port = s->port,
                 .page = page, .is_page = rt->pages != 0};
  st->last_version = vars.version;
  char etag[64] = "";
  const char *etag_v = rt->etag;
  if (rt->etag_auto) {
    uint64_t h = kts_hash(0, path, path_len);
    h = kts_hash(h, &vars.version, sizeof vars.version);
    h = kts_hash(h, &rt->seed, sizeof rt->seed);
    snprintf(etag, sizeof etag, "\"%016" PRIx64 "\"", h);
    etag_v = etag;
  }

  int status = rt->status ? rt->status : rt->redirect ? 302 : 200;
  if (is_get && status == 200 && !rt->ignore_conditionals && !rt->has_raw && !rt->garbage) {
    if (q->has_h[KTS_H_INM]) {
      if (etag_v && inm_matches(&q->h[KTS_H_INM], etag_v)) status = 304;
    } else if (q->has_h[KTS_H_IMS] && has_lm) {
      int64_t ims = kts_parse_http_date(q->h[KTS_H_IMS].data);
      if (ims >= 0 && lm <= ims) status = 304;
    }
  }

  if (rt->has_raw || rt->garbage) {
    /* the whole response is these bytes; limits count from byte 0 */
    if (rt->has_raw) kr_buf_append(&r->head, rt->raw.data, rt->raw.len);
    else garbage(&r->head, rt, st->count);
    r->hlen = 0;
    r->close_after = 1;
  } else {
    int no_body = status == 304 || status == 204 || status < 200;
    kts_gen_t *g = &r->body.gen;
    int generated = !rt->has_body && !rt->has_file &&
                    (rt->body_size || rt->links || rt->pages || rt->change_every ||
                     rt->change_every_ms || rt->is_volatile);
    if (rt->has_body) expand_body(&g->pre, &rt->body, &vars);
    if (rt->has_file) g->file = rt->file_data, g->file_len = rt->file_len;
    if (generated) {
      generated_head(&g->pre, &vars, rt->is_volatile);
      g->suffix = generated_tail;
      g->suffix_len = sizeof generated_tail - 1;
    }
    if (rt->links) {
      g->nlinks = rt->links;
      g->link_prefix = expand_url(rt->link_prefix ? rt->link_prefix
                                  : rt->pages     ? rt->path
                                                  : "/p/",
                                  &vars);
      if (rt->pages) {
        g->link_base = page * rt->links + 1;
        g->link_mod = rt->pages;
      }
    }
    g->fill = rt->fill;
    g->seed = rt->seed;
    kts_gen_finish(g, generated ? rt->body_size : 0);

    enum kts_coding coding = KTS_CODING_IDENTITY;
    int http10 = q->http_major == 1 && q->http_minor == 0;
    const kr_buf_t *ae = &q->h[KTS_H_AE];
    int has_ae = q->has_h[KTS_H_AE];
    if (rt->bad_gzip) coding = KTS_CODING_GZIP;
    else if (rt->gzip == KTS_WHEN_FORCE || (rt->gzip && accepts(ae, has_ae, "gzip")))
      coding = KTS_CODING_GZIP;
    else if (rt->deflate == KTS_WHEN_FORCE || (rt->deflate && accepts(ae, has_ae, "deflate")))
      coding = rt->deflate_raw ? KTS_CODING_RAW : KTS_CODING_DEFLATE;
    enum kts_framing framing = rt->no_length                   ? KTS_FRAME_CLOSE
                               : (rt->chunked || rt->bad_chunk) ? KTS_FRAME_CHUNKED
                                                                : KTS_FRAME_LENGTH;
    if (http10 && framing == KTS_FRAME_CHUNKED) framing = KTS_FRAME_CLOSE;
    uint64_t length = KTS_INFINITE;
    if (!no_body) {
      length = kts_body_start(&r->body, coding, rt->bad_gzip, rt->gzip_level, &framing,
                              rt->chunk_size, rt->bad_chunk);
      if (http10 && framing == KTS_FRAME_CHUNKED) framing = r->body.framing = KTS_FRAME_CLOSE;
      r->has_body = !head_only;
    }

    char date[32];
    kts_format_http_date(now_sec, date);
    if (rt->status_line) kr_buf_printf(&r->head, "%s\r\n", rt->status_line);
    else kr_buf_printf(&r->head, "HTTP/1.1 %d %s\r\n", status, reason(status));
    kr_buf_printf(&r->head, "Date: %s\r\nServer: kts\r\n", date);
    if (!no_body && !rt->has_ctype) kr_buf_append_str(&r->head, "Content-Type: text/html; charset=utf-8\r\n");
    if (!no_body) {
      if (rt->cl_lie != KTS_INFINITE)
        kr_buf_printf(&r->head, "Content-Length: %" PRIu64 "\r\n", rt->cl_lie);
      else if (framing == KTS_FRAME_LENGTH)
        kr_buf_printf(&r->head, "Content-Length: %" PRIu64 "\r\n", length);
      else if (framing == KTS_FRAME_CHUNKED)
        kr_buf_append_str(&r->head, "Transfer-Encoding: chunked\r\n");
      if (coding == KTS_CODING_GZIP) kr_buf_append_str(&r->head, "Content-Encoding: gzip\r\n");
      else if (coding != KTS_CODING_IDENTITY) kr_buf_append_str(&r->head, "Content-Encoding: deflate\r\n");
    }
    if (rt->gzip || rt->deflate) kr_buf_append_str(&r->head, "Vary: Accept-Encoding\r\n");
    if (etag_v) kr_buf_printf(&r->head, "ETag: %s\r\n", etag_v);
    if (has_lm) {
      char lmd[32];
      kts_format_http_date(lm, lmd);
      kr_buf_printf(&r->head, "Last-Modified: %s\r\n", lmd);
    }
    if (rt->redirect) {
      char *loc = expand_url(rt->redirect, &vars);
      kr_buf_printf(&r->head, "Location: %s\r\n", loc);
      free(loc);
    }
    r->close_after = want_close(c) || !rt->keep_alive || rt->cl_lie != KTS_INFINITE ||
                     rt->bad_chunk || (!no_body && framing == KTS_FRAME_CLOSE);
    if (r->close_after) kr_buf_append_str(&r->head, "Connection: close\r\n");
    else if (http10) kr_buf_append_str(&r->head, "Connection: keep-alive\r\n");
    if (rt->headers.len) kr_buf_append(&r->head, rt->headers.data, rt->headers.len);
    for (size_t i = 0; i < rt->header_count; i++)
      if (kr_buf_printf(&r->head, "X-Kts-H%zu: %zu\r\n", i, i)) break;
    if (rt->header_bytes && !kr_buf_reserve(&r->head, rt->header_bytes + 32)) {
      kr_buf_append_str(&r->head, "X-Kts-Filler: ");
      memset(r->head.data + r->head.len, 'a', rt->header_bytes);
      r->head.len += rt->header_bytes;
      r->head.data[r->head.len] = '\0';
      kr_buf_append_str(&r->head, "\r\n");
    }
    kr_buf_append_str(&r->head, "\r\n");
    r->hlen = r->head.len;
  }

  /* misbehaviour: where to stop and what to do there */
  switch (rt->stall) {
    case KTS_STALL_NONE: break;
    case KTS_STALL_RESPONSE: r->limit = 0; break;
    case KTS_STALL_HEADERS: r->limit = r->hlen; break;
    case KTS_STALL_BODY: {
      uint64_t total = r->body.materialized ? r->body.mat.len : r->body.gen.total;
      uint64_t after = rt->stall_after_set ? rt->stall_after
                       : total != KTS_INFINITE ? total / 2
                                               : 1024;
      r->limit = r->hlen + after;
      break;
    }
  }
  if (rt->stall) r->action = END_STALL;
  else if (rt->drop_after != KTS_INFINITE) r->action = END_DROP, r->limit = r->hlen + rt->drop_after;
  else if (rt->reset_after != KTS_INFINITE) r->action = END_RESET, r->limit = r->hlen + rt->reset_after;
  else if (rt->drop_at != KTS_INFINITE) r->action = END_DROP, r->limit = rt->drop_at;
  else if (rt->reset_at != KTS_INFINITE) r->action = END_RESET, r->limit = rt->reset_at;
  if (rt->trickle_ms) {
    r->trickle_ms = rt->trickle_ms;
    r->trickle_bytes = rt->trickle_bytes;
    r->trickle_from = rt->trickle_headers ? 0 : r->hlen;
  }
  free(path);
  start(c, r, rt->delay_ms);
}

/* ---- pump ---- */

static void finish(kts_conn_t *c, kts_resp_t *r) {
  enum end_action a = r->action;
  int close_after = r->close_after;
  c->resp = NULL;
  kts_resp_free(r);
  switch (a) {
    case END_STALL: kts_conn_stall(c); break;
    case END_DROP: kts_conn_linger(c); break;
    case END_RESET: kts_conn_close(c, 1); break;
    case END_NORMAL: kts_conn_response_done(c, close_after); break;
  }
}

/* Called when the previous write finished (or a timer fired): write the
 * next piece, or finish. Never more than one write outstanding. */
void kts_resp_pump(kts_conn_t *c) {
  kts_resp_t *r = c->resp;
  if (!r || c->state != KTS_C_RESPONDING) return;
  r->waiting = 0;
  if (r->sent >= r->limit) {
    finish(c, r);
    return;
  }
  size_t max = PUMP_MAX;
  int trickling = r->trickle_ms && r->sent >= r->trickle_from;
  if (trickling) max = (size_t)r->trickle_bytes;
  else if (r->trickle_ms) max = (size_t)KR_MIN((uint64_t)max, r->trickle_from - r->sent);
  if (r->limit != KTS_INFINITE) max = (size_t)KR_MIN((uint64_t)max, r->limit - r->sent);
  char *buf = kr_xmalloc(max ? max : 1);
  size_t n = 0;
  if (r->sent < r->head.len) {
    n = (size_t)KR_MIN((uint64_t)max, r->head.len - r->sent);
    memcpy(buf, r->head.data + r->sent, n);
  }
  if (n < max && r->has_body) n += kts_body_read(&r->body, buf + n, max - n);
  if (n == 0) {
    free(buf);
    finish(c, r);
    return;
  }
  r->sent += n;
  r->waiting = 1;
  kts_conn_write(c, buf, n, 1);
}

/* The write of the last piece is done: go on, after a pause if it
 * carried trickled bytes. */
void kts_resp_written(kts_conn_t *c) {
  kts_resp_t *r = c->resp;
  if (!r) return;
  if (r->trickle_ms && r->sent > r->trickle_from && r->sent < r->limit)
    kts_conn_delay(c, r->trickle_ms);
  else
    kts_resp_pump(c);
}
