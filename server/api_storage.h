/*
 * api_storage.h - Cloud Storage's JSON API, the subset training uses
 * (api_storage.c, docs/storage.md).
 */
#ifndef TP_API_STORAGE_H
#define TP_API_STORAGE_H

#include "http.h"

void api_storage_buckets_insert(struct request *req);
void api_storage_buckets_get(struct request *req);
void api_storage_buckets_list(struct request *req);
void api_storage_buckets_delete(struct request *req);
void api_storage_objects_list(struct request *req);
void api_storage_objects_get(struct request *req);
void api_storage_objects_download(struct request *req);
void api_storage_objects_delete(struct request *req);
/* POST /upload/...: media and multipart bodies streamed to a file; a resumable session begun. */
void api_storage_objects_insert_head(struct request *req);
void api_storage_objects_insert(struct request *req);
/* PUT /upload/...?upload_id=: a resumable session's chunk. */
void api_storage_objects_upload_head(struct request *req);
void api_storage_objects_upload(struct request *req);
void api_storage_objects_rewrite(struct request *req);
void api_storage_objects_copy(struct request *req);
void api_storage_objects_compose(struct request *req);
void api_storage_buckets_storage_layout(struct request *req);

#endif
