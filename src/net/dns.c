/*
 * Asynchronous name resolution (see dns.h): c-ares driven by the libuv
 * loop, with a TTL cache, a negative cache and coalescing of concurrent
 * lookups, never touching libuv's thread pool.
 *
 * c-ares tells us through its sock_state callback which sockets to watch;
 * each gets one uv_poll_t. When c-ares reports a socket as no longer
 * watched it is about to close the fd, so the poll handle is stopped and
 * closed right there, before the fd goes (libuv#1148); its memory goes in
 * the close callback. One uv_timer_t follows ares_timeout().
 *
 * A lookup is answered, in order, from: an IP literal; the hosts file
 * (read once at start by us: c-ares 1.18 has no option to point at another
 * file, so it is told to ask only the name servers, lookups "b"); loopback
 * for *.localhost; the cache (keyed by the lowercase name, expiry read from
 * kr_clock, so a virtual clock expires entries without waiting); a query
 * already in flight for the same name (one query, many waiters); or a new
 * ares_getaddrinfo, sent at once while fewer than max_queries are out and
 * queued in a FIFO line otherwise. Whatever the source, answers are queued on a ready list
 * and delivered from a uv_idle_t on a later loop turn: no user callback
 * ever runs inside kr_dns_resolve or inside c-ares' own processing, so a
 * callback may resolve, cancel or free the resolver freely.
 *
 * Sections: lists and tables, names and addresses, answers and cache,
 * hosts file, delivery, c-ares plumbing, public API.
 */
#include "dns.h"

#include <arpa/inet.h>
#include <ares.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "log.h"
#include "timer.h"
#include "turnprof.h"

#define HOSTS_MAX_BYTES (4u << 20) /* a larger hosts file is an error */
#define HOSTS_MAX_NAMES 65536
#define NAME_MAX_LEN 253
#define DELIVER_BUDGET 1024 /* callbacks per loop turn */

/* ---- lists and tables ------------------------------------------------ */

typedef struct dlist {
  struct dlist *next, *prev;
} dlist_t;

static void dl_init(dlist_t *h) { h->next = h->prev = h; }
static int dl_empty(const dlist_t *h) { return h->next == h; }
static void dl_append(dlist_t *h, dlist_t *n) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}
static void dl_unlink(dlist_t *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = n;
}
/* Move every node of src to the tail of dst. */
static void dl_splice(dlist_t *dst, dlist_t *src) {
  if (dl_empty(src)) return;
  src->next->prev = dst->prev;
  dst->prev->next = src->next;
  src->prev->next = dst;
  dst->prev = src->prev;
  dl_init(src);
}

/* Chained hash table of intrusive nodes keyed by a NUL-terminated name.
 * The seed differs per resolver so names from crawled pages cannot be
 * chosen to collide. */
typedef struct hnode {
  struct hnode *next; /* bucket chain */
  uint32_t hash;
  const char *key;    /* points into the owning struct */
} hnode_t;

typedef struct htab {
  hnode_t **b; /* nb buckets, nb a power of two */
  size_t nb, n;
} htab_t;

static uint32_t hash_name(uint32_t seed, const char *s) {
  uint32_t h = 2166136261u ^ seed;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h ^ (h >> 15);
}

static hnode_t *ht_find(const htab_t *t, const char *key, uint32_t h) {
  if (!t->nb) return NULL;
  for (hnode_t *n = t->b[h & (t->nb - 1)]; n; n = n->next)
    if (n->hash == h && strcmp(n->key, key) == 0) return n;
  return NULL;
}

static void ht_insert(htab_t *t, hnode_t *n) {
  if (t->n >= t->nb) {
    size_t nb = t->nb ? t->nb * 2 : 64;
    hnode_t **b = kr_xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < t->nb; i++) {
      for (hnode_t *x = t->b[i], *next; x; x = next) {
        next = x->next;
        x->next = b[x->hash & (nb - 1)];
        b[x->hash & (nb - 1)] = x;
      }
    }
    free(t->b);
    t->b = b;
    t->nb = nb;
  }
  hnode_t **head = &t->b[n->hash & (t->nb - 1)];
  n->next = *head;
  *head = n;
  t->n++;
}

static void ht_remove(htab_t *t, hnode_t *n) {
  hnode_t **pp = &t->b[n->hash & (t->nb - 1)];
  while (*pp != n) pp = &(*pp)->next;
  *pp = n->next;
  n->next = NULL;
  t->n--;
}

/* ---- names and addresses --------------------------------------------- */

typedef struct ipaddr {
  uint8_t family; /* AF_INET or AF_INET6 */
  uint8_t ip[16];
} ipaddr_t;

