#!/usr/bin/env python3
"""A `kria simulate --trace` world with structure: hosts whose pages fall
in classes by path template and content type, each class's change
periods log-normal around its own centre (or never).

    bench/adaptive/classes.py [--hosts H] [--urls-per-host N] [--seed S] > world.txt

Classes (share of a host's URIs, path, type, period centre):
  sections   5 %  /section/<name>/                text/html   1 h
  articles  25 %  /news/YYYY/MM/DD/<slug>          text/html   1 d
  products  20 %  /p/<id>                          text/html   7 d
  profiles  10 %  /u/<hex id>?tab=<t>              text/html   3 d
  archive   20 %  /archive/YYYY/page<n>            text/html   never
  images    20 %  /img/<id>.png                    image/png   never
Periods: centre x exp(N(0, 0.5^2)), at least 60 s. Validators per host:
every third host sends none ("missing"), the others correct ones.
"""
import argparse
import math
import random

CLASSES = [  # name, share, type, centre seconds (0: never)
    ("section", 0.05, "text/html", 3600),
    ("article", 0.25, "text/html", 86400),
    ("product", 0.20, "text/html", 7 * 86400),
    ("profile", 0.10, "text/html", 3 * 86400),
    ("archive", 0.20, "text/html", 0),
    ("image", 0.20, "image/png", 0),
]
WORDS = "storm city vote market team rain school river bank film road park fire star".split()


def path(rng, cls, i):
    if cls == "section":
        return "/section/%s%d/" % (rng.choice(WORDS), i)
    if cls == "article":
        slug = "-".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6)))
        return "/news/%d/%02d/%02d/%s-%d" % (rng.randint(2019, 2024), rng.randint(1, 12),
                                             rng.randint(1, 28), slug, i)
    if cls == "product":
        return "/p/%d" % (100000 + i)
    if cls == "profile":
        return "/u/%012x?tab=%s" % (rng.getrandbits(48), rng.choice(["posts", "about"]))
    if cls == "archive":
        return "/archive/%d/page%d" % (rng.randint(2005, 2018), i)
    return "/img/%s%d%s.png" % (rng.choice(WORDS), i, rng.choice(WORDS))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--urls-per-host", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print("# bench/adaptive/classes.py --hosts %d --urls-per-host %d --seed %d"
          % (a.hosts, a.urls_per_host, a.seed))
    for h in range(a.hosts):
        validators = "missing" if h % 3 == 2 else "correct"
        for i in range(a.urls_per_host):
            x = rng.random()
            for name, share, ctype, centre in CLASSES:
                if x < share:
                    break
                x -= share
            if centre:
                period = max(60, int(centre * math.exp(rng.gauss(0, 0.5))))
                change = "rate=%ds" % period
            else:
                change = "never"
            print("http://c%d.sim.test%s %s %s %s no" % (h, path(rng, name, i), ctype, change,
                                                        validators))


if __name__ == "__main__":
    main()
