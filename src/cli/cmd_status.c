/*
 * `kria status` and `kria report hosts|frontier|uri URL`: what a crawl is
 * doing, asked of its status server (online), or read from its state
 * database (offline, -s STATE_DIR: also while a crawl runs, through a
 * read-only connection that never takes the crawl's lock).
 *
 * Where to look: --addr IP:PORT asks that server; -s DIR reads DIR's
 * kria.db; -c FILE takes status.listen from the configuration (port 0:
 * the address the crawl wrote to <state-dir>/status.addr), or the state
 * directory when the status server is off. Without any of them, the
 * default address 127.0.0.1:7373. Online output is the server's own text
 * (?format=text) or JSON (--json); offline, the census of the uris table
 * (progress.c) and the hosts table, formatted here. Sections: a blocking
 * HTTP GET for the online case, the offline reports, the cluster's view
 * (--cluster: the members' heartbeats in Redis), argument parsing.
 * Exit: 0, 1 for `report uri` of a URI the crawl does not know, 2 on an
 * error (no server, no database), 64 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <fcntl.h>
#include <inttypes.h>
#include <llhttp.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cluster.h"
#include "internal.h"
#include "kria/cluster.h"
#include "kria/clustermove.h"
#include "clusterpage.h"
#include "kria/config.h"
#include "kria/fp.h"
#include "kria/hoststate.h"
#include "kria/url.h"
#include "progress.h"
#include "service.h"
#include "status.h"
#include "store.h"

#define HTTP_TIMEOUT_MS 10000
#define MAX_BODY (64u << 20)

static const char usage_status[] =
    "usage: kria status [--addr IP:PORT | -s STATE_DIR | -c FILE] [--json]\n"
    "       kria status --cluster -c FILE [--json]\n"
    "\n"
    "What a crawl is doing: asked of its status server (--addr, or status.listen\n"
    "of -c FILE; default " KR_STATUS_DEFAULT_LISTEN "), or read offline from the state\n"
    "database in STATE_DIR (works while the crawl runs: read-only, no lock).\n"
    "--cluster: every member of the [cluster] of FILE, from their heartbeats in\n"
    "Redis (last seen, fetched, hosts, links sent and received, outbox), with\n"
    "each member's stream: entries waiting and read but not acknowledged.\n";

static const char usage_report[] =
    "usage: kria report hosts [--limit N] [--sort overdue|queued|finished|name] [WHERE]\n"
    "       kria report frontier [WHERE]\n"
    "       kria report uri URL [WHERE]\n"
    "WHERE: --addr IP:PORT | -s STATE_DIR | -c FILE (as for kria status); --json\n"
    "\n"
    "hosts: the host queues, most overdue first; frontier: totals and the most\n"
    "overdue hosts; uri: one URI's visits, versions, wait, digest and history.\n"
    "Exit 0, 1 when the URI is unknown, 2 on an error, 64 on a usage error.\n";

/* ---- a blocking HTTP GET ---------------------------------------------------------- */

typedef struct get_ctx {
  kr_buf_t *body;
  int too_big;
  int done;
} get_ctx_t;

static int on_get_body(llhttp_t *p, const char *at, size_t n) {
  get_ctx_t *g = p->data;
  if (kr_buf_append(g->body, at, n)) g->too_big = 1;
  return 0;
}

static int on_get_complete(llhttp_t *p) {
  ((get_ctx_t *)p->data)->done = 1;
  return 0;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for events before the deadline. */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) return KR_ETOOBIG;
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, (int)left);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return KR_EIO;
  }
}

/* GET path from addr; *status and the body. 0 or KR_E* with a message
 * in err. */
