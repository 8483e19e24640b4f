#include "messages.h"

#include "api_types.h"
#include "common.h"
#include "ml_types.h"
#include "vertex_types.h"

json_t *spec_messages_describe(void)
{
	static const struct schema_message *const roots[] = {
		&ml_job_message,
		&vertex_custom_job_message,
		&vertex_training_pipeline_message,
		&vertex_hyperparameter_tuning_job_message,
		&ml_list_jobs_response_message,
		&ml_cancel_job_request_message,
		&ml_get_config_response_message,
		&ml_list_locations_response_message,
		&vertex_list_custom_jobs_response_message,
		&vertex_list_training_pipelines_response_message,
		&vertex_list_hyperparameter_tuning_jobs_response_message,
		&api_empty_message,
		&api_list_operations_response_message,
		&iam_set_policy_request_message,
		&iam_test_permissions_request_message,
		&iam_test_permissions_response_message,
		&logging_list_entries_request_message,
		&logging_list_entries_response_message,
	};

	return schema_describe(roots, ARRAY_SIZE(roots));
}
