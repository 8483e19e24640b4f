#include "cached_get.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common.h"
#include "job_cache.h"

/* What a get keeps across its suspensions. */
struct cached_get {
	struct job_cache *cache;
	struct job_cache_key key;
	struct job_cache_fence fence;
	struct job_cache_entry *fill;	/* the placeholder of the read out, or NULL */
	bool fencing;		/* suspended for the fence */
	bool reading;		/* the read has begun (the caller may suspend for it) */
	bool fence_ok;
};

static void cached_get_free(void *p)
{
	struct cached_get *g = p;

	/* a read the request did not live to use fills nothing */
	job_cache_fill_end(g->cache, g->fill, NULL, 0);
	job_cache_key_release(&g->key);
	free(g);
}

/* The cache's thread: the fence is back. */
static void fenced(void *arg, bool ok)
{
	struct request *req = arg;
	struct cached_get *g = req->ctx;

	g->fence_ok = ok;
	http_resume(req);
}

enum cached_get_step cached_get_begin(struct request *req, const char *api, const char *project,
				      const char *job_id, const char *view)
{
	struct job_cache *cache = req->srv->job_cache;
	struct cached_get *g = req->ctx;

	if (!cache)
		return CACHED_GET_READ;
	if (!g) {
		g = xcalloc(1, sizeof(*g));
		g->cache = cache;
		job_cache_key_init(&g->key, api, project, job_id, view);
		req->ctx = g;
		req->ctx_free = cached_get_free;
		if (job_cache_holds(cache, &g->key)) {
			g->fencing = true;
			http_suspend(req);
			job_cache_fence(cache, &g->fence, fenced, req);
			return CACHED_GET_DONE;
		}
	} else if (g->fencing) {
		g->fencing = false;
		size_t len;
		char *text = g->fence_ok ? job_cache_get(cache, &g->key, &len) : NULL;
		if (text) {
			reply_json_text(req, 200, text, len);
			return CACHED_GET_DONE;
		}
		req->resumed = false;	/* gone meanwhile, or unproven: read it */
	}
	if (!g->reading) {
		g->reading = true;
		g->fill = job_cache_fill_begin(cache, &g->key);
	}
	return CACHED_GET_READ;
}

void cached_get_end(struct request *req, const char *reply, size_t len)
{
	struct cached_get *g = req->ctx;

	if (!g)		/* no cache */
		return;
	job_cache_fill_end(g->cache, g->fill, reply, len);
	g->fill = NULL;
}
