/*
 * store_metrics.h - the cluster as /metrics shows it, in one statement.
 */
#ifndef TP_STORE_METRICS_H
#define TP_STORE_METRICS_H

#include "store.h"

/*
 * JSON text (caller frees):
 *   {"jobs":[{"api","state","n"}], "replicas":[{"state","n"}],
 *    "nodes":[{"name","state" (READY|DRAINING|LOST),"zone","sync_age" (s),
 *              "accel_type","accel_count","used_gpus","tpu_type","tpu_cores","tpu_busy"}]}
 * Jobs and replicas are counted with one grouped scan each.
 */
enum store_rc store_metrics_snapshot(struct store *st, char **json_text) MUST_CHECK;

#endif
