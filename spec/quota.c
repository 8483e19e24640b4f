#include "quota.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "yamldoc.h"

struct quotas {
	json_t *doc;		/* checked by quotas_parse() */
	int preempt_below;
};

void quota_amounts_add(struct quota_amounts *a, const char *resource, int64_t count)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->v[i].resource, resource)) {
			a->v[i].count += count;
			return;
		}
	if (a->n == QUOTA_MAX_RESOURCES)
		return;		/* (more types than a catalog holds: cannot happen) */
	a->v[a->n].resource = resource;
	a->v[a->n++].count = count;
}

int64_t quota_amounts_get(const struct quota_amounts *a, const char *resource)
{
	for (size_t i = 0; a && i < a->n; i++)
		if (!strcmp(a->v[i].resource, resource))
			return a->v[i].count;
	return 0;
}

void quota_amounts_of_plan(const struct job_plan *plan, struct quota_amounts *out)
{
	struct plan_totals t;

	memset(out, 0, sizeof(*out));
	job_plan_totals(plan, &t);
	quota_amounts_add(out, QUOTA_CPUS, t.vcpus);
	for (size_t i = 0; i < t.naccel; i++)
		if (t.accel[i].count > 0)
			quota_amounts_add(out, t.accel[i].type, t.accel[i].count);
}

/* --- the file ------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...) PRINTF_LIKE(3, 4);
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int check_limits(const json_t *o, const char *where, const struct catalog *cat,
			char *err, size_t errlen)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return fail(err, errlen, "%s: must be a map of resource: limit", where);
	json_object_foreach((json_t *)o, k, v) {
		if (strcmp(k, QUOTA_CPUS) && catalog_accelerator_find(cat, k) < 0)
			return fail(err, errlen, "%s: unknown resource %s (cpus, or an accelerator "
				    "type of the catalog: NVIDIA_TESLA_T4, TPU_V2, ...)", where, k);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return fail(err, errlen, "%s.%s: must be a whole number, 0 or more", where, k);
	}
	return 0;
}

/* One project's (or the default's) section. */
static int check_section(const json_t *s, const char *where, const struct catalog *cat,
			 char *err, size_t errlen)
{
	char sub[512];
	const char *k;
	json_t *v;

	if (!json_is_object(s))
		return fail(err, errlen, "%s: must be a map (weight, limits, preemptible, "
			    "regions)", where);
	json_object_foreach((json_t *)s, k, v) {
		snprintf(sub, sizeof(sub), "%s.%s", where, k);
		if (!strcmp(k, "weight")) {
			if (!json_is_number(v) || json_number_value(v) <= 0 ||
			    json_number_value(v) > 1e6)
				return fail(err, errlen, "%s: must be a number above 0 (and at most "
					    "1000000)", sub);
		} else if (!strcmp(k, "limits") || !strcmp(k, "preemptible")) {
			if (check_limits(v, sub, cat, err, errlen))
				return -1;
		} else if (!strcmp(k, "regions")) {
			const char *rk;
			json_t *rv;
			if (!json_is_object(v))
				return fail(err, errlen, "%s: must be a map of region: {limits, "
					    "preemptible}", sub);
			json_object_foreach(v, rk, rv) {
				char rw[600];
				const char *ck;
				json_t *cv;
				snprintf(rw, sizeof(rw), "%s.%s", sub, rk);
				if (!catalog_has_region(cat, rk))
					return fail(err, errlen, "%s: unknown region %s", sub, rk);
				if (!json_is_object(rv))
					return fail(err, errlen, "%s: must be a map (limits, "
						    "preemptible)", rw);
				json_object_foreach(rv, ck, cv) {
					char cw[700];
					snprintf(cw, sizeof(cw), "%s.%s", rw, ck);
					if (strcmp(ck, "limits") && strcmp(ck, "preemptible"))
						return fail(err, errlen, "%s: unknown key (limits or "
							    "preemptible)", cw);
					if (check_limits(cv, cw, cat, err, errlen))
						return -1;
				}
			}
		} else {
			return fail(err, errlen, "%s: unknown key (weight, limits, preemptible or "
				    "regions)", sub);
		}
	}
	return 0;
}

