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
is "$(grep -c 'error' "$T/e6")" 1 "... one error line"
like "$(grep 'error' "$T/e6")" "^kria: error: config: .*no-such-hosts: cannot open hosts file" "... naming the file"

done_testing
