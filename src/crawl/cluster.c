/*
 * The crawl's side of a cluster (cluster.h): several kria instances crawl
 * as one, each host owned by one member (kria/cluster.h), links crossing
 * between members through Redis Streams, one stream per member
 * (PREFIX:links:NODE).
 *
 * Out: a link whose host another member owns is written to the outbox
 * table in the transaction that records the fetch which found it (so it
 * is as durable as that fetch), then XADDed to the owner's stream by the
 * pump; the row is deleted only once Redis answered the XADD with an
 * entry id. A crash or a lost connection before that sends the row
 * again: the owner's frontier absorbs the duplicate. A small cache of
 * the links already put in the outbox spares Redis the same navigation
 * link from every page.
 *
 * In: the member reads its own stream with a consumer group (group
 * PREFIX, consumer NODE) on a second connection, XREADGROUP ... BLOCK,
 * so the loop never waits; entries are added to the frontier, committed,
 * and only then XACKed (and XDELed: nobody reads them again). At every
 * (re)connection the entries delivered before and never acknowledged
 * (a crash between the read and the commit) are read first (ID 0).
 *
 * Redis away: the connections are retried with a back-off (100 ms up to
 * 2 s); links wait in the outbox. At cluster.outbox-max rows dispatch is
 * held (fetches running finish, their links still go in) until Redis took
 * the outbox below half the bound: never a link dropped.
 *
 * Heartbeat: every 2 s the member writes its figures to the hash
 * PREFIX:member:NODE (expiring 10 s after), which `kria status --cluster`
 * reads with every stream's length and pending entries.
 *
 * Redis must keep what it confirmed (appendonly yes, appendfsync always;
 * README) for "no link lost" to hold across a crash of Redis itself.
 *
 * Sections: hiredis on the loop, setup, the outbox and the pump, the
 * stream reader, connections, state.
 */
#include "cluster.h"
#include "clusterdedup.h"

#include "clusterepoch.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "crawl.h"
#include "internal.h"
#include "kria/cluster.h"
#include "kria/fp.h"
#include "log.h"
#include "store.h"

#define XADD_WINDOW 256        /* XADDs awaiting their reply at most */
#define READ_COUNT "256"       /* entries per XREADGROUP */
#define READ_BLOCK_MS "2000"   /* a blocked read returns empty this often */
#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 2000
#define SENT_SLOTS (1u << 16)  /* links put in the outbox lately (fp cache) */
#define HEARTBEAT_MS 2000      /* a member's figures in Redis this often ... */
#define HEARTBEAT_TTL_MS 10000 /* ... and gone this long after its last */
#define OWNER_SLOTS 4096       /* hosts whose owner is known (a page's links share few) */

struct kr_crawl_cluster {
  kr_crawl_t *c;
  kr_cluster_members_t members;
  uint64_t epoch;               /* of the member list (clusterepoch.h) */
  int self;                     /* this member's index */
  char **streams;               /* PREFIX:links:NAME, per member */
  char *group;                  /* the consumer group: PREFIX */
  char addr[256];               /* as configured, for the log */
  char host[256];               /* IP, name or socket path */
  int port;                     /* 0: a unix socket */
  redisAsyncContext *wr;        /* XADD */
  redisAsyncContext *rd;        /* XGROUP, XREADGROUP, XACK, XDEL */
  int wr_up, rd_up;             /* connected */
  int up;                       /* last announced: 1 up, 0 down, -1 never yet */
  uv_timer_t retry;             /* reconnect */
  uv_timer_t beat;              /* heartbeat: PREFIX:member:NODE */
  char *beat_key;
  uint32_t retry_ms;
  int closing;
  /* the outbox */
  uint64_t outbox_n;            /* rows */
  uint64_t outbox_max;
  int64_t sent_upto;            /* rows up to this id were handed to the writer */
  uint32_t xadds_out;           /* XADDs awaiting a reply */
  int held;                     /* dispatch held at the bound */
  uint64_t *sent;               /* direct-mapped: keys of links put in the outbox */
  struct owner_slot {
    uint64_t host;              /* kr_fp of the host, 0: free */
    int owner;                  /* member index */
  } *owners;                    /* direct-mapped: a decision costs ~1 µs (libpsl) */
  /* the reader */
  int reading;                  /* an XREADGROUP is out */
  char pend_from[64];           /* "": new entries (">"); else pending ones after it */
  char **acks;                  /* ids read, acknowledged once committed */
  size_t nacks;
};

