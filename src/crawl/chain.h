/*
 * The processor chain: what happens to one issued URI, from the prefetch
 * checks to the post phase, as data rather than code. Processors are
 * registered with a phase, the chain sorts them once into one flat array
 * (stable: registration order inside a phase, like nginx's phase engine),
 * and every fetch walks that array with an index. No processor knows its
 * neighbours.
 *
 * A processor's run(fetch, self) returns
 *   KR_PROC_NEXT          go on with the next processor
 *   KR_PROC_SKIP_TO_POST  skip to the first post processor (disregarded,
 *                         deferred, nothing to fetch...)
 *   KR_PROC_SKIP_TO_WRITE skip to the first write processor (unchanged
 *                         content: no extraction, but the visit is still
 *                         recorded, as a revisit); from the write phase
 *                         on it is NEXT
 *   KR_PROC_ASYNC         suspended: the processor started I/O and calls
 *                         kr_chain_resume() once it completes (that call
 *                         may even come before run returns)
 *   a negative KR_E*      an error: kept in fetch->err (the first one
 *                         wins) and the chain jumps to the post phase
 * Post processors always run, in order, whatever happened before (a post
 * processor returning SKIP_TO_POST or an error just goes on).
 *
 * Filters: a processor may carry a host (that host and every name under
 * it), a URL pattern and a content-type pattern (PCRE2, searched); it runs
 * only when every filter it has matches, otherwise it is passed over as
 * if it had returned NEXT. A content-type filter never matches a fetch
 * without a content type (before the response, or after a failure).
 *
 * One byte stream: the response leaves the HTTP client at three levels,
 * each a layer of the one below it:
 *   KR_STREAM_RAW      the bytes as received (status line, headers, body
 *                      with its transfer coding): the WARC response block
 *   KR_STREAM_PAYLOAD  the body with the transfer coding removed (chunks
 *                      joined), content coding kept: the payload digest
 *   KR_STREAM_CONTENT  the body decoded (gzip, deflate, br): the change
 *                      digest, stripping, the extractors
 * The fetch processor hands each level to the chain (kr_chain_headers
 * when the headers are complete, then kr_chain_body per level and chunk)
 * and the chain passes it on to the processors that subscribed to that
 * level: on_headers (called on every processor with the hook whose filter
 * matches, in chain order) returns the levels it wants as a mask of
 * KR_STREAM_BIT(level) (0: none); on_body then gets every chunk of those
 * levels, the bytes not copied: one buffer passes through all of them.
 * A processor whose on_headers was called gets its cleanup() at finalize,
 * whatever happened, so per-fetch stream state is never leaked.
 *
 * What one subscriber keeps of a level another may read back, through
 * the chain, without knowing who keeps it: a processor that holds a
 * level's bytes in memory (the WARC capture holds the raw response) says
 * so with kr_chain_hold(); kr_chain_held() answers, for a level and a
 * range, whether those bytes are (and, for bytes still to come, stay) in
 * memory, and where.
 *
 * Per-fetch contexts: a processor may own state for each fetch. Its
 * module declares the context once (kr_chain_ctx_def_t: size, init,
 * reset, free); every processor of the module points at that definition,
 * and the chain gives each definition an offset in one block kept with
 * every fetch object (kr_chain_fetch_setup), reached with
 * kr_chain_ctx(f, self), the way nginx modules keep per-request context
 * by module index. The owner of the fetch objects recycles them
 * generically: kr_chain_fetch_recycle() after every walk,
 * kr_chain_fetch_teardown() when the object goes.
 *
 * The per-fetch state machine (one enum, one set_state tracing each
 * transition at debug level):
 *   IDLE --start--> RUNNING --ASYNC--> WAITING --resume--> RUNNING ...
 *   RUNNING --past the last processor--> DONE (finalize called once)
 * The finalize callback is the only exit: it runs exactly once per fetch,
 * after every processor is done with it, never while a processor of that
 * fetch is on the stack, and may free the fetch.
 */
#ifndef KRIA_CHAIN_H
#define KRIA_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "kria/buf.h"
#include "kria/config.h"

typedef enum kr_phase {
  KR_PHASE_PREFETCH = 0, /* scope recheck, prerequisites (robots.txt) */
  KR_PHASE_FETCH,        /* the request; stream hooks run during it */
  KR_PHASE_DIGEST,       /* content digests (volatile sections stripped) */
  KR_PHASE_CHANGE,       /* changed / unchanged / unknown */
  KR_PHASE_EXTRACT,      /* links and embeds */
  KR_PHASE_WRITE,        /* WARC records */
  KR_PHASE_POST,         /* outcome, schedule links, crawl.log */
  KR_PHASE__COUNT
} kr_phase_t;

