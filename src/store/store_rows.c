/*
 * The store's rows (store.h): URIs, hosts, meta, the adaptive digest
 * index and hints, WARC originals, robots.txt, and the scope's seeds and
 * disregarded URIs. Every write goes through write_begin or, for what may
 * wait for a drain, kr__store_write_or_keep (store_tx.c).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "log.h"
#include "rowcache.h"
#include "store_int.h"
#include "turnprof.h"

/* ---- URIs -------------------------------------------------------------------- */

static void bind_text(sqlite3_stmt *s, int i, const char *p, size_t n) {
  if (p)
    sqlite3_bind_text(s, i, p, (int)n, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, i);
}

static void bind_blob(sqlite3_stmt *s, int i, const void *p, size_t n) {
  if (p && n)
    sqlite3_bind_blob(s, i, p, (int)n, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, i);
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, uint64_t v) {
  if (v)
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
  else
    sqlite3_bind_null(s, i);
}

int kr_store_uri_insert(kr_store_t *st, const kr_uri_row_t *r) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_INSERT];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)r->fp);
  sqlite3_bind_int64(s, 2, r->host_id);
  sqlite3_bind_int(s, 3, r->directive);
  sqlite3_bind_int64(s, 4, (sqlite3_int64)r->next_at);
  sqlite3_bind_int(s, 5, r->state);
  bind_text(s, 6, r->url, r->url_len);
  bind_u64_or_null(s, 7, r->via);
  bind_text(s, 8, r->hop_path, r->hop_len);
  sqlite3_bind_int64(s, 9, (sqlite3_int64)r->first_seen);
  if (r->hint_rate > 0 && r->hint_rate < 1e300) sqlite3_bind_double(s, 10, r->hint_rate);
  st->stats.inserts++;
  int rc = kr__store_step_done(st, s, "inserting a URI");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) {
    st->stats.insert_ignored++;
    return 0;
  }
  return 1;
}

static const char *col_text(sqlite3_stmt *s, int i, size_t *len) {
  const char *p = (const char *)sqlite3_column_text(s, i);
  *len = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
  return p;
}

static const uint8_t *col_blob(sqlite3_stmt *s, int i, size_t *len) {
  const uint8_t *p = sqlite3_column_blob(s, i);
  *len = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
  return p;
}

int kr_store_uri_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r) {
  kr__store_settle(st);
  st->stats.gets++;
  const kr_uri_row_t *cached = kr_rowcache_get(st->rows, fp);
  if (cached) {
    *r = *cached;
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_URI_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return kr__store_db_err(st, "reading a URI");
  }
  /* The row stays readable until the next call resets the statement. */
  st->get_active = 1;
  memset(r, 0, sizeof(*r));
  r->fp = (uint64_t)sqlite3_column_int64(s, 0);
  r->host_id = sqlite3_column_int64(s, 1);
  r->directive = sqlite3_column_int(s, 2);
  r->next_at = (uint64_t)sqlite3_column_int64(s, 3);
  r->state = sqlite3_column_int(s, 4);
  r->url = col_text(s, 5, &r->url_len);
  r->via = (uint64_t)sqlite3_column_int64(s, 6);
  r->hop_path = col_text(s, 7, &r->hop_len);
  r->first_seen = (uint64_t)sqlite3_column_int64(s, 8);
  r->last_visit = (uint64_t)sqlite3_column_int64(s, 9);
  r->wait_ms = (uint64_t)sqlite3_column_int64(s, 10);
  r->visits = (uint32_t)sqlite3_column_int64(s, 11);
  r->versions = (uint32_t)sqlite3_column_int64(s, 12);
  r->retries = (uint32_t)sqlite3_column_int64(s, 13);
  r->status = sqlite3_column_int(s, 14);
  r->content_type = col_text(s, 15, &r->content_type_len);
  r->digest = col_blob(s, 16, &r->digest_len);
  r->etag = col_text(s, 17, &r->etag_len);
  r->last_modified = sqlite3_column_int64(s, 18);
  r->history = col_blob(s, 19, &r->history_len);
  r->hint_rate = sqlite3_column_double(s, 20);
  r->gone = (uint32_t)sqlite3_column_int64(s, 21);
  r->last_linked = (uint64_t)sqlite3_column_int64(s, 22);
  kr_rowcache_put(st->rows, r);
  return 1;
}

