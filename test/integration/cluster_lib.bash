# cluster_lib.bash — what the cluster tests (cluster*.sh) share, sourced
# after lib.sh: a redis-server of the test's own, members started and
# stopped, their status pages. Not named *.sh:
# test/run.sh runs those.

# redis_start DIR: redis-server on a free loopback port (REDIS_PORT kept
# across restarts), its files in DIR; waits (≤ 10 s) until it answers.
REDIS_PORT=
redis_start() {
  local dir=$1 try
  mkdir -p "$dir"
  for try in 1 2 3 4 5; do
    [ -n "$REDIS_PORT" ] && [ "$try" = 1 ] || REDIS_PORT=$(random_port)
    : >"$dir/redis.log"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir" --save '' \
      --appendonly yes --appendfsync always --daemonize no --logfile "$dir/redis.log" \
      --protected-mode yes >/dev/null 2>&1 &
    REDIS_PID=$!
    _pids+=("$REDIS_PID")
    if wait_until 10 redis_ready "$dir/redis.log"; then return 0; fi
    kill -KILL "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
  done
  return 1
}
redis_ready() {
  grep -q 'Ready to accept connections' "$1" && kill -0 "$REDIS_PID" 2>/dev/null
}
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

# ---- kria members ---------------------------------------------------------

# member_conf N SEEDS DIR PREFIX [NODES]: member nN's configuration on
# loopback (state in DIR/nN), host names from $T/hosts, a status server on
# a free port, in the cluster PREFIX of NODES ("n1, n2, n3"); [cluster]
# comes last, so a caller may append keys of its own to it.
member_conf() {
  loopback_conf "$2" "$3/n$1"
  cat <<EOF
[dns]
hosts-file = $T/hosts
[status]
listen = 127.0.0.1:0
[cluster]
redis = 127.0.0.1:$REDIS_PORT
node = n$1
nodes = ${5:-n1, n2, n3}
prefix = $4
EOF
}

# start N DIR: start member nN in the background (KPID[N]); its stderr
# in DIR/nN.err.
declare -A KPID
start() {
  local n=$1 dir=$2
  "$KRIA" crawl -c "$dir/n$n.conf" >>"$dir/n$n.out" 2>>"$dir/n$n.err" &
  KPID[$n]=$!
  _pids+=("${KPID[$n]}")
}
# stop N [SIG]: SIGTERM (or SIG), wait (≤ 10 s); the exit status.
stop() {
  local p=${KPID[$1]}
  kill "-${2:-TERM}" "$p" 2>/dev/null
  timeout 10 tail -s 0.05 --pid="$p" -f /dev/null || kill -KILL "$p" 2>/dev/null
  wait "$p"
}
status_url() { cat "$1/n$2/status.addr" 2>/dev/null; }
metric() { # DIR N NAME
  curl -s "http://$(status_url "$1" "$2")/metrics" | awk -v m="$3" '$1 == m {print $2}'
}
