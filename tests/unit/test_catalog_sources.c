/*
 * Unit test: the catalog against Google's sources, table-driven. Each row
 * of tests/unit/catalog_sources.tsv is a machine type with an accelerator
 * and count as Google's documents give them (the file names each source
 * and when it was read), submitted through the real validator: a Vertex
 * CustomJob's jobSpec, or an ml v1 trainingInput; "ok" rows must validate,
 * "refuse" rows must not. Every AcceleratorType value of both APIs is
 * either accepted by some row or refused by one, with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog.h"
#include "validate.h"

#define TABLE "tests/unit/catalog_sources.tsv"

static struct catalog *cat;

static int setup(void **state)
{
	char err[512];
	(void)state;
	if (catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	catalog_free(cat);
	return 0;
}

struct row {
	char api[16], region[32], machine[48], accel[40];
	int count;
	char expect[8];
};

/* The row's job through the validator: how many violations. */
static size_t check(const struct row *r, struct violations *vs)
{
	json_t *job;
	size_t n;
	bool acc = strcmp(r->accel, "-") != 0;

	if (!strcmp(r->api, "vertex")) {
		json_t *ms = json_pack("{s:s}", "machineType", r->machine);
		if (acc) {
			json_object_set_new(ms, "acceleratorType", json_string(r->accel));
			json_object_set_new(ms, "acceleratorCount", json_integer(r->count));
		}
		job = json_pack("{s:[{s:o,s:s,s:{s:s}}]}", "workerPoolSpecs", "machineSpec", ms,
				"replicaCount", "1", "containerSpec", "imageUri", "gcr.io/team/trainer:1");
		n = spec_check_vertex(cat, r->region, job, vs);
	} else {
		job = json_pack("{s:s,s:s,s:s,s:{s:s}}", "scaleTier", "CUSTOM", "region", r->region,
				"masterType", r->machine, "masterConfig", "imageUri",
				"gcr.io/team/trainer:1");
		if (acc) {
			char count[16];
			snprintf(count, sizeof(count), "%d", r->count);
			json_object_set_new(json_object_get(job, "masterConfig"), "acceleratorConfig",
					    json_pack("{s:s,s:s}", "type", r->accel, "count", count));
		}
		n = spec_check_ml(cat, job, vs);
	}
	json_decref(job);
	return n;
}

static void every_row_as_the_sources_say(void **state)
{
	(void)state;
	FILE *f = fopen(TABLE, "r");
	char line[1024];
	int rows = 0, bad = 0, lineno = 0;
	bool seen[CATALOG_MAX_ACCELERATORS] = { false };

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		struct row r;
		if (sscanf(line, "%15[^\t]\t%31[^\t]\t%47[^\t]\t%39[^\t]\t%d\t%7[^\t\n]", r.api, r.region,
			   r.machine, r.accel, &r.count, r.expect) != 6 ||
		    (strcmp(r.expect, "ok") && strcmp(r.expect, "refuse")) ||
		    (strcmp(r.api, "ml") && strcmp(r.api, "vertex")))
			fail_msg("%s:%d: a malformed row", TABLE, lineno);
		struct violations vs = VIOLATIONS_INIT;
		size_t n = check(&r, &vs);
		bool ok = n == 0;
		if (ok != !strcmp(r.expect, "ok")) {
			bad++;
			fprintf(stderr, "%s:%d: %s %s %s %s x %d: expected %s, the validator %s%s%s\n",
				TABLE, lineno, r.api, r.region, r.machine, r.accel, r.count, r.expect,
				ok ? "accepts it" : "refuses it: ", ok ? "" : vs.v[0].field,
				ok ? "" : "");
		}
		int a = catalog_accelerator_find(cat, r.accel);
		if (a >= 0)
			seen[a] = true;
		violations_release(&vs);
		rows++;
	}
	fclose(f);
	printf("[ INFO     ] %d rows of %s checked\n", rows, TABLE);
	assert_int_equal(bad, 0);
	assert_true(rows >= 40);
	/* Every accelerator either API names appears in some row. */
	for (size_t i = 0; i < catalog_accelerator_count(cat); i++) {
		const struct catalog_accelerator *acc = catalog_accelerator(cat, i);
		bool pod = strstr(acc->name, "_POD") && strcmp(acc->name, "TPU_V4_POD");
		if (acc->apis && !seen[i] && !pod)
			fail_msg("%s: no row of %s says whether it is accepted", acc->name, TABLE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_row_as_the_sources_say),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
