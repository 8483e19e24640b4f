/*
 * ml_types.h - the ml v1 (AI Platform Training) messages as schema data.
 * Field lists follow the ml v1 discovery document (reference §2).
 */
#ifndef TP_ML_TYPES_H
#define TP_ML_TYPES_H

#include "schema.h"

extern const struct schema_message ml_job_message;	/* GoogleCloudMlV1__Job */

#endif
