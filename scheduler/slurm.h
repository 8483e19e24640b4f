/*
 * slurm.h - a client of slurmrestd, the Slurm backend's only contact with
 * Slurm (docs/slurm.md; facts: ../shared/reference/slurm.md).
 *
 * What trainplane asks of Slurm and learns from it is said here in
 * trainplane's own terms (struct slurm_submit, struct slurm_job_info);
 * each slurmrestd schema has one module that turns them into its JSON and
 * back (slurm_v0038.c: openapi/v0.0.38, Slurm 22.05 to 23.11), so that a
 * module for v0.0.40 and later sits beside it and nothing else changes.
 * The transport (slurm_client.c) speaks HTTP over TCP with a JWT, or over
 * a UNIX socket (rest_auth/local).
 */
#ifndef TP_SLURM_H
#define TP_SLURM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLURM_MAX_COMPONENTS 8

/* One component of a submitted job: tasks of one shape (one per replica). */
struct slurm_component {
	int tasks;
	int cpus_per_task;
	int64_t memory_per_cpu_mb;	/* 0: the partition's default */
	const char *gres_type;		/* "t4": the nodes' gres type it needs; NULL: any */
	int gpus_per_task;		/* 0: none (always sent untyped: see slurm_v0038.c) */
	const char *constraint;		/* a node feature (the GPU type's); NULL: none */
};

/* A whole job: one component is a plain job, several a heterogeneous one. */
struct slurm_submit {
	const char *name;		/* tp-<job row id> */
	const char *comment;		/* how the reconciler knows its jobs again */
	const char *partition, *account, *qos;	/* NULL: Slurm's default */
	const char *work_dir;		/* current_working_directory on the nodes */
	const char *output;		/* standard_output (and error) pattern */
	int time_limit_min;		/* 0: the partition's */
	bool requeue;			/* false: no_requeue (requeue:false is ignored) */
	const char *script;
	const json_t *environment;	/* {"NAME": "value"}: the job's whole environment */
	size_t ncomponents;
	struct slurm_component components[SLURM_MAX_COMPONENTS];
};

enum slurm_state {
	SLURM_UNKNOWN,
	SLURM_PENDING,
	SLURM_RUNNING,
	SLURM_SUSPENDED,
	SLURM_TRANSIENT,	/* COMPLETING, CONFIGURING, REQUEUED, SIGNALING, ...: not final yet */
	SLURM_COMPLETED,
	SLURM_CANCELLED,
	SLURM_FAILED,
	SLURM_TIMEOUT,
	SLURM_NODE_FAIL,
	SLURM_PREEMPTED,
	SLURM_BOOT_FAIL,
	SLURM_DEADLINE,
	SLURM_OUT_OF_MEMORY,
};

/* A Slurm state by its name ("RUNNING"); SLURM_UNKNOWN for any other. */
enum slurm_state slurm_state_parse(const char *name);
bool slurm_state_final(enum slurm_state s);

/* What Slurm says of one job (a heterogeneous job: of its leader). */
struct slurm_job_info {
	int64_t job_id;
	int64_t het_job_id;		/* the leader's id; 0: not heterogeneous */
	int het_offset;
	enum slurm_state state;
	char state_name[32];		/* as Slurm wrote it */
	char reason[64];		/* state_reason */
	char description[160];		/* state_description */
	int restart_cnt;
	int exit_code;			/* a wait() status: exit 3 is 768 */
	int derived_exit_code;
	char comment[160];
	char name[96];
	char nodes[160];
};

/* A node of a partition, for "can this job ever fit" (slurm_fits()). */
struct slurm_node_info {
	char name[64];
	int cpus;
	int64_t memory_mb;
	char gres_type[32];		/* "" when untyped */
	int gpus;
	bool usable;			/* not down, drained or failed */
};

/* An error of a call, sorted for the reconciler. */
enum slurm_err {
	SLURM_OK,
	SLURM_ERR_UNAVAILABLE,		/* no answer, or auth/controller failure (500/-1, 401) */
	SLURM_ERR_NOT_FOUND,		/* 2017: purged, or never known */
	SLURM_ERR_REJECTED,		/* the request can never be satisfied (2014, 2000, ...) */
	SLURM_ERR_PROTOCOL,		/* an answer this module cannot read */
};

/* One slurmrestd schema (slurm_v0038.c). */
struct slurm_api {
	const char *version;		/* "v0.0.38": the path's version */
	/* Whether the release in a reply's meta is one this module speaks. */
	int (*check_release)(const json_t *reply, char *release, size_t rlen, char *err,
			     size_t errlen);
	json_t *(*submit_body)(const struct slurm_submit *s);
	/* The submit's job id, or an error (errors[] even in a 200: 2015). */
	enum slurm_err (*submit_result)(int http, const json_t *reply, int64_t *job_id,
					char *err, size_t errlen);
	/* Every job of a GET /jobs reply (components of heterogeneous jobs too). */
	enum slurm_err (*jobs)(const json_t *reply, struct slurm_job_info **out, size_t *n,
			       char *err, size_t errlen);
	enum slurm_err (*nodes)(const json_t *reply, const char *partition,
				struct slurm_node_info **out, size_t *n, char *err, size_t errlen);
	/* An error reply (not 2xx, or errors[] not empty) in one line. */
	enum slurm_err (*error)(int http, const json_t *reply, char *err, size_t errlen);
};

extern const struct slurm_api slurm_api_v0038;

/* The module for a version ("v0.0.38"), NULL if none. */
const struct slurm_api *slurm_api_find(const char *version);

/* --- the transport ------------------------------------------------------- */

struct slurm_client_config {
	const char *url;		/* http://host:port, or unix:/path/to/socket */
	const char *user;		/* X-SLURM-USER-NAME (JWT) */
	const char *token_file;		/* the JWT alone, read at every open; NULL: UNIX socket auth */
	const char *version;		/* "v0.0.38" */
	int timeout_ms;
};

struct slurm_client;

struct slurm_client *slurm_client_new(const struct slurm_client_config *cfg);
void slurm_client_free(struct slurm_client *c);
const struct slurm_api *slurm_client_api(const struct slurm_client *c);

/*
 * GET /ping and checks the release; reads the token file again. 0, or -1
 * with a message naming what failed ("slurmrestd at ... refused
 * trainplane's credentials ...").
 */
int slurm_client_open(struct slurm_client *c, char *err, size_t errlen);

/*
 * One call: method, path after /slurm/<version> ("/jobs/?update_time=5"),
 * body (NULL: none). *http the status (304: nothing changed), *reply the
 * parsed JSON (NULL without a body). -1 with err when no answer came.
 */
int slurm_client_call(struct slurm_client *c, const char *method, const char *path,
		      const json_t *body, int *http, json_t **reply, char *err, size_t errlen);

#endif
