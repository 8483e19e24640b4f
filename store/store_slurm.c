#include "store_slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "store_sched.h"

/* Statement ids 176-191 belong to this file. */

/* A statement whose one value is JSON text: parsed into *out. */
static enum store_rc json_value(struct store *st, const struct store_stmt *stmt, int n,
				const char *const *p, json_t **out)
{
	char *text = NULL;
	enum store_rc rc = store_query_value(st, stmt, n, p, &text);

	*out = NULL;
	if (rc == STORE_OK && !(*out = json_loads(text, 0, NULL)))
		rc = STORE_ERROR;
	free(text);
	return rc;
}

/* A job as a submit needs it. */
#define JOB_ROW "j.id, j.job_id, j.project, j.region, j.api, j.spec, j.labels, j.trial_params"

static const struct store_stmt stmt_new_jobs = {
	176, "slurm_new_jobs",
	"SELECT coalesce(json_agg(x ORDER BY x.id), '[]')::text FROM ("
	" SELECT " JOB_ROW " "
	" FROM jobs j WHERE j.state = 'QUEUED' AND NOT j.study "
	"  AND j.region IN (SELECT jsonb_array_elements_text($1::jsonb)) "
	"  AND NOT EXISTS (SELECT 1 FROM slurm_jobs s WHERE s.job = j.id) "
	" ORDER BY j.id LIMIT $2::int) x",
	true,
};

enum store_rc store_slurm_new_jobs(struct store *st, const char *regions_json, int limit,
				   json_t **out)
{
	char lim[16];
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *p[] = { regions_json, lim };
	return json_value(st, &stmt_new_jobs, 2, p, out);
}

static const struct store_stmt stmt_job = {
	185, "slurm_job", "SELECT row_to_json(x)::text FROM (SELECT " JOB_ROW " FROM jobs j "
	"WHERE j.id = $1::int8) x",
	true,
};

enum store_rc store_slurm_job(struct store *st, int64_t job, json_t **out)
{
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id };
	return json_value(st, &stmt_job, 1, p, out);
}

static const struct store_stmt stmt_claim = {
	177, "slurm_claim",
	"INSERT INTO slurm_jobs (job, backend, slots, token_hash) "
	" SELECT j.id, $2, $3::jsonb, decode($4, 'hex') FROM jobs j "
	" WHERE j.id = $1::int8 AND j.state = 'QUEUED' "
	"ON CONFLICT (job) DO NOTHING RETURNING 't'",
	false,
};

enum store_rc store_slurm_claim(struct store *st, int64_t job, const char *backend,
				const json_t *slots, const char *token_hash_hex, bool *claimed)
{
	char id[24], *text = json_dumps(slots, JSON_COMPACT), *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id, backend, text, token_hash_hex };
	enum store_rc rc = store_query_value(st, &stmt_claim, 4, p, &v);

	*claimed = rc == STORE_OK;
	if (rc == STORE_NOT_FOUND)
		rc = STORE_OK;
	free(v);
	free(text);
	return rc;
}

static const struct store_stmt stmt_active = {
	178, "slurm_active",
	"SELECT coalesce(json_agg(x ORDER BY x.job), '[]')::text FROM ("
	" SELECT s.job, s.slurm_id, s.state, s.reason, s.restart_cnt, s.cancel_sent, "
	"  extract(epoch FROM now() - s.final_seen)::float8 AS final_seen_s, "
	"  extract(epoch FROM now() - s.submitted_at)::float8 AS submitted_s, "
	"  extract(epoch FROM now() - s.updated_at)::float8 AS updated_s, "
	"  jsonb_array_length(s.slots) AS pilots, "
	"  extract(epoch FROM now() - j.end_time)::float8 AS job_final_s, "
	/* of the spec, what the timeout's words need (a resubmit reads the job) */
	"  j.state AS job_state, j.job_id, j.project, j.region, j.api, "
	"  jsonb_build_object('scheduling', j.spec->'scheduling', 'jobSpec', "
	"   jsonb_build_object('scheduling', j.spec->'jobSpec'->'scheduling')) AS spec "
	" FROM slurm_jobs s JOIN jobs j ON j.id = s.job "
	" WHERE s.backend = $1 AND NOT s.done) x",
	true,
};

enum store_rc store_slurm_active(struct store *st, const char *backend, json_t **out)
{
	const char *p[] = { backend };
	return json_value(st, &stmt_active, 1, p, out);
}

static const struct store_stmt stmt_update = {
	179, "slurm_update",
	"UPDATE slurm_jobs s SET "
	" slurm_id = coalesce((f->>'slurm_id')::int8, s.slurm_id), "
	" submitted_at = CASE WHEN f ? 'slurm_id' THEN coalesce(s.submitted_at, now()) "
	"   ELSE s.submitted_at END, "
	" state = coalesce(f->>'state', s.state), reason = coalesce(f->>'reason', s.reason), "
	" cancel_sent = coalesce((f->>'cancel_sent')::boolean, s.cancel_sent), "
	" final_seen = CASE WHEN (f->>'final_seen')::boolean THEN coalesce(s.final_seen, now()) "
	"   WHEN f ? 'final_seen' THEN NULL ELSE s.final_seen END, "
	" token_hash = coalesce(decode(f->>'token_hash', 'hex'), s.token_hash), "
	" done = coalesce((f->>'done')::boolean, s.done), updated_at = now() "
	"FROM (SELECT $2::jsonb AS f) i WHERE s.job = $1::int8 RETURNING 't'",
	false,
};

