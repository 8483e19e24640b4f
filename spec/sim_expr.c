/*
 * sim_expr.c - the emulator's tuning-metric expressions (sim_expr.h): a
 * recursive-descent parser into a node array, and an evaluator over it.
 */
#include "sim_expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT 1000
#define MAX_NODES 256
#define MAX_DEPTH 64

enum op { OP_NUM, OP_VAR, OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_CALL };

enum fn { FN_ABS, FN_EXP, FN_LOG, FN_SQRT, FN_SIN, FN_COS, FN_MIN, FN_MAX, FN_POW };

static const struct {
	const char *name;
	int args;
} fns[] = {
	[FN_ABS] = { "abs", 1 }, [FN_EXP] = { "exp", 1 }, [FN_LOG] = { "log", 1 },
	[FN_SQRT] = { "sqrt", 1 }, [FN_SIN] = { "sin", 1 }, [FN_COS] = { "cos", 1 },
	[FN_MIN] = { "min", 2 }, [FN_MAX] = { "max", 2 }, [FN_POW] = { "pow", 2 },
};

struct node {
	enum op op;
	double num;		/* OP_NUM */
	char *name;		/* OP_VAR */
	enum fn fn;		/* OP_CALL */
	int a, b;		/* operands (node indices), -1 when none */
};

struct sim_expr {
	struct node nodes[MAX_NODES];
	int n;
	int root;
};

struct parser {
	struct sim_expr *e;
	const char *text, *p;
	int depth;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void fail(struct parser *ps, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	if (ps->failed)
		return;
	ps->failed = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "at character %d: %s", (int)(ps->p - ps->text) + 1, why);
}

static int add(struct parser *ps, enum op op, int a, int b)
{
	if (ps->failed)
		return -1;
	if (ps->e->n == MAX_NODES) {
		fail(ps, "more than %d terms", MAX_NODES);
		return -1;
	}
	struct node *n = &ps->e->nodes[ps->e->n];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->a = a;
	n->b = b;
	return ps->e->n++;
}

static void skip(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static bool eat(struct parser *ps, char c)
{
	skip(ps);
	if (*ps->p != c)
		return false;
	ps->p++;
	return true;
}

static int expr(struct parser *ps);

static int primary(struct parser *ps)
{
	skip(ps);
	const char *s = ps->p;
	if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
		char *end;
		double v = strtod(s, &end);
		if (!isfinite(v)) {
			fail(ps, "a number out of range");
			return -1;
		}
		ps->p = end;
		int k = add(ps, OP_NUM, -1, -1);
		if (k >= 0)
			ps->e->nodes[k].num = v;
		return k;
	}
	if (isalpha((unsigned char)*s) || *s == '_') {
		while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
			ps->p++;
		size_t len = (size_t)(ps->p - s);
		skip(ps);
		if (*ps->p != '(') {
			int k = add(ps, OP_VAR, -1, -1);
			if (k >= 0)
				ps->e->nodes[k].name = xasprintf("%.*s", (int)len, s);
			return k;
		}
		size_t f = 0;
		while (f < ARRAY_SIZE(fns) && (strlen(fns[f].name) != len || strncmp(fns[f].name, s, len)))
			f++;
		if (f == ARRAY_SIZE(fns)) {
			ps->p = s;
			fail(ps, "unknown function \"%.*s\" (abs, exp, log, sqrt, sin, cos, min, max, pow)",
			     (int)(len > 32 ? 32 : len), s);
			return -1;
		}
		ps->p++;	/* ( */
		int a = expr(ps), b = -1;
		if (fns[f].args == 2) {
			if (!eat(ps, ','))
				fail(ps, "%s takes two arguments", fns[f].name);
			b = expr(ps);
		}
		if (!eat(ps, ')'))
			fail(ps, "')' expected after the argument%s of %s", fns[f].args == 2 ? "s" : "",
			     fns[f].name);
		int k = add(ps, OP_CALL, a, b);
		if (k >= 0)
			ps->e->nodes[k].fn = (enum fn)f;
		return k;
	}
	if (*s == '(') {
		ps->p++;
		int k = expr(ps);
		if (!eat(ps, ')'))
			fail(ps, "')' expected");
		return k;
	}
	fail(ps, *s ? "a number, a name or '(' expected" : "the expression ends too soon");
	return -1;
}

