#include "api_quota.h"

#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "catalog.h"
#include "job_plan.h"
#include "log.h"
#include "quota.h"
#include "snapshot.h"
#include "store_quota.h"
#include "strbuf.h"
#include "training_spec.h"

#define ML_QUOTA_PAGE "To read more about Cloud ML Engine quota, see " \
		      "https://cloud.google.com/ml-engine/quotas."

static enum quota_class class_of(const struct training_spec *spec)
{
	const char *s = spec->scheduling.strategy;
	return s && (!strcmp(s, "SPOT") || !strcmp(s, "FLEX_START")) ? QUOTA_PREEMPTIBLE :
								       QUOTA_STANDARD;
}

static void reply_quota(struct request *req, const struct quotas *q, bool vertex,
			const char *project, const char *region, enum quota_class c,
			const struct quota_excess *ex, size_t n)
{
	json_t *violations = json_array();
	struct strbuf msg = STRBUF_INIT;

	if (vertex) {
		sb_addstr(&msg, "The following quota metrics exceed quota limits: ");
		for (size_t i = 0; i < n; i++) {
			char *metric = quota_vertex_metric(ex[i].resource, c);
			sb_addf(&msg, "%s%s", i ? ", " : "", metric);
			json_array_append_new(violations, json_pack("{s:s, s:s}", "subject", project,
								    "description", metric));
			free(metric);
		}
	} else {
		/* ml v1 names one accelerator (or the CPUs), as Google does. */
		char *d = quota_ml_description(q, req->catalog, project, region, c, &ex[0]);
		sb_addf(&msg, "Quota failure for project %s. %s " ML_QUOTA_PAGE, project, d);
		json_array_append_new(violations, json_pack("{s:s, s:s}", "subject", project,
							    "description", d));
		free(d);
	}
	json_t *details = json_pack("[{s:s, s:o}]", "@type",
				    "type.googleapis.com/google.rpc.QuotaFailure", "violations",
				    violations);
	log_info("create in project %s refused: %s", project, sb_str(&msg));
	reply_error_full(req, API_RESOURCE_EXHAUSTED, 429, details, sb_str(&msg));
	sb_release(&msg);
}

bool api_quota_refuse(struct request *req, bool vertex, const char *project, const char *region,
		      const json_t *stored, const json_t *labels)
{
	struct snap_ref *ref = NULL;
	/* (a server built without the quotas snapshot, as the fuzz harness's, has none) */
	const struct quotas *q = req->srv->quotas ? snapshot_acquire(req->srv->quotas, &ref) : NULL;
	struct training_spec spec;
	struct job_plan plan = { 0 };
	char err[256];
	bool refused = false;

	if (!q) {
		snapshot_release(ref);
		return false;
	}
	spec_parse_stored(stored, region, &spec);
	if (!spec_plan_replicas(req->catalog, &spec, labels, NULL, &plan, err, sizeof(err))) {
		struct quota_amounts asked;
		struct quota_excess ex[QUOTA_MAX_RESOURCES];
		enum quota_class c = class_of(&spec);
		quota_amounts_of_plan(&plan, &asked);
		size_t n = quotas_check(q, project, spec.region ? spec.region : region, c, NULL,
					&asked, ex, QUOTA_MAX_RESOURCES);
		if (n) {
			/* ml v1 speaks of accelerators first, as its quota message does */
			for (size_t i = 1; i < n && !vertex; i++)
				if (!strcmp(ex[0].resource, QUOTA_CPUS)) {
					struct quota_excess t = ex[0];
					ex[0] = ex[i];
					ex[i] = t;
				}
			reply_quota(req, q, vertex, project, spec.region ? spec.region : region, c,
				    ex, n);
			refused = true;
		}
		job_plan_release(&plan);
	}
	spec_release(&spec);
	snapshot_release(ref);
	return refused;
}

/* The entry of resource in the region's list (added when missing). */
static json_t *entry_of(json_t *list, const char *resource)
{
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "resource")) ?: "", resource))
			return e;
	e = json_pack("{s:s}", "resource", resource);
	json_array_append_new(list, e);
	return e;
}

void api_quotas_get(struct request *req)
{
	const char *project = req->params[0];
	struct snap_ref *ref = NULL;
	json_t *usage = NULL;

	if (!project_id_valid(project)) {
		reply_error(req, API_INVALID_ARGUMENT, "The project id is not valid.");
		return;
	}
	enum store_rc rc = store_quota_usage(req->srv->store, project, &usage);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	const struct quotas *q = req->srv->quotas ? snapshot_acquire(req->srv->quotas, &ref) : NULL;
	json_t *regions = json_object(), *names = quotas_regions_json(q, project), *v;
	size_t i;
	json_array_foreach(names, i, v)
		json_object_set_new(regions, json_string_value(v),
				    quotas_limits_json(q, project, json_string_value(v)));
	json_array_foreach(json_object_get(usage, "usage"), i, v) {
		const char *region = json_string_value(json_object_get(v, "region")) ?: "";
		json_t *list = json_object_get(regions, region);
		if (!list) {
			list = quotas_limits_json(q, project, region);
			json_object_set_new(regions, region, list);
		}
		json_t *e = entry_of(list, json_string_value(json_object_get(v, "resource")) ?: "");
		json_object_set_new(e, json_is_true(json_object_get(v, "preemptible")) ?
				    "preemptibleUsage" : "usage",
				    json_sprintf("%lld", (long long)json_integer_value(
					    json_object_get(v, "count"))));
	}
	json_t *out = json_pack("{s:s, s:f, s:b, s:o, s:[]}", "project", project, "weight",
				quotas_weight(q, project), "configured", q != NULL, "limits",
				quotas_limits_json(q, project, ""), "regions");
	const char *name;
	json_object_foreach(regions, name, v)
		json_array_append_new(json_object_get(out, "regions"),
				      json_pack("{s:s, s:O}", "region", name, "quotas", v));
	json_t *queued = json_object();
	json_array_foreach(json_object_get(usage, "queued"), i, v)
		json_object_set_new(queued, json_string_value(json_object_get(v, "code")) ?: "unknown",
				    json_sprintf("%lld", (long long)json_integer_value(
					    json_object_get(v, "n"))));
	json_object_set_new(out, "queuedJobs", queued);
	snapshot_release(ref);
	json_decref(regions);
	json_decref(names);
	json_decref(usage);
	reply_json(req, 200, out);
}

void api_queue_list(struct request *req)
{
	const char *project = req->params[0];
	json_t *jobs = NULL, *j;
	size_t i;

	if (!project_id_valid(project)) {
		reply_error(req, API_INVALID_ARGUMENT, "The project id is not valid.");
		return;
	}
	enum store_rc rc = store_quota_queue(req->srv->store, project, &jobs);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	/* Each job as its API names it. */
	json_array_foreach(jobs, i, j) {
		const char *api = json_string_value(json_object_get(j, "api")) ?: "";
		const char *id = json_string_value(json_object_get(j, "jobId")) ?: "";
		json_object_set_new(j, "name", !strcmp(api, "vertex") ?
				    json_sprintf("projects/%s/locations/%s/customJobs/%s", project,
						 json_string_value(json_object_get(j, "region")) ?: "", id) :
				    json_sprintf("projects/%s/jobs/%s", project, id));
		json_object_del(j, "id");
		if (!*(json_string_value(json_object_get(j, "strategy")) ?: ""))
			json_object_del(j, "strategy");
	}
	reply_json(req, 200, json_pack("{s:o}", "jobs", jobs));
}