int kr_store_uri_sched_get(kr_store_t *st, uint64_t fp, kr_uri_row_t *r) {
  kr__store_settle(st);
  sqlite3_stmt *s = st->stmt[S_URI_SCHED_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  st->stats.gets++;
  int rc = sqlite3_step(s);
  int found = rc == SQLITE_ROW;
  if (found) {
    memset(r, 0, sizeof(*r));
    r->fp = fp;
    r->host_id = sqlite3_column_int64(s, 0);
    r->directive = sqlite3_column_int(s, 1);
    r->next_at = (uint64_t)sqlite3_column_int64(s, 2);
    r->state = sqlite3_column_int(s, 3);
  }
  sqlite3_reset(s);
  if (!found && rc != SQLITE_DONE) return kr__store_db_err(st, "reading a URI's schedule");
  return found;
}

int kr_store_uri_update(kr_store_t *st, const kr_uri_row_t *r) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_UPDATE];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)r->fp);
  sqlite3_bind_int(s, 2, r->directive);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)r->next_at);
  sqlite3_bind_int(s, 4, r->state);
  bind_u64_or_null(s, 5, r->last_visit);
  sqlite3_bind_int64(s, 6, r->wait_ms > INT64_MAX ? INT64_MAX : (sqlite3_int64)r->wait_ms);
  sqlite3_bind_int64(s, 7, r->visits);
  sqlite3_bind_int64(s, 8, r->versions);
  sqlite3_bind_int64(s, 9, r->retries);
  if (r->status)
    sqlite3_bind_int(s, 10, r->status);
  else
    sqlite3_bind_null(s, 10);
  bind_text(s, 11, r->content_type, r->content_type_len);
  bind_blob(s, 12, r->digest, r->digest_len);
  bind_text(s, 13, r->etag, r->etag_len);
  bind_u64_or_null(s, 14, (uint64_t)r->last_modified);
  bind_blob(s, 15, r->history, r->history_len);
  sqlite3_bind_int64(s, 16, r->gone);
  st->stats.updates++;
  int rc = kr__store_step_done(st, s, "updating a URI");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_update(st->rows, r);
  return 1;
}

int kr_store_uri_set_sched(kr_store_t *st, uint64_t fp, int directive,
                           uint64_t next_at, int state) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_SET_SCHED];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  sqlite3_bind_int(s, 2, directive);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)next_at);
  sqlite3_bind_int(s, 4, state);
  st->stats.updates++;
  int rc = kr__store_step_done(st, s, "rescheduling a URI");
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_set_sched(st->rows, fp, directive, next_at, state);
  return 1;
}

int kr_store_uri_set_linked(kr_store_t *st, uint64_t fp, uint64_t when) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URI_SET_LINKED];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)when);
  st->stats.updates++;
  int rc = kr__store_step_done(st, s, "noting a link to a URI");
  if (rc) return rc;
  if (sqlite3_changes(st->db) == 0) return 0;
  kr_rowcache_set_linked(st->rows, fp, when);
  return 1;
}

int64_t kr_store_due_all(kr_store_t *st, uint64_t now) {
  static const char *const sql[] = {
      "UPDATE uris SET next_at = ?1, state = CASE WHEN state IN (3, 4, 5) THEN 0 ELSE state END"
      " WHERE next_at > ?1",
      "UPDATE hosts SET queued = (SELECT count(*) FROM uris"
      " WHERE host_id = hosts.id AND next_at < " NEVER_SQL ")",
  };
  kr__store_settle(st);
  kr_rowcache_clear(st->rows); /* bulk: every queued row may change */
  if (kr__store_write_begin(st)) return KR_EDB;
  int64_t moved = 0;
  for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, sql[i], -1, &s, NULL) != SQLITE_OK)
      return kr__store_db_err(st, "making every URI due");
    if (i == 0) sqlite3_bind_int64(s, 1, (sqlite3_int64)(now < KR_NEVER ? now : KR_NEVER - 1));
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) return kr__store_db_err(st, "making every URI due");
    if (i == 0) moved = sqlite3_changes(st->db);
    st->stats.updates++;
  }
  return moved;
}

int64_t kr_store_uris_move_host(kr_store_t *st, int64_t from, int64_t to) {
  kr__store_settle(st);
  kr_rowcache_clear(st->rows); /* bulk: host_id of many rows */
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_URIS_MOVE_HOST];
  sqlite3_bind_int64(s, 1, from);
  sqlite3_bind_int64(s, 2, to);
  int rc = kr__store_step_done(st, s, "moving URIs to another host queue");
  if (rc) return rc;
  int64_t n = sqlite3_changes(st->db);
  st->stats.updates += (uint64_t)n;
  return n;
}

