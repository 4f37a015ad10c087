# replay_lib.bash — what the replay tests (replay_browser.sh,
# replay_large.sh) share, sourced after lib.sh: ReplayWeb.page in headless
# Chromium through replay.mjs. Not named *.sh: test/run.sh runs those.

REPLAY_DIR=$KRIA_TOP/test/integration

# replay_prereqs: CHROMIUM set to Debian's chromium; without it or node a
# skip and the end of the test. puppeteer-core and replaywebpage are
# installed with `npm ci` when missing, and must be the pinned versions.
replay_prereqs() {
  CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$CHROMIUM" ]; then
    skip "chromium not installed (make deps installs it as optional)" "replay in ReplayWeb.page"
    done_testing
  fi
  if ! command -v node >/dev/null; then
    skip "node not installed (make deps installs nodejs)" "replay in ReplayWeb.page"
    done_testing
  fi
  if [ ! -f "$REPLAY_DIR/node_modules/puppeteer-core/package.json" ] ||
    [ ! -f "$REPLAY_DIR/node_modules/replaywebpage/sw.js" ]; then
    diag "installing puppeteer-core and replaywebpage from package-lock.json (npm ci)"
    if ! (cd "$REPLAY_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1; then
      not_ok "npm ci installs puppeteer-core and replaywebpage"
      diag "$(tail -20 "$T/npm.log")"
      done_testing
    fi
  fi
  local p want have
  for p in puppeteer-core replaywebpage; do
    want=$(node -p "require('$REPLAY_DIR/package.json').dependencies['$p']")
    have=$(node -p "require('$REPLAY_DIR/node_modules/$p/package.json').version")
    is "$have" "$want" "$p $want installed (pinned)"
  done
}

# replay_png FILE: a 37x23 RGB PNG (zlib from node)
replay_png() {
  node -e '
const z = require("zlib"), fs = require("fs");
const crcT = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
const crc = (b) => { let c = 0xffffffff; for (const x of b) c = crcT[(c ^ x) & 255] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
const chunk = (t, d) => { const l = Buffer.alloc(4), c = Buffer.alloc(4), td = Buffer.concat([Buffer.from(t), d]); l.writeUInt32BE(d.length); c.writeUInt32BE(crc(td)); return Buffer.concat([l, td, c]); };
const w = 37, h = 23, ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3, Buffer.from([200, 30, 30]))]);
fs.writeFileSync(process.argv[1], Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
  chunk("IHDR", ihdr), chunk("IDAT", z.deflateSync(Buffer.concat(Array(h).fill(row)))), chunk("IEND", Buffer.alloc(0))]));
' "$1"
}

# replay_run LIMIT NAME ARG...: node replay.mjs --chromium ... --log
# $T/NAME.log ARG... within LIMIT seconds, its output in $T/NAME.out and
# $T/NAME.err; its exit status. Chromium is closed by replay.mjs; should it
# have been cut short, it is stopped here (and its process group:
# puppeteer starts it detached) by its PID, and that is a failure.
replay_run() {
  local limit=$1 name=$2 rc cpid
  shift 2
  timeout "$limit" node "$REPLAY_DIR/replay.mjs" --chromium "$CHROMIUM" --log "$T/$name.log" "$@" \
    >"$T/$name.out" 2>"$T/$name.err"
  rc=$?
  cpid=$(cat "$T/$name.log.chromium-pid" 2>/dev/null)
  if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then
    kill -KILL -- "-$cpid" 2>/dev/null || kill -KILL "$cpid" 2>/dev/null
    not_ok "Chromium closed by replay.mjs ($name)"
  fi
  return "$rc"
}

# replay_crawl SEED: the crawl of the tests' kts site from SEED into
# $T/state, as $T/c.conf: a loopback snapshot crawl (loopback_conf) but
# for the --revisit-now passes, validators used from the first revisit
# on (conditional GETs: 304s, and mid-fetch aborts; no sampled full
# downloads), identical payloads deduplicated
replay_crawl() {
  echo "$1" >"$T/seeds.txt"
  loopback_conf "$T/seeds.txt" "$T/state" >"$T/c.conf"
  cat >>"$T/c.conf" <<EOC
[adaptive]
trust-sample = 0
trust-probation = 0
dedupe = true
EOC
}

# replay_pass LIMIT N ARGS...: crawl pass N of $T/c.conf within LIMIT
# seconds, begun in a later second than the last pass ended (a bounded
# wait on the clock: at most one second), as WARC-Date has seconds
# resolution in the index ReplayWeb.page looks captures up by; sets
# REPLAY_PASS_MS to its wall time
replay_last_sec=0
replay_later_second() { [ "$(date +%s)" -gt "$replay_last_sec" ]; }
replay_pass() {
  local limit=$1 n=$2 t0
  shift 2
  wait_until 3 replay_later_second || bail "the clock did not move on"
  t0=$(date +%s%3N)
  timeout "$limit" "$KRIA" crawl -c "$T/c.conf" "$@" >"$T/crawl$n.out" 2>"$T/crawl$n.err"
  is "$?" 0 "crawl pass $n exits 0"
  REPLAY_PASS_MS=$(($(date +%s%3N) - t0))
  replay_last_sec=$(date +%s)
}

# replay_results FILE: replay.mjs's output FILE as TAP: its diagnostics,
# then one test per RESULT line (kinds listed in $TODO_KINDS as TAP TODO,
# $TODO_WHY), counted by kind in REPLAY_KINDS
declare -A REPLAY_KINDS=()
replay_results() {
  local tag res kind url ts detail
  grep '^#' "$1" | sed 's/^# //' | while IFS= read -r l; do diag "$l"; done
  while IFS=$'\t' read -r tag res kind url ts detail; do
    [ "$tag" = RESULT ] || continue
    REPLAY_KINDS[$kind]=$((${REPLAY_KINDS[$kind]:-0} + 1))
    [ -n "${TODO_KINDS:-}" ] && [[ " $TODO_KINDS " == *" $kind "* ]] && TAP_TODO=${TODO_WHY:-}
    if [ "$res" = ok ]; then ok "$kind $url $ts: $detail"; else not_ok "$kind $url $ts: $detail"; fi
    TAP_TODO=
  done < <(grep -P '^RESULT\t' "$1")
}

# replay_pack WACZ: the crawl's WARC files (warcs, by name) indexed by
# `kria cdx` into $T/all.cdxj and packed by `kria wacz` into WACZ; no URL
# may have two captures in one second, which the index could not tell
# apart
replay_pack() {
  mapfile -t warcs < <(find "$T/state/warcs" -name '*.warc.gz' | sort)
  "$KRIA" cdx "${warcs[@]}" >"$T/all.cdxj" 2>"$T/cdx.err"
  is "$?" 0 "kria cdx indexes the crawl's ${#warcs[@]} WARC files"
  "$KRIA" wacz "$1" "${warcs[@]}" >"$T/wacz.out" 2>"$T/wacz.err"
  is "$?" 0 "kria wacz packs them"
  is "$(cut -d' ' -f1,2 "$T/all.cdxj" | sort | uniq -d)" "" "no URL captured twice in one second"
}
