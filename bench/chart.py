#!/usr/bin/python3
"""bench/chart.py — one PNG of pages/s and CPU-µs/page per tool.

Reads the raw result files the benchmark scripts leave behind:

  fetch   <fetch>/runs.tsv    bench/fetch/run.sh: one line per client run
                              (client, wall_s, user_s, sys_s, requests, ok)
  crawl   <crawl>/runs.tsv    bench/crawl/run.sh, when present: one line
                              per (site, rep, pass, client) run (wall_s,
                              user_s, sys_s, pages_ok or requests, ok)
  scale   <scale>/samples.tsv bench/scale/run.sh: samples of visits and
                              kria's CPU seconds over the crawl phase

and draws two panels side by side, one bar per tool and benchmark:
pages/s (log scale) and client CPU-µs per page, medians of the valid runs
with min–max whiskers (the scale bar: the steady window after warm-up,
whiskers over its 30 s windows). Missing inputs are skipped with a note.

Usage: bench/chart.py [--fetch DIR] [--crawl DIR] [--scale DIR] [-o PNG]
Defaults: bench/out/{fetch,crawl,scale}/last, bench/chart.png.
Needs python3-matplotlib from Debian (make deps); runs on
/usr/bin/python3 so that a python from elsewhere does not shadow it.
"""
import argparse
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def num(row, *keys):
    for k in keys:
        v = row.get(k)
        if v not in (None, "", "-"):
            try:
                return float(v)
            except ValueError:
                pass
    return None


def summarise(runs):
    """runs: [(pages_per_s, cpu_us_per_page)] -> (median, min, max) of each."""
    pps = [r[0] for r in runs]
    cpu = [r[1] for r in runs]
    return ((statistics.median(pps), min(pps), max(pps)),
            (statistics.median(cpu), min(cpu), max(cpu)))


def from_runs(path, label_of, pages_keys):
    """Bars from a runs.tsv: valid runs (ok == 1) grouped by label_of(row)."""
    groups = {}
    for row in read_tsv(path):
        if row.get("ok", "1") != "1":
            continue
        wall, user, sys_ = num(row, "wall_s"), num(row, "user_s"), num(row, "sys_s")
        pages = num(row, *pages_keys)
        if not wall or not pages or user is None or sys_ is None:
            continue
        label = label_of(row)
        if label:
            groups.setdefault(label, []).append((pages / wall, (user + sys_) * 1e6 / pages))
    return [(label, *summarise(runs)) for label, runs in groups.items()]


def fetch_bars(d):
    return from_runs(os.path.join(d, "runs.tsv"), lambda r: "fetch: " + r["client"],
                     ("requests", "self_pages"))


def crawl_bars(d):
    def label(r):
        site = r.get("site", "")
        p = r.get("pass", "1")
        what = "crawl" if p in ("1", "") else "revisit pass"
        return f"{what} {site}: {r['client']}".replace("  ", " ")
    return from_runs(os.path.join(d, "runs.tsv"), label, ("pages_ok", "requests"))


def scale_bars(d, warm_s=60.0):
    rows = [r for r in read_tsv(os.path.join(d, "samples.tsv"))
            if num(r, "visits") is not None and num(r, "cpu_s") is not None]
    if len(rows) < 3:
        return []
    t = [num(r, "t_s") for r in rows]
    v = [num(r, "visits") for r in rows]
    c = [num(r, "cpu_s") for r in rows]
    if t[-1] < 5 * warm_s:  # a short run: a fifth of it is the warm-up
        warm_s = t[-1] / 5
    s = next((i for i, x in enumerate(t) if x >= warm_s), 0)
    if v[-1] <= v[s] or t[-1] <= t[s]:
        return []
    pps = (v[-1] - v[s]) / (t[-1] - t[s])
    cpu = (c[-1] - c[s]) * 1e6 / (v[-1] - v[s])
    win_p, win_c = [], []
    for i in range(s, len(t)):
        j = next((j for j in range(i + 1, len(t)) if t[j] - t[i] >= 30), None)
        if j is not None and v[j] > v[i]:
            win_p.append((v[j] - v[i]) / (t[j] - t[i]))
            win_c.append((c[j] - c[i]) * 1e6 / (v[j] - v[i]))
    win_p = win_p or [pps]
    win_c = win_c or [cpu]
    hosts = ""
    rep = os.path.join(d, "report.md")
    if os.path.exists(rep):
        with open(rep) as f:
            first = f.readline()
        if "hosts" in first:
            hosts = " " + first.split(":", 1)[1].split(",")[0].strip()
    return [(f"scale{hosts}: kria", (pps, min(win_p), max(win_p)),
             (cpu, min(win_c), max(win_c)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    out = os.path.join(ROOT, "bench", "out")
    ap.add_argument("--fetch", default=os.path.join(out, "fetch", "last"))
    ap.add_argument("--crawl", default=os.path.join(out, "crawl", "last"))
    ap.add_argument("--scale", default=os.path.join(out, "scale", "last"))
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "bench", "chart.png"))
    a = ap.parse_args()

    bars = []
    for name, d, fn in (("fetch", a.fetch, fetch_bars), ("crawl", a.crawl, crawl_bars),
                        ("scale", a.scale, scale_bars)):
        try:
            got = fn(d)
        except FileNotFoundError:
            got = []
        except (KeyError, ValueError) as e:
            print(f"chart: {name}: cannot read {d}: {e}", file=sys.stderr)
            got = []
        if got:
            print(f"chart: {name}: {len(got)} bars from {d}", file=sys.stderr)
        else:
            print(f"chart: {name}: no results in {d}, skipped", file=sys.stderr)
        bars += got
    if not bars:
        sys.exit("chart: no result files found; run a benchmark first")

    labels = [b[0] for b in bars]
    ys = range(len(bars))
    colours = ["#1f77b4" if ": kria" in l else "#999999" for l in labels]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 0.42 * len(bars) + 1.8), sharey=True)
    for ax, k, title in ((ax1, 1, "pages/s (log scale, higher is better)"),
                         (ax2, 2, "client CPU-µs per page (lower is better)")):
        med = [b[k][0] for b in bars]
        err = [[b[k][0] - b[k][1] for b in bars], [b[k][2] - b[k][0] for b in bars]]
        ax.barh(list(ys), med, xerr=err, color=colours, capsize=2, ecolor="#444444")
        for y, m in zip(ys, med):
            ax.text(m, y, f" {m:,.0f}", va="center", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    ax1.set_xscale("log")
    ax1.set_yticks(list(ys))
    ax1.set_yticklabels(labels, fontsize=8)
    ax1.invert_yaxis()
    fig.suptitle("kria and the alternatives: medians, whiskers min–max (bench/RESULTS.md has the setup)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(a.output, dpi=100)
    print(f"chart: wrote {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
