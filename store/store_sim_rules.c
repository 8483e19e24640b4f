/*
 * store_sim_rules.c - the emulator's rule list (store_sim_rules.h).
 * Statement ids 96-111.
 */
#include "store_sim_rules.h"

#include "store_pg.h"

static const struct store_stmt stmt_get = {
	96, "sim_rules_get", "SELECT rules::text FROM emulator_rules", true,
};

static const struct store_stmt stmt_set = {
	97, "sim_rules_set", "UPDATE emulator_rules SET rules = $1::jsonb", false,
};

enum store_rc store_sim_rules_read(struct store_conn *c, char **json)
{
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_get, 0, NULL, &rc);

	*json = NULL;
	if (rc == STORE_OK && PQntuples(res) == 1)
		*json = xstrdup(PQgetvalue(res, 0, 0));
	else if (rc == STORE_OK)
		rc = STORE_ERROR;	/* schema/023 makes the row */
	PQclear(res);
	return rc;
}

enum store_rc store_sim_rules_get(struct store *st, char **json)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc = store_sim_rules_read(c, json);
	store_release(st, c);
	return rc;
}

enum store_rc store_sim_rules_set(struct store *st, const char *json)
{
	const char *p[] = { json };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;

	PQclear(store_exec(c, &stmt_set, 1, p, &rc));
	store_release(st, c);
	return rc;
}
