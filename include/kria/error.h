/*
 * kria error codes. Every fallible function returns 0 or a negative KR_E*
 * value from the one map below; library codes (UV_E*, ARES_*, SSL, SQLite)
 * are converted at module boundaries. kr_err_name() gives the short kebab
 * name used in `kria: error: <kind>: ...` lines and crawl.log statuses;
 * kr_strerror() the human sentence.
 */
#ifndef KRIA_ERROR_H
#define KRIA_ERROR_H

/* X(SYMBOL, "name", "description") */
#define KR_ERRNO_MAP(X)                                                        \
  X(NOMEM, "nomem", "out of memory")                                           \
  X(INVAL, "invalid", "invalid argument")                                      \
  X(IO, "io", "input/output error")                                            \
  X(URL, "bad-url", "invalid URL")                                             \
  X(SCHEME, "unsupported-scheme", "unsupported URL scheme")                    \
  X(TOOBIG, "too-big", "limit exceeded")                                       \
  X(CANCELED, "canceled", "operation canceled")                                \
  X(DNS_NXDOMAIN, "dns-nxdomain", "host name does not exist")                  \
  X(DNS_NODATA, "dns-nodata", "host name has no address")                      \
  X(DNS_TIMEOUT, "dns-timeout", "DNS lookup timed out")                        \
  X(DNS_FAIL, "dns-fail", "DNS lookup failed")                                 \
  X(CONNREFUSED, "conn-refused", "connection refused")                         \
  X(CONNRESET, "conn-reset", "connection reset by peer")                       \
  X(UNREACH, "unreachable", "network or host unreachable")                     \
  X(NET, "net", "network error")                                               \
  X(CONNECT_TIMEOUT, "connect-timeout", "connection not established in time")  \
  X(FIRSTBYTE_TIMEOUT, "first-byte-timeout", "no response in time")            \
  X(IDLE_TIMEOUT, "idle-timeout", "connection idle for too long")              \
  X(TOTAL_TIMEOUT, "total-timeout", "fetch took too long")                     \
  X(TLS, "tls", "TLS handshake or record error")                               \
  X(TLS_VERIFY, "tls-verify", "TLS certificate verification failed")          \
  X(PROTO, "protocol", "malformed HTTP response")                              \
  X(HEADER_TOO_BIG, "header-too-big", "response header exceeds limit")         \
  X(BODY_TOO_BIG, "body-too-big", "response body exceeds limit")               \
  X(RATIO, "decompression-ratio", "decompressed/compressed ratio too high")    \
  X(DECODE, "content-decoding", "invalid gzip/deflate content")                \
  X(TRUNCATED, "truncated", "connection closed before the body ended")         \
  X(ABORTED, "aborted", "fetch aborted on purpose")                            \
  X(CONFIG, "config", "configuration error")                                   \
  X(DB, "db", "state database error")                                          \
  X(ROBOTS, "robots", "robots.txt error")                                      \
  X(EMPTY_REPLY, "empty-reply", "server closed the connection without a response") \
  X(NOSPC, "no-space", "no space left on device")                             \
  X(WARC, "bad-warc", "malformed WARC data")                                   \
  X(XML, "bad-xml", "malformed or refused XML (feed, sitemap)")               \
  X(ADDR_REFUSED, "address-refused", "address refused by the address policy")

enum kr_errno {
  KR_OK = 0,
  KR__EBASE = -1000, /* keep clear of errno and UV_E* values */
#define KR__ENUM(sym, name, desc) KR_E##sym,
  KR_ERRNO_MAP(KR__ENUM)
#undef KR__ENUM
  KR__ELAST
};

/* Short kebab-case name of an error ("connect-timeout"); "ok" for 0 and
 * "unknown" for a value outside the map. Never NULL. */
const char *kr_err_name(int err);
/* One-line description of an error. Never NULL. */
const char *kr_strerror(int err);

#endif
