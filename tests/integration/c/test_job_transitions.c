/* The job state machine in the database (schema/013) against a real
 * PostgreSQL that the test starts: every (from, to, cause) through the
 * entry point tp_job_transition(), every (from, cause) through
 * store_job_transition(), and every (from, to) through a raw UPDATE, each
 * checked against spec/job_state.c's table: exactly the legal ones pass,
 * with what goes with them (times, error message, units, cancel flag,
 * replicas stopped, the restart flag cleared, a new version), and the
 * others change nothing. Then the statements that move jobs (cancel,
 * placement, timeouts, the reconciler) and the start-up check of the
 * database's copy of the table. Self-contained: needs only PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "pg_fixture.h"
#include "pg_sql.h"
#include "common.h"
#include "job_state.h"
#include "metrics.h"
#include "strbuf.h"
#include "store.h"
#include "store_job.h"
#include "store_pg.h"
#include "store_job_state.h"
#include "store_sched.h"

static struct pg_fixture fx;
static struct store *st;		/* fx.st */
static PGconn *db;	/* the test's own connection */
static int next_job;

/* --- jobs in a given state --------------------------------------------------- */

struct job_ref {
	char id[24];		/* row id */
	char job_id[24];	/* ml job id, in project "t" */
};

/*
 * The causes that take a new job from QUEUED to each state, found by a
 * breadth-first walk of the C table (so the test follows the table).
 */
static enum job_cause paths[JOB_STATE_COUNT][JOB_STATE_COUNT];
static int path_len[JOB_STATE_COUNT];

static void find_paths(void)
{
	bool seen[JOB_STATE_COUNT] = { [JOB_QUEUED] = true };
	enum job_state queue[JOB_STATE_COUNT] = { JOB_QUEUED };
	int head = 0, tail = 1;

	while (head < tail) {
		enum job_state s = queue[head++];
		for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++) {
			enum job_state to = job_state_after(s, c);
			if (c == JOB_CAUSE_CANCEL_TRIALS)
				continue;	/* a study's, with trials: not the way a job goes */
			if (to == JOB_STATE_UNSPECIFIED || seen[to])
				continue;
			seen[to] = true;
			memcpy(paths[to], paths[s], sizeof(paths[s]));
			paths[to][path_len[s]] = c;
			path_len[to] = path_len[s] + 1;
			queue[tail++] = to;
		}
	}
	for (unsigned s = JOB_QUEUED; s < JOB_STATE_COUNT; s++)
		assert_true(seen[s]);
}

/* A replica of the job, on node n1, running for an hour: 8 vCPUs and one
 * GPU make 2 ML units an hour. (Created PENDING, then RUNNING: the replica
 * state machine's create and run edges, schema/030.) */
static void add_replica(const char *id)
{
	pg_exec1(db, "INSERT INTO replicas (job, uid, role, idx, node, spec, vcpus, accel_count, "
	      " start_time) VALUES ($1::int8, 'u-' || $1, 'master', 0, 'n1', '{}', 8, 1, "
	      " now() - interval '1 hour')", id);
	pg_exec1(db, "UPDATE replicas SET state = 'RUNNING' WHERE uid = 'u-' || $1", id);
}

/* A new ml job in project "t", taken to s through the entry point; a job
 * that was placed has its replica. */
static struct job_ref job_in(enum job_state s)
{
	struct job_ref j;
	char *id;

	snprintf(j.job_id, sizeof(j.job_id), "j%d", ++next_job);
	id = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) "
		  "VALUES ('ml', 't', $1, 'r', '{}', 'QUEUED') RETURNING id", j.job_id);
	snprintf(j.id, sizeof(j.id), "%s", id);
	free(id);
	for (int i = 0; i < path_len[s]; i++) {
		const char *p[] = { j.id, job_cause_name(paths[s][i]) };
		char *n = pg_sqlv(db, "SELECT count(*) FROM tp_job_transition($1::int8, NULL, $2)", NULL, 2, p);
		assert_string_equal(n, "1");
		free(n);
		if (paths[s][i] == JOB_CAUSE_PLACE)
			add_replica(j.id);
	}
	char *now = pg_sql1(db, "SELECT state FROM jobs WHERE id = $1::int8", j.id);
	assert_string_equal(now, job_state_name(s));
	free(now);
	/* A gang restart in progress, for the restart flag to be cleared. */
	if (s == JOB_PREPARING || s == JOB_RUNNING)
		pg_exec1(db, "UPDATE jobs SET restarting = true WHERE id = $1::int8", j.id);
	return j;
}

/* Everything about a job the machine may change, and its replica. */
struct snap {
	char state[16], error_message[160], start[40], end[40], output[128], replica_start[40];
	char replica_state[24];
	long long version;
	bool cancel_requested, restarting;
	char desired[8];
};

