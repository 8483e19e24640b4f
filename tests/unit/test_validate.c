/*
 * test_validate.c - the rule engine (spec/validate.c) against the default
 * catalog (deploy/catalog.yaml; run from the repository root).
 *
 * The seed tables are transcribed here a second time, independently of the
 * catalog file, so a wrong cell in either shows up: seed 000's machine type x
 * GPU count table (every allowed count accepted, the neighbouring counts and
 * every absent GPU type refused), its GPU regions, seed 002's TPU rules, and
 * the seeds' config.yaml examples (tests/unit/fixtures/) as written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog.h"
#include "strbuf.h"
#include "validate.h"

static struct catalog *cat;
static size_t n_checks;	/* table cells and cases checked, reported at the end */

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */

/* TP_DUMP_CORPUS=dir writes every test input there: the fuzz seed corpus. */
static void dump_corpus(const char *text)
{
	static unsigned n;
	const char *dir = getenv("TP_DUMP_CORPUS");
	char path[512];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/test_validate_%04u.json", dir, n++);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);

	dump_corpus(text);
	if (!j)
		fail_msg("bad test JSON at %d:%d: %s\n%s", jerr.line, jerr.column, jerr.text, text);
	return j;
}

static json_t *fixture(const char *name)
{
	char path[256];
	json_error_t jerr;
	json_t *j;

	snprintf(path, sizeof(path), "tests/unit/fixtures/%s", name);
	j = json_load_file(path, 0, &jerr);
	if (!j)
		fail_msg("%s: %s", path, jerr.text);
	return j;
}

static void dump(const struct violations *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		print_message("  violation: Field: %s Error: %s\n", vs->v[i].field,
			      vs->v[i].description);
}

static void assert_valid_vs(struct violations *vs, const char *what)
{
	n_checks++;
	if (vs->n) {
		print_message("%s: expected no violation\n", what);
		dump(vs);
		fail();
	}
}

/* Exactly one violation, on field, whose description is desc (exact). */
static void assert_one(struct violations *vs, const char *field, const char *desc,
		       const char *what)
{
	n_checks++;
	if (vs->n != 1 || strcmp(vs->v[0].field, field) || strcmp(vs->v[0].description, desc)) {
		print_message("%s: expected exactly\n  violation: Field: %s Error: %s\ngot %zu:\n",
			      what, field, desc, vs->n);
		dump(vs);
		fail();
	}
}

/* Some violation on field whose description is desc (exact). */
static void assert_has(struct violations *vs, const char *field, const char *desc)
{
	n_checks++;
	for (size_t i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].field, field) && !strcmp(vs->v[i].description, desc))
			return;
	print_message("expected\n  violation: Field: %s Error: %s\ngot %zu:\n", field, desc, vs->n);
	dump(vs);
	fail();
}

/* Validates a trainingInput given as JSON text. */
static void ml(const char *ti_text, struct violations *vs)
{
	json_t *ti = parse(ti_text);
	size_t n = spec_check_ml(cat, ti, vs);

	assert_int_equal(n, vs->n);
	json_decref(ti);
}

static void ml_valid(const char *ti_text)
{
	struct violations vs = VIOLATIONS_INIT;

	ml(ti_text, &vs);
	assert_valid_vs(&vs, ti_text);
	violations_release(&vs);
}

static void ml_one(const char *ti_text, const char *field, const char *desc)
{
	struct violations vs = VIOLATIONS_INIT;

	ml(ti_text, &vs);
	assert_one(&vs, field, desc, ti_text);
	violations_release(&vs);
}

static void vx(const char *location, const char *spec_text, struct violations *vs)
{
	json_t *spec = parse(spec_text);
	size_t n = spec_check_vertex(cat, location, spec, vs);

	assert_int_equal(n, vs->n);
	json_decref(spec);
}

static void vx_valid(const char *location, const char *spec_text)
{
	struct violations vs = VIOLATIONS_INIT;

	vx(location, spec_text, &vs);
	assert_valid_vs(&vs, spec_text);
	violations_release(&vs);
}

static void vx_one(const char *location, const char *spec_text, const char *field,
		   const char *desc)
{
	struct violations vs = VIOLATIONS_INIT;

	vx(location, spec_text, &vs);
	assert_one(&vs, field, desc, spec_text);
	violations_release(&vs);
}

/* A valid CUSTOM job around one master; extra is spliced in ("" or ", ..."). */
#define BASE "\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\"," \
	     "\"packageUris\":[\"gs://b/trainer-0.1.tar.gz\"],\"pythonModule\":\"trainer.task\""

static char *xfmt(const char *fmt, ...) PRINTF_LIKE(1, 2);
static char *xfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

/* A CUSTOM job whose master is machine with count x acc (acc NULL: none). */
static char *master_job(const char *region, const char *machine, const char *acc, int count)
{
	if (!acc)
		return xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"%s\","
			    "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
			    region, machine);
	return xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"%s\","
		    "\"masterConfig\":{\"acceleratorConfig\":{\"type\":\"%s\",\"count\":\"%d\"}},"
		    "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
		    region, machine, acc, count);
}

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
	cat = NULL;
	printf("[ INFO     ] %zu validation cases checked\n", n_checks);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Seed 000: machine type x GPU count table                                   */

enum { A100, K80, P4, P100, T4, V100, N_GPU };
static const char *const gpu_enum[N_GPU] = {
	"NVIDIA_TESLA_A100", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P4",
	"NVIDIA_TESLA_P100", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100",
};

/* Seed 000 "每种机器类型的有效 GPU 数量", column by column; "" = not offered. */
static const struct gpu_row {
	const char *machine;
	const char *counts[N_GPU];	/* A100, K80, P4, P100, T4, V100 */
} gpu_table[] = {
	{ "n1-standard-4",  { "", "1,2,4,8", "1,2,4", "1,2,4", "1,2,4", "1,2,4,8" } },
	{ "n1-standard-8",  { "", "1,2,4,8", "1,2,4", "1,2,4", "1,2,4", "1,2,4,8" } },
	{ "n1-standard-16", { "", "2,4,8", "1,2,4", "1,2,4", "1,2,4", "2,4,8" } },
	{ "n1-standard-32", { "", "4,8", "2,4", "2,4", "2,4", "4,8" } },
	{ "n1-standard-64", { "", "", "4", "", "4", "8" } },
	{ "n1-standard-96", { "", "", "4", "", "4", "8" } },
	{ "n1-highmem-2",   { "", "1,2,4,8", "1,2,4", "1,2,4", "1,2,4", "1,2,4,8" } },
	{ "n1-highmem-4",   { "", "1,2,4,8", "1,2,4", "1,2,4", "1,2,4", "1,2,4,8" } },
	{ "n1-highmem-8",   { "", "1,2,4,8", "1,2,4", "1,2,4", "1,2,4", "1,2,4,8" } },
	{ "n1-highmem-16",  { "", "2,4,8", "1,2,4", "1,2,4", "1,2,4", "2,4,8" } },
	{ "n1-highmem-32",  { "", "4,8", "2,4", "2,4", "2,4", "4,8" } },
	{ "n1-highmem-64",  { "", "", "4", "", "4", "8" } },
	{ "n1-highmem-96",  { "", "", "4", "", "4", "8" } },
	{ "n1-highcpu-16",  { "", "2,4,8", "1,2,4", "1,2,4", "1,2,4", "2,4,8" } },
	{ "n1-highcpu-32",  { "", "4,8", "2,4", "2,4", "2,4", "4,8" } },
	{ "n1-highcpu-64",  { "", "8", "4", "4", "4", "8" } },
	{ "n1-highcpu-96",  { "", "", "4", "", "4", "8" } },
	{ "a2-highgpu-1g",  { "1", "", "", "", "", "" } },
	{ "a2-highgpu-2g",  { "2", "", "", "", "", "" } },
	{ "a2-highgpu-4g",  { "4", "", "", "", "", "" } },
	{ "a2-highgpu-8g",  { "8", "", "", "", "", "" } },
	{ "a2-megagpu-16g", { "16", "", "", "", "", "" } },
};

static bool in_list(const char *list, int n)
{
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (atoi(t) == n)
			return true;
	return false;
}

static char *supported(const char *list)
{
	char *s = xfmt("%s", list), *o = malloc(strlen(list) * 2 + 1), *p = o;

	for (char *q = s; *q; q++) {
		*p++ = *q;
		if (*q == ',')
			*p++ = ' ';
	}
	*p = '\0';
	free(s);
	return o;
}

static void test_gpu_table_every_cell(void **state)
{
	(void)state;
	for (size_t r = 0; r < ARRAY_SIZE(gpu_table); r++) {
		const struct gpu_row *row = &gpu_table[r];
		for (int g = 0; g < N_GPU; g++) {
			const char *list = row->counts[g];
			char *job, *desc;

			if (!*list) {
				/* An absent GPU type is refused at any count. */
				job = master_job("us-central1", row->machine, gpu_enum[g], 1);
				desc = xfmt("Accelerator \"%s\" is not supported for machine type \"%s\".",
					    gpu_enum[g], row->machine);
				ml_one(job, "training_input.master_config.accelerator_config.type", desc);
				free(job);
				free(desc);
				continue;
			}
			for (int n = 1; n <= 16; n++) {
				bool allowed = in_list(list, n);
				bool neighbour = in_list(list, n - 1) || in_list(list, n + 1);
				if (!allowed && !neighbour)
					continue;
				job = master_job("us-central1", row->machine, gpu_enum[g], n);
				if (allowed) {
					ml_valid(job);
				} else {
					char *sup = supported(list);
					desc = xfmt("Accelerator count %d is not supported for accelerator "
						    "\"%s\" on machine type \"%s\". Supported counts: %s.",
						    n, gpu_enum[g], row->machine, sup);
					ml_one(job, "training_input.master_config.accelerator_config.count",
					       desc);
					free(desc);
					free(sup);
				}
				free(job);
			}
		}
	}
}

