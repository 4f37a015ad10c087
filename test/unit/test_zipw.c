/*
 * zipw: archives read back by a small reader here (local headers, the
 * central directory, the end record, CRC-32, inflate), bad names and
 * methods refused, the entry limit, a full disk, and `unzip -t` on the
 * result when unzip is installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "kria/error.h"
#include "zipw.h"

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }

static unsigned char *slurp(int fd, size_t *n) {
  struct stat sb;
  assert_int_equal(fstat(fd, &sb), 0);
  *n = (size_t)sb.st_size;
  unsigned char *b = malloc(*n + 1);
  assert_non_null(b);
  assert_int_equal(pread(fd, b, *n, 0), (ssize_t)*n);
  return b;
}

/* Entry i of the archive in b: name, data (inflated), via the central
 * directory, checking the local header agrees. Returns the data. */
static unsigned char *entry(const unsigned char *b, size_t n, unsigned i, char *name,
                            size_t *len, int *method) {
  assert_true(n >= 22);
  const unsigned char *e = b + n - 22;
  assert_int_equal(rd32(e), 0x06054b50u);
  unsigned entries = rd16(e + 10);
  assert_true(i < entries);
  uint32_t cd = rd32(e + 16), cdsize = rd32(e + 12);
  assert_true((size_t)cd + cdsize + 22 == n);
  const unsigned char *c = b + cd;
  for (unsigned k = 0; k < i; k++) c += 46 + rd16(c + 28) + rd16(c + 30) + rd16(c + 32);
  assert_int_equal(rd32(c), 0x02014b50u);
  assert_int_equal(rd16(c + 8) & 0x0800, 0x0800); /* UTF-8 names */
  *method = (int)rd16(c + 10);
  uint32_t crc = rd32(c + 16), csize = rd32(c + 20), size = rd32(c + 24);
  unsigned nl = rd16(c + 28);
  memcpy(name, c + 46, nl);
  name[nl] = '\0';
  const unsigned char *l = b + rd32(c + 42);
  assert_int_equal(rd32(l), 0x04034b50u);
  assert_int_equal(rd32(l + 14), crc); /* patched in place */
  assert_int_equal(rd32(l + 18), csize);
  assert_int_equal(rd32(l + 22), size);
  assert_int_equal(rd16(l + 26), nl);
  assert_memory_equal(l + 30, name, nl);
  const unsigned char *d = l + 30 + nl + rd16(l + 28);
  unsigned char *out = malloc(size + 1);
  assert_non_null(out);
  if (*method == 0) {
    assert_int_equal(csize, size);
    memcpy(out, d, size);
  } else {
    assert_int_equal(*method, 8);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, -15), Z_OK);
    zs.next_in = (Bytef *)(uintptr_t)d;
    zs.avail_in = csize;
    zs.next_out = out;
    zs.avail_out = size + 1;
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    assert_int_equal(zs.total_out, size);
    inflateEnd(&zs);
  }
  assert_int_equal((uint32_t)crc32(0, out, size), crc);
  *len = size;
  return out;
}

static int fresh(void) {
  char path[] = "/tmp/kria-test-zipw-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  return fd;
}

