# kria — plain GNU Makefile.
#
#   make                 build build/kria and the test server build/kts
#   make check           unit + integration tests ("N passed, N failed")
#   make check SANITIZE=1  the same under ASan+UBSan (objects in build-san/)
#   make demo            build, then run kria demo (DEMO_SECONDS=N, default 60)
#   make deps            install the Debian packages (idempotent)
#   make src/url.o       build one object (lands in $(B)/src/url.o)
#   make BUILD=dir       build elsewhere (dir, or dir-san with SANITIZE=1)
#
# llhttp is compiled from Debian's node-llhttp sources, never copied here.

SANITIZE ?= 0
BUILD ?= build
ifeq ($(SANITIZE),1)
B := $(BUILD)-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
B := $(BUILD)
SANFLAGS :=
endif

CC ?= cc
PKGS := libuv libcares openssl sqlite3 libpcre2-8 zlib inih libidn2 libpsl expat libdeflate libisal
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp

OPT ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -g -pipe
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CPPFLAGS_ALL := -Iinclude -Isrc -I$(LLHTTP_INC) $(PKG_CFLAGS) $(shell pkg-config --cflags json-c 2>/dev/null)
ALL_CFLAGS = $(CFLAGS_BASE) $(WARN) $(SANFLAGS) $(CPPFLAGS_ALL) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)
LIBS := $(PKG_LIBS) -lm

# Explicit source lists, one variable per area. Pure modules
# (include/kria/*.h) have no loop, no database and no global state.
BASE_SRCS := src/error.c src/mem.c src/buf.c src/arena.c src/log.c src/fdio.c
URL_SRCS := src/url.c src/url_host.c src/url_canon.c src/surt.c src/cmd_url.c
TIME_SRCS := src/clock.c src/wheel.c src/timer.c src/turnprof.c
DNS_SRCS := src/dns.c
NET_SRCS := src/addrpolicy.c src/digest.c src/inflate.c src/conn.c src/tls.c src/http.c src/cmd_fetch.c
ROBOTS_SRCS := src/robots.c src/cmd_robots.c
CONFIG_SRCS := src/config.c src/config_schema.c
DEMO_SRCS := src/demo_site.c src/cmd_demo.c
WARCW_SRCS := src/proc_warc.c src/warcsync.c src/cmd_wacz.c src/zipw.c
SIM_SRCS := src/sim.c src/sim_world.c src/sim_shard.c src/sim_pool.c src/cmd_simulate.c
SVC_SRCS := src/sdnotify.c src/status.c src/status_pages.c src/progress.c src/service.c src/cmd_status.c
WARC_SRCS := src/warc.c src/warcfile.c src/cmd_cdx.c
ADAPT_SRCS := src/wait.c src/estimate.c src/validators.c src/strip.c
CRAWL_SRCS := src/chain.c src/crawl.c src/proc_prefetch.c src/proc_fetch.c src/proc_extract.c src/proc_post.c src/cmd_crawl.c src/proc_digest.c src/proc_midfetch.c src/proc_change.c src/proc_feed.c src/proc_wait.c src/diskguard.c src/linkcache.c
SCOPE_SRCS := src/scope.c src/seeds.c src/crawllog.c
FRONTIER_SRCS := src/fp.c src/seen.c src/store.c src/store_vfs.c src/rowcache.c src/hostq.c src/frontier.c
EXTRACT_SRCS := src/extract_html.c src/extract_css.c src/extract_feed.c
CLI_SRCS := src/cli.c

LIB_SRCS := $(BASE_SRCS) $(URL_SRCS) $(TIME_SRCS) $(DNS_SRCS) $(NET_SRCS) $(ROBOTS_SRCS) $(CONFIG_SRCS) $(DEMO_SRCS) $(WARCW_SRCS) $(SVC_SRCS) $(WARC_SRCS) $(ADAPT_SRCS) $(CRAWL_SRCS) $(SCOPE_SRCS) $(FRONTIER_SRCS) $(EXTRACT_SRCS) $(SIM_SRCS) $(CLI_SRCS)
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
LLHTTP_OBJS := $(B)/llhttp/api.o $(B)/llhttp/http.o $(B)/llhttp/llhttp.o
MAIN_OBJS := $(B)/src/main.o
KTS_SRCS := $(wildcard test/server/*.c)
KTS_OBJS := $(KTS_SRCS:%.c=$(B)/%.o)
UNIT_SRCS := $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(B)/test/%)
UNIT_SUPPORT := $(filter-out test/unit/test_%.c,$(wildcard test/unit/*.c))
UNIT_SUPPORT_OBJS := $(UNIT_SUPPORT:%.c=$(B)/%.o)

KRIA := $(B)/kria
KTS := $(B)/kts

.PHONY: all check unit integration demo deps clean bench fuzz
all: $(KRIA) $(if $(KTS_SRCS),$(KTS))

.SECONDARY:

$(B)/libkria.a: $(LIB_OBJS) $(LLHTTP_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(KRIA): $(MAIN_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(MAIN_OBJS) $(B)/libkria.a $(LIBS)

# cmd_demo.c compiles config/demo.conf in (.incbin).
$(B)/src/cmd_demo.o: config/demo.conf

$(KTS): $(KTS_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(KTS_OBJS) $(B)/libkria.a $(LIBS)

$(B)/test/%: $(B)/test/unit/%.o $(UNIT_SUPPORT_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(UNIT_SUPPORT_OBJS) $(B)/libkria.a $(LIBS) $(shell pkg-config --libs cmocka json-c)

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# `make src/url.o` builds into the build directory.
src/%.o: $(B)/src/%.o ;

$(B)/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(SANFLAGS) -w -I$(LLHTTP_INC) -c -o $@ $<

unit: $(UNIT_BINS)
check: deps all $(UNIT_BINS)
	@scripts/run-tests.sh $(B)

demo: deps all
	@scripts/demo.sh $(B)

deps:
	@scripts/deps.sh

bench: all
	@echo "see bench/README.md"

# libFuzzer harnesses in test/fuzz (clang, ASan+UBSan), FUZZ_SECONDS each;
# FUZZ_TARGETS="url http" picks some. See scripts/fuzz.sh.
FUZZ_SECONDS ?= 30
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(B)-fuzz scripts/fuzz.sh $(FUZZ_TARGETS)

# bench/frontier: the frontier and store at scale (bench/frontier/run.sh).
.PHONY: bench-frontier
bench-frontier: $(B)/bench/frontier_bench
$(B)/bench/frontier_bench: $(B)/bench/frontier/frontier_bench.o $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria.a $(LIBS)

# bench/sha1: SHA-1 throughput, OpenSSL against kr_sha1_pair (GB/s).
.PHONY: bench-sha1
bench-sha1: $(B)/bench/sha1_bench
$(B)/bench/sha1_bench: $(B)/bench/sha1/sha1_bench.o $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria.a $(LIBS)

clean:
	rm -rf build build-san build-*

-include $(shell find $(B) -name '*.d' 2>/dev/null)
