/*
 * HTTP/1.1 client (see http.h): the fetches. The client's options, address
 * overrides and life are in http_client.c, the keep-alive pool in
 * http_pool.c, what they share in http_int.h. Sections, in order:
 *   fetch objects: recycled with their buffers, arena and timer;
 *   the fetch state machine, one function per step: resolve → connect →
 *     send → wait → head → body (→ drain) → done, with set_state() tracing
 *     every transition and kr__http_finish() the one finalizer of every fetch;
 *   timers: one per fetch, armed at the nearest deadline (total, connect,
 *     first byte, idle), idle checked lazily so reads never touch it;
 *   response parsing: llhttp callbacks record header offsets into the raw
 *     head buffer and stream the body through payload → inflate → content;
 *     parsing pauses at headers-complete and message-complete so the user
 *     is called back outside the parser with consistent state;
 *   completion: on_done is delivered from a uv_idle_t, never from inside
 *     another callback or a kria call (STYLE: no half-updated state).
 */
#include "http.h"

#include <arpa/inet.h>
#include <assert.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "internal.h"
#include "kria/addrpolicy.h"
#include "kria/inflate.h"
#include "log.h"
#include "turnprof.h"

/* ---- types ------------------------------------------------------------- */

static const char *const state_names[] = {
    "free", "resolve", "queued", "connect", "wait", "head", "body", "drain", "done",
};

static uint64_t mono_us(kr_http_client_t *c) { return kr_clock_mono_us(c->clock); }

static void set_state(kr_http_fetch_t *f, int st) {
  KR_LOG(KR_LOG_DEBUG, f->href, "fetch %s -> %s", state_names[f->state], state_names[st]);
  f->state = st;
}

/* ---- fetch objects ------------------------------------------------------ */

void kr__http_fetch_timer_closed(uv_handle_t *h) {
  kr_http_fetch_t *f = h->data;
  kr_http_client_t *c = f->client;
  kr_arena_free(&f->arena);
  kr_buf_free(&f->req);
  kr_buf_free(&f->head);
  free(f->hs);
  kr_inflate_free(f->inflate);
  free(f);
  c->handles--;
  kr__http_maybe_free_client(c);
}

void kr__http_list_unlink(kr_http_fetch_t **head, kr_http_fetch_t *f) {
  if (f->prev)
    f->prev->next = f->next;
  else
    *head = f->next;
  if (f->next) f->next->prev = f->prev;
  f->prev = f->next = NULL;
}

static void list_push(kr_http_fetch_t **head, kr_http_fetch_t *f) {
  f->prev = NULL;
  f->next = *head;
  if (*head) (*head)->prev = f;
  *head = f;
}

static kr_http_fetch_t *fetch_get(kr_http_client_t *c) {
  kr_http_fetch_t *f = c->free_list;
  if (f) {
    kr__http_list_unlink(&c->free_list, f);
    c->nfree--;
  } else {
    f = kr_xcalloc(1, sizeof *f);
    f->client = c;
    uv_timer_init(c->loop, &f->timer);
    f->timer.data = f;
    c->handles++;
    /* Headers of one response, plus the URL and keys, with room to spare;
     * callers may add their own allocations within the cap. */
    kr_arena_init(&f->arena, 4096, c->opts.max_header_bytes * 2 + (1u << 20));
    kr_buf_init(&f->req, 64 * 1024);
    /* A whole read may be appended before the end of the head is known. */
    kr_buf_init(&f->head, c->opts.max_header_bytes + c->env.rbuf_size + 1);
    f->inflate = kr_inflate_new(16 * 1024);
  }
  list_push(&c->inuse, f);
  return f;
}

void kr__http_fetch_recycle(kr_http_fetch_t *f) {
  kr_http_client_t *c = f->client;
  kr__http_list_unlink(&c->inuse, f);
  kr_arena_reset(&f->arena);
  kr_buf_reset(&f->req);
  /* Do not keep what one huge response grew. */
  if (f->head.cap > 64 * 1024) {
    size_t max = f->head.max;
    kr_buf_free(&f->head);
    kr_buf_init(&f->head, max);
  } else {
    kr_buf_reset(&f->head);
  }
  if (f->caphs > 256) {
    free(f->hs);
    f->hs = NULL;
    f->caphs = 0;
  }
  f->state = FS_FREE;
  if (c->closing || c->nfree >= 4096) {
    uv_close((uv_handle_t *)&f->timer, kr__http_fetch_timer_closed);
    return;
  }
  list_push(&c->free_list, f);
  c->nfree++;
}

void *kr_http_fetch_data(const kr_http_fetch_t *f) { return f->data; }
const kr_http_resp_t *kr_http_fetch_resp(const kr_http_fetch_t *f) { return &f->resp; }
kr_slice_t kr_http_fetch_request(const kr_http_fetch_t *f) {
  return kr_slice(f->req.data ? f->req.data : "", f->req.len);
}
const char *kr_http_fetch_errmsg(const kr_http_fetch_t *f) { return f->errmsg; }
kr_arena_t *kr_http_fetch_arena(kr_http_fetch_t *f) { return &f->arena; }
const char *kr_http_fetch_url(const kr_http_fetch_t *f) { return f->href; }

kr_slice_t kr_http_resp_header(const kr_http_resp_t *r, const char *name) {
  kr_slice_t want = kr_slice_cstr(name);
  for (size_t i = 0; i < r->nheaders; i++)
    if (kr_slice_case_eq(r->headers[i].name, want)) return r->headers[i].value;
  return kr_slice(NULL, 0);
}

/* ---- timers ------------------------------------------------------------- */

static uint64_t total_due(const kr_http_fetch_t *f) {
  uint32_t t = f->o.total_timeout_ms;
  return t ? f->t0_ms + t : UINT64_MAX;
}

