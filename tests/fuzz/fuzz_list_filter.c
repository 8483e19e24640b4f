/*
 * fuzz_list_filter.c - libFuzzer target for list filters: the parser
 * (spec/list_filter.c) and the compiler into SQL (store/store_filter.c).
 *
 * The first byte picks the list (ml jobs, Vertex custom jobs, training
 * pipelines, log entries); the rest, up to the first NUL, is the filter.
 * Whatever it holds:
 * - parsing either fails with a message "Invalid filter: ..." and no tree,
 *   or gives a tree that the list's collection compiles;
 * - the SQL text holds nothing but that collection's column expressions,
 *   operators, keywords, parentheses and $n placeholders: no byte of the
 *   filter's values reaches it;
 * - the placeholders are $4..$n in order of appearance, one per parameter.
 *
 * Build and run: tools/fuzz.sh run list_filter (FUZZ_SECONDS, default 600).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list_filter.h"
#include "store_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define COLUMN '\x01'	/* what a column expression is replaced with */

/* What the compiler writes besides column expressions, longest first. */
static const char *const tokens[] = {
	"::timestamptz", "IS DISTINCT FROM", "IS NOT NULL", "NOT COALESCE", ", false)",
	"<> ''", "->>", "<=", ">=", "<>", "AND", "OR", "LIKE", "false", "true",
	"=", "<", ">", "(", ")",
};

/* Every column expression of c replaced by COLUMN (longest first: some hold others). */
static char *without_columns(const char *sql, const struct store_filter_collection *c)
{
	char *s = strdup(sql);
	const struct store_filter_column *cols[16];
	size_t n = c->ncolumns;

	if (!s || n > 16)
		abort();
	for (size_t i = 0; i < n; i++)
		cols[i] = &c->columns[i];
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			if (strlen(cols[j]->sql) > strlen(cols[i]->sql)) {
				const struct store_filter_column *t = cols[i];
				cols[i] = cols[j];
				cols[j] = t;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(cols[i]->sql);
		char *at;
		while ((at = strstr(s, cols[i]->sql))) {
			*at = COLUMN;
			memmove(at + 1, at + len, strlen(at + len) + 1);
		}
	}
	return s;
}

/* Only tokens, COLUMN and placeholders $4.. in order; returns the last number. */
static int check_text(const char *s, int first)
{
	int next = first;

	while (*s) {
		if (*s == ' ' || *s == COLUMN) {
			s++;
			continue;
		}
		if (*s == '$') {
			char *end;
			long n = strtol(s + 1, &end, 10);
			if (end == s + 1 || n != next)
				abort();
			next++;
			s = end;
			continue;
		}
		size_t i;
		for (i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
			size_t len = strlen(tokens[i]);
			if (!strncmp(s, tokens[i], len)) {
				s += len;
				break;
			}
		}
		if (i == sizeof(tokens) / sizeof(tokens[0])) {
			fprintf(stderr, "not the compiler's own text: \"%s\"\n", s);
			abort();
		}
	}
	return next - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_filter_collection *const lists[] = {
		&store_filter_ml_jobs, &store_filter_custom_jobs, &store_filter_pipelines,
		&store_filter_log_entries,
	};
	struct list_filter *tree = (struct list_filter *)&tree;
	char err[256];

	if (!size)
		return 0;
	const struct store_filter_collection *c = lists[data[0] % 4];
	char *text = strndup((const char *)data + 1, size - 1);
	if (!text)
		abort();
	if (list_filter_parse(text, c->fields, &tree, err, sizeof(err))) {
		if (tree || strncmp(err, "Invalid filter: ", 16))
			abort();
		free(text);
		return 0;
	}
	struct strbuf sql = STRBUF_INIT;
	struct store_params p = STORE_PARAMS_INIT;
	for (int i = 0; i < 3; i++)
		store_params_add(&p, "");
	if (store_filter_compile(tree, c, &sql, &p))
		abort();
	if (!tree != !sql.len)
		abort();
	char *rest = without_columns(sb_str(&sql), c);
	if (check_text(rest, 4) != p.n)
		abort();
	free(rest);
	store_params_release(&p);
	sb_release(&sql);
	list_filter_free(tree);
	free(text);
	return 0;
}
