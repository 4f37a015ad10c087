/*
 * `kria cluster rebalance -c FILE --nodes LIST [--forget NAME]...
 * [--wait SECONDS]`: the coordinated step that changes the members of a
 * cluster (kria/clustermove.h), run once on every member of the old and
 * the new list, each with its own configuration, while its crawl is
 * stopped (a running crawl stops by itself within a heartbeat of seeing
 * the new epoch; its state directory's lock tells us when it is gone).
 *
 * The move from epoch E to T = E+1, in Redis under PREFIX:
 *   members           hash: epoch, nodes (T's list), prev (E's), state
 *                     (moving | stable); the first run writes it (WATCH/
 *                     MULTI), the others join when their --nodes agree
 *   move:T:to:NODE    stream: the rows NODE gains (uris rows, then the
 *                     host's row), typed column values by name
 *   move:T:exported   set: members of E whose rows are all in the streams
 *   move:T:imported   set: members of T that committed what they gain
 *   move:T:finished   set: members that dropped what they exported
 *   move:T:forgotten  set: members of E given up (--forget)
 * Each run: (1) mark its state database "moving to T"; (2) as a member
 * of E: forward the links waiting in its stream and its outbox to their
 * owners under T, send the rows of every host it loses, join exported;
 * (3) wait for every member of E to have exported (or been forgotten);
 * (4) as a member of T: import its stream in one SQLite transaction,
 * join imported; (5) wait for every member of T to have imported; (6)
 * drop the hosts it lost and record T as its epoch, in one transaction;
 * join finished (the last to finish marks the move stable and removes
 * its streams).
 *
 * So no host is crawled by two members: its old owner stops before it
 * exports, its new owner crawls only after every import committed. No
 * URI is lost: the old owner keeps its rows until every new owner's
 * import committed. Every step may be run again after a crash or a
 * timeout: a host sent twice replaces itself, a set is a set.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <sqlite3.h>

#include "cli.h"
#include "cluster.h"
#include "internal.h"
#include "kria/cluster.h"
#include "kria/clustermove.h"
#include "kria/config.h"
#include "log.h"
#include "store.h"

#define PIPE_WINDOW 256    /* commands sent before their replies are read */
#define READ_COUNT 256     /* stream entries per XRANGE */
#define LIST_MAX 20000     /* "a,b,c" of up to 256 names */

typedef struct move {
  redisContext *r;
  const char *redis, *prefix, *self;
  uint64_t epoch;              /* T */
  kr_cluster_members_t prev, next;
  char next_list[LIST_MAX];
  kr_store_t *st;
  size_t piped;                /* replies to read */
  int failed;
  int64_t outbox_upto;         /* outbox rows up to this id were sent */
  uint64_t rows, hosts, links; /* sent or taken */
} move_t;

static void usage(void) {
  fprintf(stderr, "usage: kria cluster rebalance -c FILE --nodes NAME,NAME,... "
                  "[--forget NAME]... [--wait SECONDS]\n");
}

/* ---- Redis ----------------------------------------------------------------------------- */

static int redis_failed(move_t *m, redisReply *rep) {
  if (rep && rep->type != REDIS_REPLY_ERROR) return 0;
  kr_cli_error(KR_ENET, "Redis %s: %s", m->redis,
               rep ? rep->str : (m->r->errstr[0] ? m->r->errstr : "no reply"));
  return 1;
}

/* A command whose reply does not matter but for an error. 0 or -1. */
static int cmd(move_t *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *rep = redisvCommand(m->r, fmt, ap);
  va_end(ap);
  int bad = redis_failed(m, rep);
  if (rep) freeReplyObject(rep);
  return bad ? -1 : 0;
}

/* Pipelined: append, then read the replies window by window. */
static int pipe_drain(move_t *m, size_t keep) {
  while (m->piped > keep) {
    redisReply *rep = NULL;
    if (redisGetReply(m->r, (void **)&rep) != REDIS_OK || redis_failed(m, rep)) {
      if (rep) freeReplyObject(rep);
      m->failed = 1;
      return -1;
    }
    freeReplyObject(rep);
    m->piped--;
  }
  return 0;
}

