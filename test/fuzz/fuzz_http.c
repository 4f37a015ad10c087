/*
 * libFuzzer harness for the HTTP response path: llhttp callbacks, the
 * raw head buffer, chunked framing, content decoding and every limit, as
 * the real client (src/net/http.c, src/net/conn.c) runs them. There is no buffer
 * seam in the client, so the harness is the server: one libuv loop,
 * reused across inputs, holds a listener on 127.0.0.1 and a few clients
 * (one per option set, keep-alive pool off so inputs stay independent).
 * Each input is fetched twice: the server reads the request, writes the
 * input back as the response and ends the connection; once in one
 * write, once cut into pieces. The server writes one piece per loop
 * turn from a uv_idle_t and the client reads in the poll phase of the
 * same turn, so each piece is one read: the cuts are deterministic.
 *
 * Byte 0: option set (bits 0-1: defaults; tiny limits that truncate;
 * tiny limits that fail with a ratio cap of 2; 4 KiB limits), HEAD (bit
 * 2), abort from on_headers (bit 3), abort from on_content (bit 4) (both:
 * cancel from on_payload instead), end with RST instead of FIN (bit 5),
 * pieces (bits 6-7: 2, 5, 16, one byte each up to 256). The rest is the
 * response.
 *
 * Invariants, beyond ASan/UBSan and LeakSanitizer:
 *  - on_done exactly once and nothing after it; on_headers at most once;
 *    never a timeout (the server always ends the connection);
 *  - on_raw delivers exactly the input bytes, in order, and every payload
 *    byte among them (also when an error or an abort stopped the fetch
 *    in those bytes); at on_headers the
 *    raw head is the input just before that point, within
 *    max_header_bytes, and every header slice lies inside it;
 *  - payload and content never exceed max_body_bytes; resp counters equal
 *    what the callbacks received; identity content equals the payload;
 *    decoded content stays under the ratio cap; a complete, untruncated
 *    Content-Length body has exactly that length; truncation stops at
 *    max_body_bytes;
 *  - results do not depend on how the response was cut: both fetches
 *    give the same error (unless one hit the ratio cap, which is measured
 *    on the input so far), and for a response that ended without error the
 *    same status, head, payload, content, raw byte count and flags (the
 *    payload and raw count of decoded content truncated at the cap may end
 *    with different reads, see hf_same).
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "clock.h"
#include "fuzz.h"
#include "http.h"
#include "kria/error.h"
#include "kria/inflate.h"
#include "kria/url.h"

#define HF_MAX_PIECES 256
#define HF_MAX_TURNS 100000

typedef struct hf_result {
  int err, status, nheaders, truncated, aborted, chunked, content_decoded, headers_calls;
  int decoded; /* content went through gzip/deflate */
  int64_t content_length;
  uint64_t raw_seen, raw_bytes, payload, content, payload_hash, content_hash, head_hash;
} hf_result_t;

typedef struct hf_run {
  const uint8_t *in;
  size_t n;
  size_t pieces;
  int rst, head, abort_headers, abort_content, cancel_payload;
  const kr_http_opts_t *opts;
  int done, payload_seen_any;
  enum kr_coding coding;
  hf_result_t r;
} hf_run_t;

typedef struct hf_sconn {
  uv_tcp_t tcp;
  uv_shutdown_t sh;
  uv_write_t w[HF_MAX_PIECES];
  char req[8192];
  size_t reqn;
  size_t next, written;
  int responding, ended;
} hf_sconn_t;

static struct {
  int ready;
  uv_loop_t loop;
  kr_clock_t clock;
  uv_tcp_t listener;
  uv_idle_t idle;
  int port;
  kr_http_client_t *clients[4];
  kr_http_opts_t opts[4];
  kr_url_t *url;
  hf_run_t *run;
  hf_sconn_t *sc;
  int live;      /* server connections not yet closed */
  int accepted;  /* server connections of this fetch */
} hf;

static uint64_t hf_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

/* ---- the server ---------------------------------------------------------- */

static void hf_sconn_closed(uv_handle_t *h) {
  hf_sconn_t *sc = h->data;
  if (hf.sc == sc) hf.sc = NULL;
  hf.live--;
  free(sc);
}