int kr_store_pick(kr_store_t *st, int64_t host_id, kr_store_pick_t *out, int max) {
  kr__store_settle(st);
  sqlite3_stmt *s = st->stmt[S_PICK];
  sqlite3_bind_int64(s, 1, host_id);
  sqlite3_bind_int(s, 2, max);
  st->stats.picks++;
  int n = 0, rc;
  while (n < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    out[n].fp = (uint64_t)sqlite3_column_int64(s, 0);
    out[n].directive = sqlite3_column_int(s, 1);
    out[n].next_at = (uint64_t)sqlite3_column_int64(s, 2);
    n++;
  }
  if (n < max && rc != SQLITE_DONE) {
    sqlite3_reset(s);
    return kr__store_db_err(st, "picking from a host queue");
  }
  sqlite3_reset(s);
  return n;
}

static int count_stmt(kr_store_t *st, sqlite3_stmt *s, uint64_t *n, const char *what) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) *n = (uint64_t)sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  return rc == SQLITE_ROW ? 0 : kr__store_db_err(st, what);
}

int kr_store_count_queued(kr_store_t *st, int64_t host_id, uint64_t *n) {
  kr__store_settle(st);
  if (host_id < 0) return count_stmt(st, st->stmt[S_COUNT_QUEUED_ALL], n, "counting");
  sqlite3_bind_int64(st->stmt[S_COUNT_QUEUED_HOST], 1, host_id);
  return count_stmt(st, st->stmt[S_COUNT_QUEUED_HOST], n, "counting");
}

int kr_store_count_uris(kr_store_t *st, uint64_t *n) {
  kr__store_settle(st);
  return count_stmt(st, st->stmt[S_COUNT_URIS], n, "counting");
}

int kr_store_fp_scan(kr_store_t *st, int64_t *from, size_t max,
                     void (*fn)(void *ud, uint64_t fp), void *ud, int *done) {
  kr__store_settle(st);
  sqlite3_stmt *s = st->stmt[S_FP_SCAN];
  sqlite3_bind_int64(s, 1, *from);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
  size_t n = 0;
  int rc, last = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t fp = sqlite3_column_int64(s, 0);
    fn(ud, (uint64_t)fp);
    n++;
    if (fp == INT64_MAX)
      last = 1;
    else
      *from = fp + 1;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "loading fingerprints");
  *done = last || n < max;
  return 0;
}

/* ---- hosts ---------------------------------------------------------------- */

int kr_store_host_insert(kr_store_t *st, const char *name, size_t len, int64_t *id) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_HOST_INSERT];
  sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
  int rc = kr__store_step_done(st, s, "inserting a host");
  sqlite3_clear_bindings(s);
  if (rc) return rc;
  *id = sqlite3_last_insert_rowid(st->db);
  return 0;
}

int kr_store_host_update(kr_store_t *st, const kr_host_row_t *h) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_HOST_UPDATE];
  sqlite3_bind_int64(s, 1, h->id);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)h->robots_expires);
  sqlite3_bind_int(s, 3, h->robots_status);
  sqlite3_bind_int64(s, 4, h->crawl_delay_ms);
  sqlite3_bind_int64(s, 5, h->backoff_level);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)h->backoff_until);
  sqlite3_bind_int64(s, 7, h->fail_streak);
  const uint64_t *c = &h->c.discovered;
  for (int i = 0; i < 9; i++) sqlite3_bind_int64(s, 8 + i, (sqlite3_int64)c[i]);
  const kr_vtrust_t *vt = &h->vt;
  const uint64_t vtc[] = {vt->checks,   vt->predicted_unchanged, vt->skipped,
                          vt->verified, vt->misses,              vt->false_alarms,
                          vt->distrusts};
  for (int i = 0; i < 7; i++) sqlite3_bind_int64(s, 17 + i, (sqlite3_int64)vtc[i]);
  sqlite3_bind_int64(s, 24, vt->miss_run);
  sqlite3_bind_int64(s, 25, vt->distrust_until);
  sqlite3_bind_int64(s, 26, (sqlite3_int64)h->c.refused);
  sqlite3_bind_int64(s, 27, (sqlite3_int64)h->c.retired);
  return kr__store_step_done(st, s, "updating a host");
}

