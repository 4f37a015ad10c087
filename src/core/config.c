/*
 * Configuration loader and per-host views (see include/kria/config.h).
 *
 * A file is read whole (bounded by KR_CONFIG_MAX_FILE) and fed to inih
 * through our own line reader. The reader numbers lines, rejects lines
 * that are too long or hold NUL or control bytes, and reads section
 * headers itself: the Debian build of inih cuts section names at 49
 * bytes (too short for host names), reads lines of at most 200 bytes
 * unless told otherwise, and reports only the first syntax error. inih
 * then splits each "key = value" line and calls on_pair(), which checks
 * the key against the schema and stores the typed value. Every error is
 * recorded as "FILE:LINE: message" and parsing goes on, so one run shows
 * them all (up to KR_CONFIG_MAX_ERRORS).
 *
 * Values live in cfg->global (plain sections), in wait sections (one
 * value per wait key) and in the override lists of host sections; each
 * remembers its line and layer for duplicate detection and messages.
 * kr_config_finish() runs the cross-key checks and builds the global
 * view; kr_config_view() builds a host's view on first use by walking
 * [host] sections from the least to the most specific.
 *
 * Sections of this file: state, errors, sections, values, the line
 * reader and inih callback, loading, finishing, views, getters.
 */
#include "kria/config.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_schema.h"
#include "kria/error.h"
#include "kria/mem.h"

#define LAYER_CMDLINE UINT_MAX
#define NPLAIN (sizeof plain_sections / sizeof *plain_sections)

static const char *const plain_sections[] = {
    "crawl", "dns",   "http",  "politeness", "scope", "limits", "robots",
    "canon", "status", "websub", "cluster", "store", "adaptive", "warc",
};

/* The thesis' Figure 12: two specialised evaluators and a catch-all; the
 * other keys keep the schema defaults (max 28d, default 3d, factors 1.5). */
static const struct {
  const char *name, *content_type, *initial, *min;
} builtin_waits[] = {
    {"text", "^text/.*$", "20s", "20s"},
    {"image", "^image/.*$", "200s", "200s"},
    {"default", "", "1000s", "1000s"},
};

/* ---- State --------------------------------------------------------------- */

struct wait_section {
  char *name;
  int line;       /* of the header, 0 for built-ins */
  unsigned layer;
  kr__cfg_value_t val[KR_CFG_WAIT__COUNT];
};

struct override {
  int key;         /* kr_cfg_key_t, or kr_cfg_wait_key_t when wait_name */
  char *wait_name; /* NULL for plain keys */
  int wait;        /* index of wait_name, resolved by kr_config_finish */
  kr__cfg_value_t val;
};

struct host_section {
  char *domain; /* lowercase, no trailing dot, IPv6 without brackets */
  size_t len;
  int is_ip;    /* IP literals match only themselves */
  int line;     /* first header */
  unsigned layer;
  struct override *ov;
  size_t nov, cap;
  kr_config_view_t *view; /* built on first kr_config_view */
};

struct kr_config_view {
  const kr_config_t *cfg;
  const char *host;                          /* NULL for the global view */
  const kr__cfg_value_t *val[KR_CFG__COUNT]; /* effective values */
  size_t nwait;
  const kr_cfg_wait_t *wait;                 /* global array or own_wait */
  kr_cfg_wait_t *own_wait;                   /* copy with wait overrides */
};

struct kr_config {
  kr__cfg_value_t global[KR_CFG__COUNT];
  struct wait_section **waits; /* in file order, most specific first */
  size_t nwait;
  int builtin_waits;           /* waits are Figure 12's, not configured */
  struct host_section **hosts;
  size_t nhost;
  uint32_t *htab;              /* index + 1 into hosts, 0 = empty */
  size_t hsize;                /* power of two */
  char *errors[KR_CONFIG_MAX_ERRORS];
  size_t nerr, total;
  size_t nregex;               /* patterns compiled by set_value */
  char **sources;              /* file name of each layer (0 = defaults) */
  size_t nsrc;
  int cmdline_used;
  int finished;
  kr_cfg_wait_t *pub_waits;    /* nwait entries, built by finish */
  char *user_agent;
  kr_config_view_t global_view;
};

/* ---- Errors -------------------------------------------------------------- */

static void add_error(kr_config_t *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_error(kr_config_t *cfg, const char *fmt, ...) {
  cfg->total++;
  if (cfg->nerr >= KR_CONFIG_MAX_ERRORS) return;
  char msg[KR__CFG_ERRLEN + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cfg->errors[cfg->nerr++] = kr_xstrdup(msg);
}

size_t kr_config_error_count(const kr_config_t *cfg) { return cfg->nerr; }
size_t kr_config_error_total(const kr_config_t *cfg) { return cfg->total; }
const char *kr_config_error(const kr_config_t *cfg, size_t i) {
  return i < cfg->nerr ? cfg->errors[i] : NULL;
}

/* "FILE:LINE", "-o" or "default" for where a value was set. */
static const char *where(const kr_config_t *cfg, const kr__cfg_value_t *v, char *buf, size_t len) {
  if (v->line < 0) snprintf(buf, len, "-o");
  else if (v->line == 0 || v->layer >= cfg->nsrc) snprintf(buf, len, "default");
  else snprintf(buf, len, "%s:%d", cfg->sources[v->layer], v->line);
  return buf;
}

/* ---- Sections ------------------------------------------------------------ */

static uint32_t hash_lower(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 'A' && c <= 'Z') c += 32;
    h = (h ^ c) * 16777619u;
  }
  return h;
}

static struct host_section *host_find(const kr_config_t *cfg, const char *s, size_t n) {
  if (!cfg->hsize) return NULL;
  for (size_t i = hash_lower(s, n) & (cfg->hsize - 1);; i = (i + 1) & (cfg->hsize - 1)) {
    uint32_t e = cfg->htab[i];
    if (!e) return NULL;
    struct host_section *h = cfg->hosts[e - 1];
    if (h->len == n && strncasecmp(h->domain, s, n) == 0) return h;
  }
}

static void host_index(kr_config_t *cfg, size_t idx) {
  struct host_section *h = cfg->hosts[idx];
  size_t i = hash_lower(h->domain, h->len) & (cfg->hsize - 1);
  while (cfg->htab[i]) i = (i + 1) & (cfg->hsize - 1);
  cfg->htab[i] = (uint32_t)idx + 1;
}

static struct host_section *host_add(kr_config_t *cfg, const char *domain, int is_ip) {
  if ((cfg->nhost + 1) * 2 > cfg->hsize) {
    free(cfg->htab);
    cfg->hsize = cfg->hsize ? cfg->hsize * 2 : 64;
    cfg->htab = kr_xcalloc(cfg->hsize, sizeof *cfg->htab);
    for (size_t i = 0; i < cfg->nhost; i++) host_index(cfg, i);
  }
  if ((cfg->nhost & (cfg->nhost - 1)) == 0) /* grow at powers of two */
    cfg->hosts = kr_xrealloc(cfg->hosts, (cfg->nhost ? cfg->nhost * 2 : 1) * sizeof *cfg->hosts);
  struct host_section *h = kr_xcalloc(1, sizeof *h);
  h->domain = kr_xstrdup(domain);
  h->len = strlen(domain);
  h->is_ip = is_ip;
  cfg->hosts[cfg->nhost] = h;
  host_index(cfg, cfg->nhost++);
  return h;
}

