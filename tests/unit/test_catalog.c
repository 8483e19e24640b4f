/*
 * test_catalog.c - the catalog loader (spec/catalog.c): the default
 * deploy/catalog.yaml (run from the repository root) loads and says what the
 * seeds say; broken catalogs fail with "path:line:col: problem".
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

static catalog_accset set_of(const char *const *names, size_t n)
{
	catalog_accset s = 0;

	for (size_t i = 0; i < n; i++) {
		int a = catalog_accelerator_find(cat, names[i]);
		assert_true(a >= 0);
		s |= 1u << a;
	}
	return s;
}

/* ------------------------------------------------------------------------- */
/* The default catalog                                                        */

static void test_default_regions(void **state)
{
	static const char *const expected[] = {	/* sorted */
		"asia-east1", "asia-northeast1", "asia-northeast3", "asia-south1", "asia-southeast1",
		"australia-southeast1", "europe-west1", "europe-west2", "europe-west3", "europe-west4",
		"northamerica-northeast1", "southamerica-east1", "us-central1", "us-east1", "us-east4",
		"us-west1", "us-west2",
	};
	(void)state;
	assert_int_equal(catalog_region_count(cat, CATALOG_API_ML), ARRAY_SIZE(expected));
	for (size_t i = 0; i < ARRAY_SIZE(expected); i++) {
		assert_string_equal(catalog_region_name(cat, CATALOG_API_ML, i), expected[i]);
		assert_true(catalog_has_region(cat, expected[i]));
	}
	assert_null(catalog_region_name(cat, CATALOG_API_ML, ARRAY_SIZE(expected)));
	/* Vertex trains there too, and in the regions of today's accelerators. */
	static const char *const vertex_only[] = { "europe-north1", "us-east5", "us-south1", "us-west4" };
	assert_int_equal(catalog_region_count(cat, CATALOG_API_VERTEX),
			 ARRAY_SIZE(expected) + ARRAY_SIZE(vertex_only));
	for (size_t i = 0; i < ARRAY_SIZE(vertex_only); i++) {
		const struct catalog_region *r = catalog_region_find(cat, vertex_only[i]);
		assert_non_null(r);
		assert_int_equal(r->apis, CATALOG_API_VERTEX);
		assert_null(catalog_location_json(cat, "p", vertex_only[i]));
	}
	assert_string_equal(catalog_region_name(cat, CATALOG_API_VERTEX, 0), "asia-east1");
	assert_false(catalog_has_region(cat, "us-west3"));
	assert_false(catalog_has_region(cat, ""));
	assert_false(catalog_has_region(cat, NULL));
}

static void test_location_json(void **state)
{
	json_t *loc;
	char *s;

	(void)state;
	loc = catalog_location_json(cat, "my-proj", "us-central1");
	s = json_dumps(loc, JSON_COMPACT);
	assert_string_equal(s,
		"{\"name\":\"projects/my-proj/locations/us-central1\",\"capabilities\":[{\"type\":"
		"\"TRAINING\",\"availableAccelerators\":[\"NVIDIA_TESLA_K80\",\"NVIDIA_TESLA_P100\","
		"\"NVIDIA_TESLA_V100\",\"NVIDIA_TESLA_P4\",\"NVIDIA_TESLA_T4\",\"NVIDIA_TESLA_A100\","
		"\"TPU_V2\",\"TPU_V3\"]}]}");
	free(s);
	json_decref(loc);

	/* A region without GPUs: proto3 JSON leaves the empty list out. */
	loc = catalog_location_json(cat, "p", "europe-west3");
	s = json_dumps(loc, JSON_COMPACT);
	assert_string_equal(s, "{\"name\":\"projects/p/locations/europe-west3\",\"capabilities\":"
			    "[{\"type\":\"TRAINING\"}]}");
	free(s);
	json_decref(loc);

	loc = catalog_location_json(cat, "p", "europe-west1");
	s = json_dumps(json_object_get(json_array_get(json_object_get(loc, "capabilities"), 0),
				       "availableAccelerators"), JSON_COMPACT);
	assert_string_equal(s, "[\"NVIDIA_TESLA_K80\",\"NVIDIA_TESLA_P100\",\"NVIDIA_TESLA_T4\"]");
	free(s);
	json_decref(loc);

	assert_null(catalog_location_json(cat, "p", "nowhere1"));
}

