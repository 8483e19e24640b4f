/*
 * Unit tests: the process runtime for real (agent/runtime_process.c, agent/shim.c):
 * output capture, exit codes, exact environment, SIGTERM then SIGKILL after
 * the grace period, no orphans, re-adoption across an agent restart, and the
 * supervisor's fence when the lease file's deadline passes (lease.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "fixtures/agent/agent_test.h"
#include "lease.h"
#include "sync_msg.h"

struct fx {
	char *dir;
	struct agent_config cfg;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	test_config(&f->cfg, f->dir, RUNTIME_PROCESS);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	test_rm_rf(f->dir);
	free(f->dir);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

/* Starts a replica running command+args; caller frees. */
static struct replica *start(struct fx *f, const char *id, const char *const *command,
			     const char *const *args, const char *const *env)
{
	struct desired_replica d;
	struct replica *r = replica_new(f->dir, id, 1, RUNTIME_PROCESS);
	test_desired(&d, id, 1, command, args, env);
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

static void forget(struct fx *f, struct replica *r)
{
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void process__captures_both_streams_and_the_exit_code(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", "echo hi; echo err >&2; exit 3", NULL };
	struct replica *r = start(f, "j-worker-0", cmd, NULL, NULL);

	assert_int_equal(r->state, REPLICA_RUNNING);
	assert_true(r->pgid > 0);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 3);
	assert_true(r->end_usec >= r->start_usec);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:hi\n"));
	assert_non_null(strstr(logs, "stderr:err\n"));
	free(logs);
	assert_false(test_group_alive(r->pgid));
	forget(f, r);
}

static void process__gets_exactly_the_given_env_plus_path_and_home(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "env", NULL };
	const char *env[] = { "TF_CONFIG={\"task\":{\"type\":\"worker\"}}", "CUDA_VISIBLE_DEVICES=1,2",
			      NULL };
	setenv("TP_AGENT_TEST_LEAK", "must-not-pass", 1);
	struct replica *r = start(f, "j-env", cmd, NULL, env);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	assert_int_equal(r->exit_code, 0);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:TF_CONFIG={\"task\":{\"type\":\"worker\"}}\n"));
	assert_non_null(strstr(logs, "stdout:CUDA_VISIBLE_DEVICES=1,2\n"));
	assert_non_null(strstr(logs, "stdout:PATH="));
	assert_non_null(strstr(logs, "stdout:HOME="));
	assert_null(strstr(logs, "TP_AGENT_TEST_LEAK"));
	/* Exactly four variables (env itself adds none). */
	int lines = 0;
	for (const char *p = logs; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 4);
	free(logs);
	unsetenv("TP_AGENT_TEST_LEAK");
	forget(f, r);
}

static void process__runs_in_its_own_work_dir_and_maps_gcs_paths(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", "pwd; echo \"$1\"; echo $OUT", NULL };
	const char *args[] = { "x", "--job-dir=gs://bucket/out", NULL };
	const char *env[] = { "OUT=gs://b2/p", NULL };
	f->cfg.storage_root = xstrdup("/srv/gcs/");
	struct replica *r = start(f, "j-dir", cmd, args, env);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	char *logs = test_logs(r), *want = xasprintf("stdout:%s/work\n", r->dir);
	assert_non_null(strstr(logs, want));
	assert_non_null(strstr(logs, "stdout:--job-dir=/srv/gcs/bucket/out\n"));
	assert_non_null(strstr(logs, "stdout:/srv/gcs/b2/p\n"));
	free(want);
	free(logs);
	forget(f, r);
}

static void process__without_command_fails_to_start(void **state)
{
	struct fx *f = *state;
	struct replica *r = start(f, "j-nocmd", NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "needs a command"));
	forget(f, r);
}

static void process__missing_program_fails_to_start_with_the_reason(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "no-such-program-xyz", "--flag", NULL };
	struct replica *r = start(f, "j-noexec", cmd, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "no-such-program-xyz"));
	assert_non_null(strstr(r->message, "No such file"));
	forget(f, r);
}

static void process__stop_sends_sigterm(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "j-sleep", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	assert_true(test_group_alive(pgid));
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	assert_int_equal(r->exit_code, 128 + SIGTERM);
	assert_false(r->killed);
	assert_false(test_group_alive(pgid));
	forget(f, r);
}

