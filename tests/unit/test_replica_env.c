/* Unit tests: TF_CONFIG, CLUSTER_SPEC and PyTorch variables against the reference's examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "replica_env.h"

/* Reference §4.1: 1 master, 2 workers, 1 ps (plus an evaluator here). */
static const struct replica_addr cluster4[] = {
	{ ROLE_MASTER, 0, "10.0.0.1", 2222 },
	{ ROLE_WORKER, 1, "10.0.0.3", 2223 },
	{ ROLE_WORKER, 0, "10.0.0.2", 2222 },
	{ ROLE_PS, 0, "10.0.0.4", 2222 },
	{ ROLE_EVALUATOR, 0, "10.0.0.5", 2222 },
};

static void assert_json_eq(json_t *got, const char *want)
{
	json_t *w = json_loads(want, 0, NULL);
	assert_non_null(w);
	if (!json_equal(got, w)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("got  %s\nwant %s", g, want);
	}
	json_decref(w);
	json_decref(got);
}

static void tf_config_matches_the_reference_shape(void **state)
{
	json_t *ti = json_pack("{s:s, s:b, s:{s:s}}", "region", "us-central1",
			       "useChiefInTfConfig", 1, "masterConfig", "imageUri", "img");
	struct ml_cluster c = { cluster4, 5, ti, "job_1" };
	(void)state;

	/* The first worker of trial 1: evaluators never in the cluster. */
	assert_json_eq(replica_env_tf_config(&c, 2, "1"),
		"{\"cluster\":{\"chief\":[\"10.0.0.1:2222\"],\"ps\":[\"10.0.0.4:2222\"],"
		"\"worker\":[\"10.0.0.2:2222\",\"10.0.0.3:2223\"]},\"environment\":\"cloud\","
		"\"job\":{\"region\":\"us-central1\",\"useChiefInTfConfig\":true,"
		"\"masterConfig\":{\"imageUri\":\"img\"}},"
		"\"task\":{\"cloud\":\"job_1\",\"index\":0,\"trial\":\"1\",\"type\":\"worker\"}}");
	/* The master calls itself chief too. */
	json_t *m = replica_env_tf_config(&c, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(m, "task"), "type")),
			    "chief");
	json_decref(m);
	json_decref(ti);
}

static void cluster_spec_has_evaluators_and_says_master(void **state)
{
	json_t *ti = json_pack("{s:b, s:{s:s}}", "useChiefInTfConfig", 1, "masterConfig",
			       "imageUri", "img");
	struct ml_cluster c = { cluster4, 5, ti, NULL };
	(void)state;
	assert_json_eq(replica_env_cluster_spec(&c, 4),
		"{\"cluster\":{\"master\":[\"10.0.0.1:2222\"],\"ps\":[\"10.0.0.4:2222\"],"
		"\"worker\":[\"10.0.0.2:2222\",\"10.0.0.3:2223\"],\"evaluator\":[\"10.0.0.5:2222\"]},"
		"\"environment\":\"cloud\",\"job\":{\"useChiefInTfConfig\":true,"
		"\"masterConfig\":{\"imageUri\":\"img\"}},\"task\":{\"index\":0,\"type\":\"evaluator\"}}");
	json_decref(ti);
}

static void chief_or_master_per_reference_rule(void **state)
{
	static const struct { const char *ti; bool chief; } cases[] = {
		{ "{\"masterConfig\":{\"imageUri\":\"x\"}}", false },
		{ "{\"masterConfig\":{\"imageUri\":\"x\"},\"useChiefInTfConfig\":true}", true },
		{ "{\"runtimeVersion\":\"1.15\"}", false },
		{ "{\"runtimeVersion\":\"2.0\"}", false },
		{ "{\"runtimeVersion\":\"2.1\"}", true },
		{ "{\"runtimeVersion\":\"2.11\"}", true },
		{ "{}", true },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *ti = json_loads(cases[i].ti, 0, NULL);
		if (replica_env_use_chief(ti) != cases[i].chief)
			fail_msg("%s: want %s", cases[i].ti, cases[i].chief ? "chief" : "master");
		json_decref(ti);
	}
}

