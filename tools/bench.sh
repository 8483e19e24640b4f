#!/usr/bin/env bash
# make bench: throughput of trainplane-server as ratios against baselines
# measured in the same run on the same machine (these machines are shared
# and noisy: absolute numbers mean little, ratios do).
#
#   create: jobs.create/s (wrk, 32 connections) vs pgbench single-row
#           INSERT/s of the same jsonb row (32 clients) on the same database
#   get:    jobs.get/s vs a static libmicrohttpd reply of the same bytes,
#           same wrk load; p99 latency of both
#   validate: validations/s of a typical CUSTOM job on one core
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
dir=$(dirname "$server")
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-32}
port=18480
sport=18481
state=$(mktemp -d /tmp/trainplane-bench.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$state"
}
trap cleanup EXIT

TRAINPLANE_STATE_DIR=$state/var TRAINPLANE_LISTEN=127.0.0.1:$port TRAINPLANE_LOG_LEVEL=warn \
	"$server" 2>"$state/server.log" &
pids+=($!)
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$state/server.log"; exit 1; }

psql_run() { runuser -u postgres -- psql -qAt -h "$state/var/run" -U trainplane -d trainplane "$@"; }
pgbench_run() { runuser -u postgres -- pgbench -h "$state/var/run" -U trainplane "$@" trainplane; }

# --- create ------------------------------------------------------------------
psql_run -c "CREATE TABLE bench_jobs (LIKE jobs INCLUDING ALL); CREATE SEQUENCE bench_seq;
  CREATE TRIGGER bench_bump BEFORE UPDATE ON bench_jobs FOR EACH ROW EXECUTE FUNCTION jobs_bump_version();"
cp bench/insert.sql "$state/insert.sql"
chmod 644 "$state/insert.sql"
pg_tps=$(pgbench_run -n -c "$conns" -j 2 -T "$secs" -f "$state/insert.sql" | awk '/^tps/ {print $3; exit}')
wrk_out=$(wrk -t2 -c"$conns" -d"${secs}s" -s bench/create.lua "http://127.0.0.1:$port/v1/projects/bench/jobs")
create_rps=$(echo "$wrk_out" | awk '/Requests\/sec/ {print $2}')
create_bad=$(echo "$wrk_out" | awk -F= '/^non2xx=/ {print $2}')

# --- get ---------------------------------------------------------------------
job=$(psql_run -c "SELECT job_id FROM jobs WHERE project = 'bench' LIMIT 1")
url="http://127.0.0.1:$port/v1/projects/bench/jobs/$job"
curl -sf "$url" >"$state/job.json"
"$dir/bench/static_server" $sport 16 "$state/job.json" &
pids+=($!)
sleep 0.3
static_out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$sport/")
get_out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "$url")
static_rps=$(echo "$static_out" | awk '/Requests\/sec/ {print $2}')
get_rps=$(echo "$get_out" | awk '/Requests\/sec/ {print $2}')
static_p99=$(echo "$static_out" | awk '$1 == "99%" {print $2}')
get_p99=$(echo "$get_out" | awk '$1 == "99%" {print $2}')
get_bad=$(echo "$get_out" | awk '/Non-2xx/ {print $5}')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "trainplane bench ($secs s per run, $conns connections, $(nproc) cores)"
printf '  create: %8.0f jobs.create/s vs pgbench INSERT %8.0f/s  ratio %s (goal >= 0.8)%s\n' \
	"$create_rps" "$pg_tps" "$(ratio "$create_rps" "$pg_tps")" \
	"$([ "${create_bad:-0}" = 0 ] || echo "  [$create_bad non-2xx!]")"
printf '  get:    %8.0f jobs.get/s    vs static MHD    %8.0f/s  ratio %s (goal >= 0.5)%s\n' \
	"$get_rps" "$static_rps" "$(ratio "$get_rps" "$static_rps")" \
	"$([ -z "$get_bad" ] || echo "  [$get_bad non-2xx!]")"
printf '          p99 latency: jobs.get %s, static %s\n' "$get_p99" "$static_p99"
if [ -x "$dir/bench/bench_validate" ]; then
	printf '  '; "$dir/bench/bench_validate"
fi
