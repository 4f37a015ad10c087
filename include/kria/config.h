/*
 * Configuration: an INI file (read through inih), command-line overrides
 * and per-host overrides, checked against one schema.
 *
 * The schema is data: KR_CFG_KEYS below lists every key of the plain
 * sections with its type, whether [host "..."] may override it, its
 * default, its range or choices, an extra check and one line of
 * documentation; KR_CFG_WAIT_KEYS lists the keys of [wait "NAME"]
 * sections. The same lists generate the key ids (KR_CFG_HTTP_TIMEOUT_CONNECT),
 * the loader's table, and config/kria.conf is tested against them.
 *
 * Syntax (see config/kria.conf):
 *   [section]            crawl, dns, http, politeness, scope, limits,
 *                        robots, canon, status, websub, cluster, store,
 *                        adaptive
 *   [wait "NAME"]        a wait evaluator; repeatable, kept in file order
 *                        (most specific first). When no [wait] section is
 *                        configured the thesis' Figure 12 stack is used:
 *                        "text" (^text/), "image" (^image/), "default".
 *                        The first [wait] section replaces that stack.
 *   [host "DOMAIN"]      overrides for DOMAIN and every name under it,
 *                        written `section.key = value` for keys marked
 *                        KR_CFG_HOST and `wait.NAME.key = value`.
 *   key = value          whole-line comments start with # or ; (no
 *                        comments after a value: "a ; b" is the value).
 * Values: durations take units ms, s, m, h, d, combinable ("1h30m"); a
 * bare number is rejected except 0. Sizes take B, KiB, MiB, GiB, TiB
 * (powers of 1024) or k, M, G, T / kB, MB, GB, TB (powers of 1000); a bare
 * number is bytes. Booleans: true/false, yes/no, on/off, 1/0. Lists take
 * comma-separated items and the key may repeat; regex lists take one
 * PCRE2 pattern per line and repeat. An empty list value clears the list.
 *
 * Layers: every kr_config_load_* call is a layer, and so are all the
 * kr_config_set calls together. Inside one file a scalar key set twice is
 * an error and a list key appends; a later layer replaces a value (its
 * first occurrence of a list key replaces, later ones append).
 *
 * Per-host lookups (thesis 3.3.1): the view of host a.b.example.org takes
 * each key from [host "a.b.example.org"], else [host "b.example.org"],
 * [host "example.org"], [host "org"], else the global value. Views are
 * resolved once per distinct most specific section and cached in the
 * config, so a getter is an array index; hosts with no section share
 * the global view.
 *
 * Pure module: no loop, no global state. inih's process-wide options are
 * set for the duration of a parse and restored, so parsing is not
 * thread-safe (kria loads its config once, on the main thread).
 */
#ifndef KRIA_CONFIG_H
#define KRIA_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "kria/buf.h"

/* Value types. Durations are milliseconds, sizes bytes, enums the index of
 * the choice in the schema's "a|b|c" list. */
enum kr_cfg_type {
  KR_CFG_T_STRING,
  KR_CFG_T_BOOL,
  KR_CFG_T_INT,
  KR_CFG_T_SIZE,
  KR_CFG_T_DURATION,
  KR_CFG_T_FLOAT,
  KR_CFG_T_REGEX,      /* one PCRE2 pattern (UTF mode, JIT); "" = none */
  KR_CFG_T_ENUM,
  KR_CFG_T_LIST,       /* strings: comma-separated and repeatable */
  KR_CFG_T_REGEX_LIST, /* PCRE2 patterns: one per line, repeatable */
};

/* Flags */
#define KR_CFG_HOST 1u /* may be overridden in [host "..."] sections */

/*
 * X(ID, "section", "key", TYPE, FLAGS, "default", "range or choices",
 *   CHECK, "documentation")
 * range is "min..max" in the key's own units for numbers, "a|b|c" for
 * enums, "" for none. CHECK names an extra validator in config_schema.c
 * (NONE for none).
 */
