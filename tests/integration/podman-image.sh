#!/bin/sh
# tests/integration/podman-image.sh - makes sure podman has the tests' image,
# localhost/trainer:test: a busybox rootfs imported as a local image
# (/work/shared/ENVIRONMENT.md), built once when missing. Every test that
# runs containers calls this first; a lock keeps concurrent tests from
# importing it twice at once (a second import would re-tag it under a
# running test).
#
# Exit 0: the image is there. 3: podman is not installed. 4: no image and
# no /bin/busybox to build it. Else the import failed. A message on stderr
# says which.
set -eu
image=localhost/trainer:test
command -v podman >/dev/null 2>&1 || { echo "podman is not installed" >&2; exit 3; }
podman image exists "$image" && exit 0
exec 9>"${TMPDIR:-/tmp}/trainplane-test-image.lock"
flock 9
podman image exists "$image" && exit 0
[ -x /bin/busybox ] || { echo "no $image and no /bin/busybox to build it" >&2; exit 4; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/rootfs/bin"
cp /bin/busybox "$d/rootfs/bin/"
for c in sh echo sleep cat env; do ln -sf busybox "$d/rootfs/bin/$c"; done
tar -C "$d/rootfs" -cf "$d/rootfs.tar" .
podman import "$d/rootfs.tar" "$image" >/dev/null || { echo "cannot import $image" >&2; exit 5; }
