/*
 * `kria url parse|resolve|canon|surt`: the url module on the command
 * line. Each prints one line (the href, the resolved href, the canonical
 * form, the SURT) and exits 0; an invalid URL gives
 * `kria: error: bad-url: ...` and exit 1; a bad command line gives usage
 * and exit 64. `parse --json` prints the components as one JSON object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "kria/url.h"

static const char usage_text[] =
    "usage: kria url parse [--json] URL\n"
    "       kria url resolve BASE REF\n"
    "       kria url canon [--strip-userinfo] [--strip-www] [--sort-query]\n"
    "                      [--keep-empty-query] [--rules NAME]... [--rule REGEX]...\n"
    "                      [--base URL] URL\n"
    "       kria url surt [--with-scheme] [--trailing-comma] [--no-host-massage]\n"
    "                     [--no-reverse-ipaddr] [--raw] URL\n"
    "  parse    WHATWG parse, print the serialization (href)\n"
    "  resolve  parse REF against BASE, print the href\n"
    "  canon    canonical form for dedupe; --rules takes a built-in set\n"
    "           (session-ids, heritrix-default, StripSessionIDs, ...),\n"
    "           --rule a PCRE2 regex matched against the whole URL whose\n"
    "           groups 1 and 2 are kept\n"
    "  surt     SURT key as python surt makes it; --raw skips the WHATWG\n"
    "           parse and keys the string as given\n"
    "exit status: 0 done, 1 invalid URL, 64 usage\n";

static int usage_error(const char *what) {
  kr_cli_error(0, "%s", what);
  fputs(usage_text, stderr);
  return 64;
}

static int bad_url(const char *s) {
  kr_cli_error(KR_EURL, "not a valid URL: '%s'", s);
  return 1;
}

static int print_slice(kr_slice_t s) {
  fwrite(s.p, 1, s.n, stdout);
  putchar('\n');
  return 0;
}

static void json_str(const char *key, kr_slice_t v, int comma) {
  printf("%s\"%s\":\"", comma ? "," : "", key);
  for (size_t i = 0; i < v.n; i++) {
    unsigned char c = (unsigned char)v.p[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static const char *host_type_name(kr_url_host_type_t t) {
  switch (t) {
  case KR_URL_HOST_DOMAIN: return "domain";
  case KR_URL_HOST_IPV4: return "ipv4";
  case KR_URL_HOST_IPV6: return "ipv6";
  case KR_URL_HOST_OPAQUE: return "opaque";
  case KR_URL_HOST_EMPTY: return "empty";
  default: return "none";
  }
}

static void print_json(const kr_url_t *u) {
  char proto[64], port[16] = "";
  kr_slice_t sch = kr_url_scheme(u);
  snprintf(proto, sizeof proto, "%.*s:", (int)sch.n, sch.p);
  if (kr_url_port(u) >= 0) snprintf(port, sizeof port, "%d", kr_url_port(u));
  kr_buf_t origin;
  kr_buf_init(&origin, 1 << 16);
  kr_url_origin(u, &origin);
  putchar('{');
  json_str("href", kr_slice(kr_url_href(u), kr_url_href_len(u)), 0);
  json_str("origin", kr_slice(origin.data ? origin.data : "", origin.len), 1);
  json_str("protocol", kr_slice_cstr(proto), 1);
  json_str("username", kr_url_username(u), 1);
  json_str("password", kr_url_password(u), 1);
  json_str("host", kr_url_host(u), 1);
  json_str("hostname", kr_url_hostname(u), 1);
  json_str("port", kr_slice_cstr(port), 1);
  json_str("pathname", kr_url_pathname(u), 1);
  json_str("search", kr_url_search(u), 1);
  json_str("hash", kr_url_hash(u), 1);
  json_str("host_type", kr_slice_cstr(host_type_name(kr_url_host_type(u))), 1);
  printf("}\n");
  kr_buf_free(&origin);
}

static int cmd_parse(int argc, char **argv) {
  int json = 0, i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "--json")) json = 1;
    else return usage_error("unknown option for url parse");
  }
  if (argc - i != 1) return usage_error("url parse takes one URL");
  kr_url_t *u = NULL;
  if (kr_url_parse(argv[i], strlen(argv[i]), NULL, &u)) return bad_url(argv[i]);
  if (json) print_json(u);
  else print_slice(kr_slice(kr_url_href(u), kr_url_href_len(u)));
  kr_url_free(u);
  return 0;
}

static int cmd_resolve(int argc, char **argv) {
  if (argc != 3) return usage_error("url resolve takes BASE and REF");
  kr_url_t *base = NULL, *u = NULL;
  if (kr_url_parse(argv[1], strlen(argv[1]), NULL, &base)) return bad_url(argv[1]);
  int rc = kr_url_parse(argv[2], strlen(argv[2]), base, &u);
  kr_url_free(base);
  if (rc) return bad_url(argv[2]);
  print_slice(kr_slice(kr_url_href(u), kr_url_href_len(u)));
  kr_url_free(u);
  return 0;
}

static int cmd_canon(int argc, char **argv) {
  unsigned flags = KR_URL_CANON_DEFAULT;
  const char *base_s = NULL;
  /* rules are added after the flags are known: remember them */
  const char *rulesets[32], *rules[32];
  int nrulesets = 0, nrules = 0, i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "--")) {
      i++;
      break;
    } else if (!strcmp(o, "--strip-userinfo")) flags |= KR_URL_CANON_STRIP_USERINFO;
    else if (!strcmp(o, "--strip-www")) flags |= KR_URL_CANON_STRIP_WWW;
    else if (!strcmp(o, "--sort-query")) flags |= KR_URL_CANON_SORT_QUERY;
    else if (!strcmp(o, "--keep-empty-query")) flags &= ~(unsigned)KR_URL_CANON_TIDY_QUERY;
    else if ((!strcmp(o, "--rules") || !strcmp(o, "--rule") || !strcmp(o, "--base")) && i + 1 < argc) {
      const char *v = argv[++i];
      if (!strcmp(o, "--base")) base_s = v;
      else if (!strcmp(o, "--rules") && nrulesets < 32) rulesets[nrulesets++] = v;
      else if (!strcmp(o, "--rule") && nrules < 32) rules[nrules++] = v;
      else return usage_error("too many rules");
    } else {
      return usage_error("unknown option for url canon");
    }
  }
  if (argc - i != 1) return usage_error("url canon takes one URL");
  kr_url_canon_opts_t *opts = kr_url_canon_opts_new(flags);
  int status = 0;
  for (int k = 0; k < nrulesets && !status; k++)
    if (kr_url_canon_opts_add_ruleset(opts, rulesets[k])) {
      kr_cli_error(0, "unknown rule set '%s'", rulesets[k]);
      status = 64;
    }
  for (int k = 0; k < nrules && !status; k++) {
    char err[512];
    if (kr_url_canon_opts_add_rule(opts, rules[k], NULL, err, sizeof err)) {
      kr_cli_error(0, "%s", err);
      status = 64;
    }
  }
  kr_url_t *base = NULL;
  if (!status && base_s && kr_url_parse(base_s, strlen(base_s), NULL, &base)) status = bad_url(base_s);
  if (!status) {
    kr_buf_t out;
    kr_buf_init(&out, 1 << 20);
    int rc = kr_url_canon_str(argv[i], strlen(argv[i]), base, opts, &out);
    if (rc == KR_EURL) status = bad_url(argv[i]);
    else if (rc) kr_cli_error(rc, "cannot canonicalise '%s'", argv[i]), status = 2;
    else print_slice(kr_slice(out.data, out.len));
    kr_buf_free(&out);
  }
  kr_url_free(base);
  kr_url_canon_opts_free(opts);
  return status;
}