#define KR_CFG_KEYS(X)                                                                 \
  X(CRAWL_NAME, "crawl", "name", STRING, 0, "kria", "", NAME,                          \
    "Name of this crawl, used in WARC file names and reports (letters, digits, . _ -).") \
  X(CRAWL_SEEDS, "crawl", "seeds", STRING, 0, "", "", NONE,                             \
    "Seeds file: one URL per line, # starts a comment; empty = no seeds file (an existing crawl goes on with the seeds in force, kept in its state database).")        \
  X(CRAWL_STATE_DIR, "crawl", "state-dir", STRING, 0, "state", "", NONEMPTY,            \
    "Directory of the state database and logs (created when missing).")                \
  X(CRAWL_WARC_DIR, "crawl", "warc-dir", STRING, 0, "", "", NONE,                       \
    "Directory of the WARC files; empty = <state-dir>/warcs.")                          \
  X(CRAWL_USER_AGENT, "crawl", "user-agent", STRING, 0,                                 \
    "Mozilla/5.0 (compatible; kria/0.1.0)", "", USER_AGENT,                             \
    "User-Agent header; contact-url goes in as \" +URL\" before its last ')'.")        \
  X(CRAWL_CONTACT_URL, "crawl", "contact-url", STRING, 0, "", "", CONTACT,              \
    "Where site owners reach the operator (http, https or mailto URL); please set it.") \
  X(CRAWL_REVISIT, "crawl", "revisit", BOOL, 0, "true", "", NONE,                       \
    "true: revisit every URI forever; false: visit each in-scope URI once, then exit.") \
  X(CRAWL_DEFAULT_WAIT, "crawl", "default-wait", DURATION, KR_CFG_HOST, "1d", "1s..3650d", \
    NONE, "Wait before revisiting a URI that no [wait] evaluator handles.")             \
  X(CRAWL_PREFERENCE_EMBED_HOPS, "crawl", "preference-embed-hops", INT, 0, "0", "0..100", \
    NONE, "Embeds this many hops or fewer from their page are scheduled early (0 = off).") \
  X(CRAWL_LOG_LEVEL, "crawl", "log-level", ENUM, 0, "notice",                           \
    "error|warn|notice|info|debug", NONE, "Least important diagnostic shown on stderr.") \
  X(CRAWL_PROGRESS_INTERVAL, "crawl", "progress-interval", DURATION, 0, "1m", "0..1d", NONE, \
    "A progress-statistics line on stderr this often (0 = none).")                     \
  X(CRAWL_RETIRE_AFTER, "crawl", "retire-after", INT, KR_CFG_HOST, "3", "0..1000", NONE,   \
    "A URI answering 404 or 410 this many visits in a row is retired: kept, revisited after retired-wait (0 = never retire).") \
  X(CRAWL_RETIRED_WAIT, "crawl", "retired-wait", DURATION, KR_CFG_HOST, "90d", "0..3650d", \
    NONE, "Wait before revisiting a retired URI (0 = never); an answer other than 404/410 ends its retirement.") \
  X(CRAWL_RETIRE_UNLINKED_AFTER, "crawl", "retire-unlinked-after", DURATION, 0, "0",    \
    "0..3650d", NONE,                                                                    \
    "Retire a URI no parsed page has linked for this long; seeds never (0 = off; keep it above the longest max-wait).") \
                                                                                       \
  X(DNS_SERVERS, "dns", "servers", LIST, 0, "", "", ADDRESS,                            \
    "Name servers as IP, IP:PORT or [IPv6]:PORT; empty = those of /etc/resolv.conf.")  \
  X(DNS_HOSTS_FILE, "dns", "hosts-file", STRING, 0, "/etc/hosts", "", NONE,             \
    "Hosts file consulted before DNS; empty = consult none.")                           \
  X(DNS_MIN_TTL, "dns", "min-ttl", DURATION, 0, "1m", "0..7d", NONE,                    \
    "Answers are cached at least this long, whatever their TTL.")                       \
  X(DNS_MAX_TTL, "dns", "max-ttl", DURATION, 0, "1d", "1s..30d", NONE,                  \
    "Answers are cached at most this long, whatever their TTL.")                        \
  X(DNS_NEGATIVE_TTL, "dns", "negative-ttl", DURATION, 0, "5m", "0..1d", NONE,          \
    "Names that do not exist or have no address are remembered this long.")             \
  X(DNS_TIMEOUT, "dns", "timeout", DURATION, 0, "2s", "10ms..1m", NONE,                 \
    "Time allowed for one DNS try.")                                                     \
  X(DNS_TRIES, "dns", "tries", INT, 0, "2", "1..10", NONE,                              \
    "DNS tries per name server before a lookup fails.")                                  \
  X(DNS_FAMILY, "dns", "family", ENUM, 0, "any", "any|ipv4|ipv6", NONE,                 \
    "Addresses looked up: A and AAAA (any), A only or AAAA only.")                      \
                                                                                       \
  X(HTTP_TIMEOUT_CONNECT, "http", "timeout-connect", DURATION, KR_CFG_HOST, "10s",      \
    "10ms..10m", NONE, "Time allowed to connect (TCP and TLS handshake).")               \
  X(HTTP_TIMEOUT_FIRST_BYTE, "http", "timeout-first-byte", DURATION, KR_CFG_HOST, "30s", \
    "10ms..10m", NONE, "Time allowed from sending the request to the first response byte.") \
  X(HTTP_TIMEOUT_IDLE, "http", "timeout-idle", DURATION, KR_CFG_HOST, "30s", "10ms..10m", \
    NONE, "Longest silence allowed while a response arrives.")                          \
  X(HTTP_TIMEOUT_TOTAL, "http", "timeout-total", DURATION, KR_CFG_HOST, "20m", "1s..1d", \
    NONE, "Longest time one fetch may take, connect to last byte.")                     \
  X(HTTP_MAX_HEADER_BYTES, "http", "max-header-bytes", SIZE, KR_CFG_HOST, "64KiB",      \
    "1KiB..16MiB", NONE, "Largest response header; a bigger one fails the fetch.")      \
  X(HTTP_MAX_BODY_BYTES, "http", "max-body-bytes", SIZE, KR_CFG_HOST, "100MiB",         \
    "1KiB..1TiB", NONE, "Body bytes kept after decoding; the rest is cut and the record marked truncated.") \
  X(HTTP_MAX_RATIO, "http", "max-ratio", INT, KR_CFG_HOST, "100", "2..1000000", NONE,   \
    "Largest decoded/encoded size ratio of a compressed body (gzip bombs).")            \
  X(HTTP_DRAIN_THRESHOLD, "http", "drain-threshold", SIZE, KR_CFG_HOST, "16KiB",        \
    "0..16MiB", NONE, "An aborted response with at most this much left is drained to keep the connection.") \
  X(HTTP_TLS_VERIFY, "http", "tls-verify", ENUM, KR_CFG_HOST, "record", "record|require|off", \
    NONE, "Certificates: record the verification result, require a valid one, or skip the check.") \
  X(HTTP_CONDITIONAL_REQUESTS, "http", "conditional-requests", BOOL, KR_CFG_HOST, "true", \
    "", NONE, "Send If-None-Match / If-Modified-Since when an earlier visit left validators.") \
  X(HTTP_CONNECTIONS_PER_HOST, "http", "connections-per-host", INT, KR_CFG_HOST, "0",   \
    "0..256", NONE, "Connections open at once to one host, busy or idle (0 = host-valence).") \
  X(HTTP_MAX_CONNECTIONS, "http", "max-connections", INT, 0, "4096", "1..1000000", NONE, \
    "Fetches (busy connections) at once in the whole crawl.")                            \
  X(HTTP_IDLE_CONNECTIONS, "http", "idle-connections", INT, 0, "16384", "0..1000000", NONE, \
    "Idle keep-alive connections kept for reuse in the whole crawl, at most one per host and 15 s each; lowered to fit the descriptor limit.") \
  X(HTTP_SETUPS_PER_ADDRESS, "http", "setups-per-address", INT, 0, "16", "0..10000", NONE, \
    "Connections set up (TCP connect and TLS handshake) at once to one server IP and port; more wait their turn (0 = no bound).") \
  X(HTTP_TLS_SESSIONS, "http", "tls-sessions", INT, 0, "20000", "0..1000000", NONE,     \
    "TLS sessions kept in memory for resumption, one per host:port, least recently used out (0 = none).") \
  X(HTTP_ALLOW_PRIVATE_ADDRESSES, "http", "allow-private-addresses", BOOL, 0, "false", "", \
    NONE, "Connect to loopback, private, link-local, multicast and reserved addresses too (tests, demo, intranets).") \
  X(HTTP_ALLOW_ADDRESSES, "http", "allow-addresses", LIST, 0, "", "", CIDR,                \
    "CIDRs connected to despite the address policy, e.g. 10.1.0.0/16, fd00::/8.")        \
  X(HTTP_DENY_ADDRESSES, "http", "deny-addresses", LIST, 0, "", "", CIDR,                  \
    "CIDRs never connected to, before any allow rule.")                                  \
                                                                                       \
  X(POLITENESS_DELAY_FACTOR, "politeness", "delay-factor", FLOAT, KR_CFG_HOST, "5",     \
    "0..1000", NONE, "Delay between two fetches from a host: this times the last fetch's duration, clamped.") \
  X(POLITENESS_MIN_DELAY, "politeness", "min-delay", DURATION, KR_CFG_HOST, "2s", "0..1d", \
    NONE, "Shortest politeness delay between two fetches from a host.")                                                \
  X(POLITENESS_MAX_DELAY, "politeness", "max-delay", DURATION, KR_CFG_HOST, "5s", "0..1d", \
    NONE, "Longest politeness delay (a robots.txt Crawl-delay may exceed it).")             \
  X(POLITENESS_RESPECT_CRAWL_DELAY_UP_TO, "politeness", "respect-crawl-delay-up-to",    \
    DURATION, KR_CFG_HOST, "300s", "0..1d", NONE,                                        \
    "robots.txt Crawl-delay is honoured up to this long (0 = ignore Crawl-delay).")      \
  X(POLITENESS_HOST_VALENCE, "politeness", "host-valence", INT, KR_CFG_HOST, "1", "1..64", \
    NONE, "Fetches from one host (queue) at the same time.")                             \
  X(POLITENESS_RETRY_DELAY, "politeness", "retry-delay", DURATION, KR_CFG_HOST, "900s", \
    "1s..30d", NONE, "Wait before retrying a URI after a retryable failure (DNS, connect, timeout).") \
  X(POLITENESS_MAX_RETRIES, "politeness", "max-retries", INT, KR_CFG_HOST, "30",        \
    "0..1000", NONE, "Retries of a URI before it counts as failed.")                     \
  X(POLITENESS_MAX_BACKOFF, "politeness", "max-backoff", DURATION, KR_CFG_HOST, "1h",   \
    "1s..30d", NONE, "Cap on the growing back-off of a URI answering 429/503 and of a host failing (robots.txt, DNS, connect, or several URIs in a row); Retry-After is honoured up to it, and a host that failed is tried again within it.") \
  X(POLITENESS_REVISIT_FAILED, "politeness", "revisit-failed", BOOL, KR_CFG_HOST, "true", \
    "", NONE, "Try failed URIs again: after failed-wait, or with their host's back-off when the host failed (false: never, as in the thesis).") \
  X(POLITENESS_FAILED_WAIT, "politeness", "failed-wait", DURATION, KR_CFG_HOST, "1d",    \
    "1s..3650d", NONE, "Wait before a URI that failed on its own (retries used up, or a permanent error) is tried again.") \
  X(POLITENESS_QUEUE_ASSIGNMENT, "politeness", "queue-assignment", ENUM, 0, "host",     \
    "host|domain|ip", NONE, "What one queue (and its politeness) covers: a host, a registrable domain, an IP (a host joins its address's queue once it has answered).") \
                                                                                       \
  X(SCOPE_MODE, "scope", "mode", ENUM, 0, "host", "host|domain|path|surt", NONE,        \
    "In scope: a seed's host, its registrable domain, its path and below, or surt-prefixes only.") \
  X(SCOPE_SURT_PREFIXES, "scope", "surt-prefixes", LIST, 0, "", "", SURT,               \
    "SURT prefixes in scope in every mode, e.g. http://(org,example,")                 \
  X(SCOPE_MAX_LINK_HOPS, "scope", "max-link-hops", INT, 0, "20", "0..10000", NONE,       \
    "Most links (L hops) from a seed to a URI (0 = seeds only).")                        \
  X(SCOPE_MAX_TRANS_HOPS, "scope", "max-trans-hops", INT, 0, "2", "0..100", NONE,        \
    "Embeds and redirects followed out of scope, hops in a row.")                        \
  X(SCOPE_MAX_PATH_DEPTH, "scope", "max-path-depth", INT, KR_CFG_HOST, "20", "1..1000", \
    NONE, "Most path segments in a URL.")                                                \
  X(SCOPE_MAX_REPEATED_SEGMENTS, "scope", "max-repeated-segments", INT, KR_CFG_HOST, "2", \
    "0..1000", NONE, "A path with one segment repeated more often than this in a row is a trap (0 = off).") \
  X(SCOPE_MAX_URL_LENGTH, "scope", "max-url-length", INT, KR_CFG_HOST, "2083", "16..65536", \
    NONE, "Longest URL in scope, in bytes.")                                             \
  X(SCOPE_INCLUDE, "scope", "include", REGEX_LIST, KR_CFG_HOST, "", "", NONE,            \
    "URLs matching one of these PCRE2 patterns are in scope (one per line, repeatable).") \
  X(SCOPE_EXCLUDE, "scope", "exclude", REGEX_LIST, KR_CFG_HOST, "", "", NONE,            \
    "URLs matching one of these are out of scope, whatever else matches.")              \
  X(SCOPE_ALLOW_CHANGE, "scope", "allow-change", BOOL, 0, "false", "", NONE,             \
    "A start or reload may put out of scope hosts that have URIs in the state database (false: refused, naming them; kria crawl --allow-scope-change allows it for one start).") \
                                                                                       \
  X(LIMITS_MAX_BYTES_DOWNLOAD, "limits", "max-bytes-download", SIZE, 0, "0", "0..1024TiB", \
    NONE, "Stop the crawl after downloading this much (0 = no limit).")                  \
  X(LIMITS_MAX_DOCUMENT_DOWNLOAD, "limits", "max-document-download", INT, 0, "0",        \
    "0..1000000000000", NONE, "Stop the crawl after downloading this many documents: responses of any status (0 = no limit).") \
  X(LIMITS_MAX_TIME, "limits", "max-time", DURATION, 0, "0", "0..3650d", NONE,           \
    "Stop the crawl after running this long (0 = no limit).")                           \
  X(LIMITS_PERIOD, "limits", "period", DURATION, 0, "0", "0..3650d", NONE,                \
    "Count max-bytes-download and max-document-download per period (UTC, e.g. 1d) and pause until the next instead of stopping (0 = whole run).") \
  X(LIMITS_MAX_URIS_PER_HOST, "limits", "max-uris-per-host", INT, KR_CFG_HOST, "100000",  \
    "0..1000000000000", NONE,                                                            \
    "Distinct URIs one host queue may hold; new links past it are refused and counted (0 = no limit).") \
                                                                                       \
  X(ROBOTS_OBEY, "robots", "obey", BOOL, KR_CFG_HOST, "true", "", NONE,                 \
    "Obey robots.txt (set false only with the site owner's permission).")               \
  X(ROBOTS_AGENT, "robots", "agent", STRING, 0, "kria", "", TOKEN,                       \
    "Product token matched against robots.txt User-agent lines (letters, _ and -).")    \
  X(ROBOTS_EXPIRY, "robots", "expiry", DURATION, KR_CFG_HOST, "1h", "1m..30d", NONE,     \
    "robots.txt is fetched again after this long.")                                     \
  X(ROBOTS_MAX_SIZE, "robots", "max-size", SIZE, 0, "500KiB", "500KiB..64MiB", NONE,     \
    "Bytes of robots.txt parsed; the rest is ignored (RFC 9309: at least 500 KiB).")   \
  X(ROBOTS_EXEMPT, "robots", "exempt", REGEX_LIST, KR_CFG_HOST, "", "", NONE,            \
    "Path patterns fetched although robots.txt disallows them, e.g. images (repeatable).") \
                                                                                       \
  X(CANON_STRIP_USERINFO, "canon", "strip-userinfo", BOOL, 0, "true", "", NONE,          \
    "Drop user:password@ from URLs.")                                                   \
  X(CANON_STRIP_SESSION_IDS, "canon", "strip-session-ids", BOOL, 0, "true", "", NONE,    \
    "Drop jsessionid, phpsessid, sid, aspsessionid, cfid and cftoken parameters.")       \
  X(CANON_STRIP_WWW, "canon", "strip-www", BOOL, 0, "false", "", NONE,                   \
    "Treat www.example.org and example.org (and www2. ...) as the same URL.")            \
  X(CANON_SORT_QUERY, "canon", "sort-query", BOOL, 0, "false", "", NONE,                 \
    "Sort query parameters, so ?b&a and ?a&b are the same URL.")                        \
  X(CANON_TIDY_QUERY, "canon", "tidy-query", BOOL, 0, "true", "", NONE,                  \
    "Drop empty query parameters and an empty query (\"x?\").")                         \
  X(CANON_STRIP, "canon", "strip", REGEX_LIST, 0, "", "", NONE,                          \
    "Strip rules: a pattern matching the whole URL; the URL becomes its groups 1 and 2.") \
                                                                                       \
  X(STATUS_LISTEN, "status", "listen", STRING, 0, "", "", LISTEN,                        \
    "Address of the status console, e.g. 127.0.0.1:8080 or [::1]:8080; empty = off.")  \
  X(STATUS_TOKEN, "status", "token", STRING, 0, "", "", SECRET,                          \
    "Bearer token for control requests (16+ printable characters); without one they are refused and listen must be a loopback address.") \
  X(STATUS_MAX_CLIENTS, "status", "max-clients", INT, 0, "16", "1..1024", NONE,           \
    "Status connections served at once; then silent ones yield, one waits for the token.") \
                                                                                       \
  X(WEBSUB_CALLBACK, "websub", "callback", STRING, 0, "", "", CALLBACK,                  \
    "Public URL at which hubs reach the status server's /websub route, e.g. http://HOST:PORT/websub: subscribe to the WebSub hubs feeds advertise; empty = off.") \
  X(WEBSUB_LEASE, "websub", "lease", DURATION, 0, "10d", "1m..365d", NONE,               \
    "Lease asked of a hub (hub.lease_seconds); the hub decides, and kria renews before the granted lease ends.") \
  X(WEBSUB_MAX_SUBSCRIPTIONS, "websub", "max-subscriptions", INT, 0, "1000", "1..1000000", \
    NONE, "Topics subscribed at most; feeds found beyond are read as before.")            \
  X(WEBSUB_VERIFY_TIMEOUT, "websub", "verify-timeout", DURATION, 0, "10m", "1s..1d", NONE,  \
    "A subscription request the hub has not verified this long after is sent again, each time after twice the wait.") \
  X(WEBSUB_VERIFY_ATTEMPTS, "websub", "verify-attempts", INT, 0, "6", "1..100", NONE,        \
    "Requests without a verification before a subscription is given up (logged, counted, kept so it is not asked again).") \
                                                                                       \
  X(CLUSTER_REDIS, "cluster", "redis", STRING, 0, "", "", REDIS,                         \
    "Redis of a crawl shared by several kria instances: HOST:PORT, [IPv6]:PORT or a unix socket path; empty = no cluster, kria crawls alone.") \
  X(CLUSTER_NODE, "cluster", "node", STRING, 0, "", "", MEMBER,                           \
    "This instance's name among cluster.nodes (letters, digits, '.', '_', '-').")        \
  X(CLUSTER_NODES, "cluster", "nodes", LIST, 0, "", "", MEMBER,                           \
    "Every member's name, this one's included, the same list on every member: each host belongs to one of them. The first list: once kria cluster rebalance changed the members, the cluster's list in Redis is in force.") \
  X(CLUSTER_PREFIX, "cluster", "prefix", STRING, 0, "kria", "", NAME,                     \
    "Names the shared crawl in Redis: the member streams are PREFIX:links:NODE.")         \
  X(CLUSTER_OUTBOX_MAX, "cluster", "outbox-max", INT, 0, "100000", "1..100000000", NONE, \
    "Links for other members kept while Redis is away, at most; at the bound new fetches wait until Redis takes them.") \
  X(CLUSTER_SHARED_DEDUP, "cluster", "shared-dedup", BOOL, 0, "false", "", NONE,        \
    "Share the digest index through Redis: a payload another member archived is written as a revisit of its record.") \
  X(CLUSTER_SHARED_DEDUP_TTL, "cluster", "shared-dedup-ttl", DURATION, 0, "30d", "1h..3650d", \
    NONE, "A payload shared in Redis is forgotten this long after it was first archived.") \
  X(CLUSTER_SHARED_DEDUP_WAIT, "cluster", "shared-dedup-wait", DURATION, 0, "250ms",   \
    "1ms..10s", NONE, "A visit waits this long at most for Redis's answer, then trusts the local index alone.") \
                                                                                       \
  X(STORE_COMMIT_INTERVAL, "store", "commit-interval", DURATION, 0, "50ms", "1ms..10s",  \
    NONE, "Finished URIs are committed to the state database at least this often.")   \
  X(STORE_COMMIT_UPDATES, "store", "commit-updates", INT, 0, "1000", "1..1000000", NONE, \
    "Commit as soon as this many updates are pending.")                                 \
                                                                                       \
  X(WARC_ENABLED, "warc", "enabled", BOOL, 0, "true", "", NONE,                         \
    "Write WARC files (into crawl.warc-dir).")                                          \
  X(WARC_PREFIX, "warc", "prefix", STRING, 0, "kria", "", NAME,                          \
    "File names are PREFIX-YYYYMMDDhhmmssSSS-SERIAL-HOST.warc.gz (HOST-NODE with [cluster]).")                     \
  X(WARC_COMPRESS, "warc", "compress", ENUM, 0, "gzip", "gzip|none", NONE,               \
    "gzip: each record is its own gzip member (.warc.gz); none: plain .warc.")         \
  X(WARC_LEVEL, "warc", "level", INT, 0, "1", "1..9", NONE,                              \
    "gzip level; 1 is the fastest (ISA-L's igzip, bench/RESULTS.md); 2-9 use libdeflate: smaller files, more CPU.") \
  X(WARC_MAX_SIZE, "warc", "max-size", SIZE, 0, "1GiB", "1MiB..1TiB", NONE,              \
    "A file is closed and a new one begun past this size.")                             \
  X(WARC_DURABILITY, "warc", "durability", ENUM, 0, "batch", "none|batch|record", NONE,  \
    "When records reach the disk: none (the OS decides), batch (fdatasync before each store commit, in a worker thread while the commit waits), record (after each record).") \
  X(WARC_WRITE_REQUEST, "warc", "write-request", BOOL, 0, "true", "", NONE,              \
    "A request record (the request as sent) with each response or revisit.")           \
  X(WARC_WRITE_METADATA, "warc", "write-metadata", BOOL, 0, "true", "", NONE,            \
    "A metadata record per fetch: via, hops, outlinks and the adaptive-revisit notes.") \
  X(WARC_WRITE_DNS, "warc", "write-dns", BOOL, 0, "false", "", NONE,                     \
    "A dns: record of each host's addresses, once per DNS TTL.")                        \
  X(WARC_WRITE_VOLATILE, "warc", "write-volatile", ENUM, 0, "full", "full|skip", NONE,   \
    "Unchanged by the stripped change digest but a different payload: full stores a response, skip stores nothing.") \
  X(WARC_CHUNKED, "warc", "chunked", ENUM, 0, "keep", "keep|dechunk", NONE,              \
    "Chunked responses: keep stores the bytes as received, dechunk the body without its chunk framing (Transfer-Encoding renamed X-Orig-Transfer-Encoding). WARC-Payload-Digest is always the SHA-1 of the de-chunked body (WARC 1.1 section 5.9); only with dechunk do readers that hash the raw bytes (Python warcio) agree. README: chunked responses.") \
  X(WARC_RETRY_INTERVAL, "warc", "retry-interval", DURATION, 0, "10s", "100ms..1h", NONE, \
    "After a full disk (or a write error) the crawl holds new fetches and tries again this often.") \
  X(WARC_OPERATOR, "warc", "operator", STRING, 0, "", "", NONE,                          \
    "Who runs the crawl, for the warcinfo records; empty = crawl.contact-url.")         \
                                                                                       \
  X(ADAPTIVE_MIDFETCH, "adaptive", "midfetch", BOOL, KR_CFG_HOST, "true", "", NONE,     \
    "Compare ETag and Last-Modified with the last visit's when the headers arrive; stop the download when they predict no change.") \
  X(ADAPTIVE_MIDFETCH_SCHEME, "adaptive", "midfetch-scheme", ENUM, KR_CFG_HOST, "either", \
    "timestamp|etag|both|either", NONE,                                                 \
    "Thesis Table 1: download unless Last-Modified / ETag / one of them / both predict no change.") \
  X(ADAPTIVE_ETAG_COMPARE, "adaptive", "etag-compare", ENUM, KR_CFG_HOST, "exact",       \
    "exact|strong|weak", NONE,                                                          \
    "ETag comparison: exact text (W/ included), RFC strong (weak tags say nothing) or RFC weak.") \
  X(ADAPTIVE_TRUST_SAMPLE, "adaptive", "trust-sample", FLOAT, KR_CFG_HOST, "0.05", "0..1", \
    NONE, "Share of visits downloaded in full although validators say unchanged, to check them.") \
  X(ADAPTIVE_TRUST_SAMPLE_MIN, "adaptive", "trust-sample-min", FLOAT, KR_CFG_HOST, "0.01", \
    "0..1", NONE, "Floor of the sampled share while a host's validators keep being confirmed.") \
  X(ADAPTIVE_TRUST_SAMPLE_HALVING, "adaptive", "trust-sample-halving", INT, KR_CFG_HOST,  \
    "20", "0..1000000", NONE,                                                           \
    "Consecutive confirmations (right \"unchanged\" predictions checked) that halve the sampled share; a miss restores it; 0 = never.") \
  X(ADAPTIVE_TRUST_MISSES, "adaptive", "trust-misses", INT, KR_CFG_HOST, "1", "1..1000", \
    NONE, "Validator misses (unchanged said, content changed) that make a host distrusted.") \
  X(ADAPTIVE_DISTRUST_PERIOD, "adaptive", "distrust-period", DURATION, KR_CFG_HOST, "7d", \
    "1s..3650d", NONE, "How long a host whose validators lied is not trusted (full downloads).") \
  X(ADAPTIVE_TRUST_PROBATION, "adaptive", "trust-probation", INT, KR_CFG_HOST, "3",       \
    "0..1000", NONE, "Verified right \"unchanged\" predictions before a host's validators are first used.") \
  X(ADAPTIVE_DIGEST_STRIP, "adaptive", "digest-strip", REGEX_LIST, KR_CFG_HOST, "", "",    \
    NONE, "Volatile sections (PCRE2, matched byte-wise) replaced by a space before the change digest.") \
  X(ADAPTIVE_DIGEST_STRIP_URL, "adaptive", "digest-strip-url", REGEX, KR_CFG_HOST, "", "", \
    NONE, "Strip only in URLs matching this pattern; empty = every URL of the host.")    \
  X(ADAPTIVE_DIGEST_STRIP_MAX_SIZE, "adaptive", "digest-strip-max-size", SIZE, KR_CFG_HOST, \
    "1MiB", "1KiB..1GiB", NONE, "Larger bodies get the plain change digest (and \"stripSkippedSize\").") \
  X(ADAPTIVE_DEDUPE, "adaptive", "dedupe", BOOL, 0, "true", "", NONE,                    \
    "Recognise a payload already stored under another URL (identical-payload-digest revisit).") \
  X(ADAPTIVE_REFRESH_EMBEDS, "adaptive", "refresh-embeds", BOOL, KR_CFG_HOST, "false", "", \
    NONE, "When a page changed, fetch its embeds (images, styles, scripts) again at once.") \
  X(ADAPTIVE_FEEDS, "adaptive", "feeds", BOOL, KR_CFG_HOST, "true", "", NONE,            \
    "Read RSS, Atom and XML sitemaps: new or updated items are fetched at once.")        \
  X(ADAPTIVE_ROBOTS_SITEMAPS, "adaptive", "robots-sitemaps", BOOL, KR_CFG_HOST, "true", "", \
    NONE, "Queue the sitemaps named by robots.txt Sitemap lines.")                       \
  X(ADAPTIVE_FEED_PULL_MAX, "adaptive", "feed-pull-max", INT, KR_CFG_HOST, "100",        \
    "0..100000", NONE, "Undated items a changed feed or sitemap pulls forward (dated ones: those updated since).") \
  X(ADAPTIVE_SIGNAL_PRECISION, "adaptive", "signal-precision", FLOAT, KR_CFG_HOST, "0.6",   \
    "0..1", NONE, "A dated sitemap or feed item pulls its page forward when the host's signals' measured precision (a lower bound) reaches this.") \
  X(ADAPTIVE_SIGNAL_RECALL, "adaptive", "signal-recall", FLOAT, KR_CFG_HOST, "0.6", "0..1", \
    NONE, "poisson: a page listed with dates waits longer when its host's signals' measured recall (a lower bound) reaches this.") \
  X(ADAPTIVE_SIGNAL_MAX_STRETCH, "adaptive", "signal-max-stretch", FLOAT, KR_CFG_HOST, "8", \
    "1..100", NONE, "poisson: at most this times the regular wait for a page whose host's signals are trusted (1 = off).") \
  X(ADAPTIVE_SIGNAL_PROBATION, "adaptive", "signal-probation", INT, KR_CFG_HOST, "10",     \
    "0..1000000", NONE, "Verified visits of a host's signals before its measured precision and recall decide (dated items pull until then).") \
  X(ADAPTIVE_HINT_CHANGEFREQ, "adaptive", "hint-changefreq", BOOL, KR_CFG_HOST, "true", "", \
    NONE, "poisson: a sitemap changefreq replaces initial-wait in a URI's prior.")       \
  X(ADAPTIVE_HINT_LAST_MODIFIED, "adaptive", "hint-last-modified", BOOL, KR_CFG_HOST,    \
    "true", "", NONE, "poisson: responses without Last-Modified are assumed to change about twice as often.") \
  X(ADAPTIVE_HINT_DEPTH, "adaptive", "hint-depth-halving", FLOAT, KR_CFG_HOST, "0",       \
    "0..1000", NONE, "poisson: the prior change rate halves every this many hops from a seed (0 = off).") \
  X(ADAPTIVE_BUDGET_UTILISATION, "adaptive", "budget-utilisation", FLOAT, KR_CFG_HOST,   \
    "1", "0.01..1", NONE, "Share of a host's politeness capacity (valence / (fetch + delay)) its planned revisits should take (poisson's allocator, multiplicative's capacity plan); below 1 leaves room for new URIs.") \
  X(ADAPTIVE_CAPACITY_PLAN, "adaptive", "capacity-plan", BOOL, KR_CFG_HOST, "true", "",   \
    NONE, "multiplicative: waits shorter than the host's capacity allows are raised to one floor, so its revisits fit its politeness instead of leaving it overdue for ever; false = the thesis' waits as they are.") \
  X(ADAPTIVE_LEARNED_STATE_INTERVAL, "adaptive", "learned-state-interval", DURATION, 0, "60s",  \
    "1s..1d", NONE, "How often at most each host's learned state (poisson's allocator, the capacity plan, the validator-trust run, the informed priors' pool, the change signals' reliability) is written to the state database; a kill -9 loses at most this much of it, a clean stop nothing.") \
  X(ADAPTIVE_INFORMED_PRIORS, "adaptive", "informed-priors", BOOL, KR_CFG_HOST, "true", "", \
    NONE, "A new URI's prior change rate is learned from its host's URIs of the same path template and content type (poisson: the prior; multiplicative: the initial wait); false = the evaluator's initial-wait for every URI.") \
  X(ADAPTIVE_OBJECTIVE, "adaptive", "objective", ENUM, KR_CFG_HOST, "versions",          \
    "versions|freshness|harmonic", NONE,                                                \
    "poisson: what the host's allocator shares its budget for: versions captured (visits proportional to the change rate), freshness (Cho's average freshness) or harmonic (the harmonic staleness of Kolobov et al.: the n-th missed change costs 1/n).")