static int all_digits(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* Last label of a dotted name is numeric, or the name has a colon: an IP
 * literal (as the URL Standard decides), which has no parent domains. */
static int looks_like_ip(const char *s, size_t n) {
  if (memchr(s, ':', n)) return 1;
  const char *dot = memrchr(s, '.', n);
  size_t k = dot ? (size_t)(s + n - dot - 1) : n;
  return all_digits(s + n - k, k);
}

/* Normalise the NAME of [host "NAME"] into out[256]: 0, or -1 with a
 * message. */
static int host_normalize(const char *in, char *out, int *is_ip, char *err, size_t errlen) {
  size_t n = strlen(in);
  if (n && in[n - 1] == '.') n--;
  if (n >= 2 && in[0] == '[' && in[n - 1] == ']') in++, n -= 2;
  if (n == 0 || n > 253) {
    snprintf(err, errlen, "host name must have 1 to 253 bytes");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c >= 0x80) {
      snprintf(err, errlen, "write internationalised host names in ASCII (xn--...)");
      return -1;
    }
    if (c >= 'A' && c <= 'Z') c += 32;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
          c == '.' || c == ':')) {
      snprintf(err, errlen, "character '%c' is not allowed in a host name", c);
      return -1;
    }
    out[i] = (char)c;
  }
  out[n] = '\0';
  *is_ip = looks_like_ip(out, n);
  unsigned char addr[16];
  if (*is_ip) {
    if (inet_pton(strchr(out, ':') ? AF_INET6 : AF_INET, out, addr) != 1) {
      snprintf(err, errlen, "neither a host name nor an IP address");
      return -1;
    }
    return 0;
  }
  for (const char *p = out;;) {
    const char *dot = strchr(p, '.');
    size_t k = dot ? (size_t)(dot - p) : strlen(p);
    if (k == 0 || k > 63) {
      snprintf(err, errlen, "host name labels must have 1 to 63 bytes");
      return -1;
    }
    if (!dot) break;
    p = dot + 1;
  }
  return 0;
}

static struct wait_section *wait_new(const char *name, int line, unsigned layer) {
  struct wait_section *w = kr_xcalloc(1, sizeof *w);
  char err[KR__CFG_ERRLEN];
  w->name = kr_xstrdup(name);
  w->line = line;
  w->layer = layer;
  for (int k = 0; k < KR_CFG_WAIT__COUNT; k++) {
    int rc = kr__cfg_parse(&kr__cfg_wait_keys[k], kr__cfg_wait_keys[k].def, &w->val[k], err,
                           sizeof err);
    assert(rc == 0);
    (void)rc;
  }
  return w;
}

static void wait_free(struct wait_section *w) {
  for (int k = 0; k < KR_CFG_WAIT__COUNT; k++) kr__cfg_value_free(&w->val[k]);
  free(w->name);
  free(w);
}

static void waits_clear(kr_config_t *cfg) {
  for (size_t i = 0; i < cfg->nwait; i++) wait_free(cfg->waits[i]);
  cfg->nwait = 0;
}

static struct wait_section *wait_find(const kr_config_t *cfg, const char *name, size_t n) {
  for (size_t i = 0; i < cfg->nwait; i++)
    if (strlen(cfg->waits[i]->name) == n && memcmp(cfg->waits[i]->name, name, n) == 0)
      return cfg->waits[i];
  return NULL;
}

