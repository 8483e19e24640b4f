/*
 * validate.h - the catalog rules of a training job, as the cloud applies
 * them: scale tiers, machine types, accelerator types and counts, regions
 * and zones, TPU rules, runtime/python versions, images, scheduling,
 * labels, hyperparameters. They check the typed spec (training_spec.h);
 * ml v1 and Vertex share the machine x accelerator table, the accelerator
 * limits and the region/zone rules (validate.c), each API has its own
 * file of rules (validate_ml.c, validate_vertex.c).
 *
 * Every violation found is appended (not only the first), each with the
 * snake_case path Google prints, e.g.
 *   field "training_input.worker_config.accelerator_config.count"
 *   description "..."
 * in the order of the checks. The HTTP layer turns them into one
 * INVALID_ARGUMENT reply whose message is "Field: <field> Error:
 * <description>" per violation. Each function returns the number of
 * violations it added.
 */
#ifndef TP_VALIDATE_H
#define TP_VALIDATE_H

#include <jansson.h>

#include "catalog.h"
#include "training_spec.h"
#include "violation.h"

/* ml v1: a parsed TrainingInput (spec_ml_parse). */
size_t spec_validate_ml(const struct catalog *cat, const struct training_spec *spec,
			struct violations *out);

/*
 * Vertex: a parsed CustomJobSpec (spec_vertex_parse), created in its
 * region (the location). Paths are "job_spec.worker_pool_specs[0]...".
 */
size_t spec_validate_vertex(const struct catalog *cat, const struct training_spec *spec,
			    struct violations *out);

/*
 * Vertex: the study of a parsed HyperparameterTuningJob
 * (spec_vertex_study_parse): studySpec and the trial counts, paths
 * "hyperparameter_tuning_job.*". Its trialJobSpec is a CustomJobSpec for
 * spec_validate_vertex().
 */
size_t spec_validate_vertex_study(const struct training_spec *spec, struct violations *out);

/* A labels map (borrowed, may be NULL), blamed on field ("job.labels"). */
size_t spec_validate_labels(const json_t *labels, const char *field, struct violations *out);

/*
 * Parse and check in one: a TrainingInput or a CustomJobSpec as JSON
 * (borrowed; anything, even what the structural pass would refuse: the
 * wrong JSON type is a violation too).
 */
size_t spec_check_ml(const struct catalog *cat, const json_t *training_input,
		     struct violations *out);
size_t spec_check_vertex(const struct catalog *cat, const char *location, const json_t *job_spec,
			 struct violations *out);

#endif
