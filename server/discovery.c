/*
 * discovery.c - the discovery documents (discovery.h): made once from the
 * route table, the message descriptors and method_docs[] below, and served
 * with the rootUrl of the request.
 */
#include "discovery.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_types.h"
#include "http_internal.h"
#include "log.h"
#include "ml_types.h"
#include "vertex_types.h"

#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

/* --- what the route table does not say ------------------------------------- */

struct query_doc {
	const char *name;
	const char *type;	/* "string", "integer" */
	const char *format;	/* NULL, "int32", "google-fieldmask", "google-duration" */
	const char *description;
};

static const struct query_doc ml_list_query[] = {
	{ "filter", "string", NULL,
	  "Optional. The jobs to list, e.g. state:QUEUED AND labels.owner=alice." },
	{ "pageSize", "integer", "int32", "Optional. At most this many jobs (20 by default, 100 at most)." },
	{ "pageToken", "string", NULL, "Optional. The nextPageToken of the previous page." },
	{ NULL },
};
static const struct query_doc page_query[] = {
	{ "pageSize", "integer", "int32", "Optional. At most this many in a page." },
	{ "pageToken", "string", NULL, "Optional. The nextPageToken of the previous page." },
	{ NULL },
};
static const struct query_doc vertex_list_query[] = {
	{ "filter", "string", NULL,
	  "Optional. state, display_name, create_time and labels.KEY, e.g. "
	  "state=\"JOB_STATE_SUCCEEDED\"." },
	{ "pageSize", "integer", "int32", "Optional. At most this many in a page." },
	{ "pageToken", "string", NULL, "Optional. The nextPageToken of the previous page." },
	{ "readMask", "string", "google-fieldmask", "Accepted and ignored: every field is returned." },
	{ NULL },
};
static const struct query_doc operations_list_query[] = {
	{ "filter", "string", NULL, "Accepted and ignored." },
	{ "pageSize", "integer", "int32", "Optional. At most this many in a page." },
	{ "pageToken", "string", NULL, "Optional. The nextPageToken of the previous page." },
	{ NULL },
};
static const struct query_doc patch_query[] = {
	{ "updateMask", "string", "google-fieldmask",
	  "Required. labels (the only field that changes), and etag to refuse the update of a "
	  "job changed since it was read." },
	{ NULL },
};
static const struct query_doc get_iam_policy_query[] = {
	{ "options.requestedPolicyVersion", "integer", "int32",
	  "Optional. 0, 1 or 3; the policy is version 1 (no conditions)." },
	{ NULL },
};
static const struct query_doc wait_query[] = {
	{ "timeout", "string", "google-duration",
	  "Accepted and ignored: every operation is done when it is returned." },
	{ NULL },
};

struct method_doc {
	const char *operation_id;
	const struct schema_message *request;	/* the body; NULL: none */
	const struct schema_message *response;
	const struct query_doc *query;	/* NULL: none */
	const char *description;
};

