/* Unit tests: the ml v1 Job checked and normalised against its schema, and the error envelope. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api_error.h"
#include "ml_types.h"
#include "vertex_types.h"

static json_t *normalize(const char *body, struct violations *vs)
{
	json_error_t e;
	json_t *in = json_loads(body, 0, &e);
	assert_non_null(in);
	json_t *out = schema_normalize(&ml_job_message, in, "job", vs);
	json_decref(in);
	return out;
}

static void assert_json(json_t *got, const char *want)
{
	json_t *w = json_loads(want, 0, NULL);
	assert_non_null(w);
	if (!json_equal(got, w)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("got %s\nwant %s", g, want);
	}
	json_decref(w);
}

static void normalises_to_canonical_proto3_json(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	(void)state;
	json_t *j = normalize(
		"{\"job_id\":\"j1\",\"training_input\":{\"scale_tier\":\"CUSTOM\",\"worker_count\":4,"
		"\"parameterServerCount\":\"0\",\"masterConfig\":{\"acceleratorConfig\":"
		"{\"count\":2,\"type\":\"NVIDIA_TESLA_T4\"}},\"scheduling\":{\"maxRunningTime\":\"7200.0s\","
		"\"priority\":\"3\"},\"args\":[],\"useChiefInTfConfig\":false,\"jobDir\":null,"
		"\"hyperparameters\":{\"params\":[{\"parameterName\":\"lr\",\"type\":\"DOUBLE\","
		"\"minValue\":\"0.001\",\"maxValue\":1}]}},"
		"\"state\":\"RUNNING\",\"createTime\":\"whatever\",\"labels\":{\"a\":\"b\"}}", &vs);
	assert_int_equal(vs.n, 0);
	assert_json(j, "{\"jobId\":\"j1\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
		    "\"workerCount\":\"4\",\"masterConfig\":{\"acceleratorConfig\":{\"count\":\"2\","
		    "\"type\":\"NVIDIA_TESLA_T4\"}},\"scheduling\":{\"maxRunningTime\":\"7200s\","
		    "\"priority\":3},\"hyperparameters\":{\"params\":[{\"parameterName\":\"lr\","
		    "\"type\":\"DOUBLE\",\"minValue\":0.001,\"maxValue\":1.0}]}},\"labels\":{\"a\":\"b\"}}");
	json_decref(j);
}

/* The gax clients send enums as numbers; proto numbers, not positions. */
static void enums_as_numbers_where_the_numbers_are_known(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	(void)state;
	json_t *in = json_loads("{\"displayName\":\"d\",\"jobSpec\":{\"workerPoolSpecs\":[{"
				"\"machineSpec\":{\"acceleratorType\":5,\"acceleratorCount\":1}}],"
				"\"scheduling\":{\"strategy\":6}}}", 0, NULL);
	json_t *j = schema_normalize(&vertex_custom_job_message, in, "custom_job", &vs);
	assert_int_equal(vs.n, 0);
	assert_json(j, "{\"displayName\":\"d\",\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":"
		    "{\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":1}}],"
		    "\"scheduling\":{\"strategy\":\"FLEX_START\"}}}");
	json_decref(j);
	json_decref(in);
	/* Strategy 5 is no value of the enum (FLEX_START is 6). */
	in = json_loads("{\"jobSpec\":{\"scheduling\":{\"strategy\":5}}}", 0, NULL);
	assert_null(schema_normalize(&vertex_custom_job_message, in, "custom_job", &vs));
	assert_int_equal(vs.n, 1);
	violations_release(&vs);
	json_decref(in);
	/* ml v1's enums carry no numbers (its clients send names): refused. */
	j = normalize("{\"training_input\":{\"masterConfig\":{\"acceleratorConfig\":{\"type\":5}}}}", &vs);
	assert_null(j);
	assert_int_equal(vs.n, 1);
	violations_release(&vs);
}