static int wait_name_ok(const char *s) {
  size_t n = strlen(s);
  return n >= 1 && n <= 64 &&
         strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* ", "-separated names of the wait sections, for messages. */
static void wait_names(const kr_config_t *cfg, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < cfg->nwait && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", cfg->waits[i]->name);
}

/* ---- Values ------------------------------------------------------------ */

static int is_list_type(enum kr_cfg_type t) {
  return t == KR_CFG_T_LIST || t == KR_CFG_T_REGEX_LIST;
}

/* Parse text into slot as key (dotted name for messages). loc prefixes
 * messages ("FILE:LINE" or "-o NAME"). 0, or -1 after recording an error
 * (slot unchanged). */
static int set_value(kr_config_t *cfg, const kr__cfg_def_t *def, kr__cfg_value_t *slot,
                     const char *key, const char *text, unsigned layer, int line,
                     const char *loc) {
  int same_layer = slot->layer == layer;
  int list = is_list_type(def->type);
  char err[KR__CFG_ERRLEN];
  if (same_layer && !list && layer != LAYER_CMDLINE) {
    add_error(cfg, "%s: %s: duplicate key (first set at line %d)", loc, key, slot->line);
    return -1;
  }
  int regex = *text && (def->type == KR_CFG_T_REGEX || def->type == KR_CFG_T_REGEX_LIST);
  if (regex && cfg->nregex >= KR_CONFIG_MAX_REGEXES) { /* each costs ~25 us and ~2 KiB */
    add_error(cfg, "%s: %s: more than %u patterns in the configuration", loc, key,
              KR_CONFIG_MAX_REGEXES);
    return -1;
  }
  kr__cfg_value_t tmp;
  if (kr__cfg_parse(def, text, &tmp, err, sizeof err)) {
    add_error(cfg, "%s: %s: %s", loc, key, err);
    return -1;
  }
  cfg->nregex += (size_t)regex;
  if (kr__cfg_merge(def, slot, &tmp, list && same_layer, err, sizeof err)) {
    add_error(cfg, "%s: %s: %s", loc, key, err);
    return -1;
  }
  slot->line = line;
  slot->layer = layer;
  return 0;
}

static int key_find(const char *section, size_t sn, const char *name) {
  for (int k = 0; k < KR_CFG__COUNT; k++)
    if (strlen(kr__cfg_keys[k].section) == sn && memcmp(kr__cfg_keys[k].section, section, sn) == 0 &&
        strcmp(kr__cfg_keys[k].name, name) == 0)
      return k;
  return -1;
}

static int wait_key_find(const char *name) {
  for (int k = 0; k < KR_CFG_WAIT__COUNT; k++)
    if (strcmp(kr__cfg_wait_keys[k].name, name) == 0) return k;
  return -1;
}

int kr_config_key_find(const char *dotted) {
  const char *dot = strchr(dotted, '.');
  return dot ? key_find(dotted, (size_t)(dot - dotted), dot + 1) : -1;
}

/* Message for an unknown key of section: names the section that has a
 * key of that name, if any. */
static void unknown_key(kr_config_t *cfg, const char *loc, const char *section, const char *name) {
  char q[96];
  for (int k = 0; k < KR_CFG__COUNT; k++)
    if (strcmp(kr__cfg_keys[k].name, name) == 0) {
      add_error(cfg, "%s: unknown key '%s' in [%s] (it belongs in [%s])", loc,
                kr__cfg_quote(name, q, sizeof q), section, kr__cfg_keys[k].section);
      return;
    }
  add_error(cfg, "%s: unknown key '%s' in [%s]", loc, kr__cfg_quote(name, q, sizeof q), section);
}

/* "section.key" or "wait.NAME.key" in a [host] section or from -o: key
 * id or wait key id, and the wait name (as a slice into name). -1 after
 * recording an error. */
static int route_dotted(kr_config_t *cfg, const char *loc, const char *name, int for_host,
                        int *key, kr_slice_t *wait) {
  char q[96];
  const char *dot = strchr(name, '.');
  wait->p = NULL, wait->n = 0;
  if (!dot) {
    add_error(cfg, "%s: '%s' should be section.key%s", loc, kr__cfg_quote(name, q, sizeof q),
              for_host ? " (e.g. politeness.min-delay)" : "=value");
    return -1;
  }
  size_t sn = (size_t)(dot - name);
  if (sn == 4 && memcmp(name, "wait", 4) == 0) {
    const char *wn = dot + 1, *dot2 = strchr(wn, '.');
    int wk = dot2 ? wait_key_find(dot2 + 1) : -1;
    if (!dot2 || wk < 0) {
      add_error(cfg, "%s: '%s' is not wait.NAME.key with a key of [wait] sections", loc,
                kr__cfg_quote(name, q, sizeof q));
      return -1;
    }
    *key = wk;
    *wait = kr_slice(wn, (size_t)(dot2 - wn));
    return 0;
  }
  int k = key_find(name, sn, dot + 1);
  if (k < 0) {
    size_t s;
    for (s = 0; s < NPLAIN; s++)
      if (strlen(plain_sections[s]) == sn && memcmp(plain_sections[s], name, sn) == 0) break;
    if (s == NPLAIN)
      add_error(cfg, "%s: unknown section in '%s'", loc, kr__cfg_quote(name, q, sizeof q));
    else
      unknown_key(cfg, loc, plain_sections[s], dot + 1);
    return -1;
  }
  if (for_host && !(kr__cfg_keys[k].flags & KR_CFG_HOST)) {
    add_error(cfg, "%s: %s cannot be overridden per host", loc, name);
    return -1;
  }
  *key = k;
  return 0;
}

static void host_set(kr_config_t *cfg, struct host_section *h, const char *name,
                     const char *value, unsigned layer, int line, const char *loc) {
  int key;
  kr_slice_t wn;
  if (route_dotted(cfg, loc, name, 1, &key, &wn)) return;
  const kr__cfg_def_t *def = wn.p ? &kr__cfg_wait_keys[key] : &kr__cfg_keys[key];
  struct override *ov = NULL;
  for (size_t i = 0; i < h->nov; i++) {
    struct override *o = &h->ov[i];
    if (o->key == key && !o->wait_name == !wn.p &&
        (!wn.p || (strlen(o->wait_name) == wn.n && memcmp(o->wait_name, wn.p, wn.n) == 0))) {
      ov = o;
      break;
    }
  }
  if (ov) {
    set_value(cfg, def, &ov->val, name, value, layer, line, loc);
    return;
  }
  if (h->nov == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 4;
    h->ov = kr_xrealloc(h->ov, h->cap * sizeof *h->ov);
  }
  ov = &h->ov[h->nov];
  memset(ov, 0, sizeof *ov);
  ov->key = key;
  ov->wait = -1;
  if (set_value(cfg, def, &ov->val, name, value, layer, line, loc)) return;
  if (wn.p) ov->wait_name = kr_xstrndup(wn.p, wn.n);
  h->nov++;
}

/* ---- The line reader and inih callback ------------------------------------ */

enum section_kind { SEC_NONE, SEC_PLAIN, SEC_WAIT, SEC_HOST, SEC_SKIP };

struct parse {
  kr_config_t *cfg;
  const char *name;       /* file name for messages */
  unsigned layer;
  const char *p, *end;    /* input not yet read */
  int lineno;
  const char *lp;         /* line handed to inih (no newline) */
  size_t ln, off;         /* its length and bytes already handed over */
  int in_line;            /* lp has bytes or its newline still to hand over */
  enum section_kind kind;
  const char *plain;      /* SEC_PLAIN: section name */
  struct wait_section *wait;
  struct host_section *host;
  int hosts_full, waits_full; /* cap errors reported once */
};

static void perror_at(struct parse *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perror_at(struct parse *ps, const char *fmt, ...) {
  char msg[KR__CFG_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  add_error(ps->cfg, "%s:%d: %s", ps->name, ps->lineno, msg);
}

/* A "[...]" line (s..s+n, trimmed). Sets the current section. */
static void begin_section(struct parse *ps, const char *s, size_t n) {
  kr_config_t *cfg = ps->cfg;
  char word[32], arg[300], q[96];
  size_t i = 1, wn = 0, an = 0;
  int has_arg = 0;
  ps->kind = SEC_SKIP;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  while (i < n && wn < sizeof word - 1 &&
         ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
          s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z')))
    word[wn++] = s[i++];
  word[wn] = '\0';
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  if (i < n && s[i] == '"') {
    const char *close = memchr(s + i + 1, '"', n - i - 1);
    if (!close || (size_t)(close - s - i - 1) >= sizeof arg) goto bad;
    an = (size_t)(close - s - i - 1);
    memcpy(arg, s + i + 1, an);
    arg[an] = '\0';
    has_arg = 1;
    i = (size_t)(close - s) + 1;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  }
  if (!wn || i >= n || s[i] != ']') goto bad;
  for (i++; i < n && (s[i] == ' ' || s[i] == '\t'); i++) {}
  if (i < n && s[i] != '#' && s[i] != ';') goto bad;

  if (strcmp(word, "wait") == 0 || strcmp(word, "host") == 0) {
    if (!has_arg) {
      perror_at(ps, "[%s] needs a name: [%s \"NAME\"]", word, word);
      return;
    }
    if (word[0] == 'w') {
      if (!wait_name_ok(arg)) {
        perror_at(ps, "bad wait name '%s' (1 to 64 letters, digits, '_' or '-')",
                  kr__cfg_quote(arg, q, sizeof q));
        return;
      }
      if (cfg->builtin_waits) { /* the first [wait] replaces Figure 12's stack */
        waits_clear(cfg);
        cfg->builtin_waits = 0;
      }
      struct wait_section *w = wait_find(cfg, arg, an);
      if (w) {
        perror_at(ps, "[wait \"%s\"] is already defined at %s:%d", arg, cfg->sources[w->layer],
                  w->line);
        return;
      }
      if (cfg->nwait >= KR_CONFIG_MAX_WAITS) {
        if (!ps->waits_full++)
          perror_at(ps, "more than %u [wait] sections; the rest are ignored", KR_CONFIG_MAX_WAITS);
        return;
      }
      if (!cfg->waits) cfg->waits = kr_xcalloc(KR_CONFIG_MAX_WAITS, sizeof *cfg->waits);
      ps->wait = cfg->waits[cfg->nwait++] = wait_new(arg, ps->lineno, ps->layer);
      ps->kind = SEC_WAIT;
      return;
    }
    char dom[256], why[200];
    int is_ip;
    if (host_normalize(arg, dom, &is_ip, why, sizeof why)) {
      perror_at(ps, "bad host '%s': %s", kr__cfg_quote(arg, q, sizeof q), why);
      return;
    }
    struct host_section *h = host_find(cfg, dom, strlen(dom));
    if (!h) {
      if (cfg->nhost >= KR_CONFIG_MAX_HOSTS) {
        if (!ps->hosts_full++)
          perror_at(ps, "more than %u [host] sections; the rest are ignored", KR_CONFIG_MAX_HOSTS);
        return;
      }
      h = host_add(cfg, dom, is_ip);
      h->line = ps->lineno;
      h->layer = ps->layer;
    }
    ps->host = h;
    ps->kind = SEC_HOST;
    return;
  }
  for (size_t k = 0; k < NPLAIN; k++) {
    if (strcmp(word, plain_sections[k]) == 0) {
      if (has_arg) {
        perror_at(ps, "[%s] takes no name", word);
        return;
      }
      ps->plain = plain_sections[k];
      ps->kind = SEC_PLAIN;
      return;
    }
  }
  perror_at(ps, "unknown section [%s]", kr__cfg_quote(word, q, sizeof q));
  return;
bad: {
  char text[128];
  size_t k = n < sizeof text - 1 ? n : sizeof text - 1;
  memcpy(text, s, k);
  text[k] = '\0';
  perror_at(ps, "bad section header '%s' (expected [name] or [name \"arg\"])",
            kr__cfg_quote(text, q, sizeof q));
}
}

/* Take the next line of input. Lines inih must not see (errors, section
 * headers, comments) are handed over empty. 0 at the end of input. */
static int next_line(struct parse *ps) {
  if (ps->p >= ps->end) return 0;
  const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
  const char *s = ps->p, *e = nl ? nl : ps->end;
  ps->p = nl ? nl + 1 : ps->end;
  ps->lineno++;
  ps->lp = "", ps->ln = 0, ps->off = 0, ps->in_line = 1;
  if (e > s && e[-1] == '\r') e--;
  kr_slice_t t = kr_slice_trim(kr_slice(s, (size_t)(e - s)));
  int header = t.n && t.p[0] == '[';
  if ((size_t)(e - s) > KR_CONFIG_MAX_LINE) {
    perror_at(ps, "line longer than %u bytes", KR_CONFIG_MAX_LINE);
    if (header) ps->kind = SEC_SKIP;
    return 1;
  }
  for (const char *c = s; c < e; c++) {
    unsigned char b = (unsigned char)*c;
    if ((b < 0x20 && b != '\t') || b == 0x7f) {
      perror_at(ps, b ? "control character 0x%02x in line" : "NUL byte in line", b);
      if (header) ps->kind = SEC_SKIP;
      return 1;
    }
  }
  if (!t.n || t.p[0] == '#' || t.p[0] == ';') return 1;
  if (header) {
    begin_section(ps, t.p, t.n);
    return 1;
  }
  if (!memchr(t.p, '=', t.n) && !memchr(t.p, ':', t.n)) {
    char buf[128], q[96];
    size_t k = t.n < sizeof buf - 1 ? t.n : sizeof buf - 1;
    memcpy(buf, t.p, k);
    buf[k] = '\0';
    perror_at(ps, "expected 'key = value', got '%s'", kr__cfg_quote(buf, q, sizeof q));
    return 1;
  }
  if (ps->kind == SEC_SKIP) return 1;
  if (ps->kind == SEC_NONE) {
    perror_at(ps, "key outside of any section");
    return 1;
  }
  ps->lp = s;
  ps->ln = (size_t)(e - s);
  return 1;
}

/* inih's fgets: hand over the current line in pieces of at most num - 1
 * bytes, newline last; inih grows its buffer while no newline came. */
static char *reader(char *str, int num, void *stream) {
  struct parse *ps = stream;
  if (num < 2) return NULL;
  if (!ps->in_line && !next_line(ps)) return NULL;
  size_t room = (size_t)num - 1, k = ps->ln - ps->off;
  if (k > room) k = room;
  memcpy(str, ps->lp + ps->off, k);
  ps->off += k;
  if (k < room) {
    str[k++] = '\n';
    ps->in_line = 0;
  }
  str[k] = '\0';
  return str;
}

static int on_pair(void *user, const char *section, const char *name, const char *value) {
  struct parse *ps = user;
  kr_config_t *cfg = ps->cfg;
  char loc[300], q[96];
  (void)section; /* ours, from begin_section: inih cuts names at 49 bytes */
  snprintf(loc, sizeof loc, "%s:%d", ps->name, ps->lineno);
  if (!*name) {
    add_error(cfg, "%s: missing key name before '='", loc);
    return 1;
  }
  switch (ps->kind) {
  case SEC_PLAIN: {
    int k = key_find(ps->plain, strlen(ps->plain), name);
    if (k < 0) {
      unknown_key(cfg, loc, ps->plain, name);
      break;
    }
    char dotted[128];
    snprintf(dotted, sizeof dotted, "%s.%s", ps->plain, name);
    set_value(cfg, &kr__cfg_keys[k], &cfg->global[k], dotted, value, ps->layer, ps->lineno, loc);
    break;
  }
  case SEC_WAIT: {
    int k = wait_key_find(name);
    if (k < 0) {
      add_error(cfg, "%s: unknown key '%s' in [wait \"%s\"]", loc,
                kr__cfg_quote(name, q, sizeof q), ps->wait->name);
      break;
    }
    char dotted[128];
    snprintf(dotted, sizeof dotted, "wait.%s.%s", ps->wait->name, name);
    set_value(cfg, &kr__cfg_wait_keys[k], &ps->wait->val[k], dotted, value, ps->layer,
              ps->lineno, loc);
    break;
  }
  case SEC_HOST:
    host_set(cfg, ps->host, name, value, ps->layer, ps->lineno, loc);
    break;
  default: /* next_line hands over no key lines outside a section */
    break;
  }
  return 1;
}

/* ---- Loading ---------------------------------------------------------------- */

kr_config_t *kr_config_new(void) {
  kr_config_t *cfg = kr_xcalloc(1, sizeof *cfg);
  char err[KR__CFG_ERRLEN];
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    int rc = kr__cfg_parse(&kr__cfg_keys[k], kr__cfg_keys[k].def, &cfg->global[k], err, sizeof err);
    assert(rc == 0 && "schema default must parse");
    (void)rc;
  }
  cfg->sources = kr_xmalloc(sizeof *cfg->sources);
  cfg->sources[0] = kr_xstrdup("default");
  cfg->nsrc = 1;
  cfg->waits = kr_xcalloc(KR_CONFIG_MAX_WAITS, sizeof *cfg->waits);
  for (size_t i = 0; i < sizeof builtin_waits / sizeof *builtin_waits; i++) {
    struct wait_section *w = wait_new(builtin_waits[i].name, 0, 0);
    const char *text[] = {builtin_waits[i].content_type, builtin_waits[i].initial,
                          builtin_waits[i].min};
    const int keys[] = {KR_CFG_WAIT_CONTENT_TYPE, KR_CFG_WAIT_INITIAL_WAIT, KR_CFG_WAIT_MIN_WAIT};
    for (int j = 0; j < 3; j++) {
      kr__cfg_value_t v;
      int rc = kr__cfg_parse(&kr__cfg_wait_keys[keys[j]], text[j], &v, err, sizeof err);
      assert(rc == 0);
      (void)rc;
      kr__cfg_merge(&kr__cfg_wait_keys[keys[j]], &w->val[keys[j]], &v, 0, err, sizeof err);
    }
    cfg->waits[cfg->nwait++] = w;
  }
  cfg->builtin_waits = 1;
  cfg->global_view.cfg = cfg;
  for (int k = 0; k < KR_CFG__COUNT; k++) cfg->global_view.val[k] = &cfg->global[k];
  return cfg;
}

void kr_config_free(kr_config_t *cfg) {
  if (!cfg) return;
  for (int k = 0; k < KR_CFG__COUNT; k++) kr__cfg_value_free(&cfg->global[k]);
  waits_clear(cfg);
  free(cfg->waits);
  for (size_t i = 0; i < cfg->nhost; i++) {
    struct host_section *h = cfg->hosts[i];
    for (size_t j = 0; j < h->nov; j++) {
      kr__cfg_value_free(&h->ov[j].val);
      free(h->ov[j].wait_name);
    }
    if (h->view) free(h->view->own_wait);
    free(h->view);
    free(h->ov);
    free(h->domain);
    free(h);
  }
  free(cfg->hosts);
  free(cfg->htab);
  for (size_t i = 0; i < cfg->nerr; i++) free(cfg->errors[i]);
  for (size_t i = 0; i < cfg->nsrc; i++) free(cfg->sources[i]);
  free(cfg->sources);
  free(cfg->pub_waits);
  free(cfg->user_agent);
  free(cfg);
}

static unsigned new_layer(kr_config_t *cfg, const char *name) {
  cfg->sources = kr_xrealloc(cfg->sources, (cfg->nsrc + 1) * sizeof *cfg->sources);
  cfg->sources[cfg->nsrc] = kr_xstrdup(name);
  return (unsigned)cfg->nsrc++;
}

/* inih's process-wide options, saved and restored around one parse. */
struct ini_opts {
  bool multiline, bom, inline_comments, use_stack, realloc_, stop_first, no_value;
  int max_line, initial_alloc;
};

static void ini_opts_swap(struct ini_opts *save) {
  struct ini_opts cur = {ini_allow_multiline, ini_allow_bom, ini_allow_inline_comments,
                         ini_use_stack, ini_allow_realloc, ini_stop_on_first_error,
                         ini_allow_no_value, ini_max_line, ini_initial_alloc};
  ini_allow_multiline = save->multiline;
  ini_allow_bom = save->bom;
  ini_allow_inline_comments = save->inline_comments;
  ini_use_stack = save->use_stack;
  ini_allow_realloc = save->realloc_;
  ini_stop_on_first_error = save->stop_first;
  ini_allow_no_value = save->no_value;
  ini_max_line = save->max_line;
  ini_initial_alloc = save->initial_alloc;
  *save = cur;
}

int kr_config_load_string(kr_config_t *cfg, const char *name, const char *text, size_t len) {
  if (cfg->finished || cfg->cmdline_used) return KR_EINVAL; /* -o comes last */
  if (!name) name = "<string>";
  size_t before = cfg->total;
  struct parse ps = {.cfg = cfg, .name = name, .p = text, .end = text + len};
  ps.layer = new_layer(cfg, name);
  if (len > KR_CONFIG_MAX_FILE) {
    add_error(cfg, "%s: larger than %u bytes", name, KR_CONFIG_MAX_FILE);
    return KR_ECONFIG;
  }
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) ps.p += 3; /* UTF-8 BOM */
  /* No multi-line values, no inline comments (a regex may hold " ;"), no
   * BOM handling (done above), lines up to our maximum on the heap. */
  struct ini_opts opts = {false, false, false, false, true, false, false,
                          (int)KR_CONFIG_MAX_LINE + 3, 256};
  ini_opts_swap(&opts);
  int rc = ini_parse_stream(reader, &ps, on_pair, &ps);
  ini_opts_swap(&opts);
  if (rc == -2) add_error(cfg, "%s: out of memory while parsing", name);
  else if (rc > 0 && cfg->total == before) add_error(cfg, "%s:%d: syntax error", name, rc);
  return cfg->total > before ? KR_ECONFIG : 0;
}

int kr_config_load_file(kr_config_t *cfg, const char *path) {
  if (cfg->finished || cfg->cmdline_used) return KR_EINVAL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
    int e = fd < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : errno;
    new_layer(cfg, path);
    add_error(cfg, "%s: cannot read: %s", path, strerror(e));
    if (fd >= 0) close(fd);
    return KR_ECONFIG;
  }
  kr_buf_t b;
  kr_buf_init(&b, KR_CONFIG_MAX_FILE);
  char chunk[65536];
  int rc = 0;
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = errno;
      break;
    }
    if (n == 0) break;
    if (kr_buf_append(&b, chunk, (size_t)n)) {
      rc = EFBIG;
      break;
    }
  }
  close(fd);
  if (rc) {
    new_layer(cfg, path);
    if (rc == EFBIG) add_error(cfg, "%s: larger than %u bytes", path, KR_CONFIG_MAX_FILE);
    else add_error(cfg, "%s: cannot read: %s", path, strerror(rc));
    kr_buf_free(&b);
    return KR_ECONFIG;
  }
  rc = kr_config_load_string(cfg, path, b.data ? b.data : "", b.len);
  kr_buf_free(&b);
  return rc;
}

