/*
 * sim_expr.h - the arithmetic of the emulator's tuning rules: the metric a
 * simulated trial reports, as an expression over its hyperparameters, e.g.
 * "-(lr - 0.01)^2 - (layers - 4)^2 / 100".
 *
 * Grammar: numbers (1, 0.5, 1e-3), names ([A-Za-z_][A-Za-z0-9_]*), unary
 * minus and plus, + - * / ^ (power, right-associative, above unary minus as
 * in mathematics: -x^2 is -(x^2)), parentheses, and the functions abs exp
 * log sqrt sin cos (one argument), min max pow (two). At most 1000
 * characters, 256 nodes and 64 levels of nesting. Compiled once, evaluated
 * for each trial; pure: nothing but arithmetic.
 */
#ifndef TP_SIM_EXPR_H
#define TP_SIM_EXPR_H

#include <stddef.h>

#include "common.h"

struct sim_expr;

/* Compiles text; NULL with "at character N: why" in err. */
struct sim_expr *sim_expr_compile(const char *text, char *err, size_t errlen);
void sim_expr_free(struct sim_expr *e);	/* NULL is a no-op */

/* Looks a name up: 0 with *value, -1 when unknown. */
typedef int (*sim_expr_lookup)(void *ctx, const char *name, double *value);

/*
 * Evaluates e. 0 with a finite *out, or -1 with why in err (an unknown
 * name, a result that is not a finite number).
 */
int sim_expr_eval(const struct sim_expr *e, sim_expr_lookup lookup, void *ctx, double *out,
		  char *err, size_t errlen) MUST_CHECK;

#endif
