/*
 * stub_store.c - the store, the job cache, the pipe, the LISTEN hub and the
 * scheduler as the HTTP fuzz target sees them: no database. Every call fails the way the
 * fuzzer's first byte chose (stub_store_rc: not found, conflict, stale,
 * unavailable or error) where the real function can fail so (its header
 * says which), and unavailable where it cannot, so handlers run their
 * validation and their error paths, and a 500 means a handler mishandled
 * an error its store call really gives; nothing ever suspends a request. Listed from the link of the
 * server's files: a store function the server starts to call makes the
 * fuzz build fail until it is stubbed here. The console's files, which the
 * build generates (build/gen/console_assets.c), are one small page here.
 */
#include <stdlib.h>
#include <string.h>

#include "console_assets.h"
#include "job_cache.h"
#include "listen_hub.h"
#include "scheduler.h"
#include "sim_fleet.h"
#include "slurm_backend.h"
#include "store.h"
#include "store_clock.h"
#include "store_iam.h"
#include "store_job.h"
#include "store_log.h"
#include "store_metrics.h"
#include "store_node.h"
#include "store_pipe.h"
#include "store_quota.h"
#include "store_reset.h"
#include "store_sched.h"
#include "store_sim_rules.h"
#include "store_slurm.h"
#include "store_storage.h"

enum store_rc stub_store_rc = STORE_UNAVAILABLE;

/* What a real function may answer besides OK, UNAVAILABLE and ERROR. */
enum { MAY_NOT_FOUND = 1, MAY_CONFLICT = 2, MAY_STALE = 4 };

/* stub_store_rc where a function that may answer `may` can give it. */
static enum store_rc rc_for(unsigned may)
{
	switch (stub_store_rc) {
	case STORE_NOT_FOUND:
		return may & MAY_NOT_FOUND ? stub_store_rc : STORE_UNAVAILABLE;
	case STORE_CONFLICT:
		return may & MAY_CONFLICT ? stub_store_rc : STORE_UNAVAILABLE;
	case STORE_STALE:
		return may & MAY_STALE ? stub_store_rc : STORE_UNAVAILABLE;
	default:
		return stub_store_rc;
	}
}
/*
 * With stub_node_ok, an agent's sync succeeds with an empty desired set of
 * version 1, and the version read right after it says 2: the change that
 * lands between the two wakes the long-poll that just parked.
 */
bool stub_node_ok;

static const unsigned char page_key[32] = "fuzz page token key, 32 bytes..";

const char *store_rc_name(enum store_rc rc)
{
	static const char *const names[] = { "ok", "not found", "conflict", "stale",
					     "unavailable", "error" };
	return (unsigned)rc < sizeof(names) / sizeof(names[0]) ? names[rc] : "?";
}

const unsigned char *store_page_token_key(const struct store *st)
{
	(void)st;
	return page_key;
}

enum store_rc store_ping(struct store *st)
{
	(void)st;
	return rc_for(0);
}

void store_stats(struct store *st, struct store_stats *out)
{
	(void)st;
	memset(out, 0, sizeof(*out));
}

/* --- jobs ------------------------------------------------------------------ */

size_t job_rows_count(const struct job_rows *rows)
{
	(void)rows;
	return 0;
}

void job_rows_get(const struct job_rows *rows, size_t i, struct job *out)
{
	(void)rows;
	(void)i;
	memset(out, 0, sizeof(*out));
}

void job_rows_free(struct job_rows *rows)
{
	(void)rows;
}

void store_job_insert_piped(struct store_pipe *pipe, const struct job_key *key,
			    const char *region, const char *spec_json, const char *labels_json,
			    store_job_insert_done done, void *arg)
{
	(void)pipe, (void)key, (void)region, (void)spec_json, (void)labels_json;
	done(arg, NULL, rc_for(MAY_CONFLICT));
}

enum store_rc store_job_insert(struct store *st, const struct job_key *key, const char *region,
			       const char *spec_json, const char *labels_json, struct job *out)
{
	(void)st, (void)key, (void)region, (void)spec_json, (void)labels_json;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_CONFLICT);
}

void store_job_inserted(const struct job_key *key, const char *region, const char *spec_json,
			const char *labels_json, const struct job_stamp *stamp, struct job *out)
{
	(void)key, (void)region, (void)spec_json, (void)labels_json, (void)stamp;
	memset(out, 0, sizeof(*out));
}

enum store_rc store_job_get(struct store *st, const struct job_key *key, struct job_rows **out)
{
	(void)st, (void)key;
	*out = NULL;
	return rc_for(MAY_NOT_FOUND);
}

void store_job_get_piped(struct store_pipe *pipe, const struct job_key *key,
			 store_job_rows_done done, void *arg)
{
	(void)pipe, (void)key;
	done(arg, NULL, rc_for(MAY_NOT_FOUND));
}

