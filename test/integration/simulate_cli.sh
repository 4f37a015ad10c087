#!/usr/bin/env bash
# `kria simulate`: the tables and the --json shape for synthetic worlds and
# traces, the same numbers whether policies run here or split by host
# over child processes (--jobs; an uneven world), the events of a long
# crawl with the invariants' output, and the exit statuses: 0 success, 1
# an invariant failed (--check), 2 error (a bad trace or config), 64
# usage. TAP lines; run by test/run.sh with KRIA set to the binary under
# test.
. "$(dirname "$0")/lib.sh"

# sim ARGS...: runs kria simulate; sets RC, OUT, ERR
sim() {
  "$KRIA" simulate "$@" >"$T/out" 2>"$T/err"
  RC=$?
  OUT=$(cat "$T/out")
  ERR=$(cat "$T/err")
}

# usage_err DESC STDERR-ERE ARGS...: exit 64, a message, nothing on stdout
usage_err() {
  local d=$1 re=$2
  shift 2
  sim "$@"
  if [ "$RC" = 64 ] && [[ $ERR =~ $re ]] && [ -z "$OUT" ]; then ok "$d"; else
    not_ok "$d"; diag "rc=$RC err='$ERR' out='${OUT:0:200}'"
  fi
}

# jq-like checks with python3: pyjson FILE EXPR (EXPR on d, true = ok)
pyjson() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

command -v python3 >/dev/null || bail "python3 is needed to read the JSON"

# ---- help and the table -----------------------------------------------------
sim --help
is "$RC" 0 "--help exits 0"
like "$OUT" "usage: kria simulate" "--help prints the usage"
like "$OUT" "--trace FILE" "--help documents --trace"

small=(--urls 300 --hosts 3 --days 2 --window-days 1 --seed 3)
sim "${small[@]}"
is "$RC" 0 "a small synthetic run exits 0"
like "$OUT" "300 URIs on 3 hosts \(synthetic\)" "the table names the world"
like "$OUT" "whole run \(2.0d\)" "a table for the whole run"
like "$OUT" "first 24.0h" "a table for the first window"
like "$OUT" $'\n''fixed \([0-9.]+[smhd]\) +[0-9]+ +[0-9]+ +0\.[0-9]{3} ' "fixed names its interval, then numbers"
like "$OUT" $'\n''multiplicative +[0-9]+ +[0-9]+ ' "a multiplicative row"
like "$OUT" $'\n''poisson +[0-9]+ +[0-9]+ ' "a poisson row"
like "$OUT" "poisson estimates at the end: [0-9]+ URIs" "poisson's estimates are scored"
unlike "$OUT" "VIOLATED" "politeness held in every run"
is "$ERR" "" "nothing on stderr"

# ---- JSON ---------------------------------------------------------------------
sim "${small[@]}" --json
is "$RC" 0 "--json exits 0"
cp "$T/out" "$T/a.json"
check "--json is one JSON object" pyjson "$T/a.json" 'isinstance(d, dict)'
check "world fields" pyjson "$T/a.json" \
  'd["uris"] == 300 and d["hosts"] == 3 and d["source"] == "synthetic" and d["seed"] == 3 and d["days"] == 2'
check "the three policies in order" pyjson "$T/a.json" \
  '[p["policy"] for p in d["policies"]] == ["fixed", "multiplicative", "poisson"]'
keys='["versions_existed","versions_captured","capture_ratio","mean_freshness","mean_age_s","fetches","body_bytes","fetches_per_captured_version","not_modified","mid_fetch_aborts","unchanged_visits","unchanged_full_body_bytes","unchanged_body_bytes","unchanged_bytes_saved","lost_by_validators","weighted_versions_existed","weighted_versions_captured","weighted_capture_ratio","weighted_freshness","harmonic_penalty"]'
check "every metric, whole run and first window" pyjson "$T/a.json" \
  "all(set($keys) <= set(p[k]) for p in d['policies'] for k in ('all', 'first'))"
