#include "filter.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "wire.h"

#define FILTER_MAX_LEN 4096
#define FILTER_MAX_DEPTH 32
#define FILTER_MAX_PARAMS 64

struct parser {
	const char *p;
	const struct filter_field *fields;
	size_t nfields;
	int first_param;
	struct strbuf sql;
	char **params;
	int nparams;
	int depth;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return;
	ps->failed = true;
	n = snprintf(ps->err, ps->errlen, "Invalid filter: ");
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

static void skip_ws(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

/* Is the next token the keyword kw (followed by a space or parenthesis)? */
static bool keyword(struct parser *ps, const char *kw)
{
	size_t n = strlen(kw);
	skip_ws(ps);
	if (strncmp(ps->p, kw, n) || (ps->p[n] && !isspace((unsigned char)ps->p[n]) && ps->p[n] != '('))
		return false;
	ps->p += n;
	return true;
}

static int add_param(struct parser *ps, char *value)
{
	if (ps->nparams >= FILTER_MAX_PARAMS) {
		fail(ps, "too many terms");
		free(value);
		return 0;
	}
	ps->params = xrealloc(ps->params, (size_t)(ps->nparams + 1) * sizeof(*ps->params));
	ps->params[ps->nparams++] = value;
	return ps->first_param + ps->nparams - 1;
}

/* Label keys may hold international characters: UTF-8 bytes are name bytes. */
static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' ||
	       (unsigned char)c >= 0x80;
}

/* A bare word or a quoted string; returns a new string or NULL. */
static char *parse_value(struct parser *ps)
{
	struct strbuf sb = STRBUF_INIT;

	skip_ws(ps);
	if (*ps->p == '"' || *ps->p == '\'') {
		char q = *ps->p++;
		while (*ps->p && *ps->p != q) {
			if (*ps->p == '\\' && ps->p[1])
				ps->p++;
			sb_addch(&sb, *ps->p++);
		}
		if (*ps->p != q) {
			fail(ps, "unterminated string");
			sb_release(&sb);
			return NULL;
		}
		ps->p++;
		return sb_detach(&sb);
	}
	while (*ps->p && !isspace((unsigned char)*ps->p) && *ps->p != '(' && *ps->p != ')')
		sb_addch(&sb, *ps->p++);
	if (!sb.len) {
		fail(ps, "expected a value");
		sb_release(&sb);
		return NULL;
	}
	return sb_detach(&sb);
}

static const struct filter_field *find_field(struct parser *ps, const char *name,
					     const char **map_key)
{
	*map_key = NULL;
	for (size_t i = 0; i < ps->nfields; i++) {
		const struct filter_field *f = &ps->fields[i];
		const char *names[2] = { f->name, f->alias };
		for (int k = 0; k < 2; k++) {
			size_t n = names[k] ? strlen(names[k]) : 0;
			if (!n || strncmp(name, names[k], n))
				continue;
			if (f->type == FILTER_MAP && name[n] == '.' && name[n + 1]) {
				*map_key = name + n + 1;
				return f;
			}
			if (f->type != FILTER_MAP && !name[n])
				return f;
		}
	}
	return NULL;
}

/* A LIKE pattern matching the literal prefix s. */
static char *like_prefix(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' || s[i] == '_' || s[i] == '\\')
			sb_addch(&sb, '\\');
		sb_addch(&sb, s[i]);
	}
	sb_addch(&sb, '%');
	return sb_detach(&sb);
}

static void parse_comparison(struct parser *ps)
{
	char name[256];
	size_t n = 0;
	const char *op;
	const char *key;
	char *value;
	char column[128];

	skip_ws(ps);
	while (name_char(*ps->p) && n + 1 < sizeof(name))
		name[n++] = *ps->p++;
	name[n] = '\0';
	if (!n) {
		fail(ps, *ps->p ? "unexpected '%c'" : "unexpected end of filter", *ps->p);
		return;
	}
	skip_ws(ps);
	static const char *const ops[] = { "<=", ">=", "!=", ":", "=", "<", ">" };
	op = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		if (!strncmp(ps->p, ops[i], strlen(ops[i]))) {
			op = ops[i];
			ps->p += strlen(op);
			break;
		}
	}
	if (!op) {
		fail(ps, "expected an operator after '%s'", name);
		return;
	}
	const struct filter_field *f = find_field(ps, name, &key);
	if (!f) {
		fail(ps, "unknown field '%s'", name);
		return;
	}
	value = parse_value(ps);
	if (!value)
		return;
	if (f->type == FILTER_MAP) {
		snprintf(column, sizeof(column), "(%s->>$%d)", f->column,
			 add_param(ps, xstrdup(key)));
	} else {
		snprintf(column, sizeof(column), "%s", f->column);
	}
	if (ps->failed) {
		free(value);
		return;
	}

	/* x:* : the field is set. */
	if (!strcmp(op, ":") && !strcmp(value, "*")) {
		free(value);
		if (f->type == FILTER_MAP)
			sb_addf(&ps->sql, "%s IS NOT NULL", column);
		else if (f->type == FILTER_TIME)
			sb_addf(&ps->sql, "%s IS NOT NULL", column);
		else
			sb_addf(&ps->sql, "%s <> ''", column);
		return;
	}
	if (f->type == FILTER_TIME) {
		int64_t us;
		if (wire_time_parse(value, &us)) {
			fail(ps, "'%s' is not an RFC 3339 timestamp", value);
			free(value);
			return;
		}
		const char *sqlop = !strcmp(op, ":") ? "=" : !strcmp(op, "!=") ? "<>" : op;
		sb_addf(&ps->sql, "%s %s $%d::timestamptz", column, sqlop, add_param(ps, value));
		return;
	}
	if (f->map_value) {
		const char *mapped = f->map_value(value);
		free(value);
		if (!mapped) {
			sb_addstr(&ps->sql, !strcmp(op, "!=") ? "true" : "false");
			return;
		}
		value = xstrdup(mapped);
	}
	size_t len = strlen(value);
	if (!strcmp(op, ":") && len && value[len - 1] == '*') {
		char *pattern = like_prefix(value, len - 1);
		free(value);
		sb_addf(&ps->sql, "%s LIKE $%d", column, add_param(ps, pattern));
		return;
	}
	const char *sqlop = !strcmp(op, ":") ? "=" : !strcmp(op, "!=") ? "<>" : op;
	/* != also matches rows where a label is absent. */
	if (!strcmp(sqlop, "<>"))
		sb_addf(&ps->sql, "%s IS DISTINCT FROM $%d", column, add_param(ps, value));
	else
		sb_addf(&ps->sql, "%s %s $%d", column, sqlop, add_param(ps, value));
}

