# shellcheck shell=bash
# Shared helpers for kria's integration tests; every test/integration/*.sh
# sources this file. test/run.sh sets KRIA, KTS, KRIA_BUILD and
# KRIA_TOP; run by hand, they default to the build/ tree.
#
#   TAP:      ok DESC | not_ok DESC | check DESC CMD... | is GOT WANT DESC |
#             isnt GOT WANT DESC | like GOT ERE DESC | unlike GOT ERE DESC |
#             skip WHY DESC | diag MSG | bail MSG | done_testing
#             TAP_TODO=WHY (set around checks): their lines end "# TODO WHY"
#             and a "not ok" among them is an expected failure, not a fail
#   temp:     $T, a directory removed at exit
#   servers:  kts_start ROUTES [kts args]  -> KTS_PID KTS_PORT KTS_URL
#             kts_stop [PID]               -> kts's exit status
#             nginx_start DOCROOT [--tls] [--gzip] -> NGINX_PID NGINX_PORT NGINX_URL
#             dnsmasq_start ARGS...        -> DNS_PID DNS_PORT
#             spawn_wait LOG READY FAIL CMD... (a server that logs to stderr)
#             make_cert DIR                -> DIR/cert.pem DIR/key.pem
#   kria:     kfetch ARGS...   runs "$KRIA fetch --allow-private ARGS"; sets RC,
#                              OUT, ERR (test servers are on loopback, which
#                              the address policy refuses by default)
#             kfetch_strict ARGS...  the same without --allow-private
#             field NAME       value of "NAME: v" in $OUT
#             sha1_b32 FILE    SHA-1 in base32 (Heritrix/WARC style)
#
# Only processes started here are ever signalled, by their PIDs; the exit
# trap stops them all. Waits are on events (a line on a fifo, a process
# exit) with bounded timeouts, never sleeps.
set -u

