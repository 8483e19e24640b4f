/* Unit tests: the Slurm backend's pure parts against real slurmrestd
 * replies (Slurm 22.05.8, openapi/v0.0.38; tests/unit/fixtures/slurm/,
 * how each was made in its README.md): the v0.0.38 module
 * (scheduler/slurm_v0038.c: release check, errors, submit replies, jobs,
 * nodes, the submit body), the translation of a planned job into one
 * Slurm job and the reconciler's decision table (scheduler/slurm_backend.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slurm_backend.h"

static const struct slurm_api *api = &slurm_api_v0038;

/* A recorded reply; tests run from the repository root (make test). */
static json_t *fixture(const char *name)
{
	char path[256];
	json_error_t je;
	snprintf(path, sizeof(path), "tests/unit/fixtures/slurm/%s", name);
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		fail_msg("%s: %s (run from the repository root)", path, je.text);
	return doc;
}

/* --- the release ------------------------------------------------------------- */

static void check_release_takes_22_05_and_refuses_24_05(void **state)
{
	char release[32], err[256];
	(void)state;
	json_t *ping = fixture("ping.json");
	assert_int_equal(api->check_release(ping, release, sizeof(release), err, sizeof(err)), 0);
	assert_string_equal(release, "22.05.8");
	/* the same reply from a Slurm that no longer carries v0.0.38 */
	json_t *v = json_object_get(json_object_get(json_object_get(ping, "meta"), "Slurm"),
				    "version");
	json_object_set_new(v, "major", json_integer(24));
	json_object_set_new(v, "minor", json_integer(5));
	json_object_set_new(v, "micro", json_integer(1));
	json_object_set_new(json_object_get(json_object_get(ping, "meta"), "Slurm"), "release",
			    json_string("24.05.1"));
	assert_int_equal(api->check_release(ping, release, sizeof(release), err, sizeof(err)), -1);
	assert_string_equal(release, "24.05.1");
	assert_string_equal(err, "Slurm 24.05 is not supported by the openapi/v0.0.38 module "
			    "(Slurm 22.05, 23.02 and 23.11 are)");
	/* no meta at all */
	json_object_del(ping, "meta");
	assert_int_equal(api->check_release(ping, release, sizeof(release), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "meta.Slurm.version"));
	json_decref(ping);
	assert_ptr_equal(slurm_api_find("v0.0.38"), api);
	assert_ptr_equal(slurm_api_find(NULL), api);
	assert_null(slurm_api_find("v0.0.40"));
}

/* --- errors and submit replies --------------------------------------------------- */

static enum slurm_err submit_of(const char *name, int http, int64_t *job_id, char *err,
				size_t errlen)
{
	json_t *reply = fixture(name);
	enum slurm_err e = api->submit_result(http, reply, job_id, err, errlen);
	json_decref(reply);
	return e;
}

static void submit_replies_sort_into_ok_rejected_and_unavailable(void **state)
{
	char err[256];
	int64_t id = -1;
	(void)state;
	assert_int_equal(submit_of("submit_ok.json", 200, &id, err, sizeof(err)), SLURM_OK);
	assert_int_equal(id, 2);
	assert_int_equal(submit_of("submit_hetjob.json", 200, &id, err, sizeof(err)), SLURM_OK);
	assert_int_equal(id, 3);	/* the leader */
	/* more GPUs per task than a node has: 500, no job id */
	assert_int_equal(submit_of("submit_2014_gpus.json", 500, &id, err, sizeof(err)),
			 SLURM_ERR_REJECTED);
	assert_int_equal(id, 0);
	assert_string_equal(err, "Requested node configuration is not available (Slurm error 2014)");
	/* more nodes than the partition has: a 200 with errors[] and a job that pends for ever */
	assert_int_equal(submit_of("submit_2015_nodes.json", 200, &id, err, sizeof(err)),
			 SLURM_ERR_REJECTED);
	assert_int_equal(id, 9);
	assert_string_equal(err, "Requested partition configuration not available now (Slurm "
			    "error 2015)");
	assert_int_equal(submit_of("submit_2000_partition.json", 500, &id, err, sizeof(err)),
			 SLURM_ERR_REJECTED);
	assert_string_equal(err, "Invalid partition name specified (Slurm error 2000)");
	/* a bad token answers 500 with -1 from slurm_load_ctl_conf */
	assert_int_equal(submit_of("ping_bad_token.json", 500, &id, err, sizeof(err)),
			 SLURM_ERR_UNAVAILABLE);
	/* 200 without a job id */
	json_t *odd = json_pack("{s:[]}", "errors");
	assert_int_equal(api->submit_result(200, odd, &id, err, sizeof(err)), SLURM_ERR_PROTOCOL);
	json_decref(odd);
}

static enum slurm_err error_of(const char *name, int http, char *err, size_t errlen)
{
	json_t *reply = fixture(name);
	enum slurm_err e = api->error(http, reply, err, errlen);
	json_decref(reply);
	return e;
}

