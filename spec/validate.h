/*
 * validate.h - the semantic rules of a training config, checked against
 * the catalog: scale tiers, machine types, accelerator types and counts,
 * regions and zones, TPU rules, runtime/python versions, scheduling,
 * labels, hyperparameters. One engine shared by ml v1 and Vertex.
 *
 * Input is the structurally valid, normalised JSON (server/ml_schema.c has
 * already checked JSON types, enum names and unknown fields, and converted
 * snake_case keys to lowerCamelCase; int64 fields are JSON strings).
 *
 * Every violation found is appended (not only the first), each with the
 * snake_case path Google prints, e.g.
 *   field "training_input.worker_config.accelerator_config.count"
 *   description "..."
 * The HTTP layer turns them into one INVALID_ARGUMENT reply whose message
 * is "Field: <field> Error: <description>" per violation.
 */
#ifndef TP_VALIDATE_H
#define TP_VALIDATE_H

#include <jansson.h>

#include "catalog.h"
#include "violation.h"

/* ml v1: the job's trainingInput (borrowed). Returns the number of violations added. */
size_t validate_ml_training_input(const struct catalog *cat, const json_t *training_input,
				  struct violations *out);

/* ml v1: the job's labels map (borrowed, may be NULL); paths "job.labels". */
size_t validate_labels(const json_t *labels, const char *field, struct violations *out);

/*
 * Vertex: a CustomJobSpec (borrowed) created in location (region).
 * Paths are "job_spec.worker_pool_specs[0].machine_spec.accelerator_type" etc.
 */
size_t validate_vertex_job_spec(const struct catalog *cat, const char *location,
				const json_t *job_spec, struct violations *out);

#endif