static void test_machine_sizes(void **state)
{
	struct machine_size ms;

	(void)state;
	assert_int_equal(catalog_machine_size(cat, "n1-highcpu-16", &ms), 0);
	assert_int_equal(ms.vcpus, 16);
	assert_int_equal(ms.memory_mb, 14746);	/* 14.4 GB */
	assert_int_equal(catalog_machine_size(cat, "n1-standard-32", &ms), 0);
	assert_int_equal(ms.vcpus, 32);
	assert_int_equal(ms.memory_mb, 120 * 1024);
	/* Legacy types have the size of their Compute Engine equivalent. */
	assert_int_equal(catalog_machine_size(cat, "complex_model_m_gpu", &ms), 0);
	assert_int_equal(ms.vcpus, 16);
	assert_int_equal(ms.memory_mb, 60 * 1024);
	assert_int_equal(catalog_machine_size(cat, "large_model", &ms), 0);
	assert_int_equal(ms.vcpus, 8);
	assert_int_equal(ms.memory_mb, 52 * 1024);
	assert_int_equal(catalog_machine_size(cat, "a2-megagpu-16g", &ms), 0);
	assert_int_equal(ms.vcpus, 96);
	assert_int_equal(catalog_machine_size(cat, "n1-standard-3", &ms), -1);
}

static void test_machine_types(void **state)
{
	const struct catalog_machine *m;
	int t4 = catalog_accelerator_find(cat, "NVIDIA_TESLA_T4");
	int k80 = catalog_accelerator_find(cat, "NVIDIA_TESLA_K80");
	int v100 = catalog_accelerator_find(cat, "NVIDIA_TESLA_V100");
	int a100 = catalog_accelerator_find(cat, "NVIDIA_TESLA_A100");
	int tpu2 = catalog_accelerator_find(cat, "TPU_V2");

	(void)state;
	assert_true(t4 >= 0 && k80 >= 0 && v100 >= 0 && a100 >= 0 && tpu2 >= 0);
	assert_int_equal(catalog_accelerator_find(cat, "NVIDIA_TESLA_X1"), -1);
	assert_true(catalog_accelerator(cat, (size_t)tpu2)->tpu);
	assert_false(catalog_accelerator(cat, (size_t)t4)->tpu);

	/* Seed 000: "2 or 4 T4, never 3" on n1-highcpu-16; V100 on n1-standard-32: 4 or 8. */
	m = catalog_machine_find(cat, "n1-highcpu-16");
	assert_non_null(m);
	assert_false(m->legacy);
	assert_true(m->apis & CATALOG_API_ML);
	assert_int_equal(m->counts[t4], (1 << 1) | (1 << 2) | (1 << 4));
	m = catalog_machine_find(cat, "n1-standard-32");
	assert_int_equal(m->counts[v100], (1 << 4) | (1 << 8));
	assert_int_equal(m->counts[a100], 0);
	m = catalog_machine_find(cat, "a2-highgpu-2g");
	assert_int_equal(m->accelerator, a100);
	assert_int_equal(m->accelerator_count, 2);
	assert_int_equal(m->counts[a100], 1 << 2);

	m = catalog_machine_find(cat, "complex_model_l_gpu");
	assert_true(m->legacy);
	assert_string_equal(m->equivalent, "n1-standard-32");
	assert_int_equal(m->accelerator, k80);
	assert_int_equal(m->accelerator_count, 8);
	m = catalog_machine_find(cat, "large_model_v100");
	assert_int_equal(m->accelerator, v100);
	assert_int_equal(m->accelerator_count, 1);
	m = catalog_machine_find(cat, "cloud_tpu");
	assert_true(m->legacy && m->tpu_host);
	assert_int_equal(m->accelerator, tpu2);
	assert_int_equal(m->accelerator_count, 8);
	assert_int_equal(m->counts[tpu2], 1 << 8);

	/* Not for ml v1 training (reference 7.1), but known. */
	m = catalog_machine_find(cat, "n1-standard-2");
	assert_non_null(m);
	assert_int_equal(m->apis, 0);
	m = catalog_machine_find(cat, "g2-standard-8");
	assert_int_equal(m->apis, CATALOG_API_VERTEX);
	assert_null(catalog_machine_find(cat, "n1-ultra-1"));
	assert_null(catalog_machine_find(cat, NULL));
}