static uint64_t phase_due(const kr_http_fetch_t *f) {
  const kr_http_opts_t *o = &f->o;
  switch (f->phase) {
  case PH_CONNECT:
    return KR_MIN(f->phase_due_ms, f->attempt_due_ms);
  case PH_FIRSTBYTE:
    return f->phase_due_ms;
  case PH_IDLE:
    return o->idle_timeout_ms ? f->last_read_ms + o->idle_timeout_ms : UINT64_MAX;
  default:
    return UINT64_MAX;
  }
}

static void timer_cb(uv_timer_t *t);

/* Arm the timer at the nearest deadline unless it is armed earlier. */
static void arm(kr_http_fetch_t *f, int force) {
  uint64_t due = KR_MIN(total_due(f), phase_due(f));
  if (due == UINT64_MAX) {
    uv_timer_stop(&f->timer);
    f->armed_ms = UINT64_MAX;
    return;
  }
  if (!force && uv_is_active((uv_handle_t *)&f->timer) && f->armed_ms <= due) return;
  uint64_t now = uv_now(f->client->loop);
  f->armed_ms = due;
  uv_timer_start(&f->timer, timer_cb, due > now ? due - now : 0, 0);
}

static void set_phase(kr_http_fetch_t *f, int phase, uint32_t ms) {
  f->phase = phase;
  f->phase_due_ms = ms ? uv_now(f->client->loop) + ms : UINT64_MAX;
  arm(f, 0);
}

static void timer_cb(uv_timer_t *t) {
  kr_http_fetch_t *f = t->data;
  const kr_http_opts_t *o = &f->o;
  uint64_t now = uv_now(f->client->loop);
  if (now >= total_due(f)) {
    if (f->state == FS_DRAIN) {
      kr__http_finish(f, 0, NULL);
      return;
    }
    kr__http_finish(f, KR_ETOTAL_TIMEOUT, "no complete response within %u ms", o->total_timeout_ms);
    return;
  }
  if (now >= phase_due(f)) {
    switch (f->phase) {
    case PH_CONNECT:
      if (now < f->phase_due_ms) {
        /* This address had its share: on to the next one, if any. */
        int moved = kr_conn_next_address(f->conn);
        f->attempt_due_ms = moved || !f->conn->tcp_up ? now + f->attempt_ms : UINT64_MAX;
        arm(f, 1);
        return;
      }
      kr__http_finish(f, KR_ECONNECT_TIMEOUT, "not connected to %s:%d within %u ms", f->host,
             f->port, o->connect_timeout_ms);
      return;
    case PH_FIRSTBYTE:
      kr__http_finish(f, KR_EFIRSTBYTE_TIMEOUT, "no response byte within %u ms",
             o->first_byte_timeout_ms);
      return;
    case PH_IDLE:
      if (f->state == FS_DRAIN) {
        kr__http_finish(f, 0, NULL); /* aborted anyway; the connection is dropped */
        return;
      }
      kr__http_finish(f, KR_EIDLE_TIMEOUT, "nothing received for %u ms after %llu bytes",
             o->idle_timeout_ms, (unsigned long long)f->resp.raw_bytes);
      return;
    default:
      break;
    }
  }
  arm(f, 1);
}

/* ---- completion --------------------------------------------------------- */

void kr__http_idle_cb(uv_idle_t *h) {
  kr_http_client_t *c = container_of(h, kr_http_client_t, idle);
  /* Only what is queued now: fetches finished by these callbacks wait for
   * the next turn, so one turn's work is bounded. */
  kr_http_fetch_t *list = c->done_head;
  c->done_head = c->done_tail = NULL;
  KR_TP_ENTER(KR_TP_DONE);
  while (list) {
    kr_http_fetch_t *f = list;
    list = f->done_next;
    f->done_next = NULL;
    f->done_called = 1;
    f->cbs->on_done(f, f->err);
  }
  KR_TP_LEAVE();
  if (!c->done_head) uv_idle_stop(&c->idle);
}

static void setup_over(kr_http_fetch_t *f);

/* The one finalizer: detach everything, then queue on_done. */
void kr__http_finish(kr_http_fetch_t *f, int err, const char *fmt, ...) {
  kr_http_client_t *c = f->client;
  assert(f->state != FS_DONE && f->state != FS_FREE);
  uv_timer_stop(&f->timer);
  if (f->dns_req) {
    kr_dns_cancel(f->dns_req);
    f->dns_req = NULL;
  }
  setup_over(f);
  if (f->conn) {
    kr_conn_t *conn = f->conn;
    f->conn = NULL;
    if (!err && f->reusable && kr_conn_is_usable(conn)) {
      conn->requests++;
      kr__http_pool_put(c, conn, f->o.pool_max_idle_per_key);
    } else {
      kr_conn_close(conn);
    }
  }
  f->err = err;
  if (err && fmt) {
    char msg[sizeof f->errmsg]; /* the arguments may point into errmsg */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(f->errmsg, msg, sizeof msg);
  } else if (err && !f->errmsg[0]) {
    snprintf(f->errmsg, sizeof f->errmsg, "%s", kr_strerror(err));
  }
  f->resp.timing.total_us = mono_us(c) - f->t0_us;
  set_state(f, FS_DONE);
  f->done_next = NULL;
  if (c->done_tail)
    c->done_tail->done_next = f;
  else
    c->done_head = f;
  c->done_tail = f;
  if (!uv_is_active((uv_handle_t *)&c->idle)) uv_idle_start(&c->idle, kr__http_idle_cb);
}

void kr_http_fetch_cancel(kr_http_fetch_t *f) {
  if (f->state == FS_DONE || f->state == FS_FREE) return;
  if (f->in_cb || f->in_parser) {
    f->cancel_req = 1; /* acted on when the callback returns */
    return;
  }
  kr__http_finish(f, KR_ECANCELED, "canceled");
}

int kr_http_fetch_queued(const kr_http_fetch_t *f) { return f->state == FS_QUEUED; }

void kr_http_fetch_release(kr_http_fetch_t *f) {
  assert(f->state == FS_DONE && f->done_called);
  kr__http_fetch_recycle(f);
}

/* ---- request ------------------------------------------------------------ */

/* Decimal digits of v into out (no NUL); returns the count. */
static size_t fmt_uint(char out[20], unsigned long v) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < sizeof tmp);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

