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
	{ "count", "count", SK_INT64 },
	{ "type", "type", SK_ENUM, .enumeration = &accelerator_type },
};
static MESSAGE(accelerator_config, ML "AcceleratorConfig", accelerator_config_fields);

static const struct schema_field disk_config_fields[] = {
	{ "bootDiskSizeGb", "boot_disk_size_gb", SK_INT32 },
	{ "bootDiskType", "boot_disk_type", SK_STRING },
};
static MESSAGE(disk_config, ML "DiskConfig", disk_config_fields);

static const struct schema_field replica_config_fields[] = {
	{ "acceleratorConfig", "accelerator_config", SK_MESSAGE, .message = &accelerator_config },
	{ "imageUri", "image_uri", SK_STRING },
	{ "containerCommand", "container_command", SK_STRING, .repeated = 1 },
	{ "containerArgs", "container_args", SK_STRING, .repeated = 1 },
	{ "tpuTfVersion", "tpu_tf_version", SK_STRING },
	{ "diskConfig", "disk_config", SK_MESSAGE, .message = &disk_config },
};
static MESSAGE(replica_config, ML "ReplicaConfig", replica_config_fields);

static const struct schema_field scheduling_fields[] = {
	{ "maxRunningTime", "max_running_time", SK_DURATION },
	{ "maxWaitTime", "max_wait_time", SK_DURATION },
	{ "priority", "priority", SK_INT32 },
	{ "resilientToWorkerRestart", "resilient_to_worker_restart", SK_BOOL },
	{ "strategy", "strategy", SK_ENUM, .enumeration = &strategy },
};
static MESSAGE(scheduling, ML "Scheduling", scheduling_fields);

static const struct schema_field encryption_config_fields[] = {
	{ "kmsKeyName", "kms_key_name", SK_STRING },
};
static MESSAGE(encryption_config, ML "EncryptionConfig", encryption_config_fields);

static const struct schema_field parameter_spec_fields[] = {
	{ "parameterName", "parameter_name", SK_STRING },
	{ "type", "type", SK_ENUM, .enumeration = &parameter_type },
	{ "minValue", "min_value", SK_DOUBLE },
	{ "maxValue", "max_value", SK_DOUBLE },
	{ "categoricalValues", "categorical_values", SK_STRING, .repeated = 1 },
	{ "discreteValues", "discrete_values", SK_DOUBLE, .repeated = 1 },
	{ "scaleType", "scale_type", SK_ENUM, .enumeration = &scale_type },
};
static MESSAGE(parameter_spec, ML "ParameterSpec", parameter_spec_fields);

static const struct schema_field hyperparameter_spec_fields[] = {
	{ "goal", "goal", SK_ENUM, .enumeration = &goal_type },
	{ "params", "params", SK_MESSAGE, .repeated = 1, .message = &parameter_spec },
	{ "maxTrials", "max_trials", SK_INT32 },
	{ "maxParallelTrials", "max_parallel_trials", SK_INT32 },
	{ "maxFailedTrials", "max_failed_trials", SK_INT32 },
	{ "hyperparameterMetricTag", "hyperparameter_metric_tag", SK_STRING },
	{ "resumePreviousJobId", "resume_previous_job_id", SK_STRING },
	{ "enableTrialEarlyStopping", "enable_trial_early_stopping", SK_BOOL },
	{ "algorithm", "algorithm", SK_ENUM, .enumeration = &algorithm },
};
static MESSAGE(hyperparameter_spec, ML "HyperparameterSpec", hyperparameter_spec_fields);

static const struct schema_field training_input_fields[] = {
	{ "scaleTier", "scale_tier", SK_ENUM, .enumeration = &scale_tier },
	{ "masterType", "master_type", SK_STRING },
	{ "masterConfig", "master_config", SK_MESSAGE, .message = &replica_config },
	{ "workerType", "worker_type", SK_STRING },
	{ "workerConfig", "worker_config", SK_MESSAGE, .message = &replica_config },
	{ "workerCount", "worker_count", SK_INT64 },
	{ "parameterServerType", "parameter_server_type", SK_STRING },
	{ "parameterServerConfig", "parameter_server_config", SK_MESSAGE, .message = &replica_config },
	{ "parameterServerCount", "parameter_server_count", SK_INT64 },
	{ "evaluatorType", "evaluator_type", SK_STRING },
	{ "evaluatorConfig", "evaluator_config", SK_MESSAGE, .message = &replica_config },
	{ "evaluatorCount", "evaluator_count", SK_INT64 },
	{ "packageUris", "package_uris", SK_STRING, .repeated = 1 },
	{ "pythonModule", "python_module", SK_STRING },
	{ "args", "args", SK_STRING, .repeated = 1 },
	{ "hyperparameters", "hyperparameters", SK_MESSAGE, .message = &hyperparameter_spec },
	{ "region", "region", SK_STRING },
	{ "jobDir", "job_dir", SK_STRING },
	{ "runtimeVersion", "runtime_version", SK_STRING },
	{ "pythonVersion", "python_version", SK_STRING },
	{ "scheduling", "scheduling", SK_MESSAGE, .message = &scheduling },
	{ "network", "network", SK_STRING },
	{ "serviceAccount", "service_account", SK_STRING },
	{ "encryptionConfig", "encryption_config", SK_MESSAGE, .message = &encryption_config },
	{ "useChiefInTfConfig", "use_chief_in_tf_config", SK_BOOL },
	{ "enableWebAccess", "enable_web_access", SK_BOOL },
};
static MESSAGE(training_input, ML "TrainingInput", training_input_fields);

/* Batch prediction is out of scope: accepted structurally, refused by the handler. */
static const struct schema_field prediction_input_fields[] = {
	{ "dataFormat", "data_format", SK_STRING },
	{ "outputDataFormat", "output_data_format", SK_STRING },
	{ "inputPaths", "input_paths", SK_STRING, .repeated = 1 },
	{ "outputPath", "output_path", SK_STRING },
	{ "maxWorkerCount", "max_worker_count", SK_INT64 },
	{ "region", "region", SK_STRING },
	{ "runtimeVersion", "runtime_version", SK_STRING },
	{ "modelName", "model_name", SK_STRING },
	{ "versionName", "version_name", SK_STRING },
	{ "uri", "uri", SK_STRING },
	{ "batchSize", "batch_size", SK_INT64 },
	{ "signatureName", "signature_name", SK_STRING },
};
static MESSAGE(prediction_input, ML "PredictionInput", prediction_input_fields);

static const struct schema_field job_fields[] = {
	{ "jobId", "job_id", SK_STRING },
	{ "trainingInput", "training_input", SK_MESSAGE, .message = &training_input },
	{ "predictionInput", "prediction_input", SK_MESSAGE, .message = &prediction_input },
	{ "labels", "labels", SK_STRING, .map = 1 },
	{ "etag", "etag", SK_BYTES },
	{ "createTime", "create_time", SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .output_only = 1 },
	{ "state", "state", SK_ENUM, .output_only = 1, .enumeration = &job_state },
	{ "errorMessage", "error_message", SK_STRING, .output_only = 1 },
	{ "trainingOutput", "training_output", SK_STRUCT, .output_only = 1 },
	{ "predictionOutput", "prediction_output", SK_STRUCT, .output_only = 1 },
	{ "jobPosition", "job_position", SK_INT64, .output_only = 1 },
};
MESSAGE(ml_job_message, ML "Job", job_fields);