/* Keys of [wait "NAME"] sections, same columns (section "wait"); every key
 * may be overridden per host as wait.NAME.key. The defaults are those of
 * the thesis' catch-all evaluator (Figure 12), except the policy: poisson
 * captured more versions than the thesis' multiplicative on every world
 * kria simulate measured (bench/RESULTS.md); the thesis' policy stays one
 * key away, policy = multiplicative. */
#define KR_CFG_WAIT_KEYS(X)                                                            \
  X(CONTENT_TYPE, "wait", "content-type", REGEX, KR_CFG_HOST, "", "", NONE,            \
    "Content types handled (PCRE2 on the Content-Type value); empty = all.")           \
  X(INITIAL_WAIT, "wait", "initial-wait", DURATION, KR_CFG_HOST, "1000s", "1s..3650d",  \
    NONE, "Wait after the first visit.")                                                \
  X(DEFAULT_WAIT, "wait", "default-wait", DURATION, KR_CFG_HOST, "3d", "1s..3650d",     \
    NONE, "Wait when the content state is unknown (no digest to compare).")            \
  X(MIN_WAIT, "wait", "min-wait", DURATION, KR_CFG_HOST, "1000s", "1s..3650d", NONE,    \
    "Shortest wait.")                                                                   \
  X(MAX_WAIT, "wait", "max-wait", DURATION, KR_CFG_HOST, "28d", "1s..3650d", NONE,      \
    "Longest wait: every URI is revisited at least this often.")                       \
  X(CHANGED_FACTOR, "wait", "changed-factor", FLOAT, KR_CFG_HOST, "1.5", "1..1000",     \
    NONE, "The wait is divided by this when the content changed.")                     \
  X(UNCHANGED_FACTOR, "wait", "unchanged-factor", FLOAT, KR_CFG_HOST, "1.5", "1..1000", \
    NONE, "The wait is multiplied by this when the content did not change.")           \
  X(USE_OVERDUE_TIME, "wait", "use-overdue-time", BOOL, KR_CFG_HOST, "false", "", NONE, \
    "Add the time a URI was overdue to its wait before applying the factor.")          \
  X(POLICY, "wait", "policy", ENUM, KR_CFG_HOST, "poisson", "multiplicative|poisson",    \
    NONE, "poisson: estimate each URI's change rate and share the host's politeness budget by it; multiplicative: the thesis' algorithm (divide the wait on a change, multiply it otherwise).")

