# syncd: one non-recursive Makefile.
#
#   make            build build/syncd (and build/kube-emu, the test API server)
#   make test       build and run every test (unit, data-driven, integration,
#                   the fuzz targets for FUZZ_TEST_SECONDS each when clang
#                   is installed, and the real tier when Go is installed)
#   make check-deps check that each room includes only what it may
#   make fuzz       build the libFuzzer targets (clang) and run each briefly
#   make check      the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind   the tests under valgrind memcheck (syncd runs included)
#   make deps       install the Debian packages (as root), else print the command
#   make k8s        build the real control plane, kubectl, kwok, kustomize,
#                   helm, the registry, oras, sops and age from their Go
#                   modules (tests/k8s) into build/k8s
#   make cluster    start the real control plane on loopback until Ctrl-C
#   make soak       the fault soak on the real control plane for SOAK_SECONDS
#                   (default 600): API server, etcd, syncd, Git server, full
#                   cache disk and network cut, one summary line per fault
#   make bench      run the benchmarks in bench/ (compares with peers)
#   make demo       syncd run keeping examples/guestbook converged on kube-emu,
#                   narrated step by step
#   make format     clang-format the tree
#
# SANITIZE=address,undefined builds everything with those sanitizers into
# build-san/ (used by `make check`).

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

ifdef FUZZ
BUILD ?= build-fuzz
else ifdef SANITIZE
BUILD ?= build-san
else
BUILD ?= build
endif

CC ?= cc
PKG_CONFIG ?= pkg-config

# Debian package that provides each pkg-config module.
PKGS := libgit2:libgit2-dev yaml-0.1:libyaml-dev libcurl:libcurl4-openssl-dev \
	jansson:libjansson-dev criterion:libcriterion-dev \
	libmicrohttpd:libmicrohttpd-dev zlib:zlib1g-dev
# Build: the libraries above and libjsonnet (no pkg-config module). Tests:
# curl, jq, openssl (kube-emu --tls), the real Git servers and signers
# of tests/integration/git.sh (lighttpd + git http-backend, sshd, gpg),
# and python3 (the chart repository and fake registry of the source tests).
# The fuzz targets (make fuzz, the fuzz phase of make test): clang and its
# libFuzzer runtime.
FUZZ_DEB_PACKAGES := clang libclang-rt-14-dev
DEB_PACKAGES := build-essential pkg-config valgrind git time openssl curl jq \
	python3 $(FUZZ_DEB_PACKAGES) \
	libjsonnet-dev lighttpd lighttpd-mod-openssl openssh-server \
	openssh-client gnupg gpgv \
	$(foreach p,$(PKGS),$(word 2,$(subst :, ,$(p))))

# Modules the build needs. When one is missing, root installs the Debian
# packages right away (so `make demo` and `make test` are all the setup a
# fresh machine needs); anyone else is told the one command to run.
missing_pkgs = $(foreach p,$(PKGS),$(if $(shell $(PKG_CONFIG) --exists $(word 1,$(subst :, ,$(p))) 2>/dev/null && echo ok),,$(word 2,$(subst :, ,$(p))))) \
	$(if $(wildcard /usr/include/libjsonnet.h),,libjsonnet-dev)
ifeq ($(filter deps clean format help,$(MAKECMDGOALS)),)
MISSING := $(strip $(missing_pkgs))
ifneq ($(MISSING),)
ifeq ($(shell id -u),0)
$(info installing missing packages: $(MISSING))
DEPS_LOG := $(shell $(MAKE) --no-print-directory deps >&2; echo done)
MISSING := $(strip $(missing_pkgs))
endif
endif
ifneq ($(MISSING),)
$(error missing libraries; install them with: apt-get install $(MISSING)   (or run: make deps))
endif
endif

LIB_MODULES := yaml-0.1 jansson libcurl libgit2 libmicrohttpd zlib
LIB_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(LIB_MODULES) 2>/dev/null)
LIB_LIBS := $(shell $(PKG_CONFIG) --libs $(LIB_MODULES) 2>/dev/null)
# libjsonnet (Debian libjsonnet-dev, no pkg-config module) is not linked:
# renderers/jsonnet.c loads libjsonnet.so.0 on its first evaluation.
LIB_LIBS += -ldl
TEST_CFLAGS := $(shell $(PKG_CONFIG) --cflags criterion 2>/dev/null)
TEST_LIBS := $(shell $(PKG_CONFIG) --libs criterion 2>/dev/null)
EMU_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
EMU_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null) -lgnutls -pthread

WARNINGS := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes \
	-Wvla -Wformat-security -Wwrite-strings -Wshadow
