/*
 * validate_study.c - Vertex's rules for a HyperparameterTuningJob's study
 * (validate.h): studySpec's metrics and parameters (each one value spec,
 * its range or list, its scale, its conditional parameters), the
 * algorithm, and the trial counts. Checked on the typed spec
 * (spec_vertex_study_parse); every problem is reported, with the
 * hyperparameter_tuning_job.* path. Google's wording for these is not on
 * record (reference/hp-tuning.md §2.6): the messages say what is wrong
 * and what is allowed, as Vertex's other messages do.
 */
#include "validate.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate_internal.h"
#include "wire.h"

#define HT "hyperparameter_tuning_job"
#define MAX_STUDY_PARAMS 100		/* ours: a GP over more is no use */
#define MAX_STUDY_VALUES 1000		/* DiscreteValueSpec: "not more than 1,000 values" */
#define DISCRETE_GAP 1e-10		/* "at least 1e-10 apart" */

static bool has_space(const char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s))
			return true;
	return false;
}

static void check_metrics(struct violations *out, const json_t *metrics)
{
	size_t n = json_array_size(metrics);
	char f[FIELD_MAX];

	if (!n) {
		violations_add(out, HT ".study_spec.metrics", "Required field is not set.");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *id = json_string_value(json_object_get(json_array_get(metrics, i),
								   "metricId"));
		snprintf(f, sizeof(f), HT ".study_spec.metrics[%zu].metric_id", i);
		if (!id || !*id) {
			violations_add(out, f, "Required field is not set.");
			continue;
		}
		if (has_space(id))
			violations_add(out, f, "A metric id must not contain whitespace.");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(id, json_string_value(json_object_get(json_array_get(metrics, j),
									  "metricId")) ?: ""))
				violations_add(out, f, "Duplicate metric id \"%s\".", id);
	}
}

/* A value of the parent's space: the condition's values must be some. */
static bool in_space(const struct spec_param *parent, const json_t *v)
{
	double d;
	if (!strcmp(parent->type, "CATEGORICAL")) {
		size_t k;
		const json_t *c;
		json_array_foreach(parent->categorical_values, k, c)
			if (json_equal(c, v))
				return true;
		return false;
	}
	if (wire_double_get(v, &d))
		return false;
	if (!strcmp(parent->type, "INTEGER"))
		return d >= parent->min_value && d <= parent->max_value;
	size_t k;
	const json_t *x;
	json_array_foreach(parent->discrete_values, k, x) {
		double e;
		if (!wire_double_get(x, &e) && fabs(e - d) <= DISCRETE_GAP)
			return true;
	}
	return false;
}

static void check_condition(struct violations *out, const struct spec_hyperparameters *hp,
			    const struct spec_param *p)
{
	const struct spec_param *parent = &hp->params[p->parent];
	char f[FIELD_MAX];
	size_t cut = strlen(p->path) - strlen(".parameter_spec");

	snprintf(f, sizeof(f), "%.*s", (int)cut, p->path);	/* ...conditional_parameter_specs[k] */
	if (!p->parent_kind) {
		violations_add(out, f, "One of parent_discrete_values, parent_int_values or "
			       "parent_categorical_values must be set.");
		return;
	}
	if (!parent->type)
		return;		/* the parent's own problem, reported for it */
	if (strcmp(parent->type, p->parent_kind)) {
		violations_add(out, f, "The condition is on %s values, but the parent parameter "
			       "\"%s\" is %s.", p->parent_kind, parent->name ? parent->name : "",
			       parent->type);
		return;
	}
	if (!json_array_size(p->parent_values)) {
		violations_add(out, f, "The condition's values must not be empty.");
		return;
	}
	size_t k;
	const json_t *v;
	json_array_foreach(p->parent_values, k, v)
		if (!in_space(parent, v)) {
			char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			violations_add(out, f, "The condition's value %s is not a value of the parent "
				       "parameter \"%s\".", text ? text : "?",
				       parent->name ? parent->name : "");
			free(text);
			break;
		}
}

static void check_list(struct violations *out, const struct spec_param *p, const char *f,
		       bool log_scale)
{
	if (!strcmp(p->type, "CATEGORICAL")) {
		size_t n = json_array_size(p->categorical_values);
		if (!n)
			violations_add(out, f, "Required field is not set.");
		else if (n > MAX_STUDY_VALUES)
			violations_add(out, f, "At most %d values are supported.", MAX_STUDY_VALUES);
		for (size_t k = 0; k < n && n <= MAX_STUDY_VALUES; k++)
			for (size_t j = 0; j < k; j++)
				if (json_equal(json_array_get(p->categorical_values, k),
					       json_array_get(p->categorical_values, j))) {
					violations_add(out, f, "Duplicate value \"%s\".",
						       json_string_value(json_array_get(
							       p->categorical_values, k)) ?: "");
					return;
				}
		return;
	}
	size_t n = json_array_size(p->discrete_values);
	double prev = 0;
	if (!n) {
		violations_add(out, f, "Required field is not set.");
		return;
	}
	if (n > MAX_STUDY_VALUES) {
		violations_add(out, f, "At most %d values are supported.", MAX_STUDY_VALUES);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		double d;
		if (wire_double_get(json_array_get(p->discrete_values, k), &d))
			return;		/* the type, reported by the structural pass */
		if (k && d - prev < DISCRETE_GAP) {
			violations_add(out, f, "The values must be in increasing order and at least "
				       "1e-10 apart.");
			return;
		}
		if (!k && log_scale && d <= 0) {
			violations_add(out, f, "The values must be strictly positive for a "
				       "logarithmic scale.");
			return;
		}
		prev = d;
	}
}

