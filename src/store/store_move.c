/*
 * Hosts moving to another member of a cluster (`kria cluster rebalance`,
 * src/cli/cmd_cluster.c): a host's state leaves one state database as
 * typed column values and enters another's in one transaction. The
 * columns travel by name, so the two sides agree on what they mean as
 * long as they run the same schema (the importer refuses a column it
 * does not have). Only for a store no crawl runs on: the frontier in
 * memory would not know of the rows.
 *
 * Sections: values, export, import, dropping what left.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"
#include "store_int.h"

/* The robots.txt rows of host queue ?1 (its name): by origin, http and
 * https (a queue by host is named host[:port]). */
#define ROBOTS_OF_HOST "origin IN ('http://' || ?1, 'https://' || ?1)"

/* ---- values -------------------------------------------------------------------------- */

static void val_of(sqlite3_stmt *s, int i, kr_store_val_t *v) {
  v->col = sqlite3_column_name(s, i);
  v->type = sqlite3_column_type(s, i);
  switch (v->type) {
  case SQLITE_INTEGER: v->i = sqlite3_column_int64(s, i); break;
  case SQLITE_FLOAT: v->d = sqlite3_column_double(s, i); break;
  case SQLITE_TEXT:
  case SQLITE_BLOB:
    v->p = v->type == SQLITE_TEXT ? (const void *)sqlite3_column_text(s, i) : sqlite3_column_blob(s, i);
    v->n = (size_t)sqlite3_column_bytes(s, i);
    break;
  default: v->type = SQLITE_NULL;
  }
}

static void bind_val(sqlite3_stmt *s, int i, const kr_store_val_t *v) {
  switch (v->type) {
  case SQLITE_INTEGER: sqlite3_bind_int64(s, i, v->i); break;
  case SQLITE_FLOAT: sqlite3_bind_double(s, i, v->d); break;
  case SQLITE_TEXT: sqlite3_bind_text(s, i, v->p ? v->p : "", (int)v->n, SQLITE_TRANSIENT); break;
  case SQLITE_BLOB: sqlite3_bind_blob(s, i, v->p ? v->p : "", (int)v->n, SQLITE_TRANSIENT); break;
  default: sqlite3_bind_null(s, i);
  }
}

/* ---- export -------------------------------------------------------------------------- */

/* The hosts keep answers 1 for, by id (ascending: hosts are read in id
 * order), with their names. */
typedef struct kept {
  int64_t *ids;
  char **names;
  size_t n, cap;
} kept_t;

static void kept_free(kept_t *k) {
  for (size_t i = 0; i < k->n; i++) free(k->names[i]);
  free(k->ids);
  free(k->names);
}

