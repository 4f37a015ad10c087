/*
 * WebSub subscriptions (W3C WebSub, 2018): a push from a feed's hub is a
 * high-reliability change signal.
 *
 * Discovery  proc_feed hands over a feed's hub and self (topic) URLs,
 *            from the Link headers or else the document (kria/websub.h,
 *            kr_feed_hub). With websub.callback set, a topic not yet
 *            subscribed (at most websub.max-subscriptions) gets a
 *            subscription: a random token (the callback is callback +
 *            "/" + token, so the route is guarded by the unguessable
 *            path) and a random secret, kept in the state database
 *            (store.h, websub table) before the request leaves.
 * Request    POST application/x-www-form-urlencoded to the hub through
 *            the crawl's HTTP client (its address policy, TLS and
 *            timeouts): hub.mode=subscribe, hub.topic, hub.callback,
 *            hub.lease_seconds (websub.lease), hub.secret.
 * Retries    a request not followed by the hub's verification (the hub
 *            refused it, did not answer, or took it and never came back)
 *            is sent again websub.verify-timeout later, then after twice
 *            that, and so on (kria/websub.h kr_websub_retry_ms, at most
 *            RETRY_CAP_MS); after websub.verify-attempts requests the
 *            subscription is given up (a warning, the websub_given_up
 *            counter): it keeps its row with no token and no secret, so
 *            its callback answers 404, the feed is not asked for again
 *            at that hub (a restart included) and the row still counts
 *            among websub.max-subscriptions (rows stay bounded). A feed
 *            that later names another hub is asked afresh. The requests
 *            made without a verification are kept in the row's expires
 *            (below STORED_ATTEMPTS_BELOW: no lease ends in 1970's first
 *            second), so a restart goes on counting instead of starting
 *            over; a lease that ended without a renewal verified counts
 *            as no verification.
 * Intent     the hub's GET at the callback (kr_crawl_websub_verify):
 *            subscribe with the subscription's topic is confirmed (the
 *            status server echoes hub.challenge) and the granted lease
 *            (hub.lease_seconds, else the one asked) stored; denied
 *            drops the subscription; anything else is 404. We never
 *            unsubscribe, so an unsubscribe is never ours.
 * Renewal    a tenth of the lease (at least RENEW_MIN_MS) before it
 *            ends (kr_websub_renew_at), the same subscription (token,
 *            secret) is requested again, with the retries above until
 *            the hub verifies it; one still waiting for its verification
 *            at a start (no lease yet) is requested again then.
 * Push       the hub's POST (kr_crawl_websub_notify): the signature must
 *            be the HMAC of the body under the secret (WebSub 8); a
 *            missing or wrong one is ignored but still answered 2xx (so
 *            a forger learns nothing). A valid push makes the topic due
 *            now and pulls forward the pushed feed's items whose date is
 *            after their URI's last visit: known URIs only (a push names
 *            no new URI into the scope: the topic's fetch, now due, finds
 *            new items the usual way). A push is a change signal of its
 *            own source (signal.h WEBSUB): each URI it names gets a claim
 *            (the topic at the push, an item at its date) that its next
 *            visit verifies into the host's reliability (crawl.log
 *            sig:websub:tp|fp|fn, /hosts signals.websub), and the pulls
 *            are gated by it as a feed's dated items are: a hub that
 *            pushes what did not change stops pulling once probation is
 *            over (counted ignored).
 * Sections: the table, requests, the crawl's side, the callbacks.
 */
#include <openssl/rand.h>
#include <string.h>

#include "crawl.h"
#include "internal.h"
#include "kria/fp.h"
#include "kria/websub.h"
#include "log.h"
#include "procs.h"

#define TOKEN_BYTES 16          /* 128 random bits each for token and secret */
#define RETRY_CAP_MS (86400 * 1000u) /* the longest wait between two requests */
#define RENEW_MIN_MS 1000u
/* A stored expires below this is not a lease's end but the requests made
 * without a verification (websub.verify-attempts is at most 100). */
