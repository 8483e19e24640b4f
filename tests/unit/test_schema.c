/* Unit tests: the ml v1 Job checked and normalised against its schema,
 * canonical rendering through the descriptors (proto field order, proto3
 * JSON values), the descriptors' own order, and the error envelope. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* A body normalised, then rendered: the bytes a reply shows. */
static char *render_ml(const char *body)
{
	struct violations vs = VIOLATIONS_INIT;
	struct strbuf sb = STRBUF_INIT;
	json_t *j = normalize(body, &vs);

	if (!j)
		fail_msg("%s: %s", body, vs.n ? vs.v[0].description : "?");
	schema_render(&sb, &ml_job_message, j);
	json_decref(j);
	return sb_detach(&sb);
}

static void renders_in_proto_field_order_with_proto3_values(void **state)
{
	(void)state;
	/* Given in another order, int64 as numbers, doubles as written. */
	char *got = render_ml(
		"{\"labels\":{\"z\":\"1\",\"a\":\"2\"},\"trainingInput\":{\"region\":\"us-central1\","
		"\"masterConfig\":{\"imageUri\":\"i:1\"},\"workerCount\":3,\"scaleTier\":\"CUSTOM\","
		"\"masterType\":\"n1-standard-4\",\"hyperparameters\":{\"params\":[{\"type\":\"INTEGER\","
		"\"parameterName\":\"n\",\"maxValue\":10,\"minValue\":1.0},{\"parameterName\":\"lr\","
		"\"type\":\"DOUBLE\",\"minValue\":0.1,\"maxValue\":\"0.30000000000000004\","
		"\"discreteValues\":[0.5,2,1e-7]}],\"goal\":\"MAXIMIZE\"}},\"jobId\":\"j\"}");
	assert_string_equal(got,
		"{\"jobId\":\"j\",\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\","
		"\"workerCount\":\"3\",\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"params\":["
		"{\"parameterName\":\"n\",\"minValue\":1,\"maxValue\":10,\"type\":\"INTEGER\"},"
		"{\"parameterName\":\"lr\",\"minValue\":0.1,\"maxValue\":0.30000000000000004,"
		"\"type\":\"DOUBLE\",\"discreteValues\":[0.5,2,1e-7]}]},\"region\":\"us-central1\","
		"\"masterConfig\":{\"imageUri\":\"i:1\"}},\"labels\":{\"a\":\"2\",\"z\":\"1\"}}");
	free(got);
}

/* What the database gives back (keys in its order, spaces, 1.0) renders as create did. */
static void renders_stored_text_as_the_request_rendered(void **state)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	(void)state;
	char *req = render_ml("{\"trainingInput\":{\"scaleTier\":\"CUSTOM\",\"workerCount\":\"2\","
			      "\"scheduling\":{\"priority\":5,\"maxRunningTime\":\"7200s\"},"
			      "\"hyperparameters\":{\"params\":[{\"minValue\":0.1}]}}}");
	assert_int_equal(schema_render_text(&a, &ml_job_message,
		"{\"trainingInput\": {\"scheduling\": {\"priority\": 5, \"maxRunningTime\": \"7200s\"}, "
		"\"scaleTier\": \"CUSTOM\", \"workerCount\": \"2\", \"hyperparameters\": {\"params\": "
		"[{\"minValue\": 0.10000000000000001}]}}}"), 0);
	assert_string_equal(sb_str(&a), req);
	/* Defaults, nulls, unknown members and values of the wrong type are left out. */
	assert_int_equal(schema_render_text(&b, &ml_job_message,
		"{\"jobId\": \"\", \"unknown\": 1, \"trainingInput\": {\"workerCount\": \"0\", "
		"\"args\": [], \"region\": null, \"scaleTier\": \"BASIC\", \"masterType\": 7, "
		"\"useChiefInTfConfig\": false, \"scheduling\": {}}}"), 0);
	assert_string_equal(sb_str(&b), "{\"trainingInput\":{\"scheduling\":{}}}");
	sb_reset(&b);
	/* A field with explicit presence renders its default when set. */
	sb_reset(&b);
	assert_int_equal(schema_render_text(&b, ml_training_output_message,
					    "{\"consumedMLUnits\": 0.00, \"completedTrialCount\": \"0\"}"), 0);
	assert_string_equal(sb_str(&b), "{\"consumedMLUnits\":0}");
	sb_reset(&b);
	assert_int_equal(schema_render_text(&b, &ml_job_message, "[1]"), -1);
	assert_string_equal(sb_str(&b), "{}");
	sb_release(&a);
	sb_release(&b);
	free(req);
}

