#!/usr/bin/env bash
# `kria robots FILE USER-AGENT URL`: output and exit status (0 allowed,
# 1 disallowed, 2 error, 64 usage) for files, agents and URLs of every
# kind, hostile files included. TAP lines; run by test/run.sh
# with KRIA set to the binary under test.
set -u
KRIA=${KRIA:-build/kria}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

# run FILE AGENT URL: sets out, err, rc
run() {
  out=$("$KRIA" robots "$@" 2>"$tmp/err")
  rc=$?
  err=$(cat "$tmp/err")
}

# expect DESC RC OUT FILE AGENT URL
expect() {
  local desc=$1 want_rc=$2 want_out=$3
  shift 3
  run "$@"
  if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ]; then
    ok "$desc"
  else
    not_ok "$desc"
    echo "#   want rc=$want_rc out='$want_out'"
    echo "#   got  rc=$rc out='$out' err='$err'"
  fi
}

# expect_err DESC RC STDERR-SUBSTRING ARGS...
expect_err() {
  local desc=$1 want_rc=$2 want_err=$3
  shift 3
  out=$("$KRIA" robots "$@" 2>"$tmp/err")
  rc=$?
  err=$(cat "$tmp/err")
  if [ "$rc" = "$want_rc" ] && [[ "$err" == *"$want_err"* ]] && [ -z "$out" ]; then
    ok "$desc"
  else
    not_ok "$desc"
    echo "#   want rc=$want_rc stderr containing '$want_err', no stdout"
    echo "#   got  rc=$rc out='$out' err='$err'"
  fi
}

if ! "$KRIA" robots --help >"$tmp/help" 2>&1 || ! grep -q 'usage: kria robots' "$tmp/help"; then
  not_ok "kria has a robots command"
  sed 's/^/#   /' "$tmp/help"
  echo "1..$n"
  exit 1
fi
ok "kria robots --help prints usage and exits 0"