static void process__ignoring_sigterm_gets_sigkill_after_grace_and_leaves_no_orphan(void **state)
{
	struct fx *f = *state;
	/* The shell ignores SIGTERM and so do its children (inherited). */
	const char *cmd[] = { "sh", "-c",
			      "trap '' TERM; sleep 1000 & echo started; while :; do sleep 0.05; done",
			      NULL };
	f->cfg.stop_grace_seconds = 1;
	struct replica *r = start(f, "j-stubborn", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	/* (its trap is set once it says started: a loaded machine can take longer) */
	assert_true(test_wait_output(&f->cfg, r, "stdout:started\n", 10000));
	int64_t t0 = now_usec();
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 6000));
	int64_t took = now_usec() - t0;
	assert_int_equal(r->exit_code, 128 + SIGKILL);
	assert_true(r->killed);
	assert_true(took >= 900000);	/* waited the grace period */
	assert_true(took < 4000000);
	assert_false(test_group_alive(pgid));
	forget(f, r);
}

/* Gives the replicas of f a lease file with a deadline ms from now (lease.h). */
static int64_t lease_in(struct fx *f, int ms, int grace_s, bool fence)
{
	struct lease l = { lease_clock_usec() + (int64_t)ms * 1000, grace_s, fence };
	if (!f->cfg.lease_file)
		f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	return l.deadline_usec;
}

static void fence__supervisor_sigkills_a_stubborn_replica_at_deadline_plus_grace(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c",
			      "trap '' TERM; sleep 1000 & echo started; while :; do sleep 0.05; done",
			      NULL };
	/* No agent stops anything here: the supervisor alone acts. The lease
	 * runs out 400 ms after the shell has set its trap (it says started):
	 * on a loaded machine the shell can take longer than that to start. */
	(void)lease_in(f, 60000, 1, true);
	struct replica *r = start(f, "j-fenced", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	assert_true(test_wait_output(&f->cfg, r, "stdout:started\n", 10000));
	int64_t deadline = lease_in(f, 400, 1, true);
	while (test_group_alive(pgid) && lease_clock_usec() < deadline + 5000000)
		test_sleep_ms(10);
	int64_t gone = lease_clock_usec();
	assert_false(test_group_alive(pgid));
	assert_true(gone >= deadline + 1000000);	/* SIGTERM ignored: the grace was given */
	assert_true(gone < deadline + 1800000);		/* and no more */
	char *marker = replica_path(r, "fenced");
	assert_int_equal(access(marker, F_OK), 0);
	free(marker);
	assert_true(test_wait_end(&f->cfg, r, 2000));
	assert_int_equal(r->exit_code, 128 + SIGKILL);
	assert_true(r->fenced);
	assert_non_null(strstr(r->message, "fence"));
	/* Reported LOST: no exit of the program, nothing for its job to end on. */
	r->rep_valid = false;
	json_t *rep = sync_report(r);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "LOST");
	assert_int_equal(json_integer_value(json_object_get(rep, "exitCode")), 137);
	json_decref(rep);
	forget(f, r);
}

static void fence__a_replica_that_honours_sigterm_ends_at_the_deadline(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c",
			      "trap 'echo term; exit 0' TERM; while :; do sleep 0.05; done", NULL };
	int64_t deadline = lease_in(f, 300, 10, true);
	struct replica *r = start(f, "j-polite", cmd, NULL, NULL);
	assert_true(test_wait_end(&f->cfg, r, 3000));
	int64_t took = lease_clock_usec() - deadline;
	assert_true(took >= 0);
	assert_true(took < 1000000);	/* long before the 10 s grace */
	assert_int_equal(r->exit_code, 0);
	assert_true(r->fenced);		/* exit 0 after the fence is still no success */
	r->rep_valid = false;
	json_t *rep = sync_report(r);
	assert_string_equal(json_string_value(json_object_get(rep, "state")), "LOST");
	json_decref(rep);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:term\n"));
	free(logs);
	forget(f, r);
}