int kr_store_host_set_learned(kr_store_t *st, int64_t id, const uint8_t *p, size_t len) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = st->stmt[S_HOST_SET_LEARNED];
  sqlite3_bind_int64(s, 1, id);
  if (len) sqlite3_bind_blob(s, 2, p, (int)len, SQLITE_STATIC);
  else sqlite3_bind_null(s, 2);
  int rc = kr__store_step_done(st, s, "writing a host's learned state");
  sqlite3_clear_bindings(s);
  return rc;
}

int kr_store_hosts_each(kr_store_t *st, int (*fn)(void *ud, const kr_host_row_t *h),
                        void *ud) {
  kr__store_settle(st);
  sqlite3_stmt *s = st->stmt[S_HOSTS_EACH];
  int rc, ret = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    kr_host_row_t h;
    memset(&h, 0, sizeof(h));
    h.id = sqlite3_column_int64(s, 0);
    h.name = col_text(s, 1, &h.name_len);
    h.robots_expires = (uint64_t)sqlite3_column_int64(s, 2);
    h.robots_status = sqlite3_column_int(s, 3);
    h.crawl_delay_ms = sqlite3_column_int64(s, 4);
    h.backoff_level = (uint32_t)sqlite3_column_int64(s, 5);
    h.backoff_until = (uint64_t)sqlite3_column_int64(s, 6);
    h.fail_streak = (uint32_t)sqlite3_column_int64(s, 7);
    uint64_t *c = &h.c.discovered;
    for (int i = 0; i < 9; i++) c[i] = (uint64_t)sqlite3_column_int64(s, 8 + i);
    uint64_t *vtc[] = {&h.vt.checks,   &h.vt.predicted_unchanged, &h.vt.skipped,
                       &h.vt.verified, &h.vt.misses,              &h.vt.false_alarms,
                       &h.vt.distrusts};
    for (int i = 0; i < 7; i++) *vtc[i] = (uint64_t)sqlite3_column_int64(s, 17 + i);
    h.vt.miss_run = (uint32_t)sqlite3_column_int64(s, 24);
    h.vt.distrust_until = sqlite3_column_int64(s, 25);
    h.c.refused = (uint64_t)sqlite3_column_int64(s, 26);
    h.c.retired = (uint64_t)sqlite3_column_int64(s, 27);
    h.learned = col_blob(s, 28, &h.learned_len);
    if (!h.name) continue;
    if ((ret = fn(ud, &h)) < 0) break;
  }
  sqlite3_reset(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "loading hosts");
  return 0;
}

/* ---- meta ------------------------------------------------------------------- */

int kr_store_meta_get(kr_store_t *st, const char *key, char *out, size_t outlen) {
  kr__store_settle(st);
  const struct dwrite *w = kr__store_dw_find(st, S_META_SET, 0, dv_text(key, strlen(key)), 0);
  if (w) {
    if (outlen) snprintf(out, outlen, "%s", (const char *)w->v[1].p);
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_META_GET];
  sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  int found = rc == SQLITE_ROW;
  if (found && outlen) {
    const char *v = (const char *)sqlite3_column_text(s, 0);
    snprintf(out, outlen, "%s", v ? v : "");
  }
  sqlite3_reset(s);
  if (!found && rc != SQLITE_DONE) return kr__store_db_err(st, "reading meta");
  return found;
}

int kr_store_meta_set(kr_store_t *st, const char *key, const char *value) {
  kr__store_settle(st);
  dval_t v[2] = {dv_text(key, strlen(key)), dv_text(value, strlen(value))};
  int rc = kr__store_write_or_keep(st, S_META_SET, v, 2, "writing meta");
  return rc < 0 ? rc : 0;
}

/* ---- adaptive: digests, hints ------------------------------------------------ */