check "metrics are consistent" pyjson "$T/a.json" \
  'all(0 <= p[k]["versions_captured"] <= p[k]["versions_existed"] and 0 <= p[k]["mean_freshness"] <= 1 and p[k]["fetches"] > 0 for p in d["policies"] for k in ("all","first"))'
check "the first window is part of the run" pyjson "$T/a.json" \
  'all(p["first"]["fetches"] <= p["all"]["fetches"] and p["first"]["versions_existed"] <= p["all"]["versions_existed"] for p in d["policies"])'
check "every policy saw the same changes" pyjson "$T/a.json" \
  'len({p["all"]["versions_existed"] for p in d["policies"]}) == 1'
check "fixed has its interval, the others null" pyjson "$T/a.json" \
  'd["policies"][0]["fixed_interval_s"] > 0 and d["policies"][1]["fixed_interval_s"] is None'
check "politeness was checked and held" pyjson "$T/a.json" \
  'all(p["politeness_checked"] > 0 and p["politeness_violations"] == 0 for p in d["policies"])'
check "ratios between policies" pyjson "$T/a.json" \
  'set(["poisson_vs_fixed","poisson_vs_multiplicative","poisson_vs_multiplicative_first"]) <= set(d["ratios"])'
check "poisson reports its estimates" pyjson "$T/a.json" \
  '0 <= d["policies"][2]["estimates"]["within_2x"] <= 1'

# the same numbers from child processes
sim "${small[@]}" --json --jobs 2
is "$RC" 0 "--jobs 2 exits 0"
cp "$T/out" "$T/b.json"
check "--jobs 2 gives the same numbers" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
strip = lambda d: [{k: v for k, v in p.items() if k not in ("wall_s", "cpu_s")} for p in d["policies"]]
sys.exit(0 if strip(a) == strip(b) else 1)' "$T/a.json" "$T/b.json"

# one policy, and the oracle diagnostic
sim --urls 100 --hosts 2 --days 1 --policy poisson,oracle --json
is "$RC" 0 "--policy poisson,oracle exits 0"
check "only the policies asked for" pyjson "$T/out" \
  '[p["policy"] for p in d["policies"]] == ["poisson", "oracle"] and "poisson_vs_oracle" in d["ratios"]'
# the published schedulers, each alone and together; lambdacrawl and
# binarylambdacrawl share one bandwidth among the hosts, so with --jobs
# they run unsplit and the numbers are the same
for p in lambdacrawl binarylambdacrawl lambdacrawl-polite nutch stormcrawler; do
  sim --urls 100 --hosts 2 --days 2 --delay 60s --policy "$p" --json
  is "$RC" 0 "--policy $p exits 0"
  check "$p runs and fetches" pyjson "$T/out" \
    "[p['policy'] for p in d['policies']] == ['$p'] and d['policies'][0]['all']['fetches'] >= 100"
done
all=(--urls 200 --hosts 4 --days 2 --delay 60s --json
  --policy poisson,lambdacrawl,binarylambdacrawl,lambdacrawl-polite,nutch,stormcrawler)
sim "${all[@]}"
is "$RC" 0 "every published scheduler in one run"
cp "$T/out" "$T/c.json"
sim "${all[@]}" --jobs 2
is "$RC" 0 "and with --jobs 2"
check "--jobs 2 gives the same numbers for them" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
strip = lambda d: [{k: v for k, v in p.items() if k not in ("wall_s", "cpu_s")} for p in d["policies"]]
sys.exit(0 if strip(a) == strip(b) else 1)' "$T/c.json" "$T/out"
# adaptive.objective reaches poisson's allocator: a binding budget moves it
sim --urls 200 --hosts 2 --days 6 --delay 600s --policy poisson --json
cp "$T/out" "$T/v.json"
sim --urls 200 --hosts 2 --days 6 --delay 600s --policy poisson -o adaptive.objective=harmonic --json
is "$RC" 0 "-o adaptive.objective=harmonic exits 0"
check "and plans otherwise than versions" python3 -c '
import json, sys
a, b = (json.load(open(f))["policies"][0]["all"] for f in sys.argv[1:])
sys.exit(0 if a != b else 1)' "$T/v.json" "$T/out"
sim --urls 10 --hosts 2 --days 1 --policy poisson -o adaptive.objective=staleness
is "$RC" 2 "an unknown objective is a config error"
like "$ERR" "objective" "naming the key"