static const struct method_doc method_docs[] = {
	/* ml v1 */
	{ "ml.projects.getConfig", NULL, &ml_get_config_response_message, NULL,
	  "The service accounts of a project." },
	{ "ml.projects.jobs.create", &ml_job_message, &ml_job_message, NULL,
	  "Creates a training job: validated, stored, queued." },
	{ "ml.projects.jobs.list", NULL, &ml_list_jobs_response_message, ml_list_query,
	  "Lists a project's jobs, newest first." },
	{ "ml.projects.jobs.get", NULL, &ml_job_message, NULL, "Describes a job." },
	{ "ml.projects.jobs.patch", &ml_job_message, &ml_job_message, patch_query,
	  "Updates a job's labels (optionally only if its etag still matches)." },
	{ "ml.projects.jobs.cancel", &ml_cancel_job_request_message, &api_empty_message, NULL,
	  "Cancels a job." },
	{ "ml.projects.jobs.getIamPolicy", NULL, &iam_policy_message, get_iam_policy_query,
	  "A job's access control policy." },
	{ "ml.projects.jobs.setIamPolicy", &iam_set_policy_request_message, &iam_policy_message,
	  NULL, "Replaces a job's access control policy." },
	{ "ml.projects.jobs.testIamPermissions", &iam_test_permissions_request_message,
	  &iam_test_permissions_response_message, NULL,
	  "Which of the given permissions the caller holds on a job." },
	{ "ml.projects.locations.list", NULL, &ml_list_locations_response_message, page_query,
	  "The regions that run training jobs." },
	{ "ml.projects.locations.get", NULL, &ml_location_message, NULL,
	  "A region and the accelerators it offers." },
	/* aiplatform v1: the training subset */
	{ "aiplatform.projects.locations.customJobs.create", &vertex_custom_job_message,
	  &vertex_custom_job_message, NULL, "Creates a CustomJob." },
	{ "aiplatform.projects.locations.customJobs.list", NULL,
	  &vertex_list_custom_jobs_response_message, vertex_list_query,
	  "Lists a location's CustomJobs, newest first." },
	{ "aiplatform.projects.locations.customJobs.get", NULL, &vertex_custom_job_message, NULL,
	  "Describes a CustomJob." },
	{ "aiplatform.projects.locations.customJobs.delete", NULL, &api_operation_message, NULL,
	  "Deletes a finished CustomJob." },
	{ "aiplatform.projects.locations.customJobs.cancel", &api_empty_message, &api_empty_message,
	  NULL, "Cancels a CustomJob." },
	{ "aiplatform.projects.locations.trainingPipelines.create",
	  &vertex_training_pipeline_message, &vertex_training_pipeline_message, NULL,
	  "Creates a TrainingPipeline (the custom task) and its CustomJob." },
	{ "aiplatform.projects.locations.trainingPipelines.list", NULL,
	  &vertex_list_training_pipelines_response_message, vertex_list_query,
	  "Lists a location's TrainingPipelines, newest first." },
	{ "aiplatform.projects.locations.trainingPipelines.get", NULL,
	  &vertex_training_pipeline_message, NULL, "Describes a TrainingPipeline." },
	{ "aiplatform.projects.locations.trainingPipelines.delete", NULL, &api_operation_message,
	  NULL, "Deletes a finished TrainingPipeline." },
	{ "aiplatform.projects.locations.trainingPipelines.cancel", &api_empty_message,
	  &api_empty_message, NULL, "Cancels a TrainingPipeline." },
	{ "aiplatform.projects.locations.hyperparameterTuningJobs.create",
	  &vertex_hyperparameter_tuning_job_message, &vertex_hyperparameter_tuning_job_message,
	  NULL, "Creates a HyperparameterTuningJob." },
	{ "aiplatform.projects.locations.hyperparameterTuningJobs.list", NULL,
	  &vertex_list_hyperparameter_tuning_jobs_response_message, vertex_list_query,
	  "Lists a location's HyperparameterTuningJobs, newest first." },
	{ "aiplatform.projects.locations.hyperparameterTuningJobs.get", NULL,
	  &vertex_hyperparameter_tuning_job_message, NULL, "Describes a HyperparameterTuningJob." },
	{ "aiplatform.projects.locations.hyperparameterTuningJobs.delete", NULL,
	  &api_operation_message, NULL, "Deletes a finished HyperparameterTuningJob." },
	{ "aiplatform.projects.locations.hyperparameterTuningJobs.cancel", &api_empty_message,
	  &api_empty_message, NULL, "Cancels a HyperparameterTuningJob." },
	{ "aiplatform.projects.locations.operations.list", NULL,
	  &api_list_operations_response_message, operations_list_query,
	  "Lists a location's operations (the deletes)." },
	{ "aiplatform.projects.locations.operations.get", NULL, &api_operation_message, NULL,
	  "Describes an operation." },
	{ "aiplatform.projects.locations.operations.delete", NULL, &api_empty_message, NULL,
	  "Forgets an operation." },
	{ "aiplatform.projects.locations.operations.wait", NULL, &api_operation_message,
	  wait_query, "Waits for an operation: every one is done, so this answers at once." },
	/* logging v2: what stream-logs reads */
	{ "logging.entries.list", &logging_list_entries_request_message,
	  &logging_list_entries_response_message, NULL,
	  "Lists the log entries of a project's jobs (resource.type ml_job)." },
};

