#!/bin/bash
# Run on the lent GPU machine (tools/gpu-check/bundle.sh makes .gpu/ here first):
#   bash .gpu/check.sh   (everything it prints goes to $OUT/check.log too)
# The real server on an embedded PostgreSQL, a real agent (process runtime)
# that finds the GPU through NVML, and a Vertex job asking for the machine's
# one GPU whose replica reports CUDA_VISIBLE_DEVICES and what PyTorch sees.
# An H100 takes the built-in catalog's a3-highgpu-1g. Google offers the H200
# only as a3-ultragpu-8g (8 GPUs), which one H200 cannot hold: on an H200 the
# server runs with an operator's catalog (the built-in one plus a 1-GPU
# a3-ultragpu-1g), the way docs/validation.md says to describe one's own
# hardware (26 vCPUs and 234 GB, as the agent below declares).
# Run 2026-11-27 on a lent H200: NVML named it 'NVIDIA H200', the agent
# registered 1 x NVIDIA_H200_141GB, the replica saw CUDA_VISIBLE_DEVICES=0
# and PyTorch 'NVIDIA H200', the job SUCCEEDED. (The tarball's root is
# mode 700 as mktemp made it: chmod, or postgres cannot run initdb.)
exec > >(tee "${OUT:-/tmp}/check.log") 2>&1
set -x
uname -a; cat /etc/os-release | head -2; ldd --version | head -1
nvidia-smi -L
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
B=/tmp/b; mkdir -p $B && tar -C $B -xJf .gpu/gpub.tar.xz; chmod -R a+rX $B
export LD_LIBRARY_PATH=$B/lib
id postgres >/dev/null 2>&1 || useradd -r -M -s /bin/sh postgres
W=/tmp/w; rm -rf $W; mkdir -p $W/gcs $W/agent; chmod 755 $W
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$GPU" in
*H200*)
	export CHECK_MACHINE=a3-ultragpu-1g CHECK_ACCEL=NVIDIA_H200_141GB
	awk '{print} /^  a3-ultragpu-8g: \{vcpus/ {print "  a3-ultragpu-1g: {vcpus: 26, memory_gb: 234, apis: [vertex], accelerator: {type: NVIDIA_H200_141GB, count: 1}}"}
	     /^  a3-ultragpu-8g: \{NVIDIA/ {print "  a3-ultragpu-1g: {NVIDIA_H200_141GB: [1]}"}' \
		.gpu/catalog.yaml > $W/catalog.yaml
	grep -n a3-ultragpu $W/catalog.yaml
	export TRAINPLANE_CATALOG=$W/catalog.yaml ;;
*)	export CHECK_MACHINE=a3-highgpu-1g CHECK_ACCEL=NVIDIA_H100_80GB ;;
esac
TRAINPLANE_STATE_DIR=$W/var TRAINPLANE_LISTEN=127.0.0.1:18600 \
  TRAINPLANE_POSTGRES_BIN_DIR=$B/usr/lib/postgresql/15/bin TRAINPLANE_SCHEDULER_TICK_MS=200 \
  $B/bin/trainplane-server > $W/server.log 2>&1 &
cat > $W/agent.yaml <<EOT
server: http://127.0.0.1:18600/
node: h100-node
machine_type: $CHECK_MACHINE
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