static void errors_name_what_slurm_said(void **state)
{
	char err[256];
	(void)state;
	assert_int_equal(error_of("ping.json", 200, err, sizeof(err)), SLURM_OK);
	assert_int_equal(error_of("delete_ok.json", 200, err, sizeof(err)), SLURM_OK);
	assert_int_equal(error_of("ping_bad_token.json", 500, err, sizeof(err)),
			 SLURM_ERR_UNAVAILABLE);
	assert_string_equal(err, "Unspecified error (Slurm error -1: slurmctld config is unable to "
			    "load)");
	assert_int_equal(error_of("job_999999.json", 500, err, sizeof(err)), SLURM_ERR_NOT_FOUND);
	assert_string_equal(err, "Invalid job id specified (Slurm error 2017: Unable to find "
			    "JobId=999999)");
	assert_int_equal(error_of("delete_999999.json", 500, err, sizeof(err)),
			 SLURM_ERR_NOT_FOUND);
	assert_int_equal(error_of("submit_2015_nodes.json", 200, err, sizeof(err)),
			 SLURM_ERR_REJECTED);
	assert_int_equal(error_of("submit_2014_gpus.json", 500, err, sizeof(err)),
			 SLURM_ERR_REJECTED);
	/* no auth headers: 401 with a text body; a 502 from a proxy: no JSON */
	assert_int_equal(api->error(401, NULL, err, sizeof(err)), SLURM_ERR_UNAVAILABLE);
	assert_int_equal(api->error(502, NULL, err, sizeof(err)), SLURM_ERR_UNAVAILABLE);
	assert_string_equal(err, "slurmrestd answered HTTP 502 without errors[]");
	assert_int_equal(api->error(404, NULL, err, sizeof(err)), SLURM_ERR_PROTOCOL);
}

/* --- GET /jobs --------------------------------------------------------------------- */

struct jobs {
	struct slurm_job_info *v;
	size_t n;
};

static struct jobs jobs_of(const char *name)
{
	char err[256];
	struct jobs j;
	json_t *reply = fixture(name);
	assert_int_equal(api->jobs(reply, &j.v, &j.n, err, sizeof(err)), SLURM_OK);
	json_decref(reply);
	return j;
}

static const struct slurm_job_info *job(const struct jobs *j, int64_t id)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->v[i].job_id == id)
			return &j->v[i];
	fail_msg("no Slurm job %lld in the fixture", (long long)id);
	return NULL;
}

static void state_names_parse(void **state)
{
	static const struct {
		const char *name;
		enum slurm_state state;
	} names[] = {
		{ "PENDING", SLURM_PENDING },	       { "RUNNING", SLURM_RUNNING },
		{ "SUSPENDED", SLURM_SUSPENDED },      { "STOPPED", SLURM_SUSPENDED },
		{ "COMPLETED", SLURM_COMPLETED },      { "CANCELLED", SLURM_CANCELLED },
		{ "FAILED", SLURM_FAILED },	       { "TIMEOUT", SLURM_TIMEOUT },
		{ "NODE_FAIL", SLURM_NODE_FAIL },      { "PREEMPTED", SLURM_PREEMPTED },
		{ "BOOT_FAIL", SLURM_BOOT_FAIL },      { "DEADLINE", SLURM_DEADLINE },
		{ "OUT_OF_MEMORY", SLURM_OUT_OF_MEMORY }, { "COMPLETING", SLURM_TRANSIENT },
		{ "CONFIGURING", SLURM_TRANSIENT },    { "REQUEUED", SLURM_TRANSIENT },
		{ "REQUEUE_FED", SLURM_TRANSIENT },    { "REQUEUE_HOLD", SLURM_TRANSIENT },
		{ "RESIZING", SLURM_TRANSIENT },       { "SIGNALING", SLURM_TRANSIENT },
		{ "STAGE_OUT", SLURM_TRANSIENT },      { "SPECIAL_EXIT", SLURM_TRANSIENT },
		{ "REVOKED", SLURM_TRANSIENT },	       { "RESV_DEL_HOLD", SLURM_TRANSIENT },
		{ "POWER_UP_NODE", SLURM_TRANSIENT },  { "UPDATE_DB", SLURM_TRANSIENT },
		{ "running", SLURM_UNKNOWN },	       { "", SLURM_UNKNOWN },
		{ NULL, SLURM_UNKNOWN },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		assert_int_equal(slurm_state_parse(names[i].name), names[i].state);
		bool final = names[i].state >= SLURM_COMPLETED;
		assert_int_equal(slurm_state_final(names[i].state), final);
	}
	/* every state the recordings hold is one of them */
	static const char *const all[] = { "jobs.json", "jobs_node_down.json",
					   "jobs_requeued.json", "jobs_timeout.json",
					   "jobs_completing.json", "jobs_launch_failed_held.json",
					   "job_hetjob.json" };
	for (size_t f = 0; f < ARRAY_SIZE(all); f++) {
		struct jobs j = jobs_of(all[f]);
		assert_true(j.n > 0);
		for (size_t i = 0; i < j.n; i++)
			if (j.v[i].state == SLURM_UNKNOWN)
				fail_msg("%s: job %lld: state %s", all[f], (long long)j.v[i].job_id,
					 j.v[i].state_name);
		free(j.v);
	}
}

