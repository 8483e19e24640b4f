/* Unit tests: the quotas file (spec/quota.c): parsing and its errors, the
 * lookup order, checks with and without usage, Google's wording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "quota.h"

static struct catalog *cat;

static struct quotas *parse(const char *json, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loads(json, 0, &je);
	struct quotas *q = NULL;
	assert_non_null(doc);
	int rc = quotas_parse(doc, cat, &q, err, errlen);
	json_decref(doc);
	assert_true(rc == 0 ? q != NULL : q == NULL);
	return q;
}

static const char *FILE_TEXT =
	"{\"default\": {\"limits\": {\"cpus\": 100, \"NVIDIA_TESLA_T4\": 4},"
	"  \"regions\": {\"europe-west4\": {\"limits\": {\"NVIDIA_TESLA_T4\": 2}}}},"
	" \"projects\": {\"big\": {\"weight\": 2.5, \"limits\": {\"NVIDIA_TESLA_T4\": 16,"
	"   \"NVIDIA_TESLA_K80\": 0}, \"preemptible\": {\"NVIDIA_TESLA_T4\": 32},"
	"   \"regions\": {\"us-central1\": {\"limits\": {\"NVIDIA_TESLA_T4\": 8}}}}},"
	" \"preemption\": {\"priority_below\": 100}}";

static void lookup_goes_from_the_most_specific(void **state)
{
	char err[256];
	(void)state;
	struct quotas *q = parse(FILE_TEXT, err, sizeof(err));
	/* the project's region, the project, default's region, default */
	assert_int_equal(quotas_limit(q, "big", "us-central1", QUOTA_STANDARD, "NVIDIA_TESLA_T4"), 8);
	assert_int_equal(quotas_limit(q, "big", "europe-west4", QUOTA_STANDARD, "NVIDIA_TESLA_T4"), 16);
	assert_int_equal(quotas_limit(q, "other", "europe-west4", QUOTA_STANDARD, "NVIDIA_TESLA_T4"), 2);
	assert_int_equal(quotas_limit(q, "other", "us-central1", QUOTA_STANDARD, "NVIDIA_TESLA_T4"), 4);
	assert_int_equal(quotas_limit(q, "big", "us-central1", QUOTA_STANDARD, "cpus"), 100);
	/* a resource named nowhere has no limit; nor has a class named nowhere */
	assert_int_equal(quotas_limit(q, "other", "us-central1", QUOTA_STANDARD, "NVIDIA_TESLA_V100"), -1);
	assert_int_equal(quotas_limit(q, "other", "us-central1", QUOTA_PREEMPTIBLE, "NVIDIA_TESLA_T4"), -1);
	assert_int_equal(quotas_limit(q, "big", "us-central1", QUOTA_PREEMPTIBLE, "NVIDIA_TESLA_T4"), 32);
	assert_true(quotas_weight(q, "big") == 2.5);
	assert_true(quotas_weight(q, "other") == 1);
	assert_int_equal(quotas_preempt_below(q), 100);
	/* no file: no limits */
	assert_int_equal(quotas_limit(NULL, "big", "us-central1", QUOTA_STANDARD, "cpus"), -1);
	assert_true(quotas_weight(NULL, "x") == 1);
	quotas_free(q);
}

static void check_counts_usage_and_names_the_excess(void **state)
{
	char err[256];
	(void)state;
	struct quotas *q = parse(FILE_TEXT, err, sizeof(err));
	struct quota_amounts asked = { 0 }, used = { 0 };
	struct quota_excess ex[4];
	quota_amounts_add(&asked, "cpus", 8);
	quota_amounts_add(&asked, "NVIDIA_TESLA_T4", 2);
	assert_int_equal(quotas_check(q, "other", "us-central1", QUOTA_STANDARD, NULL, &asked, ex, 4), 0);
	quota_amounts_add(&used, "NVIDIA_TESLA_T4", 3);
	assert_int_equal(quotas_check(q, "other", "us-central1", QUOTA_STANDARD, &used, &asked, ex, 4), 1);
	assert_string_equal(ex[0].resource, "NVIDIA_TESLA_T4");
	assert_int_equal(ex[0].asked, 2);
	assert_int_equal(ex[0].used, 3);
	assert_int_equal(ex[0].limit, 4);
	/* exactly at the limit fits */
	used.v[0].count = 2;
	assert_int_equal(quotas_check(q, "other", "us-central1", QUOTA_STANDARD, &used, &asked, ex, 4), 0);
	/* a zero limit refuses any */
	struct quota_amounts k80 = { 0 };
	quota_amounts_add(&k80, "NVIDIA_TESLA_K80", 1);
	assert_int_equal(quotas_check(q, "big", "us-central1", QUOTA_STANDARD, NULL, &k80, ex, 4), 1);

	char *d = quota_ml_description(q, cat, "big", "us-central1", QUOTA_STANDARD, &ex[0]);
	assert_string_equal(d, "The request for 1 K80 accelerators exceeds the allowed maximum of "
			       "0 K80, 8 T4 accelerators.");
	free(d);
	char *m = quota_vertex_metric("NVIDIA_TESLA_T4", QUOTA_STANDARD);
	assert_string_equal(m, "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus");
	free(m);
	m = quota_vertex_metric("NVIDIA_L4", QUOTA_PREEMPTIBLE);
	assert_string_equal(m, "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_l4_gpus");
	free(m);
	m = quota_vertex_metric("cpus", QUOTA_STANDARD);
	assert_string_equal(m, "aiplatform.googleapis.com/custom_model_training_cpus");
	free(m);
	m = quota_vertex_metric("TPU_V3", QUOTA_STANDARD);
	assert_string_equal(m, "aiplatform.googleapis.com/custom_model_training_tpu_v3_cores");
	free(m);
	assert_string_equal(quota_ml_bucket("NVIDIA_A100_80GB"), "A100_80GB");
	quotas_free(q);
}

