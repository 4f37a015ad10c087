#!/usr/bin/env bash
# `make demo` (after `make deps all`): run `kria demo`, which serves a
# built-in site whose pages change at known rates on 127.0.0.1 and crawls
# it with config/demo.conf for DEMO_SECONDS (default 60), then prints how
# the waits adapted per class of page. Its state directory is BUILD_DIR/demo
# (the previous run's is removed first: it names a port of that run). Then
# the WARC files it wrote are indexed with `kria cdx` and their records
# counted: full responses for what changed, revisit records (headers only)
# for what did not. Usage: scripts/demo.sh BUILD_DIR
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
KRIA="$top/$B/kria"
secs=${DEMO_SECONDS:-60}
state="$top/$B/demo"

[ -x "$KRIA" ] || { echo "demo: $KRIA is not built (make BUILD=$B)" >&2; exit 1; }
if ! "$KRIA" demo --help >/dev/null 2>&1; then
  echo "demo: 'kria demo' is not in this build ($KRIA)" >&2
  exit 1
fi
case $secs in
  '' | *[!0-9]*) echo "demo: DEMO_SECONDS must be a whole number of seconds" >&2; exit 1 ;;
esac

rm -rf -- "$state"
"$KRIA" demo --seconds "$secs" --state-dir "$state"
rc=$?
[ "$rc" -eq 0 ] || { echo "demo: kria demo exited with status $rc" >&2; exit "$rc"; }

shopt -s nullglob
warcs=("$state"/warcs/*.warc.gz "$state"/warcs/*.warc)
[ ${#warcs[@]} -gt 0 ] || exit 0
if "$KRIA" cdx "${warcs[@]}" >"$state/index.cdxj" 2>"$state/cdx.err"; then
  awk '
    { if ($0 ~ /"mime": "warc\/revisit"/) { rev++; if ($0 ~ /"status": "304"/) nm++ } else resp++ }
    END {
      printf "\nWARC records (kria cdx, index in %s):\n", idx
      printf "  %d responses (full records: new versions, robots.txt, pages whose only\n", resp
      printf "     change was the stripped clock section)\n"
      printf "  %d revisits (headers only, pointing at a stored response; %d after a 304)\n", rev, nm
    }' idx="$state/index.cdxj" "$state/index.cdxj"
else
  echo "demo: kria cdx could not index the WARC files: $(head -3 "$state/cdx.err")" >&2
  exit 1
fi