KRIA_TOP=${KRIA_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KRIA_BUILD=${KRIA_BUILD:-$KRIA_TOP/build}
KRIA=${KRIA:-$KRIA_BUILD/kria}
KTS=${KTS:-$KRIA_BUILD/kts}
export KRIA KTS KRIA_BUILD KRIA_TOP

T=$(mktemp -d "${TMPDIR:-/tmp}/kria-it.XXXXXX")
_tap_n=0
_tap_fail=0
_pids=()      # servers we started, stopped at exit
_helpers=()   # log drains, killed at exit

_lib_cleanup() {
  local p
  for p in "${_pids[@]}"; do
    kill -0 "$p" 2>/dev/null || continue
    kill -TERM "$p" 2>/dev/null
    # bounded: a server that ignores SIGTERM for 5 s is killed
    timeout 5 tail -s 0.05 --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
  done
  for p in "${_helpers[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap _lib_cleanup EXIT
trap 'exit 130' INT TERM

# ---- TAP ----------------------------------------------------------------

# with TAP_TODO set, a line carries the TAP directive "# TODO $TAP_TODO": a
# known failure, reported but not counted (a TODO test that passes says so)
_tap_todo() { [ -n "${TAP_TODO:-}" ] && printf ' # TODO %s' "$TAP_TODO"; }
ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*$(_tap_todo)"; }
not_ok() {
  _tap_n=$((_tap_n + 1))
  [ -n "${TAP_TODO:-}" ] || _tap_fail=$((_tap_fail + 1))
  echo "not ok $_tap_n - $*$(_tap_todo)"
}
diag() { local l; while IFS= read -r l; do echo "# $l"; done <<<"$*"; }
# check DESC CMD...: ok when CMD exits 0
check() {
  local d=$1; shift
  if "$@"; then ok "$d"; else not_ok "$d"; diag "command failed: $*"; fi
}
is() {
  if [ "$1" == "$2" ]; then ok "$3"; else
    not_ok "$3"; diag "     got: '$(printf %s "$1" | head -c 400)'"
    diag "expected: '$(printf %s "$2" | head -c 400)'"
  fi
}
isnt() {
  if [ "$1" != "$2" ]; then ok "$3"; else not_ok "$3"; diag "got '$1', wanted anything else"; fi
}
like() {
  if [[ $1 =~ $2 ]]; then ok "$3"; else
    not_ok "$3"; diag "got: '$(printf %s "$1" | head -c 600)'"; diag "does not match: $2"
  fi
}
unlike() {
  if [[ $1 =~ $2 ]]; then not_ok "$3"; diag "got: '$(printf %s "$1" | head -c 600)'"; diag "matches: $2"; else ok "$3"; fi
}
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $2 # SKIP $1"; }
bail() { echo "Bail out! $*"; exit 1; }
done_testing() {
  echo "1..$_tap_n"
  [ "$_tap_fail" -eq 0 ] && exit 0
  diag "$_tap_fail of $_tap_n failed"
  exit 1
}

# ---- crawl configuration -------------------------------------------------

# loopback_conf SEEDS STATE: on stdout, the sections a snapshot crawl of
# this test's servers on loopback needs (private addresses allowed, no
# politeness delay, a commit every 10 ms); the test appends its own, a
# section named again adding to it.
loopback_conf() {
  revisit_conf "$1" "$2"
  printf '[crawl]\nrevisit = false\nprogress-interval = 0\n'
}

# revisit_conf SEEDS STATE [DELAY]: on stdout, the sections a crawl that
# revisits needs against this test's servers on loopback: as
# loopback_conf, but crawl.revisit stays on and the politeness delay is
# DELAY (0 when absent) at every fetch; the test appends its own.
revisit_conf() {
  cat <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $1
state-dir = $2
[politeness]
min-delay = ${3:-0}
max-delay = ${3:-0}
delay-factor = 0
[store]
commit-interval = 10ms
EOF
}

# wait_conf NAME TYPE WAIT [KEY=VALUE...]: on stdout, the wait evaluator
# [wait "NAME"] for content types matching TYPE (empty: no pattern, as
# the default evaluator) whose initial and minimum waits are WAIT, then
# each KEY = VALUE.
wait_conf() {
  local kv
  printf '[wait "%s"]\n' "$1"
  [ -n "$2" ] && printf 'content-type = %s\n' "$2"
  printf 'initial-wait = %s\nmin-wait = %s\n' "$3" "$3"
  for kv in "${@:4}"; do printf '%s = %s\n' "${kv%%=*}" "${kv#*=}"; done
}

# kts_stop_counting: kts' requests per path kept in $T/paths, then kts
# stopped (kts_stop); kts_count PATH: how many of them PATH had (0: none).
kts_stop_counting() {
  curl -s "$KTS_URL/_kts/paths" >"$T/paths"
  kts_stop
}
kts_count() {
  awk -v p="$1" '$1 == p { sub("count=", "", $2); print $2; f = 1 } END { if (!f) print 0 }' "$T/paths"
}

# ---- kts routes for feeds and sitemaps -----------------------------------

# no_robots_route: on stdout, a kts route answering robots.txt with 404
# (everything allowed, nothing more to read).
no_robots_route() {
  printf '[route "/robots.txt"]\nstatus = 404\nbody = none\n\n'
}

# sitemap_route [--changing] PATH ENTRY...: on stdout, a kts route
# serving a sitemap at PATH with one <url> per ENTRY (its inner XML, e.g.
# "<loc>...</loc><lastmod>...</lastmod>"; kts fills {port}); --changing:
# it changes on every request (a comment carries kts' version).
sitemap_route() {
  local changing=0 e
  [ "$1" = --changing ] && { changing=1; shift; }
  printf '[route "%s"]\ncontent-type = application/xml\n' "$1"
  [ "$changing" = 1 ] && printf 'change-every = 1\n'
  printf 'body = <?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
  [ "$changing" = 1 ] && printf 'body = <!-- version {version} -->\n'
  for e in "${@:2}"; do printf 'body = <url>%s</url>\n' "$e"; done
  printf 'body = </urlset>\n\n'
}

# ---- a crawl in the background, its hosts' learned state --------------------

# kria_bg NAME CONF [STATE]: kria crawl -c CONF in the background, its
# output in $T/NAME.out and $T/NAME.err, its own pid in KPID (kill -9
# reaches it), once its status server wrote STATE/status.addr (≤ 30 s;
# STATE: $T/state when absent).
kria_bg() {
  local state=${3:-$T/state}
  rm -f "$state/status.addr"
  "$KRIA" crawl -c "$2" >"$T/$1.out" 2>"$T/$1.err" &
  KPID=$!
  _pids+=("$KPID")
  wait_until 30 test -s "$state/status.addr" || bail "$1: no status.addr: $(tail -3 "$T/$1.err")"
}

# kria_term NAME: SIGTERM to the crawl kria_bg started, and a test that it
# exits 0.
kria_term() {
  kill -TERM "$KPID"
  wait "$KPID"
  is "$?" 0 "$1: SIGTERM, exit 0"
}

# host_fields live|stored STATE EXPR...: on stdout, each JavaScript EXPR
# over h, the first host of "kria report hosts --json" (live: from the
# status server of the crawl on STATE; stored: offline, from the state
# database of STATE, where h.learned is the record), separated by
# spaces, "-" for one that is absent.
host_fields() {
  local src=(-s "$2")
  [ "$1" = live ] && src=(--addr "$(cat "$2/status.addr")")
  shift 2
  "$KRIA" report hosts "${src[@]}" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const h = JSON.parse(s).hosts[0] || {};
      console.log(process.argv.slice(1).map(e => {
        let v;
        try { v = eval(e); } catch { v = undefined; }
        return v ?? "-";
      }).join(" "));
    })' "$@"
}

