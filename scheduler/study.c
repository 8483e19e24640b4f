#include "study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_study.h"
#include "training_spec.h"
#include "tuning.h"

/* A study as the optimizer sees it, built from the stored spec. */
struct study_view {
	struct training_spec spec;
	struct tuning_study study;
	struct tuning_param *params;
	double *discrete;		/* every DISCRETE list, one after another */
	const char **categories;	/* every CATEGORICAL list, likewise */
	int64_t max_trials, max_parallel, max_failed;
	const char *tag;
	bool early_stopping;	/* enableTrialEarlyStopping */
};

static void view_release(struct study_view *v)
{
	free(v->params);
	free(v->discrete);
	free(v->categories);
	spec_release(&v->spec);
}

/* 0, or -1 with the reason (a study the validator let through always loads). */
static int view_load(const json_t *study, struct study_view *v, char *err, size_t errlen)
{
	const struct spec_hyperparameters *hp;
	size_t nd = 0, nc = 0;

	memset(v, 0, sizeof(*v));
	spec_parse_stored(json_object_get(study, "spec"), NULL, &v->spec);
	hp = &v->spec.hyperparameters;
	for (size_t i = 0; i < hp->nparams; i++) {
		nd += json_array_size(hp->params[i].discrete_values);
		nc += json_array_size(hp->params[i].categorical_values);
	}
	v->params = xcalloc(hp->nparams + 1, sizeof(*v->params));
	v->discrete = xcalloc(nd + 1, sizeof(*v->discrete));
	v->categories = xcalloc(nc + 1, sizeof(*v->categories));
	nd = nc = 0;
	for (size_t i = 0; i < hp->nparams; i++) {
		const struct spec_param *sp = &hp->params[i];
		struct tuning_param *tp = &v->params[i];
		size_t k;
		const json_t *x;
		tp->name = sp->name;
		if (!sp->name || tuning_param_type_parse(sp->type, &tp->type) ||
		    tuning_scale_parse(sp->scale_type, &tp->scale)) {
			snprintf(err, errlen, "parameter %zu cannot be tuned", i);
			return -1;
		}
		tp->min = sp->min_value;
		tp->max = sp->max_value;
		tp->values = v->discrete + nd;
		json_array_foreach(sp->discrete_values, k, x)
			v->discrete[nd + tp->nvalues++] = json_number_value(x);
		nd += tp->nvalues;
		tp->categories = v->categories + nc;
		json_array_foreach(sp->categorical_values, k, x)
			v->categories[nc + tp->ncategories++] = json_string_value(x);
		nc += tp->ncategories;
	}
	v->study.params = v->params;
	v->study.nparams = hp->nparams;
	if (tuning_goal_parse(hp->goal, &v->study.goal) ||
	    tuning_algorithm_parse(hp->algorithm, &v->study.algorithm)) {
		snprintf(err, errlen, "its goal or algorithm cannot be tuned");
		return -1;
	}
	v->study.seed = (uint64_t)json_integer_value(json_object_get(study, "id"));
	v->max_trials = hp->has_max_trials && hp->max_trials > 0 ? hp->max_trials : 1;
	v->max_parallel = hp->has_max_parallel_trials && hp->max_parallel_trials > 0 ?
		hp->max_parallel_trials : 1;
	v->max_failed = hp->has_max_failed_trials ? hp->max_failed_trials : 0;
	v->tag = hp->metric_tag;
	v->early_stopping = json_is_true(json_object_get(json_object_get(json_object_get(study, "spec"),
		"hyperparameters"), "enableTrialEarlyStopping"));
	return tuning_study_check(&v->study, err, errlen);
}

static bool active(const char *state)
{
	return !strcmp(state, "QUEUED") || !strcmp(state, "PREPARING") ||
	       !strcmp(state, "RUNNING") || !strcmp(state, "CANCELLING");
}

/*
 * The trials as the optimizer sees them (values into vals[n * nparams],
 * intermediate measurements into meas, one array per trial).
 */
static struct tuning_trial *trials_of(const struct study_view *v, const json_t *list, double *vals,
				      struct tuning_measurement **meas)
{
	size_t n = json_array_size(list), np = v->study.nparams;
	struct tuning_trial *t = xcalloc(n + 1, sizeof(*t));

