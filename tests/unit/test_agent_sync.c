/*
 * Unit tests: the agent protocol's messages (agent/sync_msg.c) and the
 * agent's side of a sync (agent/agent.c): register body, reports with seq,
 * pinned log batches, desired-set parsing (bad JSON included), and
 * reconciliation: start, stop, forget, never start an attempt twice,
 * a newer attempt replacing an older one, re-adoption with a persisted
 * incarnation; the lease counted from the send of an answered request, and
 * past it no start and the agent's own fence (reported LOST).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "agent.h"
#include "fixtures/agent/agent_test.h"
#include "sync_msg.h"

/* ---- messages -------------------------------------------------------- */

static void register_body__declared_gpus_and_tpu(void **state)
{
	struct agent_config cfg;
	(void)state;
	test_config(&cfg, "/tmp/unused", RUNTIME_PROCESS);
	cfg.machine_type = xstrdup("n1-standard-16");
	json_t *o = sync_register_body(&cfg, "abcdef0123456789", "NVIDIA_TESLA_T4", 4);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s,
		"{\"accelerators\":{\"count\":4,\"type\":\"NVIDIA_TESLA_T4\"},\"address\":\"127.0.0.1\","
		"\"agentVersion\":\"" AGENT_VERSION "\",\"disconnectPolicy\":\"fence\","
		"\"incarnation\":\"abcdef0123456789\","
		"\"machineType\":\"n1-standard-16\",\"memoryMb\":4096,\"portRange\":[21000,21999],"
		"\"region\":\"us-central1\",\"runtime\":\"process\",\"stopGraceSeconds\":10,"
		"\"vcpus\":4,\"zone\":\"us-central1-a\"}");
	free(s);
	json_decref(o);

	cfg.tpu_type = xstrdup("TPU_V2");
	o = sync_register_body(&cfg, "x", NULL, 0);
	assert_null(json_object_get(o, "accelerators"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "tpu"), "type")),
			    "TPU_V2");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "tpu"), "cores")), 8);
	json_decref(o);
	agent_config_free(&cfg);
}

static int parse_register(const char *body, int *interval, int *lease, char *cluster,
			  size_t cluster_len, char *err, size_t errlen)
{
	return sync_parse_register(body, strlen(body), interval, lease, cluster, cluster_len, err,
				   errlen);
}

static void register_answer__parsed_and_checked(void **state)
{
	int interval = 10, lease = 30;
	char err[256], cluster[SYNC_CLUSTER_ID_MAX + 1] = "x";
	(void)state;
	const char *ok = "{\"node\":\"gpu-1\",\"syncIntervalSeconds\":5,\"leaseSeconds\":15}";
	assert_int_equal(sync_parse_register(ok, strlen(ok), &interval, &lease, cluster,
					     sizeof(cluster), err, sizeof(err)), 0);
	assert_int_equal(interval, 5);
	assert_int_equal(lease, 15);
	assert_string_equal(cluster, "");	/* a server without cluster ids */
	assert_int_equal(sync_parse_register("{}", 2, &interval, &lease, cluster, sizeof(cluster),
					     err, sizeof(err)), 0);
	assert_int_equal(interval, 5);
	assert_int_equal(sync_parse_register("{", 1, &interval, &lease, cluster, sizeof(cluster),
					     err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid JSON"));
	const char *bad = "{\"syncIntervalSeconds\":0}";
	assert_int_equal(sync_parse_register(bad, strlen(bad), &interval, &lease, cluster,
					     sizeof(cluster), err, sizeof(err)), -1);

	assert_int_equal(parse_register("{\"clusterId\":\"0123abcdef0123abcdef0123abcdef01\"}",
					&interval, &lease, cluster, sizeof(cluster), err,
					sizeof(err)), 0);
	assert_string_equal(cluster, "0123abcdef0123abcdef0123abcdef01");
	/* It names files and labels: anything else refuses the answer. */
	const char *refused[] = { "{\"clusterId\":\"../x\"}", "{\"clusterId\":\"\"}",
				  "{\"clusterId\":\"a b\"}", "{\"clusterId\":7}" };
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		assert_int_equal(parse_register(refused[i], &interval, &lease, cluster,
						sizeof(cluster), err, sizeof(err)), -1);
	char *long_id = xasprintf("{\"clusterId\":\"%065d\"}", 0);
	assert_int_equal(parse_register(long_id, &interval, &lease, cluster, sizeof(cluster), err,
					sizeof(err)), -1);
	free(long_id);
}

static void report__states_times_and_logs(void **state)
{
	(void)state;
	struct replica *r = replica_new("/tmp/unused", "1234-worker-0", 2, RUNTIME_PROCESS);
	r->state = REPLICA_RUNNING;
	r->seq = 7;
	r->start_usec = 1795341600123000LL;	/* 2026-11-22T10:00:00.123Z */
	json_t *o = sync_report(r);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"attempt\":2,\"endTime\":null,\"logs\":[],\"message\":\"\","
			       "\"replica\":\"1234-worker-0\",\"seq\":7,"
			       "\"startTime\":\"2026-11-22T10:00:00.123Z\",\"state\":\"RUNNING\"}");
	free(s);
	json_decref(o);

	replica_set_final(r, REPLICA_EXITED, 3, 1795341601500000LL, NULL);
	r->batch = json_pack("[{s:s, s:s, s:s}]", "stream", "stdout", "time",
			     "2026-11-22T10:00:01.5Z", "text", "step 1");
	o = sync_report(r);
	assert_int_equal(json_integer_value(json_object_get(o, "exitCode")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "endTime")),
			    "2026-11-22T10:00:01.500Z");
	assert_int_equal(json_array_size(json_object_get(o, "logs")), 1);
	json_decref(o);

	replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, "exec 'x': No such file or directory");
	o = sync_report(r);
	assert_null(json_object_get(o, "exitCode"));
	assert_string_equal(json_string_value(json_object_get(o, "state")), "FAILED_TO_START");
	assert_string_equal(json_string_value(json_object_get(o, "message")),
			    "exec 'x': No such file or directory");
	json_decref(o);
	replica_free(r);
}