/* Lowercase copy of a host name with one trailing dot removed, into out
 * (NAME_MAX_LEN + 1 bytes). Returns the length, or -1 when the name is not
 * a plausible DNS name. */
static int normalize_name(const char *in, size_t len, char *out) {
  if (len && in[len - 1] == '.') len--;
  if (len == 0 || len > NAME_MAX_LEN) return -1;
  size_t label = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c == '.') {
      if (label == 0) return -1;
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_') {
      if (++label > 63) return -1;
    } else if (c >= 'A' && c <= 'Z') {
      c = (unsigned char)(c + 32);
      if (++label > 63) return -1;
    } else {
      return -1;
    }
    out[i] = (char)c;
  }
  if (label == 0) return -1;
  out[len] = '\0';
  return (int)len;
}

static int family_ok(int want, int family) {
  return want == AF_UNSPEC || want == family;
}

/* Parse an IP literal (no brackets, no zone). 1 with *a filled, else 0. */
static int parse_literal(const char *s, ipaddr_t *a) {
  memset(a, 0, sizeof(*a));
  if (inet_pton(AF_INET, s, a->ip) == 1) {
    a->family = AF_INET;
    return 1;
  }
  if (inet_pton(AF_INET6, s, a->ip) == 1) {
    a->family = AF_INET6;
    return 1;
  }
  return 0;
}

static void ipaddr_to_sockaddr(const ipaddr_t *a, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    memcpy(&sin->sin_addr, a->ip, 4);
  } else {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    memcpy(&sin6->sin6_addr, a->ip, 16);
  }
}

/* ---- resolver state -------------------------------------------------- */

/* An immutable answer, shared by reference: by the cache (one ref while in
 * the table) and by each request waiting to be told (one ref each). */
typedef struct answer {
  hnode_t h;          /* cache table node; key = name */
  dlist_t lru;        /* dns->lru, least recently used first */
  int in_cache;
  int refs;
  int status;         /* 0 or KR_EDNS_* */
  uint64_t expires_ms; /* kr_clock time the cache entry dies */
  uint32_t ttl_s;     /* clamped TTL reported with a fresh answer */
  int naddrs;
  ipaddr_t *addrs;     /* naddrs, inside this allocation */
  char *name;         /* inside this allocation ("" for literals) */
} answer_t;

/* One ares_getaddrinfo in flight and everyone waiting for it. */
typedef struct query {
  hnode_t h;         /* dns->queries node; key = name */
  kr_dns_t *dns;
  dlist_t waiters;   /* kr_dns_req_t.link */
  dlist_t line;      /* in dns->line until sent */
  int sent;          /* handed to c-ares */
  char name[];
} query_t;

struct kr_dns_req {
  dlist_t link;      /* in a query's waiters, dns->ready or dns->delivering */
  kr_dns_t *dns;
  answer_t *answer;  /* a reference, once answered */
  int from_cache;
  kr_dns_cb cb;
  void *data;
};

typedef struct hosts_entry {
  hnode_t h;
  int naddrs;
  ipaddr_t addrs[KR_DNS_MAX_ADDRS];
  char name[];
} hosts_entry_t;

/* A c-ares socket watched by one poll handle; freed in its close cb. */
typedef struct dns_sock {
  uv_poll_t poll;
  kr_dns_t *dns;
  ares_socket_t fd;
  struct dns_sock *next; /* dns->socks: live (not closing) only */
} dns_sock_t;

struct kr_dns {
  uv_loop_t *loop;
  kr_clock_t *clock;
  kr_dns_opts_t opts;      /* strings not kept */
  uint32_t seed;           /* hash seed */
  ares_channel channel;
  int channel_ok;          /* channel initialised, not yet destroyed */
  uv_timer_t ares_timer;   /* armed at ares_timeout() */
  uv_idle_t idle;          /* delivers the ready list */
  int handles;             /* open uv handles; freed at 0 when closing */
  int closing;             /* kr_dns_free was called */
  dns_sock_t *socks;
  htab_t hosts;            /* hosts_entry_t */
  htab_t cache;            /* answer_t with in_cache */
  dlist_t lru;             /* answer_t.lru, least recently used first */
  htab_t queries;          /* query_t, sent or in line */
  dlist_t line;            /* query_t.line: not sent yet, oldest first */
  uint32_t sent;           /* queries c-ares has and has not answered */
  int sending;             /* send_line running (c-ares may answer inside) */
  dlist_t ready;           /* kr_dns_req_t to deliver on the next turn */
  dlist_t delivering;      /* kr_dns_req_t being delivered this turn */
};

/* ---- answers and cache ------------------------------------------------ */