static void formats_doubles_shortest_round_trip(void **state)
{
	static const struct { double d; const char *want; } cases[] = {
		{ 0.1, "0.1" }, { 1.0, "1" }, { -2.0, "-2" }, { 0, "0" }, { 1e-7, "1e-7" },
		{ 0.1 + 0.2, "0.30000000000000004" }, { 1e21, "1e+21" }, { 123456789012.0, "123456789012" },
		{ 2.5e-300, "2.5e-300" }, { 1.0 / 3.0, "0.3333333333333333" },
	};
	char buf[40];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		schema_format_double(cases[i].d, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
		assert_true(strtod(buf, NULL) == cases[i].d);
	}
}

/* Vertex: Value content compact with sorted keys, enums by name, oneof by number. */
static void renders_vertex_values_and_enums(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	(void)state;
	assert_int_equal(schema_render_text(&sb, &vertex_custom_job_message,
		"{\"state\": \"JOB_STATE_RUNNING\", \"error\": {\"message\": \"m\", \"code\": 3.0}, "
		"\"jobSpec\": {\"workerPoolSpecs\": [{\"containerSpec\": {\"imageUri\": \"i\"}, "
		"\"replicaCount\": \"1\", \"machineSpec\": {\"machineType\": \"n1-standard-4\", "
		"\"acceleratorType\": 5, \"acceleratorCount\": 1.0, \"reservationAffinity\": "
		"{\"values\": [\"b\", 2.5], \"key\": \"k\"}}}, {}]}, \"displayName\": \"d\", "
		"\"name\": \"n\"}"), 0);
	assert_string_equal(sb_str(&sb),
		"{\"name\":\"n\",\"displayName\":\"d\",\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":"
		"{\"machineType\":\"n1-standard-4\",\"acceleratorType\":\"NVIDIA_TESLA_T4\","
		"\"acceleratorCount\":1,\"reservationAffinity\":{\"key\":\"k\",\"values\":[\"b\",2.5]}},"
		"\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i\"}},{}]},"
		"\"state\":\"JOB_STATE_RUNNING\",\"error\":{\"code\":3,\"message\":\"m\"}}");
	sb_release(&sb);
}

/* The text path (no tree) gives the tree path's bytes for the same JSON. */
static void assert_text_path_is_tree_path(const struct schema_message *msg, const char *text)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	json_t *tree = json_loads(text, JSON_DECODE_INT_AS_REAL, NULL);
	int rc = schema_render_text(&a, msg, text);

	assert_int_equal(rc, json_is_object(tree) ? 0 : -1);
	schema_render(&b, msg, json_is_object(tree) ? tree : NULL);
	if (strcmp(sb_str(&a), sb_str(&b)))
		fail_msg("%s\ntext path %s\ntree path %s", text, sb_str(&a), sb_str(&b));
	json_decref(tree);
	sb_release(&a);
	sb_release(&b);
}

