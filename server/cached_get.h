/*
 * cached_get.h - a get handler's use of the job cache (store/job_cache.h).
 *
 *	switch (cached_get_begin(req, "ml", project, job_id, NULL)) {
 *	case CACHED_GET_DONE: return;	(suspended for a fence, or answered)
 *	case CACHED_GET_READ: break;	(read the job: from the table, now)
 *	}
 *	... read and render ...
 *	cached_get_end(req, reply, len);	(or NULL, 0: not found, an error)
 *	... reply ...
 *
 * A reply is served from the cache only after a fence proved it current;
 * a read is begun as a fill, so that what it renders is kept unless the job
 * changed meanwhile. Without a cache (job_cache_entries: 0) every get reads.
 */
#ifndef TP_CACHED_GET_H
#define TP_CACHED_GET_H

#include <stddef.h>

#include "http.h"

enum cached_get_step {
	CACHED_GET_DONE,	/* the handler returns: suspended, or answered */
	CACHED_GET_READ,	/* read the job (again after a suspension of the caller's) */
};

/*
 * Call first in the handler, every time it runs. view: what the reply
 * depends on besides the job's row (NULL for nothing). Uses req->ctx.
 */
enum cached_get_step cached_get_begin(struct request *req, const char *api, const char *project,
				      const char *job_id, const char *view);
/* The read's reply (copied into the cache unless the job changed), or NULL. */
void cached_get_end(struct request *req, const char *reply, size_t len);

#endif
