/*
 * A cluster's snapshot (crawl/clusterview.h) as text, as JSON and as the
 * console's cluster page: `kria status --cluster` prints the first two,
 * the status server serves /cluster.json and /cluster.
 */
#ifndef KRIA_SERVICE_CLUSTERPAGE_H
#define KRIA_SERVICE_CLUSTERPAGE_H

#include <stdint.h>

#include "clusterview.h"
#include "kria/buf.h"

/* The members' table and a closing line (ages against now, ms). */
void kr_clusterpage_text(const kr_clusterview_t *v, uint64_t now, kr_buf_t *out);
/* One JSON object (no newline); v NULL: {"on":false}. */
void kr_clusterpage_json(const kr_clusterview_t *v, uint64_t now, kr_buf_t *out);
/* The console's cluster page (HTML; its script reads cluster.json). */
extern const char kr__clusterpage_html[];
extern const size_t kr__clusterpage_len;

#endif