	for (size_t i = 0; i < n; i++) {
		const json_t *tr = json_array_get(list, i);
		const char *state = json_string_value(json_object_get(tr, "state")) ?: "";
		const json_t *m = json_object_get(tr, "metrics");
		size_t nm = json_array_size(m);
		t[i].id = json_integer_value(json_object_get(tr, "trial"));
		t[i].values = vals + i * np;
		for (size_t k = 0; k < np; k++) {
			/* params: [[name, value], ...] in the study's order */
			const char *text = json_string_value(json_array_get(json_array_get(
				json_object_get(tr, "params"), k), 1));
			if (!text || tuning_parse_value(&v->params[k], text, &vals[i * np + k]))
				vals[i * np + k] = NAN;
		}
		t[i].objective = nm ? json_number_value(json_object_get(json_array_get(m, nm - 1),
									"value")) : NAN;
		meas[i] = xcalloc(nm + 1, sizeof(**meas));
		for (size_t k = 0; k < nm; k++) {
			const json_t *pt = json_array_get(m, k);
			meas[i][k].step = json_integer_value(json_object_get(pt, "step"));
			meas[i][k].value = json_number_value(json_object_get(pt, "value"));
		}
		t[i].measurements = meas[i];
		t[i].nmeasurements = nm;
		if (json_is_true(json_object_get(tr, "stoppedEarly")))
			/* stopped by the median rule: done, its last value its final one */
			t[i].state = active(state) ? TUNING_TRIAL_ACTIVE : TUNING_TRIAL_STOPPED;
		else if (active(state))
			t[i].state = TUNING_TRIAL_ACTIVE;
		else if (!strcmp(state, "SUCCEEDED"))
			/* no measurement: it counts as done, and tells the optimizer nothing */
			t[i].state = nm ? TUNING_TRIAL_COMPLETED : TUNING_TRIAL_STOPPED;
		else
			t[i].state = TUNING_TRIAL_FAILED;
	}
	return t;
}

/* A trial of the output (Google's HyperparameterOutput). */
static json_t *trial_output(const struct study_view *v, const json_t *tr)
{
	json_t *o = json_object(), *hp = json_object();
	const json_t *m = json_object_get(tr, "metrics"), *pair;
	size_t nm = json_array_size(m), k;

	json_object_set_new(o, "trialId", json_sprintf("%lld",
		(long long)json_integer_value(json_object_get(tr, "trial"))));
	json_array_foreach(json_object_get(tr, "params"), k, pair)
		json_object_set(hp, json_string_value(json_array_get(pair, 0)) ?: "?",
				json_array_get(pair, 1));
	json_object_set_new(o, "hyperparameters", hp);
	if (nm) {
		/* The final metric is the last one reported (Google's, too). */
		const json_t *last = json_array_get(m, nm - 1);
		json_t *fm = json_object();
		json_object_set_new(fm, "trainingStep", json_sprintf("%lld", (long long)
			json_integer_value(json_object_get(last, "step"))));
		json_object_set(fm, "objectiveValue", json_object_get(last, "value"));
		json_object_set_new(o, "finalMetric", fm);
	}
	const char *start = json_string_value(json_object_get(tr, "startTime"));
	const char *end = json_string_value(json_object_get(tr, "endTime"));
	if (start)
		json_object_set_new(o, "startTime", json_string(start));
	if (end)
		json_object_set_new(o, "endTime", json_string(end));
	/* A trial stopped early ended well, on its last measurement (a choice:
	 * docs/tuning.md): SUCCEEDED once its job has stopped. */
	bool early = json_is_true(json_object_get(tr, "stoppedEarly"));
	const char *st = json_string_value(json_object_get(tr, "state"));
	json_object_set_new(o, "state", json_string(early && st && !active(st) ? "SUCCEEDED" : st ? st : ""));
	json_object_set_new(o, "isTrialStoppedEarly", json_boolean(early));
	(void)v;
	return o;
}

