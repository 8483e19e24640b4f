/* Unit tests: the emulator's scripted outcomes (spec/sim_rules.h) and their
 * metric expressions (spec/sim_expr.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "sim_expr.h"
#include "sim_rules.h"

static int vars(void *ctx, const char *name, double *value)
{
	(void)ctx;
	if (!strcmp(name, "lr"))
		*value = 0.02;
	else if (!strcmp(name, "layers"))
		*value = 6;
	else
		return -1;
	return 0;
}

static double eval(const char *text)
{
	char err[200];
	double v = NAN;
	struct sim_expr *e = sim_expr_compile(text, err, sizeof(err));
	if (!e)
		fail_msg("%s: %s", text, err);
	if (sim_expr_eval(e, vars, NULL, &v, err, sizeof(err)))
		fail_msg("%s: %s", text, err);
	sim_expr_free(e);
	return v;
}

static void expressions_compute(void **state)
{
	(void)state;
	assert_true(fabs(eval("1 + 2 * 3") - 7) < 1e-12);
	assert_true(fabs(eval("(1 + 2) * 3") - 9) < 1e-12);
	assert_true(fabs(eval("-2^2") + 4) < 1e-12);		/* -(2^2) */
	assert_true(fabs(eval("2^3^2") - 512) < 1e-9);		/* right-associative */
	assert_true(fabs(eval("2 - 3 - 4") + 5) < 1e-12);	/* left-associative */
	assert_true(fabs(eval("8 / 4 / 2") - 1) < 1e-12);
	assert_true(fabs(eval("1 - (lr - 0.01)^2 * 1000 - (layers - 4)^2 / 100") -
			 (1 - 0.0001 * 1000 - 0.04)) < 1e-12);
	assert_true(fabs(eval("max(lr, 1e-1) + min(2, layers) + abs(-3) + pow(2, 10)") -
			 (0.1 + 2 + 3 + 1024)) < 1e-12);
	assert_true(fabs(eval("sqrt(exp(log(16)))") - 4) < 1e-12);
	assert_true(fabs(eval(" +sin(0) + cos(0) ") - 1) < 1e-12);
}

static void expressions_refuse_with_a_position(void **state)
{
	(void)state;
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "", "the expression ends too soon" },
		{ "1 +", "at character 4" },
		{ "(1", "')' expected" },
		{ "1 2", "unexpected '2'" },
		{ "foo(1)", "unknown function" },
		{ "min(1)", "two arguments" },
		{ "lr $ 2", "unexpected '$'" },
		{ "1e999", "out of range" },
	};
	char err[200];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sim_expr *e = sim_expr_compile(bad[i].text, err, sizeof(err));
		if (e || !strstr(err, bad[i].err))
			fail_msg("\"%s\": %s", bad[i].text, e ? "compiled" : err);
	}
	/* Too deep, too long. */
	char deep[400];
	memset(deep, '(', 200);
	strcpy(deep + 200, "1");
	memset(deep + 201, ')', 198);
	deep[399] = '\0';
	assert_null(sim_expr_compile(deep, err, sizeof(err)));
	char *big = malloc(2000);
	memset(big, '1', 1999);
	big[1999] = '\0';
	assert_null(sim_expr_compile(big, err, sizeof(err)));
	free(big);
	/* Unknown names and non-finite results are evaluation errors. */
	struct sim_expr *e = sim_expr_compile("dropout * 2", err, sizeof(err));
	double v;
	assert_non_null(e);
	assert_int_equal(sim_expr_eval(e, vars, NULL, &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "dropout"));
	sim_expr_free(e);
	e = sim_expr_compile("log(0)", err, sizeof(err));
	assert_int_equal(sim_expr_eval(e, vars, NULL, &v, err, sizeof(err)), -1);
	sim_expr_free(e);
}

static struct sim_rules *rules(const char *text, struct violations *vs)
{
	json_t *list = json_loads(text, 0, NULL);
	assert_non_null(list);
	struct sim_rules *r = sim_rules_parse(list, "rules", vs);
	json_decref(list);
	return r;
}

