/* Unit tests: the CLI's config.yaml -> Job mapping, flag precedence, `--`
 * args, accelerator/label flags, YAML output and error rendering (cli/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"

static json_t *fixture(const char *name)
{
	char path[256];
	json_error_t jerr;
	snprintf(path, sizeof(path), "tests/unit/fixtures/%s", name);
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j)
		fail_msg("%s: %s", path, jerr.text);
	return j;
}

static void assert_json_eq(json_t *got, json_t *want)
{
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
		fail_msg("got  %s\nwant %s", g, w);
	}
}

/* The seeds' config.yaml files with their gcloud command lines' flags. */
static void seed_configs_give_the_fixture_bodies(void **state)
{
	static char *user_args[] = { "--user_arg_1", "value_1" };
	static const struct { const char *name; int kind; } seeds[] = {
		{ "seed000_compute_engine_gpus", 1 }, { "seed000_legacy_gpus", 2 },
		{ "seed000_mixed_gpus_us_central1", 3 }, { "seed002_tpu_v2", 4 }, { "seed002_tpu_v3", 4 },
		{ "seed002_legacy_master_cloud_tpu", 4 }, { "seed002_custom_containers_tpu_v2", 5 },
		{ "seed002_custom_containers_tpu_v3", 5 }, { "seed002_pytorch_xla", 5 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		char path[256], jname[256], *err = NULL;
		snprintf(path, sizeof path, "tests/unit/fixtures/cli/%s.yaml", seeds[i].name);
		snprintf(jname, sizeof jname, "%s.json", seeds[i].name);
		json_t *cfg = cli_load_config(path, &err);
		if (!cfg)
			fail_msg("%s", err);
		struct submit_opts o;
		submit_opts_init(&o);
		o.job_id = seeds[i].name;
		o.region = "us-central1";
		if (seeds[i].kind <= 4) {
			o.packages = "gs://my-bucket/staging/trainer-0.1.tar.gz";
			o.module_name = "trainer.task";
		}
		if (seeds[i].kind <= 2)
			o.job_dir = "gs://my-bucket/job-dir";
		if (seeds[i].kind == 1) {
			o.has_user_args = 1;
			o.user_args = user_args;
			o.n_user_args = 2;
		}
		if (seeds[i].kind == 4) {
			o.runtime_version = "2.4";
			o.python_version = "3.7";
		}
		json_t *body = cli_build_submit_body(&o, cfg, &err);
		if (!body)
			fail_msg("%s: %s", seeds[i].name, err);
		json_t *want = fixture(jname);
		assert_json_eq(body, want);
		json_decref(want);
		json_decref(body);
		json_decref(cfg);
	}
}

/* seed000's flag-only command line gives the same body as its config.yaml. */
static void flags_alone_give_the_same_body(void **state)
{
	static char *user_args[] = { "--user_arg_1", "value_1" };
	struct submit_opts o;
	char *err = NULL;
	(void)state;
	submit_opts_init(&o);
	o.job_id = "seed000_compute_engine_gpus";
	o.packages = "gs://my-bucket/staging/trainer-0.1.tar.gz";
	o.module_name = "trainer.task";
	o.job_dir = "gs://my-bucket/job-dir";
	o.region = "us-central1";
	o.scale_tier = "custom";
	o.master_machine_type = "n1-highcpu-16";
	o.master_accelerator = "count=4,type=nvidia-tesla-t4";
	o.worker_count = "9";
	o.worker_machine_type = "n1-highcpu-16";
	o.worker_accelerator = "count=4,type=nvidia-tesla-t4";
	o.ps_count = "3";
	o.ps_machine_type = "n1-highmem-8";
	o.has_user_args = 1;
	o.user_args = user_args;
	o.n_user_args = 2;
	json_t *body = cli_build_submit_body(&o, NULL, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *want = fixture("seed000_compute_engine_gpus.json");
	assert_json_eq(body, want);
	json_decref(want);
	json_decref(body);
}

/* seed002's basic TPU command line, verbatim (--package-path with --staging-bucket). */
static void basic_tpu_command_line(void **state)
{
	static char *args[] = { "--distribution_strategy=tpu", "--data_dir=gs://tfds-data/datasets",
				"--model_dir=gs://BUCKET_NAME/tpu_mnist_1_output" };
	struct submit_opts o;
	char *err = NULL;
	(void)state;
	submit_opts_init(&o);
	o.job_id = "tpu_mnist_1";
	o.staging_bucket = "gs://BUCKET_NAME";
	o.package_path = "official";
	o.module_name = "official.vision.image_classification.mnist_main";
	o.runtime_version = "2.4";
	o.python_version = "3.7";
	o.scale_tier = "BASIC_TPU";
	o.region = "us-central1";
	o.has_user_args = 1;
	o.user_args = args;
	o.n_user_args = 3;
	json_t *body = cli_build_submit_body(&o, NULL, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *want = fixture("seed002_basic_tpu.json");
	assert_json_eq(body, want);
	json_decref(want);
	json_decref(body);
	/* without a staging location */
	o.staging_bucket = NULL;
	assert_null(cli_build_submit_body(&o, NULL, &err));
	assert_non_null(strstr(err, "--staging-bucket"));
	free(err);
}

static void flags_override_config(void **state)
{
	static const char yaml[] =
		"labels: {team: a, env: dev}\n"
		"trainingInput:\n"
		"  scaleTier: BASIC\n"
		"  region: europe-west1\n"
		"  masterConfig:\n"
		"    imageUri: old\n"
		"    containerCommand: [sh, -c, 'echo hi']\n"
		"  args: [--from-config]\n"
		"  workerCount: 2\n";
	char *err = NULL;
	char *uargs[] = { "--a", "1" };
	(void)state;
	json_t *cfg = cli_parse_config("c.yaml", yaml, strlen(yaml), &err);
	assert_non_null(cfg);
	struct submit_opts o;
	submit_opts_init(&o);
	o.job_id = "j1";
	o.region = "us-central1";
	o.master_image_uri = "new";
	o.labels = "team=b";
	o.has_user_args = 1;
	o.user_args = uargs;
	o.n_user_args = 2;
	o.use_chief_in_tf_config = 1;
	json_t *body = cli_build_submit_body(&o, cfg, &err);
	assert_non_null(body);
	json_t *want = json_loads("{\"jobId\":\"j1\",\"labels\":{\"team\":\"b\"},\"trainingInput\":{"
				  "\"scaleTier\":\"BASIC\",\"region\":\"us-central1\",\"workerCount\":\"2\","
				  "\"useChiefInTfConfig\":true,\"args\":[\"--a\",\"1\"],"
				  "\"masterConfig\":{\"imageUri\":\"new\",\"containerCommand\":[\"sh\",\"-c\",\"echo hi\"]}}}",
				  0, NULL);
	assert_json_eq(body, want);
	json_decref(want);
	json_decref(body);
	/* no `--`: the config's args stay; `--` with nothing after: args emptied */
	o.has_user_args = 0;
	body = cli_build_submit_body(&o, cfg, &err);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(body,
		"trainingInput"), "args"), 0)), "--from-config");
	json_decref(body);
	o.has_user_args = 1;
	o.n_user_args = 0;
	body = cli_build_submit_body(&o, cfg, &err);
	assert_int_equal(json_array_size(json_object_get(json_object_get(body, "trainingInput"), "args")), 0);
	json_decref(body);
	/* the config is not modified */
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(cfg,
		"trainingInput"), "masterConfig"), "imageUri")), "old");
	json_decref(cfg);
}

