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

static const struct schema_field machine_spec_fields[] = {
	{ "machineType", "machine_type", SK_STRING },
	{ "acceleratorType", "accelerator_type", SK_ENUM, .enumeration = &accelerator_type },
	{ "acceleratorCount", "accelerator_count", SK_INT32 },
	{ "tpuTopology", "tpu_topology", SK_STRING },
	{ "reservationAffinity", "reservation_affinity", SK_STRUCT },
	{ "gpuPartitionSize", "gpu_partition_size", SK_STRING },
};
static MESSAGE(machine_spec, AI "MachineSpec", machine_spec_fields);

static const struct schema_field env_var_fields[] = {
	{ "name", "name", SK_STRING },
	{ "value", "value", SK_STRING },
};
static MESSAGE(env_var, AI "EnvVar", env_var_fields);

static const struct schema_field container_spec_fields[] = {
	{ "imageUri", "image_uri", SK_STRING },
	{ "command", "command", SK_STRING, .repeated = 1 },
	{ "args", "args", SK_STRING, .repeated = 1 },
	{ "env", "env", SK_MESSAGE, .repeated = 1, .message = &env_var },
};
static MESSAGE(container_spec, AI "ContainerSpec", container_spec_fields);

static const struct schema_field python_package_spec_fields[] = {
	{ "executorImageUri", "executor_image_uri", SK_STRING },
	{ "packageUris", "package_uris", SK_STRING, .repeated = 1 },
	{ "pythonModule", "python_module", SK_STRING },
	{ "args", "args", SK_STRING, .repeated = 1 },
	{ "env", "env", SK_MESSAGE, .repeated = 1, .message = &env_var },
};
static MESSAGE(python_package_spec, AI "PythonPackageSpec", python_package_spec_fields);

static const struct schema_field disk_spec_fields[] = {
	{ "bootDiskType", "boot_disk_type", SK_STRING },
	{ "bootDiskSizeGb", "boot_disk_size_gb", SK_INT32 },
};
static MESSAGE(disk_spec, AI "DiskSpec", disk_spec_fields);

static const struct schema_field nfs_mount_fields[] = {
	{ "server", "server", SK_STRING },
	{ "path", "path", SK_STRING },
	{ "mountPoint", "mount_point", SK_STRING },
};
static MESSAGE(nfs_mount, AI "NfsMount", nfs_mount_fields);

static const struct schema_field worker_pool_spec_fields[] = {
	{ "containerSpec", "container_spec", SK_MESSAGE, .message = &container_spec },
	{ "pythonPackageSpec", "python_package_spec", SK_MESSAGE, .message = &python_package_spec },
	{ "machineSpec", "machine_spec", SK_MESSAGE, .message = &machine_spec },
	{ "replicaCount", "replica_count", SK_INT64 },
	{ "nfsMounts", "nfs_mounts", SK_MESSAGE, .repeated = 1, .message = &nfs_mount },
	{ "diskSpec", "disk_spec", SK_MESSAGE, .message = &disk_spec },
};
static MESSAGE(worker_pool_spec, AI "WorkerPoolSpec", worker_pool_spec_fields);

static const struct schema_field scheduling_fields[] = {
	{ "timeout", "timeout", SK_DURATION },
	{ "restartJobOnWorkerRestart", "restart_job_on_worker_restart", SK_BOOL },
	{ "strategy", "strategy", SK_ENUM, .enumeration = &strategy },
	{ "disableRetries", "disable_retries", SK_BOOL },
	{ "maxWaitDuration", "max_wait_duration", SK_DURATION },
};
static MESSAGE(scheduling, AI "Scheduling", scheduling_fields);

static const struct schema_field gcs_destination_fields[] = {
	{ "outputUriPrefix", "output_uri_prefix", SK_STRING },
};
static MESSAGE(gcs_destination, AI "GcsDestination", gcs_destination_fields);

