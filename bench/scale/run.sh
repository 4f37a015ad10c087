#!/usr/bin/env bash
# bench/scale/run.sh — kria at scale: 10,000 hosts × 100 pages, politeness on.
#
# Serves H hosts (h0.test … h<H-1>.test) of P ≈10 KB pages each with nginx
# (name-based virtual hosts, one worker pinned to CPU 1, access log off),
# answers their names with dnsmasq on loopback (bench/lib/dns.sh: each host
# an address in 127.1.0.0/16, A addresses in all, nginx listening on each),
# and crawls them
# with kria pinned to CPU 0: every host a seed, 1 s between two fetches
# from a host, gzip WARC on, a status server on loopback. Samples every few
# seconds: visits, CPU, RSS, loop lag, state DB and WARC bytes. After the
# crawl phase (bounded: --minutes) kria is killed with SIGKILL and started
# again on the same state: time to the status server answering (start-up)
# and to the first request nginx sees. Reports sustained pages/s, CPU-µs/page,
# loop lag p99, RSS over time, state DB bytes per URI, start-up after the
# kill, and how far the crawl got; checks the issue-6 targets.
#
# --https: the same over HTTPS (issue 21): nginx serves every host on a
# TLS port as well (bench/lib/nginx.sh with an ECDSA P-256 certificate
# from bench/lib/tls.sh, a shared session cache and session tickets, as
# a real server is set up) and the site links there. With a --delay past
# the 15 s a pooled idle connection is kept, each visit of a host opens a
# new connection: its first handshake is full, the later ones (revisit
# connections) may resume the host's session. Reports full and resumed
# handshakes, the share of revisit connections resumed (target ≥ 90 %),
# full handshakes per second, and the kept sessions' bytes;
# --tls-sessions N sets kria's http.tls-sessions (0: no resumption, to
# price a full handshake per page against a run with it).
# --setups N sets http.setups-per-address (kria's default 16 when absent;
# 0: no bound); with --addrs 1 every host shares one address, as on a
# shared host, and the opening burst queues at it.
# See bench/README.md.
#
# Usage: bench/scale/run.sh [--hosts H] [--pages P] [--templates T]
#            [--addrs A] [--minutes M] [--delay D] [--interval S]
#            [--durability none|batch|record] [--perf SECS] [--kria PATH]
#            [--https [--tls-sessions N]] [--setups N] [--record] [--quick]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$HERE/../lib/common.sh"
# shellcheck source=../lib/nginx.sh
. "$HERE/../lib/nginx.sh"
# shellcheck source=../lib/dns.sh
. "$HERE/../lib/dns.sh"
# shellcheck source=../lib/tls.sh
[ -f "$HERE/../lib/tls.sh" ] && . "$HERE/../lib/tls.sh"

ARGS=("$@")
HOSTS=10000
PAGES=100
TEMPLATES=1000
ADDRS=1000
MINUTES=10
DELAY=1s
INTERVAL=5
DURABILITY=batch
KRIA=${KRIA:-$KB_ROOT/build-bench/kria}
RECORD=0
CLIENT_CPU=${KB_CLIENT_CPU:-0}
PORT=${KB_SCALE_PORT:-8080}
RESTART_SECS=${KB_SCALE_RESTART_SECS:-20}
START_LIMIT=${KB_SCALE_START_LIMIT:-600}
PERF_SECS=0
HTTPS=0
TLS_SESSIONS=20000
SETUPS=""
TLS_PORT=${KB_SCALE_TLS_PORT:-8443}

while [ $# -gt 0 ]; do
	case $1 in
	--hosts) HOSTS=$2; shift 2 ;;
	--pages) PAGES=$2; shift 2 ;;
	--templates) TEMPLATES=$2; shift 2 ;;
	--addrs) ADDRS=$2; shift 2 ;;
	--minutes) MINUTES=$2; shift 2 ;;
	--delay) DELAY=$2; shift 2 ;;
	--interval) INTERVAL=$2; shift 2 ;;
	--durability) DURABILITY=$2; shift 2 ;;
	--perf) PERF_SECS=$2; shift 2 ;;
	--kria) KRIA=$2; shift 2 ;;
	--https) HTTPS=1; shift ;;
	--tls-sessions) TLS_SESSIONS=$2; shift 2 ;;
	--setups) SETUPS=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--quick) HOSTS=500; TEMPLATES=100; ADDRS=100; MINUTES=1; RESTART_SECS=5; shift ;;
	-h | --help) sed -n '2,35p' "$0"; exit 0 ;;
	*) kb_die "unknown option $1 (try --help)" ;;
	esac
done
num() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
num "$HOSTS" 1 100000 || kb_die "--hosts: 1..100000"
num "$PAGES" 1 10000 || kb_die "--pages: 1..10000"
num "$TEMPLATES" 1 "$HOSTS" || kb_die "--templates: 1..hosts"
num "$ADDRS" 1 10000 || kb_die "--addrs: 1..10000"
num "$MINUTES" 1 60 || kb_die "--minutes: 1..60"
num "$INTERVAL" 1 60 || kb_die "--interval: 1..60 seconds"
num "$PERF_SECS" 0 600 || kb_die "--perf: 0..600 seconds"
[[ $DELAY =~ ^[0-9]+(ms|s)$ ]] || kb_die "--delay: a duration such as 1s or 500ms"
[[ $DURABILITY =~ ^(none|batch|record)$ ]] || kb_die "--durability: none, batch or record"
num "$TLS_SESSIONS" 0 1000000 || kb_die "--tls-sessions: 0..1000000"
[ -z "$SETUPS" ] || num "$SETUPS" 0 10000 || kb_die "--setups: 0..10000"
[ "$HTTPS" = 0 ] || declare -F kb_tls_certs >/dev/null || kb_die "--https needs bench/lib/tls.sh"
# the scheme and port the site links to and the seeds name
SCHEME=http SITE_PORT=$PORT
[ "$HTTPS" = 1 ] && SCHEME=https SITE_PORT=$TLS_PORT

