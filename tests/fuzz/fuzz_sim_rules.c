/*
 * fuzz_sim_rules.c - libFuzzer target for the emulator's scripted outcomes
 * (spec/sim_rules.c) and their metric expressions (spec/sim_expr.c).
 *
 * Each input is tried as a rule list (JSON) and, whole, as an expression.
 * Beyond surviving anything (no crash, no undefined behaviour, no leak):
 * a list is either refused with at least one violation or parsed with as
 * many rules as it has; a rule list that parses answers every match; an
 * expression that compiles evaluates to a finite number or says why.
 *
 * Build and run: tools/fuzz.sh run sim_rules (FUZZ_SECONDS, default 600).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_expr.h"
#include "sim_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *ctx, const char *name, double *value)
{
	(void)ctx;
	if (strcmp(name, "lr") && strcmp(name, "layers"))
		return -1;
	*value = name[0] == 'l' && name[1] == 'r' ? 0.01 : 4;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	char err[256];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	json_t *list = json_loadb((const char *)data, size, 0, NULL);
	if (list) {
		struct violations vs = VIOLATIONS_INIT;
		struct sim_rules *r = sim_rules_parse(list, "rules", &vs);
		if (r) {
			if (vs.n || sim_rules_count(r) != json_array_size(list))
				abort();
			json_t *labels = json_pack("{s:s}", "team", "ml");
			struct sim_job job = { "ci-1", "job_1", "flaky-nightly", labels, true };
			(void)sim_rules_holds(r, &job);
			json_t *sim = sim_rules_simulate(r, &job, 0, lookup, NULL, err, sizeof(err));
			json_decref(sim);
			job.vertex = false;
			sim = sim_rules_simulate(r, &job, 2, NULL, NULL, err, sizeof(err));
			json_decref(sim);
			json_decref(labels);
			sim_rules_free(r);
		} else if (!vs.n) {
			abort();
		}
		violations_release(&vs);
		json_decref(list);
	}

	struct sim_expr *e = sim_expr_compile(text, err, sizeof(err));
	if (e) {
		double v;
		if (!sim_expr_eval(e, lookup, NULL, &v, err, sizeof(err)) && !isfinite(v))
			abort();
		sim_expr_free(e);
	}
	free(text);
	return 0;
}