sim --urls 100 --hosts 2 --days 1 --policy fixed --fixed-interval 6h --json
is "$RC" 0 "fixed alone with --fixed-interval exits 0"
check "fixed uses the interval given" pyjson "$T/out" 'd["policies"][0]["fixed_interval_s"] == 21600'

# importance weights: equal weights give the unweighted figures; Pareto ones do not
check "weights of 1: weighted = unweighted" pyjson "$T/a.json" \
  'all(abs(p[k]["weighted_capture_ratio"] - p[k]["capture_ratio"]) < 1e-9 and abs(p[k]["weighted_freshness"] - p[k]["mean_freshness"]) < 1e-9 and p[k]["harmonic_penalty"] > 0 for p in d["policies"] for k in ("all","first"))'
sim "${small[@]}" --importance pareto:1.5 --json
is "$RC" 0 "--importance pareto:1.5 runs"
check "Pareto weights move the weighted figures, not the others" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
pa, pb = a["policies"][0]["all"], b["policies"][0]["all"]
sys.exit(0 if pa["versions_existed"] == pb["versions_existed"] and pa["weighted_versions_existed"] != pb["weighted_versions_existed"] else 1)' "$T/a.json" "$T/out"
sim "${small[@]}" --importance lognormal:1
like "$OUT" "importance-weighted +w.ratio +w.fresh +harmonic" "the weighted table"
usage_err "a bad importance" "--importance: bad 'pareto:0.5'" --urls 10 --hosts 2 --importance pareto:0.5

# worlds beyond log-uniform: each option changes the world, and runs
for opt in "--mix 0.2:never,0.8:weibull:0.8:5d" "--shift share=0.5,at=1d,factor=4" \
  "--shift share=0.5,at=1d,redraw" "--cycles daily:0.9@3,weekly:0.5@sat"; do
  # shellcheck disable=SC2086
  sim "${small[@]}" $opt --json
  is "$RC" 0 "$opt runs"
  check "$opt moves the changes" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(0 if a["policies"][0]["all"]["versions_existed"] != b["policies"][0]["all"]["versions_existed"] else 1)' "$T/a.json" "$T/out"
done
usage_err "a bad Weibull" "--mix: mix: bad 'weibull:0:5d'" --urls 10 --hosts 2 --mix weibull:0:5d
usage_err "a shift without its time" "--shift: needs share=S and at=T" --urls 10 --hosts 2 --shift share=0.5,factor=2
usage_err "a shift both ways" "--shift: needs one of factor=F and redraw" --urls 10 --hosts 2 --shift share=0.5,at=1d,factor=2,redraw
usage_err "a bad cycle" "--cycles: bad amplitude '2'" --urls 10 --hosts 2 --cycles daily:2
usage_err "a bad peak day" "--cycles: bad peak day 'someday'" --urls 10 --hosts 2 --cycles weekly:0.5@someday
usage_err "--cycles with a trace" "--trace excludes" --trace /dev/null --cycles daily:0.5

# ---- statistics over seeds (--seeds) ---------------------------------------------
seeds=(--urls 200 --hosts 4 --days 2 --window-days 1 --seed 5 --policy oracle,fixed,poisson --seeds 3)
sim "${seeds[@]}" --json
is "$RC" 0 "--seeds 3 --json exits 0"
cp "$T/out" "$T/s1.json"
check "the seeds, the reference (first listed), the policies in print order" pyjson "$T/s1.json" \
  'd["seeds"] == 3 and d["seed_first"] == 5 and d["ref"] == "oracle" and [p["policy"] for p in d["policies"]] == ["fixed", "poisson", "oracle"]'
measures='["capture_ratio","first_capture_ratio","freshness","harmonic_penalty","fetches","weighted_capture_ratio"]'
check "every measure per seed, with its mean and interval" pyjson "$T/s1.json" \
  "all(len(p[m][\"seeds\"]) == 3 and p[m][\"mean\"][\"lo\"] <= p[m][\"mean\"][\"mean\"] <= p[m][\"mean\"][\"hi\"] for p in d[\"policies\"] for m in $measures)"
