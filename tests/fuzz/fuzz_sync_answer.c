/*
 * fuzz_sync_answer.c - libFuzzer target for the agent's parsing of the
 * server's answers (agent/sync_msg.c): each input is parsed both as a sync
 * answer (sync_parse_answer) and as a register answer (sync_parse_register).
 *
 * Beyond surviving anything (no crash, no undefined behaviour, no leak), the
 * results must keep the header's contracts, which the agent relies on:
 * - a rejected sync answer leaves the set empty and says why; an accepted
 *   one holds only entries with a usable replica name (a path component:
 *   not empty, no '/', not "." or "..", at most 200 bytes), an attempt in
 *   0..1000000, NULL-terminated command/args/env vectors, gpus and ports in
 *   0..65535, a simulate time in 0..1 year and exit code in 0..255, a
 *   trainer package replica's packages a NULL-terminated vector of at most
 *   PYPKG_MAX_PACKAGES with a module (the runtime selector strings unset or
 *   non-empty), none of them without packages, and desired_find finds
 *   each entry;
 * - parsing into a set that already holds an answer replaces it;
 * - a register answer that is accepted yields an interval in 1..3600 and a
 *   lease of at least 1 second; a rejected one leaves both as they were.
 *
 * Build and run: tools/fuzz.sh run sync_answer (FUZZ_SECONDS, default 600).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python_pkg.h"
#include "sync_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_vector(char **v)
{
	if (!v)
		abort();
	for (; *v; v++)
		(void)strlen(*v);
}

static void check_set(const struct desired_set *ds)
{
	for (size_t i = 0; i < ds->n; i++) {
		const struct desired_replica *d = &ds->v[i];
		size_t len = strlen(d->replica);

		if (!len || len > 200 || strchr(d->replica, '/') || !strcmp(d->replica, ".") ||
		    !strcmp(d->replica, ".."))
			abort();
		if (d->attempt < 0 || d->attempt > 1000000)
			abort();
		check_vector(d->command);
		check_vector(d->args);
		check_vector(d->env);
		for (size_t k = 0; k < d->ngpus; k++)
			if (d->gpus[k] < 0 || d->gpus[k] > 65535)
				abort();
		for (size_t k = 0; k < d->nports; k++)
			if (d->ports[k] < 0 || d->ports[k] > 65535)
				abort();
		if (d->packages) {
			size_t n = 0;
			while (d->packages[n])
				n++;
			if (n > PYPKG_MAX_PACKAGES || !d->python_module)
				abort();
			const char *sel[] = { d->runtime_version, d->python_version,
					      d->executor_image };
			for (size_t k = 0; k < 3; k++)
				if (sel[k] && !*sel[k])
					abort();
		} else if (d->python_module || d->runtime_version || d->python_version ||
			   d->executor_image) {
			abort();
		}
		if (d->has_simulate && (!(d->sim_seconds >= 0 && d->sim_seconds <= 86400.0 * 365) ||
					d->sim_exit < 0 || d->sim_exit > 255))
			abort();
		/* The first entry with this (replica, attempt) is found. */
		const struct desired_replica *f = desired_find(ds, d->replica, d->attempt);
		if (!f || f > d || f->attempt != d->attempt || strcmp(f->replica, d->replica))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct desired_set ds = { 0 };
	char err[256];
	int interval = 10, lease = 30;

	/* Parse twice into the same set: the second parse replaces the first. */
	for (int round = 0; round < 2; round++) {
		err[0] = '\0';
		if (sync_parse_answer((const char *)data, size, &ds, err, sizeof(err))) {
			if (ds.n || ds.v || ds.version || ds.has_replicas || !err[0])
				abort();
		} else {
			if (!ds.has_replicas && ds.n)
				abort();
			check_set(&ds);
		}
	}
	desired_set_release(&ds);

	err[0] = '\0';
	char cluster[SYNC_CLUSTER_ID_MAX + 1] = "unchanged";
	if (sync_parse_register((const char *)data, size, &interval, &lease, cluster,
				sizeof(cluster), err, sizeof(err))) {
		if (interval != 10 || lease != 30 || !err[0] || strcmp(cluster, "unchanged"))
			abort();
	} else if (interval < 1 || interval > 3600 || lease < 1 || lease > 86400 ||
		   (cluster[0] && !wire_cluster_id_ok(cluster))) {
		abort();
	}
	return 0;
}
