/*
 * libFuzzer harness for the configuration loader: the input is an INI
 * text for kr_config_load_string, optionally followed by "\n#-o\n" and
 * command-line overrides (kr_config_set), one per line; then
 * kr_config_finish.
 *
 * Invariants, beyond ASan/UBSan (and no leak, no unbounded allocation):
 *  - a load returns KR_ECONFIG exactly when it recorded errors, and every
 *    error names where it comes from: "fuzz.ini:LINE: " with LINE within
 *    the text's lines, or "-o: " for an override;
 *  - at most KR_CONFIG_MAX_ERRORS messages are kept, all counted;
 *  - a finished config answers every getter; kr_config_line is -1, 0 or
 *    a line of the text; host views are stable (same host, same view);
 *  - formatting round-trips: the values that were set and the wait
 *    evaluators, written back as INI with kr_config_format and loaded
 *    into a fresh config, load and finish without error and format to
 *    the same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kria/config.h"
#include "kria/error.h"

#define CFG_NAME "fuzz.ini"

/* "fuzz.ini:LINE: ..." with 1 <= LINE <= max_line, or "-o: ...". */
static void cfg_check_messages(const kr_config_t *cfg, size_t max_line) {
  size_t n = kr_config_error_count(cfg), total = kr_config_error_total(cfg);
  FUZZ_CHECK(n <= KR_CONFIG_MAX_ERRORS && n <= total);
  FUZZ_CHECK(n == (total < KR_CONFIG_MAX_ERRORS ? total : KR_CONFIG_MAX_ERRORS));
  for (size_t i = 0; i < n; i++) {
    const char *m = kr_config_error(cfg, i);
    FUZZ_CHECK(m && *m);
    if (strncmp(m, "-o: ", 4) == 0) continue;
    FUZZ_CHECK(strncmp(m, CFG_NAME ":", sizeof CFG_NAME) == 0);
    char *end;
    unsigned long line = strtoul(m + sizeof CFG_NAME, &end, 10);
    FUZZ_CHECK(end != m + sizeof CFG_NAME && end[0] == ':' && end[1] == ' ');
    FUZZ_CHECK(line >= 1 && line <= max_line);
  }
}

static size_t cfg_count_lines(const char *p, size_t n) {
  size_t lines = 1;
  for (size_t i = 0; i < n; i++)
    if (p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n'))) lines++;
  return lines;
}

static void cfg_emit_value(kr_buf_t *ini, const char *name, const kr_buf_t *v, int per_line) {
  const char *p = v->data ? v->data : "";
  size_t n = v->len;
  if (!per_line || !n) {
    kr_buf_printf(ini, "%s = %.*s\n", name, (int)n, p);
    return;
  }
  while (n) {
    const char *nl = memchr(p, '\n', n);
    size_t k = nl ? (size_t)(nl - p) : n;
    kr_buf_printf(ini, "%s = %.*s\n", name, (int)k, p);
    p += k + (nl != NULL);
    n -= k + (nl != NULL);
  }
}

/* Write the explicitly set values and the wait stack of a view as INI. */
static void cfg_write_ini(const kr_config_view_t *v, kr_buf_t *ini) {
  kr_buf_t val;
  kr_buf_init(&val, 16u << 20);
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    if (kr_config_line(v, (kr_cfg_key_t)k) == 0) continue;
    kr_buf_reset(&val);
    FUZZ_CHECK(kr_config_format(v, (kr_cfg_key_t)k, &val) == 0);
    kr_buf_printf(ini, "[%s]\n", kr_config_key_section((kr_cfg_key_t)k));
    cfg_emit_value(ini, kr_config_key_name((kr_cfg_key_t)k), &val,
                   kr_config_key_type((kr_cfg_key_t)k) == KR_CFG_T_REGEX_LIST);
  }
  for (size_t i = 0; i < kr_config_wait_count(v); i++) {
    kr_buf_printf(ini, "[wait \"%s\"]\n", kr_config_wait(v, i)->name);
    for (int k = 0; k < KR_CFG_WAIT__COUNT; k++) {
      kr_buf_reset(&val);
      FUZZ_CHECK(kr_config_format_wait(v, i, (kr_cfg_wait_key_t)k, &val) == 0);
      cfg_emit_value(ini, kr_config_wait_key_name((kr_cfg_wait_key_t)k), &val, 0);
    }
  }
  kr_buf_free(&val);
}

static int cfg_same_format(const kr_config_view_t *a, const kr_config_view_t *b) {
  kr_buf_t x, y;
  kr_buf_init(&x, 16u << 20);
  kr_buf_init(&y, 16u << 20);
  int same = kr_config_wait_count(a) == kr_config_wait_count(b);
  for (int k = 0; same && k < KR_CFG__COUNT; k++) {
    kr_buf_reset(&x);
    kr_buf_reset(&y);
    kr_config_format(a, (kr_cfg_key_t)k, &x);
    kr_config_format(b, (kr_cfg_key_t)k, &y);
    same = x.len == y.len && (!x.len || memcmp(x.data, y.data, x.len) == 0);
  }
  for (size_t i = 0; same && i < kr_config_wait_count(a); i++)
    for (int k = 0; same && k < KR_CFG_WAIT__COUNT; k++) {
      kr_buf_reset(&x);
      kr_buf_reset(&y);
      kr_config_format_wait(a, i, (kr_cfg_wait_key_t)k, &x);
      kr_config_format_wait(b, i, (kr_cfg_wait_key_t)k, &y);
      same = x.len == y.len && (!x.len || memcmp(x.data, y.data, x.len) == 0);
    }
  kr_buf_free(&x);
  kr_buf_free(&y);
  return same;
}

