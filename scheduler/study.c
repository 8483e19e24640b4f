#include "study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_study.h"
#include "training_spec.h"
#include "tuning.h"
#include "vertex_types.h"
#include "wire.h"

/* A study as the optimizer sees it, built from the stored spec. */
struct study_view {
	struct training_spec spec;
	struct tuning_study study;
	struct tuning_param *params;
	double *discrete;		/* every DISCRETE list, one after another */
	const char **categories;	/* every CATEGORICAL list, likewise */
	int64_t max_trials, max_parallel, max_failed;
	const char *tag;
	bool early_stopping;	/* enableTrialEarlyStopping; Vertex: an automated stopping spec */
	bool best;		/* Vertex BEST_MEASUREMENT: a trial's best measurement is final */
	bool vertex;		/* a Vertex HyperparameterTuningJob */
	const json_t *stored;	/* the study's stored spec */
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
	v->early_stopping = hp->early_stopping;
	v->best = hp->best_measurement;
	v->stored = json_object_get(study, "spec");
	v->vertex = spec_stored_is_vertex(v->stored);
	return tuning_study_check(&v->study, err, errlen);
}

static bool active(const char *state)
{
	return !strcmp(state, "QUEUED") || !strcmp(state, "PREPARING") ||
	       !strcmp(state, "RUNNING") || !strcmp(state, "CANCELLING");
}

/*
 * Which of a trial's measurements (non-empty) is its final one: the last
 * reported (ml v1; Vertex LAST_MEASUREMENT, its default), or the best by
 * the goal (Vertex BEST_MEASUREMENT), the earliest of equals.
 */