#define STORED_ATTEMPTS_BELOW 1000u

/* ---- the table ---------------------------------------------------------------------------- */

typedef struct wsub {
  struct kr_websub *ws;
  char *topic, *hub, *token, *secret;
  uint64_t expires;          /* epoch ms the granted lease ends; 0 not verified */
  kr_http_fetch_t *req;      /* the request in flight, NULL none */
  kr_wheel_entry_t renew;    /* the next request */
  unsigned attempts;         /* requests since the last verification */
  int dead;                  /* denied while its request ran: freed when it ends */
  int given_up;              /* no verification after verify-attempts: token "" */
  struct wsub *next;
} wsub_t;

struct kr_websub {
  kr_crawl_t *c;
  char *callback;            /* websub.callback at the start */
  int64_t lease_s;           /* asked */
  uint64_t verify_ms;        /* websub.verify-timeout: the first retry's wait */
  unsigned attempts_max;     /* websub.verify-attempts */
  size_t max, n;             /* given-up subscriptions count too */
  wsub_t *head;
};

static void wsub_free(wsub_t *s) {
  kr_timer_stop(&s->renew);
  free(s->topic);
  free(s->hub);
  free(s->token);
  free(s->secret);
  free(s);
}

static wsub_t *find_topic(struct kr_websub *ws, const char *topic) {
  for (wsub_t *s = ws->head; s; s = s->next)
    if (strcmp(s->topic, topic) == 0) return s;
  return NULL;
}

/* Every token is compared whole, whatever matched before: the time says
 * nothing about a token's bytes. */
static wsub_t *find_token(struct kr_websub *ws, kr_slice_t tok) {
  wsub_t *hit = NULL;
  for (wsub_t *s = ws->head; s; s = s->next) {
    if (s->given_up) continue; /* no token: nothing to match */
    size_t n = strlen(s->token);
    unsigned char diff = (unsigned char)(n != tok.n);
    for (size_t i = 0; i < n; i++)
      diff |= (unsigned char)(s->token[i] ^ (tok.n ? tok.p[i % tok.n] : 0));
    if (!diff && !hit) hit = s;
  }
  return hit;
}

static void unlink_sub(struct kr_websub *ws, wsub_t *s) {
  for (wsub_t **p = &ws->head; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      ws->n--;
      return;
    }
}

static char *random_hex(void) {
  unsigned char b[TOKEN_BYTES];
  if (RAND_bytes(b, sizeof b) != 1) return NULL;
  char *out = kr_xmalloc(2 * TOKEN_BYTES + 1);
  for (size_t i = 0; i < TOKEN_BYTES; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
  return out;
}

/* The row of s: its lease's end, or while it has none the requests made
 * for it (STORED_ATTEMPTS_BELOW). */
static void persist(struct kr_websub *ws, const wsub_t *s) {
  if (!ws->c->frontier) return;
  uint64_t exp = s->expires ? s->expires : KR_MIN(s->attempts, STORED_ATTEMPTS_BELOW - 1);
  kr_store_websub_t w = {s->topic, s->hub, s->token, s->secret, exp};
  if (kr_store_websub_put(kr_frontier_store(ws->c->frontier), &w) < 0)
    KR_LOG(KR_LOG_WARN, s->topic, "websub: cannot store the subscription");
}

/* ---- requests ----------------------------------------------------------------------------- */

static void on_renew(kr_wheel_entry_t *e);

static void schedule(wsub_t *s, uint64_t due) {
  if (s->ws->c->closing) return;
  kr_timer_start(&s->ws->c->timers, &s->renew, due, on_renew);
}

/* form-urlencode s onto b: every byte but the unreserved ones as %XX */
static void form_enc(kr_buf_t *b, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        strchr("-._~", ch))
      kr_buf_append(b, s, 1);
    else
      kr_buf_printf(b, "%%%02X", ch);
  }
}