int kr_config_set(kr_config_t *cfg, const char *assignment) {
  if (cfg->finished) return KR_EINVAL;
  size_t before = cfg->total;
  char q[96], name[256];
  cfg->cmdline_used = 1;
  const char *eq = strchr(assignment, '=');
  kr_slice_t n = kr_slice_trim(kr_slice(assignment, eq ? (size_t)(eq - assignment) : 0));
  if (!eq || !n.n || n.n >= sizeof name) {
    add_error(cfg, "-o: expected section.key=value, got '%s'",
              kr__cfg_quote(assignment, q, sizeof q));
    return KR_ECONFIG;
  }
  memcpy(name, n.p, n.n);
  name[n.n] = '\0';
  kr_slice_t v = kr_slice_trim(kr_slice_cstr(eq + 1));
  if (v.n > KR_CONFIG_MAX_LINE) {
    add_error(cfg, "-o: %s: value longer than %u bytes", kr__cfg_quote(name, q, sizeof q),
              KR_CONFIG_MAX_LINE);
    return KR_ECONFIG;
  }
  for (size_t i = 0; i < v.n; i++) {
    unsigned char b = (unsigned char)v.p[i];
    if ((b < 0x20 && b != '\t') || b == 0x7f) {
      add_error(cfg, "-o: %s: control character 0x%02x in value", kr__cfg_quote(name, q, sizeof q),
                b);
      return KR_ECONFIG;
    }
  }
  char *value = kr_xstrndup(v.p, v.n);
  int key;
  kr_slice_t wn;
  if (route_dotted(cfg, "-o", name, 0, &key, &wn) == 0) {
    if (wn.p) {
      struct wait_section *w = wait_find(cfg, wn.p, wn.n);
      char names[512];
      wait_names(cfg, names, sizeof names);
      if (!w)
        add_error(cfg, "-o: %s: no [wait \"%.*s\"] section (defined: %s)", name, (int)wn.n, wn.p,
                  names);
      else
        set_value(cfg, &kr__cfg_wait_keys[key], &w->val[key], name, value, LAYER_CMDLINE, -1, "-o");
    } else {
      set_value(cfg, &kr__cfg_keys[key], &cfg->global[key], name, value, LAYER_CMDLINE, -1, "-o");
    }
  }
  free(value);
  return cfg->total > before ? KR_ECONFIG : 0;
}