static void hf_sconn_close(hf_sconn_t *sc) {
  if (hf.sc == sc) uv_idle_stop(&hf.idle);
  if (!uv_is_closing((uv_handle_t *)&sc->tcp)) uv_close((uv_handle_t *)&sc->tcp, hf_sconn_closed);
}

static void hf_write_cb(uv_write_t *w, int status) {
  if (status < 0) hf_sconn_close(w->data);
}

static void hf_shutdown_cb(uv_shutdown_t *s, int status) {
  if (status < 0) hf_sconn_close(s->data);
}

/* One step per loop turn: the next piece, then the end of the stream. */
static void hf_idle_cb(uv_idle_t *h) {
  hf_sconn_t *sc = hf.sc;
  hf_run_t *run = hf.run;
  if (!sc || !run || sc->ended || uv_is_closing((uv_handle_t *)&sc->tcp)) {
    uv_idle_stop(h);
    return;
  }
  size_t pieces = run->pieces < run->n ? run->pieces : run->n;
  if (sc->next < pieces) {
    size_t from = run->n * sc->next / pieces, to = run->n * (sc->next + 1) / pieces;
    uv_buf_t b = uv_buf_init((char *)(uintptr_t)(run->in + from), (unsigned)(to - from));
    uv_write_t *w = &sc->w[sc->next++];
    w->data = sc;
    if (uv_write(w, (uv_stream_t *)&sc->tcp, &b, 1, hf_write_cb) < 0) hf_sconn_close(sc);
    return;
  }
  sc->ended = 1;
  uv_idle_stop(h);
  if (run->rst) {
    uv_tcp_close_reset(&sc->tcp, hf_sconn_closed);
  } else {
    sc->sh.data = sc;
    if (uv_shutdown(&sc->sh, (uv_stream_t *)&sc->tcp, hf_shutdown_cb) < 0) hf_sconn_close(sc);
  }
}

static void hf_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  static char buf[65536];
  *b = uv_buf_init(buf, sizeof buf);
}

static void hf_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
  hf_sconn_t *sc = s->data;
  if (nread < 0) { /* the client is gone (EOF or reset) */
    hf_sconn_close(sc);
    return;
  }
  size_t k = (size_t)nread < sizeof sc->req - sc->reqn ? (size_t)nread : sizeof sc->req - sc->reqn;
  memcpy(sc->req + sc->reqn, b->base, k);
  sc->reqn += k;
  if (!sc->responding && memmem(sc->req, sc->reqn, "\r\n\r\n", 4)) {
    sc->responding = 1;
    uv_idle_start(&hf.idle, hf_idle_cb);
  }
}

static void hf_on_connection(uv_stream_t *l, int status) {
  FUZZ_CHECK(status == 0);
  hf_sconn_t *sc = calloc(1, sizeof *sc);
  uv_tcp_init(&hf.loop, &sc->tcp);
  sc->tcp.data = sc;
  FUZZ_CHECK(uv_accept(l, (uv_stream_t *)&sc->tcp) == 0);
  hf.live++;
  hf.accepted++;
  /* One connection per fetch: no pool, no retry of a fresh connection. */
  FUZZ_CHECK(hf.accepted == 1 && hf.sc == NULL);
  hf.sc = sc;
  uv_read_start((uv_stream_t *)&sc->tcp, hf_alloc_cb, hf_read_cb);
}

/* ---- the client callbacks ------------------------------------------------ */

static int hf_inside(kr_slice_t s, kr_slice_t in) {
  return s.n == 0 || (s.p >= in.p && s.p + s.n <= in.p + in.n);
}