static void connect_all(kr_crawl_cluster_t *cl);
static void read_next(kr_crawl_cluster_t *cl);
static void hold(kr_crawl_cluster_t *cl, int held);
static void on_beat(uv_timer_t *t);
static void on_epoch(redisAsyncContext *ac, void *r, void *privdata);

/* ---- hiredis on the loop -------------------------------------------------------- */

/* hiredis drives its socket through five event hooks; these put it on a
 * uv_poll_t of the crawl's loop. Not the adapter hiredis 0.14.1 ships
 * (adapters/libuv.h): its poll callback returns on a nonzero status, and
 * libuv reports POLLERR (a refused connect, a reset connection) exactly
 * so, stopping the handle, so hiredis never learned of the error and the
 * connection hung for good (later hiredis versions pass the error on as
 * here). An error is handed to hiredis as readiness of what it waits
 * for: its read or connect check then finds the socket's error and
 * disconnects. */
typedef struct rpoll {
  uv_poll_t handle;
  redisAsyncContext *ac;        /* NULL once hiredis cleaned up */
  int events;                   /* UV_READABLE | UV_WRITABLE wanted */
} rpoll_t;

static void rpoll_cb(uv_poll_t *h, int status, int events) {
  rpoll_t *p = h->data;
  if (status < 0) events = p->events ? p->events : UV_READABLE;
  if (p->ac && (events & UV_READABLE)) redisAsyncHandleRead(p->ac);
  if (p->ac && (events & UV_WRITABLE)) redisAsyncHandleWrite(p->ac);
  /* libuv stopped the handle with the error: still wanted, poll again */
  if (status < 0 && p->ac && p->events) uv_poll_start(&p->handle, p->events, rpoll_cb);
}

static void rpoll_set(rpoll_t *p, int add, int ev) {
  p->events = add ? p->events | ev : p->events & ~ev;
  if (p->events) uv_poll_start(&p->handle, p->events, rpoll_cb);
  else uv_poll_stop(&p->handle);
}
static void rpoll_add_read(void *d) { rpoll_set(d, 1, UV_READABLE); }
static void rpoll_del_read(void *d) { rpoll_set(d, 0, UV_READABLE); }
static void rpoll_add_write(void *d) { rpoll_set(d, 1, UV_WRITABLE); }
static void rpoll_del_write(void *d) { rpoll_set(d, 0, UV_WRITABLE); }
static void rpoll_closed(uv_handle_t *h) { free(h->data); }

/* hiredis frees the context (and closes the socket) right after this */
static void rpoll_cleanup(void *d) {
  rpoll_t *p = d;
  p->ac = NULL;
  uv_close((uv_handle_t *)&p->handle, rpoll_closed);
}

static int rpoll_attach(redisAsyncContext *ac, uv_loop_t *loop) {
  rpoll_t *p = kr_xcalloc(1, sizeof *p);
  if (uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
    free(p);
    return -1;
  }
  p->handle.data = p;
  p->ac = ac;
  ac->ev.data = p;
  ac->ev.addRead = rpoll_add_read;
  ac->ev.delRead = rpoll_del_read;
  ac->ev.addWrite = rpoll_add_write;
  ac->ev.delWrite = rpoll_del_write;
  ac->ev.cleanup = rpoll_cleanup;
  return 0;
}

/* ---- setup -------------------------------------------------------------------- */

static int cfg_fail(char *err, size_t errlen, const char *msg) {
  snprintf(err, errlen, "cluster: %s", msg);
  return KR_ECONFIG;
}

