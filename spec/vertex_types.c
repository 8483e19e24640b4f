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
	{ "machineType", "machine_type", 1, SK_STRING },
	{ "acceleratorType", "accelerator_type", 2, SK_ENUM, .enumeration = &accelerator_type },
	{ "acceleratorCount", "accelerator_count", 3, SK_INT32 },
	{ "tpuTopology", "tpu_topology", 4, SK_STRING },
	{ "reservationAffinity", "reservation_affinity", 5, SK_STRUCT },
	{ "gpuPartitionSize", "gpu_partition_size", 7, SK_STRING },
};
static MESSAGE(machine_spec, AI "MachineSpec", machine_spec_fields);

static const struct schema_field env_var_fields[] = {
	{ "name", "name", 1, SK_STRING },
	{ "value", "value", 2, SK_STRING },
};
static MESSAGE(env_var, AI "EnvVar", env_var_fields);

static const struct schema_field container_spec_fields[] = {
	{ "imageUri", "image_uri", 1, SK_STRING },
	{ "command", "command", 2, SK_STRING, .repeated = 1 },
	{ "args", "args", 3, SK_STRING, .repeated = 1 },
	{ "env", "env", 4, SK_MESSAGE, .repeated = 1, .message = &env_var },
};
static MESSAGE(container_spec, AI "ContainerSpec", container_spec_fields);

static const struct schema_field python_package_spec_fields[] = {
	{ "executorImageUri", "executor_image_uri", 1, SK_STRING },
	{ "packageUris", "package_uris", 2, SK_STRING, .repeated = 1 },
	{ "pythonModule", "python_module", 3, SK_STRING },
	{ "args", "args", 4, SK_STRING, .repeated = 1 },
	{ "env", "env", 5, SK_MESSAGE, .repeated = 1, .message = &env_var },
};
static MESSAGE(python_package_spec, AI "PythonPackageSpec", python_package_spec_fields);

static const struct schema_field disk_spec_fields[] = {
	{ "bootDiskType", "boot_disk_type", 1, SK_STRING },
	{ "bootDiskSizeGb", "boot_disk_size_gb", 2, SK_INT32 },
};
static MESSAGE(disk_spec, AI "DiskSpec", disk_spec_fields);

static const struct schema_field nfs_mount_fields[] = {
	{ "server", "server", 1, SK_STRING },
	{ "path", "path", 2, SK_STRING },
	{ "mountPoint", "mount_point", 3, SK_STRING },
};
static MESSAGE(nfs_mount, AI "NfsMount", nfs_mount_fields);

/* The oneof task (containerSpec 6, pythonPackageSpec 7) follows the numbers too. */
static const struct schema_field worker_pool_spec_fields[] = {
	{ "machineSpec", "machine_spec", 1, SK_MESSAGE, .message = &machine_spec },
	{ "replicaCount", "replica_count", 2, SK_INT64 },
	{ "nfsMounts", "nfs_mounts", 4, SK_MESSAGE, .repeated = 1, .message = &nfs_mount },
	{ "diskSpec", "disk_spec", 5, SK_MESSAGE, .message = &disk_spec },
	{ "containerSpec", "container_spec", 6, SK_MESSAGE, .message = &container_spec },
	{ "pythonPackageSpec", "python_package_spec", 7, SK_MESSAGE,
	  .message = &python_package_spec },
};
static MESSAGE(worker_pool_spec, AI "WorkerPoolSpec", worker_pool_spec_fields);

static const struct schema_field scheduling_fields[] = {
	{ "timeout", "timeout", 1, SK_DURATION },
	{ "restartJobOnWorkerRestart", "restart_job_on_worker_restart", 3, SK_BOOL },
	{ "strategy", "strategy", 4, SK_ENUM, .enumeration = &strategy },
	{ "disableRetries", "disable_retries", 5, SK_BOOL },
	{ "maxWaitDuration", "max_wait_duration", 6, SK_DURATION },
};
static MESSAGE(scheduling, AI "Scheduling", scheduling_fields);

static const struct schema_field gcs_destination_fields[] = {
	{ "outputUriPrefix", "output_uri_prefix", 1, SK_STRING },
};
static MESSAGE(gcs_destination, AI "GcsDestination", gcs_destination_fields);

