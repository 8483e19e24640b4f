#!/usr/bin/env bash
# make run-slurm: trainplane in front of a private Slurm cluster on this
# machine (docs/slurm.md), in the foreground. Region us-central1 is served
# by Slurm: each of its jobs becomes one Slurm job whose pilots
# (trainplane-agent --pilot, one per replica) run the replicas as host
# processes, as the unprivileged Slurm user (tpslurm). Needs root: slurmd
# runs as root here (tools/slurm-cluster.sh).
#
# Everything it writes is under its state directory (TRAINPLANE_STATE_DIR,
# default ./var, as make run): the database, logs/, and slurm/, a fresh
# Slurm each start (config slurm/etc/slurm.conf, logs slurm/log/, the
# pilots' work dir and the Slurm jobs' output slurm/work/, the backend's
# slurm_file slurm/trainplane-slurm.yaml). Ctrl-C (or SIGTERM, or closing
# the terminal) stops the server, then every Slurm daemon it started.
#
# Settings: TRAINPLANE_LISTEN (default 127.0.0.1:8080); TRAINPLANE_SLURM_PORT_BASE
# (the cluster's ports: base+17 slurmctld, base+20 slurmrestd, base+200..
# slurmd; default 12000 + 250 x (listen port's offset from 8080, mod 16));
# TRAINPLANE_SLURM_NODES (3) and TRAINPLANE_SLURM_GPUS (4 T4s a node);
# TP_SLURM_CPUS, TP_SLURM_MEMORY_MB and TP_SLURM_MIN_JOB_AGE (how long
# Slurm shows a finished job: 300 s here) reach tools/slurm-cluster.sh.
set -euo pipefail
server=${1:-build/trainplane-server}
agent=${2:-build/trainplane-agent}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/slurm-cluster.sh
listen=${TRAINPLANE_LISTEN:-127.0.0.1:8080}
port=${listen##*:}
if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
	echo "run-slurm.sh: TRAINPLANE_LISTEN=$listen: expected HOST:PORT with a port of 1-65535" >&2
	exit 2
fi
if [[ $(id -u) != 0 ]]; then
	echo "run-slurm.sh: needs root: the private Slurm's slurmd runs as root (tools/slurm-cluster.sh)" >&2
	exit 1
fi
pb=${TRAINPLANE_SLURM_PORT_BASE:-$((12000 + ((port - 8080) % 16 + 16) % 16 * 250))}
if ! [[ $pb =~ ^[0-9]+$ ]] || ((pb < 1024 || pb + 300 > 65535)); then
	echo "run-slurm.sh: TRAINPLANE_SLURM_PORT_BASE=$pb: expected a port of 1024-65235" >&2
	exit 2
fi
nodes=${TRAINPLANE_SLURM_NODES:-3}
gpus=${TRAINPLANE_SLURM_GPUS:-4}
server=$(realpath "$server")
agent=$(realpath "$agent")
state=${TRAINPLANE_STATE_DIR:-./var}
mkdir -p "$state"
state=$(cd "$state" && pwd)
mkdir -p "$state/logs"
export TRAINPLANE_LISTEN=$listen TRAINPLANE_STATE_DIR=$state
base="http://$listen"
# The pilots reach the server here (a wildcard listen address is reached
# on the loopback).
host=${listen%:*}
case $host in "" | 0.0.0.0 | "[::]" | "::") host=127.0.0.1 ;; esac
pilot_server="http://$host:$port/"
sdir=$state/slurm
export TP_SLURM_MIN_JOB_AGE=${TP_SLURM_MIN_JOB_AGE:-300}

server_pid=
stopped=
stop() {
	[[ -n $stopped ]] && return
	stopped=1
	trap '' INT TERM HUP
	rm -f "$state/endpoint"
	# The server first (its reconciler would take Slurm's cancels below
	# for the jobs' ends), then every Slurm daemon, its jobs cancelled.
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	"$cluster" stop "$sdir" || true
	echo "run-slurm.sh: stopped the server and the Slurm daemons of $sdir"
}
trap stop INT TERM HUP EXIT

# A fresh Slurm each time: whatever the last run left (its daemons, by
# their recorded pids) is stopped and its directory removed. Slurm job ids
# start past the last run's (FirstJobId), so that a job the last run left
# in the database is never taken for a new run's Slurm job of the same id:
# it fails as purged instead.
if [[ -d $sdir ]]; then
	"$cluster" stop "$sdir" || true
	rm -rf "$sdir"