int quotas_parse(const json_t *doc, const struct catalog *cat, struct quotas **out, char *err,
		 size_t errlen)
{
	const char *k;
	json_t *v;
	int below = 0;

	*out = NULL;
	if (json_is_null(doc) || !doc)
		doc = json_object();	/* an empty file: no limits */
	else
		json_incref((json_t *)doc);
	if (!json_is_object(doc)) {
		json_decref((json_t *)doc);
		return fail(err, errlen, "the quotas file must be a map (default, projects, "
			    "preemption)");
	}
	json_object_foreach((json_t *)doc, k, v) {
		int bad = 0;
		if (!strcmp(k, "default")) {
			bad = check_section(v, "default", cat, err, errlen);
		} else if (!strcmp(k, "projects")) {
			const char *pk;
			json_t *pv;
			if (!json_is_object(v))
				bad = fail(err, errlen, "projects: must be a map of project: "
					   "section");
			json_object_foreach(v, pk, pv) {
				char w[400];
				if (bad)
					break;
				snprintf(w, sizeof(w), "projects.%s", pk);
				bad = check_section(pv, w, cat, err, errlen);
			}
		} else if (!strcmp(k, "preemption")) {
			json_t *b = json_object_get(v, "priority_below");
			if (!json_is_object(v) || json_object_size(v) != (b ? 1 : 0))
				bad = fail(err, errlen, "preemption: must be a map with "
					   "priority_below only");
			else if (b && (!json_is_integer(b) || json_integer_value(b) < 0 ||
				       json_integer_value(b) > 1001))
				bad = fail(err, errlen, "preemption.priority_below: must be a whole "
					   "number from 0 to 1001");
			else if (b)
				below = (int)json_integer_value(b);
		} else {
			bad = fail(err, errlen, "%s: unknown key (default, projects or "
				   "preemption)", k);
		}
		if (bad) {
			json_decref((json_t *)doc);
			return -1;
		}
	}
	*out = xcalloc(1, sizeof(**out));
	(*out)->doc = (json_t *)doc;
	(*out)->preempt_below = below;
	return 0;
}

int quotas_load(const char *path, const struct catalog *cat, struct quotas **out, char *err,
		size_t errlen)
{
	yaml_document_t ydoc;
	char why[1024];
	json_t *doc = NULL;

	*out = NULL;
	if (yaml_doc_load(path, &ydoc, err, errlen))
		return -1;
	yaml_node_t *root = yaml_document_get_root_node(&ydoc);
	if (root && !(doc = yaml_doc_json(&ydoc, root, path, err, errlen))) {
		yaml_document_delete(&ydoc);
		return -1;
	}
	yaml_document_delete(&ydoc);
	int rc = quotas_parse(doc, cat, out, why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "%s: %s", path, why);
	json_decref(doc);
	return rc;
}

void quotas_free(struct quotas *q)
{
	if (!q)
		return;
	json_decref(q->doc);
	free(q);
}

/* The sections that apply to project, most specific first (NULL ends it). */
static void sections_of(const struct quotas *q, const char *project, const json_t *out[3])
{
	const json_t *p = json_object_get(json_object_get(q->doc, "projects"), project);
	size_t n = 0;

	if (p)
		out[n++] = p;
	if (json_object_get(q->doc, "default"))
		out[n++] = json_object_get(q->doc, "default");
	out[n] = NULL;
}

int64_t quotas_limit(const struct quotas *q, const char *project, const char *region,
		     enum quota_class c, const char *resource)
{
	const char *key = c == QUOTA_PREEMPTIBLE ? "preemptible" : "limits";
	const json_t *secs[3];

	if (!q)
		return -1;
	sections_of(q, project, secs);
	for (size_t i = 0; secs[i]; i++) {
		const json_t *r = json_object_get(json_object_get(secs[i], "regions"), region);
		json_t *v = json_object_get(json_object_get(r, key), resource);
		if (!v)
			v = json_object_get(json_object_get(secs[i], key), resource);
		if (v)
			return json_integer_value(v);
	}
	return -1;
}

double quotas_weight(const struct quotas *q, const char *project)
{
	const json_t *secs[3];

	if (!q)
		return 1;
	sections_of(q, project, secs);
	for (size_t i = 0; secs[i]; i++) {
		json_t *w = json_object_get(secs[i], "weight");
		if (w)
			return json_number_value(w);
	}
	return 1;
}

int quotas_preempt_below(const struct quotas *q)
{
	return q ? q->preempt_below : 0;
}

size_t quotas_check(const struct quotas *q, const char *project, const char *region,
		    enum quota_class c, const struct quota_amounts *used,
		    const struct quota_amounts *asked, struct quota_excess *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; q && i < asked->n && n < max; i++) {
		if (asked->v[i].count <= 0)
			continue;
		int64_t limit = quotas_limit(q, project, region, c, asked->v[i].resource);
		int64_t u = quota_amounts_get(used, asked->v[i].resource);
		if (limit >= 0 && u + asked->v[i].count > limit)
			out[n++] = (struct quota_excess){ asked->v[i].resource, asked->v[i].count,
							  u, limit };
	}
	return n;
}

/* --- Google's wording ------------------------------------------------------ */

const char *quota_ml_bucket(const char *resource)
{
	if (!strncmp(resource, "NVIDIA_TESLA_", 13))
		return resource + 13;
	if (!strncmp(resource, "NVIDIA_", 7))
		return resource + 7;
	return resource;
}

static int by_bucket(const void *a, const void *b)
{
	return strcmp(quota_ml_bucket(*(const char *const *)a),
		      quota_ml_bucket(*(const char *const *)b));
}