/* ---- Finishing ---------------------------------------------------------------- */

static void wait_fill(kr_cfg_wait_t *w, const struct wait_section *ws) {
  memset(w, 0, sizeof *w);
  w->name = ws->name;
  const kr__cfg_value_t *v = ws->val;
  w->content_type = v[KR_CFG_WAIT_CONTENT_TYPE].re;
  w->content_type_src = v[KR_CFG_WAIT_CONTENT_TYPE].s;
  w->initial_wait_ms = v[KR_CFG_WAIT_INITIAL_WAIT].i;
  w->default_wait_ms = v[KR_CFG_WAIT_DEFAULT_WAIT].i;
  w->min_wait_ms = v[KR_CFG_WAIT_MIN_WAIT].i;
  w->max_wait_ms = v[KR_CFG_WAIT_MAX_WAIT].i;
  w->changed_factor = v[KR_CFG_WAIT_CHANGED_FACTOR].f;
  w->unchanged_factor = v[KR_CFG_WAIT_UNCHANGED_FACTOR].f;
  w->use_overdue_time = (int)v[KR_CFG_WAIT_USE_OVERDUE_TIME].i;
  w->policy = (int)v[KR_CFG_WAIT_POLICY].i;
}

static void wait_apply(kr_cfg_wait_t *w, int key, const kr__cfg_value_t *v) {
  switch ((kr_cfg_wait_key_t)key) {
  case KR_CFG_WAIT_CONTENT_TYPE:
    w->content_type = v->re;
    w->content_type_src = v->s;
    break;
  case KR_CFG_WAIT_INITIAL_WAIT: w->initial_wait_ms = v->i; break;
  case KR_CFG_WAIT_DEFAULT_WAIT: w->default_wait_ms = v->i; break;
  case KR_CFG_WAIT_MIN_WAIT: w->min_wait_ms = v->i; break;
  case KR_CFG_WAIT_MAX_WAIT: w->max_wait_ms = v->i; break;
  case KR_CFG_WAIT_CHANGED_FACTOR: w->changed_factor = v->f; break;
  case KR_CFG_WAIT_UNCHANGED_FACTOR: w->unchanged_factor = v->f; break;
  case KR_CFG_WAIT_USE_OVERDUE_TIME: w->use_overdue_time = (int)v->i; break;
  case KR_CFG_WAIT_POLICY: w->policy = (int)v->i; break;
  case KR_CFG_WAIT__COUNT: break;
  }
}

