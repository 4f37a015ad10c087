#!/usr/bin/env python3
"""Markdown report of bench/adaptive/run.sh from kria simulate's JSON.

Usage: report.py MAIN.json BYTES.json MAIN.time BYTES.time
(the .time files are GNU time -v output of the two runs).
"""
import json
import re
import sys


def load_time(path):
    out = {}
    try:
        for line in open(path):
            m = re.match(r"\s*(Elapsed \(wall clock\) time.*|Maximum resident set size \(kbytes\)"
                         r"|User time \(seconds\)|System time \(seconds\)): (.*)", line)
            if m:
                out[m.group(1)] = m.group(2).strip()
    except OSError:
        pass
    return out


def dur(s):
    if s < 120:
        return "%.0f s" % s
    if s < 7200:
        return "%.1f min" % (s / 60)
    if s < 2 * 86400:
        return "%.1f h" % (s / 3600)
    return "%.1f d" % (s / 86400)


def name(p):
    if p["policy"] == "fixed":
        return "fixed (every %s)" % dur(p["fixed_interval_s"])
    return p["policy"]


def table(d, key, title):
    print("%s:" % title)
    print()
    print("| policy | fetches | versions | captured | capture ratio | versions per fetch | freshness | mean age | body GiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in d["policies"]:
        m = p[key]
        vpf = m["versions_captured"] / m["fetches"] if m["fetches"] else 0
        print("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %s | %.2f |" % (
            name(p), m["fetches"], m["versions_existed"], m["versions_captured"],
            m["capture_ratio"], vpf, m["mean_freshness"], dur(m["mean_age_s"]),
            m["body_bytes"] / 2**30))
    print()


def pol(d, n):
    for p in d["policies"]:
        if p["policy"] == n:
            return p
    return None


def main():
    main_, bytes_ = (json.load(open(f)) for f in sys.argv[1:3])
    tmain, tbytes = (load_time(f) for f in sys.argv[3:5])
    d = main_
    print("World: %d URIs on %d hosts, synthetic (change rates log-uniform from 1 h to 30 d, "
          "10 %% volatile, host validators 70 %% correct / 20 %% missing / 10 %% lying), "
          "seed %d, %.0f days, first %.0f days apart; politeness %s ms after each fetch "
          "(fetch times log-normal, median %d ms); the config's defaults otherwise "
          "(thesis Figure 12 evaluators: text/html initial = min wait 20 s, max 28 d; "
          "adaptive.budget-utilisation 1)." % (
              d["uris"], d["hosts"], d["seed"], d["days"], d["window_days"],
              d["delay_ms"] if d["delay_ms"] is not None else "config", d["fetch_ms"]))
    print()
    table(d, "all", "Whole run")
    table(d, "first", "First %.0f days (how fast each policy learns)" % d["window_days"])

    fx, mu, po, orc = (pol(d, n) for n in ("fixed", "multiplicative", "poisson", "oracle"))
    rows = []

    def ratio(a, b, key):
        return a[key]["versions_captured"] / b[key]["versions_captured"] if a and b and b[key]["versions_captured"] else None

    r1 = ratio(po, fx, "all")
    r2 = ratio(po, mu, "all")
    r3 = ratio(po, mu, "first")
    if r1 is not None:
        rows.append(("poisson / fixed at equal fetches (%d vs %d fetches)" % (po["all"]["fetches"], fx["all"]["fetches"]),
                     r1, 1.5))
    if r2 is not None:
        rows.append(("poisson / multiplicative, same politeness budget (%d vs %d fetches)" % (
            po["all"]["fetches"], mu["all"]["fetches"]), r2, 1.1))
    if r3 is not None:
        rows.append(("poisson / multiplicative, first %.0f days" % d["window_days"], r3, 1.3))
    bp = pol(bytes_, "poisson")
    if bp:
        rows.append(("body bytes saved on unchanged visits, correct validators (poisson; "
                     "%d unchanged visits, %d 304s, %d aborts)" % (
                         bp["all"]["unchanged_visits"], bp["all"]["not_modified"],
                         bp["all"]["mid_fetch_aborts"]), bp["all"]["unchanged_bytes_saved"], 0.95))
    print("Targets (issue 4):")
    print()
    print("| measure | value | target | met |")
    print("|---|---:|---:|---|")
    for label, v, t in rows:
        if t < 1:
            print("| %s | %.2f %% | ≥ %.0f %% | %s |" % (label, 100 * v, 100 * t, "yes" if v >= t else "**no**"))
        else:
            print("| %s | %.3f× | ≥ %.1f× | %s |" % (label, v, t, "yes" if v >= t else "**no**"))
    print()

    print("Diagnostics:")
    print()
    viol = sum(p["politeness_violations"] for p in d["policies"])
    checked = sum(p["politeness_checked"] for p in d["policies"])
    print("- politeness: %d fetches checked against the previous fetch of their host + its delay, "
          "%d violations" % (checked, viol))
    if po and "estimates" in po:
        e = po["estimates"]
        print("- poisson's final estimates: %.1f %% of %d URIs within 2× of the true rate, "
              "median estimate / truth %.2f" % (100 * e["within_2x"], e["uris"], e["median_ratio"]))
    if orc:
        print("- oracle (the same allocator fed the true rates): %.3f× multiplicative over the run, "
              "%.3f× over the first %.0f days; poisson reaches %.1f %% of it" % (
                  ratio(orc, mu, "all"), ratio(orc, mu, "first"), d["window_days"],
                  100 * ratio(po, orc, "all")))
    if po:
        print("- validators (main run, poisson): %d host(s) caught lying; %d visits found a changed "
              "page but archived nothing (304 or abort); %.1f %% of body bytes saved on %d unchanged "
              "visits (volatile pages and hosts without validators included)" % (
                  po["hosts_distrusted"], po["all"]["lost_by_validators"],
                  100 * po["all"]["unchanged_bytes_saved"], po["all"]["unchanged_visits"]))
    if bp:
        print("- bytes run: with every validator correct, the saving is bounded by 1 - "
              "the validator-trust sample (5 %% of visits downloaded in full at first, halving "
              "every 20 confirmations down to 1 %%) minus the probation downloads: %.2f %% for "
              "poisson, %.2f %% for multiplicative" % (100 * bp["all"]["unchanged_bytes_saved"],
                                  100 * pol(bytes_, "multiplicative")["all"]["unchanged_bytes_saved"]
                                  if pol(bytes_, "multiplicative") else float("nan")))
    if mu and po:
        print("- budget: multiplicative keeps every host's queue saturated (%d fetches = the "
              "politeness capacity); poisson aims its realised fetches at "
              "adaptive.budget-utilisation of it and made %.1f %% of those fetches" % (mu["all"]["fetches"], 100 * po["all"]["fetches"] / mu["all"]["fetches"]))
    print()
    print("Run time (each policy a separate frontier and SQLite store, one per shard with "
          "--jobs J > 1: then wall s is the longest shard's and CPU s the shards' sum; "
          "fixed: its last pass):")
    print()
    print("| run | policy | fetches | wall s | CPU s | fetches per CPU-s |")
    print("|---|---|---:|---:|---:|---:|")
    for label, dd in (("main", main_), ("bytes", bytes_)):
        for p in dd["policies"]:
            f = p["all"]["fetches"]
            print("| %s | %s | %d | %.1f | %.1f | %.0f |" % (
                label, p["policy"], f, p["wall_s"], p["cpu_s"], f / p["cpu_s"] if p["cpu_s"] else 0))
    print()
    for label, t in (("main", tmain), ("bytes", tbytes)):
        if t:
            try:
                cpu = "%.1f" % (float(t["User time (seconds)"]) + float(t["System time (seconds)"]))
            except (KeyError, ValueError):
                cpu = "?"
            print("- %s run: wall %s, CPU %s s (every process), peak RSS %s KiB (largest process)" % (
                label, t.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "?"), cpu,
                t.get("Maximum resident set size (kbytes)", "?")))


if __name__ == "__main__":
    main()
