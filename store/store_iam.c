#include "store_iam.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "store_pg.h"

static const struct store_stmt stmt_get = {
	5, "iam_get",
	"SELECT policy::text, etag FROM iam_policies WHERE api = $1 AND project = $2 AND job_id = $3",
	true,
};

static const struct store_stmt stmt_set = {
	6, "iam_set", "SELECT tp_set_iam_policy($2, $1, $3, $4::jsonb, $5::bigint)", false,
};

enum store_rc store_iam_get(struct store *st, const char *api, const char *project,
			    const char *job_id, char **policy_json, int64_t *etag)
{
	const char *params[] = { api, project, job_id };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_get, 3, params, &rc);

	store_release(st, c);
	*policy_json = NULL;
	*etag = 0;
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK) {
		*policy_json = xstrdup(PQgetvalue(res, 0, 0));
		*etag = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	}
	PQclear(res);
	return rc;
}

enum store_rc store_iam_set(struct store *st, const char *api, const char *project,
			    const char *job_id, const char *policy_json,
			    const int64_t *expected_etag, int64_t *etag)
{
	char want[24];
	char *value = NULL;

	if (expected_etag)
		snprintf(want, sizeof(want), "%" PRId64, *expected_etag);
	const char *params[] = { api, project, job_id, policy_json, expected_etag ? want : NULL };
	enum store_rc rc = store_query_value(st, &stmt_set, 5, params, &value);
	if (rc == STORE_OK) {
		*etag = strtoll(value, NULL, 10);
		if (*etag == -1)
			rc = STORE_NOT_FOUND;
		else if (*etag == -2)
			rc = STORE_STALE;
	}
	free(value);
	return rc;
}
