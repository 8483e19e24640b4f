#!/usr/bin/env bash
# make run: the server on its embedded PostgreSQL (state in ./var) and a
# small local node pool (deploy/local/: a 4 x T4 GPU node and a TPU_V2 host,
# both running replicas as host processes), in the foreground. Ctrl-C stops
# everything: agents, server, database.
set -euo pipefail
server=${1:-build/trainplane-server}
agent=${2:-build/trainplane-agent}
listen=${TRAINPLANE_LISTEN:-127.0.0.1:8080}
export TRAINPLANE_LISTEN=$listen
base="http://$listen"
mkdir -p var

"$server" &
pids=($!)
stop() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait
}
trap stop INT TERM EXIT

for _ in $(seq 1 300); do
	curl -sf "$base/readyz" >/dev/null 2>&1 && break
	kill -0 "${pids[0]}" 2>/dev/null || exit 1
	sleep 0.2
done
for node in deploy/local/*.yaml; do
	# The agents stop their replicas when make run ends.
	TRAINPLANE_AGENT_SERVER="$base/" "$agent" --config "$node" --stop-replicas-on-exit &
	pids+=($!)
done

cat <<MSG

  trainplane is up at $base/ with nodes local-gpu-1 (4 x NVIDIA_TESLA_T4) and
  local-tpu-1 (TPU_V2), embedded PostgreSQL in ./var. Ctrl-C stops everything.

  Submit a job (1 master + 2 workers, one T4 each) that prints its TF_CONFIG:
    curl -s -X POST $base/v1/projects/demo/jobs -H 'Content-Type: application/json' -d '{
      "jobId": "hello_$(date +%s)",
      "trainingInput": {"scaleTier": "CUSTOM", "region": "us-central1",
        "masterType": "n1-standard-4", "workerType": "n1-standard-4", "workerCount": "2",
        "masterConfig": {"imageUri": "localhost/trainer:latest",
          "containerCommand": ["sh", "-c", "echo TF_CONFIG=\$TF_CONFIG; echo GPUs=\$CUDA_VISIBLE_DEVICES"],
          "acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}},
        "workerConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}}}}'
  Its state (QUEUED, PREPARING, RUNNING, SUCCEEDED):
    curl -s $base/v1/projects/demo/jobs/hello_...
  Its log:
    curl -s -X POST $base/v2/entries:list -H 'Content-Type: application/json' \\
      -d '{"resourceNames": ["projects/demo"], "filter": "resource.labels.job_id=\\"hello_...\\""}'
  The nodes:
    curl -s $base/trainplane/v1/nodes
  More in README.md.

MSG
wait "${pids[0]}"