check "the mean is the seeds' mean" pyjson "$T/s1.json" \
  'all(abs(sum(p[m]["seeds"]) / 3 - p[m]["mean"]["mean"]) < 1e-6 * max(1, abs(p[m]["mean"]["mean"])) for p in d["policies"] for m in ("capture_ratio","fetches"))'
check "paired: against the reference, not for it" pyjson "$T/s1.json" \
  'all(("ratio_to_ref" in p["capture_ratio"]) == (p["policy"] != "oracle") for p in d["policies"])'
check "the paired ratio is the mean of the per-seed ratios" pyjson "$T/s1.json" \
  '(lambda a, r: abs(sum(x / y for x, y in zip(a, r)) / 3 - d["policies"][1]["capture_ratio"]["ratio_to_ref"]["mean"]) < 1e-6)(d["policies"][1]["capture_ratio"]["seeds"], d["policies"][2]["capture_ratio"]["seeds"])'
check "fixed matched per seed: an interval each" pyjson "$T/s1.json" 'len(d["policies"][0]["fixed_interval_s"]) == 3'
# seed k is --seed + k: the first seed's figures are the single run's
sim --urls 200 --hosts 4 --days 2 --window-days 1 --seed 6 --policy oracle,fixed,poisson --json
check "seed 2 of 3 is --seed 6" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(0 if abs(a["policies"][1]["capture_ratio"]["seeds"][1] - b["policies"][1]["all"]["capture_ratio"]) < 1e-6 else 1)' "$T/s1.json" "$T/out"
sim "${seeds[@]}" --json --jobs 3
check "--jobs 3: the same statistics" cmp -s "$T/s1.json" "$T/out"
sim "${seeds[@]}" --ref poisson
is "$RC" 0 "--seeds in tables"
like "$OUT" "3 seeds \(5\.\.7\)" "the seeds named"
like "$OUT" "against poisson: the mean of the per-seed ratios" "--ref names the reference"
like "$OUT" "harmonic staleness penalty \(lower is better\)" "the harmonic table"
like "$OUT" "poisson +[0-9.]+ ± [0-9.]+ +\(ref\)" "the reference's row"
usage_err "--seeds 0" "--seeds: bad value '0'" --seeds 0
usage_err "--seeds 101" "--seeds: bad value '101'" --seeds 101
usage_err "a --ref not run" "--ref: 'oracle' is not one of the policies run" --ref oracle
usage_err "a --ref unknown" "--ref: 'best' is not one of the policies run" --ref best

# ---- traces -----------------------------------------------------------------------
cat >"$T/trace" <<'EOF'
# URI                        type       changes     validators volatile
http://news.example/         text/html  rate=1h     correct    yes
http://news.example/logo.png image/png  never       correct    no   size=4KiB
http://news.example/a        text/html  every=6h    missing    no
http://blog.example/p/1      text/html  at=2h,1d    lying      no   importance=3
EOF
sim --trace "$T/trace" --days 2 --delay 1s --json
is "$RC" 0 "a trace runs"
check "the trace's URIs and hosts" pyjson "$T/out" \
  'd["uris"] == 4 and d["hosts"] == 2 and d["source"] == "trace" and d["trace"].endswith("/trace")'
check "versions from the trace's change times" pyjson "$T/out" \
  'd["policies"][1]["all"]["versions_existed"] >= 2 + 8'

printf 'http://a.example/ text/html rate=1h correct no\nhttp://a.example/b text/html rate=fast correct no\n' >"$T/bad"
sim --trace "$T/bad" --days 1
is "$RC" 2 "a bad trace exits 2"
like "$ERR" "kria: error: invalid: .*/bad:2: bad period" "the error names file and line"
is "$OUT" "" "nothing on stdout"
sim --trace "$T/missing" --days 1
is "$RC" 2 "a missing trace exits 2"
like "$ERR" "io: .*missing" "and says why"

