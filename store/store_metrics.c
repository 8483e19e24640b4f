#include "store_metrics.h"

#include "store_pg.h"

/* Statement id 57 belongs to this file. */
static const struct store_stmt stmt_snapshot = {
	57, "metrics_snapshot",
	"SELECT json_build_object("
	" 'jobs', (SELECT coalesce(json_agg(json_build_object('api', api, 'state', state, 'n', n)), "
	"   '[]') FROM (SELECT api, state, count(*) AS n FROM jobs GROUP BY api, state) x), "
	" 'replicas', (SELECT coalesce(json_agg(json_build_object('state', state, 'n', n)), '[]') "
	"   FROM (SELECT state, count(*) AS n FROM replicas GROUP BY state) x), "
	" 'nodes', (SELECT coalesce(json_agg(json_build_object('name', n.name, "
	"   'state', CASE WHEN n.state = 'READY' AND n.draining THEN 'DRAINING' ELSE n.state END, "
	"   'zone', n.zone, 'sync_age', extract(epoch FROM now() - n.last_sync), "
	"   'accel_type', n.accel_type, 'accel_count', n.accel_count, "
	"   'tpu_type', n.tpu_type, 'tpu_cores', n.tpu_cores, "
	"   'used_gpus', (SELECT coalesce(sum(cardinality(p.gpus)), 0) FROM replicas p "
	"      WHERE p.node = n.name AND p.desired <> 'DONE'), "
	"   'tpu_busy', EXISTS (SELECT 1 FROM replicas p WHERE p.node = n.name "
	"      AND p.desired <> 'DONE' AND p.tpu)) ORDER BY n.name), '[]') FROM nodes n), "
	/* what each project holds (issue 28), and why jobs wait */
	" 'usage', (SELECT coalesce(json_agg(json_build_object('project', project, 'region', region, "
	"   'class', class, 'resource', resource, 'n', n)), '[]') FROM ("
	"   SELECT j.project, j.region, CASE WHEN j.strategy IN ('SPOT', 'FLEX_START') "
	"     THEN 'preemptible' ELSE 'standard' END AS class, "
	"     coalesce(p.accel_type, 'cpus') AS resource, "
	"     sum(CASE WHEN p.accel_type IS NULL THEN p.vcpus ELSE p.accel_count END) AS n "
	"   FROM replicas p JOIN jobs j ON j.id = p.job "
	"   WHERE p.node IS NOT NULL AND p.desired <> 'DONE' GROUP BY 1, 2, 3, 4) x), "
	" 'queued', (SELECT coalesce(json_agg(json_build_object('reason', reason, 'n', n)), '[]') FROM ("
	"   SELECT coalesce(r.code, 'unknown') AS reason, count(*) AS n FROM jobs j "
	"   LEFT JOIN job_queue_reasons r ON r.job = j.id WHERE j.state = 'QUEUED' AND NOT j.study "
	"   GROUP BY 1) y))::text",
	true,
};

enum store_rc store_metrics_snapshot(struct store *st, char **json_text)
{
	return store_query_value(st, &stmt_snapshot, 0, NULL, json_text);
}
