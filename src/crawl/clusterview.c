/*
 * The cluster seen from one place (clusterview.h): a snapshot of every
 * member's heartbeat and stream, and the running crawl's reading of it.
 *
 * The crawl reads on the cluster's writing connection (cluster.c), never
 * waiting: the 3 commands per member go out in one pipeline, their
 * replies fill a second snapshot, which replaces the shown one when the
 * last reply is in. One reading at a time, and only when somebody asks
 * (the console's page, /cluster.json) and the shown one is older than a
 * heartbeat period: a crawl nobody watches sends Redis nothing for it,
 * and a watched one 3 commands per member every 2 s at most. A reading
 * cut short (Redis gone: hiredis answers NULL) is dropped.
 */
#include "clusterview.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "cluster.h"
#include "crawl.h"
#include "internal.h"

#define VIEW_EVERY_MS 2000 /* the heartbeat period (cluster.c) */

#define KR__BEAT_NAME(f, w) #f,
const char *const kr_clusterview_beat_names[KR_BEAT__COUNT] = {KR_CLUSTERVIEW_BEAT_FIELDS(KR__BEAT_NAME)};
#undef KR__BEAT_NAME
#define KR__BEAT_WIDTH(f, w) w,
const int kr_clusterview_beat_widths[KR_BEAT__COUNT] = {KR_CLUSTERVIEW_BEAT_FIELDS(KR__BEAT_WIDTH)};
#undef KR__BEAT_WIDTH

/* ---- the snapshot ------------------------------------------------------------------ */

void kr_clusterview_clear(kr_clusterview_member_t *m) {
  m->at = -1;
  for (size_t k = 0; k < KR_BEAT__COUNT; k++) m->beat[k] = -1;
  m->stream = -1;
  m->pending = -1;
}

int kr_clusterview_init(kr_clusterview_t *v, const kr_config_t *cfg) {
  memset(v, 0, sizeof *v);
  const kr_config_view_t *g = kr_config_global(cfg);
  const char *redis = kr_config_str(g, KR_CFG_CLUSTER_REDIS);
  if (!redis[0]) return KR_EINVAL;
  v->prefix = kr_xstrdup(kr_config_str(g, KR_CFG_CLUSTER_PREFIX));
  v->redis = kr_xstrdup(redis);
  v->self = kr_xstrdup(kr_config_str(g, KR_CFG_CLUSTER_NODE));
  v->n = kr_config_list_len(g, KR_CFG_CLUSTER_NODES);
  v->m = kr_xcalloc(v->n ? v->n : 1, sizeof *v->m);
  for (size_t i = 0; i < v->n; i++) {
    snprintf(v->m[i].name, sizeof v->m[i].name, "%s", kr_config_list_item(g, KR_CFG_CLUSTER_NODES, i));
    kr_clusterview_clear(&v->m[i]);
  }
  return 0;
}

void kr_clusterview_set_members(kr_clusterview_t *v, const kr_cluster_members_t *ms) {
  free(v->m);
  v->n = ms->n;
  v->m = kr_xcalloc(v->n ? v->n : 1, sizeof *v->m);
  for (size_t i = 0; i < v->n; i++) {
    snprintf(v->m[i].name, sizeof v->m[i].name, "%s", ms->v[i].name);
    kr_clusterview_clear(&v->m[i]);
  }
}

void kr_clusterview_free(kr_clusterview_t *v) {
  free(v->prefix);
  free(v->redis);
  free(v->self);
  free(v->m);
  memset(v, 0, sizeof *v);
}

int kr_clusterview_cmd(const kr_clusterview_t *v, size_t i, int k, const char *argv[4],
                        kr_clusterview_bufs_t bufs) {
  const char *node = v->m[i].name;
  snprintf(bufs[0], sizeof bufs[0], "%s:member:%s", v->prefix, node);
  snprintf(bufs[1], sizeof bufs[1], "%s:links:%s", v->prefix, node);
  switch (k) {
  case 0: argv[0] = "HGETALL", argv[1] = bufs[0]; return 2;
  case 1: argv[0] = "XLEN", argv[1] = bufs[1]; return 2;
  default: argv[0] = "XPENDING", argv[1] = bufs[1], argv[2] = v->prefix; return 3;
  }
}

static int64_t reply_int(const redisReply *r) {
  return r && r->type == REDIS_REPLY_INTEGER ? (int64_t)r->integer : -1;
}