static void test_zones(void **state)
{
	static const char *const t4_k80_p100[] = { "NVIDIA_TESLA_T4", "NVIDIA_TESLA_K80",
						   "NVIDIA_TESLA_P100" };
	static const char *const t4_k80[] = { "NVIDIA_TESLA_T4", "NVIDIA_TESLA_K80" };
	static const char *const k80_p100[] = { "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100" };
	static const char *const tpu3[] = { "TPU_V3" };
	const struct catalog_region *r = catalog_region_find(cat, "us-central1");
	const struct catalog_zone *z;

	(void)state;
	assert_non_null(r);
	assert_int_equal(r->n_zones, 4);
	/* Seed 000: us-central1 offers all three, but no zone does. */
	assert_int_equal(r->accelerators & set_of(t4_k80_p100, 3), set_of(t4_k80_p100, 3));
	assert_null(catalog_region_zone_offering(r, set_of(t4_k80_p100, 3)));
	z = catalog_region_zone_offering(r, set_of(t4_k80, 2));
	assert_string_equal(z->name, "us-central1-a");
	z = catalog_region_zone_offering(r, set_of(k80_p100, 2));
	assert_string_equal(z->name, "us-central1-c");
	z = catalog_region_zone_offering(r, set_of(tpu3, 1));
	assert_string_equal(z->name, "us-central1-a");
	z = catalog_region_zone_offering(r, 0);
	assert_non_null(z);
	/* us-east1-c offers the three. */
	r = catalog_region_find(cat, "us-east1");
	z = catalog_region_zone_offering(r, set_of(t4_k80_p100, 3));
	assert_string_equal(z->name, "us-east1-c");
	/* TPUs only in us-central1 and europe-west4 (seed 002). */
	for (size_t i = 0; i < catalog_region_count(cat, CATALOG_API_ML); i++) {
		const char *name = catalog_region_name(cat, CATALOG_API_ML, i);
		bool tpu = (catalog_region_find(cat, name)->accelerators & set_of(tpu3, 1)) != 0;
		assert_int_equal(tpu, !strcmp(name, "us-central1") || !strcmp(name, "europe-west4"));
	}
	/* europe-west3: no ml v1 GPU (Vertex's L4 and H100 are there). */
	catalog_accset ml_accs = 0;
	for (size_t a = 0; a < catalog_accelerator_count(cat); a++)
		if (catalog_accelerator(cat, a)->apis & CATALOG_API_ML)
			ml_accs |= 1u << a;
	assert_int_equal(catalog_region_find(cat, "europe-west3")->accelerators & ml_accs, 0);
	assert_true(catalog_region_find(cat, "europe-west3")->accelerators != 0);
}

