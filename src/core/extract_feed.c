/*
 * Feeds and sitemaps (see include/kria/feed.h): an expat push parser per
 * kr_feed_t, reset between documents, with handlers that follow the
 * element path just far enough to find items and their fields. The root
 * element names the kind of document; an item is the container element
 * of that kind (item, entry, url, sitemap) at its expected depth; the text
 * of the fields inside it collects into one bounded buffer per field and
 * the item goes to the callback at its end tag. No entity is ever
 * expanded: entity declarations and DTD internal subsets stop the parse,
 * parameter entities are never parsed. Sections: dates, the parser state,
 * expat handlers, the public calls.
 */
#include "kria/feed.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kria/error.h"
#include "kria/mem.h"

/* ---- dates ------------------------------------------------------------------ */

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static int days_in_month(int64_t y, unsigned m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return dm[m - 1];
}

typedef struct cur {
  const char *p, *e;
} cur_t;

static void skip_blanks(cur_t *c) {
  while (c->p < c->e && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
    c->p++;
}

/* Exactly `min`..`max` digits. */
static int digits(cur_t *c, int min, int max, int *out) {
  int v = 0, n = 0;
  while (c->p < c->e && n < max && *c->p >= '0' && *c->p <= '9') {
    v = v * 10 + (*c->p - '0');
    c->p++;
    n++;
  }
  if (n < min) return -1;
  *out = v;
  return n;
}

static int eat(cur_t *c, char ch) {
  if (c->p < c->e && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

static int make_time(int64_t y, int mo, int d, int h, int mi, int s, int64_t off_s,
                     int64_t *out) {
  if (y < 1601 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, (unsigned)mo) ||
      h > 24 || mi > 59 || s > 60 || (h == 24 && (mi || s)))
    return KR_EINVAL;
  if (s == 60) s = 59;
  *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s - off_s;
  return 0;
}

/* W3C datetime / ISO 8601 profile. */
static int parse_w3c(cur_t *c, int64_t *out) {
  int y, mo = 1, d = 1, h = 0, mi = 0, s = 0;
  if (digits(c, 4, 4, &y) != 4) return KR_EINVAL;
  if (eat(c, '-')) {
    if (digits(c, 2, 2, &mo) != 2) return KR_EINVAL;
    if (eat(c, '-') && digits(c, 2, 2, &d) != 2) return KR_EINVAL;
  }
  int64_t off = 0;
  if (c->p < c->e && (*c->p == 'T' || *c->p == 't' || *c->p == ' ')) {
    c->p++;
    if (digits(c, 2, 2, &h) != 2 || !eat(c, ':') || digits(c, 2, 2, &mi) != 2) return KR_EINVAL;
    if (eat(c, ':')) {
      if (digits(c, 2, 2, &s) != 2) return KR_EINVAL;
      if (eat(c, '.') || eat(c, ',')) {
        int frac;
        if (digits(c, 1, 9, &frac) < 1) return KR_EINVAL;
        while (c->p < c->e && *c->p >= '0' && *c->p <= '9') c->p++;
      }
    }
    if (eat(c, 'Z') || eat(c, 'z')) {
      off = 0;
    } else if (c->p < c->e && (*c->p == '+' || *c->p == '-')) {
      int sign = *c->p++ == '-' ? -1 : 1, oh, om = 0;
      if (digits(c, 2, 2, &oh) != 2) return KR_EINVAL;
      eat(c, ':');
      if (c->p < c->e && *c->p >= '0' && *c->p <= '9' && digits(c, 2, 2, &om) != 2)
        return KR_EINVAL;
      if (oh > 23 || om > 59) return KR_EINVAL;
      off = sign * (oh * 3600 + om * 60);
    }
  }
  skip_blanks(c);
  if (c->p != c->e) return KR_EINVAL;
  return make_time(y, mo, d, h, mi, s, off, out);
}

static int month_of(const char *p, size_t n) {
  static const char *const mon[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                    "jul", "aug", "sep", "oct", "nov", "dec"};
  if (n < 3) return 0;
  for (int i = 0; i < 12; i++)
    if (strncasecmp(p, mon[i], 3) == 0) return i + 1;
  return 0;
}

/* RFC 822 / 2822 (and the RFC 1123 form of HTTP dates). */
static int parse_rfc822(cur_t *c, int64_t *out) {
  /* optional day name and comma */
  const char *q = c->p;
  while (q < c->e && ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'))) q++;
  if (q > c->p && q < c->e && *q == ',') {
    c->p = q + 1;
    skip_blanks(c);
  }
  int d, y, h, mi, s = 0;
  if (digits(c, 1, 2, &d) < 1) return KR_EINVAL;
  skip_blanks(c);
  eat(c, '-');
  const char *m0 = c->p;
  while (c->p < c->e && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z')))
    c->p++;
  int mo = month_of(m0, (size_t)(c->p - m0));
  if (!mo) return KR_EINVAL;
  skip_blanks(c);
  eat(c, '-');
  int yn = digits(c, 2, 4, &y);
  if (yn == 2)
    y += y < 70 ? 2000 : 1900;
  else if (yn != 4)
    return KR_EINVAL;
  skip_blanks(c);
  if (digits(c, 1, 2, &h) < 1 || !eat(c, ':') || digits(c, 2, 2, &mi) != 2) return KR_EINVAL;
  if (eat(c, ':') && digits(c, 2, 2, &s) != 2) return KR_EINVAL;
  skip_blanks(c);
  int64_t off = 0;
  if (c->p < c->e && (*c->p == '+' || *c->p == '-')) {
    int sign = *c->p++ == '-' ? -1 : 1, hhmm;
    if (digits(c, 4, 4, &hhmm) != 4 || hhmm % 100 > 59) return KR_EINVAL;
    off = sign * ((hhmm / 100) * 3600 + (hhmm % 100) * 60);
  } else if (c->p < c->e) {
    static const struct {
      const char *name;
      int hours;
    } zones[] = {{"GMT", 0},  {"UTC", 0},  {"UT", 0},   {"Z", 0},    {"EST", -5},
                 {"EDT", -4}, {"CST", -6}, {"CDT", -5}, {"MST", -7}, {"MDT", -6},
                 {"PST", -8}, {"PDT", -7}};
    const char *z0 = c->p;
    while (c->p < c->e && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z')))
      c->p++;
    size_t zn = (size_t)(c->p - z0);
    size_t i;
    for (i = 0; i < sizeof zones / sizeof *zones; i++)
      if (strlen(zones[i].name) == zn && strncasecmp(z0, zones[i].name, zn) == 0) break;
    if (i == sizeof zones / sizeof *zones) return KR_EINVAL;
    off = zones[i].hours * 3600;
  }
  skip_blanks(c);
  if (c->p != c->e) return KR_EINVAL;
  return make_time(y, mo, d, h, mi, s, off, out);
}

int kr_feed_date_parse(const char *s, size_t n, int64_t *epoch_s) {
  if (!s) return KR_EINVAL;
  if (n > 64) n = 64;
  cur_t c = {s, s + n};
  skip_blanks(&c);
  while (c.e > c.p && (c.e[-1] == ' ' || c.e[-1] == '\t' || c.e[-1] == '\r' || c.e[-1] == '\n'))
    c.e--;
  if (c.p == c.e) return KR_EINVAL;
  cur_t w = c;
  /* W3C dates start with four digits and a '-' or end there; RFC 822 ones
   * with a day name or a one/two-digit day */
  if (c.e - c.p >= 4 && c.p[0] >= '0' && c.p[0] <= '9' && c.p[3] >= '0' && c.p[3] <= '9' &&
      (c.e - c.p == 4 || c.p[4] == '-'))
    return parse_w3c(&w, epoch_s);
  return parse_rfc822(&c, epoch_s);
}

/* ---- the parser state ---------------------------------------------------------- */

enum field {
  F_NONE = 0,
  F_LINK,       /* rss/rdf link text */
  F_GUID,
  F_ID,
  F_LOC,
  F_DATE,       /* any date element */
  F_CHANGEFREQ,
  F_PRIORITY,
  F__COUNT
};

struct kr_feed {
  kr_feed_opts_t o;
  kr_feed_item_fn fn;
  void *ud;
  XML_Parser xp;
  int err;                   /* sticky result */
  char errmsg[160];
  kr_feed_kind_t kind;
  unsigned depth;            /* current element depth (root = 1) */
  unsigned item_depth;       /* depth of the open item, 0 none */
  enum field field;          /* collecting text for this field */
  unsigned field_depth;
  int guid_permalink;
  /* the open item */
  kr_buf_t text[F__COUNT];   /* field texts (F_DATE: the current date) */
  int cut[F__COUNT];         /* text over max_text */
  kr_buf_t href;             /* atom link href / rdf:about */
  int has_href, href_cut;
  int64_t updated;
  kr_feed_stats_t st;
  /* WebSub discovery: the document's first rel="hub" / rel="self" link
   * outside the items (empty: none; cut: over max_text, not kept) */
  kr_buf_t hub, self;
};

void kr_feed_opts_default(kr_feed_opts_t *o) {
  o->max_bytes = 50u << 20;
  o->max_items = 50000;
  o->max_text = 8192;
  o->max_depth = 64;
}

/* Local part of a (possibly prefixed) name. */
static const char *local(const char *name) {
  const char *c = strrchr(name, ':');
  return c ? c + 1 : name;
}

static const char *attr(const char **atts, const char *want) {
  for (size_t i = 0; atts[i]; i += 2)
    if (strcmp(local(atts[i]), want) == 0) return atts[i + 1];
  return NULL;
}

/* Is tok one of the space-separated, case-insensitive link relations in
 * rel (RFC 8288: rel="hub self" names both)? */
static int rel_has(const char *rel, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = rel; *p;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    const char *e = p;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r') e++;
    if ((size_t)(e - p) == n && strncasecmp(p, tok, n) == 0) return 1;
    p = e;
  }
  return 0;
}

/* A feed-level link element (feed/link, channel/atom:link): keep the
 * first hub and self URL it names. */
static void feed_link(kr_feed_t *f, const char **atts) {
  const char *rel = attr(atts, "rel"), *href = attr(atts, "href");
  if (!rel || !href) return;
  size_t n = strlen(href);
  if (n > f->o.max_text) return;
  if (!f->hub.len && rel_has(rel, "hub")) kr_buf_append(&f->hub, href, n);
  if (!f->self.len && rel_has(rel, "self")) kr_buf_append(&f->self, href, n);
}

static void stop(kr_feed_t *f, int err, const char *why) {
  if (f->err) return;
  f->err = err;
  snprintf(f->errmsg, sizeof f->errmsg, "line %lu: %s",
           (unsigned long)XML_GetCurrentLineNumber(f->xp), why);
  XML_StopParser(f->xp, XML_FALSE);
}

static void item_clear(kr_feed_t *f) {
  for (int i = 0; i < F__COUNT; i++) {
    kr_buf_reset(&f->text[i]);
    f->cut[i] = 0;
  }
  kr_buf_reset(&f->href);
  f->has_href = f->href_cut = 0;
  f->updated = 0;
  f->guid_permalink = 1;
}

static void set_text(kr_buf_t *b, int *cut, const char *s, size_t n, size_t max) {
  kr_buf_reset(b);
  if (n > max) {
    n = max;
    *cut = 1;
  }
  kr_buf_append(b, s, n);
}

static kr_slice_t trimmed(const kr_buf_t *b) {
  kr_slice_t s = {b->data ? b->data : "", b->len};
  return kr_slice_trim(s);
}

static const char *const item_names[] = {
    [KR_FEED_RSS] = "item",    [KR_FEED_RDF] = "item",          [KR_FEED_ATOM] = "entry",
    [KR_FEED_SITEMAP] = "url", [KR_FEED_SITEMAP_INDEX] = "sitemap",
};

/* Is an element named l at depth d (root 1) an item of the document? */
static int is_item(const kr_feed_t *f, const char *l, unsigned d) {
  if (f->kind == KR_FEED_UNKNOWN || strcmp(l, item_names[f->kind]) != 0) return 0;
  switch (f->kind) {
  case KR_FEED_RSS: return d == 3 || d == 2; /* rss/channel/item; rss/item */
  case KR_FEED_RDF: return d == 2;
  default: return d == 2;
  }
}

static void emit(kr_feed_t *f) {
  kr_feed_item_t it;
  memset(&it, 0, sizeof it);
  it.kind = f->kind;
  it.is_sitemap = f->kind == KR_FEED_SITEMAP_INDEX;
  it.priority = -1;
  it.updated = f->updated;
  kr_slice_t url = {"", 0};
  int cut = 0;
  switch (f->kind) {
  case KR_FEED_RSS:
    url = trimmed(&f->text[F_LINK]);
    cut = f->cut[F_LINK];
    if (!url.n && f->guid_permalink) {
      url = trimmed(&f->text[F_GUID]);
      cut = f->cut[F_GUID];
    }
    it.id = trimmed(&f->text[F_GUID]);
    break;
  case KR_FEED_RDF:
    url = trimmed(&f->text[F_LINK]);
    cut = f->cut[F_LINK];
    if (!url.n && f->has_href) {
      url = trimmed(&f->href);
      cut = f->href_cut;
    }
    break;
  case KR_FEED_ATOM:
    if (f->has_href) {
      url = trimmed(&f->href);
      cut = f->href_cut;
    }
    it.id = trimmed(&f->text[F_ID]);
    break;
  case KR_FEED_SITEMAP:
  case KR_FEED_SITEMAP_INDEX:
    url = trimmed(&f->text[F_LOC]);
    cut = f->cut[F_LOC];
    it.changefreq = trimmed(&f->text[F_CHANGEFREQ]);
    if (f->text[F_PRIORITY].len) {
      char buf[32];
      kr_slice_t p = trimmed(&f->text[F_PRIORITY]);
      if (p.n < sizeof buf) {
        memcpy(buf, p.p, p.n);
        buf[p.n] = '\0';
        char *end;
        double v = strtod(buf, &end);
        if (end != buf && *end == '\0' && v >= 0 && v <= 1) it.priority = v;
      }
    }
    break;
  default: break;
  }
  if (cut) {
    url = (kr_slice_t){"", 0};
    f->st.dropped++;
  }
  it.url = url;
  if (f->st.items >= f->o.max_items) {
    f->st.capped = 1;
    f->st.dropped++;
    return;
  }
  f->st.items++;
  if (f->fn && f->fn(f->ud, &it)) stop(f, KR_ECANCELED, "stopped by the caller");
}

/* ---- expat handlers ---------------------------------------------------------------- */

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts) {
  kr_feed_t *f = ud;
  f->depth++;
  if (f->depth > f->o.max_depth) {
    stop(f, KR_ETOOBIG, "elements nested too deep");
    return;
  }
  const char *l = local(name);
  if (f->depth == 1) {
    if (strcmp(l, "rss") == 0)
      f->kind = KR_FEED_RSS;
    else if (strcmp(l, "RDF") == 0)
      f->kind = KR_FEED_RDF;
    else if (strcmp(l, "feed") == 0)
      f->kind = KR_FEED_ATOM;
    else if (strcmp(l, "urlset") == 0)
      f->kind = KR_FEED_SITEMAP;
    else if (strcmp(l, "sitemapindex") == 0)
      f->kind = KR_FEED_SITEMAP_INDEX;
    else
      stop(f, KR_EXML, "not a feed or sitemap (root element)");
    return;
  }
  if (!f->item_depth) {
    /* feed/link (atom) or rss/channel/atom:link, rdf/channel/atom:link */
    if (strcmp(l, "link") == 0 && f->depth <= 3 && f->kind != KR_FEED_SITEMAP &&
        f->kind != KR_FEED_SITEMAP_INDEX)
      feed_link(f, atts);
    if (is_item(f, l, f->depth)) {
      f->item_depth = f->depth;
      item_clear(f);
      if (f->kind == KR_FEED_RDF) {
        const char *about = attr(atts, "about");
        if (about) {
          set_text(&f->href, &f->href_cut, about, strlen(about), f->o.max_text);
          f->has_href = 1;
        }
      }
    }
    return;
  }
  if (f->depth != f->item_depth + 1) return; /* only direct children */
  enum field fl = F_NONE;
  if (strcmp(l, "link") == 0) {
    if (f->kind == KR_FEED_ATOM) {
      const char *rel = attr(atts, "rel"), *href = attr(atts, "href");
      if (href && !f->has_href && (!rel || strcmp(rel, "alternate") == 0)) {
        set_text(&f->href, &f->href_cut, href, strlen(href), f->o.max_text);
        f->has_href = 1;
      }
    } else if (!strchr(name, ':')) { /* atom:link inside RSS is not the item's link */
      fl = F_LINK;
    }
  } else if (strcmp(l, "guid") == 0 && f->kind == KR_FEED_RSS) {
    const char *pl = attr(atts, "isPermaLink");
    f->guid_permalink = !(pl && strcasecmp(pl, "false") == 0);
    fl = F_GUID;
  } else if (strcmp(l, "id") == 0 && f->kind == KR_FEED_ATOM) {
    fl = F_ID;
  } else if (strcmp(l, "loc") == 0) {
    fl = F_LOC;
  } else if (strcmp(l, "changefreq") == 0) {
    fl = F_CHANGEFREQ;
  } else if (strcmp(l, "priority") == 0) {
    fl = F_PRIORITY;
  } else if (strcmp(l, "lastmod") == 0 || strcmp(l, "updated") == 0 ||
             strcmp(l, "modified") == 0 || strcmp(l, "published") == 0 ||
             strcmp(l, "issued") == 0 || strcmp(l, "pubDate") == 0 || strcmp(l, "date") == 0) {
    fl = F_DATE;
  }
  if (fl != F_NONE) {
    f->field = fl;
    f->field_depth = f->depth;
    kr_buf_reset(&f->text[fl]);
    f->cut[fl] = 0;
  }
}

static void XMLCALL on_end(void *ud, const XML_Char *name) {
  kr_feed_t *f = ud;
  (void)name;
  if (f->field != F_NONE && f->depth == f->field_depth) {
    if (f->field == F_DATE) {
      kr_slice_t d = trimmed(&f->text[F_DATE]);
      int64_t t;
      if (!f->cut[F_DATE] && kr_feed_date_parse(d.p, d.n, &t) == 0 && t > f->updated)
        f->updated = t;
    }
    f->field = F_NONE;
  }
  if (f->item_depth && f->depth == f->item_depth) {
    f->item_depth = 0;
    emit(f);
  }
  if (f->depth) f->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len) {
  kr_feed_t *f = ud;
  if (f->field == F_NONE || len <= 0) return;
  kr_buf_t *b = &f->text[f->field];
  size_t room = b->len < f->o.max_text ? f->o.max_text - b->len : 0;
  size_t n = (size_t)len;
  if (n > room) {
    n = room;
    f->cut[f->field] = 1;
  }
  if (n) kr_buf_append(b, s, n);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset) {
  (void)name;
  (void)sysid;
  (void)pubid;
  /* An external DTD is never loaded; an internal subset is where entity
   * bombs live. */
  if (has_internal_subset) stop(ud, KR_EXML, "DTD internal subset refused");
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *sysid, const XML_Char *pubid,
                                   const XML_Char *notation) {
  (void)name;
  (void)is_param;
  (void)value;
  (void)value_len;
  (void)base;
  (void)sysid;
  (void)pubid;
  (void)notation;
  stop(ud, KR_EXML, "entity declaration refused");
}

/* ---- public calls -------------------------------------------------------------------- */

static void setup_parser(kr_feed_t *f) {
  XML_SetUserData(f->xp, f);
  XML_SetElementHandler(f->xp, on_start, on_end);
  XML_SetCharacterDataHandler(f->xp, on_text);
  XML_SetStartDoctypeDeclHandler(f->xp, on_doctype);
  XML_SetEntityDeclHandler(f->xp, on_entity_decl);
  XML_SetParamEntityParsing(f->xp, XML_PARAM_ENTITY_PARSING_NEVER);
}

kr_feed_t *kr_feed_new(const kr_feed_opts_t *o, kr_feed_item_fn fn, void *ud) {
  kr_feed_t *f = kr_xcalloc(1, sizeof *f);
  if (o)
    f->o = *o;
  else
    kr_feed_opts_default(&f->o);
  if (!f->o.max_text) f->o.max_text = 1;
  for (int i = 0; i < F__COUNT; i++) kr_buf_init(&f->text[i], f->o.max_text);
  kr_buf_init(&f->href, f->o.max_text);
  kr_buf_init(&f->hub, f->o.max_text);
  kr_buf_init(&f->self, f->o.max_text);
  f->xp = XML_ParserCreate(NULL);
  if (!f->xp) { /* expat fails only when malloc does: as kr_xmalloc */
    fputs("kria: out of memory\n", stderr);
    abort();
  }
  kr_feed_reset(f, fn, ud);
  return f;
}

void kr_feed_reset(kr_feed_t *f, kr_feed_item_fn fn, void *ud) {
  XML_ParserReset(f->xp, NULL);
  setup_parser(f);
  f->fn = fn;
  f->ud = ud;
  f->err = 0;
  f->errmsg[0] = '\0';
  f->kind = KR_FEED_UNKNOWN;
  f->depth = f->item_depth = f->field_depth = 0;
  f->field = F_NONE;
  memset(&f->st, 0, sizeof f->st);
  kr_buf_reset(&f->hub);
  kr_buf_reset(&f->self);
  item_clear(f);
}

void kr_feed_free(kr_feed_t *f) {
  if (!f) return;
  XML_ParserFree(f->xp);
  for (int i = 0; i < F__COUNT; i++) kr_buf_free(&f->text[i]);
  kr_buf_free(&f->href);
  kr_buf_free(&f->hub);
  kr_buf_free(&f->self);
  free(f);
}

static int run(kr_feed_t *f, const char *p, size_t n, int final) {
  if (f->err) return f->err;
  /* expat takes an int length: feed big chunks in pieces */
  do {
    size_t k = n > (1u << 30) ? (1u << 30) : n;
    int last = final && k == n;
    if (XML_Parse(f->xp, p, (int)k, last) == XML_STATUS_ERROR) {
      if (!f->err) {
        f->err = KR_EXML;
        snprintf(f->errmsg, sizeof f->errmsg, "line %lu: %s",
                 (unsigned long)XML_GetCurrentLineNumber(f->xp),
                 XML_ErrorString(XML_GetErrorCode(f->xp)));
      }
      return f->err;
    }
    p += k;
    n -= k;
  } while (n);
  return f->err;
}

int kr_feed_parse(kr_feed_t *f, const char *p, size_t n) {
  if (f->err) return f->err;
  if (n > f->o.max_bytes - f->st.bytes) {
    f->err = KR_ETOOBIG;
    snprintf(f->errmsg, sizeof f->errmsg, "document larger than %zu bytes", f->o.max_bytes);
    return f->err;
  }
  f->st.bytes += n;
  if (!n) return 0;
  return run(f, p, n, 0);
}

int kr_feed_finish(kr_feed_t *f) {
  if (f->err) return f->err;
  int rc = run(f, "", 0, 1);
  if (!rc && f->kind == KR_FEED_UNKNOWN) {
    f->err = rc = KR_EXML;
    snprintf(f->errmsg, sizeof f->errmsg, "no root element");
  }
  return rc;
}

kr_feed_kind_t kr_feed_kind(const kr_feed_t *f) { return f->kind; }
const kr_feed_stats_t *kr_feed_stats(const kr_feed_t *f) { return &f->st; }
const char *kr_feed_error(const kr_feed_t *f) { return f->errmsg; }
kr_slice_t kr_feed_hub(const kr_feed_t *f) { return trimmed(&f->hub); }
kr_slice_t kr_feed_self(const kr_feed_t *f) { return trimmed(&f->self); }

const char *kr_feed_kind_name(kr_feed_kind_t k) {
  switch (k) {
  case KR_FEED_RSS: return "rss";
  case KR_FEED_RDF: return "rdf";
  case KR_FEED_ATOM: return "atom";
  case KR_FEED_SITEMAP: return "sitemap";
  case KR_FEED_SITEMAP_INDEX: return "sitemapindex";
  default: return "unknown";
  }
}
