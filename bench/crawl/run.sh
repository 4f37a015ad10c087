#!/usr/bin/env bash
# bench/crawl/run.sh — whole crawls of a generated site: kria against the
# tools users would pick instead, side by side in one run.
#
# Sites (bench/lib/sitegen.c): "single" = 1 host x N pages (default 20,000),
# "multi" = H hosts x P pages (default 20 x 2,500), name-based virtual
# hosts h<i>.test on loopback addresses 127.1.x.y, served by nginx (one
# worker pinned to CPU 1, access log in the "kb" format: every run is
# checked against it). kria resolves the names through dnsmasq on
# 127.0.0.1 ([dns] servers); wget, wget2 and httrack through a private
# /etc/hosts bind-mounted in a mount namespace (the real one is never
# touched). Every client is pinned to CPU 0 (taskset) and measured by
# bench/lib/measure (wall, user+sys, peak RSS).
#
# Pass 1, full crawl from the host roots (clients interleaved, the order
# rotating each repetition): kria (snapshot: revisit = false, politeness
# off, WARC off / uncompressed / gzip default level), wget -r (with and
# without --warc-file), wget2 -r (--max-threads=1 and default), httrack.
# A run is valid when it exits 0 and nginx served every page of the site
# (each /p/N.html of each host answered 200 at least once).
# Pass 2, right after some pass-1 runs, over the unchanged site with their
# state: kria --revisit-now (conditional GETs, 304), the same with
# validators trusted from the start (no sampled full downloads), wget -N -r
# (If-Modified-Since, wget's default), wget -N -r --no-if-modified-since
# (HEAD requests), httrack --update. Requests, body bytes, time.
# httrack is slow (~100 pages/s crawling, ~20 URIs/s updating): it runs
# in the first --slow-reps repetitions only (1), and its update pass is
# stopped after KB_SLOW_LIMIT seconds (180; its rate is still reported).
# --other-reps N: the clients other than kria in the first N repetitions
# only (all of them by default; for a shorter run on a loaded machine).
#
# HTTPS (--tls "ecdsa rsa"): each site once per certificate type, nginx
# serving it over HTTP and HTTPS at once (bench/lib/tls.sh: a CA made for
# the run; kria trusts it through SSL_CERT_FILE, a copy of the system
# bundle plus that CA, so it loads as many CAs as on a real machine; wget
# and wget2 through --ca-certificate). The https clients (kria-https,
# kria-https-warcgz, wget-https, wget2-https, wget2-t1-https) crawl a copy
# of the site whose absolute links say https, interleaved with the http
# ones; the report adds handshakes, resumptions and bytes copied around
# the cipher per page (kria's end-of-run "tls:" line) and the HTTPS/HTTP
# ratios. Default clients with --tls: kria kria-warcgz kria-https
# kria-https-warcgz wget2 wget2-https.
#
# Usage: bench/crawl/run.sh [--sites "single multi"] [--pages N] [--tls TYPES]
#            [--hosts H --host-pages P] [--reps R] [--clients "..."]
#            [--no-update] [--valence V] [--slow-reps N] [--other-reps N]
#            [--kria PATH]
#            [--record] [--quick]
#        bench/crawl/run.sh --report RUN_DIR [--record]   (report again)
# See bench/README.md.
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
SITES="single multi"
PAGES=20000
HOSTS=20
HOST_PAGES=2500
REPS=3
CLIENTS=""
TLS=""
UPDATE=1
VALENCE=""
KRIA=${KRIA:-$KB_ROOT/build-bench/kria}
RECORD=0
REPORT_ONLY=""
SLOW_REPS=1
OTHER_REPS=""
SLOW_LIMIT=${KB_SLOW_LIMIT:-180}
SITE_DESC=()
CLIENT_CPU=${KB_CLIENT_CPU:-0}
RUN_LIMIT=${KB_RUN_LIMIT:-600}
TOTAL_LIMIT=${KB_TOTAL_LIMIT:-10800}

while [ $# -gt 0 ]; do
	case $1 in
	--sites) SITES=$2; shift 2 ;;
	--pages) PAGES=$2; shift 2 ;;
	--tls) TLS=$2; shift 2 ;;
	--hosts) HOSTS=$2; shift 2 ;;
	--host-pages) HOST_PAGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--clients) CLIENTS=$2; shift 2 ;;
	--no-update) UPDATE=0; shift ;;
	--valence) VALENCE=$2; shift 2 ;;
	--slow-reps) SLOW_REPS=$2; shift 2 ;;
	--other-reps) OTHER_REPS=$2; shift 2 ;;
	--kria) KRIA=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--quick) PAGES=2000; HOSTS=4; HOST_PAGES=500; REPS=1; shift ;;
	--report) REPORT_ONLY=$2; shift 2 ;;
	-h | --help) sed -n '2,50p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
num() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
num "$PAGES" 10 1000000 || kb_die "--pages: 10..1000000"
num "$HOSTS" 2 1000 || kb_die "--hosts: 2..1000"
num "$HOST_PAGES" 10 1000000 || kb_die "--host-pages: 10..1000000"
num "$REPS" 1 20 || kb_die "--reps: 1..20"
num "$SLOW_REPS" 0 20 || kb_die "--slow-reps: 0..20"
OTHER_REPS=${OTHER_REPS:-$REPS}
num "$OTHER_REPS" 1 20 || kb_die "--other-reps: 1..20"
[ -z "$VALENCE" ] || num "$VALENCE" 1 64 || kb_die "--valence: 1..64"
for s in $SITES; do [[ $s == single || $s == multi ]] || kb_die "--sites: single and/or multi"; done
for t in $TLS; do [[ $t == rsa || $t == ecdsa ]] || kb_die "--tls: rsa and/or ecdsa"; done
if [ -z "$CLIENTS" ]; then
	CLIENTS="kria kria-warc kria-warcgz wget wget-warc wget2-t1 wget2 httrack"
	[ -n "$TLS" ] && CLIENTS="kria kria-warcgz kria-https kria-https-warcgz wget2 wget2-https"
fi
for c in $CLIENTS; do
	case $c in kria | kria-warc | kria-warcgz | wget | wget-warc | wget2-t1 | wget2 | httrack) ;;
	kria-https | kria-https-warcgz | wget-https | wget2-https | wget2-t1-https)
		[ -n "$TLS" ] || kb_die "$c needs --tls" ;;
	*) kb_die "unknown client $c" ;; esac
done

kb_bound "$TOTAL_LIMIT" "${ARGS[@]}"

# --- clients -------------------------------------------------------------------
# client_cmd PASS CLIENT DIR: CMD (argv), for the site set up by site_up.
client_cmd() {
	local pass=$1 c=$2 d=$3
	local kconf=(crawl -c "$SITE_RUN/kria.conf" -o "crawl.state-dir=$d/state")
	# with --tls every kria run logs its end-of-run summary (the "tls:" line)
	[ -n "$TLS" ] && kconf+=(-o crawl.log-level=notice)
	local seeds=$SITE_RUN/seeds.txt ht=(-q -%! -c8 -%c0 -A1000000000 -r9999 -I0)
	local khttps=(env "SSL_CERT_FILE=${TLS_BUNDLE:-TLS/bundle.pem}" "$KRIA" crawl -c "$SITE_RUN/kria-https.conf" -o "crawl.state-dir=$d/state" -o crawl.log-level=notice)
	local ca=--ca-certificate=${TLS_CA:-TLS/ca.pem} tseeds=$SITE_RUN/seeds-https.txt
	case $pass:$c in
	1:kria-https) CMD=("${khttps[@]}" -o warc.enabled=false) ;;
	1:kria-https-warcgz) CMD=("${khttps[@]}") ;;
	1:wget-https) CMD=("${KB_WITH_HOSTS[@]}" wget -r -l inf -q "$ca" -P "$d/out" -i "$tseeds") ;;
	1:wget2-https) CMD=("${KB_WITH_HOSTS[@]}" wget2 -r -l 0 -q "$ca" -P "$d/out" -i "$tseeds") ;;
	1:wget2-t1-https) CMD=("${KB_WITH_HOSTS[@]}" wget2 -r -l 0 --max-threads=1 -q "$ca" -P "$d/out" -i "$tseeds") ;;
	1:kria) CMD=("$KRIA" "${kconf[@]}" -o warc.enabled=false) ;;
	# https: kria-https.conf, the bundle with the run's CA
	1:kria-warc) CMD=("$KRIA" "${kconf[@]}" -o warc.compress=none) ;;
	1:kria-warcgz) CMD=("$KRIA" "${kconf[@]}") ;;
	2:kria-304) CMD=("$KRIA" "${kconf[@]}" -o warc.enabled=false --revisit-now) ;;
	2:kria-304-trusted) CMD=("$KRIA" "${kconf[@]}" -o warc.enabled=false -o adaptive.trust-sample=0
		-o adaptive.trust-probation=0 --revisit-now) ;;
	1:wget) CMD=("${KB_WITH_HOSTS[@]}" wget -r -l inf -q -P "$d/out" -i "$seeds") ;;
	1:wget-warc) CMD=("${KB_WITH_HOSTS[@]}" wget -r -l inf -q -P "$d/out" --warc-file="$d/out/wget" -i "$seeds") ;;
	2:wget-N) CMD=("${KB_WITH_HOSTS[@]}" wget -N -r -l inf -q -P "$d/out" -i "$seeds") ;;
	2:wget-N-head) CMD=("${KB_WITH_HOSTS[@]}" wget -N --no-if-modified-since -r -l inf -q -P "$d/out" -i "$seeds") ;;
	1:wget2-t1) CMD=("${KB_WITH_HOSTS[@]}" wget2 -r -l 0 --max-threads=1 -q -P "$d/out" -i "$seeds") ;;
	1:wget2) CMD=("${KB_WITH_HOSTS[@]}" wget2 -r -l 0 -q -P "$d/out" -i "$seeds") ;;
	1:httrack) CMD=("${KB_WITH_HOSTS[@]}" httrack "${SEED_URLS[@]}" -O "$d/out" "${ht[@]}") ;;
	2:httrack-update) CMD=("${KB_WITH_HOSTS[@]}" httrack "${SEED_URLS[@]}" -O "$d/out" "${ht[@]}" --update) ;;
	*) kb_die "no command for $c in pass $pass" ;;
	esac
}
# update passes that follow a pass-1 client (over its state)
updates_of() {
	[ $UPDATE = 1 ] || return 0
	case $1 in
	kria) echo "kria-304 kria-304-trusted" ;;
	wget) echo "wget-N wget-N-head" ;;
	httrack) echo httrack-update ;;
	esac
}
CMD_TEXT() { # CMD for the report: no namespace prefix, no run paths
	local a=("${CMD[@]}")
	[ "${a[0]}" = unshare ] && a=("${a[@]:${#KB_WITH_HOSTS[@]}}")
	printf '%s ' "${a[@]}" | sed "s|$RUN/work/[^ ]*/|DIR/|g; s|$SITE_RUN/||g; s|$RUN/tls-[a-z]*/|TLS/|g; s|$KB_ROOT/||g; s/ $//"
}

