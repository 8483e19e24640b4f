/*
 * yaml_emit.c - cli_yaml(): a JSON value as YAML, byte for byte as gcloud's
 * yaml format prints it. gcloud dumps with ruamel.yaml (typ='safe', block
 * style, indent 2, width 80, allow_unicode, YAML 1.2 resolver), strings
 * holding a newline as literal blocks (`|-`); this is ruamel's emitter for
 * those settings (emitter.py: analyze_scalar, choose_scalar_style,
 * write_plain, write_single_quoted, write_double_quoted, write_literal),
 * restricted to what a JSON value can hold.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"

#define BEST_WIDTH 80

struct emitter {
	struct strbuf *out;
	size_t column;
};

static void put(struct emitter *e, const char *s, size_t n)
{
	sb_add(e->out, s, n);
	for (size_t i = 0; i < n; i++)
		e->column += ((unsigned char)s[i] & 0xC0) != 0x80;
}

static void puts_(struct emitter *e, const char *s)
{
	put(e, s, strlen(s));
}

static void indent_to(struct emitter *e, size_t indent)
{
	sb_addch(e->out, '\n');
	e->column = 0;
	while (e->column < indent) {
		sb_addch(e->out, ' ');
		e->column++;
	}
}

/* --- the YAML 1.2 resolver: would this plain scalar read back as a non-string? --- */

static const char *const implicit_patterns[] = {
	"^(true|True|TRUE|false|False|FALSE)$",
	"^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
	"|[-+]?\\.[0-9_]+([eE][-+][0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))$",
	"^([-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$",
	"^<<$",
	"^(~|null|Null|NULL|)$",
	"^([0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
	"(\\.[0-9]*)?([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?)$",
	"^=$",
};

static int resolves_to_other_type(const char *s)
{
	static regex_t re[ARRAY_SIZE(implicit_patterns)];
	static int compiled;
	if (!compiled) {
		for (size_t i = 0; i < ARRAY_SIZE(implicit_patterns); i++)
			if (regcomp(&re[i], implicit_patterns[i], REG_EXTENDED | REG_NOSUB))
				abort();	/* the patterns are constants */
		compiled = 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(implicit_patterns); i++)
		if (!regexec(&re[i], s, 0, NULL, 0))
			return 1;
	return 0;
}

/* --- analyze_scalar ------------------------------------------------------- */

struct analysis {
	int empty, multiline, allow_block_plain, allow_single_quoted;
};

static int ws_or_end(char c)
{
	return c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static struct analysis analyze(const char *s)
{
	struct analysis a = { 0, 0, 1, 1 };
	size_t len = strlen(s);
	if (!len) {
		a.empty = 1;
		return a;
	}
	int block_ind = 0, line_breaks = 0, special = 0, leading_space = 0, leading_break = 0;
	int trailing_space = 0, trailing_break = 0, break_space = 0, space_break = 0;
	int prev_space = 0, prev_break = 0, preceded_ws = 1;
	if (!strncmp(s, "---", 3) || !strncmp(s, "...", 3))
		block_ind = 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		int followed_ws = ws_or_end(s[i + 1]);
		if (i == 0) {
			if (strchr("#,[]{}&*!|>'\"%@`", ch))
				block_ind = 1;
			if ((ch == '?' || ch == ':') && followed_ws)
				block_ind = 1;
			if (ch == '-' && followed_ws)
				block_ind = 1;
		} else {
			if (ch == ':' && followed_ws)
				block_ind = 1;
			if (ch == '#' && preceded_ws)
				block_ind = 1;
		}
		if (ch == '\n')
			line_breaks = 1;
		if (ch != '\n' && (ch < 0x20 || ch == 0x7F))
			special = 1;	/* bytes >= 0x80: UTF-8, printed as is (allow_unicode) */
		if (ch == ' ') {
			leading_space |= i == 0;
			trailing_space |= i == len - 1;
			break_space |= prev_break;
			prev_space = 1;
			prev_break = 0;
		} else if (ch == '\n') {
			leading_break |= i == 0;
			trailing_break |= i == len - 1;
			space_break |= prev_space;
			prev_space = 0;
			prev_break = 1;
		} else {
			prev_space = prev_break = 0;
		}
		preceded_ws = ws_or_end((char)ch);
	}
	if (leading_space || leading_break || trailing_space || trailing_break)
		a.allow_block_plain = 0;
	if (break_space)
		a.allow_block_plain = a.allow_single_quoted = 0;
	if (special || space_break)
		a.allow_block_plain = a.allow_single_quoted = 0;
	if (line_breaks)
		a.allow_block_plain = 0;
	if (block_ind)
		a.allow_block_plain = 0;
	a.multiline = line_breaks;
	return a;
}