static int kept_read(kr_store_t *st, kr_store_move_keep_fn keep, void *ud, kept_t *k) {
  sqlite3_stmt *hs;
  memset(k, 0, sizeof *k);
  if (sqlite3_prepare_v2(st->db, "SELECT id, name FROM hosts ORDER BY id", -1, &hs, NULL) !=
      SQLITE_OK)
    return kr__store_db_err(st, "reading hosts to move");
  int step;
  while ((step = sqlite3_step(hs)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(hs, 1);
    size_t len = (size_t)sqlite3_column_bytes(hs, 1);
    if (!name || !keep(ud, name, len)) continue;
    if (k->n == k->cap) {
      k->cap = k->cap ? k->cap * 2 : 64;
      k->ids = kr_xrealloc(k->ids, k->cap * sizeof *k->ids);
      k->names = kr_xrealloc(k->names, k->cap * sizeof *k->names);
    }
    k->ids[k->n] = sqlite3_column_int64(hs, 0);
    k->names[k->n++] = kr_xstrndup(name, len);
  }
  sqlite3_finalize(hs);
  return step == SQLITE_DONE ? 0 : kr__store_db_err(st, "reading hosts to move");
}

/* The index of host id among the kept, -1 when it is not. */
static long kept_find(const kept_t *k, int64_t id) {
  size_t lo = 0, hi = k->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (k->ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < k->n && k->ids[lo] == id ? (long)lo : -1;
}

int kr_store_move_export(kr_store_t *st, kr_store_move_keep_fn keep, kr_store_move_row_fn fn,
                         void *ud) {
  if (kr_store_commit(st)) return KR_EDB;
  kept_t k;
  int rc = kept_read(st, keep, ud, &k);
  sqlite3_stmt *us = NULL, *rs = NULL, *hs = NULL;
  if (rc || !k.n) goto out;
  /* one pass over the URIs whatever the number of hosts (the queue index
   * is partial: a lookup by host would scan the table once per host) */
  if (sqlite3_prepare_v2(st->db, "SELECT * FROM uris", -1, &us, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(st->db, "SELECT * FROM robots WHERE " ROBOTS_OF_HOST, -1, &rs, NULL) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(st->db, "SELECT * FROM hosts WHERE id = ?1", -1, &hs, NULL) !=
          SQLITE_OK) {
    rc = kr__store_db_err(st, "reading hosts to move");
    goto out;
  }
  kr_store_val_t v[KR_STORE_MOVE_COLS];
  int cols = sqlite3_column_count(us), hcol = -1, step;
  for (int i = 0; i < cols; i++)
    if (!strcmp(sqlite3_column_name(us, i), "host_id")) hcol = i;
  while ((step = sqlite3_step(us)) == SQLITE_ROW) {
    long h = kept_find(&k, sqlite3_column_int64(us, hcol));
    if (h < 0) continue;
    int n = 0;
    for (int i = 0; i < cols && n < KR_STORE_MOVE_COLS; i++)
      if (i != hcol) val_of(us, i, &v[n++]);
    if ((rc = fn(ud, "uris", k.names[h], v, (size_t)n)) < 0) goto out;
  }
  if (step != SQLITE_DONE) {
    rc = kr__store_db_err(st, "reading the URIs of hosts to move");
    goto out;
  }
  /* then each host's robots.txt (so the new owner need not fetch it
   * again) and its row, last: the importer counts its URIs then */
  for (size_t h = 0; h < k.n; h++) {
    sqlite3_bind_text(rs, 1, k.names[h], -1, SQLITE_STATIC);
    while ((step = sqlite3_step(rs)) == SQLITE_ROW) {
      int n = 0, rcols = sqlite3_column_count(rs);
      for (int i = 0; i < rcols && n < KR_STORE_MOVE_COLS; i++) val_of(rs, i, &v[n++]);
      if ((rc = fn(ud, "robots", k.names[h], v, (size_t)n)) < 0) goto out;
    }
    sqlite3_reset(rs);
    sqlite3_bind_int64(hs, 1, k.ids[h]);
    if (step != SQLITE_DONE || sqlite3_step(hs) != SQLITE_ROW) {
      rc = kr__store_db_err(st, "reading a host to move");
      goto out;
    }
    int n = 0, hcols = sqlite3_column_count(hs);
    for (int i = 0; i < hcols && n < KR_STORE_MOVE_COLS; i++)
      if (strcmp(sqlite3_column_name(hs, i), "id")) val_of(hs, i, &v[n++]);
    if ((rc = fn(ud, "hosts", k.names[h], v, (size_t)n)) < 0) goto out;
    sqlite3_reset(hs);
  }
out:
  sqlite3_finalize(us);
  sqlite3_finalize(rs);
  sqlite3_finalize(hs);
  kept_free(&k);
  return rc;
}

/* ---- import -------------------------------------------------------------------------- */

/* The import's transaction, its statements prepared once per shape of
 * row (a table and its columns in order: every row of an export has the
 * same) and the last host's id: a move of a million rows prepares a
 * handful of statements. */
struct kr_store_move {
  kr_store_t *st;
  struct shape {
    char *sig;                 /* "table|col,col,..." */
    sqlite3_stmt *s;
  } shapes[3];                 /* uris, robots, hosts */
  sqlite3_stmt *host_id, *host_count;
  char *host;                  /* the last host's name ... */
  int64_t id;                  /* ... and its id */
};

static int exec1(kr_store_t *st, const char *sql, const char *what) {
  char *msg = NULL;
  if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  sqlite3_free(msg);
  return kr__store_db_err(st, what);
}

static void move_free(kr_store_move_t *mv) {
  for (size_t i = 0; i < ARRAY_SIZE(mv->shapes); i++) {
    free(mv->shapes[i].sig);
    sqlite3_finalize(mv->shapes[i].s);
  }
  sqlite3_finalize(mv->host_id);
  sqlite3_finalize(mv->host_count);
  free(mv->host);
  free(mv);
}

int kr_store_move_begin(kr_store_t *st, kr_store_move_t **out) {
  *out = NULL;
  if (kr_store_commit(st)) return KR_EDB;
  int rc = exec1(st, "BEGIN IMMEDIATE", "beginning a move");
  if (rc) return rc;
  kr_store_move_t *mv = kr_xcalloc(1, sizeof *mv);
  mv->st = st;
  *out = mv;
  return 0;
}

int kr_store_move_commit(kr_store_move_t *mv) {
  int rc = exec1(mv->st, "COMMIT", "committing a move");
  if (rc) (void)exec1(mv->st, "ROLLBACK", "rolling a move back");
  move_free(mv);
  return rc;
}

void kr_store_move_rollback(kr_store_move_t *mv) {
  if (!mv) return;
  (void)exec1(mv->st, "ROLLBACK", "rolling a move back");
  move_free(mv);
}

/* A column name from the wire goes into SQL text: lowercase, digits, '_'
 * only (SQLite's prepare then refuses one the table has not). */
static int is_column_name(const char *col) {
  if (!*col) return 0;
  for (const char *p = col; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
  return 1;
}

/* The id of host name, its row created when absent. 0 or KR_EDB. */
static int host_id(kr_store_move_t *mv, const char *name, int64_t *id) {
  if (mv->host && !strcmp(mv->host, name)) {
    *id = mv->id;
    return 0;
  }
  kr_store_t *st = mv->st;
  if (!mv->host_id &&
      sqlite3_prepare_v2(st->db,
                         "INSERT INTO hosts(name) VALUES (?1) ON CONFLICT(name) DO UPDATE SET "
                         "name = excluded.name RETURNING id",
                         -1, &mv->host_id, NULL) != SQLITE_OK)
    return kr__store_db_err(st, "adding a moved host");
  sqlite3_bind_text(mv->host_id, 1, name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(mv->host_id) == SQLITE_ROW ? 0 : KR_EDB;
  if (!rc) *id = sqlite3_column_int64(mv->host_id, 0);
  while (!rc && sqlite3_step(mv->host_id) == SQLITE_ROW) {} /* RETURNING: run to the end */
  sqlite3_reset(mv->host_id);
  if (rc) return kr__store_db_err(st, "adding a moved host");
  free(mv->host);
  mv->host = kr_xstrdup(name);
  mv->id = *id;
  return 0;
}

/* The statement for rows of this shape: the cached one, or a new one.
 * NULL with *rc (KR_EINVAL: a column this schema has not). */
static sqlite3_stmt *shape_stmt(kr_store_move_t *mv, int t, const char *table,
                                const kr_store_val_t *v, size_t n, int *rc) {
  kr_buf_t sig, sql;
  kr_buf_init(&sig, 1u << 16);
  kr_buf_init(&sql, 1u << 16);
  kr_buf_printf(&sig, "%s|", table);
  for (size_t i = 0; i < n; i++) kr_buf_printf(&sig, "%s,", v[i].col);
  kr_buf_append(&sig, "", 1);
  struct shape *sh = &mv->shapes[t];
  if (sh->sig && !strcmp(sh->sig, (const char *)sig.data)) {
    kr_buf_free(&sig);
    kr_buf_free(&sql);
    return sh->s;
  }
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad |= !is_column_name(v[i].col);
  if (t == 2) { /* hosts: every column but the name */
    kr_buf_append_str(&sql, "UPDATE hosts SET ");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      if (!strcmp(v[i].col, "name")) continue;
      kr_buf_printf(&sql, "%s%s = ?%zu", first ? "" : ", ", v[i].col, i + 2);
      first = 0;
    }
    kr_buf_append_str(&sql, " WHERE id = ?1");
  } else { /* a URI (with the host's id here), or a robots.txt by origin */
    int uris = t == 0;
    kr_buf_printf(&sql, "INSERT OR REPLACE INTO %s(%s", table, uris ? "host_id" : "");
    for (size_t i = 0; i < n; i++) kr_buf_printf(&sql, "%s%s", i || uris ? ", " : "", v[i].col);
    kr_buf_append_str(&sql, uris ? ") VALUES (?1" : ") VALUES (");
    for (size_t i = 0; i < n; i++) kr_buf_printf(&sql, "%s?%zu", i || uris ? ", " : "", i + 2);
    kr_buf_append_str(&sql, ")");
  }
  kr_buf_append(&sql, "", 1);
  sqlite3_stmt *s = NULL;
  if (bad || sqlite3_prepare_v2(mv->st->db, (const char *)sql.data, -1, &s, NULL) != SQLITE_OK) {
    KR_LOG(KR_LOG_ERROR, mv->st->path, "a moved %s row does not fit this schema (%s): every "
           "member must run the same kria", table, bad ? "a bad column name" : sqlite3_errmsg(mv->st->db));
    kr_buf_free(&sig);
    kr_buf_free(&sql);
    *rc = KR_EINVAL;
    return NULL;
  }
  free(sh->sig);
  sqlite3_finalize(sh->s);
  sh->sig = kr_xstrdup((const char *)sig.data);
  sh->s = s;
  kr_buf_free(&sig);
  kr_buf_free(&sql);
  return s;
}

int kr_store_move_put(kr_store_move_t *mv, const char *table, const char *host,
                      const kr_store_val_t *v, size_t n) {
  static const char *const tables[] = {"uris", "robots", "hosts"};
  int t = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(table, tables[i])) t = i;
  if (t < 0 || n == 0 || n > KR_STORE_MOVE_COLS) return KR_EINVAL;
  kr_store_t *st = mv->st;
  int64_t id = 0;
  int rc = host_id(mv, host, &id);
  if (rc) return rc;
  sqlite3_stmt *s = shape_stmt(mv, t, table, v, n, &rc);
  if (!s) return rc;
  sqlite3_bind_int64(s, 1, id);
  for (size_t i = 0; i < n; i++) bind_val(s, (int)i + 2, &v[i]);
  rc = sqlite3_step(s) == SQLITE_DONE ? 0 : kr__store_db_err(st, "writing a moved row");
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc || t != 2) return rc;
  /* the host row comes last: its counts are those of the rows it has
   * here now (a URI this member knew already counts once) */
  if (!mv->host_count &&
      sqlite3_prepare_v2(st->db,
                         "UPDATE hosts SET discovered = (SELECT count(*) FROM uris WHERE "
                         "host_id = ?1), queued = (SELECT count(*) FROM uris WHERE host_id = ?1 "
                         "AND next_at < " NEVER_SQL ") WHERE id = ?1",
                         -1, &mv->host_count, NULL) != SQLITE_OK)
    return kr__store_db_err(st, "counting a moved host");
  sqlite3_bind_int64(mv->host_count, 1, id);
  rc = sqlite3_step(mv->host_count) == SQLITE_DONE ? 0 : kr__store_db_err(st, "counting a moved host");
  sqlite3_reset(mv->host_count);
  return rc;
}

int kr_store_move_meta(kr_store_move_t *mv, const char *key, const char *value) {
  kr_store_t *st = mv->st;
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1,
                         &s, NULL) != SQLITE_OK)
    return kr__store_db_err(st, "writing meta");
  sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : kr__store_db_err(st, "writing meta");
  sqlite3_finalize(s);
  return rc;
}

