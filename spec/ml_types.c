#include "ml_types.h"

#include "common.h"

#define ML "type.googleapis.com/google.cloud.ml.v1."
#define ENUM(var, url, ...) \
	static const char *const var##_names[] = { __VA_ARGS__ }; \
	static const struct schema_enum var = { url, var##_names, ARRAY_SIZE(var##_names) }
#define MESSAGE(var, url, fields) \
	const struct schema_message var = { url, fields, ARRAY_SIZE(fields) }

ENUM(scale_tier, ML "TrainingInput.ScaleTier",
     "BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU", "BASIC_TPU", "CUSTOM");
ENUM(accelerator_type, ML "AcceleratorConfig.AcceleratorType",
     "ACCELERATOR_TYPE_UNSPECIFIED", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100",
     "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100",
     "TPU_V2", "TPU_V3", "TPU_V2_POD", "TPU_V3_POD", "TPU_V4_POD");
ENUM(goal_type, ML "HyperparameterSpec.GoalType", "GOAL_TYPE_UNSPECIFIED", "MAXIMIZE", "MINIMIZE");
ENUM(algorithm, ML "HyperparameterSpec.Algorithm",
     "ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH");
ENUM(parameter_type, ML "ParameterSpec.ParameterType",
     "PARAMETER_TYPE_UNSPECIFIED", "DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE");
ENUM(scale_type, ML "ParameterSpec.ScaleType",
     "NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE");
ENUM(strategy, ML "Scheduling.Strategy", "STRATEGY_UNSPECIFIED", "ON_DEMAND", "LOW_COST");
ENUM(job_state, ML "Job.State", "STATE_UNSPECIFIED", "QUEUED", "PREPARING", "RUNNING",
     "SUCCEEDED", "FAILED", "CANCELLING", "CANCELLED");

static const struct schema_field accelerator_config_fields[] = {
	{ "count", "count", SK_INT64, .number = 0 },
	{ "type", "type", SK_ENUM, .number = 0, .enumeration = &accelerator_type },
};
static MESSAGE(accelerator_config, ML "AcceleratorConfig", accelerator_config_fields);

static const struct schema_field disk_config_fields[] = {
	{ "bootDiskSizeGb", "boot_disk_size_gb", SK_INT32, .number = 0 },
	{ "bootDiskType", "boot_disk_type", SK_STRING, .number = 0 },
};
static MESSAGE(disk_config, ML "DiskConfig", disk_config_fields);

static const struct schema_field replica_config_fields[] = {
	{ "acceleratorConfig", "accelerator_config", SK_MESSAGE, .number = 0, .message = &accelerator_config },
	{ "imageUri", "image_uri", SK_STRING, .number = 0 },
	{ "containerCommand", "container_command", SK_STRING, .number = 0, .repeated = 1 },
	{ "containerArgs", "container_args", SK_STRING, .number = 0, .repeated = 1 },
	{ "tpuTfVersion", "tpu_tf_version", SK_STRING, .number = 0 },
	{ "diskConfig", "disk_config", SK_MESSAGE, .number = 0, .message = &disk_config },
};
static MESSAGE(replica_config, ML "ReplicaConfig", replica_config_fields);

static const struct schema_field scheduling_fields[] = {
	{ "maxRunningTime", "max_running_time", SK_DURATION, .number = 0 },
	{ "maxWaitTime", "max_wait_time", SK_DURATION, .number = 0 },
	{ "priority", "priority", SK_INT32, .number = 0 },
	{ "resilientToWorkerRestart", "resilient_to_worker_restart", SK_BOOL, .number = 0 },
	{ "strategy", "strategy", SK_ENUM, .number = 0, .enumeration = &strategy },
};
static MESSAGE(scheduling, ML "Scheduling", scheduling_fields);

static const struct schema_field encryption_config_fields[] = {
	{ "kmsKeyName", "kms_key_name", SK_STRING, .number = 0 },
};
static MESSAGE(encryption_config, ML "EncryptionConfig", encryption_config_fields);

static const struct schema_field parameter_spec_fields[] = {
	{ "parameterName", "parameter_name", SK_STRING, .number = 1 },
	{ "minValue", "min_value", SK_DOUBLE, .number = 2 },
	{ "maxValue", "max_value", SK_DOUBLE, .number = 3 },
	{ "type", "type", SK_ENUM, .number = 4, .enumeration = &parameter_type },
	{ "categoricalValues", "categorical_values", SK_STRING, .number = 5, .repeated = 1 },
	{ "discreteValues", "discrete_values", SK_DOUBLE, .number = 6, .repeated = 1 },
	{ "scaleType", "scale_type", SK_ENUM, .number = 7, .enumeration = &scale_type },
};
static MESSAGE(parameter_spec, ML "ParameterSpec", parameter_spec_fields);

static const struct schema_field hyperparameter_spec_fields[] = {
	{ "goal", "goal", SK_ENUM, .number = 1, .enumeration = &goal_type },
	{ "params", "params", SK_MESSAGE, .number = 2, .repeated = 1, .message = &parameter_spec },
	{ "maxTrials", "max_trials", SK_INT32, .number = 3 },
	{ "maxParallelTrials", "max_parallel_trials", SK_INT32, .number = 4 },
	{ "hyperparameterMetricTag", "hyperparameter_metric_tag", SK_STRING, .number = 5 },
	{ "maxFailedTrials", "max_failed_trials", SK_INT32, .number = 0 },
	{ "resumePreviousJobId", "resume_previous_job_id", SK_STRING, .number = 0 },
	{ "enableTrialEarlyStopping", "enable_trial_early_stopping", SK_BOOL, .number = 0 },
	{ "algorithm", "algorithm", SK_ENUM, .number = 0, .enumeration = &algorithm },
};
static MESSAGE(hyperparameter_spec, ML "HyperparameterSpec", hyperparameter_spec_fields);

/* The 2017 job_service.proto numbers python_version 16 like job_dir (a
 * proto that cannot compile): python_version counts as unnumbered. */
static const struct schema_field training_input_fields[] = {
	{ "scaleTier", "scale_tier", SK_ENUM, .number = 1, .enumeration = &scale_tier },
	{ "masterType", "master_type", SK_STRING, .number = 2 },
	{ "workerType", "worker_type", SK_STRING, .number = 3 },
	{ "parameterServerType", "parameter_server_type", SK_STRING, .number = 4 },
	{ "workerCount", "worker_count", SK_INT64, .number = 5 },
	{ "parameterServerCount", "parameter_server_count", SK_INT64, .number = 6 },
	{ "packageUris", "package_uris", SK_STRING, .number = 7, .repeated = 1 },
	{ "pythonModule", "python_module", SK_STRING, .number = 8 },
	{ "args", "args", SK_STRING, .number = 10, .repeated = 1 },
	{ "hyperparameters", "hyperparameters", SK_MESSAGE, .number = 12, .message = &hyperparameter_spec },
	{ "region", "region", SK_STRING, .number = 14 },
	{ "runtimeVersion", "runtime_version", SK_STRING, .number = 15 },
	{ "jobDir", "job_dir", SK_STRING, .number = 16 },
	{ "masterConfig", "master_config", SK_MESSAGE, .number = 0, .message = &replica_config },
	{ "workerConfig", "worker_config", SK_MESSAGE, .number = 0, .message = &replica_config },
	{ "parameterServerConfig", "parameter_server_config", SK_MESSAGE, .number = 0,
	  .message = &replica_config },
	{ "evaluatorType", "evaluator_type", SK_STRING, .number = 0 },
	{ "evaluatorConfig", "evaluator_config", SK_MESSAGE, .number = 0, .message = &replica_config },
	{ "evaluatorCount", "evaluator_count", SK_INT64, .number = 0 },
	{ "pythonVersion", "python_version", SK_STRING, .number = 0 },
	{ "scheduling", "scheduling", SK_MESSAGE, .number = 0, .message = &scheduling },
	{ "network", "network", SK_STRING, .number = 0 },
	{ "serviceAccount", "service_account", SK_STRING, .number = 0 },
	{ "encryptionConfig", "encryption_config", SK_MESSAGE, .number = 0, .message = &encryption_config },
	{ "useChiefInTfConfig", "use_chief_in_tf_config", SK_BOOL, .number = 0 },
	{ "enableWebAccess", "enable_web_access", SK_BOOL, .number = 0 },
};
static MESSAGE(training_input, ML "TrainingInput", training_input_fields);
const struct schema_message *const ml_training_input_message = &training_input;

/* Batch prediction is out of scope: accepted structurally, refused by the handler. */
static const struct schema_field prediction_input_fields[] = {
	{ "modelName", "model_name", SK_STRING, .number = 1 },
	{ "versionName", "version_name", SK_STRING, .number = 2 },
	{ "dataFormat", "data_format", SK_STRING, .number = 3 },
	{ "inputPaths", "input_paths", SK_STRING, .number = 4, .repeated = 1 },
	{ "outputPath", "output_path", SK_STRING, .number = 5 },
	{ "maxWorkerCount", "max_worker_count", SK_INT64, .number = 6 },
	{ "region", "region", SK_STRING, .number = 7 },
	{ "runtimeVersion", "runtime_version", SK_STRING, .number = 8 },
	{ "uri", "uri", SK_STRING, .number = 9 },
	{ "outputDataFormat", "output_data_format", SK_STRING, .number = 0 },
	{ "batchSize", "batch_size", SK_INT64, .number = 0 },
	{ "signatureName", "signature_name", SK_STRING, .number = 0 },
};
static MESSAGE(prediction_input, ML "PredictionInput", prediction_input_fields);

/* Output only: what the server writes into a job's output column. */
static const struct schema_field hyperparameter_metric_fields[] = {
	{ "trainingStep", "training_step", SK_INT64, .number = 1 },
	{ "objectiveValue", "objective_value", SK_DOUBLE, .number = 2 },
};
static MESSAGE(hyperparameter_metric, ML "HyperparameterOutput.HyperparameterMetric",
	       hyperparameter_metric_fields);

static const struct schema_field hyperparameter_output_fields[] = {
	{ "trialId", "trial_id", SK_STRING, .number = 1 },
	{ "hyperparameters", "hyperparameters", SK_STRING, .number = 2, .map = 1 },
	{ "finalMetric", "final_metric", SK_MESSAGE, .number = 3, .message = &hyperparameter_metric },
	{ "allMetrics", "all_metrics", SK_MESSAGE, .number = 4, .repeated = 1,
	  .message = &hyperparameter_metric },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 0 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 0 },
	{ "state", "state", SK_ENUM, .number = 0, .enumeration = &job_state },
	{ "isTrialStoppedEarly", "is_trial_stopped_early", SK_BOOL, .number = 0 },
};
static MESSAGE(hyperparameter_output, ML "HyperparameterOutput", hyperparameter_output_fields);