int kr__crawl_cluster_open(kr_crawl_t *c, char *err, size_t errlen) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  const char *redis = kr_config_str(g, KR_CFG_CLUSTER_REDIS);
  if (!redis[0]) return 0;
  const char *node = kr_config_str(g, KR_CFG_CLUSTER_NODE);
  size_t nn = kr_config_list_len(g, KR_CFG_CLUSTER_NODES);
  if (!node[0]) return cfg_fail(err, errlen, "cluster.node (this member's name) is not set");
  if (nn == 0) return cfg_fail(err, errlen, "cluster.nodes (every member's name) is empty");
  kr_crawl_cluster_t *cl = kr_xcalloc(1, sizeof *cl);
  cl->c = c;
  c->cluster = cl;
  /* cluster.nodes, or the list a membership change made (clusterepoch.h) */
  int rc = kr__crawl_epoch_open(c, &cl->members, &cl->epoch, err, errlen);
  if (rc) return rc;
  nn = cl->members.n;
  cl->self = kr_cluster_member_index(&cl->members, node, strlen(node));
  if (cl->self < 0) {
    snprintf(err, errlen, "cluster: cluster.node = %s is not among cluster.nodes (or the cluster's "
             "members since its last rebalance)", node);
    return KR_ECONFIG;
  }
  if (kr_cluster_parse_redis(redis, cl->host, sizeof cl->host, &cl->port))
    return cfg_fail(err, errlen, "cluster.redis: expected HOST:PORT or a socket path");
  snprintf(cl->addr, sizeof cl->addr, "%s", redis);
  const char *prefix = kr_config_str(g, KR_CFG_CLUSTER_PREFIX);
  cl->group = kr_xstrdup(prefix);
  cl->streams = kr_xcalloc(nn, sizeof *cl->streams);
  for (size_t i = 0; i < nn; i++)
    cl->streams[i] = kr_xasprintf("%s:links:%s", prefix, cl->members.v[i].name);
  cl->outbox_max = (uint64_t)kr_config_int(g, KR_CFG_CLUSTER_OUTBOX_MAX);
  int64_t n = kr_store_outbox_count(kr_frontier_store(c->frontier));
  if (n < 0) {
    snprintf(err, errlen, "cluster: cannot read the outbox of %s",
             kr_store_path(kr_frontier_store(c->frontier)));
    return KR_EDB;
  }
  cl->outbox_n = (uint64_t)n;
  cl->sent = kr_xcalloc(SENT_SLOTS, sizeof *cl->sent);
  cl->owners = kr_xcalloc(OWNER_SLOTS, sizeof *cl->owners);
  cl->up = -1;
  cl->retry_ms = RETRY_MIN_MS;
  cl->pend_from[0] = '0';
  uv_timer_init(&c->loop, &cl->retry);
  cl->retry.data = cl;
  cl->beat_key = kr_xasprintf("%s:member:%s", prefix, node);
  uv_timer_init(&c->loop, &cl->beat);
  cl->beat.data = cl;
  uv_timer_start(&cl->beat, on_beat, HEARTBEAT_MS, HEARTBEAT_MS);
  /* hiredis writes with write(2): a Redis gone must not kill the crawl */
  signal(SIGPIPE, SIG_IGN);
  KR_LOG(KR_LOG_INFO, NULL,
         "cluster: member %s of %zu (%s), Redis %s, %" PRIu64 " links waiting in the outbox",
         node, nn, prefix, cl->addr, cl->outbox_n);
  if (cl->outbox_n >= cl->outbox_max) hold(cl, 1); /* full since the last run */
  connect_all(cl);
  return 0;
}

/* ---- the outbox and the pump ------------------------------------------------------- */

static void hold(kr_crawl_cluster_t *cl, int held) {
  if (cl->held == held) return;
  cl->held = held;
  if (held) {
    cl->c->st.cluster_outbox_full++;
    KR_LOG(KR_LOG_WARN, NULL,
           "cluster: the outbox holds %" PRIu64 " links (cluster.outbox-max): no new fetches "
           "until Redis %s takes them",
           cl->outbox_n, cl->addr);
  } else {
    KR_LOG(KR_LOG_NOTICE, NULL, "cluster: the outbox is down to %" PRIu64 " links: fetching again",
           cl->outbox_n);
  }
  kr__crawl_cluster_hold(cl->c, held);
}