/* 1 if s can go into a header line: no CR, LF or NUL. */
int kr__http_header_safe(const char *s) { return !strpbrk(s, "\r\n"); }

static int header_line_ok(const char *s) {
  const char *colon = strchr(s, ':');
  if (!colon || colon == s || !kr__http_header_safe(s)) return 0;
  for (const char *p = s; p < colon; p++)
    if (*p <= ' ' || *p >= 127 || strchr("()<>@,;:\\\"/[]?={}", *p)) return 0;
  return 1;
}

static int build_request(kr_http_fetch_t *f, const kr_url_t *url, const kr_http_req_t *rq) {
  kr_http_client_t *c = f->client;
  kr_buf_t *b = &f->req;
  kr_slice_t target = kr_url_request_target(url);
  kr_slice_t host = kr_url_hostname(url);
  int err = 0;
  int post = rq && rq->method == KR_HTTP_POST;
  err |= kr_buf_append_str(b, f->head_method ? "HEAD " : post ? "POST " : "GET ");
  err |= target.n ? kr_buf_append_slice(b, target) : kr_buf_append_str(b, "/");
  err |= kr_buf_append_str(b, " HTTP/1.1\r\nHost: ");
  err |= kr_buf_append_slice(b, host);
  if (kr_url_port(url) >= 0) {
    char num[21];
    num[0] = ':';
    err |= kr_buf_append(b, num, 1 + fmt_uint(num + 1, (unsigned long)kr_url_port(url)));
  }
  err |= kr_buf_append_str(b, "\r\nUser-Agent: ");
  err |= kr_buf_append_str(b, c->opts.user_agent);
  err |= kr_buf_append_str(b, "\r\nAccept: ");
  err |= kr_buf_append_str(b, c->opts.accept);
  err |= kr_buf_append_str(b, "\r\nAccept-Encoding: gzip, deflate\r\n");
  if (rq && rq->if_none_match) {
    err |= kr_buf_append_str(b, "If-None-Match: ");
    err |= kr_buf_append_str(b, rq->if_none_match);
    err |= kr_buf_append_str(b, "\r\n");
  }
  if (rq && rq->if_modified_since) {
    err |= kr_buf_append_str(b, "If-Modified-Since: ");
    err |= kr_buf_append_str(b, rq->if_modified_since);
    err |= kr_buf_append_str(b, "\r\n");
  }
  for (size_t i = 0; rq && i < rq->nheaders; i++) {
    err |= kr_buf_append_str(b, rq->headers[i]);
    err |= kr_buf_append_str(b, "\r\n");
  }
  if (post) {
    char num[24];
    if (rq->body_type) {
      err |= kr_buf_append_str(b, "Content-Type: ");
      err |= kr_buf_append_str(b, rq->body_type);
      err |= kr_buf_append_str(b, "\r\n");
    }
    err |= kr_buf_append_str(b, "Content-Length: ");
    err |= kr_buf_append(b, num, fmt_uint(num, (unsigned long)rq->body_len));
    err |= kr_buf_append_str(b, "\r\n");
  }
  err |= kr_buf_append_str(b, "\r\n");
  if (post && rq->body_len) err |= kr_buf_append(b, rq->body, rq->body_len);
  return err ? KR_EINVAL : 0;
}

/* ---- the fetch state machine ------------------------------------------- */

static void fetch_on_connect(kr_conn_t *conn, int status);
static void fetch_on_read(kr_conn_t *conn, const char *p, size_t n);
static void fetch_on_eof(kr_conn_t *conn, int status);

static const kr_conn_cbs_t fetch_conn_cbs = {
    .on_connect = fetch_on_connect,
    .on_read = fetch_on_read,
    .on_eof = fetch_on_eof,
};

static const llhttp_settings_t *parser_settings(void);
static void resolve(kr_http_fetch_t *f);

static void send_request(kr_http_fetch_t *f) {
  kr_http_client_t *c = f->client;
  kr_conn_t *conn = f->conn;
  llhttp_init(&f->parser, HTTP_RESPONSE, parser_settings());
  f->parser.data = f;
  kr_conn_peer(conn, f->resp.peer_ip, sizeof f->resp.peer_ip, &f->resp.peer_port);
  kr_conn_tls_info(conn, &f->resp.tls);
  /* once a connection: what the archive records of its certificates */
  f->resp.tls_chain = c->opts.tls_chain && f->https && !f->reused
                          ? kr_tls_peer_chain_fields(conn, &f->arena)
                          : kr_slice("", 0);
  set_state(f, FS_WAIT);
  set_phase(f, PH_FIRSTBYTE, f->o.first_byte_timeout_ms);
  int err = kr_conn_write(conn, f->req.data, f->req.len);
  if (!err) return;
  /* A pooled connection the server closed meanwhile: once more, fresh. */
  if (f->reused && !f->retried) {
    f->retried = 1;
    f->resp.retried = 1;
    f->reused = 0;
    f->resp.reused = 0;
    c->stats.retries++;
    kr_conn_close(f->conn);
    f->conn = NULL;
    resolve(f);
    return;
  }
  kr__http_finish(f, err, "sending the request: %s", conn->errmsg[0] ? conn->errmsg : kr_strerror(err));
}

static void fetch_on_connect(kr_conn_t *conn, int status) {
  kr_http_fetch_t *f = conn->data;
  if (status) {
    kr__http_finish(f, status, "%s", conn->errmsg[0] ? conn->errmsg : kr_strerror(status));
    return;
  }
  f->resp.timing.connect_us = conn->t_tcp_us - conn->t_start_us;
  if (f->https) f->resp.timing.tls_us = conn->t_ready_us - conn->t_tcp_us;
  send_request(f);
  /* the request is on its way before the next setup at the address
   * starts (a server counting connections not yet sending sees the
   * bound) */
  setup_over(f);
}

static void sockaddr_ip(const struct sockaddr_storage *a, char *ip, size_t len) {
  snprintf(ip, len, "?");
  if (a->ss_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, (socklen_t)len);
  else if (a->ss_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, (socklen_t)len);
}

