/*
 * URLs: WHATWG URL Standard parsing, resolution and serialization for the
 * special schemes kria crawls (http, https; others parse too), a canonical
 * form for dedupe, and SURT. Pure: no loop, no global state.
 *
 * A kr_url_t owns one serialized href and offsets of its components, so
 * component accessors return slices into the href.
 */
#ifndef KRIA_URL_H
#define KRIA_URL_H

#include <stddef.h>

#include "kria/buf.h"

typedef struct kr_url kr_url_t;

/* Parse input (len bytes, need not be NUL-terminated) against base (may
 * be NULL). 0 and *out (free with kr_url_free), or KR_EURL. */
int kr_url_parse(const char *input, size_t len, const kr_url_t *base,
                 kr_url_t **out);
void kr_url_free(kr_url_t *url);

const char *kr_url_href(const kr_url_t *url);    /* NUL-terminated */
kr_slice_t kr_url_scheme(const kr_url_t *url);   /* "https", no colon */
kr_slice_t kr_url_hostname(const kr_url_t *url); /* IPv6 in brackets */
/* Explicit port, or -1 when absent (the scheme's default). */
int kr_url_port(const kr_url_t *url);
/* Explicit port or the scheme's default (80, 443, ...); -1 if none. */
int kr_url_effective_port(const kr_url_t *url);
/* Origin-form request target: path plus "?query" when present. */
kr_slice_t kr_url_request_target(const kr_url_t *url);
/* 1 for https. */
int kr_url_is_https(const kr_url_t *url);

#endif
