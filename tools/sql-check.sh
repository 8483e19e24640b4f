#!/bin/sh
# tools/sql-check.sh - SQL text only in store/ (issue 17): no C string
# literal of any other folder holds a SQL statement, clause, operator or
# cast. (The compiler keeps libpq's headers, and so PGresult, in store/:
# each folder builds with only the include paths it may use.)
# Prints each offending line as FILE:LINE: text, and exits 1 if any.
set -eu
cd "$(dirname "$0")/.."
sql='"[^"]*(\b(SELECT|INSERT INTO|DELETE FROM|UPDATE [a-z_]+ SET|WHERE|ORDER BY|GROUP BY|JOIN|RETURNING|LIKE|ILIKE|COALESCE|IS NOT NULL|IS DISTINCT FROM|LISTEN|NOTIFY|jsonb_[a-z_]+)\b|::(timestamptz|int[248]|bigint|jsonb|text|bool)\b|->>)[^"]*"'
files=$(git ls-files 'lib/*.[ch]' 'spec/*.[ch]' 'scheduler/*.[ch]' 'server/*.[ch]' 'agent/*.[ch]' 'cli/*.[ch]')
# shellcheck disable=SC2086
if grep -nE "$sql" $files; then
	echo "tools/sql-check.sh: SQL text outside store/ (above); it belongs in a store/ function" >&2
	exit 1
fi
