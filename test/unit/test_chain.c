/* Unit tests of the processor chain: processors run in phase order
 * (registration order inside a phase) whatever order they were added in;
 * host, URL and content-type filters; SKIP_TO_POST and errors jump to the
 * post phase, where every processor still runs; ASYNC suspends and
 * kr_chain_resume continues, also when the resume comes from inside run;
 * finalize runs exactly once per fetch, after every stream cleanup; the
 * stream hooks deliver headers and body only to subscribed processors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "kria/error.h"

/* A processor that records its runs in a trace string. */
typedef struct tproc {
  kr_processor_t p;
  char tag;         /* letter written to the trace */
  int rc;           /* what run returns */
  int resume_in_run;/* call kr_chain_resume from inside run */
  int resume_err;
  int want_body;    /* on_headers returns this */
  int body_calls;
  size_t body_bytes;
  int stop_after;   /* on_body returns 1 after this many calls (0 never) */
  int cleanups;
} tproc_t;

typedef struct tfetch {
  kr_chain_fetch_t cf;
  char trace[256];
  size_t tn;
  int finalized;
  int cleanups_at_finalize;
} tfetch_t;

static tproc_t *procs_seen[128];
static int nprocs_seen;

static tfetch_t *tf_of(kr_chain_fetch_t *f) {
  return (tfetch_t *)((char *)f - offsetof(tfetch_t, cf));
}
static tproc_t *tp_of(kr_processor_t *p) {
  return (tproc_t *)((char *)p - offsetof(tproc_t, p));
}

static int run_fn(kr_chain_fetch_t *f, kr_processor_t *self) {
  tproc_t *t = tp_of(self);
  tfetch_t *tf = tf_of(f);
  if (tf->tn + 1 < sizeof tf->trace) tf->trace[tf->tn++] = t->tag;
  if (t->resume_in_run) {
    kr_chain_resume(f, t->resume_err);
    return KR_PROC_ASYNC;
  }
  return t->rc;
}

static int headers_fn(kr_chain_fetch_t *f, kr_processor_t *self) {
  tproc_t *t = tp_of(self);
  tfetch_t *tf = tf_of(f);
  if (tf->tn + 1 < sizeof tf->trace) tf->trace[tf->tn++] = (char)(t->tag | 0x20);
  return t->want_body;
}

static int body_fn(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level,
                   const char *p, size_t n) {
  (void)f;
  (void)p;
  assert_int_equal(level, KR_STREAM_CONTENT);
  tproc_t *t = tp_of(self);
  t->body_calls++;
  t->body_bytes += n;
  return t->stop_after && t->body_calls >= t->stop_after;
}

static void cleanup_fn(kr_chain_fetch_t *f, kr_processor_t *self) {
  tproc_t *t = tp_of(self);
  assert_int_equal(tf_of(f)->finalized, 0); /* before finalize */
  t->cleanups++;
}

static void finalize_fn(kr_chain_fetch_t *f, void *ud) {
  (void)ud;
  tfetch_t *tf = tf_of(f);
  tf->finalized++;
  tf->trace[tf->tn] = '\0';
  int c = 0;
  for (int i = 0; i < nprocs_seen; i++) c += procs_seen[i]->cleanups;
  tf->cleanups_at_finalize = c;
}

static void tp_init(tproc_t *t, char tag, kr_phase_t phase, int rc) {
  memset(t, 0, sizeof *t);
  t->tag = tag;
  t->rc = rc;
  t->p.name = "t";
  t->p.phase = phase;
  t->p.run = run_fn;
  t->p.data = t;
  procs_seen[nprocs_seen++] = t;
}

static void tp_stream(tproc_t *t, int want_body) {
  t->p.on_headers = headers_fn;
  t->p.on_body = body_fn;
  t->p.cleanup = cleanup_fn;
  t->want_body = want_body;
}