OPT ?= -O2 -g
CFLAGS ?= $(OPT)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DSYNCD_VERSION='"$(VERSION)"' \
	$(WARNINGS) $(CFLAGS) -I. $(LIB_CFLAGS) -MMD -MP
ALL_LDFLAGS := $(LDFLAGS)
ifdef SANITIZE
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif
# `make fuzz` builds everything with clang and libFuzzer's coverage.
ifdef FUZZ
ALL_CFLAGS += -fsanitize=fuzzer-no-link
endif

# Rooms: one static library each, dependencies pointing one way
# (docs/internals/architecture.md; `make check-deps` enforces it):
#   util <- diff <- renderers <- kube, source <- app <- controller <- syncd
#   util <- health (used by app and the rooms above it, and kube-emu)
UTIL_SRC := $(wildcard util/*.c)
DIFF_SRC := $(wildcard diff/*.c)
HEALTH_SRC := $(wildcard health/*.c)
RENDER_SRC := $(wildcard renderers/*.c)
KUBE_SRC := $(wildcard kube/*.c)
SOURCE_SRC := $(wildcard source/*.c)
APP_SRC := $(wildcard app/*.c)
CONTROLLER_SRC := $(wildcard controller/*.c)
# The browser view (controller/ui/): its files as C arrays in a generated
# source of libcontroller, so that syncd reads no file to serve them.
UI_FILES := $(wildcard controller/ui/*.html controller/ui/*.js \
	controller/ui/*.css)
UI_GEN := $(BUILD)/gen/ui_assets.c
# The program's own code (commands, option groups, status output), an
# archive too so that its unit tests can link it.
SYNCD_SRC := $(filter-out syncd/main.c,$(wildcard syncd/*.c))
# The API emulator (a program of its own); its unit tests in tests/kube-emu.
EMU_SRC := $(filter-out kube-emu/main.c,$(wildcard kube-emu/*.c))
EMU_TESTS := $(wildcard tests/kube-emu/*.c)

# Quiet by default; `make V=1` shows the commands.
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2);
endif

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIBUTIL := $(BUILD)/libutil.a
LIBDIFF := $(BUILD)/libdiff.a
LIBHEALTH := $(BUILD)/libhealth.a
LIBRENDER := $(BUILD)/librender.a
LIBKUBE := $(BUILD)/libkube.a
LIBSOURCE := $(BUILD)/libsource.a
LIBAPP := $(BUILD)/libapp.a
LIBCONTROLLER := $(BUILD)/libcontroller.a
LIBSYNCD := $(BUILD)/libsyncd.a
# In link order: a library before the ones it uses.
LIBS_ALL := $(LIBSYNCD) $(LIBCONTROLLER) $(LIBAPP) $(LIBSOURCE) $(LIBKUBE) \
	$(LIBRENDER) $(LIBDIFF) $(LIBHEALTH) $(LIBUTIL)

SYNCD := $(BUILD)/syncd
KUBE_EMU := $(BUILD)/kube-emu

# One Criterion binary per module folder under tests/unit/.
UNIT_MODULES := $(notdir $(patsubst %/,%,$(dir $(wildcard tests/unit/*/*.c))))
UNIT_MODULES := $(sort $(UNIT_MODULES))
UNIT_BINS := $(foreach m,$(UNIT_MODULES),$(BUILD)/tests/unit-$(m))
TEST_HELPERS := $(wildcard tests/helpers/*.c)
EMU_UNIT := $(BUILD)/tests/unit-kube-emu
UNIT_BINS += $(EMU_UNIT)

.PHONY: all test check valgrind deps bench demo clean format help unit k8s check-banned \
	check-deps fuzz fuzz-build \
	cluster soak
.DEFAULT_GOAL := all

all: $(SYNCD) $(KUBE_EMU)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(LIBUTIL): $(call obj,$(UTIL_SRC))
$(LIBDIFF): $(call obj,$(DIFF_SRC))
$(LIBHEALTH): $(call obj,$(HEALTH_SRC))
$(LIBRENDER): $(call obj,$(RENDER_SRC))
$(LIBKUBE): $(call obj,$(KUBE_SRC))
$(LIBSOURCE): $(call obj,$(SOURCE_SRC))
$(LIBAPP): $(call obj,$(APP_SRC))
$(LIBCONTROLLER): $(call obj,$(CONTROLLER_SRC) $(UI_GEN))
$(LIBSYNCD): $(call obj,$(SYNCD_SRC))
$(LIBS_ALL):
	@mkdir -p $(dir $@)
	@rm -f $@
	$(call say,AR,$@)$(AR) rcs $@ $^

$(UI_GEN): controller/ui/embed.sh $(UI_FILES)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)sh controller/ui/embed.sh $(UI_FILES) >$@.tmp && \
		mv $@.tmp $@

$(SYNCD): $(call obj,syncd/main.c) $(LIBS_ALL)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(call obj,$(EMU_SRC) kube-emu/main.c $(EMU_TESTS)): ALL_CFLAGS += $(EMU_CFLAGS)

$(KUBE_EMU): $(call obj,$(EMU_SRC) kube-emu/main.c) $(LIBRENDER) \
		$(LIBDIFF) $(LIBHEALTH) $(LIBUTIL)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) $(EMU_LIBS)

$(EMU_UNIT): $(call obj,$(EMU_SRC) $(EMU_TESTS) tests/helpers/cases.c) $(LIBRENDER) $(LIBDIFF) \
		$(LIBHEALTH) $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS) \
		$(EMU_LIBS) $(TEST_LIBS)

define unit_rule
$(BUILD)/tests/unit-$(1): $(call obj,$(wildcard tests/unit/$(1)/*.c) $(TEST_HELPERS)) $(LIBS_ALL)
	@mkdir -p $$(dir $$@)
	$$(call say,LINK,$$@)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(LIB_LIBS) $$(TEST_LIBS)
endef
$(foreach m,$(UNIT_MODULES),$(eval $(call unit_rule,$(m))))

unit: $(UNIT_BINS)

# The real-Kubernetes test tools (tests/k8s): built from their pinned Go
# modules when Go is installed; rebuilt only when a module file changes
# (Go's own caches make even that quick). Always in build/k8s, whatever
# $(BUILD) is: the sanitizer build uses the same binaries.
K8S_STAMP := build/k8s/.built
K8S_INPUTS := tests/k8s/build.sh tests/k8s/go.mod tests/k8s/go.sum \
	$(wildcard tests/k8s/tools/*/go.mod tests/k8s/tools/*/go.sum \
		tests/k8s/tools/*/*.go)