/* Sections that apply to h, most specific (h itself) first. */
static size_t host_chain(const kr_config_t *cfg, const struct host_section *h,
                         const struct host_section **chain, size_t max) {
  size_t n = 0;
  chain[n++] = h;
  if (h->is_ip) return n;
  for (const char *p = h->domain; (p = strchr(p, '.')) && n < max; ) {
    p++;
    const struct host_section *a = host_find(cfg, p, h->len - (size_t)(p - h->domain));
    if (a) chain[n++] = a;
  }
  return n;
}

/* Fill v for section h: global values, then the chain from the least to
 * the most specific section. */
static void build_view(const kr_config_t *cfg, const struct host_section *h, kr_config_view_t *v) {
  const struct host_section *chain[130];
  size_t n = host_chain(cfg, h, chain, sizeof chain / sizeof *chain);
  *v = cfg->global_view;
  v->host = h->domain;
  v->own_wait = NULL;
  while (n--) {
    const struct host_section *s = chain[n];
    for (size_t i = 0; i < s->nov; i++) {
      const struct override *o = &s->ov[i];
      if (!o->wait_name) {
        v->val[o->key] = &o->val;
        continue;
      }
      if (o->wait < 0) continue;
      if (!v->own_wait) {
        v->own_wait = kr_xmalloc((cfg->nwait ? cfg->nwait : 1) * sizeof *v->own_wait);
        memcpy(v->own_wait, cfg->pub_waits, cfg->nwait * sizeof *v->own_wait);
        v->wait = v->own_wait;
      }
      wait_apply(&v->own_wait[o->wait], o->key, &o->val);
    }
  }
}

static const struct override *own_override(const struct host_section *h, int key,
                                           const char *wait_name) {
  for (size_t i = 0; i < h->nov; i++)
    if (h->ov[i].key == key && !h->ov[i].wait_name == !wait_name &&
        (!wait_name || strcmp(h->ov[i].wait_name, wait_name) == 0))
      return &h->ov[i];
  return NULL;
}

/* lo <= hi for a pair of keys of view v; h = the section whose own
 * overrides are checked (NULL = global values). */
static void check_pair(kr_config_t *cfg, const kr_config_view_t *v, const struct host_section *h,
                       int klo, int khi) {
  const kr__cfg_value_t *lo = v->val[klo], *hi = v->val[khi];
  if (lo->i <= hi->i) return;
  const kr__cfg_value_t *at = lo->line ? lo : hi;
  if (h) {
    const struct override *o = own_override(h, klo, NULL);
    if (!o) o = own_override(h, khi, NULL);
    if (!o) return; /* inherited: reported where it was set */
    at = &o->val;
  }
  char w[300], a[64], b[64];
  const kr__cfg_def_t *dl = &kr__cfg_keys[klo], *dh = &kr__cfg_keys[khi];
  kr_config_format_duration(lo->i, a, sizeof a);
  kr_config_format_duration(hi->i, b, sizeof b);
  add_error(cfg, "%s: %s.%s (%s) is greater than %s.%s (%s)%s%s%s", where(cfg, at, w, sizeof w),
            dl->section, dl->name, a, dh->section, dh->name, b, h ? " for [host \"" : "",
            h ? h->domain : "", h ? "\"]" : "");
}