static void jobs_carry_states_exit_codes_and_components(void **state)
{
	(void)state;
	struct jobs j = jobs_of("jobs.json");
	assert_int_equal(j.n, 10);
	const struct slurm_job_info *x = job(&j, 2);
	assert_int_equal(x->state, SLURM_RUNNING);
	assert_string_equal(x->state_name, "RUNNING");
	assert_string_equal(x->reason, "None");
	assert_string_equal(x->comment, "trainplane fixtures job 101");
	assert_string_equal(x->name, "tp-101");
	assert_string_equal(x->nodes, "n2");
	assert_int_equal(x->het_job_id, 0);
	assert_int_equal(x->restart_cnt, 0);
	/* a heterogeneous job: the leader and its component, one comment */
	x = job(&j, 3);
	assert_int_equal(x->het_job_id, 3);
	assert_int_equal(x->het_offset, 0);
	assert_string_equal(x->nodes, "n1");
	assert_string_equal(x->comment, "trainplane fixtures job 102");
	x = job(&j, 4);
	assert_int_equal(x->het_job_id, 3);
	assert_int_equal(x->het_offset, 1);
	assert_int_equal(x->state, SLURM_RUNNING);
	assert_string_equal(x->comment, "trainplane fixtures job 102");
	x = job(&j, 5);
	assert_int_equal(x->state, SLURM_COMPLETED);
	assert_int_equal(x->exit_code, 0);
	/* exit 3 is a raw wait status */
	x = job(&j, 6);
	assert_int_equal(x->state, SLURM_FAILED);
	assert_string_equal(x->reason, "NonZeroExitCode");
	assert_int_equal(x->exit_code, 768);
	/* DELETEd while it slept: SIGTERM */
	x = job(&j, 7);
	assert_int_equal(x->state, SLURM_CANCELLED);
	assert_int_equal(x->exit_code, 15);
	/* the 2014 submit left a record behind */
	x = job(&j, 8);
	assert_int_equal(x->state, SLURM_FAILED);
	assert_string_equal(x->reason, "BadConstraints");
	assert_string_equal(x->comment, "trainplane fixtures job 106");
	x = job(&j, 9);
	assert_int_equal(x->state, SLURM_PENDING);
	assert_string_equal(x->reason, "PartitionNodeLimit");
	assert_string_equal(x->nodes, "");
	assert_string_equal(job(&j, 10)->reason, "Resources");
	free(j.v);

	/* GET /job/<leader>: both components */
	j = jobs_of("job_hetjob.json");
	assert_int_equal(j.n, 2);
	assert_int_equal(j.v[0].job_id, 3);
	assert_int_equal(j.v[1].job_id, 4);
	assert_int_equal(j.v[1].het_job_id, 3);
	assert_int_equal(j.v[1].het_offset, 1);
	free(j.v);

	/* a node set down: requeued (PENDING, restart_cnt 1, no nodes) or NODE_FAIL */
	j = jobs_of("jobs_node_down.json");
	x = job(&j, 11);
	assert_int_equal(x->state, SLURM_PENDING);
	assert_int_equal(x->restart_cnt, 1);
	assert_string_equal(x->nodes, "");
	x = job(&j, 12);
	assert_int_equal(x->state, SLURM_NODE_FAIL);
	assert_string_equal(x->reason, "NodeDown");
	assert_string_equal(x->nodes, "n3");
	assert_int_equal(x->restart_cnt, 0);
	free(j.v);
	j = jobs_of("jobs_requeued.json");
	x = job(&j, 11);
	assert_int_equal(x->state, SLURM_RUNNING);
	assert_int_equal(x->restart_cnt, 1);
	free(j.v);

	j = jobs_of("jobs_timeout.json");
	x = job(&j, 1);
	assert_int_equal(x->state, SLURM_TIMEOUT);
	assert_string_equal(x->reason, "TimeLimit");
	assert_string_equal(x->comment, "trainplane fixtures job tp-timeout");
	free(j.v);

	j = jobs_of("jobs_completing.json");
	x = job(&j, 14);
	assert_int_equal(x->state, SLURM_TRANSIENT);
	assert_string_equal(x->state_name, "COMPLETING");
	assert_false(slurm_state_final(x->state));
	free(j.v);

	j = jobs_of("jobs_launch_failed_held.json");
	x = job(&j, 13);
	assert_int_equal(x->state, SLURM_PENDING);
	assert_string_equal(x->reason, "JobHeldUser");
	assert_string_equal(x->description, "launch failed requeued held");
	assert_int_equal(x->restart_cnt, 1);
	free(j.v);

	/* GET /job/999999: an empty list; a reply without one */
	j = jobs_of("job_999999.json");
	assert_int_equal(j.n, 0);
	free(j.v);
	char err[128];
	json_t *ping = fixture("ping.json");
	assert_int_equal(api->jobs(ping, &j.v, &j.n, err, sizeof(err)), SLURM_ERR_PROTOCOL);
	assert_null(j.v);
	json_decref(ping);
}

/* --- GET /nodes ----------------------------------------------------------------- */