static void check_param(struct violations *out, const struct spec_hyperparameters *hp, size_t i,
			bool grid)
{
	const struct spec_param *p = &hp->params[i];
	char f[FIELD_MAX];

	if (!p->is_object)
		return;
	snprintf(f, sizeof(f), "%s.parameter_id", p->path);
	if (!p->name) {
		violations_add(out, f, "Required field is not set.");
	} else if (has_space(p->name)) {
		violations_add(out, f, "A parameter id must not contain whitespace.");
	} else {
		for (size_t j = 0; j < i; j++)
			if (hp->params[j].name && !strcmp(hp->params[j].name, p->name)) {
				violations_add(out, f, "Duplicate parameter id \"%s\".", p->name);
				break;
			}
	}
	if (p->parent >= 0)
		check_condition(out, hp, p);
	if (p->value_specs != 1) {
		violations_add(out, p->path, "Exactly one of double_value_spec, integer_value_spec, "
			       "categorical_value_spec and discrete_value_spec must be set.");
		return;
	}
	const char *sfx = !strcmp(p->type, "DOUBLE") ? "double_value_spec"
			  : !strcmp(p->type, "INTEGER") ? "integer_value_spec"
			  : !strcmp(p->type, "CATEGORICAL") ? "categorical_value_spec"
							    : "discrete_value_spec";
	bool log_scale = p->scale_type && strcmp(p->scale_type, "UNIT_LINEAR_SCALE");
	if (p->has_default) {
		snprintf(f, sizeof(f), "%s.%s.default_value", p->path, sfx);
		violations_add(out, f, "default_value is supported by Vertex AI Vizier only, not by "
			       "HyperparameterTuningJob.");
	}
	if (grid && !strcmp(p->type, "DOUBLE")) {
		snprintf(f, sizeof(f), "%s.%s", p->path, sfx);
		violations_add(out, f, "GRID_SEARCH requires every parameter to be INTEGER, "
			       "CATEGORICAL or DISCRETE.");
	}
	if (!strcmp(p->type, "CATEGORICAL") && p->scale_type) {
		snprintf(f, sizeof(f), "%s.scale_type", p->path);
		violations_add(out, f, "scale_type must be left unset for a CATEGORICAL parameter.");
	}
	if (!strcmp(p->type, "DOUBLE") || !strcmp(p->type, "INTEGER")) {
		snprintf(f, sizeof(f), "%s.%s.max_value", p->path, sfx);
		if (!(p->max_value > p->min_value))
			violations_add(out, f, "max_value (%g) must be greater than min_value (%g).",
				       p->max_value, p->min_value);
		snprintf(f, sizeof(f), "%s.%s.min_value", p->path, sfx);
		if (log_scale && p->min_value <= 0)
			violations_add(out, f, "The feasible space must be strictly positive for %s.",
				       p->scale_type);
		return;
	}
	snprintf(f, sizeof(f), "%s.%s.values", p->path, sfx);
	check_list(out, p, f, log_scale);
}

size_t spec_validate_vertex_study(const struct training_spec *spec, struct violations *out)
{
	const struct spec_hyperparameters *hp = &spec->hyperparameters;
	size_t before = out->n;

	if (!hp->has_max_trials || hp->max_trials < 1)
		violations_add(out, HT ".max_trial_count", "max_trial_count must be greater than 0.");
	if (!hp->has_max_parallel_trials || hp->max_parallel_trials < 1)
		violations_add(out, HT ".parallel_trial_count",
			       "parallel_trial_count must be greater than 0.");
	if (hp->max_failed_trials < 0)
		violations_add(out, HT ".max_failed_trial_count",
			       "max_failed_trial_count must not be negative.");
	else if (hp->has_max_trials && hp->max_failed_trials > hp->max_trials)
		violations_add(out, HT ".max_failed_trial_count",
			       "max_failed_trial_count (%lld) must not be greater than "
			       "max_trial_count (%lld).", (long long)hp->max_failed_trials,
			       (long long)hp->max_trials);
	if (!hp->metrics && !hp->nparams && !hp->algorithm) {
		violations_add(out, HT ".study_spec", "Required field is not set.");
		return out->n - before;
	}
	check_metrics(out, hp->metrics);
	if (!hp->nparams)
		violations_add(out, HT ".study_spec.parameters", "Required field is not set.");
	else if (hp->nparams > MAX_STUDY_PARAMS)
		violations_add(out, HT ".study_spec.parameters",
			       "At most %d parameters, conditional ones included, are supported.",
			       MAX_STUDY_PARAMS);
	else if (hp->conditions_too_deep)
		violations_add(out, HT ".study_spec.parameters",
			       "Conditional parameters nest at most %d deep.", SPEC_CONDITION_DEPTH);
	else
		for (size_t i = 0; i < hp->nparams; i++)
			check_param(out, hp, i, hp->algorithm && !strcmp(hp->algorithm, "GRID_SEARCH"));
	return out->n - before;
}