static void answer__the_protocol_example_parses(void **state)
{
	struct desired_set ds = { 0 };
	char err[256];
	(void)state;
	const char *body =
		"{\"desiredVersion\": \"42\", \"replicas\": [\n"
		" {\"replica\": \"1234-worker-0\", \"attempt\": 1, \"desired\": \"RUN\",\n"
		"  \"job\": \"projects/demo/jobs/census_1\", \"role\": \"worker\", \"index\": 0,\n"
		"  \"image\": \"localhost/trainer:latest\",\n"
		"  \"command\": [\"python\", \"-m\", \"trainer.task\"],\n"
		"  \"args\": [\"--epochs\", \"10\", \"--job-dir\", \"gs://b/out\"],\n"
		"  \"env\": [\"TF_CONFIG={}\", \"CLUSTER_SPEC={}\", \"CUDA_VISIBLE_DEVICES=0,1\"],\n"
		"  \"gpus\": [0, 1], \"ports\": [21003],\n"
		"  \"simulate\": {\"seconds\": 2.0, \"exitCode\": 0}, \"futureField\": true},\n"
		" {\"replica\": \"1234-ps-0\", \"attempt\": 3, \"desired\": \"STOP\"},\n"
		" {\"replica\": \"9-master-0\", \"attempt\": 1, \"desired\": \"RUN\",\n"
		"  \"simulate\": \"fail-3-after-2s\"}]}";
	assert_int_equal(sync_parse_answer(body, strlen(body), &ds, err, sizeof(err)), 0);
	assert_string_equal(ds.version, "42");
	assert_true(ds.has_replicas);
	assert_int_equal(ds.n, 3);
	const struct desired_replica *d = &ds.v[0];
	assert_string_equal(d->replica, "1234-worker-0");
	assert_true(d->run);
	assert_string_equal(d->job, "projects/demo/jobs/census_1");
	assert_string_equal(d->role, "worker");
	assert_string_equal(d->image, "localhost/trainer:latest");
	assert_string_equal(d->command[2], "trainer.task");
	assert_null(d->command[3]);
	assert_string_equal(d->args[3], "gs://b/out");
	assert_string_equal(d->env[2], "CUDA_VISIBLE_DEVICES=0,1");
	assert_int_equal(d->ngpus, 2);
	assert_int_equal(d->gpus[1], 1);
	assert_int_equal(d->nports, 1);
	assert_int_equal(d->ports[0], 21003);
	assert_true(d->has_simulate);
	assert_true(d->sim_seconds == 2.0);
	assert_false(ds.v[1].run);
	assert_int_equal(ds.v[1].attempt, 3);
	assert_non_null(ds.v[1].command);
	assert_null(ds.v[1].command[0]);
	assert_true(ds.v[2].has_simulate);
	assert_int_equal(ds.v[2].sim_exit, 3);
	assert_ptr_equal(desired_find(&ds, "1234-ps-0", 3), &ds.v[1]);
	assert_null(desired_find(&ds, "1234-ps-0", 2));
	desired_set_release(&ds);

	/* An emulator rule's object (docs/emulator.md): no seconds is the
	 * agent's default (-1), "hang" runs a year, an exit code alone fails. */
	const char *rules = "{\"desiredVersion\": \"43\", \"replicas\": ["
		"{\"replica\": \"r-0\", \"attempt\": 1, \"desired\": \"RUN\","
		" \"simulate\": {\"outcome\": \"exit\", \"exitCode\": 7, \"rule\": 0}},"
		"{\"replica\": \"r-1\", \"attempt\": 1, \"desired\": \"RUN\","
		" \"simulate\": {\"outcome\": \"hang\"}}]}";
	assert_int_equal(sync_parse_answer(rules, strlen(rules), &ds, err, sizeof(err)), 0);
	assert_true(ds.v[0].has_simulate);
	assert_true(ds.v[0].sim_seconds < 0);
	assert_int_equal(ds.v[0].sim_exit, 7);
	assert_true(ds.v[1].sim_seconds >= 86400.0 * 365);
	desired_set_release(&ds);

	/* A trainer package replica: its packages, module and runtime; a value
	 * the job chose is the start's to judge, not the answer's. */
	const char *pkg =
		"{\"replicas\": [{\"replica\": \"7-master-0\", \"attempt\": 1, \"desired\": \"RUN\","
		" \"command\": [\"python3\", \"-m\", \"trainer.task\"],"
		" \"packages\": [\"gs://b/p/trainer-0.1.tar.gz\", \"/etc/passwd\"],"
		" \"pythonModule\": \"trainer.task; rm -rf /\","
		" \"pythonRuntime\": {\"runtimeVersion\": \"2.11\", \"pythonVersion\": \"3.7\"}},"
		" {\"replica\": \"8-master-0\", \"attempt\": 1, \"desired\": \"RUN\","
		" \"packages\": [\"gs://b/t.whl\"], \"pythonModule\": \"t.task\","
		" \"pythonRuntime\": {\"executorImageUri\": \"gcr.io/p/e:1\", \"runtimeVersion\": \"\"}},"
		" {\"replica\": \"9-master-0\", \"attempt\": 1, \"desired\": \"RUN\","
		" \"packages\": null, \"pythonModule\": 7, \"pythonRuntime\": 8}]}";
	assert_int_equal(sync_parse_answer(pkg, strlen(pkg), &ds, err, sizeof(err)), 0);
	d = &ds.v[0];
	assert_string_equal(d->packages[0], "gs://b/p/trainer-0.1.tar.gz");
	assert_string_equal(d->packages[1], "/etc/passwd");
	assert_null(d->packages[2]);
	assert_string_equal(d->python_module, "trainer.task; rm -rf /");
	assert_string_equal(d->runtime_version, "2.11");
	assert_string_equal(d->python_version, "3.7");
	assert_null(d->executor_image);
	d = &ds.v[1];
	assert_string_equal(d->executor_image, "gcr.io/p/e:1");
	assert_null(d->runtime_version);	/* "" reads as unset */
	assert_null(ds.v[2].packages);		/* not a package replica: the rest unread */
	assert_null(ds.v[2].python_module);
	desired_set_release(&ds);

	/* No replicas: "unchanged, keep yours". A numeric version is accepted. */
	const char *same = "{\"desiredVersion\": 42}";
	assert_int_equal(sync_parse_answer(same, strlen(same), &ds, err, sizeof(err)), 0);
	assert_false(ds.has_replicas);
	assert_string_equal(ds.version, "42");
	desired_set_release(&ds);
}