struct api_doc {
	const char *name, *version, *title, *description;
	const char *prefix;	/* of its operation ids */
};

static const struct api_doc apis[] = {
	{ "ml", "v1", "AI Platform Training API (trainplane)",
	  "Training jobs of AI Platform Training (ml v1), served by trainplane.", "ml." },
	{ "aiplatform", "v1", "Vertex AI API: training (trainplane)",
	  "Vertex AI CustomJobs, TrainingPipelines and HyperparameterTuningJobs, served by "
	  "trainplane.", "aiplatform." },
	{ "logging", "v2", "Cloud Logging API: job logs (trainplane)",
	  "The log entries of training jobs (entries.list), served by trainplane.", "logging." },
};
#define NAPIS ARRAY_SIZE(apis)

static const struct method_doc *method_doc_of(const char *operation_id)
{
	for (size_t i = 0; i < ARRAY_SIZE(method_docs); i++)
		if (!strcmp(method_docs[i].operation_id, operation_id))
			return &method_docs[i];
	return NULL;
}

/* --- paths -------------------------------------------------------------------- */

/*
 * A route's pattern as discovery writes it: "/v1/projects/{projectsId}/jobs/
 * {jobsId}:cancel" is flatPath "v1/projects/{projectsId}/jobs/{jobsId}:cancel"
 * and path "v1/{+name}:cancel", the parameter "name" matching
 * ^projects/[^/]+/jobs/[^/]+$. The resource's name runs from the segment
 * after the version to the last variable; what follows it is a collection
 * ("/jobs": the parameter is its parent) or a verb. Google's names:
 * "resource" for the IAM verbs, "name" for longrunning's operations list.
 */
struct method_path {
	char *flat, *path;
	char *param;		/* NULL: the path has no variable */
	char *regex;
	char *span;		/* "projects/{projectsId}/jobs/{jobsId}" */
};

static void method_path_release(struct method_path *p)
{
	free(p->flat);
	free(p->path);
	free(p->param);
	free(p->regex);
	free(p->span);
}

static bool literal_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

static int method_path_of(const char *pattern, struct method_path *out)
{
	const char *flat = pattern + 1, *slash = strchr(flat, '/');
	const char *rest, *last;

	*out = (struct method_path){ .flat = xstrdup(flat) };
	if (!slash || !(last = strrchr(slash, '}'))) {
		out->path = xstrdup(flat);
		return 0;
	}
	rest = slash + 1;
	size_t span_len = (size_t)(last + 1 - rest);
	const char *suffix = last + 1;
	struct strbuf re = STRBUF_INIT;

	sb_addch(&re, '^');
	for (const char *p = rest; p < last + 1; p++) {
		if (*p == '{') {
			const char *close = strchr(p, '}');
			sb_addstr(&re, "[^/]+");
			p = close;
		} else if (*p == '/' || literal_char(*p)) {
			sb_addch(&re, *p);
		} else {
			sb_release(&re);
			method_path_release(out);
			return -1;	/* nothing a regex could mistake */
		}
	}
	sb_addch(&re, '$');
	out->regex = sb_detach(&re);
	out->span = xstrndup(rest, span_len);
	if (*suffix == '/')
		out->param = xstrdup(strcmp(suffix, "/operations") ? "parent" : "name");
	else if (!strcmp(suffix, ":getIamPolicy") || !strcmp(suffix, ":setIamPolicy") ||
		 !strcmp(suffix, ":testIamPermissions"))
		out->param = xstrdup("resource");
	else
		out->param = xstrdup("name");
	out->path = xasprintf("%.*s{+%s}%s", (int)(rest - flat), flat, out->param, suffix);
	return 0;
}

/* --- schemas ------------------------------------------------------------------ */

#define TYPE_PREFIX "type.googleapis.com/"

/* "type.googleapis.com/google.cloud.ml.v1.Job" -> "GoogleCloudMlV1Job", as Google names them. */
static char *schema_name(const struct schema_message *m)
{
	const char *t = m->type_url;
	struct strbuf sb = STRBUF_INIT;
	bool up = true;

	if (!strncmp(t, TYPE_PREFIX, strlen(TYPE_PREFIX)))
		t += strlen(TYPE_PREFIX);
	for (; *t; t++) {
		if (*t == '.') {
			up = true;
			continue;
		}
		sb_addch(&sb, up && *t >= 'a' && *t <= 'z' ? (char)(*t - 'a' + 'A') : *t);
		up = false;
	}
	return sb_detach(&sb);
}

