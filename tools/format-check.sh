#!/bin/sh
# tools/format-check.sh - the tree's formatting (.editorconfig), checked:
#   every tracked text file: LF line ends, a final newline, no trailing
#   whitespace (Markdown aside);
#   C (.c, .h): indentation is tabs (spaces only align after them, fewer
#   than 8), no line over 140 columns with tabs of 8.
# Prints each offending place as FILE:LINE: what, and exits 1 if any.
# (clang-format cannot say this house style: it aligns trailing comments and
# continuation lines otherwise, and would rewrite some 2,000 lines.)
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files | grep -v -e '^tests/fuzz/corpus/' -e '\.\(png\|jpg\|gz\|tar\|ico\)$' -e '^package-lock.json$')
bad=0
# One perl for every file (a tail | od | tr for each cost a second and a half
# of CPU in make test): the last byte of each non-empty file.
# shellcheck disable=SC2086
perl -e 'my $bad = 0;
	for my $f (@ARGV) {
		next unless -s $f;
		open(my $h, "<", $f) or die "$f: $!\n";
		seek($h, -1, 2) and read($h, my $c, 1) or die "$f: $!\n";
		if ($c ne "\n") { print "$f: no newline at the end\n"; $bad = 1 }
	}
	exit $bad' $files || bad=1
# shellcheck disable=SC2086
awk '
	/\r$/ { print FILENAME ":" FNR ": CR LF line end"; bad = 1 }
	FILENAME !~ /\.md$/ && /[ \t]+$/ { print FILENAME ":" FNR ": trailing whitespace"; bad = 1 }
	FILENAME ~ /\.[ch]$/ {
		line = $0
		match(line, /^[\t ]*/)
		ind = substr(line, 1, RLENGTH)
		sub(/^\t*/, "", ind)
		if (ind ~ /\t/ || (length(ind) >= 8 && line !~ /^[\t ]*\*/)) {
			print FILENAME ":" FNR ": indentation with spaces"; bad = 1
		}
		w = 0
		for (i = 1; i <= length(line); i++)
			w = substr(line, i, 1) == "\t" ? w - w % 8 + 8 : w + 1
		if (w > 140) { print FILENAME ":" FNR ": " w " columns (at most 140)"; bad = 1 }
	}
	END { exit bad }
' $files || bad=1
if [ "$bad" != 0 ]; then
	echo "format-check: the places above break the tree's format (.editorconfig)" >&2
	exit 1
fi