static void answer__bad_ones_are_rejected_whole(void **state)
{
	struct desired_set ds = { 0 };
	char err[256];
	(void)state;
	static const char *const cases[][2] = {
		{ "{\"replicas\": [", "invalid JSON" },
		{ "[]", "sync answer" },
		{ "{\"replicas\": {}}", "not an array" },
		{ "{\"replicas\": [1]}", "replicas[0] is not an object" },
		{ "{\"replicas\": [{\"attempt\": 1, \"desired\": \"RUN\"}]}", "replicas[0]" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"desired\": \"RUN\"}]}", "replicas[0]" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"WALK\"}]}",
		  "neither RUN nor STOP" },
		{ "{\"replicas\": [{\"replica\": \"../x\", \"attempt\": 1, \"desired\": \"RUN\"}]}",
		  "bad replica name" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\"},"
		  " {\"replica\": \"b\", \"attempt\": 1, \"desired\": \"RUN\", \"env\": [1]}]}",
		  "replicas[1]: 'env'[0] is not a string" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"gpus\": [-1]}]}", "'gpus'[0]" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"simulate\": \"explode\"}]}", "bad simulate script" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"simulate\": {\"exitCode\": 300}}]}", "bad simulate object" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"simulate\": {\"seconds\": -1}}]}", "bad simulate object" },
		{ "{\"desiredVersion\": [], \"replicas\": []}", "desiredVersion" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": \"gs://b/t.tar.gz\", \"pythonModule\": \"t\"}]}",
		  "'packages' is not an array" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": [\"gs://b/t.tar.gz\", {}], \"pythonModule\": \"t\"}]}",
		  "'packages'[1] is not a string" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": [\"gs://b/t.tar.gz\"]}]}", "'pythonModule' is not a string" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": [], \"pythonModule\": 7}]}", "'pythonModule' is not a string" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": [], \"pythonModule\": \"t\", \"pythonRuntime\": \"2.11\"}]}",
		  "'pythonRuntime' is not an object" },
		{ "{\"replicas\": [{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\","
		  " \"packages\": [], \"pythonModule\": \"t\","
		  " \"pythonRuntime\": {\"runtimeVersion\": 2.11}}]}",
		  "'pythonRuntime.runtimeVersion' is not a string" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		if (sync_parse_answer(cases[i][0], strlen(cases[i][0]), &ds, err, sizeof(err)) != -1)
			fail_msg("accepted: %s", cases[i][0]);
		if (!strstr(err, cases[i][1]))
			fail_msg("'%s' not in '%s'", cases[i][1], err);
		assert_int_equal(ds.n, 0);
		assert_null(ds.v);
	}
}

/* ---- the agent's side ------------------------------------------------ */

struct fx {
	char *dir;
	struct agent_config cfg;
	struct agent a;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	char err[256];
	f->dir = test_tmpdir();
	test_config(&f->cfg, f->dir, RUNTIME_SIMULATE);
	f->cfg.gpu_type = xstrdup("NVIDIA_TESLA_T4");	/* declared: no discovery */
	f->cfg.gpu_count = 2;
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	agent_release(&f->a);
	test_rm_rf(f->dir);
	free(f->dir);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

/* Builds the sync body and returns the report of id (a new reference), or NULL. */
static json_t *sync_report_of(struct fx *f, const char *id, json_t **body_out)
{
	char *text = agent_sync_body(&f->a, 10);
	json_t *body = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(body);
	json_t *found = NULL, *rep;
	size_t i;
	json_array_foreach(json_object_get(body, "replicas"), i, rep)
		if (!strcmp(json_string_value(json_object_get(rep, "replica")), id))
			found = json_incref(rep);
	if (body_out)
		*body_out = body;
	else
		json_decref(body);
	return found;
}

static void answer(struct fx *f, const char *body)
{
	assert_int_equal(agent_sync_done(&f->a, body, strlen(body)), 0);
}

static json_int_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void agent__reports_carry_seq_and_are_acknowledged(void **state)
{
	struct fx *f = *state;
	json_t *body, *rep;

	/* Nothing known yet: an empty report list, no version. */
	assert_null(sync_report_of(f, "r0", &body));
	assert_string_equal(json_string_value(json_object_get(body, "incarnation")),
			    f->a.incarnation);
	assert_int_equal(jint(body, "waitSeconds"), 10);
	assert_null(json_object_get(body, "desiredVersion"));
	json_decref(body);
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"r0\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"fail-3-after-0.3s\"}]}");
	struct replica *r = agent_find(&f->a, "r0", 1);
	assert_non_null(r);
	assert_int_equal(r->state, REPLICA_RUNNING);

	rep = sync_report_of(f, "r0", &body);
	assert_string_equal(json_string_value(json_object_get(body, "desiredVersion")), "1");
	json_decref(body);
	assert_int_equal(jint(rep, "seq"), 1);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "RUNNING");
	assert_int_equal(json_array_size(json_object_get(rep, "logs")), 1);
	json_decref(rep);
	assert_true(f->a.inflight_new);

	/* The sync failed (no answer): the same report goes again, same seq, same batch. */
	rep = sync_report_of(f, "r0", NULL);
	assert_int_equal(jint(rep, "seq"), 1);
	assert_int_equal(json_array_size(json_object_get(rep, "logs")), 1);
	json_decref(rep);
	answer(f, "{\"desiredVersion\": \"1\"}");
	assert_int_equal(r->acked_seq, 1);
	assert_null(r->batch);

	/* Acknowledged and unchanged: same seq, no logs, nothing new in flight. */
	rep = sync_report_of(f, "r0", NULL);
	assert_int_equal(jint(rep, "seq"), 1);
	assert_int_equal(json_array_size(json_object_get(rep, "logs")), 0);
	json_decref(rep);
	assert_false(f->a.inflight_new);
	answer(f, "{\"desiredVersion\": \"1\"}");

	test_sleep_ms(350);
	assert_true(agent_tick(&f->a));
	assert_true(f->a.dirty);
	rep = sync_report_of(f, "r0", NULL);
	assert_int_equal(jint(rep, "seq"), 2);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "EXITED");
	assert_int_equal(jint(rep, "exitCode"), 3);
	json_decref(rep);

	/* Still listed: kept and reported even though finished. */
	answer(f, "{\"desiredVersion\": \"1\"}");
	assert_non_null(agent_find(&f->a, "r0", 1));
	struct stat st;
	assert_int_equal(stat(r->dir, &st), 0);
	char *dir = xstrdup(r->dir);

	/* The server recorded it and dropped it from the set: forgotten, files gone. */
	rep = sync_report_of(f, "r0", NULL);
	json_decref(rep);
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": []}");
	assert_null(agent_find(&f->a, "r0", 1));
	assert_int_equal(stat(dir, &st), -1);
	free(dir);

	/* A stale answer listing it again never starts that attempt twice. */
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"r0\", \"attempt\": 1,"
		  " \"desired\": \"RUN\"}]}");
	assert_null(agent_find(&f->a, "r0", 1));
}