static void tf_start(kr_chain_t *c, tfetch_t *tf, const char *url, const char *host) {
  memset(tf, 0, sizeof *tf);
  kr_chain_fetch_init(c, &tf->cf, url, strlen(url), kr_slice_cstr(host));
  kr_chain_start(&tf->cf);
}

static int setup(void **state) {
  (void)state;
  nprocs_seen = 0;
  return 0;
}

static pcre2_code *re(const char *pat) {
  int ec;
  PCRE2_SIZE off;
  pcre2_code *r = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
  assert_non_null(r);
  return r;
}

/* ---- tests ---- */

static void phase_order(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t t[7];
  kr_chain_init(&c, finalize_fn, NULL);
  /* added out of order: post, extract, prefetch, fetch, prefetch, write, post */
  tp_init(&t[0], 'P', KR_PHASE_POST, KR_PROC_NEXT);
  tp_init(&t[1], 'E', KR_PHASE_EXTRACT, KR_PROC_NEXT);
  tp_init(&t[2], 'a', KR_PHASE_PREFETCH, KR_PROC_NEXT);
  tp_init(&t[3], 'F', KR_PHASE_FETCH, KR_PROC_NEXT);
  tp_init(&t[4], 'b', KR_PHASE_PREFETCH, KR_PROC_NEXT);
  tp_init(&t[5], 'W', KR_PHASE_WRITE, KR_PROC_NEXT);
  tp_init(&t[6], 'Q', KR_PHASE_POST, KR_PROC_NEXT);
  for (int i = 0; i < 7; i++) assert_int_equal(kr_chain_add(&c, &t[i].p), 0);
  assert_int_equal(kr_chain_build(&c), 0);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_PREFETCH), 0);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_FETCH), 2);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_DIGEST), 3);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_EXTRACT), 3);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_WRITE), 4);
  assert_int_equal(kr_chain_phase_start(&c, KR_PHASE_POST), 5);
  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_int_equal(tf.finalized, 1);
  assert_string_equal(tf.trace, "abFEWPQ");
  assert_int_equal(c.started, 1);
  assert_int_equal(c.finished, 1);
  assert_int_equal(c.in_flight, 0);
  /* no more processors once built */
  tproc_t late;
  tp_init(&late, 'L', KR_PHASE_POST, KR_PROC_NEXT);
  assert_int_equal(kr_chain_add(&c, &late.p), KR_EINVAL);
  assert_int_equal(kr_chain_build(&c), KR_EINVAL);
  kr_chain_free(&c);
}

static void add_limits(void **state) {
  (void)state;
  kr_chain_t c;
  static tproc_t t[KR_CHAIN_MAX_PROCS + 1];
  kr_chain_init(&c, finalize_fn, NULL);
  tproc_t bad;
  tp_init(&bad, 'x', (kr_phase_t)KR_PHASE__COUNT, KR_PROC_NEXT);
  assert_int_equal(kr_chain_add(&c, &bad.p), KR_EINVAL);
  bad.p.phase = KR_PHASE_FETCH;
  bad.p.run = NULL; /* neither run nor stream hooks */
  assert_int_equal(kr_chain_add(&c, &bad.p), KR_EINVAL);
  assert_int_equal(kr_chain_add(&c, NULL), KR_EINVAL);
  nprocs_seen = 0;
  for (int i = 0; i < KR_CHAIN_MAX_PROCS; i++) {
    tp_init(&t[i], 'x', (kr_phase_t)(i % KR_PHASE__COUNT), KR_PROC_NEXT);
    assert_int_equal(kr_chain_add(&c, &t[i].p), 0);
  }
  tp_init(&t[KR_CHAIN_MAX_PROCS], 'y', KR_PHASE_POST, KR_PROC_NEXT);
  assert_int_equal(kr_chain_add(&c, &t[KR_CHAIN_MAX_PROCS].p), KR_ETOOBIG);
  assert_int_equal(kr_chain_build(&c), 0);
  /* phases stay sorted with a full chain */
  for (size_t i = 1; i < c.n; i++) assert_true(c.procs[i - 1]->phase <= c.procs[i]->phase);
  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_int_equal(tf.finalized, 1);
  assert_int_equal(strlen(tf.trace), KR_CHAIN_MAX_PROCS);
  kr_chain_free(&c);
}