int kr__crawl_cluster_divert(kr_crawl_t *c, const kr_link_t *l) {
  kr_crawl_cluster_t *cl = c->cluster;
  if (!cl) return 0;
  kr_slice_t host = kr_cluster_host_of_url(l->url, l->url_len);
  if (!host.n) return 0;
  uint64_t hk = kr_fp(host.p, host.n);
  struct owner_slot *os = &cl->owners[hk & (OWNER_SLOTS - 1)];
  if (os->host != hk) {
    os->host = hk;
    os->owner = (int)kr_cluster_owner_of_domain(&cl->members, kr_cluster_domain_of_host(host));
  }
  int owner = os->owner;
  if (owner == cl->self) return 0;
  /* Already in the outbox in this or an earlier transaction: committed
   * no later than the fetch that finds it again, so it can be skipped. */
  uint64_t key = kr_fp(l->url, l->url_len) * 31 + (uint64_t)l->directive;
  uint64_t *slot = &cl->sent[key & (SENT_SLOTS - 1)];
  if (*slot == key) return 1;
  kr_store_outbox_t o = {.member = cl->members.v[owner].name,
                         .url = l->url,
                         .url_len = l->url_len,
                         .hop_path = l->hop_path ? l->hop_path : "",
                         .hop_len = l->hop_path ? l->hop_len : 0,
                         .via = l->via,
                         .directive = l->directive};
  int rc = kr_store_outbox_put(kr_frontier_store(c->frontier), &o);
  if (rc == KR_EINVAL) return 1; /* no URL: nothing to send, nothing to crawl here */
  if (rc < 0) return rc;
  *slot = key;
  cl->outbox_n++;
  if (cl->outbox_n >= cl->outbox_max) hold(cl, 1);
  return 1;
}

long kr__crawl_cluster_divert_links(kr_crawl_t *c, kr_link_t *links, size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    int rc = kr__crawl_cluster_divert(c, &links[i]);
    if (rc < 0) return rc;
    if (rc == 0) links[kept++] = links[i];
  }
  return (long)kept;
}

static void on_xadd(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_cluster_t *cl = ac->data;
  redisReply *reply = r;
  int64_t id = (int64_t)(intptr_t)privdata;
  if (cl->xadds_out) cl->xadds_out--;
  if (!reply || cl->closing || !cl->c->frontier) return; /* sent again after the reconnection */
  if (reply->type != REDIS_REPLY_STRING) {
    KR_LOG(KR_LOG_WARN, NULL, "cluster: Redis %s refused a link: %s", cl->addr,
           reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
    if (id <= cl->sent_upto) cl->sent_upto = id - 1; /* again at the next turn */
    return;
  }
  int rc = kr_store_outbox_del(kr_frontier_store(cl->c->frontier), id);
  if (rc < 0) {
    kr__crawl_fail(cl->c, rc);
    return;
  }
  cl->c->st.cluster_sent++;
  if (cl->outbox_n) cl->outbox_n--;
  if (cl->held && cl->outbox_n <= cl->outbox_max / 2) hold(cl, 0);
}

static int send_row(void *ud, const kr_store_outbox_t *o) {
  kr_crawl_cluster_t *cl = ud;
  /* the owner now: the members may have changed since the row was written */
  int m = kr_cluster_owner_of_url(&cl->members, o->url, o->url_len);
  cl->sent_upto = o->id;
  if (m < 0) m = cl->self; /* no host: the owner's frontier refuses it, as it would here */
  char via[24], dir[8];
  snprintf(via, sizeof via, "%" PRIu64, o->via);
  snprintf(dir, sizeof dir, "%d", o->directive);
  const char *argv[] = {"XADD", cl->streams[m], "*", "u", o->url, "h", o->hop_path,
                        "v", via, "d", dir, "s", cl->members.v[cl->self].name};
  size_t lens[ARRAY_SIZE(argv)];
  for (size_t i = 0; i < ARRAY_SIZE(argv); i++) lens[i] = strlen(argv[i]);
  lens[4] = o->url_len;
  lens[6] = o->hop_len;
  if (redisAsyncCommandArgv(cl->wr, on_xadd, (void *)(intptr_t)o->id, (int)ARRAY_SIZE(argv),
                            argv, lens) != REDIS_OK)
    return -1; /* the connection is going: the disconnection resets sent_upto */
  cl->xadds_out++;
  return 0;
}

static void ack_committed(kr_crawl_cluster_t *cl);

void kr__crawl_cluster_turn(kr_crawl_t *c) {
  kr_crawl_cluster_t *cl = c->cluster;
  if (!cl || cl->closing || !c->frontier) return;
  ack_committed(cl);
  kr__crawl_xdedup_turn(c);
  /* rows not handed to Redis yet exist only when the outbox holds more
   * than the XADDs awaiting their reply */
  while (cl->wr_up && cl->xadds_out < XADD_WINDOW && cl->outbox_n > cl->xadds_out) {
    int64_t n = kr_store_outbox_each(kr_frontier_store(c->frontier), cl->sent_upto,
                                     XADD_WINDOW - cl->xadds_out, send_row, cl);
    if (n == KR_EDB) {
      kr__crawl_fail(c, KR_EDB);
      return;
    }
    if (n <= 0) break;
  }
}

/* ---- the stream reader ------------------------------------------------------------- */

/* The value of field name in an entry's field list, NULL when absent. */
static const redisReply *field(const redisReply *fields, const char *name) {
  if (!fields || fields->type != REDIS_REPLY_ARRAY) return NULL;
  for (size_t i = 0; i + 1 < fields->elements; i += 2) {
    const redisReply *k = fields->element[i];
    if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0 &&
        fields->element[i + 1]->type == REDIS_REPLY_STRING)
      return fields->element[i + 1];
  }
  return NULL;
}

