/*
 * test_job_plan.c - the typed training spec (spec/training_spec.c) and the
 * job plan made from it (spec/job_plan.c), against the default catalog
 * (deploy/catalog.yaml; run from the repository root): roles and indices
 * of both APIs, what each replica takes from a node and what it runs, a
 * tuning trial's args, the totals a quota would count.
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
#include "job_plan.h"
#include "training_spec.h"

static struct catalog *cat;

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (!j)
		fail_msg("bad test JSON: %s\n%s", jerr.text, text);
	return j;
}

static void assert_json(const json_t *got, const char *want)
{
	json_t *w = parse(want);

	if (!json_equal(got, w)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("got  %s\nwant %s", g, want);
	}
	json_decref(w);
}

/* Plans a stored spec given as text; the plan must succeed. */
static void plan(const char *stored, const char *labels, const struct plan_trial *trial,
		 struct job_plan *out)
{
	json_t *j = parse(stored), *l = labels ? parse(labels) : NULL;
	struct training_spec spec;
	char err[256];

	spec_parse_stored(j, "us-central1", &spec);
	if (spec_plan_replicas(cat, &spec, l, trial, out, err, sizeof(err)))
		fail_msg("%s: %s", stored, err);
	spec_release(&spec);
	json_decref(l);
	json_decref(j);
}

static void plan_fails(const char *stored, const char *want_err)
{
	json_t *j = parse(stored);
	struct training_spec spec;
	struct job_plan p;
	char err[256] = "";

	spec_parse_stored(j, "us-central1", &spec);
	assert_int_equal(spec_plan_replicas(cat, &spec, NULL, NULL, &p, err, sizeof(err)), -1);
	if (!strstr(err, want_err))
		fail_msg("want %s, got %s", want_err, err);
	assert_int_equal(p.n, 0);
	spec_release(&spec);
	json_decref(j);
}

static void one_role_enum_with_its_names(void **state)
{
	(void)state;
	assert_string_equal(replica_role_name(ROLE_MASTER), "master");
	assert_string_equal(replica_role_name(ROLE_WORKER), "worker");
	assert_string_equal(replica_role_name(ROLE_PS), "ps");
	assert_string_equal(replica_role_name(ROLE_EVALUATOR), "evaluator");
	assert_int_equal(ROLE_COUNT, 4);
}

/* CUSTOM: roles in order, the master's image and command inherited, args + --job-dir. */
static void ml_custom_job(void **state)
{
	struct job_plan p;
	const struct catalog_machine *m8 = catalog_machine_find(cat, "n1-standard-8");
	const struct catalog_machine *m4 = catalog_machine_find(cat, "n1-standard-4");
	(void)state;

	plan("{\"scaleTier\":\"CUSTOM\",\"region\":\"us-central1\",\"masterType\":\"n1-standard-8\","
	     "\"masterConfig\":{\"imageUri\":\"gcr.io/p/t:1\",\"containerCommand\":[\"python\",\"t.py\"],"
	     "\"acceleratorConfig\":{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"2\"}},"
	     "\"workerType\":\"n1-standard-4\",\"workerCount\":\"2\","
	     "\"parameterServerType\":\"n1-standard-4\",\"parameterServerCount\":\"1\","
	     "\"parameterServerConfig\":{\"imageUri\":\"gcr.io/p/ps:1\"},"
	     "\"args\":[\"--epochs\",\"3\"],\"jobDir\":\"gs://b/out\"}", NULL, NULL, &p);
	assert_int_equal(p.n, 4);
	assert_int_equal(p.replicas[0].role, ROLE_MASTER);
	assert_int_equal(p.replicas[1].role, ROLE_WORKER);
	assert_int_equal(p.replicas[1].index, 0);
	assert_int_equal(p.replicas[2].role, ROLE_WORKER);
	assert_int_equal(p.replicas[2].index, 1);
	assert_int_equal(p.replicas[3].role, ROLE_PS);
	assert_string_equal(p.replicas[0].machine_type, "n1-standard-8");
	assert_int_equal(p.replicas[0].demand.vcpus, m8->vcpus);
	assert_int_equal(p.replicas[0].demand.memory_mb, m8->memory_mb);
	assert_string_equal(p.replicas[0].demand.accel_type, "NVIDIA_TESLA_T4");
	assert_int_equal(p.replicas[0].demand.accel_count, 2);
	assert_false(p.replicas[0].demand.tpu);
	assert_int_equal(p.replicas[1].demand.vcpus, m4->vcpus);
	assert_null(p.replicas[1].demand.accel_type);
	assert_json(p.replicas[0].run, "{\"image\":\"gcr.io/p/t:1\",\"command\":[\"python\",\"t.py\"],"
		    "\"args\":[\"--epochs\",\"3\",\"--job-dir\",\"gs://b/out\"]}");
	/* a worker without an image of its own runs the master's, command included */
	assert_json(p.replicas[2].run, "{\"image\":\"gcr.io/p/t:1\",\"command\":[\"python\",\"t.py\"],"
		    "\"args\":[\"--epochs\",\"3\",\"--job-dir\",\"gs://b/out\"]}");
	/* its own image: the image's entrypoint, not the master's command */
	assert_json(p.replicas[3].run, "{\"image\":\"gcr.io/p/ps:1\",\"command\":[],"
		    "\"args\":[\"--epochs\",\"3\",\"--job-dir\",\"gs://b/out\"]}");
	job_plan_release(&p);
}