# ---- one policy split by host over child processes (--jobs) ----------------------
# An uneven world: a big host, a middling one with its own slow politeness,
# a tiny one and a one-URI host on a port; every --jobs prints the same
# numbers (the shards merge into the whole run exactly), the tables too.
{
  for i in $(seq 0 59); do
    v=(correct missing lying)
    echo "http://big.example/p/$i text/html rate=$((1 + i % 20))h ${v[$((i % 3))]} $([ $((i % 7)) = 0 ] && echo yes || echo no)"
  done
  for i in $(seq 0 13); do echo "http://mid.example/p/$i text/html every=$((2 + i))h correct no"; done
  echo "http://tiny.example/a image/png never correct no size=4KiB"
  echo "http://tiny.example/b text/html at=1h,5h,30h missing no"
  echo "http://tiny.example:8080/only - rate=3h lying no"
} >"$T/uneven"
printf '[host "mid.example"]\npoliteness.min-delay = 7s\npoliteness.max-delay = 7s\n' >"$T/uneven.conf"
uneven=(--trace "$T/uneven" -c "$T/uneven.conf" --days 3 --window-days 1 --policy fixed,multiplicative,poisson,oracle)
for j in 1 2 3 8; do
  sim "${uneven[@]}" --json --jobs "$j"
  is "$RC" 0 "the uneven world with --jobs $j exits 0"
  cp "$T/out" "$T/u$j.json"
  sim "${uneven[@]}" --jobs "$j"
  # the tables, the validators' without its last column (wall s)
  sed -E 's/ (ok|VIOLATED|-) +[0-9]+\.[0-9]+$/ \1/' "$T/out" >"$T/u$j.txt"
done
check "the uneven world: 4 hosts, four policies" pyjson "$T/u1.json" \
  'd["hosts"] == 4 and len(d["policies"]) == 4 and all(p["all"]["fetches"] > 100 for p in d["policies"])'
for j in 2 3 8; do
  check "--jobs $j prints the numbers of --jobs 1 (JSON)" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for d in (a, b):
    for p in d["policies"]:
        p.pop("wall_s"); p.pop("cpu_s")
sys.exit(0 if a == b else 1)' "$T/u1.json" "$T/u$j.json"
  check "--jobs $j prints the table of --jobs 1" cmp -s "$T/u1.txt" "$T/u$j.txt"
done
# a shard that fails fails its policy's run: exit 2 and its message, once
for j in 1 2; do
  sim --urls 100 --hosts 2 --days 1 --state-dir "$T/nonexistent/x" --jobs "$j"
  is "$RC" 2 "an unusable --state-dir exits 2 (--jobs $j)"
  like "$ERR" "multiplicative run: cannot create a state directory under .*nonexistent" "and says why (--jobs $j)"
  is "$(grep -c 'cannot create' <<<"$ERR")" 1 "one message (--jobs $j)"
  is "$OUT" "" "nothing on stdout (--jobs $j)"
done
# a shard's process that ends without writing its result (here: killed at
# its CPU limit of 1 s, in a run of ~30 CPU-s; the parent, that only
# waits, stays far below it) fails its policy's run: exit 2, the shard
# named, nothing on stdout, never its zeroed numbers taken for a result
mkdir -p "$T/sd"
(ulimit -c 0 -t 1 && exec "$KRIA" simulate --urls 3000 --hosts 30 --days 365 \
  --policy multiplicative --jobs 2 --state-dir "$T/sd" >"$T/out" 2>"$T/err")
RC=$?
OUT=$(cat "$T/out")
ERR=$(cat "$T/err")
is "$RC" 2 "a shard killed before its result exits 2"
like "$ERR" "multiplicative run's process \(shard 1 of 2\) ended without a result \(signal [0-9]+" \
  "and names the shard and the signal"
is "$OUT" "" "nothing on stdout (a killed shard)"