# same_numbers N "A..." "B...": the first N numbers of both lists equal
# within 1e-5 (relative above 1).
same_numbers() {
  node -e 'const n = +process.argv[1], a = process.argv[2].split(" "), b = process.argv[3].split(" ");
    for (let i = 0; i < n; i++) { const x = +a[i], y = +b[i];
      if (!(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(x)))) process.exit(1); }' "$@"
}

# ---- kts ----------------------------------------------------------------

# kts_start ROUTES [ARGS...]: start kts, wait (≤ 10 s) for its
# "listening" line on a fifo, set KTS_PID, KTS_PORT, KTS_URL.
kts_start() {
  local routes=$1; shift
  [ -x "$KTS" ] || bail "kts not built: $KTS"
  local fifo="$T/kts-fifo.$_tap_n.$RANDOM" fd line
  mkfifo "$fifo"
  "$KTS" -c "$routes" "$@" >"$fifo" 2>>"$T/kts.stderr" &
  KTS_PID=$!
  _pids+=("$KTS_PID")
  exec {fd}<"$fifo"
  if ! read -r -t 10 -u "$fd" line || [[ $line != listening\ * ]]; then
    exec {fd}<&-
    rm -f "$fifo"
    diag "kts did not start: $(tail -5 "$T/kts.stderr")"
    return 1
  fi
  exec {fd}<&-
  rm -f "$fifo"
  KTS_PORT=${line##*:}
  KTS_ADDR=${line#listening }
  KTS_URL="http://$KTS_ADDR"
  export KTS_PID KTS_PORT KTS_URL KTS_ADDR
}

# kts_stop [PID]: SIGTERM, wait (≤ 10 s); returns kts's exit status (0
# for a clean shutdown; ASan leak reports make it nonzero).
kts_stop() {
  local pid=${1:-$KTS_PID} rc
  kill -TERM "$pid" 2>/dev/null || return 127
  if ! timeout 10 tail -s 0.05 --pid="$pid" -f /dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 124
  fi
  wait "$pid"
  rc=$?
  return "$rc"
}

# ---- servers that log to stderr -------------------------------------------

# spawn_wait LOG READY_ERE FAIL_ERE CMD...: start CMD with stderr on a fifo
# and read its lines (each ≤ 10 s apart) into LOG until one matches
# READY_ERE (return 0, SPAWN_PID set; a background cat keeps draining so
# the server never blocks or dies on a full or closed pipe) or FAIL_ERE,
# EOF or silence (return 1, the process stopped and reaped).
spawn_wait() {
  local log=$1 ready=$2 fail=$3 fifo fd line ok=0; shift 3
  fifo="$T/spawn.$RANDOM.fifo"
  mkfifo "$fifo"
  "$@" 2>"$fifo" >>"$log" &
  SPAWN_PID=$!
  _pids+=("$SPAWN_PID")
  exec {fd}<"$fifo"
  rm -f "$fifo"
  while read -r -t 10 -u "$fd" line; do
    printf '%s\n' "$line" >>"$log"
    if [[ $line =~ $ready ]]; then ok=1; break; fi
    [[ $line =~ $fail ]] && break
  done
  if [ "$ok" = 1 ]; then
    cat <&"$fd" >>"$log" &
    _helpers+=("$!")
    exec {fd}<&-
    return 0
  fi
  exec {fd}<&-
  kill -TERM "$SPAWN_PID" 2>/dev/null
  timeout 10 tail -s 0.05 --pid="$SPAWN_PID" -f /dev/null || kill -KILL "$SPAWN_PID" 2>/dev/null
  wait "$SPAWN_PID" 2>/dev/null
  return 1
}

# wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds (0) or
# SECONDS pass (1). For conditions no event announces (a file appearing,
# a status page showing a figure); bounded in time.
wait_until() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  while ((SECONDS <= end)); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}

# random_port: a port number to try (callers retry when it is taken).
random_port() { echo $((20000 + (RANDOM * 32768 + RANDOM) % 40000)); }

# dnsmasq_start ARGS...: a dnsmasq answering only from ARGS (e.g.
# --address=/ok.test/127.0.0.1, --local=/invalid/ for NXDOMAIN) on
# 127.0.0.1:DNS_PORT (UDP and TCP); DNS_PID. No upstream, no /etc/hosts.
dnsmasq_start() {
  command -v dnsmasq >/dev/null || { diag "dnsmasq not installed"; return 1; }
  local try port user=()
  [ "$(id -u)" = 0 ] && user=(--user="$(id -un)")
  for try in 1 2 3 4 5 6 7 8 9 10; do
    port=$(random_port)
    if spawn_wait "$T/dnsmasq.log" "started, version" "failed|FAILED|illegal|bad " \
      dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
      --listen-address=127.0.0.1 --port="$port" --log-facility=- --pid-file= \
      "${user[@]}" "$@"; then
      DNS_PID=$SPAWN_PID
      DNS_PORT=$port
      export DNS_PID DNS_PORT
      return 0
    fi
    grep -q "in use" "$T/dnsmasq.log" || break
  done
  diag "dnsmasq did not start: $(tail -3 "$T/dnsmasq.log")"
  return 1
}

# ---- nginx --------------------------------------------------------------

# make_cert DIR: a self-signed EC certificate for localhost / 127.0.0.1.
make_cert() {
  local d=$1
  mkdir -p "$d"
  [ -s "$d/cert.pem" ] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$d/key.pem" -out "$d/cert.pem" -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1
}

# nginx_start DOCROOT [--tls] [--gzip]: our own nginx on a free port,
# serving DOCROOT with nginx's default ETag / Last-Modified handling. Its
# error log goes to stderr on a fifo: readiness is the master's "start
# worker processes" line, a bind failure ("emerg") means another port.
nginx_start() {
  local root=$1; shift
  local tls=0 gz=0 a
  for a in "$@"; do
    case $a in --tls) tls=1 ;; --gzip) gz=1 ;; *) bail "nginx_start: unknown $a" ;; esac
  done
  command -v nginx >/dev/null || { diag "nginx not installed"; return 1; }
  local pfx="$T/nginx.$RANDOM" try port
  mkdir -p "$pfx/tmp" "$pfx/logs"
  [ "$tls" = 1 ] && make_cert "$pfx"
  local extra_tmp="" user=""
  nginx -V 2>&1 | grep -q -- --without-http_uwsgi_module || extra_tmp+="uwsgi_temp_path $pfx/tmp/uwsgi; "
  nginx -V 2>&1 | grep -q -- --without-http_scgi_module || extra_tmp+="scgi_temp_path $pfx/tmp/scgi; "
  [ "$(id -u)" = 0 ] && user="user $(id -un) $(id -gn);"
  for try in 1 2 3 4 5 6 7 8 9 10; do
    port=$(random_port)
    cat >"$pfx/nginx.conf" <<EOF
