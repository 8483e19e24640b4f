#!/bin/sh
# Sums the cmocka and node:test counts in a make test log into one closing
# line, "tests: N passed, N failed", and fails when anything failed.
log=$1
awk '
	/^\[  PASSED  \] [0-9]+ test/ { p += $4 }
	/^\[  FAILED  \] [0-9]+ test\(s\), listed below/ { f += $4 }
	/^# pass [0-9]+/ { p += $3 }
	/^# fail [0-9]+/ { f += $3 }
	END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }
' "$log"