typedef enum kr_cfg_key {
#define KR__CFG_ENUM(id, ...) KR_CFG_##id,
  KR_CFG_KEYS(KR__CFG_ENUM)
  KR_CFG__COUNT
} kr_cfg_key_t;
#undef KR__CFG_ENUM

typedef enum kr_cfg_wait_key {
#define KR__CFG_WENUM(id, ...) KR_CFG_WAIT_##id,
  KR_CFG_WAIT_KEYS(KR__CFG_WENUM)
#undef KR__CFG_WENUM
  KR_CFG_WAIT__COUNT
} kr_cfg_wait_key_t;

/* Choice indexes of the enum keys (kr_config_enum), in schema order; the
 * unit test checks them against the schema. */
enum { KR_CFG_FAMILY_ANY, KR_CFG_FAMILY_IPV4, KR_CFG_FAMILY_IPV6 };
enum { KR_CFG_TLS_RECORD, KR_CFG_TLS_REQUIRE, KR_CFG_TLS_OFF };
enum { KR_CFG_QUEUE_BY_HOST, KR_CFG_QUEUE_BY_DOMAIN, KR_CFG_QUEUE_BY_IP };
enum { KR_CFG_SCOPE_HOST, KR_CFG_SCOPE_DOMAIN, KR_CFG_SCOPE_PATH, KR_CFG_SCOPE_SURT };
enum { KR_CFG_POLICY_MULTIPLICATIVE, KR_CFG_POLICY_POISSON };
/* midfetch-scheme: index + 1 is the kr_vscheme_t (validators.h) */
enum { KR_CFG_VSCHEME_TIMESTAMP, KR_CFG_VSCHEME_ETAG, KR_CFG_VSCHEME_BOTH, KR_CFG_VSCHEME_EITHER };
enum { KR_CFG_ETAG_EXACT, KR_CFG_ETAG_STRONG, KR_CFG_ETAG_WEAK };
enum { KR_CFG_WARC_GZIP, KR_CFG_WARC_NONE };
enum { KR_CFG_DURABILITY_NONE, KR_CFG_DURABILITY_BATCH, KR_CFG_DURABILITY_RECORD };
enum { KR_CFG_VOLATILE_FULL, KR_CFG_VOLATILE_SKIP };
enum { KR_CFG_CHUNKED_KEEP, KR_CFG_CHUNKED_DECHUNK };
/* adaptive.objective: the index is the kr_plan_objective_t (estimate.h) */
enum { KR_CFG_OBJECTIVE_VERSIONS, KR_CFG_OBJECTIVE_FRESHNESS, KR_CFG_OBJECTIVE_HARMONIC };
/* log-level: use kr_config_str() and kr_log_level_parse(). */