/* The URL of fp (readable until the next call), NULL when none. */
static const char *url_of(kr_store_t *st, uint64_t fp, size_t *len) {
  sqlite3_stmt *s = st->stmt[S_URL_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  *len = 0;
  if (sqlite3_step(s) != SQLITE_ROW) {
    sqlite3_reset(s);
    return NULL;
  }
  st->get_active = 1;
  return col_text(s, 0, len);
}

int kr_store_digest_get(kr_store_t *st, const uint8_t *d, size_t n, kr_store_digest_t *out) {
  kr__store_settle(st);
  if (!d || !n) return 0;
  sqlite3_stmt *s = st->stmt[S_DIGEST_GET];
  sqlite3_bind_blob(s, 1, d, (int)n, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    const struct dwrite *w = kr__store_dw_find(st, S_DIGEST_PUT, 0, dv_blob(d, n), 1);
    if (!w) return 0;
    memset(out, 0, sizeof(*out));
    out->fp = (uint64_t)w->v[1].i;
    out->date = (uint64_t)w->v[2].i;
    out->url = url_of(st, out->fp, &out->url_len);
    return 1;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return kr__store_db_err(st, "reading the digest index");
  }
  /* Like a row of kr_store_uri_get: readable until the next call. */
  st->get_active = 1;
  memset(out, 0, sizeof(*out));
  out->fp = (uint64_t)sqlite3_column_int64(s, 0);
  out->date = (uint64_t)sqlite3_column_int64(s, 1);
  out->url = col_text(s, 2, &out->url_len);
  return 1;
}

int kr_store_digest_put(kr_store_t *st, const uint8_t *d, size_t n, uint64_t fp,
                        uint64_t date) {
  kr__store_settle(st);
  if (!d || !n) return 0;
  dval_t v[3] = {dv_blob(d, n), dv_int((int64_t)fp), dv_int((int64_t)date)};
  int rc = kr__store_write_or_keep(st, S_DIGEST_PUT, v, 3, "writing the digest index");
  if (rc) return rc; /* kept: 1, as if inserted */
  return sqlite3_changes(st->db) > 0;
}

/* ---- WARC originals ---------------------------------------------------------- */

/* The record ids kria writes, "<urn:uuid:" + 36 lowercase hex and dashes
 * + ">", are kept as their 16 bytes (47 -> 16 bytes per visited URI);
 * any other id as text. 1 when packed. */
static const char RID_PRE[] = "<urn:uuid:";
#define RID_LEN 47

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int rid_pack(const char *rid, uint8_t out[16]) {
  if (strlen(rid) != RID_LEN || memcmp(rid, RID_PRE, sizeof RID_PRE - 1) || rid[RID_LEN - 1] != '>')
    return 0;
  const char *p = rid + sizeof RID_PRE - 1;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      if (*p++ != '-') return 0;
    }
    int hi = hexval(p[0]), lo = hexval(p[1]);
    if (hi < 0 || lo < 0) return 0;
    out[i] = (uint8_t)(hi << 4 | lo);
    p += 2;
  }
  return 1;
}

static void rid_format(const uint8_t *b, char *out);

static const char *rid_unpack(kr_store_t *st, sqlite3_stmt *s, int col, size_t *len) {
  if (sqlite3_column_type(s, col) != SQLITE_BLOB || sqlite3_column_bytes(s, col) != 16)
    return col_text(s, col, len);
  rid_format(sqlite3_column_blob(s, col), st->rid);
  *len = RID_LEN;
  return st->rid;
}

static void rid_format(const uint8_t *b, char *out) {
  static const char hx[] = "0123456789abcdef";
  char *o = out;
  memcpy(o, RID_PRE, sizeof RID_PRE - 1);
  o += sizeof RID_PRE - 1;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
    *o++ = hx[b[i] >> 4];
    *o++ = hx[b[i] & 15];
  }
  *o++ = '>';
  *o = '\0';
}

static int orig_row(kr_store_t *st, sqlite3_stmt *s, kr_original_t *out) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return kr__store_db_err(st, "reading WARC originals");
  }
  st->get_active = 1; /* readable until the next call */
  memset(out, 0, sizeof(*out));
  out->digest = sqlite3_column_blob(s, 0);
  out->digest_len = (size_t)sqlite3_column_bytes(s, 0);
  out->ofp = (uint64_t)sqlite3_column_int64(s, 1);
  out->date = (uint64_t)sqlite3_column_int64(s, 2);
  out->url = col_text(s, 3, &out->url_len);
  out->rid = rid_unpack(st, s, 4, &out->rid_len);
  return 1;
}

/* A kept S_ORIG_PUT as a row. */
static int orig_kept(kr_store_t *st, const struct dwrite *w, kr_original_t *out) {
  memset(out, 0, sizeof(*out));
  uint64_t fp = (uint64_t)w->v[0].i;
  out->digest = w->v[1].p;
  out->digest_len = w->v[1].len;
  out->ofp = w->v[2].i ? (uint64_t)w->v[2].i : fp;
  out->date = (uint64_t)w->v[3].i;
  if (w->v[4].type == SQLITE_BLOB) {
    rid_format(w->v[4].p, st->rid);
    out->rid = st->rid;
    out->rid_len = RID_LEN;
  } else {
    out->rid = (const char *)w->v[4].p;
    out->rid_len = w->v[4].len;
  }
  out->url = url_of(st, out->ofp, &out->url_len);
  return 1;
}

