/*
 * pg_fixture.h - the set-up the PostgreSQL drivers of this folder share:
 * an embedded PostgreSQL (lib/embedded: the schema's template copied from
 * /dev/shm when there is one) in a fresh folder, and a store of nconns
 * connections on it; and its teardown. Header-only: each driver is one
 * file and links nothing else of the tests.
 */
#ifndef TP_PG_FIXTURE_H
#define TP_PG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "embedded.h"
#include "store.h"

struct pg_fixture {
	char dir[64];
	struct pg_embedded *pg;
	char *conninfo;
	struct store *st;
};

/* Starts PostgreSQL in a new /tmp/tp-NAME-XXXXXX and opens the store; 0, or
 * -1 with why on stderr. */
static inline int pg_fixture_start(struct pg_fixture *f, const char *name, int nconns)
{
	char err[1024];

	snprintf(f->dir, sizeof(f->dir), "/tmp/tp-%s-XXXXXX", name);
	if (!mkdtemp(f->dir) || chmod(f->dir, 0755)) {
		perror(f->dir);
		return -1;
	}
	if (pg_embedded_start(f->dir, NULL, &f->pg, &f->conninfo, err, sizeof(err))) {
		fprintf(stderr, "embedded PostgreSQL: %s\n", err);
		return -1;
	}
	if (store_open(f->conninfo, nconns, 30, &f->st, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

/* Closes the store, stops PostgreSQL and removes its folder. */
static inline int pg_fixture_stop(struct pg_fixture *f)
{
	char cmd[96];

	store_close(f->st);
	pg_embedded_stop(f->pg);
	free(f->conninfo);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	return system(cmd);
}

#endif
