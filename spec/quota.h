/*
 * quota.h - the operator's quotas file: per-project, per-region limits on
 * accelerators (by catalog type) and vCPUs, separate limits for
 * preemptible work (Vertex SPOT and FLEX_START, as Google keeps them),
 * fair-share weights, and the priority below which ml v1 jobs may be
 * preempted. docs/quotas.md describes the file and the policy.
 *
 * The file (YAML; `quotas_file` in the server's configuration, reloaded on
 * SIGHUP like the tokens file):
 *
 *   default:                 # every project not listed (optional)
 *     weight: 1              # fair share (default 1)
 *     limits: {cpus: 96, NVIDIA_TESLA_T4: 8}
 *     preemptible: {NVIDIA_TESLA_T4: 16}
 *     regions:
 *       us-central1: {limits: {...}, preemptible: {...}}
 *   projects:
 *     team-a: {weight: 2, limits: {...}, preemptible: {...}, regions: {...}}
 *   preemption:
 *     priority_below: 100    # ml v1 jobs under this priority are preemptible
 *
 * A limit is looked up, most specific first: the project's region, the
 * project, default's region, default. A resource named nowhere has no
 * limit. Limits bound what a project runs at once in one region (Google's
 * quotas are on concurrent use per region).
 *
 * spec/ includes lib/ only: the scheduler and the server share this.
 */
#ifndef TP_QUOTA_H
#define TP_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "catalog.h"
#include "common.h"
#include "job_plan.h"

#define QUOTA_CPUS "cpus"	/* the vCPU resource's name in the file */
#define QUOTA_MAX_RESOURCES (CATALOG_MAX_ACCELERATORS + 1)

enum quota_class { QUOTA_STANDARD, QUOTA_PREEMPTIBLE };

/* What a job asks for, or what a project uses: a count per resource. */
struct quota_amounts {
	size_t n;
	struct {
		const char *resource;	/* QUOTA_CPUS or an accelerator type (borrowed) */
		int64_t count;
	} v[QUOTA_MAX_RESOURCES];
};

/* A plan's demand: its vCPUs, and its accelerators by type. */
void quota_amounts_of_plan(const struct job_plan *plan, struct quota_amounts *out);
/* Adds count of resource (resource must outlive a). */
void quota_amounts_add(struct quota_amounts *a, const char *resource, int64_t count);
int64_t quota_amounts_get(const struct quota_amounts *a, const char *resource);

struct quotas;

/* The file as JSON (yaml_doc_json's), checked against the catalog's accelerator names. */
int quotas_parse(const json_t *doc, const struct catalog *cat, struct quotas **out, char *err,
		 size_t errlen) MUST_CHECK;
int quotas_load(const char *path, const struct catalog *cat, struct quotas **out, char *err,
		size_t errlen) MUST_CHECK;
void quotas_free(struct quotas *q);	/* NULL is a no-op */

/* The limit, or -1 when none applies. q may be NULL (no quotas). */
int64_t quotas_limit(const struct quotas *q, const char *project, const char *region,
		     enum quota_class c, const char *resource);
/* The project's fair-share weight (> 0; 1 without a file). */
double quotas_weight(const struct quotas *q, const char *project);
/* ml v1 jobs with a priority under this are preemptible (0: none). */
int quotas_preempt_below(const struct quotas *q);

/* One resource over its limit. */
struct quota_excess {
	const char *resource;
	int64_t asked, used, limit;
};

/*
 * The resources for which used + asked exceeds the limit (used may be NULL:
 * nothing runs), at most max of them into out; returns how many.
 */
size_t quotas_check(const struct quotas *q, const char *project, const char *region,
		    enum quota_class c, const struct quota_amounts *used,
		    const struct quota_amounts *asked, struct quota_excess *out, size_t max);

/*
 * Google's wording (../shared/reference/hp-tuning.md §4). ml v1: "The
 * request for 2 K80 accelerators exceeds the allowed maximum of 0 A100, 0
 * K80, ... accelerators." (the QuotaFailure's description; the message
 * puts "Quota failure for project P. " before it). Vertex: the metric,
 * "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus" (the
 * _preemptible_ one for SPOT and FLEX_START). New strings.
 */
char *quota_ml_description(const struct quotas *q, const struct catalog *cat, const char *project,
			   const char *region, enum quota_class c, const struct quota_excess *e);
char *quota_vertex_metric(const char *resource, enum quota_class c);
/* ml v1's short bucket name: NVIDIA_TESLA_K80 -> K80, TPU_V2 -> TPU_V2. */
const char *quota_ml_bucket(const char *resource);

/*
 * The limits that apply to project in region, both classes, as
 * {"resource", "limit", "preemptible"} objects, resources named
 * anywhere for it (for the quotas API). New array.
 */
json_t *quotas_limits_json(const struct quotas *q, const char *project, const char *region);
/* The regions named in the file for project or the default (new array of strings). */
json_t *quotas_regions_json(const struct quotas *q, const char *project);

#endif
