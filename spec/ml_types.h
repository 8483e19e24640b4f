/*
 * ml_types.h - the ml v1 (AI Platform Training) messages as schema data.
 * Field lists follow the ml v1 discovery document (reference §2); their
 * order is proto field order (schema.h): by number where the last public
 * ml v1 protos (googleapis, google/cloud/ml/v1/job_service.proto) give one,
 * then the later fields in the REST reference's order.
 */
#ifndef TP_ML_TYPES_H
#define TP_ML_TYPES_H

#include "schema.h"

extern const struct schema_message ml_job_message;	/* GoogleCloudMlV1__Job */
extern const struct schema_message *const ml_training_input_message;	/* TrainingInput */
extern const struct schema_message *const ml_training_output_message;	/* TrainingOutput */

/* The other messages of the methods (the discovery document describes them). */
extern const struct schema_message ml_list_jobs_response_message;	/* ListJobsResponse */
extern const struct schema_message ml_cancel_job_request_message;	/* CancelJobRequest: {} */
extern const struct schema_message ml_get_config_response_message;	/* GetConfigResponse */
extern const struct schema_message ml_location_message;	/* Location */
extern const struct schema_message ml_list_locations_response_message;

#endif