int kr_store_original_get(kr_store_t *st, uint64_t fp, kr_original_t *out) {
  kr__store_settle(st);
  const struct dwrite *w = kr__store_dw_find(st, S_ORIG_PUT, 0, dv_int((int64_t)fp), 0);
  if (w) return orig_kept(st, w, out);
  sqlite3_stmt *s = st->stmt[S_ORIG_GET];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)fp);
  return orig_row(st, s, out);
}

int kr_store_original_find(kr_store_t *st, const uint8_t *d, size_t n, kr_original_t *out) {
  kr__store_settle(st);
  if (!d || !n) return 0;
  sqlite3_stmt *s = st->stmt[S_ORIG_FIND];
  sqlite3_bind_blob(s, 1, d, (int)n, SQLITE_STATIC);
  int rc = orig_row(st, s, out);
  if (rc) return rc;
  const struct dwrite *w = kr__store_dw_find(st, S_ORIG_PUT, 1, dv_blob(d, n), 0);
  return w ? orig_kept(st, w, out) : 0;
}

int kr_store_original_put(kr_store_t *st, uint64_t fp, const uint8_t *d, size_t n, uint64_t ofp,
                          uint64_t date, const char *rid) {
  kr__store_settle(st);
  if (!d || !n || !rid || !*rid) return KR_EINVAL;
  uint8_t packed[16];
  /* fps are never 0: 0 names the URI itself, stored in no bytes at all */
  dval_t v[5] = {dv_int((int64_t)fp), dv_blob(d, n), dv_int(ofp == fp ? 0 : (int64_t)ofp),
                 dv_int((int64_t)date),
                 rid_pack(rid, packed) ? dv_blob(packed, sizeof packed) : dv_text(rid, strlen(rid))};
  int rc = kr__store_write_or_keep(st, S_ORIG_PUT, v, 5, "writing a WARC original");
  return rc < 0 ? rc : 0;
}

/* ---- robots.txt ---------------------------------------------------------------- */

int kr_store_robots_get(kr_store_t *st, const char *origin, size_t n, kr_store_robots_t *out) {
  kr__store_settle(st);
  const struct dwrite *w = kr__store_dw_find(st, S_ROBOTS_PUT, 0, dv_text(origin, n), 0);
  if (w) {
    memset(out, 0, sizeof(*out));
    out->expires = w->v[1].i > 0 ? (uint64_t)w->v[1].i : 0;
    out->status = (int)w->v[2].i;
    out->final = w->v[3].i != 0;
    out->body = w->v[4].type == SQLITE_BLOB ? (const char *)w->v[4].p : NULL;
    out->body_len = w->v[4].type == SQLITE_BLOB ? w->v[4].len : 0;
    return 1;
  }
  sqlite3_stmt *s = st->stmt[S_ROBOTS_GET];
  sqlite3_bind_text(s, 1, origin, (int)n, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(s);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    return kr__store_db_err(st, "reading robots.txt rules");
  }
  st->get_active = 1; /* readable until the next call */
  memset(out, 0, sizeof(*out));
  int64_t exp = sqlite3_column_int64(s, 0);
  out->expires = exp > 0 ? (uint64_t)exp : 0;
  out->status = sqlite3_column_int(s, 1);
  out->final = sqlite3_column_int(s, 2) != 0;
  out->body = sqlite3_column_blob(s, 3);
  out->body_len = (size_t)sqlite3_column_bytes(s, 3);
  return 1;
}

int kr_store_robots_put(kr_store_t *st, const char *origin, size_t n, const kr_store_robots_t *r) {
  kr__store_settle(st);
  dval_t v[5] = {dv_text(origin, n),
                 dv_int(r->expires > INT64_MAX ? INT64_MAX : (int64_t)r->expires),
                 dv_int(r->status), dv_int(r->final != 0),
                 r->body && r->body_len ? dv_blob(r->body, r->body_len) : dv_null()};
  int rc = kr__store_write_or_keep(st, S_ROBOTS_PUT, v, 5, "writing robots.txt rules");
  return rc < 0 ? rc : 0;
}

int kr_store_uri_set_hint(kr_store_t *st, uint64_t fp, double rate) {
  kr__store_settle(st);
  dval_t v[2] = {dv_int((int64_t)fp), rate > 0 && rate < 1e300 ? dv_float(rate) : dv_null()};
  st->stats.updates++;
  int rc = kr__store_write_or_keep(st, S_URI_SET_HINT, v, 2, "writing a URI's hint");
  if (rc) return rc; /* kept: 1, as if the row were there (a row read
                        during the drain does not show it yet) */
  return sqlite3_changes(st->db) > 0;
}