static void on_request_done(kr_http_fetch_t *f, int err) {
  wsub_t *s = kr_http_fetch_data(f);
  kr_crawl_t *c = s->ws->c;
  int status = err ? 0 : kr_http_fetch_resp(f)->status;
  s->req = NULL;
  if (s->dead || c->closing) {
    kr_http_fetch_release(f);
    if (s->dead) wsub_free(s);
    return;
  }
  if (status >= 200 && status < 300) {
    c->st.websub_requests++;
    KR_LOG(KR_LOG_INFO, s->topic, "websub: hub %s took the subscription request (%d)", s->hub,
           status);
  } else { /* asked again when its retry is due (ask) */
    c->st.websub_request_errors++;
    KR_LOG(KR_LOG_WARN, s->topic, "websub: hub %s refused the subscription request: %s", s->hub,
           err ? kr_http_fetch_errmsg(f)[0] ? kr_http_fetch_errmsg(f) : kr_strerror(err)
               : "not 2xx");
  }
  kr_http_fetch_release(f);
}

static const kr_http_cbs_t request_cbs = {.on_done = on_request_done};

static void send_request(wsub_t *s) {
  struct kr_websub *ws = s->ws;
  kr_crawl_t *c = ws->c;
  if (s->req || c->stopping || !c->http) return;
  kr_url_t *hub = NULL;
  if (kr_url_parse(s->hub, strlen(s->hub), NULL, &hub)) return;
  kr_buf_t body, cb;
  kr_buf_init(&body, 16384);
  kr_buf_init(&cb, 1024);
  kr_buf_printf(&cb, "%s/%s", ws->callback, s->token);
  kr_buf_append_str(&body, "hub.mode=subscribe&hub.topic=");
  form_enc(&body, s->topic);
  kr_buf_append_str(&body, "&hub.callback=");
  form_enc(&body, cb.data);
  kr_buf_printf(&body, "&hub.lease_seconds=%lld&hub.secret=", (long long)ws->lease_s);
  form_enc(&body, s->secret);
  const kr_hostcfg_t *hc =
      kr_crawl_hostcfg(c, kr_url_hostname(hub).p, kr_url_hostname(hub).n);
  kr_http_req_t rq = {.method = KR_HTTP_POST,
                      .body = body.data,
                      .body_len = body.len,
                      .body_type = "application/x-www-form-urlencoded",
                      .opts = &hc->http};
  int rc = kr_http_fetch_start(c->http, hub, &rq, &request_cbs, s, &s->req);
  if (rc) {
    s->req = NULL;
    c->st.websub_request_errors++;
    KR_LOG(KR_LOG_WARN, s->topic, "websub: cannot ask hub %s: %s", s->hub, kr_strerror(rc));
  }
  kr_buf_free(&body);
  kr_buf_free(&cb);
  kr_url_free(hub);
}

/* No verification after verify-attempts requests: stop asking, keep the
 * row without token or secret (the topic is not asked for again at this
 * hub, and its place among max-subscriptions stays taken: bounded). */
static void give_up(wsub_t *s) {
  struct kr_websub *ws = s->ws;
  kr_timer_stop(&s->renew);
  s->given_up = 1;
  s->expires = 0;
  s->token[0] = s->secret[0] = '\0';
  persist(ws, s);
  ws->c->st.websub_given_up++;
  KR_LOG(KR_LOG_WARN, s->topic,
         "websub: hub %s never verified the subscription after %u requests: given up (the feed "
         "is still crawled; asked again only if it names another hub)",
         s->hub, s->attempts);
}

/* The next request of s, and the retry that follows it unless the hub
 * verifies first (kr_crawl_websub_verify then schedules the renewal). */