/* Add one entry's link to the frontier (during a store drain the
 * frontier holds it back and adds it after: ack_committed waits for
 * that). 0 or KR_EDB. */
static int take_entry(kr_crawl_cluster_t *cl, const redisReply *fields, uint64_t now) {
  kr_crawl_t *c = cl->c;
  const redisReply *u = field(fields, "u"), *h = field(fields, "h"), *v = field(fields, "v"),
                   *d = field(fields, "d");
  if (!u || !u->len) return 0; /* deleted, or not ours to read */
  c->st.cluster_received++;
  kr_link_t l = {.url = u->str,
                 .url_len = u->len,
                 .hop_path = h ? h->str : "",
                 .hop_len = h ? h->len : 0,
                 .via = v ? strtoull(v->str, NULL, 10) : 0,
                 .directive = d ? atoi(d->str) : KR_DIRECTIVE_NORMAL};
  if (l.directive < KR_DIRECTIVE_NORMAL || l.directive > KR_DIRECTIVE_HIGH)
    l.directive = KR_DIRECTIVE_NORMAL;
  /* sent under an older member list: on to its owner now */
  int rc = kr__crawl_cluster_divert(c, &l);
  if (rc) return rc < 0 ? rc : 0;
  rc = kr_frontier_add(c->frontier, &l, now);
  if (rc == KR_EDB) return rc;
  if (rc == KR_FRONTIER_HELD) return 0;
  if (rc == 0) c->st.cluster_duplicates++;
  if (rc < 0) KR_LOG(KR_LOG_WARN, u->str, "cluster: a link from %s refused: %s",
                     (field(fields, "s") ? field(fields, "s")->str : "?"), kr_strerror(rc));
  return 0;
}

static void on_ack(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_cluster_t *cl = ac->data;
  redisReply *reply = r;
  (void)privdata;
  if (reply && reply->type == REDIS_REPLY_INTEGER && !cl->closing)
    cl->c->st.cluster_acked += (uint64_t)reply->integer;
}

static void on_read(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_cluster_t *cl = ac->data;
  redisReply *reply = r;
  (void)privdata;
  cl->reading = 0;
  if (!reply || cl->closing || !cl->c->frontier) return;
  if (reply->type == REDIS_REPLY_ERROR) {
    /* NOGROUP: Redis lost its data (a restart without persistence);
     * anything else: log it and let the reconnection start over */
    KR_LOG(KR_LOG_WARN, NULL, "cluster: reading %s from Redis %s: %s", cl->streams[cl->self],
           cl->addr, reply->str);
    redisAsyncDisconnect(cl->rd);
    return;
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) { /* BLOCK ran out */
    if (cl->pend_from[0]) cl->pend_from[0] = 0;
    read_next(cl);
    return;
  }
  const redisReply *stream = reply->element[0];
  const redisReply *entries = stream->type == REDIS_REPLY_ARRAY && stream->elements == 2
                                  ? stream->element[1] : NULL;
  size_t n = entries && entries->type == REDIS_REPLY_ARRAY ? entries->elements : 0;
  uint64_t now = kr_crawl_now(cl->c);
  cl->acks = kr_xrealloc(cl->acks, (n ? n : 1) * sizeof *cl->acks);
  for (size_t i = 0; i < n; i++) {
    const redisReply *e = entries->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
        e->element[0]->type != REDIS_REPLY_STRING)
      continue;
    int rc = take_entry(cl, e->elements > 1 ? e->element[1] : NULL, now);
    if (rc < 0) {
      kr__crawl_fail(cl->c, rc);
      return;
    }
    cl->acks[cl->nacks++] = kr_xstrdup(e->element[0]->str);
    if (cl->pend_from[0])
      snprintf(cl->pend_from, sizeof cl->pend_from, "%s", e->element[0]->str);
  }
  if (cl->pend_from[0] && n == 0) cl->pend_from[0] = 0; /* the pending ones are done */
  /* Acknowledged once the crawl's next commit took them (kr__crawl_cluster_turn):
   * a crash before leaves them pending, read again at the next start. */
  if (!cl->nacks) read_next(cl);
}