static void nodes_carry_shape_gpus_and_partition(void **state)
{
	struct slurm_node_info *v;
	size_t n;
	char err[128];
	(void)state;
	json_t *reply = fixture("nodes.json");
	assert_int_equal(api->nodes(reply, "tp", &v, &n, err, sizeof(err)), SLURM_OK);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		char name[24];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		assert_string_equal(v[i].name, name);
		assert_int_equal(v[i].cpus, 8);
		assert_int_equal(v[i].memory_mb, 65536);
		assert_string_equal(v[i].gres_type, "t4");	/* "gpu:t4:4" */
		assert_int_equal(v[i].gpus, 4);
		assert_true(v[i].usable);	/* n1 "mixed", n2 and n3 "idle" */
	}
	free(v);
	assert_int_equal(api->nodes(reply, NULL, &v, &n, err, sizeof(err)), SLURM_OK);
	assert_int_equal(n, 3);
	free(v);
	assert_int_equal(api->nodes(reply, "gpu", &v, &n, err, sizeof(err)), SLURM_OK);
	assert_int_equal(n, 0);
	free(v);
	/* gres written other ways */
	json_t *n1 = json_array_get(json_object_get(reply, "nodes"), 0);
	json_object_set_new(n1, "gres", json_string("gpu:8"));
	json_object_set_new(json_array_get(json_object_get(reply, "nodes"), 1), "gres",
			    json_string("gpu:a100:2(S:0-1),gpu:t4:2"));
	json_object_set_new(json_array_get(json_object_get(reply, "nodes"), 2), "gres",
			    json_string(""));
	assert_int_equal(api->nodes(reply, "tp", &v, &n, err, sizeof(err)), SLURM_OK);
	assert_string_equal(v[0].gres_type, "");
	assert_int_equal(v[0].gpus, 8);
	assert_string_equal(v[1].gres_type, "a100");
	assert_int_equal(v[1].gpus, 2);
	assert_int_equal(v[2].gpus, 0);
	free(v);
	json_decref(reply);

	/* a node drained after a prolog failure: "idle" with state_flags ["DRAIN"] */
	reply = fixture("nodes_drain.json");
	assert_int_equal(api->nodes(reply, "tp", &v, &n, err, sizeof(err)), SLURM_OK);
	assert_int_equal(n, 3);
	assert_true(v[0].usable);
	assert_true(v[1].usable);
	assert_string_equal(v[2].name, "n3");
	assert_false(v[2].usable);
	free(v);
	json_decref(reply);

	reply = fixture("ping.json");
	assert_int_equal(api->nodes(reply, "tp", &v, &n, err, sizeof(err)), SLURM_ERR_PROTOCOL);
	json_decref(reply);
}

/* --- the submit body ------------------------------------------------------------- */

/* The keys of o, sorted, comma-separated. */
static char *keys_of(const json_t *o)
{
	const char *k;
	const json_t *v;
	json_t *a = json_array();
	json_object_foreach((json_t *)o, k, v)
		json_array_append_new(a, json_string(k));
	size_t n = json_array_size(a);
	const char **s = calloc(n + 1, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		s[i] = json_string_value(json_array_get(a, i));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(s[j - 1], s[j]) > 0; j--) {
			const char *t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	char *out = calloc(1, 1024);
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), 1024 - strlen(out), "%s%s", i ? "," : "", s[i]);
	free(s);
	json_decref(a);
	return out;
}

static void assert_keys(const json_t *o, const char *want)
{
	char *got = keys_of(o);
	assert_string_equal(got, want);
	free(got);
}

static void submit_body_has_exactly_the_v0038_keys(void **state)
{
	(void)state;
	json_t *env = json_pack("{s:s, s:s}", "PATH", "/usr/bin:/bin", "TRAINPLANE_PILOT_JOB", "7");
	struct slurm_submit s = {
		.name = "tp-7", .comment = "trainplane c1 job 7", .partition = "tp",
		.work_dir = "/srv/tp", .output = "/srv/tp/tp-%j.out", .time_limit_min = 61,
		.requeue = false, .script = "#!/bin/sh\nexit 0\n", .environment = env,
		.ncomponents = 1,
		.components = { { .tasks = 2, .cpus_per_task = 4, .memory_per_cpu_mb = 3840,
				  .gres_type = "t4", .gpus_per_task = 1 } },
	};
	json_t *body = api->submit_body(&s);
	assert_keys(body, "job,script");
	assert_string_equal(json_string_value(json_object_get(body, "script")), s.script);
	const json_t *c = json_object_get(body, "job");
	assert_keys(c, "comment,cpus_per_task,current_working_directory,environment,gpus_per_task,"
		    "memory_per_cpu,name,no_requeue,partition,standard_error,standard_output,tasks,"
		    "time_limit");
	assert_true(json_is_object(json_object_get(c, "environment")));
	assert_true(json_equal(json_object_get(c, "environment"), env));
	assert_true(json_is_true(json_object_get(c, "no_requeue")));
	/* untyped, as a string: a typed count left tasks sharing a node without GPUs */
	assert_string_equal(json_string_value(json_object_get(c, "gpus_per_task")), "1");
	assert_int_equal(json_integer_value(json_object_get(c, "tasks")), 2);
	assert_int_equal(json_integer_value(json_object_get(c, "cpus_per_task")), 4);
	assert_int_equal(json_integer_value(json_object_get(c, "memory_per_cpu")), 3840);
	assert_int_equal(json_integer_value(json_object_get(c, "time_limit")), 61);
	assert_string_equal(json_string_value(json_object_get(c, "standard_output")),
			    "/srv/tp/tp-%j.out");
	assert_string_equal(json_string_value(json_object_get(c, "standard_error")),
			    "/srv/tp/tp-%j.out");
	json_decref(body);

	/* requeue, no limit, no GPUs or memory, a constraint, account and QOS */
	s.requeue = true;
	s.time_limit_min = 0;
	s.account = "ml";
	s.qos = "normal";
	s.components[0] = (struct slurm_component){ .tasks = 1, .cpus_per_task = 1,
						    .gres_type = "t4", .gpus_per_task = 2,
						    .constraint = "t4" };
	body = api->submit_body(&s);
	c = json_object_get(body, "job");
	assert_keys(c, "account,comment,constraints,cpus_per_task,current_working_directory,"
		    "environment,gpus_per_task,name,partition,qos,standard_error,standard_output,"
		    "tasks");
	assert_string_equal(json_string_value(json_object_get(c, "gpus_per_task")), "2");
	assert_string_equal(json_string_value(json_object_get(c, "constraints")), "t4");
	json_decref(body);

	/* three components: a list under "jobs", each whole */
	s.requeue = false;
	s.time_limit_min = 5;
	s.account = s.qos = NULL;
	s.ncomponents = 3;
	s.components[0] = (struct slurm_component){ 3, 4, 3840, "t4", 1, NULL };
	s.components[1] = (struct slurm_component){ 1, 2, 4096, NULL, 0, NULL };
	s.components[2] = (struct slurm_component){ 1, 8, 0, NULL, 0, NULL };
	body = api->submit_body(&s);
	assert_keys(body, "jobs,script");
	const json_t *list = json_object_get(body, "jobs");
	assert_int_equal(json_array_size(list), 3);
	assert_keys(json_array_get(list, 0),
		    "comment,cpus_per_task,current_working_directory,environment,gpus_per_task,"
		    "memory_per_cpu,name,no_requeue,partition,standard_error,standard_output,tasks,"
		    "time_limit");
	assert_keys(json_array_get(list, 1),
		    "comment,cpus_per_task,current_working_directory,environment,memory_per_cpu,"
		    "name,no_requeue,partition,standard_error,standard_output,tasks,time_limit");
	assert_keys(json_array_get(list, 2),
		    "comment,cpus_per_task,current_working_directory,environment,name,no_requeue,"
		    "partition,standard_error,standard_output,tasks,time_limit");
	for (size_t i = 0; i < 3; i++) {
		const json_t *x = json_array_get(list, i);
		assert_true(json_equal(json_object_get(x, "environment"), env));
		assert_null(json_object_get(x, "requeue"));
		assert_string_equal(json_string_value(json_object_get(x, "name")), "tp-7");
	}
	json_decref(body);
	json_decref(env);
}

