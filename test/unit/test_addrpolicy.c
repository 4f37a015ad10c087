/* The address policy: the class of every special range at its edges and
 * just outside them, IPv4 carried in IPv6 (mapped, translated, NAT64,
 * 6to4) judged by the IPv4 address, CIDR parsing with hostile input
 * (octal, overlong, zones, prefixes out of range, bits past the prefix,
 * NUL and control bytes, every truncation of valid text), lists (all or
 * nothing, the size cap), and the decision order deny > allow > class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kria/addrpolicy.h"
#include "kria/error.h"
#include "helpers.h"

/* IPv6 form of a literal (IPv4 as ::ffff:a.b.c.d). */
static void ip_of(const char *s, uint8_t ip[16]) {
  struct in_addr a4;
  if (inet_pton(AF_INET, s, &a4) == 1) {
    memset(ip, 0, 10);
    ip[10] = ip[11] = 0xff;
    memcpy(ip + 12, &a4, 4);
    return;
  }
  if (inet_pton(AF_INET6, s, ip) != 1) fail_msg("bad literal in test: %s", s);
}

static kr_addr_class_t cls(const char *s) {
  uint8_t ip[16];
  ip_of(s, ip);
  return kr_addr_classify(ip);
}

#define CLASS(s, want)                                                                       \
  do {                                                                                       \
    kr_addr_class_t got_ = cls(s);                                                           \
    if (got_ != (want))                                                                      \
      fail_msg("%s: %s, wanted %s", s, kr_addr_class_name(got_), kr_addr_class_name(want)); \
  } while (0)

static void ipv4_classes(void **state) {
  (void)state;
  CLASS("0.0.0.0", KR_ADDR_UNSPECIFIED);
  CLASS("0.255.255.255", KR_ADDR_UNSPECIFIED);
  CLASS("1.0.0.0", KR_ADDR_PUBLIC);
  CLASS("9.255.255.255", KR_ADDR_PUBLIC);
  CLASS("10.0.0.0", KR_ADDR_PRIVATE);
  CLASS("10.255.255.255", KR_ADDR_PRIVATE);
  CLASS("11.0.0.0", KR_ADDR_PUBLIC);
  CLASS("100.63.255.255", KR_ADDR_PUBLIC);
  CLASS("100.64.0.0", KR_ADDR_SHARED);
  CLASS("100.127.255.255", KR_ADDR_SHARED);
  CLASS("100.128.0.0", KR_ADDR_PUBLIC);
  CLASS("126.255.255.255", KR_ADDR_PUBLIC);
  CLASS("127.0.0.1", KR_ADDR_LOOPBACK);
  CLASS("127.0.0.2", KR_ADDR_LOOPBACK);
  CLASS("127.255.255.255", KR_ADDR_LOOPBACK);
  CLASS("128.0.0.0", KR_ADDR_PUBLIC);
  CLASS("169.253.255.255", KR_ADDR_PUBLIC);
  CLASS("169.254.0.0", KR_ADDR_LINK_LOCAL);
  CLASS("169.254.169.254", KR_ADDR_LINK_LOCAL);
  CLASS("169.255.0.0", KR_ADDR_PUBLIC);
  CLASS("172.15.255.255", KR_ADDR_PUBLIC);
  CLASS("172.16.0.0", KR_ADDR_PRIVATE);
  CLASS("172.31.255.255", KR_ADDR_PRIVATE);
  CLASS("172.32.0.0", KR_ADDR_PUBLIC);
  CLASS("192.0.0.1", KR_ADDR_RESERVED);
  CLASS("192.0.1.1", KR_ADDR_PUBLIC);
  CLASS("192.0.2.7", KR_ADDR_RESERVED);
  CLASS("192.0.3.0", KR_ADDR_PUBLIC);
  CLASS("192.88.99.1", KR_ADDR_RESERVED);
  CLASS("192.88.100.1", KR_ADDR_PUBLIC);
  CLASS("192.167.255.255", KR_ADDR_PUBLIC);
  CLASS("192.168.0.0", KR_ADDR_PRIVATE);
  CLASS("192.168.255.255", KR_ADDR_PRIVATE);
  CLASS("192.169.0.0", KR_ADDR_PUBLIC);
  CLASS("198.17.255.255", KR_ADDR_PUBLIC);
  CLASS("198.18.0.0", KR_ADDR_RESERVED);
  CLASS("198.19.255.255", KR_ADDR_RESERVED);
  CLASS("198.20.0.0", KR_ADDR_PUBLIC);
  CLASS("198.51.100.9", KR_ADDR_RESERVED);
  CLASS("203.0.113.9", KR_ADDR_RESERVED);
  CLASS("203.0.114.9", KR_ADDR_PUBLIC);
  CLASS("223.255.255.255", KR_ADDR_PUBLIC);
  CLASS("224.0.0.0", KR_ADDR_MULTICAST);
  CLASS("239.255.255.255", KR_ADDR_MULTICAST);
  CLASS("240.0.0.0", KR_ADDR_RESERVED);
  CLASS("255.255.255.254", KR_ADDR_RESERVED);
  CLASS("255.255.255.255", KR_ADDR_BROADCAST);
  CLASS("8.8.8.8", KR_ADDR_PUBLIC);
  CLASS("93.184.216.34", KR_ADDR_PUBLIC);
}