static void test_runtimes_tiers_tpu(void **state)
{
	const struct catalog_runtime *rt;
	const struct catalog_tier *t;
	const char *v;

	(void)state;
	rt = catalog_runtime_find(cat, "1.15");
	assert_non_null(rt);
	assert_true(rt->tpu);
	assert_int_equal(rt->n_python, 2);
	assert_string_equal(rt->python[0], "2.7");
	assert_string_equal(rt->python[1], "3.7");
	rt = catalog_runtime_find(cat, "1.10");	/* not "1.1" */
	assert_non_null(rt);
	assert_false(rt->tpu);
	assert_null(catalog_runtime_find(cat, "1.1"));
	assert_string_equal(catalog_default_runtime_version(cat), "1.15");
	assert_string_equal(catalog_runtime(cat, 0)->version, "1.4");
	assert_null(catalog_runtime(cat, catalog_runtime_count(cat)));

	t = catalog_tier_find(cat, "BASIC_TPU");
	assert_string_equal(t->master.machine_type, "standard");
	assert_string_equal(t->worker.machine_type, "cloud_tpu");
	assert_int_equal(t->worker.count, 1);
	assert_null(t->parameter_server.machine_type);
	t = catalog_tier_find(cat, "STANDARD_1");
	assert_int_equal(t->worker.count, 4);
	assert_int_equal(t->parameter_server.count, 3);
	t = catalog_tier_find(cat, "BASIC_GPU");
	assert_string_equal(t->master.machine_type, "standard_gpu");
	assert_null(catalog_tier_find(cat, "CUSTOM"));

	assert_string_equal(catalog_tpu_image_version(cat,
			    "gcr.io/cloud-ml-public/training/pytorch-xla.1-7"), "pytorch-1.7");
	assert_string_equal(catalog_tpu_image_version(cat,
			    "gcr.io/cloud-ml-public/training/pytorch-xla.1-6"), "pytorch-1.6");
	assert_null(catalog_tpu_image_version(cat, "gcr.io/p/x:1"));
	assert_int_equal(catalog_tpu_image_count(cat), 2);
	assert_non_null(catalog_tpu_image(cat, 1, &v));
	assert_string_equal(v, "pytorch-1.6");

	assert_int_equal(catalog_limit_count(cat), 1);
	assert_int_equal(catalog_limit(cat, 0)->count, 4);
	assert_int_equal(catalog_limit(cat, 0)->max_vcpus, 64);
	assert_int_equal(catalog_limit(cat, 0)->max_memory_mb, 208 * 1024);
	assert_int_equal(catalog_max_replica_count(cat), 1000);
}

/* ------------------------------------------------------------------------- */
/* Broken catalogs                                                            */

/* A small valid catalog; the broken cases change one line of it. */
static const char *const mini[] = {
	/*  1 */ "version: 1",
	/*  2 */ "accelerators:",
	/*  3 */ "  - {name: NVIDIA_TESLA_T4, kind: gpu}",
	/*  4 */ "  - {name: TPU_V2, kind: tpu}",
	/*  5 */ "machine_types:",
	/*  6 */ "  n1-standard-4: {vcpus: 4, memory_gb: 15}",
	/*  7 */ "legacy_machine_types:",
	/*  8 */ "  standard: {equivalent: n1-standard-4}",
	/*  9 */ "  cloud_tpu: {vcpus: 8, memory_gb: 30, tpu_host: true, accelerator: {type: TPU_V2, count: 8}}",
	/* 10 */ "accelerator_counts:",
	/* 11 */ "  n1-standard-4: {NVIDIA_TESLA_T4: [1, 2, 4]}",
	/* 12 */ "  cloud_tpu: {TPU_V2: [8]}",
	/* 13 */ "regions:",
	/* 14 */ "  r1:",
	/* 15 */ "    zones:",
	/* 16 */ "      r1-a: [NVIDIA_TESLA_T4, TPU_V2]",
	/* 17 */ "runtime_versions:",
	/* 18 */ "  \"2.4\": {python: [\"3.7\"], tpu: true}",
	/* 19 */ "default_runtime_version: \"2.4\"",
	/* 20 */ "scale_tiers:",
	/* 21 */ "  BASIC: {master: standard}",
};

/* Writes text to a temporary file and loads it; path receives the file name. */
static int load_text(const char *text, char *path, size_t pathlen, char *err, size_t errlen,
		     struct catalog **out)
{
	char tmpl[] = "/tmp/tp_catalog_XXXXXX";
	int fd = mkstemp(tmpl);
	FILE *f;
	int rc;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	snprintf(path, pathlen, "%s", tmpl);
	rc = catalog_load(tmpl, out, err, errlen);
	unlink(tmpl);
	return rc;
}

/* Loads mini with line `line` (1-based) replaced by text (which may hold
 * several lines); line 0 changes nothing. */