# crawl + restart + set-up and report, with room to spare
kb_bound $((MINUTES * 60 + RESTART_SECS + 2 * START_LIMIT + 900)) "${ARGS[@]}"

[ "$PERF_SECS" = 0 ] || command -v perf >/dev/null || kb_die "perf not found; run make deps"
for t in taskset curl cc sqlite3; do
	command -v "$t" >/dev/null || kb_die "$t not found; run make deps"
done
[ -x "$KRIA" ] || kb_die "no kria at $KRIA (make BUILD=build-bench all)"
[ "$(nproc)" -ge 2 ] || kb_log "warning: one CPU only; crawler and servers share it"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$KB_OUT/scale/run-$STAMP
mkdir -p "$RUN"
ln -sfn "run-$STAMP" "$KB_OUT/scale/last"
MACHINE_MD=$(kb_machine_md)
REV=$(git -C "$KB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$KB_ROOT" diff --quiet HEAD -- src include 2>/dev/null || REV+=" + uncommitted changes in src/include"

# --- site ----------------------------------------------------------------------
# T template hosts are generated (sitegen, absolute links to port PORT);
# host i serves template i mod T through a symlink, so H hosts cost T hosts'
# disk. Pages repeat every T hosts: identical-payload dedupe is turned off
# below so that every page is still written as a full WARC response.
kb_build_tools
TSITE=$KB_OUT/site-scale-t$TEMPLATES-p$PAGES-$SCHEME$SITE_PORT
[ "$HTTPS" = 1 ] || TSITE=$KB_OUT/site-scale-t$TEMPLATES-p$PAGES-port$PORT
kb_log "site: $TEMPLATES template hosts × $PAGES pages in $TSITE"
kb_site "$TSITE" -H "$TEMPLATES" -p "$PAGES" -u "$SCHEME://{host}:$SITE_PORT"
WWW=$KB_OUT/scale/www-h$HOSTS-t$TEMPLATES-p$PAGES-port$PORT
[ "$HTTPS" = 1 ] && WWW=$KB_OUT/scale/www-h$HOSTS-t$TEMPLATES-p$PAGES-https$SITE_PORT
if [ ! -e "$WWW/.done" ]; then
	kb_log "linking $HOSTS virtual hosts to the templates"
	rm -rf "$WWW"
	mkdir -p "$WWW"
	for ((i = 0; i < HOSTS; i++)); do
		ln -s "$TSITE/h$((i % TEMPLATES)).test" "$WWW/h$i.test"
	done
	touch "$WWW/.done"
fi

export KB_DNS_ADDRS=$ADDRS
SEEDS=$RUN/seeds.txt
awk -v n="$HOSTS" -v port="$SITE_PORT" -v s="$SCHEME" 'BEGIN { for (i = 0; i < n; i++) printf "%s://h%d.test:%d/\n", s, i, port }' >"$SEEDS"

# --- servers ---------------------------------------------------------------------
# nginx: the listening sockets count against worker_connections, and kria
# keeps an idle connection per host (http.idle-connections) beside its 4,096
# busy ones, as H separate servers would let it; past worker_connections
# nginx would close idle ones and each fetch would pay a new handshake. Up
# to the descriptor limit; the open-file cache cannot hold a million files.
KB_NGINX_LISTEN=$(kb_host_addrs "$HOSTS" | tr '\n' ' ')
export KB_NGINX_LISTEN KB_NGINX_WANT_PORT=$PORT
NGX_HARD=$(ulimit -Hn)
[ "$NGX_HARD" = unlimited ] && NGX_HARD=1048576
export KB_NGINX_CONNECTIONS=$((ADDRS + HOSTS + 4096 + 512))
[ "$KB_NGINX_CONNECTIONS" -le "$((NGX_HARD - 64))" ] || KB_NGINX_CONNECTIONS=$((NGX_HARD - 64))
export KB_NGINX_OPEN_FILE_CACHE=off
if [ "$HTTPS" = 1 ]; then
	# a leaf for localhost only, as small as a real host's: kria's check
	# (tls-verify = record) fails on the name and the CA, and is paid all the same
	TLS_DIR=$KB_OUT/tls-scale-ecdsa
	kb_tls_certs "$TLS_DIR" ecdsa 0
	export KB_NGINX_TLS_DIR=$TLS_DIR KB_NGINX_WANT_TLS_PORT=$TLS_PORT KB_NGINX_TLS_ROOT=$WWW
	KB_NGINX_CONNECTIONS=$((KB_NGINX_CONNECTIONS + ADDRS))
fi
kb_nginx_start "$RUN/nginx" "$WWW" vhosts
kb_dns_start "$RUN/dns" "$HOSTS"
DNS_PORT=$KB_DNS_PORT

# sanity: a name resolves through dnsmasq and its address serves the host's page
probe_host=h$((HOSTS - 1)).test
probe_addr=$(kb_host_addr $((HOSTS - 1)))
probe_page=$(curl -skf --max-time 5 --resolve "$probe_host:$SITE_PORT:$probe_addr" "$SCHEME://$probe_host:$SITE_PORT/p/0.html" || true)
grep -q "h$(((HOSTS - 1) % TEMPLATES)).test page 0" <<<"$probe_page" || kb_die "nginx does not serve $probe_host on $probe_addr:$SITE_PORT"

# --- kria ------------------------------------------------------------------------
CONF=$RUN/scale.conf
cat >"$CONF" <<EOF
# written by bench/scale/run.sh
[crawl]
name = scale
seeds = $SEEDS
state-dir = $RUN/state
warc-dir = $RUN/warcs
progress-interval = 30s

[dns]
servers = 127.0.0.1:$DNS_PORT
hosts-file =

[http]
# the benchmark's hosts live on 127.1.0.0/16 (the address policy refuses loopback)
allow-addresses = 127.0.0.0/8
tls-sessions = $TLS_SESSIONS
$([ -n "$SETUPS" ] && echo "setups-per-address = $SETUPS")

[politeness]
delay-factor = 0
min-delay = $DELAY
max-delay = $DELAY

[status]
listen = 127.0.0.1:0

[warc]
enabled = true
compress = gzip
durability = $DURABILITY

[adaptive]
# pages repeat every $TEMPLATES hosts (templates): write each as a response
dedupe = false
EOF

KERR=$RUN/kria.err
KPID=""
kria_start() { # kria_start LOGFILE: starts kria pinned, sets KPID and T_START (ns)
	T_START=$(date +%s%N)
	taskset -c "$CLIENT_CPU" "$KRIA" crawl -c "$CONF" </dev/null >>"$1" 2>&1 &
	KPID=$!
}
kb_on_exit '[ -n "$KPID" ] && kill -KILL "$KPID" 2>/dev/null; [ -n "$KPID" ] && wait "$KPID" 2>/dev/null'

# status address of the running kria (its state dir's status.addr), bounded wait
STATUS=""
wait_status() { # wait_status SECS -> STATUS, T_STATUS (ns); 1 when it never came
	local deadline=$(($(date +%s) + $1))
	STATUS=""
	while [ "$(date +%s)" -lt "$deadline" ]; do
		if [ -s "$RUN/state/status.addr" ] && STATUS=$(head -1 "$RUN/state/status.addr") &&
			curl -sf --max-time 1 "http://$STATUS/metrics" >/dev/null 2>&1; then
			T_STATUS=$(date +%s%N)
			return 0
		fi
		kill -0 "$KPID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# when kria's start-up log lines appear (ms after T_START): WARC repair done,
# the store's WAL drain, the status server listening
declare -A T_LINE=()
mark_lines() { # mark_lines LOG
	local k pat
	for k in repaired draining listening; do
		[ -z "${T_LINE[$k]:-}" ] || continue
		case $k in repaired) pat="repaired" ;; draining) pat="draining" ;; listening) pat="status: listening" ;; esac
		grep -q "$pat" "$1" 2>/dev/null && T_LINE[$k]=$((($(date +%s%N) - T_START) / 1000000))
	done
	return 0
}