static json_t *message_ref(const struct schema_message *m)
{
	char *name = schema_name(m);
	json_t *o = json_pack("{s:s}", "$ref", name);
	free(name);
	return o;
}

static json_t *kind_schema(const struct schema_field *f)
{
	switch (f->kind) {
	case SK_STRING: return json_pack("{s:s}", "type", "string");
	case SK_BYTES: return json_pack("{s:s, s:s}", "type", "string", "format", "byte");
	case SK_BOOL: return json_pack("{s:s}", "type", "boolean");
	case SK_INT32: return json_pack("{s:s, s:s}", "type", "integer", "format", "int32");
	case SK_INT64: return json_pack("{s:s, s:s}", "type", "string", "format", "int64");
	case SK_DOUBLE: return json_pack("{s:s, s:s}", "type", "number", "format", "double");
	case SK_DURATION:
		return json_pack("{s:s, s:s}", "type", "string", "format", "google-duration");
	case SK_TIMESTAMP:
		return json_pack("{s:s, s:s}", "type", "string", "format", "google-datetime");
	case SK_STRUCT: return json_pack("{s:s}", "type", "any");
	case SK_ENUM: {
		json_t *names = json_array();
		for (size_t i = 0; i < f->enumeration->count; i++)
			json_array_append_new(names, json_string(f->enumeration->names[i]));
		return json_pack("{s:s, s:o}", "type", "string", "enum", names);
	}
	case SK_MESSAGE: return message_ref(f->message);
	}
	return json_pack("{s:s}", "type", "any");
}

static json_t *field_schema(const struct schema_field *f)
{
	json_t *o;

	if (f->repeated)
		o = json_pack("{s:s, s:o}", "type", "array", "items", kind_schema(f));
	else if (f->map)
		o = json_pack("{s:s, s:o}", "type", "object", "additionalProperties", kind_schema(f));
	else
		o = kind_schema(f);
	if (f->output_only) {
		json_object_set_new(o, "description", json_string("Output only."));
		json_object_set_new(o, "readOnly", json_true());
	}
	return o;
}

struct messages {
	const struct schema_message **list;
	size_t n;
};

static void collect(struct messages *ms, const struct schema_message *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < ms->n; i++)
		if (ms->list[i] == m)
			return;
	ms->list = xrealloc(ms->list, (ms->n + 1) * sizeof(*ms->list));
	ms->list[ms->n++] = m;
	for (size_t i = 0; i < m->count; i++)
		if (m->fields[i].kind == SK_MESSAGE)
			collect(ms, m->fields[i].message);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* schemas: every message reachable from the methods', sorted by name. -1 on a name twice. */
static int add_schemas(json_t *schemas, const struct messages *ms, char *err, size_t errlen)
{
	char **names = xcalloc(ms->n ? ms->n : 1, sizeof(*names));
	json_t *by_name = json_object();
	int rc = 0;

	for (size_t i = 0; i < ms->n; i++) {
		const struct schema_message *m = ms->list[i];
		json_t *props = json_object();
		names[i] = schema_name(m);
		for (size_t k = 0; k < m->count; k++)
			json_object_set_new(props, m->fields[k].json, field_schema(&m->fields[k]));
		if (json_object_get(by_name, names[i])) {
			snprintf(err, errlen, "two messages are named %s", names[i]);
			rc = -1;
		}
		json_object_set_new(by_name, names[i],
				    json_pack("{s:s, s:s, s:s, s:o}", "id", names[i], "type",
					      "object", "description",
					      m->type_url + strlen(TYPE_PREFIX), "properties",
					      props));
	}
	qsort(names, ms->n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < ms->n; i++) {
		json_object_set(schemas, names[i], json_object_get(by_name, names[i]));
		free(names[i]);
	}
	free(names);
	json_decref(by_name);
	return rc;
}

/* --- a document --------------------------------------------------------------- */