/* Keep the addresses of addrs the policy allows, in order, in out (at
 * most KR_DNS_MAX_ADDRS). When none is left, finish f with
 * KR_EADDR_REFUSED naming the first address and why, and return 0. */
static int allowed_addrs(kr_http_fetch_t *f, const struct sockaddr_storage *addrs, int n,
                         struct sockaddr_storage *out) {
  kr_http_client_t *c = f->client;
  kr_addr_verdict_t first = {0};
  int kept = 0, refused = 0;
  char ip[INET6_ADDRSTRLEN], first_ip[INET6_ADDRSTRLEN] = "?";
  for (int i = 0; i < n && kept < KR_DNS_MAX_ADDRS; i++) {
    kr_addr_verdict_t v;
    if (kr_addrpolicy_check_sockaddr(c->policy, (const struct sockaddr *)&addrs[i], &v)) {
      out[kept++] = addrs[i];
      continue;
    }
    c->stats.addrs_refused++;
    sockaddr_ip(&addrs[i], ip, sizeof ip);
    KR_LOG(KR_LOG_DEBUG, f->href, "address %s of %s refused (%s)", ip, f->host,
           kr_addr_class_name(v.cls));
    if (refused++ == 0) {
      first = v;
      memcpy(first_ip, ip, sizeof ip);
    }
  }
  if (kept) return kept;
  const char *more = refused > 1 ? " (and every other address of it)" : "";
  char what[INET6_ADDRSTRLEN + 300];
  struct sockaddr_storage lit;
  if (kr__http_parse_ip(f->host, strlen(f->host), &lit))
    snprintf(what, sizeof what, "%s resolves to %s%s", f->host, first_ip, more);
  else
    snprintf(what, sizeof what, "%s", first_ip);
  char cidr[64];
  if (first.rule == KR_ADDR_BY_DENY_LIST)
    kr__http_finish(f, KR_EADDR_REFUSED, "%s, in [http] deny-addresses %s", what,
           kr_cidr_format(first.cidr, cidr, sizeof cidr));
  else
    kr__http_finish(f, KR_EADDR_REFUSED,
           "%s, a %s address; [http] allow-private-addresses (kria fetch --allow-private) or "
           "allow-addresses would permit it",
           what, kr_addr_class_name(first.cls));
  return 0;
}

static void start_connect(kr_http_fetch_t *f, const struct sockaddr_storage *addrs, int n);

static void connect_addrs(kr_http_fetch_t *f, const struct sockaddr_storage *addrs, int n) {
  kr_http_client_t *c = f->client;
  struct sockaddr_storage ok[KR_DNS_MAX_ADDRS];
  if (n > 0) {
    n = allowed_addrs(f, addrs, n, ok);
    if (n == 0) return;
    addrs = ok;
  }
  if (f->https && !c->tls) {
    kr_tls_opts_t to = {.verify = c->opts.tls_verify,
                        .ca_file = c->ca_file,
                        .session_max = c->opts.tls_sessions,
                        .session_max_bytes = (size_t)c->opts.tls_sessions * 2048,
                        .clock = c->clock};
    int err = kr_tls_ctx_new(&to, &c->tls);
    if (err) {
      kr__http_finish(f, err, "cannot set up TLS%s%s", c->ca_file ? " with CA file " : "",
             c->ca_file ? c->ca_file : "");
      return;
    }
  }
  /* One slot per setup at the first address: the one connected to
   * unless it fails or is black-holed. */
  if (n > 0 && !kr_setup_gate_enter(c->gate, &addrs[0], f->port, &f->gate)) {
    f->queued_addrs = kr_arena_alloc(&f->arena, (size_t)n * sizeof *addrs);
    if (f->queued_addrs) {
      memcpy(f->queued_addrs, addrs, (size_t)n * sizeof *addrs);
      f->queued_naddrs = n;
      f->queued_us = mono_us(c);
      set_state(f, FS_QUEUED); /* only the total timeout runs */
      if (c->opts.on_setup_wait) c->opts.on_setup_wait(c->opts.on_setup_wait_data);
      return;
    }
    kr_setup_gate_leave(c->gate, &f->gate); /* arena full: connect, unbounded */
  }
  start_connect(f, addrs, n);
}

/* f's turn at its address came: connect. */
static void start_queued(kr_http_fetch_t *f) {
  f->resp.timing.queued_us = mono_us(f->client) - f->queued_us;
  start_connect(f, f->queued_addrs, f->queued_naddrs);
}

/* f's setup is over (usable, failed or abandoned) or its wait is: the
 * slot goes to the oldest fetch waiting at that address, whose connect
 * starts now (not once the client closes: it cancels them all). */
static void setup_over(kr_http_fetch_t *f) {
  kr_http_client_t *c = f->client;
  kr_setup_waiter_t *w = kr_setup_gate_leave(c->gate, &f->gate);
  if (w && !c->closing) start_queued(container_of(w, kr_http_fetch_t, gate));
}

static void start_connect(kr_http_fetch_t *f, const struct sockaddr_storage *addrs, int n) {
  kr_http_client_t *c = f->client;
  set_state(f, FS_CONNECT);
  /* Each address gets an equal share of the connect timeout, so one
   * black-holed address (a dead IPv6 route) cannot use it all. */
  uint32_t ms = f->o.connect_timeout_ms;
  f->attempt_ms = n > 1 && ms ? KR_MAX(ms / (uint32_t)n, 1u) : 0;
  f->attempt_due_ms = f->attempt_ms ? uv_now(c->loop) + f->attempt_ms : UINT64_MAX;
  set_phase(f, PH_CONNECT, ms);
  int err = kr_conn_connect(&c->env, addrs, n, f->port, &fetch_conn_cbs, f, &f->conn);
  if (err) {
    kr__http_finish(f, err, "no address to connect to for %s", f->host);
    return;
  }
  f->conn->key = kr_xstrdup(f->key);
  if (f->https) kr_tls_push(f->conn, c->tls, f->host, f->port, f->o.tls_verify);
}