enum store_rc store_job_list(struct store *st, enum store_job_list_of of, const char *project,
			     const char *location, int64_t before_id, int limit,
			     const struct list_filter *filter, struct job_rows **out)
{
	(void)st, (void)of, (void)project, (void)location, (void)before_id, (void)limit;
	(void)filter;
	*out = NULL;
	return rc_for(0);
}

enum store_rc store_job_cancel(struct store *st, const struct job_key *key, const char *message,
			       bool *changed, struct job_rows **out)
{
	(void)st, (void)key, (void)message;
	*changed = false;
	*out = NULL;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_job_set_labels(struct store *st, const struct job_key *key,
				   int64_t expect_version, const char *labels_json,
				   struct job_rows **out)
{
	(void)st, (void)key, (void)expect_version, (void)labels_json;
	*out = NULL;
	return rc_for(MAY_NOT_FOUND | MAY_STALE);
}

enum store_rc store_job_insert_numbered(struct store *st, const char *api, const char *project,
					const char *region, const char *spec_json,
					const char *labels_json, struct job_rows **out)
{
	(void)st, (void)api, (void)project, (void)region, (void)spec_json, (void)labels_json;
	*out = NULL;
	return rc_for(MAY_CONFLICT);
}

enum store_rc store_job_delete_final(struct store *st, const struct job_key *key,
				     const char *location, const char *target, int64_t *op_id,
				     int64_t *op_create_us)
{
	(void)st, (void)key, (void)location, (void)target;
	*op_id = *op_create_us = 0;
	return rc_for(MAY_NOT_FOUND | MAY_CONFLICT);
}

enum store_rc store_vertex_operation_get(struct store *st, const char *project,
					 const char *location, const char *id, char **target,
					 int64_t *create_us)
{
	(void)st, (void)project, (void)location, (void)id;
	*target = NULL;
	*create_us = 0;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_vertex_operation_delete(struct store *st, const char *project,
					    const char *location, const char *id)
{
	(void)st, (void)project, (void)location, (void)id;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_vertex_operation_list(struct store *st, const char *project,
					  const char *location, int64_t after_id, int limit,
					  int64_t **ids, int64_t **create_us, size_t *n)
{
	(void)st, (void)project, (void)location, (void)after_id, (void)limit;
	*ids = *create_us = NULL;
	*n = 0;
	return rc_for(0);
}

/* --- IAM, logs, metrics, nodes ------------------------------------------------ */

enum store_rc store_iam_get(struct store *st, const char *api, const char *project,
			    const char *job_id, char **policy_json, int64_t *etag)
{
	(void)st, (void)api, (void)project, (void)job_id;
	*policy_json = NULL;
	*etag = 0;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_iam_set(struct store *st, const char *api, const char *project,
			    const char *job_id, const char *policy_json,
			    const int64_t *expected_etag, int64_t *etag)
{
	(void)st, (void)api, (void)project, (void)job_id, (void)policy_json, (void)expected_etag;
	*etag = 0;
	return rc_for(MAY_NOT_FOUND | MAY_STALE);
}

enum store_rc store_log_list(struct store *st, const char *project, bool desc, int64_t after_us,
			     int64_t after_id, int limit, const struct list_filter *filter,
			     json_t **out)
{
	(void)st, (void)project, (void)desc, (void)after_us, (void)after_id, (void)limit;
	(void)filter;
	*out = NULL;
	return rc_for(0);
}

enum store_rc store_log_add(struct store *st, int64_t job, const char *task, bool warning,
			    const char *text)
{
	(void)st, (void)job, (void)task, (void)warning, (void)text;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_metrics_snapshot(struct store *st, char **json_text)
{
	(void)st;
	*json_text = NULL;
	return rc_for(0);
}

enum store_rc store_node_register(struct store *st, const struct node_info *n,
				  char *cluster_id, size_t cluster_id_len)
{
	(void)st, (void)n;
	if (cluster_id_len)
		cluster_id[0] = '\0';
	return rc_for(MAY_CONFLICT);
}

enum store_rc store_node_sync(struct store *st, const char *node, const char *incarnation,
			      int lease_s, bool stopping, const json_t *reports,
			      json_t **desired, int64_t *version, bool *changed)
{
	(void)st, (void)node, (void)incarnation, (void)lease_s, (void)stopping, (void)reports;
	*desired = stub_node_ok ? json_array() : NULL;
	*version = 1;
	*changed = false;
	return stub_node_ok ? STORE_OK : rc_for(MAY_NOT_FOUND | MAY_STALE);
}

enum store_rc store_node_renew_leases(struct store *st, const char *const *names,
				      const char *const *incarnations, size_t n, int lease_s,
				      bool *renewed)
{
	(void)st, (void)names, (void)incarnations, (void)lease_s;
	for (size_t i = 0; i < n; i++)
		renewed[i] = stub_node_ok;
	return stub_node_ok ? STORE_OK : rc_for(MAY_NOT_FOUND);
}

enum store_rc store_node_version(struct store *st, const char *node, int64_t *version)
{
	(void)st, (void)node;
	*version = 2;
	return stub_node_ok ? STORE_OK : rc_for(MAY_NOT_FOUND);
}

enum store_rc store_node_list(struct store *st, json_t **out)
{
	(void)st;
	*out = NULL;
	return rc_for(0);
}

enum store_rc store_replica_list(struct store *st, const struct job_key *key, const char *region,
				 json_t **out)
{
	(void)st;
	(void)key;
	(void)region;
	*out = NULL;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_node_set_draining(struct store *st, const char *node, bool draining,
				      json_t **out)
{
	(void)st, (void)node, (void)draining;
	*out = NULL;
	return rc_for(MAY_NOT_FOUND);
}

/* --- the job cache and the pipe: never started in the fuzzer ------------------ */

void job_cache_key_init(struct job_cache_key *k, const char *api, const char *project,
			const char *job_id, const char *view)
{
	(void)api, (void)project, (void)job_id, (void)view;
	memset(k, 0, sizeof(*k));
}

void job_cache_key_release(struct job_cache_key *k)
{
	(void)k;
}

bool job_cache_holds(struct job_cache *c, const struct job_cache_key *k)
{
	(void)c, (void)k;
	return false;
}

void job_cache_fence(struct job_cache *c, struct job_cache_fence *f, void (*done)(void *, bool),
		     void *arg)
{
	(void)c, (void)f;
	done(arg, false);
}

char *job_cache_get(struct job_cache *c, const struct job_cache_key *k, size_t *len)
{
	(void)c, (void)k;
	*len = 0;
	return NULL;
}

struct job_cache_entry *job_cache_fill_begin(struct job_cache *c, const struct job_cache_key *k)
{
	(void)c, (void)k;
	return NULL;
}

void job_cache_fill_end(struct job_cache *c, struct job_cache_entry *placeholder,
			const char *reply, size_t len)
{
	(void)c, (void)placeholder, (void)reply, (void)len;
}

void job_cache_stats(struct job_cache *c, struct job_cache_stats *out)
{
	(void)c;
	memset(out, 0, sizeof(*out));
}

void store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out)
{
	(void)p;
	memset(out, 0, sizeof(*out));
}

void sched_wake(struct sched *s)
{
	(void)s;
}

void sched_wake_new_job(struct sched *s)
{
	(void)s;
}

bool sched_is_leader(struct sched *s)
{
	(void)s;
	return false;
}

/* --- the emulator: no clock moves, no rules, nothing to reset -------------- */

bool sim_fleet_has_node(const char *node)
{
	return node && !strncmp(node, "sim-", 4);
}

enum store_rc store_clock_get(struct store *st, struct emu_clock *out)
{
	(void)st;
	*out = EMU_CLOCK_IDENTITY;
	return STORE_OK;
}

enum store_rc store_clock_advance(struct store *st, int64_t us, struct emu_clock *out)
{
	(void)st, (void)us;
	*out = EMU_CLOCK_IDENTITY;
	return STORE_OK;
}

enum store_rc store_clock_set_speed(struct store *st, double speed, struct emu_clock *out)
{
	(void)st;
	*out = EMU_CLOCK_IDENTITY;
	out->speed = speed;
	return STORE_OK;
}

enum store_rc store_reset(struct store *st, const char *project, int64_t *deleted)
{
	(void)st, (void)project;
	*deleted = 0;
	return STORE_OK;
}

enum store_rc store_quota_usage(struct store *st, const char *project, json_t **out)
{
	(void)st, (void)project;
	*out = NULL;
	return stub_store_rc;
}

enum store_rc store_quota_queue(struct store *st, const char *project, json_t **out)
{
	(void)st, (void)project;
	*out = NULL;
	return stub_store_rc;
}

enum store_rc store_sim_rules_get(struct store *st, char **json)
{
	(void)st;
	*json = xstrdup("[]");
	return STORE_OK;
}

enum store_rc store_sim_rules_set(struct store *st, const char *json)
{
	(void)st, (void)json;
	return STORE_OK;
}

/* --- the LISTEN hub: no notifications in the fuzzer ---------------------------- */

struct listen_sub *listen_hub_subscribe(struct listen_hub *h, const char *channel,
					const struct listen_sub_ops *ops, void *arg)
{
	(void)h, (void)channel, (void)ops, (void)arg;
	return NULL;
}

void listen_hub_unsubscribe(struct listen_hub *h, struct listen_sub *s)
{
	(void)h, (void)s;
}

/* --- Cloud Storage (store_storage.h) ----------------------------------------- */

void storage_bucket_release(struct storage_bucket *b)
{
	if (!b)
		return;
	free(b->name);
	free(b->project);
	free(b->location);
	free(b->storage_class);
	memset(b, 0, sizeof(*b));
}

void storage_buckets_free(struct storage_bucket *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		storage_bucket_release(&v[i]);
	free(v);
}

void storage_object_release(struct storage_object *o)
{
	if (!o)
		return;
	free(o->bucket);
	free(o->name);
	free(o->content_type);
	free(o->metadata);
	memset(o, 0, sizeof(*o));
}

void storage_objects_free(struct storage_object *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		storage_object_release(&v[i]);
	free(v);
}

void storage_upload_release(struct storage_upload *u)
{
	if (!u)
		return;
	free(u->id);
	free(u->bucket);
	free(u->name);
	free(u->content_type);
	free(u->metadata);
	memset(u, 0, sizeof(*u));
}

enum store_rc store_bucket_insert(struct store *st, const struct storage_bucket *b,
				  struct storage_bucket *out)
{
	(void)st;
	(void)b;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_CONFLICT);
}

enum store_rc store_bucket_get(struct store *st, const char *name, struct storage_bucket *out)
{
	(void)st;
	(void)name;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_bucket_list(struct store *st, const char *project, const char *prefix,
				const char *after, int limit, struct storage_bucket **out, size_t *n)
{
	(void)st;
	(void)project;
	(void)prefix;
	(void)after;
	(void)limit;
	*out = NULL;
	*n = 0;
	return rc_for(0);
}

enum store_rc store_bucket_delete(struct store *st, const char *name)
{
	(void)st;
	(void)name;
	return rc_for(MAY_NOT_FOUND | MAY_STALE);
}

enum store_rc store_object_put(struct store *st, const struct storage_object *o)
{
	(void)st;
	(void)o;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_object_get(struct store *st, const char *bucket, const char *name,
			       struct storage_object *out)
{
	(void)st;
	(void)bucket;
	(void)name;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_object_range(struct store *st, const char *bucket, const char *first,
				 const char *last, struct storage_object **out, size_t *n)
{
	(void)st;
	(void)bucket;
	(void)first;
	(void)last;
	*out = NULL;
	*n = 0;
	return rc_for(0);
}

enum store_rc store_object_forget(struct store *st, const char *bucket, const char *name)
{
	(void)st;
	(void)bucket;
	(void)name;
	return rc_for(0);
}

enum store_rc store_upload_begin(struct store *st, const struct storage_upload *u)
{
	(void)st;
	(void)u;
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_upload_get(struct store *st, const char *id, struct storage_upload *out)
{
	(void)st;
	(void)id;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_NOT_FOUND);
}

enum store_rc store_upload_progress(struct store *st, const char *id, int64_t from,
				    int64_t received, const unsigned char *hash_state,
				    size_t hash_state_len)
{
	(void)st;
	(void)id;
	(void)from;
	(void)received;
	(void)hash_state;
	(void)hash_state_len;
	return rc_for(MAY_STALE);
}

enum store_rc store_upload_end(struct store *st, const char *id)
{
	(void)st;
	(void)id;
	return rc_for(MAY_NOT_FOUND);
}

static const unsigned char console_page[] = "<!doctype html>\n";
const struct console_asset console_assets[] = {
	{ "index.html", "text/html; charset=utf-8", "\"0123456789abcdef\"", console_page,
	  sizeof(console_page) - 1 },
};
const size_t console_assets_count = 1;

/* The Slurm backend: the fuzzed server serves no region through Slurm. */
void slurm_backends_metrics(struct slurm_backends *b, struct strbuf *sb)
{
	(void)b;
	(void)sb;
}

const char *slurm_backends_serving(const struct slurm_backends *b, const char *region)
{
	(void)b;
	(void)region;
	return NULL;
}

int slurm_backends_fits(struct slurm_backends *b, const char *region, const struct job_plan *plan,
			char *why, size_t whylen)
{
	(void)b;
	(void)region;
	(void)plan;
	(void)why;
	(void)whylen;
	return 0;
}

enum store_rc store_slurm_pilot_grant(struct store *st, int64_t job, struct slurm_pilot_grant *out)
{
	(void)st;
	(void)job;
	memset(out, 0, sizeof(*out));
	return rc_for(MAY_NOT_FOUND);
}

void slurm_pilot_grant_release(struct slurm_pilot_grant *g)
{
	(void)g;
}

enum store_rc store_slurm_pilot_add(struct store *st, const char *node, int64_t job,
				    int restart_cnt, int slot)
{
	(void)st;
	(void)node;
	(void)job;
	(void)restart_cnt;
	(void)slot;
	return rc_for(0);
}
