/*
 * Shared dedup (clusterdedup.h): the digest index of URL-agnostic
 * duplicates (adaptive.dedupe) shared by a cluster's members through
 * Redis, so that a payload one member archived is a revisit for the
 * others, whose records then refer to that member's record.
 *
 * Asking: the processor "xdedup", first of the write phase (an unchanged
 * visit's walk skips to it too), runs before "warc" decides what to
 * write. The local index stays the fast path: Redis is asked (one GET of
 * PREFIX:dd:sha1:DIGEST, kria/xdedup.h) only for a complete 2xx payload
 * that no original here holds, known from what "change" found (a changed
 * URI) or from the URI's own original (an unchanged one, whose last
 * record may have been a revisit of another member's). The walk waits
 * (KR_PROC_ASYNC) for the answer at most cluster.shared-dedup-wait; then,
 * or with Redis away, it goes on with the local index alone (counted).
 * An answer that names an original is handed to the WARC writer on the
 * fetch (f->ad.far_*): when no original here holds the payload, the
 * visit becomes an identical-payload-digest revisit of it. An answer
 * after the wait finds its visit gone on and is dropped. Such a revisit
 * is not an original here (the local originals name only this state's
 * URIs), so the answers are remembered in a small direct-mapped cache
 * (FAR_SLOTS, by payload digest): a payload met again on this member's
 * hosts (an asset shared by many sites) costs Redis nothing more in
 * this run. What it remembers stays true: a record, once written, is
 * not taken back, whatever becomes of the key in Redis.
 *
 * Publishing: each new original the WARC writer records (a whole 2xx
 * response with a payload digest; not robots.txt) is kept here and
 * SET ... NX PX ttl (the first writer wins) once the store's commit
 * after it holds: then its record is as durable as the local originals
 * (warc.durability; the same test as the links' acknowledgement,
 * cluster.c). At most PUB_MAX wait, for the commit or for Redis; past
 * that, or when Redis refuses the write (maxmemory, noeviction), an
 * original is not shared (counted): its payload is then archived again
 * in full by a member that meets it, which costs bytes, never a wrong
 * reference. Those waiting when the crawl stops are not shared either.
 *
 * Redis's memory: one key per distinct payload archived within
 * cluster.shared-dedup-ttl (the TTL runs from the first writer's SET).
 *
 * Sections: the module, asking, publishing, the processor.
 */
#include "clusterdedup.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "archive.h"
#include "cluster.h"
#include "crawl.h"
#include "internal.h"
#include "kria/xdedup.h"
#include "log.h"
#include "store.h"

#define PUB_MAX 4096   /* originals waiting to be published (~250 bytes each) */
#define FAR_SLOTS 4096 /* Redis's answers remembered (~150 bytes each in use) */

/* One GET out. */
typedef struct lookup {
  struct kr_crawl_xdedup *x;
  kr_fetch_t *f;               /* NULL once its visit went on without it */
  uint64_t deadline;           /* loop time (ms) its visit waits until */
  struct lookup *prev, *next;  /* the waiting ones, oldest first */
} lookup_t;

/* An answer remembered: another member's original of payload digest d. */
typedef struct far {
  uint8_t d[KR_SHA1_LEN];
  uint64_t date;               /* 0: a free slot */
  char rid[KR_WARC_ID_SIZE];
  char *url;
} far_t;

/* One original to publish. */
typedef struct pub {
  char *key, *val;
} pub_t;

struct kr_crawl_xdedup {
  kr_crawl_t *c;
  char *prefix, *node;
  uint64_t wait_ms;
  char ttl[24];                /* PX argument */
  uv_timer_t timer;            /* the oldest waiting lookup's deadline */
  int timer_init;
  lookup_t *head, *tail;       /* waiting lookups */
  pub_t pub[PUB_MAX];
  size_t npub;
  far_t *far;                  /* FAR_SLOTS, by the digest's first bytes */
  int stopped;
};

/* ---- the module ----------------------------------------------------------------- */