/*
 * A replica's end is reported with its last lines, never before them: the
 * server takes no lines of a replica it recorded as ended, and stream-logs
 * stops at the job's end. While a batch is in flight and lines follow it,
 * the replica's last reported state stands.
 */
static void agent__an_end_goes_out_with_the_last_lines(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"r9\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"fail-3-after-0.3s\"}]}");
	struct replica *r = agent_find(&f->a, "r9", 1);
	assert_non_null(r);
	json_t *rep = sync_report_of(f, "r9", NULL);	/* in flight, unanswered */
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "RUNNING");
	size_t first = json_array_size(json_object_get(rep, "logs"));
	json_decref(rep);

	/* The trainer's last lines, then its exit. */
	char *path = replica_path(r, "output.log");
	FILE *out = fopen(path, "a");
	assert_non_null(out);
	for (int i = 0; i < 3; i++)
		fprintf(out, "%lld O last line %d\n", 1700000000000000LL + i, i);
	fclose(out);
	free(path);
	test_sleep_ms(350);
	assert_true(agent_tick(&f->a));
	assert_int_equal(r->state, REPLICA_EXITED);

	/* The batch in flight goes again; the end waits for the lines after it. */
	rep = sync_report_of(f, "r9", NULL);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "RUNNING");
	assert_int_equal(json_array_size(json_object_get(rep, "logs")), first);
	json_decref(rep);
	answer(f, "{\"desiredVersion\": \"1\"}");

	/* Acknowledged: the end goes out with the last lines. */
	rep = sync_report_of(f, "r9", NULL);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "EXITED");
	assert_int_equal(jint(rep, "exitCode"), 3);
	json_t *logs = json_object_get(rep, "logs");
	assert_true(json_array_size(logs) >= 3);
	bool found = false;
	for (size_t i = 0; i < json_array_size(logs); i++)
		found |= !strcmp(json_string_value(json_object_get(json_array_get(logs, i), "text")),
				 "last line 2");
	assert_true(found);
	json_decref(rep);
}

static void agent__finished_but_unacknowledged_is_not_forgotten(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"r1\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"run-0s-exit-0\"}]}");
	agent_tick(&f->a);
	struct replica *r = agent_find(&f->a, "r1", 1);
	assert_int_equal(r->state, REPLICA_EXITED);
	/* An answer to a sync built before the exit: the EXITED report is not acknowledged. */
	f->a.nsent = 0;
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": []}");
	assert_non_null(agent_find(&f->a, "r1", 1));
	json_decref(sync_report_of(f, "r1", NULL));
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": []}");
	assert_null(agent_find(&f->a, "r1", 1));
}

