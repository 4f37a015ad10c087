#!/usr/bin/env bash
# bench/crawl/ab.sh — two (or more) kria builds crawling the same sitegen
# site, interleaved, for before/after comparisons of a change: CPU-µs per
# page medians side by side in one run (robust to other work on the
# machine, unlike pages/s). With --perf, one more crawl of the last build
# under `perf record -g` (build with -fno-omit-frame-pointer; KB_PERF_GRAPH=dwarf
# unwinds through libraries built without frame pointers, e.g. SQLite).
#
# Usage: bench/crawl/ab.sh [--pages N] [--hosts H] [--reps R]
#            [--warc off|none|gzip] [--valence V] [--tls rsa|ecdsa] [--perf]
#            KRIA_A KRIA_B [...]
#   e.g. bench/crawl/ab.sh --pages 5000 --reps 5 build-base/kria build/kria
# The site is H hosts (1: bench/crawl/run.sh's "single" site; 20 with
# --pages 2500: its "multi" site) of N pages each, served by nginx on CPU 1
# (access log off), names from dnsmasq; kria is pinned to CPU 0,
# snapshot crawl, politeness off, as in run.sh. Prints one line per run and
# a table of medians (min–max), with the state DB's bytes per URI after the
# crawl (kria.db over the uris rows; the split by table and index of each
# run in db.tsv); raw data in bench/out/crawl-ab/last/. With --tls, the
# crawl is over HTTPS (bench/lib/tls.sh: a CA and an RSA-2048 or ECDSA
# P-256 certificate made for the run, trusted through SSL_CERT_FILE, the
# system bundle plus that CA).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"
# shellcheck source=../lib/nginx.sh
. "$HERE/../lib/nginx.sh"
# shellcheck source=../lib/dns.sh
. "$HERE/../lib/dns.sh"
# shellcheck source=../lib/tls.sh
. "$HERE/../lib/tls.sh"

ARGS=("$@")
PAGES=5000
HOSTS=1
REPS=5
WARC=off
VALENCE=""
PERF=0
TLS=""
BUILDS=()
while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--hosts) HOSTS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--warc) WARC=$2; shift 2 ;;
	--valence) VALENCE=$2; shift 2 ;;
	--perf) PERF=1; shift ;;
	--tls) TLS=$2; shift 2 ;;
	-h | --help) sed -n '2,23p' "$0"; exit 0 ;;
	-*) kb_die "unknown option $1 (try --help)" ;;
	*) BUILDS+=("$1"); shift ;;
	esac
done
[ ${#BUILDS[@]} -ge 1 ] || kb_die "give at least one kria binary (try --help)"
[[ $PAGES =~ ^[0-9]+$ ]] && [ "$PAGES" -ge 10 ] && [ "$PAGES" -le 1000000 ] || kb_die "--pages: 10..1000000"
[[ $HOSTS =~ ^[0-9]+$ ]] && [ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 1000 ] || kb_die "--hosts: 1..1000"
VALENCE=${VALENCE:-$([ "$HOSTS" = 1 ] && echo 64 || echo 16)}
[[ $REPS =~ ^[0-9]+$ ]] && [ "$REPS" -ge 1 ] && [ "$REPS" -le 50 ] || kb_die "--reps: 1..50"
case $WARC in
off) WOPT=(-o warc.enabled=false) ;;
none) WOPT=(-o warc.compress=none) ;;
gzip) WOPT=() ;;
*) kb_die "--warc: off, none or gzip" ;;
esac
for i in "${!BUILDS[@]}"; do
	b=${BUILDS[$i]}
	[ -x "$b" ] || kb_die "$b: not an executable"
	BUILDS[$i]=$(cd "$(dirname "$b")" && pwd)/$(basename "$b")
done
kb_bound "${KB_TOTAL_LIMIT:-3600}" "${ARGS[@]}"
kb_build_tools

RUN=$KB_OUT/crawl-ab/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"
ln -sfn "$(basename "$RUN")" "$KB_OUT/crawl-ab/last"
PORT=""
for _ in 1 2 3 4 5 6 7 8; do
	p=$(kb_random_port)
	kb__port_free "$p" && { PORT=$p; break; }
done
[ -n "$PORT" ] || kb_die "no free port"
export KB_NGINX_WANT_PORT=$PORT KB_NGINX_FILES=$((HOSTS * (PAGES + 20)))
SCHEME=http ENVV=()
if [ -n "$TLS" ]; then
	[[ $TLS == rsa || $TLS == ecdsa ]] || kb_die "--tls: rsa or ecdsa"
	SCHEME=https
	kb_tls_certs "$RUN/tls" "$TLS" "$HOSTS"
	cat "$(openssl version -d | sed 's/.*"\(.*\)"/\1/')/cert.pem" "$RUN/tls/ca.pem" >"$RUN/tls/bundle.pem" 2>/dev/null ||
		cp "$RUN/tls/ca.pem" "$RUN/tls/bundle.pem"
	ENVV=(env "SSL_CERT_FILE=$RUN/tls/bundle.pem")
	# nginx serves the site on its TLS port only (the plain one stays for stub_status)
	export KB_NGINX_TLS_DIR=$RUN/tls KB_NGINX_WANT_TLS_PORT=$PORT KB_NGINX_WANT_PORT=""