static int load_variant(int line, const char *text, char *path, size_t pathlen, char *err,
			size_t errlen, struct catalog **out)
{
	char buf[4096];
	size_t off = 0;

	for (size_t i = 0; i < ARRAY_SIZE(mini); i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s\n",
				(int)i + 1 == line ? text : mini[i]);
	return load_text(buf, path, pathlen, err, errlen, out);
}

static void test_mini_loads(void **state)
{
	struct catalog *c;
	char path[64], err[512];

	(void)state;
	if (load_variant(0, NULL, path, sizeof(path), err, sizeof(err), &c))
		fail_msg("%s", err);
	assert_int_equal(catalog_region_count(c, CATALOG_API_ML), 1);
	assert_int_equal(catalog_region_count(c, CATALOG_API_VERTEX), 1);
	catalog_free(c);
	catalog_free(NULL);

	/* A region of one API: the other's count, names and Location leave it out. */
	if (load_variant(16, "      r1-a: [NVIDIA_TESLA_T4, TPU_V2]\n  r0:\n    apis: [vertex]\n"
			 "    zones:\n      r0-a: [NVIDIA_TESLA_T4]", path, sizeof(path), err,
			 sizeof(err), &c))
		fail_msg("%s", err);
	assert_int_equal(catalog_region_count(c, CATALOG_API_ML), 1);
	assert_string_equal(catalog_region_name(c, CATALOG_API_ML, 0), "r1");
	assert_null(catalog_region_name(c, CATALOG_API_ML, 1));
	assert_int_equal(catalog_region_count(c, CATALOG_API_VERTEX), 2);
	assert_string_equal(catalog_region_name(c, CATALOG_API_VERTEX, 0), "r0");
	assert_string_equal(catalog_region_name(c, CATALOG_API_VERTEX, 1), "r1");
	assert_int_equal(catalog_region_find(c, "r0")->apis, CATALOG_API_VERTEX);
	assert_int_equal(catalog_region_find(c, "r1")->apis, CATALOG_API_ML | CATALOG_API_VERTEX);
	assert_true(catalog_has_region(c, "r0"));
	assert_null(catalog_location_json(c, "p", "r0"));
	catalog_free(c);
}