/* Bounds on hostile configuration. */
#define KR_CONFIG_MAX_FILE (16u << 20)   /* bytes of one file or string */
#define KR_CONFIG_MAX_LINE 8192u         /* bytes of one line */
#define KR_CONFIG_MAX_HOSTS 65536u       /* [host] sections */
#define KR_CONFIG_MAX_WAITS 64u          /* [wait] sections */
#define KR_CONFIG_MAX_LIST 1024u         /* items of one list */
#define KR_CONFIG_MAX_REGEXES 10000u     /* patterns compiled (~25 us, ~2 KiB each) */
#define KR_CONFIG_MAX_ERRORS 50u         /* error messages kept */
/* PCRE2 limits of kr_config_regex_match (match and depth limits). */
#define KR_CONFIG_MATCH_LIMIT 100000u
#define KR_CONFIG_DEPTH_LIMIT 1000u

typedef struct kr_config kr_config_t;
typedef struct kr_config_view kr_config_view_t;

/* One wait evaluator as a view sees it (global values, or with the host's
 * overrides applied). Pointers live as long as the config. */
typedef struct kr_cfg_wait {
  const char *name;               /* the NAME of [wait "NAME"] */
  const pcre2_code *content_type; /* NULL = every content type */
  const char *content_type_src;   /* pattern text, "" when NULL */
  int64_t initial_wait_ms;
  int64_t default_wait_ms;        /* content state unknown */
  int64_t min_wait_ms;
  int64_t max_wait_ms;
  double changed_factor;          /* divide on change, >= 1 */
  double unchanged_factor;        /* multiply when unchanged, >= 1 */
  int use_overdue_time;           /* 0/1 */
  int policy;                     /* KR_CFG_POLICY_* */
} kr_cfg_wait_t;

