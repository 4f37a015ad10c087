/*
 * sitegen — deterministic static web site generator for kria's benchmarks.
 *
 * Writes H hosts x P pages of realistic HTML (about B bytes each, +-10 %)
 * under OUT/<host>/, where host i is named "h<i>.test". Every page has a
 * head with title, meta and a stylesheet, a nav bar, paragraphs of text with
 * inline same-host links, image embeds, a "related" list, and (with more than
 * one host) a few cross-host links: about 30 same-host links per page. Pages
 * link to their neighbours and to a binary tree of children (page i links to
 * 2i+1 and 2i+2), so a recursive crawl from "/" reaches every page within a
 * shallow depth. Each host also gets index.html, robots.txt, sitemap.xml,
 * /static/site.css and 16 tiny GIFs under /img/.
 *
 * Output is a pure function of the options: a fixed-seed splitmix64 stream
 * per (seed, host, page) drives every choice, so two runs give identical
 * bytes. OUT/paths.txt lists "<host>\t<path>" for every page (not the
 * assets), in order, which scripts turn into URL lists. OUT/.stamp records
 * the options; when it matches, the site is not written again.
 *
 * Absolute URLs (sitemap entries, cross-host links, robots Sitemap line) are
 * made from -u FMT, where "{host}" stands for the host name; default
 * "http://{host}".
 *
 * Usage: sitegen -o OUT [-H hosts] [-p pages] [-b bytes] [-s seed] [-u FMT]
 *
 * This is a benchmark tool, not part of kria: it trusts its options only as
 * far as checking their ranges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SITEGEN_VERSION 1
#define MAX_PAGE (1u << 20)

static const char *const words[] = {
	"archive", "river", "harbour", "signal", "winter", "garden", "market", "station",
	"library", "journal", "season", "island", "valley", "window", "letter", "meadow",
	"engine", "lantern", "compass", "voyage", "timber", "granite", "orchard", "feather",
	"canvas", "thunder", "ribbon", "silver", "copper", "marble", "crystal", "shadow",
	"morning", "evening", "harvest", "meeting", "council", "village", "bridge", "tower",
	"the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "with", "as", "by",
	"at", "from", "that", "this", "which", "were", "are", "be", "has", "had", "not",
	"new", "old", "first", "last", "long", "great", "little", "own", "other", "right",
	"public", "local", "early", "late", "small", "large", "young", "high", "open", "free",
	"report", "record", "notice", "history", "survey", "project", "review", "update",
	"returns", "changes", "follows", "remains", "describes", "publishes", "collects",
	"keeps", "visits", "reads", "writes", "measures", "notes", "finds", "holds", "shows",
	"tern", "coast", "north", "south", "east", "west", "summer", "autumn", "spring",
	"committee", "document", "collection", "catalogue", "register", "gazette", "bulletin",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const char *const sections[] = {
	"news", "about", "archive", "events", "contact", "topics", "people", "places",
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* 1x1 transparent GIF. */
static const unsigned char gif[] = {
	0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00,
	0x00, 0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00,
	0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
};

static const char css[] =
	"body{font-family:Georgia,serif;max-width:48em;margin:0 auto;padding:1em;color:#222}\n"
	"nav ul{list-style:none;display:flex;gap:1em;padding:0}\n"
	"article p{line-height:1.5}\naside{border-top:1px solid #ccc;margin-top:2em}\n"
	"footer{font-size:smaller;color:#666}\nimg{float:right;margin:0 0 1em 1em}\n";

struct opts {
	const char *out;
	unsigned hosts, pages, bytes;
	uint64_t seed;
	const char *url_fmt;
};

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned rng_below(struct rng *r, unsigned n)
{
	return n ? (unsigned)(rng_next(r) % n) : 0;
}

struct page {
	char buf[MAX_PAGE];
	size_t len;
};

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sitegen: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void put(struct page *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->buf + p->len, sizeof(p->buf) - p->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(p->buf) - p->len)
		die("page larger than %u bytes", MAX_PAGE);
	p->len += (size_t)n;
}

static void put_words(struct page *p, struct rng *r, unsigned n, int capital)
{
	for (unsigned i = 0; i < n; i++) {
		const char *w = words[rng_below(r, NWORDS)];
		if (i == 0 && capital)
			put(p, "%c%s", w[0] - 'a' + 'A', w + 1);
		else
			put(p, i ? " %s" : "%s", w);
	}
}

