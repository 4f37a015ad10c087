#!/usr/bin/env python3
"""bench/adaptive/realcrawl.py -- the measures of bench/adaptive/realcrawl.sh.

    realcrawl.py score RUN             RUN/result.json from one crawl's files
    realcrawl.py interval RUN...       the fixed interval (ms) that spends
                                       the runs' mean fetch count
    realcrawl.py report RUN...         the markdown tables (stdout)

A RUN directory holds what `kria demo --pages N --truth RUN/truth.tsv
--state-dir RUN/state` left, plus RUN/meta (key=value lines: policy, kria,
label, seconds, interval_ms). Versions are the site's ground truth
(truth.tsv: every version each page had, when it appeared, the SHA-1 of
its body); a version counts as captured when the crawl's WARC files hold a
200 response of that URL whose payload -- hashed here, not taken from the
crawler's headers -- has that version's digest. Fetches are crawl.log's
lines with an HTTP status for the site's pages (robots.txt left out).
"""
import base64
import glob
import gzip
import hashlib
import json
import math
import os
import sys
from datetime import datetime


def read_meta(run):
    meta = {}
    with open(os.path.join(run, "meta")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def read_truth(run):
    """pages: url -> dict(cls, mean_ms, versions: {sha1: v}, last, born, served)."""
    pages, header = {}, ""
    with open(os.path.join(run, "truth.tsv")) as f:
        for line in f:
            if line.startswith("#"):
                header = header or line[1:].strip()
                continue
            url, cls, _page, mean, v, born, sha, served, n304 = line.rstrip("\n").split("\t")
            p = pages.setdefault(url, {"cls": cls, "mean_ms": int(mean), "versions": {},
                                       "last": 0, "served": set(), "n304": 0})
            v = int(v)
            if sha != "-":
                p["versions"][sha] = v
            p["last"] = max(p["last"], v)
            if int(served) and v:
                p["served"].add(v)
            p["n304"] += int(n304)
    return pages, header


def warc_records(path):
    """(headers dict, block bytes) of every record of a .warc or .warc.gz."""
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        while True:
            line = f.readline()
            if not line:
                return
            if not line.strip():
                continue
            if not line.startswith(b"WARC/"):
                raise ValueError("%s: not a WARC record: %r" % (path, line[:40]))
            h = {}
            while True:
                line = f.readline()
                if not line or line in (b"\r\n", b"\n"):
                    break
                k, _, v = line.decode("utf-8", "replace").partition(":")
                h[k.strip().lower()] = v.strip()
            block = f.read(int(h.get("content-length", "0")))
            yield h, block


def sha1_label(data):
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def archived_versions(run, pages):
    """{url: set(versions)} whose body a 200 response record holds."""
    got = {}
    files = sorted(glob.glob(os.path.join(run, "state", "warcs", "*.warc.gz")) +
                   glob.glob(os.path.join(run, "state", "warcs", "*.warc")))
    for path in files:
        for h, block in warc_records(path):
            if h.get("warc-type") != "response":
                continue
            url = h.get("warc-target-uri", "")
            if url not in pages:
                continue
            head, sep, payload = block.partition(b"\r\n\r\n")
            if not sep or not head.startswith(b"HTTP/") or head.split(b" ", 2)[1] != b"200":
                continue
            v = pages[url]["versions"].get(sha1_label(payload))
            if v is not None:
                got.setdefault(url, set()).add(v)
    return got, len(files)


def ts_ms(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000.0


def crawl_fetches(run, pages):
    """Per URL: fetch timestamps (ms, crawl.log's own time) of lines with a status."""
    by = {}
    errors = 0
    with open(os.path.join(run, "state", "logs", "crawl.log")) as f:
        for line in f:
            p = line.split()
            if len(p) < 4 or p[3] not in pages:
                continue
            if int(p[1]) <= 0:
                errors += 1
                continue
            by.setdefault(p[3], []).append(ts_ms(p[0]))
    return by, errors


def host_of(url):
    return url.split("/")[2]


def model(lams, fetches, secs, fmax):
    """Expected versions captured under Poisson changes when `fetches`
    evenly spaced fetches over `secs` go to pages of rates `lams` (1/s):
    every page alike (fixed), and as the best allocation for this measure
    would (water filling on the marginal gain, each page at most fmax/s)."""
    n = len(lams)
    if not n or fetches <= 0:
        return 0.0, 0.0

    def gain(l, f):
        return secs * f * (1 - math.exp(-l / f)) if f > 0 and l > 0 else 0.0

    f0 = fetches / secs / n
    fixed = sum(gain(l, f0) for l in lams)

    def f_at(mu, l):  # the rate whose marginal gain is mu (marginal falls with f)
        if l <= 0:
            return 0.0
        m = lambda f: 1 - math.exp(-l / f) * (1 + l / f)
        if m(fmax) >= mu:
            return fmax
        lo, hi = 1e-9, fmax
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if m(mid) > mu else (lo, mid)
        return lo

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mu = (lo + hi) / 2
        if sum(f_at(mu, l) for l in lams) * secs > fetches:
            lo = mu
        else:
            hi = mu
    best = sum(gain(l, f_at(hi, l)) for l in lams)
    return fixed, best


def score(run):
    meta = read_meta(run)
    pages, header = read_truth(run)
    got, nwarc = archived_versions(run, pages)
    fetches, errors = crawl_fetches(run, pages)
    secs = float(meta.get("seconds", "240"))
    r = {"meta": meta, "truth": header, "warc_files": nwarc, "errors": errors,
         "fetches": 0, "appeared": 0, "captured": 0, "never_fetches": 0,
         "served_not_archived": 0, "n304": 0, "classes": {}, "hosts": {}}
    start = min((t for ts in fetches.values() for t in ts), default=0.0)
    for url, p in pages.items():
        c = r["classes"].setdefault(p["cls"], {"pages": 0, "fetches": 0, "appeared": 0,
                                               "captured": 0, "mean_ms": p["mean_ms"]})
        h = r["hosts"].setdefault(host_of(url), {"pages": 0, "fetches": 0, "lams": [],
                                                  "first_s": 0.0})
        n = len(fetches.get(url, []))
        cap = len([v for v in got.get(url, ()) if v > 0])
        c["pages"] += 1
        c["fetches"] += n
        c["appeared"] += p["last"]
        c["captured"] += cap
        h["pages"] += 1
        h["fetches"] += n
        h["lams"].append(1000.0 / p["mean_ms"] if p["mean_ms"] else 0.0)
        if n:  # seconds this page was known to the crawl
            h["first_s"] += max(0.0, secs - (min(fetches[url]) - start) / 1000.0)
        r["fetches"] += n
        r["appeared"] += p["last"]
        r["captured"] += cap
        r["never_fetches"] += n if not p["mean_ms"] else 0
        r["served_not_archived"] += len(p["served"] - got.get(url, set()))
        r["n304"] += p["n304"]
    fmax = 1000.0 / float(meta.get("min_wait_ms", "1000"))
    mf = mb = 0.0
    for h in r["hosts"].values():
        f, b = model(h.pop("lams"), h["fetches"], secs, fmax)
        mf, mb = mf + f, mb + b
    r["model_fixed"], r["model_best"] = mf, mb
    with open(os.path.join(run, "result.json"), "w") as f:
        json.dump(r, f, indent=1)
    return r


def interval(runs):
    """The fixed interval that spends the runs' mean fetch count. A page
    found at t is fetched then and every T until the end S: 1 +
    floor((S - t) / T) times, on average 1/2 + (S - t) / T, so
    F = pages / 2 + sum(S - t) / T, with the times pages were known
    taken from the runs."""
    rs = [json.load(open(os.path.join(run, "result.json"))) for run in runs]
    f = sum(r["fetches"] for r in rs) / len(rs)
    pages = sum(h["pages"] for h in rs[0]["hosts"].values())
    known = sum(sum(h["first_s"] for h in r["hosts"].values()) for r in rs) / len(rs)
    if f <= pages:
        return 1000
    return max(1000, int(known * 1000.0 / (f - pages / 2.0)))


def fmt_ratio(a, b):
    return "%.2f×" % (a / b) if b else "-"


def report(runs):
    rs = [json.load(open(os.path.join(run, "result.json"))) for run in runs]
    labels = []
    for r in rs:
        if r["meta"]["label"] not in labels:
            labels.append(r["meta"]["label"])
    order = ["fixed", "multiplicative", "poisson"]
    pols = sorted({r["meta"]["policy"] for r in rs}, key=lambda p: (order + [p]).index(p))

    def runs_of(label, pol):
        return [r for r in rs if r["meta"]["label"] == label and r["meta"]["policy"] == pol]

    def mean(xs):
        return sum(xs) / len(xs) if xs else 0.0

    def spread(xs, fmt):
        if len(xs) < 2:
            return fmt % mean(xs)
        return (fmt + " (" + fmt + "–" + fmt + ")") % (mean(xs), min(xs), max(xs))

    def vs_fixed(label, rr):
        """Each run's captures over the label's fixed runs' mean, or per
        fetch when the fetch counts differ by more than 3 %: (ratios,
        per_fetch), or None without a fixed run."""
        fx = runs_of(label, "fixed")
        c, f = mean([r["captured"] for r in fx]), mean([r["fetches"] for r in fx])
        if not fx or not c or not f or not rr:
            return None
        if abs(mean([r["fetches"] for r in rr]) - f) / f > 0.03:
            return [(r["captured"] / r["fetches"]) / (c / f) for r in rr], True
        return [r["captured"] / c for r in rr], False

    def fmt_vs(v):
        return "-" if v is None else spread(v[0], "%.2f×") + (" per fetch" if v[1] else "")

    out = []
    t0 = rs[0]
    out.append("Site: %s; %s." % (t0["truth"], ", ".join(
        "%s %d" % (k, v["pages"]) for k, v in t0["classes"].items())))
    out.append("")
    for label in labels:
        if len(labels) > 1:
            out.append("**%s** (`%s`)" % (label, runs_of(label, pols[0])[0]["meta"]["kria"]))
            out.append("")
        out.append("| policy | runs | fetches | versions | captured | capture ratio | "
                   "versions per fetch | never-changing share | vs fixed, equal fetches |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for pol in pols:
            rr = runs_of(label, pol)
            if not rr:
                continue
            name = pol
            if pol == "fixed":
                name = "fixed (every %.1f s)" % (int(rr[0]["meta"]["interval_ms"]) / 1000.0)
            f = [r["fetches"] for r in rr]
            cap = [r["captured"] for r in rr]
            vs = "-" if pol == "fixed" else fmt_vs(vs_fixed(label, rr))
            out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                name, len(rr), spread(f, "%.0f"), spread([r["appeared"] for r in rr], "%.0f"),
                spread(cap, "%.0f"),
                spread([r["captured"] / r["appeared"] for r in rr], "%.3f"),
                spread([r["captured"] / r["fetches"] for r in rr], "%.3f"),
                spread([100.0 * r["never_fetches"] / r["fetches"] for r in rr], "%.1f %%"), vs))
        out.append("")
    if len(labels) > 1 and "fixed" in pols:
        out.append("A/B, each binary against its own fixed run (as the column above):")
        out.append("")
        out.append("| policy | " + " | ".join(labels) + " |")
        out.append("|---|" + "---:|" * len(labels))
        for pol in pols:
            if pol == "fixed":
                continue
            cells = [fmt_vs(vs_fixed(label, runs_of(label, pol))) for label in labels]
            out.append("| %s | %s |" % (pol, " | ".join(cells)))
        out.append("")
    for label in labels:
        v = vs_fixed(label, runs_of(label, "poisson"))
        if v is None:
            continue
        m = mean(v[0])
        out.append("Target (issue 20): poisson ≥ 1.4× fixed at equal fetches%s: %s (%.0f vs "
                   "%.0f fetches) — %s." % (
                       " (" + label + ")" if len(labels) > 1 else "", fmt_vs(v),
                       mean([r["fetches"] for r in runs_of(label, "poisson")]),
                       mean([r["fetches"] for r in runs_of(label, "fixed")]),
                       "met" if m >= 1.4 else "not met"))
        out.append("")
    out.append("Per class (captured / versions, fetches), first run of each:")
    out.append("")
    classes = list(t0["classes"].keys())
    out.append("| run | " + " | ".join(classes) + " |")
    out.append("|---|" + "---|" * len(classes))
    for label in labels:
        for pol in pols:
            rr = runs_of(label, pol)
            if not rr:
                continue
            cl = rr[0]["classes"]
            cells = ["%d/%d, %d" % (cl[k]["captured"], cl[k]["appeared"], cl[k]["fetches"])
                     for k in classes]
            out.append("| %s%s | %s |" % (label + " " if len(labels) > 1 else "", pol,
                                          " | ".join(cells)))
    out.append("")
    out.append("Diagnostics:")
    out.append("")
    for r in rs:
        m = r["meta"]
        out.append("- %s%s: %d fetches (%s), %d fetch errors, %d 304s; %d versions served in "
                   "full but not archived (mid-fetch aborts); model at these fetches: fixed "
                   "%.0f, best allocation %.0f (%s)" % (
                       m["label"] + " " if len(labels) > 1 else "", m["policy"], r["fetches"],
                       ", ".join("%s %d" % (h, v["fetches"]) for h, v in r["hosts"].items()),
                       r["errors"], r["n304"], r["served_not_archived"], r["model_fixed"],
                       r["model_best"], fmt_ratio(r["model_best"], r["model_fixed"])))
    print("\n".join(out))


def main(argv):
    if len(argv) >= 3 and argv[1] == "score":
        r = score(argv[2])
        print("%s: %d fetches, %d/%d versions captured" % (
            r["meta"]["policy"], r["fetches"], r["captured"], r["appeared"]))
    elif len(argv) >= 3 and argv[1] == "interval":
        print(interval(argv[2:]))
    elif len(argv) >= 3 and argv[1] == "report":
        report(argv[2:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