$user
worker_processes 1;
daemon off;
master_process on;
pid $pfx/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
  access_log $pfx/logs/access.log;
  client_body_temp_path $pfx/tmp/body;
  proxy_temp_path $pfx/tmp/proxy;
  fastcgi_temp_path $pfx/tmp/fastcgi;
  $extra_tmp
  types { text/html html htm; text/plain txt; text/css css; image/png png; application/octet-stream bin; }
  default_type application/octet-stream;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$port$([ "$tls" = 1 ] && echo " ssl");
    $([ "$tls" = 1 ] && echo "ssl_certificate $pfx/cert.pem; ssl_certificate_key $pfx/key.pem;")
    $([ "$gz" = 1 ] && echo "gzip on; gzip_min_length 0; gzip_types text/plain text/css;")
    root $root;
    etag on;
  }
}
EOF
    if spawn_wait "$pfx/logs/error.log" "start worker process" '\[emerg\]' \
      nginx -p "$pfx" -c "$pfx/nginx.conf" -e stderr; then
      NGINX_PID=$SPAWN_PID
      NGINX_PORT=$port
      NGINX_PREFIX=$pfx
      if [ "$tls" = 1 ]; then NGINX_URL="https://127.0.0.1:$port"; else NGINX_URL="http://127.0.0.1:$port"; fi
      export NGINX_PID NGINX_PORT NGINX_URL NGINX_PREFIX
      return 0
    fi
    grep -q "Address already in use" "$pfx/logs/error.log" || break
  done
  diag "nginx did not start: $(tail -3 "$pfx/logs/error.log")"
  return 1
}