static int hf_on_headers(kr_http_fetch_t *f, const kr_http_resp_t *resp) {
  hf_run_t *run = kr_http_fetch_data(f);
  FUZZ_CHECK(!run->done);
  run->r.headers_calls++;
  FUZZ_CHECK(run->r.headers_calls == 1);
  FUZZ_CHECK(resp->status >= 200 && resp->status <= 999);
  kr_slice_t raw = resp->raw_head;
  FUZZ_CHECK(raw.n <= run->opts->max_header_bytes);
  FUZZ_CHECK(raw.n <= run->r.raw_seen);
  FUZZ_CHECK(memcmp(raw.p, run->in + run->r.raw_seen - raw.n, raw.n) == 0);
  uint64_t h = hf_hash(0xcbf29ce484222325ull, raw.p, raw.n);
  for (size_t i = 0; i < resp->nheaders; i++) {
    FUZZ_CHECK(hf_inside(resp->headers[i].name, raw) && hf_inside(resp->headers[i].value, raw));
    h = hf_hash(h, resp->headers[i].name.p, resp->headers[i].name.n);
    h = hf_hash(h, resp->headers[i].value.p, resp->headers[i].value.n);
  }
  FUZZ_CHECK(hf_inside(resp->content_type, raw) && hf_inside(resp->content_encoding, raw) &&
             hf_inside(resp->etag, raw) && hf_inside(resp->last_modified, raw) &&
             hf_inside(resp->location, raw) && hf_inside(resp->reason, raw));
  run->r.head_hash = h;
  /* A coding kria does not decode passes through as it is. */
  enum kr_coding cd;
  int known = kr_inflate_coding(resp->content_encoding.p, resp->content_encoding.n, &cd) == 0;
  FUZZ_CHECK(resp->content_decoded == known);
  run->coding = known ? cd : KR_CODING_IDENTITY;
  return run->abort_headers ? KR_HTTP_ABORT : KR_HTTP_CONTINUE;
}

static int hf_on_raw(kr_http_fetch_t *f, const char *p, size_t n) {
  hf_run_t *run = kr_http_fetch_data(f);
  FUZZ_CHECK(!run->done && n > 0);
  FUZZ_CHECK(run->r.raw_seen + n <= run->n);
  FUZZ_CHECK(memcmp(p, run->in + run->r.raw_seen, n) == 0);
  run->r.raw_seen += n;
  return 0;
}

static int hf_on_payload(kr_http_fetch_t *f, const char *p, size_t n) {
  hf_run_t *run = kr_http_fetch_data(f);
  FUZZ_CHECK(!run->done && run->r.headers_calls == 1 && n > 0);
  run->r.payload += n;
  FUZZ_CHECK(run->r.payload <= run->opts->max_body_bytes);
  run->r.payload_hash = hf_hash(run->r.payload_hash, p, n);
  if (run->cancel_payload) kr_http_fetch_cancel(f);
  return 0;
}

static int hf_on_content(kr_http_fetch_t *f, const char *p, size_t n) {
  hf_run_t *run = kr_http_fetch_data(f);
  FUZZ_CHECK(!run->done && run->r.headers_calls == 1 && n > 0);
  run->r.content += n;
  FUZZ_CHECK(run->r.content <= run->opts->max_body_bytes);
  run->r.content_hash = hf_hash(run->r.content_hash, p, n);
  return run->abort_content;
}

static void hf_on_done(kr_http_fetch_t *f, int err) {
  hf_run_t *run = kr_http_fetch_data(f);
  FUZZ_CHECK(!run->done);
  run->done = 1;
  const kr_http_resp_t *resp = kr_http_fetch_resp(f);
  const kr_http_opts_t *o = run->opts;
  hf_result_t *r = &run->r;
  r->err = err;
  FUZZ_CHECK(err != KR_ECONNECT_TIMEOUT && err != KR_EFIRSTBYTE_TIMEOUT &&
             err != KR_EIDLE_TIMEOUT && err != KR_ETOTAL_TIMEOUT);
  FUZZ_CHECK(err != KR_ECANCELED || run->cancel_payload);
  FUZZ_CHECK(resp->raw_bytes <= run->n && r->raw_seen <= resp->raw_bytes);
  FUZZ_CHECK(resp->payload_bytes == r->payload && resp->content_bytes == r->content);
  FUZZ_CHECK(r->payload <= o->max_body_bytes && r->content <= o->max_body_bytes);
  /* Every payload byte is among the raw bytes, also when the fetch
   * stopped in them (a record of the raw bytes covers its payload
   * digest); only a cancel from on_payload drops the rest. */
  if (r->headers_calls && !run->cancel_payload)
    FUZZ_CHECK(r->raw_seen >= resp->raw_head.n + r->payload);
  if (err == 0) {
    FUZZ_CHECK(r->headers_calls == 1 && resp->status >= 200);
    FUZZ_CHECK(resp->raw_head.n > 0);
  }
  if (r->headers_calls && run->coding == KR_CODING_IDENTITY && !run->abort_content &&
      !run->cancel_payload)
    FUZZ_CHECK(r->content == r->payload && r->content_hash == r->payload_hash);
  if (r->headers_calls && run->coding != KR_CODING_IDENTITY && o->max_ratio) {
    uint64_t bound = (uint64_t)o->max_ratio * r->payload;
    FUZZ_CHECK(r->content <= (bound > o->ratio_after_bytes ? bound : o->ratio_after_bytes));
  }
  if (resp->truncated) FUZZ_CHECK(r->payload == o->max_body_bytes || r->content == o->max_body_bytes);
  if (err == 0 && !resp->truncated && !resp->aborted && !resp->chunked &&
      resp->content_length >= 0 && !run->head && resp->status != 204 && resp->status != 304)
    FUZZ_CHECK(r->payload == (uint64_t)resp->content_length);
  if (err == 0 && (run->head || resp->status == 204 || resp->status == 304))
    FUZZ_CHECK(r->payload == 0);
  r->status = resp->status;
  r->nheaders = (int)resp->nheaders;
  r->truncated = resp->truncated;
  r->aborted = resp->aborted;
  r->chunked = resp->chunked;
  r->content_decoded = resp->content_decoded;
  r->decoded = r->headers_calls && run->coding != KR_CODING_IDENTITY;
  r->content_length = resp->content_length;
  r->raw_bytes = resp->raw_bytes;
  kr_http_fetch_release(f);
}