static const struct schema_field custom_job_spec_fields[] = {
	{ "workerPoolSpecs", "worker_pool_specs", SK_MESSAGE, .repeated = 1,
	  .message = &worker_pool_spec },
	{ "scheduling", "scheduling", SK_MESSAGE, .message = &scheduling },
	{ "serviceAccount", "service_account", SK_STRING },
	{ "network", "network", SK_STRING },
	{ "reservedIpRanges", "reserved_ip_ranges", SK_STRING, .repeated = 1 },
	{ "baseOutputDirectory", "base_output_directory", SK_MESSAGE,
	  .message = &gcs_destination },
	{ "tensorboard", "tensorboard", SK_STRING },
	{ "enableWebAccess", "enable_web_access", SK_BOOL },
	{ "enableDashboardAccess", "enable_dashboard_access", SK_BOOL },
	{ "experiment", "experiment", SK_STRING },
	{ "experimentRun", "experiment_run", SK_STRING },
	{ "protectedArtifactLocationId", "protected_artifact_location_id", SK_STRING },
	{ "models", "models", SK_STRING, .repeated = 1 },
	{ "persistentResourceId", "persistent_resource_id", SK_STRING },
	{ "pscInterfaceConfig", "psc_interface_config", SK_STRUCT },
};
static MESSAGE(custom_job_spec, AI "CustomJobSpec", custom_job_spec_fields);
const struct schema_message *const vertex_custom_job_spec_message = &custom_job_spec;

static const struct schema_field encryption_spec_fields[] = {
	{ "kmsKeyName", "kms_key_name", SK_STRING },
};
static MESSAGE(encryption_spec, AI "EncryptionSpec", encryption_spec_fields);

static const struct schema_field custom_job_fields[] = {
	{ "name", "name", SK_STRING, .output_only = 1 },
	{ "displayName", "display_name", SK_STRING },
	{ "jobSpec", "job_spec", SK_MESSAGE, .message = &custom_job_spec },
	{ "state", "state", SK_ENUM, .output_only = 1, .enumeration = &job_state },
	{ "createTime", "create_time", SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .output_only = 1 },
	{ "updateTime", "update_time", SK_TIMESTAMP, .output_only = 1 },
	{ "error", "error", SK_STRUCT, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .map = 1 },
	{ "encryptionSpec", "encryption_spec", SK_MESSAGE, .message = &encryption_spec },
	{ "webAccessUris", "web_access_uris", SK_STRING, .map = 1, .output_only = 1 },
	{ "satisfiesPzs", "satisfies_pzs", SK_BOOL, .output_only = 1 },
	{ "satisfiesPzi", "satisfies_pzi", SK_BOOL, .output_only = 1 },
};
MESSAGE(vertex_custom_job_message, AI "CustomJob", custom_job_fields);

/* TrainingPipeline: the custom task's inputs are a google.protobuf.Value
 * here, checked as a CustomJobSpec by the handler. */
static const struct schema_field training_pipeline_fields[] = {
	{ "name", "name", SK_STRING, .output_only = 1 },
	{ "displayName", "display_name", SK_STRING },
	{ "inputDataConfig", "input_data_config", SK_STRUCT },
	{ "trainingTaskDefinition", "training_task_definition", SK_STRING },
	{ "trainingTaskInputs", "training_task_inputs", SK_STRUCT },
	{ "trainingTaskMetadata", "training_task_metadata", SK_STRUCT, .output_only = 1 },
	{ "modelToUpload", "model_to_upload", SK_STRUCT },
	{ "modelId", "model_id", SK_STRING },
	{ "parentModel", "parent_model", SK_STRING },
	{ "state", "state", SK_STRING, .output_only = 1 },
	{ "error", "error", SK_STRUCT, .output_only = 1 },
	{ "createTime", "create_time", SK_TIMESTAMP, .output_only = 1 },
	{ "startTime", "start_time", SK_TIMESTAMP, .output_only = 1 },
	{ "endTime", "end_time", SK_TIMESTAMP, .output_only = 1 },
	{ "updateTime", "update_time", SK_TIMESTAMP, .output_only = 1 },
	{ "labels", "labels", SK_STRING, .map = 1 },
	{ "encryptionSpec", "encryption_spec", SK_MESSAGE, .message = &encryption_spec },
};
MESSAGE(vertex_training_pipeline_message, AI "TrainingPipeline", training_pipeline_fields);