/* The same table on a worker, through Vertex, for a few rows: same engine. */
static void test_gpu_table_worker_and_vertex(void **state)
{
	(void)state;
	ml_one("{" BASE ",\"masterType\":\"n1-highcpu-16\",\"workerType\":\"n1-highcpu-16\","
	       "\"workerCount\":\"2\",\"workerConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"3\"}}}",
	       "training_input.worker_config.accelerator_config.count",
	       "Accelerator count 3 is not supported for accelerator \"NVIDIA_TESLA_T4\" on "
	       "machine type \"n1-highcpu-16\". Supported counts: 1, 2, 4.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"parameterServerType\":\"n1-standard-32\","
	       "\"parameterServerCount\":\"1\",\"parameterServerConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_V100\",\"count\":\"2\"}}}",
	       "training_input.parameter_server_config.accelerator_config.count",
	       "Accelerator count 2 is not supported for accelerator \"NVIDIA_TESLA_V100\" on "
	       "machine type \"n1-standard-32\". Supported counts: 4, 8.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"evaluatorType\":\"a2-highgpu-2g\","
	       "\"evaluatorCount\":\"1\",\"evaluatorConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_A100\",\"count\":\"1\"}}}",
	       "training_input.evaluator_config.accelerator_config.count",
	       "Accelerator count 1 is not supported for accelerator \"NVIDIA_TESLA_A100\" on "
	       "machine type \"a2-highgpu-2g\". Supported counts: 2.");
	vx_one("us-central1",
	       "{\"workerPoolSpecs\":[{\"replicaCount\":\"1\",\"machineSpec\":{\"machineType\":"
	       "\"n1-standard-32\",\"acceleratorType\":\"NVIDIA_TESLA_V100\",\"acceleratorCount\":2},"
	       "\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_count",
	       "Accelerator count 2 is not supported for accelerator \"NVIDIA_TESLA_V100\" on "
	       "machine type \"n1-standard-32\". Supported counts: 4, 8.");
	vx_one("us-central1",
	       "{\"workerPoolSpecs\":[{\"replicaCount\":\"1\",\"machineSpec\":{\"machineType\":"
	       "\"n1-standard-4\",\"acceleratorType\":\"NVIDIA_TESLA_A100\",\"acceleratorCount\":1},"
	       "\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"NVIDIA_TESLA_A100\" is not supported for machine type \"n1-standard-4\".");
}

/* Seed 000: "配备了 4 个 NVIDIA Tesla P100 GPU 的配置 ... 最多只支持 64 个虚拟 CPU
 * 和 208 GB 的内存". The default table never breaks it, so an operator's
 * catalog that allows 4 x P100 on bigger machines shows the rule. */
static void test_p100_limit(void **state)
{
	static const char yaml[] =
		"version: 1\n"
		"accelerators: [{name: NVIDIA_TESLA_P100, kind: gpu}]\n"
		"machine_types:\n"
		"  n1-highmem-32: {vcpus: 32, memory_gb: 208}\n"
		"  n1-highmem-64: {vcpus: 64, memory_gb: 416}\n"
		"  n1-standard-96: {vcpus: 96, memory_gb: 360}\n"
		"  n1-highcpu-64: {vcpus: 64, memory_gb: 57.6}\n"
		"accelerator_counts:\n"
		"  n1-highmem-32: {NVIDIA_TESLA_P100: [2, 4]}\n"
		"  n1-highmem-64: {NVIDIA_TESLA_P100: [2, 4]}\n"
		"  n1-standard-96: {NVIDIA_TESLA_P100: [2, 4]}\n"
		"  n1-highcpu-64: {NVIDIA_TESLA_P100: [4]}\n"
		"accelerator_limits:\n"
		"  - {accelerator: NVIDIA_TESLA_P100, count: 4, max_vcpus: 64, max_memory_gb: 208}\n"
		"regions: {r1: {zones: {r1-a: [NVIDIA_TESLA_P100]}}}\n"
		"runtime_versions: {\"2.4\": {python: [\"3.7\"]}}\n";
	struct catalog *own, *saved = cat;
	char path[] = "/tmp/tp_catalog_XXXXXX", err[512];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, sizeof(yaml) - 1), (ssize_t)(sizeof(yaml) - 1));
	close(fd);
	if (catalog_load(path, &own, err, sizeof(err)))
		fail_msg("%s", err);
	unlink(path);
	cat = own;
	ml_valid("{" BASE ",\"region\":\"r1\",\"masterType\":\"n1-highmem-32\",\"masterConfig\":"
		 "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"4\"}}}");
	ml_valid("{" BASE ",\"region\":\"r1\",\"masterType\":\"n1-highcpu-64\",\"masterConfig\":"
		 "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"4\"}}}");
	ml_valid("{" BASE ",\"region\":\"r1\",\"masterType\":\"n1-standard-96\",\"masterConfig\":"
		 "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"2\"}}}");
	ml_one("{" BASE ",\"region\":\"r1\",\"masterType\":\"n1-standard-96\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"4\"}}}",
	       "training_input.master_type",
	       "Configurations with 4 NVIDIA_TESLA_P100 accelerators support at most 64 vCPUs and "
	       "208 GB of memory; machine type \"n1-standard-96\" has 96 vCPUs and 360 GB.");
	ml_one("{" BASE ",\"region\":\"r1\",\"masterType\":\"n1-highmem-64\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"4\"}}}",
	       "training_input.master_type",
	       "Configurations with 4 NVIDIA_TESLA_P100 accelerators support at most 64 vCPUs and "
	       "208 GB of memory; machine type \"n1-highmem-64\" has 64 vCPUs and 416 GB.");
	cat = saved;
	catalog_free(own);
}

/* Legacy GPU types carry their GPUs; acceleratorConfig on them is refused. */
static void test_legacy_types(void **state)
{
	static const char *const legacy[] = {
		"standard", "large_model", "complex_model_s", "complex_model_m", "complex_model_l",
		"standard_gpu", "complex_model_m_gpu", "complex_model_l_gpu", "standard_p100",
		"complex_model_m_p100", "standard_v100", "large_model_v100", "complex_model_m_v100",
		"complex_model_l_v100",
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(legacy); i++) {
		char *job = master_job("us-central1", legacy[i], NULL, 0);
		ml_valid(job);
		free(job);
	}
	ml_one("{" BASE ",\"masterType\":\"complex_model_m_gpu\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_K80\",\"count\":\"4\"}}}",
	       "training_input.master_config.accelerator_config",
	       "acceleratorConfig can only be set when masterType is a Compute Engine machine type; "
	       "\"complex_model_m_gpu\" is a legacy machine type that comes with its own "
	       "accelerators.");
	/* Implied GPUs count for the region: no K80 in europe-west2, no V100 in us-east4. */
	ml_one("{" BASE ",\"region\":\"europe-west2\",\"masterType\":\"standard_gpu\"}",
	       "training_input.region",
	       "Accelerator \"NVIDIA_TESLA_K80\" is not available in region \"europe-west2\".");
	ml_one("{" BASE ",\"region\":\"us-east4\",\"masterType\":\"complex_model_l_v100\"}",
	       "training_input.region",
	       "Accelerator \"NVIDIA_TESLA_V100\" is not available in region \"us-east4\".");
	/* Mixing categories, either way round. */
	ml_one("{" BASE ",\"masterType\":\"standard\",\"workerType\":\"n1-standard-8\","
	       "\"workerCount\":\"2\"}",
	       "training_input.worker_type",
	       "workerType \"n1-standard-8\" and masterType \"standard\" must both be Compute Engine "
	       "machine types or both be legacy machine types.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"parameterServerType\":\"large_model\","
	       "\"parameterServerCount\":\"2\"}",
	       "training_input.parameter_server_type",
	       "parameterServerType \"large_model\" and masterType \"n1-standard-8\" must both be "
	       "Compute Engine machine types or both be legacy machine types.");
	ml_one("{" BASE ",\"masterType\":\"complex_model_m\",\"evaluatorType\":\"n1-highcpu-16\","
	       "\"evaluatorCount\":\"1\"}",
	       "training_input.evaluator_type",
	       "evaluatorType \"n1-highcpu-16\" and masterType \"complex_model_m\" must both be "
	       "Compute Engine machine types or both be legacy machine types.");
}

/* ------------------------------------------------------------------------- */
/* Regions                                                                    */

/* Seed 000's GPU regions; the GPUs each offers (reference 7.3 roll-up). */
static const struct {
	const char *region;
	const char *gpus;	/* letters: A=A100 K=K80 4=P4 1=P100 T=T4 V=V100 */
} gpu_regions[] = {
	{ "us-west1", "AKT1V" },
	{ "us-west2", "T4" },
	{ "us-central1", "AKT14V" },
	{ "us-east1", "AKT1V" },
	{ "us-east4", "T4" },
	{ "northamerica-northeast1", "T4" },
	{ "southamerica-east1", "T" },
	{ "europe-west1", "KT1" },
	{ "europe-west2", "T" },
	{ "europe-west4", "AT41V" },
	{ "asia-south1", "T" },
	{ "asia-southeast1", "AT4" },
	{ "asia-east1", "KT1V" },
	{ "asia-northeast1", "AT" },
	{ "asia-northeast3", "AT" },
	{ "australia-southeast1", "T41" },
};

static void test_every_gpu_region(void **state)
{
	static const char letter[N_GPU] = { 'A', 'K', '4', '1', 'T', 'V' };

	(void)state;
	assert_int_equal(ARRAY_SIZE(gpu_regions), 16);
	for (size_t r = 0; r < ARRAY_SIZE(gpu_regions); r++) {
		for (int g = 0; g < N_GPU; g++) {
			const char *machine = g == A100 ? "a2-highgpu-1g" : "n1-standard-8";
			char *job = master_job(gpu_regions[r].region, machine, gpu_enum[g], 1);
			if (strchr(gpu_regions[r].gpus, letter[g])) {
				ml_valid(job);
			} else {
				char *desc = xfmt("Accelerator \"%s\" is not available in region \"%s\".",
						  gpu_enum[g], gpu_regions[r].region);
				ml_one(job, "training_input.region", desc);
				free(desc);
			}
			free(job);
		}
		/* A CPU-only job runs anywhere. */
		char *cpu = master_job(gpu_regions[r].region, "n1-highcpu-16", NULL, 0);
		ml_valid(cpu);
		free(cpu);
	}
}

static void test_region_without_gpus(void **state)
{
	(void)state;
	ml_valid("{" BASE ",\"region\":\"europe-west3\",\"masterType\":\"n1-highmem-8\","
		 "\"workerType\":\"n1-highmem-8\",\"workerCount\":\"4\"}");
	for (int g = 0; g < N_GPU; g++) {
		char *job = master_job("europe-west3", g == A100 ? "a2-highgpu-1g" : "n1-standard-8",
				       gpu_enum[g], 1);
		char *desc = xfmt("Accelerator \"%s\" is not available in region \"europe-west3\".",
				  gpu_enum[g]);
		ml_one(job, "training_input.region", desc);
		free(job);
		free(desc);
	}
	/* BASIC_GPU is one K80. */
	ml_one("{\"scaleTier\":\"BASIC_GPU\",\"region\":\"europe-west3\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.region",
	       "Accelerator \"NVIDIA_TESLA_K80\" is not available in region \"europe-west3\".");
}

static void test_region_required_and_known(void **state)
{
	(void)state;
	ml_one("{\"scaleTier\":\"BASIC\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.region", "Region must be specified.");
	/* GPU zones exist there (reference 7.3), but seed 000 does not list them. */
	ml_one("{\"scaleTier\":\"BASIC\",\"region\":\"us-west4\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.region", "Region \"us-west4\" is not supported for training.");
	ml_one("{\"scaleTier\":\"BASIC\",\"region\":\"mars-north1\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.region", "Region \"mars-north1\" is not supported for training.");
}