/* --- translation ------------------------------------------------------------------ */

#define T4 "NVIDIA_TESLA_T4"
#define HOSTILE "a;rm -rf /"

static struct slurm_backend_config config(void)
{
	static char partition[] = "tp", account[] = "default-acct", agent[] = "/opt/tp/bin/agent";
	static char server[] = "https://tp.example:8443", work_dir[] = "/srv/tp";
	static char runtime[] = "podman";
	struct slurm_backend_config c = {
		.partition = partition, .account = account, .agent = agent, .server = server,
		.work_dir = work_dir, .runtime = runtime, .requeue = false,
		.time_limit_margin_min = 1,
	};
	c.accounts = json_pack("{s:s}", "p-mapped", "acct-a");
	c.gres = json_pack("{s:s}", T4, "t4");
	c.features = json_object();
	c.machines = json_pack("{s:{s:i, s:i}}", "n1-highmem-2", "cpus", 2, "memoryMb", 8192);
	return c;
}

static void config_release(struct slurm_backend_config *c)
{
	json_decref(c->accounts);
	json_decref(c->gres);
	json_decref(c->features);
	json_decref(c->machines);
}

static struct plan_replica replica(enum replica_role role, int index, const char *machine,
				   int vcpus, int64_t memory_mb, const char *accel, int count)
{
	return (struct plan_replica){ role, index, machine,
				      { vcpus, memory_mb, accel, count, false }, NULL };
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The line of a script that holds what, up to its end. */
static const char *line_of(const char *script, const char *what)
{
	const char *at = strstr(script, what);
	if (!at)
		fail_msg("no %s in the script:\n%s", what, script);
	while (at > script && at[-1] != '\n')
		at--;
	return at;
}

static void translate_makes_one_component_per_shape(void **state)
{
	(void)state;
	struct slurm_backend_config cfg = config();
	struct plan_replica r[] = {
		replica(ROLE_MASTER, 0, "n1-standard-4", 4, 15360, T4, 1),
		replica(ROLE_WORKER, 0, "n1-standard-4", 4, 15360, T4, 1),
		replica(ROLE_WORKER, 1, "n1-standard-4", 4, 15360, T4, 1),
		replica(ROLE_PS, 0, "n1-highmem-2", 2, 13312, NULL, 0),
	};
	struct job_plan plan = { r, ARRAY_SIZE(r) };
	json_t *job = json_pack("{s:i, s:s, s:s, s:s, s:s, s:{s:{s:s}}}", "id", 42, "job_id",
				HOSTILE, "project", HOSTILE, "region", "us-central1", "api", "ml",
				"spec", "scheduling", "maxRunningTime", "90s");
	struct slurm_translation t;
	char why[256];
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "secret-token", &t, why,
					 sizeof(why)), 0);
	const struct slurm_submit *s = &t.submit;
	assert_int_equal(s->ncomponents, 2);
	assert_int_equal(s->components[0].tasks, 3);
	assert_int_equal(s->components[0].cpus_per_task, 4);
	assert_int_equal(s->components[0].memory_per_cpu_mb, 3840);
	assert_int_equal(s->components[0].gpus_per_task, 1);
	assert_string_equal(s->components[0].gres_type, "t4");
	assert_null(s->components[0].constraint);
	/* the ps: the backend's machines map, not the catalog's shape */
	assert_int_equal(s->components[1].tasks, 1);
	assert_int_equal(s->components[1].cpus_per_task, 2);
	assert_int_equal(s->components[1].memory_per_cpu_mb, 4096);
	assert_int_equal(s->components[1].gpus_per_task, 0);
	assert_null(s->components[1].gres_type);
	/* the pilots' slots, replica i is slot i */
	json_t *want = json_pack(
		"[{s:i, s:i, s:i, s:i, s:s, s:i}, {s:i, s:i, s:i, s:i, s:s, s:i},"
		" {s:i, s:i, s:i, s:i, s:s, s:i}, {s:i, s:i, s:i, s:i, s:n, s:i}]",
		"group", 0, "task", 0, "vcpus", 4, "memoryMb", 15360, "accelType", T4, "accelCount", 1,
		"group", 0, "task", 1, "vcpus", 4, "memoryMb", 15360, "accelType", T4, "accelCount", 1,
		"group", 0, "task", 2, "vcpus", 4, "memoryMb", 15360, "accelType", T4, "accelCount", 1,
		"group", 1, "task", 0, "vcpus", 2, "memoryMb", 8192, "accelType", "accelCount", 0);
	assert_true(json_equal(t.slots, want));
	json_decref(want);
	assert_string_equal(s->name, "tp-42");
	assert_string_equal(s->comment, "trainplane c1 job 42");
	assert_string_equal(s->output, "/srv/tp/tp-%j.out");
	assert_string_equal(s->work_dir, "/srv/tp");
	assert_string_equal(s->partition, "tp");
	assert_null(s->qos);
	assert_string_equal(s->account, "default-acct");	/* the project is not mapped */
	assert_false(s->requeue);
	assert_int_equal(s->time_limit_min, 2 + 1);	/* ceil(1.5 minutes) + the margin */
	/* the script: one srun per component, nothing of the job's own */
	assert_ptr_equal(s->script, t.script);
	assert_null(strstr(s->script, HOSTILE));
	assert_null(strstr(s->script, "rm -rf"));
	assert_int_equal(count_of(s->script, "srun"), 2);
	const char *line = line_of(s->script, "--het-group=0");
	assert_non_null(strstr(line, "TRAINPLANE_PILOT_GROUP=0 "));
	assert_non_null(strstr(line, "TRAINPLANE_AGENT_GPU_TYPE=" T4));
	assert_non_null(strstr(line, " -n 3 /opt/tp/bin/agent --pilot &\n"));
	line = line_of(s->script, "--het-group=1");
	assert_non_null(strstr(line, "TRAINPLANE_PILOT_GROUP=1 "));
	assert_null(strstr(line, "GPU"));
	assert_non_null(strstr(line, " -n 1 /opt/tp/bin/agent --pilot &\n"));
	/* the environment: the pilots' settings, strings only */
	json_t *env = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "PATH",
				"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"TRAINPLANE_PILOT_SERVER", "https://tp.example:8443",
				"TRAINPLANE_PILOT_TOKEN", "secret-token", "TRAINPLANE_PILOT_JOB", "42",
				"TRAINPLANE_PILOT_WORK_DIR", "/srv/tp", "TRAINPLANE_AGENT_RUNTIME",
				"podman");
	assert_true(json_equal(s->environment, env));
	json_decref(env);
	/* nothing of the job's own in the whole body either */
	json_t *body = api->submit_body(s);
	char *text = json_dumps(body, 0);
	assert_null(strstr(text, "rm -rf"));
	assert_int_equal(json_array_size(json_object_get(body, "jobs")), 2);
	free(text);
	json_decref(body);
	slurm_translation_release(&t);

	/* a mapped project; one shape: one component, no --het-group; no limit asked */
	json_object_set_new(job, "project", json_string("p-mapped"));
	json_object_set_new(job, "spec", json_object());
	plan.n = 3;
	cfg.agent_ca_file = (char *)"/etc/tp/ca.pem";
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "secret-token", &t, why,
					 sizeof(why)), 0);
	assert_string_equal(t.submit.account, "acct-a");
	assert_int_equal(t.submit.ncomponents, 1);
	assert_int_equal(t.submit.components[0].tasks, 3);
	assert_int_equal(t.submit.time_limit_min, 0);
	assert_int_equal(count_of(t.script, "srun"), 1);
	assert_null(strstr(t.script, "--het-group"));
	assert_string_equal(json_string_value(json_object_get(t.environment,
							      "TRAINPLANE_AGENT_SERVER_CA_FILE")),
			    "/etc/tp/ca.pem");
	slurm_translation_release(&t);
	cfg.agent_ca_file = NULL;

	/* Vertex: scheduling.timeout, else its default of 7 days */
	json_object_set_new(job, "api", json_string("vertex"));
	json_object_set_new(job, "spec", json_pack("{s:{s:{s:s}}}", "jobSpec", "scheduling",
						   "timeout", "3600s"));
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "t", &t, why, sizeof(why)), 0);
	assert_int_equal(t.submit.time_limit_min, 60 + 1);
	slurm_translation_release(&t);
	json_object_set_new(job, "spec", json_object());
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "t", &t, why, sizeof(why)), 0);
	assert_int_equal(t.submit.time_limit_min, 7 * 24 * 60 + 1);
	slurm_translation_release(&t);
	json_decref(job);
	config_release(&cfg);
}