static void filters(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t h, u, ct, all;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&h, 'H', KR_PHASE_PREFETCH, KR_PROC_NEXT);
  h.p.host = "example.org";
  tp_init(&u, 'U', KR_PHASE_FETCH, KR_PROC_NEXT);
  pcre2_code *ure = re("\\.pdf$");
  u.p.url_re = ure;
  tp_init(&ct, 'C', KR_PHASE_EXTRACT, KR_PROC_NEXT);
  pcre2_code *cre = re("^text/html");
  ct.p.ctype_re = cre;
  tp_init(&all, 'A', KR_PHASE_POST, KR_PROC_NEXT);
  kr_chain_add(&c, &h.p);
  kr_chain_add(&c, &u.p);
  kr_chain_add(&c, &ct.p);
  kr_chain_add(&c, &all.p);
  assert_int_equal(kr_chain_build(&c), 0);

  tfetch_t tf;
  tf_start(&c, &tf, "http://example.org/a.pdf", "example.org");
  assert_string_equal(tf.trace, "HUA"); /* no content type: C passed over */
  tf_start(&c, &tf, "http://www.EXAMPLE.org/a.html", "www.EXAMPLE.org");
  assert_string_equal(tf.trace, "HA");
  tf_start(&c, &tf, "http://badexample.org/x.pdf", "badexample.org");
  assert_string_equal(tf.trace, "UA");
  tf_start(&c, &tf, "http://org/x", "org");
  assert_string_equal(tf.trace, "A");

  /* content type known before the walk reaches the extract phase */
  memset(&tf, 0, sizeof tf);
  kr_chain_fetch_init(&c, &tf.cf, "http://x.test/", 14, kr_slice_cstr("x.test"));
  tf.cf.content_type = kr_slice_cstr("text/html; charset=utf-8");
  kr_chain_start(&tf.cf);
  assert_string_equal(tf.trace, "CA");
  tf.cf.content_type = kr_slice_cstr("image/png");
  assert_int_equal(kr_chain_filter_match(&c, &ct.p, &tf.cf), 0);
  tf.cf.content_type = kr_slice_cstr("text/html");
  assert_int_equal(kr_chain_filter_match(&c, &ct.p, &tf.cf), 1);

  assert_int_equal(h.p.runs, 2);
  assert_int_equal(h.p.filtered, 3);
  kr_chain_free(&c);
  pcre2_code_free(ure);
  pcre2_code_free(cre);
}

static void skip_to_post_and_errors(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t a, b, f, e, p1, p2, p3;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&a, 'a', KR_PHASE_PREFETCH, KR_PROC_NEXT);
  tp_init(&b, 'b', KR_PHASE_PREFETCH, KR_PROC_SKIP_TO_POST);
  tp_init(&f, 'F', KR_PHASE_FETCH, KR_PROC_NEXT);
  tp_init(&e, 'E', KR_PHASE_EXTRACT, KR_PROC_NEXT);
  tp_init(&p1, 'P', KR_PHASE_POST, KR_PROC_SKIP_TO_POST);
  tp_init(&p2, 'Q', KR_PHASE_POST, KR_EIO);
  tp_init(&p3, 'R', KR_PHASE_POST, KR_PROC_NEXT);
  kr_chain_add(&c, &a.p);
  kr_chain_add(&c, &b.p);
  kr_chain_add(&c, &f.p);
  kr_chain_add(&c, &e.p);
  kr_chain_add(&c, &p1.p);
  kr_chain_add(&c, &p2.p);
  kr_chain_add(&c, &p3.p);
  kr_chain_build(&c);
  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  /* b skips F and E; in post, SKIP_TO_POST and an error just go on */
  assert_string_equal(tf.trace, "abPQR");
  assert_int_equal(tf.cf.err, KR_EIO); /* the post error is still recorded */
  assert_int_equal(tf.finalized, 1);

  /* an error before post jumps there and is kept; the first wins */
  b.rc = KR_ECONNREFUSED;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "abPQR");
  assert_int_equal(tf.cf.err, KR_ECONNREFUSED);
  assert_int_equal(b.p.errors, 1);
  kr_chain_free(&c);
}