void study_decide(const json_t *study, json_t **add, json_t **stop, json_t **output,
		  const char **to_state, const char **cause, char **message)
{
	/* resumePreviousJobId: the earlier study's trials first, ended; then its own. */
	json_t *prev = json_object_get(study, "previous"), *own = json_object_get(study, "trials");
	json_t *list = json_array();
	if (json_is_array(prev))
		json_array_extend(list, prev);
	if (json_is_array(own))
		json_array_extend(list, own);
	size_t nprev = json_array_size(prev);
	const char *state = json_string_value(json_object_get(study, "state")) ?: "";
	size_t n = json_array_size(list);
	struct study_view v;
	char err[256];

	*add = json_array();
	*stop = json_array();
	*output = json_object();
	*to_state = *cause = NULL;
	*message = NULL;
	if (view_load(study, &v, err, sizeof(err))) {
		bool queued = !strcmp(state, "QUEUED");
		*to_state = queued ? "PREPARING" : "FAILED";
		*cause = queued ? "place" : "fail";
		*message = queued ? NULL : xasprintf("The study cannot be run: %s.", err);
		view_release(&v);
		json_decref(list);
		return;
	}
	size_t np = v.study.nparams;
	double *vals = xcalloc(n * np + 1, sizeof(*vals));
	struct tuning_measurement **meas = xcalloc(n + 1, sizeof(*meas));
	struct tuning_trial *trials = trials_of(&v, list, vals, meas);
	size_t nactive = 0, nsucceeded = 0, nfinal = 0;
	bool running = false, placed = false;
	double units = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *tr = json_array_get(list, i);
		const char *ts = json_string_value(json_object_get(tr, "state")) ?: "";
		nactive += trials[i].state == TUNING_TRIAL_ACTIVE;
		nsucceeded += !strcmp(ts, "SUCCEEDED") || trials[i].state == TUNING_TRIAL_STOPPED;
		nfinal += trials[i].state != TUNING_TRIAL_ACTIVE;
		running |= i >= nprev && (!strcmp(ts, "RUNNING") || !active(ts));
		placed |= i >= nprev && strcmp(ts, "QUEUED") != 0;
		if (i >= nprev)	/* what this job consumed */
			units += json_number_value(json_object_get(tr, "units"));
	}

	/* The output: every trial, best first by the goal. */
	size_t *order = xcalloc(n + 1, sizeof(*order));
	tuning_order(&v.study, trials, n, order);
	json_t *out_trials = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out_trials, trial_output(&v, json_array_get(list, order[i])));
	json_t *to = json_pack("{s:b, s:o, s:f}", "isHyperparameterTuningJob", 1,
			       "trials", out_trials, "consumedMLUnits", round(units * 100) / 100);
	/* "trials that completed successfully" (Google's word for the field) */
	json_object_set_new(to, "completedTrialCount", json_sprintf("%zu", nsucceeded));
	if (v.tag)
		json_object_set_new(to, "hyperparameterMetricTag", json_string(v.tag));
	json_object_update(*output, to);
	json_decref(to);

	/* Failed too often: the study fails, naming its first failed trial. */
	/* Its own failures fail a study, not the earlier study's. */
	if (tuning_study_failed(trials + nprev, n - nprev, v.max_trials, v.max_failed)) {
		for (size_t i = nprev; i < n && !*message; i++) {
			const json_t *tr = json_array_get(list, i);
			if (trials[i].state == TUNING_TRIAL_FAILED)
				*message = xasprintf("Trial %lld failed: %s",
					(long long)trials[i].id,
					json_string_value(json_object_get(tr, "error")) ?: "");
		}
		*to_state = "FAILED";
		*cause = "fail";
		goto out;
	}
	/* enableTrialEarlyStopping: running trials worse than the median of
	 * the completed ones at the same step stop (tuning_should_stop()). */
	if (v.early_stopping) {
		for (size_t i = 0; i < n; i++) {
			const json_t *tr = json_array_get(list, i);
			const char *ts = json_string_value(json_object_get(tr, "state")) ?: "";
			if (!strcmp(ts, "RUNNING") && !json_is_true(json_object_get(tr, "stoppedEarly")) &&
			    tuning_should_stop(&v.study, &trials[i], trials, n))
				json_array_append(*stop, json_object_get(tr, "row"));
		}
	}
	/* More trials: as many as may run at once, up to maxTrials. */
	int64_t room = v.max_parallel - (int64_t)nactive;
	int64_t left = v.max_trials - (int64_t)(n - nprev);	/* maxTrials: its own */
	int64_t next = 0;	/* trial numbers go on after the earlier study's */
	for (size_t i = 0; i < n; i++)
		if (trials[i].id > next)
			next = trials[i].id;
	int64_t want = room < left ? room : left;
	ssize_t got = 0;
	if (want > 0) {
		double *pts = xcalloc((size_t)want * np + 1, sizeof(*pts));
		got = tuning_suggest(&v.study, trials, n, (size_t)want, pts, NULL);
		if (got < 0) {
			free(pts);
			*to_state = "FAILED";
			*cause = "fail";
			*message = xstrdup("The study's optimizer cannot suggest a trial.");
			goto out;
		}
		for (ssize_t k = 0; k < got; k++) {
			json_t *params = json_array();
			for (size_t j = 0; j < np; j++) {
				char text[64];
				if (tuning_format_value(&v.params[j], pts[(size_t)k * np + j], text,
							sizeof(text)) < 0)
					snprintf(text, sizeof(text), "?");
				json_array_append_new(params, json_pack("[s, s]", v.params[j].name,
									text));
			}
			json_array_append_new(*add, json_pack("{s:I, s:o}", "trial",
							      (json_int_t)(next + k + 1),
							      "params", params));
		}
		free(pts);
	}
	/* Nothing runs and nothing more will: the study is over. */
	if (nactive == 0 && got <= 0 && (left <= 0 || want > 0)) {
		if (nsucceeded) {
			*to_state = "SUCCEEDED";
			*cause = "succeed";
		} else {
			*to_state = "FAILED";
			*cause = "fail";
			*message = xstrdup(n ? "Every trial of the study failed." :
					   "The study has no trial to run.");
		}
		goto out;
	}
	/* The study waits QUEUED until a trial is placed, as a job waits for its gang. */
	if (!strcmp(state, "QUEUED") && placed) {
		*to_state = "PREPARING";
		*cause = "place";
	} else if (!strcmp(state, "PREPARING") && running) {
		*to_state = "RUNNING";
		*cause = "run";
	}