static answer_t *answer_new(int status, const ipaddr_t *addrs, int naddrs,
                            uint32_t ttl_s, const char *name) {
  size_t nlen = strlen(name);
  answer_t *a = kr_xmalloc(sizeof(*a) + (size_t)naddrs * sizeof(ipaddr_t) +
                           nlen + 1);
  memset(a, 0, sizeof(*a));
  a->addrs = (ipaddr_t *)(a + 1);
  a->name = (char *)(a->addrs + naddrs);
  if (naddrs) memcpy(a->addrs, addrs, (size_t)naddrs * sizeof(ipaddr_t));
  memcpy(a->name, name, nlen + 1);
  a->naddrs = naddrs;
  a->status = status;
  a->ttl_s = ttl_s;
  a->refs = 1;
  a->h.key = a->name;
  dl_init(&a->lru);
  return a;
}

static void answer_unref(answer_t *a) {
  if (a && --a->refs == 0) free(a);
}

static void cache_remove(kr_dns_t *dns, answer_t *a) {
  ht_remove(&dns->cache, &a->h);
  dl_unlink(&a->lru);
  a->in_cache = 0;
  answer_unref(a);
}

/* Live cache entry for name, or NULL (an expired one is dropped). */
static answer_t *cache_get(kr_dns_t *dns, const char *name, uint32_t h) {
  hnode_t *n = ht_find(&dns->cache, name, h);
  if (!n) return NULL;
  answer_t *a = container_of(n, answer_t, h);
  if (kr_clock_now_ms(dns->clock) >= a->expires_ms) {
    cache_remove(dns, a);
    return NULL;
  }
  dl_unlink(&a->lru); /* now the most recently used: to the tail */
  dl_append(&dns->lru, &a->lru);
  return a;
}

static void cache_put(kr_dns_t *dns, answer_t *a, uint32_t h, uint32_t ttl_s) {
  if (dns->opts.max_cache_entries == 0 || ttl_s == 0) return;
  hnode_t *old = ht_find(&dns->cache, a->name, h);
  if (old) cache_remove(dns, container_of(old, answer_t, h));
  while (dns->cache.n >= dns->opts.max_cache_entries) /* evict the LRU */
    cache_remove(dns, container_of(dns->lru.next, answer_t, lru));
  a->h.hash = h;
  a->expires_ms = kr_clock_now_ms(dns->clock) + (uint64_t)ttl_s * 1000u;
  a->in_cache = 1;
  a->refs++;
  ht_insert(&dns->cache, &a->h);
  dl_append(&dns->lru, &a->lru);
}

static uint32_t clamp_ttl(const kr_dns_t *dns, int64_t ttl) {
  if (ttl < (int64_t)dns->opts.min_ttl_s) return dns->opts.min_ttl_s;
  if (ttl > (int64_t)dns->opts.max_ttl_s) return dns->opts.max_ttl_s;
  return (uint32_t)ttl;
}

/* ---- hosts file ------------------------------------------------------ */

static void hosts_add(kr_dns_t *dns, const char *name, int len,
                      const ipaddr_t *a) {
  uint32_t h = hash_name(dns->seed, name);
  hnode_t *n = ht_find(&dns->hosts, name, h);
  hosts_entry_t *e;
  if (n) {
    e = container_of(n, hosts_entry_t, h);
  } else {
    if (dns->hosts.n >= HOSTS_MAX_NAMES) return;
    e = kr_xcalloc(1, sizeof(*e) + (size_t)len + 1);
    memcpy(e->name, name, (size_t)len + 1);
    e->h.key = e->name;
    e->h.hash = h;
    ht_insert(&dns->hosts, &e->h);
  }
  if (!family_ok(dns->opts.family, a->family) || e->naddrs >= KR_DNS_MAX_ADDRS)
    return;
  for (int i = 0; i < e->naddrs; i++)
    if (memcmp(&e->addrs[i], a, sizeof(*a)) == 0) return;
  e->addrs[e->naddrs++] = *a;
}

/* "address name [alias...]" lines, '#' comments. Lines that do not parse
 * are skipped (as the C library does); names that are not DNS names too. */
static void hosts_parse(kr_dns_t *dns, char *text, size_t len) {
  char *end = text + len;
  for (char *line = text; line < end;) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    char *eol = nl ? nl : end;
    char *hash = memchr(line, '#', (size_t)(eol - line));
    if (hash) eol = hash;
    *eol = '\0';
    char *save = NULL;
    char *tok = strtok_r(line, " \t\r\f\v", &save);
    ipaddr_t a;
    if (tok && parse_literal(tok, &a)) {
      char norm[NAME_MAX_LEN + 1];
      while ((tok = strtok_r(NULL, " \t\r\f\v", &save))) {
        int n = normalize_name(tok, strlen(tok), norm);
        if (n > 0) hosts_add(dns, norm, n, &a);
      }
    }
    line = nl ? nl + 1 : end;
  }
}