static void rules_match_first_wins(void **state)
{
	(void)state;
	struct violations vs = VIOLATIONS_INIT;
	struct sim_rules *r = rules(
		"[{\"match\": {\"api\": \"vertex\", \"displayName\": \"flaky-*\", \"role\": \"chief\"},"
		"  \"outcome\": \"fail\", \"exitCode\": 3, \"seconds\": 2},"
		" {\"match\": {\"labels\": {\"spot\": \"yes\"}}, \"outcome\": \"preempt\", \"times\": 2},"
		" {\"match\": {\"project\": \"held-?\"}, \"outcome\": \"queue\"},"
		" {\"match\": {\"jobId\": \"tune_*\"}, \"outcome\": \"succeed\", \"metric\": \"lr * 100\"},"
		" {\"match\": {\"role\": \"ps\"}, \"outcome\": \"hang\"}]", &vs);
	assert_non_null(r);
	assert_int_equal(sim_rules_count(r), 5);
	char err[200];
	json_t *spot = json_pack("{s:s}", "spot", "yes");
	struct sim_job v = { "p", "123", "flaky-nightly", NULL, true };
	json_t *o = sim_rules_simulate(r, &v, 0, NULL, NULL, err, sizeof(err));
	assert_string_equal(json_string_value(json_object_get(o, "outcome")), "exit");
	assert_int_equal(json_integer_value(json_object_get(o, "exitCode")), 3);
	assert_true(json_real_value(json_object_get(o, "seconds")) == 2);
	json_decref(o);
	/* workerpool1 is no chief: the next rules don't match it either */
	assert_null(sim_rules_simulate(r, &v, 1, NULL, NULL, err, sizeof(err)));
	/* an ml job never matches api vertex nor a display name */
	struct sim_job m = { "p", "tune_7", NULL, spot, false };
	o = sim_rules_simulate(r, &m, 0, NULL, NULL, err, sizeof(err));
	assert_string_equal(json_string_value(json_object_get(o, "outcome")), "preempt");
	assert_int_equal(json_integer_value(json_object_get(o, "preemptTimes")), 2);
	json_decref(o);
	m.labels = NULL;
	o = sim_rules_simulate(r, &m, 0, vars, NULL, err, sizeof(err));
	assert_true(fabs(json_real_value(json_object_get(o, "metric")) - 2) < 1e-12);
	json_decref(o);
	/* queue: by project glob, for the whole job */
	struct sim_job h = { "held-1", "x", NULL, NULL, false };
	assert_int_equal(sim_rules_holds(r, &h), 2);
	h.project = "held-12";
	assert_int_equal(sim_rules_holds(r, &h), -1);
	/* parameter_server is ps */
	o = sim_rules_simulate(r, &h, 2, NULL, NULL, err, sizeof(err));
	assert_string_equal(json_string_value(json_object_get(o, "outcome")), "hang");
	json_decref(o);
	json_decref(spot);
	sim_rules_free(r);
}

static void rules_report_every_problem(void **state)
{
	(void)state;
	struct violations vs = VIOLATIONS_INIT;
	assert_null(rules("[{\"match\": {\"api\": \"gcp\", \"who\": 1}, \"outcome\": \"fail\"},"
			  " {\"outcome\": \"succeed\", \"metric\": \"(\", \"exitCode\": 2},"
			  " {\"outcome\": \"queue\", \"seconds\": 1}, 7, {}]", &vs));
	const char *want[] = { "rules[0].match.api", "rules[0].match.who", "rules[0].exitCode",
			       "rules[1].metric", "rules[1].exitCode", "rules[2].seconds", "rules[3]",
			       "rules[4].outcome" };
	assert_int_equal(vs.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < vs.n; i++) {
		bool found = false;
		for (size_t k = 0; k < vs.n; k++)
			found = found || !strcmp(vs.v[k].field, want[i]);
		if (!found)
			fail_msg("no violation for %s", want[i]);
	}
	violations_release(&vs);
	json_t *notlist = json_object();
	assert_null(sim_rules_parse(notlist, "rules", &vs));
	assert_int_equal(vs.n, 1);
	json_decref(notlist);
	violations_release(&vs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(expressions_compute),
		cmocka_unit_test(expressions_refuse_with_a_position),
		cmocka_unit_test(rules_match_first_wins),
		cmocka_unit_test(rules_report_every_problem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
