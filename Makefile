# trainplane - build, run, test, bench.
#
#   make            build build/trainplane-server
#   make run        install what is missing, build, start on embedded PostgreSQL
#   make test       the whole suite (unit, integration, interop, openapi lint)
#   make test SANITIZE=1   the same under AddressSanitizer + UBSan (build/san/)
#   make bench      throughput figures as ratios against same-run baselines
#   make fuzz       fuzz every libFuzzer target (tools/fuzz.sh), FUZZ_SECONDS=600 each
#   make soak       kill -9 the server during creates for minutes: 0 acknowledged lost (SOAK_SECONDS=180)

SHELL    := /bin/bash
CC       ?= cc
PKGS     := jansson yaml-0.1 libpq libcurl libssl libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

BUILD    := build
OPT      := -O2
ifneq ($(SANITIZE),)
BUILD    := build/san
OPT      := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDSAN    := -fsanitize=address,undefined
endif

CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Werror -Wshadow \
            -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers \
            -MMD -MP -Ilib -Ispec -Istore -Ischeduler -Iserver -Iagent $(PKG_CFLAGS)
LDFLAGS  += $(LDSAN)
LDLIBS   += $(PKG_LIBS) -lpthread -lm
# libpq stays inside store/: server/, scheduler/ and cli/ are compiled without
# its headers (store.h has no libpq type; store/store_pg.h is store/'s own).
$(BUILD)/server/%.o $(BUILD)/scheduler/%.o $(BUILD)/cli/%.o: \
	PKG_CFLAGS := $(shell pkg-config --cflags $(filter-out libpq,$(PKGS)) 2>/dev/null)

