/*
 * routes.c - every route the server serves, as data. openapi.yaml must list
 * exactly these (tests/integration/openapi.test.mjs compares them through
 * `trainplane-server --routes`).
 */
#include "api_agent.h"
#include "api_emulator.h"
#include "api_iam.h"
#include "api_logging.h"
#include "api_metrics.h"
#include "api_ml.h"
#include "api_quota.h"
#include "api_storage.h"
#include "api_vertex.h"
#include "console.h"
#include "discovery.h"
#include "http.h"

static void health_live(struct request *req)
{
	reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

static void health_ready(struct request *req)
{
	enum store_rc rc = store_ping(req->srv->store);
	if (rc == STORE_OK)
		reply_json(req, 200, json_pack("{s:s}", "status", "ready"));
	else
		reply_error(req, API_UNAVAILABLE, "The database cannot be reached: %s.",
			    store_rc_name(rc));
}

#define JOBS "/v1/projects/{projectsId}/jobs"
#define JOB JOBS "/{jobsId}"
#define LOCATION "/v1/projects/{projectsId}/locations/{locationsId}"
#define CUSTOM_JOBS LOCATION "/customJobs"
#define CUSTOM_JOB CUSTOM_JOBS "/{customJobsId}"
#define PIPELINES LOCATION "/trainingPipelines"
#define PIPELINE PIPELINES "/{trainingPipelinesId}"
#define TUNING_JOBS LOCATION "/hyperparameterTuningJobs"
#define TUNING_JOB TUNING_JOBS "/{hyperparameterTuningJobsId}"
#define BUCKETS "/storage/v1/b"
#define BUCKET BUCKETS "/{bucket}"
#define OBJECTS BUCKET "/o"
#define OBJECT OBJECTS "/{object}"
#define REWRITE BUCKETS "/{sourceBucket}/o/{sourceObject}/rewriteTo/b/{destinationBucket}/o/" \
	"{destinationObject}"
#define COPY BUCKETS "/{sourceBucket}/o/{sourceObject}/copyTo/b/{destinationBucket}/o/" \
	"{destinationObject}"

const struct route routes[] = {
	{ "GET", "/healthz", health_live, "healthz", false },
	{ "GET", "/readyz", health_ready, "readyz", false },
	/* Public, as its operation id has no dot (auth.h): scraped without
	 * credentials in every auth mode; it shows counts, never a job's name. */
	{ "GET", "/metrics", metrics_handle, "metrics", false },
	/* The discovery documents (discovery.h): public, as Google's are. */
	{ "GET", "/discovery/v1/apis/{api}/{version}/rest", api_discovery_get_rest,
	  "discoveryApisGetRest", false },
	{ "GET", "/$discovery/rest", api_discovery_rest, "discoveryRest", false },
	/* The web console's files (console.h): public; its data takes the caller's
	 * credentials, as any client's. */
	{ "GET", "/console", api_console_get, "consoleIndexBare", false },
	{ "GET", "/console/", api_console_get, "consoleIndex", false },
	{ "HEAD", "/console/", api_console_get, "consoleIndexHead", false },
	{ "GET", "/console/{file}", api_console_get, "consoleFile", false },
	{ "HEAD", "/console/{file}", api_console_get, "consoleFileHead", false },
	{ "GET", "/v1/projects/{projectsId}:getConfig", api_ml_get_config,
	  "ml.projects.getConfig", false },
	{ "POST", JOBS, api_ml_jobs_create, "ml.projects.jobs.create", true },
	{ "GET", JOBS, api_ml_jobs_list, "ml.projects.jobs.list", false },
	{ "GET", JOB, api_ml_jobs_get, "ml.projects.jobs.get", false },
	{ "PATCH", JOB, api_ml_jobs_patch, "ml.projects.jobs.patch", true },
	{ "POST", JOB ":cancel", api_ml_jobs_cancel, "ml.projects.jobs.cancel", true },
	{ "GET", JOB ":getIamPolicy", api_iam_get_policy, "ml.projects.jobs.getIamPolicy", false },
	{ "POST", JOB ":setIamPolicy", api_iam_set_policy, "ml.projects.jobs.setIamPolicy", true },
	{ "POST", JOB ":testIamPermissions", api_iam_test_permissions,
	  "ml.projects.jobs.testIamPermissions", true },
	{ "GET", "/v1/projects/{projectsId}/locations", api_ml_locations_list,
	  "ml.projects.locations.list", false },
	{ "GET", "/v1/projects/{projectsId}/locations/{locationsId}", api_ml_locations_get,
	  "ml.projects.locations.get", false },
	{ "POST", CUSTOM_JOBS, api_vertex_custom_jobs_create,
	  "aiplatform.projects.locations.customJobs.create", true },
	{ "GET", CUSTOM_JOBS, api_vertex_custom_jobs_list,
	  "aiplatform.projects.locations.customJobs.list", false },
	{ "GET", CUSTOM_JOB, api_vertex_custom_jobs_get,
	  "aiplatform.projects.locations.customJobs.get", false },
	{ "DELETE", CUSTOM_JOB, api_vertex_custom_jobs_delete,
	  "aiplatform.projects.locations.customJobs.delete", false },
	{ "POST", CUSTOM_JOB ":cancel", api_vertex_custom_jobs_cancel,
	  "aiplatform.projects.locations.customJobs.cancel", true },
	{ "POST", PIPELINES, api_vertex_training_pipelines_create,
	  "aiplatform.projects.locations.trainingPipelines.create", true },
	{ "GET", PIPELINES, api_vertex_training_pipelines_list,
	  "aiplatform.projects.locations.trainingPipelines.list", false },
	{ "GET", PIPELINE, api_vertex_training_pipelines_get,
	  "aiplatform.projects.locations.trainingPipelines.get", false },
	{ "DELETE", PIPELINE, api_vertex_training_pipelines_delete,
	  "aiplatform.projects.locations.trainingPipelines.delete", false },
	{ "POST", PIPELINE ":cancel", api_vertex_training_pipelines_cancel,
	  "aiplatform.projects.locations.trainingPipelines.cancel", true },
	{ "POST", TUNING_JOBS, api_vertex_tuning_jobs_create,
	  "aiplatform.projects.locations.hyperparameterTuningJobs.create", true },
	{ "GET", TUNING_JOBS, api_vertex_tuning_jobs_list,
	  "aiplatform.projects.locations.hyperparameterTuningJobs.list", false },
	{ "GET", TUNING_JOB, api_vertex_tuning_jobs_get,
	  "aiplatform.projects.locations.hyperparameterTuningJobs.get", false },
	{ "DELETE", TUNING_JOB, api_vertex_tuning_jobs_delete,
	  "aiplatform.projects.locations.hyperparameterTuningJobs.delete", false },
	{ "POST", TUNING_JOB ":cancel", api_vertex_tuning_jobs_cancel,
	  "aiplatform.projects.locations.hyperparameterTuningJobs.cancel", true },
	{ "GET", LOCATION "/operations", api_vertex_operations_list,
	  "aiplatform.projects.locations.operations.list", false },
	{ "GET", LOCATION "/operations/{operationsId}", api_vertex_operations_get,
	  "aiplatform.projects.locations.operations.get", false },
	{ "DELETE", LOCATION "/operations/{operationsId}", api_vertex_operations_delete,
	  "aiplatform.projects.locations.operations.delete", false },
	{ "POST", LOCATION "/operations/{operationsId}:wait", api_vertex_operations_wait,
	  "aiplatform.projects.locations.operations.wait", true },
	{ "POST", "/v2/entries:list", api_logging_entries_list, "logging.entries.list", true },
	{ "GET", "/trainplane/v1/nodes", api_nodes_list, "trainplane.nodes.list", false },
	{ "POST", "/trainplane/v1/nodes/{nodesId}:drain", api_nodes_drain,
	  "trainplane.nodes.drain", true },
	{ "POST", "/trainplane/v1/nodes/{nodesId}:undrain", api_nodes_undrain,
	  "trainplane.nodes.undrain", true },
	{ "GET", "/trainplane/v1/projects/{projectsId}/quotas", api_quotas_get,
	  "trainplane.projects.quotas.get", false },
	{ "GET", "/trainplane/v1/projects/{projectsId}/queue", api_queue_list,
	  "trainplane.projects.queue.list", false },
	{ "GET", "/trainplane/v1/projects/{projectsId}/replicas", api_replicas_list,
	  "trainplane.projects.replicas.list", false },
	{ "GET", "/trainplane/v1/whoami", api_whoami_get, "trainplane.whoami.get", false },
	{ "GET", "/trainplane/v1/emulator", api_emulator_get, "trainplane.emulator.get", false },
	{ "POST", "/trainplane/v1/emulator:reset", api_emulator_reset, "trainplane.emulator.reset",
	  true },
	{ "GET", "/trainplane/v1/emulator/rules", api_emulator_get_rules,
	  "trainplane.emulator.getRules", false },
	{ "POST", "/trainplane/v1/emulator:setRules", api_emulator_set_rules,
	  "trainplane.emulator.setRules", true },
	{ "GET", "/trainplane/v1/emulator/clock", api_emulator_get_clock,
	  "trainplane.emulator.getClock", false },
	{ "POST", "/trainplane/v1/emulator:advanceClock", api_emulator_advance_clock,
	  "trainplane.emulator.advanceClock", true },
	{ "POST", "/trainplane/v1/emulator:setClockSpeed", api_emulator_set_clock_speed,
	  "trainplane.emulator.setClockSpeed", true },
	{ "POST", "/agent/v1/nodes/{nodesId}:register", api_agent_register,
	  "agent.nodes.register", true, true },
	{ "POST", "/agent/v1/nodes/{nodesId}:sync", api_agent_sync, "agent.nodes.sync", true, true },
	/* Cloud Storage (api_storage.c): names as Google's discovery document gives them. */
	{ "POST", BUCKETS, api_storage_buckets_insert, "storage.buckets.insert", true },
	{ "GET", BUCKETS, api_storage_buckets_list, "storage.buckets.list", false },
	{ "GET", BUCKET, api_storage_buckets_get, "storage.buckets.get", false },
	{ "DELETE", BUCKET, api_storage_buckets_delete, "storage.buckets.delete", false },
	{ "GET", OBJECTS, api_storage_objects_list, "storage.objects.list", false },
	{ "GET", OBJECT, api_storage_objects_get, "storage.objects.get", false },
	{ "DELETE", OBJECT, api_storage_objects_delete, "storage.objects.delete", false },
	{ "POST", "/upload" OBJECTS, api_storage_objects_insert, "storage.objects.insert", false,
	  false, api_storage_objects_insert_head },
	{ "PUT", "/upload" OBJECTS, api_storage_objects_upload, "storage.objects.upload", false,
	  false, api_storage_objects_upload_head },
	/* gcloud's resumable uploads go to /resumable/upload/... */
	{ "POST", "/resumable/upload" OBJECTS, api_storage_objects_insert,
	  "storage.objects.resumableInsert", false, false, api_storage_objects_insert_head },
	{ "PUT", "/resumable/upload" OBJECTS, api_storage_objects_upload,
	  "storage.objects.resumableUpload", false, false, api_storage_objects_upload_head },
	{ "GET", "/download" OBJECT, api_storage_objects_download, "storage.objects.download",
	  false },
	{ "POST", REWRITE, api_storage_objects_rewrite, "storage.objects.rewrite", false },
	{ "POST", COPY, api_storage_objects_copy, "storage.objects.copy", false },
	{ "POST", OBJECT "/compose", api_storage_objects_compose, "storage.objects.compose", true },
	{ "GET", BUCKET "/storageLayout", api_storage_buckets_storage_layout,
	  "storage.buckets.getStorageLayout", false },
};

const size_t routes_count = sizeof(routes) / sizeof(routes[0]);