HAVE_GO := $(shell command -v go >/dev/null 2>&1 && echo yes)
HAVE_CLANG := $(shell command -v clang >/dev/null 2>&1 && echo yes)

k8s: $(K8S_STAMP)

$(K8S_STAMP): $(K8S_INPUTS)
	@tests/k8s/build.sh build/k8s/bin
	@touch $@

cluster: $(K8S_STAMP)
	@tests/k8s/cluster.sh

# The fault soak (tests/soak/soak.sh, root for namespaces and tmpfs); a
# 2-minute version runs in the real tier of `make test` (tests/real/soak.sh).
SOAK_SECONDS ?= 600
soak: $(SYNCD) $(K8S_STAMP)
	@BUILD=$(BUILD) bash tests/soak/soak.sh $(SOAK_SECONDS)

# Everything the test driver runs: unit binaries, the CLI, integration
# scripts, the fuzz targets when clang is installed (always in build-fuzz/,
# built with clang whatever $(BUILD) and CC are), and the real tier when Go
# can build the control plane. TEST_PHASES: the phases of tests/run.sh.
TEST_PHASES ?= unit integration fuzz real
test: check-banned check-deps $(SYNCD) $(KUBE_EMU) $(UNIT_BINS) \
		$(if $(HAVE_GO),$(K8S_STAMP)) \
		$(if $(and $(HAVE_CLANG),$(filter fuzz,$(TEST_PHASES))),fuzz-build)
	@BUILD=$(BUILD) FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) \
		tests/run.sh $(TEST_PHASES)

