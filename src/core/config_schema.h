/*
 * Private to the config module (config.c, config_schema.c): the schema
 * table built from KR_CFG_KEYS / KR_CFG_WAIT_KEYS and typed values with
 * their parsers, formatters and validators.
 */
#ifndef KRIA_CONFIG_SCHEMA_H
#define KRIA_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/config.h"

/* Error message buffer size: every message fits, values are quoted short. */
#define KR__CFG_ERRLEN 512

typedef int (*kr__cfg_check_fn)(const char *s, char *err, size_t errlen);

typedef struct kr__cfg_def {
  const char *section;    /* "http", or "wait" for wait keys */
  const char *name;       /* "timeout-connect" */
  enum kr_cfg_type type;
  unsigned flags;         /* KR_CFG_HOST */
  const char *def;        /* default, in the loader's syntax */
  const char *range;      /* "min..max", "a|b|c" or "" */
  kr__cfg_check_fn check; /* extra validation of strings and list items */
  const char *doc;
} kr__cfg_def_t;

extern const kr__cfg_def_t kr__cfg_keys[KR_CFG__COUNT];
extern const kr__cfg_def_t kr__cfg_wait_keys[KR_CFG_WAIT__COUNT];

/* A typed value and where it came from. */
typedef struct kr__cfg_value {
  int64_t i;          /* BOOL, INT, SIZE (bytes), DURATION (ms), ENUM */
  double f;           /* FLOAT */
  char *s;            /* STRING, REGEX source; NULL for other types */
  pcre2_code *re;     /* REGEX, NULL when s is "" */
  size_t n;           /* LIST / REGEX_LIST items */
  char **items;
  pcre2_code **codes; /* REGEX_LIST, one per item */
  int line;           /* 0 = default, -1 = command line, else line number */
  unsigned layer;     /* which load set it (0 = defaults) */
} kr__cfg_value_t;

/* Parse text (NUL-terminated, trimmed) as a value of def into *out (zeroed
 * first). 0, or -1 with a message ("bad duration '3x': ...") in err. */
int kr__cfg_parse(const kr__cfg_def_t *def, const char *text,
                  kr__cfg_value_t *out, char *err, size_t errlen);
/* Move src into dst: lists append when append is set (failing with a
 * message when the list would exceed KR_CONFIG_MAX_LIST), everything else
 * replaces. src is left empty. */
int kr__cfg_merge(const kr__cfg_def_t *def, kr__cfg_value_t *dst,
                  kr__cfg_value_t *src, int append, char *err, size_t errlen);
void kr__cfg_value_free(kr__cfg_value_t *v);
int kr__cfg_format(const kr__cfg_def_t *def, const kr__cfg_value_t *v, kr_buf_t *out);
/* Copy of s fit for a message: at most 60 bytes, control and non-ASCII
 * bytes as \xNN, "..." when cut. */
const char *kr__cfg_quote(const char *s, char *buf, size_t len);
/* Compile a pattern as the config does (UTF, JIT). NULL with a message. */
pcre2_code *kr__cfg_regex_compile(const char *pattern, char *err, size_t errlen);

/* Address checks shared with the loader's cross-checks. */
int kr__cfg_listen_is_loopback(const char *listen);

#endif