void kr_clusterview_take(kr_clusterview_member_t *m, int k, const redisReply *r) {
  if (k == 1) {
    m->stream = reply_int(r);
    return;
  }
  if (k == 2) { /* summary form: [count, first, last, consumers]; NOGROUP: an error */
    m->pending = r && r->type == REDIS_REPLY_ARRAY && r->elements ? reply_int(r->element[0]) : -1;
    return;
  }
  for (size_t j = 0; r && r->type == REDIS_REPLY_ARRAY && j + 1 < r->elements; j += 2) {
    const char *f = r->element[j]->str, *val = r->element[j + 1]->str;
    if (!f || !val) continue;
    if (!strcmp(f, "at")) m->at = atoll(val);
    for (size_t b = 0; b < KR_BEAT__COUNT; b++)
      if (!strcmp(f, kr_clusterview_beat_names[b])) m->beat[b] = atoll(val);
  }
}

size_t kr_clusterview_seen(const kr_clusterview_t *v) {
  size_t seen = 0;
  for (size_t i = 0; i < v->n; i++) seen += v->m[i].at >= 0;
  return seen;
}

/* ---- the running crawl's reading ----------------------------------------------------- */

typedef struct kr_clusterview_reader kr_clusterview_reader_t;
typedef struct view_slot {
  kr_clusterview_reader_t *vw;
  size_t i;
  int k;
} view_slot_t;

struct kr_clusterview_reader {
  kr_crawl_t *c;
  kr_clusterview_t shown;       /* the last complete reading */
  kr_clusterview_t next;        /* the reading under way */
  view_slot_t *slots;            /* one per command of a reading */
  size_t out;                    /* replies still awaited */
  int broken;                    /* a reply of this reading missing */
  uint64_t started;              /* when the last reading began (ms) */
};

static void on_view_reply(redisAsyncContext *ac, void *r, void *privdata) {
  (void)ac;
  view_slot_t *s = privdata;
  kr_clusterview_reader_t *vw = s->vw;
  if (!r) vw->broken = 1; /* the connection went: this reading is lost */
  else kr_clusterview_take(&vw->next.m[s->i], s->k, r);
  if (--vw->out || vw->broken) {
    if (!vw->out) vw->broken = 0;
    return;
  }
  vw->next.taken = kr_crawl_now(vw->c);
  kr_clusterview_t t = vw->shown;
  vw->shown = vw->next;
  vw->next = t;
}

static void view_read(kr_clusterview_reader_t *vw) {
  redisAsyncContext *ac = kr__crawl_cluster_redis(vw->c);
  uint64_t now = kr_crawl_now(vw->c);
  if (!ac || vw->out || now < vw->started + VIEW_EVERY_MS) return;
  vw->started = now;
  for (size_t i = 0; i < vw->next.n; i++) {
    kr_clusterview_clear(&vw->next.m[i]);
    for (int k = 0; k < KR_CLUSTERVIEW_CMDS; k++) {
      const char *argv[4];
      kr_clusterview_bufs_t bufs;
      int argc = kr_clusterview_cmd(&vw->next, i, k, argv, bufs);
      view_slot_t *s = &vw->slots[i * KR_CLUSTERVIEW_CMDS + (size_t)k];
      if (redisAsyncCommandArgv(ac, on_view_reply, s, argc, argv, NULL) != REDIS_OK) {
        vw->broken = vw->out > 0; /* the connection is going: what went out ends NULL */
        return;
      }
      vw->out++;
    }
  }
}

const kr_clusterview_t *kr_crawl_cluster_view(kr_crawl_t *c) {
  if (!c->cluster) return NULL;
  kr_clusterview_reader_t *vw = c->cluster_view;
  if (!vw) {
    vw = c->cluster_view = kr_xcalloc(1, sizeof *vw);
    vw->c = c;
    kr_clusterview_init(&vw->shown, c->cfg);
    kr_clusterview_init(&vw->next, c->cfg);
    const kr_cluster_members_t *ms = kr__crawl_cluster_members(c);
    if (ms && ms->n) { /* the crawl's members: a rebalance may have changed cluster.nodes' */
      kr_clusterview_set_members(&vw->shown, ms);
      kr_clusterview_set_members(&vw->next, ms);
    }
    vw->slots = kr_xcalloc(vw->next.n * KR_CLUSTERVIEW_CMDS + 1, sizeof *vw->slots);
    for (size_t i = 0; i < vw->next.n; i++)
      for (int k = 0; k < KR_CLUSTERVIEW_CMDS; k++)
        vw->slots[i * KR_CLUSTERVIEW_CMDS + (size_t)k] = (view_slot_t){vw, i, k};
  }
  view_read(vw);
  vw->shown.redis_down = !kr__crawl_cluster_redis(c);
  return &vw->shown;
}

void kr__crawl_cluster_view_free(kr_crawl_t *c) {
  kr_clusterview_reader_t *vw = c->cluster_view;
  if (!vw) return;
  kr_clusterview_free(&vw->shown);
  kr_clusterview_free(&vw->next);
  free(vw->slots);
  free(vw);
  c->cluster_view = NULL;
}