static void ask(wsub_t *s) {
  struct kr_websub *ws = s->ws;
  if (s->given_up || ws->c->stopping) return;
  uint64_t now = kr_crawl_now(ws->c);
  if (s->expires && s->expires <= now) s->expires = 0; /* lapsed: not subscribed */
  if (s->attempts >= ws->attempts_max) {
    give_up(s);
    return;
  }
  s->attempts++;
  if (!s->expires) persist(ws, s); /* the count outlives a restart */
  send_request(s);
  schedule(s, now + kr_websub_retry_ms(ws->verify_ms, s->attempts, RETRY_CAP_MS));
}

static void on_renew(kr_wheel_entry_t *e) { ask(container_of(e, wsub_t, renew)); }

/* When to ask again for a lease granted from..until: a tenth of it early. */
static uint64_t renew_at(uint64_t now, uint64_t until, uint64_t lease_ms) {
  return kr_websub_renew_at(now, until, lease_ms, RENEW_MIN_MS);
}

/* ---- the crawl's side ---------------------------------------------------------------------- */

static wsub_t *sub_new(struct kr_websub *ws, const char *topic, const char *hub,
                       const char *token, const char *secret, uint64_t expires) {
  wsub_t *s = kr_xcalloc(1, sizeof *s);
  s->ws = ws;
  s->topic = kr_xstrdup(topic);
  s->hub = kr_xstrdup(hub);
  s->token = kr_xstrdup(token);
  s->secret = kr_xstrdup(secret);
  s->expires = expires;
  kr_wheel_entry_init(&s->renew, on_renew);
  s->next = ws->head;
  ws->head = s;
  ws->n++;
  return s;
}

static int load_one(void *ud, const kr_store_websub_t *w) {
  struct kr_websub *ws = ud;
  if (ws->n >= ws->max || find_topic(ws, w->topic)) return 0;
  int unverified = w->expires < STORED_ATTEMPTS_BELOW;
  wsub_t *s = sub_new(ws, w->topic, w->hub, w->token, w->secret, unverified ? 0 : w->expires);
  if (!*w->token) { /* given up (give_up): kept, never asked again */
    s->given_up = 1;
    return 0;
  }
  if (unverified) s->attempts = (unsigned)w->expires; /* made before the restart */
  uint64_t now = kr_crawl_now(ws->c);
  /* the lease asked stands for the one granted: the row keeps its end only */
  schedule(s, s->expires ? renew_at(now, s->expires, (uint64_t)ws->lease_s * 1000) : now);
  return 0;
}

int kr__crawl_websub_open(kr_crawl_t *c) {
  const kr_config_view_t *g = kr_config_global(c->cfg);
  const char *cb = kr_config_str(g, KR_CFG_WEBSUB_CALLBACK);
  if (!cb || !*cb) return 0;
  struct kr_websub *ws = kr_xcalloc(1, sizeof *ws);
  ws->c = c;
  ws->callback = kr_xstrdup(cb);
  ws->lease_s = kr_config_ms(g, KR_CFG_WEBSUB_LEASE) / 1000;
  ws->max = (size_t)kr_config_int(g, KR_CFG_WEBSUB_MAX_SUBSCRIPTIONS);
  ws->verify_ms = kr_config_ms(g, KR_CFG_WEBSUB_VERIFY_TIMEOUT);
  ws->attempts_max = (unsigned)kr_config_int(g, KR_CFG_WEBSUB_VERIFY_ATTEMPTS);
  c->websub = ws;
  return kr_store_websub_each(kr_frontier_store(c->frontier), load_one, ws);
}

void kr__crawl_websub_stop(kr_crawl_t *c) {
  if (!c->websub) return;
  for (wsub_t *s = c->websub->head; s; s = s->next) kr_timer_stop(&s->renew);
}

void kr__crawl_websub_free(kr_crawl_t *c) {
  struct kr_websub *ws = c->websub;
  if (!ws) return;
  while (ws->head) {
    wsub_t *s = ws->head;
    ws->head = s->next;
    wsub_free(s);
  }
  free(ws->callback);
  free(ws);
  c->websub = NULL;
}

