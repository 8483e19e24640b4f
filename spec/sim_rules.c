/*
 * sim_rules.c - the emulator's scripted outcomes (sim_rules.h).
 */
#include "sim_rules.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_expr.h"

enum outcome { OUT_SUCCEED, OUT_FAIL, OUT_PREEMPT, OUT_HANG, OUT_QUEUE };

static const char *const outcome_names[] = { "succeed", "fail", "preempt", "hang", "queue" };

struct rule {
	/* match: NULL / absent matches anything */
	char *project, *job_id, *display_name;
	int role;		/* -1 any, else the replica role (pool) index */
	json_t *labels;
	int api;		/* -1 any, 0 ml, 1 vertex */
	enum outcome outcome;
	double seconds;		/* < 0: not said */
	int exit_code;
	int times;
	struct sim_expr *metric;
};

struct sim_rules {
	struct rule *r;
	size_t n;
};

/* Role names and the role (Vertex: worker pool) index each stands for. */
static const struct {
	const char *name;
	int index;
} roles[] = {
	{ "master", 0 }, { "chief", 0 }, { "workerpool0", 0 },
	{ "worker", 1 }, { "workerpool1", 1 },
	{ "parameter_server", 2 }, { "ps", 2 }, { "workerpool2", 2 },
	{ "evaluator", 3 }, { "workerpool3", 3 },
};

static int role_index(const char *s)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(roles); i++)
		if (!strcmp(s, roles[i].name))
			return roles[i].index;
	return -1;
}

/* A glob: a string of 1 to 256 printable characters. */
static char *glob_of(const json_t *v, const char *path, struct violations *vs)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	bool ok = s && n >= 1 && n <= 256;
	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)s[i] >= 0x20 && s[i] != 0x7f;
	if (!ok) {
		violations_add(vs, path, "a pattern of 1 to 256 printable characters is required");
		return NULL;
	}
	return xstrdup(s);
}

static void parse_match(struct rule *r, const json_t *m, const char *path, struct violations *vs)
{
	const char *key;
	json_t *v;
	char p[160];

	if (!json_is_object(m)) {
		violations_add(vs, path, "an object is required");
		return;
	}
	json_object_foreach((json_t *)m, key, v) {
		snprintf(p, sizeof(p), "%.60s.%.60s", path, key);
		if (!strcmp(key, "project")) {
			r->project = glob_of(v, p, vs);
		} else if (!strcmp(key, "jobId")) {
			r->job_id = glob_of(v, p, vs);
		} else if (!strcmp(key, "displayName")) {
			r->display_name = glob_of(v, p, vs);
		} else if (!strcmp(key, "api")) {
			const char *a = json_string_value(v);
			r->api = a && !strcmp(a, "ml") ? 0 : a && !strcmp(a, "vertex") ? 1 : -2;
			if (r->api == -2)
				violations_add(vs, p, "must be \"ml\" or \"vertex\"");
		} else if (!strcmp(key, "role")) {
			r->role = role_index(json_string_value(v));
			if (r->role < 0)
				violations_add(vs, p, "must be master, chief, worker, parameter_server, ps, "
					       "evaluator or workerpool0 to workerpool3");
		} else if (!strcmp(key, "labels")) {
			const char *lk;
			json_t *lv;
			bool ok = json_is_object(v) && json_object_size(v) <= 64;
			json_object_foreach(v, lk, lv)
				ok = ok && json_is_string(lv) && strlen(lk) <= 63 &&
				     strlen(json_string_value(lv)) <= 63;
			if (!ok)
				violations_add(vs, p, "an object of at most 64 labels (key: value, each at "
					       "most 63 characters) is required");
			else
				r->labels = json_incref(v);
		} else {
			violations_add(vs, p, "unknown match key (project, jobId, displayName, labels, "
				       "api, role)");
		}
	}
}