static void dns_cb(void *data, int status, const kr_dns_result_t *res) {
  kr_http_fetch_t *f = data;
  f->dns_req = NULL;
  f->resp.timing.dns_us = mono_us(f->client) - f->t0_us;
  if (status) {
    kr__http_finish(f, status, "resolving %s: %s", f->host, kr_strerror(status));
    return;
  }
  connect_addrs(f, res->addrs, res->naddrs);
}

static void resolve(kr_http_fetch_t *f) {
  kr_http_client_t *c = f->client;
  set_state(f, FS_RESOLVE);
  f->phase = PH_NONE; /* the total timeout covers DNS */
  for (size_t i = 0; i < c->nov; i++)
    if (c->ov[i].port == f->port && !strcasecmp(c->ov[i].host, f->host)) {
      connect_addrs(f, c->ov[i].addrs, c->ov[i].naddrs);
      return;
    }
  struct sockaddr_storage lit;
  if (!kr__http_parse_ip(f->host, strlen(f->host), &lit)) {
    connect_addrs(f, &lit, 1);
    return;
  }
  if (!c->dns) {
    kr__http_finish(f, KR_EDNS_FAIL, "resolving %s: no resolver configured", f->host);
    return;
  }
  int err = kr_dns_resolve(c->dns, f->host, dns_cb, f, &f->dns_req);
  if (err) {
    f->dns_req = NULL;
    kr__http_finish(f, err, "resolving %s: %s", f->host, kr_strerror(err));
  }
}

int kr_http_fetch_start(kr_http_client_t *c, const kr_url_t *url,
                        const kr_http_req_t *rq, const kr_http_cbs_t *cbs,
                        void *data, kr_http_fetch_t **out) {
  if (c->closing) return KR_ECANCELED;
  kr_slice_t scheme = kr_url_scheme(url);
  int https;
  if (kr_slice_eq(scheme, KR_SLICE_LIT("http")))
    https = 0;
  else if (kr_slice_eq(scheme, KR_SLICE_LIT("https")))
    https = 1;
  else
    return KR_ESCHEME;
  kr_slice_t host = kr_url_hostname(url);
  int port = kr_url_effective_port(url);
  if (host.n == 0 || port <= 0 || port > 65535) return KR_EURL;
  if (rq) {
    if (rq->method != KR_HTTP_GET && rq->method != KR_HTTP_HEAD && rq->method != KR_HTTP_POST)
      return KR_EINVAL;
    if (rq->method == KR_HTTP_POST &&
        ((rq->body_len && !rq->body) || (rq->body_type && !kr__http_header_safe(rq->body_type))))
      return KR_EINVAL;
    if ((rq->if_none_match && !kr__http_header_safe(rq->if_none_match)) ||
        (rq->if_modified_since && !kr__http_header_safe(rq->if_modified_since)))
      return KR_EINVAL;
    for (size_t i = 0; i < rq->nheaders; i++)
      if (!header_line_ok(rq->headers[i])) return KR_EINVAL;
  }
  KR_BUG_ON(!cbs || !cbs->on_done);

  kr_http_fetch_t *f = fetch_get(c);
  memset(&f->resp, 0, sizeof f->resp);
  f->resp.content_length = -1;
  f->resp.content_decoded = 1;
  f->done_next = NULL;
  f->done_called = 0;
  f->cbs = cbs;
  f->data = data;
  f->o = rq && rq->opts ? *rq->opts : c->opts;
  if (!f->o.max_header_bytes) f->o.max_header_bytes = c->opts.max_header_bytes;
  /* The head and arena caps follow this fetch's header limit. */
  f->head.max = f->o.max_header_bytes + c->env.rbuf_size + 1;
  f->arena.cap = f->o.max_header_bytes * 2 + (1u << 20);
  f->conn = NULL;
  f->dns_req = NULL;
  memset(&f->gate, 0, sizeof f->gate);
  f->queued_addrs = NULL;
  f->queued_naddrs = 0;
  f->phase = PH_NONE;
  f->armed_ms = UINT64_MAX;
  f->msg_start = 0;
  f->nhs = 0;
  f->hstate = 0;
  f->status = 0;
  f->reason_len = 0;
  f->got_bytes = f->headers_done = f->notified = f->msg_complete = 0;
  f->interim = f->no_body = f->keep_alive = f->reusable = f->draining = 0;
  f->reused = f->retried = f->cancel_req = f->in_parser = 0;
  f->in_cb = 0;
  f->pending = 0;
  f->err = 0;
  f->errmsg[0] = '\0';
  f->https = https;
  f->port = port;
  f->head_method = rq && rq->method == KR_HTTP_HEAD;
  const char *href = kr_url_href(url);
  f->href = kr_arena_strndup(&f->arena, href, strlen(href));
  if (host.n >= 2 && host.p[0] == '[') host = kr_slice(host.p + 1, host.n - 2);
  f->host = kr_arena_strndup(&f->arena, host.p, host.n);
  /* Pool key "scheme:host:port". */
  f->key = host.n < 256 ? kr_arena_alloc(&f->arena, 6 + host.n + 1 + 20 + 1) : NULL;
  if (f->key) {
    size_t kn = https ? 6 : 5;
    memcpy(f->key, https ? "https:" : "http:", kn);
    memcpy(f->key + kn, host.p, host.n);
    kn += host.n;
    f->key[kn++] = ':';
    kn += fmt_uint(f->key + kn, (unsigned long)port);
    f->key[kn] = '\0';
  }
  if (!f->href || !f->host || !f->key || build_request(f, url, rq)) {
    f->state = FS_DONE;
    f->done_called = 1;
    kr__http_fetch_recycle(f);
    return KR_EINVAL;
  }
  f->t0_ms = uv_now(c->loop);
  f->t0_us = mono_us(c);
  c->stats.fetches++;
  f->state = FS_RESOLVE;
  arm(f, 1);
  *out = f;

  kr_conn_t *conn = kr__http_pool_take(c, f->key);
  if (conn) {
    c->stats.conns_reused++;
    f->reused = 1;
    f->resp.reused = 1;
    f->conn = conn;
    kr_conn_set_owner(conn, &fetch_conn_cbs, f);
    send_request(f);
    return 0;
  }
  resolve(f);
  return 0;
}