static const struct schema_field custom_job_spec_fields[] = {
	{ "workerPoolSpecs", "worker_pool_specs", 1, SK_MESSAGE, .repeated = 1,
	  .message = &worker_pool_spec },
	{ "scheduling", "scheduling", 3, SK_MESSAGE, .message = &scheduling },
	{ "serviceAccount", "service_account", 4, SK_STRING },
	{ "network", "network", 5, SK_STRING },
	{ "baseOutputDirectory", "base_output_directory", 6, SK_MESSAGE,
	  .message = &gcs_destination },
	{ "tensorboard", "tensorboard", 7, SK_STRING },
	{ "enableWebAccess", "enable_web_access", 10, SK_BOOL },
	{ "reservedIpRanges", "reserved_ip_ranges", 13, SK_STRING, .repeated = 1 },
	{ "persistentResourceId", "persistent_resource_id", 14, SK_STRING },
	{ "enableDashboardAccess", "enable_dashboard_access", 16, SK_BOOL },
	{ "experiment", "experiment", 17, SK_STRING },
	{ "experimentRun", "experiment_run", 18, SK_STRING },
	{ "protectedArtifactLocationId", "protected_artifact_location_id", 19, SK_STRING },
	{ "models", "models", 20, SK_STRING, .repeated = 1 },
	{ "pscInterfaceConfig", "psc_interface_config", 21, SK_STRUCT },
};
static MESSAGE(custom_job_spec, AI "CustomJobSpec", custom_job_spec_fields);
const struct schema_message *const vertex_custom_job_spec_message = &custom_job_spec;

static const struct schema_field encryption_spec_fields[] = {
	{ "kmsKeyName", "kms_key_name", 1, SK_STRING },
};
static MESSAGE(encryption_spec, AI "EncryptionSpec", encryption_spec_fields);

static const struct schema_field custom_job_fields[] = {
	{ "name", "name", 1, SK_STRING, .output_only = 1 },
	{ "displayName", "display_name", 2, SK_STRING },
	{ "jobSpec", "job_spec", 4, SK_MESSAGE, .message = &custom_job_spec },
	{ "state", "state", 5, SK_ENUM, .output_only = 1, .enumeration = &job_state },
	{ "createTime", "create_time", 6, SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", 7, SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", 8, SK_TIMESTAMP, .output_only = 1 },
	{ "updateTime", "update_time", 9, SK_TIMESTAMP, .output_only = 1 },
	{ "error", "error", 10, SK_STRUCT, .output_only = 1 },
	{ "labels", "labels", 11, SK_STRING, .map = 1 },
	{ "encryptionSpec", "encryption_spec", 12, SK_MESSAGE, .message = &encryption_spec },
	{ "webAccessUris", "web_access_uris", 16, SK_STRING, .map = 1, .output_only = 1 },
	{ "satisfiesPzs", "satisfies_pzs", 18, SK_BOOL, .output_only = 1 },
	{ "satisfiesPzi", "satisfies_pzi", 19, SK_BOOL, .output_only = 1 },
};
MESSAGE(vertex_custom_job_message, AI "CustomJob", custom_job_fields);

/* TrainingPipeline: the custom task's inputs are a google.protobuf.Value
 * here, checked as a CustomJobSpec by the handler. */
static const struct schema_field training_pipeline_fields[] = {
	{ "name", "name", 1, SK_STRING, .output_only = 1 },
	{ "displayName", "display_name", 2, SK_STRING },
	{ "inputDataConfig", "input_data_config", 3, SK_STRUCT },
	{ "trainingTaskDefinition", "training_task_definition", 4, SK_STRING },
	{ "trainingTaskInputs", "training_task_inputs", 5, SK_STRUCT },
	{ "trainingTaskMetadata", "training_task_metadata", 6, SK_STRUCT, .output_only = 1 },
	{ "modelToUpload", "model_to_upload", 7, SK_STRUCT },
	{ "state", "state", 9, SK_ENUM, .output_only = 1, .enumeration = &pipeline_state },
	{ "error", "error", 10, SK_STRUCT, .output_only = 1 },
	{ "createTime", "create_time", 11, SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", 12, SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", 13, SK_TIMESTAMP, .output_only = 1 },
	{ "updateTime", "update_time", 14, SK_TIMESTAMP, .output_only = 1 },
	{ "labels", "labels", 15, SK_STRING, .map = 1 },
	{ "encryptionSpec", "encryption_spec", 18, SK_MESSAGE, .message = &encryption_spec },
	{ "parentModel", "parent_model", 21, SK_STRING },
	{ "modelId", "model_id", 22, SK_STRING },
};
MESSAGE(vertex_training_pipeline_message, AI "TrainingPipeline", training_pipeline_fields);