/* ---- scope: the seeds in force, disregarded URIs ---------------------------- */

/* Statements of this section run at a start or a reload only: prepared
 * each time, like kr_store_due_all's. */
static sqlite3_stmt *prepare_once(kr_store_t *st, const char *sql, const char *what) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
    kr__store_db_err(st, what);
    return NULL;
  }
  return s;
}

int kr_store_seeds_each(kr_store_t *st, int (*fn)(void *ud, const char *url, size_t len,
                                                  unsigned flags),
                        void *ud) {
  kr__store_settle(st);
  sqlite3_stmt *s = prepare_once(st, "SELECT url, flags FROM seeds ORDER BY url", "reading the seeds");
  if (!s) return KR_EDB;
  int rc, ret = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    size_t len;
    const char *url = col_text(s, 0, &len);
    if (!url || !len) continue;
    if ((ret = fn(ud, url, len, (unsigned)sqlite3_column_int(s, 1))) < 0) break;
  }
  sqlite3_finalize(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "reading the seeds");
  return 0;
}

int kr_store_seeds_clear(kr_store_t *st) {
  kr__store_settle(st);
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = prepare_once(st, "DELETE FROM seeds", "replacing the seeds");
  if (!s) return KR_EDB;
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "replacing the seeds");
  st->stats.updates++;
  return 0;
}

int kr_store_seed_put(kr_store_t *st, const char *url, size_t len, unsigned flags, uint64_t now) {
  kr__store_settle(st);
  if (!url || !len) return KR_EINVAL;
  if (kr__store_write_begin(st)) return KR_EDB;
  sqlite3_stmt *s = prepare_once(
      st, "INSERT OR REPLACE INTO seeds(url, flags, added) VALUES (?1, ?2, ?3)", "storing a seed");
  if (!s) return KR_EDB;
  sqlite3_bind_text(s, 1, url, (int)len, SQLITE_STATIC);
  sqlite3_bind_int(s, 2, (int)flags);
  sqlite3_bind_int64(s, 3, now > INT64_MAX ? INT64_MAX : (sqlite3_int64)now);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "storing a seed");
  st->stats.updates++;
  return 0;
}

int kr_store_disregarded_page(kr_store_t *st, int status, const char *after, size_t after_len,
                              const char *below, size_t below_len, size_t max,
                              void (*fn)(void *ud, const kr_uri_row_t *r), void *ud) {
  kr__store_settle(st);
  /* the terms of uris_disregarded, so that SQLite walks it */
  sqlite3_stmt *s = prepare_once(st,
                                 "SELECT fp, url, hop_path FROM uris WHERE state = 3 AND "
                                 "status = ?1 AND url > ?2 AND url < ?3 ORDER BY url LIMIT ?4",
                                 "reading disregarded URIs");
  if (!s) return KR_EDB;
  sqlite3_bind_int(s, 1, status);
  sqlite3_bind_text(s, 2, after ? after : "", after ? (int)after_len : 0, SQLITE_STATIC);
  /* no upper bound: above every URL (they are ASCII) */
  sqlite3_bind_text(s, 3, below ? below : "\x7f", below ? (int)below_len : 1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, max > INT32_MAX ? INT32_MAX : (sqlite3_int64)max);
  int rc, n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    kr_uri_row_t r;
    memset(&r, 0, sizeof r);
    r.fp = (uint64_t)sqlite3_column_int64(s, 0);
    r.url = col_text(s, 1, &r.url_len);
    r.hop_path = col_text(s, 2, &r.hop_len);
    r.state = KR_URI_DISREGARDED;
    r.status = status;
    r.next_at = KR_NEVER;
    if (r.url) fn(ud, &r);
    n++;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "reading disregarded URIs");
  return n;
}

/* ---- WebSub subscriptions ------------------------------------------------------ */

int kr_store_websub_put(kr_store_t *st, const kr_store_websub_t *w) {
  kr__store_settle(st);
  if (!w->topic || !*w->topic || !w->hub || !w->token || !w->secret) return KR_EINVAL;
  dval_t v[5] = {dv_text(w->topic, strlen(w->topic)), dv_text(w->hub, strlen(w->hub)),
                 dv_text(w->token, strlen(w->token)), dv_text(w->secret, strlen(w->secret)),
                 dv_int(w->expires > INT64_MAX ? INT64_MAX : (int64_t)w->expires)};
  st->stats.updates++;
  int rc = kr__store_write_or_keep(st, S_WEBSUB_PUT, v, 5, "storing a WebSub subscription");
  return rc < 0 ? rc : 0;
}

