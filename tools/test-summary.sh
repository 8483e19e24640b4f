#!/bin/sh
# Sums the cmocka and node:test counts in a make test log into one closing
# line, "tests: N passed, N failed", and fails when anything failed. Before
# it: what failed (make's targets, node's suites, cmocka's tests), the wall
# time of the runs ("ran in N s", which make test writes) and, given the
# times file (TRAINPLANE_TEST_TIMES: "<driver or file> <seconds>" lines),
# the slowest drivers and files.
log=$1
times=${2:-}
failed=$(sed -n 's/^make\[[0-9]*\]: \*\*\* \[[^]]*: \([^]]*\)\] Error .*/\1/p' "$log" | sort -u | tr '\n' ' ' | sed 's/ $//')
[ -z "$failed" ] || echo "failed: $failed"
# node:test's top-level failures (a suite, or a file that failed to load) and cmocka's.
sed -n -e 's/^not ok [0-9]* - \(.*\)/  not ok: \1/p' -e 's/^\[  FAILED  \] \([a-z_0-9]*\)$/  FAILED: \1/p' "$log" | sort -u
if [ -n "$times" ] && [ -s "$times" ]; then
	echo "slowest: $(sort -k2 -rn "$times" | head -n 8 | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $1, $2 }')"
fi
grep '^ran in [0-9]* s$' "$log" | tail -n 1
awk '
	/^\[  PASSED  \] [0-9]+ test/ { p += $4 }
	/^\[  FAILED  \] [0-9]+ test\(s\), listed below/ { f += $4 }
	/^# pass [0-9]+/ { p += $3 }
	/^# fail [0-9]+/ { f += $3 }
	END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }
' "$log"
