#!/bin/bash
# Run on the lent GPU machine (tools/gpu-check/bundle.sh makes .gpu/ here first):
#   bash .gpu/check.sh   (everything it prints goes to $OUT/check.log too)
# The real server on an embedded PostgreSQL, a real agent (process runtime)
# that finds the GPU through NVML, and a Vertex job asking for 1 x H100 whose
# replica reports CUDA_VISIBLE_DEVICES and what PyTorch sees.
exec > >(tee "${OUT:-/tmp}/check.log") 2>&1
set -x
uname -a; cat /etc/os-release | head -2; ldd --version | head -1
nvidia-smi -L
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
B=/tmp/b; mkdir -p $B && tar -C $B -xJf .gpu/gpub.tar.xz
export LD_LIBRARY_PATH=$B/lib
id postgres >/dev/null 2>&1 || useradd -r -M -s /bin/sh postgres
W=/tmp/w; rm -rf $W; mkdir -p $W/gcs $W/agent; chmod 755 $W
TRAINPLANE_STATE_DIR=$W/var TRAINPLANE_LISTEN=127.0.0.1:18600 \
  TRAINPLANE_POSTGRES_BIN_DIR=$B/usr/lib/postgresql/15/bin TRAINPLANE_SCHEDULER_TICK_MS=200 \
  $B/bin/trainplane-server > $W/server.log 2>&1 &
cat > $W/agent.yaml <<EOT
server: http://127.0.0.1:18600/
node: h100-node
machine_type: a3-highgpu-1g
vcpus: 26
memory_mb: 240000
work_dir: $W/agent
storage_root: $W/gcs
EOT
sleep 3
LD_LIBRARY_PATH=$B/lib $B/bin/trainplane-agent --config $W/agent.yaml > $W/agent.log 2>&1 &
env -u LD_LIBRARY_PATH timeout 300 python3 .gpu/check.py
echo "== agent log"; head -40 $W/agent.log
echo "== server log"; grep -v "^$" $W/server.log | head -40
cp $W/agent.log $W/server.log "${OUT:-/tmp}/" 2>/dev/null