int kr__crawl_xdedup_setup(kr_crawl_t *c, kr_processor_t *p) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  if (!kr_config_str(g, KR_CFG_CLUSTER_REDIS)[0] || !kr_config_bool(g, KR_CFG_CLUSTER_SHARED_DEDUP))
    return 1;
  if (!c->warc) {
    KR_LOG(KR_LOG_WARN, NULL, "cluster.shared-dedup: no WARC files (warc.enabled = false), "
           "nothing to share");
    return 1;
  }
  kr_crawl_xdedup_t *x = kr_xcalloc(1, sizeof *x);
  x->c = c;
  x->prefix = kr_xstrdup(kr_config_str(g, KR_CFG_CLUSTER_PREFIX));
  x->node = kr_xstrdup(kr_config_str(g, KR_CFG_CLUSTER_NODE));
  x->wait_ms = (uint64_t)kr_config_ms(g, KR_CFG_CLUSTER_SHARED_DEDUP_WAIT);
  snprintf(x->ttl, sizeof x->ttl, "%lld", (long long)kr_config_ms(g, KR_CFG_CLUSTER_SHARED_DEDUP_TTL));
  x->far = kr_xcalloc(FAR_SLOTS, sizeof *x->far);
  c->xdedup = x;
  p->data = c;
  return 0;
}

void kr__crawl_xdedup_close(kr_crawl_t *c) {
  kr_crawl_xdedup_t *x = c->xdedup;
  if (!x) return;
  for (size_t i = 0; i < x->npub; i++) {
    free(x->pub[i].key);
    free(x->pub[i].val);
  }
  for (size_t i = 0; i < FAR_SLOTS; i++) free(x->far[i].url);
  free(x->far);
  free(x->prefix);
  free(x->node);
  free(x);
  c->xdedup = NULL;
}

/* ---- asking -------------------------------------------------------------------- */

static far_t *far_slot(kr_crawl_xdedup_t *x, const uint8_t *d) {
  uint32_t h;
  memcpy(&h, d, sizeof h); /* a SHA-1's bytes are as good as any hash */
  return &x->far[h % FAR_SLOTS];
}

/* f's payload is another member's original: for the WARC writer (in f's
 * arena). 0 when out of room. */
static int far_use(kr_fetch_t *f, const char *url, size_t url_len, const char *rid,
                   size_t rid_len, uint64_t date) {
  char *u = kr_arena_strndup(&f->arena, url, url_len);
  char *r = kr_arena_strndup(&f->arena, rid, rid_len);
  if (!u || !r) return 0;
  f->ad.far_url = u;
  f->ad.far_rid = r;
  f->ad.far_date = date;
  f->crawl->st.xdedup_hits++;
  return 1;
}

/* Remember o as the original of payload d (the slot's last one goes). */
static void far_keep(kr_crawl_xdedup_t *x, const uint8_t *d, const kr_xdedup_orig_t *o) {
  far_t *s = far_slot(x, d);
  free(s->url);
  memcpy(s->d, d, KR_SHA1_LEN);
  memcpy(s->rid, o->rid.p, o->rid.n); /* < KR_WARC_ID_SIZE: decode checked */
  s->rid[o->rid.n] = '\0';
  s->url = kr_xstrndup(o->url.p, o->url.n);
  s->date = o->date_ms;
}

/* A remembered answer for f's payload: 1 used. */
static int far_known(kr_crawl_xdedup_t *x, kr_fetch_t *f) {
  const far_t *s = far_slot(x, f->ad.payload_digest);
  if (!s->date || memcmp(s->d, f->ad.payload_digest, KR_SHA1_LEN)) return 0;
  return far_use(f, s->url, strlen(s->url), s->rid, strlen(s->rid), s->date);
}

static void unlink_lookup(kr_crawl_xdedup_t *x, lookup_t *l) {
  if (l->prev) l->prev->next = l->next;
  else x->head = l->next;
  if (l->next) l->next->prev = l->prev;
  else x->tail = l->prev;
  l->prev = l->next = NULL;
}

/* l's visit goes on without the answer. */
static void give_up(kr_crawl_xdedup_t *x, lookup_t *l) {
  kr_fetch_t *f = l->f;
  unlink_lookup(x, l);
  l->f = NULL; /* the reply, when it comes, frees l */
  x->c->st.xdedup_local_only++;
  kr__fetch_resume(f, 0);
}

static void on_wait(uv_timer_t *t);

static void arm(kr_crawl_xdedup_t *x) {
  if (!x->head || x->stopped) return;
  uint64_t now = uv_now(&x->c->loop);
  uv_timer_start(&x->timer, on_wait, x->head->deadline > now ? x->head->deadline - now : 0, 0);
}

