#!/bin/sh
# tools/fuzz.sh - libFuzzer targets: build them, replay their corpus, fuzz them.
#
#   tools/fuzz.sh build [TARGET...]   build build/fuzz/fuzz_TARGET (default: every target)
#   tools/fuzz.sh smoke [TARGET...]   build, then run each seed input once (make test does)
#   tools/fuzz.sh run [TARGET...]     build, then fuzz each target for FUZZ_SECONDS
#                                     (default 600), one after another
#   FUZZ_SECONDS=0 tools/fuzz.sh      build only; with no command: run
#
# Target T is tests/fuzz/fuzz_T.c, linked with the sources its line in the
# table below names. Its seeds are tests/fuzz/corpus/T/ (plus the extra
# corpus folders of its line), its dictionary tests/fuzz/T.dict when there is
# one. Inputs a run finds are kept in build/fuzz/corpus/T/. Everything is built
# with clang -fsanitize=fuzzer,address,undefined (leaks are reported too); a
# crash leaves build/fuzz/crash-* (copy it into tests/fuzz/corpus/T/ once its
# cause is fixed) and makes the script fail. Each target's figures go to
# build/fuzz/T.log; the script prints one summary line per target.
set -eu
cd "$(dirname "$0")/.."

# target | sources beyond tests/fuzz/fuzz_<target>.c | extra seed folders
targets_table='
validate    | spec/validate.c spec/validate_ml.c spec/validate_vertex.c spec/validate_study.c spec/training_spec.c spec/catalog.c lib/common.c lib/wire.c lib/violation.c lib/strbuf.c lib/yamldoc.c lib/imageref.c | tests/unit/fixtures
sync_answer | agent/sync_msg.c agent/replica.c agent/runtime_kind.c agent/simulate_script.c agent/agent_config.c agent/python_runtimes.c agent/gpu.c agent/http.c lib/imageref.c lib/replica_state.c lib/common.c lib/wire.c lib/strbuf.c lib/log.c lib/config.c |
metric_file | agent/metric_file.c lib/common.c lib/log.c lib/wire.c lib/strbuf.c |
log         | lib/log.c lib/common.c lib/wire.c lib/strbuf.c |
http        | SERVER_SOURCES tests/fuzz/stub_store.c |
httpd       | httpd/httpd.c httpd/http_parse.c lib/common.c lib/log.c lib/strbuf.c lib/wire.c |
fields      | server/fields.c lib/common.c lib/strbuf.c |
sim_rules   | spec/sim_rules.c spec/sim_expr.c lib/common.c lib/violation.c lib/strbuf.c |
list_filter | spec/list_filter.c spec/job_state.c store/store_filter.c lib/common.c lib/strbuf.c lib/wire.c lib/log.c |
'

cmd=${1:-run}
[ $# -gt 0 ] && shift
seconds=${FUZZ_SECONDS:-600}
case $cmd in
build|smoke) ;;
run) [ "$seconds" -gt 0 ] || cmd=build ;;
*) echo "usage: tools/fuzz.sh [build|smoke|run] [TARGET...]" >&2; exit 2 ;;
esac
out=build/fuzz
cc=${FUZZ_CC:-clang}
all=$(echo "$targets_table" | sed -n 's/^\([a-z_0-9]*\) *|.*/\1/p')
wanted=${*:-$all}
field() { echo "$targets_table" | awk -F'|' -v t="$1" -v f="$2" '$1 ~ "^"t" *$" { print $f }'; }

build() {
	t=$1 bin=$out/fuzz_$1
	# SERVER_SOURCES: every file of server/ (but main.c), httpd/, spec/ and lib/.
	srcs=$(echo "tests/fuzz/fuzz_$t.c $(field "$t" 2)" |
		sed "s|SERVER_SOURCES|$(ls server/*.c httpd/*.c spec/*.c lib/*.c | grep -v server/main.c | tr '\n' ' ')|")
	# Rebuilt when any source, or any header of lib/ agent/ server/, is newer.
	# shellcheck disable=SC2086
	if [ -x "$bin" ] && [ -z "$(find $srcs lib httpd spec agent server store scheduler -name '*.[ch]' -newer "$bin" | head -n 1)" ]; then
		return 0
	fi
	# shellcheck disable=SC2046,SC2086
	$cc -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -Wshadow -Wvla -Wwrite-strings -Wformat-security \
		-Wno-missing-field-initializers \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-Ilib -Ihttpd -Ispec -Iserver -Iagent -Istore -Ischeduler $srcs \
		$(pkg-config --cflags --libs jansson yaml-0.1 libcurl libpq libssl libcrypto) -lpthread -lm -o "$bin"
	echo "built $bin"
}

mkdir -p "$out"
rc=0
for t in $wanted; do
	if [ -z "$(field "$t" 1)" ]; then
		echo "fuzz.sh: no target '$t' (targets: $(echo $all))" >&2
		exit 2
	fi
	build "$t"
	[ "$cmd" != build ] || continue
	seeds="tests/fuzz/corpus/$t $(field "$t" 3)"
	dict=
	[ -f "tests/fuzz/$t.dict" ] && dict=-dict=tests/fuzz/$t.dict
	log=$out/$t.log
	trc=0
	if [ "$cmd" = smoke ]; then
		# -runs=0: every seed once, no mutation.
		# shellcheck disable=SC2086
		"$out/fuzz_$t" -runs=0 -timeout=10 -rss_limit_mb=2048 $dict -artifact_prefix="$out/" \
			$seeds >"$log" 2>&1 || trc=$?
		n=$(sed -n 's/.*INFO: seed corpus: files: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
		echo "fuzz_$t: ${n:-?} seed inputs replayed, exit status $trc (log: $log)"
	else
		mkdir -p "$out/corpus/$t"
		# shellcheck disable=SC2086
		"$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 $dict \
			-artifact_prefix="$out/" -print_final_stats=1 \
			"$out/corpus/$t" $seeds >"$log" 2>&1 || trc=$?
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
		echo "fuzz_$t: ${execs:-?} executions in ${seconds}s, exit status $trc (log: $log)"
	fi
	if [ "$trc" != 0 ]; then
		tail -n 40 "$log"
		rc=$trc
	fi
done
exit $rc
