/*
 * The crawl as a service (see service.h). This first version only holds
 * the hooks crawl.c calls; the status server, notification, progress and
 * reload follow.
 */
#include "service.h"

#include "crawl.h"

int kr__service_open(kr_crawl_t *c, char *err, size_t errlen) {
  (void)c, (void)err, (void)errlen;
  return 0;
}

void kr__service_ready(kr_crawl_t *c) { (void)c; }
void kr__service_issued(kr_crawl_t *c, const kr_curi_t *curi) { (void)c, (void)curi; }
void kr__service_stopping(kr_crawl_t *c) { (void)c; }
void kr__service_close(kr_crawl_t *c) { (void)c; }
void kr__service_free(kr_crawl_t *c) { (void)c; }
