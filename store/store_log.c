#include "store_log.h"

#include <stdio.h>
#include <stdlib.h>

#include "store_filter.h"
#include "store_pg.h"
#include "strbuf.h"

#define ENTRY_JSON \
	"jsonb_build_object('logName', 'projects/' || l.project || '/logs/' || l.task, " \
	" 'resource', jsonb_build_object('type', 'ml_job', 'labels', jsonb_build_object(" \
	"   'job_id', l.job_id, 'project_id', l.project, 'task_name', l.task)), " \
	" 'timestamp', to_char(l.time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), " \
	" 'receiveTimestamp', to_char(coalesce(l.received, l.time) AT TIME ZONE 'UTC', " \
	"   'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), " \
	" 'severity', CASE l.stream WHEN 'stderr' THEN 'ERROR' WHEN 'error' THEN 'ERROR' " \
	"   WHEN 'warning' THEN 'WARNING' ELSE 'INFO' END, " \
	" 'textPayload', l.text, 'insertId', l.id::text, " \
	" 'labels', jsonb_build_object('ml.googleapis.com/task_name', l.task, " \
	"   'ml.googleapis.com/attempt', l.attempt::text) || CASE WHEN l.trial IS NULL THEN '{}' " \
	"   ELSE jsonb_build_object('ml.googleapis.com/trial_id', l.trial::text) END, " \
	" '_pos', jsonb_build_array((extract(epoch FROM l.time) * 1000000)::int8, l.id))"

enum store_rc store_log_list(struct store *st, const char *project, bool desc, int64_t after_us,
			     int64_t after_id, int limit, const struct list_filter *filter,
			     json_t **out)
{
	struct strbuf sql = STRBUF_INIT, where = STRBUF_INIT;
	struct store_params params = STORE_PARAMS_INIT;
	char us[24], id[24];
	enum store_rc rc = STORE_ERROR;

	*out = NULL;
	snprintf(us, sizeof(us), "%lld", (long long)after_us);
	snprintf(id, sizeof(id), "%lld", (long long)after_id);
	store_params_add(&params, project);
	store_params_add(&params, us);
	store_params_add(&params, id);
	if (store_filter_compile(filter, &store_filter_log_entries, &where, &params))
		goto out;
	/* The page is picked in order in the subquery and aggregated in the same order. */
	sb_addf(&sql, "SELECT coalesce(jsonb_agg(" ENTRY_JSON " ORDER BY l.time %s, l.id %s), "
		"'[]'::jsonb)::text FROM ("
		"SELECT l.*, j.project, j.job_id FROM log_entries l JOIN jobs j ON j.id = l.job "
		"WHERE j.project = $1 AND ($3::int8 = 0 OR "
		"(l.time, l.id) %s (to_timestamp($2::int8 / 1000000.0), $3::int8))",
		desc ? "DESC" : "ASC", desc ? "DESC" : "ASC", desc ? "<" : ">");
	if (where.len)
		sb_addf(&sql, " AND (%s)", where.buf);
	sb_addf(&sql, " ORDER BY l.time %s, l.id %s LIMIT %d) l", desc ? "DESC" : "ASC",
		desc ? "DESC" : "ASC", limit);
	struct store_conn *c = store_acquire(st);
	PGresult *res = store_exec_sql(c, sb_str(&sql), true, params.n, params.v, &rc);
	store_release(st, c);
	if (rc == STORE_OK) {
		*out = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
		if (!*out)
			rc = STORE_ERROR;
	}
	PQclear(res);
out:
	store_params_release(&params);
	sb_release(&where);
	sb_release(&sql);
	return rc;
}

static const struct store_stmt stmt_expire = {
	50, "log_expire",
	"DELETE FROM log_entries WHERE time < " TP_NOW " - make_interval(days => $1::int)", false,
};

enum store_rc store_log_expire(struct store_conn *c, int days, long *deleted)
{
	char d[16];
	const char *p[] = { d };
	enum store_rc rc;

	snprintf(d, sizeof(d), "%d", days);
	PGresult *res = store_exec(c, &stmt_expire, 1, p, &rc);
	*deleted = rc == STORE_OK ? atol(PQcmdTuples(res)) : 0;
	PQclear(res);
	return rc;
}

static const struct store_stmt stmt_add = {
	51, "log_add",
	"INSERT INTO log_entries (job, task, attempt, stream, time, text) "
	"VALUES ($1::int8, $2, 0, CASE WHEN $4::boolean THEN 'warning' ELSE 'system' END, " TP_NOW ", $3)",
	false,
};

enum store_rc store_log_add(struct store *st, int64_t job, const char *task, bool warning,
			    const char *text)
{
	char id[24];
	const char *params[] = { id, task, text, warning ? "true" : "false" };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;

	snprintf(id, sizeof(id), "%lld", (long long)job);
	PQclear(store_exec(c, &stmt_add, 4, params, &rc));
	store_release(st, c);
	return rc;
}