# ---- kria ---------------------------------------------------------------

# kfetch ARGS...: run `kria fetch --allow-private` (bounded to 60 s); RC,
# OUT, ERR. Every test server listens on loopback, which kria refuses to
# connect to by default ([http] allow-private-addresses; crawl configs in
# tests set it). kfetch_strict leaves the address policy on.
kfetch() { kfetch_strict --allow-private "$@"; }
kfetch_strict() {
  timeout 60 "$KRIA" fetch "$@" >"$T/kfetch.out" 2>"$T/kfetch.err"
  RC=$?
  OUT=$(cat "$T/kfetch.out")
  ERR=$(cat "$T/kfetch.err")
}

# field NAME: the value of the first "NAME: value" line of $OUT.
field() {
  local l
  while IFS= read -r l; do
    if [[ $l == "$1: "* ]]; then printf '%s\n' "${l#"$1: "}"; return 0; fi
  done <<<"$OUT"
  return 1
}

# sha1_b32 FILE (or - for stdin): SHA-1 as 32 base32 characters.
sha1_b32() {
  sha1sum "${1:--}" | cut -c1-40 | tr a-f A-F | basenc --base16 -d | base32
}

# kria_has_fetch: 0 once `kria fetch` exists in this build.
kria_has_fetch() {
  [ -x "$KRIA" ] && timeout 10 "$KRIA" fetch --help >/dev/null 2>&1
}
