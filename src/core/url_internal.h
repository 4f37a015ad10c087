/*
 * Shared-internal pieces of the url module (src/core/url.c, src/core/url_canon.c,
 * src/core/surt.c), exposed to each other and to the unit tests: host parsing
 * helpers and the building blocks of python surt's canonicalizers, each
 * named after the upstream function it reproduces.
 */
#ifndef KRIA_URL_INTERNAL_H
#define KRIA_URL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/url.h"

/* -- url.c -- */
/* WHATWG "ends in a number" checker. */
int kr__url_ends_in_number(const char *s, size_t n);
/* WHATWG IPv4 parser (hex, octal, short forms); 0 or -1. */
int kr__url_ipv4_parse(const char *s, size_t n, uint32_t *out);
/* WHATWG IPv6 parser (without brackets); 0 or -1. */
int kr__url_ipv6_parse(const char *s, size_t n, uint16_t pieces[8]);
/* RFC 5952 text, no brackets; out needs 40 bytes. Returns the length. */
size_t kr__url_ipv6_serialize(const uint16_t pieces[8], char *out);
/* 1 if s is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int kr__utf8_valid(const char *s, size_t n);
/* Domain to ASCII of a non-ASCII UTF-8 domain (libidn2, label by label),
 * appended to b; 0 or -1. */
int kr__url_domain_to_ascii(const char *s, size_t n, kr_buf_t *b);
/* RFC 3492 Punycode of code points (no "xn--"), appended to b; 0 or -1. */
int kr__url_punycode_encode(const uint32_t *cp, size_t n, kr_buf_t *b);

/* -- surt.c: python surt building blocks (bytes in, bytes out) -- */
/* GoogleURLCanonicalizer.unescapeRepeatedly: decode %XX until nothing
 * changes (one linear pass; appends to out). */
int kr__surt_unescape_repeatedly(const char *s, size_t n, kr_buf_t *out);
/* GoogleURLCanonicalizer.attemptIPFormats: dotted quad of a numeric host
 * ("3279880203", "017.0.0.1", "10.0.258"), in out[16]; 0 or -1. */
int kr__surt_attempt_ip_formats(const char *s, size_t n, char out[16]);
/* IAURLCanonicalizer.alphaReorderQuery. */
int kr__surt_alpha_reorder_query(const char *s, size_t n, kr_buf_t *out);
/* IAURLCanonicalizer.massageHost: strip one leading "www\d*." */
kr_slice_t kr__surt_massage_host(kr_slice_t host);
/* IAURLCanonicalizer.getDefaultPort: 80, 443, else 0. */
int kr__surt_default_port(kr_slice_t scheme);
/* URLRegexTransformer.stripPathSessionID / stripQuerySessionID. */
int kr__surt_strip_path_session_id(const char *s, size_t n, kr_buf_t *out);
int kr__surt_strip_query_session_id(const char *s, size_t n, kr_buf_t *out);
/* handyurl.parse(s).geturl(): parse and re-serialize. */
int kr__surt_handyurl_roundtrip(const char *s, size_t n, kr_buf_t *out);

#endif