static void accelerator_flag(void **state)
{
	char *err = NULL;
	(void)state;
	json_t *a = cli_parse_accelerator("--master-accelerator", "type=tpu-v3,count=8", &err);
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "type")), "TPU_V3");
	assert_string_equal(json_string_value(json_object_get(a, "count")), "8");
	json_decref(a);
	static const struct { const char *in, *msg; } bad[] = {
		{ "count=4", "Key [type] required" },
		{ "type=nvidia-tesla-t4", "Key [count] required" },
		{ "count=0,type=nvidia-tesla-t4", "greater than 0" },
		{ "count=x,type=nvidia-tesla-t4", "integer" },
		{ "count=4,type=nvidia-tesla-zz", "Invalid choice: 'nvidia-tesla-zz'" },
		{ "count=4,kind=x", "valid keys are [count, type]" },
		{ "count4", "Bad syntax" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_null(cli_parse_accelerator("--master-accelerator", bad[i].in, &err));
		if (!strstr(err, bad[i].msg) || !strstr(err, "--master-accelerator"))
			fail_msg("%s: %s", bad[i].in, err);
		free(err);
	}
}

static void bad_configs_name_file_line_column(void **state)
{
	static const struct { const char *yaml, *msg; } bad[] = {
		{ "trainingInput:\n  scaleTier: [CUSTOM\n", "c.yaml:3:1: invalid YAML" },
		{ "trainingInput:\n  scaleTeir: CUSTOM\n", "c.yaml:2:3: unknown field [scaleTeir] in trainingInput" },
		{ "trainingInput:\n  masterConfig:\n    accelerator: {}\n", "c.yaml:3:5: unknown field [accelerator]" },
		{ "trainingInput:\n  workerCount: many\n", "c.yaml:2:16: workerCount must be an integer" },
		{ "trainingInput:\n  args: --x\n", "c.yaml:2:9: args must be a list" },
		{ "jobs: 1\n", "c.yaml:1:1: unknown field [jobs] in the job" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		assert_null(cli_parse_config("c.yaml", bad[i].yaml, strlen(bad[i].yaml), &err));
		if (!err || !strstr(err, bad[i].msg))
			fail_msg("want %s, got %s", bad[i].msg, err ? err : "(null)");
		free(err);
	}
}

static void submit_refuses_what_gcloud_refuses(void **state)
{
	static const struct { const char *tier, *image, *runtime, *wc, *wt, *msg; } bad[] = {
		{ "custom", "img", NULL, NULL, NULL, "--master-machine-type is required" },
		{ "basic", "img", "2.4", NULL, NULL, "Only one of --master-image-uri, --runtime-version" },
		{ "basic", "img", NULL, "2", NULL, "Must be specified together" },
		{ "basic", NULL, NULL, NULL, NULL, "Non-custom jobs must have packages." },
		{ "huge", "img", NULL, NULL, NULL, "argument --scale-tier: Invalid choice: 'huge'" },
		{ "custom", "img", NULL, "0", "n1-standard-4", "greater than or equal to 1" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct submit_opts o;
		char *err = NULL;
		submit_opts_init(&o);
		o.job_id = "j";
		o.scale_tier = bad[i].tier;
		o.master_image_uri = bad[i].image;
		o.runtime_version = bad[i].runtime;
		o.worker_count = bad[i].wc;
		o.worker_machine_type = bad[i].wt;
		if (bad[i].wt)
			o.master_machine_type = "n1-standard-4";
		assert_null(cli_build_submit_body(&o, NULL, &err));
		if (!err || !strstr(err, bad[i].msg))
			fail_msg("want %s, got %s", bad[i].msg, err ? err : "(null)");
		free(err);
	}
}

static void yaml_output(void **state)
{
	(void)state;
	json_t *j = json_loads("{\"jobId\":\"j\",\"state\":\"QUEUED\",\"trainingInput\":{\"args\":[\"--x\",\"1\"],"
			       "\"workerCount\":\"2\",\"masterConfig\":{\"imageUri\":\"a:b\"}},\"labels\":{}}", 0, NULL);
	struct strbuf sb = STRBUF_INIT;
	cli_yaml(&sb, j);
	assert_string_equal(sb_str(&sb),
			    "jobId: j\n"
			    "labels: {}\n"
			    "state: QUEUED\n"
			    "trainingInput:\n"
			    "  args:\n"
			    "  - '--x'\n"
			    "  - '1'\n"
			    "  masterConfig:\n"
			    "    imageUri: a:b\n"
			    "  workerCount: '2'\n");
	sb_release(&sb);
	json_decref(j);
}

static void error_rendering(void **state)
{
	static const char inval[] =
		"{\"error\":{\"code\":400,\"status\":\"INVALID_ARGUMENT\",\"message\":\"Field: job.training_input.region "
		"Error: bad\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.BadRequest\",\"fieldViolations\":"
		"[{\"field\":\"job.training_input.region\",\"description\":\"bad\"}]}]}}";
	static const char nf[] = "{\"error\":{\"code\":404,\"status\":\"NOT_FOUND\",\"message\":\"The job does not exist.\"}}";
	static const char conflict[] =
		"{\"error\":{\"code\":409,\"status\":\"ALREADY_EXISTS\",\"message\":\"Field: job.job_id Error: exists\"}}";
	struct strbuf sb = STRBUF_INIT;
	(void)state;
	cli_render_error(&sb, "trainplane.ai-platform.jobs.submit.training", 400, "/v1/projects/p/jobs", inval);
	assert_string_equal(sb_str(&sb),
			    "ERROR: (trainplane.ai-platform.jobs.submit.training) INVALID_ARGUMENT: Field: "
			    "job.training_input.region Error: bad\n"
			    "- '@type': type.googleapis.com/google.rpc.BadRequest\n"
			    "  fieldViolations:\n"
			    "  - description: bad\n"
			    "    field: job.training_input.region\n");
	sb_reset(&sb);
	cli_render_error(&sb, "trainplane.ai-platform.jobs.describe", 404, "/v1/projects/p/jobs/nope", nf);
	assert_string_equal(sb_str(&sb), "ERROR: (trainplane.ai-platform.jobs.describe) Job instance [nope] "
					 "not found: The job does not exist.\n");
	sb_reset(&sb);
	cli_render_error(&sb, "trainplane.ai-platform.jobs.cancel", 404, "/v1/projects/p/jobs/nope:cancel", nf);
	assert_non_null(strstr(sb_str(&sb), "Job instance [nope] not found: "));
	sb_reset(&sb);
	cli_render_error(&sb, "x", 409, "/v1/projects/p/jobs", conflict);
	assert_string_equal(sb_str(&sb), "ERROR: (x) Resource in projects [p] is the subject of a conflict: "
					 "Field: job.job_id Error: exists\n");
	sb_reset(&sb);
	cli_render_error(&sb, "x", 502, "/v1/projects/p/jobs", "oops");
	assert_string_equal(sb_str(&sb), "ERROR: (x) HTTP 502: oops\n");
	sb_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seed_configs_give_the_fixture_bodies),
		cmocka_unit_test(flags_alone_give_the_same_body),
		cmocka_unit_test(basic_tpu_command_line),
		cmocka_unit_test(flags_override_config),
		cmocka_unit_test(accelerator_flag),
		cmocka_unit_test(bad_configs_name_file_line_column),
		cmocka_unit_test(submit_refuses_what_gcloud_refuses),
		cmocka_unit_test(yaml_output),
		cmocka_unit_test(error_rendering),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
