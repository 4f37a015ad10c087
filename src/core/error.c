/*
 * Names and descriptions for the KR_E* codes, generated from KR_ERRNO_MAP
 * so that the enum, the names and the sentences can never drift apart.
 */
#include "kria/error.h"

static const char *const names[] = {
#define KR__NAME(sym, name, desc) name,
    KR_ERRNO_MAP(KR__NAME)
#undef KR__NAME
};

static const char *const descs[] = {
#define KR__DESC(sym, name, desc) desc,
    KR_ERRNO_MAP(KR__DESC)
#undef KR__DESC
};

static int idx(int err) {
  if (err <= KR__EBASE || err >= KR__ELAST) return -1;
  return err - KR__EBASE - 1;
}

const char *kr_err_name(int err) {
  if (err == 0) return "ok";
  int i = idx(err);
  return i < 0 ? "unknown" : names[i];
}

const char *kr_strerror(int err) {
  if (err == 0) return "success";
  int i = idx(err);
  return i < 0 ? "unknown error" : descs[i];
}
