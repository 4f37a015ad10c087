#!/usr/bin/env bash
# bench/fetch/run.sh — kria's fetch engine against wget and wget2.
#
# Generates a deterministic site of N ≈10 KB pages, serves it with nginx
# (one worker pinned to CPU 1, keep-alive, open-file cache, no access log),
# and fetches the same URL list with each client pinned to CPU 0, side by
# side, R repetitions (interleaved, rotating the order). Reports per client
# the median (min–max) of pages/s, wall time, client CPU-µs per page, peak
# RSS, and nginx's CPU time during the run, plus the ratios of kria to wget
# and wget2. Each run is checked: exit status 0 and nginx served exactly N
# requests. See bench/README.md.
#
# Usage: bench/fetch/run.sh [--pages N] [--reps R] [--rounds K --pause S]
#            [--conns "16 32 64 128 256"]
#            [--clients "kria wget wget2-t1 wget2"] [--kria PATH] [--record]
#            [--quick]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"
# shellcheck source=../lib/nginx.sh
. "$HERE/../lib/nginx.sh"
# shellcheck source=../lib/tls.sh
. "$HERE/../lib/tls.sh"

ARGS=("$@")
PAGES=20000
REPS=3
ROUNDS=1
PAUSE=0
CONNS="16 32 64 128 256"
CLIENTS=""
KRIA=${KRIA:-$KB_ROOT/build-bench/kria}
RECORD=0
FETCH_TLS=""
CLIENT_CPU=${KB_CLIENT_CPU:-0}
RUN_LIMIT=${KB_RUN_LIMIT:-300}
TOTAL_LIMIT=${KB_TOTAL_LIMIT:-5400}

while [ $# -gt 0 ]; do
	case $1 in
	--pages) PAGES=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--pause) PAUSE=$2; shift 2 ;;
	--conns) CONNS=$2; shift 2 ;;
	--clients) CLIENTS=$2; shift 2 ;;
	--kria) KRIA=$2; shift 2 ;;
	--tls) FETCH_TLS=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--quick) PAGES=2000; REPS=1; shift ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
[[ $PAGES =~ ^[0-9]+$ && $PAGES -ge 1 && $PAGES -le 1000000 ]] || kb_die "--pages: 1..1000000"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 50 ]] || kb_die "--reps: 1..50"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 && $ROUNDS -le 10 ]] || kb_die "--rounds: 1..10"
[[ $PAUSE =~ ^[0-9]+$ && $PAUSE -le 1800 ]] || kb_die "--pause: 0..1800 seconds"
[[ -z $FETCH_TLS || $FETCH_TLS == rsa || $FETCH_TLS == ecdsa ]] || kb_die "--tls: rsa or ecdsa"

kb_bound "$TOTAL_LIMIT" "${ARGS[@]}"

for t in wget wget2 taskset curl cc; do
	command -v "$t" >/dev/null || kb_die "$t not found; run make deps"
done
[ "$(nproc)" -ge 2 ] || kb_log "warning: one CPU only; client and server share it"

# --- clients, site, server, URL list ----------------------------------------
# shellcheck source=setup.sh
. "$HERE/setup.sh"
fetch_kria_caps
if [ -z "$CLIENTS" ]; then
	if [ $KRIA_OK = 1 ]; then
		CLIENTS="kria"
		if [ $KRIA_CONNS = 1 ]; then
			# the default itself is measured as "kria"
			for n in $CONNS; do
				[ "$n" = "$KRIA_DEFAULT_CONNS" ] || CLIENTS+=" kria-c$n"
			done
		fi
	else
		kb_log "warning: $KRIA has no 'fetch --input'; measuring wget and wget2 only"
	fi
	CLIENTS+=" wget wget2-t1 wget2"
	# HTTPS beside HTTP: kria's default and wget2's, both ways
	[ -n "$FETCH_TLS" ] && CLIENTS="kria kria-https wget2 wget2-https"