static void skip_to_write(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t d, x, e, w, p, w2;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&d, 'd', KR_PHASE_DIGEST, KR_PROC_NEXT);
  tp_init(&x, 'x', KR_PHASE_CHANGE, KR_PROC_SKIP_TO_WRITE);
  tp_init(&e, 'E', KR_PHASE_EXTRACT, KR_PROC_NEXT);
  tp_init(&w, 'W', KR_PHASE_WRITE, KR_PROC_SKIP_TO_WRITE);
  tp_init(&w2, 'V', KR_PHASE_WRITE, KR_PROC_NEXT);
  tp_init(&p, 'P', KR_PHASE_POST, KR_PROC_NEXT);
  kr_chain_add(&c, &p.p);
  kr_chain_add(&c, &w.p);
  kr_chain_add(&c, &w2.p);
  kr_chain_add(&c, &e.p);
  kr_chain_add(&c, &x.p);
  kr_chain_add(&c, &d.p);
  kr_chain_build(&c);
  tfetch_t tf;
  /* the change processor skips extraction, not the writers; inside the
   * write phase it moves on like NEXT */
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "dxWVP");
  x.rc = KR_PROC_NEXT;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "dxEWVP");
  kr_chain_free(&c);
}

static void async_resume(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t a, f, e, p;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&a, 'a', KR_PHASE_PREFETCH, KR_PROC_ASYNC);
  tp_init(&f, 'F', KR_PHASE_FETCH, KR_PROC_ASYNC);
  tp_init(&e, 'E', KR_PHASE_EXTRACT, KR_PROC_NEXT);
  tp_init(&p, 'P', KR_PHASE_POST, KR_PROC_ASYNC);
  kr_chain_add(&c, &a.p);
  kr_chain_add(&c, &f.p);
  kr_chain_add(&c, &e.p);
  kr_chain_add(&c, &p.p);
  kr_chain_build(&c);

  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "a");
  assert_int_equal(tf.cf.state, KR_CHAIN_WAITING);
  assert_int_equal(tf.finalized, 0);
  assert_int_equal(c.in_flight, 1);
  kr_chain_resume(&tf.cf, 0);
  tf.trace[tf.tn] = '\0';
  assert_string_equal(tf.trace, "aF");
  kr_chain_resume(&tf.cf, 0);
  tf.trace[tf.tn] = '\0';
  assert_string_equal(tf.trace, "aFEP");
  assert_int_equal(tf.finalized, 0);
  kr_chain_resume(&tf.cf, 0);
  assert_int_equal(tf.finalized, 1);
  assert_int_equal(tf.cf.state, KR_CHAIN_DONE);
  assert_int_equal(c.in_flight, 0);

  /* an I/O error on resume jumps to post */
  tf_start(&c, &tf, "http://a.test/", "a.test");
  kr_chain_resume(&tf.cf, KR_ECONNRESET);
  tf.trace[tf.tn] = '\0';
  assert_string_equal(tf.trace, "aP");
  assert_int_equal(tf.cf.err, KR_ECONNRESET);
  kr_chain_resume(&tf.cf, 0);
  assert_int_equal(tf.finalized, 1);

  /* resume from inside run: the walk continues when run returns */
  a.resume_in_run = f.resume_in_run = p.resume_in_run = 1;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "aFEP");
  assert_int_equal(tf.finalized, 1);
  /* ... also with an error */
  f.resume_err = KR_ETOOBIG;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_string_equal(tf.trace, "aFP");
  assert_int_equal(tf.cf.err, KR_ETOOBIG);
  assert_int_equal(tf.finalized, 1);
  assert_int_equal(c.in_flight, 0);
  kr_chain_free(&c);
}