static void ipv6_classes(void **state) {
  (void)state;
  CLASS("::", KR_ADDR_UNSPECIFIED);
  CLASS("::1", KR_ADDR_LOOPBACK);
  CLASS("::2", KR_ADDR_RESERVED);
  CLASS("::127.0.0.1", KR_ADDR_RESERVED); /* IPv4-compatible, deprecated */
  CLASS("fe80::1", KR_ADDR_LINK_LOCAL);
  CLASS("febf:ffff::1", KR_ADDR_LINK_LOCAL);
  CLASS("fec0::1", KR_ADDR_PRIVATE);
  CLASS("fc00::1", KR_ADDR_PRIVATE);
  CLASS("fdff:ffff::1", KR_ADDR_PRIVATE);
  CLASS("fbff::1", KR_ADDR_RESERVED);
  CLASS("ff02::1", KR_ADDR_MULTICAST);
  CLASS("ff0e::1", KR_ADDR_MULTICAST);
  CLASS("100::1", KR_ADDR_RESERVED);
  CLASS("2001::1", KR_ADDR_RESERVED);         /* Teredo */
  CLASS("2001:1ff:ffff::1", KR_ADDR_RESERVED); /* end of 2001::/23 */
  CLASS("2001:200::1", KR_ADDR_PUBLIC);
  CLASS("2001:db8::1", KR_ADDR_RESERVED);
  CLASS("2001:db9::1", KR_ADDR_PUBLIC);
  CLASS("2606:4700::1111", KR_ADDR_PUBLIC);
  CLASS("2a00:1450:4001::1", KR_ADDR_PUBLIC);
  CLASS("3ffe::1", KR_ADDR_PUBLIC);
  CLASS("3fff::1", KR_ADDR_RESERVED);
  CLASS("3fff:fff::1", KR_ADDR_RESERVED);
  CLASS("3fff:1000::1", KR_ADDR_PUBLIC);
  CLASS("4000::1", KR_ADDR_RESERVED);
  CLASS("5f00::1", KR_ADDR_RESERVED);
  CLASS("1fff::1", KR_ADDR_RESERVED);
  CLASS("64:ff9b:1::1", KR_ADDR_PRIVATE);
}

static void embedded_ipv4(void **state) {
  (void)state;
  /* mapped: the kernel connects over IPv4 */
  CLASS("::ffff:127.0.0.1", KR_ADDR_LOOPBACK);
  CLASS("::ffff:169.254.169.254", KR_ADDR_LINK_LOCAL);
  CLASS("::ffff:8.8.8.8", KR_ADDR_PUBLIC);
  CLASS("::ffff:0.0.0.0", KR_ADDR_UNSPECIFIED);
  /* translated (SIIT) */
  CLASS("::ffff:0:127.0.0.1", KR_ADDR_LOOPBACK);
  CLASS("::ffff:0:10.1.2.3", KR_ADDR_PRIVATE);
  CLASS("::ffff:0:8.8.8.8", KR_ADDR_PUBLIC);
  /* NAT64 well-known prefix */
  CLASS("64:ff9b::127.0.0.1", KR_ADDR_LOOPBACK);
  CLASS("64:ff9b::a9fe:a9fe", KR_ADDR_LINK_LOCAL);
  CLASS("64:ff9b::192.168.1.1", KR_ADDR_PRIVATE);
  CLASS("64:ff9b::8.8.8.8", KR_ADDR_PUBLIC);
  /* 6to4 */
  CLASS("2002:7f00:1::1", KR_ADDR_LOOPBACK);
  CLASS("2002:a9fe:a9fe::", KR_ADDR_LINK_LOCAL);
  CLASS("2002:0a00:0001::5", KR_ADDR_PRIVATE);
  CLASS("2002:0808:0808::1", KR_ADDR_PUBLIC);
}