static void test_mixed_gpu_types_need_one_zone(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *job = fixture("seed000_mixed_gpus_us_central1.json");
	const char *zone_msg =
		"No zone in region \"us-central1\" offers all of the accelerator types the job uses "
		"(NVIDIA_TESLA_K80, NVIDIA_TESLA_P100, NVIDIA_TESLA_T4). A job that uses more than "
		"one accelerator type must run in one zone that offers all of them.";

	(void)state;
	spec_check_ml(cat, json_object_get(job, "trainingInput"), &vs);
	assert_one(&vs, "training_input.region", zone_msg, "seed 000 T4/K80/P100 in us-central1");
	violations_release(&vs);

	/* The same job in us-east1, whose zone c offers all three, is accepted. */
	json_object_set_new(json_object_get(job, "trainingInput"), "region", json_string("us-east1"));
	spec_check_ml(cat, json_object_get(job, "trainingInput"), &vs);
	assert_valid_vs(&vs, "T4/K80/P100 in us-east1");
	json_decref(job);

	/* Every pair of the three has a zone in us-central1. */
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},\"workerType\":\"n1-standard-8\","
		 "\"workerCount\":\"2\",\"workerConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_K80\",\"count\":\"1\"}}}");
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},\"workerType\":\"n1-standard-8\","
		 "\"workerCount\":\"2\",\"workerConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"1\"}}}");
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_K80\",\"count\":\"1\"}},\"workerType\":\"n1-standard-8\","
		 "\"workerCount\":\"2\",\"workerConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"NVIDIA_TESLA_P100\",\"count\":\"1\"}}}");
	/* Legacy types mix too: a K80 legacy master with P4 workers in europe-west4 fails
	 * for K80 alone; T4 + P100 there share europe-west4-a. */
	ml_one("{" BASE ",\"region\":\"asia-east1\",\"masterType\":\"n1-standard-8\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_K80\",\"count\":\"1\"}},"
	       "\"workerType\":\"n1-standard-8\",\"workerCount\":\"1\",\"workerConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_V100\",\"count\":\"1\"}}}",
	       "training_input.region",
	       "No zone in region \"asia-east1\" offers all of the accelerator types the job uses "
	       "(NVIDIA_TESLA_K80, NVIDIA_TESLA_V100). A job that uses more than one accelerator "
	       "type must run in one zone that offers all of them.");
	/* A worker count of 0 uses no GPU: no zone problem. */
	ml_one("{" BASE ",\"region\":\"asia-east1\",\"masterType\":\"n1-standard-8\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_K80\",\"count\":\"1\"}},"
	       "\"workerType\":\"n1-standard-8\",\"workerCount\":\"0\",\"workerConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_V100\",\"count\":\"1\"}}}",
	       "training_input.worker_count",
	       "workerCount must be greater than zero when workerType is set.");
}

/* ------------------------------------------------------------------------- */
/* Scale tiers, types and counts                                              */

static void test_scale_tiers(void **state)
{
	static const char *const tiers[] = { "BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU",
					     "BASIC_TPU" };
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(tiers); i++) {
		char *job = xfmt("{\"scaleTier\":\"%s\",\"region\":\"us-central1\","
				 "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
				 tiers[i]);
		ml_valid(job);
		free(job);
	}
	/* An omitted scaleTier is BASIC (0). */
	ml_valid("{\"region\":\"europe-west3\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
		 "\"pythonModule\":\"t.task\"}");
	/* BASIC_TPU needs a TPU region. */
	ml_one("{\"scaleTier\":\"BASIC_TPU\",\"region\":\"us-east1\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.region",
	       "Accelerator \"TPU_V2\" is not available in region \"us-east1\".");
	/* Counts and types only with CUSTOM. */
	ml_one("{\"scaleTier\":\"STANDARD_1\",\"region\":\"us-central1\",\"workerCount\":\"4\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.worker_count", "workerCount can only be set when scaleTier is CUSTOM.");
	ml_one("{\"scaleTier\":\"BASIC\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-4\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.master_type", "masterType can only be set when scaleTier is CUSTOM.");
	ml_one("{\"scaleTier\":\"BASIC_GPU\",\"region\":\"us-central1\",\"parameterServerCount\":\"2\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.parameter_server_count",
	       "parameterServerCount can only be set when scaleTier is CUSTOM.");
	ml_one("{\"scaleTier\":\"BASIC\",\"region\":\"us-central1\",\"masterConfig\":"
	       "{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}},"
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.master_config.accelerator_config",
	       "acceleratorConfig can only be set when scaleTier is CUSTOM.");
	/* A custom container with a predefined tier is fine. */
	ml_valid("{\"scaleTier\":\"BASIC_GPU\",\"region\":\"us-central1\",\"masterConfig\":"
		 "{\"imageUri\":\"gcr.io/p/trainer:1\"}}");
}

static void test_custom_types_and_counts(void **state)
{
	(void)state;
	ml_one("{" BASE "}", "training_input.master_type",
	       "masterType must be set when scaleTier is CUSTOM.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerCount\":\"3\"}",
	       "training_input.worker_type", "workerType must be set when workerCount is greater than zero.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"parameterServerCount\":\"3\"}",
	       "training_input.parameter_server_type",
	       "parameterServerType must be set when parameterServerCount is greater than zero.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"evaluatorCount\":1}",
	       "training_input.evaluator_type",
	       "evaluatorType must be set when evaluatorCount is greater than zero.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\"}",
	       "training_input.worker_count", "workerCount must be greater than zero when workerType is set.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"parameterServerType\":\"n1-standard-4\","
	       "\"parameterServerCount\":\"0\"}",
	       "training_input.parameter_server_count",
	       "parameterServerCount must be greater than zero when parameterServerType is set.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\","
	       "\"workerCount\":\"-2\"}",
	       "training_input.worker_count", "workerCount must not be negative.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"evaluatorType\":\"n1-standard-4\","
	       "\"evaluatorCount\":\"1001\"}",
	       "training_input.evaluator_count", "evaluatorCount must be at most 1000.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\","
	       "\"workerCount\":\"9223372036854775807\"}",
	       "training_input.worker_count", "workerCount must be at most 1000.");
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\","
		 "\"workerCount\":\"1000\"}");
	/* Unknown machine types, and the ones AI Platform does not train on. */
	ml_one("{" BASE ",\"masterType\":\"n1-standard-5\"}", "training_input.master_type",
	       "Machine type \"n1-standard-5\" is not supported for training.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-2\"}", "training_input.master_type",
	       "Machine type \"n1-standard-2\" is not supported for training.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"g2-standard-8\","
	       "\"workerCount\":\"1\"}", "training_input.worker_type",
	       "Machine type \"g2-standard-8\" is not supported for training.");
	ml_one("{" BASE ",\"scaleTier\":\"SUPER_1\",\"masterType\":\"n1-standard-4\"}",
	       "training_input.scale_tier", "Scale tier \"SUPER_1\" is not supported.");
}

static void test_accelerator_type_and_count(void **state)
{
	(void)state;
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_T4\"}}}",
	       "training_input.master_config.accelerator_config.count",
	       "Accelerator count must be greater than zero when an accelerator type is set.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"count\":\"2\"}}}",
	       "training_input.master_config.accelerator_config.type",
	       "Accelerator type must be set when an accelerator count is set.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"ACCELERATOR_TYPE_UNSPECIFIED\",\"count\":\"2\"}}}",
	       "training_input.master_config.accelerator_config.type",
	       "Accelerator type must be set when an accelerator count is set.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"-1\"}}}",
	       "training_input.master_config.accelerator_config.count",
	       "Accelerator count must not be negative.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"100000\"}}}",
	       "training_input.master_config.accelerator_config.count",
	       "Accelerator count 100000 is not supported for accelerator \"NVIDIA_TESLA_T4\" on "
	       "machine type \"n1-standard-8\". Supported counts: 1, 2, 4.");
	/* Vertex-only accelerators are not ml v1's. */
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_L4\",\"count\":\"1\"}}}",
	       "training_input.master_config.accelerator_config.type",
	       "Accelerator \"NVIDIA_L4\" is not supported.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-8\",\"workerConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}}}",
	       "training_input.worker_config.accelerator_config",
	       "acceleratorConfig can only be set together with workerType.");
	/* a2 types come with their A100s; an explicit matching config is fine too. */
	ml_valid("{" BASE ",\"masterType\":\"a2-highgpu-4g\"}");
	ml_one("{" BASE ",\"region\":\"europe-west1\",\"masterType\":\"a2-highgpu-4g\"}",
	       "training_input.region",
	       "Accelerator \"NVIDIA_TESLA_A100\" is not available in region \"europe-west1\".");
}

/* Every violation at once. */
static void test_all_violations_reported(void **state)
{
	struct violations vs = VIOLATIONS_INIT;

	(void)state;
	ml("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\","
	   "\"masterType\":\"n1-highcpu-16\",\"masterConfig\":{\"acceleratorConfig\":"
	   "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"3\"}},"
	   "\"workerCount\":\"9\","
	   "\"parameterServerType\":\"n1-standard-33\",\"parameterServerCount\":\"3\","
	   "\"scheduling\":{\"maxWaitTime\":\"60s\"}}", &vs);
	assert_int_equal(vs.n, 6);
	assert_has(&vs, "training_input.master_config.accelerator_config.count",
		   "Accelerator count 3 is not supported for accelerator \"NVIDIA_TESLA_T4\" on "
		   "machine type \"n1-highcpu-16\". Supported counts: 1, 2, 4.");
	assert_has(&vs, "training_input.worker_type",
		   "workerType must be set when workerCount is greater than zero.");
	assert_has(&vs, "training_input.parameter_server_type",
		   "Machine type \"n1-standard-33\" is not supported for training.");
	assert_has(&vs, "training_input.package_uris",
		   "At least one package URI is required unless masterConfig.imageUri is set.");
	assert_has(&vs, "training_input.python_module",
		   "pythonModule is required unless masterConfig.imageUri is set.");
	assert_has(&vs, "training_input.scheduling.max_wait_time",
		   "The minimum for this field is 1800s (30 minutes).");
	violations_release(&vs);
}

/* ------------------------------------------------------------------------- */
/* TPU (seed 002)                                                             */

#define TPU_JOB(extra) \
	"{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-highcpu-16\"," \
	"\"workerType\":\"cloud_tpu\",\"workerCount\":\"1\",\"runtimeVersion\":\"2.4\"," \
	"\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"" extra "}"