/* Many processors completing synchronously must not nest: the walk is a
 * loop, so the stack does not grow with the chain. */
static void sync_resume_is_flat(void **state) {
  (void)state;
  kr_chain_t c;
  static tproc_t t[KR_CHAIN_MAX_PROCS];
  kr_chain_init(&c, finalize_fn, NULL);
  for (int i = 0; i < KR_CHAIN_MAX_PROCS; i++) {
    tp_init(&t[i], (char)('A' + i % 26), (kr_phase_t)(i * KR_PHASE__COUNT / KR_CHAIN_MAX_PROCS),
            KR_PROC_ASYNC);
    t[i].resume_in_run = 1;
    kr_chain_add(&c, &t[i].p);
  }
  kr_chain_build(&c);
  for (int k = 0; k < 10000; k++) {
    tfetch_t tf;
    tf_start(&c, &tf, "http://a.test/", "a.test");
    assert_int_equal(tf.finalized, 1);
    assert_int_equal(tf.tn, KR_CHAIN_MAX_PROCS);
  }
  assert_int_equal(c.finished, 10000);
  kr_chain_free(&c);
}

static void streaming(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t f, x, y, z, p;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&f, 'F', KR_PHASE_FETCH, KR_PROC_ASYNC);
  tp_init(&x, 'X', KR_PHASE_EXTRACT, KR_PROC_NEXT); /* html only, wants body */
  tp_stream(&x, 1);
  pcre2_code *html = re("^text/html");
  x.p.ctype_re = html;
  tp_init(&y, 'Y', KR_PHASE_DIGEST, KR_PROC_NEXT); /* every type, wants 2 chunks */
  tp_stream(&y, 1);
  y.stop_after = 2;
  tp_init(&z, 'Z', KR_PHASE_EXTRACT, KR_PROC_NEXT); /* looks at headers only */
  tp_stream(&z, 0);
  z.p.run = NULL; /* stream-only */
  tp_init(&p, 'P', KR_PHASE_POST, KR_PROC_NEXT);
  kr_chain_add(&c, &f.p);
  kr_chain_add(&c, &x.p);
  kr_chain_add(&c, &y.p);
  kr_chain_add(&c, &z.p);
  kr_chain_add(&c, &p.p);
  assert_int_equal(kr_chain_build(&c), 0);

  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  assert_int_equal(tf.cf.state, KR_CHAIN_WAITING);
  tf.cf.content_type = kr_slice_cstr("text/html");
  kr_chain_headers(&tf.cf);
  kr_chain_headers(&tf.cf); /* twice: each hook sees the headers once */
  assert_true(kr_chain_wants(&tf.cf, KR_STREAM_CONTENT));
  for (int i = 0; i < 5; i++) kr_chain_body(&tf.cf, KR_STREAM_CONTENT, "abcd", 4);
  assert_int_equal(x.body_calls, 5);
  assert_int_equal(x.body_bytes, 20);
  assert_int_equal(y.body_calls, 2); /* unsubscribed itself */
  assert_int_equal(z.body_calls, 0);
  kr_chain_resume(&tf.cf, 0);
  assert_int_equal(tf.finalized, 1);
  assert_string_equal(tf.trace, "FyxzYXP");
  /* every processor that saw the headers was cleaned up, before finalize */
  assert_int_equal(x.cleanups + y.cleanups + z.cleanups, 3);
  assert_int_equal(tf.cleanups_at_finalize, 3);

  /* an image: the html hook is never offered the headers; a failure
   * after the headers still cleans up the ones that saw them */
  x.body_calls = y.body_calls = 0;
  x.cleanups = y.cleanups = z.cleanups = 0;
  tf_start(&c, &tf, "http://a.test/i.png", "a.test");
  tf.cf.content_type = kr_slice_cstr("image/png");
  kr_chain_headers(&tf.cf);
  kr_chain_body(&tf.cf, KR_STREAM_CONTENT, "x", 1);
  assert_int_equal(x.body_calls, 0);
  assert_int_equal(y.body_calls, 1);
  kr_chain_resume(&tf.cf, KR_ETRUNCATED);
  assert_int_equal(tf.finalized, 1);
  assert_string_equal(tf.trace, "FyzP");
  assert_int_equal(x.cleanups, 0);
  assert_int_equal(y.cleanups + z.cleanups, 2);
  assert_false(kr_chain_wants(&tf.cf, KR_STREAM_CONTENT));
  kr_chain_free(&c);
  pcre2_code_free(html);
}