/* A scale tier expands through the catalog; packages run as python3 -m. */
static void ml_scale_tier_and_python_module(void **state)
{
	struct job_plan p;
	const struct catalog_tier *tier = catalog_tier_find(cat, "STANDARD_1");
	(void)state;

	plan("{\"scaleTier\":\"STANDARD_1\",\"region\":\"us-central1\",\"pythonModule\":\"trainer.task\","
	     "\"packageUris\":[\"gs://b/t.tar.gz\"]}", "{\"trainplane-simulate\":\"succeed\"}", NULL, &p);
	assert_int_equal(p.n, (size_t)(tier->master.count + tier->worker.count +
				       tier->parameter_server.count));
	assert_string_equal(p.replicas[0].machine_type,
			    catalog_machine_find(cat, tier->master.machine_type)->name);
	assert_json(p.replicas[0].run, "{\"image\":\"\",\"command\":[\"python3\",\"-m\",\"trainer.task\"],"
		    "\"args\":[],\"simulate\":\"succeed\",\"packages\":[\"gs://b/t.tar.gz\"],"
		    "\"pythonModule\":\"trainer.task\",\"pythonRuntime\":{\"runtimeVersion\":\"1.15\"}}");
	job_plan_release(&p);
	/* The runtime and Python versions as given; --job-dir after the args. */
	plan("{\"region\":\"us-central1\",\"pythonModule\":\"trainer.task\",\"runtimeVersion\":\"2.11\","
	     "\"pythonVersion\":\"3.7\",\"packageUris\":[\"gs://b/a.tar.gz\",\"gs://b/b.whl\"],"
	     "\"args\":[\"--epochs\",\"2\"],\"jobDir\":\"gs://b/out\"}", NULL, NULL, &p);
	assert_json(p.replicas[0].run, "{\"image\":\"\",\"command\":[\"python3\",\"-m\",\"trainer.task\"],"
		    "\"args\":[\"--epochs\",\"2\",\"--job-dir\",\"gs://b/out\"],"
		    "\"packages\":[\"gs://b/a.tar.gz\",\"gs://b/b.whl\"],\"pythonModule\":\"trainer.task\","
		    "\"pythonRuntime\":{\"runtimeVersion\":\"2.11\",\"pythonVersion\":\"3.7\"}}");
	job_plan_release(&p);
	/* BASIC is proto3's default: no scaleTier at all */
	plan("{\"region\":\"us-central1\",\"masterConfig\":{\"imageUri\":\"i:1\"}}", NULL, NULL, &p);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.replicas[0].role, ROLE_MASTER);
	job_plan_release(&p);
}

/* A machine type with its GPUs built in asks for them. */
static void built_in_accelerators(void **state)
{
	struct job_plan p;
	(void)state;

	plan("{\"scaleTier\":\"CUSTOM\",\"masterType\":\"a2-highgpu-4g\",\"masterConfig\":{\"imageUri\":\"i:1\"}}",
	     NULL, NULL, &p);
	assert_string_equal(p.replicas[0].demand.accel_type, "NVIDIA_TESLA_A100");
	assert_int_equal(p.replicas[0].demand.accel_count, 4);
	job_plan_release(&p);
}

/* Today's Vertex machine types: A3 Ultra asks for its 8 H200s; a TPU VM type
 * (its chips built in, no acceleratorType) for a whole TPU host. */
static void todays_machine_types(void **state)
{
	struct job_plan p;
	(void)state;

	plan("{\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"a3-ultragpu-8g\"},"
	     "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i:1\"}},"
	     "{\"machineSpec\":{\"machineType\":\"ct6e-standard-4t\"},\"replicaCount\":\"1\","
	     "\"containerSpec\":{\"imageUri\":\"i:1\"}}]}}", NULL, NULL, &p);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.replicas[0].demand.accel_type, "NVIDIA_H200_141GB");
	assert_int_equal(p.replicas[0].demand.accel_count, 8);
	assert_int_equal(p.replicas[0].demand.vcpus, 224);
	assert_false(p.replicas[0].demand.tpu);
	assert_true(p.replicas[1].demand.tpu);
	assert_int_equal(p.replicas[1].demand.vcpus, 180);
	job_plan_release(&p);
}