static void test_tpu_rules(void **state)
{
	(void)state;
	ml_valid(TPU_JOB(""));
	ml_valid(TPU_JOB(",\"workerConfig\":{\"acceleratorConfig\":{\"type\":\"TPU_V3\",\"count\":\"8\"}}"));
	/* Only 8 TPU cores. */
	for (int n = 1; n <= 16; n++) {
		if (n == 8)
			continue;
		char *job = xfmt(TPU_JOB(",\"workerConfig\":{\"acceleratorConfig\":"
					 "{\"type\":\"TPU_V2\",\"count\":\"%d\"}}"), n);
		char *desc = xfmt("Accelerator count %d is not supported for accelerator \"TPU_V2\" on "
				  "machine type \"cloud_tpu\". Supported counts: 8.", n);
		ml_one(job, "training_input.worker_config.accelerator_config.count", desc);
		free(job);
		free(desc);
	}
	ml_one(TPU_JOB(",\"workerConfig\":{\"acceleratorConfig\":{\"type\":\"TPU_V2_POD\",\"count\":\"8\"}}"),
	       "training_input.worker_config.accelerator_config.type",
	       "Accelerator \"TPU_V2_POD\" is not supported for machine type \"cloud_tpu\".");
	ml_one(TPU_JOB(",\"workerConfig\":{\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"1\"}}"),
	       "training_input.worker_config.accelerator_config.type",
	       "Accelerator \"NVIDIA_TESLA_T4\" is not supported for machine type \"cloud_tpu\".");
	/* TPUs only on cloud_tpu. */
	ml_one("{" BASE ",\"masterType\":\"n1-highcpu-16\",\"masterConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"TPU_V2\",\"count\":\"8\"}}}",
	       "training_input.master_config.accelerator_config.type",
	       "Accelerator \"TPU_V2\" is not supported for machine type \"n1-highcpu-16\".");
	/* workerCount 1. */
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-highcpu-16\","
	       "\"workerType\":\"cloud_tpu\",\"workerCount\":\"2\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.worker_count", "workerCount must be 1 when workerType is cloud_tpu.");
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-highcpu-16\","
	       "\"workerType\":\"cloud_tpu\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.worker_count", "workerCount must be 1 when workerType is cloud_tpu.");
	/* No parameter servers. */
	ml_one(TPU_JOB(",\"parameterServerType\":\"n1-highmem-8\",\"parameterServerCount\":\"1\""),
	       "training_input.parameter_server_count",
	       "Parameter servers cannot be used with Cloud TPU: parameterServerCount must be 0 when "
	       "workerType is cloud_tpu.");
	/* cloud_tpu is a worker type only. */
	ml_one("{" BASE ",\"masterType\":\"cloud_tpu\"}", "training_input.master_type",
	       "Machine type \"cloud_tpu\" can only be used as workerType.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"evaluatorType\":\"cloud_tpu\","
	       "\"evaluatorCount\":\"1\"}", "training_input.evaluator_type",
	       "Machine type \"cloud_tpu\" can only be used as workerType.");
	/* A legacy master gets TPU v2 only, without acceleratorConfig. */
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"complex_model_m\","
	       "\"workerType\":\"cloud_tpu\",\"workerCount\":\"1\",\"workerConfig\":{\"acceleratorConfig\":"
	       "{\"type\":\"TPU_V3\",\"count\":\"8\"}},\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}",
	       "training_input.worker_config.accelerator_config",
	       "acceleratorConfig can only be set on a cloud_tpu worker when masterType is a Compute "
	       "Engine machine type.");
	/* TPU regions: us-central1 and europe-west4 only. */
	ml_valid("{\"scaleTier\":\"CUSTOM\",\"region\":\"europe-west4\",\"masterType\":\"n1-highcpu-16\","
		 "\"workerType\":\"cloud_tpu\",\"workerCount\":\"1\",\"workerConfig\":{\"acceleratorConfig\":"
		 "{\"type\":\"TPU_V3\",\"count\":\"8\"}},\"packageUris\":[\"gs://b/t.tar.gz\"],"
		 "\"pythonModule\":\"t.task\"}");
	for (size_t r = 0; r < ARRAY_SIZE(gpu_regions); r++) {
		const char *reg = gpu_regions[r].region;
		if (!strcmp(reg, "us-central1") || !strcmp(reg, "europe-west4"))
			continue;
		char *job = xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"n1-highcpu-16\","
				 "\"workerType\":\"cloud_tpu\",\"workerCount\":\"1\","
				 "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}", reg);
		char *desc = xfmt("Accelerator \"TPU_V2\" is not available in region \"%s\".", reg);
		ml_one(job, "training_input.region", desc);
		free(job);
		free(desc);
	}
}

static void test_tpu_runtime_versions(void **state)
{
	static const char *const ok[] = { "1.15", "2.1", "2.2", "2.3", "2.4" };
	static const char *const bad[] = { "1.14", "2.5", "2.8", "2.11" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		char *job = xfmt("{\"scaleTier\":\"BASIC_TPU\",\"region\":\"us-central1\","
				 "\"runtimeVersion\":\"%s\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
				 "\"pythonModule\":\"t.task\"}", ok[i]);
		ml_valid(job);
		free(job);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *job = xfmt("{\"scaleTier\":\"BASIC_TPU\",\"region\":\"us-central1\","
				 "\"runtimeVersion\":\"%s\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
				 "\"pythonModule\":\"t.task\"}", bad[i]);
		char *desc = xfmt("Runtime version \"%s\" does not support training on Cloud TPU. "
				  "Runtime versions for Cloud TPU: 1.15, 2.1, 2.2, 2.3, 2.4.", bad[i]);
		ml_one(job, "training_input.runtime_version", desc);
		free(job);
		free(desc);
	}
}

#define TPU_CONTAINERS(master_img, worker_cfg) \
	"{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-highcpu-16\"," \
	"\"masterConfig\":{\"imageUri\":\"" master_img "\"},\"workerType\":\"cloud_tpu\"," \
	"\"workerCount\":\"1\",\"workerConfig\":{" worker_cfg "}}"

static void test_tpu_tf_version(void **state)
{
	(void)state;
	/* A custom container on the TPU worker needs tpuTfVersion... */
	ml_one(TPU_CONTAINERS("gcr.io/p/master:1", "\"imageUri\":\"gcr.io/p/worker:1\""),
	       "training_input.worker_config.tpu_tf_version",
	       "tpuTfVersion is required when the Cloud TPU worker uses a custom container.");
	/* ...also when it inherits the master's image. */
	ml_one(TPU_CONTAINERS("gcr.io/p/master:1", "\"acceleratorConfig\":{\"type\":\"TPU_V2\",\"count\":\"8\"}"),
	       "training_input.worker_config.tpu_tf_version",
	       "tpuTfVersion is required when the Cloud TPU worker uses a custom container.");
	/* ...naming a TPU runtime version. */
	ml_valid(TPU_CONTAINERS("gcr.io/p/master:1", "\"imageUri\":\"gcr.io/p/w:1\",\"tpuTfVersion\":\"1.15\""));
	ml_one(TPU_CONTAINERS("gcr.io/p/master:1", "\"imageUri\":\"gcr.io/p/w:1\",\"tpuTfVersion\":\"2.5\""),
	       "training_input.worker_config.tpu_tf_version",
	       "tpuTfVersion \"2.5\" is not supported. Supported values: 1.15, 2.1, 2.2, 2.3, 2.4, "
	       "pytorch-1.7, pytorch-1.6.");
	/* The PyTorch XLA images need their own version. */
	ml_valid(TPU_CONTAINERS("gcr.io/cloud-ml-public/training/pytorch-xla.1-6",
				"\"imageUri\":\"gcr.io/cloud-ml-public/training/pytorch-xla.1-6\","
				"\"tpuTfVersion\":\"pytorch-1.6\""));
	ml_one(TPU_CONTAINERS("gcr.io/cloud-ml-public/training/pytorch-xla.1-7",
			      "\"imageUri\":\"gcr.io/cloud-ml-public/training/pytorch-xla.1-7\","
			      "\"tpuTfVersion\":\"pytorch-1.6\""),
	       "training_input.worker_config.tpu_tf_version",
	       "Image \"gcr.io/cloud-ml-public/training/pytorch-xla.1-7\" requires tpuTfVersion "
	       "\"pytorch-1.7\".");
	ml_one(TPU_CONTAINERS("gcr.io/cloud-ml-public/training/pytorch-xla.1-7",
			      "\"imageUri\":\"gcr.io/cloud-ml-public/training/pytorch-xla.1-6\","
			      "\"tpuTfVersion\":\"2.4\""),
	       "training_input.worker_config.tpu_tf_version",
	       "Image \"gcr.io/cloud-ml-public/training/pytorch-xla.1-6\" requires tpuTfVersion "
	       "\"pytorch-1.6\".");
	ml_one(TPU_CONTAINERS("gcr.io/cloud-ml-public/training/pytorch-xla.1-7",
			      "\"imageUri\":\"gcr.io/cloud-ml-public/training/pytorch-xla.1-7\""),
	       "training_input.worker_config.tpu_tf_version",
	       "tpuTfVersion is required when the Cloud TPU worker uses a custom container; image "
	       "\"gcr.io/cloud-ml-public/training/pytorch-xla.1-7\" needs tpuTfVersion \"pytorch-1.7\".");
	/* "Otherwise, do not specify this field." */
	ml_one(TPU_JOB(",\"workerConfig\":{\"tpuTfVersion\":\"2.4\"}"),
	       "training_input.worker_config.tpu_tf_version",
	       "tpuTfVersion can only be set when the Cloud TPU worker uses a custom container.");
	ml_one("{" BASE ",\"masterType\":\"n1-highcpu-16\",\"masterConfig\":{\"tpuTfVersion\":\"2.4\"}}",
	       "training_input.master_config.tpu_tf_version",
	       "tpuTfVersion can only be set on a Cloud TPU worker.");
}

/* ------------------------------------------------------------------------- */
/* Runtime, packages, containers, scheduling                                  */

