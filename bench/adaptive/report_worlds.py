#!/usr/bin/env python3
"""Markdown report of bench/adaptive/run.sh --worlds from kria simulate --seeds JSON.

Usage: report_worlds.py NAME=FILE.json ... (one per world, in print order)
Each file is the output of `kria simulate --seeds N --ref oracle --json`.
"""
import json
import sys


def ci(c, fmt="%.4f"):
    if c is None or c.get("mean") is None:
        return "-"
    if c.get("lo") is None:
        return fmt % c["mean"]
    return (fmt + " ± " + fmt) % (c["mean"], (c["hi"] - c["lo"]) / 2)


def interval(c, fmt="%.4f"):
    if c is None or c.get("mean") is None:
        return "-"
    if c.get("lo") is None:
        return fmt % c["mean"]
    return (fmt + " [" + fmt + ", " + fmt + "]") % (c["mean"], c["lo"], c["hi"])


def main():
    worlds = []
    for a in sys.argv[1:]:
        name, path = a.split("=", 1)
        worlds.append((name, json.load(open(path))))
    targets = []
    for name, d in worlds:
        print("#### %s" % name)
        print()
        print("%d URIs on %d hosts, %.0f days (first %.0f apart), %d seeds (%d..%d); "
              "means over the seeds ± their 95 %% t-interval half-width; ratios to %s: the "
              "mean of the per-seed ratios [paired 95 %% t-interval]." % (
                  d["uris"], d["hosts"], d["days"], d["window_days"], d["seeds"],
                  d["seed_first"], d["seed_first"] + d["seeds"] - 1, d["ref"]))
        print()
        print("| policy | capture ratio | ratio to %s | first %.0f d capture | first %.0f d ratio to %s "
              "| freshness | harmonic penalty | weighted capture | fetches |" % (
                  d["ref"], d["window_days"], d["window_days"], d["ref"]))
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for p in d["policies"]:
            ref = p["policy"] == d["ref"]
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                p["policy"], ci(p["capture_ratio"]["mean"]),
                "(ref)" if ref else interval(p["capture_ratio"].get("ratio_to_ref"), "%.3f"),
                ci(p["first_capture_ratio"]["mean"]),
                "(ref)" if ref else interval(p["first_capture_ratio"].get("ratio_to_ref"), "%.3f"),
                ci(p["freshness"]["mean"]), ci(p["harmonic_penalty"]["mean"]),
                ci(p["weighted_capture_ratio"]["mean"]), ci(p["fetches"]["mean"], "%.0f")))
            if p["policy"] == "poisson" and not ref:
                targets.append((name, p["capture_ratio"]["ratio_to_ref"],
                                p["first_capture_ratio"]["ratio_to_ref"]))
        print()
    if targets:
        print("Targets (issue 20, no signals): poisson ≥ 99 % of the oracle over the run and "
              "≥ 95 % over the first days, mean over the seeds (met on the mean; the last "
              "column says whether the whole interval is above):")
        print()
        print("| world | poisson / oracle, run | ≥ 0.99 | poisson / oracle, first days | ≥ 0.95 | interval above both |")
        print("|---|---:|---|---:|---|---|")
        for name, a, b in targets:
            ok_a = a["mean"] is not None and a["mean"] >= 0.99
            ok_b = b["mean"] is not None and b["mean"] >= 0.95
            above = a.get("lo") is not None and b.get("lo") is not None and a["lo"] >= 0.99 and b["lo"] >= 0.95
            print("| %s | %s | %s | %s | %s | %s |" % (
                name, interval(a, "%.3f"), "yes" if ok_a else "**no**", interval(b, "%.3f"),
                "yes" if ok_b else "**no**", "yes" if above else "no"))
        print()


if __name__ == "__main__":
    main()