/* After the turn's commit: acknowledge what it made durable, read on.
 * Durable: no transaction open, and nothing held back during a store
 * drain, neither by the frontier (its queue of adds, replayed after)
 * nor by the store (its kept writes). */
static void ack_committed(kr_crawl_cluster_t *cl) {
  if (!cl->nacks) return;
  kr_store_t *st = kr_frontier_store(cl->c->frontier);
  if (kr_store_in_tx(st) || kr_store_has_kept(st)) return;
  kr_frontier_stats_t fs;
  kr_frontier_stats(cl->c->frontier, &fs);
  if (fs.held_back) return;
  if (cl->rd_up) {
    size_t n = cl->nacks;
    const char **argv = kr_xcalloc(n + 3, sizeof *argv);
    argv[0] = "XACK", argv[1] = cl->streams[cl->self], argv[2] = cl->group;
    for (size_t i = 0; i < n; i++) argv[3 + i] = cl->acks[i];
    redisAsyncCommandArgv(cl->rd, on_ack, NULL, (int)(n + 3), argv, NULL);
    /* nobody reads them again: the stream stays small */
    argv[1] = "XDEL", argv[2] = cl->streams[cl->self];
    redisAsyncCommandArgv(cl->rd, NULL, NULL, (int)(n + 2), argv + 1, NULL);
    free(argv);
  } /* else: pending in Redis, read again after the reconnection */
  for (size_t i = 0; i < cl->nacks; i++) free(cl->acks[i]);
  cl->nacks = 0;
  read_next(cl);
}

static void read_next(kr_crawl_cluster_t *cl) {
  if (!cl->rd_up || cl->reading || cl->closing || cl->nacks) return;
  const char *self = cl->members.v[cl->self].name;
  const char *pending = cl->pend_from[0] ? cl->pend_from : NULL;
  const char *argv[] = {"XREADGROUP", "GROUP", cl->group, self, "COUNT", READ_COUNT,
                        "BLOCK", READ_BLOCK_MS, "STREAMS", cl->streams[cl->self],
                        pending ? pending : ">"};
  int argc = (int)ARRAY_SIZE(argv);
  if (pending) { /* no BLOCK for history */
    argv[6] = argv[8], argv[7] = argv[9], argv[8] = argv[10];
    argc -= 2;
  }
  if (redisAsyncCommandArgv(cl->rd, on_read, NULL, argc, argv, NULL) == REDIS_OK) cl->reading = 1;
}

static void on_group(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_cluster_t *cl = ac->data;
  redisReply *reply = r;
  (void)privdata;
  if (!reply || cl->closing) return;
  if (reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "BUSYGROUP", 9) != 0) {
    KR_LOG(KR_LOG_WARN, NULL, "cluster: cannot create the group of %s on Redis %s: %s",
           cl->streams[cl->self], cl->addr, reply->str);
    redisAsyncDisconnect(cl->rd);
    return;
  }
  read_next(cl);
}

/* ---- heartbeat -------------------------------------------------------------------------- */

/* This member's figures into PREFIX:member:NODE, expiring unless renewed
 * (`kria status --cluster`). */