enum store_rc store_slurm_update(struct store *st, int64_t job, const json_t *fields)
{
	char id[24], *text = json_dumps(fields, JSON_COMPACT), *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id, text };
	enum store_rc rc = store_query_value(st, &stmt_update, 2, p, &v);

	free(v);
	free(text);
	return rc;
}

static const struct store_stmt stmt_fail = {
	180, "slurm_fail", "SELECT tp_backend_fail($1::int8, $2)::text", false,
};

enum store_rc store_slurm_fail(struct store *st, int64_t job, const char *message, bool *moved)
{
	char id[24], *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id, message };
	enum store_rc rc = store_query_value(st, &stmt_fail, 2, p, &v);

	*moved = rc == STORE_OK && v && !strcmp(v, "true");
	free(v);
	return rc;
}

static const struct store_stmt stmt_requeued = {
	181, "slurm_requeued", "SELECT tp_slurm_requeued($1::int8, $2::int, $3)::text", false,
};

enum store_rc store_slurm_requeued(struct store *st, int64_t job, int restart_cnt,
				   const char *text, bool *moved)
{
	char id[24], cnt[16], *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	snprintf(cnt, sizeof(cnt), "%d", restart_cnt);
	const char *p[] = { id, cnt, text };
	enum store_rc rc = store_query_value(st, &stmt_requeued, 3, p, &v);

	*moved = rc == STORE_OK && v && !strcmp(v, "true");
	free(v);
	return rc;
}

static const struct store_stmt stmt_grant = {
	182, "slurm_pilot_grant",
	"SELECT json_build_object('hash', encode(token_hash, 'hex'), 'restart_cnt', restart_cnt, "
	" 'done', done, 'slots', slots)::text FROM slurm_jobs WHERE job = $1::int8",
	true,
};

enum store_rc store_slurm_pilot_grant(struct store *st, int64_t job, struct slurm_pilot_grant *out)
{
	char id[24];
	json_t *o = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id };
	enum store_rc rc = json_value(st, &stmt_grant, 1, p, &o);

	memset(out, 0, sizeof(*out));
	if (rc == STORE_OK) {
		snprintf(out->token_hash, sizeof(out->token_hash), "%s",
			 json_string_value(json_object_get(o, "hash")) ?: "");
		out->restart_cnt = (int)json_integer_value(json_object_get(o, "restart_cnt"));
		out->done = json_is_true(json_object_get(o, "done"));
		out->slots = json_incref(json_object_get(o, "slots"));
		out->nslots = (int)json_array_size(out->slots);
	}
	json_decref(o);
	return rc;
}

void slurm_pilot_grant_release(struct slurm_pilot_grant *g)
{
	json_decref(g->slots);
	g->slots = NULL;
}

static const struct store_stmt stmt_pilot_add = {
	183, "slurm_pilot_add",
	"INSERT INTO slurm_pilots (node, job, restart_cnt, slot) "
	"VALUES ($1, $2::int8, $3::int, $4::int) ON CONFLICT (node) DO NOTHING RETURNING 't'",
	false,
};

enum store_rc store_slurm_pilot_add(struct store *st, const char *node, int64_t job,
				    int restart_cnt, int slot)
{
	char id[24], cnt[16], sl[16], *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	snprintf(cnt, sizeof(cnt), "%d", restart_cnt);
	snprintf(sl, sizeof(sl), "%d", slot);
	const char *p[] = { node, id, cnt, sl };
	enum store_rc rc = store_query_value(st, &stmt_pilot_add, 4, p, &v);

	free(v);
	return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

enum store_rc store_slurm_note_reasons(struct store *st, const json_t *reasons)
{
	struct store_conn *c = store_acquire(st);
	int lines = 0;
	enum store_rc rc = store_sched_note_reasons(c, reasons, &lines);

	store_release(st, c);
	return rc;
}

static const struct store_stmt stmt_done = {
	184, "slurm_done", "SELECT tp_slurm_done($1::int8)::text", false,
};

enum store_rc store_slurm_done(struct store *st, int64_t job)
{
	char id[24], *v = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)job);
	const char *p[] = { id };
	enum store_rc rc = store_query_value(st, &stmt_done, 1, p, &v);

	free(v);
	return rc;
}

static const struct store_stmt stmt_cluster = {
	186, "slurm_cluster", "SELECT id FROM cluster", true,
};

enum store_rc store_slurm_cluster_id(struct store *st, char *out, size_t len)
{
	char *v = NULL;
	enum store_rc rc = store_query_value(st, &stmt_cluster, 0, NULL, &v);

	snprintf(out, len, "%s", rc == STORE_OK && v ? v : "");
	free(v);
	return rc;
}