static size_t final_index(const struct study_view *v, const json_t *m)
{
	size_t n = json_array_size(m), best = n - 1;

	if (!v->best)
		return best;
	best = 0;
	for (size_t k = 1; k < n; k++) {
		double a = json_number_value(json_object_get(json_array_get(m, k), "value"));
		double b = json_number_value(json_object_get(json_array_get(m, best), "value"));
		if (v->study.goal == TUNING_MINIMIZE ? a < b : a > b)
			best = k;
	}
	return best;
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
		t[i].objective = nm ? json_number_value(json_object_get(json_array_get(m,
			final_index(v, m)), "value")) : NAN;
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

/* --- Vertex ----------------------------------------------------------------- */

/*
 * Whether parameter j is active at the point pt: a parameter with no
 * parent always is; a conditional one when its parent is active and has
 * one of the condition's values (Vertex's conditionalParameterSpecs).
 */
static bool param_active(const struct study_view *v, const double *pt, size_t j)
{
	const struct spec_param *sp = &v->spec.hyperparameters.params[j];
	size_t k;
	const json_t *x;

	if (sp->parent < 0)
		return true;
	size_t up = (size_t)sp->parent;
	if (!param_active(v, pt, up))
		return false;
	const struct tuning_param *parent = &v->params[up];
	json_array_foreach(sp->parent_values, k, x) {
		double d;
		if (parent->type == TUNING_CATEGORICAL) {
			size_t c = (size_t)pt[up];
			if (c < parent->ncategories && json_is_string(x) &&
			    !strcmp(parent->categories[c], json_string_value(x)))
				return true;
		} else if (!wire_double_get(x, &d) && fabs(d - pt[up]) <= 1e-10) {
			return true;
		}
	}
	return false;
}

/*
 * A Vertex trial's CustomJob: the study's trialJobSpec, its
 * baseOutputDirectory the study's "/<trial>" ("a subdirectory of name id
 * under its parent HyperparameterTuningJob's baseOutputDirectory"), and
 * what the scheduler needs of the study under VERTEX_TRIAL_KEY (never
 * rendered).
 */
static json_t *vertex_trial_spec(const struct study_view *v, const json_t *study, int64_t trial)
{
	const json_t *st = v->stored;
	json_t *js = json_deep_copy(json_object_get(st, "trialJobSpec"));
	const char *base = json_string_value(json_object_get(json_object_get(js,
		"baseOutputDirectory"), "outputUriPrefix"));
	const char *display = json_string_value(json_object_get(st, "displayName")) ?: "";

	if (!js)
		js = json_object();
	if (base && *base) {
		size_t n = strlen(base);
		while (n > 1 && base[n - 1] == '/')
			n--;
		json_object_set_new(json_object_get(js, "baseOutputDirectory"), "outputUriPrefix",
				    json_sprintf("%.*s/%lld", (int)n, base, (long long)trial));
	}
	json_t *spec = json_object();
	json_object_set_new(spec, "displayName", json_sprintf("%s trial %lld", display,
							      (long long)trial));
	json_object_set_new(spec, "jobSpec", js);
	if (json_object_get(st, "encryptionSpec"))
		json_object_set(spec, "encryptionSpec", json_object_get(st, "encryptionSpec"));
	json_object_set_new(spec, VERTEX_TRIAL_KEY, json_pack("{s:s?, s:O, s:I}", "metricTag",
		v->tag, "study", json_object_get(study, "jobId"), "trial", (json_int_t)trial));
	return spec;
}

/* A Trial.Parameter's value: a number, or a CATEGORICAL's string. */
static json_t *vertex_value(const struct tuning_param *p, const char *text)
{
	double d;

	if (p->type == TUNING_CATEGORICAL || tuning_parse_value(p, text, &d))
		return json_string(text);
	return p->type == TUNING_INTEGER ? json_integer((json_int_t)d) : json_real(d);
}

/*
 * A Trial of HyperparameterTuningJob.trials: ACTIVE while its CustomJob
 * runs, STOPPING while it is being cancelled, SUCCEEDED with a final
 * measurement (a trial stopped early too, on its last one), INFEASIBLE
 * when it ended without one ("done but missing the final_measurement")
 * or failed, with the reason.
 */
static json_t *vertex_trial_output(const struct study_view *v, const json_t *study,
				   const json_t *tr)
{
	json_t *o = json_object(), *params = json_array();
	const json_t *m = json_object_get(tr, "metrics"), *pair;
	const char *st = json_string_value(json_object_get(tr, "state")) ?: "";
	size_t nm = json_array_size(m), k;
	bool early = json_is_true(json_object_get(tr, "stoppedEarly"));

	json_object_set_new(o, "id", json_sprintf("%lld", (long long)json_integer_value(
		json_object_get(tr, "trial"))));
	const char *state = !strcmp(st, "CANCELLING") ? "STOPPING"
			    : active(st) ? "ACTIVE"
			    : nm && (!strcmp(st, "SUCCEEDED") || early) ? "SUCCEEDED" : "INFEASIBLE";
	json_object_set_new(o, "state", json_string(state));
	json_array_foreach(json_object_get(tr, "params"), k, pair) {
		if (k >= v->study.nparams || json_is_false(json_array_get(pair, 2)))
			continue;	/* a conditional parameter the trial did not get */
		json_array_append_new(params, json_pack("{s:O, s:o}", "parameterId",
			json_array_get(pair, 0), "value", vertex_value(&v->params[k],
				json_string_value(json_array_get(pair, 1)) ?: "")));
	}
	json_object_set_new(o, "parameters", params);
	if (nm) {
		const json_t *fin = json_array_get(m, final_index(v, m));
		json_t *metric = json_pack("{s:s, s:O}", "metricId", v->tag ? v->tag : "", "value",
					   json_object_get(fin, "value"));
		json_object_set_new(o, "finalMeasurement", json_pack("{s:o, s:[o]}", "stepCount",
			json_sprintf("%lld", (long long)json_integer_value(json_object_get(fin, "step"))),
			"metrics", metric));
	}
	const char *start = json_string_value(json_object_get(tr, "startTime"));
	const char *end = json_string_value(json_object_get(tr, "endTime"));
	if (start)
		json_object_set_new(o, "startTime", json_string(start));
	if (end && !active(st))
		json_object_set_new(o, "endTime", json_string(end));
	if (!strcmp(state, "INFEASIBLE")) {
		const char *err = json_string_value(json_object_get(tr, "error"));
		json_object_set_new(o, "infeasibleReason",
			err && *err ? json_string(err)
				    : json_sprintf("The trial ended without reporting its metric "
						   "\"%s\".", v->tag ? v->tag : ""));
	}
	json_object_set_new(o, "customJob", json_sprintf("projects/%s/locations/%s/customJobs/%s",
		json_string_value(json_object_get(study, "project")) ?: "",
		json_string_value(json_object_get(study, "region")) ?: "",
		json_string_value(json_object_get(tr, "jobId")) ?: ""));
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
		if (!strcmp(state, "CANCELLING")) {
			*to_state = "CANCELLED";
			*cause = "cancelled";
			view_release(&v);
			json_decref(list);
			return;
		}
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

	/* The output: ml v1's trainingOutput, every trial best first by the
	 * goal; Vertex's trials[], in trial order (as Vizier lists them). */
	size_t *order = xcalloc(n + 1, sizeof(*order));
	tuning_order(&v.study, trials, n, order);
	json_t *out_trials = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out_trials, v.vertex
			? vertex_trial_output(&v, study, json_array_get(list, i))
			: trial_output(&v, json_array_get(list, order[i])));
	json_t *to = json_pack("{s:o}", "trials", out_trials);
	if (!v.vertex) {
		json_object_set_new(to, "isHyperparameterTuningJob", json_true());
		json_object_set_new(to, "consumedMLUnits", json_real(round(units * 100) / 100));
		/* "trials that completed successfully" (Google's word for the field) */
		json_object_set_new(to, "completedTrialCount", json_sprintf("%zu", nsucceeded));
		if (v.tag)
			json_object_set_new(to, "hyperparameterMetricTag", json_string(v.tag));
	}
	json_object_update(*output, to);
	json_decref(to);

	/* Cancelled: no new trial; CANCELLED once every trial has stopped
	 * (their last states in the output written with the move). */
	if (!strcmp(state, "CANCELLING")) {
		if (nactive == 0) {
			*to_state = "CANCELLED";
			*cause = "cancelled";
		}
		goto out;
	}
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
			const double *pt = pts + (size_t)k * np;
			int64_t number = next + k + 1;
			for (size_t j = 0; j < np; j++) {
				char text[64];
				if (tuning_format_value(&v.params[j], pt[j], text, sizeof(text)) < 0)
					snprintf(text, sizeof(text), "?");
				/* [name, value], or [name, value, false]: a conditional
				 * parameter its parent's value leaves out (no flag) */
				json_array_append_new(params, param_active(&v, pt, j)
					? json_pack("[s, s]", v.params[j].name, text)
					: json_pack("[s, s, b]", v.params[j].name, text, 0));
			}
			json_t *t = json_pack("{s:I, s:o}", "trial", (json_int_t)number, "params", params);
			if (v.vertex)
				json_object_set_new(t, "spec", vertex_trial_spec(&v, study, number));
			json_array_append_new(*add, t);
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

static bool ended(const char *state)
{
	return state && (!strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
			 !strcmp(state, "CANCELLED"));
}

/*
 * Replaces each study's light trial rows ([row, state]) by the trials
 * whole: an ended trial from the cache (it never changes again), the
 * others read (store_study_trials()), so that a pass reads what changed,
 * not every trial of every study. The ended trials read go into the cache;
 * what no running study has any more leaves it.
 */
static enum store_rc fill_trials(struct store_conn *c, json_t *studies, json_t *cache)
{
	static const char *const lists[] = { "trials", "previous" };
	json_t *keep = json_object(), *fresh = json_object(), *got = NULL, *s, *pair, *t;
	int64_t *want = NULL;
	size_t n = 0, cap = 0, i, k;
	char key[32];
	enum store_rc rc = STORE_OK;

	json_array_foreach(studies, i, s) {
		for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
			json_array_foreach(json_object_get(s, lists[l]), k, pair) {
				int64_t row = json_integer_value(json_array_get(pair, 0));
				snprintf(key, sizeof(key), "%lld", (long long)row);
				json_t *hit = ended(json_string_value(json_array_get(pair, 1)))
						      ? json_object_get(cache, key) : NULL;
				if (hit) {
					json_object_set(keep, key, hit);
					continue;
				}
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					want = xrealloc(want, cap * sizeof(*want));
				}
				want[n++] = row;
			}
		}
	}
	if (n && (rc = store_study_trials(c, want, n, &got)) != STORE_OK)
		goto out;
	json_array_foreach(got, i, t) {
		snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(t, "row")));
		json_object_set(fresh, key, t);
		if (ended(json_string_value(json_object_get(t, "state"))))
			json_object_set(keep, key, t);
	}
	json_array_foreach(studies, i, s) {
		for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
			json_t *light = json_object_get(s, lists[l]), *whole;
			if (!json_is_array(light))
				continue;
			whole = json_array();
			json_array_foreach(light, k, pair) {
				snprintf(key, sizeof(key), "%lld",
					 (long long)json_integer_value(json_array_get(pair, 0)));
				t = json_object_get(fresh, key) ?: json_object_get(keep, key);
				if (t)	/* (none: deleted since) */
					json_array_append(whole, t);
			}
			json_object_set_new(s, lists[l], whole);
		}
	}
	json_object_clear(cache);
	json_object_update(cache, keep);
