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
	"      AND p.desired <> 'DONE' AND p.tpu)) ORDER BY n.name), '[]') FROM nodes n))::text",
	true,
};

enum store_rc store_metrics_snapshot(struct store *st, char **json_text)
{
	return store_query_value(st, &stmt_snapshot, 0, NULL, json_text);
}