/* The oldest visits waited long enough. */
static void on_wait(uv_timer_t *t) {
  kr_crawl_xdedup_t *x = t->data;
  uint64_t now = uv_now(&x->c->loop);
  while (x->head && x->head->deadline <= now) give_up(x, x->head);
  arm(x);
}

/* Redis's answer for f: an original to refer to, or none. */
static void answer(kr_crawl_xdedup_t *x, kr_fetch_t *f, const redisReply *r) {
  kr_crawl_t *c = x->c;
  if (!r || r->type == REDIS_REPLY_ERROR) { /* lost or refused: as if away */
    c->st.xdedup_local_only++;
    return;
  }
  kr_xdedup_orig_t o;
  if (r->type != REDIS_REPLY_STRING || !kr_xdedup_decode(r->str, r->len, &o)) return;
  if (far_use(f, o.url.p, o.url.n, o.rid.p, o.rid.n, o.date_ms))
    far_keep(x, f->ad.payload_digest, &o);
}

static void on_get(redisAsyncContext *ac, void *r, void *privdata) {
  lookup_t *l = privdata;
  kr_crawl_xdedup_t *x = l->x;
  kr_fetch_t *f = l->f;
  (void)ac;
  if (f) {
    unlink_lookup(x, l);
    answer(x, f, r);
    kr__fetch_resume(f, 0);
    if (!x->stopped && !x->head) uv_timer_stop(&x->timer);
  }
  free(l);
}

/* GET f's payload: 1 sent (f waits), 0 not (Redis went away). */
static int ask(kr_crawl_xdedup_t *x, redisAsyncContext *ac, kr_fetch_t *f) {
  char key[256];
  if (!kr_xdedup_key(key, sizeof key, x->prefix, f->ad.payload_digest)) return 0;
  lookup_t *l = kr_xcalloc(1, sizeof *l);
  l->x = x;
  l->f = f;
  const char *argv[] = {"GET", key};
  if (redisAsyncCommandArgv(ac, on_get, l, 2, argv, NULL) != REDIS_OK) {
    free(l);
    return 0;
  }
  x->c->st.xdedup_lookups++;
  if (!x->timer_init) {
    uv_timer_init(&x->c->loop, &x->timer);
    x->timer.data = x;
    x->timer_init = 1;
  }
  l->deadline = uv_now(&x->c->loop) + x->wait_ms;
  l->prev = x->tail;
  if (x->tail) x->tail->next = l;
  else x->head = l;
  x->tail = l;
  if (x->head == l) arm(x);
  return 1;
}

void kr__crawl_xdedup_stop(kr_crawl_t *c) {
  kr_crawl_xdedup_t *x = c->xdedup;
  if (!x || x->stopped) return;
  x->stopped = 1; /* the visits resumed here ask nothing more */
  while (x->head) give_up(x, x->head);
  if (x->timer_init) uv_close((uv_handle_t *)&x->timer, NULL);
  c->st.xdedup_unpublished += x->npub; /* not committed yet: not shared */
  for (size_t i = 0; i < x->npub; i++) {
    free(x->pub[i].key);
    free(x->pub[i].val);
  }
  x->npub = 0;
}

/* ---- publishing ---------------------------------------------------------------- */

void kr__crawl_xdedup_original(void *ud, const uint8_t *d, uint64_t date_ms, const char *rid) {
  kr_fetch_t *f = ud;
  kr_crawl_t *c = f->crawl;
  kr_crawl_xdedup_t *x = c->xdedup;
  const kr_http_resp_t *r = f->resp;
  if (!x || x->stopped || f->is_robots || !r || r->status < 200 || r->status >= 300) return;
  if (!kr_config_bool(kr_config_global(c->cfg), KR_CFG_ADAPTIVE_DEDUPE)) return;
  if (x->npub == PUB_MAX) {
    c->st.xdedup_unpublished++;
    return;
  }
  char key[256], val[KR_XDEDUP_VALUE_MAX + 1];
  kr_xdedup_orig_t o = {.date_ms = date_ms, .rid = kr_slice_cstr(rid),
                        .node = kr_slice_cstr(x->node), .url = kr_slice(f->cf.url, f->cf.url_len)};
  if (!kr_xdedup_key(key, sizeof key, x->prefix, d) || !kr_xdedup_encode(val, sizeof val, &o))
    return; /* a URI too long to share */
  x->pub[x->npub++] = (pub_t){kr_xstrdup(key), kr_xstrdup(val)};
}