static void cfg_check_getters(kr_config_t *cfg, const kr_config_view_t *v, size_t lines) {
  for (int k = 0; k < KR_CFG__COUNT; k++) {
    kr_cfg_key_t key = (kr_cfg_key_t)k;
    int line = kr_config_line(v, key);
    FUZZ_CHECK(line >= -1 && line <= (int)lines);
    switch (kr_config_key_type(key)) {
    case KR_CFG_T_STRING: FUZZ_CHECK(kr_config_str(v, key) != NULL); break;
    case KR_CFG_T_BOOL: FUZZ_CHECK(kr_config_bool(v, key) == 0 || kr_config_bool(v, key) == 1); break;
    case KR_CFG_T_INT: (void)kr_config_int(v, key); break;
    case KR_CFG_T_SIZE: (void)kr_config_size(v, key); break;
    case KR_CFG_T_DURATION: FUZZ_CHECK(kr_config_ms(v, key) >= 0); break;
    case KR_CFG_T_FLOAT: (void)kr_config_float(v, key); break;
    case KR_CFG_T_REGEX: (void)kr_config_regex(v, key); break;
    case KR_CFG_T_ENUM:
      FUZZ_CHECK(kr_config_enum_choice(key, kr_config_enum(v, key)).p != NULL);
      break;
    case KR_CFG_T_LIST:
    case KR_CFG_T_REGEX_LIST:
      for (size_t i = 0; i < kr_config_list_len(v, key); i++)
        FUZZ_CHECK(kr_config_list_item(v, key, i) != NULL);
      break;
    }
  }
  for (size_t i = 0; i < kr_config_wait_count(v); i++) {
    const kr_cfg_wait_t *w = kr_config_wait(v, i);
    FUZZ_CHECK(w && w->name && w->min_wait_ms <= w->max_wait_ms);
    FUZZ_CHECK(w->changed_factor >= 1 && w->unchanged_factor >= 1);
  }
  kr_config_matcher_t *m = kr_config_matcher_new();
  (void)kr_config_wait_match(v, m, "text/html; charset=utf-8", 24);
  kr_config_matcher_free(m);
  FUZZ_CHECK(kr_config_user_agent(cfg) != NULL);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size);
int FUZZ_ENTRY(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  size_t len = size;
  static const char sep[] = "\n#-o\n";
  const char *ov = NULL;
  size_t ovn = 0;
  for (size_t i = 0; i + sizeof sep - 1 <= size; i++)
    if (memcmp(text + i, sep, sizeof sep - 1) == 0) {
      len = i;
      ov = text + i + sizeof sep - 1;
      ovn = size - i - (sizeof sep - 1);
      break;
    }
  size_t lines = cfg_count_lines(text, len);

  kr_config_t *cfg = kr_config_new();
  int rc = kr_config_load_string(cfg, CFG_NAME, text, len);
  FUZZ_CHECK(rc == 0 || rc == KR_ECONFIG);
  FUZZ_CHECK((rc == 0) == (kr_config_error_total(cfg) == 0));
  cfg_check_messages(cfg, lines);

  for (size_t i = 0, n = 0; ov && i < ovn && n < 16; n++) {
    size_t b = i;
    while (i < ovn && ov[i] != '\n') i++;
    char *line = malloc(i - b + 1);
    memcpy(line, ov + b, i - b);
    line[i - b] = '\0';
    size_t before = kr_config_error_total(cfg);
    int r = kr_config_set(cfg, line);
    FUZZ_CHECK(r == 0 || r == KR_ECONFIG);
    FUZZ_CHECK((r == 0) == (kr_config_error_total(cfg) == before));
    free(line);
    i++;
  }
  cfg_check_messages(cfg, lines);

  size_t before = kr_config_error_total(cfg);
  int rf = kr_config_finish(cfg);
  FUZZ_CHECK(rf == 0 || rf == KR_ECONFIG);
  FUZZ_CHECK((rf == 0) == (kr_config_error_total(cfg) == before));
  cfg_check_messages(cfg, lines);
  FUZZ_CHECK(kr_config_load_string(cfg, CFG_NAME, "", 0) == KR_EINVAL);

  if (rc == 0 && rf == 0 && kr_config_error_total(cfg) == 0) {
    const kr_config_view_t *g = kr_config_global(cfg);
    cfg_check_getters(cfg, g, lines);
    static const char *const hosts[] = {"example.org", "www.example.org", "127.0.0.1", "[::1]",
                                        "a.b.c.d.e"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
      const kr_config_view_t *v = kr_config_view(cfg, hosts[i], strlen(hosts[i]));
      FUZZ_CHECK(v != NULL);
      FUZZ_CHECK(kr_config_view(cfg, hosts[i], strlen(hosts[i])) == v);
      cfg_check_getters(cfg, v, lines);
    }

    kr_buf_t ini;
    kr_buf_init(&ini, 64u << 20);
    cfg_write_ini(g, &ini);
    kr_config_t *again = kr_config_new();
    int r1 = kr_config_load_string(again, CFG_NAME, ini.data ? ini.data : "", ini.len);
    int r2 = kr_config_finish(again);
    if (r1 || r2) {
      for (size_t i = 0; i < kr_config_error_count(again); i++)
        fprintf(stderr, "round trip: %s\n", kr_config_error(again, i));
      fprintf(stderr, "%.*s", (int)ini.len, ini.data ? ini.data : "");
    }
    FUZZ_CHECK(r1 == 0 && r2 == 0);
    FUZZ_CHECK(cfg_same_format(g, kr_config_global(again)));
    kr_config_free(again);
    kr_buf_free(&ini);
  }
  kr_config_free(cfg);
  return 0;
}