static int parses(const char *s) {
  kr_cidr_t c;
  char err[200] = "";
  int rc = kr_cidr_parse(s, strlen(s), &c, err, sizeof err);
  if (rc) assert_true(err[0] != '\0'); /* every refusal says why */
  return rc == 0;
}

static void cidr_parse_good(void **state) {
  (void)state;
  const char *good[] = {"10.0.0.0/8", "127.0.0.1", "127.0.0.1/32", "0.0.0.0/0",
                        "169.254.169.254/32", "100.64.0.0/10", "::1", "::1/128", "::/0",
                        "fc00::/7", "fe80::/10", "[::1]", "[fd00::]/8", "::ffff:127.0.0.0/104",
                        "64:ff9b::/96", "2001:DB8::/32", "255.255.255.255/32", "1.2.3.4/32"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    if (!parses(good[i])) fail_msg("refused %s", good[i]);
  kr_cidr_t c;
  char buf[64];
  assert_int_equal(kr_cidr_parse("10.0.0.0/8", 10, &c, NULL, 0), 0);
  assert_int_equal(c.bits, 104);
  assert_string_equal(kr_cidr_format(&c, buf, sizeof buf), "10.0.0.0/8");
  assert_int_equal(kr_cidr_parse("127.0.0.1", 9, &c, NULL, 0), 0);
  assert_string_equal(kr_cidr_format(&c, buf, sizeof buf), "127.0.0.1/32");
  assert_int_equal(kr_cidr_parse("fc00::/7", 8, &c, NULL, 0), 0);
  assert_string_equal(kr_cidr_format(&c, buf, sizeof buf), "fc00::/7");
  /* a length, not a terminator, bounds the text */
  assert_int_equal(kr_cidr_parse("10.0.0.0/8junk", 10, &c, NULL, 0), 0);
  assert_int_equal(c.bits, 104);
}

static void cidr_parse_hostile(void **state) {
  (void)state;
  const char *bad[] = {
      "", "/", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08",
      "10.0.0.0/8/8", "10.0.0.0/1000", "10.0.0.0/ 8", " 10.0.0.0", "10.0.0.0 ", "010.0.0.0/8",
      "10.0.0.00", "1.2.3", "1.2.3.4.5", "1.2.3.256", "1.2.3.4444", "0x7f.0.0.1", "0x7f000001",
      "2130706433", "127.1", "1..2.3", "1.2.3.", ".1.2.3", "localhost", "::1/129", "::1/1280",
      ":::1", "::1::", "fe80::1%eth0", "fe80::1%25eth0", "[::1", "::1]", "[]", "[127.0.0.1",
      "10.1.0.0/8", "127.0.0.1/8", "fc00::1/7", "::ffff:1.2.3.4/95", "1.2.3.5/31",
      "12345::", "g::1", "1:2:3:4:5:6:7:8:9", "::ffff:1.2.3.256", "1.2.3.4\n", "1.2.\t3.4",
      "\xff\xfe", "１.２.３.４", "0000:0000:0000:0000:0000:0000:0000:0000:0", "::1\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (parses(bad[i])) fail_msg("accepted '%s'", bad[i]);
  /* NUL inside the given length */
  kr_cidr_t c;
  assert_int_equal(kr_cidr_parse("1.2.3.4\0/8", 10, &c, NULL, 0), KR_EINVAL);
  assert_int_equal(kr_cidr_parse("::1\0", 4, &c, NULL, 0), KR_EINVAL);
  /* a long item: refused, the message cut */
  char lng[5000];
  memset(lng, '1', sizeof lng - 1);
  lng[sizeof lng - 1] = '\0';
  char err[100];
  assert_int_equal(kr_cidr_parse(lng, strlen(lng), &c, err, sizeof err), KR_EINVAL);
  assert_true(strlen(err) < sizeof err);
  /* every prefix of valid text either parses or is refused, never read
   * past its length */
  const char *full[] = {"2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff/128", "192.168.100.200/32",
                        "[::ffff:192.168.0.0]/112"};
  for (size_t k = 0; k < 3; k++)
    for (size_t n = 0; n <= strlen(full[k]); n++) {
      char *cut = malloc(n ? n : 1); /* exact size: ASan sees any overread */
      memcpy(cut, full[k], n);
      (void)kr_cidr_parse(cut, n, &c, err, sizeof err);
      free(cut);
    }
}

static int allowed(const kr_addrpolicy_t *p, const char *s, kr_addr_verdict_t *v) {
  uint8_t ip[16];
  ip_of(s, ip);
  return kr_addrpolicy_check(p, ip, v);
}

static void default_policy(void **state) {
  (void)state;
  kr_addrpolicy_t *p = kr_addrpolicy_new(0);
  kr_addr_verdict_t v;
  const char *refused[] = {"127.0.0.1",   "127.0.0.2",        "10.0.0.1",        "172.16.5.4",
                           "192.168.1.1", "100.64.0.1",       "169.254.169.254", "0.0.0.0",
                           "224.0.0.1",   "255.255.255.255",  "240.0.0.1",       "::1",
                           "::",          "fc00::1",          "fd12:3456::1",    "fe80::1",
                           "ff02::1",     "::ffff:127.0.0.1", "64:ff9b::7f00:1", "::ffff:0:a00:1",
                           "2002:7f00:1::", "2001:db8::1",    "198.18.0.1"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    if (allowed(p, refused[i], &v)) fail_msg("allowed %s", refused[i]);
    assert_int_equal(v.rule, KR_ADDR_BY_CLASS);
    assert_int_equal(v.allowed, 0);
  }
  const char *ok[] = {"8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8",
                      "64:ff9b::808:808", "2002:808:808::1"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    if (!allowed(p, ok[i], &v)) fail_msg("refused %s", ok[i]);
    assert_int_equal(v.cls, KR_ADDR_PUBLIC);
  }
  assert_int_equal(allowed(p, "169.254.169.254", &v), 0);
  assert_int_equal(v.cls, KR_ADDR_LINK_LOCAL);
  assert_string_equal(kr_addr_class_name(v.cls), "link-local");
  assert_string_equal(kr_addr_class_name((kr_addr_class_t)99), "unknown");
  kr_addrpolicy_free(p);
}

static void sockaddrs(void **state) {
  (void)state;
  kr_addrpolicy_t *p = kr_addrpolicy_new(0);
  struct sockaddr_in s4 = {.sin_family = AF_INET};
  struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
  inet_pton(AF_INET, "127.0.0.1", &s4.sin_addr);
  assert_int_equal(kr_addrpolicy_check_sockaddr(p, (struct sockaddr *)&s4, NULL), 0);
  inet_pton(AF_INET, "1.1.1.1", &s4.sin_addr);
  assert_int_equal(kr_addrpolicy_check_sockaddr(p, (struct sockaddr *)&s4, NULL), 1);
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &s6.sin6_addr);
  assert_int_equal(kr_addrpolicy_check_sockaddr(p, (struct sockaddr *)&s6, NULL), 0);
  inet_pton(AF_INET6, "2606:4700::1", &s6.sin6_addr);
  assert_int_equal(kr_addrpolicy_check_sockaddr(p, (struct sockaddr *)&s6, NULL), 1);
  struct sockaddr su = {.sa_family = AF_UNIX};
  kr_addr_verdict_t v;
  assert_int_equal(kr_addrpolicy_check_sockaddr(p, &su, &v), 0);
  assert_int_equal(v.cls, KR_ADDR_RESERVED);
  kr_addrpolicy_free(p);
}

static void lists_and_order(void **state) {
  (void)state;
  char err[200];
  kr_addr_verdict_t v;
  kr_addrpolicy_t *p = kr_addrpolicy_new(0);
  assert_int_equal(kr_addrpolicy_allow(p, "127.0.0.0/8, fd00::/8 10.1.2.3", err, sizeof err), 0);
  assert_int_equal(kr_addrpolicy_deny(p, "127.0.0.2,8.8.8.0/24", err, sizeof err), 0);
  assert_int_equal(kr_addrpolicy_allow(p, NULL, err, sizeof err), 0);
  assert_int_equal(kr_addrpolicy_allow(p, " , ,", err, sizeof err), 0);
  assert_int_equal(allowed(p, "127.0.0.1", &v), 1);
  assert_int_equal(v.rule, KR_ADDR_BY_ALLOW_LIST);
  assert_int_equal(v.cls, KR_ADDR_LOOPBACK);
  char buf[64];
  assert_string_equal(kr_cidr_format(v.cidr, buf, sizeof buf), "127.0.0.0/8");
  assert_int_equal(allowed(p, "::ffff:127.0.0.9", &v), 1);   /* mapped: same address */
  assert_int_equal(allowed(p, "64:ff9b::7f00:9", &v), 1);    /* NAT64 of an allowed one */
  assert_int_equal(allowed(p, "127.0.0.2", &v), 0);          /* deny beats allow */
  assert_int_equal(v.rule, KR_ADDR_BY_DENY_LIST);
  assert_string_equal(kr_cidr_format(v.cidr, buf, sizeof buf), "127.0.0.2/32");
  assert_int_equal(allowed(p, "64:ff9b::7f00:2", &v), 0);    /* and through NAT64 */
  assert_int_equal(allowed(p, "::ffff:0:7f00:2", &v), 0);    /* and translated */
  assert_int_equal(allowed(p, "8.8.8.8", &v), 0);            /* deny takes public too */
  assert_int_equal(allowed(p, "8.8.9.8", &v), 1);
  assert_int_equal(allowed(p, "fd00::5", &v), 1);
  assert_int_equal(allowed(p, "fc00::5", &v), 0);
  assert_int_equal(allowed(p, "10.1.2.3", &v), 1);
  assert_int_equal(allowed(p, "10.1.2.4", &v), 0);
  assert_int_equal(allowed(p, "169.254.169.254", &v), 0);

  /* all or nothing: a bad item adds none of its list */
  assert_int_equal(kr_addrpolicy_allow(p, "169.254.0.0/16,bogus", err, sizeof err), KR_EINVAL);
  assert_non_null(strstr(err, "bogus"));
  assert_int_equal(allowed(p, "169.254.169.254", &v), 0);

  /* a copy decides the same and lives on its own */
  kr_addrpolicy_t *d = kr_addrpolicy_dup(p);
  kr_addrpolicy_free(p);
  assert_int_equal(allowed(d, "127.0.0.1", &v), 1);
  assert_int_equal(allowed(d, "127.0.0.2", &v), 0);
  assert_int_equal(kr_addrpolicy_allows_private(d), 0);
  kr_addrpolicy_free(d);

  /* allow_private lets every class through, the deny list still holds */
  p = kr_addrpolicy_new(1);
  assert_int_equal(kr_addrpolicy_deny(p, "169.254.169.254", err, sizeof err), 0);
  assert_int_equal(allowed(p, "127.0.0.1", &v), 1);
  assert_int_equal(v.rule, KR_ADDR_BY_ALLOW_PRIVATE);
  assert_int_equal(allowed(p, "10.0.0.1", &v), 1);
  assert_int_equal(allowed(p, "8.8.8.8", &v), 1);
  assert_int_equal(v.rule, KR_ADDR_BY_CLASS);
  assert_int_equal(allowed(p, "169.254.169.254", &v), 0);
  assert_int_equal(allowed(p, "::ffff:169.254.169.254", &v), 0);
  assert_int_equal(allowed(p, "169.254.169.253", &v), 1);
  kr_addrpolicy_free(p);
  kr_addrpolicy_free(NULL);
}

static void list_cap(void **state) {
  (void)state;
  /* KR_ADDRPOLICY_MAX_CIDRS entries fit, one more is refused whole */
  size_t cap = (size_t)KR_ADDRPOLICY_MAX_CIDRS * 20 + 64;
  char *s = malloc(cap);
  size_t n = 0;
  for (int i = 0; i < KR_ADDRPOLICY_MAX_CIDRS; i++)
    n += (size_t)snprintf(s + n, cap - n, "10.%d.%d.0/24,", (i >> 8) & 255, i & 255);
  kr_addrpolicy_t *p = kr_addrpolicy_new(0);
  char err[200];
  assert_int_equal(kr_addrpolicy_allow(p, s, err, sizeof err), 0);
  assert_int_equal(kr_addrpolicy_allow(p, "1.2.3.4", err, sizeof err), KR_ETOOBIG);
  assert_int_equal(kr_addrpolicy_deny(p, s, err, sizeof err), 0); /* each list has its own */
  kr_addr_verdict_t v;
  assert_int_equal(allowed(p, "10.15.255.1", &v), 0);
  assert_int_equal(v.rule, KR_ADDR_BY_DENY_LIST);
  kr_addrpolicy_free(p);
  free(s);
}

static void contains_edges(void **state) {
  (void)state;
  kr_cidr_t c;
  uint8_t ip[16];
  assert_int_equal(kr_cidr_parse("::/0", 4, &c, NULL, 0), 0);
  ip_of("1.2.3.4", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 1);
  assert_int_equal(kr_cidr_parse("0.0.0.0/0", 9, &c, NULL, 0), 0);
  assert_int_equal(kr_cidr_contains(&c, ip), 1);
  ip_of("::1", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 0); /* IPv4 /0 is not all of IPv6 */
  assert_int_equal(kr_cidr_parse("100.64.0.0/10", 13, &c, NULL, 0), 0);
  ip_of("100.127.255.255", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 1);
  ip_of("100.128.0.0", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 0);
  assert_int_equal(kr_cidr_parse("fe80::/10", 9, &c, NULL, 0), 0);
  ip_of("febf::1", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 1);
  ip_of("fec0::1", ip);
  assert_int_equal(kr_cidr_contains(&c, ip), 0);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return th_splitmix64(&rng); } /* deterministic */

/* The lists' precomputed masks decide as kr_cidr_contains does, for
 * every prefix length (0, 64, 96, 128 and around them included) and
 * addresses inside, just outside and far from each prefix; a CIDR's text
 * parses back to itself. */
static void lists_agree_with_contains(void **state) {
  (void)state;
  for (int round = 0; round < 3000; round++) {
    kr_cidr_t c;
    memset(&c, 0, sizeof c);
    unsigned bits = (unsigned)(round < 129 ? round : (int)(rnd() % 129));
    for (int i = 0; i < 16; i++) c.ip[i] = (uint8_t)rnd();
    if (round % 3 == 0) { /* an IPv4 prefix */
      memset(c.ip, 0, 10);
      c.ip[10] = c.ip[11] = 0xff;
      if (bits < 96) bits = 96 + bits % 33;
    }
    for (unsigned i = bits; i < 128; i++) c.ip[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
    c.bits = (uint8_t)bits;
    char text[64], err[200];
    kr_cidr_format(&c, text, sizeof text);
    kr_cidr_t back;
    if (kr_cidr_parse(text, strlen(text), &back, err, sizeof err)) fail_msg("%s: %s", text, err);
    assert_memory_equal(&back, &c, sizeof c);
    kr_addrpolicy_t *p = kr_addrpolicy_new(1);
    assert_int_equal(kr_addrpolicy_deny(p, text, err, sizeof err), 0);
    for (int k = 0; k < 40; k++) {
      uint8_t ip[16];
      memcpy(ip, c.ip, 16);
      if (k < 16) { /* flip one bit near the prefix's end */
        int at = (int)bits - 8 + k;
        if (at < 0 || at > 127) continue;
        ip[at / 8] ^= (uint8_t)(0x80u >> (at % 8));
      } else if (k < 30) { /* random bits past the prefix */
        for (unsigned i = bits; i < 128; i++)
          if (rnd() & 1) ip[i / 8] ^= (uint8_t)(0x80u >> (i % 8));
      } else {
        for (int i = 0; i < 16; i++) ip[i] = (uint8_t)rnd();
      }
      /* addresses carrying IPv4 are also matched by that; leave them out */
      static const uint8_t tr[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
      static const uint8_t n64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
      if (!memcmp(ip, tr, 12) || !memcmp(ip, n64, 12) || (ip[0] == 0x20 && ip[1] == 0x02))
        continue;
      int in = kr_cidr_contains(&c, ip);
      kr_addr_verdict_t v;
      int allowed_ = kr_addrpolicy_check(p, ip, &v);
      if (allowed_ == in) fail_msg("%s: list and kr_cidr_contains disagree", text);
    }
    kr_addrpolicy_free(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ipv4_classes),     cmocka_unit_test(ipv6_classes),
      cmocka_unit_test(embedded_ipv4),    cmocka_unit_test(cidr_parse_good),
      cmocka_unit_test(cidr_parse_hostile), cmocka_unit_test(default_policy),
      cmocka_unit_test(sockaddrs),        cmocka_unit_test(lists_and_order),
      cmocka_unit_test(list_cap),         cmocka_unit_test(contains_edges),
      cmocka_unit_test(lists_agree_with_contains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