/* --- the writers ---------------------------------------------------------- */

static void write_plain(struct emitter *e, const char *t, size_t indent, int split)
{
	size_t len = strlen(t), start = 0, end = 0;
	int spaces = 0;
	while (end <= len) {
		char ch = end < len ? t[end] : '\0';
		if (spaces) {
			if (ch != ' ') {
				if (start + 1 == end && e->column > BEST_WIDTH && split)
					indent_to(e, indent);
				else
					put(e, t + start, end - start);
				start = end;
			}
		} else if (!ch || ch == ' ') {
			put(e, t + start, end - start);
			start = end;
		}
		if (ch)
			spaces = ch == ' ';
		end++;
	}
}

static void write_single_quoted(struct emitter *e, const char *t, size_t indent, int split)
{
	size_t len = strlen(t), start = 0, end = 0;
	int spaces = 0, breaks = 0;
	puts_(e, "'");
	while (end <= len) {
		char ch = end < len ? t[end] : '\0';
		if (spaces) {
			if (!ch || ch != ' ') {
				if (start + 1 == end && e->column > BEST_WIDTH && split && start != 0 && end != len)
					indent_to(e, indent);
				else
					put(e, t + start, end - start);
				start = end;
			}
		} else if (breaks) {
			if (!ch || ch != '\n') {
				if (t[start] == '\n')
					indent_to(e, 0);
				for (size_t i = start; i < end; i++)
					indent_to(e, 0);
				indent_to(e, indent);
				start = end;
			}
		} else if (!ch || ch == ' ' || ch == '\n' || ch == '\'') {
			if (start < end) {
				put(e, t + start, end - start);
				start = end;
			}
		}
		if (ch == '\'') {
			puts_(e, "''");
			start = end + 1;
		}
		if (ch) {
			spaces = ch == ' ';
			breaks = ch == '\n';
		}
		end++;
	}
	puts_(e, "'");
}

static void write_double_quoted(struct emitter *e, const char *t, size_t indent, int split)
{
	static const char esc_from[] = "\a\b\t\n\v\f\r\x1b\"\\";
	static const char esc_to[] = "abtnvfre\"\\";
	size_t len = strlen(t), start = 0, end = 0;
	puts_(e, "\"");
	while (end <= len) {
		unsigned char ch = end < len ? (unsigned char)t[end] : 0;
		int at_end = end >= len;
		if (at_end || ch == '"' || ch == '\\' || ch < 0x20 || ch == 0x7F) {
			if (start < end) {
				put(e, t + start, end - start);
				start = end;
			}
			if (!at_end) {
				const char *x = ch ? strchr(esc_from, ch) : NULL;
				char buf[8];
				if (x)
					snprintf(buf, sizeof buf, "\\%c", esc_to[x - esc_from]);
				else
					snprintf(buf, sizeof buf, "\\x%02X", ch);
				puts_(e, buf);
				start = end + 1;
			}
		}
		/* ruamel's test, in Python's ints: right after an escape start is
		 * end + 1, and end - start is -1 */
		if (end > 0 && end + 1 < len && (ch == ' ' || start >= end) &&
		    (long long)e->column + ((long long)end - (long long)start) > BEST_WIDTH && split) {
			if (start < end)
				put(e, t + start, end - start);
			puts_(e, "\\");
			if (start < end)
				start = end;
			indent_to(e, indent);
			if (t[start] == ' ')
				puts_(e, "\\");
		}
		end++;
	}
	puts_(e, "\"");
}

/* A string with a newline: a literal block (gcloud's _LiteralLines). */
static void write_literal(struct emitter *e, const char *t, size_t indent)
{
	size_t len = strlen(t);
	puts_(e, "|");
	if (t[0] == ' ' || t[0] == '\n')
		puts_(e, "2");
	if (t[len - 1] != '\n')
		puts_(e, "-");
	else if (len == 1 || t[len - 2] == '\n')
		puts_(e, "+");
	size_t start = 0, end = 0;
	int breaks = 1;
	sb_addch(e->out, '\n');
	e->column = 0;
	while (end <= len) {
		char ch = end < len ? t[end] : '\0';
		if (breaks) {
			if (!ch || ch != '\n') {
				for (size_t i = start; i < end; i++) {
					sb_addch(e->out, '\n');
					e->column = 0;
				}
				for (; ch && e->column < indent; e->column++)
					sb_addch(e->out, ' ');
				start = end;
			}
		} else if (!ch || ch == '\n') {
			put(e, t + start, end - start);
			start = end;
		}
		if (ch)
			breaks = ch == '\n';
		end++;
	}
}

