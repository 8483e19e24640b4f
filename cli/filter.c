/*
 * filter.c - --filter: gcloud's filter expressions (`gcloud topic
 * filters`), evaluated on each resource of a list, client-side as gcloud
 * does for these lists (it sends no filter to the server).
 *
 *   KEY=VALUE     equal, ignoring case (a list: any element; a dict: any key or value)
 *   KEY:VALUE     has: VALUE is a substring, ignoring case; VALUE* a prefix,
 *                 *VALUE a suffix, A*B both; KEY:* the key is set
 *   KEY!=VALUE    not equal;   KEY~RE, KEY!~RE  a POSIX extended regex (does not) match
 *   KEY<V KEY<=V KEY>V KEY>=V  numbers as numbers, times (createTime>2026-01-01) as times,
 *                 else strings
 *   KEY:(A B)     any of the values;  NOT TERM, -TERM;  A AND B, A OR B, (A) (B)
 *                 (adjacent terms are ANDed; AND and OR together need parentheses)
 * VALUE is a word or a quoted string. These semantics are gcloud 528's
 * (resource_expr.py, with its current, "deprecated" matching).
 */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "format.h"

enum node_kind { N_AND, N_OR, N_NOT, N_TERM };
enum op { OP_EQ, OP_NE, OP_HAS, OP_LT, OP_LE, OP_GT, OP_GE, OP_RE, OP_NRE };

struct filter {
	enum node_kind kind;
	struct filter *a, *b;
	char *key;
	enum op op;
	char **operands;
	size_t noperands;
	regex_t re;
	int has_re;
};

struct parser {
	const char *text, *s;
	char *err;
};

void filter_free(struct filter *f)
{
	if (!f)
		return;
	filter_free(f->a);
	filter_free(f->b);
	free(f->key);
	for (size_t i = 0; i < f->noperands; i++)
		free(f->operands[i]);
	free(f->operands);
	if (f->has_re)
		regfree(&f->re);
	free(f);
}

static void skip_ws(struct parser *p)
{
	while (isspace((unsigned char)*p->s))
		p->s++;
}

static void fail(struct parser *p, const char *what)
{
	if (!p->err)
		p->err = xasprintf("%s [%.*s *HERE* %s].", what, (int)(p->s - p->text), p->text, p->s);
}

/* The word AND, OR or NOT at p->s, followed by a separator. */
static int keyword(struct parser *p, const char *w)
{
	size_t n = strlen(w);
	return !strncmp(p->s, w, n) && (!p->s[n] || isspace((unsigned char)p->s[n]) || p->s[n] == '(');
}

static char *word(struct parser *p, int in_list)
{
	struct strbuf sb = STRBUF_INIT;
	if (*p->s == '"' || *p->s == '\'') {
		char q = *p->s++;
		while (*p->s && *p->s != q) {
			if (*p->s == '\\' && p->s[1])
				p->s++;
			sb_addch(&sb, *p->s++);
		}
		if (!*p->s) {
			sb_release(&sb);
			fail(p, "Unterminated quoted string");
			return NULL;
		}
		p->s++;
		return sb_detach(&sb);
	}
	while (*p->s && !isspace((unsigned char)*p->s) && *p->s != ')' && *p->s != '(' && (!in_list || *p->s != ','))
		sb_addch(&sb, *p->s++);
	return sb_detach(&sb);
}

static struct filter *parse_expr(struct parser *p);

static void add_operand(struct filter *f, char *w)
{
	f->operands = xrealloc(f->operands, (f->noperands + 1) * sizeof *f->operands);
	f->operands[f->noperands++] = w;
}