static const char *find(char **env, const char *key)
{
	size_t n = strlen(key);
	for (; *env; env++)
		if (!strncmp(*env, key, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static void pytorch_and_gpu_variables(void **state)
{
	json_t *ti = json_object();
	struct ml_cluster c = { cluster4, 5, ti, NULL };
	char **env = NULL;
	size_t n = 0;
	(void)state;

	replica_env_ml(&c, 1, NULL, "2,3", &env, &n);	/* worker 1 */
	assert_string_equal(find(env, "MASTER_ADDR"), "10.0.0.1");
	assert_string_equal(find(env, "MASTER_PORT"), "2222");
	assert_string_equal(find(env, "WORLD_SIZE"), "3");
	assert_string_equal(find(env, "RANK"), "2");
	assert_string_equal(find(env, "CUDA_VISIBLE_DEVICES"), "2,3");
	assert_string_equal(find(env, "NVIDIA_VISIBLE_DEVICES"), "2,3");
	assert_string_equal(find(env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_non_null(find(env, "TF_CONFIG"));
	assert_non_null(find(env, "CLUSTER_SPEC"));
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);

	env = NULL;
	n = 0;
	replica_env_ml(&c, 3, NULL, NULL, &env, &n);	/* ps: no rank, no GPU */
	assert_null(find(env, "RANK"));
	assert_string_equal(find(env, "CUDA_VISIBLE_DEVICES"), "");
	assert_string_equal(find(env, "NVIDIA_VISIBLE_DEVICES"), "void");
	assert_null(find(env, "CUDA_DEVICE_ORDER"));	/* no GPU: nothing to order */
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);
	json_decref(ti);
}

/* Vertex (reference §4.4): pools 0..3 as roles 0..3, named workerpool<i>. */
static json_t *vertex_job(const char *base)
{
	json_t *job = json_pack("{s:s, s:{s:[{s:s}, {s:{s:s, s:[{s:s, s:s}]}}, {}, {}]}}",
				"displayName", "d", "jobSpec", "workerPoolSpecs", "replicaCount",
				"1", "containerSpec", "imageUri", "img", "env", "name", "FOO",
				"value", "bar");
	if (base)
		json_object_set_new(json_object_get(job, "jobSpec"), "baseOutputDirectory",
				    json_pack("{s:s}", "outputUriPrefix", base));
	return job;
}

static void vertex_cluster_spec_names_worker_pools(void **state)
{
	json_t *job = vertex_job(NULL);
	struct ml_cluster c = { cluster4, 5, job, "123" };
	(void)state;

	assert_true(replica_env_is_vertex(job));
	assert_json_eq(replica_env_vertex_cluster_spec(&c, 1),
		"{\"cluster\":{\"workerpool0\":[\"10.0.0.1:2222\"],"
		"\"workerpool1\":[\"10.0.0.2:2222\",\"10.0.0.3:2223\"],"
		"\"workerpool2\":[\"10.0.0.4:2222\"],\"workerpool3\":[\"10.0.0.5:2222\"]},"
		"\"environment\":\"cloud\",\"task\":{\"type\":\"workerpool1\",\"index\":1},"
		"\"job\":{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"},{\"containerSpec\":"
		"{\"imageUri\":\"img\",\"env\":[{\"name\":\"FOO\",\"value\":\"bar\"}]}},{},{}]}}");
	/* TF_CONFIG: chief, worker, ps; evaluators out of the cluster. */
	assert_json_eq(replica_env_vertex_tf_config(&c, 4),
		"{\"cluster\":{\"chief\":[\"10.0.0.1:2222\"],"
		"\"worker\":[\"10.0.0.2:2222\",\"10.0.0.3:2223\"],\"ps\":[\"10.0.0.4:2222\"]},"
		"\"environment\":\"cloud\",\"task\":{\"type\":\"evaluator\",\"index\":0},"
		"\"job\":{\"workerPoolSpecs\":[{\"replicaCount\":\"1\"},{\"containerSpec\":"
		"{\"imageUri\":\"img\",\"env\":[{\"name\":\"FOO\",\"value\":\"bar\"}]}},{},{}]}}");
	json_decref(job);
	json_t *ml = json_pack("{s:s}", "region", "us-central1");
	assert_false(replica_env_is_vertex(ml));
	json_decref(ml);
}

static void vertex_env_has_aip_dirs_and_the_pool_env(void **state)
{
	json_t *job = vertex_job("gs://b/out");
	struct ml_cluster c = { cluster4, 5, job, "123" };
	char **env = NULL;
	size_t n = 0;
	(void)state;

	replica_env_vertex(&c, 2, "0", &env, &n);
	assert_string_equal(find(env, "AIP_MODEL_DIR"), "gs://b/out/model/");
	assert_string_equal(find(env, "AIP_CHECKPOINT_DIR"), "gs://b/out/checkpoints/");
	assert_string_equal(find(env, "AIP_TENSORBOARD_LOG_DIR"), "gs://b/out/logs/");
	assert_string_equal(find(env, "CLOUD_ML_JOB_ID"), "123");
	assert_string_equal(find(env, "FOO"), "bar");	/* pool 1's env */
	assert_string_equal(find(env, "RANK"), "1");
	assert_string_equal(find(env, "CUDA_VISIBLE_DEVICES"), "0");
	assert_string_equal(find(env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_non_null(find(env, "CLUSTER_SPEC"));
	assert_non_null(find(env, "TF_CONFIG"));
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);
	env = NULL;
	n = 0;
	/* The primary: no pool env (pool 0 has none); a prefix ending in '/' kept. */
	json_decref(job);
	job = vertex_job("gs://b/out/");
	c.training_input = job;
	replica_env_vertex(&c, 0, NULL, &env, &n);
	assert_string_equal(find(env, "AIP_MODEL_DIR"), "gs://b/out/model/");
	assert_null(find(env, "FOO"));
	assert_string_equal(find(env, "RANK"), "0");
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);
	json_decref(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tf_config_matches_the_reference_shape),
		cmocka_unit_test(cluster_spec_has_evaluators_and_says_master),
		cmocka_unit_test(chief_or_master_per_reference_rule),
		cmocka_unit_test(pytorch_and_gpu_variables),
		cmocka_unit_test(vertex_cluster_spec_names_worker_pools),
		cmocka_unit_test(vertex_env_has_aip_dirs_and_the_pool_env),
	};
	return cmocka_run_group_tests_name("replica_env", tests, NULL, NULL);
}
