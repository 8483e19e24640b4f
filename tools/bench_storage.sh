#!/usr/bin/env bash
# make bench, Cloud Storage: a 1 GiB object uploaded (uploadType=media) and
# downloaded (alt=media) through the storage API with curl, against `cp` of
# the same file on the same disk, each measured in this run (ratios: cp's
# time over the API's, 1.0 = as fast as cp); and the server's peak memory
# (VmHWM) before and after, which stays flat when bodies are streamed.
#
#   tools/bench_storage.sh build/trainplane-server   (BENCH_STORAGE_MIB=1024)
set -euo pipefail
server=$(realpath "${1:-build/trainplane-server}")
mib=${BENCH_STORAGE_MIB:-1024}
port=18482
state=$(mktemp -d /tmp/trainplane-bench-storage.XXXXXX)
chmod 755 "$state"
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$state"
}
trap cleanup EXIT

TRAINPLANE_STATE_DIR=$state/var TRAINPLANE_LISTEN=127.0.0.1:$port TRAINPLANE_LOG_LEVEL=warn \
	TRAINPLANE_SCHEDULER=false "$server" 2>"$state/server.log" &
pid=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
B=http://127.0.0.1:$port
curl -sf -X POST "$B/storage/v1/b?project=bench" -H 'Content-Type: application/json' \
	-d '{"name":"bench-bucket"}' >/dev/null

hwm() { awk '/^VmHWM/ {print $2}' "/proc/$pid/status"; }
secs() { python3 -c 'import sys, time; print(f"{time.time():.6f}")'; }

src=$state/src.bin
head -c $((mib * 1024 * 1024)) /dev/urandom >"$src"
cat "$src" >/dev/null	# in the page cache for every reader alike
hwm0=$(hwm)

best() { sort -g | head -n 1; }
t_cp=() t_up=() t_down=()
for _ in 1 2 3; do
	t0=$(secs); cp "$src" "$state/copy.bin"; t1=$(secs)
	t_cp+=("$(python3 -c "print($t1 - $t0)")")
	rm -f "$state/copy.bin"
	t0=$(secs)
	curl -sf -X POST "$B/upload/storage/v1/b/bench-bucket/o?uploadType=media&name=big.bin" \
		-H 'Content-Type: application/octet-stream' -T "$src" -o /dev/null
	t1=$(secs)
	t_up+=("$(python3 -c "print($t1 - $t0)")")
	t0=$(secs)
	curl -sf "$B/storage/v1/b/bench-bucket/o/big.bin?alt=media" -o "$state/down.bin"
	t1=$(secs)
	t_down+=("$(python3 -c "print($t1 - $t0)")")
	cmp -s "$src" "$state/down.bin" || { echo "bench_storage: the download differs" >&2; exit 1; }
	rm -f "$state/down.bin"
done
cp_s=$(printf '%s\n' "${t_cp[@]}" | best)
up_s=$(printf '%s\n' "${t_up[@]}" | best)
down_s=$(printf '%s\n' "${t_down[@]}" | best)
hwm1=$(hwm)
python3 - "$mib" "$cp_s" "$up_s" "$down_s" "$hwm0" "$hwm1" <<'PY'
import sys
mib, cp, up, down, h0, h1 = (float(x) for x in sys.argv[1:])
print(f"storage: {mib:.0f} MiB object: cp {cp:.2f} s ({mib / cp:.0f} MiB/s), "
      f"upload {up:.2f} s ({mib / up:.0f} MiB/s), download {down:.2f} s ({mib / down:.0f} MiB/s) (best of 3)")
print(f"storage: upload / cp = {cp / up:.2f}, download / cp = {cp / down:.2f} (1.0 = as fast as cp; aim >= 0.5)")
print(f"storage: server peak RSS {h0 / 1024:.1f} MiB before, {h1 / 1024:.1f} MiB after ({(h1 - h0) / 1024:+.1f} MiB for {mib:.0f} MiB moved)")
PY
