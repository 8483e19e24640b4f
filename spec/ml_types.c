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
	{ "count", "count", 0, SK_INT64 },
	{ "type", "type", 0, SK_ENUM, .enumeration = &accelerator_type },
};
static MESSAGE(accelerator_config, ML "AcceleratorConfig", accelerator_config_fields);

static const struct schema_field disk_config_fields[] = {
	{ "bootDiskSizeGb", "boot_disk_size_gb", 0, SK_INT32 },
	{ "bootDiskType", "boot_disk_type", 0, SK_STRING },
};
static MESSAGE(disk_config, ML "DiskConfig", disk_config_fields);

static const struct schema_field replica_config_fields[] = {
	{ "acceleratorConfig", "accelerator_config", 0, SK_MESSAGE, .message = &accelerator_config },
	{ "imageUri", "image_uri", 0, SK_STRING },
	{ "containerCommand", "container_command", 0, SK_STRING, .repeated = 1 },
	{ "containerArgs", "container_args", 0, SK_STRING, .repeated = 1 },
	{ "tpuTfVersion", "tpu_tf_version", 0, SK_STRING },
	{ "diskConfig", "disk_config", 0, SK_MESSAGE, .message = &disk_config },
};
static MESSAGE(replica_config, ML "ReplicaConfig", replica_config_fields);

static const struct schema_field scheduling_fields[] = {
	{ "maxRunningTime", "max_running_time", 0, SK_DURATION },
	{ "maxWaitTime", "max_wait_time", 0, SK_DURATION },
	{ "priority", "priority", 0, SK_INT32 },
	{ "resilientToWorkerRestart", "resilient_to_worker_restart", 0, SK_BOOL },
	{ "strategy", "strategy", 0, SK_ENUM, .enumeration = &strategy },
};
static MESSAGE(scheduling, ML "Scheduling", scheduling_fields);

static const struct schema_field encryption_config_fields[] = {
	{ "kmsKeyName", "kms_key_name", 0, SK_STRING },
};
static MESSAGE(encryption_config, ML "EncryptionConfig", encryption_config_fields);

static const struct schema_field parameter_spec_fields[] = {
	{ "parameterName", "parameter_name", 1, SK_STRING },
	{ "minValue", "min_value", 2, SK_DOUBLE },
	{ "maxValue", "max_value", 3, SK_DOUBLE },
	{ "type", "type", 4, SK_ENUM, .enumeration = &parameter_type },
	{ "categoricalValues", "categorical_values", 5, SK_STRING, .repeated = 1 },
	{ "discreteValues", "discrete_values", 6, SK_DOUBLE, .repeated = 1 },
	{ "scaleType", "scale_type", 7, SK_ENUM, .enumeration = &scale_type },
};
static MESSAGE(parameter_spec, ML "ParameterSpec", parameter_spec_fields);

static const struct schema_field hyperparameter_spec_fields[] = {
	{ "goal", "goal", 1, SK_ENUM, .enumeration = &goal_type },
	{ "params", "params", 2, SK_MESSAGE, .repeated = 1, .message = &parameter_spec },
	{ "maxTrials", "max_trials", 3, SK_INT32 },
	{ "maxParallelTrials", "max_parallel_trials", 4, SK_INT32 },
	{ "hyperparameterMetricTag", "hyperparameter_metric_tag", 5, SK_STRING },
	{ "maxFailedTrials", "max_failed_trials", 0, SK_INT32 },
	{ "resumePreviousJobId", "resume_previous_job_id", 0, SK_STRING },
	{ "enableTrialEarlyStopping", "enable_trial_early_stopping", 0, SK_BOOL },
	{ "algorithm", "algorithm", 0, SK_ENUM, .enumeration = &algorithm },
};
static MESSAGE(hyperparameter_spec, ML "HyperparameterSpec", hyperparameter_spec_fields);

/* The 2017 job_service.proto numbers python_version 16 like job_dir (a
 * proto that cannot compile): python_version counts as unnumbered. */
static const struct schema_field training_input_fields[] = {
	{ "scaleTier", "scale_tier", 1, SK_ENUM, .enumeration = &scale_tier },
	{ "masterType", "master_type", 2, SK_STRING },
	{ "workerType", "worker_type", 3, SK_STRING },
	{ "parameterServerType", "parameter_server_type", 4, SK_STRING },
	{ "workerCount", "worker_count", 5, SK_INT64 },
	{ "parameterServerCount", "parameter_server_count", 6, SK_INT64 },
	{ "packageUris", "package_uris", 7, SK_STRING, .repeated = 1 },
	{ "pythonModule", "python_module", 8, SK_STRING },
	{ "args", "args", 10, SK_STRING, .repeated = 1 },
	{ "hyperparameters", "hyperparameters", 12, SK_MESSAGE, .message = &hyperparameter_spec },
	{ "region", "region", 14, SK_STRING },
	{ "runtimeVersion", "runtime_version", 15, SK_STRING },
	{ "jobDir", "job_dir", 16, SK_STRING },
	{ "masterConfig", "master_config", 0, SK_MESSAGE, .message = &replica_config },
	{ "workerConfig", "worker_config", 0, SK_MESSAGE, .message = &replica_config },
	{ "parameterServerConfig", "parameter_server_config", 0, SK_MESSAGE,
	  .message = &replica_config },
	{ "evaluatorType", "evaluator_type", 0, SK_STRING },
	{ "evaluatorConfig", "evaluator_config", 0, SK_MESSAGE, .message = &replica_config },
	{ "evaluatorCount", "evaluator_count", 0, SK_INT64 },
	{ "pythonVersion", "python_version", 0, SK_STRING },
	{ "scheduling", "scheduling", 0, SK_MESSAGE, .message = &scheduling },
	{ "network", "network", 0, SK_STRING },
	{ "serviceAccount", "service_account", 0, SK_STRING },
	{ "encryptionConfig", "encryption_config", 0, SK_MESSAGE, .message = &encryption_config },
	{ "useChiefInTfConfig", "use_chief_in_tf_config", 0, SK_BOOL },
	{ "enableWebAccess", "enable_web_access", 0, SK_BOOL },
};
static MESSAGE(training_input, ML "TrainingInput", training_input_fields);
const struct schema_message *const ml_training_input_message = &training_input;

