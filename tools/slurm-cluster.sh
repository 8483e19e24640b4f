#!/usr/bin/env bash
# A private Slurm cluster on this machine, for the Slurm backend's tests and
# for make run-slurm (docs/slurm.md): Debian's munged, slurmctld, several
# slurmd on one host (a multiple-slurmd build: slurmd -N picks the node),
# fake GPU device files so that gres binding is real, and slurmrestd with
# JWT on 127.0.0.1. Everything lives in one directory; the daemons are
# stopped by the pids recorded there, never by name.
#
#   slurm-cluster.sh setup DIR [NODES] [GPUS_PER_NODE] [PORT_BASE]
#   slurm-cluster.sh start DIR      (after setup; about a second)
#   slurm-cluster.sh stop DIR       (cancels jobs, stops every daemon)
#   slurm-cluster.sh install        (the Debian packages, when missing)
#
# DIR/cluster.env tells a client the REST address, the token file and
# SLURM_CONF. Needs root (slurmd runs as root; jobs and slurmrestd run as
# the unprivileged user TP_SLURM_USER, default tpslurm, created here).
# Facts behind every line: ../shared/reference/slurm.md Part 1.
set -euo pipefail

packages=(munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin)

install() {
	local missing=() p
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	if [[ $(id -u) != 0 ]]; then
		echo "slurm-cluster.sh: needs root to install ${missing[*]}" >&2
		return 1
	fi
	# Debian's postinsts would start the system's munged and slurmd; this
	# cluster runs its own, so they are kept from starting.
	local prc=/usr/sbin/policy-rc.d made=
	if [[ ! -e $prc ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 0755 "$prc" && made=1
	fi
	{ apt-get install -y --no-install-recommends "${missing[@]}" ||
		{ apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }; } \
		>/dev/null
	[[ -n $made ]] && rm -f "$prc"
	return 0
}

user() {
	local u=${TP_SLURM_USER:-tpslurm}
	id "$u" >/dev/null 2>&1 ||
		useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /bin/sh "$u"
}

setup() {
	local d=$1 nodes=${2:-3} gpn=${3:-4} pb=${4:-16800}
	local u=${TP_SLURM_USER:-tpslurm} host
	host=$(hostname -s)
	user
	local ctld=$((pb + 17)) rest=$((pb + 20)) node0=$((pb + 201))
	mkdir "$d" # a fresh directory each time: fails if it exists
	chmod 0755 "$d"
	mkdir -p "$d"/{etc,state,spool,log,run,munge,dev,work}
	for n in $(seq 1 "$nodes"); do mkdir -p "$d/spool/n$n"; done
	chmod 0700 "$d/state"
	chown "$u:$u" "$d/work"
	chmod 0755 "$d/work"
	mungekey --create --keyfile="$d/etc/munge.key"
	chmod 0600 "$d/etc/munge.key"
	dd if=/dev/urandom of="$d/state/jwt_hs256.key" bs=32 count=1 status=none
	chmod 0600 "$d/state/jwt_hs256.key"
	for i in $(seq 0 $((gpn - 1))); do mknod "$d/dev/nvidia$i" c 195 "$i"; done
	local nodeline
	if ((nodes > 1)); then
		nodeline="NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=$node0-$((node0 + nodes - 1))"
	else
		nodeline="NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$node0"
	fi
	cat >"$d/etc/slurm.conf" <<EOF
ClusterName=tp$pb
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld
SlurmdPort=$((pb + 200))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket,cred_expire=${TP_SLURM_CRED_EXPIRE:-10}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$d/state/jwt_hs256.key
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_hetjob_immediate,batch_sched_delay=0
GresTypes=gpu
SlurmdParameters=config_overrides
PropagateResourceLimits=NONE
ReturnToService=2
SlurmdTimeout=10
MinJobAge=${TP_SLURM_MIN_JOB_AGE:-30}
KillWait=5
InactiveLimit=0
$nodeline CPUs=${TP_SLURM_CPUS:-8} Sockets=1 CoresPerSocket=${TP_SLURM_CPUS:-8} ThreadsPerCore=1 RealMemory=${TP_SLURM_MEMORY_MB:-65536} Gres=gpu:t4:$gpn State=UNKNOWN
PartitionName=${TP_SLURM_PARTITION:-tp} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	echo "Name=gpu Type=t4 File=$d/dev/nvidia[0-$((gpn - 1))]" >"$d/etc/gres.conf"
	chmod 0644 "$d/etc/slurm.conf" "$d/etc/gres.conf"
	cat >"$d/cluster.env" <<EOF
TP_SLURM_DIR=$d
TP_SLURM_NODES=$nodes
TP_SLURM_GPUS_PER_NODE=$gpn
TP_SLURM_USER=$u
TP_SLURM_CTLD_PORT=$ctld
TP_SLURM_REST_PORT=$rest
TP_SLURM_TOKEN_FILE=$d/token
SLURM_CONF=$d/etc/slurm.conf
EOF
}

# The pid files this script wrote (daemons run in the foreground, so $! is
# the daemon itself).
pids() { cat "$1"/run/*.fg.pid "$1/run/munged.pid" 2>/dev/null || true; }

start() {
	local d=$1 t0 i
	# shellcheck disable=SC1091
	. "$d/cluster.env"
	export SLURM_CONF
	t0=$(date +%s%N)
	alive() {
		local f
		for f in "$d"/run/*.fg.pid; do
			kill -0 "$(cat "$f")" 2>/dev/null ||
				{ echo "slurm-cluster.sh: $(basename "$f" .fg.pid) died; its log: $d/log" >&2; return 1; }
		done
	}
	wait_for() { # what tries command...
		local what=$1 max=$2 n=0
		shift 2
		until "$@" >/dev/null 2>&1; do
			alive || return 1
			n=$((n + 1))
			((n < max)) || { echo "slurm-cluster.sh: timed out waiting for $what; logs in $d/log" >&2; return 1; }
			sleep 0.02
		done
	}
	cd "$d" # slurmstepd inherits slurmd's working directory
	munged --socket="$d/munge/munge.socket" --key-file="$d/etc/munge.key" \
		--log-file="$d/log/munged.log" --pid-file="$d/run/munged.pid" \
		--seed-file="$d/munge/munged.seed"
	slurmctld -D -f "$SLURM_CONF" >"$d/log/slurmctld.out" 2>&1 </dev/null &
	echo $! >"$d/run/slurmctld.fg.pid"
	for i in $(seq 1 "$TP_SLURM_NODES"); do
		slurmd -D -f "$SLURM_CONF" -N "n$i" >"$d/log/slurmd-n$i.out" 2>&1 </dev/null &
		echo $! >"$d/run/slurmd-n$i.fg.pid"
	done
	# slurmrestd refuses to run as root: it drops to the job user.
	SLURM_JWT=daemon slurmrestd -f "$SLURM_CONF" -a rest_auth/jwt -s openapi/v0.0.38 \
		-u "$TP_SLURM_USER" -g "$TP_SLURM_USER" "127.0.0.1:$TP_SLURM_REST_PORT" \
		>"$d/log/slurmrestd.log" 2>&1 </dev/null &
	echo $! >"$d/run/slurmrestd.fg.pid"
	wait_for "slurmctld's port" 1500 bash -c "exec 3<>/dev/tcp/127.0.0.1/$TP_SLURM_CTLD_PORT"
	# The token file holds the JWT alone, mode 0600 (as trainplane reads it).
	(umask 077 && scontrol token username="$TP_SLURM_USER" lifespan="${TP_SLURM_TOKEN_LIFESPAN:-86400}" |
		sed -n 's/^SLURM_JWT=//p' >"$d/token")
	[[ -s $d/token ]] || { echo "slurm-cluster.sh: scontrol token gave no token" >&2; return 1; }
	local tok b
	tok=$(cat "$d/token")
	b=http://127.0.0.1:$TP_SLURM_REST_PORT/slurm/v0.0.38
	wait_for "slurmrestd" 1500 curl -sf -H "X-SLURM-USER-NAME: $TP_SLURM_USER" \
		-H "X-SLURM-USER-TOKEN: $tok" "$b/ping"
	idle() {
		[[ $(curl -sf -H "X-SLURM-USER-NAME: $TP_SLURM_USER" -H "X-SLURM-USER-TOKEN: $tok" "$b/nodes" |
			grep -o '"state": *"idle"' | wc -l) == "$TP_SLURM_NODES" ]]
	}
	wait_for "$TP_SLURM_NODES idle nodes" 1500 idle
	echo "slurm: $TP_SLURM_NODES nodes idle in $((($(date +%s%N) - t0) / 1000000)) ms; SLURM_CONF=$SLURM_CONF"
}

stop() {
	local d=$1 ids p n
	[[ -f $d/cluster.env ]] || return 0
	# shellcheck disable=SC1091
	. "$d/cluster.env"
	export SLURM_CONF
	# 1. Cancel every job (SIGTERM first, as a replica expects) and wait a
	#    while for them to end.
	if kill -0 "$(cat "$d/run/slurmctld.fg.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
		ids=$(timeout 5 squeue -h -o %A 2>/dev/null || true)
		if [[ -n $ids ]]; then
			# shellcheck disable=SC2086
			timeout 5 scancel $ids 2>/dev/null || true
			for _ in $(seq 200); do
				[[ -z $(timeout 5 squeue -h -t running,completing,configuring -o %A 2>/dev/null) ]] && break
				sleep 0.05
			done
		fi
	fi
	# 2. Every daemon at once by its recorded pid; SIGKILL what is left.
	p=$(pids "$d")
	# shellcheck disable=SC2086
	[[ -n $p ]] && kill $p 2>/dev/null || true
	for n in $p; do
		for _ in $(seq 200); do kill -0 "$n" 2>/dev/null || break; sleep 0.05; done
		kill -0 "$n" 2>/dev/null && kill -9 "$n" 2>/dev/null || true
	done
	# 3. A slurmstepd whose slurmd died outlives it, with its job: find them
	#    by the cluster's log files they hold open, and kill each tree.
	tree() { echo "$1"; local c; for c in $(ps -o pid= --ppid "$1"); do tree "$c"; done; }
	for p in /proc/[0-9]*; do
		if ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $d/log/slurmd-"; then
			for n in $(tree "${p#/proc/}"); do kill -9 "$n" 2>/dev/null || true; done
		fi
	done
	rm -f "$d"/run/*.fg.pid "$d/run/munged.pid"
}

cmd=${1:-}
shift || true
case $cmd in
install) install ;;
setup) setup "$@" ;;
start) start "$@" ;;
stop) stop "$@" ;;
*)
	echo "usage: slurm-cluster.sh install | setup DIR [NODES] [GPUS] [PORT_BASE] | start DIR | stop DIR" >&2
	exit 2
	;;
esac