/* Vertex: pool i is role i; empty pools are skipped; containers and Python packages. */
static void vertex_pools(void **state)
{
	struct job_plan p;
	(void)state;

	plan("{\"displayName\":\"d\",\"jobSpec\":{\"workerPoolSpecs\":["
	     "{\"machineSpec\":{\"machineType\":\"n1-standard-8\",\"acceleratorType\":\"NVIDIA_TESLA_T4\","
	     "\"acceleratorCount\":1},\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\","
	     "\"command\":[\"python\"],\"args\":[\"t.py\"]}},"
	     "{},"
	     "{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},\"replicaCount\":\"2\","
	     "\"pythonPackageSpec\":{\"executorImageUri\":\"e:1\",\"packageUris\":[\"gs://b/t.tar.gz\"],"
	     "\"pythonModule\":\"t.task\",\"args\":[\"--x\"]}}]}}", NULL, NULL, &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.replicas[0].role, ROLE_MASTER);
	assert_string_equal(p.replicas[0].demand.accel_type, "NVIDIA_TESLA_T4");
	assert_int_equal(p.replicas[0].demand.accel_count, 1);
	assert_json(p.replicas[0].run, "{\"image\":\"gcr.io/p/t:1\",\"command\":[\"python\"],"
		    "\"args\":[\"t.py\"]}");
	assert_int_equal(p.replicas[1].role, ROLE_PS);
	assert_int_equal(p.replicas[2].role, ROLE_PS);
	assert_int_equal(p.replicas[2].index, 1);
	assert_json(p.replicas[1].run, "{\"image\":\"e:1\",\"command\":[\"python3\",\"-m\",\"t.task\"],"
		    "\"args\":[\"--x\"],\"packages\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\","
		    "\"pythonRuntime\":{\"executorImageUri\":\"e:1\"}}");
	job_plan_release(&p);
}

/* A tuning trial is the whole gang with the trial's values after each replica's args. */
static void trial_args_on_every_replica(void **state)
{
	static const char *const args[] = { "--lr=0.01", "--layers=3" };
	const struct plan_trial trial = { args, 2 };
	struct job_plan p;
	(void)state;

	plan("{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-4\",\"workerType\":\"n1-standard-4\","
	     "\"workerCount\":\"1\",\"masterConfig\":{\"imageUri\":\"i:1\"},\"args\":[\"--a\"],"
	     "\"jobDir\":\"gs://b\"}", NULL, &trial, &p);
	assert_int_equal(p.n, 2);
	for (size_t i = 0; i < p.n; i++)
		assert_json(json_object_get(p.replicas[i].run, "args"),
			    "[\"--a\",\"--job-dir\",\"gs://b\",\"--lr=0.01\",\"--layers=3\"]");
	job_plan_release(&p);
	plan("{\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
	     "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i:1\"}}]}}", NULL, &trial, &p);
	assert_json(json_object_get(p.replicas[0].run, "args"), "[\"--lr=0.01\",\"--layers=3\"]");
	job_plan_release(&p);
}

/* What a quota counts: vCPUs, memory and accelerators by type, over the gang. */
static void totals_by_accelerator_type(void **state)
{
	struct job_plan p;
	struct plan_totals t;
	const struct catalog_machine *m8 = catalog_machine_find(cat, "n1-standard-8");
	(void)state;

	plan("{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n1-standard-8\",\"workerType\":\"n1-standard-8\","
	     "\"workerCount\":\"2\",\"masterConfig\":{\"imageUri\":\"i:1\",\"acceleratorConfig\":"
	     "{\"type\":\"NVIDIA_TESLA_T4\",\"count\":\"2\"}},\"workerConfig\":{\"acceleratorConfig\":"
	     "{\"type\":\"NVIDIA_TESLA_V100\",\"count\":\"4\"}}}", NULL, NULL, &p);
	job_plan_totals(&p, &t);
	assert_int_equal(t.replicas, 3);
	assert_int_equal(t.vcpus, 3 * m8->vcpus);
	assert_int_equal(t.memory_mb, 3 * m8->memory_mb);
	assert_int_equal(t.naccel, 2);
	assert_string_equal(t.accel[0].type, "NVIDIA_TESLA_T4");
	assert_int_equal(t.accel[0].count, 2);
	assert_string_equal(t.accel[1].type, "NVIDIA_TESLA_V100");
	assert_int_equal(t.accel[1].count, 8);
	assert_int_equal(t.tpu_hosts, 0);
	job_plan_release(&p);
}