static const struct schema_field training_output_fields[] = {
	{ "completedTrialCount", "completed_trial_count", SK_INT64, .number = 1 },
	{ "trials", "trials", SK_MESSAGE, .number = 2, .repeated = 1, .message = &hyperparameter_output },
	{ "consumedMLUnits", "consumed_ml_units", SK_DOUBLE, .number = 3, .presence = 1 },	/* 0 for a short job */
	{ "isHyperparameterTuningJob", "is_hyperparameter_tuning_job", SK_BOOL, .number = 4 },
	{ "isBuiltInAlgorithmJob", "is_built_in_algorithm_job", SK_BOOL, .number = 0 },
	{ "hyperparameterMetricTag", "hyperparameter_metric_tag", SK_STRING, .number = 0 },
	{ "webAccessUris", "web_access_uris", SK_STRING, .number = 0, .map = 1 },
};
static MESSAGE(training_output, ML "TrainingOutput", training_output_fields);
const struct schema_message *const ml_training_output_message = &training_output;

static const struct schema_field job_fields[] = {
	{ "jobId", "job_id", SK_STRING, .number = 1 },
	{ "trainingInput", "training_input", SK_MESSAGE, .number = 2, .message = &training_input },
	{ "predictionInput", "prediction_input", SK_MESSAGE, .number = 3, .message = &prediction_input },
	{ "createTime", "create_time", SK_TIMESTAMP, .number = 4, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 5, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 6, .output_only = 1 },
	{ "state", "state", SK_ENUM, .number = 7, .output_only = 1, .enumeration = &job_state },
	{ "errorMessage", "error_message", SK_STRING, .number = 8, .output_only = 1 },
	{ "trainingOutput", "training_output", SK_MESSAGE, .number = 9, .output_only = 1,
	  .message = &training_output },
	{ "predictionOutput", "prediction_output", SK_STRUCT, .number = 10, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .number = 0, .map = 1 },
	{ "etag", "etag", SK_BYTES, .number = 0 },
	{ "jobPosition", "job_position", SK_INT64, .number = 0, .output_only = 1 },
};
MESSAGE(ml_job_message, ML "Job", job_fields);