/* ---- Loading -------------------------------------------------------- */

/* A config holding the defaults. Never NULL. */
kr_config_t *kr_config_new(void);
void kr_config_free(kr_config_t *cfg);

/* Read the INI file at path (a layer of its own). 0, or KR_ECONFIG when
 * this call recorded errors ("PATH:LINE: message"; an unreadable or too
 * large file is one error). Valid keys are applied even when others fail;
 * a caller should stop on KR_ECONFIG. KR_EINVAL (nothing done) after
 * kr_config_set or kr_config_finish: files first, then -o. */
int kr_config_load_file(kr_config_t *cfg, const char *path);
/* The same for len bytes of text (need not be NUL-terminated; a NUL byte
 * is an error); name stands for the file in messages (NULL = "<string>"). */
int kr_config_load_string(kr_config_t *cfg, const char *name, const char *text,
                          size_t len);
/* A command-line override "section.key=value" or "wait.NAME.key=value"
 * (-o), validated like a file line; messages read "-o: section.key: ...".
 * Overrides replace what files set; among themselves the last one wins
 * (list keys: the first replaces, the others append). 0 or KR_ECONFIG. */
int kr_config_set(kr_config_t *cfg, const char *assignment);
/* Cross-key checks once every layer is in (min <= max pairs, globally and
 * for every [host] section's chain; wait names used by [host] sections
 * exist; listen off loopback needs a token), then freeze the config. 0 or
 * KR_ECONFIG. Views and getters need a finished config. */