/*
 * A string at the current column, after "key: " or "- " (or a key itself:
 * simple_key, never folded); continuation lines at indent.
 */
static void write_string(struct emitter *e, const char *s, size_t indent, int simple_key)
{
	struct analysis a = analyze(s);
	if (!simple_key && strchr(s, '\n')) {
		write_literal(e, s, indent);
		return;
	}
	if (!resolves_to_other_type(s) && !(simple_key && (a.empty || a.multiline)) && a.allow_block_plain) {
		write_plain(e, s, indent, !simple_key);
		return;
	}
	if (strchr(s, '\'') || strchr(s, '\n'))
		write_double_quoted(e, s, indent, !simple_key);
	else if (a.allow_single_quoted && !(simple_key && a.multiline))
		write_single_quoted(e, s, indent, !simple_key);
	else
		write_double_quoted(e, s, indent, !simple_key);
}

/* gcloud's TransformFloat(precision=6): '{:.6}', and '.1f' below 1e+9. */
static void write_float(struct emitter *e, double d)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.6g", d);
	char *x = strstr(buf, "e+");
	if (x && atoi(x + 2) < 9)
		snprintf(buf, sizeof buf, "%.1f", d);
	else if (!strpbrk(buf, ".eni"))
		strcat(buf, ".0");
	puts_(e, buf);
}

static void write_scalar(struct emitter *e, const json_t *v, size_t indent)
{
	char buf[32];
	if (json_is_string(v)) {
		write_string(e, json_string_value(v), indent, 0);
	} else if (json_is_integer(v)) {
		snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		puts_(e, buf);
	} else if (json_is_real(v)) {
		write_float(e, json_real_value(v));
	} else if (json_is_object(v)) {
		puts_(e, "{}");
	} else if (json_is_array(v)) {
		puts_(e, "[]");
	} else {
		puts_(e, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int nonempty(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

static void node(struct emitter *e, const json_t *v, size_t indent, int inline_first);

/* A block mapping whose keys are at indent; the first on the current line when inline_first. */
static void mapping(struct emitter *e, const json_t *v, size_t indent, int inline_first)
{
	size_t n = json_object_size(v), i = 0;
	const char **keys = xcalloc(n + 1, sizeof *keys);
	const char *k;
	json_t *val;
	json_object_foreach((json_t *)v, k, val)
		keys[i++] = k;
	qsort(keys, n, sizeof *keys, cmp_str);
	for (i = 0; i < n; i++) {
		if (i || !inline_first) {
			if (e->out->len && e->out->buf[e->out->len - 1] != '\n')
				sb_addch(e->out, '\n');
			e->column = 0;
			while (e->column < indent) {
				sb_addch(e->out, ' ');
				e->column++;
			}
		}
		write_string(e, keys[i], indent + 2, 1);
		puts_(e, ":");
		json_t *c = json_object_get(v, keys[i]);
		if (nonempty(c)) {
			node(e, c, json_is_array(c) ? indent : indent + 2, 0);
		} else {
			puts_(e, " ");
			write_scalar(e, c, indent + 2);
		}
	}
	free(keys);
}

static void node(struct emitter *e, const json_t *v, size_t indent, int inline_first)
{
	if (json_is_object(v) && json_object_size(v)) {
		mapping(e, v, indent, inline_first);
	} else if (json_is_array(v) && json_array_size(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) {
			if (i || !inline_first) {
				if (e->out->len && e->out->buf[e->out->len - 1] != '\n')
					sb_addch(e->out, '\n');
				e->column = 0;
				while (e->column < indent) {
					sb_addch(e->out, ' ');
					e->column++;
				}
			}
			puts_(e, "- ");
			if (nonempty(x))
				node(e, x, indent + 2, 1);
			else
				write_scalar(e, x, indent + 2);
		}
	} else {
		write_scalar(e, v, indent);
	}
}

void cli_yaml(struct strbuf *out, const json_t *v)
{
	struct emitter e = { out, 0 };
	node(&e, v, 0, 0);
	sb_addch(out, '\n');
}