static void reports_every_structural_error_in_google_wording(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	(void)state;
	json_t *j = normalize("{\"jobId\":5,\"trainingInput\":{\"masterTypo\":1,\"workerCount\":\"abc\","
			      "\"scaleTier\":\"HUGE\",\"args\":\"x\",\"masterConfig\":{\"imageUri\":[]}},"
			      "\"labels\":{\"k\":1},\"extra\":true}", &vs);
	assert_null(j);
	const char *want[][2] = {
		{ "job.job_id", "Invalid value at 'job.job_id' (TYPE_STRING), 5" },
		{ "job.training_input", "Invalid JSON payload received. Unknown name \"masterTypo\" at "
		  "'job.training_input': Cannot find field." },
		{ "job.training_input.worker_count",
		  "Invalid value at 'job.training_input.worker_count' (TYPE_INT64), \"abc\"" },
		{ "job.training_input.scale_tier",
		  "Invalid value at 'job.training_input.scale_tier' "
		  "(type.googleapis.com/google.cloud.ml.v1.TrainingInput.ScaleTier), \"HUGE\"" },
		{ "job.training_input.args", "Invalid value at 'job.training_input.args' (TYPE_STRING), \"x\"" },
		{ "job.training_input.master_config.image_uri",
		  "Invalid value at 'job.training_input.master_config.image_uri' (TYPE_STRING), []" },
		{ "job.labels[k]", "Invalid value at 'job.labels[k]' (TYPE_STRING), 1" },
		{ "job", "Invalid JSON payload received. Unknown name \"extra\" at 'job': Cannot find field." },
	};
	assert_int_equal(vs.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < vs.n; i++) {
		assert_string_equal(vs.v[i].field, want[i][0]);
		assert_string_equal(vs.v[i].description, want[i][1]);
	}
	violations_release(&vs);
}

static void refuses_bad_durations_etags_and_duplicates(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	(void)state;
	assert_null(normalize("{\"trainingInput\":{\"scheduling\":{\"maxWaitTime\":\"2h\"}},"
			      "\"etag\":\"not base64!\",\"job_id\":\"a\",\"jobId\":\"b\"}", &vs));
	assert_int_equal(vs.n, 3);
	assert_string_equal(vs.v[0].description,
			    "Invalid value at 'job.training_input.scheduling.max_wait_time' "
			    "(type.googleapis.com/google.protobuf.Duration), \"2h\"");
	assert_string_equal(vs.v[1].field, "job.etag");
	assert_string_equal(vs.v[2].description,
			    "Invalid JSON payload received. Duplicate field \"jobId\" at 'job'.");
	violations_release(&vs);
}

static void error_envelope_has_google_shape(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	(void)state;
	violations_add(&vs, "job.job_id", "A job with this id already exists.");
	char *msg = api_violations_message(&vs);
	assert_string_equal(msg, "Field: job.job_id Error: A job with this id already exists.");
	json_t *env = api_error_json(API_ALREADY_EXISTS, 0, msg, api_bad_request_details(&vs));
	assert_json(env, "{\"error\":{\"code\":409,\"status\":\"ALREADY_EXISTS\",\"message\":"
		    "\"Field: job.job_id Error: A job with this id already exists.\",\"details\":"
		    "[{\"@type\":\"type.googleapis.com/google.rpc.BadRequest\",\"fieldViolations\":"
		    "[{\"field\":\"job.job_id\",\"description\":\"A job with this id already exists.\"}]}]}}");
	json_decref(env);
	free(msg);
	env = api_error_json(API_INVALID_ARGUMENT, 413, "too big", NULL);
	assert_json(env, "{\"error\":{\"code\":413,\"status\":\"INVALID_ARGUMENT\",\"message\":\"too big\"}}");
	json_decref(env);
	assert_int_equal(api_code_http(API_FAILED_PRECONDITION), 400);
	assert_int_equal(api_code_http(API_UNAVAILABLE), 503);
	assert_int_equal(api_code_http(API_UNAUTHENTICATED), 401);
	assert_string_equal(api_code_name(API_ABORTED), "ABORTED");
	violations_release(&vs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normalises_to_canonical_proto3_json),
		cmocka_unit_test(enums_as_numbers_where_the_numbers_are_known),
		cmocka_unit_test(reports_every_structural_error_in_google_wording),
		cmocka_unit_test(refuses_bad_durations_etags_and_duplicates),
		cmocka_unit_test(error_envelope_has_google_shape),
	};
	return cmocka_run_group_tests_name("schema", tests, NULL, NULL);
}
