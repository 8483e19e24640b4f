#!/usr/bin/env bash
# make bench, emulator section (docs/emulator.md): from exec of
# `trainplane-server --emulator` to /readyz answering 200, on a fresh state
# directory with no template (initdb runs: a cold machine), on a fresh one
# with the template (a warm machine), and on an existing state directory
# (a restart); the median of three each. Then the simulated fleet's
# registration and a reset of 1,000 and 5,000 jobs as the server logs them.
# The baseline, measured in the same run: `pg_ctl start` of an existing
# cluster alone, which every start includes.
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
port=18490
work=$(mktemp -d /tmp/trainplane-bench-emu.XXXXXX)
chmod 755 "$work"
cache=$work/cache
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# start STATE_DIR: ms = the ms from exec to /readyz; the server keeps running.
ms=
start() {
	local t0
	t0=$(now_ms)
	XDG_CACHE_HOME=$cache TRAINPLANE_STATE_DIR=$1 TRAINPLANE_LISTEN=127.0.0.1:$port \
		TRAINPLANE_LOG_LEVEL=info "$server" --emulator >>"$work/server.log" 2>&1 &
	pid=$!
	until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
		kill -0 "$pid" 2>/dev/null || { tail -5 "$work/server.log"; exit 1; }
		sleep 0.005
	done
	ms=$(( $(now_ms) - t0 ))
}
stop() {
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

cold=() warm=() again=()
for i in 1 2 3; do
	rm -rf "$cache" "$work/s$i"
	start "$work/s$i"; cold+=("$ms"); stop
	rm -rf "$work/t$i"
	start "$work/t$i"; warm+=("$ms"); stop
	start "$work/t$i"; again+=("$ms"); stop
done
# The baseline: PostgreSQL's own start of the same existing cluster.
pgctl=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
base=()
for i in 1 2 3; do
	t0=$(now_ms)
	as_pg "$pgctl" -D "$work/t1/postgres" -l "$work/t1/postgres.log" -w -o "-c listen_addresses='' -c unix_socket_directories='$work/t1/run'" start >/dev/null
	base+=("$(( $(now_ms) - t0 ))")
	as_pg "$pgctl" -D "$work/t1/postgres" -m fast -w stop >/dev/null
done
c=$(median "${cold[@]}") w=$(median "${warm[@]}") a=$(median "${again[@]}") b=$(median "${base[@]}")
printf '  emulator start to /readyz: cold (initdb) %s ms (goal < 5000), warm (template) %s ms (goal < 1000), restart %s ms; pg_ctl start alone %s ms: warm is %.2f x, restart %.2f x of it\n' \
	"$c" "$w" "$a" "$b" "$(awk -v x="$w" -v y="$b" 'BEGIN { print x / y }')" "$(awk -v x="$a" -v y="$b" 'BEGIN { print x / y }')"

# The fleet and a reset, on a running emulator.
start "$work/r"
B=http://127.0.0.1:$port
until [ "$(curl -s "$B/trainplane/v1/nodes" | grep -o '"name"' | wc -l)" -gt 100 ]; do sleep 0.05; done
fleet=$(grep -o 'emulator: [0-9]* simulated nodes registered in [0-9]* ms' "$work/server.log" | tail -1)
for n in 1000 5000; do
	node "$(dirname "$0")/../bench/mkjobs.mjs" "$B" "$n" "reset$n"
	curl -s -X POST "$B/trainplane/v1/emulator:reset" -H 'Content-Type: application/json' -d "{\"project\": \"reset$n\"}" >/dev/null
done
resets=$(grep -o 'reset project reset[0-9]*: [0-9]* job(s) deleted in [0-9.]* ms' "$work/server.log" | sed 's/reset project reset[0-9]*: //' | paste -sd ';' -)
printf '  emulator: %s; reset %s\n' "${fleet#emulator: }" "$resets"
stop