typedef enum kr_proc_rc {
  KR_PROC_NEXT = 0,
  KR_PROC_SKIP_TO_POST = 1,
  KR_PROC_ASYNC = 2,
  KR_PROC_SKIP_TO_WRITE = 3,
} kr_proc_rc_t;

/* Processors per chain: the stream subscriptions of a fetch are a 64-bit
 * mask. */
#define KR_CHAIN_MAX_PROCS 64
/* Context definitions per chain. */
#define KR_CHAIN_MAX_CTX 16

typedef enum kr_stream_level {
  KR_STREAM_CONTENT = 0, /* decoded body */
  KR_STREAM_PAYLOAD,     /* transfer coding removed */
  KR_STREAM_RAW,         /* as received, head included */
  KR_STREAM__COUNT
} kr_stream_level_t;
#define KR_STREAM_BIT(level) (1u << (level))

typedef struct kr_chain kr_chain_t;
typedef struct kr_chain_fetch kr_chain_fetch_t;
typedef struct kr_processor kr_processor_t;

/* A module's per-fetch context. The block starts zeroed; init runs once
 * per fetch object (what it keeps across walks: hash contexts, parsers,
 * buffers), reset after every walk (release what one fetch used, keep the
 * reusable parts, zero the rest), free when the object goes. Each hook is
 * optional; owner is the chain's ud. */
typedef struct kr_chain_ctx_def {
  const char *name;
  size_t size;
  void (*init)(void *ctx, void *owner);
  void (*reset)(void *ctx, void *owner);
  void (*free)(void *ctx, void *owner);
  size_t (*mem)(const void *ctx); /* heap bytes it keeps, for /metrics */
} kr_chain_ctx_def_t;

struct kr_processor {
  const char *name;          /* for logs and stats, static */
  kr_phase_t phase;
  /* filters, each optional */
  const char *host;          /* this host and names under it; NULL = all */
  const pcre2_code *url_re;  /* searched in the URL; NULL = all */
  const pcre2_code *ctype_re;/* searched in the content type; NULL = all */
  /* run: KR_PROC_* or a negative KR_E*. NULL = a stream-only processor. */
  int (*run)(kr_chain_fetch_t *f, kr_processor_t *self);
  /* stream hooks, optional: on_headers returns the levels it wants (a
   * mask of KR_STREAM_BIT), 0 none */
  int (*on_headers)(kr_chain_fetch_t *f, kr_processor_t *self);
  /* nonzero return: no more bytes of this level for this processor in
   * this fetch */
  int (*on_body)(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level,
                 const char *p, size_t n);
  /* a level's bytes it holds (kr_chain_hold, kr_chain_held) */
  int (*held)(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level,
              uint64_t from, uint64_t to, kr_slice_t *out);
  /* at finalize, for every processor whose on_headers ran on f */
  void (*cleanup)(kr_chain_fetch_t *f, kr_processor_t *self);
  void *data;                /* the processor's own */
  const kr_chain_ctx_def_t *ctx; /* its module's per-fetch context, or NULL */
  uint32_t ctx_off;          /* set by kr_chain_build */
  uint32_t index;            /* its place in the chain (kr_chain_build) */
  /* statistics, kept by the chain */
  uint64_t runs;             /* run called */
  uint64_t filtered;         /* passed over by a filter */
  uint64_t async;            /* run returned ASYNC */
  uint64_t errors;           /* run returned an error */
};

typedef enum kr_chain_state {
  KR_CHAIN_IDLE = 0, /* initialised, not started */
  KR_CHAIN_RUNNING,  /* a processor of it is on the stack, or about to be */
  KR_CHAIN_WAITING,  /* suspended on I/O (ASYNC) */
  KR_CHAIN_DONE,     /* finalized */
} kr_chain_state_t;

/* The chain's view of one fetch; embed it in the fetch object and use
 * container_of in processors. The owner fills url/host before
 * kr_chain_start and content_type when the response headers arrive. */
struct kr_chain_fetch {
  kr_chain_t *chain;
  const char *url;           /* for the URL filter and logs */
  size_t url_len;
  kr_slice_t host;           /* for the host filter */
  kr_slice_t content_type;   /* for the content-type filter; n = 0: none */
  int err;                   /* first error of a processor, 0 = none */
  void *ctx;                 /* the processors' contexts (kr_chain_fetch_setup) */
  /* private */
  uint32_t pos;              /* processor running or next to run */
  uint8_t state;             /* kr_chain_state_t */
  uint8_t resumed;           /* resume came while run was on the stack */
  uint8_t in_run;            /* run of f's processor is on the stack */
  uint64_t stream_mask[KR_STREAM__COUNT]; /* processors subscribed, per level */
  uint64_t headers_mask;     /* processors whose on_headers ran */
  /* a level's bytes held in memory (kr_chain_hold), per level: the
   * processor index + 1, 0 none */
  uint8_t holder[KR_STREAM__COUNT];
};

