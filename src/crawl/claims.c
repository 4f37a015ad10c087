/*
 * Change signals and what a changed page or feed pulls forward (claims.h),
 * for the revisit processor (proc_wait.c) and WebSub (websub.c).
 *
 * Pulled forward (links of this fetch given to the frontier by finish):
 *   embeds   adaptive.refresh-embeds: a page that changed (not its first
 *            visit) has its E links due now at HIGH (add never moves a
 *            URI later; it brings this one forward);
 *   feeds    a feed or sitemap that changed: items dated after its
 *            previous visit are due now at HIGH, undated ones (up to
 *            adaptive.feed-pull-max) due now. New items are new URIs,
 *            due now anyway.
 * Change signals (signal.h): a dated item of a sitemap (lastmod) or feed
 * is a claim that its URI changed then, and so is a WebSub push for its
 * topic and items (websub.c through kr__crawl_sig_claim, gated the same
 * way). The latest claim per URI is kept
 * here (c->claims), and each later visit of the URI with a known content
 * state verifies it against the digest, into its host's reliability per
 * source (crawl.log sig:SOURCE:tp|fp|fn; counters signals_*). A changed
 * feed's dated items pull their URIs forward only while their host's
 * signals verify (kr_sig_pulls: adaptive.signal-precision after
 * adaptive.signal-probation verifications), and poisson stretches the
 * wait of a listed URI whose host's signals have a trusted recall
 * (adaptive.signal-recall, -max-stretch; crawl.log "stretch:xK"). The
 * signals' reliability lives with the host's allocator (adapthost.c) and
 * is part of its learned state; the claims are in a table of their own (at
 * most KR_SIG_CLAIMS_MAX), in memory only: after a restart a URI's
 * verification waits for its next dated claim.
 * Sections: claims, pulling forward.
 */
#include <string.h>

#include "adapthost.h"
#include "claims.h"
#include "internal.h"
#include "kria/fp.h"

/* ---- claims ------------------------------------------------------------------------------
 * The latest dated claim per listed URI: open addressing on the URI's
 * fingerprint, grown by doubling up to KR_SIG_CLAIMS_MAX slots; past it
 * a URI not listed yet is not recorded (its signals go unverified).
 * Claims are kept in ms and compared with the visit's ms: a dated item's
 * whole second x 1000 is news exactly when its second was (signal.h),
 * and a push, timed to the ms, is news for a visit earlier in its own
 * second but not for the visit it brings. */

#define KR_SIG_CLAIMS_MAX (1u << 20) /* slots: 512 Ki URIs at half load, 24 MiB */

typedef struct claim {
  uint64_t fp;      /* 0: free slot */
  int64_t at_ms;    /* the claimed change time, epoch ms (a date's second x 1000) */
  int source;       /* kr_sig_source_t */
} claim_t;

struct kr_sig_claims {
  claim_t *slot;
  size_t cap, n;
};

void kr__claims_free(kr_crawl_t *c) {
  if (!c->claims) return;
  free(c->claims->slot);
  free(c->claims);
  c->claims = NULL;
}

static claim_t *claim_find(const kr_crawl_t *c, uint64_t fp) {
  const struct kr_sig_claims *t = c->claims;
  if (!t || !fp) return NULL;
  for (size_t j = kr__ptr_slot((const void *)(uintptr_t)fp, t->cap - 1); t->slot[j].fp;
       j = (j + 1) & (t->cap - 1))
    if (t->slot[j].fp == fp) return &t->slot[j];
  return NULL;
}

/* The slot of fp, made when absent (NULL when the table is full). */
static claim_t *claim_get(kr_crawl_t *c, uint64_t fp) {
  claim_t *e = claim_find(c, fp);
  if (e || !fp) return e;
  struct kr_sig_claims *t = c->claims;
  if (!t) t = c->claims = kr_xcalloc(1, sizeof *t);
  if ((t->n + 1) * 2 > t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 1024;
    if (ncap > KR_SIG_CLAIMS_MAX) return NULL;
    claim_t *n = kr_xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slot[i].fp) continue;
      size_t j = kr__ptr_slot((const void *)(uintptr_t)t->slot[i].fp, ncap - 1);
      while (n[j].fp) j = (j + 1) & (ncap - 1);
      n[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = n;
    t->cap = ncap;
  }
  size_t j = kr__ptr_slot((const void *)(uintptr_t)fp, t->cap - 1);
  while (t->slot[j].fp) j = (j + 1) & (t->cap - 1);
  t->slot[j] = (claim_t){.fp = fp};
  t->n++;
  return &t->slot[j];
}

/* The host queue of a link, NULL when the frontier has none yet. */
static kr_hostq_t *link_host(kr_crawl_t *c, const kr_link_t *l) {
  char key[512];
  if (!c->frontier || kr_frontier_queue_key(c->frontier, l->url, l->url_len, key, sizeof key))
    return NULL;
  return kr_frontier_host_lookup(c->frontier, key, strlen(key));
}

/* A visit of a listed URI verifies what its claims said since its
 * previous visit (signal.h), into its host's reliability. 1 when the
 * visit came for a believed claim (signal.h "history"). */
