#!/usr/bin/env bash
# The cost of prettyPrint: jobs.get of one job and jobs.list of 100 jobs,
# pretty (the default for curl) against compact (prettyPrint=false, as
# Google's Go clients ask), with wrk on the same server in the same run;
# the runs alternate (BENCH_PRETTY_RUNS pairs, default 3) and the figure is
# the median of the pairs' ratios. Run by make bench (BENCH_PRETTY=0 leaves
# it out), or alone: tools/bench_pretty.sh [build/trainplane-server].
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-32}
runs=${BENCH_PRETTY_RUNS:-3}
port=${BENCH_PRETTY_PORT:-18483}
state=$(mktemp -d /tmp/trainplane-bench-pretty.XXXXXX)
chmod 755 "$state"
pid=
cleanup() {
	[ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$state"
}
trap cleanup EXIT

TRAINPLANE_STATE_DIR=$state/var TRAINPLANE_LISTEN=127.0.0.1:$port TRAINPLANE_LOG_LEVEL=warn \
	TRAINPLANE_SCHEDULER=false "$server" 2>"$state/server.log" &
pid=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$state/server.log"; exit 1; }
base=http://127.0.0.1:$port/v1/projects/bench-pretty/jobs
for i in $(seq 1 100); do
	curl -sf -o /dev/null -X POST "$base?prettyPrint=false" -H 'Content-Type: application/json' \
		-d "{\"jobId\": \"p$i\", \"labels\": {\"owner\": \"alice\", \"n\": \"$i\"}, \"trainingInput\": {
		     \"scaleTier\": \"CUSTOM\", \"region\": \"us-central1\", \"masterType\": \"n1-standard-4\",
		     \"workerType\": \"n1-standard-4\", \"workerCount\": \"2\", \"args\": [\"--epochs\", \"10\"],
		     \"masterConfig\": {\"imageUri\": \"gcr.io/p/trainer:1\"}}}"
done
rps() { wrk -t2 -c"$conns" -d"${secs}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
compact_url() { case $1 in *\?*) echo "$1&prettyPrint=false" ;; *) echo "$1?prettyPrint=false" ;; esac; }
bench() { # name url
	local c p pairs='' cs='' ps=''
	for _ in $(seq 1 "$runs"); do
		c=$(rps "$(compact_url "$2")")
		p=$(rps "$2")
		pairs="$pairs $(ratio "$p" "$c")" cs="$cs $c" ps="$ps $p"
	done
	printf '  %-10s compact %8.0f/s (%6d bytes)  pretty %8.0f/s (%6d bytes)  pretty/compact %s (ratios:%s)\n' \
		"$1" "$(echo $cs | median)" "$(curl -sf "$(compact_url "$2")" | wc -c)" \
		"$(echo $ps | median)" "$(curl -sf "$2" | wc -c)" "$(echo $pairs | median)" "$pairs"
}
echo "prettyPrint cost ($secs s per run, $conns connections, $runs alternating pairs, $(nproc) cores)"
bench jobs.get "$base/p1"
bench jobs.list "$base?pageSize=100"