static void agent__stop_and_absent_replicas_are_stopped(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"},"
		  "{\"replica\": \"b\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	assert_int_equal(agent_find(&f->a, "a", 1)->state, REPLICA_RUNNING);
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"STOP\"}]}");
	assert_int_equal(agent_find(&f->a, "a", 1)->state, REPLICA_EXITED);
	assert_int_equal(agent_find(&f->a, "a", 1)->exit_code, 143);
	assert_int_equal(agent_find(&f->a, "b", 1)->state, REPLICA_EXITED);
	/* STOP for something never started starts nothing, and says so: the
	 * server waits for its end (a job cancelled with its placement would
	 * stay CANCELLING for ever). */
	answer(f, "{\"desiredVersion\": \"3\", \"replicas\": ["
		  "{\"replica\": \"c\", \"attempt\": 1, \"desired\": \"STOP\"}]}");
	struct replica *c = agent_find(&f->a, "c", 1);
	assert_non_null(c);
	assert_int_equal(c->state, REPLICA_FAILED_TO_START);
	assert_int_equal(c->start_usec, 0);
	json_t *rep = sync_report_of(f, "c", NULL);
	assert_non_null(rep);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "FAILED_TO_START");
	assert_string_equal(json_string_value(json_object_get(rep, "message")), REPLICA_SKIPPED_MESSAGE);
	assert_true(json_is_null(json_object_get(rep, "startTime")));
	json_decref(rep);
	/* ... and never starts it later, even if asked to */
	answer(f, "{\"desiredVersion\": \"4\", \"replicas\": ["
		  "{\"replica\": \"c\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	assert_int_equal(agent_find(&f->a, "c", 1)->state, REPLICA_FAILED_TO_START);
}