static void text_path_renders_as_the_tree_path(void **state)
{
	static const char *const ml[] = {
		"{}", "[]", "7", "\"x\"", "{\"jobId\": \"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\\n\\b\\f\\/\"}",
		"{ \"labels\" : { \"z\" : \"1\" , \"a\" : \"\\u0001\" , \"m\" : 3 } , \"etag\": \"AAA=\" }",
		"{\"labels\": {\"k\\u0065y\": \"v\", \"a\": \"b\"}}",
		"{\"labels\": {}, \"trainingInput\": {\"args\": [], \"packageUris\": [1, \"a\", null]}}",
		"{\"trainingInput\": {\"workerCount\": \"0\", \"parameterServerCount\": 5.0, "
		"\"evaluatorCount\": 5.5, \"scheduling\": {\"priority\": \"7\", \"strategy\": 2}, "
		"\"hyperparameters\": {\"params\": [{\"minValue\": \"0.25\", \"maxValue\": 1e300, "
		"\"discreteValues\": [1, 2.5, \"3\", true], \"type\": \"NOPE\", \"scaleType\": \"NONE\"}, 7, {}], "
		"\"goal\": \"MINIMIZE\", \"maxTrials\": 0}, \"useChiefInTfConfig\": true, "
		"\"enableWebAccess\": false, \"masterConfig\": null, \"workerConfig\": [], "
		"\"region\": \"\"}, \"trainingInput\": {\"region\": \"r\"}}",
		"{\"trainingOutput\": {\"consumedMLUnits\": 0.00}}",
		"{\"trainingOutput\": {\"consumedMLUnits\": 0.12, \"trials\": [{\"trialId\": \"1\", "
		"\"hyperparameters\": {\"lr\": \"0.1\"}, \"finalMetric\": {\"trainingStep\": \"10\", "
		"\"objectiveValue\": 0.9}}]}, \"predictionOutput\": {\"b\": [1, {\"z\": null, \"a\": 1.0}]}}",
	};
	static const char *const vx[] = {
		"{\"jobSpec\": {\"workerPoolSpecs\": [{\"machineSpec\": {\"acceleratorType\": 5, "
		"\"acceleratorCount\": 2.0, \"reservationAffinity\": {\"values\": [\"x\"], \"key\": 1e21}}, "
		"\"replicaCount\": \"2\", \"containerSpec\": {\"env\": [{\"name\": \"A\", \"value\": \"\"}]}}, {}, "
		"null], \"scheduling\": {\"strategy\": \"SPOT\", \"timeout\": \"60s\"}}, \"_pipeline\": {\"a\": 1}, "
		"\"state\": \"JOB_STATE_RUNNING\", \"error\": {\"message\": \"m\", \"code\": 3}}",
		"{\"pscInterfaceConfig\": {\"b\\u0041\": 1}}",
		/* what a JSON parser refuses, in a member nobody reads (found by fuzzing) */
		"{\"displayName\": \"d\", \"x\": {\"\\mageUri\": 1}}",
		"{\"displayName\": \"d\", \"x\": .1}",
		"{\"displayName\": \"d\", \"x\": 0.33e3003}",
		"{\"displayName\": \"d\", \"x\": \"\\u0000\"}",
		"{\"displayName\": \"d\", \"x\": \"\\udc00\"}",
		"{\"displayName\": \"\xff\xfe\"}",
		"{\"displayName\": \"d\", \"x\": tru}",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(ml) / sizeof(ml[0]); i++)
		assert_text_path_is_tree_path(&ml_job_message, ml[i]);
	for (size_t i = 0; i < sizeof(vx) / sizeof(vx[0]); i++) {
		assert_text_path_is_tree_path(&vertex_custom_job_message, vx[i]);
		assert_text_path_is_tree_path(vertex_custom_job_spec_message, vx[i]);
	}
	/* Every fixture, as a job of either API. */
	static const char *const fixtures[] = {
		"seed000_compute_engine_gpus.json", "seed000_legacy_gpus.json", "seed002_basic_tpu.json",
		"seed002_tpu_v2.json", "seed001_vertex_multi_worker.json",
		"seed001_vertex_single_machine_multi_gpu.json",
	};
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "tests/unit/fixtures/%s", fixtures[i]);
		json_t *j = json_load_file(path, 0, NULL);
		assert_non_null(j);
		char *text = json_dumps(j, JSON_INDENT(2));
		assert_text_path_is_tree_path(&ml_job_message, text);
		assert_text_path_is_tree_path(&vertex_custom_job_message, text);
		free(text);
		json_decref(j);
	}
}