static void test_runtime_python_pairs(void **state)
{
	static const struct {
		const char *runtime, *python;
		bool ok;
	} pairs[] = {
		{ "1.4", "2.7", true }, { "1.4", "3.5", true }, { "1.4", "3.7", false },
		{ "1.14", "2.7", true }, { "1.14", "3.5", true }, { "1.14", "3.7", false },
		{ "1.15", "2.7", true }, { "1.15", "3.7", true }, { "1.15", "3.5", false },
		{ "2.1", "3.7", true }, { "2.1", "2.7", false }, { "2.4", "3.7", true },
		{ "2.11", "3.7", true }, { "2.11", "3.5", false },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		char *job = xfmt("{\"scaleTier\":\"BASIC\",\"region\":\"us-central1\",\"runtimeVersion\":\"%s\","
				 "\"pythonVersion\":\"%s\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
				 "\"pythonModule\":\"t.task\"}", pairs[i].runtime, pairs[i].python);
		if (pairs[i].ok) {
			ml_valid(job);
		} else {
			const struct catalog_runtime *rt = catalog_runtime_find(cat, pairs[i].runtime);
			char *avail = rt->n_python == 1 ? xfmt("%s", rt->python[0]) :
				      xfmt("%s, %s", rt->python[0], rt->python[1]);
			char *desc = xfmt("Python version \"%s\" is not available for runtime version "
					  "\"%s\". Available Python versions: %s.", pairs[i].python,
					  pairs[i].runtime, avail);
			ml_one(job, "training_input.python_version", desc);
			free(desc);
			free(avail);
		}
		free(job);
	}
	/* No runtimeVersion: the default (1.15) decides. */
	ml_valid("{\"region\":\"us-central1\",\"pythonVersion\":\"2.7\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
		 "\"pythonModule\":\"t.task\"}");
	ml_one("{\"region\":\"us-central1\",\"pythonVersion\":\"3.5\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}", "training_input.python_version",
	       "Python version \"3.5\" is not available for runtime version \"1.15\". Available Python "
	       "versions: 2.7, 3.7.");
	ml_one("{\"region\":\"us-central1\",\"runtimeVersion\":\"3.0\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	       "\"pythonModule\":\"t.task\"}", "runtime_version",
	       "The specified runtime version '3.0' with the Python version '' is not supported or is "
	       "deprecated.  Please specify a different runtime version. See "
	       "https://cloud.google.com/ml-engine/docs/runtime-version-list for a list of supported "
	       "versions");
	ml_one("{\"region\":\"us-central1\",\"runtimeVersion\":\"1.9.1\",\"pythonVersion\":\"3.7\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}", "runtime_version",
	       "The specified runtime version '1.9.1' with the Python version '3.7' is not supported or "
	       "is deprecated.  Please specify a different runtime version. See "
	       "https://cloud.google.com/ml-engine/docs/runtime-version-list for a list of supported "
	       "versions");
	ml_one("{\"region\":\"us-central1\",\"runtimeVersion\":\"2.4\",\"masterConfig\":"
	       "{\"imageUri\":\"gcr.io/p/t:1\"}}", "training_input.runtime_version",
	       "Only one of masterConfig.imageUri and runtimeVersion should be set.");
}

static void test_packages_and_containers(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	ml("{\"region\":\"us-central1\"}", &vs);
	assert_int_equal(vs.n, 2);
	assert_has(&vs, "training_input.package_uris",
		   "At least one package URI is required unless masterConfig.imageUri is set.");
	assert_has(&vs, "training_input.python_module",
		   "pythonModule is required unless masterConfig.imageUri is set.");
	violations_release(&vs);
	/* Pre-built containers take packages too. */
	ml_valid("{\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":"
		 "\"gcr.io/cloud-ml-public/training/pytorch-gpu.1-7\"},"
		 "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}");
	sb_addstr(&sb, "{\"region\":\"us-central1\",\"pythonModule\":\"t.task\",\"packageUris\":[");
	for (int i = 0; i < 101; i++)
		sb_addf(&sb, "%s\"gs://b/p%d.tar.gz\"", i ? "," : "", i);
	sb_addstr(&sb, "]}");
	ml_one(sb_str(&sb), "training_input.package_uris", "The maximum number of package URIs is 100.");
	sb_release(&sb);
	ml_one("{\"region\":\"us-central1\",\"pythonModule\":\"t.task\",\"packageUris\":[\"gs://b/a\",\"\"]}",
	       "training_input.package_uris[1]", "Package URI must be a non-empty string.");

	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"containerCommand\":[\"python\"]}}",
	       "training_input.master_config.container_command",
	       "containerCommand cannot be set if a custom container image is not provided.");
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-4\","
	       "\"masterConfig\":{\"imageUri\":\"gcr.io/p/t:1\",\"containerArgs\":[\"--x\"]},"
	       "\"args\":[\"--y\"]}",
	       "training_input.master_config.container_args",
	       "containerArgs and args are mutually exclusive, i.e., both cannot be set at the same time.");
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-4\","
	       "\"masterConfig\":{\"imageUri\":\"gcr.io/p/t:1\"},\"workerType\":\"n1-standard-4\","
	       "\"workerCount\":\"2\",\"workerConfig\":{\"containerCommand\":[\"sh\"]},\"args\":[\"--y\"]}",
	       "training_input.worker_config.container_command",
	       "containerCommand and args are mutually exclusive, i.e., both cannot be set at the same time.");
	ml_valid("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-4\","
		 "\"masterConfig\":{\"imageUri\":\"gcr.io/p/t:1\",\"containerCommand\":[\"python\",\"-m\"],"
		 "\"containerArgs\":[\"t.task\"]},\"workerType\":\"n1-standard-4\",\"workerCount\":\"2\","
		 "\"workerConfig\":{\"containerArgs\":[\"--w\"]}}");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"masterConfig\":{\"diskConfig\":"
	       "{\"bootDiskType\":\"pd-balanced\",\"bootDiskSizeGb\":200}}}",
	       "training_input.master_config.disk_config.boot_disk_type",
	       "Boot disk type \"pd-balanced\" is not supported. Valid values: \"pd-ssd\", \"pd-standard\".");
}

static void test_scheduling(void **state)
{
	(void)state;
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"maxRunningTime\":\"7200s\","
		 "\"maxWaitTime\":\"1800s\",\"priority\":1000}}");
	ml_valid("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"maxRunningTime\":\"0.5s\"}}");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"maxRunningTime\":\"2h\"}}",
	       "training_input.scheduling.max_running_time",
	       "Invalid duration \"2h\": expected seconds with up to 9 fractional digits followed by "
	       "'s', e.g. \"7200s\".");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"maxRunningTime\":\"0s\"}}",
	       "training_input.scheduling.max_running_time", "The duration must be positive.");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"maxWaitTime\":\"1799.999s\"}}",
	       "training_input.scheduling.max_wait_time",
	       "The minimum for this field is 1800s (30 minutes).");
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"scheduling\":{\"priority\":1001}}",
	       "training_input.scheduling.priority", "Priority must be between 0 and 1000.");
}

/* ------------------------------------------------------------------------- */
/* Hyperparameters                                                            */

#define HP(spec) "{" BASE ",\"masterType\":\"n1-standard-4\",\"hyperparameters\":" spec "}"

static void test_hyperparameters(void **state)
{
	(void)state;
	ml_valid(HP("{\"goal\":\"MAXIMIZE\",\"hyperparameterMetricTag\":\"accuracy\",\"maxTrials\":10,"
		    "\"maxParallelTrials\":2,\"enableTrialEarlyStopping\":true,\"params\":["
		    "{\"parameterName\":\"lr\",\"type\":\"DOUBLE\",\"minValue\":0.0001,\"maxValue\":0.1,"
		    "\"scaleType\":\"UNIT_LOG_SCALE\"},"
		    "{\"parameterName\":\"layers\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":8,"
		    "\"scaleType\":\"UNIT_LINEAR_SCALE\"},"
		    "{\"parameterName\":\"opt\",\"type\":\"CATEGORICAL\",\"categoricalValues\":[\"adam\",\"sgd\"]},"
		    "{\"parameterName\":\"batch\",\"type\":\"DISCRETE\",\"discreteValues\":[16,32,64]}]}"));
	ml_valid(HP("{\"goal\":\"MINIMIZE\",\"algorithm\":\"GRID_SEARCH\",\"maxTrials\":4,\"params\":["
		    "{\"parameterName\":\"layers\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"));
	ml_one(HP("{\"params\":[{\"parameterName\":\"a\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.goal", "A goal (MAXIMIZE or MINIMIZE) must be specified.");
	ml_one(HP("{\"goal\":\"GOAL_TYPE_UNSPECIFIED\",\"params\":[{\"parameterName\":\"a\",\"type\":\"INTEGER\","
		  "\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.goal", "A goal (MAXIMIZE or MINIMIZE) must be specified.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[]}"), "training_input.hyperparameters.params",
	       "At least one parameter must be specified.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\"}"), "training_input.hyperparameters.params",
	       "At least one parameter must be specified.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"INTEGER\","
		  "\"minValue\":1,\"maxValue\":4},{\"parameterName\":\"a\",\"type\":\"DOUBLE\","
		  "\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.params[1].parameter_name", "Duplicate parameter name \"a\".");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.params[0].parameter_name", "parameterName must be specified.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.params[0].type",
	       "A parameter type (DOUBLE, INTEGER, CATEGORICAL or DISCRETE) must be specified.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DOUBLE\",\"minValue\":1}]}"),
	       "training_input.hyperparameters.params[0].max_value", "maxValue is required for DOUBLE parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DOUBLE\","
		  "\"minValue\":2,\"maxValue\":1}]}"),
	       "training_input.hyperparameters.params[0].max_value",
	       "maxValue (1) must be greater than minValue (2).");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"INTEGER\","
		  "\"minValue\":1.5,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.params[0].min_value",
	       "minValue must be an integer for INTEGER parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DOUBLE\","
		  "\"minValue\":0,\"maxValue\":1,\"scaleType\":\"UNIT_REVERSE_LOG_SCALE\"}]}"),
	       "training_input.hyperparameters.params[0].min_value",
	       "The entire feasible space must be strictly positive for UNIT_REVERSE_LOG_SCALE.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DISCRETE\","
		  "\"discreteValues\":[1,2,2]}]}"),
	       "training_input.hyperparameters.params[0].discrete_values",
	       "Discrete values must be strictly increasing.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DISCRETE\","
		  "\"discreteValues\":[0,2],\"scaleType\":\"UNIT_LOG_SCALE\"}]}"),
	       "training_input.hyperparameters.params[0].discrete_values",
	       "The entire feasible space must be strictly positive for UNIT_LOG_SCALE.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"DISCRETE\"}]}"),
	       "training_input.hyperparameters.params[0].discrete_values",
	       "discreteValues must not be empty for DISCRETE parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"CATEGORICAL\","
		  "\"categoricalValues\":[]}]}"),
	       "training_input.hyperparameters.params[0].categorical_values",
	       "categoricalValues must not be empty for CATEGORICAL parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"CATEGORICAL\","
		  "\"categoricalValues\":[\"x\",\"y\",\"x\"]}]}"),
	       "training_input.hyperparameters.params[0].categorical_values",
	       "Duplicate categorical value \"x\".");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"CATEGORICAL\","
		  "\"categoricalValues\":[\"x\"],\"minValue\":1}]}"),
	       "training_input.hyperparameters.params[0].min_value",
	       "minValue and maxValue can only be set for DOUBLE and INTEGER parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"CATEGORICAL\","
		  "\"categoricalValues\":[\"x\"],\"scaleType\":\"UNIT_LINEAR_SCALE\"}]}"),
	       "training_input.hyperparameters.params[0].scale_type",
	       "scaleType cannot be set for CATEGORICAL parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"params\":[{\"parameterName\":\"a\",\"type\":\"INTEGER\","
		  "\"minValue\":1,\"maxValue\":4,\"discreteValues\":[1]}]}"),
	       "training_input.hyperparameters.params[0].discrete_values",
	       "discreteValues can only be set for DISCRETE parameters.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"maxTrials\":2,\"maxParallelTrials\":3,\"params\":["
		  "{\"parameterName\":\"a\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.max_parallel_trials",
	       "maxParallelTrials (3) must not be greater than maxTrials (2).");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"maxTrials\":0,\"params\":["
		  "{\"parameterName\":\"a\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.max_trials", "maxTrials must be at least 1.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"maxParallelTrials\":0,\"params\":["
		  "{\"parameterName\":\"a\",\"type\":\"INTEGER\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.max_parallel_trials", "maxParallelTrials must be at least 1.");
	ml_one(HP("{\"goal\":\"MAXIMIZE\",\"algorithm\":\"GRID_SEARCH\",\"params\":["
		  "{\"parameterName\":\"a\",\"type\":\"DOUBLE\",\"minValue\":1,\"maxValue\":4}]}"),
	       "training_input.hyperparameters.params[0].type",
	       "GRID_SEARCH requires every parameter to be INTEGER, CATEGORICAL or DISCRETE.");
}