/* ---- dropping what left ---------------------------------------------------------------- */

int64_t kr_store_move_drop(kr_store_move_t *mv, kr_store_move_keep_fn keep, void *ud) {
  kr_store_t *st = mv->st;
  kept_t k;
  int64_t rc = kept_read(st, keep, ud, &k);
  if (rc || !k.n) {
    kept_free(&k);
    return rc;
  }
  /* the ids in a table of their own, then one statement per table: one
   * pass over the URIs, not one per host */
  sqlite3_stmt *ins = NULL;
  rc = exec1(st, "CREATE TEMP TABLE IF NOT EXISTS moved_hosts(id INTEGER PRIMARY KEY);"
                 "DELETE FROM moved_hosts", "dropping moved hosts");
  if (!rc && sqlite3_prepare_v2(st->db, "INSERT INTO moved_hosts(id) VALUES (?1)", -1, &ins,
                                NULL) != SQLITE_OK)
    rc = kr__store_db_err(st, "dropping moved hosts");
  for (size_t i = 0; !rc && i < k.n; i++) {
    sqlite3_bind_int64(ins, 1, k.ids[i]);
    if (sqlite3_step(ins) != SQLITE_DONE) rc = kr__store_db_err(st, "dropping moved hosts");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  if (!rc)
    rc = exec1(st,
               "DELETE FROM robots WHERE origin IN (SELECT 'http://' || name FROM hosts WHERE id "
               "IN moved_hosts UNION ALL SELECT 'https://' || name FROM hosts WHERE id IN "
               "moved_hosts);"
               "DELETE FROM uris WHERE host_id IN moved_hosts;"
               "DELETE FROM hosts WHERE id IN moved_hosts;"
               "DELETE FROM moved_hosts",
               "dropping moved hosts");
  int64_t n = (int64_t)k.n;
  kept_free(&k);
  return rc ? rc : n;
}

int kr_store_move_outbox_clear(kr_store_move_t *mv, int64_t upto) {
  kr_store_t *st = mv->st;
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(st->db, "DELETE FROM outbox WHERE id <= ?1", -1, &s, NULL) != SQLITE_OK)
    return kr__store_db_err(st, "clearing the outbox");
  sqlite3_bind_int64(s, 1, upto);
  int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : kr__store_db_err(st, "clearing the outbox");
  sqlite3_finalize(s);
  return rc;
}