static int pipe_argv(move_t *m, int argc, const char **argv, const size_t *lens) {
  if (redisAppendCommandArgv(m->r, argc, argv, lens) != REDIS_OK) {
    m->failed = 1;
    return -1;
  }
  m->piped++;
  return m->piped >= PIPE_WINDOW ? pipe_drain(m, 0) : 0;
}

/* 1 when every member of want but those in skip is in set key; else 0
 * and the first missing one in *missing. -1 on a Redis error. */
static int set_covers(move_t *m, const char *key, const kr_cluster_members_t *want,
                      const char *skip_key, const char **missing) {
  for (size_t i = 0; i < want->n; i++) {
    redisReply *a = redisCommand(m->r, "SISMEMBER %s %s", key, want->v[i].name);
    redisReply *b = skip_key ? redisCommand(m->r, "SISMEMBER %s %s", skip_key, want->v[i].name)
                             : NULL;
    int bad = redis_failed(m, a) || (skip_key && redis_failed(m, b));
    int in = !bad && (a->integer || (b && b->integer));
    if (a) freeReplyObject(a);
    if (b) freeReplyObject(b);
    if (bad) return -1;
    if (!in) {
      *missing = want->v[i].name;
      return 0;
    }
  }
  return 1;
}

/* Wait (polling twice a second, at most wait_s) until set key covers
 * want. 0, or 2 on timeout or an error (told). */
static int wait_for(move_t *m, const char *what, const char *key, const kr_cluster_members_t *want,
                    const char *skip_key, int wait_s) {
  const char *missing = NULL, *told = NULL;
  for (int i = 0; i <= wait_s * 2; i++) {
    int rc = set_covers(m, key, want, skip_key, &missing);
    if (rc < 0) return 2;
    if (rc == 1) return 0;
    if (missing != told) {
      fprintf(stderr, "kria: cluster: waiting for %s to have %s\n", missing, what);
      told = missing;
    }
    if (i < wait_s * 2) usleep(500 * 1000);
  }
  kr_cli_error(KR_ETOTAL_TIMEOUT, "%s has not %s: run `kria cluster rebalance` with the same "
               "--nodes on it (or, if it is gone for good, --forget %s), then run this again",
               missing, what, missing);
  return 2;
}

/* ---- links: the stream and the outbox -------------------------------------------------- */

static const redisReply *field(const redisReply *fields, const char *name) {
  if (!fields || fields->type != REDIS_REPLY_ARRAY) return NULL;
  for (size_t i = 0; i + 1 < fields->elements; i += 2)
    if (fields->element[i]->type == REDIS_REPLY_STRING && !strcmp(fields->element[i]->str, name))
      return fields->element[i + 1];
  return NULL;
}

static int owner_of(const move_t *m, const char *url, size_t len) {
  return kr_cluster_owner_of_url(&m->next, url, len);
}

/* The entries of member's links stream that another member owns under T
 * go to that member's stream (the same fields), then leave this one: a
 * crash between the two sends one twice, which the frontier absorbs. */
static int forward_stream(move_t *m, const char *member) {
  char *key = kr_xasprintf("%s:links:%s", m->prefix, member);
  char from[64] = "-";
  int rc = 0;
  for (;;) {
    redisReply *rep = redisCommand(m->r, "XRANGE %s %s + COUNT %d", key, from, READ_COUNT);
    if (redis_failed(m, rep) || rep->type != REDIS_REPLY_ARRAY) {
      rc = -1;
      if (rep) freeReplyObject(rep);
      break;
    }
    size_t n = rep->elements;
    for (size_t i = 0; i < n; i++) {
      const redisReply *e = rep->element[i];
      const char *id = e->element[0]->str;
      snprintf(from, sizeof from, "(%s", id);
      const redisReply *f = e->element[1], *u = field(f, "u");
      int o = u ? owner_of(m, u->str, u->len) : -1;
      if (o < 0 || !strcmp(m->next.v[o].name, member)) continue;
      char *to = kr_xasprintf("%s:links:%s", m->prefix, m->next.v[o].name);
      const char *argv[3 + 16];
      size_t lens[3 + 16];
      int argc = 3;
      argv[0] = "XADD", argv[1] = to, argv[2] = "*";
      for (size_t j = 0; j < f->elements && argc < (int)ARRAY_SIZE(argv); j++) {
        argv[argc] = f->element[j]->str;
        lens[argc++] = f->element[j]->len;
      }
      for (int j = 0; j < 3; j++) lens[j] = strlen(argv[j]);
      pipe_argv(m, argc, argv, lens);
      free(to);
      const char *del[] = {"XDEL", key, id};
      pipe_argv(m, 3, del, NULL);
      m->links++;
    }
    freeReplyObject(rep);
    if (pipe_drain(m, 0) || m->failed) {
      rc = -1;
      break;
    }
    if (n < READ_COUNT) break;
  }
  free(key);
  return rc;
}