/* ------------------------------------------------------------------------- */
/* Labels                                                                     */

static void labels_case(const char *text, const char *desc)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *l = parse(text);
	size_t n = spec_validate_labels(l, "job.labels", &vs);

	assert_int_equal(n, vs.n);
	if (desc)
		assert_one(&vs, "job.labels", desc, text);
	else
		assert_valid_vs(&vs, text);
	violations_release(&vs);
	json_decref(l);
}

static void test_labels(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char *key63 = xfmt("a%062d", 0), *key64 = xfmt("a%063d", 0), *text, *desc;

	(void)state;
	labels_case("{}", NULL);
	labels_case("{\"team\":\"ml\",\"env\":\"prod-1\",\"owner_id\":\"\",\"x-y_z9\":\"a_b-c\"}", NULL);
	labels_case("{\"équipe\":\"données\",\"ключ\":\"значение\",\"ラベル\":\"値\"}", NULL);
	text = xfmt("{\"%s\":\"%s\"}", key63, key63);
	labels_case(text, NULL);
	free(text);
	text = xfmt("{\"%s\":\"v\"}", key64);
	desc = xfmt("Invalid label key \"%s\": label keys must be between 1 and 63 characters long and "
		    "must conform to the regular expression [\\p{Ll}\\p{Lo}][\\p{Ll}\\p{Lo}\\p{N}_-]{0,62}.",
		    key64);
	labels_case(text, desc);
	free(text);
	free(desc);
	text = xfmt("{\"k\":\"%s\"}", key64);
	labels_case(text, "Invalid value for label \"k\": label values must be between 0 and 63 characters "
		    "long and must conform to the regular expression [\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}.");
	free(text);
	static const char *const bad_keys[] = { "Team", "1team", "_team", "-team", "te am", "te.am",
						"", "Ключ", "tÉam" };
	for (size_t i = 0; i < ARRAY_SIZE(bad_keys); i++) {
		text = xfmt("{\"%s\":\"v\"}", bad_keys[i]);
		desc = xfmt("Invalid label key \"%s\": label keys must be between 1 and 63 characters long "
			    "and must conform to the regular expression "
			    "[\\p{Ll}\\p{Lo}][\\p{Ll}\\p{Lo}\\p{N}_-]{0,62}.", bad_keys[i]);
		labels_case(text, desc);
		free(text);
		free(desc);
	}
	labels_case("{\"env\":\"Prod\"}", "Invalid value for label \"env\": label values must be between 0 "
		    "and 63 characters long and must conform to the regular expression "
		    "[\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}.");
	labels_case("{\"env\":\"1\"}", NULL);	/* values may start with a digit */
	sb_addch(&sb, '{');
	for (int i = 0; i < 64; i++)
		sb_addf(&sb, "%s\"k%d\":\"v\"", i ? "," : "", i);
	sb_addch(&sb, '}');
	labels_case(sb_str(&sb), NULL);
	sb_reset(&sb);
	sb_addch(&sb, '{');
	for (int i = 0; i < 65; i++)
		sb_addf(&sb, "%s\"k%d\":\"v\"", i ? "," : "", i);
	sb_addch(&sb, '}');
	labels_case(sb_str(&sb), "At most 64 labels can be set; 65 were given.");
	sb_release(&sb);
	labels_case("{\"k\":5}", "Invalid value for label \"k\": expected a string.");
	free(key63);
	free(key64);
	/* NULL is no labels. */
	{
		struct violations vs = VIOLATIONS_INIT;
		assert_int_equal(spec_validate_labels(NULL, "job.labels", &vs), 0);
	}
}

/* ------------------------------------------------------------------------- */
/* Vertex                                                                     */

#define POOL(machine_spec, replicas) \
	"{\"machineSpec\":" machine_spec ",\"replicaCount\":\"" replicas "\"," \
	"\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}"

static void test_vertex(void **state)
{
	(void)state;
	vx_valid("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-8\","
		 "\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":1}", "1") ","
		 POOL("{\"machineType\":\"n1-standard-8\"}", "2") "],\"scheduling\":{\"timeout\":\"86400s\"}}");
	/* Empty pools after the first are skipped. */
	vx_valid("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1")
		 ",{}," POOL("{\"machineType\":\"n1-standard-4\"}", "3") "]}");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "2") "]}",
	       "job_spec.worker_pool_specs[0].replica_count",
	       "Replica count for master worker pool (worker_pool_specs[0].replica_count) should be 1.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[{}]}",
	       "job_spec.worker_pool_specs[0].replica_count",
	       "Replica count for master worker pool (worker_pool_specs[0].replica_count) should be 1.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[]}",
	       "job_spec.worker_pool_specs[0].replica_count",
	       "Replica count for master worker pool (worker_pool_specs[0].replica_count) should be 1.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1")
	       ",{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	       "\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
	       "job_spec.worker_pool_specs[1].machine_spec",
	       "Both or none of `machine_spec` and `replica_count` should be specified.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\","
	       "\"acceleratorType\":\"NVIDIA_TESLA_T4\"}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Both `accelerator_type` and `accelerator_count` should be specified or none.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\","
	       "\"acceleratorCount\":2}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Both `accelerator_type` and `accelerator_count` should be specified or none.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\","
	       "\"acceleratorType\":\"NVIDIA_TESLA_A100\",\"acceleratorCount\":1}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"NVIDIA_TESLA_A100\" is not supported for machine type \"n1-standard-4\".");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-2\"}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.machine_type",
	       "Machine type \"n1-standard-2\" is not supported for training.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"complex_model_m\"}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.machine_type",
	       "Machine type \"complex_model_m\" is not supported for training.");
	/* Vertex-only accelerators and machine types. */
	vx_valid("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"g2-standard-8\","
		 "\"acceleratorType\":\"NVIDIA_L4\",\"acceleratorCount\":1}", "1") "]}");
	vx_valid("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"a2-ultragpu-8g\"}", "1") "]}");
	vx_one("southamerica-east1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"g2-standard-8\","
	       "\"acceleratorType\":\"NVIDIA_L4\",\"acceleratorCount\":1}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"NVIDIA_L4\" is not available in location \"southamerica-east1\".");
	/* TPU: cloud-tpu with TPU_V2/TPU_V3 x 8. */
	vx_valid("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"cloud-tpu\","
		 "\"acceleratorType\":\"TPU_V3\",\"acceleratorCount\":8}", "1") "]}");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"cloud-tpu\","
	       "\"acceleratorType\":\"TPU_V3\",\"acceleratorCount\":32}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_count",
	       "Accelerator count 32 is not supported for accelerator \"TPU_V3\" on machine type "
	       "\"cloud-tpu\". Supported counts: 8.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"cloud-tpu\"}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Machine type \"cloud-tpu\" needs an accelerator: TPU_V2, TPU_V3.");
	/* The zone rule, through pools. */
	vx_one("us-central1", "{\"workerPoolSpecs\":["
	       POOL("{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_T4\",\"acceleratorCount\":1}", "1") ","
	       POOL("{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_P100\",\"acceleratorCount\":1}", "2") ","
	       POOL("{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_K80\",\"acceleratorCount\":1}", "1") "]}",
	       "job_spec.worker_pool_specs",
	       "No zone in location \"us-central1\" offers all of the accelerator types the job uses "
	       "(NVIDIA_TESLA_K80, NVIDIA_TESLA_P100, NVIDIA_TESLA_T4). A job that uses more than one "
	       "accelerator type must run in one zone that offers all of them.");
	/* Tasks. */
	vx_one("us-central1", "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	       "\"replicaCount\":\"1\"}]}", "job_spec.worker_pool_specs[0]",
	       "Exactly one of `container_spec` and `python_package_spec` should be specified.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	       "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"},"
	       "\"pythonPackageSpec\":{\"executorImageUri\":\"us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}}]}",
	       "job_spec.worker_pool_specs[0]",
	       "Exactly one of `container_spec` and `python_package_spec` should be specified.");
	vx_valid("us-central1", "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
		 "\"replicaCount\":\"1\",\"pythonPackageSpec\":{\"executorImageUri\":"
		 "\"us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest\","
		 "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}}]}");
	vx_one("us-central1", "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	       "\"replicaCount\":\"1\",\"pythonPackageSpec\":{\"executorImageUri\":\"x\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"]}}]}",
	       "job_spec.worker_pool_specs[0].python_package_spec.python_module",
	       "A Python module must be specified.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	       "\"replicaCount\":\"1\",\"containerSpec\":{}}]}",
	       "job_spec.worker_pool_specs[0].container_spec.image_uri",
	       "A container image URI must be specified.");
	/* Location and scheduling. */
	vx_one("mars-north1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1") "]}",
	       "parent", "Location \"mars-north1\" is not supported for training.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1") "],"
	       "\"scheduling\":{\"timeout\":\"1 day\"}}", "job_spec.scheduling.timeout",
	       "Invalid duration \"1 day\": expected seconds with up to 9 fractional digits followed "
	       "by 's', e.g. \"7200s\".");
}

/* ------------------------------------------------------------------------- */
/* Image references and env names (issue 12 item 1: an image that is an      */
/* engine option escaped the container)                                      */