int kr_config_finish(kr_config_t *cfg);

/* Errors recorded so far (all layers), oldest first. Only the first
 * KR_CONFIG_MAX_ERRORS messages are kept; _total counts them all. */
size_t kr_config_error_count(const kr_config_t *cfg);
size_t kr_config_error_total(const kr_config_t *cfg);
const char *kr_config_error(const kr_config_t *cfg, size_t i);

/* ---- Views ------------------------------------------------------------ */

/* The global values. */
const kr_config_view_t *kr_config_global(const kr_config_t *cfg);
/* The view of host (ASCII, any case, trailing dot ignored; IP literals,
 * bracketed or not, match only their own section): a pointer owned by
 * the config, valid until kr_config_free, equal for hosts with the same
 * most specific [host] section (the global view when none applies).
 * Builds and caches the view on first use, hence the non-const config. */
const kr_config_view_t *kr_config_view(kr_config_t *cfg, const char *host,
                                       size_t len);
/* The domain of the most specific [host] section behind view, NULL for
 * the global view. */
const char *kr_config_view_host(const kr_config_view_t *view);

/* ---- Getters (type-checked by assert) ---------------------------------- */

int kr_config_bool(const kr_config_view_t *v, kr_cfg_key_t key);
int64_t kr_config_int(const kr_config_view_t *v, kr_cfg_key_t key);
uint64_t kr_config_size(const kr_config_view_t *v, kr_cfg_key_t key);    /* bytes */
int64_t kr_config_ms(const kr_config_view_t *v, kr_cfg_key_t key);      /* duration */
double kr_config_float(const kr_config_view_t *v, kr_cfg_key_t key);
int kr_config_enum(const kr_config_view_t *v, kr_cfg_key_t key);        /* index */
/* STRING value, or the name of an ENUM choice. Never NULL. */
const char *kr_config_str(const kr_config_view_t *v, kr_cfg_key_t key);
/* REGEX: compiled pattern, NULL when empty. */
const pcre2_code *kr_config_regex(const kr_config_view_t *v, kr_cfg_key_t key);
/* LIST and REGEX_LIST: items (pattern text for regexes) and, for
 * REGEX_LIST, compiled patterns. */