static void bad_files_are_refused_with_where(void **state)
{
	static const struct {
		const char *json, *error;
	} bad[] = {
		{ "[]", "the quotas file must be a map" },
		{ "{\"projets\": {}}", "projets: unknown key" },
		{ "{\"default\": {\"limits\": {\"NVIDIA_TESLA_T5\": 1}}}",
		  "default.limits: unknown resource NVIDIA_TESLA_T5" },
		{ "{\"default\": {\"limits\": {\"cpus\": -1}}}", "default.limits.cpus: must be a whole number" },
		{ "{\"default\": {\"limits\": {\"cpus\": 1.5}}}", "default.limits.cpus: must be a whole number" },
		{ "{\"projects\": {\"p\": {\"weight\": 0}}}", "projects.p.weight: must be a number above 0" },
		{ "{\"projects\": {\"p\": {\"regions\": {\"mars-1\": {}}}}}", "unknown region mars-1" },
		{ "{\"projects\": {\"p\": {\"regions\": {\"us-central1\": {\"limit\": {}}}}}}",
		  "projects.p.regions.us-central1.limit: unknown key" },
		{ "{\"preemption\": {\"priority_below\": 2000}}", "preemption.priority_below: must be" },
		{ "{\"preemption\": {\"below\": 2}}", "preemption: must be a map with priority_below only" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		struct quotas *q = parse(bad[i].json, err, sizeof(err));
		assert_null(q);
		if (!strstr(err, bad[i].error))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].json, err, bad[i].error);
	}
	/* an empty file: no limits */
	char err[64];
	struct quotas *q = NULL;
	assert_int_equal(quotas_parse(NULL, cat, &q, err, sizeof(err)), 0);
	assert_int_equal(quotas_limit(q, "p", "us-central1", QUOTA_STANDARD, "cpus"), -1);
	quotas_free(q);
}

static void the_limits_listed_for_the_api(void **state)
{
	char err[256];
	(void)state;
	struct quotas *q = parse(FILE_TEXT, err, sizeof(err));
	json_t *l = quotas_limits_json(q, "big", "us-central1");
	char *s = json_dumps(l, JSON_COMPACT | JSON_SORT_KEYS);
	/* (in the order the file names them, most specific section first) */
	assert_string_equal(s, "[{\"limit\":\"8\",\"preemptibleLimit\":\"32\",\"resource\":\"NVIDIA_TESLA_T4\"},"
			       "{\"limit\":\"0\",\"resource\":\"NVIDIA_TESLA_K80\"},"
			       "{\"limit\":\"100\",\"resource\":\"cpus\"}]");
	free(s);
	json_decref(l);
	/* no file: nothing listed (and nothing leaked: the suite runs under ASan too) */
	l = quotas_limits_json(NULL, "big", "us-central1");
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	l = quotas_regions_json(NULL, "big");
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	l = quotas_regions_json(q, "big");
	assert_int_equal(json_array_size(l), 2);
	json_decref(l);
	quotas_free(q);
}

int main(void)
{
	char err[1024];
	if (catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookup_goes_from_the_most_specific),
		cmocka_unit_test(check_counts_usage_and_names_the_excess),
		cmocka_unit_test(bad_files_are_refused_with_where),
		cmocka_unit_test(the_limits_listed_for_the_api),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	catalog_free(cat);
	return rc;
}
