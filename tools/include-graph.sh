#!/bin/sh
# tools/include-graph.sh - who includes whom, between folders and inside one.
#
#   tools/include-graph.sh            every include of another folder's header, by
#                                     folder, then one line per folder pair with a
#                                     count; a pair the layer table below does not
#                                     allow is marked UPWARD
#   tools/include-graph.sh --check    the same, and exit 1 when any include is UPWARD
#   tools/include-graph.sh --files D  the graph of folder D's modules (X.c and X.h are
#                                     module X; "A -> B": A's files include B.h),
#                                     its headers alone, and the cycles of each
#                                     (tsort's loops); exit 1 on a cycle
#
# An `#include "name"` is resolved the way the compiler does: the including
# file's own folder first, then the Makefile's -I folders in their order.
# Headers found nowhere (generated, system) are left out.
set -eu
cd "$(dirname "$0")/.."

folders='lib httpd spec store scheduler server agent cli'
search='lib httpd spec store scheduler server agent'	# the Makefile's -I order

# The layers (RESTRUCTURE.md): what each folder may include besides itself.
allowed() {
	case $1 in
	lib) echo '' ;;
	httpd) echo 'lib' ;;
	spec) echo 'lib' ;;
	store) echo 'spec lib' ;;
	scheduler) echo 'spec store lib' ;;
	server) echo 'httpd spec scheduler store lib' ;;
	agent) echo 'lib' ;;
	cli) echo 'spec lib' ;;
	esac
}

# Prints "FILE HEADER" for every resolved quoted include of the given files.
edges() {
	for f in "$@"; do
		[ -f "$f" ] || continue
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while IFS= read -r name; do
			dir=$(dirname "$f")
			if [ -f "$dir/$name" ]; then
				# the path as the compiler opens it (../../agent/http.h too)
				echo "$f $(realpath --relative-to=. "$dir/$name")"
				continue
			fi
			for d in $search; do
				if [ -f "$d/$name" ]; then
					echo "$f $d/$name"
					break
				fi
			done
		done
	done
}

files_of() {
	for d in "$@"; do
		[ -d "$d" ] && find "$d" -maxdepth 1 \( -name '*.c' -o -name '*.h' \) | sort
	done
	return 0
}

folder_graph() {
	check=$1
	tmp=$(mktemp)
	# shellcheck disable=SC2046
	edges $(files_of $folders) | awk '{
		split($1, a, "/"); split($2, b, "/");
		if (a[1] != b[1]) print a[1], b[1], $1, $2
	}' >"$tmp"
	upward=0
	echo "# includes of another folder's header (FROM TO FILE HEADER)"
	while read -r from to file header; do
		mark=''
		case " $(allowed "$from") " in
		*" $to "*) ;;
		*) mark='  UPWARD'; upward=$((upward + 1)) ;;
		esac
		echo "$from -> $to  $file includes $header$mark"
	done <"$tmp"
	echo
	echo "# folder pairs (includes)"
	awk '{ n[$1 " -> " $2]++ } END { for (k in n) print k, "(" n[k] ")" }' "$tmp" | sort |
	while read -r from arrow to count; do
		mark=''
		case " $(allowed "$from") " in
		*" $to "*) ;;
		*) mark='  UPWARD' ;;
		esac
		echo "$from $arrow $to $count$mark"
	done
	echo
	echo "upward includes: $upward"
	rm -f "$tmp"
	[ "$check" = 0 ] || [ "$upward" = 0 ]
}

# Prints tsort's loops of the "A B" edges on stdin (nothing when it is a DAG).
cycles() {
	tsort 2>&1 >/dev/null | sed -n 's/^tsort: //p' |
		awk '/input contains a loop/ { if (l != "") print l; l = ""; next }
		     { l = l == "" ? $0 : l " -> " $0 } END { if (l != "") print l }' || true
}

files_graph() {
	d=${1%/}
	tmp=$(mktemp)
	# shellcheck disable=SC2046
	edges $(files_of "$d") | awk -v d="$d" '{
		split($1, a, "/"); split($2, b, "/");
		if (a[1] != d || b[1] != d || a[2] == "" || b[2] == "") next
		fm = a[2]; sub(/\.[ch]$/, "", fm); hm = b[2]; sub(/\.[ch]$/, "", hm)
		print fm, hm, a[2], b[2]
	}' >"$tmp"
	echo "# $d/ modules (A -> B: A.c or A.h includes B.h)"
	awk '$1 != $2 { print $1 " -> " $2 }' "$tmp" | sort -u
	echo
	echo "# $d/ headers (A.h -> B.h)"
	awk '$3 ~ /\.h$/ && $3 != $4 { print $3 " -> " $4 }' "$tmp" | sort -u
	echo
	mod=$(awk '$1 != $2 { print $1, $2 }' "$tmp" | cycles)
	hdr=$(awk '$3 ~ /\.h$/ && $3 != $4 { print $3, $4 }' "$tmp" | cycles)
	rm -f "$tmp"
	echo "module cycles:"
	echo "${mod:-  none}" | sed 's/^/  /;s/^    none/  none/'
	echo "header cycles:"
	echo "${hdr:-  none}" | sed 's/^/  /;s/^    none/  none/'
	[ -z "$mod$hdr" ]
}

case ${1:-} in
'') folder_graph 0 ;;
--check) folder_graph 1 ;;
--files)
	[ $# -eq 2 ] && [ -d "$2" ] || { echo "usage: $0 --files FOLDER" >&2; exit 2; }
	files_graph "$2" ;;
*) echo "usage: $0 [--check | --files FOLDER]" >&2; exit 2 ;;
esac
