/*
 * The HTTP client itself (http.h): its options and the address overrides
 * (host:port=ip,... that bypass DNS), creating it, its statistics, and
 * closing it once the last fetch and connection are gone.
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
#include "http_int.h"

/* ---- options ------------------------------------------------------------ */

void kr_http_opts_default(kr_http_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->user_agent = KR_HTTP_DEFAULT_UA;
  o->accept = KR_HTTP_DEFAULT_ACCEPT;
  o->max_header_bytes = 64 * 1024;
  o->max_body_bytes = 64ull << 20;
  o->body_limit_is_error = 0;
  o->max_ratio = 100;
  o->ratio_after_bytes = 1u << 20;
  o->connect_timeout_ms = 10000;
  o->first_byte_timeout_ms = 30000;
  o->idle_timeout_ms = 30000;
  o->total_timeout_ms = 300000;
  o->drain_max_bytes = 16 * 1024;
  o->pool_max_idle_per_key = 64;
  o->pool_max_idle = 1024;
  o->pool_idle_ms = 15000;
  o->tls_verify = KR_TLS_VERIFY_RECORD;
  o->tls_sessions = 20000;
  o->setups_per_address = 16;
}

/* Parse an IP literal (IPv6 with or without brackets) into a sockaddr. */
int kr__http_parse_ip(const char *s, size_t n, struct sockaddr_storage *out) {
  char buf[64];
  if (n >= 2 && s[0] == '[' && s[n - 1] == ']') s++, n -= 2;
  if (n == 0 || n >= sizeof buf) return KR_EINVAL;
  memcpy(buf, s, n);
  buf[n] = '\0';
  memset(out, 0, sizeof *out);
  struct sockaddr_in *s4 = (struct sockaddr_in *)out;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
  if (inet_pton(AF_INET, buf, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    return 0;
  }
  if (inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    return 0;
  }
  return KR_EINVAL;
}

/* One "host:port:addr[,addr...]" entry of n bytes. */
static int parse_override(const char *s, size_t n, override_t *ov) {
  const char *end = s + n;
  const char *c1 = memchr(s, ':', n);
  const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
  if (!c1 || !c2 || c1 == s || c2 == c1 + 1) return KR_ECONFIG;
  int port = 0;
  for (const char *p = c1 + 1; p < c2; p++) {
    if (*p < '0' || *p > '9' || port > 65535) return KR_ECONFIG;
    port = port * 10 + (*p - '0');
  }
  if (port <= 0 || port > 65535) return KR_ECONFIG;
  ov->naddrs = 0;
  for (const char *a = c2 + 1; a <= end;) {
    const char *comma = memchr(a, ',', (size_t)(end - a));
    if (!comma) comma = end;
    if (ov->naddrs == KR_DNS_MAX_ADDRS ||
        kr__http_parse_ip(a, (size_t)(comma - a), &ov->addrs[ov->naddrs]))
      return KR_ECONFIG;
    ov->naddrs++;
    a = comma + 1;
  }
  ov->host = kr_xstrndup(s, (size_t)(c1 - s));
  ov->port = port;
  return 0;
}

/* Entries separated by ';' or blanks → overrides; KR_ECONFIG on bad
 * syntax. */
static int parse_overrides(const char *spec, override_t **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  if (!spec) return 0;
  size_t cap = 1;
  for (const char *s = spec; *s; s++) cap += *s == ';' || *s == ' ';
  override_t *ov = kr_xcalloc(cap, sizeof *ov);
  size_t n = 0;
  for (const char *s = spec; *s;) {
    size_t len = strcspn(s, "; ");
    if (len && parse_override(s, len, &ov[n])) {
      for (size_t i = 0; i < n; i++) free(ov[i].host);
      free(ov);
      return KR_ECONFIG;
    }
    if (len) n++;
    s += len;
    if (*s) s++;
  }
  *out = ov;
  *nout = n;
  return 0;
}

/* ---- client ------------------------------------------------------------- */

static void conns_gone(kr_conn_env_t *env) {
  kr_http_client_t *c = env->data;
  kr__http_maybe_free_client(c);
}

int kr_http_client_new(uv_loop_t *loop, kr_clock_t *clock, kr_dns_t *dns,
                       const kr_http_opts_t *opts, kr_http_client_t **out) {
  kr_http_opts_t def;
  if (!opts) {
    kr_http_opts_default(&def);
    opts = &def;
  }
  kr_http_client_t *c = kr_xcalloc(1, sizeof *c);
  c->loop = loop;
  c->clock = clock;
  c->dns = dns;
  c->opts = *opts;
  if (parse_overrides(opts->resolve, &c->ov, &c->nov)) {
    free(c);
    return KR_ECONFIG;
  }
  c->policy = kr_addrpolicy_new(opts->allow_private_addresses);
  char perr[160];
  if (kr_addrpolicy_allow(c->policy, opts->allow_addresses, perr, sizeof perr) ||
      kr_addrpolicy_deny(c->policy, opts->deny_addresses, perr, sizeof perr)) {
    KR_LOG(KR_LOG_ERROR, NULL, "address policy: %s", perr);
    kr_addrpolicy_free(c->policy);
    for (size_t i = 0; i < c->nov; i++) free(c->ov[i].host);
    free(c->ov);
    free(c);
    return KR_ECONFIG;
  }
  if ((opts->user_agent && !kr__http_header_safe(opts->user_agent)) ||
      (opts->accept && !kr__http_header_safe(opts->accept))) {
    kr_addrpolicy_free(c->policy);
    for (size_t i = 0; i < c->nov; i++) free(c->ov[i].host);
    free(c->ov);
    free(c);
    return KR_ECONFIG;
  }
  /* The TLS context loads the system CA bundle: made at the first https
   * fetch, but a CA file that cannot be read is a configuration error now. */
  FILE *ca = opts->ca_file ? fopen(opts->ca_file, "r") : NULL;
  if (opts->ca_file && !ca) {
    kr_addrpolicy_free(c->policy);
    for (size_t i = 0; i < c->nov; i++) free(c->ov[i].host);
    free(c->ov);
    free(c);
    return KR_ECONFIG;
  }
  if (ca) fclose(ca);
  c->ca_file = opts->ca_file ? kr_xstrdup(opts->ca_file) : NULL;
  c->ua = kr_xstrdup(opts->user_agent ? opts->user_agent : KR_HTTP_DEFAULT_UA);
  c->accept = kr_xstrdup(opts->accept ? opts->accept : KR_HTTP_DEFAULT_ACCEPT);
  c->opts.user_agent = c->ua;
  c->opts.accept = c->accept;
  c->opts.ca_file = c->ca_file;
  c->opts.resolve = NULL;
  c->opts.allow_addresses = c->opts.deny_addresses = NULL; /* in c->policy */
  if (!c->opts.max_header_bytes) c->opts.max_header_bytes = 64 * 1024;
  kr_conn_env_init(&c->env, loop, clock);
  c->env.read_budget = c->opts.read_budget;
  c->env.on_empty = conns_gone;
  c->env.data = c;
  c->nbuckets = 64;
  c->buckets = kr_xcalloc(c->nbuckets, sizeof *c->buckets);
  c->gate = kr_setup_gate_new(c->opts.setups_per_address);
  uv_idle_init(loop, &c->idle);
  uv_timer_init(loop, &c->pool_timer);
  uv_unref((uv_handle_t *)&c->pool_timer);
  c->handles = 2;
  *out = c;
  return 0;
}

const kr_http_opts_t *kr_http_client_opts(const kr_http_client_t *c) { return &c->opts; }

void kr_http_client_turn(kr_http_client_t *c) { kr_conn_env_turn(&c->env); }

void kr_http_client_stats(const kr_http_client_t *c, kr_http_stats_t *out) {
  *out = c->stats;
  out->conns_opened = c->env.opened;
  out->pooled_idle = c->nidle;
  out->conns_live = c->env.live;
  out->reads_deferred = c->env.reads_deferred;
  if (c->tls) kr_tls_ctx_stats(c->tls, &out->tls);
  kr_setup_gate_stats_t gs;
  kr_setup_gate_stats(c->gate, &gs);
  out->setups_running = gs.setting_up;
  out->setups_waiting = gs.waiting;
  out->setups_waited = gs.waited;
}

uint64_t kr_http_client_setups_waiting(const kr_http_client_t *c) {
  kr_setup_gate_stats_t gs;
  kr_setup_gate_stats(c->gate, &gs);
  return gs.waiting;
}

void kr__http_maybe_free_client(kr_http_client_t *c) {
  if (!c->closing || c->handles > 0 || c->env.live > 0) return;
  kr_tls_ctx_free(c->tls);
  kr_setup_gate_free(c->gate);
  free(c->ca_file);
  kr_conn_env_free(&c->env);
  for (size_t i = 0; i < c->nov; i++) free(c->ov[i].host);
  free(c->ov);
  kr_addrpolicy_free(c->policy);
  free(c->buckets);
  free(c->ua);
  free(c->accept);
  free(c);
}

static void client_handle_closed(uv_handle_t *h) {
  kr_http_client_t *c = h->data;
  c->handles--;
  kr__http_maybe_free_client(c);
}

void kr_http_client_close(kr_http_client_t *c) {
  if (c->closing) return;
  /* From here no fetch starts and no connection is pooled. Running
   * fetches end now, and their on_done runs here. */
  c->closing = 1;
  for (kr_http_fetch_t *f = c->inuse; f; f = f->next)
    if (f->state != FS_DONE) kr__http_finish(f, KR_ECANCELED, "client closed");
  while (c->done_head) kr__http_idle_cb(&c->idle);
  /* Fetches the caller did not release are released for it. */
  while (c->inuse) {
    kr_http_fetch_t *f = c->inuse;
    f->done_called = 1;
    kr__http_fetch_recycle(f);
  }
  while (c->free_list) {
    kr_http_fetch_t *f = c->free_list;
    kr__http_list_unlink(&c->free_list, f);
    c->nfree--;
    uv_close((uv_handle_t *)&f->timer, kr__http_fetch_timer_closed);
  }
  while (c->lru_head) kr__http_pool_drop(c, c->lru_head);
  c->idle.data = c;
  c->pool_timer.data = c;
  uv_close((uv_handle_t *)&c->idle, client_handle_closed);
  uv_close((uv_handle_t *)&c->pool_timer, client_handle_closed);
}