static void snap_of(const struct job_ref *j, struct snap *s)
{
	const char *p[] = { j->id };
	PGresult *r = PQexecParams(db,
				   "SELECT j.state, j.error_message, coalesce(j.start_time::text, ''), "
				   "coalesce(j.end_time::text, ''), j.output::text, j.version, "
				   "j.cancel_requested, j.restarting, "
				   "coalesce(p.desired, ''), coalesce(p.start_time::text, ''), "
				   "coalesce(p.state, '') FROM jobs j "
				   "LEFT JOIN replicas p ON p.job = j.id AND p.role = 'master' "
				   "WHERE j.id = $1::int8",
				   1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		fail_msg("job %s: %s", j->id, PQresultErrorMessage(r));
	memset(s, 0, sizeof(*s));
	snprintf(s->state, sizeof(s->state), "%s", PQgetvalue(r, 0, 0));
	snprintf(s->error_message, sizeof(s->error_message), "%s", PQgetvalue(r, 0, 1));
	snprintf(s->start, sizeof(s->start), "%s", PQgetvalue(r, 0, 2));
	snprintf(s->end, sizeof(s->end), "%s", PQgetvalue(r, 0, 3));
	snprintf(s->output, sizeof(s->output), "%s", PQgetvalue(r, 0, 4));
	s->version = atoll(PQgetvalue(r, 0, 5));
	s->cancel_requested = PQgetvalue(r, 0, 6)[0] == 't';
	s->restarting = PQgetvalue(r, 0, 7)[0] == 't';
	snprintf(s->desired, sizeof(s->desired), "%s", PQgetvalue(r, 0, 8));
	snprintf(s->replica_start, sizeof(s->replica_start), "%s", PQgetvalue(r, 0, 9));
	snprintf(s->replica_state, sizeof(s->replica_state), "%s", PQgetvalue(r, 0, 10));
	PQclear(r);
}

static void assert_unchanged(const struct snap *a, const struct snap *b, const char *what)
{
	if (strcmp(a->state, b->state) || strcmp(a->error_message, b->error_message) ||
	    strcmp(a->start, b->start) || strcmp(a->end, b->end) || strcmp(a->output, b->output) ||
	    a->version != b->version || a->cancel_requested != b->cancel_requested ||
	    a->restarting != b->restarting || strcmp(a->desired, b->desired))
		fail_msg("%s: refused, yet the job changed", what);
}

/* The consumedMLUnits of output, or -1 when it has none. */
static double units_of(const char *output)
{
	json_t *o = json_loads(output, 0, NULL);
	json_t *u = json_object_get(o, "consumedMLUnits");
	double v = u ? json_number_value(u) : -1;
	json_decref(o);
	return v;
}

/*
 * What a legal transition from `from` to `to` did (a before, b after);
 * message: the message it was given (NULL: none).
 */
static void assert_effects(enum job_state from, enum job_state to, const struct snap *a,
			   const struct snap *b, const char *message, const char *what)
{
	if (strcmp(b->state, job_state_name(to)))
		fail_msg("%s: in %s", what, b->state);
	if (b->version == a->version)
		fail_msg("%s: same version (etag) after a transition", what);
	if (b->restarting)
		fail_msg("%s: still restarting", what);
	assert_string_equal(b->error_message, message ? message : a->error_message);
	if (job_state_final(to)) {
		if (!*b->end)
			fail_msg("%s: no end_time", what);
		double units = units_of(b->output);
		if (from == JOB_QUEUED) {
			/* never placed: nothing ran, nothing to stop */
			assert_string_equal(b->output, a->output);
			assert_string_equal(b->desired, "");
		} else {
			if (units < 1.99 || units > 2.05)
				fail_msg("%s: consumedMLUnits %g in %s, want 2 (1 h x (8/8 + 1))",
					 what, units, b->output);
			/* CANCELLED is reached once nothing runs: every replica
			 * DONE; the others stop theirs (one that is over is DONE) */
			bool over = !strcmp(b->replica_state, "EXITED") ||
				    !strcmp(b->replica_state, "FAILED_TO_START") ||
				    !strcmp(b->replica_state, "LOST");
			assert_string_equal(b->desired, to == JOB_CANCELLED ? "DONE"
							: strcmp(a->desired, "RUN") ? a->desired
							: over ? "DONE" : "STOP");
		}
	} else {
		assert_string_equal(b->end, "");
		assert_string_equal(b->output, a->output);
		assert_string_equal(b->desired, a->desired);
	}
	if (to == JOB_RUNNING && from != JOB_RUNNING) {
		if (!*b->start)
			fail_msg("%s: no start_time", what);
	} else if (to == JOB_SUCCEEDED && !*a->start) {
		assert_string_equal(b->start, b->replica_start);	/* its primary's start */
	} else {
		assert_string_equal(b->start, a->start);	/* the first start stays */
	}
	bool cancelled = to == JOB_CANCELLING || to == JOB_CANCELLED;
	assert_int_equal(b->cancel_requested, cancelled || a->cancel_requested);
}

/* --- every edge ------------------------------------------------------------ */

/* Some job in some state takes cause to `to` (create takes none: no job is before it). */
static bool cause_reaches(enum job_state to, enum job_cause cause)
{
	for (size_t i = 0; i < job_state_edge_count; i++)
		if (job_state_edges[i].to == to && job_state_edges[i].cause == cause &&
		    job_state_edges[i].from != JOB_STATE_UNSPECIFIED)
			return true;
	return false;
}

static void every_state_cause_and_target_through_the_entry_point(void **state)
{
	int moved = 0, refused = 0, errors = 0;
	(void)state;

	for (unsigned from = JOB_QUEUED; from < JOB_STATE_COUNT; from++) {
		for (unsigned to = JOB_QUEUED; to < JOB_STATE_COUNT; to++) {
			for (unsigned c = 0; c < JOB_CAUSE_COUNT; c++) {
				struct job_ref j = job_in(from);
				struct snap a, b;
				char what[128], message[32], sqlstate[6];
				snprintf(what, sizeof(what), "%s -> %s (%s)", job_state_name(from),
					 job_state_name(to), job_cause_name(c));
				snprintf(message, sizeof(message), "message %d", next_job);
				const char *p[] = { j.id, job_state_name(to), job_cause_name(c),
						    message };
				snap_of(&j, &a);
				char *n = pg_sqlv(db, "SELECT count(*) FROM tp_job_transition($1::int8, $2, "
					       "$3, $4)", sqlstate, 4, p);
				snap_of(&j, &b);
				if (job_state_after(from, c) == to) {
					if (!n || strcmp(n, "1"))
						fail_msg("%s: refused (%s)", what, n ? n : sqlstate);
					assert_effects(from, to, &a, &b, message, what);
					moved++;
				} else if (cause_reaches(to, c)) {
					/* a legal transition elsewhere: not from here */
					if (!n || strcmp(n, "0"))
						fail_msg("%s: %s, want no row", what, n ? n : sqlstate);
					assert_unchanged(&a, &b, what);
					refused++;
				} else {
					/* leads there from nowhere: the caller's bug */
					if (n)
						fail_msg("%s: %s rows, want an error", what, n);
					assert_string_equal(sqlstate, "22023");
					assert_unchanged(&a, &b, what);
					errors++;
				}
				free(n);
			}
		}
	}
	/* every edge but create, once each */
	assert_int_equal(moved, job_state_edge_count - 1);
	assert_int_equal(moved + refused + errors, 7 * 7 * JOB_CAUSE_COUNT);
}

static void every_state_and_cause_through_store_job_transition(void **state)
{
	(void)state;
	for (unsigned from = JOB_QUEUED; from < JOB_STATE_COUNT; from++) {
		/* create once: the same error from every state */
		for (unsigned c = from == JOB_QUEUED ? 0 : 1; c < JOB_CAUSE_COUNT; c++) {
			struct job_ref j = job_in(from);
			struct job_key key = { "ml", "t", j.job_id };
			struct job_rows *rows = NULL;
			struct job got;
			struct snap a, b;
			char what[96];
			snprintf(what, sizeof(what), "%s + %s", job_state_name(from), job_cause_name(c));
			snap_of(&j, &a);
			enum job_state want = job_state_after(from, c);
			enum store_rc rc = store_job_transition(st, &key, JOB_STATE_UNSPECIFIED, c,
								c == JOB_CAUSE_RUN ? NULL : "why",
								&rows);
			snap_of(&j, &b);
			if (c == JOB_CAUSE_CREATE) {
				/* create leads only from no job: an error, whatever the job */
				assert_int_equal(rc, STORE_ERROR);
				assert_null(rows);
				assert_unchanged(&a, &b, what);
				continue;
			}
			if (rc != STORE_OK && rc != STORE_STALE)
				fail_msg("%s: %s", what, store_rc_name(rc));
			assert_int_equal(job_rows_count(rows), 1);
			job_rows_get(rows, 0, &got);
			if (want != JOB_STATE_UNSPECIFIED) {
				if (rc != STORE_OK)
					fail_msg("%s: %s", what, store_rc_name(rc));
				assert_int_equal(got.state, want);
				assert_effects(from, want, &a, &b, c == JOB_CAUSE_RUN ? NULL : "why",
					       what);
				assert_int_equal(got.version, b.version);
			} else {
				if (rc != STORE_STALE)
					fail_msg("%s: %s, want STORE_STALE", what, store_rc_name(rc));
				assert_int_equal(got.state, from);	/* as it is */
				assert_unchanged(&a, &b, what);
			}
			job_rows_free(rows);
		}
	}
	/* a named target must be the cause's */
	struct job_ref j = job_in(JOB_RUNNING);
	struct job_key key = { "ml", "t", j.job_id }, absent = { "ml", "t", "absent" };
	struct job_rows *rows = NULL;
	assert_int_equal(store_job_transition(st, &key, JOB_FAILED, JOB_CAUSE_RUN, NULL, &rows),
			 STORE_ERROR);
	assert_null(rows);
	assert_int_equal(store_job_transition(st, &key, JOB_FAILED, JOB_CAUSE_TIMEOUT, "late",
					      &rows), STORE_OK);
	job_rows_free(rows);
	assert_int_equal(store_job_transition(st, &absent, JOB_STATE_UNSPECIFIED,
					      JOB_CAUSE_CANCEL, NULL, &rows), STORE_NOT_FOUND);
	assert_null(rows);
}

static void every_pair_through_a_raw_update_and_insert(void **state)
{
	int passed = 0;
	(void)state;

	for (unsigned from = JOB_QUEUED; from < JOB_STATE_COUNT; from++) {
		for (unsigned to = JOB_QUEUED; to < JOB_STATE_COUNT; to++) {
			struct job_ref j = job_in(from);
			struct snap a, b;
			char what[64], sqlstate[6];
			snprintf(what, sizeof(what), "UPDATE %s -> %s", job_state_name(from),
				 job_state_name(to));
			const char *p[] = { j.id, job_state_name(to) };
			snap_of(&j, &a);
			char *ok = pg_sqlv(db, "UPDATE jobs SET state = $2 WHERE id = $1::int8", sqlstate, 2, p);
			snap_of(&j, &b);
			if (job_state_edge_allowed(from, to)) {
				if (!ok)
					fail_msg("%s: refused (%s)", what, sqlstate);
				assert_effects(from, to, &a, &b, NULL, what);
				passed++;
			} else {
				if (ok)
					fail_msg("%s: allowed", what);
				assert_string_equal(sqlstate, "23514");	/* check_violation */
				assert_unchanged(&a, &b, what);
			}
			free(ok);
		}
	}
	/* the (from, to) pairs of the table, create's aside */
	int pairs = 0;
	for (unsigned from = JOB_QUEUED; from < JOB_STATE_COUNT; from++)
		for (unsigned to = JOB_QUEUED; to < JOB_STATE_COUNT; to++)
			pairs += job_state_edge_allowed(from, to);
	assert_int_equal(passed, pairs);

	/* A job is created QUEUED, or not at all. */
	for (unsigned s = JOB_QUEUED; s < JOB_STATE_COUNT; s++) {
		char sqlstate[6], job_id[24];
		snprintf(job_id, sizeof(job_id), "new%u", s);
		const char *p[] = { job_id, job_state_name(s) };
		char *ok = pg_sqlv(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) "
				"VALUES ('ml', 't', $1, 'r', '{}', $2)", sqlstate, 2, p);
		if (job_state_edge_allowed(JOB_STATE_UNSPECIFIED, s))
			assert_non_null(ok);
		else if (ok)
			fail_msg("a job was created %s", job_state_name(s));
		else
			assert_string_equal(sqlstate, "23514");
		free(ok);
	}
}

