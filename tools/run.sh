#!/usr/bin/env bash
# make run: the server on its embedded PostgreSQL and a small local node pool
# (deploy/local/: a 4 x T4 GPU node and a TPU_V2 host, both running replicas
# as host processes), in the foreground. Ctrl-C (or closing the terminal,
# or SIGTERM) stops everything in order: first the agents, which stop their
# replicas as a maintenance event does (their jobs restart, attempt + 1,
# when make run starts again), then the server and its database.
#
# Everything it writes is under its state directory (TRAINPLANE_STATE_DIR,
# default ./var): the database (postgres/, run/, postgres.log), the agents'
# work dirs (agent-<node>/), the local storage root (gcs/) and the logs
# (logs/). Relative paths in deploy/local/*.yaml are taken from there (the
# agents' base_dir). Runs side by side need their own state dir and port
# (TRAINPLANE_LISTEN); each takes a block of 200 replica ports derived from
# its listen port (TRAINPLANE_RUN_PORTS=LOW sets the block's first port).
set -euo pipefail
server=${1:-build/trainplane-server}
agent=${2:-build/trainplane-agent}
listen=${TRAINPLANE_LISTEN:-127.0.0.1:8080}
port=${listen##*:}
if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
	echo "run.sh: TRAINPLANE_LISTEN=$listen: expected HOST:PORT with a port of 1-65535" >&2
	exit 2
fi
state=${TRAINPLANE_STATE_DIR:-./var}
mkdir -p "$state"
state=$(cd "$state" && pwd)
mkdir -p "$state/logs" "$state/gcs"
export TRAINPLANE_LISTEN=$listen TRAINPLANE_STATE_DIR=$state
base="http://$listen"

# Replica ports: 200 a run, split among its agents. Runs on consecutive
# listen ports (8080, 8081, ...) get disjoint blocks; all stay below the
# kernel's ephemeral ports (32768).
nodes=(deploy/local/*.yaml)
first=${TRAINPLANE_RUN_PORTS:-$((21000 + ((port - 8080) % 55 + 55) % 55 * 200))}
if ! [[ $first =~ ^[0-9]+$ ]] || ((first < 1024 || first + 199 > 65535)); then
	echo "run.sh: TRAINPLANE_RUN_PORTS=$first: expected a port of 1024-65336" >&2
	exit 2
fi
width=$((200 / ${#nodes[@]}))

# Output goes to the terminal and to logs/ (tee ignores Ctrl-C, so that the
# last lines of a stopping server still arrive). The server and the agents
# run in sessions of their own (setsid): the terminal's Ctrl-C and hang-up
# reach this script alone, which stops them in order; the agents' replicas
# (host processes) never see the terminal's signals either.
setsid "$server" > >(tee -ia "$state/logs/server.log") 2>&1 &
server_pid=$!
agent_pids=()
stopped=
stop() {
	[[ -n $stopped ]] && return
	stopped=1
	trap '' INT TERM HUP
	rm -f "$state/endpoint"
	# The agents first: they tell the server their replicas stopped.
	for p in "${agent_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${agent_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	kill -TERM "$server_pid" 2>/dev/null || true
	wait
}
trap stop INT TERM HUP EXIT

for _ in $(seq 1 300); do
	curl -sf "$base/readyz" >/dev/null 2>&1 && break
	kill -0 "$server_pid" 2>/dev/null || exit 1
	sleep 0.2
done
ranges=()
for i in "${!nodes[@]}"; do
	node=$(basename "${nodes[$i]}" .yaml)
	name=$(sed -n 's/^node: *//p' "${nodes[$i]}")
	lo=$((first + i * width))
	ranges+=("${name:-$node} (ports $lo-$((lo + width - 1)))")
	# The agents stop their replicas when make run ends, as a maintenance
	# event would: their jobs restart when make run starts again.
	TRAINPLANE_AGENT_SERVER="$base/" TRAINPLANE_AGENT_BASE_DIR="$state" \
		TRAINPLANE_AGENT_PORT_RANGE="$lo-$((lo + width - 1))" \
		setsid "$agent" --config "${nodes[$i]}" --stop-replicas-on-exit \
		> >(tee -ia "$state/logs/agent-${name:-$node}.log") 2>&1 &
	agent_pids+=($!)
done
# The CLI (build/trainplane) reads the endpoint from here when
# TRAINPLANE_ENDPOINT is not set.
echo "$base/" > "$state/endpoint"
job="hello_$(date +%s)"

cat <<MSG

  trainplane is up at $base/ with nodes local-gpu-1 (4 x NVIDIA_TESLA_T4) and
  local-tpu-1 (TPU_V2). State (database, agents' work dirs, gcs/, logs/) in
  $state. Ctrl-C stops everything.

  Console: $base/console/
  Agents: ${ranges[*]}

  The CLI finds this server by itself (from $state/endpoint); for other
  clients, or another shell's state directory:
    export TRAINPLANE_ENDPOINT=$base/

  Submit a job (1 master + 2 workers, one T4 each) that prints its TF_CONFIG:
    curl -s -X POST $base/v1/projects/demo/jobs -H 'Content-Type: application/json' -d '{
      "jobId": "$job",
      "trainingInput": {"scaleTier": "CUSTOM", "region": "us-central1",
        "masterType": "n1-standard-4", "workerType": "n1-standard-4", "workerCount": "2",
        "masterConfig": {"imageUri": "localhost/trainer:latest",
          "containerCommand": ["sh", "-c", "echo TF_CONFIG=\$TF_CONFIG; echo GPUs=\$CUDA_VISIBLE_DEVICES"],
          "acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}},
        "workerConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}}}}'
  Its state (QUEUED, PREPARING, RUNNING, SUCCEEDED):
    curl -s $base/v1/projects/demo/jobs/$job
    build/trainplane ai-platform jobs describe $job
  Its log:
    curl -s -X POST $base/v2/entries:list -H 'Content-Type: application/json' \\
      -d '{"resourceNames": ["projects/demo"], "filter": "resource.labels.job_id=\\"$job\\""}'
    build/trainplane ai-platform jobs stream-logs $job
  The nodes:
    curl -s $base/trainplane/v1/nodes
  More in README.md and docs/.

MSG
wait "$server_pid"