#define IMG_FORM ". An image URI is [registry[:port]/]path[:tag][@digest], e.g. " \
		 "us-docker.pkg.dev/my-project/trainers/mnist:v2."
#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CUSTOM_ALL(master, worker, ps, evaluator) \
	"{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-4\"," \
	"\"masterConfig\":{\"imageUri\":\"" master "\"},\"workerType\":\"n1-standard-4\"," \
	"\"workerCount\":\"1\",\"workerConfig\":{\"imageUri\":\"" worker "\"}," \
	"\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":\"1\"," \
	"\"parameterServerConfig\":{\"imageUri\":\"" ps "\"},\"evaluatorType\":\"n1-standard-4\"," \
	"\"evaluatorCount\":\"1\",\"evaluatorConfig\":{\"imageUri\":\"" evaluator "\"}}"
#define VX_IMAGE(image) \
	"{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"}," \
	"\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"" image "\"}}]}"
#define VX_EXECUTOR(image) \
	"{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1") "," \
	"{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"2\"," \
	"\"pythonPackageSpec\":{\"executorImageUri\":\"" image "\"," \
	"\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}}]}"
#define VX_ENV(env) \
	"{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"}," \
	"\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\",\"env\":" env "}}]}"

/*
 * The machine types of today (issue 27), transcribed from the sources named in
 * deploy/catalog.yaml: each Vertex-only, its size, the accelerator it carries
 * and the one count it takes. Each is checked against the catalog, accepted
 * with its own accelerators (left out, and, where the enum names them, given),
 * refused with another count, and, in every Vertex region of the catalog,
 * accepted exactly where a zone offers its accelerator and refused elsewhere
 * with the location error; ml v1 refuses it as a machine type.
 */
static const struct todays_machine {
	const char *name;
	int vcpus;
	int memory_gb;
	const char *acc;
	int count;
	bool by_name;		/* Vertex's enum names the accelerator */
	const char *offered;	/* a region offering it (NULL: none does) */
	const char *not_offered;
} todays[] = {
	{ "a3-highgpu-1g", 26, 234, "NVIDIA_H100_80GB", 1, true, "us-central1", "southamerica-east1" },
	{ "a3-highgpu-2g", 52, 468, "NVIDIA_H100_80GB", 2, true, "us-east5", "us-south1" },
	{ "a3-highgpu-4g", 104, 936, "NVIDIA_H100_80GB", 4, true, "europe-west4", "europe-west2" },
	{ "a3-highgpu-8g", 208, 1872, "NVIDIA_H100_80GB", 8, true, "asia-southeast1", "us-east1" },
	{ "a3-megagpu-8g", 208, 1872, "NVIDIA_H100_MEGA_80GB", 8, true, "us-east4", "us-south1" },
	{ "a3-ultragpu-8g", 224, 2952, "NVIDIA_H200_141GB", 8, true, "us-east5", "asia-southeast1" },
	{ "a4-highgpu-8g", 224, 3968, "NVIDIA_B200", 8, true, "us-central1", "us-west1" },
	{ "a4x-highgpu-4g", 140, 884, "NVIDIA_GB200", 4, true, NULL, "us-central1" },
	{ "g2-standard-4", 4, 16, "NVIDIA_L4", 1, true, "us-central1", "southamerica-east1" },
	{ "g2-standard-8", 8, 32, "NVIDIA_L4", 1, true, "asia-southeast1", "us-east5" },
	{ "g2-standard-12", 12, 48, "NVIDIA_L4", 1, true, "europe-west4", "us-south1" },
	{ "g2-standard-16", 16, 64, "NVIDIA_L4", 1, true, "us-east4", "us-west2" },
	{ "g2-standard-24", 24, 96, "NVIDIA_L4", 2, true, "us-west4", "australia-southeast1" },
	{ "g2-standard-32", 32, 128, "NVIDIA_L4", 1, true, "us-central1", "europe-north1" },
	{ "g2-standard-48", 48, 192, "NVIDIA_L4", 4, true, "europe-west1", "southamerica-east1" },
	{ "g2-standard-96", 96, 384, "NVIDIA_L4", 8, true, "asia-east1", "us-east5" },
	{ "ct5lp-hightpu-1t", 24, 48, "TPU_V5_LITEPOD", 1, true, "us-west4", "europe-west1" },
	{ "ct5lp-hightpu-4t", 112, 192, "TPU_V5_LITEPOD", 4, true, "us-central1", "europe-west4" },
	{ "ct5lp-hightpu-8t", 224, 384, "TPU_V5_LITEPOD", 8, true, "us-south1", "us-east5" },
	{ "ct6e-standard-1t", 44, 176, "TPU_V6E", 1, false, "us-east5", "us-west4" },
	{ "ct6e-standard-4t", 180, 720, "TPU_V6E", 4, false, "europe-west4", "asia-east1" },
	{ "ct6e-standard-8t", 180, 1440, "TPU_V6E", 8, false, "us-east1", "us-south1" },
};

static char *vertex_job(const char *machine, const char *acc, int count)
{
	if (!acc)
		return xfmt("{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"%s\"},"
			    "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
			    machine);
	return xfmt("{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"%s\","
		    "\"acceleratorType\":\"%s\",\"acceleratorCount\":%d},"
		    "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
		    machine, acc, count);
}

static void test_todays_machines(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(todays); i++) {
		const struct todays_machine *t = &todays[i];
		const struct catalog_machine *m = catalog_machine_find(cat, t->name);
		int a = catalog_accelerator_find(cat, t->acc);
		char *job, *bad, *desc;

		if (!m)
			fail_msg("%s: not in the catalog", t->name);
		assert_true(a >= 0);
		assert_int_equal(m->apis, CATALOG_API_VERTEX);
		assert_int_equal(m->vcpus, t->vcpus);
		assert_int_equal(m->memory_mb, (int64_t)t->memory_gb * 1024);
		assert_int_equal(m->accelerator, a);
		assert_int_equal(m->accelerator_count, t->count);
		assert_int_equal(m->tpu_host, catalog_accelerator(cat, (size_t)a)->tpu);
		assert_int_equal(m->counts[a], t->by_name ? UINT64_C(1) << t->count : 0);
		n_checks++;

		/* Its own accelerators, left out or named, where they are offered. */
		job = vertex_job(t->name, NULL, 0);
		if (t->offered)
			vx_valid(t->offered, job);
		if (t->by_name) {
			char *named = vertex_job(t->name, t->acc, t->count);
			if (t->offered)
				vx_valid(t->offered, named);
			/* Another count: Google's words for a count the type does not take. */
			bad = vertex_job(t->name, t->acc, t->count + 1);
			desc = xfmt("Accelerator count %d is not supported for accelerator \"%s\" on "
				    "machine type \"%s\". Supported counts: %d.", t->count + 1, t->acc,
				    t->name, t->count);
			vx_one(t->offered ? t->offered : t->not_offered, bad,
			       "job_spec.worker_pool_specs[0].machine_spec.accelerator_count", desc);
			free(bad);
			free(desc);
			free(named);
		}
		/* A region without it. */
		desc = xfmt("Accelerator \"%s\" is not available in location \"%s\".", t->acc,
			    t->not_offered);
		vx_one(t->not_offered, job, "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
		       desc);
		free(desc);
		/* Every Vertex region of the catalog: accepted exactly where a zone offers it. */
		bool somewhere = false;
		for (size_t r = 0; r < catalog_region_count(cat, CATALOG_API_VERTEX); r++) {
			const char *region = catalog_region_name(cat, CATALOG_API_VERTEX, r);
			struct violations vs = VIOLATIONS_INIT;
			bool offered = catalog_region_find(cat, region)->accelerators & (1u << a);

			somewhere |= offered;
			vx(region, job, &vs);
			if (offered) {
				assert_valid_vs(&vs, region);
			} else {
				desc = xfmt("Accelerator \"%s\" is not available in location \"%s\".",
					    t->acc, region);
				assert_one(&vs, "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
					   desc, region);
				free(desc);
			}
			violations_release(&vs);
		}
		assert_int_equal(somewhere, t->offered != NULL);
		/* ml v1 never trained on it. */
		char *ti = master_job("us-central1", t->name, NULL, 0);
		desc = xfmt("Machine type \"%s\" is not supported for training.", t->name);
		ml_one(ti, "training_input.master_type", desc);
		free(desc);
		free(ti);
		free(job);
	}
	/* The Vertex-only accelerators: known to Vertex, not to ml v1. */
	static const char *const vertex_only[] = {
		"NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200", "NVIDIA_GB200",
		"NVIDIA_RTX_PRO_6000", "TPU_V4_POD", "TPU_V5_LITEPOD",
	};
	for (size_t i = 0; i < ARRAY_SIZE(vertex_only); i++) {
		int a = catalog_accelerator_find(cat, vertex_only[i]);
		assert_true(a >= 0);
		assert_int_equal(catalog_accelerator(cat, (size_t)a)->apis, CATALOG_API_VERTEX);
		char *ti = master_job("us-central1", "n1-standard-8", vertex_only[i], 1);
		char *desc = xfmt("Accelerator \"%s\" is not supported.", vertex_only[i]);
		ml_one(ti, "training_input.master_config.accelerator_config.type", desc);
		free(desc);
		free(ti);
	}
	/* Known, but no machine type takes them (no source read names one). */
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"cloud-tpu\","
	       "\"acceleratorType\":\"TPU_V4_POD\",\"acceleratorCount\":8}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"TPU_V4_POD\" is not supported for machine type \"cloud-tpu\".");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"g2-standard-48\","
	       "\"acceleratorType\":\"NVIDIA_RTX_PRO_6000\",\"acceleratorCount\":1}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"NVIDIA_RTX_PRO_6000\" is not supported for machine type \"g2-standard-48\".");
	/* TPU_V6E is the catalog's name for the chips of ct6e types: no API's enum value. */
	vx_one("us-east5", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"ct6e-standard-4t\","
	       "\"acceleratorType\":\"TPU_V6E\",\"acceleratorCount\":4}", "1") "]}",
	       "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
	       "Accelerator \"TPU_V6E\" is not supported.");
	/* The regions added for them are Vertex's: ml v1 refuses them. */
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-east5\",\"masterType\":\"n1-standard-4\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
	       "training_input.region", "Region \"us-east5\" is not supported for training.");
	vx_valid("us-east5", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1") "]}");
}

