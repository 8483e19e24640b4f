#include "store_study.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_pg.h"
#include "strbuf.h"

/* Statement ids 8-9, 53-56 and 58 belong to this file. */

#define TIME_TEXT(x) "to_char(" x " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* A trial as the study pass sees it (store_study_trials()). */
#define TRIAL_OBJECT \
	"jsonb_build_object('row', c.id, 'trial', c.trial, 'jobId', c.job_id, " \
	"  'stoppedEarly', c.stopped_early, " \
	"  'params', c.trial_params, 'state', c.state, 'error', c.error_message, " \
	"  'startTime', " TIME_TEXT("c.start_time") ", 'endTime', " TIME_TEXT("c.end_time") ", " \
	"  'units', coalesce((c.output->>'consumedMLUnits')::float8, tp_job_ml_units(c.id)), " \
	"  'metrics', coalesce((SELECT p.metrics FROM replicas p WHERE p.job = c.id " \
	"    ORDER BY (p.role NOT IN ('master', 'chief', 'pool0')), p.idx, p.id LIMIT 1), " \
	"    '[]'::jsonb))"

/* The trials of the study row `study`, light: [[row, state], ...] in trial order. */
#define TRIAL_ROWS_OF(study) \
	"(SELECT coalesce(jsonb_agg(jsonb_build_array(c.id, c.state) ORDER BY c.trial), " \
	"  '[]'::jsonb) FROM jobs c WHERE c.parent = " study ")"

static const struct store_stmt stmt_active = {
	53, "study_active",
	"SELECT coalesce(jsonb_agg(jsonb_build_object('id', s.id, 'jobId', s.job_id, "
	"  'project', s.project, 'region', s.region, "
	"  'state', s.state, 'spec', s.spec, "
	"  'trials', " TRIAL_ROWS_OF("s.id") ", "
	/* resumePreviousJobId: the earlier study's trials, of the same project */
	"  'previous', (SELECT " TRIAL_ROWS_OF("ps.id") " FROM jobs ps WHERE ps.api = 'ml' "
	"    AND ps.project = s.project AND ps.job_id = s.spec #>> '{hyperparameters,resumePreviousJobId}' "
	"    AND ps.study)) ORDER BY s.id), '[]'::jsonb)::text "
	"FROM jobs s WHERE s.study AND s.state IN ('QUEUED', 'PREPARING', 'RUNNING', 'CANCELLING')",
	true,
};

static const struct store_stmt stmt_trials = {
	58, "study_trials",
	"SELECT coalesce(jsonb_agg(" TRIAL_OBJECT "), '[]'::jsonb)::text "
	"FROM jobs c WHERE c.id = ANY ($1::int8[]) AND c.parent IS NOT NULL",
	true,
};

/* One JSON text answer. */
static enum store_rc exec_json(struct store_conn *c, const struct store_stmt *st, int n,
			       const char *const *p, json_t **out)
{
	enum store_rc rc;
	PGresult *res = store_exec(c, st, n, p, &rc);

	*out = NULL;
	if (rc == STORE_OK && !(*out = json_loads(PQgetvalue(res, 0, 0), 0, NULL)))
		rc = STORE_ERROR;
	PQclear(res);
	return rc;
}

enum store_rc store_study_trials(struct store_conn *c, const int64_t *rows, size_t n,
				 json_t **out)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addch(&sb, '{');
	for (size_t i = 0; i < n; i++)
		sb_addf(&sb, "%s%lld", i ? "," : "", (long long)rows[i]);
	sb_addch(&sb, '}');
	const char *p[] = { sb_str(&sb) };
	enum store_rc rc = exec_json(c, &stmt_trials, 1, p, out);
	sb_release(&sb);
	return rc;
}

enum store_rc store_study_active(struct store_conn *c, json_t **out)
{
	return exec_json(c, &stmt_active, 0, NULL, out);
}

/*
 * The study's row first (the lock order, schema/015), then its new trials:
 * an ml trial's job_id is "<study>/trials/<n>", which no API names; a
 * Vertex trial is a CustomJob with a numeric id, its row's (schema/018),
 * and a spec of its own (the study pass's).
 */
static const struct store_stmt stmt_add_trials = {
	54, "study_add_trials",
	"WITH s AS MATERIALIZED (SELECT * FROM jobs WHERE id = $1::int8 "
	"  AND state IN ('QUEUED', 'PREPARING', 'RUNNING') FOR NO KEY UPDATE), "
	"x AS MATERIALIZED (SELECT x.*, nextval(pg_get_serial_sequence('jobs', 'id')) AS nid "
	"  FROM s, jsonb_to_recordset($2::jsonb) AS x(trial int, params jsonb, spec jsonb) "
	"  ORDER BY x.trial), "
	"ins AS (INSERT INTO jobs (id, api, project, job_id, region, spec, labels, state, priority, "
	"  parent, trial, trial_params) "
	" SELECT x.nid, s.api, s.project, "
	"  CASE WHEN s.api = 'vertex' THEN x.nid::text ELSE s.job_id || '/trials/' || x.trial END, "
	"  s.region, coalesce(x.spec, s.spec), s.labels, 'QUEUED', s.priority, s.id, x.trial, x.params "
	" FROM s, x ORDER BY x.trial "
	" RETURNING 1) "
	"SELECT count(*) FROM ins",
	false,
};