cat >"$tmp/robots.txt" <<'EOF'
# example
User-agent: *
Disallow: /private
Allow: /private/open
Disallow: /search?q=
Disallow: /*.pdf$
Crawl-delay: 5
Sitemap: https://example.org/sitemap.xml

User-agent: kria
Disallow: /not-for-kria
EOF

expect "disallowed by a rule: exit 1 and the rule" 1 \
  "disallowed by line 3: Disallow: /private" "$tmp/robots.txt" otherbot /private/x
expect "allowed by a longer Allow" 0 \
  "allowed by line 4: Allow: /private/open" "$tmp/robots.txt" otherbot /private/open/a
expect "no matching rule" 0 "allowed (no matching rule)" "$tmp/robots.txt" otherbot /public
expect "full URL: path and query are matched" 1 \
  "disallowed by line 5: Disallow: /search?q=" "$tmp/robots.txt" otherbot "https://example.org/search?q=cats#top"
expect "full URL without a path means /" 0 "allowed (no matching rule)" \
  "$tmp/robots.txt" otherbot "http://example.org"
expect "wildcard and end anchor" 1 "disallowed by line 6: Disallow: /*.pdf$" \
  "$tmp/robots.txt" otherbot "http://example.org/a/b.pdf"
expect "end anchor does not match a longer path" 0 "allowed (no matching rule)" \
  "$tmp/robots.txt" otherbot "http://example.org/a/b.pdf?x"
expect "our own group replaces *" 0 "allowed (no matching rule)" "$tmp/robots.txt" kria /private/x
expect "our group, case-insensitive, version ignored" 1 \
  "disallowed by line 11: Disallow: /not-for-kria" "$tmp/robots.txt" Kria/0.1 /not-for-kria
expect "/robots.txt is always allowed" 0 "allowed (/robots.txt is always allowed)" \
  "$tmp/robots.txt" otherbot "http://example.org/robots.txt"

printf 'User-agent: *\nDisallow: /%%E3%%83%%84\n' >"$tmp/enc.txt"
expect "raw UTF-8 URL matches a %-encoded rule (RFC 9309 2.2.2)" 1 \
  "disallowed by line 2: Disallow: /%E3%83%84" "$tmp/enc.txt" kria "http://example.org/ツ"
printf 'User-agent: *\nDisallow: /%%7euser\n' >"$tmp/tilde.txt"
expect "%XX of unreserved characters is decoded" 1 \
  "disallowed by line 2: Disallow: /~user" "$tmp/tilde.txt" kria "/~user/"

# RFC 9309 2.2.3: %2A / %24 in a rule are a literal '*' / '$', not the
# wildcard and the end anchor
printf 'User-agent: *\nDisallow: /path/file-with-a-%%2A.html\nDisallow: /path/foo-%%24\n' >"$tmp/special.txt"
expect "%2A in a rule matches a literal * in the URL (RFC 9309 2.2.3)" 1 \
  "disallowed by line 2: Disallow: /path/file-with-a-%2A.html" "$tmp/special.txt" kria \
  "https://www.example.com/path/file-with-a-*.html"
expect "%2A in a rule is not a wildcard" 0 "allowed (no matching rule)" \
  "$tmp/special.txt" kria "https://www.example.com/path/file-with-a-b.html"
expect "%24 in a rule matches a literal \$ and does not anchor" 1 \
  "disallowed by line 3: Disallow: /path/foo-%24" "$tmp/special.txt" kria \
  'https://www.example.com/path/foo-$bar'

printf '\xef\xbb\xbfUser-agent: kria\r\nAllow: /a\r\nDisallow: /\r\n' >"$tmp/crlf.txt"
expect "BOM and CRLF" 1 "disallowed by line 3: Disallow: /" "$tmp/crlf.txt" kria /b
printf 'User-agent: kria\rDisallow: /x\r' >"$tmp/cr.txt"
expect "CR-only line ends" 1 "disallowed by line 2: Disallow: /x" "$tmp/cr.txt" kria /x

run - kria /secret <<'EOF'
User-agent: *
Disallow: /secret
EOF
if [ "$rc" = 1 ] && [ "$out" = "disallowed by line 2: Disallow: /secret" ]; then
  ok "FILE - reads standard input"
else
  not_ok "FILE - reads standard input"
  echo "#   got rc=$rc out='$out' err='$err'"
fi

: >"$tmp/empty.txt"
expect "empty file allows everything" 0 "allowed (no matching rule)" "$tmp/empty.txt" kria /

# bytes past 500 KiB are ignored, and the user is told
{
  head -c 600000 /dev/zero | tr '\0' '#'
  printf '\nUser-agent: *\nDisallow: /\n'
} >"$tmp/big.txt"
run "$tmp/big.txt" kria /x
if [ "$rc" = 0 ] && [ "$out" = "allowed (no matching rule)" ] && [[ "$err" == *"only the first"* ]]; then
  ok "rules past 500 KiB are ignored, with a note on stderr"
else
  not_ok "rules past 500 KiB are ignored, with a note on stderr"
  echo "#   got rc=$rc out='$out' err='$err'"
fi

# binary garbage: an answer (0 or 1), never a crash
bad=0
for i in 1 2 3 4 5; do
  head -c 300000 /dev/urandom >"$tmp/bin.txt"
  run "$tmp/bin.txt" kria "/some/path?x=$i"
  case "$rc:$out" in
  0:allowed* | 1:disallowed*) ;;
  *) bad=1; echo "#   round $i: rc=$rc out='$out' err='$err'" ;;
  esac
done
[ "$bad" = 0 ] && ok "binary garbage gets an answer, no crash" || not_ok "binary garbage gets an answer, no crash"

expect_err "missing file: exit 2, io error" 2 "kria: error: io: cannot read" "$tmp/nope.txt" kria /
expect_err "directory: exit 2, io error" 2 "kria: error: io: cannot read" "$tmp" kria /
expect_err "too few arguments: exit 64" 64 "kria: error: usage:" "$tmp/robots.txt" kria
expect_err "too many arguments: exit 64" 64 "kria: error: usage:" "$tmp/robots.txt" kria / extra
expect_err "USER-AGENT without a product token: exit 64" 64 "product token" "$tmp/robots.txt" "/x" /

echo "1..$n"
[ "$failed" -eq 0 ]
