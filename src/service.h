/*
 * The crawl as a service: what runs beside the crawl on its loop when
 * kria is a long-lived process — the status server (src/status.c with
 * the pages of src/status_pages.c), systemd notification and watchdog
 * (src/sdnotify.c), the progress statistics and their log line
 * (src/progress.c), and SIGHUP reload of the configuration and seeds.
 *
 * crawl.c calls the hooks below at fixed points; each is cheap and none
 * calls back into the crawl while the crawl is mid-change:
 *   kr__service_open      end of kr_crawl_new (KR_E* + err: the crawl
 *                         fails to start, e.g. the status port is taken)
 *   kr__service_ready     kr_crawl_run, before the loop runs (READY=1)
 *   kr__service_issued    a URI was issued (overdue statistics)
 *   kr__service_stopping  the crawl starts stopping (STOPPING=1)
 *   kr__service_close     the crawl closes its handles (ours too)
 *   kr__service_free      kr_crawl_free, after the loop ran dry
 */
#ifndef KRIA_SERVICE_H
#define KRIA_SERVICE_H

#include <stddef.h>
#include <stdint.h>

typedef struct kr_crawl kr_crawl_t;
typedef struct kr_curi kr_curi_t;
typedef struct kr_service kr_service_t;

int kr__service_open(kr_crawl_t *c, char *err, size_t errlen);
void kr__service_ready(kr_crawl_t *c);
void kr__service_issued(kr_crawl_t *c, const kr_curi_t *curi);
void kr__service_stopping(kr_crawl_t *c);
void kr__service_close(kr_crawl_t *c);
void kr__service_free(kr_crawl_t *c);

#endif