# ---- config ----------------------------------------------------------------------
printf '[wait "all"]\ninitial-wait = 1h\nmin-wait = 10m\nmax-wait = 7d\n[politeness]\nmin-delay = 3s\nmax-delay = 3s\n' >"$T/sim.conf"
sim --urls 100 --hosts 2 --days 1 -c "$T/sim.conf" --policy multiplicative --json
is "$RC" 0 "-c FILE is read"
check "the config's politeness applies" pyjson "$T/out" \
  'd["policies"][0]["politeness_min_gap_ms"] >= 0 and d["policies"][0]["all"]["fetches"] <= 2 * 86400 / 3 + 2'
sim --urls 100 --hosts 2 --days 1 -c "$T/nonexistent.conf"
is "$RC" 2 "an unreadable config exits 2"
like "$ERR" "config" "and says it is the config"
sim --urls 100 --hosts 2 --days 1 -o politeness.min-delay=forever
is "$RC" 2 "a bad -o exits 2"

# ---- the events of a long crawl and the invariants ---------------------------------
cat >"$T/events" <<'EOF'
# outages, a busy page, robots.txt down and relaxing, growth, deaths, unlinking
outage       h1.sim.test  at=2d for=4h
busy         http://h2.sim.test/p/3 status=503 retry-after=120
robots-down  h3.sim.test  at=1d for=1d
robots-relax h4.sim.test  share=0.3 at=2d
grow         h5.sim.test  per-day=20
unlink       h5.sim.test  share=0.5 at=2d..4d
die          h0.sim.test  share=0.2 at=1d..3d status=410
EOF
ev=(--urls 300 --hosts 6 --days 5 --policy multiplicative --events "$T/events")
sim "${ev[@]}"
is "$RC" 0 "a world with events exits 0 without --check"
like "$OUT" "invariants \(recovery bound 8.5h: politeness.max-backoff" "the invariants are printed with the bound"
like "$OUT" "1 live URIs visited within max-wait \+ bound +(PASS|FAIL) [0-9]+ of [0-9]+ checks late" "invariant 1 with its figure"
like "$OUT" "2 recovered hosts' URIs within the bound +(PASS|FAIL) [0-9]+ of [0-9]+ late, worst" "invariant 2 with its figure"
like "$OUT" "3 distinct URIs per host within the cap +(PASS|FAIL|-) +max [0-9]+" "invariant 3 with its figure"
like "$OUT" "4 lateness not growing \(2nd vs last quarter\) (PASS|FAIL) [0-9]+ of [0-9]+ hosts growing" "invariant 4 with its figure"
like "$OUT" "events: [0-9]+ connects refused, [1-9][0-9]* busy answers, [1-9][0-9]* dead answers" "what the events did"
like "$OUT" "born [1-9][0-9]*, [0-9]+ visited" "the pages born"
sim "${ev[@]}" --json
is "$RC" 0 "--json with events exits 0"
cp "$T/out" "$T/ev1.json"
check "each policy has its invariants" pyjson "$T/ev1.json" \
  'all(k in d["policies"][0]["invariants"] for k in ("bound_s","pass","live","recovery","host_uris","lateness","events")) and d["policies"][0]["invariants"]["bound_s"] == 30600'
check "the events' figures" pyjson "$T/ev1.json" \
  '(lambda e: e["refused"] > 0 and e["busy"] > 0 and e["robots_5xx"] > 0 and e["born"] == 99 and e["dead"] > 0 and e["disallowed"] > 0)(d["policies"][0]["invariants"]["events"])'
check "pass is the verdicts together" pyjson "$T/ev1.json" \
  '(lambda i: i["pass"] == all(i[k]["pass"] is not False for k in ("live","recovery","host_uris","lateness")))(d["policies"][0]["invariants"])'
# the same figures split over child processes
sim "${ev[@]}" --json --jobs 3
check "--jobs 3 gives the same invariants" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(0 if a["policies"][0]["invariants"] == b["policies"][0]["invariants"] else 1)' "$T/ev1.json" "$T/out"
# --check exits 1 exactly when a verdict is FAIL
sim "${ev[@]}" --check --json
if pyjson "$T/out" 'd["policies"][0]["invariants"]["pass"]'; then
  is "$RC" 0 "--check exits 0 when every invariant holds"
else
  is "$RC" 1 "--check exits 1 when an invariant fails"
