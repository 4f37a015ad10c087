#!/usr/bin/env bash
# `make demo`: start kts with the demo site (test/server/fixtures/demo.ini),
# fetch every page through `kria fetch` twice — the second time with
# If-None-Match set to the first answer's ETag, so unchanged pages come
# back 304 and the changing page 200 — print a table, stop kts by PID.
# Every step is bounded in time. Usage: scripts/demo.sh BUILD_DIR
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
export KRIA_BUILD="$top/$B" KRIA_TOP="$top"
export KRIA="$KRIA_BUILD/kria" KTS="$KRIA_BUILD/kts"
# shellcheck source=../test/integration/lib.sh
. "$top/test/integration/lib.sh"

[ -x "$KTS" ] || { echo "demo: $KTS is not built (make BUILD=$B)" >&2; exit 1; }
if ! kria_has_fetch; then
  echo "demo: 'kria fetch' is not in this build yet ($KRIA)" >&2
  exit 1
fi

kts_start "$top/test/server/fixtures/demo.ini" --log "$T/requests.log" >/dev/null ||
  { echo "demo: kts did not start" >&2; exit 1; }
base=$KTS_URL
echo "kts serving the demo site at $base (pid $KTS_PID)"
echo

paths=(/ /gzip /chunked /static /changing /p/0 /p/1 /p/4 /missing)

# etag_of: the ETag header from `kria fetch --headers` output in $OUT.
etag_of() {
  local l
  while IFS= read -r l; do
    l=${l%$'\r'}
    l=${l#"  "}
    if [[ ${l,,} == etag:* ]]; then
      l=${l#*:}
      printf '%s\n' "${l# }"
      return 0
    fi
  done <<<"$OUT"
  return 1
}

row() { printf '%-12s %-5s %6s %-34s %5s   %-5s %5s\n' "$@"; }
row "URL" "first" "bytes" "sha1" "ms" "again" "ms"
row "---" "-----" "-----" "----" "--" "-----" "--"
fails=0
for p in "${paths[@]}"; do
  kfetch --headers "$base$p"
  if [ "$RC" -ne 0 ]; then
    row "$p" "error" "-" "${ERR:0:34}" "-" "" ""
    fails=$((fails + 1))
    continue
  fi
  s1=$(field status) b1=$(field bytes) h1=$(field sha1) t1=$(field time-ms)
  etag=$(etag_of || true)
  if [ -n "$etag" ]; then
    kfetch --if-none-match "$etag" "$base$p"
    if [ "$RC" -eq 0 ]; then s2=$(field status) t2=$(field time-ms); else s2=error t2=-; fi
  else
    s2="(no etag)" t2=""
  fi
  row "$p" "$s1" "$b1" "$h1" "$t1" "$s2" "$t2"
done
echo
echo "'again' is a conditional fetch with the first ETag: 304 = unchanged;"
echo "/changing gets a new version on every request, so it answers 200."
echo
echo "requests as kts saw them (connection, request, validators sent):"
awk -F' [|] ' '{ sub(/ HTTP\/1\.[01]$/, "", $1); line = "  " $1
  for (i = 2; i <= NF; i++) if ($i ~ /^If-/) line = line "  " $i
  print line }' "$T/requests.log"
kts_stop || fails=$((fails + 1))
echo
[ "$fails" -eq 0 ] && echo "demo: done" || echo "demo: $fails problem(s)"
[ "$fails" -eq 0 ]