static void translate_refuses_what_the_cluster_does_not_offer(void **state)
{
	(void)state;
	struct slurm_backend_config cfg = config();
	struct plan_replica r[] = {
		replica(ROLE_MASTER, 0, "n1-standard-8", 8, 30720, "NVIDIA_TESLA_V100", 1),
	};
	struct job_plan plan = { r, 1 };
	json_t *job = json_pack("{s:i, s:s, s:s}", "id", 5, "region", "us-central1", "api", "ml");
	struct slurm_translation t;
	char why[256];
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "t", &t, why, sizeof(why)), -1);
	assert_string_equal(why, "Accelerator type NVIDIA_TESLA_V100 is not available in region "
			    "us-central1: its Slurm cluster offers none");
	assert_null(t.slots);
	assert_null(t.script);
	r[0] = replica(ROLE_MASTER, 0, "cloud_tpu", 0, 0, "TPU_V2", 8);
	r[0].demand.tpu = true;
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "t", &t, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "TPUs are not offered in region us-central1"));
	assert_null(t.slots);
	plan.n = 0;
	assert_int_equal(slurm_translate(&cfg, &plan, job, "c1", "t", &t, why, sizeof(why)), -1);
	json_decref(job);
	config_release(&cfg);
}

/* --- the decision table ------------------------------------------------------------ */