# Every product source file ends its includes with util/banned.h, so a
# banned function (strcpy, sprintf, atoi, ...) fails to compile.
BANNED_SRC := $(wildcard util/*.c diff/*.c health/*.c renderers/*.c kube/*.c \
	source/*.c app/*.c controller/*.c syncd/*.c kube-emu/*.c)
# The rooms' one-way doors: a folder includes only its own headers and the
# public header of the rooms below it (tests/check-deps.sh); the self-test
# shows the check failing on planted wrong includes.
check-deps:
	@tests/check-deps.sh
	@tests/check-deps.sh --self-test

check-banned:
	@bad=$$(for f in $(BANNED_SRC); do \
		grep -q '^#include' $$f || continue; \
		grep '^#include' $$f | tail -n 1 | \
			grep -q '^#include "util/banned.h"' || echo $$f; \
	done); \
	if [ -n "$$bad" ]; then \
		echo "check-banned: util/banned.h is not the last include of:" $$bad; \
		exit 1; \
	fi

# Not the fuzz phase: the fuzz targets run under the sanitizers anyway.
check:
	$(MAKE) SANITIZE=address,undefined TEST_PHASES="unit integration real" test

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang under
# ASan+UBSan into build-fuzz/fuzz/ (a build directory of their own: its
# objects are clang's, never shared with $(BUILD)), each then run for
# FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus/NAME; new inputs
# go to a scratch copy, never into the tree). A crash fails the target;
# keep its input as a seed when it is fixed. `make test` builds them
# too (fuzz-build) and runs each for FUZZ_TEST_SECONDS.
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 30
FUZZ_TEST_SECONDS ?= 15

fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# BUILD, CC and FUZZ on the sub-make's command line: they win over the
# caller's (BUILD=build-h1 make test still builds the fuzz tree apart).
fuzz-build:
	@command -v clang >/dev/null || { echo "make fuzz needs clang and \
its libFuzzer runtime (apt-get install $(FUZZ_DEB_PACKAGES))"; exit 2; }
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang FUZZ=1 \
		SANITIZE=address,undefined \
		$(foreach t,$(FUZZ_TARGETS),build-fuzz/fuzz/$(t))

# A group: the emulator's objects (fuzz_patch) use libraries listed before them.
$(BUILD)/fuzz/%: $(call obj,tests/fuzz/%.c) $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ \
		-Wl,--start-group $^ -Wl,--end-group $(LIB_LIBS) $(FUZZ_LIBS)

# fuzz_patch drives kube-emu's handler.
$(BUILD)/fuzz/fuzz_patch: $(call obj,$(EMU_SRC))
$(BUILD)/fuzz/fuzz_patch: FUZZ_LIBS = $(EMU_LIBS)
$(call obj,tests/fuzz/fuzz_patch.c): ALL_CFLAGS += $(EMU_CFLAGS)

valgrind: $(SYNCD) $(KUBE_EMU) $(UNIT_BINS)
	@BUILD=$(BUILD) VALGRIND=1 tests/run.sh unit integration

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then \
		echo "deps: all Debian packages are installed"; \
	elif [ "$$(id -u)" = 0 ]; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y --no-install-recommends $$missing || \
		{ apt-get update && apt-get install -y --no-install-recommends $$missing; }; \
	else \
		echo "apt-get install" $$missing; \
	fi

$(BUILD)/bench/%: $(call obj,bench/%.c) $(LIBS_ALL)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)

# The emulator benchmark is a libcurl client with two threads.
$(BUILD)/bench/emu: ALL_LDFLAGS += -pthread

bench: $(SYNCD) $(KUBE_EMU) $(BUILD)/bench/diff $(BUILD)/bench/emu \
		$(BUILD)/bench/git-poll
	@BUILD=$(BUILD) bench/render.sh
	@echo
	@echo "== diff: 10,000 objects in memory, one core"
	@taskset -c 0 $(BUILD)/bench/diff
	@echo
	@echo "== kube-emu: 10,000 ConfigMaps over HTTP on loopback"
	@BUILD=$(BUILD) bench/kube-emu.sh
	@echo
	@echo "== git: polling an unchanged repository (file://, smart HTTP)"
	@BUILD=$(BUILD) bench/git-poll.sh
	@echo
	@echo "== cluster: syncd diff/sync of 10,000 objects vs kubectl diff"
	@BUILD=$(BUILD) bench/cluster.sh
	@echo
	@echo "== controller: syncd run keeping 100 apps, 10,000 objects converged"
	@BUILD=$(BUILD) bench/controller.sh
	@echo
	@echo "== real: 10,000 objects on the real kube-apiserver vs kubectl diff"
	@if [ -x build/k8s/bin/kube-apiserver ]; then \
		BUILD=$(BUILD) bench/real.sh; \
	else \
		echo "skipped: the real control plane is not built (make k8s)"; \
	fi
	@echo
	@echo "== peer: syncd and Flux keeping 100 apps x 100 objects converged"
	@if [ -x build/k8s/bin/kube-apiserver ] && command -v go >/dev/null; then \
		BUILD=$(BUILD) bench/peer-flux.sh; \
	else \
		echo "skipped: needs the real control plane (make k8s) and Go for Flux"; \
	fi

# The main job: syncd run keeping examples/guestbook converged on a local
# kube-emu, narrated step by step (examples/demo.sh); exit 0 only when
# every step was observed.
demo: $(SYNCD) $(KUBE_EMU)
	@bash examples/demo.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san build-fuzz

help:
	@sed -n '3,/^#$$/{/^#$$/d;s/^# \{0,1\}//p;}' Makefile

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