/* ---- response parsing --------------------------------------------------- */

static kr_http_fetch_t *pf(llhttp_t *p) { return p->data; }

static size_t seg_offset(kr_http_fetch_t *f, const char *at) {
  return f->seg_off + (size_t)(at - f->seg_p);
}

static int on_status(llhttp_t *p, const char *at, size_t n) {
  kr_http_fetch_t *f = pf(p);
  size_t off = seg_offset(f, at);
  if (!f->reason_len) f->reason_off = (uint32_t)off;
  f->reason_len = (uint32_t)(off + n - f->reason_off);
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  kr_http_fetch_t *f = pf(p);
  size_t off = seg_offset(f, at);
  if (f->hstate != 1) {
    if (f->nhs == f->caphs) {
      f->caphs = f->caphs ? f->caphs * 2 : 32;
      f->hs = kr_xrealloc(f->hs, f->caphs * sizeof *f->hs);
    }
    hdr_off_t *h = &f->hs[f->nhs++];
    h->noff = (uint32_t)off;
    h->nlen = (uint32_t)n;
    h->voff = h->vlen = 0;
    f->hstate = 1;
  } else {
    hdr_off_t *h = &f->hs[f->nhs - 1];
    h->nlen = (uint32_t)(off + n - h->noff);
  }
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  kr_http_fetch_t *f = pf(p);
  if (!f->nhs) return 0;
  size_t off = seg_offset(f, at);
  hdr_off_t *h = &f->hs[f->nhs - 1];
  if (f->hstate != 2) {
    h->voff = (uint32_t)off;
    f->hstate = 2;
  }
  /* Pieces of one value are contiguous in the raw head (a folded line
   * keeps its CRLF and blanks, as received). */
  h->vlen = (uint32_t)(off + n - h->voff);
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  kr_http_fetch_t *f = pf(p);
  f->headers_done = 1;
  f->hstate = 0;
  f->status = p->status_code;
  f->vmaj = p->http_major;
  f->vmin = p->http_minor;
  f->pflags = p->flags;
  f->cl = p->content_length;
  if (p->upgrade || f->status == 101) {
    f->pending = KR_EPROTO;
    snprintf(f->errmsg, sizeof f->errmsg, "unexpected protocol switch (status %d)", f->status);
    return -1;
  }
  if (f->status < 200) {
    f->interim = 1; /* 1xx: no body; the final response follows */
    return 1;
  }
  /* No body for HEAD, 204 and 304 whatever Content-Length says (a 304 may
   * carry the representation's length): message complete follows now. */
  if (f->head_method || f->status == 204 || f->status == 304) {
    f->no_body = 1;
    return 1;
  }
  if ((p->flags & F_CONTENT_LENGTH) && !(p->flags & F_CHUNKED) && p->content_length == 0) {
    f->no_body = 1;
    return 0;
  }
  return HPE_PAUSED; /* call on_headers outside the parser */
}

static int content_cb(void *data, const char *p, size_t n) {
  kr_http_fetch_t *f = data;
  f->resp.content_bytes += n;
  if (f->cbs->on_content) {
    f->in_cb++;
    int r = f->cbs->on_content(f, p, n);
    f->in_cb--;
    if (r) return KR_EABORTED;
  }
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  kr_http_fetch_t *f = pf(p);
  if (f->draining) return 0;
  const kr_http_opts_t *o = &f->o;
  int over = 0;
  if (o->max_body_bytes && n > o->max_body_bytes - f->resp.payload_bytes) {
    n = (size_t)(o->max_body_bytes - f->resp.payload_bytes);
    over = 1;
  }
  f->resp.payload_bytes += n;
  if (n && f->cbs->on_payload) {
    f->in_cb++;
    int r = f->cbs->on_payload(f, at, n);
    f->in_cb--;
    if (r) {
      f->pending = P_ABORT;
      f->trunc_end = at + n;
      return HPE_USER;
    }
    if (f->cancel_req) { /* canceled from on_payload: decode nothing more */
      f->pending = KR_ECANCELED;
      return HPE_USER;
    }
  }
  int err = kr_inflate_feed(f->inflate, at, n, content_cb, f);
  /* From here on_payload has seen at..at+n: when the fetch stops in these
   * bytes they still go to on_raw (trunc_end), so a record of the raw
   * bytes holds what its payload digest covers. */
  if (err == KR_EBODY_TOO_BIG) {
    over = 1;
  } else if (err == KR_EABORTED) {
    f->pending = P_ABORT;
    f->trunc_end = at + n;
    return HPE_USER;
  } else if (err) {
    f->pending = err;
    f->trunc_end = at + n;
    if (err == KR_ERATIO)
      snprintf(f->errmsg, sizeof f->errmsg,
               "decompressed %llu bytes from %llu (limit %u:1)",
               (unsigned long long)kr_inflate_total_out(f->inflate),
               (unsigned long long)kr_inflate_total_in(f->inflate), o->max_ratio);
    else
      snprintf(f->errmsg, sizeof f->errmsg, "invalid %.*s data after %llu body bytes",
               (int)f->resp.content_encoding.n, f->resp.content_encoding.p,
               (unsigned long long)f->resp.payload_bytes);
    return HPE_USER;
  }
  if (f->cancel_req) {
    f->pending = KR_ECANCELED;
    return HPE_USER;
  }
  if (over) {
    f->trunc_end = at + n;
    f->pending = o->body_limit_is_error ? KR_EBODY_TOO_BIG : P_TRUNCATE;
    if (f->pending == KR_EBODY_TOO_BIG)
      snprintf(f->errmsg, sizeof f->errmsg, "body larger than %llu bytes",
               (unsigned long long)o->max_body_bytes);
    return HPE_USER;
  }
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  kr_http_fetch_t *f = pf(p);
  f->msg_complete = 1;
  f->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED;
}

