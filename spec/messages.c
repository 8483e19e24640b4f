#include "messages.h"

#include "common.h"
#include "ml_types.h"
#include "vertex_types.h"

json_t *spec_messages_describe(void)
{
	static const struct schema_message *const roots[] = {
		&ml_job_message, &vertex_custom_job_message, &vertex_training_pipeline_message,
		&vertex_hyperparameter_tuning_job_message,
	};

	return schema_describe(roots, ARRAY_SIZE(roots));
}