static const kr_http_cbs_t hf_cbs = {
    .on_headers = hf_on_headers,
    .on_raw = hf_on_raw,
    .on_payload = hf_on_payload,
    .on_content = hf_on_content,
    .on_done = hf_on_done,
};

/* ---- driver -------------------------------------------------------------- */

static void hf_init(void) {
  signal(SIGPIPE, SIG_IGN);
  FUZZ_CHECK(uv_loop_init(&hf.loop) == 0);
  kr_clock_init_real(&hf.clock);
  uv_tcp_init(&hf.loop, &hf.listener);
  struct sockaddr_in a;
  uv_ip4_addr("127.0.0.1", 0, &a);
  FUZZ_CHECK(uv_tcp_bind(&hf.listener, (const struct sockaddr *)&a, 0) == 0);
  FUZZ_CHECK(uv_listen((uv_stream_t *)&hf.listener, 16, hf_on_connection) == 0);
  struct sockaddr_storage ss;
  int len = sizeof ss;
  uv_tcp_getsockname(&hf.listener, (struct sockaddr *)&ss, &len);
  hf.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  uv_idle_init(&hf.loop, &hf.idle);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/x", hf.port);
  FUZZ_CHECK(kr_url_parse(url, strlen(url), NULL, &hf.url) == 0);
  for (int i = 0; i < 4; i++) {
    kr_http_opts_t *o = &hf.opts[i];
    kr_http_opts_default(o);
    o->pool_max_idle = 0; /* every fetch on a fresh connection */
    o->allow_private_addresses = 1; /* the server is on 127.0.0.1 */
    o->connect_timeout_ms = o->first_byte_timeout_ms = o->idle_timeout_ms = 5000;
    o->total_timeout_ms = 20000;
    if (i == 1 || i == 2) {
      o->max_header_bytes = 256;
      o->max_body_bytes = 100;
      o->drain_max_bytes = 16;
    }
    if (i == 2) {
      o->body_limit_is_error = 1;
      o->max_ratio = 2;
      o->ratio_after_bytes = 0;
    }
    if (i == 3) {
      o->max_header_bytes = 4096;
      o->max_body_bytes = 4096;
      o->max_ratio = 10;
      o->ratio_after_bytes = 100;
    }
    FUZZ_CHECK(kr_http_client_new(&hf.loop, &hf.clock, NULL, o, &hf.clients[i]) == 0);
    hf.opts[i] = *kr_http_client_opts(hf.clients[i]);
  }
  hf.ready = 1;
}