static json_t *system_parameters(void)
{
	json_t *params = json_object();

	for (size_t i = 0; i < sysparam_docs_count; i++) {
		const struct sysparam_doc *d = &sysparam_docs[i];
		json_t *p = json_pack("{s:s, s:s, s:s}", "type", d->type, "location", "query",
				      "description", d->description);
		if (d->default_value)
			json_object_set_new(p, "default", json_string(d->default_value));
		if (d->values) {
			json_t *values = json_array();
			for (const char *const *v = d->values; *v; v++)
				json_array_append_new(values, json_string(*v));
			json_object_set_new(p, "enum", values);
		}
		json_object_set_new(params, d->name, p);
	}
	return params;
}

/* The object at resources.<a>.resources.<b>... for "projects.jobs", made as needed. */
static json_t *resource_at(json_t *root, const char *path, size_t len)
{
	json_t *at = root;

	while (len) {
		size_t seg = strcspn(path, ".");
		if (seg > len)
			seg = len;
		json_t *resources = json_object_get(at, "resources");
		if (!resources) {
			resources = json_object();
			json_object_set_new(at, "resources", resources);
		}
		char *name = xstrndup(path, seg);
		json_t *next = json_object_get(resources, name);
		if (!next) {
			next = json_object();
			json_object_set_new(resources, name, next);
		}
		free(name);
		at = next;
		path += seg;
		len -= seg;
		if (len) {
			path++;
			len--;
		}
	}
	return at;
}

/* One method; -1 with err when its route cannot be described. */
static int add_method(json_t *root, const struct api_doc *api, const struct route *r,
		      struct messages *ms, char *err, size_t errlen)
{
	const struct method_doc *d = method_doc_of(r->operation_id);
	const char *id = r->operation_id + strlen(api->prefix);
	const char *dot = strrchr(id, '.');
	struct method_path mp;

	if (!d || !d->response || !dot) {
		snprintf(err, errlen, "%s: no method_docs[] entry", r->operation_id);
		return -1;
	}
	if (method_path_of(r->pattern, &mp)) {
		snprintf(err, errlen, "%s: a pattern discovery cannot write: %s", r->operation_id,
			 r->pattern);
		return -1;
	}
	json_t *params = json_object(), *order = json_array();
	if (mp.param) {
		char *desc = xasprintf("Required. %s: %s.", !strcmp(mp.param, "parent") ?
				       "The parent" : !strcmp(mp.param, "resource") ?
				       "The resource the policy is of" : "The name", mp.span);
		json_object_set_new(params, mp.param,
				    json_pack("{s:s, s:s, s:b, s:s, s:s}", "type", "string",
					      "location", "path", "required", 1, "pattern",
					      mp.regex, "description", desc));
		json_array_append_new(order, json_string(mp.param));
		free(desc);
	}
	for (const struct query_doc *q = d->query; q && q->name; q++) {
		json_t *p = json_pack("{s:s, s:s, s:s}", "type", q->type, "location", "query",
				      "description", q->description);
		if (q->format)
			json_object_set_new(p, "format", json_string(q->format));
		json_object_set_new(params, q->name, p);
	}
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "id", r->operation_id,
			      "description", d->description, "httpMethod", r->method, "path",
			      mp.path, "flatPath", mp.flat, "parameters", params,
			      "parameterOrder", order);
	if (d->request)
		json_object_set_new(m, "request", message_ref(d->request));
	json_object_set_new(m, "response", message_ref(d->response));
	json_object_set_new(m, "scopes", json_pack("[s]", CLOUD_PLATFORM));
	collect(ms, d->request);
	collect(ms, d->response);

	json_t *res = resource_at(root, id, (size_t)(dot - id));
	json_t *methods = json_object_get(res, "methods");
	if (!methods) {
		methods = json_object();
		json_object_set_new(res, "methods", methods);
	}
	json_object_set_new(methods, dot + 1, m);
	method_path_release(&mp);
	return 0;
}

/*
 * The document of api as two compact texts, rootUrl, servicePath, baseUrl
 * and batchPath to go between them: head {"kind", ..., "protocol"} and
 * tail {"parameters", "auth", "resources", "schemas"}.
 */
struct doc_text {
	char *head, *tail;
	char err[256];		/* when head is NULL */
};