static void agent__newer_attempt_replaces_the_older(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": ["
		  "{\"replica\": \"w\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": ["
		  "{\"replica\": \"w\", \"attempt\": 2, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	/* Simulate stops at once, so the new attempt starts in the same pass or the next. */
	agent_tick(&f->a);
	assert_int_equal(agent_find(&f->a, "w", 1)->state, REPLICA_EXITED);
	assert_int_equal(agent_find(&f->a, "w", 2)->state, REPLICA_RUNNING);
}

static void agent__no_desired_set_yet_means_hands_off(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": ["
		  "{\"replica\": \"keep\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	json_decref(sync_report_of(f, "keep", NULL));	/* seq 1 went out */
	char *incarnation = xstrdup(f->a.incarnation);
	/* Agent restart: the same work dir gives the same incarnation and the replica back. */
	agent_release(&f->a);
	char err[256];
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	assert_string_equal(f->a.incarnation, incarnation);
	free(incarnation);
	struct replica *r = agent_find(&f->a, "keep", 1);
	assert_non_null(r);
	assert_int_equal(r->state, REPLICA_RUNNING);
	agent_tick(&f->a);	/* no answer yet: nothing is stopped */
	assert_int_equal(r->state, REPLICA_RUNNING);
	/* Its first report after the restart has a new seq. */
	json_t *rep = sync_report_of(f, "keep", NULL);
	assert_int_equal(jint(rep, "seq"), 2);
	json_decref(rep);
}

static void agent__a_reboot_means_a_new_incarnation(void **state)
{
	struct fx *f = *state;
	char err[256], *old = xstrdup(f->a.incarnation);
	agent_release(&f->a);
	char *path = xasprintf("%s/incarnation", f->dir);
	FILE *file = fopen(path, "w");
	fprintf(file, "%s 00000000-0000-0000-0000-000000000000\n", old);
	fclose(file);
	free(path);
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	assert_string_not_equal(f->a.incarnation, old);
	assert_int_equal(strlen(f->a.incarnation), 16);
	free(old);
}

/* ---- the lease (lease.h) ---------------------------------------------- */

#define SEC 1000000LL

static struct lease lease_file_of(struct fx *f)
{
	struct lease l = { 0 };
	assert_int_equal(lease_read(f->cfg.lease_file, &l), 1);
	return l;
}

static void agent__the_lease_counts_from_the_send_of_the_answered_sync(void **state)
{
	struct fx *f = *state;
	f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	int64_t sent = lease_clock_usec() - 2 * SEC;	/* the request went out 2 s ago */
	f->a.request_sent_usec = sent;
	answer(f, "{\"desiredVersion\": \"1\", \"leaseSeconds\": 5, \"replicas\": []}");
	assert_int_equal(f->a.lease, 5);
	assert_true(f->a.node_lease.deadline_usec == sent + 5 * SEC);
	assert_false(agent_lease_expired(&f->a));
	struct lease l = lease_file_of(f);
	assert_true(l.deadline_usec == sent + 5 * SEC);
	assert_int_equal(l.grace_s, 10);
	assert_true(l.fence);
	/* The next answer counts from its own send, with the lease it states
	 * (a server now configured shorter: the deadline may move back). */
	f->a.request_sent_usec = sent + SEC;
	answer(f, "{\"desiredVersion\": \"1\", \"leaseSeconds\": 3}");
	assert_true(lease_file_of(f).deadline_usec == sent + 4 * SEC);
	/* An answer without leaseSeconds keeps the last one. */
	f->a.request_sent_usec = sent + 2 * SEC;
	answer(f, "{\"desiredVersion\": \"1\"}");
	assert_true(lease_file_of(f).deadline_usec == sent + 5 * SEC);
	/* An unusable answer renews nothing. */
	f->a.request_sent_usec = sent + 60 * SEC;
	assert_int_equal(agent_sync_done(&f->a, "<html>proxy</html>", 18), -1);
	assert_true(lease_file_of(f).deadline_usec == sent + 5 * SEC);
	/* A register answer renews it the same way. */
	agent_lease_renewed(&f->a, sent + 3 * SEC, 30);
	assert_true(lease_file_of(f).deadline_usec == sent + 33 * SEC);
}

static void agent__its_long_poll_leaves_room_for_the_next_answer_in_the_lease(void **state)
{
	struct fx *f = *state;
	f->a.sync_interval = 10;
	f->a.lease = 30;
	assert_int_equal(agent_wait_seconds(&f->a), 10);	/* the defaults: as asked */
	f->a.lease = 15;		/* two 10 s polls would outlast it */
	assert_int_equal(agent_wait_seconds(&f->a), 6);
	f->a.sync_interval = 1;
	f->a.lease = 4;
	assert_int_equal(agent_wait_seconds(&f->a), 1);
	f->a.lease = 3;
	assert_int_equal(agent_wait_seconds(&f->a), 0);	/* answered at once; polled each second */
	f->a.lease = 1;
	assert_int_equal(agent_wait_seconds(&f->a), 0);
	/* What goes out. */
	f->a.sync_interval = 10;
	f->a.lease = 15;
	char *text = agent_sync_body(&f->a, agent_wait_seconds(&f->a));
	json_t *body = json_loads(text, 0, NULL);
	assert_int_equal(jint(body, "waitSeconds"), 6);
	json_decref(body);
	free(text);
}

static void agent__past_the_lease_it_starts_nothing_and_fences_reported_lost(void **state)
{
	struct fx *f = *state;
	f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	f->a.request_sent_usec = lease_clock_usec();
	answer(f, "{\"desiredVersion\": \"1\", \"leaseSeconds\": 30, \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	struct replica *a = agent_find(&f->a, "a", 1);
	assert_int_equal(a->state, REPLICA_RUNNING);
	json_decref(sync_report_of(f, "a", NULL));
	answer(f, "{\"desiredVersion\": \"1\"}");

	/* An answer that arrives after its own lease (sent 40 s ago, lease 30). */
	f->a.request_sent_usec = lease_clock_usec() - 40 * SEC;
	answer(f, "{\"desiredVersion\": \"2\", \"leaseSeconds\": 30, \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\"},"
		  "{\"replica\": \"b\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	assert_true(agent_lease_expired(&f->a));
	assert_null(agent_find(&f->a, "b", 1));	/* the server may have moved it already */
	assert_true(agent_tick(&f->a));
	assert_int_equal(a->state, REPLICA_EXITED);
	assert_true(a->fenced);
	assert_null(agent_find(&f->a, "b", 1));
	json_t *rep = sync_report_of(f, "a", NULL);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "LOST");
	assert_int_equal(jint(rep, "exitCode"), 143);
	assert_non_null(strstr(json_string_value(json_object_get(rep, "message")), "fence"));
	json_decref(rep);

	/* Renewed: b starts; the fenced attempt of a never does again. */
	f->a.request_sent_usec = lease_clock_usec();
	answer(f, "{\"desiredVersion\": \"2\"}");
	assert_false(agent_lease_expired(&f->a));
	assert_int_equal(agent_find(&f->a, "b", 1)->state, REPLICA_RUNNING);
	assert_int_equal(a->state, REPLICA_EXITED);
	/* The fence survives an agent restart (saved with the replica). */
	agent_release(&f->a);
	char err[256];
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	assert_true(agent_find(&f->a, "a", 1)->fenced);
	assert_false(agent_find(&f->a, "b", 1)->fenced);
}

static void agent__keep_running_past_the_lease_keeps_replicas_but_starts_nothing(void **state)
{
	struct fx *f = *state;
	f->cfg.fence = false;
	f->a.request_sent_usec = lease_clock_usec();
	answer(f, "{\"desiredVersion\": \"1\", \"leaseSeconds\": 30, \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	f->a.request_sent_usec = lease_clock_usec() - 40 * SEC;
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": ["
		  "{\"replica\": \"a\", \"attempt\": 1, \"desired\": \"RUN\"},"
		  "{\"replica\": \"b\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	agent_tick(&f->a);
	agent_tick(&f->a);
	assert_int_equal(agent_find(&f->a, "a", 1)->state, REPLICA_RUNNING);
	assert_false(agent_find(&f->a, "a", 1)->fenced);
	assert_null(agent_find(&f->a, "b", 1));
}

static void agent__a_restart_keeps_the_deadline_and_never_a_longer_grace(void **state)
{
	struct fx *f = *state;
	char err[256];
	f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	int64_t deadline = lease_clock_usec() + 20 * SEC;
	struct lease old = { deadline, 3, true };	/* written by the last life, grace 3 */
	assert_int_equal(lease_write(f->cfg.lease_file, &old), 0);
	agent_release(&f->a);
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);	/* grace 10 now */
	assert_true(f->a.node_lease.deadline_usec == deadline);
	struct lease l = lease_file_of(f);
	assert_true(l.deadline_usec == deadline);
	assert_int_equal(l.grace_s, 3);		/* the server counts 3 until we register */
	/* A smaller grace applies at once. */
	agent_release(&f->a);
	f->cfg.stop_grace_seconds = 1;
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	assert_int_equal(lease_file_of(f).grace_s, 1);
	/* The register answer: the server now counts ours. */
	f->cfg.stop_grace_seconds = 10;
	agent_lease_renewed(&f->a, lease_clock_usec(), 30);
	assert_int_equal(lease_file_of(f).grace_s, 10);
}

static void agent__one_agent_per_work_dir(void **state)
{
	struct fx *f = *state;
	struct agent other;
	char err[256] = "";
	assert_int_equal(agent_init(&other, &f->cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "another agent"));
	agent_release(&other);
}

/* ---- clusters (PROTOCOL.md, "Identity") ------------------------------ */

#define CLUSTER_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CLUSTER_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char *read_file(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	char buf[256] = "";
	free(path);
	if (!f)
		return NULL;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return xstrdup(buf);
}

static void restart(struct fx *f)
{
	char err[256];
	agent_release(&f->a);
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
}

static void agent__replicas_of_another_cluster_are_left_alone(void **state)
{
	struct fx *f = *state;
	agent_bind_cluster(&f->a, CLUSTER_A);
	char *bound = read_file(f->dir, "cluster");
	assert_string_equal(bound, CLUSTER_A);
	free(bound);
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"1-master-0-00000000000000aa\","
		  " \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	struct replica *r = agent_find(&f->a, "1-master-0-00000000000000aa", 1);
	assert_non_null(r);
	assert_string_equal(r->cluster, CLUSTER_A);
	char *dir = xstrdup(r->dir);

	/* The agent comes back bound to A, and its server turns out to be B. */
	restart(f);
	assert_non_null(agent_find(&f->a, "1-master-0-00000000000000aa", 1));
	json_t *reg = sync_register_body(&f->cfg, f->a.incarnation, NULL, 0);
	sync_register_clusters(reg, f->a.cluster_id, f->a.replicas, f->a.foreign);
	assert_string_equal(json_string_value(json_object_get(reg, "clusterId")), CLUSTER_A);
	assert_int_equal(jint(json_object_get(reg, "replicaClusters"), CLUSTER_A), 1);
	json_decref(reg);
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"1-master-0-00000000000000aa\","
		  " \"attempt\": 1, \"desired\": \"RUN\"}]}");
	agent_bind_cluster(&f->a, CLUSTER_B);
	assert_false(f->a.have_desired);	/* A's set is not B's */
	assert_null(agent_find(&f->a, "1-master-0-00000000000000aa", 1));
	assert_non_null(f->a.foreign);
	bound = read_file(f->dir, "cluster");
	assert_string_equal(bound, CLUSTER_B);
	free(bound);
	/* Not reported to B, not stopped, not forgotten by B's (empty) set. */
	assert_null(sync_report_of(f, "1-master-0-00000000000000aa", NULL));
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": []}");
	agent_tick(&f->a);
	assert_int_equal(f->a.foreign->state, REPLICA_RUNNING);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	/* B's own replica with the same row id starts beside it. */
	answer(f, "{\"desiredVersion\": \"2\", \"replicas\": [{\"replica\": \"1-master-0-00000000000000bb\","
		  " \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	r = agent_find(&f->a, "1-master-0-00000000000000bb", 1);
	assert_non_null(r);
	assert_int_equal(r->state, REPLICA_RUNNING);
	assert_string_equal(r->cluster, CLUSTER_B);
	/* Even B naming A's very id starts nothing over A's replica. */
	answer(f, "{\"desiredVersion\": \"3\", \"replicas\": [{\"replica\": \"1-master-0-00000000000000aa\","
		  " \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	assert_null(agent_find(&f->a, "1-master-0-00000000000000aa", 1));
	assert_int_equal(stat(dir, &st), 0);

	/* A restart bound to B finds A's replica and leaves it aside at once. */
	restart(f);
	assert_null(agent_find(&f->a, "1-master-0-00000000000000aa", 1));
	assert_non_null(f->a.foreign);
	reg = sync_register_body(&f->cfg, f->a.incarnation, NULL, 0);
	sync_register_clusters(reg, f->a.cluster_id, f->a.replicas, f->a.foreign);
	assert_string_equal(json_string_value(json_object_get(reg, "clusterId")), CLUSTER_B);
	assert_int_equal(jint(json_object_get(reg, "replicaClusters"), CLUSTER_A), 1);
	json_decref(reg);

	/* Back to A (say, the node returned): A's replica is adopted again. */
	agent_bind_cluster(&f->a, CLUSTER_A);
	assert_non_null(agent_find(&f->a, "1-master-0-00000000000000aa", 1));
	assert_null(agent_find(&f->a, "1-master-0-00000000000000bb", 1));
	free(dir);
}

static void agent__a_server_without_cluster_ids_changes_nothing(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"old\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	agent_bind_cluster(&f->a, "");
	assert_true(f->a.have_desired);
	struct replica *r = agent_find(&f->a, "old", 1);
	assert_non_null(r);
	assert_null(r->cluster);
	/* The server is upgraded: what ran for no cluster is its own. */
	restart(f);
	agent_bind_cluster(&f->a, CLUSTER_A);
	r = agent_find(&f->a, "old", 1);
	assert_non_null(r);
	assert_string_equal(r->cluster, CLUSTER_A);
	assert_null(f->a.foreign);
}

static void agent__foreign_replicas_removed_when_configured(void **state)
{
	struct fx *f = *state;
	agent_bind_cluster(&f->a, CLUSTER_A);
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"a-run\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\"}]}");
	char *dir = xstrdup(agent_find(&f->a, "a-run", 1)->dir);
	agent_bind_cluster(&f->a, CLUSTER_B);	/* bound to B, A's replica left alone */
	f->cfg.remove_foreign = true;
	restart(f);
	assert_non_null(f->a.foreign);
	agent_tick(&f->a);	/* the server's cluster is not known yet: nothing removed */
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_non_null(f->a.foreign);
	agent_bind_cluster(&f->a, CLUSTER_B);
	agent_tick(&f->a);	/* simulate stops at once; then the files go */
	assert_null(f->a.foreign);
	assert_int_equal(stat(dir, &st), -1);
	free(dir);
}