size_t kr_crawl_websub_active(const kr_crawl_t *c) {
  size_t n = 0;
  uint64_t now = kr_crawl_now(c);
  for (const wsub_t *s = c->websub ? c->websub->head : NULL; s; s = s->next)
    n += s->expires > now;
  return n;
}

/* raw resolved against base: its href in out (0), or -1 (not http(s)) */
static int absolute(kr_slice_t raw, const kr_url_t *base, kr_buf_t *out) {
  kr_url_t *u = NULL;
  raw = kr_slice_trim(raw);
  if (!raw.n || kr_url_parse(raw.p, raw.n, base, &u) || !kr_url_is_http(u)) {
    kr_url_free(u);
    return -1;
  }
  kr_buf_reset(out);
  kr_buf_append_str(out, kr_url_href(u));
  kr_url_free(u);
  return 0;
}

void kr__crawl_websub_discovered(kr_crawl_t *c, const kr_url_t *feed, kr_slice_t hub, kr_slice_t self) {
  struct kr_websub *ws = c->websub;
  if (!ws || c->stopping || !hub.n || !self.n) return;
  kr_buf_t h, t;
  kr_buf_init(&h, 8192);
  kr_buf_init(&t, 8192);
  if (absolute(hub, feed, &h) == 0 && absolute(self, feed, &t) == 0) {
    wsub_t *s = find_topic(ws, t.data);
    if (s && strcmp(s->hub, h.data) != 0) { /* the feed moved to another hub */
      char *tok = s->given_up ? random_hex() : NULL, *sec = s->given_up ? random_hex() : NULL;
      if (!s->given_up || (tok && sec)) {
        if (s->given_up) { /* asked afresh, with a new token and secret */
          free(s->token);
          free(s->secret);
          s->token = tok, s->secret = sec;
          tok = sec = NULL;
          s->given_up = 0;
        }
        free(s->hub);
        s->hub = kr_xstrdup(h.data);
        s->expires = 0;
        s->attempts = 0;
        persist(ws, s);
        kr_timer_stop(&s->renew);
        ask(s);
      }
      free(tok);
      free(sec);
    } else if (!s && ws->n < ws->max) {
      char *tok = random_hex(), *sec = random_hex();
      if (tok && sec) {
        s = sub_new(ws, t.data, h.data, tok, sec, 0);
        persist(ws, s);
        ask(s);
      }
      free(tok);
      free(sec);
    }
  }
  kr_buf_free(&h);
  kr_buf_free(&t);
}

/* ---- the callbacks ------------------------------------------------------------------------- */

int kr_crawl_websub_verify(kr_crawl_t *c, kr_slice_t token, kr_slice_t mode, kr_slice_t topic,
                           int64_t lease_s) {
  struct kr_websub *ws = c->websub;
  wsub_t *s = ws ? find_token(ws, token) : NULL;
  if (!s || !kr_slice_eq(topic, kr_slice_cstr(s->topic))) return 404;
  uint64_t now = kr_crawl_now(c);
  if (kr_slice_eq(mode, KR_SLICE_LIT("subscribe"))) {
    uint64_t lease_ms = (uint64_t)(lease_s > 0 ? lease_s : ws->lease_s) * 1000;
    s->expires = now + lease_ms;
    s->attempts = 0;
    persist(ws, s);
    schedule(s, renew_at(now, s->expires, lease_ms));
    c->st.websub_verified++;
    KR_LOG(KR_LOG_INFO, s->topic, "websub: subscribed at %s for %llds", s->hub,
           (long long)(lease_ms / 1000));
    return 200;
  }
  if (kr_slice_eq(mode, KR_SLICE_LIT("denied"))) {
    KR_LOG(KR_LOG_NOTICE, s->topic, "websub: hub %s denied the subscription", s->hub);
    c->st.websub_denied++;
    unlink_sub(ws, s);
    if (c->frontier) kr_store_websub_del(kr_frontier_store(c->frontier), s->topic);
    kr_timer_stop(&s->renew);
    if (s->req) { /* its callback still holds s: cancelled, it frees s */
      s->dead = 1;
      kr_http_fetch_cancel(s->req);
    } else {
      wsub_free(s);
    }
    return 200;
  }
  return 404;
}

