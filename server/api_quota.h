/*
 * api_quota.h - quotas at the API: a create that could never fit its
 * project's limit is refused with Google's 429 (RESOURCE_EXHAUSTED, a
 * google.rpc.QuotaFailure detail), and operators read limits and usage
 * (GET /trainplane/v1/projects/{project}/quotas). The limits are the
 * quotas file's (spec/quota.h); admission beside running work is the
 * scheduler's (scheduler/policy.h).
 */
#ifndef TP_API_QUOTA_H
#define TP_API_QUOTA_H

#include <stdbool.h>
#include <jansson.h>

#include "http.h"

/*
 * For a job about to be created in project and region (stored: the spec
 * as it will be stored, spec_parse_stored's input): replies 429 and
 * returns true when one of the job's needs exceeds its project's limit
 * even with nothing else running; false (nothing replied) otherwise.
 */
bool api_quota_refuse(struct request *req, bool vertex, const char *project, const char *region,
		      const json_t *stored, const json_t *labels);

void api_quotas_get(struct request *req);
/* GET /trainplane/v1/projects/{project}/queue: the queued jobs and why each waits. */
void api_queue_list(struct request *req);

#endif