static void beat(kr_crawl_cluster_t *cl) {
  kr_crawl_t *c = cl->c;
  if (!cl->wr_up || cl->closing || !c->frontier) return;
  kr_frontier_stats_t fs;
  kr_frontier_stats(c->frontier, &fs);
  uint64_t v[] = {kr_crawl_now(c), c->st.fetched, fs.hosts, fs.c.discovered,
                  fs.c.queued, c->st.cluster_sent, c->st.cluster_received,
                  c->st.cluster_acked, cl->outbox_n, (uint64_t)cl->held};
  static const char *const names[] = {"at", "fetched", "hosts", "uris", "queued", "sent",
                                      "received", "acked", "outbox", "held"};
  char nums[ARRAY_SIZE(v)][24];
  const char *argv[2 + 2 * ARRAY_SIZE(v)];
  argv[0] = "HSET", argv[1] = cl->beat_key;
  for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
    snprintf(nums[i], sizeof nums[i], "%" PRIu64, v[i]);
    argv[2 + 2 * i] = names[i];
    argv[3 + 2 * i] = nums[i];
  }
  redisAsyncCommandArgv(cl->wr, NULL, NULL, (int)ARRAY_SIZE(argv), argv, NULL);
  char ttl[16];
  snprintf(ttl, sizeof ttl, "%d", HEARTBEAT_TTL_MS);
  const char *ex[] = {"PEXPIRE", cl->beat_key, ttl};
  redisAsyncCommandArgv(cl->wr, NULL, NULL, 3, ex, NULL);
  redisAsyncCommand(cl->wr, on_epoch, NULL, "HGET %s:members epoch", cl->group);
}

static void on_beat(uv_timer_t *t) { beat(t->data); }

/* The cluster's epoch, read with every heartbeat (clusterepoch.h). */
static void on_epoch(redisAsyncContext *ac, void *r, void *privdata) {
  kr_crawl_cluster_t *cl = ac->data;
  redisReply *reply = r;
  (void)privdata;
  if (!reply || cl->closing || !cl->c->frontier) return;
  kr__crawl_epoch_seen(cl->c, cl->epoch, reply->type == REDIS_REPLY_STRING ? reply->str : NULL);
}

/* ---- connections ----------------------------------------------------------------------- */

/* Log Redis's comings and goings once each: up when both connections
 * are, down when one failed (failed: this call reports a failure). */
static void announce(kr_crawl_cluster_t *cl, int failed) {
  int up = cl->wr_up && cl->rd_up;
  if (up && cl->up != 1) {
    KR_LOG(KR_LOG_NOTICE, NULL, "cluster: Redis %s %s: %" PRIu64 " links in the outbox to send",
           cl->addr, cl->up == -1 ? "connected" : "back", cl->outbox_n);
    cl->retry_ms = RETRY_MIN_MS;
    cl->up = 1;
  } else if (!up && failed && cl->up != 0) {
    if (cl->up == 1) {
      cl->c->st.cluster_redis_lost++;
      KR_LOG(KR_LOG_WARN, NULL, "cluster: Redis %s lost: links for other members wait in the "
             "outbox (%" PRIu64 " now)", cl->addr, cl->outbox_n);
    } else {
      KR_LOG(KR_LOG_WARN, NULL, "cluster: Redis %s unreachable: links for other members wait "
             "in the outbox", cl->addr);
    }
    cl->up = 0;
  }
}

static void on_retry(uv_timer_t *t) {
  kr_crawl_cluster_t *cl = t->data;
  connect_all(cl);
}

static void retry_later(kr_crawl_cluster_t *cl) {
  if (cl->closing) return;
  uv_timer_start(&cl->retry, on_retry, cl->retry_ms, 0);
  cl->retry_ms = cl->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : cl->retry_ms * 2;
}

static void on_connect(const redisAsyncContext *ac, int status) {
  kr_crawl_cluster_t *cl = ac->data;
  int is_wr = ac == cl->wr;
  if (status != REDIS_OK) { /* hiredis frees ac after this */
    if (is_wr) cl->wr = NULL;
    else cl->rd = NULL;
    announce(cl, 1);
    retry_later(cl);
    return;
  }
  if (is_wr) {
    cl->wr_up = 1;
    cl->sent_upto = 0; /* everything left in the outbox, from the oldest */
  } else {
    cl->rd_up = 1;
    cl->reading = 0;
    cl->pend_from[0] = '0', cl->pend_from[1] = 0; /* delivered before, never acknowledged */
    const char *argv[] = {"XGROUP", "CREATE", cl->streams[cl->self], cl->group, "0", "MKSTREAM"};
    redisAsyncCommandArgv(cl->rd, on_group, NULL, (int)ARRAY_SIZE(argv), argv, NULL);
  }
  announce(cl, 0);
  if (is_wr) {
    beat(cl);
    kr__crawl_cluster_turn(cl->c);
  }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  kr_crawl_cluster_t *cl = ac->data;
  (void)status;
  if (ac == cl->wr) {
    cl->wr = NULL;
    cl->wr_up = 0;
    cl->xadds_out = 0;
    cl->sent_upto = 0;
  } else if (ac == cl->rd) {
    cl->rd = NULL;
    cl->rd_up = 0;
    cl->reading = 0;
  }
  if (cl->closing) return;
  announce(cl, 1);
  retry_later(cl);
}

