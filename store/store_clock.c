/*
 * store_clock.c - the emulator's clock (store_clock.h). Statement ids 64-79.
 */
#include "store_clock.h"

#include <stdio.h>
#include <stdlib.h>

#include "store_pg.h"

#define CLOCK_COLUMNS \
	"(extract(epoch FROM base_real) * 1000000)::int8, " \
	"(extract(epoch FROM base_emu) * 1000000)::int8, speed"

static const struct store_stmt stmt_get = {
	64, "clock_get", "SELECT " CLOCK_COLUMNS " FROM emulator_clock", true,
};

/* Rebased on now(): what ran until now at the old speed is kept. */
static const struct store_stmt stmt_advance = {
	65, "clock_advance",
	"UPDATE emulator_clock SET base_emu = base_emu + (now() - base_real) * speed "
	"  + make_interval(secs => $1::int8 / 1000000.0), base_real = now() "
	"RETURNING " CLOCK_COLUMNS,
	false,
};

static const struct store_stmt stmt_speed = {
	66, "clock_set_speed",
	"UPDATE emulator_clock SET base_emu = base_emu + (now() - base_real) * speed, "
	"  base_real = now(), speed = $1::float8 RETURNING " CLOCK_COLUMNS,
	false,
};

static enum store_rc clock_of(PGresult *res, enum store_rc rc, struct emu_clock *out)
{
	if (rc == STORE_OK && PQntuples(res) == 1) {
		out->base_real_us = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		out->base_emu_us = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		out->speed = strtod(PQgetvalue(res, 0, 2), NULL);
	} else if (rc == STORE_OK) {
		rc = STORE_ERROR;	/* schema/022 makes the row */
	}
	PQclear(res);
	return rc;
}

enum store_rc store_clock_read(struct store_conn *c, struct emu_clock *out)
{
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_get, 0, NULL, &rc);
	return clock_of(res, rc, out);
}

enum store_rc store_clock_get(struct store *st, struct emu_clock *out)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc = store_clock_read(c, out);
	store_release(st, c);
	return rc;
}

static enum store_rc change(struct store *st, const struct store_stmt *stmt, const char *arg,
			    struct emu_clock *out)
{
	const char *p[] = { arg };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, stmt, 1, p, &rc);
	rc = clock_of(res, rc, out);
	store_release(st, c);
	return rc;
}

enum store_rc store_clock_advance(struct store *st, int64_t us, struct emu_clock *out)
{
	char arg[24];
	snprintf(arg, sizeof(arg), "%lld", (long long)us);
	return change(st, &stmt_advance, arg, out);
}

enum store_rc store_clock_set_speed(struct store *st, double speed, struct emu_clock *out)
{
	char arg[40];
	snprintf(arg, sizeof(arg), "%.17g", speed);
	return change(st, &stmt_speed, arg, out);
}
