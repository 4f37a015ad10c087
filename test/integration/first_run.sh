#!/usr/bin/env bash
# What a new user meets on a first run of `kria crawl` and `kria status`:
#  - a fatal error is one line, `kria: error: ...`, without the syslog
#    priority prefix on a file or terminal; with <N> when stderr is the
#    journal ($JOURNAL_STREAM names fd 2's device and inode);
#  - a start that fails (no seeds, a missing seeds file, an unusable WARC
#    directory, a port in use) leaves no state directory behind when it
#    created it, removes only the files it created in an existing one,
#    and leaves the state of an earlier crawl as it was;
#  - `kria status -s` / `kria report` read a cleanly stopped crawl's state
#    directory that the reader cannot write (no -wal or -shm file there);
#  - a snapshot crawl in which no seed could be fetched (refused by the
#    address policy, a connection refused) exits 2 with one line saying
#    so; one fetched seed is enough for exit 0.
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] && "$KRIA" crawl --help >/dev/null 2>&1 || bail "kria crawl is not built ($KRIA)"

# conf FILE STATE [lines...]: a snapshot crawl configuration; the lines
# go on in [crawl].
conf() {
  local f=$1 state=$2 l; shift 2
  {
    echo "[politeness]"
    echo "min-delay = 0"
    echo "max-delay = 0"
    echo "delay-factor = 0"
    echo "[store]"
    echo "commit-interval = 10ms"
    echo "[crawl]"
    echo "state-dir = $state"
    echo "revisit = false"
    echo "progress-interval = 0"
    for l in "$@"; do echo "$l"; done
  } >"$f"
}

# lines FILE: the number of lines in FILE.
lines() { wc -l <"$1" | tr -d ' '; }

# ---- one line per fatal error, <N> only on the journal ---------------------------

conf "$T/bad.conf" "$T/s-bad" "bogus-key = 1"
"$KRIA" crawl -c "$T/bad.conf" 2>"$T/e1"
is "$?" 2 "a bad configuration: exit 2"
is "$(lines "$T/e1")" 1 "a bad configuration: one line"
like "$(cat "$T/e1")" "^kria: error: config: .*bogus-key" "... kria: error: config:, no priority prefix"

: >"$T/e2"
JOURNAL_STREAM=$(stat -c %d:%i "$T/e2") "$KRIA" crawl -c "$T/bad.conf" 2>>"$T/e2"
is "$?" 2 "on the journal: exit 2"
is "$(lines "$T/e2")" 1 "on the journal: one line"
like "$(cat "$T/e2")" "^<3>kria: error: config: .*bogus-key" "on the journal: the <3> prefix"

# The variable inherited with stderr elsewhere (a shell started by a unit).
: >"$T/other"
JOURNAL_STREAM=$(stat -c %d:%i "$T/other") "$KRIA" crawl -c "$T/bad.conf" 2>"$T/e3"
like "$(cat "$T/e3")" "^kria: error: config: " "JOURNAL_STREAM naming another file: no prefix"

# Diagnostics of a start that gets further follow the same rule.
echo "http://127.0.0.1:1/" >"$T/seeds1"
touch "$T/a-file"
conf "$T/file.conf" "$T/a-file" "seeds = $T/seeds1"
"$KRIA" crawl -c "$T/file.conf" 2>"$T/e4"
is "$?" 2 "a state directory that is a file: exit 2"
unlike "$(cat "$T/e4")" "(^|"$'\n'")<[0-9]>" "... no priority prefix on any line"
is "$(grep -c 'kria\.lock' "$T/e4")" 1 "... the refusal printed once"
like "$(grep 'error' "$T/e4")" "^kria: error: db: .*a-file/kria\.lock: cannot open lock file" "... as kria: error: db:"

: >"$T/e5"
JOURNAL_STREAM=$(stat -c %d:%i "$T/e5") "$KRIA" crawl -c "$T/file.conf" 2>>"$T/e5"
is "$(grep -c 'kria\.lock' "$T/e5")" 1 "on the journal: the refusal printed once"
like "$(grep 'kria\.lock' "$T/e5")" "^<3>kria: error: db: " "... with <3>"
unlike "$(cat "$T/e5")" "(^|"$'\n'")kria: " "... and every line has its prefix"

