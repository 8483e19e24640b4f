#include "vertex_types.h"

#include "common.h"

#define AI "type.googleapis.com/google.cloud.aiplatform.v1."
/* Vertex's clients (google-gax) send enums as numbers: each enum here
 * lists its names and, in NUMBERS(...), their proto numbers. */
#define NUMBERS(...) { __VA_ARGS__ }
#define ENUM(var, url, nums, ...) \
	static const char *const var##_names[] = { __VA_ARGS__ }; \
	static const int var##_numbers[] = nums; \
	_Static_assert(ARRAY_SIZE(var##_names) == ARRAY_SIZE(var##_numbers), #var); \
	static const struct schema_enum var = { url, var##_names, ARRAY_SIZE(var##_names), \
						var##_numbers }
#define MESSAGE(var, url, fields) \
	const struct schema_message var = { url, fields, ARRAY_SIZE(fields) }

ENUM(accelerator_type, AI "AcceleratorType",
     NUMBERS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18),
     "ACCELERATOR_TYPE_UNSPECIFIED", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100",
     "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4", "TPU_V2", "TPU_V3",
     "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "TPU_V4_POD", "NVIDIA_L4", "TPU_V5_LITEPOD",
     "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200",
     "NVIDIA_GB200", "NVIDIA_RTX_PRO_6000");
ENUM(strategy, AI "Scheduling.Strategy", NUMBERS(0, 1, 2, 3, 4, 6), "STRATEGY_UNSPECIFIED", "ON_DEMAND", "LOW_COST",
     "STANDARD", "SPOT", "FLEX_START");
ENUM(job_state, AI "JobState", NUMBERS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), "JOB_STATE_UNSPECIFIED", "JOB_STATE_QUEUED",
     "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED",
     "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED", "JOB_STATE_PAUSED", "JOB_STATE_EXPIRED",
     "JOB_STATE_UPDATING", "JOB_STATE_PARTIALLY_SUCCEEDED");
ENUM(pipeline_state, AI "PipelineState", NUMBERS(0, 1, 2, 3, 4, 5, 6, 7, 8),
     "PIPELINE_STATE_UNSPECIFIED", "PIPELINE_STATE_QUEUED", "PIPELINE_STATE_PENDING",
     "PIPELINE_STATE_RUNNING", "PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED",
     "PIPELINE_STATE_CANCELLING", "PIPELINE_STATE_CANCELLED", "PIPELINE_STATE_PAUSED");

static const struct schema_field machine_spec_fields[] = {
	{ "machineType", "machine_type", SK_STRING, .number = 1 },
	{ "acceleratorType", "accelerator_type", SK_ENUM, .number = 2, .enumeration = &accelerator_type },
	{ "acceleratorCount", "accelerator_count", SK_INT32, .number = 3 },
	{ "tpuTopology", "tpu_topology", SK_STRING, .number = 4 },
	{ "reservationAffinity", "reservation_affinity", SK_STRUCT, .number = 5 },
	{ "gpuPartitionSize", "gpu_partition_size", SK_STRING, .number = 7 },
};
static MESSAGE(machine_spec, AI "MachineSpec", machine_spec_fields);

static const struct schema_field env_var_fields[] = {
	{ "name", "name", SK_STRING, .number = 1 },
	{ "value", "value", SK_STRING, .number = 2 },
};
static MESSAGE(env_var, AI "EnvVar", env_var_fields);

static const struct schema_field container_spec_fields[] = {
	{ "imageUri", "image_uri", SK_STRING, .number = 1 },
	{ "command", "command", SK_STRING, .number = 2, .repeated = 1 },
	{ "args", "args", SK_STRING, .number = 3, .repeated = 1 },
	{ "env", "env", SK_MESSAGE, .number = 4, .repeated = 1, .message = &env_var },
};
static MESSAGE(container_spec, AI "ContainerSpec", container_spec_fields);

static const struct schema_field python_package_spec_fields[] = {
	{ "executorImageUri", "executor_image_uri", SK_STRING, .number = 1 },
	{ "packageUris", "package_uris", SK_STRING, .number = 2, .repeated = 1 },
	{ "pythonModule", "python_module", SK_STRING, .number = 3 },
	{ "args", "args", SK_STRING, .number = 4, .repeated = 1 },
	{ "env", "env", SK_MESSAGE, .number = 5, .repeated = 1, .message = &env_var },
};
static MESSAGE(python_package_spec, AI "PythonPackageSpec", python_package_spec_fields);

static const struct schema_field disk_spec_fields[] = {
	{ "bootDiskType", "boot_disk_type", SK_STRING, .number = 1 },
	{ "bootDiskSizeGb", "boot_disk_size_gb", SK_INT32, .number = 2 },
};
static MESSAGE(disk_spec, AI "DiskSpec", disk_spec_fields);

static const struct schema_field nfs_mount_fields[] = {
	{ "server", "server", SK_STRING, .number = 1 },
	{ "path", "path", SK_STRING, .number = 2 },
	{ "mountPoint", "mount_point", SK_STRING, .number = 3 },
};
static MESSAGE(nfs_mount, AI "NfsMount", nfs_mount_fields);

/* The oneof task (containerSpec 6, pythonPackageSpec 7) follows the numbers too. */
static const struct schema_field worker_pool_spec_fields[] = {
	{ "machineSpec", "machine_spec", SK_MESSAGE, .number = 1, .message = &machine_spec },
	{ "replicaCount", "replica_count", SK_INT64, .number = 2 },
	{ "nfsMounts", "nfs_mounts", SK_MESSAGE, .number = 4, .repeated = 1, .message = &nfs_mount },
	{ "diskSpec", "disk_spec", SK_MESSAGE, .number = 5, .message = &disk_spec },
	{ "containerSpec", "container_spec", SK_MESSAGE, .number = 6, .message = &container_spec },
	{ "pythonPackageSpec", "python_package_spec", SK_MESSAGE, .number = 7,
	  .message = &python_package_spec },
};
static MESSAGE(worker_pool_spec, AI "WorkerPoolSpec", worker_pool_spec_fields);

static const struct schema_field scheduling_fields[] = {
	{ "timeout", "timeout", SK_DURATION, .number = 1 },
	{ "restartJobOnWorkerRestart", "restart_job_on_worker_restart", SK_BOOL, .number = 3 },
	{ "strategy", "strategy", SK_ENUM, .number = 4, .enumeration = &strategy },
	{ "disableRetries", "disable_retries", SK_BOOL, .number = 5 },
	{ "maxWaitDuration", "max_wait_duration", SK_DURATION, .number = 6 },
};
static MESSAGE(scheduling, AI "Scheduling", scheduling_fields);

static const struct schema_field gcs_destination_fields[] = {
	{ "outputUriPrefix", "output_uri_prefix", SK_STRING, .number = 1 },
};
static MESSAGE(gcs_destination, AI "GcsDestination", gcs_destination_fields);

static const struct schema_field custom_job_spec_fields[] = {
	{ "workerPoolSpecs", "worker_pool_specs", SK_MESSAGE, .number = 1, .repeated = 1,
	  .message = &worker_pool_spec },
	{ "scheduling", "scheduling", SK_MESSAGE, .number = 3, .message = &scheduling },
	{ "serviceAccount", "service_account", SK_STRING, .number = 4 },
	{ "network", "network", SK_STRING, .number = 5 },
	{ "baseOutputDirectory", "base_output_directory", SK_MESSAGE, .number = 6,
	  .message = &gcs_destination },
	{ "tensorboard", "tensorboard", SK_STRING, .number = 7 },
	{ "enableWebAccess", "enable_web_access", SK_BOOL, .number = 10 },
	{ "reservedIpRanges", "reserved_ip_ranges", SK_STRING, .number = 13, .repeated = 1 },
	{ "persistentResourceId", "persistent_resource_id", SK_STRING, .number = 14 },
	{ "enableDashboardAccess", "enable_dashboard_access", SK_BOOL, .number = 16 },
	{ "experiment", "experiment", SK_STRING, .number = 17 },
	{ "experimentRun", "experiment_run", SK_STRING, .number = 18 },
	{ "protectedArtifactLocationId", "protected_artifact_location_id", SK_STRING, .number = 19 },
	{ "models", "models", SK_STRING, .number = 20, .repeated = 1 },
	{ "pscInterfaceConfig", "psc_interface_config", SK_STRUCT, .number = 21 },
};
static MESSAGE(custom_job_spec, AI "CustomJobSpec", custom_job_spec_fields);
const struct schema_message *const vertex_custom_job_spec_message = &custom_job_spec;

static const struct schema_field encryption_spec_fields[] = {
	{ "kmsKeyName", "kms_key_name", SK_STRING, .number = 1 },
};
static MESSAGE(encryption_spec, AI "EncryptionSpec", encryption_spec_fields);

static const struct schema_field custom_job_fields[] = {
	{ "name", "name", SK_STRING, .number = 1, .output_only = 1 },
	{ "displayName", "display_name", SK_STRING, .number = 2 },
	{ "jobSpec", "job_spec", SK_MESSAGE, .number = 4, .message = &custom_job_spec },
	{ "state", "state", SK_ENUM, .number = 5, .output_only = 1, .enumeration = &job_state },
	{ "createTime", "create_time", SK_TIMESTAMP, .number = 6, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 7, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 8, .output_only = 1 },
	{ "updateTime", "update_time", SK_TIMESTAMP, .number = 9, .output_only = 1 },
	{ "error", "error", SK_STRUCT, .number = 10, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .number = 11, .map = 1 },
	{ "encryptionSpec", "encryption_spec", SK_MESSAGE, .number = 12, .message = &encryption_spec },
	{ "webAccessUris", "web_access_uris", SK_STRING, .number = 16, .map = 1, .output_only = 1 },
	{ "satisfiesPzs", "satisfies_pzs", SK_BOOL, .number = 18, .output_only = 1 },
	{ "satisfiesPzi", "satisfies_pzi", SK_BOOL, .number = 19, .output_only = 1 },
};
MESSAGE(vertex_custom_job_message, AI "CustomJob", custom_job_fields);

/* TrainingPipeline: the custom task's inputs are a google.protobuf.Value
 * here, checked as a CustomJobSpec by the handler. */
static const struct schema_field training_pipeline_fields[] = {
	{ "name", "name", SK_STRING, .number = 1, .output_only = 1 },
	{ "displayName", "display_name", SK_STRING, .number = 2 },
	{ "inputDataConfig", "input_data_config", SK_STRUCT, .number = 3 },
	{ "trainingTaskDefinition", "training_task_definition", SK_STRING, .number = 4 },
	{ "trainingTaskInputs", "training_task_inputs", SK_STRUCT, .number = 5 },
	{ "trainingTaskMetadata", "training_task_metadata", SK_STRUCT, .number = 6, .output_only = 1 },
	{ "modelToUpload", "model_to_upload", SK_STRUCT, .number = 7 },
	{ "state", "state", SK_ENUM, .number = 9, .output_only = 1, .enumeration = &pipeline_state },
	{ "error", "error", SK_STRUCT, .number = 10, .output_only = 1 },
	{ "createTime", "create_time", SK_TIMESTAMP, .number = 11, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 12, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 13, .output_only = 1 },
	{ "updateTime", "update_time", SK_TIMESTAMP, .number = 14, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .number = 15, .map = 1 },
	{ "encryptionSpec", "encryption_spec", SK_MESSAGE, .number = 18, .message = &encryption_spec },
	{ "parentModel", "parent_model", SK_STRING, .number = 21 },
	{ "modelId", "model_id", SK_STRING, .number = 22 },
};
MESSAGE(vertex_training_pipeline_message, AI "TrainingPipeline", training_pipeline_fields);

/* --- HyperparameterTuningJob (hyperparameter_tuning_job.proto, study.proto) --- */

ENUM(goal_type, AI "StudySpec.MetricSpec.GoalType", NUMBERS(0, 1, 2), "GOAL_TYPE_UNSPECIFIED",
     "MAXIMIZE", "MINIMIZE");
ENUM(scale_type, AI "StudySpec.ParameterSpec.ScaleType", NUMBERS(0, 1, 2, 3),
     "SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE");
ENUM(algorithm, AI "StudySpec.Algorithm", NUMBERS(0, 2, 3), "ALGORITHM_UNSPECIFIED",
     "GRID_SEARCH", "RANDOM_SEARCH");
ENUM(observation_noise, AI "StudySpec.ObservationNoise", NUMBERS(0, 1, 2),
     "OBSERVATION_NOISE_UNSPECIFIED", "LOW", "HIGH");
ENUM(measurement_selection, AI "StudySpec.MeasurementSelectionType", NUMBERS(0, 1, 2),
     "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", "LAST_MEASUREMENT", "BEST_MEASUREMENT");
ENUM(trial_state, AI "Trial.State", NUMBERS(0, 1, 2, 3, 4, 5), "STATE_UNSPECIFIED", "REQUESTED",
     "ACTIVE", "STOPPING", "SUCCEEDED", "INFEASIBLE");

static const struct schema_field metric_spec_fields[] = {
	{ "metricId", "metric_id", SK_STRING, .number = 1 },
	{ "goal", "goal", SK_ENUM, .number = 2, .enumeration = &goal_type },
	{ "safetyConfig", "safety_config", SK_STRUCT, .number = 3 },
};
static MESSAGE(metric_spec, AI "StudySpec.MetricSpec", metric_spec_fields);

/* defaultValue is Vizier's only ("Not supported by HyperparameterTuningJob"):
 * the validator refuses it. */
static const struct schema_field double_value_spec_fields[] = {
	{ "minValue", "min_value", SK_DOUBLE, .number = 1 },
	{ "maxValue", "max_value", SK_DOUBLE, .number = 2 },
	{ "defaultValue", "default_value", SK_DOUBLE, .number = 4, .presence = 1 },
};
static MESSAGE(double_value_spec, AI "StudySpec.ParameterSpec.DoubleValueSpec",
	       double_value_spec_fields);

static const struct schema_field integer_value_spec_fields[] = {
	{ "minValue", "min_value", SK_INT64, .number = 1 },
	{ "maxValue", "max_value", SK_INT64, .number = 2 },
	{ "defaultValue", "default_value", SK_INT64, .number = 4, .presence = 1 },
};
static MESSAGE(integer_value_spec, AI "StudySpec.ParameterSpec.IntegerValueSpec",
	       integer_value_spec_fields);

static const struct schema_field categorical_value_spec_fields[] = {
	{ "values", "values", SK_STRING, .number = 1, .repeated = 1 },
	{ "defaultValue", "default_value", SK_STRING, .number = 3, .presence = 1 },
};
static MESSAGE(categorical_value_spec, AI "StudySpec.ParameterSpec.CategoricalValueSpec",
	       categorical_value_spec_fields);

static const struct schema_field discrete_value_spec_fields[] = {
	{ "values", "values", SK_DOUBLE, .number = 1, .repeated = 1 },
	{ "defaultValue", "default_value", SK_DOUBLE, .number = 3, .presence = 1 },
};
static MESSAGE(discrete_value_spec, AI "StudySpec.ParameterSpec.DiscreteValueSpec",
	       discrete_value_spec_fields);

static const struct schema_field discrete_condition_fields[] = {
	{ "values", "values", SK_DOUBLE, .number = 1, .repeated = 1 },
};
static MESSAGE(discrete_condition,
	       AI "StudySpec.ParameterSpec.ConditionalParameterSpec.DiscreteValueCondition",
	       discrete_condition_fields);
static const struct schema_field int_condition_fields[] = {
	{ "values", "values", SK_INT64, .number = 1, .repeated = 1 },
};
static MESSAGE(int_condition, AI "StudySpec.ParameterSpec.ConditionalParameterSpec.IntValueCondition",
	       int_condition_fields);
static const struct schema_field categorical_condition_fields[] = {
	{ "values", "values", SK_STRING, .number = 1, .repeated = 1 },
};
static MESSAGE(categorical_condition,
	       AI "StudySpec.ParameterSpec.ConditionalParameterSpec.CategoricalValueCondition",
	       categorical_condition_fields);

/* A ParameterSpec nests through its conditional specs: declared ahead. */
extern const struct schema_message vertex_parameter_spec_message;

static const struct schema_field conditional_parameter_spec_fields[] = {
	{ "parameterSpec", "parameter_spec", SK_MESSAGE, .number = 1,
	  .message = &vertex_parameter_spec_message },
	{ "parentDiscreteValues", "parent_discrete_values", SK_MESSAGE, .number = 2,
	  .message = &discrete_condition },
	{ "parentIntValues", "parent_int_values", SK_MESSAGE, .number = 3,
	  .message = &int_condition },
	{ "parentCategoricalValues", "parent_categorical_values", SK_MESSAGE, .number = 4,
	  .message = &categorical_condition },
};
static MESSAGE(conditional_parameter_spec, AI "StudySpec.ParameterSpec.ConditionalParameterSpec",
	       conditional_parameter_spec_fields);

static const struct schema_field parameter_spec_fields[] = {
	{ "parameterId", "parameter_id", SK_STRING, .number = 1 },
	{ "doubleValueSpec", "double_value_spec", SK_MESSAGE, .number = 2,
	  .message = &double_value_spec },
	{ "integerValueSpec", "integer_value_spec", SK_MESSAGE, .number = 3,
	  .message = &integer_value_spec },
	{ "categoricalValueSpec", "categorical_value_spec", SK_MESSAGE, .number = 4,
	  .message = &categorical_value_spec },
	{ "discreteValueSpec", "discrete_value_spec", SK_MESSAGE, .number = 5,
	  .message = &discrete_value_spec },
	{ "scaleType", "scale_type", SK_ENUM, .number = 6, .enumeration = &scale_type },
	{ "conditionalParameterSpecs", "conditional_parameter_specs", SK_MESSAGE, .number = 10,
	  .repeated = 1, .message = &conditional_parameter_spec },
};
MESSAGE(vertex_parameter_spec_message, AI "StudySpec.ParameterSpec", parameter_spec_fields);

static const struct schema_field stopping_spec_fields[] = {
	{ "useElapsedDuration", "use_elapsed_duration", SK_BOOL, .number = 1 },
};
static MESSAGE(decay_curve_stopping_spec, AI "StudySpec.DecayCurveAutomatedStoppingSpec",
	       stopping_spec_fields);
static MESSAGE(median_stopping_spec, AI "StudySpec.MedianAutomatedStoppingSpec",
	       stopping_spec_fields);

static const struct schema_field study_spec_fields[] = {
	{ "metrics", "metrics", SK_MESSAGE, .number = 1, .repeated = 1, .message = &metric_spec },
	{ "parameters", "parameters", SK_MESSAGE, .number = 2, .repeated = 1,
	  .message = &vertex_parameter_spec_message },
	{ "algorithm", "algorithm", SK_ENUM, .number = 3, .enumeration = &algorithm },
	{ "decayCurveStoppingSpec", "decay_curve_stopping_spec", SK_MESSAGE, .number = 4,
	  .message = &decay_curve_stopping_spec },
	{ "medianAutomatedStoppingSpec", "median_automated_stopping_spec", SK_MESSAGE, .number = 5,
	  .message = &median_stopping_spec },
	{ "observationNoise", "observation_noise", SK_ENUM, .number = 6,
	  .enumeration = &observation_noise },
	{ "measurementSelectionType", "measurement_selection_type", SK_ENUM, .number = 7,
	  .enumeration = &measurement_selection },
	{ "convexAutomatedStoppingSpec", "convex_automated_stopping_spec", SK_STRUCT, .number = 9 },
	{ "studyStoppingConfig", "study_stopping_config", SK_STRUCT, .number = 11 },
};
static MESSAGE(study_spec, AI "StudySpec", study_spec_fields);

static const struct schema_field trial_parameter_fields[] = {
	{ "parameterId", "parameter_id", SK_STRING, .number = 1, .output_only = 1 },
	{ "value", "value", SK_STRUCT, .number = 2, .output_only = 1 },
};
static MESSAGE(trial_parameter, AI "Trial.Parameter", trial_parameter_fields);

static const struct schema_field measurement_metric_fields[] = {
	{ "metricId", "metric_id", SK_STRING, .number = 1, .output_only = 1 },
	{ "value", "value", SK_DOUBLE, .number = 2, .output_only = 1 },
};
static MESSAGE(measurement_metric, AI "Measurement.Metric", measurement_metric_fields);

static const struct schema_field measurement_fields[] = {
	{ "elapsedDuration", "elapsed_duration", SK_DURATION, .number = 1, .output_only = 1 },
	{ "stepCount", "step_count", SK_INT64, .number = 2, .output_only = 1 },
	{ "metrics", "metrics", SK_MESSAGE, .number = 3, .repeated = 1, .output_only = 1,
	  .message = &measurement_metric },
};
static MESSAGE(measurement, AI "Measurement", measurement_fields);

static const struct schema_field trial_fields[] = {
	{ "name", "name", SK_STRING, .number = 1, .output_only = 1 },
	{ "id", "id", SK_STRING, .number = 2, .output_only = 1 },
	{ "state", "state", SK_ENUM, .number = 3, .output_only = 1, .enumeration = &trial_state },
	{ "parameters", "parameters", SK_MESSAGE, .number = 4, .repeated = 1, .output_only = 1,
	  .message = &trial_parameter },
	{ "finalMeasurement", "final_measurement", SK_MESSAGE, .number = 5, .output_only = 1,
	  .message = &measurement },
	{ "measurements", "measurements", SK_MESSAGE, .number = 6, .repeated = 1,
	  .output_only = 1, .message = &measurement },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 7, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 8, .output_only = 1 },
	{ "clientId", "client_id", SK_STRING, .number = 9, .output_only = 1 },
	{ "infeasibleReason", "infeasible_reason", SK_STRING, .number = 10, .output_only = 1 },
	{ "customJob", "custom_job", SK_STRING, .number = 11, .output_only = 1 },
	{ "webAccessUris", "web_access_uris", SK_STRING, .number = 12, .map = 1,
	  .output_only = 1 },
};
static MESSAGE(trial, AI "Trial", trial_fields);

