# kria — plain GNU Makefile.
#
#   make                 build build/kria and the test server build/kts
#   make check           install deps, build, run unit + integration tests
#                        ("N passed, N failed"; TESTS=name runs those whose
#                        name contains it)
#   make check SANITIZE=1  the same under ASan+UBSan (objects in build-san/)
#   make demo            install deps, build, run kria demo (DEMO_SECONDS=N,
#                        default 60)
#   make deps            install the Debian packages (idempotent)
#   make install         install kria, its man page, the example config and
#                        the systemd unit (PREFIX=/usr/local, DESTDIR=)
#   make uninstall       remove what make install put there
#   make src/core/url.o  build one object (lands in $(B)/src/core/url.o)
#   make BUILD=dir       build elsewhere (dir, or dir-san with SANITIZE=1)
#
# llhttp is compiled from Debian's node-llhttp sources, never copied here.
# check and demo install the packages first and then build in a second make,
# so nothing (pkg-config, /usr/share/llhttp) is read before they exist.

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
PKGS := libuv libcares openssl sqlite3 libpcre2-8 zlib inih libidn2 libpsl expat libdeflate libisal hiredis
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp

OPT ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -g -pipe
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter

# The layers, one folder each under src/ (src/README.md draws which may
# include which; test/layers.sh checks it in make check):
#   core     the pure modules of include/kria: no loop, no database, no
#            global state. Compiled with -Iinclude and system headers
#            only, so including a loop-bound header from it fails here.
#   base     the process's plumbing: log, clock, timers, turn profile
#   net      dns, conn, tls, http
#   store    the state database: store, frontier, host queues
#   archive  what kria writes for archivists: WARC files, crawl.log, CDX
#   crawl    the crawl, the chain and its processors
#   service  status server, sd_notify, reload, progress
#   sim      kria simulate's worlds and runs
#   cli      main and the kria <command> front ends
LAYERS := base net store archive crawl service sim cli
CORE_CPPFLAGS := -Iinclude $(shell pkg-config --cflags libpcre2-8 zlib 2>/dev/null)
CPPFLAGS_ALL := -Iinclude $(LAYERS:%=-Isrc/%) -I$(LLHTTP_INC) $(PKG_CFLAGS) $(shell pkg-config --cflags json-c 2>/dev/null)
ALL_CFLAGS = $(CFLAGS_BASE) $(WARN) $(SANFLAGS) $(CPPFLAGS_ALL) $(CFLAGS)
CORE_CFLAGS = $(CFLAGS_BASE) $(WARN) $(SANFLAGS) $(CORE_CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)
LIBS := $(PKG_LIBS) -lm

