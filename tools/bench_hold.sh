#!/usr/bin/env bash
# Connections held by trainplane-server and their cost (make bench runs it
# last; BENCH_HOLD=0 leaves it out):
#
#   idle:   BENCH_HOLD_CONNECTIONS (10,000) keep-alive connections, each after
#           one jobs.get (or /healthz), held idle BENCH_HOLD_SECONDS (20)
#   parked: BENCH_HOLD_POLLS (2,000) agent syncs parked (one node each), held
#           BENCH_HOLD_SECONDS, then half woken by a change, half answered at
#           their deadline
#
# Each phase has a fresh server of its own (on the same database), so that
# neither inherits the other's freed memory; its VmRSS and utime + stime are
# read from /proc before and after (bench/hold.mjs). The figures are per
# connection or per parked poll: the server's memory and CPU, not the
# kernel's socket buffers.
#
#   tools/bench_hold.sh SERVER [SOCKET_DIR [PATH]]
# SOCKET_DIR: a running bench's PostgreSQL (make bench passes its own);
# without it a server with an embedded database is started for the run.
# PATH: what each idle connection GETs (default /healthz).
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
sock=${2:-}
path=${3:-/healthz}
conns=${BENCH_HOLD_CONNECTIONS:-10000}
polls=${BENCH_HOLD_POLLS:-2000}
hold=${BENCH_HOLD_SECONDS:-20}
wait_s=$((hold + 5))	# the polls' waitSeconds: due 5 s after the hold
port=18483
state=$(mktemp -d /tmp/trainplane-bench-hold.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$state"
}
trap cleanup EXIT
# The driver holds one descriptor per connection.
ulimit -n "$(ulimit -Hn)"

ready() { # port: wait for /readyz
	for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0; sleep 0.2; done
	return 1
}
if [ -z "$sock" ]; then
	TRAINPLANE_STATE_DIR=$state/db TRAINPLANE_LISTEN=127.0.0.1:$((port + 1)) TRAINPLANE_LOG_LEVEL=warn \
		"$server" 2>"$state/db.log" &
	pids+=($!)
	ready $((port + 1)) || { cat "$state/db.log"; exit 1; }
	sock=$state/db/run
fi
psql_run() { runuser -u postgres -- psql -qAt -h "$sock" -U trainplane -d trainplane "$@"; }

# A server on that database, its scheduler off (no job is placed), room for
# the connections (max_connections 10,000 by default), and 1,250 connections
# per loopback address (127.0.0.2, .3, ...: 2,500 are allowed per client).
hold_server() { # name: starts it, sets hpid
	TRAINPLANE_DATABASE_URL="host=$sock user=trainplane dbname=trainplane" \
	TRAINPLANE_STATE_DIR=$state/$1 TRAINPLANE_LISTEN=127.0.0.1:$port TRAINPLANE_LOG_LEVEL=warn \
	TRAINPLANE_SCHEDULER=false TRAINPLANE_HTTP_MAX_CONNECTIONS=$((conns + 2000)) \
		"$server" 2>"$state/$1.log" &
	hpid=$!
	pids+=("$hpid")
	ready $port || { cat "$state/$1.log"; exit 1; }
	# Warm: a few requests of each kind before the baseline.
	for _ in 1 2 3; do curl -sf "http://127.0.0.1:$port$path" >/dev/null; done
}
stop_server() { # name: stops hpid, shows its log, fails if it did not exit 0
	kill -TERM "$hpid"
	local rc=0
	wait "$hpid" || rc=$?
	if [ -s "$state/$1.log" ] || [ "$rc" != 0 ]; then
		echo "  [$1 server: exit $rc; its log:]"
		sed 's/^/    /' "$state/$1.log" | tail -20
	fi
	[ "$rc" = 0 ]
}

status=0
hold_server idle
node bench/hold.mjs idle "http://127.0.0.1:$port" "$hpid" "$conns" "$hold" "$path" 2>"$state/idle.err" ||
	status=1
[ "${BENCH_HOLD_VERBOSE:-0}" = 0 ] && [ "$status" = 0 ] || sed 's/^/    /' "$state/idle.err"
stop_server idle || status=1

hold_server park
wake="runuser -u postgres -- psql -qAt -h '$sock' -U trainplane -d trainplane -c \"
  WITH w AS (UPDATE nodes SET desired_version = desired_version + 1
             WHERE name LIKE 'hold-%' AND right(name, 4)::int % 2 = 0 RETURNING name)
  SELECT count(pg_notify('tp_node', name)) FROM w\""
rc=0
node bench/hold.mjs park "http://127.0.0.1:$port" "$hpid" "$polls" "$hold" "$wait_s" "$wake" 2>"$state/park.err" ||
	rc=1
[ "${BENCH_HOLD_VERBOSE:-0}" = 0 ] && [ "$rc" = 0 ] || sed 's/^/    /' "$state/park.err"
[ "$rc" = 0 ] || status=1
stop_server park || status=1
psql_run -c "DELETE FROM nodes WHERE name LIKE 'hold-%'"
exit "$status"