static int http_get(const char *addr, const char *path, int *status, kr_buf_t *body, char *err,
                    size_t errlen) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  char host[64];
  const char *port;
  socklen_t slen;
  if (addr[0] == '[') {
    const char *rb = strchr(addr, ']');
    if (!rb || rb[1] != ':' || (size_t)(rb - addr - 1) >= sizeof host) goto bad;
    memcpy(host, addr + 1, (size_t)(rb - addr - 1));
    host[rb - addr - 1] = '\0';
    port = rb + 2;
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) goto bad;
    a->sin6_port = htons((uint16_t)atoi(port));
    slen = sizeof *a;
  } else {
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host) goto bad;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    port = colon + 1;
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) goto bad;
    a->sin_port = htons((uint16_t)atoi(port));
    slen = sizeof *a;
  }
  if (!*port || strspn(port, "0123456789") != strlen(port) || atoi(port) > 65535) goto bad;

  int64_t deadline = mono_ms() + HTTP_TIMEOUT_MS;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return KR_EIO;
  }
  int rc = KR_EIO;
  if (connect(fd, (struct sockaddr *)&ss, slen) < 0 && errno != EINPROGRESS) goto conn_fail;
  if (wait_fd(fd, POLLOUT, deadline)) goto conn_fail;
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr) {
    errno = soerr;
    goto conn_fail;
  }
  char req[4096];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kria/%s\r\nAccept: */*\r\n"
                   "Connection: close\r\n\r\n",
                   path, addr, KRIA_VERSION);
  if (n < 0 || (size_t)n >= sizeof req) {
    snprintf(err, errlen, "request too long");
    close(fd);
    return KR_ETOOBIG;
  }
  for (int off = 0; off < n;) {
    ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
    if (w > 0) {
      off += (int)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLOUT, deadline)) goto io_fail;
    } else {
      goto io_fail;
    }
  }
  llhttp_settings_t st;
  llhttp_settings_init(&st);
  st.on_body = on_get_body;
  st.on_message_complete = on_get_complete;
  llhttp_t p;
  llhttp_init(&p, HTTP_RESPONSE, &st);
  get_ctx_t g = {.body = body};
  p.data = &g;
  char buf[16384];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r > 0) {
      if (llhttp_execute(&p, buf, (size_t)r) != HPE_OK) {
        snprintf(err, errlen, "%s: malformed response", addr);
        rc = KR_EPROTO;
        goto out;
      }
      if (g.too_big) {
        snprintf(err, errlen, "%s: response over %u MiB", addr, MAX_BODY >> 20);
        rc = KR_ETOOBIG;
        goto out;
      }
      if (g.done) break;
    } else if (r == 0) {
      llhttp_finish(&p);
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (wait_fd(fd, POLLIN, deadline)) {
        snprintf(err, errlen, "%s: no complete answer within %d s", addr, HTTP_TIMEOUT_MS / 1000);
        rc = KR_ETOOBIG;
        goto out;
      }
    } else {
      goto io_fail;
    }
  }
  if (!g.done) {
    snprintf(err, errlen, "%s: the connection closed mid-response", addr);
    rc = KR_EPROTO;
    goto out;
  }
  *status = p.status_code;
  rc = 0;
  goto out;
conn_fail:
  snprintf(err, errlen, "cannot reach the status server at %s: %s (is the crawl running with "
                        "[status] listen set? -s STATE_DIR reads its database instead)",
           addr, errno ? strerror(errno) : "timed out");
  goto out;
io_fail:
  snprintf(err, errlen, "%s: %s", addr, strerror(errno));
out:
  close(fd);
  return rc;
bad:
  snprintf(err, errlen, "--addr %s: expected IP:PORT or [IPv6]:PORT", addr);
  return KR_EINVAL;
}

/* Percent-encode s for a query value. */
static void query_escape(kr_buf_t *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("-._~", c))
      kr_buf_append(b, s, 1);
    else
      kr_buf_printf(b, "%%%02X", c);
  }
}

static int online(const char *addr, const char *path, int allow_404) {
  kr_buf_t body;
  kr_buf_init(&body, MAX_BODY);
  char err[512];
  int status = 0;
  int rc = http_get(addr, path, &status, &body, err, sizeof err);
  if (rc) {
    kr_cli_error(rc, "%s", err);
    kr_buf_free(&body);
    return 2;
  }
  int ret = 0;
  if (status == 404 && allow_404) {
    ret = 1;
  } else if (status != 200) {
    kr_cli_error(KR_EIO, "%s%s: HTTP %d: %.*s", addr, path, status,
                 (int)KR_MIN(body.len, 300), body.data ? body.data : "");
    kr_buf_free(&body);
    return 2;
  }
  if (body.len) fwrite(body.data, 1, body.len, ret ? stderr : stdout);
  kr_buf_free(&body);
  return ret;
}

/* ---- offline ------------------------------------------------------------------------ */

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Open DIR/kria.db read-only and check it is a kria database this build
 * reads. 0 and *db (+ *schema), or 2 after printing why. */
