/*
 * slurm_v0038.c - slurmrestd's openapi/v0.0.38 (Slurm 22.05 to 23.11):
 * everything that knows its JSON. Facts (run against Debian's 22.05.8):
 * ../shared/reference/slurm.md Part 1 §5-8.
 *
 * - "environment" is required on every component and replaces the job's
 *   environment (a dictionary in this version, a list from v0.0.39);
 * - "requeue": false is ignored: "no_requeue": true turns requeue off;
 * - errors come back as 500 with errors[] (2014 no such node
 *   configuration, 2017 unknown job, -1 from slurm_load_ctl_conf for a bad
 *   or expired token), and as 200 with errors[] (2015: more nodes than the
 *   partition has; the job then pends for ever);
 * - job_state is one string, and a flag (COMPLETING, CONFIGURING, ...)
 *   hides the base state until it clears.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

static long long num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) :
	       json_is_real(v) ? (long long)json_real_value(v) : 0;
}

/* 22.05 to 23.11 carry v0.0.38; 24.05 dropped it. */
static int check_release(const json_t *reply, char *release, size_t rlen, char *err, size_t errlen)
{
	const json_t *v = json_object_get(json_object_get(json_object_get(reply, "meta"), "Slurm"),
					  "version");
	long long major = num(v, "major"), minor = num(v, "minor");

	snprintf(release, rlen, "%s", str(json_object_get(json_object_get(reply, "meta"), "Slurm"),
					  "release"));
	if (!v) {
		snprintf(err, errlen, "the reply names no Slurm release (meta.Slurm.version)");
		return -1;
	}
	bool ok = (major == 22 && minor == 5) || (major == 23 && (minor == 2 || minor == 11));
	if (!ok) {
		snprintf(err, errlen, "Slurm %lld.%02lld is not supported by the openapi/v0.0.38 "
			 "module (Slurm 22.05, 23.02 and 23.11 are)", major, minor);
		return -1;
	}
	return 0;
}

static json_t *component(const struct slurm_submit *s, const struct slurm_component *c)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(s->name));
	json_object_set_new(o, "comment", json_string(s->comment));
	if (s->partition)
		json_object_set_new(o, "partition", json_string(s->partition));
	if (s->account)
		json_object_set_new(o, "account", json_string(s->account));
	if (s->qos)
		json_object_set_new(o, "qos", json_string(s->qos));
	json_object_set_new(o, "tasks", json_integer(c->tasks));
	json_object_set_new(o, "cpus_per_task", json_integer(c->cpus_per_task));
	if (c->memory_per_cpu_mb > 0)
		json_object_set_new(o, "memory_per_cpu", json_integer(c->memory_per_cpu_mb));
	if (c->gpus_per_task > 0) {
		/* Untyped: with a typed count ("t4:1") Slurm 22.05 gave tasks that share
		 * a node no CUDA_VISIBLE_DEVICES at all (seen on 22.05.8). The type
		 * comes from the partition, or from a node feature (constraints). */
		char g[32];
		snprintf(g, sizeof(g), "%d", c->gpus_per_task);
		json_object_set_new(o, "gpus_per_task", json_string(g));
	}
	if (c->constraint)
		json_object_set_new(o, "constraints", json_string(c->constraint));
	if (s->time_limit_min > 0)
		json_object_set_new(o, "time_limit", json_integer(s->time_limit_min));
	if (!s->requeue)
		json_object_set_new(o, "no_requeue", json_true());
	json_object_set_new(o, "current_working_directory", json_string(s->work_dir));
	json_object_set_new(o, "standard_output", json_string(s->output));
	json_object_set_new(o, "standard_error", json_string(s->output));
	json_object_set_new(o, "environment", json_deep_copy(s->environment));
	return o;
}

static json_t *submit_body(const struct slurm_submit *s)
{
	json_t *body = json_object();

	json_object_set_new(body, "script", json_string(s->script));
	if (s->ncomponents == 1) {
		json_object_set_new(body, "job", component(s, &s->components[0]));
	} else {
		json_t *jobs = json_array();
		for (size_t i = 0; i < s->ncomponents; i++)
			json_array_append_new(jobs, component(s, &s->components[i]));
		json_object_set_new(body, "jobs", jobs);
	}
	return body;
}

/* The first of errors[] in one line, and its kind. */
static enum slurm_err first_error(int http, const json_t *reply, char *err, size_t errlen)
{
	const json_t *e = json_array_get(json_object_get(reply, "errors"), 0);
	long long code = json_object_get(e, "error_code") ? num(e, "error_code") :
			 num(e, "error_number");
	const char *what = *str(e, "error") ? str(e, "error") : str(e, "description");

