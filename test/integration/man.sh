#!/usr/bin/env bash
# The manual page config/kria.1 against the binary and the reference
# configuration:
#  - it renders with no warning (groff -man -ww; man --warnings when man
#    is installed);
#  - every command `kria help` lists has its own subsection (.SS "kria
#    CMD ...") and every option its `kria CMD --help` names appears in that
#    subsection, so a new command or option fails here until documented;
#  - every section of config/kria.conf is listed under CONFIGURATION;
#  - the version in .TH is the binary's.
. "$(dirname "$0")/lib.sh"

PAGE=$KRIA_TOP/config/kria.1
check "config/kria.1 exists" test -f "$PAGE"
[ -x "$KRIA" ] || bail "kria is not built ($KRIA)"

if command -v groff >/dev/null; then
  out=$(groff -man -ww -z "$PAGE" 2>&1)
  is "$out" "" "groff -man -ww: no warning"
  # The check can fail: a page with an unknown request does warn.
  printf '.TH X 1\n.SH NAME\nx\n.BOGUS\n' >"$T/bad.1"
  like "$(groff -man -ww -z "$T/bad.1" 2>&1)" "BOGUS|not defined" "groff -ww warns about a bad page"
else
  skip "groff not installed" "groff -man -ww: no warning"
fi
if command -v man >/dev/null; then
  out=$(MANWIDTH=80 man --warnings -l "$PAGE" 2>&1 >/dev/null)
  is "$out" "" "man --warnings -l: no warning"
else
  skip "man not installed" "man --warnings -l: no warning"
fi

# plain TEXT: roff source lines as words (\- -> -, font escapes dropped).
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\(aq/'"'"'/g'; }

# section CMD: the source of the subsection .SS "kria CMD ...".
section() {
  awk -v h="^\\.SS \"kria $1( |\"|$)" '
    /^\.S[SH] / { on = ($0 ~ h) }
    on' "$PAGE" | plain
}

mapfile -t cmds < <("$KRIA" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
check "kria help lists commands" test "${#cmds[@]}" -ge 10
for c in "${cmds[@]}" help; do
  sec=$(section "$c")
  if [ -z "$sec" ]; then
    not_ok "kria $c: a subsection .SS \"kria $c ...\" in kria.1"
    continue
  fi
  ok "kria $c: a subsection in kria.1"
  [ "$c" = version ] || [ "$c" = help ] && continue
  help=$("$KRIA" "$c" --help 2>&1)
  mapfile -t opts < <(grep -oE '(^|[^A-Za-z0-9-])--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" |
    sed -E 's/^[^-]+//' | sort -u)
  missing=()
  for o in "${opts[@]}"; do
    grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|$)" <<<"$sec" || missing+=("$o")
  done
  is "${missing[*]}" "" "kria $c: every option of --help (${#opts[@]}) in its subsection"
done

# The check above can fail: a command without a subsection is found.
sec=$(section nosuchcommand)
is "$sec" "" "a command the page lacks has no subsection (the check can fail)"

conf=$KRIA_TOP/config/kria.conf
mapfile -t sects < <(grep -oE '^\[[a-z]+( "|\])' "$conf" | sed -E 's/^\[//; s/( "|\])$//' | sort -u)
check "config/kria.conf has sections" test "${#sects[@]}" -ge 10
cfg=$(awk '/^\.SH CONFIGURATION/ { on = 1; next } /^\.SH / { on = 0 } on' "$PAGE" | plain)
missing=()
for s in "${sects[@]}"; do
  grep -qE "^\.BI? \"?\[$s( |\]|\\\\\(dq)" <<<"$cfg" || missing+=("$s")
done
is "${missing[*]}" "" "every section of config/kria.conf (${#sects[@]}) under CONFIGURATION"

ver=$("$KRIA" version | awk '{ print $2 }')
like "$(grep '^\.TH ' "$PAGE")" "\"kria ${ver//./\\.}\"" ".TH names the binary's version ($ver)"
done_testing
