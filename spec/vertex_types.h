/*
 * vertex_types.h - the Vertex AI aiplatform v1 CustomJob messages as schema
 * data (reference §5.2-5.5).
 */
#ifndef TP_VERTEX_TYPES_H
#define TP_VERTEX_TYPES_H

#include "schema.h"

extern const struct schema_message vertex_custom_job_message;	/* CustomJob */
extern const struct schema_message *const vertex_custom_job_spec_message;	/* CustomJobSpec */
extern const struct schema_message vertex_training_pipeline_message;	/* TrainingPipeline */

#endif