static const struct schema_field hyperparameter_tuning_job_fields[] = {
	{ "name", "name", SK_STRING, .number = 1, .output_only = 1 },
	{ "displayName", "display_name", SK_STRING, .number = 2 },
	{ "studySpec", "study_spec", SK_MESSAGE, .number = 4, .message = &study_spec },
	{ "maxTrialCount", "max_trial_count", SK_INT32, .number = 5 },
	{ "parallelTrialCount", "parallel_trial_count", SK_INT32, .number = 6 },
	{ "maxFailedTrialCount", "max_failed_trial_count", SK_INT32, .number = 7 },
	{ "trialJobSpec", "trial_job_spec", SK_MESSAGE, .number = 8, .message = &custom_job_spec },
	{ "trials", "trials", SK_MESSAGE, .number = 9, .repeated = 1, .output_only = 1,
	  .message = &trial },
	{ "state", "state", SK_ENUM, .number = 10, .output_only = 1, .enumeration = &job_state },
	{ "createTime", "create_time", SK_TIMESTAMP, .number = 11, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .number = 12, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .number = 13, .output_only = 1 },
	{ "updateTime", "update_time", SK_TIMESTAMP, .number = 14, .output_only = 1 },
	{ "error", "error", SK_STRUCT, .number = 15, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .number = 16, .map = 1 },
	{ "encryptionSpec", "encryption_spec", SK_MESSAGE, .number = 17, .message = &encryption_spec },
	{ "satisfiesPzs", "satisfies_pzs", SK_BOOL, .number = 19, .output_only = 1 },
	{ "satisfiesPzi", "satisfies_pzi", SK_BOOL, .number = 20, .output_only = 1 },
};
MESSAGE(vertex_hyperparameter_tuning_job_message, AI "HyperparameterTuningJob",
	hyperparameter_tuning_job_fields);

/* --- the list methods' replies ----------------------------------------------- */

static const struct schema_field list_custom_jobs_response_fields[] = {
	{ "customJobs", "custom_jobs", SK_MESSAGE, .number = 1, .repeated = 1,
	  .message = &vertex_custom_job_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(vertex_list_custom_jobs_response_message, AI "ListCustomJobsResponse",
	list_custom_jobs_response_fields);

static const struct schema_field list_training_pipelines_response_fields[] = {
	{ "trainingPipelines", "training_pipelines", SK_MESSAGE, .number = 1, .repeated = 1,
	  .message = &vertex_training_pipeline_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(vertex_list_training_pipelines_response_message, AI "ListTrainingPipelinesResponse",
	list_training_pipelines_response_fields);

static const struct schema_field list_tuning_jobs_response_fields[] = {
	{ "hyperparameterTuningJobs", "hyperparameter_tuning_jobs", SK_MESSAGE, .number = 1,
	  .repeated = 1, .message = &vertex_hyperparameter_tuning_job_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(vertex_list_hyperparameter_tuning_jobs_response_message,
	AI "ListHyperparameterTuningJobsResponse", list_tuning_jobs_response_fields);
