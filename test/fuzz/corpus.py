#!/usr/bin/env python3
"""Generate the seed corpora of the fuzz harnesses under test/fuzz/corpus/.

    test/fuzz/corpus.py [--clean] [--conformance DIR] [TARGET...]

Seeds come from the conformance data (test/data: WHATWG URL
tests, python-surt cases, Google's robots.txt tests), the unit test
fixtures, config/kria.conf, and hand-written HTTP responses and
compressed streams. Each file starts with the mode byte(s) its harness
reads (see the comment at the top of test/fuzz/fuzz_<target>.c); modes
cycle so every option set gets seeds. Output is deterministic, so
rerunning the script changes nothing unless the sources changed. The
extract, warc and hoststate corpora are written by hand (hoststate: records
the encoder wrote, two with a pool and signals, and three with a pool or
signals section their module refuses) and left alone. The
committed corpora also hold inputs merged in from fuzz runs
(`test/fuzz/run.sh --merge TARGET`, keeping the total under ~1 MB): they
stay when this script runs again, unless --clean.
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import zlib

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_corpus(target, items, clean):
    """items: list of (name or None, bytes). Files already there (inputs
    merged in from fuzz runs) stay unless clean."""
    d = os.path.join(TOP, "test", "fuzz", "corpus", target)
    if clean:
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, exist_ok=True)
    seen = set()
    for name, data in items:
        h = hashlib.sha1(data).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        fn = name if name else h[:16]
        with open(os.path.join(d, fn), "wb") as f:
            f.write(data)
    total = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print(f"{target}: {len(seen)} seeds written, {len(os.listdir(d))} files, {total} bytes")


def url_items(conf):
    out = []
    with open(os.path.join(conf, "url", "urltestdata.json"), encoding="utf-8") as f:
        tests = [t for t in json.load(f) if isinstance(t, dict)]
    for i, t in enumerate(tests):
        # bits 0-1 base, 2-5 canon flags, 6-7 rules: cycle through them
        mode = (i * 37) & 0xFF
        out.append((None, bytes([mode]) + t["input"].encode("utf-8", "surrogatepass")))
    with open(os.path.join(conf, "url", "toascii.json"), encoding="utf-8") as f:
        for i, t in enumerate(x for x in json.load(f) if isinstance(x, dict)):
            host = t["input"].encode("utf-8", "surrogatepass")
            out.append((None, bytes([(i * 53) & 0xFF]) + b"https://" + host + b"/p?q#f"))
    with open(os.path.join(conf, "surt", "cases.tsv"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if line.startswith("#") or line.startswith("id\t"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 4 or cols[3] == "<NULL>":
                continue
            s = (cols[3].replace("\\t", "\t").replace("\\r", "\r").replace("\\n", "\n")
                 .replace("\\\\", "\\"))
            out.append((None, bytes([(i * 29) & 0xFF]) + s.encode("utf-8")))
    return out


ROBOTS_TOKENS = ["FooBot", "kria", "Googlebot", "*", "", "foo_bar-baz", "BarBot", "Foo Bar"]


def robots_items(conf):
    out = []
    with open(os.path.join(conf, "robots", "cases.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            c = json.loads(line)
            text = c.get("robotstxt")
            if text is None:
                continue
            ua = c.get("user_agent")
            tok = ROBOTS_TOKENS.index(ua) if ua in ROBOTS_TOKENS else 0
            # window and rule caps cycle in the upper bits (mostly defaults)
            mode = tok | ((i % 8 == 7) << 3) | ((i % 16 == 15) << 5)
            data = text.encode("utf-8", "surrogatepass")
            if c.get("url") is not None:
                data += b"\n#paths\n" + c["url"].encode("utf-8", "surrogatepass")
            out.append((None, bytes([mode]) + data))
    return out


def gz(b, members=1):
    if members == 1:
        return gzip.compress(b, mtime=0)
    half = len(b) // 2
    return gzip.compress(b[:half], mtime=0) + gzip.compress(b[half:], mtime=0)


def raw_deflate(b):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(b) + c.flush()


PAGE = (b"<!doctype html><title>kria</title><p>" + b"adaptive revisiting " * 20 +
        b"<a href=/next>next</a>\n")


def http_items():
    def resp(head, body=b""):
        return head.replace(b"\n", b"\r\n") + b"\r\n" + body

    def cl(body, extra=b""):
        return resp(b"HTTP/1.1 200 OK\nContent-Type: text/html\n" + extra +
                    b"Content-Length: %d\n" % len(body), body)

    def chunked(body, size=7, ext=b"", trailer=b""):
        parts = b"".join(b"%x%s\r\n%s\r\n" % (len(body[i:i + size]), ext, body[i:i + size])
                         for i in range(0, len(body), size))
        return resp(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", parts + b"0\r\n" + trailer + b"\r\n")

    small = b"hello, world\n"
    items = [
        ("cl", cl(small)),
        ("cl-empty", cl(b"")),
        ("chunked", chunked(small)),
        ("chunked-ext-trailer", chunked(small, 3, b";a=b", b"X-T: 1\r\n")),
        ("close-delimited", resp(b"HTTP/1.1 200 OK\n", b"until the end")),
        ("http10", resp(b"HTTP/1.0 200 OK\nContent-Length: 5\n", b"hello")),
        ("gzip", cl(gz(PAGE), b"Content-Encoding: gzip\n")),
        ("gzip-2members", cl(gz(PAGE, 2), b"Content-Encoding: x-gzip\n")),
        ("gzip-chunked", resp(b"HTTP/1.1 200 OK\nContent-Encoding: gzip\nTransfer-Encoding: chunked\n",
                              b"%x\r\n" % len(gz(small)) + gz(small) + b"\r\n0\r\n\r\n")),
        ("deflate-zlib", cl(zlib.compress(PAGE), b"Content-Encoding: deflate\n")),
        ("deflate-raw", cl(raw_deflate(PAGE), b"Content-Encoding: Deflate\n")),
        ("gzip-bomb", cl(gz(b"\0" * 60000), b"Content-Encoding: gzip\n")),
        ("gzip-trailing", cl(gz(small) + b"garbage", b"Content-Encoding: gzip\n")),
        ("gzip-bad", cl(b"not gzip!", b"Content-Encoding: gzip\n")),
        ("br", cl(b"\x01\x02\x03\x04", b"Content-Encoding: br\n")),
        ("stacked-coding", cl(gz(gz(small)), b"Content-Encoding: gzip, gzip\n")),
        ("304", resp(b"HTTP/1.1 304 Not Modified\nETag: \"v1\"\nContent-Length: 5000\n")),
        ("204", resp(b"HTTP/1.1 204 No Content\n")),
        ("301", resp(b"HTTP/1.1 301 Moved Permanently\nLocation: /new\nContent-Length: 3\n", b"bye")),
        ("interim", resp(b"HTTP/1.1 100 Continue\n") +
         resp(b"HTTP/1.1 103 Early Hints\nLink: </a>; rel=preload\n") + cl(small)),
        ("101", resp(b"HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: upgrade\n")),
        ("validators", cl(small, b"ETag: W/\"abc\"\nLast-Modified: Tue, 15 Nov 1994 12:45:26 GMT\n")),
        ("folded", resp(b"HTTP/1.1 200 OK\nX-Folded: a\n  b\nContent-Length: 2\n", b"ok")),
        ("many-headers", resp(b"HTTP/1.1 200 OK\n" + b"".join(b"X-H%d: %d\n" % (i, i) for i in range(60)) +
                              b"Content-Length: 2\n", b"ok")),
        ("two-cl", resp(b"HTTP/1.1 200 OK\nContent-Length: 5\nContent-Length: 6\n", b"hello")),
        ("cl-and-chunked", resp(b"HTTP/1.1 200 OK\nContent-Length: 5\nTransfer-Encoding: chunked\n",
                                b"5\r\nhello\r\n0\r\n\r\n")),
        ("bad-chunk", resp(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", b"zz\r\nhello\r\n")),
        ("short-body", resp(b"HTTP/1.1 200 OK\nContent-Length: 100\n", b"only some")),
        ("extra-after", cl(small) + b"HTTP/1.1 200 OK\r\n\r\n"),
        ("bad-status", resp(b"HTTP/1.1 abc OK\n")),
        ("no-reason", resp(b"HTTP/1.1 200\nContent-Length: 0\n")),
        ("bare-lf", b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"),
        ("nul-in-header", resp(b"HTTP/1.1 200 OK\nX-A: a\0b\nContent-Length: 0\n")),
        ("utf8-header", resp("HTTP/1.1 200 OK\nX-A: ärger\nContent-Length: 0\n".encode())),
        ("keepalive-close", cl(small, b"Connection: close\n")),
        ("truncated-head", b"HTTP/1.1 200 OK\r\nContent-Le"),
        ("empty", b""),
    ]
    out = []
    # mode: bits 0-1 option set, 2 HEAD, 3/4 aborts, 5 RST, 6-7 pieces
    for i, (name, data) in enumerate(items):
        out.append((name, bytes([(i % 4) | ((i % 3) << 6)]) + data))
    for i, (name, data) in enumerate(items[:12]):
        mode = [0x04, 0x08, 0x10, 0x18, 0x20, 0xC1][i % 6] | (i % 4)
        out.append((name + "-m%02x" % mode, bytes([mode]) + data))
    return out


def inflate_items():
    texts = [b"", b"a", b"hello, world\n", PAGE, b"\0" * 5000, bytes(range(256)) * 4]
    out = []
    for i, t in enumerate(texts):
        # byte 0: coding (1 gzip, 2 deflate, 3 compress mode) + limits; byte 1: pieces, chunk, format
        out.append((None, bytes([1 | ((i % 4) << 2), i % 8]) + gz(t)))
        out.append((None, bytes([1 | 0x10, (i + 3) % 8 | 0x08]) + gz(t, 2)))
        out.append((None, bytes([2 | ((i % 4) << 4), (i + 1) % 8 | 0x10]) + zlib.compress(t)))
        out.append((None, bytes([2 | 0x40 | 0x30, (i + 5) % 8 | 0x18]) + raw_deflate(t)))
        out.append((None, bytes([0 | ((i % 4) << 2), i % 8]) + t[:300]))
        out.append((None, bytes([3 | ((i % 4) << 2) | (0x80 if i % 2 else 0), (i % 8) | ((i % 3) << 5)]) + t[:500]))
    out.append(("gzip-then-garbage", bytes([1, 4]) + gz(b"x" * 100) + b"trailing"))
    out.append(("gzip-cut", bytes([1, 2]) + gz(PAGE)[:40]))
    out.append(("bomb", bytes([1 | 0x10 | 0x40, 6]) + gz(b"\0" * 200000)))
    return out


def config_items():
    out = []
    paths = [os.path.join(TOP, "config", "kria.conf")]
    fx = os.path.join(TOP, "test", "unit", "fixtures", "config")
    paths += [os.path.join(fx, f) for f in sorted(os.listdir(fx))]
    for p in paths:
        with open(p, "rb") as f:
            out.append((os.path.basename(p).replace(".", "-"), f.read()))
    snippets = {
        "overrides": b"[http]\ntimeout-connect = 5s\n#-o\nhttp.timeout-connect=7s\npoliteness.min-delay=1s\n",
        "waits": (b"[wait \"html\"]\ncontent-type = ^text/html\ninitial-wait = 1h\nmin-wait = 10m\n"
                  b"max-wait = 7d\npolicy = poisson\n[wait \"rest\"]\nmax-wait = 28d\n"),
        "hosts": (b"[host \"example.org\"]\npoliteness.min-delay = 10s\npoliteness.max-delay = 20s\n"
                  b"wait.html.max-wait = 1d\n[host \"127.0.0.1\"]\nrobots.obey = false\n"
                  b"[wait \"html\"]\ncontent-type = html\n"),
        "minmax": b"[politeness]\nmin-delay = 10s\nmax-delay = 1s\n",
        "status": b"[status]\nlisten = 0.0.0.0:8080\n",
        "regex": b"[canon]\nstrip = ^(.*)[?&]utm_[a-z]+=[^&]*(.*)$\nstrip = (((((a*)*)*)*)*)b\n",
        "bom-crlf": b"\xef\xbb\xbf[http]\r\ntimeout-idle = 1m30s\r\n",
    }
    out += sorted(snippets.items())
    return out


def seeds_items(conf):
    out = [
        ("basic", b"\x00# seeds\nhttp://example.org/\nhttps://www.example.org/a?b=1#f\n"
                  b"example.org\nexample.org:8080/x  # comment\n\nmailto:a@b.org\n"),
        ("dups", b"\x00http://a.org/\nHTTP://A.ORG:80/\nhttp://a.org/./\nhttp://a.org/#x\n"),
        ("bom-crlf", b"\x02\xef\xbb\xbfhttp://x.org/\r\n\t https://y.org/ \r\n# c\r\n"),
        ("binary", b"\x01http://x.org/\x00\nhttp://y.org/\xff\n" + b"a" * 100 + b".org\n"),
        ("cap", b"\x01a.org\nb.org\nc.org\nd.org\ne.org\n"),
        ("sessions", b"\x44http://x.org/;jsessionid=0123456789abcdef0123456789ABCDEF?a=1\n"
                     b"http://www.x.org/?b&a&&\nhttp://u:p@x.org/\n"),
    ]
    with open(os.path.join(conf, "url", "urltestdata.json"), encoding="utf-8") as f:
        inputs = [t["input"] for t in json.load(f) if isinstance(t, dict) and "\n" not in t["input"]]
    for i in range(0, len(inputs), 40):
        body = "\n".join(inputs[i:i + 40]).encode("utf-8", "surrogatepass")
        out.append((None, bytes([(i // 40 * 4) & 0x7C]) + body))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conformance", default=os.path.join(TOP, "test", "data"))
    ap.add_argument("--clean", action="store_true",
                    help="remove what is in the directories first (merged fuzz finds too)")
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    gens = {
        "url": lambda: url_items(a.conformance),
        "robots": lambda: robots_items(a.conformance),
        "http": http_items,
        "inflate": inflate_items,
        "config": config_items,
        "seeds": lambda: seeds_items(a.conformance),
    }
    for t in a.targets or sorted(gens):
        if t not in gens:
            sys.exit(f"fuzz-corpus: no generator for {t}")
        write_corpus(t, gens[t](), a.clean)


if __name__ == "__main__":
    main()