static int unary(struct parser *ps);

/* power: primary ('^' unary)?  -- right-associative, binds tighter than unary minus */
static int power(struct parser *ps)
{
	int a = primary(ps);
	if (eat(ps, '^'))
		return add(ps, OP_POW, a, unary(ps));
	return a;
}

static int unary(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, "nested more than %d deep", MAX_DEPTH);
		return -1;
	}
	int k;
	if (eat(ps, '-'))
		k = add(ps, OP_NEG, unary(ps), -1);
	else if (eat(ps, '+'))
		k = unary(ps);
	else
		k = power(ps);
	ps->depth--;
	return k;
}

static int term(struct parser *ps)
{
	int a = unary(ps);
	for (;;) {
		if (eat(ps, '*'))
			a = add(ps, OP_MUL, a, unary(ps));
		else if (eat(ps, '/'))
			a = add(ps, OP_DIV, a, unary(ps));
		else
			return a;
	}
}

static int expr(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, "nested more than %d deep", MAX_DEPTH);
		return -1;
	}
	int a = term(ps);
	for (;;) {
		if (eat(ps, '+'))
			a = add(ps, OP_ADD, a, term(ps));
		else if (eat(ps, '-'))
			a = add(ps, OP_SUB, a, term(ps));
		else
			break;
	}
	ps->depth--;
	return a;
}

struct sim_expr *sim_expr_compile(const char *text, char *err, size_t errlen)
{
	struct parser ps = { .text = text, .p = text, .err = err, .errlen = errlen };

	if (!text || strlen(text) > MAX_TEXT) {
		snprintf(err, errlen, "an expression of 1 to %d characters is required", MAX_TEXT);
		return NULL;
	}
	ps.e = xcalloc(1, sizeof(*ps.e));
	ps.e->root = expr(&ps);
	skip(&ps);
	if (!ps.failed && *ps.p)
		fail(&ps, "unexpected '%c'", *ps.p);
	if (ps.failed) {
		sim_expr_free(ps.e);
		return NULL;
	}
	return ps.e;
}

void sim_expr_free(struct sim_expr *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->n; i++)
		free(e->nodes[i].name);
	free(e);
}

struct eval {
	const struct sim_expr *e;
	sim_expr_lookup lookup;
	void *ctx;
	char *err;
	size_t errlen;
	bool failed;
};

static double eval_node(struct eval *ev, int k)
{
	const struct node *n = &ev->e->nodes[k];
	double a = 0, b = 0;

	if (ev->failed)
		return 0;
	if (n->op == OP_NUM)
		return n->num;
	if (n->op == OP_VAR) {
		if (ev->lookup(ev->ctx, n->name, &a)) {
			ev->failed = true;
			snprintf(ev->err, ev->errlen, "\"%s\" is no numeric hyperparameter of the trial",
				 n->name);
		}
		return a;
	}
	a = eval_node(ev, n->a);
	if (n->b >= 0)
		b = eval_node(ev, n->b);
	switch (n->op) {
	case OP_NEG: return -a;
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return a / b;
	case OP_POW: return pow(a, b);
	case OP_CALL:
		switch (n->fn) {
		case FN_ABS: return fabs(a);
		case FN_EXP: return exp(a);
		case FN_LOG: return log(a);
		case FN_SQRT: return sqrt(a);
		case FN_SIN: return sin(a);
		case FN_COS: return cos(a);
		case FN_MIN: return a < b ? a : b;
		case FN_MAX: return a > b ? a : b;
		case FN_POW: return pow(a, b);
		}
		break;
	default:
		break;
	}
	return NAN;
}

int sim_expr_eval(const struct sim_expr *e, sim_expr_lookup lookup, void *ctx, double *out,
		  char *err, size_t errlen)
{
	struct eval ev = { e, lookup, ctx, err, errlen, false };
	double v = eval_node(&ev, e->root);

	if (ev.failed)
		return -1;
	if (!isfinite(v)) {
		snprintf(err, errlen, "the metric is not a finite number");
		return -1;
	}
	*out = v;
	return 0;
}