out:
	json_decref(keep);
	json_decref(fresh);
	json_decref(got);
	free(want);
	return rc;
}

struct study_pass_state {
	json_t *trials;		/* ended trials by row id (fill_trials()) */
	json_t *written;	/* study id -> mono_usec() of its last output write */
};

struct study_pass_state *study_pass_state_new(void)
{
	struct study_pass_state *ps = xcalloc(1, sizeof(*ps));
	ps->trials = json_object();
	ps->written = json_object();
	return ps;
}

void study_pass_state_free(struct study_pass_state *ps)
{
	if (!ps)
		return;
	json_decref(ps->trials);
	json_decref(ps->written);
	free(ps);
}

enum store_rc study_pass(struct store_conn *c, struct study_pass_state *ps)
{
	json_t *studies, *s, *written = json_object();
	size_t i;
	enum store_rc rc = store_study_active(c, &studies);

	if (rc == STORE_OK)
		rc = fill_trials(c, studies, ps->trials);
	if (rc != STORE_OK) {
		json_decref(studies);
		json_decref(written);
		return rc;
	}
	int64_t now = mono_usec();
	json_array_foreach(studies, i, s) {
		json_t *add, *stop, *output, *row;
		const char *to_state, *cause;
		char *message, key[32];
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
		/* The output is written with every move and early stop, and
		 * otherwise at most every STUDY_OUTPUT_EVERY_US: a study of
		 * thousands of trials is not rewritten at every pass. */
		snprintf(key, sizeof(key), "%lld", (long long)id);
		const json_t *last = json_object_get(ps->written, key);
		if (rc == STORE_OK && (to_state || json_array_size(stop) || !last ||
				       now - json_integer_value(last) >= STUDY_OUTPUT_EVERY_US)) {
			rc = store_study_update(c, id, output, to_state, cause, message);
			last = NULL;
		}
		json_object_set_new(written, key, last ? json_incref((json_t *)last)
						       : json_integer((json_int_t)now));
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
	json_decref(ps->written);
	ps->written = written;
	json_decref(studies);
	return rc;
}