static void roundtrip(void **state) {
  (void)state;
  int fd = fresh();
  kr_zipw_t *z = kr_zipw_new(fd, 1700000000);
  /* a stored entry written in pieces, a deflated one, an empty one */
  static char big[300000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7 + i / 1000);
  kr_zipw_entry_t e1, e2, e3;
  assert_int_equal(kr_zipw_begin(z, "archive/a.warc.gz", KR_ZIP_STORE), 0);
  assert_int_equal(kr_zipw_write(z, big, 100000), 0);
  assert_int_equal(kr_zipw_write(z, big + 100000, sizeof big - 100000), 0);
  assert_int_equal(kr_zipw_end(z, &e1), 0);
  assert_true(e1.size == sizeof big && e1.csize == sizeof big);
  const char *txt = "{\"a\": 1}\n{\"a\": 1}\n{\"a\": 1}\n{\"a\": 1}\n{\"a\": 1}\n";
  assert_int_equal(kr_zipw_begin(z, "pages/pages.jsonl", KR_ZIP_DEFLATE), 0);
  assert_int_equal(kr_zipw_write(z, txt, strlen(txt)), 0);
  assert_int_equal(kr_zipw_end(z, &e2), 0);
  assert_true(e2.csize < e2.size);
  /* what sha256sum prints for the same bytes */
  assert_string_equal(e2.sha256,
                      "sha256:e0a5f745bb95aae61d28aaa20ad8568a17bfe5bd50f5eb85d05f8835eaaf049a");
  assert_int_equal(kr_zipw_begin(z, "empty.json", KR_ZIP_DEFLATE), 0);
  assert_int_equal(kr_zipw_end(z, &e3), 0);
  assert_string_equal(e3.sha256,
                      "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_int_equal(kr_zipw_close(z), 0);
  kr_zipw_free(z);

  size_t n, len;
  unsigned char *b = slurp(fd, &n);
  char name[1100];
  int method;
  unsigned char *d = entry(b, n, 0, name, &len, &method);
  assert_string_equal(name, "archive/a.warc.gz");
  assert_int_equal(method, 0);
  assert_int_equal(len, sizeof big);
  assert_memory_equal(d, big, sizeof big);
  free(d);
  d = entry(b, n, 1, name, &len, &method);
  assert_string_equal(name, "pages/pages.jsonl");
  assert_int_equal(method, 8);
  assert_int_equal(len, strlen(txt));
  assert_memory_equal(d, txt, len);
  free(d);
  d = entry(b, n, 2, name, &len, &method);
  assert_string_equal(name, "empty.json");
  assert_int_equal(len, 0);
  free(d);
  /* the stored entry's bytes sit right after its local header: a range
   * request for a record finds it there */
  assert_memory_equal(b + 30 + strlen("archive/a.warc.gz"), big, 64);
  free(b);

  /* a third-party reader agrees, when there is one */
  if (system("command -v unzip >/dev/null 2>&1") == 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "unzip -tq /proc/self/fd/%d >/dev/null 2>&1", fd);
    assert_int_equal(system(cmd), 0);
  }
  close(fd);
}

static void refusals(void **state) {
  (void)state;
  static const char *bad[] = {"", "/abs", "a/../b", "back\\slash", "ctl\x01", "..", NULL};
  for (int i = 0; bad[i]; i++) {
    int fd = fresh();
    kr_zipw_t *z = kr_zipw_new(fd, 0);
    assert_int_equal(kr_zipw_begin(z, bad[i], KR_ZIP_STORE), KR_EINVAL);
    /* sticky: the archive is unusable now */
    assert_int_equal(kr_zipw_begin(z, "ok", KR_ZIP_STORE), KR_EINVAL);
    assert_int_equal(kr_zipw_close(z), KR_EINVAL);
    assert_true(kr_zipw_errmsg(z)[0] != '\0');
    kr_zipw_free(z);
    close(fd);
  }
  int fd = fresh();
  kr_zipw_t *z = kr_zipw_new(fd, 0);
  assert_int_equal(kr_zipw_begin(z, "x", 12), KR_EINVAL); /* bzip2: not written */
  kr_zipw_free(z);
  z = kr_zipw_new(fd, 0);
  assert_int_equal(kr_zipw_write(z, "x", 1), KR_EINVAL); /* no entry */
  kr_zipw_free(z);
  z = kr_zipw_new(fd, 0);
  assert_int_equal(kr_zipw_begin(z, "open", KR_ZIP_STORE), 0);
  assert_int_equal(kr_zipw_close(z), KR_EINVAL); /* left open */
  kr_zipw_free(z);
  close(fd);
}

/* 65,535 entries fit; one more needs ZIP64 and is refused. */
static void entry_limit(void **state) {
  (void)state;
  int fd = fresh();
  kr_zipw_t *z = kr_zipw_new(fd, 0);
  char name[16];
  for (unsigned i = 0; i < 65535; i++) {
    snprintf(name, sizeof name, "%u", i);
    assert_int_equal(kr_zipw_begin(z, name, KR_ZIP_STORE), 0);
    assert_int_equal(kr_zipw_end(z, NULL), 0);
  }
  assert_int_equal(kr_zipw_begin(z, "one-more", KR_ZIP_STORE), KR_ETOOBIG);
  kr_zipw_free(z);
  close(fd);
}

/* A full disk: /dev/full takes nothing. */
static void full_disk(void **state) {
  (void)state;
  int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) skip();
  kr_zipw_t *z = kr_zipw_new(fd, 0);
  assert_int_equal(kr_zipw_begin(z, "a", KR_ZIP_STORE), KR_ENOSPC);
  assert_int_equal(kr_zipw_close(z), KR_ENOSPC);
  kr_zipw_free(z);
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(roundtrip),
      cmocka_unit_test(refusals),
      cmocka_unit_test(entry_limit),
      cmocka_unit_test(full_disk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