static const llhttp_settings_t *parser_settings(void) {
  static llhttp_settings_t s;
  static int init;
  if (!init) {
    llhttp_settings_init(&s);
    s.on_status = on_status;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    init = 1;
  }
  return &s;
}

/* Build the response from the raw head: copy it into the arena, point
 * the header slices into the copy, pick out the headers kria uses, and
 * set up content decoding. */
static int build_resp(kr_http_fetch_t *f) {
  kr_http_resp_t *r = &f->resp;
  size_t len = f->head.len - f->msg_start;
  char *raw = kr_arena_alloc(&f->arena, len + 1);
  kr_http_header_t *hs = kr_arena_alloc(&f->arena, (f->nhs ? f->nhs : 1) * sizeof *hs);
  if (!raw || !hs) return KR_EHEADER_TOO_BIG;
  memcpy(raw, f->head.data + f->msg_start, len);
  raw[len] = '\0';
  r->raw_head = kr_slice(raw, len);
  r->status = f->status;
  r->version_major = f->vmaj;
  r->version_minor = f->vmin;
  r->reason = f->reason_len ? kr_slice(raw + (f->reason_off - f->msg_start), f->reason_len)
                            : kr_slice(raw, 0);
  for (size_t i = 0; i < f->nhs; i++) {
    hdr_off_t *h = &f->hs[i];
    hs[i].name = kr_slice(raw + (h->noff - f->msg_start), h->nlen);
    hs[i].value = h->vlen ? kr_slice_trim(kr_slice(raw + (h->voff - f->msg_start), h->vlen))
                          : kr_slice(raw, 0);
  }
  r->headers = hs;
  r->nheaders = f->nhs;
  static const struct {
    const char *name;
    size_t off;
  } known[] = {
      {"Content-Type", offsetof(kr_http_resp_t, content_type)},
      {"Content-Encoding", offsetof(kr_http_resp_t, content_encoding)},
      {"ETag", offsetof(kr_http_resp_t, etag)},
      {"Last-Modified", offsetof(kr_http_resp_t, last_modified)},
      {"Location", offsetof(kr_http_resp_t, location)},
  };
  for (size_t k = 0; k < ARRAY_SIZE(known); k++) {
    kr_slice_t v = kr_http_resp_header(r, known[k].name);
    *(kr_slice_t *)((char *)r + known[k].off) = v.p ? v : kr_slice(raw, 0);
  }
  r->content_length = (f->pflags & F_CONTENT_LENGTH) ? (int64_t)f->cl : -1;
  r->chunked = (f->pflags & F_CHUNKED) != 0;
  enum kr_coding coding = KR_CODING_IDENTITY;
  if (kr_inflate_coding(r->content_encoding.p, r->content_encoding.n, &coding)) {
    coding = KR_CODING_IDENTITY; /* not ours to undo: pass it through */
    r->content_decoded = 0;
  }
  kr_inflate_limits_t lim = {
      .max_out = f->o.max_body_bytes,
      .max_ratio = f->o.max_ratio,
      .ratio_after = f->o.ratio_after_bytes,
  };
  kr_inflate_start(f->inflate, coding, &lim);
  return 0;
}

/* The whole response is in: decide on reuse and finish. */
static void message_done(kr_http_fetch_t *f, size_t extra) {
  if (!f->draining && !f->resp.aborted) {
    int err = kr_inflate_finish(f->inflate);
    if (err) {
      kr__http_finish(f, KR_EDECODE, "%.*s data ended early", (int)f->resp.content_encoding.n,
             f->resp.content_encoding.p);
      return;
    }
  }
  /* Bytes after the response were never asked for: do not reuse. */
  f->reusable = f->keep_alive && extra == 0;
  kr__http_finish(f, 0, NULL);
}

/* Stop a fetch the caller aborted: the response stands, the connection
 * goes. */
static void abort_close(kr_http_fetch_t *f) {
  f->resp.aborted = 1;
  f->reusable = 0;
  kr__http_finish(f, 0, NULL);
}

static void notify_headers(kr_http_fetch_t *f) {
  f->notified = 1;
  if (build_resp(f)) {
    kr__http_finish(f, KR_EHEADER_TOO_BIG, "response header larger than %zu bytes",
           f->o.max_header_bytes);
    return;
  }
  set_state(f, FS_BODY);
  int r = KR_HTTP_CONTINUE;
  if (f->cbs->on_headers) {
    f->in_cb++;
    r = f->cbs->on_headers(f, &f->resp);
    f->in_cb--;
  }
  if (f->cancel_req) {
    kr__http_finish(f, KR_ECANCELED, "canceled");
    return;
  }
  if (r != KR_HTTP_ABORT) return;
  f->resp.aborted = 1;
  if (f->no_body) return; /* completes at once; the connection stays */
  if ((f->pflags & F_CONTENT_LENGTH) && !(f->pflags & F_CHUNKED) &&
      f->cl <= f->o.drain_max_bytes) {
    f->draining = 1;
    set_state(f, FS_DRAIN);
    return;
  }
  abort_close(f);
}

/* Count n received bytes and hand them to on_raw (not while draining);
 * nonzero when on_raw asks to abort. */
static int raw_out(kr_http_fetch_t *f, const char *p, size_t n) {
  f->resp.raw_bytes += n;
  if (!n || !f->cbs->on_raw || f->draining) return 0;
  f->in_cb++;
  int r = f->cbs->on_raw(f, p, n);
  f->in_cb--;
  return r;
}

/* Run llhttp over one read, segment by segment: a segment ends where the
 * parser pauses (headers complete, message complete) or at the end. */