/* Batch prediction is out of scope: accepted structurally, refused by the handler. */
static const struct schema_field prediction_input_fields[] = {
	{ "modelName", "model_name", 1, SK_STRING },
	{ "versionName", "version_name", 2, SK_STRING },
	{ "dataFormat", "data_format", 3, SK_STRING },
	{ "inputPaths", "input_paths", 4, SK_STRING, .repeated = 1 },
	{ "outputPath", "output_path", 5, SK_STRING },
	{ "maxWorkerCount", "max_worker_count", 6, SK_INT64 },
	{ "region", "region", 7, SK_STRING },
	{ "runtimeVersion", "runtime_version", 8, SK_STRING },
	{ "uri", "uri", 9, SK_STRING },
	{ "outputDataFormat", "output_data_format", 0, SK_STRING },
	{ "batchSize", "batch_size", 0, SK_INT64 },
	{ "signatureName", "signature_name", 0, SK_STRING },
};
static MESSAGE(prediction_input, ML "PredictionInput", prediction_input_fields);

/* Output only: what the server writes into a job's output column. */
static const struct schema_field hyperparameter_metric_fields[] = {
	{ "trainingStep", "training_step", 1, SK_INT64 },
	{ "objectiveValue", "objective_value", 2, SK_DOUBLE },
};
static MESSAGE(hyperparameter_metric, ML "HyperparameterOutput.HyperparameterMetric",
	       hyperparameter_metric_fields);

static const struct schema_field hyperparameter_output_fields[] = {
	{ "trialId", "trial_id", 1, SK_STRING },
	{ "hyperparameters", "hyperparameters", 2, SK_STRING, .map = 1 },
	{ "finalMetric", "final_metric", 3, SK_MESSAGE, .message = &hyperparameter_metric },
	{ "allMetrics", "all_metrics", 4, SK_MESSAGE, .repeated = 1,
	  .message = &hyperparameter_metric },
	{ "startTime", "start_time", 0, SK_TIMESTAMP },
	{ "endTime", "end_time", 0, SK_TIMESTAMP },
	{ "state", "state", 0, SK_ENUM, .enumeration = &job_state },
	{ "isTrialStoppedEarly", "is_trial_stopped_early", 0, SK_BOOL },
};
static MESSAGE(hyperparameter_output, ML "HyperparameterOutput", hyperparameter_output_fields);

static const struct schema_field training_output_fields[] = {
	{ "completedTrialCount", "completed_trial_count", 1, SK_INT64 },
	{ "trials", "trials", 2, SK_MESSAGE, .repeated = 1, .message = &hyperparameter_output },
	{ "consumedMLUnits", "consumed_ml_units", 3, SK_DOUBLE, .presence = 1 },	/* 0 for a short job */
	{ "isHyperparameterTuningJob", "is_hyperparameter_tuning_job", 4, SK_BOOL },
	{ "isBuiltInAlgorithmJob", "is_built_in_algorithm_job", 0, SK_BOOL },
	{ "hyperparameterMetricTag", "hyperparameter_metric_tag", 0, SK_STRING },
	{ "webAccessUris", "web_access_uris", 0, SK_STRING, .map = 1 },
};
static MESSAGE(training_output, ML "TrainingOutput", training_output_fields);
const struct schema_message *const ml_training_output_message = &training_output;

static const struct schema_field job_fields[] = {
	{ "jobId", "job_id", 1, SK_STRING },
	{ "trainingInput", "training_input", 2, SK_MESSAGE, .message = &training_input },
	{ "predictionInput", "prediction_input", 3, SK_MESSAGE, .message = &prediction_input },
	{ "createTime", "create_time", 4, SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", 5, SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", 6, SK_TIMESTAMP, .output_only = 1 },
	{ "state", "state", 7, SK_ENUM, .output_only = 1, .enumeration = &job_state },
	{ "errorMessage", "error_message", 8, SK_STRING, .output_only = 1 },
	{ "trainingOutput", "training_output", 9, SK_MESSAGE, .output_only = 1,
	  .message = &training_output },
	{ "predictionOutput", "prediction_output", 10, SK_STRUCT, .output_only = 1 },
	{ "labels", "labels", 0, SK_STRING, .map = 1 },
	{ "etag", "etag", 0, SK_BYTES },
	{ "jobPosition", "job_position", 0, SK_INT64, .output_only = 1 },
};
MESSAGE(ml_job_message, ML "Job", job_fields);
