/*
 * Address policy: which resolved addresses a crawler may connect to.
 * A page anyone can write may link to http://127.0.0.1:6379/,
 * http://169.254.169.254/latest/meta-data/ or a name whose DNS answer
 * points into the operator's own network; by default kria connects to
 * none of those. The check belongs on the address actually handed to
 * connect() (after DNS, for every connection: redirects, robots.txt), so
 * a name that resolves to a public address once and a private one the
 * next time (DNS rebinding) gains nothing.
 *
 * Classes (IANA special-purpose registries, RFC 6890 and successors):
 *   loopback     127/8, ::1
 *   private      10/8, 172.16/12, 192.168/16, fc00::/7 (ULA),
 *                fec0::/10 (old site-local), 64:ff9b:1::/48 (local NAT64)
 *   shared       100.64/10 (carrier-grade NAT)
 *   link-local   169.254/16 (cloud metadata at 169.254.169.254), fe80::/10
 *   multicast    224/4, ff00::/8
 *   unspecified  0/8 (Linux connects 0.0.0.0 to the local host), ::
 *   broadcast    255.255.255.255
 *   reserved     192.0.0/24, 192.0.2/24, 192.88.99/24, 198.18/15,
 *                198.51.100/24, 203.0.113/24, 240/4; IPv6 outside
 *                2000::/3 not named above, 100::/64, 2001::/23 (Teredo
 *                included), 2001:db8::/32, 3fff::/20
 *   public       everything else
 * An IPv6 address that carries an IPv4 one is judged by the IPv4 one:
 * mapped ::ffff:a.b.c.d (the kernel connects over IPv4), translated
 * ::ffff:0:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:AABB:CCDD::/48.
 *
 * Decision, first match wins: an address in the deny list (or whose
 * embedded IPv4 address is) is refused; one in the allow list is allowed;
 * one of any class but public is refused unless allow_private is set;
 * the rest is allowed.
 *
 * CIDR syntax: "a.b.c.d" or "a.b.c.d/N" (N 0..32; four decimal parts,
 * no leading zeros), "x:y::z" or "x:y::z/N" (N 0..128; optionally in
 * brackets), no zone ("%eth0"), no bits set past the prefix ("10.1.0.0/8"
 * is an error, not 10.0.0.0/8). Lists separate items with ',' or blanks.
 *
 * Pure: no loop, no globals. Addresses are handled in IPv6 form, an IPv4
 * address as ::ffff:a.b.c.d.
 */
#ifndef KRIA_ADDRPOLICY_H
#define KRIA_ADDRPOLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define KR_ADDRPOLICY_MAX_CIDRS 4096 /* per list */

typedef enum kr_addr_class {
  KR_ADDR_PUBLIC = 0,
  KR_ADDR_LOOPBACK,
  KR_ADDR_PRIVATE,
  KR_ADDR_SHARED,
  KR_ADDR_LINK_LOCAL,
  KR_ADDR_MULTICAST,
  KR_ADDR_UNSPECIFIED,
  KR_ADDR_BROADCAST,
  KR_ADDR_RESERVED,
} kr_addr_class_t;

/* Why a decision was taken. */
typedef enum kr_addr_rule {
  KR_ADDR_BY_CLASS = 0,   /* public: allowed; any other class: refused */
  KR_ADDR_BY_ALLOW_PRIVATE, /* not public, allowed by allow_private */
  KR_ADDR_BY_ALLOW_LIST,
  KR_ADDR_BY_DENY_LIST,
} kr_addr_rule_t;

typedef struct kr_cidr {
  uint8_t ip[16];   /* IPv6 form, bits past the prefix zero */
  uint8_t bits;     /* prefix length in the IPv6 form (IPv4 /N: 96 + N) */
} kr_cidr_t;

typedef struct kr_addr_verdict {
  int allowed;            /* 1 allowed, 0 refused */
  kr_addr_class_t cls;    /* class of the address (embedded IPv4 judged) */
  kr_addr_rule_t rule;
  const kr_cidr_t *cidr;  /* the list entry that matched, or NULL */
} kr_addr_verdict_t;

typedef struct kr_addrpolicy kr_addrpolicy_t;

/* Short name of a class: "public", "loopback", "private", "shared",
 * "link-local", "multicast", "unspecified", "broadcast", "reserved". */
const char *kr_addr_class_name(kr_addr_class_t cls);

/* Class of an address in IPv6 form (see above). */
kr_addr_class_t kr_addr_classify(const uint8_t ip[16]);

/* sa (AF_INET or AF_INET6) in IPv6 form. 0, or KR_EINVAL for another
 * family. */
int kr_addr_from_sockaddr(const struct sockaddr *sa, uint8_t ip[16]);

/* Parse one CIDR of n bytes (not NUL-terminated; no surrounding blanks).
 * 0, or KR_EINVAL with a message in err (errlen may be 0). */
int kr_cidr_parse(const char *s, size_t n, kr_cidr_t *out, char *err, size_t errlen);

/* Text of a CIDR ("10.0.0.0/8", "fc00::/7"; an IPv4 host as "1.2.3.4/32")
 * into buf (at least 64 bytes). Returns buf. */
const char *kr_cidr_format(const kr_cidr_t *c, char *buf, size_t len);

/* 1 when ip (IPv6 form) lies in c. */
int kr_cidr_contains(const kr_cidr_t *c, const uint8_t ip[16]);

/* A policy: allow_private 1 lets every class through (lists still
 * apply). Never NULL. */
kr_addrpolicy_t *kr_addrpolicy_new(int allow_private);
void kr_addrpolicy_free(kr_addrpolicy_t *p);
/* Add the CIDRs of a list (',' or blanks between items; NULL or "" adds
 * nothing) to the allow or deny list. 0, or KR_EINVAL with a message
 * naming the bad item in err (nothing of the list is added), or
 * KR_ETOOBIG past KR_ADDRPOLICY_MAX_CIDRS entries. */
int kr_addrpolicy_allow(kr_addrpolicy_t *p, const char *list, char *err, size_t errlen);
int kr_addrpolicy_deny(kr_addrpolicy_t *p, const char *list, char *err, size_t errlen);
/* A deep copy. */
kr_addrpolicy_t *kr_addrpolicy_dup(const kr_addrpolicy_t *p);
int kr_addrpolicy_allows_private(const kr_addrpolicy_t *p);

/* Decide for ip (IPv6 form). Returns 1 allowed, 0 refused; v (may be
 * NULL) says why. */
int kr_addrpolicy_check(const kr_addrpolicy_t *p, const uint8_t ip[16], kr_addr_verdict_t *v);
/* The same for a sockaddr; another family than AF_INET/AF_INET6 is
 * refused (class reserved). */
int kr_addrpolicy_check_sockaddr(const kr_addrpolicy_t *p, const struct sockaddr *sa,
                                 kr_addr_verdict_t *v);

#endif