fi
SITE=$KB_OUT/site-crawl-${TLS:+https-}${HOSTS}x$PAGES
kb_site "$SITE" -H "$HOSTS" -p "$PAGES" -u "$SCHEME://{host}:$PORT"
KB_NGINX_LISTEN=$(kb_host_addrs "$HOSTS" | tr '\n' ' ')
export KB_NGINX_LISTEN
kb_nginx_start "$RUN/nginx" "$SITE" vhosts
kb_dns_start "$RUN/dns" "$HOSTS"
for ((i = 0; i < HOSTS; i++)); do echo "$SCHEME://h$i.test:$PORT/"; done >"$RUN/seeds.txt"
kb_crawl_conf "$RUN/seeds.txt" "$VALENCE" "$KB_DNS_PORT" $'[http]\nallow-private-addresses = true' >"$RUN/kria.conf"
find "$SITE" -name '*.html' -exec cat {} + >/dev/null 2>&1 || true
NPAGES=$((HOSTS * PAGES))

TSV=$RUN/runs.tsv
printf 'rep\tbuild\twall_s\tuser_s\tsys_s\tmaxrss_kb\texit\tload1\n' >"$TSV"
DBT=$RUN/db.tsv
printf 'rep\tbuild\turis\tdb_bytes\tbytes_by_table\n' >"$DBT"
nb=${#BUILDS[@]}
one() { # one REP INDEX [perf]: a crawl of build INDEX from an empty state
	local rep=$1 k=$2 d=$RUN/work wall user sys rss code
	rm -rf "$d"
	mkdir -p "$d"
	local cmd=("${ENVV[@]}" "${BUILDS[$k]}" crawl -c "$RUN/kria.conf" -o "crawl.state-dir=$d/state" "${WOPT[@]}")
	if [ "${3:-}" = perf ]; then
		(cd "$d" && taskset -c "${KB_CLIENT_CPU:-0}" perf record -e cpu-clock --call-graph "${KB_PERF_GRAPH:-fp}" -o "$RUN/perf.data" -- "${cmd[@]}") \
			>"$RUN/perf.log" 2>&1 || kb_log "perf record failed (see $RUN/perf.log)"
		return 0
	fi
	set +e
	(cd "$d" && kb_measure "$RUN/m.tmp" 600 taskset -c "${KB_CLIENT_CPU:-0}" "${cmd[@]}") >"$RUN/log.$rep.$k" 2>&1
	set -e
	read -r wall user sys rss code <"$RUN/m.tmp"
	# the state DB after the clean exit (its WAL checkpointed away)
	local split
	split=$(sqlite3 -readonly "$d/state/kria.db" "SELECT (SELECT count(*) FROM uris) || char(9) ||
		(SELECT group_concat(name || '=' || b, ' ') FROM (SELECT name, sum(pgsize) AS b
		FROM dbstat GROUP BY name ORDER BY b DESC))" 2>/dev/null || printf '0\t-')
	printf '%d\t%d\t%s\t%s\t%s\n' "$rep" "$k" "${split%%$'\t'*}" \
		"$(stat -c %s "$d/state/kria.db" 2>/dev/null || echo 0)" "${split#*$'\t'}" >>"$DBT"
	printf '%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$k" "$wall" "$user" "$sys" "$rss" "$code" \
		"$(cut -d' ' -f1 /proc/loadavg)" >>"$TSV"
	kb_log "rep $rep ${BUILDS[$k]#"$KB_ROOT"/}: $(awk -v n="$NPAGES" -v w="$wall" -v u="$user" -v s="$sys" \
		'BEGIN { printf "%.2f s, %.0f pages/s, %.1f CPU-µs/page", w, n / w, (u + s) * 1e6 / n }'), exit $code"
}
for ((rep = 1; rep <= REPS; rep++)); do
	for ((j = 0; j < nb; j++)); do one "$rep" $(((j + rep - 1) % nb)); done
done
rm -rf "$RUN/work"
echo
echo "bench/crawl/ab.sh ${ARGS[*]} — $(date -u '+%Y-%m-%d %H:%M UTC'), $HOSTS host(s) × $PAGES pages, ${TLS:+HTTPS ($(kb_tls_desc "$RUN/tls")), }WARC $WARC, load at end $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| build | CPU-µs/page | pages/s | state DB bytes/URI | runs |"
echo "|---|---:|---:|---:|---:|"
for ((k = 0; k < nb; k++)); do
	cpu=$(awk -F'\t' -v k="$k" -v n="$NPAGES" 'NR > 1 && $2 == k && $7 == 0 { print ($4 + $5) * 1e6 / n }' "$TSV" | kb_stats)
	pps=$(awk -F'\t' -v k="$k" -v n="$NPAGES" 'NR > 1 && $2 == k && $7 == 0 { print n / $3 }' "$TSV" | kb_stats)
	bpu=$(awk -F'\t' -v k="$k" 'NR > 1 && $2 == k && $3 > 0 { print $4 / $3 }' "$DBT" | kb_stats)
	runs=$(awk -F'\t' -v k="$k" 'NR > 1 && $2 == k && $7 == 0' "$TSV" | wc -l)
	printf '| %s | %s | %s | %s | %d/%d |\n' "${BUILDS[$k]#"$KB_ROOT"/}" \
		"$(awk '{ printf "%.1f (%.1f–%.1f)", $1, $2, $3 }' <<<"$cpu")" \
		"$(awk '{ printf "%.0f (%.0f–%.0f)", $1, $2, $3 }' <<<"$pps")" \
		"$(awk '{ printf "%.0f (%.0f–%.0f)", $1, $2, $3 }' <<<"$bpu")" "$runs" "$REPS"
done
if [ "$PERF" = 1 ]; then
	one 0 $((nb - 1)) perf
	perf report -i "$RUN/perf.data" --no-children -g none --percent-limit 0.7 --stdio 2>/dev/null |
		grep -E '^ +[0-9]' | head -40 >"$RUN/perf.top" || true
	echo
	echo "perf (self, ${BUILDS[$((nb - 1))]#"$KB_ROOT"/}): $RUN/perf.data"
	cat "$RUN/perf.top"
fi