# After a restart, both in one bounded loop: the status server answering
# (-> T_STATUS: the state DB is open, the WARC files repaired, the loop
# turns; kria starts it last) and the first request nginx sees after the
# mark BASELINE (-> T_FIRST). The first request needs a URI that is due:
# killed while it had caught up with its revisits, kria rightly waits for
# the next one, so start-up is timed by the status server, and the first
# request is reported beside it. 0 when both came, 1 otherwise.
wait_restart() { # wait_restart BASELINE SECS LOG
	local base=$1 deadline=$(($(date +%s) + $2)) r
	T_STATUS="" T_FIRST=""
	while [ "$(date +%s)" -lt "$deadline" ]; do
		mark_lines "$3"
		if [ -z "$T_FIRST" ]; then
			r=$(kb_nginx_requests)
			# the stub_status request itself counts one
			if [ -n "$r" ] && [ "$r" -gt $((base + 1)) ]; then T_FIRST=$(date +%s%N); fi
			base=$((base + 1))
		fi
		if [ -z "$T_STATUS" ] && [ -s "$RUN/state/status.addr" ] &&
			STATUS=$(head -1 "$RUN/state/status.addr") &&
			curl -sf --max-time 1 "http://$STATUS/metrics" >/dev/null 2>&1; then
			T_STATUS=$(date +%s%N)
		fi
		[ -z "$T_STATUS" ] || [ -z "$T_FIRST" ] || return 0
		kill -0 "$KPID" 2>/dev/null || return 1
		sleep 0.005
	done
	return 1
}

