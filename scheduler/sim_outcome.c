/*
 * sim_outcome.c - the emulator's scripted outcomes in the scheduler
 * (sim_outcome.h).
 */
#include "sim_outcome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sim_rules.h"
#include "store_sim_rules.h"

struct sim_outcomes {
	char *text;		/* the list as last read */
	struct sim_rules *rules;
};

struct sim_outcomes *sim_outcomes_new(void)
{
	return xcalloc(1, sizeof(struct sim_outcomes));
}

void sim_outcomes_free(struct sim_outcomes *o)
{
	if (!o)
		return;
	free(o->text);
	sim_rules_free(o->rules);
	free(o);
}

enum store_rc sim_outcomes_refresh(struct sim_outcomes *o, struct store_conn *c)
{
	char *text = NULL;
	enum store_rc rc = store_sim_rules_read(c, &text);

	if (rc != STORE_OK)
		return rc;
	if (o->text && !strcmp(o->text, text)) {
		free(text);
		return STORE_OK;
	}
	struct violations vs = VIOLATIONS_INIT;
	json_t *list = json_loads(text, 0, NULL);
	struct sim_rules *rules = sim_rules_parse(list, "rules", &vs);
	if (!rules)	/* (checked before it was stored: a hand-edited row) */
		log_error("emulator: the stored rule list does not parse (%zu problem(s)); no rules "
			  "apply", vs.n);
	violations_release(&vs);
	json_decref(list);
	sim_rules_free(o->rules);
	o->rules = rules;
	free(o->text);
	o->text = text;
	return STORE_OK;
}

/* A trial's parameter as a number: trial_params is [[name, value, kept?], ...]. */
static int trial_param(void *ctx, const char *name, double *value)
{
	const json_t *params = ctx;
	size_t i;
	json_t *p;

	json_array_foreach(params, i, p) {
		if (strcmp(json_string_value(json_array_get(p, 0)) ?: "", name))
			continue;
		const char *v = json_string_value(json_array_get(p, 1));
		char *end;
		if (!v || !*v)
			return -1;
		*value = strtod(v, &end);
		return *end ? -1 : 0;
	}
	return -1;
}

int sim_outcomes_apply(const struct sim_outcomes *o, const json_t *q, struct job_plan *plan)
{
	if (!o || !sim_rules_count(o->rules))
		return -1;
	const json_t *labels = json_object_get(q, "labels");
	const char *api = json_string_value(json_object_get(q, "api"));
	struct sim_job job = {
		.project = json_string_value(json_object_get(q, "project")),
		.job_id = json_string_value(json_object_get(q, "job_id")),
		.labels = labels,
		.vertex = api && !strcmp(api, "vertex"),
	};
	if (job.vertex)
		job.display_name = json_string_value(json_object_get(json_object_get(q, "spec"),
								     "displayName"));
	/* A trial matches as its tuning job: its id and display name. */
	if (json_is_string(json_object_get(q, "parent_job_id"))) {
		job.job_id = json_string_value(json_object_get(q, "parent_job_id"));
		if (job.vertex)
			job.display_name = json_string_value(json_object_get(q, "parent_display_name"));
	}
	int held = sim_rules_holds(o->rules, &job);
	if (held >= 0)
		return held;
	if (json_object_get(labels, "trainplane-simulate"))
		return -1;	/* the job's own script wins */
	const json_t *params = json_object_get(q, "trial_params");
	for (size_t i = 0; i < plan->n; i++) {
		struct plan_replica *r = &plan->replicas[i];
		char err[256];
		json_t *sim = sim_rules_simulate(o->rules, &job, (int)r->role, params ? trial_param : NULL,
						 (void *)params, err, sizeof(err));
		if (err[0])
			log_warn("emulator: job %lld: %s", (long long)json_integer_value(
				 json_object_get(q, "id")), err);
		if (sim)
			json_object_set_new(r->run, "simulate", sim);
	}
	return -1;
}