/* A push's claim that url (resolved against base) changed at claim_s
 * (0: at the push, the topic's): a known URI whose last visit is before
 * it gets a WEBSUB claim that its next visit verifies, and is made due
 * now when its host's WebSub pushes verify (kr__crawl_sig_claim).
 * 1 pulled, 0 not. */
static int pull(kr_crawl_t *c, kr_slice_t raw, const kr_url_t *base, int64_t claim_s) {
  kr_url_t *u = NULL;
  int pulled = 0;
  raw = kr_slice_trim(raw);
  if (!c->frontier || !raw.n || kr_url_parse(raw.p, raw.n, base, &u) || !kr_url_is_http(u))
    goto out;
  kr_buf_reset(&c->canon_buf);
  if (kr_url_canon(u, c->canon, &c->canon_buf)) goto out;
  kr_uri_row_t row;
  if (kr_store_uri_get(kr_frontier_store(c->frontier), kr_fp(c->canon_buf.data, c->canon_buf.len),
                       &row) != 1)
    goto out;
  uint64_t now = kr_crawl_now(c);
  /* in ms, as the claims are kept (claims.c): the topic at the push */
  int64_t claim_ms = claim_s ? kr_sig_claim_ms(claim_s) : (int64_t)now;
  if (!kr_sig_is_news(claim_ms, (int64_t)row.last_visit) ||
      !kr__crawl_sig_claim(c, c->canon_buf.data, c->canon_buf.len, claim_ms, KR_SIG_WEBSUB))
    goto out;
  kr_link_t l = {.url = c->canon_buf.data,
                 .url_len = c->canon_buf.len,
                 .directive = KR_DIRECTIVE_HIGH,
                 .next_at = now,
                 .flags = KR_LINK_RESCHEDULE};
  pulled = kr_frontier_add(c->frontier, &l, now) >= 0;
out:
  kr_url_free(u);
  return pulled;
}

typedef struct push_ctx {
  kr_crawl_t *c;
  const kr_url_t *topic;
} push_ctx_t;

static int on_pushed_item(void *ud, const kr_feed_item_t *it) {
  push_ctx_t *x = ud;
  if (it->url.n && it->updated > 0 && pull(x->c, it->url, x->topic, it->updated))
    x->c->st.websub_pulled++;
  return 0;
}

int kr_crawl_websub_notify(kr_crawl_t *c, kr_slice_t token, kr_slice_t sig, kr_slice_t body) {
  struct kr_websub *ws = c->websub;
  wsub_t *s = ws ? find_token(ws, token) : NULL;
  if (!s) return 404;
  if (!kr_websub_sig_ok(sig.p, sig.n, s->secret, strlen(s->secret), body.p, body.n)) {
    c->st.websub_rejected++;
    KR_LOG(KR_LOG_NOTICE, s->topic, "websub: push with %s signature ignored",
           sig.n ? "a wrong" : "no");
    return 202;
  }
  c->st.websub_pushes++;
  kr_url_t *topic = NULL;
  if (kr_url_parse(s->topic, strlen(s->topic), NULL, &topic)) return 202;
  if (pull(c, kr_slice_cstr(s->topic), NULL, 0)) c->st.websub_pulled++;
  push_ctx_t x = {c, topic};
  kr_feed_t *f = kr_feed_new(NULL, on_pushed_item, &x);
  if (!kr_feed_parse(f, body.p, body.n)) kr_feed_finish(f);
  kr_feed_free(f);
  kr_url_free(topic);
  return 202;
}
