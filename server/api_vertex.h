/*
 * api_vertex.h - Vertex AI (aiplatform.googleapis.com v1):
 * projects.locations.customJobs.{create,get,list,cancel,delete} and
 * projects.locations.operations.{get,list,wait,delete}. Route handlers for routes.c.
 *
 * Vertex jobs live in the same jobs table as ml v1 ones (api 'vertex'):
 * job_id is the server-assigned numeric id, region the location, and spec
 * the normalised CustomJob without its labels and output-only fields.
 */
#ifndef TP_API_VERTEX_H
#define TP_API_VERTEX_H

#include "http.h"
#include "store_job.h"

void api_vertex_custom_jobs_create(struct request *req);
void api_vertex_custom_jobs_get(struct request *req);
void api_vertex_custom_jobs_list(struct request *req);
void api_vertex_custom_jobs_cancel(struct request *req);
void api_vertex_custom_jobs_delete(struct request *req);
void api_vertex_operations_get(struct request *req);
void api_vertex_operations_wait(struct request *req);	/* operations are done at once */
void api_vertex_operations_delete(struct request *req);
void api_vertex_operations_list(struct request *req);

void api_vertex_training_pipelines_create(struct request *req);
void api_vertex_training_pipelines_get(struct request *req);
void api_vertex_training_pipelines_list(struct request *req);
void api_vertex_training_pipelines_cancel(struct request *req);
void api_vertex_training_pipelines_delete(struct request *req);
void api_vertex_tuning_jobs_create(struct request *req);
void api_vertex_tuning_jobs_get(struct request *req);
void api_vertex_tuning_jobs_list(struct request *req);
void api_vertex_tuning_jobs_cancel(struct request *req);
void api_vertex_tuning_jobs_delete(struct request *req);

#endif
