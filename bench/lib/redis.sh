# bench/lib/redis.sh — the cluster benchmarks' redis-server and waiting
# (sourced after common.sh). Redis is kept as a crawl's must be: an
# append-only file, fsync at every write (README, "A crawl on several
# machines").

# kb_wait_for SECONDS CMD...: run CMD every 50 ms until it succeeds; 1
# after SECONDS.
kb_wait_for() {
	local end=$((SECONDS + $1)); shift
	while ((SECONDS <= end)); do "$@" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

# kb_redis_start DIR [PORT]: redis-server on loopback, its files in DIR,
# on PORT (a restart) or on a free port (another when it is taken); sets
# KB_REDIS_PORT and KB_REDIS_PID. 0 once it accepts connections.
kb_redis_start() {
	local dir=$1 want=${2:-} try
	for try in 1 2 3 4 5; do
		KB_REDIS_PORT=${want:-$(kb_random_port)}
		: >"$dir/redis.log"
		redis-server --port "$KB_REDIS_PORT" --bind 127.0.0.1 --dir "$dir" --save '' \
			--appendonly yes --appendfsync always --daemonize no --logfile "$dir/redis.log" \
			>/dev/null 2>&1 &
		KB_REDIS_PID=$!
		kb_wait_for 10 kb__redis_up "$dir" && return 0
		kill -KILL "$KB_REDIS_PID" 2>/dev/null
		wait "$KB_REDIS_PID" 2>/dev/null
		[ -n "$want" ] && return 1
	done
	return 1
}
kb__redis_up() { grep -q 'Ready to accept' "$1/redis.log" && kill -0 "$KB_REDIS_PID"; }