static void fence__renewals_and_keep_running_leave_the_replica_alone(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sleep", "1000", NULL };
	lease_in(f, 1000, 0, true);
	struct replica *r = start(f, "j-renewed", cmd, NULL, NULL);
	/* The agent's answered syncs keep moving the deadline, well past the
	 * first one (each renewal has most of a second of slack: a loaded
	 * machine may wake this loop late). */
	for (int i = 0; i < 10; i++) {
		test_sleep_ms(150);
		lease_in(f, 1000, 0, true);
	}
	runtime_poll(&f->cfg, r);
	assert_int_equal(r->state, REPLICA_RUNNING);
	/* keep_running: the deadline passes and nothing happens. */
	lease_in(f, -1000, 0, false);
	test_sleep_ms(1500);
	runtime_poll(&f->cfg, r);
	assert_int_equal(r->state, REPLICA_RUNNING);
	assert_true(test_group_alive(r->pgid));
	/* Back to fence with the deadline long gone: stopped within a second. */
	lease_in(f, -1000, 0, true);
	assert_true(test_wait_end(&f->cfg, r, 3000));
	assert_true(r->fenced);
	forget(f, r);
}

static void fence__a_replica_that_ended_by_itself_is_not_fenced(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", "exit 4", NULL };
	lease_in(f, 500, 0, true);
	struct replica *r = start(f, "j-quick", cmd, NULL, NULL);
	assert_true(test_wait_end(&f->cfg, r, 3000));
	test_sleep_ms(700);	/* past the deadline */
	assert_int_equal(r->exit_code, 4);
	assert_false(r->fenced);
	char *marker = replica_path(r, "fenced");
	assert_int_equal(access(marker, F_OK), -1);
	free(marker);
	forget(f, r);
}

static void process__leftover_children_die_with_the_main_process(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", "sleep 1000 & echo bye; exit 0", NULL };
	struct replica *r = start(f, "j-orphan", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	assert_true(test_wait_end(&f->cfg, r, 5000));
	assert_int_equal(r->exit_code, 0);
	assert_false(test_group_alive(pgid));
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:bye\n"));
	free(logs);
	forget(f, r);
}

/*
 * Two descendants that leave the replica's process group (issue 12): one
 * in a session of its own (setsid), one in a group of its own (setpgid),
 * each writing its pid to a file in the work dir, then sleeping for good.
 */
#define ESCAPEES \
	"setsid sh -c 'echo $$ > setsid.pid.tmp; mv setsid.pid.tmp setsid.pid; exec sleep 1000' & " \
	"perl -e 'setpgrp(0, 0); open(my $f, \">\", \"setpgid.pid.tmp\") or die; " \
	"print $f \"$$\\n\"; close $f; rename(\"setpgid.pid.tmp\", \"setpgid.pid\"); " \
	"exec \"sleep\", \"1000\"' & "
#define ESCAPEES_WRITTEN "while [ ! -s setsid.pid ] || [ ! -s setpgid.pid ]; do sleep 0.02; done; "

struct escapees {
	pid_t pid[2];
	unsigned long long start[2];
};

/* Waits for both escapees' pid files; checks they did leave r's group. */
static void find_escapees(const struct replica *r, struct escapees *e)
{
	const char *files[2] = { "work/setsid.pid", "work/setpgid.pid" };
	for (int i = 0; i < 2; i++) {
		char *path = replica_path(r, files[i]);
		e->pid[i] = test_read_pid_file(path, 5000);
		free(path);
		if (!e->pid[i])
			fail_msg("%s was never written", files[i]);
		e->start[i] = proc_start_ticks(e->pid[i]);
		assert_true(e->start[i] > 0);
		assert_int_not_equal(getpgid(e->pid[i]), r->pgid);
	}
	assert_int_not_equal(getsid(e->pid[0]), getsid(r->pgid));
}

/* Neither escapee is left in /proc, not even as a zombie. */
static void assert_escapees_gone(const struct escapees *e, const char *when)
{
	for (int i = 0; i < 2; i++)
		if (test_proc_present(e->pid[i], e->start[i]))
			fail_msg("%s: the %s descendant (pid %d) is still there", when,
				 i ? "setpgid" : "setsid", (int)e->pid[i]);
}

static void process__stop_ends_descendants_that_left_its_group(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", ESCAPEES "echo started; while :; do sleep 0.05; done",
			      NULL };
	struct escapees e;
	f->cfg.stop_grace_seconds = 1;
	struct replica *r = start(f, "j-escape-stop", cmd, NULL, NULL);
	find_escapees(r, &e);
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 6000));
	assert_int_equal(r->exit_code, 128 + SIGTERM);
	assert_escapees_gone(&e, "after a stop");
	forget(f, r);
}

