#!/usr/bin/env bash
# The cost of N simulated agents long-polling (issue 28): the server's CPU
# and its PostgreSQL's (every process of the embedded cluster), in % of one
# core, measured over a steady window once every agent has registered and
# made its first sync, and the database's transactions per second.
#
#   tools/bench_agents.sh SERVER [AGENTS [SECONDS]]
# AGENTS (1,000) register and sync with waitSeconds 10 and an empty replica
# list (bench/agents_load.mjs); the window is SECONDS (30) long, after a 15 s
# warm-up. Prints one line:
#   agents=N server=X% postgres=Y% xact/s=Z syncs/s=S
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
agents=${2:-1000}
secs=${3:-30}
warm=${BENCH_AGENTS_WARMUP:-15}
port=${BENCH_AGENTS_PORT:-18490}
state=$(mktemp -d /tmp/trainplane-bench-agents.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$state"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"

TRAINPLANE_STATE_DIR=$state/var TRAINPLANE_LISTEN=127.0.0.1:$port TRAINPLANE_LOG_LEVEL=warn \
	TRAINPLANE_HTTP_MAX_CONNECTIONS_PER_CLIENT=$((agents + 100)) \
	"$server" 2>"$state/server.log" &
spid=$!
pids+=("$spid")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$state/server.log"; exit 1; }
pm=$(head -1 "$(find "$state/var" -name postmaster.pid | head -1)")
psql_run() { runuser -u postgres -- psql -qAt -h "$state/var/run" -U trainplane -d trainplane "$@"; }

# utime + stime of the server, and of the postmaster and all its children.
server_ticks() { awk '{ print $14 + $15 }' "/proc/$spid/stat"; }
pg_ticks() {
	local sum=0 p
	for p in $pm $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
		[ -r "/proc/$p/stat" ] || continue
		sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$sum"
}
# utime + stime of each of the server's threads, by name (comm).
thread_ticks() {
	local t
	for t in /proc/$spid/task/*; do
		[ -r "$t/stat" ] && awk '{ sub(/^[^(]*\(/, ""); n = $0; sub(/\).*/, "", n);
			sub(/^[^)]*\) /, ""); print n, $12 + $13 }' "$t/stat" 2>/dev/null
	done | awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }'
}
xacts() { psql_run -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'trainplane'"; }

node bench/agents_load.mjs "http://127.0.0.1:$port" "$agents" 10 $((warm + secs + 30)) >"$state/agents.out" 2>&1 &
lpid=$!
pids+=("$lpid")
for _ in $(seq 1 600); do grep -q registered "$state/agents.out" && break; sleep 0.2; done
grep -q registered "$state/agents.out" || { cat "$state/agents.out"; exit 1; }
sleep "$warm"
s0=$(server_ticks); p0=$(pg_ticks); x0=$(xacts); thread_ticks >"$state/t0"; m0=$(date +%s%N)
syncs0=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^trainplane_http_requests_total\{.*agent\.nodes\.sync.*code="200"/ { s += $2 } END { print s + 0 }')
sleep "$secs"
s1=$(server_ticks); p1=$(pg_ticks); x1=$(xacts); thread_ticks >"$state/t1"; m1=$(date +%s%N)
syncs1=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^trainplane_http_requests_total\{.*agent\.nodes\.sync.*code="200"/ { s += $2 } END { print s + 0 }')
hz=$(getconf CLK_TCK)
awk -v n="$agents" -v s0="$s0" -v s1="$s1" -v p0="$p0" -v p1="$p1" -v x0="$x0" -v x1="$x1" \
    -v m0="$m0" -v m1="$m1" -v hz="$hz" -v y0="$syncs0" -v y1="$syncs1" 'BEGIN {
	t = (m1 - m0) / 1e9
	printf "agents=%d server=%.1f%% postgres=%.1f%% xact/s=%.0f syncs/s=%.0f window=%.0fs\n",
		n, (s1 - s0) * 100 / hz / t, (p1 - p0) * 100 / hz / t, (x1 - x0) / t, (y1 - y0) / t, t }'
awk -v hz="$hz" -v t="$(( (m1 - m0) / 1000000 ))" 'NR == FNR { a[$1] = $2; next }
	{ d = ($2 - a[$1]) * 100 / hz / (t / 1000); if (d >= 0.05) printf "  %s %.1f%%", $1, d }
	END { print "" }' "$state/t0" "$state/t1" | sed 's/^/  server threads:/'
grep -v '^registered' "$state/agents.out" | grep -q errors= && tail -1 "$state/agents.out" || true