size_t kr_config_list_len(const kr_config_view_t *v, kr_cfg_key_t key);
const char *kr_config_list_item(const kr_config_view_t *v, kr_cfg_key_t key,
                                size_t i);
const pcre2_code *kr_config_list_regex(const kr_config_view_t *v,
                                       kr_cfg_key_t key, size_t i);
/* Line where the effective value was set: 0 for a default, -1 for -o. */
int kr_config_line(const kr_config_view_t *v, kr_cfg_key_t key);
/* User-Agent header with contact-url inserted. Never NULL. */
const char *kr_config_user_agent(const kr_config_t *cfg);

/* Wait evaluators of a view, most specific first. */
size_t kr_config_wait_count(const kr_config_view_t *v);
const kr_cfg_wait_t *kr_config_wait(const kr_config_view_t *v, size_t i);
/* Reusable PCRE2 match state (match data and a match context with the
 * limits above). Not shareable between threads; NULL wherever a matcher
 * is taken means "allocate one for this call" (about 100 ns more). */
typedef struct kr_config_matcher kr_config_matcher_t;
kr_config_matcher_t *kr_config_matcher_new(void);
void kr_config_matcher_free(kr_config_matcher_t *m);

/* The first evaluator whose content-type pattern matches content_type
 * (len bytes), or NULL when none does (use crawl.default-wait). */
const kr_cfg_wait_t *kr_config_wait_match(const kr_config_view_t *v, kr_config_matcher_t *m,
                                          const char *content_type, size_t len);

/* Match a pattern from the config against subject (len bytes): 1 match,
 * 0 no match (also for a subject that is not UTF-8), KR_ETOOBIG when the
 * match or depth limit was hit (treat as you would a failure, not as no
 * match). m may be NULL. */
int kr_config_regex_match(kr_config_matcher_t *m, const pcre2_code *re, const char *subject,
                          size_t len);

/* ---- Schema and values as text ---------------------------------------- */

/* Key id of "section.key", or -1. */
int kr_config_key_find(const char *dotted);
const char *kr_config_key_section(kr_cfg_key_t key);
const char *kr_config_key_name(kr_cfg_key_t key);
const char *kr_config_key_doc(kr_cfg_key_t key);
const char *kr_config_key_default(kr_cfg_key_t key);
enum kr_cfg_type kr_config_key_type(kr_cfg_key_t key);
unsigned kr_config_key_flags(kr_cfg_key_t key);
const char *kr_config_wait_key_name(kr_cfg_wait_key_t key);
const char *kr_config_wait_key_doc(kr_cfg_wait_key_t key);
const char *kr_config_wait_key_default(kr_cfg_wait_key_t key);
/* Name of choice i of an ENUM key; {NULL, 0} when out of range. */
kr_slice_t kr_config_enum_choice(kr_cfg_key_t key, int i);

/* Append the effective value of key in the loader's syntax: durations and
 * sizes in the largest exact units, LIST items joined by ", ", REGEX_LIST
 * items (one per line in a file) joined by "\n". 0 or KR_ETOOBIG. */
int kr_config_format(const kr_config_view_t *v, kr_cfg_key_t key, kr_buf_t *out);
/* The same for a key of wait evaluator i of the view. */
int kr_config_format_wait(const kr_config_view_t *v, size_t i,
                          kr_cfg_wait_key_t key, kr_buf_t *out);

/* Value parsers used by the loader, for other modules' option parsing.
 * 0 with the value, or KR_EINVAL (syntax), KR_ETOOBIG (overflow). */
int kr_config_parse_duration(const char *s, size_t n, int64_t *ms);
int kr_config_parse_size(const char *s, size_t n, uint64_t *bytes);
/* "90s" -> "1m30s", 0 -> "0"; writes at most len bytes (NUL included). */
void kr_config_format_duration(int64_t ms, char *out, size_t len);
void kr_config_format_size(uint64_t bytes, char *out, size_t len);

#endif