struct decision {
	const char *fixture;	/* NULL: Slurm does not list the job */
	int64_t slurm_id;
	const char *job_state, *api;
	int restart_cnt;
	bool cancel_sent, complete;
	enum slurm_action want;
	const char *message;	/* a part of it; NULL: none */
};

static void decide_follows_the_table(void **state)
{
	static const struct decision table[] = {
		/* Slurm not done, trainplane not done */
		{ "jobs.json", 10, "QUEUED", "ml", 0, false, true, SLURM_ACT_NONE, NULL },
		{ "jobs.json", 9, "QUEUED", "ml", 0, false, true, SLURM_ACT_NONE, NULL },
		{ "jobs.json", 2, "RUNNING", "ml", 0, false, true, SLURM_ACT_NONE, NULL },
		{ "jobs.json", 4, "RUNNING", "vertex", 0, false, true, SLURM_ACT_NONE, NULL },
		{ "jobs_completing.json", 14, "RUNNING", "ml", 0, false, true, SLURM_ACT_NONE, NULL },
		/* trainplane ended or cancels it: DELETE once */
		{ "jobs.json", 2, "FAILED", "ml", 0, false, true, SLURM_ACT_CANCEL, NULL },
		{ "jobs.json", 2, "CANCELLED", "ml", 0, false, true, SLURM_ACT_CANCEL, NULL },
		{ "jobs.json", 2, "SUCCEEDED", "ml", 0, false, true, SLURM_ACT_CANCEL, NULL },
		{ "jobs.json", 2, "CANCELLING", "vertex", 0, false, true, SLURM_ACT_CANCEL, NULL },
		{ "jobs.json", 10, "CANCELLING", "ml", 0, false, true, SLURM_ACT_CANCEL, NULL },
		{ "jobs.json", 2, "CANCELLING", "ml", 0, true, true, SLURM_ACT_NONE, NULL },
		{ "jobs_completing.json", 14, "CANCELLING", "ml", 0, true, true, SLURM_ACT_NONE,
		  NULL },
		/* ending already: a job that succeeded is not cancelled while Slurm completes it */
		{ "jobs_completing.json", 14, "SUCCEEDED", "ml", 0, false, true, SLURM_ACT_NONE,
		  NULL },
		{ "jobs_completing.json", 14, "CANCELLING", "ml", 0, false, true, SLURM_ACT_NONE,
		  NULL },
		{ "jobs.json", 7, "CANCELLING", "ml", 0, true, true, SLURM_ACT_NONE, NULL },
		/* both final */
		{ "jobs.json", 5, "SUCCEEDED", "ml", 0, false, true, SLURM_ACT_DONE, NULL },
		{ "jobs.json", 6, "FAILED", "vertex", 0, false, true, SLURM_ACT_DONE, NULL },
		{ "jobs.json", 7, "CANCELLED", "ml", 0, true, true, SLURM_ACT_DONE, NULL },
		/* requeued after a node loss: pending or running again */
		{ "jobs_node_down.json", 11, "RUNNING", "ml", 0, false, true, SLURM_ACT_REQUEUED,
		  NULL },
		{ "jobs_requeued.json", 11, "RUNNING", "ml", 0, false, true, SLURM_ACT_REQUEUED,
		  NULL },
		{ "jobs_requeued.json", 11, "RUNNING", "ml", 1, false, true, SLURM_ACT_NONE, NULL },
		/* held after a prolog failure: not a requeue, though restart_cnt went up;
		 * the description was "" in one recording, the reason JobHeldUser */
		{ "jobs_launch_failed_held.json", 13, "RUNNING", "ml", 0, false, true,
		  SLURM_ACT_CANCEL_FAIL,
		  "could not start the job's pilots (Slurm job 13: launch failed requeued held)" },
		{ "jobs_launch_failed_held.json", 13, "PREPARING", "vertex", 1, false, true,
		  SLURM_ACT_CANCEL_FAIL, "(Slurm job 13: launch failed requeued held)" },
		{ "jobs_completing.json", 13, "RUNNING", "ml", 0, false, true, SLURM_ACT_CANCEL_FAIL,
		  "(Slurm job 13: launch failed requeued held)" },
		{ "jobs_launch_failed_held.json", 13, "CANCELLING", "ml", 0, false, true,
		  SLURM_ACT_CANCEL, NULL },
		/* Slurm ended it first */
		{ "jobs_timeout.json", 1, "RUNNING", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "Job exceeded the maximum running time (scheduling.max_running_time) of 60s." },
		{ "jobs_timeout.json", 1, "RUNNING", "vertex", 0, false, true, SLURM_ACT_FAIL,
		  "The job exceeded its timeout (scheduling.timeout) of 60s." },
		{ "jobs_node_down.json", 12, "RUNNING", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "(Slurm job 12 on n3: NODE_FAIL) and the job was not requeued." },
		{ "jobs.json", 7, "RUNNING", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "cancelled in the Slurm cluster, not through this API (Slurm job 7: CANCELLED)" },
		{ "jobs.json", 5, "RUNNING", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "ended before its replicas reported their end (Slurm job 5: COMPLETED, exit "
		  "status 0)." },
		{ "jobs.json", 6, "PREPARING", "vertex", 0, false, true, SLURM_ACT_FAIL,
		  "(Slurm job 6: FAILED, exit status 3, NonZeroExitCode)." },
		{ "jobs.json", 8, "QUEUED", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "Slurm job 8: FAILED" },
		/* Slurm no longer lists it */
		{ NULL, 40, "RUNNING", "ml", 0, false, true, SLURM_ACT_FAIL,
		  "no longer knows its job 40 (its record was purged)" },
		{ NULL, 40, "RUNNING", "ml", 0, false, false, SLURM_ACT_NONE, NULL },
		{ NULL, 40, "SUCCEEDED", "ml", 0, false, true, SLURM_ACT_DONE, NULL },
		{ NULL, 40, "FAILED", "vertex", 0, false, true, SLURM_ACT_DONE, NULL },
		{ NULL, 40, "CANCELLING", "ml", 0, true, true, SLURM_ACT_NONE, NULL },
		{ NULL, 0, "QUEUED", "ml", 0, false, true, SLURM_ACT_NONE, NULL },
	};
	json_t *ml = json_pack("{s:{s:s}}", "scheduling", "maxRunningTime", "60s");
	json_t *vertex = json_pack("{s:{s:{s:s}}}", "jobSpec", "scheduling", "timeout", "60s");
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const struct decision *d = &table[i];
		struct jobs j = { NULL, 0 };
		const struct slurm_job_info *info = NULL;
		char message[512];
		if (d->fixture) {
			j = jobs_of(d->fixture);
			info = job(&j, d->slurm_id);
		}
		enum slurm_action a = slurm_decide(d->job_state, d->api,
						   !strcmp(d->api, "vertex") ? vertex : ml,
						   d->slurm_id, d->restart_cnt, d->cancel_sent, info,
						   d->complete, message, sizeof(message));
		if (a != d->want || (d->message && !strstr(message, d->message)) ||
		    (!d->message && *message))
			fail_msg("row %zu (%s, Slurm job %lld, %s): action %d, want %d; message "
				 "\"%s\"", i, d->fixture ? d->fixture : "unlisted",
				 (long long)d->slurm_id, d->job_state, a, d->want, message);
		free(j.v);
	}
	json_decref(ml);
	json_decref(vertex);
}