	if (http == 401) {
		snprintf(err, errlen, "slurmrestd refused the request (HTTP 401: no credentials it "
			 "accepts)");
		return SLURM_ERR_UNAVAILABLE;
	}
	if (!e) {
		snprintf(err, errlen, "slurmrestd answered HTTP %d without errors[]", http);
		return http >= 500 ? SLURM_ERR_UNAVAILABLE : SLURM_ERR_PROTOCOL;
	}
	snprintf(err, errlen, "%s (Slurm error %lld%s%s)", *what ? what : "unknown error", code,
		 *str(e, "description") && *str(e, "error") ? ": " : "",
		 *str(e, "description") && *str(e, "error") ? str(e, "description") : "");
	if (code == -1 || !strcmp(str(e, "source"), "slurm_load_ctl_conf"))
		return SLURM_ERR_UNAVAILABLE;	/* a bad or expired token; or no controller */
	if (code == 2017)
		return SLURM_ERR_NOT_FOUND;
	if (http >= 400 && http < 500)
		return SLURM_ERR_PROTOCOL;
	return SLURM_ERR_REJECTED;
}

static enum slurm_err error_of(int http, const json_t *reply, char *err, size_t errlen)
{
	if (http >= 200 && http < 300 && !json_array_size(json_object_get(reply, "errors"))) {
		snprintf(err, errlen, "no error");
		return SLURM_OK;
	}
	return first_error(http, reply, err, errlen);
}

static enum slurm_err submit_result(int http, const json_t *reply, int64_t *job_id, char *err,
				    size_t errlen)
{
	*job_id = num(reply, "job_id");
	if (http == 200 && !json_array_size(json_object_get(reply, "errors"))) {
		if (*job_id > 0)
			return SLURM_OK;
		snprintf(err, errlen, "slurmrestd accepted the job but gave no job_id");
		return SLURM_ERR_PROTOCOL;
	}
	/* 2015 comes with a job id: the job exists and pends for ever. */
	enum slurm_err e = first_error(http, reply, err, errlen);
	return e == SLURM_ERR_UNAVAILABLE && http == 200 ? SLURM_ERR_REJECTED : e;
}

enum slurm_state slurm_state_parse(const char *name)
{
	static const struct {
		const char *name;
		enum slurm_state state;
	} states[] = {
		{ "PENDING", SLURM_PENDING },	      { "RUNNING", SLURM_RUNNING },
		{ "SUSPENDED", SLURM_SUSPENDED },     { "STOPPED", SLURM_SUSPENDED },
		{ "COMPLETED", SLURM_COMPLETED },     { "CANCELLED", SLURM_CANCELLED },
		{ "FAILED", SLURM_FAILED },	      { "TIMEOUT", SLURM_TIMEOUT },
		{ "NODE_FAIL", SLURM_NODE_FAIL },     { "PREEMPTED", SLURM_PREEMPTED },
		{ "BOOT_FAIL", SLURM_BOOT_FAIL },     { "DEADLINE", SLURM_DEADLINE },
		{ "OUT_OF_MEMORY", SLURM_OUT_OF_MEMORY },
		/* flags that hide the base state until they clear */
		{ "COMPLETING", SLURM_TRANSIENT },    { "CONFIGURING", SLURM_TRANSIENT },
		{ "REQUEUED", SLURM_TRANSIENT },      { "REQUEUE_FED", SLURM_TRANSIENT },
		{ "REQUEUE_HOLD", SLURM_TRANSIENT },  { "RESIZING", SLURM_TRANSIENT },
		{ "SIGNALING", SLURM_TRANSIENT },     { "STAGE_OUT", SLURM_TRANSIENT },
		{ "SPECIAL_EXIT", SLURM_TRANSIENT },  { "REVOKED", SLURM_TRANSIENT },
		{ "RESV_DEL_HOLD", SLURM_TRANSIENT }, { "POWER_UP_NODE", SLURM_TRANSIENT },
		{ "UPDATE_DB", SLURM_TRANSIENT },
	};
	for (size_t i = 0; name && i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(name, states[i].name))
			return states[i].state;
	return SLURM_UNKNOWN;
}

bool slurm_state_final(enum slurm_state s)
{
	return s >= SLURM_COMPLETED;
}