/* --- the statements that move jobs ---------------------------------------- */

static void cancel_takes_the_cancel_edge_or_changes_nothing(void **state)
{
	static const struct {
		enum job_state from, to;
		bool changed;
	} cases[] = {
		{ JOB_QUEUED, JOB_CANCELLED, true },	  { JOB_PREPARING, JOB_CANCELLING, true },
		{ JOB_RUNNING, JOB_CANCELLING, true },	  { JOB_CANCELLING, JOB_CANCELLING, false },
		{ JOB_SUCCEEDED, JOB_SUCCEEDED, false }, { JOB_FAILED, JOB_FAILED, false },
		{ JOB_CANCELLED, JOB_CANCELLED, false },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct job_ref j = job_in(cases[i].from);
		struct job_key key = { "ml", "t", j.job_id };
		struct job_rows *rows = NULL;
		struct job got;
		struct snap a, b;
		bool changed;
		snap_of(&j, &a);
		assert_int_equal(store_job_cancel(st, &key, "stop it", &changed, &rows), STORE_OK);
		snap_of(&j, &b);
		job_rows_get(rows, 0, &got);
		assert_int_equal(got.state, cases[i].to);
		assert_int_equal(changed, cases[i].changed);
		if (changed)
			assert_effects(cases[i].from, cases[i].to, &a, &b, "stop it", "cancel");
		else
			assert_unchanged(&a, &b, "cancel");
		job_rows_free(rows);
	}
}