/* Every message lists its numbered fields by number, then the unnumbered ones. */
static void check_order(const struct schema_message *m, int depth)
{
	int last = 0;
	bool unnumbered = false;

	assert_true(depth < 16);
	for (size_t i = 0; i < m->count; i++) {
		const struct schema_field *f = &m->fields[i];
		if (!f->number) {
			unnumbered = true;
		} else if (unnumbered || f->number <= last) {
			fail_msg("%s: field %s (%d) is out of proto field order", m->type_url, f->json,
				 f->number);
		} else {
			last = f->number;
		}
		if (f->kind == SK_MESSAGE && f->message != m)
			check_order(f->message, depth + 1);
	}
}

static void descriptors_are_in_proto_field_order(void **state)
{
	(void)state;
	check_order(&ml_job_message, 0);
	check_order(&vertex_custom_job_message, 0);
	check_order(&vertex_training_pipeline_message, 0);
	/* Vertex's are all numbered. */
	const struct schema_field *f = schema_field_at(&vertex_custom_job_message,
						       "jobSpec.workerPoolSpecs.containerSpec");
	assert_non_null(f);
	assert_int_equal(f->number, 6);
	assert_null(schema_field_at(&vertex_custom_job_message, "jobSpec.nope"));
	assert_null(schema_field_at(&ml_job_message, "jobId.more"));
	f = schema_field_at(&ml_job_message, "trainingInput.masterConfig.acceleratorConfig.type");
	assert_non_null(f);
	assert_int_equal(f->kind, SK_ENUM);
}

static void describes_each_message_once(void **state)
{
	const struct schema_message *roots[] = { &ml_job_message, &vertex_custom_job_message,
						 &vertex_training_pipeline_message };
	(void)state;
	json_t *d = schema_describe(roots, 3), *m;
	size_t i, replica_configs = 0;
	json_array_foreach(json_object_get(d, "messages"), i, m) {
		const char *type = json_string_value(json_object_get(m, "type"));
		assert_non_null(type);
		replica_configs += !strcmp(type, "google.cloud.ml.v1.ReplicaConfig");
		if (!strcmp(type, "google.cloud.aiplatform.v1.Scheduling")) {
			json_t *strategy = json_array_get(json_object_get(m, "fields"), 2);
			assert_string_equal(json_string_value(json_object_get(strategy, "name")), "strategy");
			assert_string_equal(json_string_value(json_object_get(strategy, "kind")), "enum");
			assert_int_equal(json_array_size(json_object_get(strategy, "enum")), 6);
		}
	}
	assert_int_equal(replica_configs, 1);
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normalises_to_canonical_proto3_json),
		cmocka_unit_test(enums_as_numbers_where_the_numbers_are_known),
		cmocka_unit_test(reports_every_structural_error_in_google_wording),
		cmocka_unit_test(refuses_bad_durations_etags_and_duplicates),
		cmocka_unit_test(error_envelope_has_google_shape),
		cmocka_unit_test(renders_in_proto_field_order_with_proto3_values),
		cmocka_unit_test(renders_stored_text_as_the_request_rendered),
		cmocka_unit_test(formats_doubles_shortest_round_trip),
		cmocka_unit_test(renders_vertex_values_and_enums),
		cmocka_unit_test(text_path_renders_as_the_tree_path),
		cmocka_unit_test(descriptors_are_in_proto_field_order),
		cmocka_unit_test(describes_each_message_once),
	};
	return cmocka_run_group_tests_name("schema", tests, NULL, NULL);
}