static enum slurm_err jobs(const json_t *reply, struct slurm_job_info **out, size_t *n, char *err,
			   size_t errlen)
{
	const json_t *list = json_object_get(reply, "jobs"), *j;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!json_is_array(list)) {
		snprintf(err, errlen, "the reply has no jobs[]");
		return SLURM_ERR_PROTOCOL;
	}
	*out = calloc(json_array_size(list) + 1, sizeof(**out));
	if (!*out)
		abort();
	json_array_foreach(list, i, j) {
		struct slurm_job_info *x = &(*out)[(*n)++];
		x->job_id = num(j, "job_id");
		x->het_job_id = num(j, "het_job_id");
		x->het_offset = (int)num(j, "het_job_offset");
		snprintf(x->state_name, sizeof(x->state_name), "%s", str(j, "job_state"));
		x->state = slurm_state_parse(x->state_name);
		snprintf(x->reason, sizeof(x->reason), "%s", str(j, "state_reason"));
		snprintf(x->description, sizeof(x->description), "%s", str(j, "state_description"));
		x->restart_cnt = (int)num(j, "restart_cnt");
		x->exit_code = (int)num(j, "exit_code");
		x->derived_exit_code = (int)num(j, "derived_exit_code");
		snprintf(x->comment, sizeof(x->comment), "%s", str(j, "comment"));
		snprintf(x->name, sizeof(x->name), "%s", str(j, "name"));
		snprintf(x->nodes, sizeof(x->nodes), "%s", str(j, "nodes"));
	}
	return SLURM_OK;
}

/* "gpu:t4:4", "gpu:4", "gpu:t4:4(S:0)", "gpu:t4:2,gpu:a100:2": the first GPU entry. */
static void gres_of(const char *gres, char *type, size_t tlen, int *count)
{
	*type = 0;
	*count = 0;
	for (const char *p = gres; p && *p;) {
		size_t len = strcspn(p, ",");
		char one[96];
		snprintf(one, sizeof(one), "%.*s", (int)len, p);
		one[strcspn(one, "(")] = 0;
		if (!strncmp(one, "gpu:", 4)) {
			char *a = one + 4, *colon = strchr(a, ':');
			if (colon) {
				size_t l = (size_t)(colon - a) < tlen ? (size_t)(colon - a) : tlen - 1;
				memcpy(type, a, l);
				type[l] = 0;
				*count = atoi(colon + 1);
			} else {
				*count = atoi(a);
			}
			return;
		}
		p += len + (p[len] == ',');
	}
}

static enum slurm_err nodes(const json_t *reply, const char *partition,
			    struct slurm_node_info **out, size_t *n, char *err, size_t errlen)
{
	const json_t *list = json_object_get(reply, "nodes"), *j, *p;
	size_t i, k;

	*out = NULL;
	*n = 0;
	if (!json_is_array(list)) {
		snprintf(err, errlen, "the reply has no nodes[]");
		return SLURM_ERR_PROTOCOL;
	}
	*out = calloc(json_array_size(list) + 1, sizeof(**out));
	if (!*out)
		abort();
	json_array_foreach(list, i, j) {
		bool in = !partition;
		json_array_foreach(json_object_get(j, "partitions"), k, p)
			in = in || !strcmp(json_string_value(p) ?: "", partition);
		if (!in)
			continue;
		struct slurm_node_info *x = &(*out)[(*n)++];
		snprintf(x->name, sizeof(x->name), "%s", str(j, "name"));
		x->cpus = (int)num(j, "cpus");
		x->memory_mb = num(j, "real_memory");
		gres_of(str(j, "gres"), x->gres_type, sizeof(x->gres_type), &x->gpus);
		/* "state" is the base state only; a drained or failing node is
		 * "idle" (or "mixed") with DRAIN or FAIL in state_flags (22.05.8) */
		const char *st = str(j, "state");
		x->usable = strcmp(st, "down") && strcmp(st, "drained") && strcmp(st, "fail") &&
			    strcmp(st, "future") && strcmp(st, "unknown");
		json_array_foreach(json_object_get(j, "state_flags"), k, p)
			x->usable = x->usable && strcmp(json_string_value(p) ?: "", "DRAIN") &&
				    strcmp(json_string_value(p) ?: "", "FAIL");
	}
	return SLURM_OK;
}

const struct slurm_api slurm_api_v0038 = {
	.version = "v0.0.38",
	.check_release = check_release,
	.submit_body = submit_body,
	.submit_result = submit_result,
	.jobs = jobs,
	.nodes = nodes,
	.error = error_of,
};

const struct slurm_api *slurm_api_find(const char *version)
{
	if (!version || !strcmp(version, slurm_api_v0038.version))
		return &slurm_api_v0038;
	return NULL;
}