/*
 * A tuning study is QUEUED until its study pass sees a trial placed: a
 * cancel meanwhile takes cancel_trials to CANCELLING, its trials are
 * cancelled, and the study pass ends it. A study whose trials all wait
 * unplaced is CANCELLED at once, with them.
 */
static void a_queued_study_with_trials_is_cancelling_until_they_stop(void **state)
{
	(void)state;
	char *study = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) VALUES "
			      "('ml', 't', $1, 'r', '{\"hyperparameters\": {}}', 'QUEUED') RETURNING id",
			      "study_q");
	char *trial = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state, parent, "
			      "trial) VALUES ('ml', 't', 'study_q_1', 'r', '{}', 'QUEUED', $1::int8, 1) "
			      "RETURNING id", study);
	pg_exec1(db, "SELECT tp_job_transition(ARRAY[$1::int8], 'PREPARING', 'place')", trial);
	struct job_key key = { "ml", "t", "study_q" };
	struct job_rows *rows = NULL;
	struct job got;
	bool changed;
	assert_int_equal(store_job_cancel(st, &key, NULL, &changed, &rows), STORE_OK);
	job_rows_get(rows, 0, &got);
	assert_true(changed);
	assert_int_equal(got.state, JOB_CANCELLING);
	job_rows_free(rows);
	char *t = pg_sql1(db, "SELECT state FROM jobs WHERE id = $1::int8", trial);
	assert_string_equal(t, "CANCELLING");	/* schema/017's cascade */
	free(t);
	t = pg_sql1(db, "SELECT string_agg(text, ' | ' ORDER BY id) FROM log_entries "
		    "WHERE job = $1::int8 AND task = 'service' AND trial IS NULL", study);
	assert_string_equal(t, "Job cancellation requested: stopping its trials.");
	free(t);
	free(trial);
	free(study);

	/* its trials all wait unplaced: nothing runs, all CANCELLED at once */
	study = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) VALUES "
			"('ml', 't', $1, 'r', '{\"hyperparameters\": {}}', 'QUEUED') RETURNING id",
			"study_e");
	trial = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state, parent, "
			"trial) VALUES ('ml', 't', 'study_e_1', 'r', '{}', 'QUEUED', $1::int8, 1) "
			"RETURNING id", study);
	key.job_id = "study_e";
	assert_int_equal(store_job_cancel(st, &key, NULL, &changed, &rows), STORE_OK);
	job_rows_get(rows, 0, &got);
	assert_int_equal(got.state, JOB_CANCELLED);
	job_rows_free(rows);
	t = pg_sql1(db, "SELECT state FROM jobs WHERE id = $1::int8", trial);
	assert_string_equal(t, "CANCELLED");
	free(t);
	free(trial);
	free(study);
}