metric() { awk -v m="$1" '$1 == m { printf "%.0f\n", $2; exit }' "$2"; }
# time kria's loop thread was runnable but waiting for a CPU (schedstat
# field 2): other work on its core shows here, not in kria's own figures
runq_wait() {
	awk '{ printf "%.2f", $2 / 1e9 }' /proc/"$KPID"/task/"$KPID"/schedstat 2>/dev/null
}
dbmain() { stat -c %s "$RUN/state/kria.db" 2>/dev/null || echo 0; }
dbbytes() { find "$RUN/state" -maxdepth 1 -name 'kria.db*' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

SAMPLES=$RUN/samples.tsv
printf 't_s\tvisits\turis\tqueued\tcpu_s\trss_kb\tdb_bytes\twarc_bytes\tlag_count\tlag_le20\tlag_le50\tlag_max_s\tin_flight\tload1\tdb_main_bytes\trunq_wait_s\n' >"$SAMPLES"
sample() { # sample T0_NS -> one line of SAMPLES (and M holds the metrics)
	local t m=$RUN/metrics.tmp cpu rss
	t=$(awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	curl -sf --max-time 10 "http://$STATUS/metrics" >"$m" 2>/dev/null || : >"$m"
	cpu=$(sed 's/.*) //' "/proc/$KPID/stat" 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }')
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$KPID/status" 2>/dev/null)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" \
		"$(metric kria_fetches_total "$m")" "$(metric kria_frontier_uris "$m")" \
		"$(metric kria_frontier_queued "$m")" "${cpu:--}" "${rss:--}" "$(dbbytes)" \
		"$(du -sb "$RUN/warcs" 2>/dev/null | cut -f1)" \
		"$(metric kria_loop_delay_seconds_count "$m")" \
		"$(awk '$1 == "kria_loop_delay_seconds_bucket{le=\"0.02\"}" { print $2 }' "$m")" \
		"$(awk '$1 == "kria_loop_delay_seconds_bucket{le=\"0.05\"}" { print $2 }' "$m")" \
		"$(awk '$1 == "kria_loop_lag_seconds_max" { print $2 }' "$m")" \
		"$(metric kria_in_flight "$m")" "$(cut -d' ' -f1 /proc/loadavg)" "$(dbmain)" "$(runq_wait)" >>"$SAMPLES"
	cp "$m" "$RUN/metrics.last" 2>/dev/null || true
	if [ -s "$m" ]; then cp "$m" "$RUN/metrics.good"; fi
}

# --- phase 1: the crawl, bounded -------------------------------------------------
kb_log "crawl: $HOSTS hosts × $PAGES pages, politeness $DELAY, for $MINUTES min (kria on CPU $CLIENT_CPU)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
REQ0=$(kb_nginx_requests)
kria_start "$KERR"
wait_status "$START_LIMIT" || kb_die "kria's status server did not come up (see $KERR)"
COLD_STATUS_MS=$(((T_STATUS - T_START) / 1000000))
T0=$T_START
END=$(($(date +%s) + MINUTES * 60))
WARM_METRICS=""
next=$(date +%s)
while [ "$(date +%s)" -lt "$END" ] && kill -0 "$KPID" 2>/dev/null; do
	sample "$T0"
	# the histogram at the end of warm-up (the first minute, or a fifth of a short run)
	if [ -z "$WARM_METRICS" ] && [ $(($(date +%s) - T0 / 1000000000)) -ge $((MINUTES >= 5 ? 60 : MINUTES * 12)) ]; then
		WARM_METRICS=$RUN/metrics.warm
		cp "$RUN/metrics.good" "$WARM_METRICS" 2>/dev/null || : >"$WARM_METRICS"
		if [ "$PERF_SECS" -gt 0 ]; then
			kb_log "perf: recording kria for ${PERF_SECS}s"
			perf record -q -e cpu-clock -g -p "$KPID" -o "$RUN/perf.data" -- sleep "$PERF_SECS" \
				>"$RUN/perf.log" 2>&1 &
			PERF_PID=$!
		fi
	fi
	next=$((next + INTERVAL))
	while [ "$(date +%s)" -lt "$next" ] && kill -0 "$KPID" 2>/dev/null; do sleep 0.2; done
done
kill -0 "$KPID" 2>/dev/null || kb_die "kria exited during the crawl (see $KERR)"
if [ -n "${PERF_PID:-}" ]; then
	wait "$PERF_PID" 2>/dev/null || true
	{
		perf report -i "$RUN/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null |
			grep -v '^#' | grep -v '^$' | head -8
		echo
		perf report -i "$RUN/perf.data" --stdio --no-children --percent-limit 1 --sort symbol \
			-g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
	} >"$RUN/perf.txt" || true
fi
sample "$T0"
cp "$RUN/metrics.last" "$RUN/metrics.end"
[ -s "$RUN/metrics.end" ] || cp "$RUN/metrics.good" "$RUN/metrics.end" 2>/dev/null || true
[ -n "$WARM_METRICS" ] || { WARM_METRICS=$RUN/metrics.warm; cp "$RUN/metrics.end" "$WARM_METRICS"; }

# --- phase 2: SIGKILL, restart on the same state ----------------------------------
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
KPID=""
DB_KILLED=$(dbbytes)
DB_MAIN_KILLED=$(stat -c %s "$RUN/state/kria.db" 2>/dev/null || echo 0)
URIS_END=$(awk -F'\t' 'NR > 1 && $3 != "" { u = $3 } END { print u }' "$SAMPLES")
kb_log "killed kria (SIGKILL) with $URIS_END URIs known; state DB $DB_KILLED bytes; restarting"
rm -f "$RUN/state/status.addr"
REQ_K=$(kb_nginx_requests)
kria_start "$RUN/kria-restart.err"
IN_FLIGHT_KILL=$(awk -F'\t' 'NR > 1 && $13 != "" { f = $13 } END { print f + 0 }' "$SAMPLES")
wait_restart "$REQ_K" "$START_LIMIT" "$RUN/kria-restart.err" || true
mark_lines "$RUN/kria-restart.err"
FIRST_MS=$([ -n "$T_FIRST" ] && echo $(((T_FIRST - T_START) / 1000000)) || echo "> $((START_LIMIT * 1000))")
STARTUP_MS=$([ -n "$T_STATUS" ] && echo $(((T_STATUS - T_START) / 1000000)) || echo -)
RESTART_STATUS_MS=$([ -n "$T_STATUS" ] && echo "$STARTUP_MS" || echo "> $((START_LIMIT * 1000))")
[ -n "$T_STATUS" ] || kb_log "warning: the status server did not answer within ${START_LIMIT}s of the restart"
RSS_RESTART_0=$(awk '/^VmRSS/ { print $2 }' "/proc/$KPID/status")
kb_log "restart: status server after ${RESTART_STATUS_MS} ms, first request after ${FIRST_MS} ms"
RESTART_SAMPLES=$RUN/restart.tsv
SAMPLES_SAVE=$SAMPLES
SAMPLES=$RESTART_SAMPLES
head -1 "$SAMPLES_SAVE" >"$SAMPLES"
for ((k = 0; k < RESTART_SECS; k += 1)); do
	[ $((k % 5)) = 0 ] && sample "$T_START"
	sleep 1
done
sample "$T_START"
SAMPLES=$SAMPLES_SAVE
# a clean stop: SIGTERM, bounded
T_TERM=$(date +%s%N)
kill -TERM "$KPID"
for ((i = 0; i < 3000; i++)); do kill -0 "$KPID" 2>/dev/null || break; sleep 0.01; done
if kill -0 "$KPID" 2>/dev/null; then
	STOP_MS="> 30000 (then SIGKILL)"
	kill -KILL "$KPID"
else
	STOP_MS=$((($(date +%s%N) - T_TERM) / 1000000))
fi
wait "$KPID" 2>/dev/null || true
KPID=""
DB_CLEAN=$(dbbytes)
REQS=$(($(kb_nginx_requests) - REQ0))
NGINX_ERRS=$(kb_nginx_errors)
kb_nginx_stop
kb_dns_stop

# how far the crawl got, from the state DB itself
DBQ=$(sqlite3 -readonly "$RUN/state/kria.db" \
	"SELECT count(*), sum(visits > 0), sum(visits) FROM uris;" 2>/dev/null || echo "-|-|-")
IFS='|' read -r DB_URIS DB_VISITED DB_VISITS <<<"$DBQ"
# where those bytes are: pages per table and index, per URI
DB_SPLIT=$(sqlite3 -readonly "$RUN/state/kria.db" "SELECT group_concat(name || ' ' || b, ', ')
	FROM (SELECT name, CAST(round(sum(pgsize) * 1.0 / (SELECT max(count(*), 1) FROM uris)) AS INT) AS b
	FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC)" 2>/dev/null || echo -)
WARC_BYTES=$(du -sb "$RUN/warcs" | cut -f1)
WARC_FILES=$(find "$RUN/warcs" -name '*.warc.gz' | wc -l)

# --- report ------------------------------------------------------------------------
# steady state: from the end of warm-up to the kill
WARM_T=$(awk -F'\t' -v w="$( [ "$MINUTES" -ge 5 ] && echo 60 || echo $((MINUTES * 12)))" 'NR > 1 && $1 >= w { print $1; exit }' "$SAMPLES")
REPORT=$RUN/report.md
lagq() { # lagq METRICS [BASE] Q -> upper bound (ms) of the Q-quantile of (METRICS - BASE)
	awk -v q="$3" -v base="${2:-/dev/null}" '
		function take(f, arr,   l, k, v) {
			while ((getline l < f) > 0) {
				if (l ~ /^kria_loop_delay_seconds_bucket/) {
					k = l; sub(/.*le="/, "", k); sub(/".*/, "", k)
					v = l; sub(/.* /, "", v); arr[k] = v
				}
			}
		}
		BEGIN {
			take(ARGV[1], e); if (base != "/dev/null") take(base, b)
			n = 0
			for (k in e) { les[++n] = k }
			# sort the bounds numerically (+Inf last)
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) {
				x = les[i] == "+Inf" ? 1e18 : les[i] + 0; y = les[j] == "+Inf" ? 1e18 : les[j] + 0
				if (y < x) { t = les[i]; les[i] = les[j]; les[j] = t }
			}
			total = e["+Inf"] - b["+Inf"]
			if (total <= 0) { print "-"; exit }
			target = q * total
			for (i = 1; i <= n; i++) if (e[les[i]] - b[les[i]] >= target) {
				if (les[i] == "+Inf") print "> 1000"; else printf "%g\n", les[i] * 1000
				exit
			}
		}' "$1"
}
LAG_P99_STEADY=$(lagq "$RUN/metrics.end" "$WARM_METRICS" 0.99)
LAG_P99_ALL=$(lagq "$RUN/metrics.end" "" 0.99)
LAG_P50_ALL=$(lagq "$RUN/metrics.end" "" 0.5)
LAG_PROBES=$(metric kria_loop_delay_seconds_count "$RUN/metrics.end")
{
	if [ "$HTTPS" = 1 ]; then
		echo "### Scale over HTTPS: $HOSTS hosts × $PAGES pages, politeness $DELAY, $MINUTES min, http.tls-sessions = $TLS_SESSIONS"
	else
		echo "### Scale: $HOSTS hosts × $PAGES pages, politeness $DELAY, $MINUTES min"
	fi
	echo
	echo "$MACHINE_MD"
	echo "- kria: ${KRIA#"$KB_ROOT"/}, source at $REV"
	echo "- command: \`bench/scale/run.sh${ARGS[*]:+ ${ARGS[*]}}\`"
	echo "- site: $HOSTS virtual hosts, each $PAGES pages of ≈10 KB + index, robots.txt, sitemap, CSS, 16 GIFs (sitegen; $TEMPLATES template hosts, host i serves template i mod $TEMPLATES, so identical-payload dedupe is off); nginx $(nginx -v 2>&1 | sed 's/.*\///'), 1 worker on CPU ${KB_NGINX_CPU:-1}, access_log off, open_file_cache off"
	echo "- names: dnsmasq on 127.0.0.1 (bench/lib/dns.sh; kria's \`[dns] servers\`), $ADDRS addresses in 127.1.0.0/16, nginx listening on port $PORT of each"
	[ "$HTTPS" = 1 ] && echo "- HTTPS: nginx on port $TLS_PORT of each address, $(kb_tls_desc "$TLS_DIR") (a localhost leaf: kria's check fails on name and CA, recorded, tls-verify = record), $(grep -o 'ssl_session_cache [^;]*\|ssl_session_timeout [^;]*' "$RUN/nginx/nginx.conf" | paste -sd, | sed 's/,/, /g'), session tickets on (nginx's default); the site links to https://hN.test:$TLS_PORT"
	echo "- kria: \`taskset -c $CLIENT_CPU kria crawl\`, every host a seed, politeness $DELAY per host (delay-factor 0), gzip WARC (durability $DURABILITY), revisits on (defaults), status server on loopback; config \`${CONF#"$KB_ROOT"/}\`"
	echo "- load average at start $LOAD_START"
	echo
	awk -F'\t' -v w="$WARM_T" -v hosts="$HOSTS" -v pages="$PAGES" '
		NR == 1 || $2 == "" { next }
		{ t[++n] = $1; v[n] = $2; u[n] = $3; c[n] = $5; r[n] = $6; d[n] = $7; wb[n] = $8; ld[n] = $14; dm[n] = $15
		  if (w != "" && $1 >= w && !ws) ws = n }
		END {
			if (!ws) ws = 1
			dt = t[n] - t[ws]; dv = v[n] - v[ws]; dc = c[n] - c[ws]
			printf "| figure | value | target |\n|---|---:|---|\n"
			printf "| crawl phase | %.0f s (warm-up: first %.0f s) | ≤ 10–15 min |\n", t[n], t[ws]
			printf "| visits (fetches with a response) | %d | |\n", v[n]
			printf "| sustained pages/s after warm-up | %.0f | (politeness allows ≤ %d) |\n", (dt > 0 ? dv / dt : 0), hosts
			printf "| pages/s over the whole crawl phase | %.0f | |\n", (t[n] > 0 ? v[n] / t[n] : 0)
			# 30-second windows after warm-up: min and max rate
			mn = 1e18; mx = 0
			for (i = ws; i <= n; i++) for (j = i + 1; j <= n; j++) if (t[j] - t[i] >= 30) {
				rt = (v[j] - v[i]) / (t[j] - t[i]); if (rt < mn) mn = rt; if (rt > mx) mx = rt; break }
			if (mx > 0) printf "| pages/s, 30 s windows after warm-up | %.0f–%.0f | |\n", mn, mx
			printf "| kria CPU-µs/page after warm-up | %.0f | |\n", (dv > 0 ? dc * 1e6 / dv : 0)
			printf "| kria CPU busy after warm-up | %.0f %% | |\n", (dt > 0 ? 100 * dc / dt : 0)
			rmax = 0; for (i = 1; i <= n; i++) if (r[i] > rmax) rmax = r[i]
			printf "| RSS at end of warm-up / at the end / peak | %.0f / %.0f / %.0f MiB | ≤ 512 MiB, flat |\n", r[ws] / 1024, r[n] / 1024, rmax / 1024
			# least-squares slope of RSS over the second half of the steady window
			h = int((ws + n) / 2); sx = sy = sxx = sxy = m = 0
			for (i = h; i <= n; i++) { m++; sx += t[i]; sy += r[i]; sxx += t[i] * t[i]; sxy += t[i] * r[i] }
			if (m > 2 && (m * sxx - sx * sx) > 0) printf "| RSS slope, second half of the steady window | %+.1f MiB/min | ≈ 0 |\n", (m * sxy - sx * sy) / (m * sxx - sx * sx) * 60 / 1024
			printf "| URIs known at the kill | %d (%.0f per host) | 1M |\n", u[n], u[n] / hosts
			printf "| state DB at the kill: kria.db | %.1f MiB, %.0f bytes/URI | ≤ 250 bytes/URI |\n", dm[n] / 1048576, (u[n] > 0 ? dm[n] / u[n] : 0)
			dmax = 0; for (i = 1; i <= n; i++) if (d[i] - dm[i] > dmax) dmax = d[i] - dm[i]
			printf "| WAL (+ shm) at the kill / largest sampled | %.1f / %.1f MiB | |\n", (d[n] - dm[n]) / 1048576, dmax / 1048576
			printf "| WARC written | %.1f MiB, %.0f bytes/visit | |\n", wb[n] / 1048576, (v[n] > 0 ? wb[n] / v[n] : 0)
			lmin = 1e9; lmax = 0; for (i = 1; i <= n; i++) { if (ld[i] < lmin) lmin = ld[i]; if (ld[i] > lmax) lmax = ld[i] }
			printf "| load average (1 min) during the crawl | %.2f–%.2f | |\n", lmin, lmax
		}' "$SAMPLES"
	echo "| loop lag p99 after warm-up (20 ms probe) | ≤ $LAG_P99_STEADY ms | ≤ 20 ms |"
	echo "| loop lag p50 / p99, whole crawl phase | ≤ $LAG_P50_ALL / ≤ $LAG_P99_ALL ms ($LAG_PROBES probes) | |"
	awk -v o="$(metric kria_http_connections_opened_total "$RUN/metrics.end")" \
		-v r="$(metric kria_http_connections_reused_total "$RUN/metrics.end")" \
		-v d="$(metric kria_http_reads_deferred_total "$RUN/metrics.end")" \
		'BEGIN { if (o + r > 0) printf "| connections opened / fetches on a pooled one; socket reads left for a later turn | %d / %d (%.0f %% reused); %d | |\n", o, r, 100 * r / (o + r), d }'
	# the bound on setups per address (http.setups-per-address) and what
	# got past it: visits whose connect failed (crawl.log -2: timeout,
	# refused, TLS)
	awk -v w="$(metric kria_http_setups_waited_total "$RUN/metrics.end")" \
		-v b="$(awk -F' = ' '$1 == "setups-per-address" { print $2 }' "$CONF")" \
		-v cf="$(awk '$2 == -2' "$RUN/state/logs/crawl.log" 2>/dev/null | wc -l)" \
		'BEGIN { printf "| setups per address (http.setups-per-address); fetches that waited for a slot; connects failed (crawl.log -2) | %s; %d; %d | |\n", (b == "" ? "16 (default)" : b), w, cf }'
	if [ "$HTTPS" = 1 ]; then
		# revisit connections: every handshake but a host's first; hosts
		# reached = hosts with a response in crawl.log (a first connection
		# that timed out made no handshake)
		awk -v reached="$(awk '$2 > 0 { split($4, u, "/"); print u[3] }' "$RUN/state/logs/crawl.log" 2>/dev/null | sort -u | wc -l)" \
			-v f="$(metric kria_tls_handshakes_full_total "$RUN/metrics.end")" \
			-v r="$(metric kria_tls_handshakes_resumed_total "$RUN/metrics.end")" \
			-v o="$(metric kria_tls_sessions_offered_total "$RUN/metrics.end")" \
			-v wf="$(metric kria_tls_handshakes_full_total "$WARM_METRICS")" \
			-v wr="$(metric kria_tls_handshakes_resumed_total "$WARM_METRICS")" \
			-v ses="$(metric kria_tls_sessions "$RUN/metrics.end")" \
			-v sb="$(metric kria_tls_session_bytes "$RUN/metrics.end")" \
			-v ev="$(metric kria_tls_sessions_evicted_total "$RUN/metrics.end")" \
			-v ex="$(metric kria_tls_sessions_expired_total "$RUN/metrics.end")" \
			-v hosts="$HOSTS" \
			-v span="$(awk -F'\t' -v w="$WARM_T" 'NR > 1 && $2 != "" { t = $1; if (w != "" && $1 >= w && s == "") s = $1 } END { print (s == "" ? 0 : t - s) }' "$SAMPLES")" \
			-v all="$(awk -F'\t' 'NR > 1 && $2 != "" { t = $1 } END { print t + 0 }' "$SAMPLES")" '
			BEGIN {
				h = f + r; first = f < reached ? f : reached; rev = h - first
				printf "| TLS handshakes: full / resumed (sessions offered) | %d / %d (%d) | |\n", f, r, o
				printf "| hosts reached (a response in crawl.log, the restart included) | %d of %d | |\n", reached, hosts
				printf "| revisit connections resumed (handshakes but each host'"'"'s first) | %.1f %% (%d of %d) | ≥ 90 %% |\n", (rev > 0 ? 100 * r / rev : 0), r, rev
				printf "| full handshakes per second: whole crawl phase / after warm-up | %.1f / %.1f | |\n", (all > 0 ? f / all : 0), (span > 0 ? (f - wf) / span : 0)
				printf "| resumed handshakes per second after warm-up | %.1f | |\n", (span > 0 ? (r - wr) / span : 0)
				printf "| TLS sessions kept at the kill: count, bytes, bytes each; evicted, expired | %d, %.1f MiB, %.0f; %d, %d | |\n", ses, sb / 1048576, (ses > 0 ? sb / ses : 0), ev, ex
			}'
	fi
	echo "| start-up after SIGKILL: status server answering (state open, WARCs repaired) | ${RESTART_STATUS_MS} ms (fresh start: ${COLD_STATUS_MS} ms) | ≤ 2 s |"
	echo "| first request after the restart | ${FIRST_MS} ms (fetches in flight at the last sample before the kill: ${IN_FLIGHT_KILL}; none means it had caught up and waits for the next due URI) | |"
	echo "| restart timeline: WARC repair done / WAL drain logged / status listening (log lines, ms) | ${T_LINE[repaired]:-–} / ${T_LINE[draining]:-–} / ${T_LINE[listening]:-–} | |"
	echo "| RSS right after the restart | $((RSS_RESTART_0 / 1024)) MiB | |"
	echo "| clean stop (SIGTERM) after the restart | $STOP_MS ms | |"
	echo "| state DB after the clean stop | $(awk -v b="$DB_CLEAN" -v u="$DB_URIS" 'BEGIN { printf "%.1f MiB, %.0f bytes/URI", b / 1048576, (u > 0 ? b / u : 0) }') | |"
	echo "| its bytes/URI by table and index (dbstat) | $DB_SPLIT | |"
	echo
	echo "How far it got: $DB_URIS URIs in the state DB, $DB_VISITED visited at least once ($(awk -v a="$DB_VISITED" -v b="$DB_URIS" 'BEGIN { printf "%.1f %%", (b > 0 ? 100 * a / b : 0) }')), $DB_VISITS visits in all (revisits included); nginx served $REQS requests (robots.txt included), error log $NGINX_ERRS lines; $WARC_FILES WARC files."
	echo
	# targets
	awk -F'\t' -v w="$WARM_T" -v lag="$LAG_P99_STEADY" -v st="$STARTUP_MS" '
		NR == 1 || $2 == "" { next }
		{ t[++n] = $1; r[n] = $6; d[n] = $15; u[n] = $3; if (w != "" && $1 >= w && !ws) ws = n }
		END {
			if (!ws) ws = 1
			rmax = 0; for (i = ws; i <= n; i++) if (r[i] > rmax) rmax = r[i]
			grow = r[ws] > 0 ? 100 * (r[n] - r[ws]) / r[ws] : 0
			printf "- target RSS ≤ 512 MiB: %s (peak after warm-up %.0f MiB); flat after warm-up: %s (%+.0f %% from the end of warm-up to the kill)\n",
				rmax <= 512 * 1024 ? "met" : "MISSED", rmax / 1024, (grow <= 10 ? "yes" : "NO"), grow
			bpu = u[n] > 0 ? d[n] / u[n] : 0
			printf "- target ≤ 250 bytes/URI in the state DB: %s (%.0f in kria.db; the WAL beside it is transient, see the table)\n", bpu <= 250 ? "met" : "MISSED", bpu
			if (st != "-") printf "- target start-up after SIGKILL ≤ 2 s: %s (%.2f s to the status server answering)\n", st <= 2000 ? "met" : "MISSED", st / 1000
			else print "- target start-up after SIGKILL ≤ 2 s: MISSED (no status server within the limit)"
			if (lag != "-" && lag != "> 1000") printf "- target loop lag p99 ≤ 20 ms: %s (≤ %s ms after warm-up)\n", lag + 0 <= 20 ? "met" : "MISSED", lag
			else printf "- target loop lag p99 ≤ 20 ms: MISSED (%s ms)\n", lag
		}' "$SAMPLES"
	echo
	awk -F'\t' 'NR == 1 || $16 == "" { next } { t = $1; c = $5; q = $16; if (!n++) { t0 = t; c0 = c; q0 = q } }
		END { if (n > 1 && t > t0) printf "kria used %.0f %% of one CPU (all threads); its loop thread spent %.0f %% of the wall time runnable but waiting for its CPU (other work on that core: see the load average).\n\n", 100 * (c - c0) / (t - t0), 100 * (q - q0) / (t - t0) }' "$SAMPLES"
	if [ -s "$RUN/perf.txt" ]; then
		echo "perf (cpu-clock, ${PERF_SECS}s after warm-up), kria's time by library, then its top symbols:"
		echo
		echo '```'
		head -24 "$RUN/perf.txt"
		echo '```'
		echo
	fi
	echo "Samples every ${INTERVAL}s: \`${RUN#"$KB_ROOT"/}/samples.tsv\` (after the restart: \`restart.tsv\`); kria's log with its progress lines: \`kria.err\`."
} >"$REPORT"
cat "$REPORT"

if [ $RECORD = 1 ]; then
	RES=$KB_ROOT/bench/RESULTS.md
	begin='<!-- scale:begin (written by bench/scale/run.sh --record) -->'
	end='<!-- scale:end -->'
	if [ "$HTTPS" = 1 ]; then
		begin='<!-- https-scale:begin (written by bench/scale/run.sh --https --record) -->'
		end='<!-- https-scale:end -->'
	fi
	if [ -f "$RES" ] && grep -qF "$begin" "$RES"; then
		awk -v b="$begin" -v e="$end" -v f="$REPORT" '
			$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
			$0 == e { skip = 0 }
			!skip' "$RES" >"$RES.tmp" && mv "$RES.tmp" "$RES"
	else
		{ echo; echo "$begin"; cat "$REPORT"; echo "$end"; } >>"$RES"
	fi
	mkdir -p "$KB_OUT/scale"
	cp "$SAMPLES" "$KB_OUT/scale/last-samples.tsv"
	kb_log "recorded in bench/RESULTS.md"
fi