int kr__verify_claim(kr_fetch_t *f, kr_content_t state) {
  kr_crawl_t *c = f->crawl;
  const kr_curi_t *u = f->curi;
  claim_t *e = u->visits && state != KR_CONTENT_UNKNOWN ? claim_find(c, u->fp) : NULL;
  if (!e) return 0;
  struct kr_adapt_host *ah = kr__adapt_host(c, u->host, f->hc->est.x_min);
  int signalled = kr_sig_is_news(e->at_ms, (int64_t)u->last_visit);
  kr_sig_verdict_t v = kr_sig_record(&ah->sig.src[e->source], &f->hc->sig, signalled,
                                     state == KR_CONTENT_CHANGED);
  static const char *const names[] = {"", "tp", "fp", "fn"};
  if (v == KR_SIG_TN) return 0;
  kr__adapt_host_changed(c, ah);
  c->st.signals_tp += v == KR_SIG_TP;
  c->st.signals_fp += v == KR_SIG_FP;
  c->st.signals_fn += v == KR_SIG_FN;
  kr_fetch_annotatef(f, "sig:%s:%s", kr_sig_source_name((kr_sig_source_t)e->source), names[v]);
  return signalled && kr_sig_pulls(&ah->sig.src[e->source], &f->hc->sig);
}

/* The wait's factor from the URI's host's signals (1: none). */
double kr__claim_stretch(kr_fetch_t *f) {
  const kr_curi_t *u = f->curi;
  const claim_t *e = claim_find(f->crawl, u->fp);
  const struct kr_adapt_host *ah = e ? kr__adapt_host_find(f->crawl, u->host) : NULL;
  if (!ah) return 1;
  return kr_sig_stretch(&ah->sig.src[e->source], &f->hc->sig, u->fp, u->visits);
}

/* ---- pulling forward --------------------------------------------------------------------- */

void kr__refresh_embeds(kr_fetch_t *f, uint64_t now) {
  for (size_t i = 0; i < f->nlinks; i++) {
    kr_link_t *l = &f->links[i];
    if (!l->hop_len || l->hop_path[l->hop_len - 1] != 'E') continue;
    l->directive = KR_DIRECTIVE_HIGH;
    l->next_at = now;
    l->flags |= KR_LINK_RESCHEDULE;
    f->crawl->st.embeds_refreshed++;
  }
}

/* The dated items of a feed or sitemap read (first visit too): each
 * newer claim is a signal for its URI, counted on its host. */
void kr__record_claims(kr_fetch_t *f, uint64_t now) {
  kr_crawl_t *c = f->crawl;
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_fetch_item_t *m = &f->fmeta[i];
    if (m->updated <= 0 || m->link >= f->nlinks) continue;
    const kr_link_t *l = &f->links[m->link];
    claim_t *e = claim_get(c, kr_fp(l->url, l->url_len));
    if (!e || kr_sig_claim_ms(m->updated) <= e->at_ms) continue;
    e->at_ms = kr_sig_claim_ms(m->updated);
    e->source = m->source;
    c->st.signals_seen++;
    kr_hostq_t *h = link_host(c, l);
    if (!h) continue;
    struct kr_adapt_host *ah = kr__adapt_host(c, h, f->hc->est.x_min);
    kr_sig_seen(&ah->sig.src[m->source]);
    kr__adapt_host_changed(c, ah);
  }
  (void)now;
}

int kr__crawl_sig_claim(kr_crawl_t *c, const char *url, size_t n, int64_t at_ms,
                        kr_sig_source_t src) {
  kr_link_t l = {.url = url, .url_len = n};
  kr_hostq_t *h = link_host(c, &l);
  const kr_hostcfg_t *hc = h ? kr__crawl_queue_hostcfg(c, h) : NULL;
  struct kr_adapt_host *ah = h ? kr__adapt_host(c, h, hc->est.x_min) : NULL;
  claim_t *e = claim_get(c, kr_fp(url, n));
  if (e && at_ms > e->at_ms) {
    e->at_ms = at_ms;
    e->source = src;
    c->st.signals_seen++;
    if (ah) {
      kr_sig_seen(&ah->sig.src[src]);
      kr__adapt_host_changed(c, ah);
    }
  }
  if (!ah || kr_sig_pulls(&ah->sig.src[src], &hc->sig)) return 1;
  c->st.signals_ignored++;
  return 0;
}

/* 1 when the signals of a dated item's URI's host have verified (or are
 * still on probation): its claim may pull it forward. */
static int item_trusted(kr_fetch_t *f, const kr_fetch_item_t *m, const kr_link_t *l) {
  const kr_hostq_t *h = link_host(f->crawl, l);
  const struct kr_adapt_host *ah = h ? kr__adapt_host_find(f->crawl, h) : NULL;
  if (!ah || kr_sig_pulls(&ah->sig.src[m->source], &f->hc->sig)) return 1;
  f->crawl->st.signals_ignored++;
  return 0;
}

void kr__pull_feed_items(kr_fetch_t *f, uint64_t now) {
  const kr_curi_t *u = f->curi;
  int64_t since = (int64_t)(u->last_visit / 1000); /* the feed's previous visit */
  uint32_t undated = 0;
  for (size_t i = 0; i < f->nfmeta; i++) {
    const kr_fetch_item_t *m = &f->fmeta[i];
    if (m->link >= f->nlinks) continue;
    kr_link_t *l = &f->links[m->link];
    if (m->updated > 0) {
      if (m->updated < since || !item_trusted(f, m, l)) continue;
      l->directive = KR_DIRECTIVE_HIGH;
    } else if (undated++ >= f->hc->feed_pull_max) {
      continue;
    }
    l->next_at = now;
    l->flags |= KR_LINK_RESCHEDULE;
    f->crawl->st.feed_pulled++;
  }
}
