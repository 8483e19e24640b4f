/*
 * embedded.h - a private PostgreSQL under the server's state directory.
 *
 * With no database URL configured the server runs its own PostgreSQL:
 * initdb on first start (data in <state>/postgres; a copy of a template
 * kept in ~/.cache/trainplane once one initdb has run, which saves most of
 * a fresh start), listening only on a
 * unix socket in <state>/run, started with pg_ctl and stopped on exit. A
 * second start reuses the data. PostgreSQL refuses to run as root, so when
 * the server is root the database runs as the "postgres" system user and
 * owns its data directory.
 */
#ifndef TP_EMBEDDED_H
#define TP_EMBEDDED_H

#include "common.h"

struct pg_embedded;

/*
 * Starts (creating if needed) the embedded database. bin_dir is where
 * initdb and pg_ctl live (NULL or "": the newest /usr/lib/postgresql/N/bin,
 * else PATH). On success *out is the handle and *conninfo a libpq
 * connection string (caller frees). On failure err says why, with the tail
 * of PostgreSQL's own log where it helps.
 */
int pg_embedded_start(const char *state_dir, const char *bin_dir, struct pg_embedded **out,
		      char **conninfo, char *err, size_t errlen) MUST_CHECK;
/* Stops the database (fast shutdown) and frees the handle. NULL is a no-op. */
void pg_embedded_stop(struct pg_embedded *pg);

#endif