/* The finalize-once rule across every way a walk can end. */
static void finalize_once(void **state) {
  (void)state;
  static const int rcs[] = {KR_PROC_NEXT, KR_PROC_SKIP_TO_POST, KR_EIO, KR_PROC_ASYNC};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 4; j++) {
      nprocs_seen = 0;
      kr_chain_t c;
      tproc_t a, b, p;
      kr_chain_init(&c, finalize_fn, NULL);
      tp_init(&a, 'a', KR_PHASE_PREFETCH, rcs[i]);
      tp_init(&b, 'b', KR_PHASE_FETCH, rcs[j]);
      tp_init(&p, 'p', KR_PHASE_POST, rcs[(i + j) % 4]);
      tp_stream(&b, 1);
      kr_chain_add(&c, &a.p);
      kr_chain_add(&c, &b.p);
      kr_chain_add(&c, &p.p);
      kr_chain_build(&c);
      tfetch_t tf;
      tf_start(&c, &tf, "http://a.test/", "a.test");
      for (int k = 0; k < 4 && !tf.finalized; k++) {
        assert_int_equal(tf.cf.state, KR_CHAIN_WAITING);
        kr_chain_headers(&tf.cf);
        kr_chain_resume(&tf.cf, 0);
      }
      assert_int_equal(tf.finalized, 1);
      assert_int_equal(c.in_flight, 0);
      assert_int_equal(b.cleanups, tf.cleanups_at_finalize);
      kr_chain_free(&c);
    }
}

/* ---- per-fetch contexts --------------------------------------------------------- */

typedef struct tctx {
  int inits, resets, frees; /* calls on this context */
  int walks;                /* fetches that used it since the last reset */
  char buf[40];
} tctx_t;

static int ctx_calls[3]; /* init, reset, free over every context */

static void tctx_init(void *p, void *owner) {
  tctx_t *t = p;
  assert_int_equal(t->inits + t->resets + t->walks, 0); /* zeroed before */
  t->inits++;
  ctx_calls[0]++;
}
static void tctx_reset(void *p, void *owner) {
  tctx_t *t = p;
  t->resets++;
  t->walks = 0;
  ctx_calls[1]++;
}
static void tctx_free(void *p, void *owner) { ctx_calls[2]++; }

static const kr_chain_ctx_def_t def_a = {.name = "a", .size = sizeof(tctx_t), .init = tctx_init,
                                         .reset = tctx_reset, .free = tctx_free};
static const kr_chain_ctx_def_t def_b = {.name = "b", .size = 3, .init = tctx_init};

static int ctx_run(kr_chain_fetch_t *f, kr_processor_t *self) {
  tctx_t *t = kr_chain_ctx(f, self);
  t->walks++;
  return run_fn(f, self);
}

/* Processors of one module share one context; each definition gets its
 * own aligned place in one block per fetch object; init once, reset per
 * recycle, free at teardown; a fetch's walk keeps its contexts. */