enum store_rc store_study_add_trials(struct store_conn *c, int64_t study, const json_t *trials,
				     int *added)
{
	char id[24], *text = json_dumps(trials, JSON_COMPACT);
	const char *p[] = { id, text };
	enum store_rc rc;

	snprintf(id, sizeof(id), "%lld", (long long)study);
	PGresult *res = store_exec(c, &stmt_add_trials, 2, p, &rc);
	*added = rc == STORE_OK ? atoi(PQgetvalue(res, 0, 0)) : 0;
	PQclear(res);
	free(text);
	return rc;
}

/* A trial stopped early: marked, then cancelled (its study's row first). */
static const struct store_stmt stmt_stop_early = {
	8, "study_stop_early",
	"WITH s AS MATERIALIZED (SELECT id FROM jobs WHERE id = $1::int8 FOR NO KEY UPDATE), "
	"t AS MATERIALIZED (SELECT c.id FROM jobs c, s WHERE c.parent = s.id AND c.id = $2::int8 "
	"  AND c.state IN ('PREPARING', 'RUNNING') FOR NO KEY UPDATE), "
	"m AS (UPDATE jobs SET stopped_early = true WHERE id IN (SELECT id FROM t) RETURNING id) "
	"SELECT count(*) FROM m",
	false,
};

static const struct store_stmt stmt_cancel_trial = {
	9, "study_cancel_trial",
	"SELECT count(*) FROM tp_job_transition(ARRAY(SELECT id FROM jobs WHERE id = $1::int8 "
	"  AND stopped_early), NULL, 'cancel')",
	false,
};

enum store_rc store_study_stop_trial(struct store_conn *c, int64_t study, int64_t trial_row)
{
	char s[24], t[24];
	const char *p[] = { s, t };
	enum store_rc rc;

	snprintf(s, sizeof(s), "%lld", (long long)study);
	snprintf(t, sizeof(t), "%lld", (long long)trial_row);
	for (int attempt = 0;; attempt++) {
		if ((rc = store_begin(c)) == STORE_OK) {
			PQclear(store_exec(c, &stmt_stop_early, 2, p, &rc));
			if (rc == STORE_OK)
				PQclear(store_exec(c, &stmt_cancel_trial, 1, p + 1, &rc));
			if (rc == STORE_OK)
				rc = store_commit(c);
			store_rollback(c);
		}
		if (!store_retry(rc, attempt, "a trial's early stop"))
			break;
	}
	return rc;
}

static const struct store_stmt stmt_transition = {
	55, "study_transition",
	"SELECT count(*) FROM tp_job_transition($1::int8, $2, $3, $4)", false,
};

/* After the transition: a final state writes consumedMLUnits of its own (0,
 * a study has no replica), which the study's output then replaces. */
static const struct store_stmt stmt_output = {
	56, "study_output",
	"UPDATE jobs SET output = output || $2::jsonb WHERE id = $1::int8 "
	"  AND output IS DISTINCT FROM output || $2::jsonb",
	false,
};

static enum store_rc update_once(struct store_conn *c, const char *const *p, bool move)
{
	enum store_rc rc;

	if ((rc = store_begin(c)) != STORE_OK)
		return rc;
	const char *t[] = { p[0], p[2], p[3], p[4] };
	if (move)
		PQclear(store_exec(c, &stmt_transition, 4, t, &rc));
	if (rc == STORE_OK)
		PQclear(store_exec(c, &stmt_output, 2, p, &rc));
	if (rc == STORE_OK)
		rc = store_commit(c);
	store_rollback(c);	/* no-op after a commit */
	return rc;
}

enum store_rc store_study_update(struct store_conn *c, int64_t study, const json_t *output,
				 const char *to_state, const char *cause, const char *message)
{
	char id[24], *text = json_dumps(output, JSON_COMPACT);
	const char *p[] = { id, text, to_state, cause, message };
	enum store_rc rc;

	snprintf(id, sizeof(id), "%lld", (long long)study);
	for (int attempt = 0;; attempt++) {
		rc = update_once(c, p, to_state != NULL);
		if (!store_retry(rc, attempt, "a study's update"))
			break;
	}
	free(text);
	return rc;
}