static int cmd_surt(int argc, char **argv) {
  kr_surt_opts_t o;
  kr_surt_opts_init(&o);
  int raw = 0, i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    } else if (!strcmp(a, "--with-scheme")) o.with_scheme = 1;
    else if (!strcmp(a, "--trailing-comma")) o.trailing_comma = 1;
    else if (!strcmp(a, "--no-host-massage")) o.host_massage = 0;
    else if (!strcmp(a, "--no-reverse-ipaddr")) o.reverse_ipaddr = 0;
    else if (!strcmp(a, "--raw")) raw = 1;
    else return usage_error("unknown option for url surt");
  }
  if (argc - i != 1) return usage_error("url surt takes one URL");
  kr_buf_t out;
  kr_buf_init(&out, 1 << 20);
  int rc;
  if (raw) {
    rc = kr_surt(argv[i], strlen(argv[i]), &o, &out);
  } else {
    kr_url_t *u = NULL;
    rc = kr_url_parse(argv[i], strlen(argv[i]), NULL, &u);
    if (!rc) rc = kr_url_surt(u, &o, &out);
    kr_url_free(u);
  }
  int status = 0;
  if (rc == KR_EURL) status = bad_url(argv[i]);
  else if (rc) kr_cli_error(rc, "cannot make a SURT of '%s'", argv[i]), status = 2;
  else print_slice(kr_slice(out.data, out.len));
  kr_buf_free(&out);
  return status;
}

int kr_cmd_url(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 64;
  }
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (!strcmp(sub, "parse")) return cmd_parse(argc - 1, argv + 1);
  if (!strcmp(sub, "resolve")) return cmd_resolve(argc - 1, argv + 1);
  if (!strcmp(sub, "canon")) return cmd_canon(argc - 1, argv + 1);
  if (!strcmp(sub, "surt")) return cmd_surt(argc - 1, argv + 1);
  kr_cli_error(0, "unknown url command '%s'", sub);
  fputs(usage_text, stderr);
  return 64;
}
