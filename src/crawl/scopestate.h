/*
 * The crawl's scope as part of its state. The seeds in force (store.h,
 * seeds table) and the [scope] rules that turn seeds into hosts in scope
 * (meta rows scope.mode and scope.surt-prefixes) are kept in the state
 * database, so that what is in scope never depends on the seeds file of
 * the moment:
 *   - a start with crawl.seeds empty on an existing state directory, or
 *     a reload with it empty, uses the seeds kept there;
 *   - a start or reload whose seeds or rules would put out of scope hosts
 *     that have URIs is refused naming them, unless allowed
 *     (scope.allow-change, kria crawl --allow-scope-change);
 *   - URIs the scope disregarded (-5000, -4000, -4001, -4002) are decided
 *     again after every start and reload, and those the new scope accepts
 *     are queued again; URIs a host's robots.txt disallowed (-9998) are
 *     checked again when that robots.txt changes.
 * "Put out of scope" is judged on probes, each in the prefix set of the
 * scope before (kept) and not after: every seed kept, and for every host
 * queue with URIs the root URL of its name. Revival goes through
 * kr_frontier_add (KR_LINK_REVIVE) so the host's queue, counters and
 * politeness see it as any other due URI; a URI still rejected stays as
 * it is, so nothing disregarded for another reason comes back.
 */
#ifndef KRIA_SCOPESTATE_H
#define KRIA_SCOPESTATE_H

#include <stddef.h>
#include <stdint.h>

#include "crawl.h"
#include "kria/seeds.h"

/* Append the seeds kept in st to out (kr_seeds_init'ed). 0 or KR_EDB. */
int kr__scopestate_seeds_load(kr_store_t *st, kr_seeds_t *out);

/* Keep seeds as the seeds in force (when not NULL) and g's scope rules,
 * in the open transaction. 0 or KR_EDB. */
int kr__scopestate_save(kr_store_t *st, const kr_seeds_t *seeds, const kr_config_view_t *g,
                   uint64_t now);

/* The scope the state database says was in force: g's [scope] options
 * with the kept mode and SURT prefixes (g's own where none are kept), and
 * kept's seeds. 0 and *out, or KR_ECONFIG / KR_EDB with err. */
int kr__scopestate_kept_new(kr_crawl_t *c, const kr_config_view_t *g, const kr_seeds_t *kept,
                       kr_scope_t **out, char *err, size_t errlen);

/* Hosts with URIs that scope old (with its seeds old_seeds) had in scope
 * and scope next has not. Returns their number; msg gets up to five names
 * and "and N more". */
size_t kr__scopestate_exiled(kr_crawl_t *c, kr_scope_t *old, const kr_seeds_t *old_seeds,
                        kr_scope_t *next, char *msg, size_t msglen);

/* Decide every URI the scope disregarded again with c's scope and each
 * host's limits; queue again (due at now) those it accepts. The number
 * queued, or KR_EDB. All at once (a start, before the loop runs). */
int64_t kr__scopestate_revive(kr_crawl_t *c, uint64_t now);
/* The same in steps (a reload, on the loop): begin (a walk running
 * starts over under the new scope), then steps of about budget_ns each
 * (0: to the end) until one returns 0 (done) or KR_EDB; *revived (may be
 * NULL) gets the number queued so far. kr__scopestate_revive_free drops a
 * walk not done (the crawl's end). */
void kr__scopestate_revive_begin(kr_crawl_t *c);
int kr__scopestate_revive_step(kr_crawl_t *c, uint64_t now, uint64_t budget_ns, int64_t *revived);
void kr__scopestate_revive_free(kr_crawl_t *c);

/* robots.txt of the origin of robots_url changed to r: queue again (due
 * at now) the origin's URIs it had disallowed (-9998) that r allows. The
 * number queued, or KR_EDB. */
int64_t kr__scopestate_robots_revive(kr_crawl_t *c, const kr_url_t *robots_url, const kr_robots_t *r,
                          uint64_t now);

#endif