out:
	for (size_t i = 0; i < n; i++)
		free(meas[i]);
	free(meas);
	/* QUEUED has no edge to an end: a study ends from PREPARING, a pass later. */
	if (!strcmp(state, "QUEUED") && *to_state && strcmp(*to_state, "PREPARING")) {
		*to_state = "PREPARING";
		*cause = "place";
		free(*message);
		*message = NULL;
	}
	free(order);
	free(trials);
	free(vals);
	json_decref(list);
	view_release(&v);
}

enum store_rc study_pass(struct store_conn *c)
{
	json_t *studies, *s;
	size_t i;
	enum store_rc rc = store_study_active(c, &studies);

	if (rc != STORE_OK)
		return rc;
	json_array_foreach(studies, i, s) {
		json_t *add, *stop, *output, *row;
		const char *to_state, *cause;
		char *message;
		int64_t id = json_integer_value(json_object_get(s, "id"));
		int added = 0;
		size_t k;
		study_decide(s, &add, &stop, &output, &to_state, &cause, &message);
		json_array_foreach(stop, k, row) {
			if (rc == STORE_OK)
				rc = store_study_stop_trial(c, id, json_integer_value(row));
		}
		if (json_array_size(stop))
			log_info("study %s: %zu trial(s) stopped early (the median stopping rule)",
				 json_string_value(json_object_get(s, "jobId")), json_array_size(stop));
		if (json_array_size(add)) {
			rc = store_study_add_trials(c, id, add, &added);
			if (rc == STORE_CONFLICT)
				rc = STORE_OK;	/* another leader's trial: next pass sees it */
		}
		if (rc == STORE_OK)
			rc = store_study_update(c, id, output, to_state, cause, message);
		if (rc == STORE_OK && (added || to_state))
			log_info("study %s: %d trial(s) added%s%s", json_string_value(json_object_get(
				s, "jobId")), added, to_state ? ", now " : "", to_state ? to_state : "");
		json_decref(add);
		json_decref(stop);
		json_decref(output);
		free(message);
		if (rc != STORE_OK)
			break;
	}
	json_decref(studies);
	return rc;
}
