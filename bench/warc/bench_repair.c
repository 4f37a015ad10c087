/*
 * bench_repair — what the start-up repair of a ".open" WARC file left by
 * a kill -9 costs: reading the whole file (as before the synced offset
 * was kept in the store, and still with durability none) against reading
 * only what follows the synced offset.
 *
 * Builds one gzip WARC file of about SIZE bytes in WORKDIR with
 * kr_warcfile (response records of sitegen pages, cycling), syncs it,
 * notes the synced offset, appends TAIL more records and half of one more
 * (torn), and leaves it ".open" as a crash would. Then, R times per mode,
 * repairs it (kr_warcfile_repair_from with offset 0 = whole file, or the
 * synced offset) and puts it back (renamed ".open", the torn bytes
 * appended again). Warm: the file in the page cache (a kill -9 of kria);
 * cold: its pages dropped first (posix_fadvise DONTNEED), as after a
 * reboot. Wall time per repair, median (min-max) of R, on stdout as a
 * markdown table.
 *
 * Usage: bench_repair -d SITE_DIR -w WORKDIR [-s SIZE_MIB] [-t TAIL] [-r R]
 * A benchmark tool, not part of kria.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kria/digest.h"
#include "kria/error.h"
#include "kria/warc.h"
#include "warcfile.h"

static void die(const char *m) {
  fprintf(stderr, "bench_repair: %s\n", m);
  exit(1);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0, got;
  char *p = malloc(cap);
  while ((got = fread(p + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) p = realloc(p, cap *= 2);
  }
  fclose(f);
  *n = len;
  return p;
}

#define MAX_PAGES 1000
static char *body[MAX_PAGES];
static size_t body_len[MAX_PAGES];
static char url[MAX_PAGES][4200];
static int npages;

static void load(const char *dir) {
  char path[4096], line[2048];
  snprintf(path, sizeof path, "%s/paths.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) die("no paths.txt in the site directory (run sitegen)");
  while (npages < MAX_PAGES && fgets(line, sizeof line, f)) {
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = '\0';
    tab[strcspn(tab + 1, "\n") + 1] = '\0';
    snprintf(path, sizeof path, "%s/%s%s", dir, line, tab + 1);
    body[npages] = slurp(path, &body_len[npages]);
    if (!body[npages]) continue;
    snprintf(url[npages], sizeof url[npages], "http://%s%s", line, tab + 1);
    npages++;
  }
  fclose(f);
  if (!npages) die("no pages");
}

static int no_sync(int fd) {
  (void)fd;
  return 0;
}

static void write_page(kr_warcfile_t *wf, uint64_t i) {
  int k = (int)(i % (uint64_t)npages);
  char head[512];
  int hn = snprintf(head, sizeof head,
                    "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
                    "Date: Sun, 22 Nov 2026 05:00:00 GMT\r\nContent-Type: text/html\r\n"
                    "Content-Length: %zu\r\nConnection: keep-alive\r\n\r\n",
                    body_len[k]);
  kr_slice_t b[2] = {{head, (size_t)hn}, {body[k], body_len[k]}};
  kr_warc_rec_t r = {.type = KR_WARC_RESPONSE, .target_uri = kr_slice_cstr(url[k]),
                     .ip = "127.0.0.1", .content_type = "application/http;msgtype=response"};
  if (kr_warcfile_write(wf, &r, b, 2, NULL)) die(kr_warcfile_errmsg(wf));
}

int main(int argc, char **argv) {
  const char *site = NULL, *work = NULL;
  uint64_t size_mib = 1024, tail = 200;
  int reps = 5, opt;
  while ((opt = getopt(argc, argv, "d:w:s:t:r:")) != -1) {
    switch (opt) {
    case 'd': site = optarg; break;
    case 'w': work = optarg; break;
    case 's': size_mib = strtoull(optarg, NULL, 10); break;
    case 't': tail = strtoull(optarg, NULL, 10); break;
    case 'r': reps = atoi(optarg); break;
    default: die("usage: bench_repair -d SITE -w WORKDIR [-s MIB] [-t TAIL] [-r R]");
    }
  }
  if (!site || !work || reps < 1 || reps > 99 || !size_mib) die("bad arguments");
  load(site);

  kr_warcfile_opts_t o;
  kr_warcfile_opts_default(&o);
  o.dir = work;
  o.max_size = 0;
  o.durability = KR_WARC_SYNC_BATCH;
  o.sync_fn = no_sync; /* one real fdatasync below */
  kr_warcfile_t *wf;
  char err[512];
  if (kr_warcfile_open(&o, &wf, err, sizeof err)) die(err);
  double t0 = now_ms();
  uint64_t n = 0;
  while (kr_warcfile_size(wf) < size_mib << 20) write_page(wf, n++);
  if (kr_warcfile_sync(wf)) die("sync");
  const char *nm;
  uint64_t synced;
  if (!kr_warcfile_synced(wf, &nm, &synced)) die("nothing synced");
  char name[300];
  snprintf(name, sizeof name, "%s", nm);
  for (uint64_t i = 0; i < tail; i++) write_page(wf, n + i);
  uint64_t kept = kr_warcfile_size(wf);
  write_page(wf, n + tail); /* then torn: half of it cut below */
  uint64_t end = kr_warcfile_size(wf), cut_at = kept + (end - kept) / 2;
  int dirfd = open(work, O_RDONLY | O_DIRECTORY);
  if (dirfd < 0) die("work dir");
  int fd = openat(dirfd, name, O_RDWR);
  if (fd < 0 || ftruncate(fd, (off_t)cut_at) || fdatasync(fd)) die("cannot tear the file");
  size_t torn_n = (size_t)(cut_at - kept);
  char *torn = malloc(torn_n);
  if (pread(fd, torn, torn_n, (off_t)kept) != (ssize_t)torn_n) die("read torn bytes");
  close(fd);
  /* the writer is abandoned as a kill would: its file stays ".open" */
  fprintf(stderr, "bench_repair: %s: %" PRIu64 " records, %.1f MiB, synced at %" PRIu64
          ", %" PRIu64 " records + %zu torn bytes after it; built in %.1f s\n",
          name, n + tail + 1, cut_at / 1048576.0, synced, tail, torn_n,
          (now_ms() - t0) / 1e3);

  char fin[300];
  snprintf(fin, sizeof fin, "%.*s", (int)(strlen(name) - 5), name);
  static const char *const modes[] = {"whole file (offset 0)", "from the synced offset"};
  printf("| repair of a %.0f MiB gzip .open file | page cache | median ms | min-max ms | "
         "records read |\n|---|---|---:|---:|---:|\n", cut_at / 1048576.0);
  for (int cold = 0; cold < 2; cold++) {
    for (int m = 0; m < 2; m++) {
      double t[99];
      uint64_t recs = 0;
      for (int r = 0; r < reps; r++) {
        if (cold) {
          fd = openat(dirfd, name, O_RDONLY);
          if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) die("fadvise");
          close(fd);
        }
        kr_warcfile_repair_stats_t st = {0};
        double a = now_ms();
        if (kr_warcfile_repair_from(dirfd, name, m ? synced : 0, &st, err, sizeof err)) die(err);
        t[r] = now_ms() - a;
        recs = st.records;
        if (st.resumed != (unsigned)m) die("unexpected repair path");
        /* put the crash back */
        struct stat sb;
        if (fstatat(dirfd, fin, &sb, 0) || (uint64_t)sb.st_size != kept)
          die("repair kept the wrong size");
        if (renameat(dirfd, fin, dirfd, name)) die("rename back");
        fd = openat(dirfd, name, O_WRONLY);
        if (fd < 0 || pwrite(fd, torn, torn_n, (off_t)kept) != (ssize_t)torn_n || fdatasync(fd))
          die("restore torn bytes");
        close(fd);
      }
      qsort(t, (size_t)reps, sizeof *t, cmp_d);
      printf("| %s | %s | %.1f | %.1f-%.1f | %" PRIu64 " |\n", modes[m], cold ? "cold" : "warm",
             t[reps / 2], t[0], t[reps - 1], recs);
      fflush(stdout);
    }
  }
  unlinkat(dirfd, name, 0);
  close(dirfd);
  free(torn);
  return 0;
}