/* Called once per fetch when the chain is done with it (may free f). */
typedef void (*kr_chain_finalize_fn)(kr_chain_fetch_t *f, void *ud);

struct kr_chain {
  kr_processor_t *procs[KR_CHAIN_MAX_PROCS]; /* sorted by phase once built */
  size_t n;
  uint32_t phase_start[KR_PHASE__COUNT + 1]; /* first index of each phase */
  int built;
  kr_chain_finalize_fn finalize;
  void *ud;
  kr_config_matcher_t *matcher; /* for the filters, allocated at build */
  const kr_chain_ctx_def_t *ctx_defs[KR_CHAIN_MAX_CTX];
  uint32_t ctx_offs[KR_CHAIN_MAX_CTX];
  size_t n_ctx;
  size_t ctx_size;           /* the block of all contexts */
  uint64_t started, finished, in_flight;
};

/* Prepare an empty chain; finalize is required. */
void kr_chain_init(kr_chain_t *c, kr_chain_finalize_fn finalize, void *ud);
/* Register p (kept by pointer, not owned) before kr_chain_build. 0,
 * KR_ETOOBIG (over KR_CHAIN_MAX_PROCS) or KR_EINVAL (bad phase, built). */
int kr_chain_add(kr_chain_t *c, kr_processor_t *p);
/* Flatten the processors into phase order. 0 or KR_EINVAL (built). */
int kr_chain_build(kr_chain_t *c);
/* Release the chain's own memory (not the processors). No fetch may be
 * in flight. */
void kr_chain_free(kr_chain_t *c);

/* Index of the first processor of phase (the array is c->procs). */
static inline uint32_t kr_chain_phase_start(const kr_chain_t *c, kr_phase_t phase) {
  return c->phase_start[phase];
}
/* Name of a phase ("prefetch", ...). */
const char *kr_chain_phase_name(kr_phase_t phase);

/* A new fetch object: its context block, every context initialised. */
void kr_chain_fetch_setup(kr_chain_t *c, kr_chain_fetch_t *f);
/* After a walk (finalized): every context reset for the next one. */
void kr_chain_fetch_recycle(kr_chain_fetch_t *f);
/* Bytes f's contexts hold (the block and what each keeps). */
size_t kr_chain_fetch_mem(const kr_chain_fetch_t *f);
/* The object goes: every context freed, the block too. */
void kr_chain_fetch_teardown(kr_chain_fetch_t *f);
/* self's context in f (self->ctx must be set). */
static inline void *kr_chain_ctx(const kr_chain_fetch_t *f, const kr_processor_t *self) {
  return (char *)f->ctx + self->ctx_off;
}

/* Zero f's chain state for a new walk (url, host set by the caller); its
 * contexts are kept. */
void kr_chain_fetch_init(kr_chain_t *c, kr_chain_fetch_t *f, const char *url,
                         size_t url_len, kr_slice_t host);
/* Walk f from the first processor. Returns when f is suspended or
 * finalized; in the latter case finalize has run and f may be gone. */
void kr_chain_start(kr_chain_fetch_t *f);
/* Continue a suspended f after its processor's I/O completed: err 0 goes
 * on with the next processor, a negative KR_E* is recorded and jumps to
 * post. May be called from inside that processor's run (before it
 * returns ASYNC); the walk then continues once run returns. Returns like
 * kr_chain_start. Calling it on a fetch that is not suspended is a bug. */
void kr_chain_resume(kr_chain_fetch_t *f, int err);

/* Stream hooks, for the processor doing the fetch: the headers are in
 * (content_type set), then each chunk of each level. */
void kr_chain_headers(kr_chain_fetch_t *f);
void kr_chain_body(kr_chain_fetch_t *f, kr_stream_level_t level, const char *p, size_t n);
/* 1 when some processor still wants bytes of level. */
static inline int kr_chain_wants(const kr_chain_fetch_t *f, kr_stream_level_t level) {
  return f->stream_mask[level] != 0;
}

/* Holding a level's bytes: self, subscribed to level, keeps them in
 * memory and answers kr_chain_held through its held hook. */
void kr_chain_hold(kr_chain_fetch_t *f, kr_processor_t *self, kr_stream_level_t level);
/* Are bytes [from, to) of level's body in memory? 1 and, when out is not
 * NULL, *out the bytes from `from` on (as many as have come); 0 not
 * (nobody holds the level, it spilled, or to is past what may be held).
 * For the raw level the offsets count from the first body byte. */
int kr_chain_held(kr_chain_fetch_t *f, kr_stream_level_t level, uint64_t from, uint64_t to,
                  kr_slice_t *out);

/* Would p run on f now? (its filters; exposed for tests) */
int kr_chain_filter_match(kr_chain_t *c, const kr_processor_t *p,
                          const kr_chain_fetch_t *f);

#endif