static void process__descendants_that_left_its_group_end_with_the_main_process(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", ESCAPEES ESCAPEES_WRITTEN "exit 3", NULL };
	struct escapees e;
	struct replica *r = start(f, "j-escape-exit", cmd, NULL, NULL);
	find_escapees(r, &e);
	assert_true(test_wait_end(&f->cfg, r, 6000));
	assert_int_equal(r->exit_code, 3);
	assert_escapees_gone(&e, "after the main process exited");
	forget(f, r);
}

static void fence__ends_descendants_that_left_the_group_by_deadline_plus_grace(void **state)
{
	struct fx *f = *state;
	/* All of them ignore SIGTERM (inherited): only the SIGKILL ends them. */
	const char *cmd[] = { "sh", "-c", "trap '' TERM; " ESCAPEES
			      "while :; do sleep 0.05; done", NULL };
	struct escapees e;
	int64_t deadline = lease_in(f, 1500, 1, true);
	struct replica *r = start(f, "j-escape-fence", cmd, NULL, NULL);
	find_escapees(r, &e);
	while ((test_proc_present(e.pid[0], e.start[0]) || test_proc_present(e.pid[1], e.start[1])) &&
	       lease_clock_usec() < deadline + 6000000)
		test_sleep_ms(10);
	int64_t gone = lease_clock_usec();
	assert_escapees_gone(&e, "after the fence");
	fprintf(stderr, "fence: the lease passed; its descendants outside the group were gone "
		"%.2f s later (grace 1 s)\n", (double)(gone - deadline) / 1e6);
	assert_true(gone >= deadline + 1000000);	/* SIGTERM ignored: the grace was given */
	assert_true(gone < deadline + 1800000);		/* and no more */
	assert_true(test_wait_end(&f->cfg, r, 3000));
	assert_true(r->fenced);
	assert_int_equal(r->exit_code, 128 + SIGKILL);
	forget(f, r);
}

static void process__exit_code_survives_an_agent_restart(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sh", "-c", "echo before; sleep 0.6; echo after; exit 7", NULL };
	struct replica *r = start(f, "j-restart", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	assert_int_equal(r->state, REPLICA_RUNNING);
	/* The agent goes down: its memory is gone, the process is not. */
	replica_free(r);
	r = NULL;
	test_sleep_ms(1200);	/* it ends while no agent watches */
	assert_false(test_group_alive(pgid));

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_non_null(list);
	assert_string_equal(list->id, "j-restart");
	assert_int_equal(list->attempt, 1);
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_int_equal(list->exit_code, 7);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:before\nstdout:after\n"));
	free(logs);
	forget(f, list);
}

static void process__adopted_running_replica_can_be_stopped(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "j-adopt", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	replica_free(r);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_int_equal(list->state, REPLICA_RUNNING);
	assert_int_equal(list->pgid, pgid);
	assert_true(test_group_alive(pgid));
	runtime_stop(&f->cfg, list);
	assert_true(test_wait_end(&f->cfg, list, 5000));
	assert_int_equal(list->exit_code, 128 + SIGTERM);
	assert_false(test_group_alive(pgid));
	forget(f, list);
	/* Forgotten: nothing left to adopt. */
	list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 0);
}

static void process__supervisor_killed_means_exit_status_lost_not_hang(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "j-lost", cmd, NULL, NULL);
	pid_t pgid = r->pgid;
	kill(r->shim_pid, SIGKILL);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 255);
	assert_non_null(strstr(r->message, "exit status lost"));
	test_sleep_ms(50);
	assert_false(test_group_alive(pgid));
	forget(f, r);
}