static const struct broken {
	int line;		/* line of mini replaced */
	const char *text;	/* its replacement */
	const char *where;	/* expected ":LINE:COL: " */
	const char *problem;	/* expected text after it */
} broken[] = {
	{ 16, "      r1-a: [NVIDIA_TESLA_T4, NVIDIA_TESLA_K80]", ":16:31: ",
	  "zone: unknown accelerator \"NVIDIA_TESLA_K80\" (not in accelerators)" },
	{ 11, "  n1-standard-9: {NVIDIA_TESLA_T4: [1, 2, 4]}", ":11:3: ",
	  "accelerator_counts: row for unknown machine type \"n1-standard-9\"" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: [2, 1, 4]}", ":11:40: ",
	  "malformed count list: counts must be strictly increasing" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: [1, 2, 2]}", ":11:43: ",
	  "malformed count list: counts must be strictly increasing" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: [0, 1]}", ":11:37: ",
	  "malformed count list: 0 is out of range [1, 63]" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: [1, two]}", ":11:40: ",
	  "malformed count list: \"two\" is not an integer" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: 4}", ":11:36: ",
	  "malformed count list: expected a list of counts like [1, 2, 4]" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: []}", ":11:36: ",
	  "malformed count list: empty (leave the accelerator out instead)" },
	{ 11, "  n1-standard-4: {NVIDIA_TESLA_T4: [1, 2, 4], NVIDIA_TESLA_T4: [8]}", ":11:47: ",
	  "accelerator_counts row: duplicate key \"NVIDIA_TESLA_T4\"" },
	{ 11, "  n1-standard-4: {TPU_V2: [8]}", ":11:19: ",
	  "accelerator_counts: only a tpu_host machine type can take TPUs, not \"n1-standard-4\"" },
	{ 11, "  standard: {NVIDIA_TESLA_T4: [1]}", ":11:3: ",
	  "accelerator_counts: legacy machine type \"standard\" takes no accelerator config "
	  "(its GPUs come with it)" },
	{ 12, "  cloud_tpu: {TPU_V2: [4]}", ":12:3: ",
	  "accelerator_counts: the row of \"cloud_tpu\" does not allow its own 8 x TPU_V2" },
	{ 6, "  n1-standard-4: {vcpus: 4, memory_gb: 15}\n  n1-standard-4: {vcpus: 4, memory_gb: 15}",
	  ":7:3: ", "machine_types: duplicate key \"n1-standard-4\"" },
	{ 8, "  n1-standard-4: {equivalent: n1-standard-4}", ":8:3: ",
	  "duplicate machine type \"n1-standard-4\"" },
	{ 4, "  - {name: NVIDIA_TESLA_T4, kind: gpu}", ":4:12: ",
	  "duplicate accelerator \"NVIDIA_TESLA_T4\"" },
	{ 4, "  - {name: TPU_V2, kind: asic}", ":4:26: ",
	  "accelerator kind must be gpu or tpu, not \"asic\"" },
	{ 8, "  standard: {equivalent: n1-standard-5}", ":8:26: ",
	  "equivalent: unknown Compute Engine machine type \"n1-standard-5\"" },
	{ 6, "  n1-standard-4: {vcpus: 4, memory_gb: lots}", ":6:40: ",
	  "memory_gb: \"lots\" is not a number" },
	{ 6, "  n1-standard-4: {vcpus: 4}", ":6:18: ",
	  "machine type \"n1-standard-4\" needs vcpus and memory_gb" },
	{ 6, "  n1-standard-4: {vcpus: 4, memory_gb: 15, gpus: 2}", ":6:44: ",
	  "machine type: unknown key \"gpus\"" },
	{ 21, "  BASIC: {master: standard_tpu}", ":21:19: ",
	  "scale tier: unknown machine type \"standard_tpu\"" },
	{ 21, "  CUSTOM: {master: standard}", ":21:3: ",
	  "scale_tiers: CUSTOM cannot be defined (the job gives its machines)" },
	{ 16, "      r1-a: [NVIDIA_TESLA_T4]\n  r2:\n    zones:\n      r1-a: [TPU_V2]", ":19:7: ",
	  "zone \"r1-a\" is listed twice" },
	{ 16, "      r1-a: [NVIDIA_TESLA_T4, NVIDIA_TESLA_T4]", ":16:31: ",
	  "zone \"r1-a\" lists \"NVIDIA_TESLA_T4\" twice" },
	{ 16, "      r1-a: []\n    x: 1", ":17:5: ", "region: unknown key \"x\"" },
	{ 16, "      r1-a: []\n    apis: [ml, cloud]", ":17:16: ", "region apis: expected ml or vertex" },
	{ 19, "default_runtime_version: \"2.5\"", ":19:26: ",
	  "default_runtime_version: \"2.5\" is not in runtime_versions" },
	{ 18, "  \"2.4\": {python: []}", ":18:19: ",
	  "python: at least one Python version is required" },
	{ 1, "version: 2", ":1:10: ", "version: 2 is out of range [1, 1]" },
	{ 1, "versoin: 1", ":1:1: ", "catalog: unknown key \"versoin\"" },
	{ 13, "zones:", ":13:1: ", "catalog: unknown key \"zones\"" },
	{ 3, "  - {name: NVIDIA_TESLA_T4, kind: gpu", ":4:5: ",
	  "did not find expected ',' or '}' while parsing a flow mapping" },
	{ 5, "machine_types: [", ":7:1: ",
	  "did not find expected ',' or ']' while parsing a flow sequence" },
};

