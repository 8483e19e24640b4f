#!/bin/sh
# tools/fuzz.sh - fuzz the request validator (server/validate.c) with libFuzzer.
#
#   FUZZ_SECONDS=600 tools/fuzz.sh      build, then fuzz for FUZZ_SECONDS (default 600)
#   FUZZ_SECONDS=0 tools/fuzz.sh        build only
#
# Builds build/fuzz/fuzz_validate with clang -fsanitize=fuzzer,address,undefined
# (leaks are reported too), seeds it with tests/fuzz/corpus and the fixtures,
# keeps new inputs in build/fuzz/corpus, and prints the executions count.
# A crash leaves build/fuzz/crash-* and makes the script fail.
set -eu
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-600}
out=build/fuzz
cc=${FUZZ_CC:-clang}
mkdir -p "$out/corpus"

# shellcheck disable=SC2046
$cc -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Ilib -Iserver \
	tests/fuzz/fuzz_validate.c server/validate.c lib/catalog.c lib/common.c \
	lib/wire.c lib/violation.c lib/strbuf.c \
	$(pkg-config --cflags --libs jansson yaml-0.1) -lm \
	-o "$out/fuzz_validate"
echo "built $out/fuzz_validate"
[ "$seconds" -gt 0 ] || exit 0

rc=0
"$out/fuzz_validate" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-dict=tests/fuzz/validate.dict -artifact_prefix="$out/" -print_final_stats=1 \
	"$out/corpus" tests/fuzz/corpus tests/unit/fixtures >"$out/fuzz.log" 2>&1 || rc=$?
tail -n 25 "$out/fuzz.log"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -n 1)
echo "fuzz_validate: ${execs:-?} executions in ${seconds}s, exit status $rc (log: $out/fuzz.log)"
exit $rc
