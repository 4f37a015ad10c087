/*
 * Shared by the libFuzzer harnesses in this directory. A harness is one
 * .c file defining FUZZ_ENTRY (LLVMFuzzerTestOneInput unless the includer
 * renames it: test/unit/test_fuzz_regress.c includes every harness under
 * its own name to replay test/fuzz/regress/ and the seed corpora without
 * libFuzzer). Harnesses give every file-scope name a prefix of their own
 * so they can share that translation unit.
 *
 * FUZZ_CHECK(cond) states an invariant: when it fails the harness calls
 * FUZZ_FAIL(message) (default: print it and abort(), which libFuzzer
 * reports as a crash and saves the input).
 */
#ifndef FUZZ_ENTRY
#define FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#ifndef KRIA_FUZZ_H
#define KRIA_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_FAIL
#define FUZZ_FAIL(msg)                    \
  do {                                    \
    fprintf(stderr, "%s\n", (msg));       \
    fflush(stderr);                       \
    abort();                              \
  } while (0)
#endif

#define FUZZ_STR2(x) #x
#define FUZZ_STR(x) FUZZ_STR2(x)
#define FUZZ_CHECK(cond)                                                            \
  do {                                                                            \
    if (!(cond)) FUZZ_FAIL(__FILE__ ":" FUZZ_STR(__LINE__) ": invariant failed: " #cond); \
  } while (0)

#endif
