#!/usr/bin/env bash
# The console page (GET /) in headless Chromium from Debian's packages:
# a crawl of a kts site with the status server on, Chromium loads the
# console, runs its script (which fetches /status) and saves a screenshot
# under the build tree ($KRIA_BUILD/test-artifacts/console.png) for a
# person to look at. Checks: the screenshot is a PNG of the asked size,
# the DOM after the script ran holds the figures from /status (state,
# host queue tiles, the validator table header) and no error line, and
# the status server saw the page's own /status request. Skipped when
# chromium is not installed (make deps installs it as optional).
. "$(dirname "$0")/lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  skip "chromium not installed" "console screenshot"
  done_testing
fi
"$KRIA" status --help >/dev/null 2>&1 || bail "kria status is not built ($KRIA)"

cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <html><body><a href="/p/0">start</a></body></html>

[site]
pages = 500
links = 3
body-size = 1K
etag = auto
EOF
kts_start "$T/routes.ini" || bail "kts did not start"
STATE=$T/state
echo "$KTS_URL/" >"$T/seeds.txt"
cat >"$T/crawl.conf" <<EOF
[http]
allow-private-addresses = true
[crawl]
seeds = $T/seeds.txt
state-dir = $STATE
progress-interval = 0
[politeness]
min-delay = 20ms
max-delay = 20ms
delay-factor = 0
[status]
listen = 127.0.0.1:0
EOF
"$KRIA" crawl -c "$T/crawl.conf" 2>"$T/kria.err" &
KRIA_PID=$!
_pids+=("$KRIA_PID")
for _ in $(seq 1 300); do [ -s "$STATE/status.addr" ] && break; sleep 0.05; done
[ -s "$STATE/status.addr" ] || bail "no status address: $(tail -3 "$T/kria.err")"
ADDR=$(cat "$STATE/status.addr")

# Let the crawl and the first census (after ~1 s) produce figures.
for _ in $(seq 1 200); do
  curl -s -m 5 "http://$ADDR/status" | grep -q '"census":{' && break
  sleep 0.05
done
r0=$(curl -s -m 5 "http://$ADDR/status" | grep -o '"requests":[0-9]*' | head -1 | cut -d: -f2)

ART=$KRIA_BUILD/test-artifacts
mkdir -p "$ART"
rm -f "$ART/console.png"
chrome() {
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --no-first-run --disable-sync --disable-dev-shm-usage \
    --user-data-dir="$T/chromium" --window-size=1200,900 --virtual-time-budget=4000 "$@" \
    2>>"$T/chromium.log"
}
chrome --screenshot="$ART/console.png" "http://$ADDR/"
check "chromium saved a screenshot" test -s "$ART/console.png"
sig=$(head -c 8 "$ART/console.png" | od -An -tx1 | tr -d ' \n')
is "$sig" 89504e470d0a1a0a "it is a PNG"
dims=$(od -An -tu1 -j16 -N8 "$ART/console.png" | tr -s ' ' | sed 's/^ //')
read -r w3 w2 w1 w0 h3 h2 h1 h0 <<<"$dims"
is "$(((w3 << 24) + (w2 << 16) + (w1 << 8) + w0))x$(((h3 << 24) + (h2 << 16) + (h1 << 8) + h0))" \
  1200x900 "the screenshot is 1200x900"
check "a real picture, not a blank page (> 20 KB)" test "$(stat -c %s "$ART/console.png")" -gt 20000

chrome --dump-dom "http://$ADDR/" >"$T/dom.html"
check "the page's script rendered the state" grep -Eq 'id="state" class="pill (running|stopping)"' "$T/dom.html"
check "tiles filled from /status" grep -q 'visits/s (10 s)' "$T/dom.html"
check "host queue bars drawn" grep -Eq '<span>ready</span>' "$T/dom.html"
check "validator table present" grep -q '<th>reliability</th>' "$T/dom.html"
check "no error shown (the error line is empty)" grep -q '<span id="err" class="bad"></span>' "$T/dom.html"
r1=$(curl -s -m 5 "http://$ADDR/status" | grep -o '"requests":[0-9]*' | head -1 | cut -d: -f2)
check "the page fetched /status itself ($r0 -> $r1 requests)" test "$r1" -ge $((r0 + 4))
diag "screenshot: $ART/console.png"

kill -TERM "$KRIA_PID"
timeout 10 tail -s 0.05 --pid="$KRIA_PID" -f /dev/null
wait "$KRIA_PID"
is "$?" 0 "kria exits 0"
done_testing