static void logs__batches_are_capped_and_acknowledged_in_order(void **state)
{
	struct fx *f = *state;
	struct replica *r = replica_new(f->dir, "j-logs", 1, RUNTIME_PROCESS);
	assert_int_equal(replica_mkdir(r), 0);
	char *path = replica_path(r, "output.log");
	FILE *out = fopen(path, "w");
	for (int i = 0; i < 2500; i++)
		fprintf(out, "%lld %c line %d\n", 1700000000000000LL + i, i % 2 ? 'E' : 'O', i);
	fclose(out);

	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 1 << 30), 1000);
	/* Pinned: asking again gives the same batch until it is acknowledged. */
	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 1 << 30), 1000);
	json_t *first = json_array_get(r->batch, 0);
	assert_string_equal(json_string_value(json_object_get(first, "text")), "line 0");
	assert_string_equal(json_string_value(json_object_get(first, "stream")), "stdout");
	assert_string_equal(json_string_value(json_object_get(first, "time")),
			    "2023-11-14T22:13:20Z");
	replica_logs_ack(r);
	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 1 << 30), 1000);
	first = json_array_get(r->batch, 0);
	assert_string_equal(json_string_value(json_object_get(first, "text")), "line 1000");
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->batch, 1),
								  "stream")), "stderr");
	replica_logs_ack(r);
	/* A byte cap: "line 2000".."line 2499" are 9 bytes each. */
	assert_int_equal(replica_logs_pin(r, 1000, 90, 1 << 30), 10);
	replica_logs_ack(r);
	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 1 << 30), 490);
	replica_logs_ack(r);
	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 1 << 30), 0);
	assert_int_equal(replica_logs_pending(r), 0);
	free(path);
	replica_remove_files(r);
	replica_free(r);
}

static void logs__backlog_overflow_keeps_the_newest_and_says_how_many_dropped(void **state)
{
	struct fx *f = *state;
	struct replica *r = replica_new(f->dir, "j-flood", 1, RUNTIME_PROCESS);
	assert_int_equal(replica_mkdir(r), 0);
	char *path = replica_path(r, "output.log");
	FILE *out = fopen(path, "w");
	for (int i = 0; i < 1000; i++)	/* 30 bytes a record */
		fprintf(out, "%lld O line %05d\n", 1700000000000000LL + i, i);
	fclose(out);
	/* Keep at most 300 bytes: the newest 10 records. */
	assert_int_equal(replica_logs_pin(r, 1000, 1 << 20, 300), 11);
	json_t *note = json_array_get(r->batch, 0);
	assert_string_equal(json_string_value(json_object_get(note, "stream")), "stderr");
	assert_non_null(strstr(json_string_value(json_object_get(note, "text")),
			       "990 lines dropped"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(r->batch, 1), "text")),
			    "line 00990");
	replica_logs_ack(r);
	assert_int_equal(replica_logs_pending(r), 0);
	free(path);
	replica_remove_files(r);
	replica_free(r);
}

static void logs__invalid_utf8_is_replaced(void **state)
{
	struct fx *f = *state;
	const char *cmd[] = { "printf", "ok \\377\\376 end\\n", NULL };
	struct replica *r = start(f, "j-utf8", cmd, NULL, NULL);
	assert_true(test_wait_end(&f->cfg, r, 5000));
	char *logs = test_logs(r);
	assert_string_equal(logs, "stdout:ok \xef\xbf\xbd\xef\xbf\xbd end\n");
	free(logs);
	forget(f, r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(process__captures_both_streams_and_the_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(process__gets_exactly_the_given_env_plus_path_and_home, setup, teardown),
		cmocka_unit_test_setup_teardown(process__runs_in_its_own_work_dir_and_maps_gcs_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(process__without_command_fails_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(process__missing_program_fails_to_start_with_the_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(process__stop_sends_sigterm, setup, teardown),
		cmocka_unit_test_setup_teardown(process__ignoring_sigterm_gets_sigkill_after_grace_and_leaves_no_orphan, setup, teardown),
		cmocka_unit_test_setup_teardown(process__leftover_children_die_with_the_main_process, setup, teardown),
		cmocka_unit_test_setup_teardown(process__stop_ends_descendants_that_left_its_group, setup, teardown),
		cmocka_unit_test_setup_teardown(process__descendants_that_left_its_group_end_with_the_main_process, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__ends_descendants_that_left_the_group_by_deadline_plus_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(process__exit_code_survives_an_agent_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(process__adopted_running_replica_can_be_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(process__supervisor_killed_means_exit_status_lost_not_hang, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__supervisor_sigkills_a_stubborn_replica_at_deadline_plus_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__a_replica_that_honours_sigterm_ends_at_the_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__renewals_and_keep_running_leave_the_replica_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__a_replica_that_ended_by_itself_is_not_fenced, setup, teardown),
		cmocka_unit_test_setup_teardown(logs__batches_are_capped_and_acknowledged_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(logs__backlog_overflow_keeps_the_newest_and_says_how_many_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(logs__invalid_utf8_is_replaced, setup, teardown),
	};
	log_set_level(LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