# --- sites ---------------------------------------------------------------------
# site_up NAME [CERT]: generate the site, start nginx and dnsmasq for it;
# with CERT (rsa, ecdsa), an https copy of it beside (site label NAME-CERT).
site_up() {
	if [ "$1" = single ]; then NH=1 NP=$PAGES; else NH=$HOSTS NP=$HOST_PAGES; fi
	SITE_LABEL=$1${2:+-$2}
	SITE_RUN=$RUN/$SITE_LABEL
	mkdir -p "$SITE_RUN"
	SITE=$KB_OUT/site-crawl-${NH}x$NP
	kb_log "site $SITE_LABEL: $NH host(s) x $NP pages in ${SITE#"$KB_ROOT"/}"
	kb_site "$SITE" -H "$NH" -p "$NP" -u "http://{host}:$PORT"
	unset KB_NGINX_TLS_DIR KB_NGINX_TLS_ROOT
	TLS_CA="" TLS_BUNDLE="" TLS_DESC=""
	if [ -n "${2:-}" ]; then
		local tdir=$RUN/tls-$2 tsite=$KB_OUT/site-crawl-https-${NH}x$NP
		kb_tls_certs "$tdir" "$2" "$NH"
		kb_site "$tsite" -H "$NH" -p "$NP" -u "https://{host}:$TPORT"
		export KB_NGINX_TLS_DIR=$tdir KB_NGINX_TLS_ROOT=$tsite KB_NGINX_WANT_TLS_PORT=$TPORT
		TLS_CA=$tdir/ca.pem
		TLS_BUNDLE=$tdir/bundle.pem
		cat "$(openssl version -d | sed 's/.*"\(.*\)"/\1/')/cert.pem" "$TLS_CA" >"$TLS_BUNDLE" 2>/dev/null || cp "$TLS_CA" "$TLS_BUNDLE"
		TLS_DESC=$(kb_tls_desc "$tdir")
		cat "$tsite"/h*.test/p/*.html >/dev/null 2>&1 || true
	fi
	local copies=1
	[ -n "${2:-}" ] && copies=2
	export KB_NGINX_LISTEN KB_NGINX_FILES=$((NH * (NP + 20) * copies))
	KB_NGINX_LISTEN=$(kb_host_addrs "$NH" | tr '\n' ' ')
	kb_nginx_start "$SITE_RUN/nginx" "$SITE" vhosts
	kb_dns_start "$SITE_RUN/dns" "$NH"
	kb_hosts_file "$NH" "$SITE_RUN/hosts"
	kb_with_hosts_argv "$SITE_RUN/hosts"
	SEED_URLS=()
	for ((i = 0; i < NH; i++)); do SEED_URLS+=("http://h$i.test:$PORT/"); done
	printf '%s\n' "${SEED_URLS[@]}" >"$SITE_RUN/seeds.txt"
	for ((i = 0; i < NH; i++)); do echo "https://h$i.test:$TPORT/"; done >"$SITE_RUN/seeds-https.txt"
	# loopback addresses need [http] allow-private-addresses (a key older
	# builds do not know: probed)
	local http_sec=""
	printf '[crawl]\nstate-dir = %s/probe-state\n[http]\nallow-private-addresses = true\n' "$SITE_RUN" >"$SITE_RUN/probe.conf"
	"$KRIA" crawl -c "$SITE_RUN/probe.conf" 2>&1 | grep -q 'unknown' ||
		http_sec=$'[http]\nallow-private-addresses = true'
	local v=${VALENCE:-$([ "$NH" = 1 ] && echo 64 || echo 16)}
	KRIA_VALENCE=$v
	kb_crawl_conf "$SITE_RUN/seeds.txt" "$v" "$KB_DNS_PORT" "$http_sec" >"$SITE_RUN/kria.conf"
	kb_crawl_conf "$SITE_RUN/seeds-https.txt" "$v" "$KB_DNS_PORT" "$http_sec" >"$SITE_RUN/kria-https.conf"
	ACCESS=$SITE_RUN/nginx/access.log
}
site_down() {
	kb_nginx_stop
	kb_dns_stop
}

# measure_run SITE REP PASS CLIENT DIR: one measured run, one line of runs.tsv.
measure_run() {
	local site=$1 rep=$2 pass=$3 c=$4 d=$5 a0 cpu0 cpu1 load1 wall user sys rss code n pages s200 s304 other body cond
	client_cmd "$pass" "$c" "$d"
	mkdir -p "$d/out"
	load1=$(cut -d' ' -f1 /proc/loadavg)
	a0=$(wc -l <"$ACCESS")
	cpu0=$(kb_cpu_ns "$KB_NGINX_WORKER")
	set +e
	local limit=$RUN_LIMIT
	[ "$c" = httrack-update ] && limit=$SLOW_LIMIT
	(cd "$d" && kb_measure "$RUN/m.tmp" "$limit" taskset -c "$CLIENT_CPU" "${CMD[@]}") \
		>"$RUN/logs/$site.$c.$rep.log" 2>&1
	set -e
	cpu1=$(kb_cpu_ns "$KB_NGINX_WORKER")
	read -r wall user sys rss code <"$RUN/m.tmp"
	# nginx writes a request's log line when the response is done: all of
	# this run's lines are there once the client exited.
	local stats
	stats=$(tail -n +"$((a0 + 1))" "$ACCESS" | awk -v pass="$pass" '
		{ n++; b += $3
		  if ($2 == 200) s200++; else if ($2 == 304) s304++; else other++
		  if ($6 != "\"-\"" || $7 != "\"-\"") cond++
		  if ($5 ~ /^\/p\/[0-9]+\.html$/ && ($2 == 200 || (pass == 2 && $2 == 304)) && !seen[$1 " " $5]++) pages++ }
		END { printf "%d %d %d %d %d %d %d", n, pages, s200, s304, other, b, cond }')
	local warc=0
	if [ -d "$d/state/warcs" ]; then warc=$(find "$d/state/warcs" -type f -name '*.warc*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'); fi
	[ -f "$d/out/wget.warc.gz" ] && warc=$(stat -c %s "$d/out/wget.warc.gz")
	read -r n pages s200 s304 other body cond <<<"$stats"
	# kria's end-of-run "tls: H handshakes (R resumed), B bytes copied ..."
	local tls="- - -"
	[[ $c == kria-https* ]] && tls=$(awk '/tls: [0-9]+ handshakes/ { for (i = 1; i <= NF; i++) if ($i == "tls:") { h = $(i + 1); r = substr($(i + 3), 2); b = $(i + 5) } }
		END { if (h != "") print h, r, b; else print "- - -" }' "$RUN/logs/$site.$c.$rep.log")
	local ok=1
	[ "$code" = 0 ] && [ "$pages" = $((NH * NP)) ] || ok=0
	# pass 2 of wget -N with If-Modified-Since stops at a 304 root: kept,
	# flagged incomplete (not ok) but reported
	printf '%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$site" "$rep" "$pass" "$c" \
		"$wall" "$user" "$sys" "$rss" "$code" "$n" "$pages" "$s200" "$s304" "$other" "$body" "$cond" "$warc" \
		"$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')" "$ok" "$load1" "${tls// /,}" >>"$TSV"
	kb_log "$site rep $rep pass $pass $c: $(awk -v n="$((NH * NP))" -v w="$wall" -v u="$user" -v s="$sys" \
		'BEGIN { printf "%.2f s, %.0f pages/s, %.0f CPU-µs/page", w, n / w, (u + s) * 1e6 / n }'), exit $code, $n requests ($s200 × 200, $s304 × 304), $pages/$((NH * NP)) pages$([ $ok = 1 ] || echo ' — INCOMPLETE')"
}

read -r -a CLIENT_LIST <<<"$CLIENTS"
if [ -n "$REPORT_ONLY" ]; then
	# report again from a run directory (its meta.sh: what the run saved)
	[ -f "$REPORT_ONLY/meta.sh" ] || kb_die "$REPORT_ONLY: no meta.sh (not a bench/crawl run directory)"
	RUN=$(cd "$REPORT_ONLY" && pwd)
	TSV=$RUN/runs.tsv
	# shellcheck disable=SC1091
	. "$RUN/meta.sh"
	kb_with_hosts_argv /etc/hosts
else
for t in wget wget2 httrack dnsmasq unshare taskset nginx; do
	command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || kb_die "$t not found; run make deps"
done
[ -x "$KRIA" ] || kb_die "$KRIA not built (make BUILD=build-bench all)"
KRIA=$(cd "$(dirname "$KRIA")" && pwd)/$(basename "$KRIA") # runs start in their own directory
"$KRIA" crawl --help | grep -q -- --revisit-now || { kb_log "warning: $KRIA has no --revisit-now: no kria update pass"; }
[ "$(id -u)" -eq 0 ] || kb_die "needs root: wget/wget2/httrack get a private /etc/hosts through unshare --mount"
kb_build_tools

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$KB_OUT/crawl/run-$STAMP
mkdir -p "$RUN/logs" "$RUN/work"
ln -sfn "run-$STAMP" "$KB_OUT/crawl/last"
MACHINE_MD=$(kb_machine_md)
REV=$(git -C "$KB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$KB_ROOT" diff --quiet HEAD -- src include 2>/dev/null || REV+=" + uncommitted changes in src/include"
TSV=$RUN/runs.tsv
printf 'site\trep\tpass\tclient\twall_s\tuser_s\tsys_s\tmaxrss_kb\texit\trequests\tpages_ok\tst200\tst304\tother\tbody_bytes\tcond\twarc_bytes\tnginx_cpu_s\tok\tload1\ttls_handshakes,resumed,copied\n' >"$TSV"

# One port for the whole run: sitegen writes absolute URLs (sitemap,
# cross-host links) with it. The same for HTTPS.
PORT="" TPORT=""
for _ in 1 2 3 4 5 6 7 8; do
	p=$(kb_random_port)
	kb__port_free "$p" && { PORT=$p; break; }
done
for _ in 1 2 3 4 5 6 7 8; do
	p=$(kb_random_port)
	[ "$p" != "$PORT" ] && kb__port_free "$p" && { TPORT=$p; break; }
done
[ -n "$PORT" ] && [ -n "$TPORT" ] || kb_die "no free port"
export KB_NGINX_WANT_PORT=$PORT KB_NGINX_ACCESS_LOG=1

nclients=${#CLIENT_LIST[@]}
for site_cert in $(for s in $SITES; do for t in ${TLS:-none}; do echo "$s:$t"; done; done); do
	site=${site_cert%%:*} cert=${site_cert#*:}
	[ "$cert" = none ] && cert=""
	site_up "$site" "$cert"
	site=$SITE_LABEL
	# unmeasured warm-up: the site's files into the page cache
	cat "$SITE"/h*.test/p/*.html >/dev/null 2>&1 || find "$SITE" -name '*.html' -exec cat {} + >/dev/null
	SITE_DESC[${#SITE_DESC[@]}]="$site|$NH|$NP|$KRIA_VALENCE|$(kb_nginx_cache_desc)|$TLS_DESC"
	for ((rep = 1; rep <= REPS; rep++)); do
		for ((k = 0; k < nclients; k++)); do
			c=${CLIENT_LIST[$(((k + rep - 1) % nclients))]}
			[ "$c" = httrack ] && [ "$rep" -gt "$SLOW_REPS" ] && continue
			[[ $c != kria* ]] && [ "$rep" -gt "$OTHER_REPS" ] && continue
			d=$RUN/work/$site-$c
			rm -rf "$d"
			measure_run "$site" "$rep" 1 "$c" "$d"
			ups=$(updates_of "$c")
			if [ -n "$ups" ] && [ -d "$d" ]; then
				[ "$c" = kria ] && cp -a "$d" "$d.copy"
				for u in $ups; do
					# each kria variant starts from the same first-pass state
					if [ "$u" = kria-304-trusted ]; then rm -rf "$d"; mv "$d.copy" "$d"; fi
					measure_run "$site" "$rep" 2 "$u" "$d"
				done
			fi
			rm -rf "$d" "$d.copy"
		done
	done
	site_down
done
rm -f "$RUN/m.tmp"
declare -p SITE_DESC MACHINE_MD ARGS CLIENTS REPS REV PORT TPORT KRIA UPDATE CLIENT_CPU SITES TLS >"$RUN/meta.sh"
fi

# --- report --------------------------------------------------------------------
col() { # col SITE PASS CLIENT AWK-EXPR [all] -> values of valid runs (all: every run)
	awk -F'\t' -v s="$1" -v p="$2" -v c="$3" -v all="${5:-}" \
		"NR > 1 && \$1 == s && \$3 == p && \$4 == c && (\$19 == 1 || all != \"\") { print $4 }" "$TSV"
}
fmt() { awk -v p="$2" '{ if ($1 == "-") print "–"; else printf "%." p "f (%." p "f–%." p "f)", $1, $2, $3 }' <<<"$1"; }
med() { cut -d' ' -f1 <<<"$1"; }

REPORT=$RUN/report.md
{
	echo "### Crawl benchmark: kria, wget, wget2, httrack ($REPS repetitions)"
	echo
	echo "$MACHINE_MD"
	echo "- kria: ${KRIA#"$KB_ROOT"/}, source at $REV"
	echo "- command: \`bench/crawl/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- versions: $(wget --version | head -1 | cut -d' ' -f1-3), $(wget2 --version | head -1 | cut -d' ' -f1-3), $(httrack --version 2>&1 | head -1 | cut -d' ' -f1-3 | tr -d '\n'), nginx $(nginx -v 2>&1 | sed 's/.*\///')"
	echo "- server: nginx, 1 worker on CPU ${KB_NGINX_CPU:-1}, keep-alive, sendfile, access log on (every run is checked against it); names: dnsmasq for kria, a private /etc/hosts (unshare --mount) for the others; clients pinned with \`taskset -c $CLIENT_CPU\`"
	echo "- medians (min–max) of the valid runs; a run is valid when it exits 0 and nginx answered every page of the site 200 (pass 2: 200 or 304)"
	echo
	for sd in "${SITE_DESC[@]}"; do
		IFS='|' read -r site nh np val cache tlsdesc <<<"$sd"
		n=$((nh * np))
		SITE_RUN=$RUN/$site
		SEED_URLS=("<the $nh host roots>")
		echo "#### $([[ $site == single* ]] && echo "1 host × $np pages" || echo "$nh hosts × $np pages") ($n pages + $((nh * 20)) other files: /, robots.txt, sitemap.xml, a stylesheet, 16 images per host)${tlsdesc:+, HTTP and HTTPS}"
		echo
		echo "kria: \`host-valence = $val\`, politeness delays 0, \`revisit = false\`. nginx: $cache.${tlsdesc:+ HTTPS: $tlsdesc certificate signed by a CA made for the run, the defaults of nginx (TLS 1.3, 16 KiB records, shared session cache and tickets), no sendfile over TLS.}"
		echo
		echo "| client | command | pages/s | wall s | CPU-µs/page | peak RSS MiB | WARC MiB | requests | nginx CPU-µs/req | valid |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
		: >"$RUN/medians.$site"
		for c in "${CLIENT_LIST[@]}"; do
			NH=$nh NP=$np client_cmd 1 "$c" "$RUN/work/$site-$c"
			valid=$(col "$site" 1 "$c" 1 | wc -l)
			total=$(col "$site" 1 "$c" 1 all | wc -l)
			if [ "$valid" -eq 0 ]; then
				echo "| $c | \`$(CMD_TEXT)\` | – | – | – | – | – | – | – | 0/$total |"
				continue
			fi
			pps=$(col "$site" 1 "$c" "$n / \$5" | kb_stats)
			wall=$(col "$site" 1 "$c" '$5' | kb_stats)
			cpu=$(col "$site" 1 "$c" "(\$6 + \$7) * 1e6 / $n" | kb_stats)
			rss=$(col "$site" 1 "$c" '$8 / 1024' | kb_stats)
			warc=$(col "$site" 1 "$c" '$17 / 1048576' | kb_stats)
			reqs=$(col "$site" 1 "$c" '$10' | kb_stats)
			ncpu=$(col "$site" 1 "$c" '$18 * 1e6 / $10' | kb_stats)
			[ "$(med "$warc")" = 0 ] && warcs="–" || warcs=$(fmt "$warc" 1)
			echo "| $c | \`$(CMD_TEXT)\` | $(fmt "$pps" 0) | $(fmt "$wall" 2) | $(fmt "$cpu" 0) | $(fmt "$rss" 1) | $warcs | $(med "$reqs") | $(med "$ncpu" | awk '{ printf "%.1f", $1 }') | $valid/$total |"
			echo "$c $(med "$pps") $(med "$cpu")" >>"$RUN/medians.$site"
		done
		echo
		m() { awk -v c="$1" -v f="$2" '$1 == c { print $f }' "$RUN/medians.$site"; }
		ratio() { # ratio KRIA OTHER LABEL
			local kp op kc oc
			kp=$(m "$1" 2) op=$(m "$2" 2) kc=$(m "$1" 3) oc=$(m "$2" 3)
			[ -n "$kp" ] && [ -n "$op" ] || return 0
			awk -v a="$1" -v b="$2" -v kp="$kp" -v op="$op" -v kc="$kc" -v oc="$oc" \
				'BEGIN { printf "- %s / %s: %.2f× pages/s, %.2f× less CPU per page\n", a, b, kp / op, oc / kc }'
		}
		ratio kria wget2
		ratio kria wget2-t1
		ratio kria wget
		ratio kria-warc wget-warc
		ratio kria-warcgz wget-warc
		ratio kria httrack
		ratio kria-https wget2-https
		ratio kria-https wget2-t1-https
		ratio kria-https wget-https
		ratio kria-https-warcgz wget-https
		if [ -n "$tlsdesc" ]; then
			# HTTPS against HTTP, same site, same run; kria's TLS figures
			for pair in "kria-https kria" "kria-https-warcgz kria-warcgz" "wget2-https wget2" "wget2-t1-https wget2-t1" "wget-https wget"; do
				read -r a b <<<"$pair"
				[ -n "$(m "$a" 2)" ] && [ -n "$(m "$b" 2)" ] || continue
				awk -v a="$a" -v b="$b" -v ap="$(m "$a" 2)" -v bp="$(m "$b" 2)" -v ac="$(m "$a" 3)" -v bc="$(m "$b" 3)" \
					'BEGIN { printf "- %s / %s: %.2f× the CPU per page (%.1f more CPU-µs), %.2f× the pages/s\n", a, b, ac / bc, ac - bc, ap / bp }'
			done
			for c in kria-https kria-https-warcgz; do
				awk -F'\t' -v s="$site" -v c="$c" -v n="$n" 'NR > 1 && $1 == s && $3 == 1 && $4 == c && $19 == 1 && $21 != "-,-,-" {
					split($21, t, ","); print t[1], t[2], t[3] / n, t[1] / $5 }' "$TSV" | sort -k3 -g |
					awk -v c="$c" '{ h[NR] = $1; r[NR] = $2; b[NR] = $3; hs[NR] = $4 } END { if (!NR) exit
						m = int((NR + 1) / 2)
						printf "- %s TLS (median run of %d by bytes): %d handshakes, %d full and %d resumed, %.0f handshakes/s, %.0f bytes copied around the cipher per page (%.0f–%.0f)\n", c, NR, h[m], h[m] - r[m], r[m], hs[m], b[m], b[1], b[NR] }'
			done
		fi
		kp=$(m kria 2) kc=$(m kria 3) wp=$(m kria-warc 2) wc_=$(m kria-warc 3) gp=$(m kria-warcgz 2) gc=$(m kria-warcgz 3)
		w2=$(m wget2 2) ww=$(m wget-warc 2)
		awk -v kp="$kp" -v kc="$kc" -v wp="$wp" -v wc="$wc_" -v gp="$gp" -v gc="$gc" -v w2="$w2" -v ww="$ww" 'BEGIN {
			t = "met"; tm = "MISSED"
			if (kp != "") printf "- target ≥ 10,000 pages/s and ≤ 100 CPU-µs/page without compression: WARC off %s (%.0f pages/s, %.0f µs)", (kp >= 10000 && kc <= 100 ? t : tm), kp, kc
			if (wp != "") printf ", WARC uncompressed %s (%.0f pages/s, %.0f µs)", (wp >= 10000 && wc <= 100 ? t : tm), wp, wc
			if (kp != "") printf "\n"
			if (kp != "" && w2 != "") printf "- target ≥ 3× wget2 (default threads): %s (%.2f×)\n", (kp >= 3 * w2 ? t : tm), kp / w2
			if (gp != "") printf "- target ≥ 5,000 pages/s with gzip WARC: %s (%.0f pages/s, %.0f µs)\n", (gp >= 5000 ? t : tm), gp, gc
			if (gp != "" && ww != "") printf "- target ≥ 6.5× wget --warc-file: %s (%.2f×)\n", (gp >= 6.5 * ww ? t : tm), gp / ww }'
		sp=$(m kria-https 2) sc=$(m kria-https 3) w2s=$(m wget2-https 2)
		awk -v sp="$sp" -v sc="$sc" -v kc="$kc" -v w2s="$w2s" 'BEGIN {
			if (sp != "" && kc != "") printf "- target HTTPS CPU per page ≤ 1.2× HTTP: %s (%.2f×: %.0f against %.0f µs)\n", (sc <= 1.2 * kc ? "met" : "MISSED"), sc / kc, sc, kc
			if (sp != "" && w2s != "") printf "- target HTTPS ≥ 3× wget2 over HTTPS: %s (%.2f×)\n", (sp >= 3 * w2s ? "met" : "MISSED"), sp / w2s }'
		echo
		if awk -F'\t' -v s="$site" 'NR > 1 && $1 == s && $3 == 2 { f = 1 } END { exit !f }' "$TSV"; then
			echo "Pass 2 over the unchanged site, each with its pass-1 state (same repetition): requests, what nginx answered, body bytes against pass 1's."
			echo
			echo "| client | command | URIs/s | wall s | CPU-µs/request | requests | 200 | 304 | conditional | body MiB | body vs pass 1 | pages covered | complete |"
			echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			for c in kria-304 kria-304-trusted wget-N wget-N-head httrack-update; do
				total=$(col "$site" 2 "$c" 1 all | wc -l)
				[ "$total" -gt 0 ] || continue
				case $c in kria*) base=kria ;; wget*) base=wget ;; *) base=httrack ;; esac
				NH=$nh NP=$np client_cmd 2 "$c" "$RUN/work/$site-$base"
				valid=$(col "$site" 2 "$c" 1 | wc -l)
				rate=$(col "$site" 2 "$c" '$10 / $5' all | kb_stats)
				wall=$(col "$site" 2 "$c" '$5' all | kb_stats)
				cpu=$(col "$site" 2 "$c" '($6 + $7) * 1e6 / ($10 ? $10 : 1)' all | kb_stats)
				reqs=$(col "$site" 2 "$c" '$10' all | kb_stats)
				s200=$(col "$site" 2 "$c" '$12' all | kb_stats)
				s304=$(col "$site" 2 "$c" '$13' all | kb_stats)
				cond=$(col "$site" 2 "$c" '$16' all | kb_stats)
				body=$(col "$site" 2 "$c" '$15 / 1048576' all | kb_stats)
				pages=$(col "$site" 2 "$c" '$11' all | kb_stats)
				# body bytes against the same repetition's pass 1 of the base client
				vs=$(awk -F'\t' -v s="$site" -v c="$c" -v b="$base" '
					NR > 1 && $1 == s && $3 == 1 && $4 == b { one[$2] = $15 }
					NR > 1 && $1 == s && $3 == 2 && $4 == c && one[$2] > 0 { printf "%.2f\n", 100 * (1 - $15 / one[$2]) }' "$TSV" | kb_stats)
				echo "| $c | \`$(CMD_TEXT)\` | $(fmt "$rate" 0) | $(fmt "$wall" 2) | $(fmt "$cpu" 0) | $(med "$reqs") | $(med "$s200") | $(med "$s304") | $(med "$cond") | $(fmt "$body" 2) | $(med "$vs" | awk '{ if ($1 == "-") print "–"; else printf "%.1f %% fewer", $1 }') | $(med "$pages")/$n | $valid/$total |"
				echo "$c $(med "$rate") $(med "$vs")" >>"$RUN/medians.$site"
			done
			echo
			r=$(m kria-304 2) v=$(m kria-304 3) rt=$(m kria-304-trusted 2) vt=$(m kria-304-trusted 3)
			awk -v r="$r" -v v="$v" -v rt="$rt" -v vt="$vt" 'BEGIN {
				if (r != "") printf "- target 304 pass ≥ 20,000 revisits/s and ≥ 95 %% fewer body bytes: defaults %s (%.0f/s, %.1f %%)", (r >= 20000 && v >= 95 ? "met" : "MISSED"), r, v
				if (rt != "") printf "; validators trusted %s (%.0f/s, %.1f %%)", (rt >= 20000 && vt >= 95 ? "met" : "MISSED"), rt, vt
				if (r != "") printf "\n" }'
			echo
		fi
	done
	awk -F'\t' 'NR > 1 { print $20 }' "$TSV" | kb_stats |
		awk '{ printf "- load average (1 min) before each run: median %s, %s–%s (2 CPUs; above ~0.5 other work shares the cores)\n", $1, $2, $3 }'
	echo
	echo "Raw runs: \`${RUN#"$KB_ROOT"/}/runs.tsv\`."
} >"$REPORT"
cat "$REPORT"

if [ $RECORD = 1 ]; then
	RES=$KB_ROOT/bench/RESULTS.md
	tag=crawl-$(echo $SITES | tr ' ' '+')
	begin="<!-- $tag:begin (written by bench/crawl/run.sh --record) -->"
	end="<!-- $tag:end -->"
	if [ -f "$RES" ] && grep -qF "$begin" "$RES"; then
		awk -v b="$begin" -v e="$end" -v f="$REPORT" '
			$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
			$0 == e { skip = 0 }
			!skip' "$RES" >"$RES.tmp" && mv "$RES.tmp" "$RES"
	else
		{ echo; echo "$begin"; cat "$REPORT"; echo "$end"; } >>"$RES"
	fi
	kb_log "recorded in bench/RESULTS.md"
fi