static void check_waits(kr_config_t *cfg, const kr_config_view_t *v, const struct host_section *h) {
  for (size_t i = 0; i < v->nwait; i++) {
    const kr_cfg_wait_t *w = &v->wait[i];
    if (w->min_wait_ms <= w->max_wait_ms) continue;
    const kr__cfg_value_t *at;
    if (h) {
      const struct override *o = own_override(h, KR_CFG_WAIT_MIN_WAIT, w->name);
      if (!o) o = own_override(h, KR_CFG_WAIT_MAX_WAIT, w->name);
      if (!o) continue;
      at = &o->val;
    } else {
      const struct wait_section *ws = cfg->waits[i];
      at = ws->val[KR_CFG_WAIT_MIN_WAIT].line ? &ws->val[KR_CFG_WAIT_MIN_WAIT]
                                               : &ws->val[KR_CFG_WAIT_MAX_WAIT];
    }
    char loc[300], a[64], b[64];
    kr_config_format_duration(w->min_wait_ms, a, sizeof a);
    kr_config_format_duration(w->max_wait_ms, b, sizeof b);
    add_error(cfg, "%s: min-wait (%s) of [wait \"%s\"] is greater than its max-wait (%s)%s%s%s",
              where(cfg, at, loc, sizeof loc), a, w->name, b, h ? " for [host \"" : "",
              h ? h->domain : "", h ? "\"]" : "");
  }
}

int kr_config_finish(kr_config_t *cfg) {
  if (cfg->finished) return 0;
  size_t before = cfg->total;
  char loc[300], names[512];

  cfg->pub_waits = kr_xcalloc(cfg->nwait ? cfg->nwait : 1, sizeof *cfg->pub_waits);
  for (size_t i = 0; i < cfg->nwait; i++) wait_fill(&cfg->pub_waits[i], cfg->waits[i]);
  cfg->global_view.nwait = cfg->nwait;
  cfg->global_view.wait = cfg->pub_waits;

  wait_names(cfg, names, sizeof names);
  for (size_t i = 0; i < cfg->nhost; i++) {
    struct host_section *h = cfg->hosts[i];
    for (size_t j = 0; j < h->nov; j++) {
      struct override *o = &h->ov[j];
      if (!o->wait_name) continue;
      struct wait_section *w = wait_find(cfg, o->wait_name, strlen(o->wait_name));
      if (w) {
        for (o->wait = 0; cfg->waits[o->wait] != w; o->wait++) {}
      } else {
        add_error(cfg, "%s: wait.%s.%s: no [wait \"%s\"] section (defined: %s)",
                  where(cfg, &o->val, loc, sizeof loc), o->wait_name,
                  kr__cfg_wait_keys[o->key].name, o->wait_name, names);
      }
    }
  }

  check_pair(cfg, &cfg->global_view, NULL, KR_CFG_POLITENESS_MIN_DELAY, KR_CFG_POLITENESS_MAX_DELAY);
  check_pair(cfg, &cfg->global_view, NULL, KR_CFG_DNS_MIN_TTL, KR_CFG_DNS_MAX_TTL);
  check_waits(cfg, &cfg->global_view, NULL);
  const kr__cfg_value_t *listen = &cfg->global[KR_CFG_STATUS_LISTEN];
  if (*listen->s && !kr__cfg_listen_is_loopback(listen->s) && !*cfg->global[KR_CFG_STATUS_TOKEN].s)
    add_error(cfg, "%s: status.listen %s is not a loopback address, so status.token must be set",
              where(cfg, listen, loc, sizeof loc), listen->s);
  const kr__cfg_value_t *callback = &cfg->global[KR_CFG_WEBSUB_CALLBACK];
  if (*callback->s && !*listen->s)
    add_error(cfg, "%s: websub.callback needs the status server (status.listen) to answer the hubs",
              where(cfg, callback, loc, sizeof loc));

  kr_config_view_t *tmp = kr_xmalloc(sizeof *tmp);
  for (size_t i = 0; i < cfg->nhost; i++) {
    build_view(cfg, cfg->hosts[i], tmp);
    check_pair(cfg, tmp, cfg->hosts[i], KR_CFG_POLITENESS_MIN_DELAY, KR_CFG_POLITENESS_MAX_DELAY);
    check_waits(cfg, tmp, cfg->hosts[i]);
    free(tmp->own_wait);
  }
  free(tmp);

  const char *ua = cfg->global[KR_CFG_CRAWL_USER_AGENT].s;
  const char *contact = cfg->global[KR_CFG_CRAWL_CONTACT_URL].s;
  const char *paren = strrchr(ua, ')');
  if (!*contact) cfg->user_agent = kr_xstrdup(ua);
  else if (paren)
    cfg->user_agent = kr_xasprintf("%.*s +%s%s", (int)(paren - ua), ua, contact, paren);
  else cfg->user_agent = kr_xasprintf("%s (+%s)", ua, contact);

  cfg->finished = 1;
  return cfg->total > before ? KR_ECONFIG : 0;
}

/* ---- Views ---------------------------------------------------------------------- */

const kr_config_view_t *kr_config_global(const kr_config_t *cfg) {
  assert(cfg->finished);
  return &cfg->global_view;
}

const kr_config_view_t *kr_config_view(kr_config_t *cfg, const char *host, size_t len) {
  assert(cfg->finished);
  if (len && host[len - 1] == '.') len--;
  if (len >= 2 && host[0] == '[' && host[len - 1] == ']') host++, len -= 2;
  if (!len || !cfg->nhost) return &cfg->global_view;
  struct host_section *h = NULL;
  if (looks_like_ip(host, len)) {
    h = host_find(cfg, host, len);
  } else {
    for (size_t i = 0; i < len && !h; ) {
      h = host_find(cfg, host + i, len - i);
      const char *dot = memchr(host + i, '.', len - i);
      if (!dot) break;
      i = (size_t)(dot - host) + 1;
    }
  }
  if (!h) return &cfg->global_view;
  if (!h->view) {
    h->view = kr_xmalloc(sizeof *h->view);
    build_view(cfg, h, h->view);
  }
  return h->view;
}

const char *kr_config_view_host(const kr_config_view_t *v) { return v->host; }

/* ---- Getters ---------------------------------------------------------------------- */

static const kr__cfg_value_t *get(const kr_config_view_t *v, kr_cfg_key_t key,
                                  enum kr_cfg_type type) {
  assert((unsigned)key < KR_CFG__COUNT && kr__cfg_keys[key].type == type);
  (void)type;
  return v->val[key];
}