fi
read -r -a CLIENT_LIST <<<"$CLIENTS"
KRIA_OK_DESC="${KRIA#"$KB_ROOT"/}"
[ $KRIA_OK = 1 ] || KRIA_OK_DESC+=" (no list mode: not measured)"
LIST=LIST
for c in "${CLIENT_LIST[@]}"; do client_cmd "$c"; done # validate names early

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$KB_OUT/fetch/run-$STAMP
mkdir -p "$RUN/logs"
ln -sfn "run-$STAMP" "$KB_OUT/fetch/last"
MACHINE_MD=$(kb_machine_md)
REV=$(git -C "$KB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$KB_ROOT" diff --quiet HEAD -- src include 2>/dev/null || REV+=" + uncommitted changes in src/include"
fetch_setup "$PAGES" "$RUN"

# --- runs --------------------------------------------------------------------
TSV=$RUN/runs.tsv
printf 'rep\tclient\twall_s\tuser_s\tsys_s\tmaxrss_kb\texit\tnginx_cpu_s\trequests\tnginx_errors\tok\tself_pages\tself_wall_s\tload1\ttls_handshakes\ttls_resumed\ttls_copied\n' >"$TSV"
nclients=${#CLIENT_LIST[@]}
TOTAL_REPS=$((REPS * ROUNDS))
for ((rep = 1; rep <= TOTAL_REPS; rep++)); do
	if [ "$rep" -gt 1 ] && [ $(((rep - 1) % REPS)) = 0 ] && [ "$PAUSE" -gt 0 ]; then
		kb_log "round $(((rep - 1) / REPS)) done; pausing ${PAUSE}s before the next"
		sleep "$PAUSE"
	fi
	for ((k = 0; k < nclients; k++)); do
		c=${CLIENT_LIST[$(((k + rep - 1) % nclients))]}
		client_cmd "$c"
		log=$RUN/logs/$c.$rep.log
		load1=$(cut -d' ' -f1 /proc/loadavg)
		err0=$(kb_nginx_errors)
		req0=$(kb_nginx_requests)
		cpu0=$(kb_cpu_ns "$KB_NGINX_WORKER")
		set +e
		kb_measure "$RUN/m.tmp" "$RUN_LIMIT" taskset -c "$CLIENT_CPU" "${CMD[@]}" >"$log" 2>&1
		set -e
		cpu1=$(kb_cpu_ns "$KB_NGINX_WORKER")
		req1=$(kb_nginx_requests)
		errs=$(($(kb_nginx_errors) - err0))
		read -r wall user sys rss code <"$RUN/m.tmp"
		reqs=$((req1 - req0 - 1)) # minus the second status request itself
		ok=1
		[ "$code" = 0 ] && [ "$reqs" = "$PAGES" ] && [ "$errs" = 0 ] || ok=0
		# kria's own summary: pages fetched, errors, its wall time
		spages=- swall=- th=- tr=- tc=-
		if [[ $c == kria* ]]; then
			spages=$(awk '$1 == "pages:" { print $2 }' "$log")
			swall=$(awk '$1 == "wall-s:" { print $2 }' "$log")
			th=$(awk '$1 == "tls-handshakes:" { print $2 }' "$log")
			tr=$(awk '$1 == "tls-resumed:" { print $2 }' "$log")
			tc=$(awk '$1 == "tls-copied-bytes:" { print $2 }' "$log")
			[ "$spages" = "$PAGES" ] && [ "$(awk '$1 == "errors:" { print $2 }' "$log")" = 0 ] || ok=0
		fi
		ncpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
		printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$c" "$wall" "$user" "$sys" "$rss" \
			"$code" "$ncpu" "$reqs" "$errs" "$ok" "${spages:--}" "${swall:--}" "$load1" "${th:--}" "${tr:--}" "${tc:--}" >>"$TSV"
		kb_log "rep $rep $c: $(awk -v n="$PAGES" -v w="$wall" -v u="$user" -v s="$sys" \
			'BEGIN { printf "%.2f s, %.0f pages/s, %.0f CPU-µs/page", w, n / w, (u + s) * 1e6 / n }'), exit $code, $reqs requests, $errs nginx errors$([ $ok = 1 ] || echo ' — FAILED')"
	done
done
rm -f "$RUN/m.tmp"
NGINX_CACHE=$(kb_nginx_cache_desc)
kb_nginx_stop

# --- report --------------------------------------------------------------------
# per client: median/min/max of pages/s, wall, CPU-µs/page, RSS, nginx CPU
col() { # col CLIENT AWK-EXPR -> values of valid runs, one per line
	awk -F'\t' -v c="$1" -v n="$PAGES" "NR > 1 && \$2 == c && \$11 == 1 { print $2 }" "$TSV"
}
fmt() { awk -v p="$2" '{ printf "%." p "f (%." p "f–%." p "f)", $1, $2, $3 }' <<<"$1"; }

REPORT=$RUN/report.md
{
	if [ "$ROUNDS" -gt 1 ]; then
		echo "### Fetch benchmark, $PAGES pages, $ROUNDS rounds × $REPS repetitions, ${PAUSE}s apart"
	else
		echo "### Fetch benchmark, $PAGES pages, $REPS repetitions"
	fi
	echo
	echo "$MACHINE_MD"
	echo "- kria: $KRIA_OK_DESC, source at $REV"
	echo "- command: \`bench/fetch/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- server: nginx $(nginx -v 2>&1 | sed 's/.*\///'), 1 worker on CPU ${KB_NGINX_CPU:-1}, keep-alive, sendfile, access_log off; $NGINX_CACHE"
	echo "- pages: $(find "$SITE/h0.test/p" -name '*.html' -printf '%s\n' | awk '{ s += $1 } END { printf "%d pages, %.0f bytes on average", NR, s / NR }'), ~33 links each, served as-is (no gzip)"
	echo "- clients pinned with \`taskset -c $CLIENT_CPU\`; medians (min–max) over valid runs${KRIA_DEFAULT_CONNS:+; kria defaults to $KRIA_DEFAULT_CONNS connections}"
	echo
	echo "| client | command | pages/s | wall s | CPU-µs/page | peak RSS MiB | nginx CPU s | nginx busy | client busy | valid runs |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for c in "${CLIENT_LIST[@]}"; do
		client_cmd "$c"
		cmdtxt=$(printf '%s ' "${CMD[@]}" | sed "s|${LIST_HTTPS:-//no-https-list//}|LIST-HTTPS|; s|$LIST|LIST|; s|$RUN/tls/|TLS/|; s|$KB_ROOT/||; s/ $//")
		valid=$(col "$c" 1 | wc -l)
		total=$(awk -F'\t' -v c="$c" 'NR > 1 && $2 == c' "$TSV" | wc -l)
		if [ "$valid" -eq 0 ]; then
			echo "| $c | \`$cmdtxt\` | – | – | – | – | – | – | – | 0/$total |"
			continue
		fi
		pps=$(col "$c" 'n / $3' | kb_stats)
		wall=$(col "$c" '$3' | kb_stats)
		cpu=$(col "$c" '($4 + $5) * 1e6 / n' | kb_stats)
		rss=$(col "$c" '$6 / 1024' | kb_stats)
		ncpu=$(col "$c" '$8' | kb_stats)
		nbusy=$(col "$c" '100 * $8 / $3' | kb_stats | awk '{ printf "%.0f", $1 }')
		cbusy=$(col "$c" '100 * ($4 + $5) / $3' | kb_stats | awk '{ printf "%.0f", $1 }')
		echo "| $c | \`$cmdtxt\` | $(fmt "$pps" 0) | $(fmt "$wall" 2) | $(fmt "$cpu" 0) | $(fmt "$rss" 1) | $(fmt "$ncpu" 2) | $nbusy % | $cbusy % | $valid/$total |"
		echo "$c ${pps%% *} ${cpu%% *}" >>"$RUN/medians.txt"
	done
	echo
	# kria's own summary times the fetches only (first request to last
	# response); a gap to the process wall time is start-up or shutdown.
	for c in "${CLIENT_LIST[@]}"; do
		[[ $c == kria* ]] || continue
		sw=$(col "$c" '$13' | grep -v '^-' | kb_stats)
		pw=$(col "$c" '$3' | kb_stats)
		[ "${sw%% *}" != - ] || continue
		awk -v c="$c" -v sw="${sw%% *}" -v pw="${pw%% *}" -v n="$PAGES" 'BEGIN {
			printf "- %s, own summary: %.3f s from first request to last page (%.0f pages/s); process wall %.3f s\n", c, sw, n / sw, pw }'
	done
	if [ -s "$RUN/medians.txt" ]; then
		best=$(awk '$1 ~ /^kria/ { if ($2 > b) { b = $2; l = $0 } } END { print l }' "$RUN/medians.txt")
		def=$(awk '$1 == "kria"' "$RUN/medians.txt")
		for k in "$best" "$def"; do
			[ -n "$k" ] || continue
			read -r kn kp kc <<<"$k"
			[ "$k" = "$best" ] && label="best kria ($kn)" || label="default kria"
			[ "$k" = "$def" ] && [ "$k" = "$best" ] && label="kria (default, also the best)"
			for o in wget wget2-t1 wget2; do
				other=$(awk -v o="$o" '$1 == o' "$RUN/medians.txt")
				[ -n "$other" ] || continue
				read -r _ op oc <<<"$other"
				awk -v l="$label" -v o="$o" -v kp="$kp" -v op="$op" -v kc="$kc" -v oc="$oc" \
					'BEGIN { printf "- %s / %s: %.2f× pages/s, %.2f× less CPU per page\n", l, o, kp / op, oc / kc }'
			done
			[ "$k" = "$def" ] && [ "$k" = "$best" ] && break
		done
		if [ -n "$best" ]; then
			read -r kn kp kc <<<"$best"
			wp=$(awk '$1 == "wget" { print $2 }' "$RUN/medians.txt")
			echo
			awk -v kp="$kp" -v kc="$kc" -v wp="$wp" 'BEGIN {
				printf "- target ≥ 20,000 pages/s: %s (%.0f pages/s, %.0f CPU-µs/page)\n", (kp >= 20000 ? "met" : "MISSED"), kp, kc
				if (wp != "") printf "- target ≥ 5× wget: %s (%.2f×)\n", (kp >= 5 * wp ? "met" : "MISSED"), kp / wp }'
		fi
	fi
	if [ -n "$FETCH_TLS" ]; then
		echo
		echo "HTTPS ($(kb_tls_desc "$RUN/tls") certificate, a CA made for the run; nginx defaults: TLS 1.3, 16 KiB records, shared session cache and tickets; no sendfile over TLS):"
		echo
		m() { awk -v c="$1" -v f="$2" '$1 == c { print $f }' "$RUN/medians.txt"; }
		for pair in "kria-https kria" "wget2-https wget2" "wget2-t1-https wget2-t1" "wget-https wget"; do
			read -r a b <<<"$pair"
			[ -n "$(m "$a" 2)" ] && [ -n "$(m "$b" 2)" ] || continue
			awk -v a="$a" -v b="$b" -v ap="$(m "$a" 2)" -v bp="$(m "$b" 2)" -v ac="$(m "$a" 3)" -v bc="$(m "$b" 3)" \
				'BEGIN { printf "- %s / %s: %.2f× the CPU per page (%.1f CPU-µs more), %.2f× the pages/s\n", a, b, ac / bc, ac - bc, ap / bp }'
		done
		for c in "${CLIENT_LIST[@]}"; do
			[[ $c == kria-https* ]] || continue
			awk -F'\t' -v c="$c" -v n="$PAGES" 'NR > 1 && $2 == c && $11 == 1 && $15 != "-" { print $17 / n, $15, $16, $15 / $3 }' "$TSV" | sort -g |
				awk -v c="$c" '{ b[NR] = $1; h[NR] = $2; r[NR] = $3; hs[NR] = $4 } END { if (!NR) exit
					m = int((NR + 1) / 2)
					printf "- %s: %d handshakes a run, %d full and %d resumed, %.0f handshakes/s; %.0f bytes copied around the cipher per page (%.0f–%.0f)\n", c, h[m], h[m] - r[m], r[m], hs[m], b[m], b[1], b[NR] }'
		done
		kp=$(m kria-https 2) kc=$(m kria-https 3) hc=$(m kria 3) wp=$(m wget2-https 2)
		awk -v kp="$kp" -v kc="$kc" -v hc="$hc" -v wp="$wp" 'BEGIN {
			if (kc != "" && hc != "") printf "- target HTTPS CPU per page ≤ 1.2× HTTP: %s (%.2f×)\n", (kc <= 1.2 * hc ? "met" : "MISSED"), kc / hc
			if (kp != "" && wp != "") printf "- target HTTPS ≥ 3× wget2 over HTTPS: %s (%.2f×)\n", (kp >= 3 * wp ? "met" : "MISSED"), kp / wp }'
	fi
	# nginx's cost per request over every valid run: its one-core ceiling
	awk -F'\t' -v n="$PAGES" 'NR > 1 && $11 == 1 { print $8 * 1e6 / n }' "$TSV" | kb_stats |
		awk '$1 != "-" && $1 > 0 { printf "- nginx: %.1f CPU-µs per request (median of all valid runs, %.1f–%.1f), so its one-core ceiling here is ≈ %.0f pages/s\n", $1, $2, $3, 1e6 / $1 }'
	awk -F'\t' 'NR > 1 { print $14 }' "$TSV" | kb_stats |
		awk '{ printf "- load average (1 min) before each run: median %s, %s–%s (2 CPUs; above ~0.5 other work shares the cores)\n", $1, $2, $3 }'
	echo
	echo "Raw runs: \`${RUN#"$KB_ROOT"/}/runs.tsv\`."
} >"$REPORT"
cat "$REPORT"

if [ $RECORD = 1 ]; then
	RES=$KB_ROOT/bench/RESULTS.md
	begin='<!-- fetch:begin (written by bench/fetch/run.sh --record) -->'
	end='<!-- fetch:end -->'
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
