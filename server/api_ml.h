/*
 * api_ml.h - the AI Platform Training API (ml.googleapis.com v1):
 * projects.getConfig, projects.jobs.{create,get,list,cancel,patch},
 * projects.locations.{list,get}. Route handlers for the table in routes.c.
 */
#ifndef TP_API_ML_H
#define TP_API_ML_H

#include "http.h"
#include "store_job.h"

void api_ml_get_config(struct request *req);
void api_ml_jobs_create(struct request *req);
void api_ml_jobs_get(struct request *req);
void api_ml_jobs_list(struct request *req);
void api_ml_jobs_cancel(struct request *req);
void api_ml_jobs_patch(struct request *req);
void api_ml_locations_list(struct request *req);
void api_ml_locations_get(struct request *req);

/* Appends the ml v1 Job JSON of j to sb. */
void api_ml_job_render(struct strbuf *sb, const struct job *j);
/* The etag of a job version: standard base64 of 8 bytes. Caller frees. */
char *api_ml_etag(int64_t version);
/* Reads an etag back into a version; -1 when it is not one of ours. */
int api_ml_etag_version(const char *etag, int64_t *version) MUST_CHECK;
/* 404 "Job projects/<p>/jobs/<j> was not found." for the request's job. */
void api_ml_reply_job_not_found(struct request *req);
/* 400 for structural violations (the message is their text). */
void api_ml_reply_schema_violations(struct request *req, const struct violations *vs);
/* 400 for semantic violations ("Field: f Error: d" each). */
void api_ml_reply_field_violations(struct request *req, const struct violations *vs);
/* Is id a valid ml v1 job id: [A-Za-z][A-Za-z0-9_]{0,127}? */
bool api_ml_job_id_valid(const char *id);

#endif