static void contexts(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t a1, a2, b, n;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&a1, 'a', KR_PHASE_FETCH, KR_PROC_NEXT);
  tp_init(&b, 'b', KR_PHASE_DIGEST, KR_PROC_NEXT);
  tp_init(&n, 'n', KR_PHASE_EXTRACT, KR_PROC_NEXT); /* no context */
  tp_init(&a2, 'A', KR_PHASE_POST, KR_PROC_NEXT);
  a1.p.ctx = a2.p.ctx = &def_a;
  b.p.ctx = &def_b;
  a1.p.run = a2.p.run = ctx_run;
  b.p.data = NULL;
  assert_int_equal(kr_chain_add(&c, &a1.p), 0);
  assert_int_equal(kr_chain_add(&c, &b.p), 0);
  assert_int_equal(kr_chain_add(&c, &n.p), 0);
  assert_int_equal(kr_chain_add(&c, &a2.p), 0);
  assert_int_equal(kr_chain_build(&c), 0);
  assert_int_equal(c.n_ctx, 2);
  assert_int_equal(a1.p.ctx_off, a2.p.ctx_off);
  assert_true(b.p.ctx_off != a1.p.ctx_off);
  assert_int_equal(b.p.ctx_off % 16, 0);
  assert_true(c.ctx_size >= sizeof(tctx_t) + 3);

  memset(ctx_calls, 0, sizeof ctx_calls);
  tfetch_t tf;
  memset(&tf, 0, sizeof tf);
  kr_chain_fetch_setup(&c, &tf.cf);
  assert_int_equal(ctx_calls[0], 2); /* one init per definition */
  for (int walk = 1; walk <= 3; walk++) {
    kr_chain_fetch_init(&c, &tf.cf, "http://a.test/", 14, kr_slice_cstr("a.test"));
    tf.tn = 0;
    tf.finalized = 0;
    kr_chain_start(&tf.cf);
    assert_int_equal(tf.finalized, 1);
    tctx_t *t = kr_chain_ctx(&tf.cf, &a1.p);
    assert_ptr_equal(t, kr_chain_ctx(&tf.cf, &a2.p));
    assert_int_equal(t->walks, 2); /* both processors of the module saw it */
    assert_int_equal(t->inits, 1);
    kr_chain_fetch_recycle(&tf.cf);
    assert_int_equal(t->resets, walk);
    assert_int_equal(t->walks, 0);
  }
  assert_int_equal(ctx_calls[1], 3); /* def_b has no reset */
  assert_true(kr_chain_fetch_mem(&tf.cf) >= c.ctx_size);
  kr_chain_fetch_teardown(&tf.cf);
  assert_int_equal(ctx_calls[2], 1);
  assert_null(tf.cf.ctx);
  kr_chain_free(&c);
}

/* ---- levels of the byte stream, and holding ------------------------------------- */

typedef struct tlev {
  tproc_t t;
  unsigned want;            /* on_headers returns this */
  size_t got[KR_STREAM__COUNT];
  char held[64];            /* the raw bytes kept (a holder) */
  size_t nheld;
  int hold;                 /* 1: say so to the chain */
} tlev_t;

static int lev_headers(kr_chain_fetch_t *f, kr_processor_t *self) {
  tlev_t *l = (tlev_t *)tp_of(self);
  if (l->hold) kr_chain_hold(f, self, KR_STREAM_RAW);
  return (int)l->want;
}

static int lev_body(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level,
                    const char *p, size_t n) {
  tlev_t *l = (tlev_t *)tp_of(self);
  l->got[level] += n;
  if (level == KR_STREAM_RAW && l->hold && l->nheld + n <= sizeof l->held) {
    memcpy(l->held + l->nheld, p, n);
    l->nheld += n;
  }
  return 0;
}

static int lev_held(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level,
                    uint64_t from, uint64_t to, kr_slice_t *out) {
  tlev_t *l = (tlev_t *)tp_of(self);
  if (level != KR_STREAM_RAW || from > l->nheld || to > sizeof l->held) return 0;
  if (out) *out = kr_slice(l->held + from, l->nheld - (size_t)from);
  return 1;
}

/* Each subscriber gets the levels it asked for and only those; a level's
 * bytes held by one processor are read back through the chain by
 * another, which never names it. */
