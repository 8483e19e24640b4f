/*
 * store_quota.h - what projects hold, for the quotas API and /metrics:
 * the resources of replicas on nodes (not yet done), by region, class
 * (SPOT and FLEX_START are preemptible) and resource.
 */
#ifndef TP_STORE_QUOTA_H
#define TP_STORE_QUOTA_H

#include <jansson.h>

#include "store.h"

/*
 * project's usage (NULL: every project's) as [{project, region,
 * preemptible, resource, count}], resource "cpus" or an accelerator type;
 * plus the queued jobs by reason as {"usage": [...], "queued": [{project,
 * code, n}]}. New object.
 */
enum store_rc store_quota_usage(struct store *st, const char *project, json_t **out) MUST_CHECK;

/*
 * project's queued jobs (the first 1000 in the queue's order: priority,
 * then age) with why each waits: [{id, jobId, api, region, priority,
 * strategy, preemptions, createTime, reason, message, reasonSince}]. New array.
 */
enum store_rc store_quota_queue(struct store *st, const char *project, json_t **out) MUST_CHECK;

#endif
