#!/bin/sh
# tools/gpu-check/bundle.sh - what the GPU check takes to a lent machine
# (the device tool carries .gpu/, which .git/info/exclude ignores): the
# server and agent as built here, the libraries they and Debian's PostgreSQL
# 15 load, PostgreSQL's binaries and share files laid out as Debian's so that
# they find each other. The server's catalog is the built-in one, which has
# a3-highgpu-1g (1 x H100) since issue 27.
# Then: device run `bash .gpu/check.sh` with carry [".gpu"].
set -eu
cd "$(dirname "$0")/../.."
b=$(mktemp -d)
pg=/usr/lib/postgresql/15
mkdir -p "$b$pg/bin" "$b$pg/lib" "$b/usr/share/postgresql" "$b/lib" "$b/bin" .gpu
cp "$pg/bin/postgres" "$pg/bin/initdb" "$pg/bin/pg_ctl" "$b$pg/bin/"
cp "$pg"/lib/*.so "$b$pg/lib/"
rm -f "$b$pg"/lib/llvmjit*.so
cp -r /usr/share/postgresql/15 "$b/usr/share/postgresql/"
cp build/trainplane-server build/trainplane-agent "$b/bin/"
for x in "$b"/bin/* "$b$pg"/bin/*; do ldd "$x" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
	grep -v -e 'libc\.so' -e 'libm\.so' -e 'ld-linux' -e 'libpthread' -e 'libdl\.so' -e 'librt\.so' |
	while read -r l; do cp -L "$l" "$b/lib/"; done
tar -C "$b" -cJf .gpu/gpub.tar.xz .
rm -rf "$b"
cp tools/gpu-check/check.sh tools/gpu-check/check.py deploy/catalog.yaml .gpu/
ls -la .gpu