int kr_config_bool(const kr_config_view_t *v, kr_cfg_key_t key) {
  return (int)get(v, key, KR_CFG_T_BOOL)->i;
}
int64_t kr_config_int(const kr_config_view_t *v, kr_cfg_key_t key) {
  return get(v, key, KR_CFG_T_INT)->i;
}
uint64_t kr_config_size(const kr_config_view_t *v, kr_cfg_key_t key) {
  return (uint64_t)get(v, key, KR_CFG_T_SIZE)->i;
}
int64_t kr_config_ms(const kr_config_view_t *v, kr_cfg_key_t key) {
  return get(v, key, KR_CFG_T_DURATION)->i;
}
double kr_config_float(const kr_config_view_t *v, kr_cfg_key_t key) {
  return get(v, key, KR_CFG_T_FLOAT)->f;
}
int kr_config_enum(const kr_config_view_t *v, kr_cfg_key_t key) {
  return (int)get(v, key, KR_CFG_T_ENUM)->i;
}
const char *kr_config_str(const kr_config_view_t *v, kr_cfg_key_t key) {
  assert((unsigned)key < KR_CFG__COUNT);
  const char *s = v->val[key]->s;
  assert(kr__cfg_keys[key].type == KR_CFG_T_STRING || kr__cfg_keys[key].type == KR_CFG_T_ENUM);
  return s ? s : "";
}
const pcre2_code *kr_config_regex(const kr_config_view_t *v, kr_cfg_key_t key) {
  return get(v, key, KR_CFG_T_REGEX)->re;
}
size_t kr_config_list_len(const kr_config_view_t *v, kr_cfg_key_t key) {
  assert((unsigned)key < KR_CFG__COUNT && is_list_type(kr__cfg_keys[key].type));
  return v->val[key]->n;
}
const char *kr_config_list_item(const kr_config_view_t *v, kr_cfg_key_t key, size_t i) {
  assert((unsigned)key < KR_CFG__COUNT && is_list_type(kr__cfg_keys[key].type));
  return i < v->val[key]->n ? v->val[key]->items[i] : NULL;
}
const pcre2_code *kr_config_list_regex(const kr_config_view_t *v, kr_cfg_key_t key, size_t i) {
  const kr__cfg_value_t *val = get(v, key, KR_CFG_T_REGEX_LIST);
  return i < val->n ? val->codes[i] : NULL;
}
int kr_config_line(const kr_config_view_t *v, kr_cfg_key_t key) {
  assert((unsigned)key < KR_CFG__COUNT);
  return v->val[key]->line;
}
const char *kr_config_user_agent(const kr_config_t *cfg) {
  assert(cfg->finished);
  return cfg->user_agent;
}

size_t kr_config_wait_count(const kr_config_view_t *v) { return v->nwait; }
const kr_cfg_wait_t *kr_config_wait(const kr_config_view_t *v, size_t i) {
  return i < v->nwait ? &v->wait[i] : NULL;
}

const kr_cfg_wait_t *kr_config_wait_match(const kr_config_view_t *v, kr_config_matcher_t *m,
                                          const char *ctype, size_t len) {
  for (size_t i = 0; i < v->nwait; i++)
    if (!v->wait[i].content_type ||
        kr_config_regex_match(m, v->wait[i].content_type, ctype, len) == 1)
      return &v->wait[i];
  return NULL;
}

struct kr_config_matcher {
  pcre2_match_context *mc;
  pcre2_match_data *md;
};

kr_config_matcher_t *kr_config_matcher_new(void) {
  kr_config_matcher_t *m = kr_xmalloc(sizeof *m);
  m->mc = pcre2_match_context_create(NULL);
  m->md = pcre2_match_data_create(1, NULL);
  if (!m->mc || !m->md) abort(); /* out of memory, as kr_xmalloc */
  pcre2_set_match_limit(m->mc, KR_CONFIG_MATCH_LIMIT);
  pcre2_set_depth_limit(m->mc, KR_CONFIG_DEPTH_LIMIT);
  return m;
}

void kr_config_matcher_free(kr_config_matcher_t *m) {
  if (!m) return;
  pcre2_match_data_free(m->md);
  pcre2_match_context_free(m->mc);
  free(m);
}

int kr_config_regex_match(kr_config_matcher_t *m, const pcre2_code *re, const char *subject,
                          size_t len) {
  kr_config_matcher_t *own = m ? NULL : kr_config_matcher_new();
  if (!m) m = own;
  /* An ASCII subject is valid UTF-8: skip PCRE2's check, a good part of
   * the cost of matching a URL or a content type. Others are checked
   * (and fail when invalid). */
  uint32_t opts = PCRE2_NO_UTF_CHECK;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)subject[i] >= 0x80) {
      opts = 0;
      break;
    }
  int rc = pcre2_match(re, (PCRE2_SPTR)(subject ? subject : ""), len, 0, opts, m->md, m->mc);
  kr_config_matcher_free(own);
  if (rc >= 0) return 1;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_JIT_STACKLIMIT)
    return KR_ETOOBIG;
  return 0; /* no match, or a subject that is not UTF-8 */
}

/* ---- Schema and values as text ------------------------------------------------------ */

const char *kr_config_key_section(kr_cfg_key_t key) { return kr__cfg_keys[key].section; }
const char *kr_config_key_name(kr_cfg_key_t key) { return kr__cfg_keys[key].name; }
const char *kr_config_key_doc(kr_cfg_key_t key) { return kr__cfg_keys[key].doc; }
const char *kr_config_key_default(kr_cfg_key_t key) { return kr__cfg_keys[key].def; }
enum kr_cfg_type kr_config_key_type(kr_cfg_key_t key) { return kr__cfg_keys[key].type; }
unsigned kr_config_key_flags(kr_cfg_key_t key) { return kr__cfg_keys[key].flags; }
const char *kr_config_wait_key_name(kr_cfg_wait_key_t key) { return kr__cfg_wait_keys[key].name; }
const char *kr_config_wait_key_doc(kr_cfg_wait_key_t key) { return kr__cfg_wait_keys[key].doc; }
const char *kr_config_wait_key_default(kr_cfg_wait_key_t key) { return kr__cfg_wait_keys[key].def; }

int kr_config_format(const kr_config_view_t *v, kr_cfg_key_t key, kr_buf_t *out) {
  assert((unsigned)key < KR_CFG__COUNT);
  return kr__cfg_format(&kr__cfg_keys[key], v->val[key], out);
}

int kr_config_format_wait(const kr_config_view_t *v, size_t i, kr_cfg_wait_key_t key,
                          kr_buf_t *out) {
  assert(i < v->nwait && (unsigned)key < KR_CFG_WAIT__COUNT);
  const kr_cfg_wait_t *w = &v->wait[i];
  kr__cfg_value_t val = {0};
  switch (key) {
  case KR_CFG_WAIT_CONTENT_TYPE: val.s = (char *)w->content_type_src; break;
  case KR_CFG_WAIT_INITIAL_WAIT: val.i = w->initial_wait_ms; break;
  case KR_CFG_WAIT_DEFAULT_WAIT: val.i = w->default_wait_ms; break;
  case KR_CFG_WAIT_MIN_WAIT: val.i = w->min_wait_ms; break;
  case KR_CFG_WAIT_MAX_WAIT: val.i = w->max_wait_ms; break;
  case KR_CFG_WAIT_CHANGED_FACTOR: val.f = w->changed_factor; break;
  case KR_CFG_WAIT_UNCHANGED_FACTOR: val.f = w->unchanged_factor; break;
  case KR_CFG_WAIT_USE_OVERDUE_TIME: val.i = w->use_overdue_time; break;
  case KR_CFG_WAIT_POLICY: {
    kr_slice_t c = kr_slice(NULL, 0);
    const char *p = kr__cfg_wait_keys[key].range;
    for (int k = 0; k <= w->policy && p; k++) {
      const char *bar = strchr(p, '|');
      c = kr_slice(p, bar ? (size_t)(bar - p) : strlen(p));
      p = bar ? bar + 1 : NULL;
    }
    return kr_buf_append_slice(out, c);
  }
  case KR_CFG_WAIT__COUNT: return KR_EINVAL;
  }
  return kr__cfg_format(&kr__cfg_wait_keys[key], &val, out);
}
