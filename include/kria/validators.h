/*
 * HTTP validators (ETag, Last-Modified) as change predictors, and how far
 * to trust a host's. Pure: no loop, no database, no globals.
 *
 * ---- Comparing a stored validator with the current one ----------------
 * Each indicator compares to SAME, CHANGED or MISSING (absent from the
 * stored visit or from this response, or unreadable). MISSING predicts a
 * change, as in every scheme of the thesis' Table 1 (after Clausen,
 * "Concerning Etags and Datestamps", IWAW 2004).
 * ETag: an entity-tag is [W/]"opaque" (RFC 9110 8.8.3); surrounding
 *   blanks are ignored, "w/" is read as "W/", and an unquoted value (some
 *   servers send one) is compared as it is. Modes:
 *     EXACT  (default) SAME iff weakness and opaque-tag are both equal:
 *            any difference is a change, as the thesis compared the text
 *            (a strong tag turning weak, e.g. nginx compressing on the
 *            fly, counts as a change);
 *     STRONG RFC strong comparison: SAME iff both are strong and equal;
 *            a weak tag says nothing about the bytes, so it is MISSING;
 *     WEAK   RFC weak comparison: SAME iff the opaque-tags are equal.
 * Last-Modified: an HTTP-date (IMF-fixdate, RFC 850 or asctime; RFC 9110
 *   5.6.7) compared as a time in seconds: ANY difference is a change,
 *   also an older date (thesis 6.4). The store keeps it as epoch seconds
 *   with 0 for none, so 0 here means absent.
 *
 * ---- Table 1's schemes (download = a change is predicted) ---------------
 *   1 timestamp  download unless Last-Modified is SAME
 *   2 etag       download unless ETag is SAME
 *   3 both       download only when both predict a change (CHANGED or
 *                MISSING): one SAME indicator is enough to skip
 *   4 either     download unless both are SAME (default; the thesis'
 *                HTTPMidFetchUnchangedFilter)
 * With MISSING counted as a predicted change, scheme 3's "or just one if
 * the other is missing" and "missing indicators predict change" are the
 * same rule.
 *
 * ---- Validator trust (thesis ch. 8, left undone there) ------------------
 * Validators decide without the body, so a host whose validators lie
 * ("unchanged" while the content changed) silently loses versions. Per
 * host, kria keeps counters (kr_vtrust_t, plain data the store can keep)
 * and decides per visit, before the request (kr_vtrust_mode):
 *   DISTRUSTED  caught lying within distrust_ms: no conditional request,
 *               no mid-fetch abort; every body downloaded and compared;
 *   PROBATION   fewer than `probation` verified right "unchanged"
 *               predictions so far: the same (trust is earned first);
 *   SAMPLE      a share of visits (kr_vtrust_sample_rate), picked by a
 *               hash of (URI fingerprint, visit number), so a run is
 *               reproducible and the sample independent of the content:
 *               the same, so the prediction is checked by the digest;
 *   USE         conditional request, and mid-fetch abort on "unchanged".
 * After the visit kr_vtrust_record() counts the prediction and, when the
 * body was downloaded anyway, what the digest said. A "no change"
 * prediction that the digest contradicts is a miss; misses_to_distrust
 * misses (default 1) since trust was last gained distrust the host for
 * distrust_ms (right predictions in between do not excuse a liar; a miss
 * while distrusted starts the period again, so trust comes back only
 * after a full period without one).
 * The sample's share starts at sample_rate (5 %) and halves with every
 * sample_halving (20) consecutive confirmations (a verified "no change"
 * prediction that was right), down to sample_min (1 %); one miss puts it
 * back at sample_rate. A host whose validators were never caught lying
 * thus pays less and less for the checking, and a host that starts lying
 * after a long honest run is caught within about 1/sample_min of its
 * unchanged-predicted visits instead of 1/sample_rate. (With 5 % flat,
 * the bytes saved on unchanged visits with honest validators can never
 * reach 95 %.) The run (confirm_run) is not a column of the host's row:
 * the crawl keeps it in the host's learned-state record (hoststate.h),
 * so a restart continues at the sample it had reached.
 * Measures (the thesis' two, made precise; both -1 while undefined):
 *   reliability = (verified - misses) / verified
 *       of the "no change" predictions checked against the digest, the
 *       share that were right. The checked ones are a uniform sample
 *       (SAMPLE) plus all of them while on PROBATION or DISTRUSTED.
 *   usefulness  = reliability x predicted_unchanged / checks
 *       of all checks (visits where stored and current validators were
 *       compared), the share where validators could rightly skip the
 *       download (reliability taken as 1 until something was verified).
 * Clausen's reliability over all checks is 1 - (1 - reliability) x
 * predicted_unchanged / checks.
 */
