/*
 * pg_fixture.h - the set-up the PostgreSQL drivers of this folder share:
 * an embedded PostgreSQL (store/embedded.c) in a fresh folder, and a store
 * of nconns connections on it; and its teardown. Header-only: each driver
 * is one file and links nothing else of the tests.
 *
 * The folder is in /dev/shm when there is one (nothing the tests write
 * reaches a disk, and fsync costs nothing there), and its data directory
 * is a copy of a template rather than a new initdb (about a second of CPU
 * each): the template is what pg_embedded_start and pg_embedded_stop leave
 * in a fresh state directory, made once under a lock by the first driver
 * that finds none, and kept (/dev/shm/trainplane-pg-template-fixture-*,
 * named after the PostgreSQL build and the user; remove it any time). The
 * server adopts a data directory it finds just as it does after a restart.
 */
#ifndef TP_PG_FIXTURE_H
#define TP_PG_FIXTURE_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embedded.h"
#include "store.h"

struct pg_fixture {
	char dir[64];
	char bin_dir[PATH_MAX];
	struct pg_embedded *pg;
	char *conninfo;
	struct store *st;
};

/* Where the folders go: /dev/shm when it can be written, else /tmp. */
static inline const char *pg_fixture_base(void)
{
	return access("/dev/shm", W_OK | X_OK) ? "/tmp" : "/dev/shm";
}

/*
 * The newest /usr/lib/postgresql/N/bin with pg_ctl (what pg_embedded_start
 * picks itself), and a name for its template: N, initdb's mtime, the user.
 * 0, or -1 when there is none.
 */
static inline int pg_fixture_bin(char *bin, size_t binlen, char *key, size_t keylen)
{
	DIR *d = opendir("/usr/lib/postgresql");
	struct dirent *e;
	long best = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char *end, ctl[PATH_MAX];
		long v = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end || v <= best)
			continue;
		snprintf(ctl, sizeof(ctl), "/usr/lib/postgresql/%s/bin/pg_ctl", e->d_name);
		if (!access(ctl, X_OK)) {
			best = v;
			snprintf(bin, binlen, "/usr/lib/postgresql/%s/bin", e->d_name);
		}
	}
	closedir(d);
	if (best < 0)
		return -1;
	char initdb[PATH_MAX + 8];
	struct stat sb;
	snprintf(initdb, sizeof(initdb), "%s/initdb", bin);
	if (stat(initdb, &sb))
		return -1;
	snprintf(key, keylen, "%ld-%lld-%u", best, (long long)sb.st_mtime, (unsigned)geteuid());
	return 0;
}

/*
 * Puts a copy of the template data directory at DIR/postgres, making the
 * template first when there is none (one maker at a time: the others wait
 * for it and copy). 0, or -1 (the caller then lets initdb make one).
 */
static inline int pg_fixture_copy_template(struct pg_fixture *f, const char *base, const char *key)
{
	char tpl[PATH_MAX], lockp[PATH_MAX + 8], ver[PATH_MAX + 16], cmd[3 * PATH_MAX];
	int rc = -1;

	snprintf(tpl, sizeof(tpl), "%s/trainplane-pg-template-fixture-%s", base, key);
	snprintf(lockp, sizeof(lockp), "%s.lock", tpl);
	snprintf(ver, sizeof(ver), "%s/PG_VERSION", tpl);
	int lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		if (lock >= 0)
			close(lock);
		return -1;
	}
	if (access(ver, F_OK)) {
		/* What a fresh state directory holds after a start and a stop. */
		char tmp[PATH_MAX + 16], *conninfo = NULL, err[1024];
		struct pg_embedded *pg = NULL;
		snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", tpl);
		if (mkdtemp(tmp) && !chmod(tmp, 0755)) {
			if (!pg_embedded_start(tmp, f->bin_dir, &pg, &conninfo, err, sizeof(err))) {
				pg_embedded_stop(pg);
				snprintf(cmd, sizeof(cmd), "%s/postgres", tmp);
				if (rename(cmd, tpl))
					perror(tpl);
			} else {
				fprintf(stderr, "the fixture's template (%s): %s\n", tpl, err);
			}
			free(conninfo);
			snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
			if (system(cmd))
				fprintf(stderr, "%s failed\n", cmd);
		}
	}
	if (!access(ver, F_OK)) {
		/* -a keeps the owner (the postgres user, when root) and mode 0700. */
		snprintf(cmd, sizeof(cmd), "cp -a %s %s/postgres", tpl, f->dir);
		rc = system(cmd) ? -1 : 0;
	}
	close(lock);	/* and its lock */
	return rc;
}

/* Starts PostgreSQL in a new BASE/tp-NAME-XXXXXX and opens the store; 0, or
 * -1 with why on stderr. */
static inline int pg_fixture_start(struct pg_fixture *f, const char *name, int nconns)
{
	char err[1024], key[96], cmd[96];
	const char *base = pg_fixture_base();
	bool copied = false;

	snprintf(f->dir, sizeof(f->dir), "%s/tp-%s-XXXXXX", base, name);
	if (!mkdtemp(f->dir) || chmod(f->dir, 0755)) {
		perror(f->dir);
		return -1;
	}
	f->bin_dir[0] = '\0';
	if (!pg_fixture_bin(f->bin_dir, sizeof(f->bin_dir), key, sizeof(key)))
		copied = !pg_fixture_copy_template(f, base, key);
	if (pg_embedded_start(f->dir, f->bin_dir, &f->pg, &f->conninfo, err, sizeof(err))) {
		if (!copied) {
			fprintf(stderr, "embedded PostgreSQL: %s\n", err);
			return -1;
		}
		/* A template that does not start (a stale one): initdb, as without one. */
		fprintf(stderr, "embedded PostgreSQL from the template: %s; initdb instead\n", err);
		snprintf(cmd, sizeof(cmd), "rm -rf %s/postgres", f->dir);
		if (system(cmd) ||
		    pg_embedded_start(f->dir, f->bin_dir, &f->pg, &f->conninfo, err, sizeof(err))) {
			fprintf(stderr, "embedded PostgreSQL: %s\n", err);
			return -1;
		}
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