static void parse_rule(struct rule *r, const json_t *o, const char *path, struct violations *vs)
{
	const char *key;
	json_t *v;
	char p[160];
	bool has_outcome = false;

	r->api = -1;
	r->role = -1;
	r->seconds = -1;
	r->times = 1;
	if (!json_is_object(o)) {
		violations_add(vs, path, "a rule is an object: {\"match\": {...}, \"outcome\": ...}");
		return;
	}
	json_object_foreach((json_t *)o, key, v) {
		snprintf(p, sizeof(p), "%.60s.%.60s", path, key);
		if (!strcmp(key, "match")) {
			parse_match(r, v, p, vs);
		} else if (!strcmp(key, "outcome")) {
			const char *s = json_string_value(v);
			size_t i = 0;
			while (s && i < ARRAY_SIZE(outcome_names) && strcmp(s, outcome_names[i]))
				i++;
			if (!s || i == ARRAY_SIZE(outcome_names))
				violations_add(vs, p, "must be succeed, fail, preempt, hang or queue");
			else
				r->outcome = (enum outcome)i;
			has_outcome = true;
		} else if (!strcmp(key, "seconds")) {
			if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
			    json_number_value(v) > 366.0 * 86400)
				violations_add(vs, p, "a number of seconds from 0 to 31622400 is required");
			else
				r->seconds = json_number_value(v);
		} else if (!strcmp(key, "exitCode")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 255)
				violations_add(vs, p, "an integer from 1 to 255 is required");
			else
				r->exit_code = (int)json_integer_value(v);
		} else if (!strcmp(key, "times")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000)
				violations_add(vs, p, "an integer from 1 to 1000 is required");
			else
				r->times = (int)json_integer_value(v);
		} else if (!strcmp(key, "metric")) {
			char err[200];
			if (!json_is_string(v))
				violations_add(vs, p, "an expression (a string) is required");
			else if (!(r->metric = sim_expr_compile(json_string_value(v), err, sizeof(err))))
				violations_add(vs, p, "%s", err);
		} else {
			violations_add(vs, p, "unknown key (match, outcome, seconds, exitCode, times, "
				       "metric)");
		}
	}
	if (!has_outcome) {
		snprintf(p, sizeof(p), "%.60s.outcome", path);
		violations_add(vs, p, "required: succeed, fail, preempt, hang or queue");
		return;
	}
	snprintf(p, sizeof(p), "%.60s.exitCode", path);
	if (r->outcome == OUT_FAIL && !r->exit_code)
		violations_add(vs, p, "required for outcome fail");
	else if (r->outcome != OUT_FAIL && r->exit_code)
		violations_add(vs, p, "only outcome fail takes an exit code");
	snprintf(p, sizeof(p), "%.60s.metric", path);
	if (r->metric && r->outcome != OUT_SUCCEED)
		violations_add(vs, p, "only outcome succeed reports a metric");
	snprintf(p, sizeof(p), "%.60s.seconds", path);
	if (r->seconds >= 0 && (r->outcome == OUT_HANG || r->outcome == OUT_QUEUE))
		violations_add(vs, p, "outcome %s takes no seconds", outcome_names[r->outcome]);
}

static void rule_release(struct rule *r)
{
	free(r->project);
	free(r->job_id);
	free(r->display_name);
	json_decref(r->labels);
	sim_expr_free(r->metric);
}

struct sim_rules *sim_rules_parse(const json_t *list, const char *prefix, struct violations *vs)
{
	size_t before = vs->n, i;
	json_t *o;

	if (!json_is_array(list) || json_array_size(list) > SIM_RULES_MAX) {
		violations_add(vs, prefix, "a list of at most %d rules is required", SIM_RULES_MAX);
		return NULL;
	}
	struct sim_rules *rs = xcalloc(1, sizeof(*rs));
	rs->r = xcalloc(json_array_size(list) + 1, sizeof(*rs->r));
	json_array_foreach(list, i, o) {
		char path[64];
		snprintf(path, sizeof(path), "%.30s[%zu]", prefix, i);
		parse_rule(&rs->r[rs->n++], o, path, vs);
	}
	if (vs->n > before) {
		sim_rules_free(rs);
		return NULL;
	}
	return rs;
}

void sim_rules_free(struct sim_rules *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++)
		rule_release(&rs->r[i]);
	free(rs->r);
	free(rs);
}

size_t sim_rules_count(const struct sim_rules *rs)
{
	return rs ? rs->n : 0;
}

static bool glob_ok(const char *pattern, const char *s)
{
	return !pattern || (s && !fnmatch(pattern, s, 0));
}

static bool job_ok(const struct rule *r, const struct sim_job *job)
{
	if (r->api >= 0 && r->api != (int)job->vertex)
		return false;
	if (!glob_ok(r->project, job->project) || !glob_ok(r->job_id, job->job_id) ||
	    !glob_ok(r->display_name, job->display_name))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach(r->labels, k, v) {
		const char *have = json_string_value(json_object_get(job->labels, k));
		if (!have || strcmp(have, json_string_value(v)))
			return false;
	}
	return true;
}

int sim_rules_holds(const struct sim_rules *rs, const struct sim_job *job)
{
	for (size_t i = 0; rs && i < rs->n; i++)
		if (rs->r[i].outcome == OUT_QUEUE && job_ok(&rs->r[i], job))
			return (int)i;
	return -1;
}

json_t *sim_rules_simulate(const struct sim_rules *rs, const struct sim_job *job, int role,
			   sim_rules_param lookup, void *ctx, char *err, size_t errlen)
{
	err[0] = '\0';
	for (size_t i = 0; rs && i < rs->n; i++) {
		const struct rule *r = &rs->r[i];
		if (r->outcome == OUT_QUEUE || !job_ok(r, job) || (r->role >= 0 && r->role != role))
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "outcome", json_string(r->outcome == OUT_HANG ? "hang" :
							     r->outcome == OUT_PREEMPT ? "preempt" :
							     "exit"));
		if (r->seconds >= 0)
			json_object_set_new(o, "seconds", json_real(r->seconds));
		if (r->outcome == OUT_FAIL)
			json_object_set_new(o, "exitCode", json_integer(r->exit_code));
		if (r->outcome == OUT_PREEMPT)
			json_object_set_new(o, "preemptTimes", json_integer(r->times));
		if (r->metric && lookup) {
			double m;
			char why[200];
			if (sim_expr_eval(r->metric, lookup, ctx, &m, why, sizeof(why)))
				snprintf(err, errlen, "rules[%zu].metric: %s", i, why);
			else
				json_object_set_new(o, "metric", json_real(m));
		}
		json_object_set_new(o, "rule", json_integer((json_int_t)i));
		return o;
	}
	return NULL;
}