static void parse_or(struct parser *ps);

static void parse_unary(struct parser *ps)
{
	if (ps->failed)
		return;
	if (++ps->depth > FILTER_MAX_DEPTH) {
		fail(ps, "nested too deeply");
		return;
	}
	skip_ws(ps);
	if (keyword(ps, "NOT") || (*ps->p == '-' && ps->p++)) {
		/* A comparison on an absent label is NULL; NOT of it must be true. */
		sb_addstr(&ps->sql, "NOT COALESCE((");
		parse_unary(ps);
		sb_addstr(&ps->sql, "), false)");
	} else if (*ps->p == '(') {
		ps->p++;
		sb_addch(&ps->sql, '(');
		parse_or(ps);
		skip_ws(ps);
		if (*ps->p != ')')
			fail(ps, "missing ')'");
		else
			ps->p++;
		sb_addch(&ps->sql, ')');
	} else {
		parse_comparison(ps);
	}
	ps->depth--;
}

/* At the end of a sequence: end of input, ')', or the keyword AND. */
static bool at_sequence_end(struct parser *ps)
{
	skip_ws(ps);
	if (!*ps->p || *ps->p == ')')
		return true;
	const char *save = ps->p;
	bool is_and = keyword(ps, "AND");
	ps->p = save;
	return is_and;
}

/* factor: term {OR term}. OR binds tightest (AIP-160). */
static void parse_factor(struct parser *ps)
{
	size_t start = ps->sql.len;
	bool any_or = false;

	parse_unary(ps);
	while (!ps->failed && keyword(ps, "OR")) {
		sb_addstr(&ps->sql, " OR ");
		parse_unary(ps);
		any_or = true;
	}
	if (any_or && !ps->failed) {
		/* Parenthesise the OR group so the AND around it binds as written. */
		sb_grow(&ps->sql, 1);
		memmove(ps->sql.buf + start + 1, ps->sql.buf + start, ps->sql.len - start + 1);
		ps->sql.buf[start] = '(';
		ps->sql.len++;
		sb_addch(&ps->sql, ')');
	}
}

/* sequence: factor {factor}: juxtaposition is AND. */
static void parse_sequence(struct parser *ps)
{
	parse_factor(ps);
	while (!ps->failed && !at_sequence_end(ps)) {
		sb_addstr(&ps->sql, " AND ");
		parse_factor(ps);
	}
}

/* expression: sequence {AND sequence} */
static void parse_or(struct parser *ps)
{
	parse_sequence(ps);
	while (!ps->failed && keyword(ps, "AND")) {
		sb_addstr(&ps->sql, " AND ");
		parse_sequence(ps);
	}
}

int filter_compile(const char *filter, const struct filter_field *fields, size_t nfields,
		   int first_param, struct filter_sql *out, char *err, size_t errlen)
{
	struct parser ps = { .p = filter ? filter : "", .fields = fields, .nfields = nfields,
			     .first_param = first_param, .sql = STRBUF_INIT, .err = err,
			     .errlen = errlen };

	memset(out, 0, sizeof(*out));
	skip_ws(&ps);
	if (strlen(ps.p) > FILTER_MAX_LEN) {
		snprintf(err, errlen, "Invalid filter: longer than %d characters", FILTER_MAX_LEN);
		return -1;
	}
	if (*ps.p) {
		parse_or(&ps);
		skip_ws(&ps);
		if (!ps.failed && *ps.p)
			fail(&ps, "unexpected '%c'", *ps.p);
	}
	out->where = sb_detach(&ps.sql);
	out->params = ps.params;
	out->nparams = ps.nparams;
	if (ps.failed) {
		filter_sql_release(out);
		return -1;
	}
	return 0;
}

void filter_sql_release(struct filter_sql *f)
{
	for (int i = 0; i < f->nparams; i++)
		free(f->params[i]);
	free(f->params);
	free(f->where);
	memset(f, 0, sizeof(*f));
}