char *quota_ml_description(const struct quotas *q, const struct catalog *cat, const char *project,
			   const char *region, enum quota_class c, const struct quota_excess *e)
{
	struct strbuf sb = STRBUF_INIT;

	if (!strcmp(e->resource, QUOTA_CPUS)) {
		sb_addf(&sb, "The request for %lld CPUs exceeds the allowed maximum of %lld CPUs",
			(long long)e->asked, (long long)e->limit);
		if (e->used > 0)
			sb_addf(&sb, " (%lld in use)", (long long)e->used);
		sb_addstr(&sb, ".");
		return sb_detach(&sb);
	}
	/* Every accelerator bucket with a limit here, alphabetically, as Google lists them. */
	size_t n = catalog_accelerator_count(cat), k = 0;
	const char **names = xcalloc(n + 1, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		const char *name = catalog_accelerator(cat, i)->name;
		if (quotas_limit(q, project, region, c, name) >= 0)
			names[k++] = name;
	}
	qsort(names, k, sizeof(*names), by_bucket);
	sb_addf(&sb, "The request for %lld %s accelerators exceeds the allowed maximum of ",
		(long long)e->asked, quota_ml_bucket(e->resource));
	for (size_t i = 0; i < k; i++)
		sb_addf(&sb, "%s%lld %s", i ? ", " : "",
			(long long)quotas_limit(q, project, region, c, names[i]),
			quota_ml_bucket(names[i]));
	sb_addstr(&sb, " accelerators");
	if (e->used > 0)
		sb_addf(&sb, " (%lld %s in use)", (long long)e->used, quota_ml_bucket(e->resource));
	sb_addstr(&sb, ".");
	free(names);
	return sb_detach(&sb);
}

char *quota_vertex_metric(const char *resource, enum quota_class c)
{
	const char *pre = c == QUOTA_PREEMPTIBLE ? "preemptible_" : "";
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "aiplatform.googleapis.com/custom_model_training_%s", pre);
	if (!strcmp(resource, QUOTA_CPUS)) {
		sb_addstr(&sb, "cpus");
		return sb_detach(&sb);
	}
	/* NVIDIA_TESLA_T4 -> nvidia_t4_gpus; TPU_V3 -> tpu_v3_cores (the TPU name is
	 * this server's choice: docs/quotas.md) */
	bool tpu = !strncmp(resource, "TPU_", 4);
	const char *rest = !strncmp(resource, "NVIDIA_TESLA_", 13) ? resource + 13 :
			   !strncmp(resource, "NVIDIA_", 7) ? resource + 7 : resource;
	if (rest != resource)
		sb_addstr(&sb, "nvidia_");
	for (const char *p = rest; *p; p++)
		sb_addch(&sb, (char)tolower((unsigned char)*p));
	sb_addstr(&sb, tpu ? "_cores" : "_gpus");
	return sb_detach(&sb);
}

/* Adds to set every resource named in o (a limits map). */
static void names_of(const json_t *o, json_t *set)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
		json_object_set_new(set, k, json_true());
}

json_t *quotas_limits_json(const struct quotas *q, const char *project, const char *region)
{
	json_t *set, *out = json_array();
	const json_t *secs[3];
	const char *k;
	json_t *v;

	if (!q)
		return out;
	set = json_object();
	sections_of(q, project, secs);
	for (size_t i = 0; secs[i]; i++) {
		const json_t *r = json_object_get(json_object_get(secs[i], "regions"), region);
		names_of(json_object_get(secs[i], "limits"), set);
		names_of(json_object_get(secs[i], "preemptible"), set);
		names_of(json_object_get(r, "limits"), set);
		names_of(json_object_get(r, "preemptible"), set);
	}
	json_object_foreach(set, k, v) {
		json_t *o = json_pack("{s:s}", "resource", k);
		int64_t l = quotas_limit(q, project, region, QUOTA_STANDARD, k);
		int64_t p = quotas_limit(q, project, region, QUOTA_PREEMPTIBLE, k);
		if (l >= 0)
			json_object_set_new(o, "limit", json_sprintf("%lld", (long long)l));
		if (p >= 0)
			json_object_set_new(o, "preemptibleLimit", json_sprintf("%lld", (long long)p));
		json_array_append_new(out, o);
	}
	json_decref(set);
	return out;
}

json_t *quotas_regions_json(const struct quotas *q, const char *project)
{
	json_t *set = json_object(), *out = json_array();
	const json_t *secs[3];
	const char *k;
	json_t *v;

	if (q) {
		sections_of(q, project, secs);
		for (size_t i = 0; secs[i]; i++)
			names_of(json_object_get(secs[i], "regions"), set);
	}
	json_object_foreach(set, k, v)
		json_array_append_new(out, json_string(k));
	json_decref(set);
	return out;
}