static redisAsyncContext *connect_one(kr_crawl_cluster_t *cl) {
  redisAsyncContext *ac =
      cl->port ? redisAsyncConnect(cl->host, cl->port) : redisAsyncConnectUnix(cl->host);
  if (!ac) return NULL;
  if (ac->err || rpoll_attach(ac, &cl->c->loop) != 0) {
    redisAsyncFree(ac);
    return NULL;
  }
  ac->data = cl;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  return ac;
}

static void connect_all(kr_crawl_cluster_t *cl) {
  if (cl->closing) return;
  if (!cl->wr) cl->wr = connect_one(cl);
  if (!cl->rd) cl->rd = connect_one(cl);
  if (!cl->wr || !cl->rd) {
    announce(cl, 1);
    retry_later(cl);
  }
}

void kr__crawl_cluster_stop(kr_crawl_t *c) {
  kr_crawl_cluster_t *cl = c->cluster;
  if (!cl || cl->closing) return;
  kr__crawl_xdedup_stop(c);
  cl->closing = 1;
  if (cl->retry.loop && !uv_is_closing((uv_handle_t *)&cl->retry))
    uv_close((uv_handle_t *)&cl->retry, NULL);
  if (cl->beat.loop && !uv_is_closing((uv_handle_t *)&cl->beat))
    uv_close((uv_handle_t *)&cl->beat, NULL);
  /* pending callbacks run with no reply, then the disconnection's */
  if (cl->wr) redisAsyncFree(cl->wr);
  if (cl->rd) redisAsyncFree(cl->rd);
  cl->wr = cl->rd = NULL;
  cl->wr_up = cl->rd_up = 0;
}

void kr__crawl_cluster_free(kr_crawl_t *c) {
  kr_crawl_cluster_t *cl = c->cluster;
  if (!cl) return;
  if (cl->streams)
    for (size_t i = 0; i < cl->members.n; i++) free(cl->streams[i]);
  free(cl->streams);
  free(cl->group);
  free(cl->beat_key);
  free(cl->sent);
  free(cl->owners);
  for (size_t i = 0; i < cl->nacks; i++) free(cl->acks[i]);
  free(cl->acks);
  kr_cluster_members_free(&cl->members);
  free(cl);
  c->cluster = NULL;
}

/* ---- state ---------------------------------------------------------------------------- */

void kr_crawl_cluster_state(const kr_crawl_t *c, kr_crawl_cluster_state_t *out) {
  memset(out, 0, sizeof *out);
  const kr_crawl_cluster_t *cl = c->cluster;
  if (!cl) return;
  out->on = 1;
  out->redis_up = cl->wr_up && cl->rd_up;
  out->held = cl->held;
  out->outbox = cl->outbox_n;
  out->in_flight = cl->xadds_out;
}

struct redisAsyncContext *kr__crawl_cluster_redis(const kr_crawl_t *c) {
  const kr_crawl_cluster_t *cl = c->cluster;
  return cl && cl->wr_up && !cl->closing ? cl->wr : NULL;
}

redisContext *kr_crawl_cluster_redis_blocking(const char *redis, int timeout_s) {
  char host[256];
  int port;
  if (kr_cluster_parse_redis(redis, host, sizeof host, &port)) return NULL;
  struct timeval tv = {timeout_s, 0};
  redisContext *r = port ? redisConnectWithTimeout(host, port, tv)
                         : redisConnectUnixWithTimeout(host, tv);
  if (r && !r->err) redisSetTimeout(r, tv);
  return r;
}

const kr_cluster_members_t *kr__crawl_cluster_members(const kr_crawl_t *c) {
  return c->cluster ? &c->cluster->members : NULL;
}
