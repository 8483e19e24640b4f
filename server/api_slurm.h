/*
 * api_slurm.h - the API's part of the Slurm backend (docs/slurm.md): a
 * create that its region's Slurm cluster can never run is refused at once;
 * a pilot agent (one per replica of a Slurm job) is admitted by its job's
 * secret, for the node names of that job's current run only, and declares
 * what its job's row says, not what it likes.
 */
#ifndef TP_API_SLURM_H
#define TP_API_SLURM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "store.h"

/*
 * For a create in a Slurm-served region: replies 400 INVALID_ARGUMENT and
 * returns true when the job can never run there (slurm_backends_fits()).
 */
bool api_slurm_refuse(struct request *req, const char *region, const json_t *stored,
		      const json_t *labels);

/* Whether a bearer token is a pilot's ("tpp1.<job>.<secret>"). */
bool api_slurm_pilot_token(const char *bearer);

/* A pilot node: slurm-<job>-r<restart>-g<group>-t<task>, and its slot. */
struct pilot_claim {
	int64_t job;
	int restart, group, task;
	int slot;		/* the index in slurm_jobs.slots */
	int vcpus, accel_count;
	int64_t memory_mb;
	char accel_type[48];	/* "" without */
};

/*
 * Checks a pilot's token against its node name and its job's row: the
 * secret's hash, the job not done, a slot for its group and task, and the
 * node's run the current one to register (an earlier run's pilot may
 * still sync: it reports how its replicas stopped). STORE_OK with *ok;
 * another rc when the database could not say.
 */
enum store_rc api_slurm_pilot_check(struct store *st, const char *node, const char *bearer,
				    bool registering, bool *ok, struct pilot_claim *out);

/* "slurm-<job>": the region (and zone) of a job's pilots. */
void api_slurm_pilot_region(int64_t job, char *out, size_t len);

#endif