static void test_broken_catalogs(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(broken); i++) {
		const struct broken *b = &broken[i];
		struct catalog *c = (struct catalog *)1;
		char path[64], err[512], want[512];

		if (!load_variant(b->line, b->text, path, sizeof(path), err, sizeof(err), &c))
			fail_msg("case %zu (%s) loaded", i, b->text);
		assert_null(c);
		snprintf(want, sizeof(want), "%s%s%s", path, b->where, b->problem);
		if (strcmp(err, want)) {
			print_message("case %zu:\n  want %s\n  got  %s\n", i, want, err);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_missing_and_empty_files(void **state)
{
	struct catalog *c;
	char err[512];
	char tmpl[] = "/tmp/tp_catalog_XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(catalog_load("/nonexistent/catalog.yaml", &c, err, sizeof(err)), -1);
	assert_null(c);
	assert_string_equal(err, "/nonexistent/catalog.yaml: cannot open: No such file or directory");

	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(catalog_load(tmpl, &c, err, sizeof(err)), -1);
	assert_true(!strncmp(err, tmpl, strlen(tmpl)));
	assert_string_equal(err + strlen(tmpl), ":1:1: the catalog is empty");
	unlink(tmpl);

	/* A required section missing: named at the top mapping. */
	{
		char path[64];
		assert_int_equal(load_text("version: 1\naccelerators: []\nmachine_types: {}\n"
					   "runtime_versions: {}\n", path, sizeof(path), err,
					   sizeof(err), &c), -1);
		assert_string_equal(err + strlen(path), ":1:1: catalog: \"regions\" is required");
		assert_int_equal(load_text("- 1\n", path, sizeof(path), err, sizeof(err), &c), -1);
		assert_string_equal(err + strlen(path), ":1:1: catalog must be a mapping");
	}
	/* A tiny error buffer is never overrun. */
	{
		char small[8];
		assert_int_equal(catalog_load("/nonexistent/catalog.yaml", &c, small, sizeof(small)), -1);
		assert_int_equal(strlen(small), 7);
	}
}

/*
 * The built-in catalog (build/gen/catalog_builtin.c, the server's default)
 * is deploy/catalog.yaml byte for byte and loads to the same regions;
 * catalog_load_text() reports problems under its name, with line and column.
 */
static void test_builtin_catalog(void **state)
{
	struct catalog *c = NULL;
	char err[512];
	FILE *f;
	char *file;
	long n;

	(void)state;
	f = fopen("deploy/catalog.yaml", "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	file = malloc((size_t)n);
	assert_non_null(file);
	assert_int_equal(fread(file, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	assert_int_equal(catalog_builtin_yaml_len, (size_t)n);
	assert_memory_equal(catalog_builtin_yaml, file, (size_t)n);
	assert_int_equal(catalog_builtin_yaml[n], '\0');
	free(file);

	assert_int_equal(catalog_load_text(CATALOG_BUILTIN_NAME, catalog_builtin_yaml,
					   catalog_builtin_yaml_len, &c, err, sizeof(err)), 0);
	assert_int_equal(catalog_region_count(c, CATALOG_API_VERTEX),
			 catalog_region_count(cat, CATALOG_API_VERTEX));
	for (size_t i = 0; i < catalog_region_count(c, CATALOG_API_VERTEX); i++)
		assert_string_equal(catalog_region_name(c, CATALOG_API_VERTEX, i),
				    catalog_region_name(cat, CATALOG_API_VERTEX, i));
	catalog_free(c);

	static const char bad_yaml[] = "version: 1\nregions: [\n";
	assert_int_equal(catalog_load_text("mem", bad_yaml, sizeof(bad_yaml) - 1, &c, err, sizeof(err)), -1);
	assert_null(c);
	assert_true(!strncmp(err, "mem:3:1: ", 9));
	static const char unknown[] = "version: 1\nno_such_section: {}\n";
	assert_int_equal(catalog_load_text("mem", unknown, sizeof(unknown) - 1, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no_such_section"));
	assert_true(!strncmp(err, "mem:", 4));
	assert_int_equal(catalog_load_text("mem", "", 0, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "mem:1:1: the catalog is empty");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_regions),
		cmocka_unit_test(test_location_json),
		cmocka_unit_test(test_machine_sizes),
		cmocka_unit_test(test_machine_types),
		cmocka_unit_test(test_zones),
		cmocka_unit_test(test_runtimes_tiers_tpu),
		cmocka_unit_test(test_mini_loads),
		cmocka_unit_test(test_broken_catalogs),
		cmocka_unit_test(test_missing_and_empty_files),
		cmocka_unit_test(test_builtin_catalog),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