LIB_SRC    := $(wildcard lib/*.c) $(wildcard spec/*.c) $(wildcard store/*.c) $(wildcard scheduler/*.c) $(filter-out server/main.c,$(wildcard server/*.c))
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema_sql.o $(BUILD)/gen/catalog_builtin.o
SERVER_OBJ := $(BUILD)/server/main.o
AGENT_SRC  := $(filter-out agent/main.c,$(wildcard agent/*.c))
AGENT_OBJ  := $(AGENT_SRC:%.c=$(BUILD)/%.o)
CLI_SRC    := $(filter-out cli/main.c,$(wildcard cli/*.c))
CLI_OBJ    := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

SERVER := $(BUILD)/trainplane-server
AGENT  := $(BUILD)/trainplane-agent
CLI    := $(BUILD)/trainplane

.PHONY: all deps run test test-unit test-integration lint-openapi bench fuzz fuzz-smoke soak clean node-deps
all: $(SERVER) $(if $(wildcard agent/main.c),$(AGENT)) $(if $(wildcard cli/main.c),$(CLI))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/gen/schema_sql.c: $(sort $(wildcard schema/*.sql)) tools/embed_sql.sh
	@mkdir -p $(dir $@)
	sh tools/embed_sql.sh $(sort $(wildcard schema/*.sql)) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/schema_sql.o: $(BUILD)/gen/schema_sql.c
	$(CC) $(CFLAGS) -c -o $@ $<

# The default catalog, compiled in: the server needs no file to start.
$(BUILD)/gen/catalog_builtin.c: deploy/catalog.yaml tools/embed_text.sh
	@mkdir -p $(dir $@)
	sh tools/embed_text.sh catalog_builtin_yaml deploy/catalog.yaml > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/catalog_builtin.o: $(BUILD)/gen/catalog_builtin.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libtrainplane.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libagent.a: $(AGENT_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libcli.a: $(CLI_OBJ)
	rm -f $@ && ar rcs $@ $^

$(CLI): $(BUILD)/cli/main.o $(BUILD)/libcli.a $(BUILD)/libtrainplane.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SERVER): $(SERVER_OBJ) $(BUILD)/libtrainplane.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(AGENT): $(BUILD)/agent/main.o $(BUILD)/libagent.a $(BUILD)/libtrainplane.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libagent.a $(BUILD)/libcli.a $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iagent -Icli $(LDFLAGS) -o $@ $< $(BUILD)/libagent.a $(BUILD)/libcli.a $(BUILD)/libtrainplane.a $(LDLIBS) -lcmocka

# --- set-up -----------------------------------------------------------------
# Debian packages, by what needs them. Each command installs only its lists:
# make run DEB_RUN; make test DEB_RUN + DEB_TEST (what .ci/run gets on a fresh
# machine); make bench DEB_RUN + DEB_BENCH; make fuzz DEB_RUN + DEB_FUZZ;
# make soak DEB_RUN + DEB_SOAK. Root installs what is missing; anyone else
# gets the apt-get line to run. `make deps` alone installs every list.
#
# Building and running: the compiler, the libraries the programs link,
# PostgreSQL (the embedded database), curl (tools/run.sh waits on /readyz).
DEB_RUN   := build-essential pkg-config libjansson-dev libyaml-dev libpq-dev \
             libcurl4-openssl-dev libssl-dev postgresql curl
# Fuzzing: clang with libFuzzer, ASan and UBSan (tools/fuzz.sh).
DEB_FUZZ  := clang libclang-rt-14-dev
# The suite: cmocka (unit); node and npm (integration tests, Google clients,
# openapi lint); podman and busybox-static (real containers from an image
# made offline); prometheus/promtool, yamllint and systemd-analyze (metrics
# and deploy tests); openssl (test CAs, tokens); wrk (SIGHUP under load);
# procps (pgrep); python3 (test_agent_podman's fake docker daemon); the
# fuzzing set (make test replays every fuzz corpus).
DEB_TEST  := libcmocka-dev nodejs npm podman busybox-static prometheus yamllint systemd \
             openssl wrk procps python3 $(DEB_FUZZ)
# Benchmarks: wrk; libmicrohttpd-dev (the static-reply baseline server);
# node (1,000 simulated agents); python3 (latency percentiles).
DEB_BENCH := wrk libmicrohttpd-dev nodejs python3
# make soak: its driver is a node script.
DEB_SOAK  := nodejs

DEB_FOR_run   := $(DEB_RUN)
DEB_FOR_test  := $(DEB_RUN) $(DEB_TEST)
DEB_FOR_bench := $(DEB_RUN) $(DEB_BENCH)
DEB_FOR_fuzz  := $(DEB_RUN) $(DEB_FUZZ)
DEB_FOR_soak  := $(DEB_RUN) $(DEB_SOAK)
# `deps` (what run, test, bench, fuzz and soak depend on) installs the lists
# of the commands given on the command line, or every list when none is.
DEB_GOALS := $(filter run test bench fuzz soak,$(MAKECMDGOALS))
DEB_PKGS  := $(sort $(foreach g,$(or $(DEB_GOALS),run test bench fuzz soak),$(DEB_FOR_$(g))))

# Installs the Debian packages $(1) that are missing. nodejs, npm and python3
# also count as present when their command is on PATH (installed otherwise).
define deb_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' && continue; \
	  case $$p in nodejs) cmd=node ;; npm|python3) cmd=$$p ;; *) cmd= ;; esac; \
	  [ -n "$$cmd" ] && command -v $$cmd >/dev/null 2>&1 && continue; \
	  missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
endef

.PHONY: deps-run deps-test deps-bench deps-fuzz deps-soak
deps:
	$(call deb_install,$(DEB_PKGS))
deps-run deps-test deps-bench deps-fuzz deps-soak: deps-%:
	$(call deb_install,$(DEB_FOR_$*))

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
node-deps: node_modules/.package-lock.json

# --- run ----------------------------------------------------------------------
run: deps
	@$(MAKE) --no-print-directory all
	./tools/run.sh $(SERVER) $(AGENT)

# --- tests --------------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BIN) node-deps
	@mkdir -p $(BUILD)
	@set -o pipefail; $(MAKE) --no-print-directory fuzz-smoke test-unit test-integration lint-openapi 2>&1 | \
		tee $(BUILD)/test.log
	@tools/test-summary.sh $(BUILD)/test.log

test-unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do echo "== $$t"; $$t || fail=1; done; exit $$fail

test-integration: $(SERVER) $(if $(wildcard cli/main.c),$(CLI)) node-deps
	TRAINPLANE_SERVER_BIN=$(abspath $(SERVER)) TRAINPLANE_AGENT_BIN=$(abspath $(AGENT)) TRAINPLANE_CLI_BIN=$(abspath $(CLI)) TRAINPLANE_SANITIZED=$(if $(SANITIZE),1,) \
	  node --test --test-concurrency=1 tests/integration/

lint-openapi: node-deps
	npx --no-install redocly lint --config tests/redocly.yaml openapi.yaml

# The baseline of make bench: a static reply from libmicrohttpd.
$(BUILD)/bench/static_server: bench/static_server.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags libmicrohttpd) -o $@ $< \
		$(shell pkg-config --libs libmicrohttpd) $(LDLIBS)

$(BUILD)/bench/bench_validate: tools/bench_validate.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

$(BUILD)/bench/bench_placement: bench/bench_placement.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench/static_server $(BUILD)/bench/bench_validate \
		$(BUILD)/bench/bench_placement
	./tools/bench.sh $(SERVER)

FUZZ_SECONDS ?= 600
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) tools/fuzz.sh run
# Every fuzz target built and its seed corpus replayed once (seconds); make test runs it.
fuzz-smoke:
	tools/fuzz.sh smoke

# Outside `make test`: minutes of creates while the server is SIGKILLed and
# restarted again and again (PostgreSQL crashes once); prints the figures.
soak: deps
	@$(MAKE) --no-print-directory $(SERVER)
	TRAINPLANE_SERVER_BIN=$(abspath $(SERVER)) TRAINPLANE_SANITIZED=$(if $(SANITIZE),1,) \
	  node tests/soak/soak.mjs

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