static void feed(kr_http_fetch_t *f, const char *p, size_t n) {
  while (n > 0) {
    /* While in the head, the parser's callbacks record offsets into the
     * head buffer as if this segment were already appended to it; only
     * the bytes that turn out to be head are then copied there. */
    int in_head = !f->headers_done;
    f->seg_off = f->head.len;
    f->seg_p = p;
    f->pending = P_NONE;
    f->trunc_end = NULL;
    f->in_parser = 1;
    llhttp_errno_t e = llhttp_execute(&f->parser, p, n);
    f->in_parser = 0;
    size_t used = n;
    if (e == HPE_PAUSED) {
      used = (size_t)(llhttp_get_error_pos(&f->parser) - p);
      llhttp_resume(&f->parser);
    } else if (e != HPE_OK) {
      /* A head over the limit before the error is too big, however the
       * bytes were cut into reads. */
      if (in_head && f->head.len + (size_t)(llhttp_get_error_pos(&f->parser) - p) >
                         f->o.max_header_bytes) {
        kr__http_finish(f, KR_EHEADER_TOO_BIG, "response header larger than %zu bytes",
               f->o.max_header_bytes);
        return;
      }
      if (f->pending < 0 || f->pending == P_NONE) {
        /* In the body, the bytes before the error (those on_payload saw,
         * up to trunc_end when a callback or the decoder stopped) go to
         * on_raw first: a record of the raw bytes holds what its payload
         * digest covers. */
        const char *epos = llhttp_get_error_pos(&f->parser);
        unsigned long long at = f->resp.raw_bytes + (size_t)(epos - p);
        const char *stop = f->pending == P_NONE ? epos : f->trunc_end;
        if (!in_head && stop && !f->cancel_req) raw_out(f, p, (size_t)(stop - p));
        if (f->pending < 0)
          kr__http_finish(f, f->pending, "%s", f->errmsg[0] ? f->errmsg : kr_strerror(f->pending));
        else
          kr__http_finish(f, KR_EPROTO, "%s (%s) after %llu bytes", llhttp_get_error_reason(&f->parser),
                 llhttp_errno_name(e), at);
        return;
      }
      used = f->trunc_end ? (size_t)(f->trunc_end - p) : 0;
    }
    if (in_head) {
      size_t hb = f->headers_done ? used : n;
      if (f->head.len + hb > f->o.max_header_bytes || kr_buf_append(&f->head, p, hb)) {
        kr__http_finish(f, KR_EHEADER_TOO_BIG, "response header larger than %zu bytes",
               f->o.max_header_bytes);
        return;
      }
    }
    if (f->pending != P_ABORT || f->trunc_end) {
      if (raw_out(f, p, used)) f->pending = P_ABORT;
    } else {
      f->resp.raw_bytes += used;
    }
    if (f->cancel_req) {
      kr__http_finish(f, KR_ECANCELED, "canceled");
      return;
    }
    if (f->pending == P_ABORT) {
      abort_close(f);
      return;
    }
    if (f->pending == P_TRUNCATE) {
      f->resp.truncated = KR_HTTP_TRUNC_LENGTH;
      f->reusable = 0;
      kr__http_finish(f, 0, NULL);
      return;
    }
    if (f->headers_done && !f->notified && !f->interim) {
      notify_headers(f);
      if (f->state == FS_DONE) return;
    }
    if (used == 0 && !f->msg_complete && !(f->headers_done && !f->notified)) {
      /* A pause that consumed nothing and completed nothing: never loop
       * on it (hostile input must not spin the loop). */
      kr__http_finish(f, KR_EPROTO, "parser stopped without progress after %llu bytes",
             (unsigned long long)f->resp.raw_bytes);
      return;
    }
    if (f->msg_complete) {
      if (f->interim) {
        /* A 1xx is over: the final response starts here. */
        f->interim = f->headers_done = f->msg_complete = 0;
        f->nhs = 0;
        f->reason_len = 0;
        f->msg_start = f->head.len;
      } else {
        message_done(f, n - used);
        return;
      }
    }
    p += used;
    n -= used;
  }
}

static void fetch_on_read(kr_conn_t *conn, const char *p, size_t n) {
  kr_http_fetch_t *f = conn->data;
  kr_http_client_t *c = f->client;
  f->last_read_ms = uv_now(c->loop);
  if (!f->got_bytes) {
    f->got_bytes = 1;
    f->resp.timing.first_byte_us = mono_us(c) - f->t0_us;
    set_state(f, FS_HEAD);
    f->phase = PH_IDLE;
    arm(f, 0);
  }
  feed(f, p, n);
}

static void fetch_on_eof(kr_conn_t *conn, int status) {
  kr_http_fetch_t *f = conn->data;
  kr_http_client_t *c = f->client;
  const char *detail = conn->errmsg[0] ? conn->errmsg : kr_strerror(status);
  if (!f->got_bytes) {
    if (f->reused && !f->retried) {
      /* The server closed the idle connection as we reused it. */
      f->retried = 1;
      f->resp.retried = 1;
      f->reused = 0;
      f->resp.reused = 0;
      c->stats.retries++;
      kr_conn_close(f->conn);
      f->conn = NULL;
      resolve(f);
      return;
    }
    if (status)
      kr__http_finish(f, status, "%s", detail);
    else
      kr__http_finish(f, KR_EEMPTY_REPLY, "server closed the connection without a response");
    return;
  }
  if (f->draining) {
    kr__http_finish(f, 0, NULL);
    return;
  }
  if (!status && f->headers_done && !f->interim &&
      llhttp_message_needs_eof(&f->parser)) {
    /* A body delimited by the end of the connection. */
    f->seg_p = NULL;
    llhttp_finish(&f->parser);
    if (f->msg_complete) {
      f->keep_alive = 0;
      message_done(f, 0);
      return;
    }
  }
  if (status) {
    kr__http_finish(f, status, "%s after %llu bytes", detail, (unsigned long long)f->resp.raw_bytes);
  } else if (!f->headers_done || f->interim) {
    kr__http_finish(f, KR_ETRUNCATED, "connection closed in the response header after %llu bytes",
           (unsigned long long)f->resp.raw_bytes);
  } else {
    kr__http_finish(f, KR_ETRUNCATED, "connection closed after %llu of %lld body bytes",
           (unsigned long long)f->resp.payload_bytes, (long long)f->resp.content_length);
  }
}

