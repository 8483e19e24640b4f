/*
 * fields.h - Google's partial responses (the `fields` system parameter) and
 * the writer that re-lays JSON text, pretty (`prettyPrint`) or compact.
 *
 * A mask is Google's syntax: selections separated by commas ("a,b"), a path
 * descending with '/' or '.' ("a/b/c", "a.b"), a sub-selection in
 * parentheses ("jobs(jobId,state)"), '*' for every field of a level (alone,
 * after a slash, or "*(name)"); a trailing comma is allowed. A path through
 * an array applies to each of its elements. Names are matched exactly (case
 * included); a name that no field has selects nothing (Google checks names
 * against the message's schema, which this JSON-level filter has not).
 *
 * The writer copies strings and numbers as they are in the text (no
 * re-encoding, no change of a number's spelling) and only decides the
 * whitespace between tokens: none (compact), or Google's pretty form: two
 * spaces of indent per level, "key": value, one member or element per line,
 * "{}" and "[]" when empty, and a newline at the end.
 *
 * Needs lib/ only (the fuzz target fields links it alone).
 */
#ifndef TP_FIELDS_H
#define TP_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "strbuf.h"

/* The longest nesting of parentheses a mask may have, and its size in names once expanded. */
#define FIELDS_MAX_DEPTH 32
#define FIELDS_MAX_NODES 4096

struct fields;

/*
 * Parses mask. Returns 0 with *out the selection (NULL when it selects
 * everything: an empty mask, "*"), or -1 with a sentence in err (what is
 * wrong and at which character, counted from 1) on a syntax error.
 * *out is freed with fields_free().
 */
int fields_parse(const char *mask, struct fields **out, char *err, size_t errlen) MUST_CHECK;
void fields_free(struct fields *f);

/*
 * Appends the JSON value of text (len bytes) to out, keeping what f selects
 * (NULL: everything), pretty or compact. Returns 0, or -1 when text is not
 * one JSON value (or nests deeper than 512); out then holds a partial
 * result the caller drops.
 */
int json_rewrite(const char *text, size_t len, const struct fields *f, bool pretty,
		 struct strbuf *out) MUST_CHECK;

#endif