static void on_set(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_xdedup_t *x = privdata;
  const redisReply *reply = r;
  (void)ac;
  /* OK, or nil: another member was first */
  if (reply && reply->type != REDIS_REPLY_ERROR) x->c->st.xdedup_published++;
  else x->c->st.xdedup_unpublished++;
  if (reply && reply->type == REDIS_REPLY_ERROR)
    KR_LOG(KR_LOG_DEBUG, NULL, "cluster: shared dedup: Redis refused an original: %s", reply->str);
}

void kr__crawl_xdedup_turn(kr_crawl_t *c) {
  kr_crawl_xdedup_t *x = c->xdedup;
  if (!x || x->stopped || !x->npub) return;
  /* committed: no transaction open and no write kept back for a sync */
  kr_store_t *st = kr_frontier_store(c->frontier);
  if (kr_store_in_tx(st) || kr_store_has_kept(st)) return;
  redisAsyncContext *ac = kr__crawl_cluster_redis(c);
  if (!ac) return; /* they wait for Redis (at most PUB_MAX) */
  for (size_t i = 0; i < x->npub; i++) {
    const char *argv[] = {"SET", x->pub[i].key, x->pub[i].val, "NX", "PX", x->ttl};
    if (redisAsyncCommandArgv(ac, on_set, x, (int)ARRAY_SIZE(argv), argv, NULL) != REDIS_OK)
      c->st.xdedup_unpublished++;
    free(x->pub[i].key);
    free(x->pub[i].val);
  }
  x->npub = 0;
}

/* ---- the processor ------------------------------------------------------------- */

/* Does an original here hold f's payload? For a changed URI "change"
 * looked it up (f->ad.dup_*); otherwise the URI's own original, unless
 * its last record was a revisit of another member's. */
static int known_here(kr_crawl_t *c, kr_fetch_t *f) {
  if (f->ad.dup_url) return 1;
  if (f->ad.content == KR_CONTENT_CHANGED) return !f->ad.dup_miss;
  kr_original_t o;
  int rc = kr_store_original_get(kr_frontier_store(c->frontier), f->curi->fp, &o);
  if (rc < 0) return 1; /* the store's trouble: logged where it matters */
  return rc == 1 && o.digest_len == KR_SHA1_LEN && o.url && o.rid &&
         memcmp(o.digest, f->ad.payload_digest, KR_SHA1_LEN) == 0;
}

static int xdedup_run(kr_chain_fetch_t *cf, kr_processor_t *self) {
  kr_fetch_t *f = container_of(cf, kr_fetch_t, cf);
  kr_crawl_t *c = self->data;
  kr_crawl_xdedup_t *x = c->xdedup;
  const kr_http_resp_t *r = f->resp;
  if (!x || x->stopped || !f->curi || f->decided || f->disp != KR_DISP_FINISH || !r ||
      !r->status || !kr_archive_writing(c->warc))
    return KR_PROC_NEXT;
  redisAsyncContext *ac = kr__crawl_cluster_redis(c);
  kr_xdedup_visit_t v = {
      .on = kr_config_bool(kr_config_global(c->cfg), KR_CFG_ADAPTIVE_DEDUPE),
      .status = r->status,
      .complete = f->ad.has_payload_digest && r->payload_bytes && !r->truncated && !f->http_err,
      .not_modified = r->status == 304 || f->ad.midfetch_abort,
      .robots = f->is_robots,
      .redis_up = ac != NULL,
  };
  /* the store only when the rest would ask */
  v.local = kr_xdedup_decide(&v) != KR_XDEDUP_SKIP && known_here(c, f);
  kr_xdedup_step_t step = kr_xdedup_decide(&v);
  if (step != KR_XDEDUP_SKIP && far_known(x, f)) return KR_PROC_NEXT;
  if (step == KR_XDEDUP_ASK && ask(x, ac, f)) return KR_PROC_ASYNC;
  if (step != KR_XDEDUP_SKIP) c->st.xdedup_local_only++; /* away, or the GET not sent */
  return KR_PROC_NEXT;
}

const kr_processor_t kr_proc_xdedup = {.name = "xdedup", .run = xdedup_run};