/* Absolute URL prefix for host h: url_fmt with {host} replaced. */
static void put_base(struct page *p, const struct opts *o, unsigned h)
{
	const char *f = o->url_fmt, *t;
	while ((t = strstr(f, "{host}")) != NULL) {
		put(p, "%.*s", (int)(t - f), f);
		put(p, "h%u.test", h);
		f = t + 6;
	}
	put(p, "%s", f);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	const char *d = data;
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	while (len) {
		ssize_t n = write(fd, d, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("%s: write: %s", path, strerror(errno));
		d += n;
		len -= (size_t)n;
	}
	if (close(fd) != 0)
		die("%s: close: %s", path, strerror(errno));
}

static void mkdir_p(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

static void page_link(struct page *p, struct rng *r, const struct opts *o, unsigned to)
{
	(void)o;
	put(p, "<a href=\"/p/%u.html\">", to);
	put_words(p, r, 1 + rng_below(r, 3), 0);
	put(p, "</a>");
}

static void gen_page(struct page *p, const struct opts *o, unsigned h, unsigned i)
{
	struct rng r = { o->seed ^ ((uint64_t)h << 32) ^ i ^ 0x6b726961ULL };
	unsigned target = o->bytes - o->bytes / 10 + rng_below(&r, o->bytes / 5 + 1);
	unsigned P = o->pages;

	p->len = 0;
	put(p, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
	put_words(p, &r, 3 + rng_below(&r, 4), 1);
	put(p, " &ndash; h%u.test page %u</title>\n", h, i);
	put(p, "<meta name=\"description\" content=\"");
	put_words(p, &r, 12, 1);
	put(p, "\">\n<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
	       "<link rel=\"canonical\" href=\"/p/%u.html\">\n</head>\n<body>\n", i);

	put(p, "<header><a class=\"logo\" href=\"/\"><img src=\"/img/0.gif\" alt=\"h%u.test\" "
	       "width=\"1\" height=\"1\"></a>\n<nav><ul>\n<li><a href=\"/\">Home</a></li>\n", h);
	for (unsigned s = 0; s < 5; s++)
		put(p, "<li><a href=\"/p/%u.html\">%s</a></li>\n", (s * 997u + 1) % P, sections[(s + h) % NSECTIONS]);
	put(p, "</ul></nav></header>\n<main>\n<article>\n<h1>");
	put_words(p, &r, 4 + rng_below(&r, 5), 1);
	put(p, "</h1>\n<p class=\"meta\">Published in <a href=\"/p/%u.html\">%s</a>, item %u of %u.</p>\n",
	    (i / 100) * 100 % P, sections[i % NSECTIONS], i, P);

	/* Structural links: neighbours and tree children (reachability). */
	put(p, "<p class=\"pager\">");
	if (i > 0)
		put(p, "<a rel=\"prev\" href=\"/p/%u.html\">previous</a> ", i - 1);
	if (i + 1 < P)
		put(p, "<a rel=\"next\" href=\"/p/%u.html\">next</a> ", i + 1);
	if (2ull * i + 1 < P)
		put(p, "<a href=\"/p/%u.html\">more</a> ", 2 * i + 1);
	if (2ull * i + 2 < P)
		put(p, "<a href=\"/p/%u.html\">more</a>", 2 * i + 2);
	put(p, "</p>\n");

	/* Body text with inline links and embeds until ~target minus the tail. */
	unsigned inline_links = 0, tail = 860;
	while (p->len + tail < target) {
		unsigned nw = 40 + rng_below(&r, 60);
		if (rng_below(&r, 5) == 0) {
			put(p, "<h2>");
			put_words(p, &r, 3 + rng_below(&r, 3), 1);
			put(p, "</h2>\n");
		}
		if (rng_below(&r, 4) == 0)
			put(p, "<img src=\"/img/%u.gif\" alt=\"figure\" width=\"1\" height=\"1\">\n", rng_below(&r, 16));
		put(p, "<p>");
		for (unsigned w = 0; w < nw; w += 8) {
			put_words(p, &r, 8, w == 0);
			if (inline_links < 14 && rng_below(&r, 4) == 0) {
				put(p, " ");
				page_link(p, &r, o, rng_below(&r, P));
				inline_links++;
			}
			put(p, w + 8 < nw ? " " : ".");
		}
		put(p, "</p>\n");
	}

	put(p, "</article>\n<aside>\n<h2>Related</h2>\n<ul>\n");
	for (unsigned k = 0; k < 8; k++) {
		put(p, "<li>");
		page_link(p, &r, o, rng_below(&r, P));
		put(p, "</li>\n");
	}
	put(p, "</ul>\n");
	if (o->hosts > 1) {
		put(p, "<h2>Elsewhere</h2>\n<ul>\n");
		for (unsigned k = 0; k < 3; k++) {
			unsigned oh = rng_below(&r, o->hosts);
			put(p, "<li><a href=\"");
			put_base(p, o, oh);
			put(p, "/p/%u.html\">h%u.test</a></li>\n", rng_below(&r, P), oh);
		}
		put(p, "</ul>\n");
	}
	put(p, "</aside>\n</main>\n<footer><p>&copy; h%u.test. <a href=\"/sitemap.xml\">Sitemap</a> "
	       "&middot; <a href=\"/p/0.html\">First page</a></p></footer>\n</body>\n</html>\n", h);
}

static void gen_host(struct page *p, const struct opts *o, unsigned h, FILE *paths)
{
	char dir[4096], path[4200];

	if ((size_t)snprintf(dir, sizeof(dir), "%s/h%u.test", o->out, h) >= sizeof(dir))
		die("output path too long");
	mkdir_p(dir);
	snprintf(path, sizeof(path), "%s/p", dir);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/img", dir);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/static", dir);
	mkdir_p(path);

	for (unsigned k = 0; k < 16; k++) {
		snprintf(path, sizeof(path), "%s/img/%u.gif", dir, k);
		write_file(path, gif, sizeof(gif));
	}
	snprintf(path, sizeof(path), "%s/static/site.css", dir);
	write_file(path, css, sizeof(css) - 1);

	p->len = 0;
	put(p, "User-agent: *\nDisallow: /private/\n\nSitemap: ");
	put_base(p, o, h);
	put(p, "/sitemap.xml\n");
	snprintf(path, sizeof(path), "%s/robots.txt", dir);
	write_file(path, p->buf, p->len);

	p->len = 0;
	put(p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>h%u.test</title>"
	       "<link rel=\"stylesheet\" href=\"/static/site.css\"></head>\n<body><h1>h%u.test</h1>\n<ul>\n", h, h);
	for (unsigned i = 0; i < o->pages && i < 100; i++)
		put(p, "<li><a href=\"/p/%u.html\">page %u</a></li>\n", i, i);
	put(p, "</ul>\n<p><a href=\"/sitemap.xml\">Sitemap</a></p></body></html>\n");
	snprintf(path, sizeof(path), "%s/index.html", dir);
	write_file(path, p->buf, p->len);

	/* The sitemap can exceed MAX_PAGE for big hosts: stream it. */
	snprintf(path, sizeof(path), "%s/sitemap.xml", dir);
	FILE *sm = fopen(path, "w");
	if (!sm)
		die("%s: %s", path, strerror(errno));
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	      "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n", sm);
	for (unsigned i = 0; i < o->pages; i++) {
		p->len = 0;
		put(p, "<url><loc>");
		put_base(p, o, h);
		put(p, "/p/%u.html</loc></url>\n", i);
		fwrite(p->buf, 1, p->len, sm);
	}
	fputs("</urlset>\n", sm);
	if (fclose(sm) != 0)
		die("%s: %s", path, strerror(errno));

	for (unsigned i = 0; i < o->pages; i++) {
		gen_page(p, o, h, i);
		snprintf(path, sizeof(path), "%s/p/%u.html", dir, i);
		write_file(path, p->buf, p->len);
		fprintf(paths, "h%u.test\t/p/%u.html\n", h, i);
	}
}

static unsigned long parse_num(const char *s, unsigned long lo, unsigned long hi, const char *what)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi)
		die("%s: expected a number in [%lu, %lu], got '%s'", what, lo, hi, s);
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = { NULL, 1, 20000, 10240, 20240601, "http://{host}" };
	char stamp[8192], path[4200];
	int c;

	while ((c = getopt(argc, argv, "o:H:p:b:s:u:")) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case 'H': o.hosts = (unsigned)parse_num(optarg, 1, 1000000, "-H"); break;
		case 'p': o.pages = (unsigned)parse_num(optarg, 1, 10000000, "-p"); break;
		case 'b': o.bytes = (unsigned)parse_num(optarg, 2048, MAX_PAGE / 2, "-b"); break;
		case 's': o.seed = parse_num(optarg, 0, ~0ul, "-s"); break;
		case 'u': o.url_fmt = optarg; break;
		default:
			fprintf(stderr, "usage: sitegen -o OUT [-H hosts] [-p pages] [-b bytes] [-s seed] [-u FMT]\n");
			return 2;
		}
	}
	if (!o.out || optind != argc)
		die("usage: sitegen -o OUT [-H hosts] [-p pages] [-b bytes] [-s seed] [-u FMT]");
	if (strlen(o.out) > 3000 || strlen(o.url_fmt) > 1000)
		die("argument too long");

	snprintf(stamp, sizeof(stamp), "sitegen %d hosts=%u pages=%u bytes=%u seed=%" PRIu64 " url=%s\n",
		 SITEGEN_VERSION, o.hosts, o.pages, o.bytes, o.seed, o.url_fmt);
	snprintf(path, sizeof(path), "%s/.stamp", o.out);
	FILE *f = fopen(path, "r");
	if (f) {
		char old[8192];
		size_t n = fread(old, 1, sizeof(old) - 1, f);
		old[n] = '\0';
		fclose(f);
		if (strcmp(old, stamp) == 0)
			return 0; /* up to date */
		unlink(path);
	}
	mkdir_p(o.out);

	static struct page page;
	snprintf(path, sizeof(path), "%s/paths.txt", o.out);
	FILE *paths = fopen(path, "w");
	if (!paths)
		die("%s: %s", path, strerror(errno));
	for (unsigned h = 0; h < o.hosts; h++)
		gen_host(&page, &o, h, paths);
	if (fclose(paths) != 0)
		die("%s: %s", path, strerror(errno));

	snprintf(path, sizeof(path), "%s/.stamp", o.out);
	write_file(path, stamp, strlen(stamp));
	return 0;
}