/* States no recording holds, on a recorded entry: OUT_OF_MEMORY, and an ml
 * job without maxRunningTime that ran into the partition's limit. */
static void decide_words_other_ends(void **state)
{
	char message[512], err[128];
	struct slurm_job_info *v;
	size_t n;
	(void)state;
	json_t *reply = fixture("jobs.json");
	json_t *entry = json_array_get(json_object_get(reply, "jobs"), 5);
	assert_int_equal(json_integer_value(json_object_get(entry, "job_id")), 6);
	json_object_set_new(entry, "job_state", json_string("OUT_OF_MEMORY"));
	json_object_set_new(entry, "state_reason", json_string("OutOfMemory"));
	assert_int_equal(api->jobs(reply, &v, &n, err, sizeof(err)), SLURM_OK);
	assert_int_equal(v[5].state, SLURM_OUT_OF_MEMORY);
	assert_int_equal(slurm_decide("RUNNING", "ml", NULL, 6, 0, false, &v[5], true, message,
				      sizeof(message)), SLURM_ACT_FAIL);
	assert_string_equal(message, "A replica of the job ran out of memory (Slurm job 6: "
			    "OUT_OF_MEMORY).");
	free(v);
	json_decref(reply);

	struct jobs j = jobs_of("jobs_timeout.json");
	json_t *spec = json_object();
	assert_int_equal(slurm_decide("RUNNING", "ml", spec, 1, 0, false, job(&j, 1), true,
				      message, sizeof(message)), SLURM_ACT_FAIL);
	assert_string_equal(message, "Job exceeded the time limit of its Slurm partition.");
	assert_int_equal(slurm_decide("RUNNING", "vertex", spec, 1, 0, false, job(&j, 1), true,
				      message, sizeof(message)), SLURM_ACT_FAIL);
	assert_string_equal(message, "The job exceeded its timeout (scheduling.timeout) of "
			    "604800s.");
	json_decref(spec);
	free(j.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_release_takes_22_05_and_refuses_24_05),
		cmocka_unit_test(submit_replies_sort_into_ok_rejected_and_unavailable),
		cmocka_unit_test(errors_name_what_slurm_said),
		cmocka_unit_test(state_names_parse),
		cmocka_unit_test(jobs_carry_states_exit_codes_and_components),
		cmocka_unit_test(nodes_carry_shape_gpus_and_partition),
		cmocka_unit_test(submit_body_has_exactly_the_v0038_keys),
		cmocka_unit_test(translate_makes_one_component_per_shape),
		cmocka_unit_test(translate_refuses_what_the_cluster_does_not_offer),
		cmocka_unit_test(decide_follows_the_table),
		cmocka_unit_test(decide_words_other_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