static void stream_levels(void **state) {
  (void)state;
  kr_chain_t c;
  tproc_t f;
  tlev_t raw, pay, both;
  kr_chain_init(&c, finalize_fn, NULL);
  tp_init(&f, 'F', KR_PHASE_FETCH, KR_PROC_ASYNC);
  tlev_t *ls[] = {&pay, &both, &raw};
  kr_phase_t ph[] = {KR_PHASE_DIGEST, KR_PHASE_EXTRACT, KR_PHASE_WRITE};
  for (int i = 0; i < 3; i++) {
    memset(ls[i], 0, sizeof *ls[i]);
    tp_init(&ls[i]->t, (char)('X' + i), ph[i], KR_PROC_NEXT);
    ls[i]->t.p.on_headers = lev_headers;
    ls[i]->t.p.on_body = lev_body;
    ls[i]->t.p.held = lev_held;
  }
  pay.want = KR_STREAM_BIT(KR_STREAM_PAYLOAD);
  both.want = KR_STREAM_BIT(KR_STREAM_PAYLOAD) | KR_STREAM_BIT(KR_STREAM_CONTENT);
  raw.want = KR_STREAM_BIT(KR_STREAM_RAW);
  raw.hold = 1;
  kr_chain_add(&c, &f.p);
  for (int i = 0; i < 3; i++) kr_chain_add(&c, &ls[i]->t.p);
  assert_int_equal(kr_chain_build(&c), 0);
  tfetch_t tf;
  tf_start(&c, &tf, "http://a.test/", "a.test");
  kr_slice_t m;
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_RAW, 0, 1, &m), 0); /* nobody yet */
  kr_chain_headers(&tf.cf);
  assert_true(kr_chain_wants(&tf.cf, KR_STREAM_RAW));
  kr_chain_body(&tf.cf, KR_STREAM_PAYLOAD, "hello", 5);
  kr_chain_body(&tf.cf, KR_STREAM_CONTENT, "hello, world", 12);
  kr_chain_body(&tf.cf, KR_STREAM_RAW, "5\r\nhello\r\n", 10);
  assert_int_equal(pay.got[KR_STREAM_PAYLOAD], 5);
  assert_int_equal(pay.got[KR_STREAM_CONTENT] + pay.got[KR_STREAM_RAW], 0);
  assert_int_equal(both.got[KR_STREAM_PAYLOAD], 5);
  assert_int_equal(both.got[KR_STREAM_CONTENT], 12);
  assert_int_equal(both.got[KR_STREAM_RAW], 0);
  assert_int_equal(raw.got[KR_STREAM_RAW], 10);
  assert_int_equal(raw.got[KR_STREAM_PAYLOAD] + raw.got[KR_STREAM_CONTENT], 0);
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_RAW, 0, 10, &m), 1);
  assert_int_equal(m.n, 10);
  assert_memory_equal(m.p, "5\r\nhello\r\n", 10);
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_RAW, 10, 20, NULL), 1);
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_RAW, 0, 100, NULL), 0);
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_PAYLOAD, 0, 1, NULL), 0); /* not held */
  kr_chain_resume(&tf.cf, 0);
  assert_int_equal(tf.finalized, 1);
  /* finalized: nobody holds anything any more */
  assert_int_equal(kr_chain_held(&tf.cf, KR_STREAM_RAW, 0, 1, NULL), 0);
  kr_chain_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(phase_order, setup),
      cmocka_unit_test_setup(add_limits, setup),
      cmocka_unit_test_setup(filters, setup),
      cmocka_unit_test_setup(skip_to_post_and_errors, setup),
      cmocka_unit_test_setup(skip_to_write, setup),
      cmocka_unit_test_setup(async_resume, setup),
      cmocka_unit_test_setup(sync_resume_is_flat, setup),
      cmocka_unit_test_setup(streaming, setup),
      cmocka_unit_test_setup(finalize_once, setup),
      cmocka_unit_test_setup(contexts, setup),
      cmocka_unit_test_setup(stream_levels, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