fi
first_id=$(cat "$state/slurm-first-job-id" 2>/dev/null || echo 0)
[[ $first_id =~ ^[0-9]+$ ]] || first_id=0
first_id=$((first_id + 1000000))
((first_id < 60000000)) || first_id=1000000
echo "$first_id" >"$state/slurm-first-job-id"
"$cluster" install
"$cluster" setup "$sdir" "$nodes" "$gpus" "$pb" >/dev/null
echo "FirstJobId=$first_id" >>"$sdir/etc/slurm.conf"
# shellcheck disable=SC1091
. "$sdir/cluster.env"
# The pilots run as the Slurm user: the agent and the work dir must be
# theirs to reach. An agent they cannot run (a build under a 0700 home) is
# copied into the cluster's directory.
# A state dir closed to others (mktemp -d's 0700) is opened for traversal only.
runuser -u "$TP_SLURM_USER" -- test -x "$sdir/work" || chmod o+x "$state"
if ! runuser -u "$TP_SLURM_USER" -- test -x "$sdir/work"; then
	echo "run-slurm.sh: $sdir is not reachable by the Slurm user $TP_SLURM_USER (a parent" \
		"directory is closed to others); use a TRAINPLANE_STATE_DIR it can reach, e.g. under /tmp" >&2
	exit 1
fi
if ! runuser -u "$TP_SLURM_USER" -- test -x "$agent"; then
	mkdir -p "$sdir/bin"
	install -m 0755 "$agent" "$sdir/bin/trainplane-agent"
	agent=$sdir/bin/trainplane-agent
fi
cat >"$sdir/trainplane-slurm.yaml" <<EOF
# Written by tools/run-slurm.sh (make run-slurm); docs/slurm.md has every key.
backends:
  local-slurm:
    regions: [us-central1]
    url: http://127.0.0.1:$TP_SLURM_REST_PORT
    user: $TP_SLURM_USER
    token_file: $TP_SLURM_TOKEN_FILE
    partition: ${TP_SLURM_PARTITION:-tp}
    gres: {NVIDIA_TESLA_T4: t4}
    agent: $agent
    server: $pilot_server
    work_dir: $sdir/work
    runtime: process
    poll_ms: ${TRAINPLANE_SLURM_POLL_MS:-200}
EOF
# The daemons in a session of their own: the terminal's Ctrl-C and hang-up
# reach this script alone, which stops them in order.
setsid -w "$cluster" start "$sdir"

export TRAINPLANE_SLURM_FILE=$sdir/trainplane-slurm.yaml
setsid "$server" > >(tee -ia "$state/logs/server.log") 2>&1 &
server_pid=$!
ready=
for _ in $(seq 1 300); do
	curl -sf "$base/readyz" >/dev/null 2>&1 && ready=1 && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.2
done
[[ -n $ready ]] || { echo "run-slurm.sh: the server did not start (its log: $state/logs/server.log)" >&2; exit 1; }
echo "$base/" >"$state/endpoint"
job="hello_slurm_$(date +%s)"

cat <<MSG

  trainplane is up at $base/ with region us-central1 served by a private
  Slurm cluster: $TP_SLURM_NODES nodes of $TP_SLURM_GPUS_PER_NODE T4s (fake GPU devices), partition ${TP_SLURM_PARTITION:-tp},
  slurmrestd at http://127.0.0.1:$TP_SLURM_REST_PORT. State (database, logs/, slurm/) in
  $state. Ctrl-C stops the server and every Slurm daemon.

  Submit a job (1 master + 1 worker, one T4 each) that prints its GPUs and TF_CONFIG:
    curl -s -X POST $base/v1/projects/demo/jobs -H 'Content-Type: application/json' -d '{
      "jobId": "$job",
      "trainingInput": {"scaleTier": "CUSTOM", "region": "us-central1",
        "masterType": "n1-standard-4", "workerType": "n1-standard-4", "workerCount": "1",
        "masterConfig": {"imageUri": "localhost/trainer:latest",
          "containerCommand": ["sh", "-c", "echo CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES TF_CONFIG=\$TF_CONFIG"],
          "acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}},
        "workerConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}}}}'
  Its state (QUEUED, PREPARING, RUNNING, SUCCEEDED):
    curl -s $base/v1/projects/demo/jobs/$job
  Its log:
    curl -s -X POST $base/v2/entries:list -H 'Content-Type: application/json' \\
      -d '{"resourceNames": ["projects/demo"], "filter": "resource.labels.job_id=\\"$job\\""}'
  In Slurm (its job is named tp-<trainplane id>; finished jobs stay listed for ${TP_SLURM_MIN_JOB_AGE} s):
    SLURM_CONF=$SLURM_CONF squeue -t all
    SLURM_CONF=$SLURM_CONF scontrol show job <slurm id>
    the batch script's output: $sdir/work/tp-<slurm id>.out
  (sacct needs Slurm's accounting database, slurmdbd, which this cluster does not run.)
  More in docs/slurm.md.

MSG
wait "$server_pid"
