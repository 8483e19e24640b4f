/*
 * store_iam.h - IAM policies on jobs (schema/008_iam.sql).
 */
#ifndef TP_STORE_IAM_H
#define TP_STORE_IAM_H

#include <stdint.h>

#include "store.h"

/*
 * The policy of a job as JSON text (caller frees) and its etag.
 * STORE_NOT_FOUND when the job has none (the empty policy, etag 0), whether
 * or not the job exists.
 */
enum store_rc store_iam_get(struct store *st, const char *api, const char *project,
			    const char *job_id, char **policy_json, int64_t *etag) MUST_CHECK;

/*
 * Replaces a job's policy when expected_etag (NULL: any) is its current
 * etag. STORE_NOT_FOUND: no such job; STORE_STALE: the etag is not current.
 */
enum store_rc store_iam_set(struct store *st, const char *api, const char *project,
			    const char *job_id, const char *policy_json,
			    const int64_t *expected_etag, int64_t *etag) MUST_CHECK;

#endif