static void build(const struct api_doc *api, struct doc_text *out)
{
	struct messages ms = { 0 };
	json_t *tail = json_pack("{s:o, s:{s:{s:{s:{s:s}}}}}", "parameters", system_parameters(),
				 "auth", "oauth2", "scopes", CLOUD_PLATFORM, "description",
				 "See, edit, configure and delete your training jobs.");
	json_t *schemas = json_object();
	size_t methods = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i < routes_count; i++) {
		if (strncmp(routes[i].operation_id, api->prefix, strlen(api->prefix)))
			continue;
		rc = add_method(tail, api, &routes[i], &ms, out->err, sizeof(out->err));
		methods++;
	}
	size_t described = 0;
	for (size_t i = 0; i < ARRAY_SIZE(method_docs); i++)
		described += !strncmp(method_docs[i].operation_id, api->prefix, strlen(api->prefix));
	if (!rc && (!methods || methods != described)) {
		snprintf(out->err, sizeof(out->err), "%zu routes of %s, %zu method_docs[] entries",
			 methods, api->name, described);
		rc = -1;
	}
	if (!rc)
		rc = add_schemas(schemas, &ms, out->err, sizeof(out->err));
	json_object_set_new(tail, "schemas", schemas);
	if (!rc) {
		char *id = xasprintf("%s:%s", api->name, api->version);
		json_t *head = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "kind",
					 "discovery#restDescription", "discoveryVersion", "v1",
					 "id", id, "name", api->name, "version", api->version,
					 "title", api->title, "description", api->description,
					 "protocol", "rest");
		out->head = json_dumps(head, JSON_COMPACT);
		out->tail = json_dumps(tail, JSON_COMPACT);
		json_decref(head);
		free(id);
	}
	json_decref(tail);
	free(ms.list);
}

static struct doc_text texts[NAPIS];
static pthread_once_t built = PTHREAD_ONCE_INIT;

static void build_all(void)
{
	for (size_t i = 0; i < NAPIS; i++) {
		build(&apis[i], &texts[i]);
		if (!texts[i].head)
			log_error("discovery document of %s %s: %s", apis[i].name, apis[i].version,
				  texts[i].err);
	}
}

static const struct api_doc *api_find(const char *name, const char *version)
{
	for (size_t i = 0; i < NAPIS; i++)
		if (!strcmp(apis[i].name, name) && (!version || !strcmp(apis[i].version, version)))
			return &apis[i];
	return NULL;
}

/* The document with rootUrl scheme://host/; NULL when it could not be made. */
static char *compose(const struct api_doc *api, const char *scheme, const char *host,
		     size_t *len)
{
	const struct doc_text *t = &texts[api - apis];
	struct strbuf sb = STRBUF_INIT, root = STRBUF_INIT;

	pthread_once(&built, build_all);
	if (!t->head)
		return NULL;
	sb_addf(&root, "%s://%s/", scheme, host);
	sb_add(&sb, t->head, strlen(t->head) - 1);	/* without its '}' */
	sb_addstr(&sb, ",\"rootUrl\":");
	sb_add_json_str(&sb, sb_str(&root));
	sb_addstr(&sb, ",\"servicePath\":\"\",\"baseUrl\":");
	sb_add_json_str(&sb, sb_str(&root));
	sb_addstr(&sb, ",\"batchPath\":\"batch\",");
	sb_addstr(&sb, t->tail + 1);	/* without its '{' */
	sb_release(&root);
	*len = sb.len;
	return sb_detach(&sb);
}

char *discovery_document(const char *api, const char *version, const char *scheme,
			 const char *host, size_t *len)
{
	const struct api_doc *a = api_find(api, version);

	return a && discovery_host_valid(host) ? compose(a, scheme, host, len) : NULL;
}

/* --- serving ------------------------------------------------------------------ */

