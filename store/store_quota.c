#include "store_quota.h"

#include <stdlib.h>

#include "store_pg.h"

/* Statement ids 144-159 belong to this file. */

static const struct store_stmt stmt_usage = {
	144, "quota_usage",
	"WITH u AS (SELECT j.project, j.region, j.strategy IN ('SPOT', 'FLEX_START') AS preemptible, "
	"   p.accel_type, p.accel_count, p.vcpus "
	"  FROM replicas p JOIN jobs j ON j.id = p.job "
	"  WHERE p.node IS NOT NULL AND p.desired <> 'DONE' AND ($1::text IS NULL OR j.project = $1)) "
	"SELECT json_build_object('usage', (SELECT coalesce(json_agg(x), '[]') FROM ("
	"  SELECT project, region, preemptible, 'cpus' AS resource, sum(vcpus)::int8 AS count "
	"   FROM u GROUP BY 1, 2, 3 "
	"  UNION ALL SELECT project, region, preemptible, accel_type, sum(accel_count)::int8 "
	"   FROM u WHERE accel_type IS NOT NULL AND accel_count > 0 GROUP BY 1, 2, 3, 4 "
	"  ORDER BY 1, 2, 3, 4) x), "
	" 'queued', (SELECT coalesce(json_agg(y), '[]') FROM ("
	"  SELECT j.project, coalesce(r.code, 'unknown') AS code, count(*) AS n "
	"   FROM jobs j LEFT JOIN job_queue_reasons r ON r.job = j.id "
	"   WHERE j.state = 'QUEUED' AND NOT j.study AND ($1::text IS NULL OR j.project = $1) "
	"   GROUP BY 1, 2 ORDER BY 1, 2) y))::text",
	true,
};

enum store_rc store_quota_usage(struct store *st, const char *project, json_t **out)
{
	const char *p[] = { project };
	char *text = NULL;
	enum store_rc rc = store_query_value(st, &stmt_usage, 1, p, &text);

	*out = NULL;
	if (rc == STORE_OK && !(*out = json_loads(text, 0, NULL)))
		rc = STORE_ERROR;
	free(text);
	return rc;
}

static const struct store_stmt stmt_queue = {
	145, "quota_queue",
	"SELECT coalesce(json_agg(x ORDER BY x.priority DESC, x.id), '[]')::text FROM ("
	" SELECT j.id, j.job_id AS \"jobId\", j.api, j.region, j.priority, j.strategy, "
	"  j.preemptions::text AS preemptions, "
	"  to_char(j.create_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS \"createTime\", "
	"  coalesce(r.code, 'unknown') AS reason, coalesce(r.text, '') AS message, "
	"  to_char(r.since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS \"reasonSince\" "
	" FROM jobs j LEFT JOIN job_queue_reasons r ON r.job = j.id "
	" WHERE j.project = $1 AND j.state = 'QUEUED' AND NOT j.study "
	" ORDER BY j.priority DESC, j.id LIMIT 1000) x",
	true,
};

enum store_rc store_quota_queue(struct store *st, const char *project, json_t **out)
{
	const char *p[] = { project };
	char *text = NULL;
	enum store_rc rc = store_query_value(st, &stmt_queue, 1, p, &text);

	*out = NULL;
	if (rc == STORE_OK && !(*out = json_loads(text, 0, NULL)))
		rc = STORE_ERROR;
	free(text);
	return rc;
}