static int send_outbox_row(void *ud, const kr_store_outbox_t *o) {
  move_t *m = ud;
  int owner = owner_of(m, o->url, o->url_len);
  m->outbox_upto = o->id;
  if (owner < 0) return 0;
  char via[24], dir[8];
  snprintf(via, sizeof via, "%" PRIu64, o->via);
  snprintf(dir, sizeof dir, "%d", o->directive);
  char *to = kr_xasprintf("%s:links:%s", m->prefix, m->next.v[owner].name);
  const char *argv[] = {"XADD", to, "*", "u", o->url, "h", o->hop_path, "v", via, "d", dir,
                        "s", m->self};
  size_t lens[ARRAY_SIZE(argv)];
  for (size_t i = 0; i < ARRAY_SIZE(argv); i++) lens[i] = strlen(argv[i]);
  lens[4] = o->url_len;
  lens[6] = o->hop_len;
  int rc = pipe_argv(m, (int)ARRAY_SIZE(argv), argv, lens);
  free(to);
  m->links++;
  return rc;
}

/* Every link in the outbox to its owner under T (a removed member's
 * outbox would otherwise wait for ever); the rows are deleted once Redis
 * took them all. */
static int flush_outbox(move_t *m) {
  for (;;) {
    int64_t n = kr_store_outbox_each(m->st, m->outbox_upto, READ_COUNT, send_outbox_row, m);
    if (n < 0 || pipe_drain(m, 0) || m->failed) return -1;
    if (n == 0) break;
  }
  if (!m->outbox_upto) return 0;
  kr_store_move_t *mv;
  if (kr_store_move_begin(m->st, &mv)) return -1;
  if (kr_store_move_outbox_clear(mv, m->outbox_upto)) {
    kr_store_move_rollback(mv);
    return -1;
  }
  return kr_store_move_commit(mv) ? -1 : 0;
}

/* ---- rows ------------------------------------------------------------------------------ */

/* A host this member has that another owns under T. */
static int leaves(void *ud, const char *name, size_t len) {
  move_t *m = ud;
  kr_slice_t host = kr_cluster_host_of_key(kr_slice(name, len));
  if (!host.n) return 0;
  size_t o = kr_cluster_owner_of_domain(&m->next, kr_cluster_domain_of_host(host));
  return strcmp(m->next.v[o].name, m->self) != 0 ||
         kr_cluster_member_index(&m->next, m->self, strlen(m->self)) < 0;
}

/* A column's value on the wire: a type letter, then the value. */
static size_t val_encode(const kr_store_val_t *v, char *num, size_t numlen, const char **p) {
  switch (v->type) {
  case SQLITE_INTEGER: *p = num; return (size_t)snprintf(num, numlen, "i%" PRId64, v->i);
  case SQLITE_FLOAT: *p = num; return (size_t)snprintf(num, numlen, "r%.17g", v->d);
  default: *p = "n"; return 1;
  }
}