#ifndef KRIA_VALIDATORS_H
#define KRIA_VALIDATORS_H

#include <stddef.h>
#include <stdint.h>

#include "kria/buf.h"
#include "kria/estimate.h"

typedef enum kr_val_cmp {
  KR_VAL_SAME = 0,
  KR_VAL_CHANGED = 1,
  KR_VAL_MISSING = 2,
} kr_val_cmp_t;

typedef enum kr_vscheme {
  KR_VSCHEME_TIMESTAMP = 1,
  KR_VSCHEME_ETAG = 2,
  KR_VSCHEME_BOTH = 3,
  KR_VSCHEME_EITHER = 4,
} kr_vscheme_t;
#define KR_VSCHEME_DEFAULT KR_VSCHEME_EITHER

typedef enum kr_etag_mode {
  KR_ETAG_EXACT = 0,
  KR_ETAG_STRONG = 1,
  KR_ETAG_WEAK = 2,
} kr_etag_mode_t;

/* Compare a stored ETag with the current one (either may be empty). */
kr_val_cmp_t kr_validators_etag_cmp(kr_slice_t stored, kr_slice_t current, kr_etag_mode_t mode);
/* Compare Last-Modified times in epoch seconds, 0 = absent. */
kr_val_cmp_t kr_validators_lm_cmp(int64_t stored, int64_t current);
/* 1 when the scheme predicts a change (download), 0 when it predicts
 * none (a mid-fetch abort is allowed). An unknown scheme predicts a
 * change. */
int kr_validators_predict(kr_vscheme_t scheme, kr_val_cmp_t etag, kr_val_cmp_t lm);

/* Everything the mid-fetch check needs in one call. */
typedef struct kr_val_result {
  kr_val_cmp_t etag, lm;
  int64_t lm_time;   /* the current Last-Modified, 0 when absent/unreadable */
  int change;        /* kr_validators_predict() */
} kr_val_result_t;
/* stored_lm: epoch seconds, 0 none; current_lm: the header value as
 * received (empty: absent). Returns out->change. */
int kr_validators_check(kr_vscheme_t scheme, kr_etag_mode_t mode, kr_slice_t stored_etag,
                        kr_slice_t current_etag, int64_t stored_lm, kr_slice_t current_lm,
                        kr_val_result_t *out);

/* "1".."4" or "timestamp", "etag", "both", "either" (ASCII any case).
 * 0 or KR_EINVAL. */
int kr_validators_scheme_parse(const char *s, size_t n, kr_vscheme_t *out);
/* "timestamp", "etag", "both", "either"; "?" when unknown. */
const char *kr_validators_scheme_name(kr_vscheme_t scheme);
/* "exact", "strong", "weak" -> mode; 0 or KR_EINVAL. */
int kr_validators_etag_mode_parse(const char *s, size_t n, kr_etag_mode_t *out);

/* ---- HTTP-date ----------------------------------------------------------- */

/* Parse an HTTP-date: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC
 * 850 "Sunday, 06-Nov-94 08:49:37 GMT" (years 70-99 are 19xx, 00-69
 * 20xx) or asctime "Sun Nov  6 08:49:37 1994". Day names and month names
 * are matched ignoring case and the day name is not checked against the
 * date; surrounding blanks are ignored; the date must exist (no Feb 30),
 * seconds may be 60 (read as 59), years 1601-9999. 0 with *epoch_s, or
 * KR_EINVAL. At most 64 bytes are looked at. */