struct racing_cancel {
	struct job_key key;
	enum store_rc rc;
	bool changed;
	enum job_state seen;
};

static void *cancel_now(void *arg)
{
	struct racing_cancel *r = arg;
	struct job_rows *rows = NULL;
	struct job j;

	r->rc = store_job_cancel(st, &r->key, "second", &r->changed, &rows);
	if (r->rc == STORE_OK) {
		job_rows_get(rows, 0, &j);
		r->seen = j.state;
	}
	job_rows_free(rows);
	return NULL;
}

/* Two cancels at once: the one that waited for the other's row lock does
 * not move the job, and answers with the job as the first left it. */
static void a_cancel_that_loses_a_race_sees_the_winner(void **state)
{
	struct job_ref j = job_in(JOB_RUNNING);
	struct racing_cancel r = { { "ml", "t", NULL }, STORE_ERROR, true, JOB_STATE_UNSPECIFIED };
	pthread_t t;
	(void)state;

	r.key.job_id = j.job_id;
	/* the first cancel, on a connection of its own, holds the row */
	PGconn *first = PQconnectdb(fx.conninfo);
	const char *p[] = { j.id };
	PQclear(PQexec(first, "BEGIN"));
	PGresult *res = PQexecParams(first, "SELECT count(*) FROM tp_job_transition($1::int8, NULL, "
				     "'cancel', 'first')", 1, NULL, p, NULL, NULL, 0);
	bool moved = PQresultStatus(res) == PGRES_TUPLES_OK && !strcmp(PQgetvalue(res, 0, 0), "1");
	PQclear(res);
	assert_int_equal(pthread_create(&t, NULL, cancel_now, &r), 0);
	/* until the second cancel waits for the row (or 30 s) */
	bool waited = false;
	for (int i = 0; !waited && i < 3000; i++) {
		char *n = pg_sql1(db, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
			       "AND query LIKE '%tp_job_transition%' AND pid <> pg_backend_pid()", NULL);
		waited = atoi(n) > 0;
		free(n);
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	PQclear(PQexec(first, "COMMIT"));
	PQfinish(first);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(moved);
	if (!waited)
		fail_msg("the second cancel never waited for the first");
	assert_int_equal(r.rc, STORE_OK);
	assert_false(r.changed);
	assert_int_equal(r.seen, JOB_CANCELLING);
	char *m = pg_sql1(db, "SELECT error_message FROM jobs WHERE id = $1::int8", j.id);
	assert_string_equal(m, "first");
	free(m);
}

static void placement_skips_a_job_cancelled_meanwhile(void **state)
{
	struct job_ref queued = job_in(JOB_QUEUED), gone = job_in(JOB_QUEUED);
	struct job_key key = { "ml", "t", gone.job_id };
	struct job_rows *rows = NULL;
	bool changed;
	int placed = -1;
	(void)state;

	assert_int_equal(store_job_cancel(st, &key, "no", &changed, &rows), STORE_OK);
	job_rows_free(rows);
	char *text = xasprintf("[{\"job\": %s, \"replicas\": [{\"uid\": \"p-%s\", \"role\": "
			       "\"master\", \"idx\": 0, \"node\": \"n1\", \"gpus\": [0], "
			       "\"port\": 20001, \"spec\": {}, \"vcpus\": 4, \"memory_mb\": 1, "
			       "\"accel_type\": null, \"accel_count\": 0, \"tpu\": false}]}, "
			       "{\"job\": %s, \"replicas\": [{\"uid\": \"p-%s\", \"role\": "
			       "\"master\", \"idx\": 0, \"node\": \"n1\", \"gpus\": [], "
			       "\"port\": 20002, \"spec\": {}, \"vcpus\": 4, \"memory_mb\": 1, "
			       "\"accel_type\": null, \"accel_count\": 0, \"tpu\": false}]}]",
			       queued.id, queued.id, gone.id, gone.id);
	json_t *batch = json_loads(text, 0, NULL);
	struct store_conn *c = store_acquire(st);
	assert_int_equal(store_sched_commit_jobs(c, batch, &placed), STORE_OK);
	store_release(st, c);
	assert_int_equal(placed, 1);
	const char *ids[] = { queued.id, gone.id };
	char *s = pg_sqlv(db, "SELECT string_agg(j.state || ':' || (SELECT count(*) FROM replicas p "
		       "WHERE p.job = j.id), ' ' ORDER BY j.id) FROM jobs j "
		       "WHERE j.id IN ($1::int8, $2::int8)", NULL, 2, ids);
	assert_string_equal(s, "PREPARING:1 CANCELLED:0");
	free(s);
	free(text);
	json_decref(batch);
}

/* The fix of issue 17's state machine: a job that timed out after running
 * reports what it consumed, as any other final job does. */
static void a_running_job_that_times_out_fails_with_its_units(void **state)
{
	struct job_ref j = job_in(JOB_RUNNING), w = job_in(JOB_QUEUED);
	struct store_conn *c = store_acquire(st);
	int lost, restarted;
	(void)state;

	pg_exec1(db, "UPDATE jobs SET spec = '{\"scheduling\": {\"maxRunningTime\": \"60s\"}}', "
	      "start_time = now() - interval '1 hour' WHERE id = $1::int8", j.id);
	pg_exec1(db, "UPDATE jobs SET spec = '{\"scheduling\": {\"maxWaitTime\": \"1s\"}}', "
	      "create_time = now() - interval '1 minute' WHERE id = $1::int8", w.id);
	assert_int_equal(store_sched_housekeeping(c, 30, &lost, &restarted), STORE_OK);
	store_release(st, c);

	struct snap s;
	snap_of(&j, &s);
	assert_string_equal(s.state, "FAILED");
	assert_string_equal(s.error_message, "Job exceeded the maximum running time "
			    "(scheduling.max_running_time) of 60s.");
	assert_true(*s.end);
	assert_true(units_of(s.output) >= 1.99 && units_of(s.output) <= 2.05);
	assert_string_equal(s.desired, "STOP");
	snap_of(&w, &s);
	assert_string_equal(s.state, "FAILED");
	assert_string_equal(s.error_message, "Job did not start running within the maximum wait "
			    "time (scheduling.max_wait_time) of 1s.");
	assert_string_equal(s.output, "{}");	/* never placed */
}

/* tp_reconcile_job decides from the replicas and moves through the entry point. */
static void the_reconciler_moves_jobs_through_the_entry_point(void **state)
{
	static const struct {
		enum job_state from;
		const char *replica;	/* SET clause of the replica */
		const char *api_spec;	/* jobs.api, jobs.spec */
		const char *want_state, *want_message;
	} cases[] = {
		{ JOB_PREPARING, "state = 'RUNNING'", NULL, "RUNNING", "" },
		{ JOB_RUNNING, "state = 'EXITED', exit_code = 0, end_time = now()", NULL,
		  "SUCCEEDED", "" },
		{ JOB_PREPARING, "state = 'EXITED', exit_code = 0, end_time = now()", NULL,
		  "SUCCEEDED", "" },
		{ JOB_RUNNING, "state = 'EXITED', exit_code = 3, end_time = now()", NULL, "FAILED",
		  "The replica master 0 exited with a non-zero status of 3." },
		{ JOB_PREPARING, "state = 'FAILED_TO_START', message = 'no image', end_time = now()",
		  NULL, "FAILED", "The replica master 0 could not be started: no image" },
		{ JOB_RUNNING, "state = 'LOST', end_time = now()",
		  "{\"jobSpec\": {\"scheduling\": {\"disableRetries\": true}}}", "FAILED",
		  "The replica workerpool0-0 was lost: its node n1 stopped reporting or restarted, "
		  "and scheduling.disableRetries is set." },
		{ JOB_CANCELLING, "state = 'EXITED', exit_code = 143, end_time = now()", NULL,
		  "CANCELLED", "" },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct job_ref j = job_in(cases[i].from);
		struct snap a, b;
		pg_exec1(db, "UPDATE jobs SET restarting = false WHERE id = $1::int8", j.id);
		if (cases[i].api_spec) {
			const char *p[] = { j.id, cases[i].api_spec };
			free(pg_sqlv(db, "UPDATE jobs SET api = 'vertex', spec = $2::jsonb WHERE id = $1::int8",
				  NULL, 2, p));
		}
		char *set = xasprintf("UPDATE replicas SET %s WHERE job = $1::int8", cases[i].replica);
		pg_exec1(db, set, j.id);
		free(set);
		snap_of(&j, &a);
		char *got = pg_sql1(db, "SELECT tp_reconcile_job($1::int8)", j.id);
		snap_of(&j, &b);
		assert_string_equal(got, cases[i].want_state);
		assert_string_equal(b.state, cases[i].want_state);
		assert_effects(cases[i].from, job_state_parse(b.state), &a, &b,
			       *cases[i].want_message ? cases[i].want_message : NULL,
			       cases[i].want_state);
		free(got);
	}
}

/* restartJobOnWorkerRestart: a lost replica stops the gang; once none runs,
 * the job takes the restart edge (a new version, the flag cleared) and
 * every replica starts a new attempt. */
static void a_gang_restart_ends_on_the_restart_edge(void **state)
{
	struct job_ref j = job_in(JOB_RUNNING);
	struct snap a, b;
	(void)state;

	pg_exec1(db, "UPDATE jobs SET restarting = false, api = 'vertex', spec = '{\"jobSpec\": "
	      "{\"scheduling\": {\"restartJobOnWorkerRestart\": true}}}' WHERE id = $1::int8", j.id);
	pg_exec1(db, "INSERT INTO replicas (job, uid, role, idx, node, spec, start_time) "
	      "VALUES ($1::int8, 'w-' || $1, 'worker', 0, 'n1', '{}', now())", j.id);
	pg_exec1(db, "UPDATE replicas SET state = 'LOST' WHERE uid = 'w-' || $1", j.id);
	char *got = pg_sql1(db, "SELECT tp_reconcile_job($1::int8)", j.id);
	assert_string_equal(got, "RUNNING");
	free(got);
	snap_of(&j, &a);
	assert_true(a.restarting);
	got = pg_sql1(db, "SELECT string_agg(role || ':' || desired, ' ' ORDER BY role) FROM replicas "
		   "WHERE job = $1::int8", j.id);
	assert_string_equal(got, "master:STOP worker:RUN");
	free(got);
	/* the master stopped: the gang restarts */
	pg_exec1(db, "UPDATE replicas SET state = 'EXITED', exit_code = 143 WHERE job = $1::int8 "
	      "AND role = 'master'", j.id);
	got = pg_sql1(db, "SELECT tp_reconcile_job($1::int8)", j.id);
	assert_string_equal(got, "RUNNING");
	free(got);
	snap_of(&j, &b);
	assert_false(b.restarting);
	assert_true(b.version != a.version);
	assert_string_equal(b.state, "RUNNING");
	assert_string_equal(b.start, a.start);
	got = pg_sql1(db, "SELECT string_agg(role || ':' || state || ':' || desired || ':' || attempt, ' ' "
		   "ORDER BY role) FROM replicas WHERE job = $1::int8", j.id);
	assert_string_equal(got, "master:PENDING:RUN:2 worker:PENDING:RUN:2");
	free(got);
}

/* A lost replica of a job being cancelled is not restarted: CANCELLING has
 * no restart edge. */
static void lost_replicas_restart_only_where_the_machine_allows(void **state)
{
	struct job_ref run = job_in(JOB_RUNNING), cancelling = job_in(JOB_CANCELLING);
	struct store_conn *c = store_acquire(st);
	int lost, restarted;
	(void)state;

	pg_exec1(db, "UPDATE jobs SET restarting = false WHERE id = $1::int8", run.id);
	pg_exec1(db, "UPDATE replicas SET state = 'LOST' WHERE job = $1::int8", run.id);
	pg_exec1(db, "UPDATE replicas SET state = 'LOST' WHERE job = $1::int8", cancelling.id);
	char *v = pg_sql1(db, "SELECT version FROM jobs WHERE id = $1::int8", run.id);
	long long before = atoll(v);
	free(v);
	assert_int_equal(store_sched_housekeeping(c, 30, &lost, &restarted), STORE_OK);
	store_release(st, c);
	char *got = pg_sql1(db, "SELECT state || ':' || attempt FROM replicas WHERE job = $1::int8", run.id);
	assert_string_equal(got, "PENDING:2");
	free(got);
	got = pg_sql1(db, "SELECT state || ':' || attempt || ':' || desired FROM replicas "
		   "WHERE job = $1::int8", cancelling.id);
	assert_string_equal(got, "LOST:1:DONE");	/* stopped, and then cancelled */
	free(got);
	got = pg_sql1(db, "SELECT state FROM jobs WHERE id = $1::int8", cancelling.id);
	assert_string_equal(got, "CANCELLED");
	free(got);
	v = pg_sql1(db, "SELECT version FROM jobs WHERE id = $1::int8", run.id);
	assert_true(atoll(v) != before);	/* the restart edge was taken */
	free(v);
}

/* --- the database's copy of the table --------------------------------------- */

static void a_server_refuses_a_database_whose_machine_differs(void **state)
{
	char err[256];
	(void)state;

	assert_int_equal(store_job_state_check(db, err, sizeof(err)), 0);
	pg_exec1(db, "DELETE FROM job_state_edges WHERE from_state = 'RUNNING' AND cause = 'restart'", NULL);
	assert_int_equal(store_job_state_check(db, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "job_state_edges"));
	pg_exec1(db, "INSERT INTO job_state_edges VALUES ('RUNNING', 'restart', 'RUNNING'), "
	      "('SUCCEEDED', 'restart', 'RUNNING')", NULL);
	assert_int_equal(store_job_state_check(db, err, sizeof(err)), -1);
	pg_exec1(db, "UPDATE job_state_edges SET to_state = 'FAILED' WHERE from_state = 'SUCCEEDED'", NULL);
	assert_int_equal(store_job_state_check(db, err, sizeof(err)), -1);
	/* the statement it logs for a migration makes them equal again */
	char *fix = store_job_state_edges_sql();
	PGresult *r = PQexec(db, fix);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	free(fix);
	assert_int_equal(store_job_state_check(db, err, sizeof(err)), 0);
	char *n = pg_sql1(db, "SELECT count(*) FROM job_state_edges", NULL);
	assert_int_equal(atoi(n), (int)job_state_edge_count);
	free(n);
}

/* trainplane_db_conflicts_total as /metrics writes it. */
static long conflicts_counted(void)
{
	struct strbuf sb = STRBUF_INIT;
	metrics_write_registered(&sb);
	const char *p = strstr(sb.buf ? sb.buf : "", "\ntrainplane_db_conflicts_total ");
	long n = p ? strtol(p + strlen("\ntrainplane_db_conflicts_total "), NULL, 10) : -1;
	sb_release(&sb);
	return n;
}

/*
 * A statement that meets a serialization failure or a deadlock runs again
 * (outside a transaction: the store does it; in one: its owner, told
 * STORE_RETRY), each conflict counted, and the retries are bounded.
 */
static void conflicts_are_retried_counted_and_bounded(void **state)
{
	(void)state;
	pg_exec1(db, "CREATE SEQUENCE flaky_seq", NULL);
	pg_exec1(db, "CREATE FUNCTION flaky(fail_first int, code text) RETURNS int LANGUAGE plpgsql AS $$ "
	      "BEGIN IF nextval('flaky_seq') <= fail_first THEN "
	      "RAISE EXCEPTION 'made to conflict' USING ERRCODE = code; END IF; RETURN 7; END $$",
	      NULL);
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	long before = conflicts_counted();
	assert_true(before >= 0);

	/* Two deadlocks, then it runs: one call, the answer of the third try. */
	PGresult *r = store_exec_sql(c, "SELECT flaky(2, '40P01')", false, 0, NULL, &rc);
	assert_int_equal(rc, STORE_OK);
	assert_string_equal(PQgetvalue(r, 0, 0), "7");
	PQclear(r);
	assert_int_equal(conflicts_counted(), before + 2);

	/* Always conflicting: STORE_RETRIES + 1 tries, then STORE_RETRY. */
	pg_exec1(db, "SELECT setval('flaky_seq', 1, false)", NULL);
	r = store_exec_sql(c, "SELECT flaky(1000, '40001')", false, 0, NULL, &rc);
	assert_null(r);
	assert_int_equal(rc, STORE_RETRY);
	assert_int_equal(conflicts_counted(), before + 2 + STORE_RETRIES + 1);
	char *n = pg_sql1(db, "SELECT last_value FROM flaky_seq", NULL);
	assert_int_equal(atoi(n), STORE_RETRIES + 1);
	free(n);

	/* In a transaction the owner decides: no statement runs twice. */
	pg_exec1(db, "SELECT setval('flaky_seq', 1, false)", NULL);
	assert_int_equal(store_begin(c), STORE_OK);
	r = store_exec_sql(c, "SELECT flaky(1, '40P01')", false, 0, NULL, &rc);
	assert_null(r);
	assert_int_equal(rc, STORE_RETRY);
	store_rollback(c);
	n = pg_sql1(db, "SELECT last_value FROM flaky_seq", NULL);
	assert_int_equal(atoi(n), 1);
	free(n);
	assert_true(store_retry(STORE_RETRY, 0, "a test"));
	assert_false(store_retry(STORE_RETRY, STORE_RETRIES, "a test"));
	assert_false(store_retry(STORE_ERROR, 0, "a test"));
	store_release(st, c);
	pg_exec1(db, "DROP FUNCTION flaky(int, text)", NULL);
	pg_exec1(db, "DROP SEQUENCE flaky_seq", NULL);
}

static int setup(void **state)
{
	(void)state;
	if (pg_fixture_start(&fx, "states", 2))
		return -1;
	st = fx.st;
	db = PQconnectdb(fx.conninfo);
	if (PQstatus(db) != CONNECTION_OK) {
		fprintf(stderr, "%s", PQerrorMessage(db));
		return -1;
	}
	PQclear(PQexec(db, "SET client_min_messages = warning"));
	PQclear(PQexec(db, "INSERT INTO nodes (name, incarnation, region, zone, vcpus, memory_mb, "
			   "address, port_lo, port_hi, runtime) VALUES ('n1', 'i', 'r', 'z', 64, "
			   "65536, '127.0.0.1', 20000, 20999, 'process')"));
	/* never found lost by the housekeeping these tests run, however slow */
	PQclear(PQexec(db, "UPDATE nodes SET last_sync = now() + interval '1 day'"));
	find_paths();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(db);
	return pg_fixture_stop(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_cause_and_target_through_the_entry_point),
		cmocka_unit_test(every_state_and_cause_through_store_job_transition),
		cmocka_unit_test(every_pair_through_a_raw_update_and_insert),
		cmocka_unit_test(cancel_takes_the_cancel_edge_or_changes_nothing),
		cmocka_unit_test(a_queued_study_with_trials_is_cancelling_until_they_stop),
		cmocka_unit_test(a_cancel_that_loses_a_race_sees_the_winner),
		cmocka_unit_test(placement_skips_a_job_cancelled_meanwhile),
		cmocka_unit_test(a_running_job_that_times_out_fails_with_its_units),
		cmocka_unit_test(the_reconciler_moves_jobs_through_the_entry_point),
		cmocka_unit_test(a_gang_restart_ends_on_the_restart_edge),
		cmocka_unit_test(lost_replicas_restart_only_where_the_machine_allows),
		cmocka_unit_test(a_server_refuses_a_database_whose_machine_differs),
		cmocka_unit_test(conflicts_are_retried_counted_and_bounded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
