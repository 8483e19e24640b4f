# trainplane - build, run, test, bench.
#
#   make            build build/trainplane-server
#   make run        install what is missing, build, start on embedded PostgreSQL
#   make emulator   the same in emulator mode: a simulated fleet, a fresh database (docs/emulator.md)
#   make run-slurm  the same in front of a private Slurm cluster serving us-central1 (root; docs/slurm.md)
#   make test       the whole suite (unit, integration, interop, openapi lint)
#   make test SANITIZE=1   the same under AddressSanitizer + UBSan (build/san/)
#   make test-tsan  the connection churn test against a ThreadSanitizer server (build/tsan/)
#   make test-gcloud-format  every gcloud 528 case: the CLI-against-gcloud format and hp-tuning files (make test
#                   runs seven of their runs), the seeds' and storage's (make test leaves four cases out)
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
ifneq ($(TSAN),)
$(error SANITIZE=1 and TSAN=1 do not go together: ThreadSanitizer excludes AddressSanitizer)
endif
BUILD    := build/san
OPT      := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDSAN    := -fsanitize=address,undefined
else ifneq ($(TSAN),)
BUILD    := build/tsan
OPT      := -O1 -fno-omit-frame-pointer -fsanitize=thread
LDSAN    := -fsanitize=thread
endif
# The server built with ASan + UBSan, whatever this mode: the connection
# churn test (tests/integration/http_churn.test.mjs) runs against it in
# every make test. Under SANITIZE=1 it is $(SERVER) itself.
SAN_SERVER := build/san/trainplane-server

# The warnings git's DEVELOPER=1 adds (-Wvla -Wwrite-strings -Wformat-security)
# are on too.
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Werror -Wshadow \
            -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers \
            -Wvla -Wwrite-strings -Wformat-security -MMD -MP
LDFLAGS  += $(LDSAN)
LDLIBS   += $(PKG_LIBS) -lpthread -lm

# The layers, enforced by the compiler: each folder is compiled with the
# include paths of what it may use (docs/development.md, "Layout"), so an
# include of a folder above it fails to build ("fatal error: x.h: No such
# file or directory"). libpq's headers are store/'s alone.
PKG_CFLAGS_NOPQ := $(shell pkg-config --cflags $(filter-out libpq,$(PKGS)) 2>/dev/null)
INC_lib       := -Ilib $(PKG_CFLAGS_NOPQ)
INC_httpd     := -Ilib -Ihttpd $(PKG_CFLAGS_NOPQ)
INC_spec      := -Ilib -Ispec $(PKG_CFLAGS_NOPQ)
INC_store     := -Ilib -Ispec -Istore $(PKG_CFLAGS)
INC_scheduler := -Ilib -Ispec -Istore -Ischeduler $(PKG_CFLAGS_NOPQ)
INC_server    := -Ilib -Ihttpd -Ispec -Istore -Ischeduler -Iserver $(PKG_CFLAGS_NOPQ)
INC_agent     := -Ilib -Iagent $(PKG_CFLAGS_NOPQ)
INC_cli       := -Ilib -Ispec -Icli $(PKG_CFLAGS_NOPQ)
# Tests, benches and the generated files see everything.
INC_all       := -Ilib -Ihttpd -Ispec -Istore -Ischeduler -Iserver $(PKG_CFLAGS)
$(foreach d,lib httpd spec store scheduler server agent cli,$(eval $(BUILD)/$(d)/%.o: INC := $(INC_$(d))))
$(BUILD)/gen/catalog_builtin.o: INC := $(INC_spec)
$(BUILD)/gen/schema_sql.o: INC := $(INC_store)
$(BUILD)/gen/console_assets.o: INC := $(INC_server)