bool discovery_host_valid(const char *h)
{
	size_t n = strlen(h), i = 0;
	unsigned long port = 0;

	if (!n || n > 260)
		return false;
	if (h[0] == '[') {
		for (i = 1; i < n && h[i] != ']'; i++)
			if (!((h[i] >= '0' && h[i] <= '9') || ((h[i] | 0x20) >= 'a' &&
			      (h[i] | 0x20) <= 'f') || h[i] == ':' || h[i] == '.'))
				return false;
		if (i == n || i < 3)	/* "[::]" at least */
			return false;
		i++;
	} else {
		for (; i < n && h[i] != ':'; i++)
			if (!(literal_char(h[i]) && h[i] != '_') && h[i] != '.')
				return false;
		if (!i || h[0] == '.' || h[0] == '-')
			return false;
	}
	if (i == n)
		return true;
	if (h[i++] != ':' || n - i < 1 || n - i > 5)
		return false;
	for (; i < n; i++) {
		if (h[i] < '0' || h[i] > '9')
			return false;
		port = port * 10 + (unsigned long)(h[i] - '0');
	}
	return port >= 1 && port <= 65535;
}

/* The request's Host when discovery_host_valid(); else NULL, replied 400. */
static const char *host_or_reply(struct request *req)
{
	const char *host = req_header(req, "Host");

	if (host && discovery_host_valid(host))
		return host;
	reply_error(req, API_INVALID_ARGUMENT,
		    "The discovery document names the server by the request's Host header, "
		    "which must be host[:port]: a DNS name, an IPv4 address or an IPv6 address in "
		    "brackets, and a port from 1 to 65535.");
	return NULL;
}

static void reply_document(struct request *req, const struct api_doc *api, const char *host)
{
	size_t len;
	char *text = compose(api, req->srv->tls_cert_pem ? "https" : "http", host, &len);
	if (!text) {
		reply_error(req, API_INTERNAL, "The discovery document of %s %s could not be made.",
			    api->name, api->version);
		return;
	}
	reply_json_text(req, 200, text, len);
}

/* Whether s may be quoted in a message: a few plain characters. */
static bool plain(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		if (!literal_char(s[i]) && s[i] != '.')
			return false;
	return n && n <= 32;
}

static void reply_unknown(struct request *req, const char *api, const char *version)
{
	static const char served[] = "trainplane serves ml v1, aiplatform v1 and logging v2";

	if (plain(api) && plain(version))
		reply_error(req, API_NOT_FOUND, "No API %s %s is described here: %s.", api, version,
			    served);
	else
		reply_error(req, API_NOT_FOUND, "No such API is described here: %s.", served);
}

void api_discovery_get_rest(struct request *req)
{
	const struct api_doc *api = api_find(req->params[0], req->params[1]);
	const char *host;

	if (!api)
		reply_unknown(req, req->params[0], req->params[1]);
	else if ((host = host_or_reply(req)))
		reply_document(req, api, host);
}

/*
 * The API of /$discovery/rest is its host's, as on Google (ml.googleapis.com,
 * us-central1-aiplatform.googleapis.com): the first label of the Host
 * header, "<region>-aiplatform" for aiplatform. NULL: it names none.
 */
static const char *api_of_host(const char *host)
{
	size_t n = strcspn(host, ".:");
	static const char aiplatform[] = "-aiplatform";
	size_t an = strlen(aiplatform);

	if (!host[n] || host[n] != '.')
		return NULL;	/* one label: no API named */
	if (n > an && !strncasecmp(host + n - an, aiplatform, an))
		return "aiplatform";
	for (size_t i = 0; i < NAPIS; i++)
		if (strlen(apis[i].name) == n && !strncasecmp(host, apis[i].name, n))
			return apis[i].name;
	return NULL;
}

void api_discovery_rest(struct request *req)
{
	const char *version = req_query(req, "version"), *host = host_or_reply(req), *name;

	if (!host)
		return;
	if (!version || !*version) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "The version query parameter is required: /$discovery/rest?version=v1.");
		return;
	}
	if (!(name = api_of_host(host))) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "/$discovery/rest describes the API its host names (ml.HOST, "
			    "aiplatform.HOST, logging.HOST); this host names none. Ask for "
			    "/discovery/v1/apis/{api}/{version}/rest instead, e.g. "
			    "/discovery/v1/apis/ml/v1/rest.");
		return;
	}
	const struct api_doc *api = api_find(name, version);
	if (!api)
		reply_unknown(req, name, version);
	else
		reply_document(req, api, host);
}