/* --- the other messages of the ml v1 methods -------------------------------- */

static const struct schema_field list_jobs_response_fields[] = {
	{ "jobs", "jobs", SK_MESSAGE, .number = 1, .repeated = 1, .message = &ml_job_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(ml_list_jobs_response_message, ML "ListJobsResponse", list_jobs_response_fields);

/* jobs.cancel's body: {} (or none). */
const struct schema_message ml_cancel_job_request_message = { ML "CancelJobRequest", NULL, 0 };

static const struct schema_field config_fields[] = {
	{ "tpuServiceAccount", "tpu_service_account", SK_STRING, .number = 0 },
};
static MESSAGE(config, ML "Config", config_fields);

static const struct schema_field get_config_response_fields[] = {
	{ "serviceAccount", "service_account", SK_STRING, .number = 1 },
	{ "serviceAccountProject", "service_account_project", SK_INT64, .number = 2 },
	{ "config", "config", SK_MESSAGE, .number = 0, .message = &config },
};
MESSAGE(ml_get_config_response_message, ML "GetConfigResponse", get_config_response_fields);

ENUM(capability_type, ML "Capability.Type", "TYPE_UNSPECIFIED", "TRAINING", "BATCH_PREDICTION",
     "ONLINE_PREDICTION");

/* What catalog_location_json() writes: one TRAINING capability. */
static const struct schema_field capability_fields[] = {
	{ "type", "type", SK_ENUM, .number = 0, .enumeration = &capability_type },
	{ "availableAccelerators", "available_accelerators", SK_ENUM, .number = 0, .repeated = 1,
	  .enumeration = &accelerator_type },
};
static MESSAGE(capability, ML "Capability", capability_fields);

static const struct schema_field location_fields[] = {
	{ "name", "name", SK_STRING, .number = 0 },
	{ "capabilities", "capabilities", SK_MESSAGE, .number = 0, .repeated = 1,
	  .message = &capability },
};
MESSAGE(ml_location_message, ML "Location", location_fields);

static const struct schema_field list_locations_response_fields[] = {
	{ "locations", "locations", SK_MESSAGE, .number = 0, .repeated = 1,
	  .message = &ml_location_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 0 },
};
MESSAGE(ml_list_locations_response_message, ML "ListLocationsResponse",
	list_locations_response_fields);
