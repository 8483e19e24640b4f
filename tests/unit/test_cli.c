/* Unit tests: the CLI's config.yaml -> Job mapping, flag precedence, `--`
 * args, accelerator/label flags, YAML output and error rendering, the
 * `ai custom-jobs create` body (--worker-pool-spec, --config CustomJobSpec),
 * the `ai hp-tuning-jobs create` body and --sort-by (cli/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli.h"
#include "ml_types.h"
#include "vertex_types.h"

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
	static char *user_args[] = { (char *)"--user_arg_1", (char *)"value_1" };
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
	static char *user_args[] = { (char *)"--user_arg_1", (char *)"value_1" };
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
	static char *args[] = { (char *)"--distribution_strategy=tpu", (char *)"--data_dir=gs://tfds-data/datasets",
				(char *)"--model_dir=gs://BUCKET_NAME/tpu_mnist_1_output" };
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
	char *uargs[] = { (char *)"--a", (char *)"1" };
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
			    "  - --x\n"
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
	/* Vertex: gcloud's `ai` commands print the status and the message */
	cli_render_error(&sb, "trainplane.ai.hp-tuning-jobs.describe", 404,
			 "/v1/projects/p/locations/us-central1/hyperparameterTuningJobs/7", nf);
	assert_string_equal(sb_str(&sb), "ERROR: (trainplane.ai.hp-tuning-jobs.describe) NOT_FOUND: The job does "
					 "not exist.\n");
	sb_reset(&sb);
	cli_render_error(&sb, "x", 409, "/v1/projects/p/jobs", conflict);
	assert_string_equal(sb_str(&sb), "ERROR: (x) Resource in projects [p] is the subject of a conflict: "
					 "Field: job.job_id Error: exists\n");
	sb_reset(&sb);
	cli_render_error(&sb, "x", 502, "/v1/projects/p/jobs", "oops");
	assert_string_equal(sb_str(&sb), "ERROR: (x) HTTP 502: oops\n");
	sb_release(&sb);
}

/* --- ai custom-jobs create ----------------------------------------------- */

static json_t *parse_json(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (!j)
		fail_msg("bad test JSON: %s", jerr.text);
	return j;
}

/* Today's machine types through --worker-pool-spec: an A3 Ultra with its 8 H200s
 * named, a TPU v6e VM with none (its type carries the chips). */
static void worker_pool_spec_todays_machines(void **state)
{
	char *err = NULL;
	(void)state;
	json_t *pool = cli_parse_worker_pool_spec("machine-type=a3-ultragpu-8g,accelerator-type="
						  "NVIDIA_H200_141GB,accelerator-count=8,"
						  "container-image-uri=i:1", NULL, &err);
	if (!pool)
		fail_msg("%s", err);
	json_t *want = parse_json("{\"machineSpec\":{\"machineType\":\"a3-ultragpu-8g\","
				  "\"acceleratorType\":\"NVIDIA_H200_141GB\",\"acceleratorCount\":8},"
				  "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i:1\"}}");
	assert_true(json_equal(pool, want));
	json_decref(want);
	json_decref(pool);
	pool = cli_parse_worker_pool_spec("machine-type=ct6e-standard-4t,container-image-uri=i:1",
					  NULL, &err);
	if (!pool)
		fail_msg("%s", err);
	want = parse_json("{\"machineSpec\":{\"machineType\":\"ct6e-standard-4t\"},"
			  "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i:1\"}}");
	assert_true(json_equal(pool, want));
	json_decref(want);
	json_decref(pool);
}

/* Two pools from flags, gcloud's mapping (reference §6.4): int64 replicaCount as a
 * string ("1" when not given), acceleratorCount an int32 (1 when only the type is given),
 * --args/--command on every pool, an empty pool as {}. */