static void plans_that_cannot_be(void **state)
{
	(void)state;
	plan_fails("{\"scaleTier\":\"CUSTOM\",\"masterType\":\"n9-nope\"}",
		   "unknown machine type 'n9-nope' for master");
	plan_fails("{\"scaleTier\":\"HUGE\"}", "the catalog does not define scale tier HUGE");
	plan_fails("{\"jobSpec\":{\"workerPoolSpecs\":[{},{},{},{},{}]}}",
		   "the job has 5 worker pools; at most 4 are supported");
	plan_fails("{\"jobSpec\":{\"workerPoolSpecs\":[{},{\"machineSpec\":{\"machineType\":"
		   "\"n1-standard-4\"},\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i\"}}]}}",
		   "no primary replica");
	plan_fails("{\"jobSpec\":{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n9\"},"
		   "\"replicaCount\":\"1\"}]}}", "unknown machine type 'n9' for workerpool0");
}

/* The typed spec: parsed once, as written; the wrong type reads as unset and is reported. */
static void typed_spec_as_written(void **state)
{
	struct violations vs = VIOLATIONS_INIT;
	struct training_spec s;
	(void)state;
	json_t *ti = parse("{\"scaleTier\":\"CUSTOM\",\"workerType\":\"n1-standard-4\",\"workerCount\":\"x\","
			   "\"workerConfig\":{\"acceleratorConfig\":{\"type\":\"ACCELERATOR_TYPE_UNSPECIFIED\"},"
			   "\"diskConfig\":{\"bootDiskSizeGb\":100}},\"region\":\"\",\"scheduling\":"
			   "{\"strategy\":\"LOW_COST\",\"maxWaitTime\":\"3600s\"},\"hyperparameters\":"
			   "{\"params\":[{\"parameterName\":\"lr\",\"scaleType\":\"NONE\",\"minValue\":\"0.5\"}]}}");

	assert_int_equal(spec_ml_parse(ti, &s, &vs), 1);
	assert_string_equal(vs.v[0].field, "training_input.worker_count");
	assert_int_equal(s.api, SPEC_API_ML);
	assert_int_equal(s.npools, ROLE_COUNT);
	assert_string_equal(s.pools[ROLE_WORKER].machine_type, "n1-standard-4");
	assert_true(s.pools[ROLE_WORKER].replica_count_bad);
	assert_null(s.pools[ROLE_WORKER].accelerator_type);	/* *_UNSPECIFIED */
	assert_true(s.pools[ROLE_WORKER].has_accelerator_config);
	assert_int_equal(s.pools[ROLE_WORKER].disk_size_gb, 100);
	assert_null(s.region);	/* "" is proto3's unset */
	assert_string_equal(s.scheduling.strategy, "LOW_COST");
	assert_string_equal(s.scheduling.max_wait_time, "3600s");
	assert_int_equal(s.hyperparameters.nparams, 1);
	assert_null(s.hyperparameters.params[0].scale_type);	/* NONE */
	assert_true(s.hyperparameters.params[0].has_min);
	assert_true(s.hyperparameters.params[0].min_value == 0.5);
	spec_release(&s);
	json_decref(ti);
	violations_release(&vs);
	/* Vertex: the location is the region; SPOT is a strategy like any other */
	json_t *js = parse("{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"n1-standard-4\"},"
			   "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"i\",\"env\":[{\"name\":\"A\","
			   "\"value\":\"1\"},7]}}],\"scheduling\":{\"strategy\":\"SPOT\",\"timeout\":\"60s\"}}");
	assert_int_equal(spec_vertex_parse(js, "europe-west4", &s, &vs), 1);
	assert_string_equal(vs.v[0].field, "job_spec.worker_pool_specs[0].container_spec.env[1]");
	assert_string_equal(s.region, "europe-west4");
	assert_int_equal(s.pools[0].env.n, 1);
	assert_string_equal(s.pools[0].env.vars[0].name, "A");
	assert_string_equal(s.scheduling.strategy, "SPOT");
	assert_string_equal(s.scheduling.max_running_time, "60s");
	spec_release(&s);
	json_decref(js);
	violations_release(&vs);
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
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_role_enum_with_its_names),
		cmocka_unit_test(ml_custom_job),
		cmocka_unit_test(ml_scale_tier_and_python_module),
		cmocka_unit_test(built_in_accelerators),
		cmocka_unit_test(todays_machine_types),
		cmocka_unit_test(vertex_pools),
		cmocka_unit_test(trial_args_on_every_replica),
		cmocka_unit_test(totals_by_accelerator_type),
		cmocka_unit_test(plans_that_cannot_be),
		cmocka_unit_test(typed_spec_as_written),
	};
	return cmocka_run_group_tests_name("job_plan", tests, setup, teardown);
}