int kr_validators_date_parse(const char *s, size_t n, int64_t *epoch_s);
/* IMF-fixdate of epoch_s (years 1601-9999, else clamped) for
 * If-Modified-Since: 29 characters and a NUL. */
#define KR_HTTP_DATE_SIZE 30
void kr_validators_date_format(int64_t epoch_s, char out[KR_HTTP_DATE_SIZE]);

/* ---- Trust ---------------------------------------------------------------- */

typedef struct kr_vtrust_params {
  double sample_rate;          /* share of visits checked in full (0.05) */
  double sample_min;           /* ... decaying to this floor (0.01) */
  uint32_t sample_halving;     /* confirmations per halving (20; 0 = no decay) */
  int64_t distrust_ms;         /* how long a caught host is distrusted (7 d) */
  uint32_t misses_to_distrust; /* misses since trust was gained that distrust (1) */
  uint32_t probation;          /* right "unchanged" predictions verified
                                  before validators are first used (3) */
} kr_vtrust_params_t;

void kr_vtrust_params_default(kr_vtrust_params_t *p);

typedef struct kr_vtrust {
  uint64_t checks;              /* predictions made (stored and current compared) */
  uint64_t predicted_unchanged; /* of which "no change" */
  uint64_t skipped;             /* of those, downloads avoided (304, abort) */
  uint64_t verified;            /* of those, bodies downloaded and digested */
  uint64_t misses;              /* of those, the digest showed a change */
  uint64_t false_alarms;        /* "change" predicted, digest unchanged */
  uint64_t distrusts;           /* times the host lost trust (not extensions) */
  uint32_t miss_run;            /* misses since trust was last (re)gained */
  uint32_t confirm_run;         /* right verified "no change" since the last miss
                                   (kept in the learned-state record, hoststate.h) */
  int64_t distrust_until;       /* epoch ms; 0: never distrusted */
} kr_vtrust_t;

static inline void kr_vtrust_init(kr_vtrust_t *t) { *t = (kr_vtrust_t){0}; }

typedef enum kr_vtrust_mode {
  KR_VTRUST_USE = 0,        /* conditional request; abort on "unchanged" */
  KR_VTRUST_SAMPLE = 1,     /* download in full, check the prediction */
  KR_VTRUST_PROBATION = 2,  /* trust not yet earned: download in full */
  KR_VTRUST_DISTRUSTED = 3, /* caught lying: download in full */
} kr_vtrust_mode_t;

/* 1 when visit `visit` of URI fp is in the sample: a pure function of
 * (fp, visit, rate); rate <= 0 never, >= 1 always. */
int kr_vtrust_is_sample(double rate, uint64_t fp, uint32_t visit);
/* The share of visits sampled now: sample_rate halved every
 * sample_halving confirmations of the current run, at least sample_min
 * (and never above sample_rate). */
double kr_vtrust_sample_rate(const kr_vtrust_t *t, const kr_vtrust_params_t *p);
/* How to treat validators on this visit (decided before the request). */
kr_vtrust_mode_t kr_vtrust_mode(const kr_vtrust_t *t, const kr_vtrust_params_t *p, uint64_t fp,
                                uint32_t visit, int64_t now_ms);
/* Count a visit whose validators were compared: predicted_change as
 * kr_validators_predict() said; digest the content state the change
 * digest gave (KR_CONTENT_UNKNOWN when the body was not downloaded: 304
 * or abort). */
void kr_vtrust_record(kr_vtrust_t *t, const kr_vtrust_params_t *p, int predicted_change,
                      kr_content_t digest, int64_t now_ms);
/* 1 while distrusted at now_ms. */
int kr_vtrust_is_distrusted(const kr_vtrust_t *t, int64_t now_ms);
/* The measures above; -1 while undefined. */
double kr_vtrust_reliability(const kr_vtrust_t *t);
double kr_vtrust_usefulness(const kr_vtrust_t *t);
/* "use", "sample", "probation", "distrusted". */
const char *kr_vtrust_mode_name(kr_vtrust_mode_t m);

#endif
