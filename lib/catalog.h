/*
 * catalog.h - the rules the cloud enforces, as data loaded from YAML.
 *
 * Machine types (vCPU, memory), legacy machine types, which accelerators a
 * machine type takes and in which counts, regions and zones with the
 * accelerators each zone offers, TPU rules, runtime versions and scale
 * tiers. deploy/catalog.yaml holds the default (Google's public catalog of
 * the seeds and reference); an on-prem operator edits it to describe their
 * own hardware.
 *
 * A loaded catalog is immutable and may be read from any thread.
 */
#ifndef TP_CATALOG_H
#define TP_CATALOG_H

#include <jansson.h>
#include <stdbool.h>

#include "common.h"

struct catalog;

/*
 * Loads and checks the catalog at path. On any problem (YAML syntax, an
 * unknown accelerator in a zone, a table row for an unknown machine type, a
 * malformed count list, ...) writes "path:line:col: problem" into err and
 * returns -1. On success *out is a new catalog: free with catalog_free().
 */
int catalog_load(const char *path, struct catalog **out, char *err, size_t errlen) MUST_CHECK;
void catalog_free(struct catalog *cat);	/* NULL is a no-op */

/* Regions that offer TRAINING, sorted by name. */
size_t catalog_region_count(const struct catalog *cat);
const char *catalog_region_name(const struct catalog *cat, size_t i);
bool catalog_has_region(const struct catalog *cat, const char *region);

/*
 * The ml v1 Location resource for region, as a new JSON object:
 *   {"name":"projects/<project>/locations/<region>",
 *    "capabilities":[{"type":"TRAINING","availableAccelerators":[...]}]}
 * availableAccelerators is the union over the region's zones, in the
 * AcceleratorType enum order. NULL when the region is unknown.
 */
json_t *catalog_location_json(const struct catalog *cat, const char *project,
			      const char *region);

/* vCPU count and memory of a machine type (Compute Engine or legacy). */
struct machine_size {
	int vcpus;
	int64_t memory_mb;
};
int catalog_machine_size(const struct catalog *cat, const char *machine_type,
			 struct machine_size *out) MUST_CHECK;

/* --- Queries for the rule engine (server/validate.c) ------------------------
 *
 * Every pointer returned below is borrowed from the catalog and lives as long
 * as it; the structures are read-only views.
 */

/* Which API takes a machine type or accelerator for training. */
enum catalog_api {
	CATALOG_API_ML = 1 << 0,	/* AI Platform Training, ml v1 */
	CATALOG_API_VERTEX = 1 << 1,	/* Vertex AI customJobs */
};

/* A set of accelerators of one catalog: bit i stands for accelerator i. */
typedef uint32_t catalog_accset;
#define CATALOG_MAX_ACCELERATORS 32
/* Accelerator counts per machine are 1..CATALOG_MAX_COUNT (bit n: count n). */
#define CATALOG_MAX_COUNT 63

struct catalog_accelerator {
	const char *name;	/* the enum name, e.g. "NVIDIA_TESLA_T4" */
	bool tpu;		/* a Cloud TPU, not a GPU */
	unsigned apis;		/* enum catalog_api bits */
};

struct catalog_machine {
	const char *name;
	bool legacy;		/* an AI Platform legacy type (standard, complex_model_m_gpu, ...) */
	bool tpu_host;		/* stands for one Cloud TPU (cloud_tpu, Vertex cloud-tpu) */
	unsigned apis;		/* enum catalog_api bits: who takes it for training */
	int vcpus;
	int64_t memory_mb;
	const char *equivalent;	/* legacy: the Compute Engine type it stands for, or NULL */
	int accelerator;	/* included/built-in accelerator index, or -1 */
	int accelerator_count;	/* how many of it, 0 when none */
	/* Per accelerator index, the counts the type takes: bit n set = n allowed. */
	uint64_t counts[CATALOG_MAX_ACCELERATORS];
};

struct catalog_zone {
	const char *name;
	catalog_accset accelerators;
};

struct catalog_region {
	const char *name;
	const struct catalog_zone *zones;
	size_t n_zones;
	catalog_accset accelerators;	/* the union over the zones */
};

struct catalog_runtime {
	const char *version;		/* "2.4" */
	const char *const *python;	/* the pythonVersion values it takes */
	size_t n_python;
	bool tpu;			/* usable for Cloud TPU training */
};

/* What a predefined scale tier stands for (type NULL and count 0: none). */
struct catalog_tier_replica {
	const char *machine_type;
	int64_t count;
};
struct catalog_tier {
	const char *name;		/* "BASIC_GPU" */
	struct catalog_tier_replica master, worker, parameter_server, evaluator;
};

/* count or more of accelerator need a machine within these bounds. */
struct catalog_limit {
	int accelerator;
	int count;
	int max_vcpus;
	int64_t max_memory_mb;
};

/* Accelerators, in the catalog's (enum) order. find: index or -1. */
size_t catalog_accelerator_count(const struct catalog *cat);
const struct catalog_accelerator *catalog_accelerator(const struct catalog *cat, size_t i);
int catalog_accelerator_find(const struct catalog *cat, const char *name);

/* A Compute Engine or legacy machine type by name; NULL when unknown. */
const struct catalog_machine *catalog_machine_find(const struct catalog *cat, const char *name);

/* A region by name (NULL when unknown), and its first zone offering every
 * accelerator of set (NULL when none does). */
const struct catalog_region *catalog_region_find(const struct catalog *cat, const char *name);
const struct catalog_zone *catalog_region_zone_offering(const struct catalog_region *region,
							catalog_accset set);

/* Runtime versions, in catalog order; find: NULL when unknown. */
size_t catalog_runtime_count(const struct catalog *cat);
const struct catalog_runtime *catalog_runtime(const struct catalog *cat, size_t i);
const struct catalog_runtime *catalog_runtime_find(const struct catalog *cat, const char *version);
/* The runtime a job without runtimeVersion gets; NULL when the catalog names none. */
const char *catalog_default_runtime_version(const struct catalog *cat);

/* A predefined scale tier by enum name; NULL when the catalog has none (CUSTOM). */
const struct catalog_tier *catalog_tier_find(const struct catalog *cat, const char *name);

size_t catalog_limit_count(const struct catalog *cat);
const struct catalog_limit *catalog_limit(const struct catalog *cat, size_t i);

/* Pre-built PyTorch XLA images for TPU workers and the tpuTfVersion each needs. */
size_t catalog_tpu_image_count(const struct catalog *cat);
const char *catalog_tpu_image(const struct catalog *cat, size_t i, const char **tpu_tf_version);
/* The tpuTfVersion image needs, or NULL when image is not a listed one. */
const char *catalog_tpu_image_version(const struct catalog *cat, const char *image);

/* Replica counts above this are refused. */
int64_t catalog_max_replica_count(const struct catalog *cat);

#endif
