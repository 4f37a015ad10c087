/*
 * Helpers shared by the unit tests (test/unit/helpers.c, linked into every
 * test binary): temporary directories, a monotonic clock for timing
 * figures, and a deterministic random sequence. th_ is for "test helper".
 */
#ifndef KRIA_TEST_HELPERS_H
#define KRIA_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>

/* A new empty directory $TMPDIR/kria-NAME-XXXXXX (/tmp without TMPDIR),
 * its path into dir (n bytes). 0, or -1 (errno set). */
int th_tmpdir(char *dir, size_t n, const char *name);

/* Remove dir and everything under it, without following links. 0, or
 * what the first failing removal returned. */
int th_rmtree(const char *dir);

/* Seconds on the monotonic clock, for timing figures. */
double th_now_s(void);

/* splitmix64: the next number of the sequence kept in *state; the same
 * seed gives the same sequence on every platform. */
uint64_t th_splitmix64(uint64_t *state);

#endif