static int send_row(void *ud, const char *table, const char *host, const kr_store_val_t *v,
                    size_t n) {
  move_t *m = ud;
  kr_slice_t h = kr_cluster_host_of_key(kr_slice_cstr(host));
  size_t o = kr_cluster_owner_of_domain(&m->next, kr_cluster_domain_of_host(h));
  char *to = kr_xasprintf("%s:move:%" PRIu64 ":to:%s", m->prefix, m->epoch, m->next.v[o].name);
  const char *argv[7 + 2 * KR_STORE_MOVE_COLS];
  size_t lens[ARRAY_SIZE(argv)];
  char nums[KR_STORE_MOVE_COLS][32];
  char *bufs[KR_STORE_MOVE_COLS] = {0};
  int argc = 0;
  argv[argc++] = "XADD", argv[argc++] = to, argv[argc++] = "*";
  argv[argc++] = "@t", argv[argc++] = table, argv[argc++] = "@h", argv[argc++] = host;
  for (int i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
  for (size_t i = 0; i < n; i++) {
    argv[argc] = v[i].col;
    lens[argc++] = strlen(v[i].col);
    if (v[i].type == SQLITE_TEXT || v[i].type == SQLITE_BLOB) {
      bufs[i] = kr_xmalloc(v[i].n + 1);
      bufs[i][0] = v[i].type == SQLITE_TEXT ? 't' : 'b';
      if (v[i].n) memcpy(bufs[i] + 1, v[i].p, v[i].n);
      argv[argc] = bufs[i];
      lens[argc++] = v[i].n + 1;
    } else {
      lens[argc] = val_encode(&v[i], nums[i], sizeof nums[i], &argv[argc]);
      argc++;
    }
  }
  int rc = pipe_argv(m, argc, argv, lens);
  for (size_t i = 0; i < n; i++) free(bufs[i]);
  free(to);
  m->rows++;
  if (!strcmp(table, "hosts")) m->hosts++;
  return rc;
}

/* One stream entry's row into the open import transaction. */
static int take_row(move_t *m, kr_store_move_t *mv, const redisReply *f) {
  const redisReply *t = field(f, "@t"), *h = field(f, "@h");
  if (!t || !h) return 0;
  kr_store_val_t v[KR_STORE_MOVE_COLS];
  size_t n = 0;
  for (size_t i = 0; i + 1 < f->elements && n < KR_STORE_MOVE_COLS; i += 2) {
    const redisReply *k = f->element[i], *x = f->element[i + 1];
    if (k->str[0] == '@' || !x->len) continue;
    kr_store_val_t *c = &v[n++];
    memset(c, 0, sizeof *c);
    c->col = k->str;
    switch (x->str[0]) {
    case 'i': c->type = SQLITE_INTEGER, c->i = strtoll(x->str + 1, NULL, 10); break;
    case 'r': c->type = SQLITE_FLOAT, c->d = strtod(x->str + 1, NULL); break;
    case 't':
    case 'b':
      c->type = x->str[0] == 't' ? SQLITE_TEXT : SQLITE_BLOB;
      c->p = x->str + 1, c->n = x->len - 1;
      break;
    default: c->type = SQLITE_NULL;
    }
  }
  int rc = kr_store_move_put(mv, t->str, h->str, v, n);
  if (!rc) {
    m->rows++;
    if (!strcmp(t->str, "hosts")) m->hosts++;
  }
  return rc;
}

/* This member's stream of T, whole, in one transaction. 0 or -1. */
static int import(move_t *m) {
  char *key = kr_xasprintf("%s:move:%" PRIu64 ":to:%s", m->prefix, m->epoch, m->self);
  char from[64] = "-";
  kr_store_move_t *mv = NULL;
  int rc = kr_store_move_begin(m->st, &mv) ? -1 : 0;
  while (!rc) {
    redisReply *rep = redisCommand(m->r, "XRANGE %s %s + COUNT %d", key, from, READ_COUNT);
    if (redis_failed(m, rep) || rep->type != REDIS_REPLY_ARRAY) {
      if (rep) freeReplyObject(rep);
      rc = -1;
      break;
    }
    size_t n = rep->elements;
    for (size_t i = 0; i < n && !rc; i++) {
      const redisReply *e = rep->element[i];
      snprintf(from, sizeof from, "(%s", e->element[0]->str);
      if (take_row(m, mv, e->element[1])) rc = -1;
    }
    freeReplyObject(rep);
    if (n < READ_COUNT) break;
  }
  free(key);
  if (rc) kr_store_move_rollback(mv);
  else if (kr_store_move_commit(mv)) rc = -1;
  return rc;
}

/* ---- the move's record ----------------------------------------------------------------- */

static const char *hget(const redisReply *h, const char *name) {
  const redisReply *v = field(h, name);
  return v && v->type == REDIS_REPLY_STRING ? v->str : NULL;
}

/* Find or start the move to want: m->epoch, m->prev, m->next. 0, 1
 * (nothing to move: want is the members now), 2 (told). */
static int find_move(move_t *m, const kr_config_view_t *g, const kr_cluster_members_t *want) {
  char *key = kr_xasprintf("%s:members", m->prefix);
  int ret = 2;
  for (int attempt = 0; attempt < 5 && ret == 2; attempt++) {
    if (cmd(m, "WATCH %s", key)) break;
    redisReply *h = redisCommand(m->r, "HGETALL %s", key);
    if (redis_failed(m, h)) {
      if (h) freeReplyObject(h);
      break;
    }
    const char *epoch = hget(h, "epoch"), *nodes = hget(h, "nodes"), *prev = hget(h, "prev"),
               *state = hget(h, "state");
    uint64_t e = epoch ? strtoull(epoch, NULL, 10) : 0;
    kr_cluster_members_t cur = {0};
    int rc;
    if (nodes) {
      rc = kr_cluster_members_parse(&cur, nodes);
    } else { /* epoch 0: the configuration's list */
      size_t nn = kr_config_list_len(g, KR_CFG_CLUSTER_NODES);
      const char *names[KR_CLUSTER_MAX_MEMBERS];
      for (size_t i = 0; i < nn && i < KR_CLUSTER_MAX_MEMBERS; i++)
        names[i] = kr_config_list_item(g, KR_CFG_CLUSTER_NODES, i);
      rc = kr_cluster_members_init(&cur, names, nn);
    }
    if (rc) {
      kr_cli_error(KR_ECONFIG, "Redis %s: %s holds no valid member list", m->redis, key);
      freeReplyObject(h);
      break;
    }
    if (state && !strcmp(state, "moving")) { /* join it */
      cmd(m, "UNWATCH");
      if (!kr_cluster_members_same(&cur, want)) {
        kr_cli_error(KR_EINVAL, "a move to epoch %" PRIu64 " (members %s) is under way: finish "
                     "it with those --nodes first", e, nodes);
      } else if (!prev || kr_cluster_members_parse(&m->prev, prev)) {
        kr_cli_error(KR_ECONFIG, "Redis %s: %s names no valid previous list", m->redis, key);
      } else {
        m->epoch = e;
        m->next = cur, cur.v = NULL, cur.n = 0;
        ret = 0;
      }
    } else if (kr_cluster_members_same(&cur, want)) {
      cmd(m, "UNWATCH");
      m->epoch = e;
      m->next = cur, cur.v = NULL, cur.n = 0;
      ret = 1;
    } else { /* start it: only if nobody changed the record meanwhile */
      char cur_list[LIST_MAX], next_list[LIST_MAX], num[24];
      kr_cluster_members_format(&cur, cur_list, sizeof cur_list);
      kr_cluster_members_format(want, next_list, sizeof next_list);
      snprintf(num, sizeof num, "%" PRIu64, e + 1);
      cmd(m, "MULTI");
      cmd(m, "HSET %s epoch %s nodes %s prev %s state moving", key, num, next_list, cur_list);
      redisReply *x = redisCommand(m->r, "EXEC");
      if (redis_failed(m, x)) {
        if (x) freeReplyObject(x);
        freeReplyObject(h);
        kr_cluster_members_free(&cur);
        break;
      }
      if (x->type == REDIS_REPLY_ARRAY) { /* ours; else another run got there first: again */
        fprintf(stderr, "kria: cluster: %s: members %s -> %s (epoch %s)\n", m->prefix, cur_list,
                next_list, num);
        m->epoch = e + 1;
        m->prev = cur, cur.v = NULL, cur.n = 0;
        kr_cluster_members_parse(&m->next, next_list);
        ret = 0;
      }
      freeReplyObject(x);
    }
    kr_cluster_members_free(&cur);
    freeReplyObject(h);
  }
  free(key);
  if (ret != 2) kr_cluster_members_format(&m->next, m->next_list, sizeof m->next_list);
  return ret;
}

/* ---- the command ----------------------------------------------------------------------- */

/* The state directory, once its crawl let go of it (at most wait_s). */
static kr_store_t *open_state(const char *dir, int wait_s) {
  kr_store_opts_t o;
  kr_store_opts_default(&o);
  o.quick_check = 0;
  char err[512] = "", first[512] = "";
  for (int i = 0; i <= wait_s * 5; i++) {
    kr_store_t *st = NULL;
    if (kr_store_open(dir, &o, &st, err, sizeof err) == 0) return st;
    if (!first[0]) {
      snprintf(first, sizeof first, "%s", err);
      fprintf(stderr, "kria: cluster: waiting for this member's crawl to stop (%s)\n", err);
    }
    if (i < wait_s * 5) usleep(200 * 1000);
  }
  kr_cli_error(KR_EDB, "%s", err);
  return NULL;
}

static int in(const kr_cluster_members_t *m, const char *name) {
  return kr_cluster_member_index(m, name, strlen(name)) >= 0;
}

static int sismember(move_t *m, const char *set, const char *name) {
  redisReply *r = redisCommand(m->r, "SISMEMBER %s %s", set, name);
  int yes = !redis_failed(m, r) && r->integer == 1;
  if (r) freeReplyObject(r);
  return yes;
}

/* n key/value pairs into the state database's meta, in one transaction.
 * 0 or -1. */
static int set_meta(kr_store_t *st, const char *const *kv, size_t n) {
  kr_store_move_t *mv;
  if (kr_store_move_begin(st, &mv)) return -1;
  for (size_t i = 0; i < n; i++)
    if (kr_store_move_meta(mv, kv[2 * i], kv[2 * i + 1])) {
      kr_store_move_rollback(mv);
      return -1;
    }
  return kr_store_move_commit(mv) ? -1 : 0;
}

static int count_host(void *ud, const kr_host_row_t *h) {
  (void)h;
  ++*(size_t *)ud;
  return 0;
}

/* 1 when the state database has no host (a member starting afresh). */
static int is_fresh(kr_store_t *st) {
  size_t n = 0;
  return kr_store_hosts_each(st, count_host, &n) == 0 && n == 0;
}

/* This member's part is done (key: the move's sets, as in run_move):
 * said in Redis; the last member to say it marks the move over. 0 or 2. */
static int finished(move_t *m, char key[4][256]) {
  if (cmd(m, "SADD %s %s", key[2], m->self)) return 2;
  const char *missing;
  if (set_covers(m, key[2], &m->prev, key[3], &missing) == 1 &&
      set_covers(m, key[2], &m->next, NULL, &missing) == 1) {
    cmd(m, "HSET %s:members state stable", m->prefix);
    for (size_t i = 0; i < m->next.n; i++)
      cmd(m, "DEL %s:move:%" PRIu64 ":to:%s", m->prefix, m->epoch, m->next.v[i].name);
    /* the sets answer a late run for a while, then go (day 200: no pile) */
    for (int i = 0; i < 4; i++) cmd(m, "EXPIRE %s %d", key[i], 7 * 86400);
  }
  return 0;
}

/* Steps (1) to (6) of the file's comment for this member. 0 or 2. */
static int run_move(move_t *m, int wait_s) {
  char key[4][256];
  static const char *const sets[] = {"exported", "imported", "finished", "forgotten"};
  for (int i = 0; i < 4; i++)
    snprintf(key[i], sizeof key[i], "%s:move:%" PRIu64 ":%s", m->prefix, m->epoch, sets[i]);
  const char *exported = key[0], *imported = key[1], *forgotten = key[3];
  char buf[64];
  uint64_t mine = kr_store_meta_get(m->st, "cluster.epoch", buf, sizeof buf) == 1
                      ? strtoull(buf, NULL, 10) : 0;
  if (mine == m->epoch) { /* killed after its last commit, maybe: say it again */
    printf("%s: already at epoch %" PRIu64 " (members %s)\n", m->self, m->epoch, m->next_list);
    return finished(m, key);
  }
  /* a member added with a fresh state directory may come from any epoch */
  if (mine + 1 != m->epoch && (in(&m->prev, m->self) || !is_fresh(m->st))) {
    kr_cli_error(KR_EINVAL, "this member's state is at epoch %" PRIu64 ", the move goes from %"
                 PRIu64 " to %" PRIu64 ": it missed a move (start it afresh)", mine,
                 m->epoch - 1, m->epoch);
    return 2;
  }
  if (sismember(m, forgotten, m->self)) {
    kr_cli_error(KR_EINVAL, "%s was forgotten in the move to epoch %" PRIu64 ": its state is "
                 "stale (start it afresh)", m->self, m->epoch);
    return 2;
  }
  snprintf(buf, sizeof buf, "%" PRIu64, m->epoch);
  if (set_meta(m->st, (const char *[]){"cluster.moving", buf}, 1)) return 2;
  if (in(&m->prev, m->self) && !sismember(m, exported, m->self)) {
    if (forward_stream(m, m->self) || flush_outbox(m) ||
        kr_store_move_export(m->st, leaves, send_row, m) || pipe_drain(m, 0) || m->failed ||
        cmd(m, "SADD %s %s", exported, m->self))
      return 2;
    printf("%s: sent %" PRIu64 " hosts (%" PRIu64 " rows), forwarded %" PRIu64 " links\n",
           m->self, m->hosts, m->rows - m->hosts, m->links);
    m->rows = m->hosts = 0;
  }
  int rc = wait_for(m, "exported", exported, &m->prev, forgotten, wait_s);
  if (rc) return rc;
  if (in(&m->next, m->self) && !sismember(m, imported, m->self)) {
    if (import(m) || cmd(m, "SADD %s %s", imported, m->self)) return 2;
    printf("%s: took %" PRIu64 " hosts (%" PRIu64 " rows)\n", m->self, m->hosts,
           m->rows - m->hosts);
  }
  if ((rc = wait_for(m, "imported", imported, &m->next, NULL, wait_s))) return rc;
  int64_t dropped = -1;
  kr_store_move_t *mv;
  if (kr_store_move_begin(m->st, &mv)) return 2;
  if ((dropped = kr_store_move_drop(mv, leaves, m)) < 0 ||
      kr_store_move_meta(mv, "cluster.epoch", buf) || kr_store_move_meta(mv, "cluster.moving", "0") ||
      kr_store_move_meta(mv, "cluster.nodes", m->next_list)) {
    kr_store_move_rollback(mv);
    return 2;
  }
  if (kr_store_move_commit(mv)) return 2;
  printf("%s: at epoch %" PRIu64 " (members %s), %" PRId64 " hosts handed over dropped\n", m->self,
         m->epoch, m->next_list, dropped);
  return finished(m, key);
}

static int rebalance(int argc, char **argv) {
  static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                       {"nodes", required_argument, NULL, 'n'},
                                       {"forget", required_argument, NULL, 'f'},
                                       {"wait", required_argument, NULL, 'w'},
                                       {NULL, 0, NULL, 0}};
  const char *path = NULL, *nodes = NULL, *forget[KR_CLUSTER_MAX_MEMBERS];
  size_t nforget = 0;
  int wait_s = 300, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
    if (c == 'c') path = optarg;
    else if (c == 'n') nodes = optarg;
    else if (c == 'f' && nforget < KR_CLUSTER_MAX_MEMBERS) forget[nforget++] = optarg;
    else if (c == 'w') wait_s = atoi(optarg);
    else return usage(), 64;
  }
  if (!path || !nodes || optind != argc || wait_s < 0) return usage(), 64;
  kr_cluster_members_t want;
  if (kr_cluster_members_parse(&want, nodes)) {
    kr_cli_error(0, "--nodes %s: names of 1 to 64 letters, digits, '.', '_', '-', each once",
                 nodes);
    return 64;
  }
  kr_config_t *cfg = kr_cli_load_config(path);
  if (!cfg) return kr_cluster_members_free(&want), 2;
  const kr_config_view_t *g = kr_config_global(cfg);
  move_t m = {.redis = kr_config_str(g, KR_CFG_CLUSTER_REDIS),
              .prefix = kr_config_str(g, KR_CFG_CLUSTER_PREFIX),
              .self = kr_config_str(g, KR_CFG_CLUSTER_NODE)};
  int ret = 2;
  if (!m.redis[0] || !m.self[0]) {
    kr_cli_error(KR_ECONFIG, "%s: [cluster] needs redis and node", path);
    goto out;
  }
  /* a queue by address mixes sites its name does not tell */
  if (kr_config_enum(g, KR_CFG_POLITENESS_QUEUE_ASSIGNMENT) == KR_CFG_QUEUE_BY_IP) {
    kr_cli_error(KR_ECONFIG, "%s: politeness.queue-assignment = ip: a queue's hosts cannot be "
                 "told from its name, so they cannot be moved (not supported)", path);
    goto out;
  }
  m.r = kr_crawl_cluster_redis_blocking(m.redis, 2);
  if (!m.r || m.r->err) {
    kr_cli_error(KR_ENET, "cannot reach Redis %s: %s", m.redis, m.r ? m.r->errstr : "bad address");
    goto out;
  }
  redisSetTimeout(m.r, (struct timeval){30, 0});
  int found = find_move(&m, g, &want);
  if (found == 2) goto out;
  if (!in(&m.prev, m.self) && !in(&m.next, m.self) && found == 0) {
    kr_cli_error(KR_EINVAL, "%s is a member of neither %s's list nor the new one", m.self,
                 m.prefix);
    goto out;
  }
  for (size_t i = 0; i < nforget; i++) {
    if (!in(&m.prev, forget[i]) || in(&m.next, forget[i]) || !strcmp(forget[i], m.self)) {
      kr_cli_error(KR_EINVAL, "--forget %s: only a member the move removes, not this one",
                   forget[i]);
      goto out;
    }
    /* its hosts start afresh at their new owners; the links waiting in
     * its stream go there too (those in its own outbox are lost with it) */
    if (cmd(&m, "SADD %s:move:%" PRIu64 ":forgotten %s", m.prefix, m.epoch, forget[i]) ||
        forward_stream(&m, forget[i]))
      goto out;
    fprintf(stderr, "kria: cluster: %s forgotten: its hosts start afresh at their new owners\n",
            forget[i]);
  }
  if (m.epoch) { /* a member given up must not come back with its old state */
    char fk[256];
    snprintf(fk, sizeof fk, "%s:move:%" PRIu64 ":forgotten", m.prefix, m.epoch);
    if (sismember(&m, fk, m.self)) {
      kr_cli_error(KR_EINVAL, "%s was forgotten in the move to epoch %" PRIu64 ": its state is "
                   "stale (start it afresh)", m.self, m.epoch);
      goto out;
    }
  }
  if (!(m.st = open_state(kr_config_str(g, KR_CFG_CRAWL_STATE_DIR), wait_s))) goto out;
  if (found == 1) {
    char buf[64];
    uint64_t mine = kr_store_meta_get(m.st, "cluster.epoch", buf, sizeof buf) == 1
                        ? strtoull(buf, NULL, 10) : 0;
    if (mine == m.epoch) {
      printf("%s: members are %s already (epoch %" PRIu64 "): nothing to move\n", m.self,
             nodes, m.epoch);
      ret = 0;
    } else if (in(&m.next, m.self) && is_fresh(m.st)) { /* a member's state started afresh */
      char num[24];
      snprintf(num, sizeof num, "%" PRIu64, m.epoch);
      if (!set_meta(m.st, (const char *[]){"cluster.epoch", num, "cluster.nodes", m.next_list}, 2)) {
        printf("%s: an empty state joins the cluster at epoch %" PRIu64 "\n", m.self, m.epoch);
        ret = 0;
      }
    } else {
      kr_cli_error(KR_EINVAL, "this member's state is at epoch %" PRIu64 ", the cluster at %"
                   PRIu64 ": it missed a move (start it afresh)", mine, m.epoch);
    }
    goto out;
  }
  ret = run_move(&m, wait_s);
out:
  if (m.st && kr_store_close(m.st)) ret = 2;
  if (m.r) redisFree(m.r);
  kr_cluster_members_free(&m.prev);
  kr_cluster_members_free(&m.next);
  kr_cluster_members_free(&want);
  kr_config_free(cfg);
  return ret;
}

int kr_cmd_cluster(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "rebalance")) return rebalance(argc - 1, argv + 1);
  usage();
  return 64;
}