conf "$T/hosts.conf" "$T/s-hosts" "seeds = $T/seeds1" "[dns]" "hosts-file = $T/no-such-hosts"
"$KRIA" crawl -c "$T/hosts.conf" 2>"$T/e6"
is "$?" 2 "an unreadable dns.hosts-file: exit 2"
is "$(grep -c 'kria: error' "$T/e6")" 1 "... one error line"
like "$(grep 'kria: error' "$T/e6")" "^kria: error: config: .*no-such-hosts: cannot open hosts file" "... naming the file"

# ---- a start that fails leaves no state directory behind ------------------------

cat >"$T/routes.ini" <<'EOF'
[site]
pages = 3
links = 2
body-size = 1K
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
echo "$KTS_URL/" >"$T/seeds.txt"

# refused NAME STATE WHY_ERE [lines...]: a start with this configuration
# exits 2 saying WHY_ERE, and STATE does not exist afterwards.
refused() {
  local name=$1 state=$2 why=$3; shift 3
  conf "$T/$name.conf" "$state" "$@"
  "$KRIA" crawl -c "$T/$name.conf" 2>"$T/$name.err"
  is "$?" 2 "$name: exit 2"
  like "$(cat "$T/$name.err")" "$why" "$name: says why"
  if [ -e "$state" ]; then not_ok "$name: no state directory left"; diag "$(ls -lA "$state")"
  else ok "$name: no state directory left"; fi
}
refused "no seeds" "$T/new1" "nothing to crawl"
refused "a missing seeds file" "$T/new2" "no-seeds\.txt: cannot open" "seeds = $T/no-seeds.txt"
refused "a WARC directory that is a file" "$T/new3" "a-file.*Not a directory" \
  "seeds = $T/seeds.txt" "warc-dir = $T/a-file"
refused "the status port in use" "$T/new4" "cannot listen" \
  "seeds = $T/seeds.txt" "[status]" "listen = 127.0.0.1:$KTS_PORT"
refused "a new WARC directory elsewhere" "$T/new5" "cannot open" \
  "seeds = $T/no-seeds.txt" "warc-dir = $T/new5-warcs"
check "... which is removed as well" test ! -e "$T/new5-warcs"

# An existing directory (made by the user, or systemd's StateDirectory=)
# stays, with only what was in it before.
mkdir "$T/mine"
echo keep >"$T/mine/notes"
conf "$T/mine.conf" "$T/mine" "seeds = $T/no-seeds.txt"
"$KRIA" crawl -c "$T/mine.conf" 2>"$T/mine.err"
is "$?" 2 "an existing empty state directory, a missing seeds file: exit 2"
is "$(ls -A "$T/mine")" notes "... the directory stays with only its own file"

# The state of an earlier crawl is left as it was.
listing() {
  (cd "$1" && find . -printf '%p %y\n' | sort && cat logs/crawl.log &&
    find warcs -type f -exec cksum {} + | sort)
}
conf "$T/ok.conf" "$T/done" "seeds = $T/seeds.txt" "[http]" "allow-private-addresses = true"
timeout 60 "$KRIA" crawl -c "$T/ok.conf" 2>"$T/ok.err"
is "$?" 0 "a snapshot crawl of kts: exit 0"
before=$(listing "$T/done")
timeout 60 "$KRIA" crawl -c "$T/ok.conf" -o crawl.seeds="$T/no-seeds.txt" 2>"$T/ok2.err"
is "$?" 2 "a second start with a missing seeds file: exit 2"
is "$(listing "$T/done")" "$before" "... the earlier crawl's state directory is as it was"

# A directory in use by another process is never touched: flock(1) holds
# its lock around the start.
mkdir "$T/held"
: >"$T/held/kria.lock"
conf "$T/held.conf" "$T/held" "seeds = $T/seeds.txt"
flock "$T/held/kria.lock" "$KRIA" crawl -c "$T/held.conf" 2>"$T/held.err"
is "$?" 2 "a state directory locked by another process: exit 2"
like "$(cat "$T/held.err")" "in use by another" "... says so"
is "$(ls -A "$T/held")" kria.lock "... and nothing was created or removed there"

# ---- kria status -s / report on a state directory the reader cannot write --------