static void worker_pool_specs_give_gcloud_body(void **state)
{
	static const char *const pools[] = {
		"machine-type=n1-standard-8,replica-count=1,accelerator-type=NVIDIA_TESLA_T4,"
		"accelerator-count=2,container-image-uri=gcr.io/p/trainer:1",
		"",
		"machine-type=n1-standard-4,replica-count=3,accelerator-type=NVIDIA_TESLA_V100,"
		"container-image-uri=gcr.io/p/trainer:1",
		"machine-type=n1-standard-4,executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest,"
		"python-module=trainer.task",
	};
	struct custom_job_opts o;
	char *err = NULL;
	(void)state;
	custom_job_opts_init(&o);
	o.display_name = "my-job";
	o.pool_specs = pools;
	o.n_pool_specs = 4;
	o.args = "--epochs=3,--lr=0.1";
	o.command = "python,-m,trainer";
	o.labels = "team=ml,env=dev";
	o.python_package_uris = "gs://b/trainer-0.1.tar.gz";
	o.service_account = "sa@p.iam.gserviceaccount.com";
	o.enable_web_access = 1;
	json_t *body = cli_build_custom_job_body(&o, NULL, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *want = parse_json(
		"{\"displayName\":\"my-job\",\"labels\":{\"team\":\"ml\",\"env\":\"dev\"},\"jobSpec\":{"
		"\"serviceAccount\":\"sa@p.iam.gserviceaccount.com\",\"enableWebAccess\":true,"
		"\"workerPoolSpecs\":["
		"{\"machineSpec\":{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_T4\","
		"\"acceleratorCount\":2},\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/trainer:1\","
		"\"args\":[\"--epochs=3\",\"--lr=0.1\"],\"command\":[\"python\",\"-m\",\"trainer\"]}},"
		"{},"
		"{\"machineSpec\":{\"machineType\":\"n1-standard-4\",\"acceleratorType\":\"NVIDIA_TESLA_V100\","
		"\"acceleratorCount\":1},\"replicaCount\":\"3\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/trainer:1\","
		"\"args\":[\"--epochs=3\",\"--lr=0.1\"],\"command\":[\"python\",\"-m\",\"trainer\"]}},"
		"{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"1\",\"pythonPackageSpec\":{"
		"\"executorImageUri\":\"us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest\","
		"\"pythonModule\":\"trainer.task\",\"packageUris\":[\"gs://b/trainer-0.1.tar.gz\"],"
		"\"args\":[\"--epochs=3\",\"--lr=0.1\"]}}]}}");
	assert_json_eq(body, want);
	json_decref(want);
	json_decref(body);
}

/* A CustomJobSpec file: kept as is (int64 as strings), --worker-pool-spec replaces its
 * pools, --args/--network apply over it. */
static void custom_job_config_and_flags(void **state)
{
	static const char yaml[] =
		"workerPoolSpecs:\n"
		"  - machineSpec:\n"
		"      machineType: n1-standard-8\n"
		"      acceleratorType: NVIDIA_TESLA_T4\n"
		"      acceleratorCount: 1\n"
		"    replicaCount: 1\n"
		"    containerSpec:\n"
		"      imageUri: gcr.io/p/trainer:1\n"
		"      args: [--from-file]\n"
		"      env:\n"
		"        - name: FOO\n"
		"          value: bar\n"
		"    diskSpec: {bootDiskType: pd-ssd, bootDiskSizeGb: 100}\n"
		"  -\n"
		"  - machineSpec: {machineType: n1-standard-4}\n"
		"    replicaCount: 2\n"
		"    containerSpec: {imageUri: gcr.io/p/trainer:1}\n"
		"scheduling: {timeout: 86400s, restartJobOnWorkerRestart: false}\n"
		"baseOutputDirectory: {outputUriPrefix: 'gs://bucket/out/'}\n"
		"network: projects/1/global/networks/old\n";
	static const char *const pools[] = { "machine-type=n1-standard-4,container-image-uri=localhost/t:2" };
	struct custom_job_opts o;
	char *err = NULL;
	(void)state;
	json_t *spec = cli_parse_custom_job_spec("spec.yaml", yaml, strlen(yaml), &err);
	if (!spec)
		fail_msg("%s", err);
	json_t *want_spec = parse_json(
		"{\"workerPoolSpecs\":["
		"{\"machineSpec\":{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_T4\","
		"\"acceleratorCount\":1},\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/trainer:1\","
		"\"args\":[\"--from-file\"],\"env\":[{\"name\":\"FOO\",\"value\":\"bar\"}]},"
		"\"diskSpec\":{\"bootDiskType\":\"pd-ssd\",\"bootDiskSizeGb\":100}},"
		"{},"
		"{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"2\","
		"\"containerSpec\":{\"imageUri\":\"gcr.io/p/trainer:1\"}}],"
		"\"scheduling\":{\"timeout\":\"86400s\",\"restartJobOnWorkerRestart\":false},"
		"\"baseOutputDirectory\":{\"outputUriPrefix\":\"gs://bucket/out/\"},"
		"\"network\":\"projects/1/global/networks/old\"}");
	assert_json_eq(spec, want_spec);

	/* config alone, with --args over the file's and --network over the file's */
	custom_job_opts_init(&o);
	o.display_name = "from-file";
	o.args = "--from-flag";
	o.network = "projects/1/global/networks/new";
	json_t *body = cli_build_custom_job_body(&o, spec, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *js = json_object_get(body, "jobSpec");
	assert_string_equal(json_string_value(json_object_get(body, "displayName")), "from-file");
	assert_string_equal(json_string_value(json_object_get(js, "network")), "projects/1/global/networks/new");
	json_t *p0 = json_array_get(json_object_get(js, "workerPoolSpecs"), 0);
	json_t *want_args = parse_json("[\"--from-flag\"]");
	assert_json_eq(json_object_get(json_object_get(p0, "containerSpec"), "args"), want_args);
	assert_json_eq(json_object_get(js, "scheduling"), json_object_get(want_spec, "scheduling"));
	assert_int_equal(json_object_size(json_array_get(json_object_get(js, "workerPoolSpecs"), 1)), 0);
	json_decref(body);

	/* the flag's pools replace the file's; the rest of the file stays */
	o.args = NULL;
	o.pool_specs = pools;
	o.n_pool_specs = 1;
	body = cli_build_custom_job_body(&o, spec, &err);
	if (!body)
		fail_msg("%s", err);
	js = json_object_get(body, "jobSpec");
	json_t *want_pools = parse_json(
		"[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"1\","
		"\"containerSpec\":{\"imageUri\":\"localhost/t:2\"}}]");
	assert_json_eq(json_object_get(js, "workerPoolSpecs"), want_pools);
	assert_json_eq(json_object_get(js, "baseOutputDirectory"), json_object_get(want_spec, "baseOutputDirectory"));
	/* the spec passed in is not modified */
	assert_int_equal(json_array_size(json_object_get(spec, "workerPoolSpecs")), 3);
	json_decref(body);
	json_decref(want_pools);
	json_decref(want_args);
	json_decref(want_spec);
	json_decref(spec);
}

static void worker_pool_spec_errors(void **state)
{
	static const struct { const char *spec, *msg; } bad[] = {
		{ "machine-type", "argument --worker-pool-spec: Bad syntax for dict arg: [machine-type]" },
		{ "machine-type=n1,=x", "Bad syntax for dict arg: [=x]" },
		{ "machine-type=n1,gpu=2,container-image-uri=i", "argument --worker-pool-spec: valid keys are "
		  "[accelerator-count, accelerator-type, container-image-uri, executor-image-uri, extra-dirs, "
		  "extra-packages, local-package-path, machine-type, output-image-uri, python-module, "
		  "replica-count, requirements, script]; received: gpu" },
		{ "replica-count=1,container-image-uri=i", "Key [machine-type] required in dict arg but not provided." },
		{ "machine-type=n1", "Exactly one of keys [container-image-uri, executor-image-uri] is required." },
		{ "machine-type=n1,container-image-uri=i,executor-image-uri=e,python-module=m", "Exactly one of keys" },
		{ "machine-type=n1,executor-image-uri=e", "Key [python-module] required" },
		{ "machine-type=n1,container-image-uri=i,replica-count=two", "replica-count: Value must be an integer "
		  "greater than or equal to 1, not [two]" },
		{ "machine-type=n1,container-image-uri=i,replica-count=0", "not [0]" },
		{ "machine-type=n1,container-image-uri=i,accelerator-count=2", "Key [accelerator-type] required" },
		{ "machine-type=n1,container-image-uri=i,accelerator-type=NVIDIA_TESLA_T4,accelerator-count=x",
		  "accelerator-count: Value must be an integer" },
		{ "machine-type=n1,container-image-uri=i,accelerator-type=nvidia-tesla-t4",
		  "Found invalid value of [accelerator-type]: nvidia-tesla-t4. Available values are [NVIDIA_TESLA_K80," },
		{ "machine-type=n1,local-package-path=.", "key [local-package-path] needs gcloud's local Docker autopackaging" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		json_t *p = cli_parse_worker_pool_spec(bad[i].spec, NULL, &err);
		if (p || !err || !strstr(err, bad[i].msg))
			fail_msg("%s: want %s, got %s", bad[i].spec, bad[i].msg, err ? err : "(no error)");
		free(err);
	}
	/* the first pool may not be empty; some pool must exist */
	static const char *const empty_first[] = { "", "machine-type=n1,container-image-uri=i" };
	struct custom_job_opts o;
	char *err = NULL;
	custom_job_opts_init(&o);
	o.display_name = "x";
	o.pool_specs = empty_first;
	o.n_pool_specs = 2;
	assert_null(cli_build_custom_job_body(&o, NULL, &err));
	assert_string_equal(err, "Invalid value for [--worker-pool-spec]: Empty value is not allowed for the "
				 "first `--worker-pool-spec` flag.");
	free(err);
	o.n_pool_specs = 0;
	json_t *spec = parse_json("{\"scheduling\":{\"timeout\":\"60s\"}}");
	assert_null(cli_build_custom_job_body(&o, spec, &err));
	assert_non_null(strstr(err, "Missing required argument [--worker-pool-spec]"));
	free(err);
	json_decref(spec);
	o.pool_specs = empty_first + 1;
	o.n_pool_specs = 1;
	o.labels = "novalue";
	assert_null(cli_build_custom_job_body(&o, NULL, &err));
	assert_non_null(strstr(err, "argument --labels: Bad syntax for dict arg: [novalue]"));
	free(err);
}

static void custom_job_config_errors(void **state)
{
	static const struct { const char *yaml, *msg; } bad[] = {
		{ "workerPoolSpecs:\n  - machineSpec: {machineType: [n1\n", "s.yaml:3:1: invalid YAML" },
		{ "workerPoolSpecs:\n  - machineSpec: {machineType: n1}\n    replica_count: 1\n",
		  "s.yaml:3:5: unknown field [replica_count] in workerPoolSpecs" },
		{ "workerPoolSpecs:\n  - containerSpec: {imageUri: i, comand: [a]}\n",
		  "s.yaml:2:34: unknown field [comand] in containerSpec" },
		{ "workerPoolSpecs:\n  - replicaCount: two\n", "s.yaml:2:19: replicaCount must be an integer, not [two]" },
		{ "workerPoolSpecs: {machineSpec: {}}\n", "s.yaml:1:18: workerPoolSpecs must be a list" },
		{ "trainingInput:\n  scaleTier: BASIC\n", "s.yaml:1:1: unknown field [trainingInput] in the CustomJobSpec" },
		{ "scheduling:\n  restartJobOnWorkerRestart: maybe\n",
		  "s.yaml:2:30: restartJobOnWorkerRestart must be true or false, not [maybe]" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		assert_null(cli_parse_custom_job_spec("s.yaml", bad[i].yaml, strlen(bad[i].yaml), &err));
		if (!err || !strstr(err, bad[i].msg))
			fail_msg("want %s, got %s", bad[i].msg, err ? err : "(null)");
		free(err);
	}
	char *err = NULL;
	assert_null(cli_load_custom_job_spec("/nonexistent/spec.yaml", &err));
	assert_string_equal(err, "/nonexistent/spec.yaml: No such file or directory");
	free(err);
}

/* JSON equality with numbers compared by value: gcloud sends a double 40 as 40.0. */
static bool json_same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_same(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v)
			if (!json_same(v, json_object_get(b, k)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

static void assert_json_same(json_t *got, json_t *want)
{
	if (!json_same(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
		fail_msg("got  %s\nwant %s", g, w);
	}
}

/*
 * Google's hyperparameter config file (trainingInput.hyperparameters) goes
 * out as gcloud 528 sent it (fixture: its --log-http body), but for the
 * enableWebAccess: false gcloud adds (its flag's default; proto3's unset).
 */
static void ml_hyperparameters_give_gcloud_body(void **state)
{
	char *err = NULL;
	(void)state;
	json_t *cfg = cli_load_config("tests/unit/fixtures/cli/ml_hyperparameters.yaml", &err);
	if (!cfg)
		fail_msg("%s", err);
	struct submit_opts o;
	submit_opts_init(&o);
	o.job_id = "hp_docs";
	o.region = "us-central1";
	o.packages = "gs://my-bucket/staging/trainer-0.1.tar.gz";
	o.module_name = "trainer.task";
	json_t *body = cli_build_submit_body(&o, cfg, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *want = fixture("ml_hyperparameters_gcloud.json");
	json_object_del(json_object_get(want, "trainingInput"), "enableWebAccess");
	assert_json_same(body, want);
	json_decref(want);
	json_decref(body);
	json_decref(cfg);
}

/*
 * `ai hp-tuning-jobs create`: gcloud 528's body for the config and flags
 * (fixture: its --log-http body); the counts' defaults; the flags' errors.
 */
static void hp_tuning_job_config_and_flags(void **state)
{
	char *err = NULL;
	(void)state;
	json_t *cfg = cli_load_hp_tuning_job("tests/unit/fixtures/cli/hp_tuning_job.yaml", &err);
	if (!cfg)
		fail_msg("%s", err);
	struct hp_tuning_job_opts o;
	hp_tuning_job_opts_init(&o);
	o.display_name = "sweep-1";
	o.algorithm = "grid-search";
	o.max_trial_count = "6";
	o.parallel_trial_count = "2";
	o.network = "projects/1/global/networks/n";
	o.service_account = "sa@p.iam.gserviceaccount.com";
	o.enable_web_access = 1;
	o.kms_key = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k";
	o.labels = "team=ml";
	json_t *body = cli_build_hp_tuning_job_body(&o, cfg, &err);
	if (!body)
		fail_msg("%s", err);
	json_t *want = fixture("hp_tuning_job_gcloud.json");
	assert_json_same(body, want);
	json_decref(want);
	json_decref(body);

	/* no flags: the file's values; --max-failed-trial-count over the file's */
	hp_tuning_job_opts_init(&o);
	o.max_failed_trial_count = "0";
	o.algorithm = "RANDOM_SEARCH";	/* the API's name too */
	o.enable_dashboard_access = 1;
	body = cli_build_hp_tuning_job_body(&o, cfg, &err);
	if (!body)
		fail_msg("%s", err);
	assert_string_equal(json_string_value(json_object_get(body, "displayName")), "TestHpTuningJob");
	assert_int_equal(json_integer_value(json_object_get(body, "maxTrialCount")), 1);
	assert_int_equal(json_integer_value(json_object_get(body, "maxFailedTrialCount")), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(body, "studySpec"), "algorithm")),
			    "RANDOM_SEARCH");
	assert_true(json_is_true(json_object_get(json_object_get(body, "trialJobSpec"), "enableDashboardAccess")));
	json_decref(body);
	json_decref(cfg);

	/* neither the file nor the flags: maxTrialCount and parallelTrialCount 1, as gcloud sends */
	const char bare[] = "studySpec: {metrics: [{metricId: m, goal: MAXIMIZE}]}\n";
	cfg = cli_parse_hp_tuning_job("b.yaml", bare, strlen(bare), &err);
	if (!cfg)
		fail_msg("%s", err);
	hp_tuning_job_opts_init(&o);
	o.display_name = "b";
	body = cli_build_hp_tuning_job_body(&o, cfg, &err);
	json_t *want_bare = parse_json("{\"displayName\":\"b\",\"maxTrialCount\":1,\"parallelTrialCount\":1,"
				       "\"studySpec\":{\"metrics\":[{\"metricId\":\"m\",\"goal\":\"MAXIMIZE\"}]}}");
	assert_json_eq(body, want_bare);
	json_decref(want_bare);
	json_decref(body);

	static const struct { const char *flag, *value, *msg; } bad[] = {
		{ "--max-trial-count", "0", "argument --max-trial-count: Value must be an integer from 1 to "
		  "2147483647; received: 0" },
		{ "--max-trial-count", "ten", "received: ten" },
		{ "--parallel-trial-count", "2147483648", "argument --parallel-trial-count: Value must be an "
		  "integer from 1 to 2147483647" },
		{ "--max-failed-trial-count", "-1", "argument --max-failed-trial-count: Value must be an integer "
		  "from 0 to 2147483647; received: -1" },
		{ "--algorithm", "bayesian", "argument --algorithm: Invalid choice: 'bayesian'. Valid choices are "
		  "[algorithm-unspecified, grid-search, random-search]." },
		{ "--kms-key", "projects/p/locations/l/keyRings/r", "argument --kms-key: Invalid value "
		  "[projects/p/locations/l/keyRings/r]: give the key's full name, "
		  "projects/PROJECT/locations/LOCATION/keyRings/KEYRING/cryptoKeys/KEY." },
		{ "--kms-key", "projects/p/locations/l/keyRings//cryptoKeys/k", "argument --kms-key: Invalid value" },
		{ "--labels", "team", "argument --labels: Bad syntax for dict arg: [team]" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		hp_tuning_job_opts_init(&o);
		const char **slot = !strcmp(bad[i].flag, "--max-trial-count") ? &o.max_trial_count
			: !strcmp(bad[i].flag, "--parallel-trial-count") ? &o.parallel_trial_count
			: !strcmp(bad[i].flag, "--max-failed-trial-count") ? &o.max_failed_trial_count
			: !strcmp(bad[i].flag, "--algorithm") ? &o.algorithm
			: !strcmp(bad[i].flag, "--kms-key") ? &o.kms_key : &o.labels;
		*slot = bad[i].value;
		err = NULL;
		body = cli_build_hp_tuning_job_body(&o, cfg, &err);
		if (body || !err || !strstr(err, bad[i].msg))
			fail_msg("%s %s: want %s, got %s", bad[i].flag, bad[i].value, bad[i].msg,
				 err ? err : "(no error)");
		free(err);
	}
	json_decref(cfg);
}

static void hp_tuning_job_config_errors(void **state)
{
	static const struct { const char *yaml, *msg; } bad[] = {
		{ "studySpec:\n  metrics:\n  - metricId: m\n    goal: MAXIMUM\n",
		  "h.yaml:4:11: goal must be one of [GOAL_TYPE_UNSPECIFIED, MAXIMIZE, MINIMIZE], not [MAXIMUM]" },
		{ "studySpec:\n  parameters:\n  - parameterId: p\n    integerValueSpec: {minValue: low}\n",
		  "h.yaml:4:34: minValue must be an integer, not [low]" },
		{ "studySpec:\n  parameters:\n  - parameterId: p\n    doubleValueSpec: {min: 1}\n",
		  "h.yaml:4:23: unknown field [min] in doubleValueSpec" },
		{ "maxTrialCount: many\n", "h.yaml:1:16: maxTrialCount must be an integer, not [many]" },
		{ "trialJobSpec:\n  workerPoolSpecs:\n  - replica_count: 1\n",
		  "h.yaml:3:5: unknown field [replica_count] in workerPoolSpecs" },
		{ "workerPoolSpecs: []\n", "h.yaml:1:1: unknown field [workerPoolSpecs] in the HyperparameterTuningJob" },
		{ "studySpec:\n  algorithm: BAYESIAN\n", "h.yaml:2:14: algorithm must be one of [ALGORITHM_UNSPECIFIED, "
		  "GRID_SEARCH, RANDOM_SEARCH], not [BAYESIAN]" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		assert_null(cli_parse_hp_tuning_job("h.yaml", bad[i].yaml, strlen(bad[i].yaml), &err));
		if (!err || !strstr(err, bad[i].msg))
			fail_msg("want %s, got %s", bad[i].msg, err ? err : "(null)");
		free(err);
	}
	/* a describe output fed back: the trials, state and times are dropped */
	const char described[] = "name: projects/p/locations/l/hyperparameterTuningJobs/1\ndisplayName: d\n"
				 "state: JOB_STATE_SUCCEEDED\ntrials:\n- id: '1'\n  state: SUCCEEDED\n"
				 "  finalMeasurement: {stepCount: '2', metrics: [{metricId: m, value: 0.5}]}\n"
				 "createTime: '2026-01-01T00:00:00Z'\nmaxTrialCount: 2\n";
	char *err = NULL;
	json_t *cfg = cli_parse_hp_tuning_job("d.yaml", described, strlen(described), &err);
	if (!cfg)
		fail_msg("%s", err);
	json_t *want = parse_json("{\"displayName\":\"d\",\"maxTrialCount\":2}");
	assert_json_eq(cfg, want);
	json_decref(want);
	json_decref(cfg);
}

static char *ids(json_t *arr, const char *key)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
		sb_addf(&sb, "%s%s", i ? "," : "", json_string_value(json_object_get(e, key)));
	return sb_detach(&sb);
}

static void sort_by(void **state)
{
	(void)state;
	json_t *a = parse_json(
		"[{\"id\":\"a\",\"createTime\":\"2026-01-02T00:00:00Z\",\"n\":\"10\",\"s\":{\"state\":\"X\"}},"
		"{\"id\":\"b\",\"createTime\":\"2026-01-01T00:00:00Z\",\"n\":\"9\",\"s\":{\"state\":\"Y\"}},"
		"{\"id\":\"c\",\"createTime\":\"2026-01-03T00:00:00Z\",\"n\":\"9\"},"
		"{\"id\":\"d\",\"createTime\":\"2026-01-01T00:00:00Z\",\"n\":\"11\",\"s\":{\"state\":\"X\"}}]");
	char *err = NULL, *got;
	assert_int_equal(cli_sort(a, "createTime", &err), 0);
	assert_string_equal(got = ids(a, "id"), "b,d,a,c");	/* stable on ties */
	free(got);
	assert_int_equal(cli_sort(a, "~create_time", &err), 0);	/* snake_case works too */
	assert_string_equal(got = ids(a, "id"), "c,a,b,d");
	free(got);
	assert_int_equal(cli_sort(a, "n", &err), 0);	/* int64 strings as numbers */
	assert_string_equal(got = ids(a, "id"), "c,b,a,d");
	free(got);
	assert_int_equal(cli_sort(a, "s.state,~id", &err), 0);	/* missing first, then X, Y */
	assert_string_equal(got = ids(a, "id"), "c,d,a,b");
	free(got);
	assert_int_equal(cli_sort(a, "~", &err), -1);
	assert_string_equal(err, "argument --sort-by: Invalid field [~].");
	free(err);
	assert_int_equal(cli_sort(a, "a..b", &err), -1);
	free(err);
	json_decref(a);
}

/* The server accepts scheduling.strategy; the CLI's --config used to refuse it. */
static void config_accepts_what_the_server_accepts(void **state)
{
	char *err = NULL;
	(void)state;
	const char yaml[] = "trainingInput:\n  scheduling:\n    strategy: LOW_COST\n"
			    "    resilientToWorkerRestart: yes\n";
	json_t *cfg = cli_parse_config("c.yaml", yaml, strlen(yaml), &err);
	if (!cfg)
		fail_msg("%s", err);
	json_t *want = parse_json("{\"trainingInput\":{\"scheduling\":{\"strategy\":\"LOW_COST\","
				  "\"resilientToWorkerRestart\":true}}}");
	assert_json_eq(cfg, want);
	json_decref(want);
	json_decref(cfg);
	const char vx[] = "scheduling: {strategy: FLEX_START, maxWaitDuration: 3600s}\n";
	cfg = cli_parse_custom_job_spec("s.yaml", vx, strlen(vx), &err);
	if (!cfg)
		fail_msg("%s", err);
	json_decref(cfg);
}

/* A sample YAML value of field f's kind, which the server would take. */
static void sample_value(struct strbuf *sb, const struct schema_field *f)
{
	switch (f->kind) {
	case SK_BOOL: sb_addstr(sb, "true"); break;
	case SK_INT32: case SK_INT64: sb_addstr(sb, "2"); break;
	case SK_DOUBLE: sb_addstr(sb, "0.5"); break;
	case SK_ENUM: sb_addstr(sb, f->enumeration->names[f->enumeration->count - 1]); break;
	case SK_DURATION: sb_addstr(sb, "60s"); break;
	case SK_TIMESTAMP: sb_addstr(sb, "'2026-01-01T00:00:00Z'"); break;
	case SK_STRUCT: sb_addstr(sb, "{k: [1, x]}"); break;
	case SK_MESSAGE: sb_addstr(sb, "{}"); break;
	default: sb_addstr(sb, "x"); break;
	}
}

/*
 * Every field of every message below root, one file each, nested at its
 * path in flow style: the CLI takes each with its kind's value (it reads
 * the descriptors the server checks with, so no field can be the server's
 * alone), and keeps none of the output-only ones.
 */
static void each_field(const struct schema_message *m, const char *prefix, const char *suffix,
		       json_t *(*parse_fn)(const char *, const char *, size_t, char **), int depth,
		       size_t *checked)
{
	if (depth > 4)
		return;
	for (size_t i = 0; i < m->count; i++) {
		const struct schema_field *f = &m->fields[i];
		struct strbuf sb = STRBUF_INIT;
		char *err = NULL;
		sb_addf(&sb, "%s%s: ", prefix, f->json);
		if (f->map)
			sb_addstr(&sb, "{k: ");
		else if (f->repeated)
			sb_addch(&sb, '[');
		sample_value(&sb, f);
		sb_addstr(&sb, f->map ? "}" : f->repeated ? "]" : "");
		sb_addf(&sb, "%s\n", suffix);
		json_t *got = parse_fn("f.yaml", sb.buf, sb.len, &err);
		if (!got)
			fail_msg("%s: %s", sb.buf, err);
		char *text = json_dumps(got, JSON_COMPACT);
		if (f->output_only != !strstr(text, f->json) && strcmp(f->json, "type") &&
		    strcmp(f->json, "state"))
			fail_msg("%s -> %s", sb.buf, text);
		free(text);
		json_decref(got);
		(*checked)++;
		if (f->kind == SK_MESSAGE && !f->output_only && f->message != m) {
			char *p = xasprintf("%s%s: %s{", prefix, f->json, f->repeated ? "[" : "");
			char *s2 = xasprintf("}%s%s", f->repeated ? "]" : "", suffix);
			each_field(f->message, p, s2, parse_fn, depth + 1, checked);
			free(p);
			free(s2);
		}
		sb_release(&sb);
	}
}

static void config_fields_are_the_descriptors(void **state)
{
	size_t checked = 0;
	(void)state;
	/* ml v1: the job's fields; trainingInput's, nested in flow style. */
	each_field(&ml_job_message, "{", "}", cli_parse_config, 0, &checked);
	each_field(vertex_custom_job_spec_message, "{", "}", cli_parse_custom_job_spec, 0, &checked);
	each_field(&vertex_hyperparameter_tuning_job_message, "{", "}", cli_parse_hp_tuning_job, 0, &checked);
	assert_true(checked > 100);
	/* An enum's value is checked, with its choices. */
	char *err = NULL;
	const char bad[] = "trainingInput:\n  scaleTier: HUGE\n";
	assert_null(cli_parse_config("c.yaml", bad, strlen(bad), &err));
	assert_string_equal(err, "c.yaml:2:14: scaleTier must be one of [BASIC, STANDARD_1, PREMIUM_1, "
				 "BASIC_GPU, BASIC_TPU, CUSTOM], not [HUGE]");
	free(err);
	/* A describe output fed back: output-only fields are dropped, as the server drops them. */
	const char described[] = "jobId: j\nstate: RUNNING\ncreateTime: '2026-01-01T00:00:00Z'\n"
				 "trainingOutput: {consumedMLUnits: 1.5}\n";
	json_t *cfg = cli_parse_config("d.yaml", described, strlen(described), &err);
	if (!cfg)
		fail_msg("%s", err);
	json_t *want = parse_json("{\"jobId\":\"j\"}");
	assert_json_eq(cfg, want);
	json_decref(want);
	json_decref(cfg);
	/* Numbers of a double list; not a list of mappings. */
	const char hp[] = "trainingInput:\n  hyperparameters:\n    params:\n      - discreteValues: [1, 2.5]\n"
			  "        categoricalValues: [{a: 1}]\n";
	assert_null(cli_parse_config("h.yaml", hp, strlen(hp), &err));
	assert_string_equal(err, "h.yaml:5:29: categoricalValues must be a list of strings");
	free(err);
}

/* The flags' choices are the descriptors' enum values, as gcloud lists them. */
static void flag_choices_come_from_the_descriptors(void **state)
{
	char *err = NULL;
	struct submit_opts o;
	(void)state;
	assert_null(cli_parse_accelerator("--worker-accelerator", "type=v100,count=1", &err));
	assert_string_equal(err, "argument --worker-accelerator: type: Invalid choice: 'v100'. Valid choices "
				 "are [nvidia-tesla-a100, nvidia-tesla-k80, nvidia-tesla-p100, nvidia-tesla-p4, "
				 "nvidia-tesla-t4, nvidia-tesla-v100, tpu-v2, tpu-v2-pod, tpu-v3, tpu-v3-pod, "
				 "tpu-v4-pod].");
	free(err);
	submit_opts_init(&o);
	o.job_id = "j";
	o.scale_tier = "huge";
	o.master_image_uri = "i";
	assert_null(cli_build_submit_body(&o, NULL, &err));
	assert_string_equal(err, "argument --scale-tier: Invalid choice: 'huge'. Valid choices are "
				 "[basic, basic-gpu, basic-tpu, custom, premium-1, standard-1].");
	free(err);
	o.scale_tier = "BASIC_GPU";
	json_t *body = cli_build_submit_body(&o, NULL, &err);
	assert_non_null(body);
	assert_string_equal(json_string_value(json_object_get(json_object_get(body, "trainingInput"),
							      "scaleTier")), "BASIC_GPU");
	json_decref(body);
	assert_null(cli_parse_worker_pool_spec("machine-type=n1,container-image-uri=i,"
					       "accelerator-type=TPU_V3,accelerator-count=8", NULL, &err));
	assert_string_equal(err, "Invalid value for [--worker-pool-spec]: Found invalid value of "
				 "[accelerator-type]: TPU_V3. Available values are [NVIDIA_TESLA_K80, "
				 "NVIDIA_TESLA_P100, NVIDIA_TESLA_V100, NVIDIA_TESLA_P4, NVIDIA_TESLA_T4, "
				 "NVIDIA_TESLA_A100, NVIDIA_A100_80GB, NVIDIA_L4, NVIDIA_H100_80GB, "
				 "NVIDIA_H100_MEGA_80GB, NVIDIA_H200_141GB, NVIDIA_B200, NVIDIA_GB200, "
				 "NVIDIA_RTX_PRO_6000].");
	free(err);
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
		cmocka_unit_test(worker_pool_specs_give_gcloud_body),
		cmocka_unit_test(worker_pool_spec_todays_machines),
		cmocka_unit_test(custom_job_config_and_flags),
		cmocka_unit_test(worker_pool_spec_errors),
		cmocka_unit_test(custom_job_config_errors),
		cmocka_unit_test(ml_hyperparameters_give_gcloud_body),
		cmocka_unit_test(hp_tuning_job_config_and_flags),
		cmocka_unit_test(hp_tuning_job_config_errors),
		cmocka_unit_test(sort_by),
		cmocka_unit_test(config_accepts_what_the_server_accepts),
		cmocka_unit_test(config_fields_are_the_descriptors),
		cmocka_unit_test(flag_choices_come_from_the_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