static struct filter *parse_term(struct parser *p)
{
	skip_ws(p);
	if (keyword(p, "NOT") || *p->s == '-') {
		p->s += *p->s == '-' ? 1 : 3;
		struct filter *t = parse_term(p);
		if (!t)
			return NULL;
		struct filter *n = xcalloc(1, sizeof *n);
		n->kind = N_NOT;
		n->a = t;
		return n;
	}
	if (*p->s == '(') {
		p->s++;
		struct filter *e = parse_expr(p);
		if (!e)
			return NULL;
		skip_ws(p);
		if (*p->s != ')') {
			filter_free(e);
			fail(p, "Closing ) expected");
			return NULL;
		}
		p->s++;
		return e;
	}
	const char *b = p->s;
	while (*p->s && (isalnum((unsigned char)*p->s) || strchr("_.-[]@", *p->s)))
		p->s++;
	if (p->s == b) {
		fail(p, "Term expected");
		return NULL;
	}
	struct filter *t = xcalloc(1, sizeof *t);
	t->kind = N_TERM;
	t->key = xstrndup(b, (size_t)(p->s - b));
	char *kerr = NULL;
	json_t *probe = fmt_key_get(NULL, t->key, &kerr);
	json_decref(probe);
	if (kerr) {
		free(kerr);
		fail(p, "Invalid key");
		filter_free(t);
		return NULL;
	}
	skip_ws(p);
	static const struct {
		const char *text;
		enum op op;
	} ops[] = { { "!=", OP_NE }, { "!~", OP_NRE }, { "<=", OP_LE }, { ">=", OP_GE }, { "=", OP_EQ },
		    { ":", OP_HAS }, { "<", OP_LT }, { ">", OP_GT }, { "~", OP_RE } };
	size_t i;
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strncmp(p->s, ops[i].text, strlen(ops[i].text)))
			break;
	if (i == ARRAY_SIZE(ops)) {
		fail(p, *p->s ? "Operator expected (one of = != : < <= > >= ~ !~)" : "Operator expected");
		filter_free(t);
		return NULL;
	}
	t->op = ops[i].op;
	p->s += strlen(ops[i].text);
	skip_ws(p);
	if (*p->s == '(' && t->op != OP_RE && t->op != OP_NRE) {
		p->s++;
		for (;;) {
			skip_ws(p);
			if (*p->s == ',') {
				p->s++;
				continue;
			}
			if (*p->s == ')' || !*p->s)
				break;
			char *w = word(p, 1);
			if (!w) {
				filter_free(t);
				return NULL;
			}
			add_operand(t, w);
		}
		if (*p->s != ')' || !t->noperands) {
			fail(p, t->noperands ? "Closing ) expected" : "More tokens expected");
			filter_free(t);
			return NULL;
		}
		p->s++;
	} else {
		if (!*p->s) {
			fail(p, "Term operand expected");
			filter_free(t);
			return NULL;
		}
		char *w;
		if (t->op == OP_RE || t->op == OP_NRE) {	/* a regex: up to the next blank, ( and ) included */
			const char *rb = p->s;
			while (*p->s && !isspace((unsigned char)*p->s))
				p->s++;
			w = xstrndup(rb, (size_t)(p->s - rb));
		} else {
			w = word(p, 0);
		}
		if (!w) {
			filter_free(t);
			return NULL;
		}
		add_operand(t, w);
	}
	for (i = 0; i < t->noperands && t->op == OP_HAS; i++) {
		const char *star = strchr(t->operands[i], '*');
		if (star && strcmp(t->operands[i], "*") && strchr(star + 1, '*')) {
			fail(p, "At most one * expected in : patterns");
			filter_free(t);
			return NULL;
		}
	}
	if (t->op == OP_RE || t->op == OP_NRE) {
		if (regcomp(&t->re, t->operands[0], REG_EXTENDED | REG_NOSUB)) {
			fail(p, "Invalid regular expression");
			filter_free(t);
			return NULL;
		}
		t->has_re = 1;
	}
	return t;
}

static struct filter *parse_expr(struct parser *p)
{
	struct filter *left = parse_term(p);
	int seen = -1;	/* N_AND or N_OR once one is used */
	while (left) {
		skip_ws(p);
		if (!*p->s || *p->s == ')')
			break;
		enum node_kind k = N_AND;
		if (keyword(p, "AND")) {
			p->s += 3;
		} else if (keyword(p, "OR")) {
			k = N_OR;
			p->s += 2;
		}
		if (seen >= 0 && seen != (int)k) {
			fail(p, "Parenthesis grouping is required when AND and OR are combined");
			filter_free(left);
			return NULL;
		}
		seen = (int)k;
		struct filter *right = parse_term(p);
		if (!right) {
			filter_free(left);
			return NULL;
		}
		struct filter *n = xcalloc(1, sizeof *n);
		n->kind = k;
		n->a = left;
		n->b = right;
		left = n;
	}
	return left;
}

struct filter *filter_parse(const char *expr, char **err)
{
	struct parser p = { expr, expr, NULL };
	*err = NULL;
	struct filter *f = parse_expr(&p);
	skip_ws(&p);
	if (f && *p.s) {
		fail(&p, "Unexpected tokens in expression");
		filter_free(f);
		f = NULL;
	}
	if (!f) {
		*err = p.err ? p.err : xasprintf("Invalid filter [%s].", expr);
		return NULL;
	}
	return f;
}

/* --- evaluation ----------------------------------------------------------- */