/* Why kr_dns_new fails: to the caller's buffer if it gave one, else logged. */
static void start_error(const kr_dns_t *dns, const char *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void start_error(const kr_dns_t *dns, const char *ctx, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (dns->opts.err && dns->opts.errlen)
    snprintf(dns->opts.err, dns->opts.errlen, "%s%s%s", ctx ? ctx : "", ctx ? ": " : "", msg);
  else
    KR_LOG(KR_LOG_ERROR, ctx, "%s", msg);
}

static int hosts_load(kr_dns_t *dns, const char *path) {
  const char *p = path ? path : "/etc/hosts";
  FILE *f = fopen(p, "rb");
  if (!f) {
    if (!path) return 0; /* no /etc/hosts: nothing to add */
    start_error(dns, p, "cannot open hosts file: %s", strerror(errno));
    return KR_ECONFIG;
  }
  /* Read at most HOSTS_MAX_BYTES + 1 bytes: one more means too big. */
  size_t cap = 64 * 1024, len = 0;
  char *buf = kr_xmalloc(cap + 1);
  int rc = 0;
  for (;;) {
    if (len == cap) {
      if (cap > HOSTS_MAX_BYTES) {
        start_error(dns, p, "hosts file larger than %u bytes", HOSTS_MAX_BYTES);
        rc = KR_ETOOBIG;
        break;
      }
      cap = KR_MIN(cap * 2, (size_t)HOSTS_MAX_BYTES + 1);
      buf = kr_xrealloc(buf, cap + 1);
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    if (n == 0) {
      if (ferror(f)) {
        start_error(dns, p, "cannot read hosts file: %s", strerror(errno));
        rc = KR_ECONFIG;
      }
      break;
    }
    len += n;
  }
  fclose(f);
  if (rc == 0) hosts_parse(dns, buf, len);
  free(buf);
  return rc;
}

static void hosts_free(kr_dns_t *dns) {
  for (size_t i = 0; i < dns->hosts.nb; i++) {
    for (hnode_t *n = dns->hosts.b[i], *next; n; n = next) {
      next = n->next;
      free(container_of(n, hosts_entry_t, h));
    }
  }
  free(dns->hosts.b);
  memset(&dns->hosts, 0, sizeof(dns->hosts));
}

/* ---- delivery -------------------------------------------------------- */

static void maybe_free(kr_dns_t *dns) {
  if (dns->closing && dns->handles == 0) free(dns);
}

static void on_idle(uv_idle_t *h);

/* Queue req to be told answer a (takes a new reference). */
static void req_ready(kr_dns_t *dns, kr_dns_req_t *req, answer_t *a,
                      int from_cache) {
  a->refs++;
  req->answer = a;
  req->from_cache = from_cache;
  dl_append(&dns->ready, &req->link);
  if (!dns->closing) uv_idle_start(&dns->idle, on_idle);
}

/* Build the caller's view of an answer and call back. req is freed first:
 * once its callback runs it is finished. */
static void req_deliver(kr_dns_req_t *req) {
  answer_t *a = req->answer;
  kr_dns_cb cb = req->cb;
  void *data = req->data;
  int from_cache = req->from_cache;
  kr_dns_t *dns = req->dns;
  dl_unlink(&req->link);
  free(req);
  if (a->status != 0) {
    cb(data, a->status, NULL);
  } else {
    kr_dns_result_t res;
    res.naddrs = 0;
    for (int fam = 0; fam < 2; fam++) /* IPv4 first, then IPv6 */
      for (int i = 0; i < a->naddrs; i++)
        if (a->addrs[i].family == (fam ? AF_INET6 : AF_INET))
          ipaddr_to_sockaddr(&a->addrs[i], &res.addrs[res.naddrs++]);
    res.ttl_s = a->ttl_s;
    if (from_cache && a->in_cache) {
      uint64_t now = kr_clock_now_ms(dns->clock);
      uint64_t left = a->expires_ms > now ? a->expires_ms - now : 0;
      res.ttl_s = (uint32_t)((left + 999) / 1000);
    }
    res.from_cache = from_cache;
    cb(data, 0, &res);
  }
  answer_unref(a);
}

static void on_idle(uv_idle_t *h) {
  kr_dns_t *dns = container_of(h, kr_dns_t, idle);
  /* Only what was ready before this turn, and at most DELIVER_BUDGET of
   * it (or the deliver budget's time): answers queued by these callbacks
   * (cache hits, say) wait for the next turn, so a callback that resolves
   * again cannot keep us here, and a burst of answers cannot starve the
   * network. */
  dl_splice(&dns->delivering, &dns->ready);
  KR_TP_ENTER(KR_TP_DNS);
  for (int n = 0; n < DELIVER_BUDGET && !dns->closing && !dl_empty(&dns->delivering); n++) {
    if (dns->opts.deliver_budget && !kr_turn_budget_take(dns->opts.deliver_budget, uv_hrtime()))
      break;
    req_deliver(container_of(dns->delivering.next, kr_dns_req_t, link));
  }
  KR_TP_LEAVE();
  if (!dns->closing && dl_empty(&dns->ready) && dl_empty(&dns->delivering))
    uv_idle_stop(&dns->idle);
}

/* ---- c-ares plumbing -------------------------------------------------- */

static void on_handle_close(uv_handle_t *h) {
  kr_dns_t *dns = h->data;
  dns->handles--;
  maybe_free(dns);
}

static void on_sock_close(uv_handle_t *h) {
  dns_sock_t *s = container_of((uv_poll_t *)h, dns_sock_t, poll);
  kr_dns_t *dns = s->dns;
  free(s);
  dns->handles--;
  maybe_free(dns);
}

static void update_timer(kr_dns_t *dns);

static void on_poll(uv_poll_t *h, int status, int events) {
  dns_sock_t *s = container_of(h, dns_sock_t, poll);
  kr_dns_t *dns = s->dns;
  /* On a poll error let c-ares try both directions: it will see the
   * socket error and fail over or close the socket. */
  ares_socket_t rfd = (status < 0 || (events & UV_READABLE)) ? s->fd
                                                              : ARES_SOCKET_BAD;
  ares_socket_t wfd = (status < 0 || (events & UV_WRITABLE)) ? s->fd
                                                              : ARES_SOCKET_BAD;
  /* s may be closed (not freed) by c-ares below; do not touch it after. */
  ares_process_fd(dns->channel, rfd, wfd);
  update_timer(dns);
}

static void on_sock_state(void *data, ares_socket_t fd, int readable,
                          int writable) {
  kr_dns_t *dns = data;
  dns_sock_t **pp = &dns->socks, *s;
  while ((s = *pp) && s->fd != fd) pp = &s->next;
  if (!readable && !writable) {
    if (!s) return;
    /* c-ares closes fd right after this returns: stop watching it now. */
    *pp = s->next;
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, on_sock_close);
    return;
  }
  if (!s) {
    s = kr_xcalloc(1, sizeof(*s));
    s->dns = dns;
    s->fd = fd;
    int rc = uv_poll_init_socket(dns->loop, &s->poll, fd);
    if (rc < 0) {
      /* The query on this socket will time out in c-ares. */
      KR_LOG(KR_LOG_ERROR, NULL, "cannot watch DNS socket %d: %s", (int)fd,
             uv_strerror(rc));
      free(s);
      return;
    }
    dns->handles++;
    s->next = dns->socks;
    dns->socks = s;
  }
  uv_poll_start(&s->poll, (readable ? UV_READABLE : 0) |
                              (writable ? UV_WRITABLE : 0), on_poll);
}

static void on_ares_timer(uv_timer_t *h) {
  kr_dns_t *dns = container_of(h, kr_dns_t, ares_timer);
  ares_process_fd(dns->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  update_timer(dns);
}

static void update_timer(kr_dns_t *dns) {
  if (dns->closing || !dns->channel_ok) return;
  struct timeval buf, *tv = ares_timeout(dns->channel, NULL, &buf);
  if (!tv) {
    uv_timer_stop(&dns->ares_timer);
    return;
  }
  uint64_t ms = (uint64_t)tv->tv_sec * 1000u +
                ((uint64_t)tv->tv_usec + 999) / 1000;
  uv_timer_start(&dns->ares_timer, on_ares_timer, ms, 0);
}

static int map_ares_status(int status) {
  switch (status) {
    case ARES_ENOTFOUND: return KR_EDNS_NXDOMAIN;
    case ARES_ENODATA: return KR_EDNS_NODATA;
    case ARES_ETIMEOUT: return KR_EDNS_TIMEOUT;
    case ARES_EDESTRUCTION:
    case ARES_ECANCELLED: return KR_ECANCELED;
    default: return KR_EDNS_FAIL;
  }
}

static void on_addrinfo(void *arg, int status, int timeouts,
                        struct ares_addrinfo *ai);

static void send_query(kr_dns_t *dns, query_t *q) {
  struct ares_addrinfo_hints hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = dns->opts.family;
  hints.ai_flags = ARES_AI_NOSORT; /* sorting would connect() per address */
  q->sent = 1;
  dns->sent++;
  ares_getaddrinfo(dns->channel, q->name, NULL, &hints, on_addrinfo, q);
  /* q may be gone now */
}

/* Send queries from the line while slots are free. Not re-entered: an
 * answer inside ares_getaddrinfo frees a slot the running loop uses. */
static void send_line(kr_dns_t *dns) {
  if (dns->sending) return;
  dns->sending = 1;
  while (!dns->closing && !dl_empty(&dns->line) &&
         (!dns->opts.max_queries || dns->sent < dns->opts.max_queries)) {
    query_t *q = container_of(dns->line.next, query_t, line);
    dl_unlink(&q->line);
    send_query(dns, q);
  }
  dns->sending = 0;
}

static void on_addrinfo(void *arg, int status, int timeouts,
                        struct ares_addrinfo *ai) {
  query_t *q = arg;
  kr_dns_t *dns = q->dns;
  dns->sent--;
  ipaddr_t addrs[KR_DNS_MAX_ADDRS];
  int naddrs = 0;
  int64_t ttl = INT64_MAX;
  int err = status == ARES_SUCCESS ? 0 : map_ares_status(status);
  if (status == ARES_SUCCESS && ai) {
    for (struct ares_addrinfo_node *n = ai->nodes; n; n = n->ai_next) {
      if (naddrs >= KR_DNS_MAX_ADDRS) break;
      ipaddr_t *a = &addrs[naddrs];
      memset(a, 0, sizeof(*a));
      if (n->ai_family == AF_INET &&
          n->ai_addrlen >= sizeof(struct sockaddr_in)) {
        a->family = AF_INET;
        memcpy(a->ip, &((struct sockaddr_in *)n->ai_addr)->sin_addr, 4);
      } else if (n->ai_family == AF_INET6 &&
                 n->ai_addrlen >= sizeof(struct sockaddr_in6)) {
        a->family = AF_INET6;
        memcpy(a->ip, &((struct sockaddr_in6 *)n->ai_addr)->sin6_addr, 16);
      } else {
        continue;
      }
      if (!family_ok(dns->opts.family, a->family)) continue;
      naddrs++;
      ttl = KR_MIN(ttl, (int64_t)n->ai_ttl);
    }
    for (struct ares_addrinfo_cname *c = ai->cnames; c; c = c->next)
      ttl = KR_MIN(ttl, (int64_t)c->ttl); /* a CNAME lives no longer */
    if (naddrs == 0) err = KR_EDNS_NODATA;
  }
  if (ai) ares_freeaddrinfo(ai);
  if (err != 0 && err != KR_ECANCELED)
    KR_LOG(KR_LOG_DEBUG, q->name, "while resolving: %s (%s)",
           ares_strerror(status), kr_err_name(err));

  ht_remove(&dns->queries, &q->h);
  if (!dns->closing) {
    uint32_t ttl_s;
    if (err == 0)
      ttl_s = clamp_ttl(dns, ttl < 0 ? 0 : ttl);
    else if (err == KR_EDNS_NXDOMAIN || err == KR_EDNS_NODATA)
      ttl_s = dns->opts.negative_ttl_s;
    else
      ttl_s = 0; /* timeouts and failures are not remembered */
    answer_t *a = answer_new(err, addrs, err ? 0 : naddrs, ttl_s, q->name);
    cache_put(dns, a, q->h.hash, ttl_s);
    while (!dl_empty(&q->waiters)) {
      kr_dns_req_t *r = container_of(q->waiters.next, kr_dns_req_t, link);
      dl_unlink(&r->link);
      req_ready(dns, r, a, 0);
    }
    answer_unref(a);
  }
  /* While closing, kr_dns_free has taken every waiter already. */
  free(q);
  send_line(dns);
  (void)timeouts;
}

/* ---- public API ------------------------------------------------------ */

void kr_dns_opts_default(kr_dns_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->servers = NULL;
  o->use_hosts_file = 1;
  o->hosts_file = NULL;
  o->family = AF_UNSPEC;
  o->min_ttl_s = 60;
  o->max_ttl_s = 86400;
  o->negative_ttl_s = 300;
  o->timeout_ms = 2000;
  o->tries = 2;
  o->max_cache_entries = 65536;
  o->max_queries = 64;
}

static int opts_check(const kr_dns_opts_t *o) {
  if (o->family != AF_UNSPEC && o->family != AF_INET && o->family != AF_INET6)
    return KR_EINVAL;
  if (o->min_ttl_s > o->max_ttl_s) return KR_EINVAL;
  if (o->timeout_ms < 1 || o->timeout_ms > 600000) return KR_EINVAL;
  if (o->tries < 1 || o->tries > 10) return KR_EINVAL;
  return 0;
}

static void tables_free(kr_dns_t *dns) {
  while (!dl_empty(&dns->lru))
    cache_remove(dns, container_of(dns->lru.next, answer_t, lru));
  free(dns->cache.b);
  memset(&dns->cache, 0, sizeof(dns->cache));
  free(dns->queries.b); /* empty: c-ares has called back every query */
  memset(&dns->queries, 0, sizeof(dns->queries));
  hosts_free(dns);
}

int kr_dns_new(uv_loop_t *loop, kr_clock_t *clock, const kr_dns_opts_t *opts,
               kr_dns_t **out) {
  kr_dns_opts_t defaults;
  if (!opts) {
    kr_dns_opts_default(&defaults);
    opts = &defaults;
  }
  *out = NULL;
  if (!loop || !clock) return KR_EINVAL;
  int rc = opts_check(opts);
  if (rc) return rc;
  if (opts->servers && (!*opts->servers || strlen(opts->servers) > 4096))
    return KR_ECONFIG;

  kr_dns_t *dns = kr_xcalloc(1, sizeof(*dns));
  dns->loop = loop;
  dns->clock = clock;
  dns->opts = *opts;
  dns->opts.servers = dns->opts.hosts_file = NULL;
  dns->seed = (uint32_t)(uintptr_t)dns ^ (uint32_t)uv_hrtime();
  dl_init(&dns->lru);
  dl_init(&dns->ready);
  dl_init(&dns->delivering);
  dl_init(&dns->line);
  if (opts->use_hosts_file && (rc = hosts_load(dns, opts->hosts_file)) != 0)
    goto fail;

  if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
    rc = KR_EDNS_FAIL;
    goto fail;
  }
  struct ares_options ao;
  memset(&ao, 0, sizeof(ao));
  ao.sock_state_cb = on_sock_state;
  ao.sock_state_cb_data = dns;
  ao.timeout = (int)opts->timeout_ms;
  ao.tries = opts->tries;
  ao.lookups = (char *)"b"; /* name servers only: the hosts file is ours */
  ao.domains = NULL;        /* no search list: crawled names are complete */
  ao.ndomains = 0;
  ao.flags = ARES_FLAG_EDNS; /* 1232-byte UDP answers before falling back */
  ao.ednspsz = 1232;
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
             ARES_OPT_LOOKUPS | ARES_OPT_DOMAINS | ARES_OPT_FLAGS |
             ARES_OPT_EDNSPSZ;
  int ars = ares_init_options(&dns->channel, &ao, mask);
  if (ars != ARES_SUCCESS) {
    start_error(dns, NULL, "cannot start c-ares: %s", ares_strerror(ars));
    ares_library_cleanup();
    rc = KR_EDNS_FAIL;
    goto fail;
  }
  dns->channel_ok = 1;
  if (opts->servers) {
    ars = ares_set_servers_ports_csv(dns->channel, opts->servers);
    if (ars != ARES_SUCCESS) {
      start_error(dns, opts->servers, "bad DNS server list: %s", ares_strerror(ars));
      ares_destroy(dns->channel); /* no query yet: no callbacks */
      ares_library_cleanup();
      rc = KR_ECONFIG;
      goto fail;
    }
  }
  uv_timer_init(loop, &dns->ares_timer);
  uv_idle_init(loop, &dns->idle);
  dns->ares_timer.data = dns->idle.data = dns;
  dns->handles = 2;
  *out = dns;
  return 0;

fail:
  tables_free(dns);
  free(dns);
  return rc;
}

int kr_dns_resolve(kr_dns_t *dns, const char *host, kr_dns_cb cb, void *data,
                   kr_dns_req_t **reqp) {
  if (reqp) *reqp = NULL;
  if (!dns || !host || !cb) return KR_EINVAL;
  if (dns->closing) return KR_ECANCELED;
  kr_dns_req_t *req = kr_xcalloc(1, sizeof(*req));
  req->dns = dns;
  req->cb = cb;
  req->data = data;
  dl_init(&req->link);

  ipaddr_t lit;
  if (parse_literal(host, &lit)) {
    answer_t *a = family_ok(dns->opts.family, lit.family)
                      ? answer_new(0, &lit, 1, dns->opts.max_ttl_s, "")
                      : answer_new(KR_EDNS_NODATA, NULL, 0, 0, "");
    req_ready(dns, req, a, 0);
    answer_unref(a);
    goto out;
  }
  char name[NAME_MAX_LEN + 1];
  int len = normalize_name(host, strlen(host), name);
  if (len < 0) {
    free(req);
    return KR_EINVAL;
  }
  uint32_t h = hash_name(dns->seed, name);

  hnode_t *hn = ht_find(&dns->hosts, name, h);
  if (hn && container_of(hn, hosts_entry_t, h)->naddrs > 0) {
    hosts_entry_t *e = container_of(hn, hosts_entry_t, h);
    answer_t *a = answer_new(0, e->addrs, e->naddrs, dns->opts.min_ttl_s, "");
    req_ready(dns, req, a, 0);
    answer_unref(a);
    goto out;
  }
  if (strcmp(name, "localhost") == 0 ||
      (len > 10 && strcmp(name + len - 10, ".localhost") == 0)) {
    ipaddr_t lo[2];
    int n = 0;
    memset(lo, 0, sizeof(lo));
    if (family_ok(dns->opts.family, AF_INET)) {
      lo[n].family = AF_INET;
      lo[n].ip[0] = 127;
      lo[n++].ip[3] = 1;
    }
    if (family_ok(dns->opts.family, AF_INET6)) {
      lo[n].family = AF_INET6;
      lo[n++].ip[15] = 1;
    }
    answer_t *a = answer_new(0, lo, n, dns->opts.max_ttl_s, "");
    req_ready(dns, req, a, 0);
    answer_unref(a);
    goto out;
  }

  answer_t *hit = cache_get(dns, name, h);
  if (hit) {
    req_ready(dns, req, hit, 1);
    goto out;
  }

  hnode_t *qn = ht_find(&dns->queries, name, h);
  if (qn) { /* already asked: wait for that answer */
    dl_append(&container_of(qn, query_t, h)->waiters, &req->link);
    goto out;
  }
  query_t *q = kr_xmalloc(sizeof(*q) + (size_t)len + 1);
  memcpy(q->name, name, (size_t)len + 1);
  q->h.key = q->name;
  q->h.hash = h;
  q->dns = dns;
  dl_init(&q->waiters);
  dl_append(&q->waiters, &req->link);
  q->sent = 0;
  ht_insert(&dns->queries, &q->h);
  if (reqp) *reqp = req; /* before: c-ares may answer inside the call */
  dl_append(&dns->line, &q->line);
  send_line(dns);
  /* q may be gone now; req is still queued either way. */
  update_timer(dns);
  return 0;

out:
  if (reqp) *reqp = req;
  return 0;
}

void kr_dns_cancel(kr_dns_req_t *req) {
  if (!req) return;
  /* Waiting on a query: it goes on and still fills the cache. */
  dl_unlink(&req->link);
  answer_unref(req->answer);
  free(req);
}

size_t kr_dns_queries_in_flight(const kr_dns_t *dns) {
  return dns->queries.n;
}

size_t kr_dns_cache_count(const kr_dns_t *dns) { return dns->cache.n; }

void kr_dns_free(kr_dns_t *dns) {
  if (!dns || dns->closing) return;
  dns->closing = 1;
  uv_idle_stop(&dns->idle);
  uv_timer_stop(&dns->ares_timer);

  /* Gather everyone still waiting, then tell them one by one; a callback
   * may cancel another request (it leaves the list) but can start none. */
  dlist_t doomed;
  dl_init(&doomed);
  dl_splice(&doomed, &dns->delivering);
  dl_splice(&doomed, &dns->ready);
  for (size_t i = 0; i < dns->queries.nb; i++)
    for (hnode_t *n = dns->queries.b[i]; n; n = n->next)
      dl_splice(&doomed, &container_of(n, query_t, h)->waiters);
  while (!dl_empty(&doomed)) {
    kr_dns_req_t *r = container_of(doomed.next, kr_dns_req_t, link);
    kr_dns_cb cb = r->cb;
    void *data = r->data;
    dl_unlink(&r->link);
    answer_unref(r->answer);
    free(r);
    cb(data, KR_ECANCELED, NULL);
  }

  /* Calls on_addrinfo (ARES_EDESTRUCTION) for every query, which frees
   * them, and on_sock_state(fd, 0, 0) for every socket, which closes its
   * poll handle before c-ares closes the fd. */
  ares_destroy(dns->channel);
  dns->channel_ok = 0;
  while (!dl_empty(&dns->line)) { /* never sent: c-ares never saw them */
    query_t *q = container_of(dns->line.next, query_t, line);
    dl_unlink(&q->line);
    ht_remove(&dns->queries, &q->h);
    free(q);
  }
  ares_library_cleanup();
  while (dns->socks) { /* c-ares reported every close; belt and braces */
    dns_sock_t *s = dns->socks;
    dns->socks = s->next;
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, on_sock_close);
  }
  tables_free(dns);
  uv_close((uv_handle_t *)&dns->ares_timer, on_handle_close);
  uv_close((uv_handle_t *)&dns->idle, on_handle_close);
}