static void agent__a_folder_not_named_for_its_status_is_not_adopted(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": [{\"replica\": \"6-master-0\", \"attempt\": 1,"
		  " \"desired\": \"RUN\", \"simulate\": \"run-0s-exit-0\"}]}");
	char *from = xstrdup(agent_find(&f->a, "6-master-0", 1)->dir);
	char *to = xasprintf("%s/replicas/6-master-0-00000000000000aa.1", f->dir);
	agent_release(&f->a);
	assert_int_equal(rename(from, to), 0);
	char err[256];
	assert_int_equal(agent_init(&f->a, &f->cfg, err, sizeof(err)), 0);
	assert_null(f->a.replicas);
	assert_null(agent_find(&f->a, "6-master-0", 1));
	struct stat st;
	assert_int_equal(stat(to, &st), 0);	/* left alone */
	free(from);
	free(to);
}

/* Writes text to path, whole. */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/*
 * A trial replica's measurements are read from <its folder>/hypertune/
 * output.metrics, which its trainer (untrusted code) writes. A trainer that
 * replaced the hypertune folder by a symlink (to a host folder, say) is not
 * followed, however valid the file it points to: no measurement goes out,
 * and the agent's log says why.
 */
static void agent__a_trial_metric_folder_made_a_symlink_is_not_followed(void **state)
{
	struct fx *f = *state;
	answer(f, "{\"desiredVersion\": \"1\", \"replicas\": ["
		  "{\"replica\": \"t1\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\","
		  " \"env\": [\"CLOUD_ML_TRIAL_ID=1\", \"CLOUD_ML_HP_METRIC_TAG=score\"]},"
		  "{\"replica\": \"t2\", \"attempt\": 1, \"desired\": \"RUN\", \"simulate\": \"run-100s-exit-0\","
		  " \"env\": [\"CLOUD_ML_TRIAL_ID=2\", \"CLOUD_ML_HP_METRIC_TAG=score\"]}]}");
	struct replica *ok = agent_find(&f->a, "t1", 1), *bad = agent_find(&f->a, "t2", 1);
	assert_non_null(ok);
	assert_non_null(bad);

	/* t1 writes into its own folder, as the trainer should. */
	char *path = replica_path(ok, "hypertune/output.metrics");
	write_text(path, "{\"global_step\": \"1\", \"score\": \"0.5\", \"trial\": \"1\"}\n");
	free(path);

	/* t2's hypertune is a symlink to a folder with a valid metric file of its trial. */
	char *elsewhere = xasprintf("%s/elsewhere", f->dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	path = xasprintf("%s/output.metrics", elsewhere);
	write_text(path, "{\"global_step\": \"1\", \"score\": \"0.25\", \"trial\": \"2\"}\n");
	free(path);
	char *folder = replica_path(bad, "hypertune");
	assert_int_equal(rmdir(folder), 0);
	assert_int_equal(symlink(elsewhere, folder), 0);
	free(folder);

	/* The sync body, the agent's warnings caught. */
	char *log = xasprintf("%s/stderr.log", f->dir);
	int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(saved >= 0 && fd >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
	log_set_level(LOG_WARN);
	json_t *body, *rep1 = NULL, *rep2 = NULL, *rep;
	char *text = agent_sync_body(&f->a, 10);
	log_set_level(LOG_ERROR);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	body = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(body);
	size_t i;
	json_array_foreach(json_object_get(body, "replicas"), i, rep) {
		const char *id = json_string_value(json_object_get(rep, "replica"));
		if (!strcmp(id, "t1"))
			rep1 = rep;
		else if (!strcmp(id, "t2"))
			rep2 = rep;
	}
	assert_non_null(rep1);
	assert_non_null(rep2);
	char *m1 = json_dumps(json_object_get(rep1, "metrics"), JSON_COMPACT);
	assert_non_null(m1);
	assert_string_equal(m1, "[{\"step\":1,\"value\":0.5}]");
	free(m1);
	assert_null(json_object_get(rep2, "metrics"));
	assert_null(bad->metrics);
	json_decref(body);

	char said[4096] = "";
	FILE *in = fopen(log, "r");
	assert_non_null(in);
	size_t n = fread(said, 1, sizeof(said) - 1, in);
	said[n] = 0;
	fclose(in);
	assert_non_null(strstr(said, "replica t2.1: its metric file: "));
	assert_non_null(strstr(said, "hypertune is a symbolic link, not followed"));
	assert_null(strstr(said, "replica t1.1"));
	free(log);
	free(elsewhere);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(register_body__declared_gpus_and_tpu),
		cmocka_unit_test(register_answer__parsed_and_checked),
		cmocka_unit_test(report__states_times_and_logs),
		cmocka_unit_test(answer__the_protocol_example_parses),
		cmocka_unit_test(answer__bad_ones_are_rejected_whole),
		cmocka_unit_test_setup_teardown(agent__reports_carry_seq_and_are_acknowledged, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__an_end_goes_out_with_the_last_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__finished_but_unacknowledged_is_not_forgotten, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__stop_and_absent_replicas_are_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__newer_attempt_replaces_the_older, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__no_desired_set_yet_means_hands_off, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__a_reboot_means_a_new_incarnation, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__one_agent_per_work_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__the_lease_counts_from_the_send_of_the_answered_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__its_long_poll_leaves_room_for_the_next_answer_in_the_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__past_the_lease_it_starts_nothing_and_fences_reported_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__keep_running_past_the_lease_keeps_replicas_but_starts_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__a_restart_keeps_the_deadline_and_never_a_longer_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__replicas_of_another_cluster_are_left_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__a_server_without_cluster_ids_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__foreign_replicas_removed_when_configured, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__a_folder_not_named_for_its_status_is_not_adopted, setup, teardown),
		cmocka_unit_test_setup_teardown(agent__a_trial_metric_folder_made_a_symlink_is_not_followed, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
