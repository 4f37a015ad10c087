# shellcheck shell=bash
# Shared helpers for kria's benchmark scripts (source, do not run).
#
#   kb_log / kb_die           messages on stderr
#   kb_bound SECS "$@"        re-exec the calling script under timeout(1)
#   kb_on_exit CMD            run CMD when the script exits (LIFO)
#   kb_build_tools            compile sitegen and measure into $KB_BIN
#   kb_site DIR [sitegen opts]  generate (or reuse) a deterministic site
#   kb_measure OUT SECS CMD.. run CMD pinned as given, write "wall user sys rss exit"
#   kb_cpu_ns PID             CPU time (user+sys) of a process/thread in ns
#   kb_stats                  read numbers on stdin, print "median min max"
#   kb_machine_md             markdown lines describing this machine
#   kb_random_port            a port below the ephemeral range, at random
#   kb_record NAME REPORT     put REPORT into bench/RESULTS.md between the
#                             NAME:begin and NAME:end markers
#   kb_crawl_conf SEEDS VALENCE DNS_PORT HTTP_SECTION
#                             kria.conf of bench/crawl's snapshot crawl
#                             (politeness off) on stdout
#
# Everything here is for benchmarks only; nothing is part of `make check`.

KB_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KB_ROOT=$(cd "$KB_LIB/../.." && pwd)
KB_OUT=${KB_OUT:-$KB_ROOT/bench/out}
KB_BIN=$KB_OUT/bin

# Benchmarks talk to loopback only; a proxy from the environment would
# silently change what is measured.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

kb_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
kb_die() { kb_log "error: $*"; exit 1; }

# Re-exec the calling script under timeout(1) once, so the whole run is
# bounded. timeout signals its process group; kb_on_exit handlers (nginx
# stop) run from the TERM trap.
kb_bound() {
	local secs=$1; shift
	if [ -z "${KB_BOUNDED:-}" ]; then
		export KB_BOUNDED=1
		exec timeout --kill-after=30 "$secs" "$0" "$@"
	fi
}

KB_EXIT_CMDS=()
kb__run_exit() {
	local i
	for ((i = ${#KB_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
		eval "${KB_EXIT_CMDS[$i]}" || true
	done
	KB_EXIT_CMDS=()
}
kb_on_exit() {
	KB_EXIT_CMDS+=("$1")
	trap kb__run_exit EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
}

kb_build_tools() {
	mkdir -p "$KB_BIN"
	local t
	for t in sitegen measure; do
		if [ ! -x "$KB_BIN/$t" ] || [ "$KB_LIB/$t.c" -nt "$KB_BIN/$t" ]; then
			cc -std=c11 -O2 -Wall -Wextra -Werror -o "$KB_BIN/$t" "$KB_LIB/$t.c" ||
				kb_die "cannot build $t"
		fi
	done
}

# kb_site DIR [sitegen options]: DIR/h<i>.test/... and DIR/paths.txt.
kb_site() {
	local dir=$1; shift
	"$KB_BIN/sitegen" -o "$dir" "$@" || kb_die "sitegen failed"
}

# kb_measure OUTFILE SECS CMD...: one line "wall user sys maxrss_kb exit".
# Returns the command's exit status.
kb_measure() {
	local out=$1 secs=$2; shift 2
	"$KB_BIN/measure" -o "$out" -t "$secs" -- "$@"
}

# CPU time in ns of PID (a process or a thread id), from schedstat when the
# kernel has it (ns resolution), else from stat (clock ticks).
kb_cpu_ns() {
	local pid=$1
	if [ -r "/proc/$pid/schedstat" ]; then
		awk '{ print $1 }' "/proc/$pid/schedstat"
	else
		local hz; hz=$(getconf CLK_TCK)
		# fields 14 and 15 (utime, stime) after the ")" of the command name
		sed 's/.*) //' "/proc/$pid/stat" | awk -v hz="$hz" '{ printf "%.0f\n", ($12 + $13) * 1e9 / hz }'
	fi
}

# Numbers on stdin (one per line) -> "median min max".
kb_stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "- - -"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[1], v[NR] }'
}

kb_machine_md() {
	local cpu deb
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	deb=$(cat /etc/debian_version 2>/dev/null || echo unknown)
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- CPU: ${cpu:-unknown}, nproc $(nproc), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
	echo "- kernel: $(uname -sr), Debian $deb"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# A random port below the kernel's ephemeral range, for the servers a
# benchmark starts: the crawls' own connections (tens of thousands in
# TIME_WAIT after a run) take their local ports from that range, and one
# of them on nginx's port made about one start in three fail to bind.
kb_random_port() {
	local lo
	lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[[ $lo =~ ^[0-9]+$ ]] && [ "$lo" -gt 12000 ] || lo=32768
	echo $((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
}

kb_record() {
	local name=$1 rep=$2 res=$KB_ROOT/bench/RESULTS.md tmp
	grep -q "<!-- $name:begin" "$res" || kb_die "no $name markers in $res"
	tmp=$(mktemp)
	awk -v rep="$rep" -v b="<!-- $name:begin" -v e="<!-- $name:end" '
		index($0, b) == 1 { print; while ((getline l < rep) > 0) print l; skip = 1; next }
		index($0, e) == 1 { skip = 0 }
		!skip { print }' "$res" >"$tmp"
	cat "$tmp" >"$res"
	rm -f "$tmp"
	kb_log "recorded in bench/RESULTS.md"
}

# The snapshot crawl bench/crawl/run.sh and ab.sh run: revisits off,
# politeness off, names from the dnsmasq on 127.0.0.1:DNS_PORT. The last
# argument is the [http] section that lets it reach loopback ("" for builds
# older than the address policy).
kb_crawl_conf() {
	cat <<EOF
# bench/crawl: a snapshot crawl, politeness off
[crawl]
seeds = $1
state-dir = state
revisit = false
log-level = warn
progress-interval = 0
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
host-valence = $2
[dns]
servers = 127.0.0.1:$3
hosts-file =
$4
EOF
}
