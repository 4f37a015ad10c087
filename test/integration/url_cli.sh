#!/usr/bin/env bash
# `kria url parse|resolve|canon|surt` through the real binary: output,
# exit status (0 done, 1 invalid URL, 64 usage) and the error line format.
# TAP output. Needs $KRIA (set by test/run.sh).
set -u
KRIA=${KRIA:?set KRIA to the kria binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

# check DESC RC STDOUT [STDERR-REGEX] -- ARGS...
check() {
  local desc=$1 want_rc=$2 want_out=$3 want_err=''
  shift 3
  if [ "$1" != "--" ]; then want_err=$1; shift; fi
  shift
  n=$((n + 1))
  "$KRIA" url "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? out err
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
  local ok=1
  [ "$rc" -eq "$want_rc" ] || ok=0
  [ "$want_out" = "*" ] || [ "$out" = "$want_out" ] || ok=0
  if [ -n "$want_err" ]; then
    grep -qE -- "$want_err" "$tmp/err" || ok=0
  elif [ "$want_rc" -eq 0 ] && [ -n "$err" ]; then
    ok=0
  fi
  if [ $ok -eq 1 ]; then
    echo "ok $n - $desc"
  else
    echo "not ok $n - $desc"
    echo "# rc=$rc (want $want_rc)"
    echo "# stdout: $out"
    echo "# want:   $want_out"
    echo "# stderr: $err"
    failed=$((failed + 1))
  fi
}

# parse
check "parse prints the href" 0 "http://example.com/b?x#y" -- parse "HTTP://EXAMPLE.com:80/a/../b?x#y"
check "parse applies IDNA" 0 "https://xn--bcher-kva.example/" -- parse "https://Bücher.example/"
check "parse keeps opaque paths" 0 "mailto:Someone@Example.com?subject=hi%20there" -- parse "mailto:Someone@Example.com?subject=hi there"
check "parse --json gives components" 0 \
  '{"href":"https://u@[::1]:8443/p?q#f","origin":"https://[::1]:8443","protocol":"https:","username":"u","password":"","host":"[::1]:8443","hostname":"[::1]","port":"8443","pathname":"/p","search":"?q","hash":"#f","host_type":"ipv6"}' \
  -- parse --json "https://u@[0:0::1]:8443/p?q#f"
check "parse rejects an invalid URL" 1 "" "^kria: error: bad-url: " -- parse "http://exa mple.com/"
check "parse rejects a relative URL" 1 "" "^kria: error: bad-url: " -- parse "/just/a/path"
check "parse rejects a bad port" 1 "" "^kria: error: bad-url: " -- parse "http://h:65536/"
long="http://x/$(head -c 9000 /dev/zero | tr '\0' a)"
check "parse rejects URLs over 8 KiB" 1 "" "^kria: error: bad-url: " -- parse "$long"

# resolve
check "resolve a relative reference" 0 "http://a/b/g" -- resolve "http://a/b/c/d;p?q" "../g"
check "resolve a query-only reference" 0 "http://a/b/c/d;p?y" -- resolve "http://a/b/c/d;p?q" "?y"
check "resolve a scheme-relative reference" 0 "https://other.org/x" -- resolve "https://a/b" "//other.org/x"
check "resolve an absolute reference" 0 "ftp://f/" -- resolve "https://a/b" "ftp://f"
check "resolve with a bad base" 1 "" "^kria: error: bad-url: .*not-a-base" -- resolve "not-a-base" "x"
check "resolve with a bad reference" 1 "" "^kria: error: bad-url: " -- resolve "http://a/" "http://[::1/"

# canon
check "canon normalises" 0 "http://example.com/~a/%2F?b=2&a=1" -- canon "HTTP://Example.COM:80/%7ea/%2f?b=2&a=1#frag"
check "canon --sort-query" 0 "http://example.com/?a=1&b=2" -- canon --sort-query "http://example.com/?b=2&a=1"
check "canon --strip-www --strip-userinfo" 0 "http://example.com/" -- canon --strip-www --strip-userinfo "http://u:p@www3.example.com/"
check "canon --rules session-ids" 0 "http://x.org/a?b=1" -- canon --rules session-ids "http://x.org/a?jsessionid=0123456789abcdef0123456789abcdef&b=1"
check "canon --rules heritrix-default" 0 "http://archive.org/index.html" -- canon --rules heritrix-default "http://www.archive.org/index.html?jsessionid=01234567890123456789012345678901"
check "canon --rule REGEX" 0 "http://x.org/?a=1" -- canon --rule '^(.*?)&?utm_[a-z]+=[^&]*(.*)$' "http://x.org/?a=1&utm_source=x"
check "canon --base" 0 "http://a/b/g" -- canon --base "http://a/b/c" "g#x"
check "canon --keep-empty-query" 0 "http://a/?" -- canon --keep-empty-query "http://a/?"
check "canon rejects an invalid URL" 1 "" "^kria: error: bad-url: " -- canon "http://"
check "canon: a bad regex is a usage error" 64 "" "^kria: error: usage: .*unclosed" -- canon --rule "(unclosed" "http://x/"
check "canon: an unknown rule set is a usage error" 64 "" "^kria: error: usage: unknown rule set" -- canon --rules nope "http://x/"

# surt
check "surt" 0 "org,archive)/goo?a&b" -- surt "http://www.archive.org/goo/?b&a"
check "surt --with-scheme --trailing-comma" 0 "https://(org,archive,)/" -- surt --with-scheme --trailing-comma "https://archive.org/"
check "surt --no-host-massage" 0 "org,archive,www)/" -- surt --no-host-massage "http://www.archive.org/"
check "surt --no-reverse-ipaddr" 0 "192.168.1.254)/info" -- surt --no-reverse-ipaddr "http://192.168.1.254/info/"
check "surt --raw keys any string" 0 "dns:alexa.com" -- surt --raw "dns:alexa.com"
check "surt rejects an invalid URL" 1 "" "^kria: error: bad-url: " -- surt "http://a b/"

# usage
check "url without a command" 64 "" "usage: kria url" --
check "url help" 0 "*" -- --help
check "unknown url command" 64 "" "^kria: error: usage: unknown url command" -- frobnicate x
check "parse without a URL" 64 "" "^kria: error: usage: " -- parse
check "parse with two URLs" 64 "" "^kria: error: usage: " -- parse http://a/ http://b/
check "parse with an unknown option" 64 "" "^kria: error: usage: " -- parse --yaml http://a/
check "resolve with one argument" 64 "" "^kria: error: usage: " -- resolve http://a/
check "surt with an unknown option" 64 "" "^kria: error: usage: " -- surt --upside-down http://a/
check "canon option missing its value" 64 "" "^kria: error: usage: " -- canon --rule

echo "1..$n"
[ "$failed" -eq 0 ]