int kr_store_websub_del(kr_store_t *st, const char *topic) {
  kr__store_settle(st);
  if (!topic || !*topic) return KR_EINVAL;
  dval_t v[1] = {dv_text(topic, strlen(topic))};
  st->stats.updates++;
  int rc = kr__store_write_or_keep(st, S_WEBSUB_DEL, v, 1, "removing a WebSub subscription");
  return rc < 0 ? rc : 0;
}

int kr_store_websub_each(kr_store_t *st, int (*fn)(void *ud, const kr_store_websub_t *w),
                         void *ud) {
  kr__store_settle(st);
  sqlite3_stmt *s = prepare_once(
      st, "SELECT topic, hub, token, secret, expires FROM websub ORDER BY topic",
      "reading the WebSub subscriptions");
  if (!s) return KR_EDB;
  int rc, ret = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *col[4];
    for (int i = 0; i < 4; i++) col[i] = (const char *)sqlite3_column_text(s, i);
    if (!col[0] || !col[1] || !col[2] || !col[3]) continue;
    int64_t exp = sqlite3_column_int64(s, 4);
    kr_store_websub_t w = {col[0], col[1], col[2], col[3], exp > 0 ? (uint64_t)exp : 0};
    if ((ret = fn(ud, &w)) < 0) break;
  }
  sqlite3_finalize(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE) return kr__store_db_err(st, "reading the WebSub subscriptions");
  return 0;
}

/* ---- the cluster's outbox ------------------------------------------------------- */

int kr_store_outbox_put(kr_store_t *st, const kr_store_outbox_t *o) {
  kr__store_settle(st);
  if (!o->member || !*o->member || !o->url || !o->url_len) return KR_EINVAL;
  dval_t v[5] = {dv_text(o->member, strlen(o->member)), dv_text(o->url, o->url_len),
                 dv_text(o->hop_path ? o->hop_path : "", o->hop_path ? o->hop_len : 0),
                 o->via ? dv_int((int64_t)o->via) : dv_null(), dv_int(o->directive)};
  st->stats.inserts++;
  int rc = kr__store_write_or_keep(st, S_OUTBOX_PUT, v, 5, "keeping a link in the outbox");
  return rc < 0 ? rc : 0;
}

int kr_store_outbox_del(kr_store_t *st, int64_t id) {
  kr__store_settle(st);
  dval_t v[1] = {dv_int(id)};
  st->stats.updates++;
  int rc = kr__store_write_or_keep(st, S_OUTBOX_DEL, v, 1, "removing a sent link from the outbox");
  return rc < 0 ? rc : 0;
}

int64_t kr_store_outbox_each(kr_store_t *st, int64_t after, size_t max,
                             int (*fn)(void *ud, const kr_store_outbox_t *o), void *ud) {
  kr__store_settle(st);
  sqlite3_stmt *s = prepare_once(st,
                                 "SELECT id, member, url, hop_path, via, directive FROM outbox"
                                 " WHERE id > ?1 ORDER BY id LIMIT ?2",
                                 "reading the outbox");
  if (!s) return KR_EDB;
  sqlite3_bind_int64(s, 1, after);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)(max > INT64_MAX ? INT64_MAX : max));
  int rc, ret = 0;
  int64_t n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    kr_store_outbox_t o = {.id = sqlite3_column_int64(s, 0)};
    size_t ml;
    o.member = col_text(s, 1, &ml);
    o.url = col_text(s, 2, &o.url_len);
    o.hop_path = col_text(s, 3, &o.hop_len);
    if (!o.hop_path) o.hop_path = "";
    o.via = (uint64_t)sqlite3_column_int64(s, 4);
    o.directive = sqlite3_column_int(s, 5);
    if (!o.member || !o.url) continue;
    n++;
    if ((ret = fn(ud, &o)) < 0) break;
  }
  sqlite3_finalize(s);
  if (ret < 0) return ret;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return kr__store_db_err(st, "reading the outbox");
  return n;
}

int64_t kr_store_outbox_count(kr_store_t *st) {
  kr__store_settle(st);
  sqlite3_stmt *s = prepare_once(st, "SELECT count(*) FROM outbox", "counting the outbox");
  if (!s) return KR_EDB;
  int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  return n < 0 ? kr__store_db_err(st, "counting the outbox") : n;
}
