/*
 * job_cache.h - rendered jobs kept in memory, and never served stale.
 *
 * jobs.get is the call clients make most (gcloud and the Google clients
 * poll it while they wait), and the job it returns changes a handful of
 * times in its life. The server keeps the reply it rendered for a job, and
 * a trigger on the jobs table (schema/009) notifies every server of every
 * change or deletion of a job, whoever made it: this server, another one,
 * or plain SQL.
 *
 * The notifications arrive on the server's one listening connection, the
 * LISTEN hub (store/listen_hub.h), which hands them to the cache. A
 * notification arrives a little after its commit, so a cached reply on its
 * own could be older than a write some client has already been told about
 * (by another server, say). Before a cached reply is served, the cache
 * asks the hub for a fence: a bare pipeline sync on the listening
 * connection, which PostgreSQL answers only after it has delivered every
 * notification of the transactions committed before the fence arrived, and
 * which the hub completes only after it has applied them.
 * A reply still cached once the fence is back is as fresh as a read of the
 * table made when the request arrived (Kubernetes' "consistent reads from
 * cache" make the same argument with etcd's revision). Requests that arrive
 * while a fence is out share the next one, so under load one round trip
 * serves many reads and PostgreSQL does nothing else for them.
 *
 * Filling the cache races with changes: a read that started before a change
 * may come back after its notification. A fill therefore begins with a
 * placeholder, made before the read is sent; a notification for its key
 * spoils it, and a spoiled placeholder is not filled. While the hub's
 * connection is down (and until its LISTEN has taken effect again) the
 * cache is empty, fences fail and nothing is filled: every read goes to the
 * database, as without a cache.
 *
 * Inserts do not notify: a job that is not there cannot be cached.
 */
#ifndef TP_JOB_CACHE_H
#define TP_JOB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "listen_hub.h"

#define JOB_CACHE_CHANNEL "tp_job"

struct job_cache;

/*
 * A reply's key: the job's api ("ml", "vertex"), project and id, and what
 * else the reply depends on (view: the location and collection asked for,
 * or NULL). The digest is the job's alone: a change to the job drops every
 * view of it.
 */
struct job_cache_key {
	char *name;		/* "api/project/job_id", then a tab and the view */
	uint8_t digest[32];	/* SHA-256 of "api/project/job_id", as the trigger sends it */
};

void job_cache_key_init(struct job_cache_key *k, const char *api, const char *project,
			const char *job_id, const char *view);
void job_cache_key_release(struct job_cache_key *k);

/*
 * Subscribes to JOB_CACHE_CHANNEL on hub (borrowed: it outlives the
 * cache); the cache takes fills once the hub listens. max_entries bounds
 * the replies kept (the least recently used go first).
 */
struct job_cache *job_cache_start(struct listen_hub *hub, size_t max_entries);
/* Unsubscribes and frees; no fence may be out (the requests stopped first). NULL is a no-op. */
void job_cache_stop(struct job_cache *c);

/* Whether a reply for k is cached now (it may be gone after the fence). */
bool job_cache_holds(struct job_cache *c, const struct job_cache_key *k);

/* A fence: the caller's memory, untouched until done runs. */
struct job_cache_fence {
	struct listen_fence hub;
	struct job_cache *cache;
	void (*done)(void *arg, bool ok);
	void *arg;
};

/*
 * Calls done(arg, true) on the hub's thread once every change committed
 * before this call has been applied to the cache; done(arg, false) when that
 * cannot be known (no connection, stopping). done must not block.
 */
void job_cache_fence(struct job_cache *c, struct job_cache_fence *f, void (*done)(void *, bool),
		     void *arg);

/*
 * After a fence that succeeded: a copy of the cached reply for k (the
 * caller frees it), or NULL when there is none.
 */
char *job_cache_get(struct job_cache *c, const struct job_cache_key *k, size_t *len);

/*
 * A fill: begun before the read that fetches k is sent, ended with the reply
 * rendered from that read (NULL, 0 for none: not found, an error). NULL from
 * begin (the cache is down, or k is being filled or is cached already) asks
 * for no end. The reply is copied.
 */
struct job_cache_entry *job_cache_fill_begin(struct job_cache *c, const struct job_cache_key *k);
void job_cache_fill_end(struct job_cache *c, struct job_cache_entry *placeholder,
			const char *reply, size_t len);

struct job_cache_stats {
	uint64_t hits, misses, fills, invalidations, fences, fence_failures;
	size_t entries;
};
void job_cache_stats(struct job_cache *c, struct job_cache_stats *out);

#endif