# The crawl above stopped cleanly: no -wal or -shm file. Its copy belongs
# to nobody and is made read-only; nobody reads it (root ignores modes).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  chmod o+x "$T"
  cp -a "$T/done" "$T/ro"
  chown -R 65534:65534 "$T/ro"
  chmod 0400 "$T/ro/kria.db"
  chmod 0500 "$T/ro"
  check "the copy has no -wal or -shm file" test ! -e "$T/ro/kria.db-wal" -a ! -e "$T/ro/kria.db-shm"
  out=$(asnobody "$KRIA" status -s "$T/ro" 2>&1)
  is "$?" 0 "kria status -s on a read-only state directory: exit 0"
  like "$out" "frontier +[0-9]+ URIs" "... the frontier shown"
  unlike "$out" "not a kria state database" "... not mistaken for a foreign database"
  out=$(asnobody "$KRIA" report hosts -s "$T/ro" 2>&1)
  is "$?" 0 "kria report hosts -s: exit 0"
  like "$out" "127\.0\.0\.1:$KTS_PORT" "... lists the host"
  out=$(asnobody "$KRIA" report frontier -s "$T/ro" 2>&1)
  is "$?" 0 "kria report frontier -s: exit 0"
  out=$(asnobody "$KRIA" report uri "$KTS_URL/" -s "$T/ro" 2>&1)
  is "$?" 0 "kria report uri -s: exit 0"
  like "$out" "visits +1" "... the seed's visit"
  check "nothing was written there" test ! -e "$T/ro/kria.db-wal" -a ! -e "$T/ro/kria.db-shm"

  # Not immutable while a crawl holds the lock (root ignores the modes)...
  out=$(flock "$T/ro/kria.lock" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$KRIA" status -s "$T/ro" 2>&1)
  is "$?" 2 "the lock held by another process: exit 2"
  like "$out" "^kria: error: db: .*kria\.db: cannot read: " "... cannot read, says so"
  # ... nor with a -wal file left by a crash (committed pages may be in it).
  chmod 0700 "$T/ro"
  : >"$T/ro/kria.db-wal"
  chmod 0500 "$T/ro"
  out=$(asnobody "$KRIA" status -s "$T/ro" 2>&1)
  is "$?" 2 "a -wal file in a read-only directory: exit 2"
  like "$out" "^kria: error: db: .*kria\.db: cannot read: " "... cannot read, says so"
  chmod -R u+w "$T/ro"
else
  skip "needs root and setpriv" "kria status -s on a read-only state directory"
fi

# ---- a snapshot crawl that fetched no seed ----------------------------------------

# snap NAME SEEDS... -- [lines...]: a snapshot crawl of SEEDS in a new
# state directory, without retries; RC, ERR.
snap() {
  local name=$1; shift
  : >"$T/$name.seeds"
  while [ "$1" != -- ]; do echo "$1" >>"$T/$name.seeds"; shift; done
  shift
  conf "$T/$name.conf" "$T/$name.state" "seeds = $T/$name.seeds" \
    "[politeness]" "max-retries = 0" "[dns]" "servers = 127.0.0.1:1" "$@"
  timeout 60 "$KRIA" crawl -c "$T/$name.conf" >/dev/null 2>"$T/$name.err"
  RC=$?
  ERR=$(cat "$T/$name.err")
}

# Loopback refused by the default address policy, and a name no server
# answers for (dns.servers points at a closed port).
snap none1 "$KTS_URL/" "http://127.0.0.2:$KTS_PORT/" "http://nowhere.test/" --
is "$RC" 2 "no seed fetched (address policy, DNS): exit 2"
like "$ERR" "(^|"$'\n'")kria: error: no seed could be fetched \(3 seeds: 2 refused by the address policy, 1 DNS failure\)$" \
  "... one line saying why, last"
is "$(grep -c 'kria: error' "$T/none1.err")" 1 "... and no other error line"

# A closed port.
snap none2 "http://127.0.0.1:1/" -- "[http]" "allow-private-addresses = true"
is "$RC" 2 "no seed fetched (connection refused): exit 2"
like "$ERR" "kria: error: no seed could be fetched \(1 seed: 1 connection refused\)" "... says so"

# One seed fetched is enough.
snap some "http://127.0.0.1:1/" "$KTS_URL/" -- "[http]" "allow-private-addresses = true"
is "$RC" 0 "one of two seeds fetched: exit 0"
like "$ERR" "snapshot crawl complete" "... the snapshot is complete"
unlike "$ERR" "no seed could be fetched" "... no error"

# A restart of a finished snapshot fetches nothing and tries no seed: 0.
timeout 60 "$KRIA" crawl -c "$T/some.conf" >/dev/null 2>"$T/some2.err"
is "$?" 0 "a restart of the finished snapshot: exit 0"

done_testing