fi
# a failure by construction: 2,000 new pages a day wanting a visit a minute
# from a host serving one every 2 s, under the fixed policy, recovery bound 2 m
printf '[politeness]\nmax-backoff = 1m\nmax-retries = 1\nretry-delay = 1m\n' >"$T/tight.conf"
sim --urls 1 --hosts 1 --days 2 --policy fixed --fixed-interval 1m -c "$T/tight.conf" \
  --event 'grow h0.sim.test per-day=2000 change=1m' --check
is "$RC" 1 "--check exits 1 on a failing invariant"
like "$OUT" "1 live URIs visited within max-wait \+ bound +FAIL" "invariant 1 fails"
like "$OUT" "4 lateness not growing \(2nd vs last quarter\) FAIL 1 of 1 hosts growing" "invariant 4 fails"
sim --urls 100 --hosts 2 --days 1 --policy multiplicative --check
is "$RC" 0 "--check without events: the invariants of a quiet world hold"
like "$OUT" "1 live URIs visited within max-wait \+ bound +PASS" "and are printed"

# events refused: usage (64) naming the event or the file's line; unreadable file: 2
usage_err "an unknown event" "--event 'storm h0.sim.test': unknown event 'storm'" --urls 10 --hosts 2 --event 'storm h0.sim.test'
usage_err "an event on an unknown host" "no URI of host 'h9.sim.test'" --urls 10 --hosts 2 --event 'outage h9.sim.test for=1d'
usage_err "a seeds reload" "seeds-reload is not modelled" --urls 10 --hosts 2 --event 'seeds-reload h0.sim.test'
usage_err "a bad key" "unknown key 'when'" --urls 10 --hosts 2 --event 'die h0.sim.test when=2d'
printf 'outage h0.sim.test at=1d for=1h\n\nbusy h1.sim.test status=200\n' >"$T/badev"
usage_err "a bad events file" "badev:3: busy: status must be 503 or 429" --urls 10 --hosts 2 --events "$T/badev"
sim --urls 10 --hosts 2 --events "$T/nonexistent.ev"
is "$RC" 2 "an unreadable events file exits 2"
like "$ERR" "nonexistent.ev" "and names it"

# ---- usage -----------------------------------------------------------------------
usage_err "unknown option" "unknown option '--frobnicate'" --frobnicate
usage_err "a value is missing" "--urls needs a value" --urls
usage_err "--urls 0" "--urls: bad value '0'" --urls 0
usage_err "--hosts above --urls" "hosts" --urls 10 --hosts 20
usage_err "--days 0" "--days: bad value" --days 0
usage_err "an unknown policy" "unknown policy 'bogus'" --policy fixed,bogus
usage_err "the policies are listed" "lambdacrawl, binarylambdacrawl, lambdacrawl-polite, nutch, stormcrawler" --policy lambda
usage_err "no policy" "--policy: no policy given" --policy ''
usage_err "fixed alone without an interval" "fixed alone needs --fixed-interval" --policy fixed
usage_err "--trace with synthetic options" "--trace excludes" --trace "$T/trace" --urls 10
usage_err "a bad mix" "--mix: mix: .2d..1d.: periods must be within" --mix 2d..1d
usage_err "bad validator shares" "--validators: bad value" --validators honest=1
usage_err "--utilisation 0" "--utilisation: bad value" --utilisation 0
usage_err "--scheme 5" "--scheme: bad value" --scheme 5
usage_err "--jobs 0" "--jobs: bad value" --jobs 0
usage_err "--restart 0" "--restart: bad value" --restart 0

# ---- a restart: the hosts' learned state reloaded or dropped ------------------
sim -v -v --urls 200 --hosts 2 --days 2 --policy poisson --restart 1d
is "$RC" 0 "--restart: exit 0"
like "$ERR" "restart: 2 hosts' learned state reloaded from its record" "--restart reloads the learned state"
sim -v -v --urls 200 --hosts 2 --days 2 --policy poisson --restart 1d --restart-forget
like "$ERR" "restart: 2 hosts' learned state dropped" "--restart-forget drops it"

done_testing
