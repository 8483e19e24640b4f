#!/usr/bin/env bash
# make run: the server in the foreground on its embedded PostgreSQL (state
# in ./var), with a curl line that works. Ctrl-C stops the server, which
# stops its database.
set -euo pipefail
server=${1:-build/trainplane-server}
listen=${TRAINPLANE_LISTEN:-127.0.0.1:8080}
export TRAINPLANE_LISTEN=$listen
base="http://$listen"

"$server" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

for _ in $(seq 1 300); do
	curl -sf "$base/readyz" >/dev/null 2>&1 && break
	kill -0 $pid 2>/dev/null || { wait $pid; exit 1; }
	sleep 0.2
done

cat <<MSG

  trainplane is up at $base/ (embedded PostgreSQL in ./var; Ctrl-C stops both).

  Submit a job:
    curl -s -X POST $base/v1/projects/demo/jobs -H 'Content-Type: application/json' \\
      -d '{"jobId": "hello_$(date +%s)", "trainingInput": {"scaleTier": "CUSTOM",
           "masterType": "n1-standard-4", "region": "us-central1",
           "masterConfig": {"imageUri": "localhost/trainer:latest"}}}'
  List jobs:
    curl -s $base/v1/projects/demo/jobs
  More in README.md (get, cancel, patch, gcloud and client-library set-up).

MSG
wait $pid