static void hf_fetch(hf_run_t *run, kr_http_client_t *c) {
  kr_http_req_t req = {.method = run->head ? KR_HTTP_HEAD : KR_HTTP_GET};
  kr_http_fetch_t *f = NULL;
  run->r.payload_hash = run->r.content_hash = 0xcbf29ce484222325ull;
  hf.run = run;
  hf.accepted = 0;
  FUZZ_CHECK(kr_http_fetch_start(c, hf.url, &req, &hf_cbs, run, &f) == 0);
  int turns = 0;
  while (!(run->done && hf.live == 0)) {
    uv_run(&hf.loop, UV_RUN_ONCE);
    FUZZ_CHECK(++turns < HF_MAX_TURNS);
  }
  hf.run = NULL;
  kr_http_stats_t st;
  kr_http_client_stats(c, &st);
  FUZZ_CHECK(st.pooled_idle == 0);
}

static int hf_same(const hf_result_t *a, const hf_result_t *b) {
  /* The ratio is measured on the input so far: a cap hit early in small
   * reads may not be hit with all the input at hand (inflate's contract). */
  if (a->err == KR_ERATIO || b->err == KR_ERATIO) return 1;
  if (a->err != b->err) return 0;
  if (a->err) return 1; /* bytes delivered before an error depend on the cuts */
  if (a->aborted || b->aborted)
    return a->aborted == b->aborted && a->status == b->status && a->head_hash == b->head_hash;
  /* Decoded content cut at max_body_bytes ends the payload with the read
   * that produced the last byte: which compressed bytes that includes
   * depends on the reads (inflate does not say which input byte made
   * which output byte). Content and head must still agree. */
  int exact = !(a->truncated && a->decoded);
  return a->status == b->status && a->nheaders == b->nheaders && a->truncated == b->truncated &&
         a->content == b->content && a->content_hash == b->content_hash &&
         (!exact || (a->raw_seen == b->raw_seen && a->raw_bytes == b->raw_bytes &&
                     a->payload == b->payload && a->payload_hash == b->payload_hash)) &&
         a->chunked == b->chunked && a->content_decoded == b->content_decoded &&
         a->content_length == b->content_length && a->head_hash == b->head_hash &&
         a->headers_calls == b->headers_calls;
}

/* Close everything the harness holds (for the regression test, which
 * must end with no handle open and no leak; libFuzzer never calls it). */
void fuzz_http_cleanup(void);
void fuzz_http_cleanup(void) {
  if (!hf.ready) return;
  for (int i = 0; i < 4; i++) kr_http_client_close(hf.clients[i]);
  uv_close((uv_handle_t *)&hf.listener, NULL);
  uv_close((uv_handle_t *)&hf.idle, NULL);
  uv_run(&hf.loop, UV_RUN_DEFAULT);
  FUZZ_CHECK(uv_loop_close(&hf.loop) == 0);
  kr_url_free(hf.url);
  memset(&hf, 0, sizeof hf);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (!hf.ready) hf_init();
  unsigned mode = data[0];
  static const size_t pieces[4] = {2, 5, 16, HF_MAX_PIECES};
  hf_run_t base = {
      .in = data + 1,
      .n = size - 1,
      .rst = (mode >> 5) & 1,
      .head = (mode >> 2) & 1,
      .opts = &hf.opts[mode & 3],
  };
  if ((mode & 0x18) == 0x18) {
    base.cancel_payload = 1;
  } else {
    base.abort_headers = (mode >> 3) & 1;
    base.abort_content = (mode >> 4) & 1;
  }
  kr_http_client_t *c = hf.clients[mode & 3];
  hf_run_t whole = base, cut = base;
  whole.pieces = 1;
  cut.pieces = pieces[mode >> 6];
  hf_fetch(&whole, c);
  hf_fetch(&cut, c);
  if (!hf_same(&whole.r, &cut.r))
    fprintf(stderr, "whole: err %d status %d raw %llu payload %llu content %llu\n"
                    "cut:   err %d status %d raw %llu payload %llu content %llu\n",
            whole.r.err, whole.r.status, (unsigned long long)whole.r.raw_bytes,
            (unsigned long long)whole.r.payload, (unsigned long long)whole.r.content, cut.r.err,
            cut.r.status, (unsigned long long)cut.r.raw_bytes, (unsigned long long)cut.r.payload,
            (unsigned long long)cut.r.content);
  FUZZ_CHECK(hf_same(&whole.r, &cut.r));
  return 0;
}