static int open_db(const char *dir, char *path, size_t pathlen, sqlite3 **db, int *schema) {
  snprintf(path, pathlen, "%s/%s", dir, KR_STORE_DB_NAME);
  if (access(path, R_OK) != 0) {
    kr_cli_error(KR_EDB, "%s: %s", path, strerror(errno));
    return 2;
  }
  if (kr_store_open_reader(path, 2000, db) != SQLITE_OK) {
    /* Say why, rather than later "not a kria state database". */
    kr_cli_error(KR_EDB, "%s: cannot read: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    return 2;
  }
  sqlite3_stmt *q = NULL;
  int app = 0, ver = -1;
  if (sqlite3_prepare_v2(*db, "PRAGMA application_id", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    app = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  q = NULL;
  if (sqlite3_prepare_v2(*db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    ver = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  if (app != KR_STORE_APP_ID || ver < 1 || ver > KR_STORE_SCHEMA) {
    kr_cli_error(KR_EDB, "%s: not a kria state database this build reads (application_id "
                         "0x%x, schema %d)",
                 path, (unsigned)app, ver);
    sqlite3_close(*db);
    return 2;
  }
  *schema = ver;
  return 0;
}

static int offline_status(const char *dir, int json) {
  char path[4096];
  sqlite3 *db;
  int schema;
  if (open_db(dir, path, sizeof path, &db, &schema)) return 2;
  uint64_t hosts = 0, vt_checks = 0, vt_misses = 0;
  sqlite3_stmt *q = NULL;
  const char *sql = schema >= 2 ? "SELECT count(*), total(vt_checks), total(vt_misses) FROM hosts"
                                : "SELECT count(*), 0, 0 FROM hosts";
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
    hosts = (uint64_t)sqlite3_column_int64(q, 0);
    vt_checks = (uint64_t)sqlite3_column_double(q, 1);
    vt_misses = (uint64_t)sqlite3_column_double(q, 2);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  uint64_t now = now_ms();
  kr_census_t c;
  if (kr_census_scan(path, now, NULL, &c)) {
    kr_cli_error(KR_EDB, "%s: cannot read the uris table", path);
    return 2;
  }
  char a[32], b[32], w[32];
  kr_progress_fmt_ms(kr_lhist_quantile(&c.overdue, 0.5), a, sizeof a);
  kr_progress_fmt_ms(kr_lhist_quantile(&c.overdue, 0.95), b, sizeof b);
  kr_progress_fmt_ms(kr_lhist_quantile(&c.wait, 0.5), w, sizeof w);
  if (json) {
    printf("{\"source\":\"state\",\"database\":");
    kr_buf_t e;
    kr_buf_init(&e, 8192);
    kr_status_json_str(&e, path, strlen(path));
    fwrite(e.data, 1, e.len, stdout);
    kr_buf_free(&e);
    printf(",\"schema\":%d,\"now\":%" PRIu64 ",\"hosts\":%" PRIu64 ",\"uris\":%" PRIu64
           ",\"queued\":%" PRIu64 ",\"due_now\":%" PRIu64 ",\"visited\":%" PRIu64
           ",\"visits\":%" PRIu64 ",\"versions\":%" PRIu64 ",\"states\":{\"queued\":%" PRIu64
           ",\"success\":%" PRIu64 ",\"retry\":%" PRIu64 ",\"disregarded\":%" PRIu64
           ",\"failed\":%" PRIu64 ",\"retired\":%" PRIu64 "},\"overdue_p50_ms\":%" PRIu64 ",\"overdue_p95_ms\":%" PRIu64
           ",\"wait_p50_ms\":%" PRIu64 ",\"validator_checks\":%" PRIu64
           ",\"validator_misses\":%" PRIu64 ",\"scan_ms\":%.3f}\n",
           schema, now, hosts, c.uris, c.queued, c.due_now, c.visited, c.visits, c.versions,
           c.by_state[0], c.by_state[1], c.by_state[2], c.by_state[3], c.by_state[4],
           c.by_state[KR_URI_RETIRED],
           kr_lhist_quantile(&c.overdue, 0.5), kr_lhist_quantile(&c.overdue, 0.95),
           kr_lhist_quantile(&c.wait, 0.5), vt_checks, vt_misses, (double)c.scan_us / 1000);
    return 0;
  }
  printf("kria %s, state %s (offline: no rates, nothing in flight shown)\n", KRIA_VERSION, path);
  printf("frontier    %" PRIu64 " URIs, %" PRIu64 " queued; %" PRIu64 " visited, %" PRIu64
         " retrying, %" PRIu64 " disregarded, %" PRIu64 " failed, %" PRIu64 " retired\n",
         c.uris, c.queued, c.by_state[KR_URI_SUCCESS], c.by_state[KR_URI_RETRY],
         c.by_state[KR_URI_DISREGARDED], c.by_state[KR_URI_FAILED], c.by_state[KR_URI_RETIRED]);
  printf("due now     %" PRIu64 " URIs, overdue p50 %s p95 %s; median wait %s\n", c.due_now, a, b,
         w);
  printf("visits      %" PRIu64 " over %" PRIu64 " URIs, %" PRIu64 " versions (%" PRIu64
         " changes found)\n",
         c.visits, c.visited, c.versions, c.versions > c.visited ? c.versions - c.visited : 0);
  printf("hosts       %" PRIu64 "\n", hosts);
  printf("validators  %" PRIu64 " checks, %" PRIu64 " misses\n", vt_checks, vt_misses);
  return 0;
}

static int64_t col64(sqlite3_stmt *q, int i) { return (int64_t)sqlite3_column_int64(q, i); }

static int offline_hosts(const char *dir, uint64_t limit, int json, int frontier) {
  char path[4096];
  sqlite3 *db;
  int schema;
  if (open_db(dir, path, sizeof path, &db, &schema)) return 2;
  /* Most overdue first: the earliest head next_at (the queue index). */
  char sql[1024];
  snprintf(sql, sizeof sql,
           "SELECT h.name, h.queued, h.finished, h.succeeded, h.failed, h.disregarded, h.bytes,"
           " h.robots_status, h.backoff_until, %s,"
           " (SELECT min(next_at) FROM uris u WHERE u.host_id = h.id AND u.next_at < %" PRIu64 ")"
           " AS head, %s, %s FROM hosts h ORDER BY head IS NULL, head, h.name LIMIT ?1",
           schema >= 2 ? "h.vt_checks, h.vt_misses" : "0, 0", KR_NEVER,
           schema >= 7 ? "h.retired, h.refused" : "0, 0", schema >= 9 ? "h.learned" : "NULL");
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
    kr_cli_error(KR_EDB, "%s: %s", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return 2;
  }
  sqlite3_bind_int64(q, 1, (int64_t)limit);
  uint64_t now = now_ms();
  kr_buf_t b;
  kr_buf_init(&b, 1u << 30);
  if (json) kr_buf_append_str(&b, "{\"source\":\"state\",\"hosts\":[");
  else
    kr_buf_printf(&b, "%-40s %8s %10s %9s %9s %9s %6s %5s %7s %6s %8s %8s\n", "host", "queued",
                  "overdue", "finished", "failed", "checks", "x", "gain", "sample", "run",
                  "retired", "refused");
  size_t n = 0;
  int src;
  while ((src = sqlite3_step(q)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(q, 0);
    uint64_t queued = (uint64_t)sqlite3_column_int64(q, 1);
    int has_head = sqlite3_column_type(q, 11) != SQLITE_NULL;
    uint64_t head = (uint64_t)sqlite3_column_int64(q, 11);
    uint64_t overdue = has_head && head < now ? now - head : 0;
    /* the learned state as the crawl last wrote it (hoststate.h) */
    kr_hoststate_t ls;
    int bad = kr_hoststate_decode(&ls, sqlite3_column_blob(q, 14),
                                  (size_t)sqlite3_column_bytes(q, 14)) != 0;
    int has_x = (ls.has & KR_HS_ALLOC) && ls.alloc.solved, has_vt = (ls.has & KR_HS_VTRUST) != 0;
    if (json) {
      if (n) kr_buf_append(&b, ",", 1);
      kr_buf_append_str(&b, "{\"host\":");
      kr_status_json_str(&b, name ? name : "", name ? strlen(name) : 0);
      kr_buf_printf(&b,
                    ",\"queued\":%" PRIu64 ",\"finished\":%" PRId64 ",\"succeeded\":%" PRId64
                    ",\"failed\":%" PRId64 ",\"disregarded\":%" PRId64 ",\"bytes\":%" PRId64
                    ",\"robots_status\":%d,\"backoff_until\":%" PRId64 ",\"validator_checks\":%" PRId64
                    ",\"validator_misses\":%" PRId64 ",\"retired\":%" PRId64 ",\"refused\":%" PRId64
                    ",\"overdue_ms\":%" PRIu64 ",\"head_next_at\":",
                    queued, col64(q, 2), col64(q, 3),
                    col64(q, 4), col64(q, 5),
                    col64(q, 6), sqlite3_column_int(q, 7),
                    col64(q, 8), col64(q, 9),
                    col64(q, 10), col64(q, 12), col64(q, 13), overdue);
      if (has_head) kr_buf_printf(&b, "%" PRIu64, head);
      else kr_buf_append_str(&b, "null");
      kr_buf_append_str(&b, ",\"learned\":");
      if (bad) kr_buf_append_str(&b, "\"unreadable\"");
      else if (!ls.has) kr_buf_append_str(&b, "null");
      else {
        kr_buf_append_str(&b, "{");
        if (has_x)
          kr_buf_printf(&b, "\"changes_per_visit\":%.6g,\"gain\":%.6g,\"allocator_state\":%d,",
                        ls.alloc.x, ls.alloc.gain, ls.alloc.state);
        if (ls.has & KR_HS_CAPPLAN)
          kr_buf_printf(&b, "\"capacity_floor_ms\":%" PRId64 ",\"planned_uris\":%u,",
                        ls.cap.floor_ms, ls.cap.total);
        if (has_vt)
          kr_buf_printf(&b, "\"trust_sample\":%.6g,\"confirm_run\":%u,", ls.vt_sample,
                        ls.vt.confirm_run);
        if (ls.has & KR_HS_PRIORS) /* the pool's size and what it rests on */
          kr_buf_printf(&b,
                        "\"prior_members\":%.6g,\"prior_samples\":%.6g,\"prior_types\":%u,"
                        "\"prior_templates\":%u,",
                        ls.pool->host.members, ls.pool->host.h_n + ls.pool->host.a_n,
                        ls.pool->ntypes, ls.pool->ntmpls);
        if (ls.has & KR_HS_SIGNALS) { /* as /hosts shows them, default prior */
          kr_sig_params_t sp;
          kr_sig_params_default(&sp);
          kr_buf_append_str(&b, "\"signals\":{");
          for (int k = 0; k < KR_SIG_SOURCES; k++) {
            const kr_sig_rel_t *r = &ls.sig.src[k];
            kr_buf_printf(&b,
                          "%s\"%s\":{\"seen\":%u,\"verified\":%u,\"precision\":%.6g,"
                          "\"recall\":%.6g}",
                          k ? "," : "", kr_sig_source_name((kr_sig_source_t)k), r->seen,
                          r->verified, kr_sig_precision(r, &sp), kr_sig_recall(r, &sp));
          }
          kr_buf_append_str(&b, "},");
        }
        if (ls.damaged) kr_buf_append_str(&b, "\"damaged_sections\":true,");
        kr_buf_printf(&b, "\"bytes\":%d}", sqlite3_column_bytes(q, 14));
      }
      kr_buf_append_str(&b, "}");
    } else {
      char o[32];
      if (has_head) kr_progress_fmt_ms(overdue, o, sizeof o);
      else snprintf(o, sizeof o, "-");
      char x[16] = "-", g[16] = "-", sm[16] = "-", run[16] = "-";
      if (bad) snprintf(x, sizeof x, "?");
      if (has_x) {
        snprintf(x, sizeof x, "%.3g", ls.alloc.x);
        snprintf(g, sizeof g, "%.2f", ls.alloc.gain);
      }
      if (has_vt) {
        snprintf(sm, sizeof sm, "%.2f%%", 100 * ls.vt_sample);
        snprintf(run, sizeof run, "%u", ls.vt.confirm_run);
      }
      kr_buf_printf(&b,
                    "%-40.200s %8" PRIu64 " %10s %9" PRId64 " %9" PRId64 " %9" PRId64
                    " %6s %5s %7s %6s %8" PRId64 " %8" PRId64 "\n",
                    name ? name : "", queued, o, col64(q, 2), col64(q, 4), col64(q, 9), x, g, sm,
                    run, col64(q, 12), col64(q, 13));
    }
    kr_hoststate_free(&ls);
    n++;
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  if (src != SQLITE_DONE) {
    kr_cli_error(KR_EDB, "%s: reading hosts failed", path);
    kr_buf_free(&b);
    return 2;
  }
  if (json) kr_buf_append_str(&b, "]}\n");
  if (frontier && !json) {
    int rc = offline_status(dir, 0);
    if (rc) {
      kr_buf_free(&b);
      return rc;
    }
    printf("\nmost overdue hosts:\n");
  }
  if (b.len) fwrite(b.data, 1, b.len, stdout);
  kr_buf_free(&b);
  return 0;
}

/* The row of url in the database: its canonical form's fingerprint, else
 * the exact text (a full scan: for URLs canonicalized with rules this
 * tool does not know). */
static int offline_uri(const char *dir, const char *url, int json) {
  char path[4096];
  sqlite3 *db;
  int schema;
  if (open_db(dir, path, sizeof path, &db, &schema)) return 2;
  kr_buf_t canon;
  kr_buf_init(&canon, 32768);
  kr_url_canon_opts_t *co = kr_url_canon_opts_new(KR_URL_CANON_STRIP_USERINFO | KR_URL_CANON_TIDY_QUERY);
  kr_url_canon_opts_add_ruleset(co, "session-ids");
  int have_canon = kr_url_canon_str(url, strlen(url), NULL, co, &canon) == 0;
  kr_url_canon_opts_free(co);
  char sql[512];
  snprintf(sql, sizeof sql,
           "SELECT fp, host_id, directive, next_at, state, url, via, hop_path, first_seen,"
           " last_visit, wait_ms, visits, versions, retries, status, content_type, digest, etag,"
           " last_modified, history, %s FROM uris WHERE %s",
           schema >= 2 ? "hint" : "0", "fp = ?1 OR url = ?2 LIMIT 1");
  sqlite3_stmt *q = NULL;
  int ret = 2;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
    kr_cli_error(KR_EDB, "%s: %s", path, sqlite3_errmsg(db));
    goto out;
  }
  sqlite3_bind_int64(q, 1, have_canon ? (int64_t)kr_fp(canon.data, canon.len) : 0);
  sqlite3_bind_text(q, 2, url, -1, SQLITE_STATIC);
  int src = sqlite3_step(q);
  if (src == SQLITE_DONE) {
    fprintf(stderr, "kria: %s is not known to the crawl in %s\n", have_canon ? canon.data : url, dir);
    ret = 1;
    goto out;
  }
  if (src != SQLITE_ROW) {
    kr_cli_error(KR_EDB, "%s: %s", path, sqlite3_errmsg(db));
    goto out;
  }
  kr_uri_row_t r = {0};
  r.fp = (uint64_t)sqlite3_column_int64(q, 0);
  r.host_id = sqlite3_column_int64(q, 1);
  r.directive = sqlite3_column_int(q, 2);
  r.next_at = (uint64_t)sqlite3_column_int64(q, 3);
  r.state = sqlite3_column_int(q, 4);
  r.url = (const char *)sqlite3_column_text(q, 5);
  r.url_len = (size_t)sqlite3_column_bytes(q, 5);
  r.via = (uint64_t)sqlite3_column_int64(q, 6);
  r.hop_path = (const char *)sqlite3_column_text(q, 7);
  r.hop_len = (size_t)sqlite3_column_bytes(q, 7);
  r.first_seen = (uint64_t)sqlite3_column_int64(q, 8);
  r.last_visit = (uint64_t)sqlite3_column_int64(q, 9);
  r.wait_ms = (uint64_t)sqlite3_column_int64(q, 10);
  r.visits = (uint32_t)sqlite3_column_int64(q, 11);
  r.versions = (uint32_t)sqlite3_column_int64(q, 12);
  r.retries = (uint32_t)sqlite3_column_int64(q, 13);
  r.status = sqlite3_column_int(q, 14);
  r.content_type = (const char *)sqlite3_column_text(q, 15);
  r.content_type_len = (size_t)sqlite3_column_bytes(q, 15);
  r.digest = sqlite3_column_blob(q, 16);
  r.digest_len = (size_t)sqlite3_column_bytes(q, 16);
  r.etag = (const char *)sqlite3_column_text(q, 17);
  r.etag_len = (size_t)sqlite3_column_bytes(q, 17);
  r.last_modified = sqlite3_column_int64(q, 18);
  r.history = sqlite3_column_blob(q, 19);
  r.history_len = (size_t)sqlite3_column_bytes(q, 19);
  r.hint_rate = sqlite3_column_double(q, 20);
  kr_buf_t out;
  kr_buf_init(&out, 1u << 20);
  kr__status_uri_format(&r, now_ms(), !json, &out);
  if (out.len) fwrite(out.data, 1, out.len, stdout);
  kr_buf_free(&out);
  ret = 0;
out:
  sqlite3_finalize(q);
  sqlite3_close(db);
  kr_buf_free(&canon);
  return ret;
}

/* ---- the cluster --------------------------------------------------------------------------- */

/* Every member of FILE's [cluster]: its heartbeat (absent: not seen in
 * the last 10 s) and its stream (entries, pending), read in one pipeline
 * and printed as the console's cluster page has them (clusterpage.h).
 * 0, 2 (no cluster, no Redis). */
static int cluster_status(const char *path, int json) {
  kr_config_t *cfg = kr_cli_load_config(path);
  if (!cfg) return 2;
  kr_clusterview_t v;
  if (kr_clusterview_init(&v, cfg)) {
    kr_cli_error(KR_ECONFIG, "%s: no [cluster] redis to ask", path);
    kr_clusterview_free(&v);
    kr_config_free(cfg);
    return 2;
  }
  kr_config_free(cfg);
  int ret = 2;
  redisContext *rc = kr_crawl_cluster_redis_blocking(v.redis, 2);
  if (!rc || rc->err) {
    kr_cli_error(KR_ENET, "cannot reach Redis %s: %s", v.redis, rc ? rc->errstr : "bad address");
    goto out;
  }
  /* the members since the last `kria cluster rebalance`, else cluster.nodes */
  redisReply *mr = redisCommand(rc, "HGET %s:members nodes", v.prefix);
  kr_cluster_members_t moved = {0};
  if (mr && mr->type == REDIS_REPLY_STRING && kr_cluster_members_parse(&moved, mr->str) == 0 &&
      moved.n)
    kr_clusterview_set_members(&v, &moved);
  kr_cluster_members_free(&moved);
  if (mr) freeReplyObject(mr);
  for (size_t i = 0; i < v.n; i++)
    for (int k = 0; k < KR_CLUSTERVIEW_CMDS; k++) {
      const char *argv[4];
      kr_clusterview_bufs_t bufs;
      int argc = kr_clusterview_cmd(&v, i, k, argv, bufs);
      redisAppendCommandArgv(rc, argc, argv, NULL);
    }
  for (size_t i = 0; i < v.n; i++)
    for (int k = 0; k < KR_CLUSTERVIEW_CMDS; k++) {
      void *r = NULL;
      if (redisGetReply(rc, &r) != REDIS_OK) {
        kr_cli_error(KR_ENET, "Redis %s: %s", v.redis, rc->errstr);
        goto out;
      }
      kr_clusterview_take(&v.m[i], k, r);
      freeReplyObject(r);
    }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
  v.taken = now;
  kr_buf_t b;
  kr_buf_init(&b, 1u << 24);
  if (json) kr_clusterpage_json(&v, now, &b), kr_buf_append(&b, "\n", 1);
  else kr_clusterpage_text(&v, now, &b);
  fwrite(b.data, 1, b.len, stdout);
  kr_buf_free(&b);
  ret = 0;
out:
  if (rc) redisFree(rc);
  kr_clusterview_free(&v);
  return ret;
}

/* ---- arguments ------------------------------------------------------------------------ */

typedef struct where {
  const char *addr, *state, *config;
  char addr_buf[128];
  char state_buf[4096];
  int json;
  uint64_t limit;
  const char *sort;
} where_t;

/* Parse the common options from argv[i]; 1 consumed two args, 0 none,
 * -1 usage error (printed). */
static int where_opt(where_t *w, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  if (!strcmp(a, "--json")) {
    w->json = 1;
    return 1;
  }
  if (strcmp(a, "--addr") && strcmp(a, "-s") && strcmp(a, "-c") && strcmp(a, "--limit") &&
      strcmp(a, "--sort"))
    return 0;
  if (*i + 1 >= argc) {
    kr_cli_error(0, "%s needs a value", a);
    return -1;
  }
  const char *v = argv[++*i];
  if (!strcmp(a, "--addr")) w->addr = v;
  else if (!strcmp(a, "-s")) w->state = v;
  else if (!strcmp(a, "-c")) w->config = v;
  else if (!strcmp(a, "--sort")) w->sort = v;
  else {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || !*v || v[0] == '-' || n > 10000) {
      kr_cli_error(0, "--limit %s: expected 0..10000", v);
      return -1;
    }
    w->limit = n;
  }
  return 1;
}

/* Decide online/offline. 0 with w->addr or w->state set, or 2. */
static int resolve_where(where_t *w) {
  if (!!w->addr + !!w->state + !!w->config > 1) {
    kr_cli_error(0, "give one of --addr, -s and -c");
    return 64;
  }
  if (w->config) {
    kr_config_t *cfg = kr_cli_load_config(w->config);
    if (!cfg) return 2;
    const kr_config_view_t *g = kr_config_global(cfg);
    const char *listen = kr_config_str(g, KR_CFG_STATUS_LISTEN);
    const char *dir = kr_config_str(g, KR_CFG_CRAWL_STATE_DIR);
    snprintf(w->state_buf, sizeof w->state_buf, "%s", dir);
    if (listen[0]) {
      snprintf(w->addr_buf, sizeof w->addr_buf, "%s", listen);
      size_t n = strlen(w->addr_buf);
      if (n >= 2 && !strcmp(w->addr_buf + n - 2, ":0")) {
        /* an ephemeral port: the crawl wrote the one it got */
        char p[4200];
        snprintf(p, sizeof p, "%s/status.addr", dir);
        FILE *f = fopen(p, "r");
        if (!f || !fgets(w->addr_buf, sizeof w->addr_buf, f)) {
          kr_cli_error(KR_EIO, "%s: cannot read the status address (is the crawl running?)", p);
          if (f) fclose(f);
          kr_config_free(cfg);
          return 2;
        }
        fclose(f);
        w->addr_buf[strcspn(w->addr_buf, "\r\n")] = '\0';
      }
      w->addr = w->addr_buf;
    } else {
      w->state = w->state_buf;
    }
    kr_config_free(cfg);
  }
  if (!w->addr && !w->state) w->addr = KR_STATUS_DEFAULT_LISTEN;
  return 0;
}

int kr_cmd_status(int argc, char **argv) {
  where_t w = {0};
  int cluster = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage_status, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--cluster")) {
      cluster = 1;
      continue;
    }
    int r = where_opt(&w, argc, argv, &i);
    if (r < 0) return 64;
    if (r == 0 || w.limit || w.sort) {
      kr_cli_error(0, "status: unexpected argument '%s' (try 'kria status --help')", argv[i]);
      return 64;
    }
  }
  if (cluster) {
    if (!w.config || w.addr || w.state) {
      kr_cli_error(0, "status --cluster: give the configuration of a member (-c FILE)");
      return 64;
    }
    return cluster_status(w.config, w.json);
  }
  int rc = resolve_where(&w);
  if (rc) return rc;
  if (w.state) return offline_status(w.state, w.json);
  return online(w.addr, w.json ? "/status" : "/status?format=text", 0);
}

int kr_cmd_report(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_report, stderr);
    return 64;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fputs(usage_report, stdout);
    return 0;
  }
  const char *what = argv[1];
  const char *url = NULL;
  where_t w = {0};
  w.limit = 50;
  for (int i = 2; i < argc; i++) {
    int r = where_opt(&w, argc, argv, &i);
    if (r < 0) return 64;
    if (r > 0) continue;
    if (!strcmp(what, "uri") && !url && argv[i][0] != '-') {
      url = argv[i];
      continue;
    }
    kr_cli_error(0, "report: unexpected argument '%s' (try 'kria report --help')", argv[i]);
    return 64;
  }
  int is_hosts = !strcmp(what, "hosts"), is_frontier = !strcmp(what, "frontier"),
      is_uri = !strcmp(what, "uri");
  if (!is_hosts && !is_frontier && !is_uri) {
    kr_cli_error(0, "report: unknown report '%s' (hosts, frontier or uri URL)", what);
    return 64;
  }
  if (is_uri && !url) {
    kr_cli_error(0, "report uri: give the URL");
    return 64;
  }
  if (w.sort && !is_hosts) {
    kr_cli_error(0, "report: --sort is for hosts");
    return 64;
  }
  int rc = resolve_where(&w);
  if (rc) return rc;
  if (w.state) {
    if (is_uri) return offline_uri(w.state, url, w.json);
    if (w.sort && strcmp(w.sort, "overdue")) {
      kr_cli_error(0, "report hosts: offline, hosts are listed most overdue first only");
      return 64;
    }
    return offline_hosts(w.state, w.limit, w.json, is_frontier);
  }
  kr_buf_t path;
  kr_buf_init(&path, 65536);
  if (is_hosts) {
    kr_buf_printf(&path, "/hosts?limit=%" PRIu64, w.limit);
    if (w.sort) {
      kr_buf_append_str(&path, "&sort=");
      query_escape(&path, w.sort);
    }
  } else if (is_frontier) {
    kr_buf_append_str(&path, "/frontier?");
  } else {
    kr_buf_append_str(&path, "/uri?url=");
    query_escape(&path, url);
  }
  if (!w.json) kr_buf_append_str(&path, is_frontier ? "format=text" : "&format=text");
  if (path.len > 4000) {
    kr_cli_error(0, "report uri: the URL is too long to ask for");
    kr_buf_free(&path);
    return 64;
  }
  rc = online(w.addr, path.data, is_uri);
  kr_buf_free(&path);
  return rc;
}