static void test_image_references(void **state)
{
	static const char *const ok[] = {
		"localhost/trainer:test", "localhost:5000/trainer:test", "gcr.io/p/t@" DIGEST,
		"registry.example.com:443/team/img:v1@" DIGEST, "[::1]:5000/img:tag", "busybox",
		"docker:24-dind", "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest",
	};
	(void)state;
	/* ml v1: every role's imageUri, named by its field. */
	ml_one("{\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":\"--volume=/:/host\"}}",
	       "training_input.master_config.image_uri",
	       "Invalid image URI \"--volume=/:/host\": it starts with \"-\" as a command-line option "
	       "does" IMG_FORM);
	ml_one(CUSTOM_ALL("gcr.io/p/t:1", "--privileged", "gcr.io/p/t:1", "gcr.io/p/t:1"),
	       "training_input.worker_config.image_uri",
	       "Invalid image URI \"--privileged\": it starts with \"-\" as a command-line option "
	       "does" IMG_FORM);
	ml_one(CUSTOM_ALL("gcr.io/p/t:1", "gcr.io/p/t:1", "dir:5000/x", "gcr.io/p/t:1"),
	       "training_input.parameter_server_config.image_uri",
	       "Invalid image URI \"dir:5000/x\": it starts with a podman transport (dir:, oci:, "
	       "oci-archive:, docker-archive:, docker-daemon:, sif:, tarball:, ostree:, "
	       "containers-storage:), which reads an image from the node's own files" IMG_FORM);
	/* A hostile value is not repeated when it holds control characters. */
	ml_one(CUSTOM_ALL("gcr.io/p/t:1", "gcr.io/p/t:1", "gcr.io/p/t:1", "img\\n--privileged"),
	       "training_input.evaluator_config.image_uri",
	       "Invalid image URI: it contains whitespace, a control character or a non-ASCII "
	       "character" IMG_FORM);
	ml_one("{\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":\"gcr.io/MyProject/t:1\"}}",
	       "training_input.master_config.image_uri",
	       "Invalid image URI \"gcr.io/MyProject/t:1\": the repository path must be "
	       "lowercase" IMG_FORM);
	{
		struct violations vs = VIOLATIONS_INIT;
		ml(CUSTOM_ALL("-v", "--volume=/:/h", "--privileged", "--mount=x"), &vs);
		assert_int_equal(vs.n, 4);
		assert_string_equal(vs.v[0].field, "training_input.master_config.image_uri");
		assert_string_equal(vs.v[3].field, "training_input.evaluator_config.image_uri");
		violations_release(&vs);
	}
	/* A TPU worker's custom container: the image is checked, tpuTfVersion too. */
	ml_one("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-8\","
	       "\"masterConfig\":{\"imageUri\":\"gcr.io/p/master:1\"},\"workerType\":\"cloud_tpu\","
	       "\"workerCount\":\"1\",\"workerConfig\":{\"imageUri\":\"--privileged\","
	       "\"tpuTfVersion\":\"1.15\",\"acceleratorConfig\":{\"type\":\"TPU_V2\",\"count\":\"8\"}}}",
	       "training_input.worker_config.image_uri",
	       "Invalid image URI \"--privileged\": it starts with \"-\" as a command-line option "
	       "does" IMG_FORM);
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		char *ti = xfmt("{\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":\"%s\"}}",
				ok[i]);
		ml_valid(ti);
		free(ti);
		char *spec = xfmt(VX_IMAGE("%s"), ok[i]);
		vx_valid("us-central1", spec);
		free(spec);
		spec = xfmt(VX_EXECUTOR("%s"), ok[i]);
		vx_valid("us-central1", spec);
		free(spec);
	}

	/* Vertex: containerSpec.imageUri and pythonPackageSpec.executorImageUri. */
	vx_one("us-central1", VX_IMAGE("--volume=/:/host"),
	       "job_spec.worker_pool_specs[0].container_spec.image_uri",
	       "Invalid image URI \"--volume=/:/host\": it starts with \"-\" as a command-line option "
	       "does" IMG_FORM);
	vx_one("us-central1", VX_IMAGE("gcr.io/p/t:1 --privileged"),
	       "job_spec.worker_pool_specs[0].container_spec.image_uri",
	       "Invalid image URI \"gcr.io/p/t:1 --privileged\": it contains whitespace, a control "
	       "character or a non-ASCII character" IMG_FORM);
	vx_one("us-central1", VX_EXECUTOR("--privileged"),
	       "job_spec.worker_pool_specs[1].python_package_spec.executor_image_uri",
	       "Invalid image URI \"--privileged\": it starts with \"-\" as a command-line option "
	       "does" IMG_FORM);
	vx_one("us-central1", VX_EXECUTOR("oci-archive:img.tar"),
	       "job_spec.worker_pool_specs[1].python_package_spec.executor_image_uri",
	       "Invalid image URI \"oci-archive:img.tar\": it starts with a podman transport (dir:, "
	       "oci:, oci-archive:, docker-archive:, docker-daemon:, sif:, tarball:, ostree:, "
	       "containers-storage:), which reads an image from the node's own files" IMG_FORM);

	/* Vertex env: names are C identifiers, and required. */
	vx_valid("us-central1", VX_ENV("[{\"name\":\"FOO\",\"value\":\"--privileged\"},"
				       "{\"name\":\"_x9\"},{\"name\":\"TF_CONFIG\",\"value\":\"{}\"}]"));
	vx_one("us-central1", VX_ENV("[{\"name\":\"FOO\",\"value\":\"x\"},{\"name\":\"BAD-NAME\","
				     "\"value\":\"x\"}]"),
	       "job_spec.worker_pool_specs[0].container_spec.env[1].name",
	       "Invalid environment variable name \"BAD-NAME\": it must be a C identifier, "
	       "[A-Za-z_][A-Za-z0-9_]*.");
	vx_one("us-central1", VX_ENV("[{\"name\":\"TRAINPLANE*\"}]"),
	       "job_spec.worker_pool_specs[0].container_spec.env[0].name",
	       "Invalid environment variable name \"TRAINPLANE*\": it must be a C identifier, "
	       "[A-Za-z_][A-Za-z0-9_]*.");
	vx_one("us-central1", VX_ENV("[{\"name\":\"A\\nB\"}]"),
	       "job_spec.worker_pool_specs[0].container_spec.env[0].name",
	       "Invalid environment variable name: it must be a C identifier, [A-Za-z_][A-Za-z0-9_]*.");
	vx_one("us-central1", VX_ENV("[{\"value\":\"x\"}]"),
	       "job_spec.worker_pool_specs[0].container_spec.env[0].name",
	       "Required field is not set.");
	vx_one("us-central1", "{\"workerPoolSpecs\":[" POOL("{\"machineType\":\"n1-standard-4\"}", "1") ","
	       "{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"2\","
	       "\"pythonPackageSpec\":{\"executorImageUri\":\"gcr.io/p/t:1\","
	       "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\","
	       "\"env\":[{\"name\":\"1X\",\"value\":\"y\"}]}}]}",
	       "job_spec.worker_pool_specs[1].python_package_spec.env[0].name",
	       "Invalid environment variable name \"1X\": it must be a C identifier, "
	       "[A-Za-z_][A-Za-z0-9_]*.");
}

/* ------------------------------------------------------------------------- */
/* The seeds' examples, as written                                            */

static void test_seed_examples(void **state)
{
	static const char *const ml_ok[] = {
		"seed000_compute_engine_gpus.json", "seed000_legacy_gpus.json",
		"seed002_basic_tpu.json", "seed002_legacy_master_cloud_tpu.json",
		"seed002_tpu_v2.json", "seed002_tpu_v3.json", "seed002_pytorch_xla.json",
		"seed002_custom_containers_tpu_v2.json", "seed002_custom_containers_tpu_v3.json",
	};
	static const char *const vx_ok[] = {
		"seed001_vertex_single_machine_multi_gpu.json", "seed001_vertex_multi_worker.json",
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ml_ok); i++) {
		struct violations vs = VIOLATIONS_INIT;
		json_t *job = fixture(ml_ok[i]);
		spec_check_ml(cat, json_object_get(job, "trainingInput"), &vs);
		spec_validate_labels(json_object_get(job, "labels"), "job.labels", &vs);
		assert_valid_vs(&vs, ml_ok[i]);
		json_decref(job);
	}
	for (size_t i = 0; i < ARRAY_SIZE(vx_ok); i++) {
		struct violations vs = VIOLATIONS_INIT;
		json_t *job = fixture(vx_ok[i]);
		spec_check_vertex(cat, "us-central1", json_object_get(job, "jobSpec"), &vs);
		assert_valid_vs(&vs, vx_ok[i]);
		json_decref(job);
	}
}

/* Wrong JSON types (what the structural pass refuses) never crash. */
static void test_wrong_types(void **state)
{
	static const char *const junk[] = {
		"null", "[]", "1", "\"x\"", "{\"scaleTier\":5}", "{\"masterConfig\":[1]}",
		"{\"scaleTier\":\"CUSTOM\",\"masterType\":{},\"workerCount\":\"x\",\"workerType\":7}",
		"{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"masterConfig\":"
		"{\"acceleratorConfig\":{\"type\":1,\"count\":1e300}}}",
		"{\"hyperparameters\":{\"params\":[1,{\"type\":\"DISCRETE\",\"discreteValues\":[\"a\"]}]}}",
		"{\"scheduling\":{\"maxWaitTime\":7},\"packageUris\":\"x\",\"labels\":[]}",
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(junk); i++) {
		struct violations vs = VIOLATIONS_INIT;
		json_t *j = parse(junk[i]);
		assert_true(spec_check_ml(cat, j, &vs) > 0);
		(void)spec_check_vertex(cat, "us-central1", j, &vs);
		(void)spec_validate_labels(j, "job.labels", &vs);
		violations_release(&vs);
		json_decref(j);
	}
	ml_one("{" BASE ",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\","
	       "\"workerCount\":2.5}", "training_input.worker_count", "Invalid value: expected an integer.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_table_every_cell),
		cmocka_unit_test(test_gpu_table_worker_and_vertex),
		cmocka_unit_test(test_p100_limit),
		cmocka_unit_test(test_legacy_types),
		cmocka_unit_test(test_every_gpu_region),
		cmocka_unit_test(test_region_without_gpus),
		cmocka_unit_test(test_region_required_and_known),
		cmocka_unit_test(test_mixed_gpu_types_need_one_zone),
		cmocka_unit_test(test_scale_tiers),
		cmocka_unit_test(test_custom_types_and_counts),
		cmocka_unit_test(test_accelerator_type_and_count),
		cmocka_unit_test(test_all_violations_reported),
		cmocka_unit_test(test_tpu_rules),
		cmocka_unit_test(test_tpu_runtime_versions),
		cmocka_unit_test(test_tpu_tf_version),
		cmocka_unit_test(test_runtime_python_pairs),
		cmocka_unit_test(test_packages_and_containers),
		cmocka_unit_test(test_scheduling),
		cmocka_unit_test(test_hyperparameters),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_vertex),
		cmocka_unit_test(test_todays_machines),
		cmocka_unit_test(test_image_references),
		cmocka_unit_test(test_seed_examples),
		cmocka_unit_test(test_wrong_types),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