CORE_SRCS := $(sort $(wildcard src/core/*.c))
LAYER_SRCS := $(filter-out src/cli/main.c,$(sort $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))))
LIB_SRCS := $(CORE_SRCS) $(LAYER_SRCS)
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/%.o)
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
LLHTTP_OBJS := $(B)/llhttp/api.o $(B)/llhttp/http.o $(B)/llhttp/llhttp.o
MAIN_OBJS := $(B)/src/cli/main.o
KTS_SRCS := $(wildcard test/server/*.c)
KTS_OBJS := $(KTS_SRCS:%.c=$(B)/%.o)
UNIT_SRCS := $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(B)/test/%)
UNIT_SUPPORT := $(filter-out test/unit/test_%.c,$(wildcard test/unit/*.c))
UNIT_SUPPORT_OBJS := $(UNIT_SUPPORT:%.c=$(B)/%.o)

KRIA := $(B)/kria
KTS := $(B)/kts

.PHONY: all check unit integration demo deps clean bench fuzz install uninstall
all: $(KRIA) $(B)/libkria-core.a $(if $(KTS_SRCS),$(KTS))

.SECONDARY:

# libkria-core.a: the pure modules alone, for whatever needs no loop.
$(B)/libkria-core.a: $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/libkria.a: $(LIB_OBJS) $(LLHTTP_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(KRIA): $(MAIN_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(MAIN_OBJS) $(B)/libkria.a $(LIBS)

# cmd_demo.c compiles config/demo.conf in (.incbin).
$(B)/src/cli/cmd_demo.o: config/demo.conf

$(KTS): $(KTS_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(KTS_OBJS) $(B)/libkria.a $(LIBS)

$(B)/test/%: $(B)/test/unit/%.o $(UNIT_SUPPORT_OBJS) $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(UNIT_SUPPORT_OBJS) $(B)/libkria.a $(LIBS) $(shell pkg-config --libs cmocka json-c)

# The unit tests of the pure modules link the core library alone: a core
# module that reaches for a loop-bound symbol (the log, the clock, the
# store) stops linking here, beside the compile-time -Iinclude.
CORE_UNIT := addrpolicy arc cluster clustermove config digest estimate extract feed fp hoststate inflate robots sched scope \
  seeds seen prior signal strip surt url validators wait websub wheel xdedup
CORE_UNIT_BINS := $(CORE_UNIT:%=$(B)/test/test_%)
$(CORE_UNIT_BINS): $(B)/test/%: $(B)/test/unit/%.o $(UNIT_SUPPORT_OBJS) $(B)/libkria-core.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(UNIT_SUPPORT_OBJS) $(B)/libkria-core.a $(LIBS) $(shell pkg-config --libs cmocka json-c)

$(B)/src/core/%.o: src/core/%.c
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Unit tests may also reach the core's private headers (url_internal.h).
$(B)/test/unit/%.o: test/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Isrc/core -MMD -MP -c -o $@ $<

# `make src/core/url.o` builds into the build directory.
src/%.o: $(B)/src/%.o ;

$(B)/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(SANFLAGS) -w -I$(LLHTTP_INC) -c -o $@ $<

unit: $(UNIT_BINS)

# A second make after deps: this one read the package paths before they
# were installed.
check: deps
	@$(MAKE) --no-print-directory all unit
	@test/run.sh $(B)

DEMO_SECONDS ?= 60
demo: deps
	@$(MAKE) --no-print-directory all
	@rm -rf -- $(B)/demo
	$(KRIA) demo --seconds $(DEMO_SECONDS) --state-dir $(B)/demo

# Every Debian package the build, tests and benchmarks need; OPTIONAL_PKGS
# are wanted by a test or two, which skip without them (chromium: the
# console screenshot and the replay in ReplayWeb.page; systemd:
# systemd-analyze verify of the unit, installed without systemd-sysv so it
# never becomes PID 1). KRIA_SKIP_OPTIONAL=1
# skips those. nodejs + npm only when there is no node at all (a node from
# elsewhere bundles its own npm). Package scripts may not start services
# (nginx would take port 80): policy-rc.d says no while apt-get runs.
DEPS_PKGS := build-essential pkg-config \
  libuv1-dev libc-ares-dev node-llhttp libssl-dev libsqlite3-dev libpcre2-dev \
  zlib1g-dev libinih-dev libidn2-dev libpsl-dev libexpat1-dev libdeflate-dev libisal-dev \
  libcmocka-dev libjson-c-dev openssl nginx-light valgrind curl unzip man-db \
  libhiredis-dev redis-server redis-tools \
  wget wget2 httrack dnsmasq-base util-linux time linux-perf iproute2 sqlite3 \
  python3-matplotlib clang libclang-rt-14-dev
OPTIONAL_PKGS := chromium systemd
deps:
	@installed() { dpkg-query -W -f='$${Status}' "$$1" 2>/dev/null | grep -q "install ok installed"; }; \
	missing=; for p in $(DEPS_PKGS); do installed $$p || missing="$$missing $$p"; done; \
	command -v node >/dev/null || missing="$$missing nodejs npm"; \
	optional=; if [ "$${KRIA_SKIP_OPTIONAL:-0}" != 1 ]; then \
	  for p in $(OPTIONAL_PKGS); do installed $$p || optional="$$optional $$p"; done; fi; \
	[ -z "$$missing$$optional" ] && exit 0; \
	echo "deps: installing$$missing$$optional"; \
	sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$sudo apt-get update -qq || exit 1; \
	if [ ! -e /usr/sbin/policy-rc.d ]; then \
	  printf '#!/bin/sh\nexit 101\n' | $$sudo tee /usr/sbin/policy-rc.d >/dev/null; \
	  $$sudo chmod +x /usr/sbin/policy-rc.d; trap '$$sudo rm -f /usr/sbin/policy-rc.d' EXIT; fi; \
	if [ -n "$$missing" ]; then \
	  $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; fi; \
	if [ -n "$$optional" ] && \
	   ! $$sudo apt-get install -y -qq --no-install-recommends $$optional >/dev/null; then \
	  echo "deps: optional$$optional not installed (the tests that need it skip;" \
	    "KRIA_SKIP_OPTIONAL=1 stops trying)"; fi; \
	echo "deps: done"

bench: all
	@echo "see bench/README.md"

# libFuzzer harnesses in test/fuzz (clang, ASan+UBSan), FUZZ_SECONDS each;
# FUZZ_TARGETS="url http" picks some. See test/fuzz/run.sh.
FUZZ_SECONDS ?= 30
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(B)-fuzz test/fuzz/run.sh $(FUZZ_TARGETS)

# bench/frontier: the frontier and store at scale (bench/frontier/run.sh).
.PHONY: bench-frontier
bench-frontier: $(B)/bench/frontier_bench
$(B)/bench/frontier_bench: $(B)/bench/frontier/frontier_bench.o $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria.a $(LIBS)

# bench/cluster: load balance of cluster ownership over a skewed crawl.
.PHONY: bench-cluster
bench-cluster: $(B)/bench/cluster_balance
$(B)/bench/cluster_balance: $(B)/bench/cluster/balance.o $(B)/libkria-core.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria-core.a $(LIBS)

# bench/sha1: SHA-1 throughput, OpenSSL against kr_sha1_pair (GB/s).
.PHONY: bench-sha1
bench-sha1: $(B)/bench/sha1_bench
$(B)/bench/sha1_bench: $(B)/bench/sha1/sha1_bench.o $(B)/libkria.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria.a $(LIBS)

# bench/estimate: CPU time of one change-rate estimate at 64 observations.
.PHONY: bench-estimate
bench-estimate: $(B)/bench/estimate_bench
$(B)/bench/estimate_bench: $(B)/bench/estimate/estimate_bench.o $(B)/libkria-core.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/libkria-core.a -lm

# ---- install ----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=] puts
#   $(BINDIR)/kria                          the binary (built first, in $(B))
#   $(MANDIR)/man1/kria.1                   the man page, kria(1)
#   $(DOCDIR)/kria.conf.example             the reference configuration
#   $(SYSCONFDIR)/kria/kria.conf            the same, mode 0600, only when no
#                                           file is there (never overwritten)
#   $(UNITDIR)/kria.service                 the systemd unit
# The unit and the man page are written with the installed paths (the
# sources say /usr/local/bin/kria and /etc/kria). SYSCONFDIR is /etc
# whatever PREFIX is, where an administrator looks for a service's
# configuration; systemd reads units from /usr/local/lib/systemd/system
# as from /usr/lib/systemd/system. make uninstall removes those files,
# and the configuration only while it is unchanged from the reference; an
# edited one stays.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/kria
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL ?= install
INSTALL_SED = sed -e 's|/usr/local/bin/kria|$(BINDIR)/kria|g' \
  -e 's|/usr/local/share/doc/kria|$(DOCDIR)|g' \
  -e 's|/usr/local/lib/systemd/system|$(UNITDIR)|g' \
  -e 's|/etc/kria/|$(SYSCONFDIR)/kria/|g'

# The rewritten unit and page go straight to their place: nothing is
# written into the build directory (a sudo make install would leave files
# there that make clean, run as the user, cannot remove).
install: $(KRIA)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) \
	  $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/kria
	$(INSTALL) -m 0755 $(KRIA) $(DESTDIR)$(BINDIR)/kria
	$(INSTALL_SED) config/kria.1 >$(DESTDIR)$(MANDIR)/man1/kria.1
	chmod 0644 $(DESTDIR)$(MANDIR)/man1/kria.1
	$(INSTALL) -m 0644 config/kria.conf $(DESTDIR)$(DOCDIR)/kria.conf.example
	$(INSTALL_SED) config/kria.service >$(DESTDIR)$(UNITDIR)/kria.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/kria.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/kria/kria.conf ]; then \
	  echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/kria/kria.conf"; \
	else \
	  echo "$(INSTALL) -m 0600 config/kria.conf $(DESTDIR)$(SYSCONFDIR)/kria/kria.conf"; \
	  $(INSTALL) -m 0600 config/kria.conf $(DESTDIR)$(SYSCONFDIR)/kria/kria.conf; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/kria $(DESTDIR)$(MANDIR)/man1/kria.1 \
	  $(DESTDIR)$(DOCDIR)/kria.conf.example $(DESTDIR)$(UNITDIR)/kria.service
	@c=$(DESTDIR)$(SYSCONFDIR)/kria/kria.conf; \
	if [ -e "$$c" ]; then \
	  if cmp -s config/kria.conf "$$c"; then echo "rm -f $$c"; rm -f "$$c"; \
	  else echo "uninstall: keeping $$c (edited)"; fi; fi
	@for d in $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/kria; do \
	  [ ! -d "$$d" ] || rmdir "$$d" 2>/dev/null || echo "uninstall: keeping $$d (not empty)"; done

clean:
	rm -rf build build-san build-*

-include $(shell find $(B) -name '*.d' 2>/dev/null)