static char *lower(const char *s)
{
	char *l = xstrdup(s);
	for (char *c = l; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return l;
}

static int numeric(const char *s, double *d)
{
	char *end;
	if (!*s)
		return 0;
	*d = strtod(s, &end);
	return !*end;
}

/* The : pattern of one operand against lowercased text. */
static int has_match(const char *text, const char *operand)
{
	if (!strcmp(operand, "*"))
		return *text != '\0';
	char *o = lower(operand);
	char *star = strchr(o, '*');
	int r;
	if (!star) {
		r = strstr(text, o) != NULL;
	} else {
		*star = '\0';
		const char *head = o, *tail = star + 1;
		size_t tl = strlen(text), hl = strlen(head), sl = strlen(tail);
		r = tl >= hl + sl && !strncmp(text, head, hl) && !strcmp(text + tl - sl, tail);
	}
	free(o);
	return r;
}

/* gcloud's _MatchOneWordInText for = and :. */
static int word_match(enum op op, const json_t *v, const char *operand)
{
	char buf[64];
	const char *text;
	char *owned = NULL;
	double d;
	if (json_is_number(v) || json_is_boolean(v)) {
		double x = json_is_boolean(v) ? json_is_true(v) : json_number_value(v);
		if (numeric(operand, &d) && d == x)
			return 1;
		if ((x == 0 && !strcasecmp(operand, "false")) || (x == 1 && !strcasecmp(operand, "true")))
			return 1;
		if (json_is_boolean(v))
			snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
		else if (json_is_integer(v))
			snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else
			snprintf(buf, sizeof buf, "%.17g", x);
		text = buf;
	} else if (json_is_string(v)) {
		if (!strcmp(json_string_value(v), operand))
			return 1;
		text = owned = lower(json_string_value(v));
	} else if (!v || json_is_null(v)) {
		if (!*operand)
			return 1;
		if (!strcmp(operand, "*") && op == OP_HAS)
			return 0;
		text = "null";
	} else {
		return 0;
	}
	int r;
	if (op == OP_HAS) {
		r = has_match(text, operand);
	} else {
		char *o = lower(operand);
		r = !strcmp(text, o);
		free(o);
	}
	free(owned);
	return r;
}

static int date_like(const char *s)
{
	return strlen(s) >= 19 && isdigit((unsigned char)s[0]) && s[4] == '-' && s[7] == '-' &&
	       (s[10] == 'T' || s[10] == ' ') && s[13] == ':' && s[16] == ':';
}

static int compare(enum op op, const json_t *v, const char *operand)
{
	double x, y;
	int c;
	if (json_is_string(v) && date_like(json_string_value(v)) &&
	    !fmt_parse_time(json_string_value(v), &x) && !fmt_parse_time(operand, &y)) {
		c = (x > y) - (x < y);
	} else if (numeric(operand, &y) && (json_is_number(v) || (json_is_string(v) &&
								  numeric(json_string_value(v), &x)))) {
		if (json_is_number(v))
			x = json_number_value(v);
		c = (x > y) - (x < y);
	} else if (json_is_string(v)) {
		c = strcmp(json_string_value(v), operand);
	} else {
		return 0;
	}
	switch (op) {
	case OP_LT: return c < 0;
	case OP_LE: return c <= 0;
	case OP_GT: return c > 0;
	default: return c >= 0;
	}
}

static int one_value(const struct filter *t, const json_t *v)
{
	if (t->op == OP_RE || t->op == OP_NRE) {
		char buf[64];
		const char *s = json_is_string(v) ? json_string_value(v) : NULL;
		if (!s && json_is_integer(v)) {
			snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			s = buf;
		}
		int m = s && !regexec(&t->re, s, 0, NULL, 0);
		return t->op == OP_RE ? m : !m;
	}
	for (size_t i = 0; i < t->noperands; i++) {
		const char *o = t->operands[i];
		int r;
		if (t->op == OP_EQ || t->op == OP_HAS || t->op == OP_NE) {
			if (json_is_object(v)) {
				/* a dict: any of its keys or values */
				const char *k;
				json_t *x;
				r = 0;
				json_object_foreach((json_t *)v, k, x) {
					json_t *ks = json_string(k);
					r |= word_match(t->op == OP_HAS ? OP_HAS : OP_EQ, ks, o) ||
					     word_match(t->op == OP_HAS ? OP_HAS : OP_EQ, x, o);
					json_decref(ks);
				}
			} else {
				r = word_match(t->op == OP_HAS ? OP_HAS : OP_EQ, v, o);
			}
			if (t->op == OP_NE)
				r = !r;
		} else {
			r = v && compare(t->op, v, o);
		}
		if (r)
			return 1;
	}
	return 0;
}

int filter_match(const struct filter *f, const json_t *resource)
{
	switch (f->kind) {
	case N_AND:
		return filter_match(f->a, resource) && filter_match(f->b, resource);
	case N_OR:
		return filter_match(f->a, resource) || filter_match(f->b, resource);
	case N_NOT:
		return !filter_match(f->a, resource);
	case N_TERM:
		break;
	}
	json_t *v = fmt_key_get(resource, f->key, NULL);
	int r = 0;
	if (json_is_array(v) && json_array_size(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
			r |= one_value(f, e);
	} else {
		r = one_value(f, v);
	}
	json_decref(v);
	return r;
}
