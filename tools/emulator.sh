#!/usr/bin/env bash
# make emulator: trainplane-server in emulator mode (docs/emulator.md), in the
# foreground, on a fresh embedded database that is removed when it stops:
# a simulated fleet generated from the catalog, every control open. Ctrl-C
# stops it. TRAINPLANE_LISTEN (default 127.0.0.1:8080) and any other
# TRAINPLANE_* key apply; TRAINPLANE_STATE_DIR keeps the state instead.
set -euo pipefail
server=${1:-build/trainplane-server}
listen=${TRAINPLANE_LISTEN:-127.0.0.1:8080}
export TRAINPLANE_LISTEN=$listen
base="http://$listen"
cat <<EOT
trainplane emulator on $base (Ctrl-C stops it). Try:

  curl -s -X POST $base/v1/projects/demo/jobs -H 'Content-Type: application/json' -d '{
    "jobId": "a100_job", "trainingInput": {"scaleTier": "CUSTOM", "region": "us-central1",
      "masterType": "a2-highgpu-8g", "masterConfig": {"imageUri": "gcr.io/team/trainer:1"}}}'
  curl -s $base/v1/projects/demo/jobs/a100_job                 # QUEUED, RUNNING, SUCCEEDED
  curl -s -X POST $base/trainplane/v1/emulator:advanceClock -H 'Content-Type: application/json' -d '{"duration": "7200s"}'
  curl -s -X POST $base/trainplane/v1/emulator:reset -H 'Content-Type: application/json' -d '{}'

EOT
exec "$server" --emulator