LIB_SRC    := $(wildcard lib/*.c) $(wildcard httpd/*.c) $(wildcard spec/*.c) $(wildcard store/*.c) $(wildcard scheduler/*.c) $(filter-out server/main.c,$(wildcard server/*.c))
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema_sql.o $(BUILD)/gen/catalog_builtin.o \
              $(BUILD)/gen/console_assets.o
SERVER_OBJ := $(BUILD)/server/main.o
AGENT_SRC  := $(filter-out agent/main.c,$(wildcard agent/*.c))
AGENT_OBJ  := $(AGENT_SRC:%.c=$(BUILD)/%.o)
CLI_SRC    := $(filter-out cli/main.c,$(wildcard cli/*.c))
CLI_OBJ    := $(CLI_SRC:%.c=$(BUILD)/%.o)
# The test tiers, by where a driver lives (tests/README.md): unit drivers
# in tests/unit/, C drivers of the integration tier (PostgreSQL, podman) in
# tests/integration/c/; both build into $(BUILD)/tests/.
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
ITEST_SRC  := $(wildcard tests/integration/c/test_*.c)
ITEST_BIN  := $(ITEST_SRC:tests/integration/c/%.c=$(BUILD)/tests/%)

SERVER := $(BUILD)/trainplane-server
AGENT  := $(BUILD)/trainplane-agent
CLI    := $(BUILD)/trainplane

.PHONY: all deps run run-slurm emulator test test-unit test-integration test-integration-js lint-openapi format-check sql-check bench fuzz fuzz-smoke soak clean node-deps \
	san-server test-tsan test-gcloud-format
all: $(SERVER) $(if $(wildcard agent/main.c),$(AGENT)) $(if $(wildcard cli/main.c),$(CLI))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

$(BUILD)/gen/schema_sql.c: $(sort $(wildcard schema/*.sql)) tools/embed_sql.sh
	@mkdir -p $(dir $@)
	sh tools/embed_sql.sh $(sort $(wildcard schema/*.sql)) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/schema_sql.o: $(BUILD)/gen/schema_sql.c
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

# The default catalog, compiled in: the server needs no file to start.
$(BUILD)/gen/catalog_builtin.c: deploy/catalog.yaml tools/embed_text.sh
	@mkdir -p $(dir $@)
	sh tools/embed_text.sh catalog_builtin_yaml deploy/catalog.yaml > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/catalog_builtin.o: $(BUILD)/gen/catalog_builtin.c
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

# The web console's files, compiled in (server/console.c serves them).
CONSOLE_FILES := $(sort $(wildcard console/*))
$(BUILD)/gen/console_assets.c: $(CONSOLE_FILES) tools/embed_console.sh
	@mkdir -p $(dir $@)
	sh tools/embed_console.sh $(CONSOLE_FILES) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/console_assets.o: $(BUILD)/gen/console_assets.c
	$(CC) $(CFLAGS) $(INC) -c -o $@ $<

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

# $(SAN_SERVER), by a make of its own in the SANITIZE=1 mode (its objects
# are build/san/'s); beside the rest of a parallel build (the job server is
# shared). -s: no "is up to date" when it is.
ifeq ($(BUILD),build/san)
san-server: $(SERVER)
else
san-server:
	@$(MAKE) -s --no-print-directory SANITIZE=1 TSAN= $(SAN_SERVER)
endif

.SECONDEXPANSION:
# One archive per folder for the unit drivers (the binaries link
# libtrainplane.a): the linker takes from an archive only what is reached.
# The generated objects go with the folder whose header declares them.
# (No '%' in the prerequisites: a pattern rule puts the stem there.)
GEN_OF_spec  := $(BUILD)/gen/catalog_builtin.o
GEN_OF_store := $(BUILD)/gen/schema_sql.o
GEN_OF_server := $(BUILD)/gen/console_assets.o
$(BUILD)/lib%.a: $$(addsuffix .o,$$(addprefix $(BUILD)/,$$(basename $$(filter-out $$*/main.c,$$(wildcard $$*/*.c))))) \
		$$(GEN_OF_$$*)
	rm -f $@ && ar rcs $@ $^

# Unit drivers: each links lib/ and what its test_x_LINK names: folders
# (their archive) or single objects (folder/file.o); test_x_WRAP names the
# collaborators it replaces with mocks of its own (-Wl,--wrap=f: its
# __wrap_f is called instead). Nothing else: a unit driver that reaches
# further does not link. No line: lib/ only.
test_agent_config_LINK   := agent
test_agent_gpu_LINK      := agent
test_agent_lease_LINK    := agent
test_agent_packages_LINK := agent
test_agent_process_LINK  := agent
test_agent_simulate_LINK := agent
test_agent_sync_LINK     := agent
test_agent_transition_LINK := agent
test_agent_transition_WRAP := log_write
test_auth_LINK           := server/auth.o
test_auth_WRAP           := store_iam_get api_slurm_pilot_token api_slurm_pilot_check
test_cli_LINK            := cli spec
test_cli_format_LINK     := cli spec
test_catalog_LINK        := spec
test_catalog_sources_LINK := spec
test_fields_LINK         := server/fields.o
test_http_parse_LINK     := httpd
test_httpd_LINK          := httpd
test_job_plan_LINK       := spec
test_job_state_LINK      := spec
test_list_filter_LINK    := spec
test_metric_file_LINK    := agent
test_metrics_LINK        := server/api_metrics.o spec
test_metrics_WRAP        := reply_text job_cache_stats sched_is_leader store_metrics_snapshot \
                            store_pipe_stats store_rc_name store_stats slurm_backends_metrics
test_paging_LINK         := server/paging.o
test_policy_LINK         := scheduler/policy.o scheduler/placement.o spec
test_quota_LINK          := spec
test_placement_LINK      := scheduler spec
test_placement_index_LINK := scheduler spec
test_replica_env_LINK    := scheduler spec
test_schema_LINK         := spec server/api_error.o
test_sim_rules_LINK      := spec
test_sim_fleet_LINK      := scheduler/sim_fleet.o spec
test_sim_fleet_WRAP      := store_node_register_on store_node_sync_on store_node_versions_of \
                            store_rc_name
test_slurm_LINK          := scheduler store spec
test_store_filter_LINK   := store spec
test_store_filter_WRAP   := store_acquire store_release store_exec_sql
test_tuning_LINK         := scheduler/tuning.o scheduler/tuning_gp.o
test_study_LINK          := scheduler/study.o scheduler/tuning.o scheduler/tuning_gp.o spec
test_study_WRAP          := store_study_active store_study_add_trials store_study_update \
                            store_study_stop_trial store_study_trials
test_validate_LINK       := spec

unit_link = $(foreach x,$($(1)_LINK),$(if $(filter %.o,$(x)),$(BUILD)/$(x),$(BUILD)/lib$(x).a)) \
	$(BUILD)/liblib.a
comma := ,

$(UNIT_BIN): $(BUILD)/tests/%: tests/unit/%.c $$(call unit_link,$$*)
	@mkdir -p $(BUILD)/tests/unit
	$(CC) $(CFLAGS) $(INC_all) -MF $(BUILD)/tests/unit/$*.d -Itests/unit -Iagent -Icli $(LDFLAGS) -o $@ $< -Wl,--start-group $(call unit_link,$*) \
		-Wl,--end-group $(addprefix -Wl$(comma)--wrap=,$($*_WRAP)) -Wl,--as-needed $(LDLIBS) -lcmocka

# C drivers of the integration tier test parts together: they link everything.
$(ITEST_BIN): $(BUILD)/tests/%: tests/integration/c/%.c $(BUILD)/libagent.a $(BUILD)/libcli.a \
		$(BUILD)/libtrainplane.a
	@mkdir -p $(BUILD)/tests/integration
	$(CC) $(CFLAGS) $(INC_all) -MF $(BUILD)/tests/integration/$*.d -Itests/unit -Iagent -Icli $(LDFLAGS) -o $@ $< \
		$(BUILD)/libagent.a $(BUILD)/libcli.a \
		$(BUILD)/libtrainplane.a $(LDLIBS) -lcmocka

# --- set-up -----------------------------------------------------------------
# Debian packages, by what needs them. Each command installs only its lists:
# make run DEB_RUN; make run-slurm DEB_RUN + DEB_SLURM; make test DEB_RUN +
# DEB_TEST (what .ci/run gets on a fresh machine); make bench DEB_RUN + DEB_BENCH; make fuzz DEB_RUN + DEB_FUZZ;
# make soak DEB_RUN + DEB_SOAK. Root installs what is missing; anyone else
# gets the apt-get line to run. `make deps` alone installs every list.
#
# Building and running: the compiler, the libraries the programs link,
# PostgreSQL (the embedded database), curl (tools/run.sh waits on /readyz),
# and the agents' default Python for trainer packages (/usr/bin/python3 with
# pip, venv, and setuptools + wheel to build sdists without build isolation:
# agent/README.md, "Trainer packages").
DEB_RUN   := build-essential pkg-config libjansson-dev libyaml-dev libpq-dev \
             libcurl4-openssl-dev libssl-dev postgresql curl \
             python3 python3-pip python3-setuptools python3-wheel python3-venv
# Slurm (make run-slurm, the Slurm backend's tests and bench): the packages
# of tools/slurm-cluster.sh's private cluster. Their daemons are kept from
# starting as system services when installed (that cluster runs its own).
DEB_SLURM := munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin
# Fuzzing: clang with libFuzzer, ASan and UBSan (tools/fuzz.sh).
DEB_FUZZ  := clang libclang-rt-14-dev
# The suite: cmocka (unit); node and npm (integration tests, Google clients,
# openapi lint); podman and busybox-static (real containers from an image
# made offline); prometheus/promtool, yamllint and systemd-analyze (metrics,
# deploy and observability tests: the alerting rules' unit tests); openssl (test CAs, tokens); wrk (SIGHUP under load);
# procps (pgrep); python3 (test_agent_podman_escape's fake docker daemon);
# python3-googleapi (Python's discovery-based Google client, 1.7.12:
# python_client.test.mjs runs docs/api.md's Python block with it);
# chromium (the console's browser tests, through puppeteer-core); the
# fuzzing set (make test replays every fuzz corpus); the Slurm set (make
# run-slurm's test, tests/integration/run_slurm.test.mjs, and slurm.test.mjs).
DEB_TEST  := libcmocka-dev nodejs npm podman busybox-static prometheus yamllint systemd \
             openssl wrk procps python3 python3-googleapi chromium $(DEB_FUZZ) $(DEB_SLURM)
# Benchmarks: wrk; libmicrohttpd-dev (the static-reply baseline server);
# node (1,000 simulated agents); python3 (latency percentiles); the Slurm
# set (bench/slurm.mjs).
DEB_BENCH := wrk libmicrohttpd-dev nodejs python3 $(DEB_SLURM)
# make soak: its driver is a node script.
DEB_SOAK  := nodejs

DEB_FOR_run   := $(DEB_RUN)
DEB_FOR_emulator := $(DEB_RUN)
DEB_FOR_run-slurm := $(DEB_RUN) $(DEB_SLURM)
DEB_FOR_test  := $(DEB_RUN) $(DEB_TEST)
DEB_FOR_bench := $(DEB_RUN) $(DEB_BENCH)
DEB_FOR_fuzz  := $(DEB_RUN) $(DEB_FUZZ)
DEB_FOR_soak  := $(DEB_RUN) $(DEB_SOAK)
# make test-tsan: the build, node, openssl (the churn test's certificate).
DEB_FOR_test-tsan := $(DEB_RUN) nodejs openssl
# `deps` (what run, test, test-tsan, bench, fuzz and soak depend on) installs
# the lists of the commands given on the command line, or every list when
# none is.
DEB_GOALS := $(filter run run-slurm emulator test test-tsan bench fuzz soak,$(MAKECMDGOALS))
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
	    prc=; case " $$missing " in *" slurm"*|*" munge "*) \
	      [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && \
	        chmod 0755 /usr/sbin/policy-rc.d && prc=1; } ;; esac; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; rc=$$?; \
	    [ -n "$$prc" ] && rm -f /usr/sbin/policy-rc.d; [ $$rc = 0 ] || exit $$rc; \
	  else \
	    echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
endef

.PHONY: deps-run deps-run-slurm deps-test deps-bench deps-fuzz deps-soak
deps:
	$(call deb_install,$(DEB_PKGS))
deps-run deps-run-slurm deps-test deps-bench deps-fuzz deps-soak: deps-%:
	$(call deb_install,$(DEB_FOR_$*))

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
node-deps: node_modules/.package-lock.json

# --- run ----------------------------------------------------------------------
# The emulator (docs/emulator.md): a simulated fleet, a fresh database each time.
emulator: deps
	@$(MAKE) --no-print-directory all
	./tools/emulator.sh $(SERVER)

run: deps
	@$(MAKE) --no-print-directory all
	./tools/run.sh $(SERVER) $(AGENT)

# make run in front of a private Slurm (docs/slurm.md, "make run-slurm").
run-slurm: deps
	@$(MAKE) --no-print-directory all
	./tools/run-slurm.sh $(SERVER) $(AGENT)

# --- tests --------------------------------------------------------------------
# make test builds everything (in parallel), then runs every test side by
# side: the integration tier (the node files, TEST_CONCURRENCY at once, and
# the C drivers of tests/integration/c/), the unit drivers, the fuzz smoke
# and the openapi lint, TEST_JOBS at once. Each run's output comes whole
# (make -Otarget) into $(BUILD)/test.log; the summary closes it.
# Both numbers are above the 2 cores on purpose: the tests mostly wait.
TEST_JOBS        ?= 6
TEST_CONCURRENCY ?= 8
NPROC            := $(shell nproc 2>/dev/null || echo 2)
FUZZ_TARGETS     := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
UNIT_RUNS        := $(UNIT_BIN:$(BUILD)/tests/%=run-%)
# The podman drivers run one after another (run-podman-drivers): side by
# side, five podman engines at once crowd the 2 cores, and make test took
# 159-164 s instead of 99-116 s.
PODMAN_BIN       := $(filter $(BUILD)/tests/test_agent_podman_%,$(ITEST_BIN))
ITEST_ONE_RUNS   := $(filter-out $(PODMAN_BIN:$(BUILD)/tests/%=run-%),$(ITEST_BIN:$(BUILD)/tests/%=run-%))
ITEST_RUNS       := $(ITEST_ONE_RUNS) run-podman-drivers
# The integration files, longest first: the runner (tests/integration/run.mjs;
# `node --test` sorts its files by name) starts them in this order, so the
# long ones do not start last and hold up the end.
IT_FILES         := $(wildcard tests/integration/*.test.mjs)
IT_SLOW_NAMES    := storage_gcloud gcloud_seeds slurm fencing access replication cli_hp_tuning scheduler_e2e \
                    replica_identity_restore http_hardening http_churn storage_api emulator_clients share \
                    replica_identity_fresh resilience vertex_restart metrics cli sync_protocol \
                    replica_identity_side_by_side packages replica_identity tuning_resilience \
                    cli_gcloud_format emulator_clock tls orderly_stop deploy log
IT_SLOW          := $(foreach n,$(IT_SLOW_NAMES),$(filter %/$(n).test.mjs,$(IT_FILES)))
IT_ORDER         := $(IT_SLOW) $(filter-out $(IT_SLOW),$(IT_FILES))
TEST_TIMES       := $(abspath $(BUILD)/test-times.txt)
TEST_ENV := TRAINPLANE_SERVER_BIN=$(abspath $(SERVER)) TRAINPLANE_AGENT_BIN=$(abspath $(AGENT)) \
	TRAINPLANE_CLI_BIN=$(abspath $(CLI)) TRAINPLANE_SANITIZED=$(if $(SANITIZE),1,) \
	TRAINPLANE_SAN_SERVER_BIN=$(abspath $(SAN_SERVER)) TRAINPLANE_TEST_TIMES=$(TEST_TIMES)

.PHONY: $(UNIT_RUNS) $(ITEST_RUNS) $(PODMAN_BIN:$(BUILD)/tests/%=run-%) $(FUZZ_TARGETS:%=fuzz-build-%)
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all san-server $(UNIT_BIN) $(ITEST_BIN) node-deps \
		$(FUZZ_TARGETS:%=fuzz-build-%)
	@mkdir -p $(BUILD) && rm -f $(TEST_TIMES)
	@set -o pipefail; rc=0; t0=$$(date +%s); \
	$(MAKE) --no-print-directory -k -j$(TEST_JOBS) -Otarget run-integration-js $(ITEST_RUNS) \
		fuzz-smoke $(UNIT_RUNS) lint-openapi format-check sql-check 2>&1 | tee $(BUILD)/test.log || rc=1; \
	echo "ran in $$(( $$(date +%s) - t0 )) s" >> $(BUILD)/test.log; \
	tools/test-summary.sh $(BUILD)/test.log $(TEST_TIMES) || rc=1; exit $$rc

# One driver's run: its output, then how long it took (also in TEST_TIMES).
$(UNIT_RUNS) $(ITEST_ONE_RUNS) $(PODMAN_BIN:$(BUILD)/tests/%=run-%): run-%: $(BUILD)/tests/%
	@echo "== $<"; t0=$$(date +%s%N); $< ; rc=$$?; \
	ms=$$(( ($$(date +%s%N) - t0) / 1000000 )); echo "== $< exit $$rc, $$ms ms"; \
	printf '%s %d.%d\n' $* $$((ms / 1000)) $$((ms % 1000 / 100)) >> $(TEST_TIMES); exit $$rc

# The podman drivers in turn, each run as above; every one runs even when
# one fails.
run-podman-drivers: $(PODMAN_BIN)
	@rc=0; for d in $(PODMAN_BIN:$(BUILD)/tests/%=run-%); do \
		$(MAKE) --no-print-directory $$d || rc=1; done; exit $$rc

test-unit: $(UNIT_RUNS)

test-integration: test-integration-js $(ITEST_RUNS)

IT_RUN = $(TEST_ENV) node tests/integration/run.mjs --concurrency=$(TEST_CONCURRENCY) $(IT_ORDER)
test-integration-js: $(SERVER) $(if $(wildcard agent/main.c),$(AGENT)) $(if $(wildcard cli/main.c),$(CLI)) \
		san-server node-deps
	$(IT_RUN)

# make test's run of the node files: it has built what they need, and a
# prerequisite with a recipe (san-server's recursive make) let make give
# every job slot to the C drivers and unit drivers first, so the files, the
# longest tier, started some 11 s into the run. Without prerequisites they
# start at once.
.PHONY: run-integration-js
run-integration-js:
	$(IT_RUN)

# The connection churn test against the server built with ThreadSanitizer
# (build/tsan/, TSAN=1), for TSAN_CHURN_SECONDS: a report fails it. Should a
# library that is not ours (libpq, OpenSSL, glibc) ever need a suppression,
# it goes in tests/tsan.supp (used when present), each with its reason; a
# race in our code is fixed, never suppressed.
TSAN_CHURN_SECONDS ?= 60
# Every --format / --filter case against gcloud 528 (make test runs four of
# them: tests/integration/cli_gcloud_format.test.mjs), every gcloud run of
# the hyperparameter tuning commands' (make test runs three: cli_hp_tuning),
# and the gcloud cases make test leaves out because another case of it
# takes their path (gcloud_seeds: a missing module, an exit status;
# storage_gcloud: the submit, which seed 002 makes too, and cat, which
# sends what cp down sends).
test-gcloud-format: all node-deps
	$(TEST_ENV) TRAINPLANE_GCLOUD_FORMAT_FULL=1 node tests/integration/run.mjs --concurrency=4 \
		tests/integration/gcloud_seeds.test.mjs tests/integration/cli_gcloud_format.test.mjs \
		tests/integration/cli_hp_tuning.test.mjs tests/integration/storage_gcloud.test.mjs

test-tsan: deps
	@$(MAKE) --no-print-directory -j$(NPROC) TSAN=1 SANITIZE= build/tsan/trainplane-server
	TRAINPLANE_SAN_SERVER_BIN=$(abspath build/tsan/trainplane-server) TRAINPLANE_SAN_KIND=tsan \
	  CHURN_SECONDS=$(TSAN_CHURN_SECONDS) node --test tests/integration/http_churn.test.mjs

# The tree's format (.editorconfig): tabs, line ends, line lengths.
format-check:
	tools/format-check.sh

# SQL text only in store/ (the compiler keeps libpq there already).
sql-check:
	tools/sql-check.sh

# The package's own bin (npx --no-install ran the same, for 0.6 s more of CPU).
lint-openapi: node-deps
	node_modules/.bin/redocly lint --config tests/redocly.yaml openapi.yaml

# The baseline of make bench: a static reply from libmicrohttpd.
$(BUILD)/bench/static_server: bench/static_server.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_all) $(shell pkg-config --cflags libmicrohttpd) -o $@ $< \
		$(shell pkg-config --libs libmicrohttpd) $(LDLIBS)

$(BUILD)/bench/bench_validate: tools/bench_validate.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_all) -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

# (-Itests/unit: the scan the index replaced, its reference)
$(BUILD)/bench/bench_placement: bench/bench_placement.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_all) -Itests/unit -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

$(BUILD)/bench/bench_policy: bench/bench_policy.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_all) -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

$(BUILD)/bench/bench_tuning: bench/bench_tuning.c $(BUILD)/libtrainplane.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_all) -o $@ $< $(BUILD)/libtrainplane.a $(LDLIBS)

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench/static_server $(BUILD)/bench/bench_validate \
		$(BUILD)/bench/bench_placement $(BUILD)/bench/bench_policy $(BUILD)/bench/bench_tuning
	./tools/bench.sh $(SERVER)

FUZZ_SECONDS ?= 600
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) tools/fuzz.sh run
# Every fuzz target built and its seed corpus replayed once (seconds); make test runs it.
fuzz-smoke:
	tools/fuzz.sh smoke
# One target built (make test builds them side by side before it runs them).
$(FUZZ_TARGETS:%=fuzz-build-%): fuzz-build-%:
	@tools/fuzz.sh build $*

# Outside `make test`: minutes of creates while the server is SIGKILLed and
# restarted again and again (PostgreSQL crashes once); prints the figures.
soak: deps
	@$(MAKE) --no-print-directory $(SERVER)
	TRAINPLANE_SERVER_BIN=$(abspath $(SERVER)) TRAINPLANE_SANITIZED=$(if $(SANITIZE),1,) \
	  node tests/soak/soak.mjs

clean:
	rm -rf build

# The dependency files of what this mode builds (not every *.d under build/:
# a moved or deleted source leaves a stale one that names it; a test driver's
# is kept per tier, as the driver's binary keeps its name when it moves).
DEP_FILES := $(patsubst %.o,%.d,$(LIB_OBJ) $(SERVER_OBJ) $(AGENT_OBJ) $(CLI_OBJ) \
	$(BUILD)/agent/main.o $(BUILD)/cli/main.o) \
	$(UNIT_BIN:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.d) \
	$(ITEST_BIN:$(BUILD)/tests/%=$(BUILD)/tests/integration/%.d) \
	$(addsuffix .d,$(addprefix $(BUILD)/bench/,static_server bench_validate bench_placement bench_policy bench_tuning))
-include $(wildcard $(DEP_FILES))
