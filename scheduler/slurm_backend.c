/*
 * slurm_backend.c - the Slurm backend: its configuration, the translation
 * of a planned job into one Slurm job, the decision table from Slurm's
 * states to the job state machine, and the reconciler. See slurm_backend.h
 * and docs/slurm.md.
 */
#include "slurm_backend.h"

#include <math.h>
#include <stdatomic.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bgloop.h"
#include "common.h"
#include "log.h"
#include "metrics.h"
#include "scheduler.h"
#include "snapshot.h"
#include "store_slurm.h"
#include "strbuf.h"
#include "training_spec.h"
#include "wire.h"
#include "yamldoc.h"

#define INVENTORY_EVERY_US (INT64_C(10) * 1000000)
#define NEW_JOBS_PER_TURN 20
#define FINAL_GRACE_S 3.0	/* Slurm final, the job not: the pilots' last reports may be in flight */
#define RESUBMIT_AFTER_S 10.0	/* a claimed job with no Slurm id: its submit's answer was lost */
#define RECANCEL_AFTER_S 10.0
#define END_GRACE_S 10.0	/* a job that ended on its own: its pilots' time to leave */
#define ACTIVE_EVERY_US 1000000	/* every job's row at least this often (Slurm unchanged) */

struct slurm_backend {
	struct slurm_backend_config cfg;
	struct slurm_backends *set;
	struct slurm_client *client;
	struct bgloop *loop;
	pthread_mutex_t mu;		/* guards inv*, unavailable* (read by the API's threads) */
	struct slurm_node_info *inv;
	size_t ninv;
	bool inv_known;
	char unavailable[512];		/* why Slurm cannot be used now; "" when it can */
	time_t unavailable_since;
	/* the loop's own */
	int64_t inv_at_us;
	long long poll_since;		/* update_time of the next poll (wall seconds) */
	struct slurm_job_info *known;	/* Slurm's jobs as of known_at */
	size_t nknown;
	time_t known_at;
	bool known_complete;
	char tag[128];			/* "<cluster id>/<backend>": in its jobs' comments */
	int64_t active_at_us;		/* the last pass over every job's row */
	int64_t noted_at_us;		/* the last note_unavailable() */
	/* for /metrics (any thread reads them) */
	_Atomic uint64_t submitted, refused, requeued, failed;
	bool active_due;		/* a pass is due at the next turn */
};

struct slurm_backends {
	size_t n;
	struct slurm_backend *v;
	struct slurm_backends_ctx ctx;
	bool started;
};

/* --- configuration --------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Values that reach the batch script's text: an absolute path of plain characters. */
static bool plain_path(const char *s)
{
	if (!s || *s != '/' || strstr(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("/._+-", *s)))
			return false;
	return true;
}

/* Slurm names (partition, account, QOS, gres type, user): letters, digits, . _ - */
static bool slurm_name(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("._-", *s)))
			return false;
	return true;
}

static void config_release(struct slurm_backend_config *c)
{
	free(c->name);
	for (size_t i = 0; i < c->nregions; i++)
		free(c->regions[i]);
	free(c->regions);
	free((char *)c->client.url);
	free((char *)c->client.user);
	free((char *)c->client.token_file);
	free((char *)c->client.version);
	free(c->partition);
	free(c->qos);
	free(c->account);
	json_decref(c->accounts);
	json_decref(c->gres);
	json_decref(c->machines);
	json_decref(c->features);
	free(c->agent);
	free(c->server);
	free(c->work_dir);
	free(c->runtime);
	free(c->agent_ca_file);
}

static int int_of(const json_t *o, const char *k, int def, int lo, int hi, int *out)
{
	const json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -1;
	*out = (int)json_integer_value(v);
	return 0;
}

static int backend_parse(const char *path, const char *name, const json_t *o,
			 struct slurm_backend_config *c, char *err, size_t errlen)
{
	static const char *const known[] = { "regions", "url", "user", "token_file", "api",
					     "partition", "account", "accounts", "qos", "gres", "features",
					     "machines", "agent", "server", "work_dir", "runtime",
					     "agent_ca_file", "poll_ms", "requeue",
					     "unavailable_fail_seconds", "time_limit_margin_minutes" };
	const char *key;
	const json_t *v;
	size_t i;

	c->name = xstrdup(name);
	json_object_foreach((json_t *)o, key, v) {
		bool ok = false;
		for (i = 0; i < ARRAY_SIZE(known) && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (!ok) {
			snprintf(err, errlen, "%s: backends.%s: unknown key %s", path, name, key);
			return -1;
		}
	}
#define BAD(...) do { snprintf(err, errlen, "%s: backends.%s: ", path, name); \
		      size_t at_ = strlen(err); snprintf(err + at_, errlen - at_, __VA_ARGS__); \
		      return -1; } while (0)
	const json_t *regions = json_object_get(o, "regions");
	if (!json_is_array(regions) || !json_array_size(regions))
		BAD("regions: a list of the regions (or zones) it serves is required");
	c->regions = xcalloc(json_array_size(regions), sizeof(*c->regions));
	json_array_foreach(regions, i, v) {
		if (!json_is_string(v) || !*json_string_value(v))
			BAD("regions: each must be a region name");
		c->regions[c->nregions++] = xstrdup(json_string_value(v));
	}
	const char *url = jstr(o, "url");
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8) &&
		     strncmp(url, "unix:/", 6)))
		BAD("url: slurmrestd's address is required: http://host:port, https://host:port "
		    "or unix:/path/to/socket");
	c->client.url = xstrdup(url);
	c->client.token_file = dup_or_null(jstr(o, "token_file"));
	c->client.user = dup_or_null(jstr(o, "user"));
	if (strncmp(url, "unix:", 5) && (!c->client.token_file || !c->client.user))
		BAD("token_file and user are required with a TCP url: slurmrestd takes a JWT "
		    "(there is no default token)");
	if (c->client.user && !slurm_name(c->client.user))
		BAD("user: letters, digits, '.', '_' or '-'");
	c->client.version = xstrdup(jstr(o, "api") ?: "v0.0.38");
	if (!slurm_api_find(c->client.version))
		BAD("api: %s is not a slurmrestd schema trainplane speaks (v0.0.38 is)",
		    c->client.version);
	c->client.timeout_ms = 10000;
	c->partition = dup_or_null(jstr(o, "partition"));
	c->account = dup_or_null(jstr(o, "account"));
	c->qos = dup_or_null(jstr(o, "qos"));
	if ((c->partition && !slurm_name(c->partition)) || (c->account && !slurm_name(c->account)) ||
	    (c->qos && !slurm_name(c->qos)))
		BAD("partition, account and qos: letters, digits, '.', '_' or '-'");
	c->accounts = json_incref(json_object_get(o, "accounts")) ?: json_object();
	c->gres = json_incref(json_object_get(o, "gres")) ?: json_object();
	c->machines = json_incref(json_object_get(o, "machines")) ?: json_object();
	c->features = json_incref(json_object_get(o, "features")) ?: json_object();
	if (!json_is_object(c->accounts) || !json_is_object(c->gres) || !json_is_object(c->machines) ||
	    !json_is_object(c->features))
		BAD("accounts, gres, features and machines are mappings");
	json_object_foreach(c->features, key, v)
		if (!slurm_name(json_string_value(v)))
			BAD("features.%s: a node feature name", key);
	json_object_foreach(c->accounts, key, v)
		if (!slurm_name(json_string_value(v)))
			BAD("accounts.%s: a Slurm account name", key);
	json_object_foreach(c->gres, key, v)
		if (!json_is_null(v) && !slurm_name(json_string_value(v)))
			BAD("gres.%s: a gres type such as t4 (or null: untyped gpu)", key);
	json_object_foreach(c->machines, key, v) {
		int cpus, mem;
		if (!json_is_object(v) || int_of(v, "cpus", 0, 1, 4096, &cpus) || !cpus ||
		    int_of(v, "memoryMb", 0, 1, 1 << 30, &mem) || !mem)
			BAD("machines.%s: {cpus: N, memoryMb: M}", key);
	}
	c->agent = xstrdup(jstr(o, "agent") ?: "/usr/local/bin/trainplane-agent");
	if (!plain_path(c->agent))
		BAD("agent: an absolute path of letters, digits, '/', '.', '_', '+' or '-'");
	c->server = dup_or_null(jstr(o, "server"));
	if (!c->server || (strncmp(c->server, "http://", 7) && strncmp(c->server, "https://", 8)))
		BAD("server: trainplane's URL as the Slurm nodes reach it is required");
	c->work_dir = xstrdup(jstr(o, "work_dir") ?: "/tmp");
	if (!plain_path(c->work_dir))
		BAD("work_dir: an absolute path of letters, digits, '/', '.', '_', '+' or '-'");
	c->runtime = xstrdup(jstr(o, "runtime") ?: "process");
	if (strcmp(c->runtime, "process") && strcmp(c->runtime, "podman") &&
	    strcmp(c->runtime, "docker"))
		BAD("runtime: process, podman or docker");
	c->agent_ca_file = dup_or_null(jstr(o, "agent_ca_file"));
	if (c->agent_ca_file && !plain_path(c->agent_ca_file))
		BAD("agent_ca_file: an absolute path of plain characters");
	const json_t *rq = json_object_get(o, "requeue");
	if (rq && !json_is_boolean(rq))
		BAD("requeue: true or false");
	c->requeue = !rq || json_is_true(rq);
	if (int_of(o, "poll_ms", 1000, 100, 60000, &c->poll_ms))
		BAD("poll_ms: 100 to 60000");
	if (int_of(o, "unavailable_fail_seconds", 600, 0, 86400 * 30, &c->unavailable_fail_s))
		BAD("unavailable_fail_seconds: 0 (never) to 2592000");
	if (int_of(o, "time_limit_margin_minutes", 1, 0, 1440, &c->time_limit_margin_min))
		BAD("time_limit_margin_minutes: 0 to 1440");
#undef BAD
	return 0;
}

int slurm_backends_load(const char *path, struct slurm_backends **out, char *err, size_t errlen)
{
	struct slurm_backends *b = xcalloc(1, sizeof(*b));
	yaml_document_t ydoc;
	json_t *doc = NULL;

	*out = b;
	if (!path || !*path)
		return 0;
	if (yaml_doc_load(path, &ydoc, err, errlen))
		return -1;
	yaml_node_t *root = yaml_document_get_root_node(&ydoc);
	if (root)
		doc = yaml_doc_json(&ydoc, root, path, err, errlen);
	yaml_document_delete(&ydoc);
	if (!doc)
		return root ? -1 : 0;
	const json_t *backends = json_object_get(doc, "backends");
	const char *key, *name;
	const json_t *v;
	int rc = -1;
	json_object_foreach(doc, key, v)
		if (strcmp(key, "backends")) {
			snprintf(err, errlen, "%s: unknown key %s (the file has backends: only)", path, key);
			goto out;
		}
	if (!json_is_object(backends)) {
		snprintf(err, errlen, "%s: backends: a mapping of names to backends is required", path);
		goto out;
	}
	b->v = xcalloc(json_object_size(backends) + 1, sizeof(*b->v));
	json_object_foreach((json_t *)backends, name, v) {
		struct slurm_backend *x = &b->v[b->n++];
		x->set = b;
		pthread_mutex_init(&x->mu, NULL);
		if (!slurm_name(name)) {
			snprintf(err, errlen, "%s: backends.%s: a name of letters, digits, '.', '_' or '-'",
				 path, name);
			goto out;
		}
		if (!json_is_object(v) || backend_parse(path, name, v, &x->cfg, err, errlen))
			goto out;
		for (size_t i = 0; i + 1 < b->n; i++)
			for (size_t r = 0; r < x->cfg.nregions; r++)
				if (slurm_backends_serving(&(struct slurm_backends){ 1, &b->v[i] },
							   x->cfg.regions[r])) {
					snprintf(err, errlen, "%s: region %s is served by two backends",
						 path, x->cfg.regions[r]);
					goto out;
				}
	}
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

void slurm_backends_free(struct slurm_backends *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		struct slurm_backend *x = &b->v[i];
		bgloop_free(x->loop);
		slurm_client_free(x->client);
		config_release(&x->cfg);
		free(x->inv);
		free(x->known);
		pthread_mutex_destroy(&x->mu);
	}
	free(b->v);
	free(b);
}

size_t slurm_backends_count(const struct slurm_backends *b)
{
	return b ? b->n : 0;
}

static struct slurm_backend *serving(const struct slurm_backends *b, const char *region)
{
	for (size_t i = 0; b && region && i < b->n; i++)
		for (size_t r = 0; r < b->v[i].cfg.nregions; r++)
			if (!strcmp(b->v[i].cfg.regions[r], region))
				return &b->v[i];
	return NULL;
}

const char *slurm_backends_serving(const struct slurm_backends *b, const char *region)
{
	struct slurm_backend *x = serving(b, region);
	return x ? x->cfg.name : NULL;
}

/* --- translation ------------------------------------------------------------ */

/* A replica's CPUs and memory on Slurm: the backend's machines map, else the catalog's. */
static void shape_of(const struct slurm_backend_config *cfg, const struct plan_replica *r,
		     int *cpus, int64_t *memory_mb)
{
	const json_t *m = r->machine_type ? json_object_get(cfg->machines, r->machine_type) : NULL;
	*cpus = m ? (int)json_integer_value(json_object_get(m, "cpus")) : r->demand.vcpus;
	*memory_mb = m ? json_integer_value(json_object_get(m, "memoryMb")) : r->demand.memory_mb;
	if (*cpus < 1)
		*cpus = 1;
}

static bool same_shape(const struct replica_demand *a, const struct replica_demand *b)
{
	return a->vcpus == b->vcpus && a->memory_mb == b->memory_mb &&
	       a->accel_count == b->accel_count && a->tpu == b->tpu &&
	       ((!a->accel_type && !b->accel_type) ||
		(a->accel_type && b->accel_type && !strcmp(a->accel_type, b->accel_type)));
}

/* The gres type of an accelerator: 0 with *type (NULL: untyped), -1 when not mapped. */
static int gres_type_of(const struct slurm_backend_config *cfg, const char *accel, const char **type)
{
	const json_t *v = json_object_get(cfg->gres, accel);
	*type = NULL;
	if (!v)
		return -1;
	*type = json_string_value(v);
	return 0;
}

/* Replica i's component: runs of one shape, in the plan's order (pool by pool). */
static size_t components_of(const struct job_plan *plan, size_t *first, size_t max)
{
	size_t n = 0;
	bool all_same = true;
	for (size_t i = 1; i < plan->n; i++)
		all_same = all_same && same_shape(&plan->replicas[i].demand, &plan->replicas[0].demand);
	for (size_t i = 0; i < plan->n; i++) {
		if (i == 0 || (!all_same && !same_shape(&plan->replicas[i].demand,
							 &plan->replicas[i - 1].demand))) {
			if (n == max)
				return max + 1;
			first[n++] = i;
		}
	}
	first[n] = plan->n;
	return n;
}

static char *job_script(const struct slurm_backend_config *cfg, const struct slurm_submit *s,
			const struct job_plan *plan, const size_t *first)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, "#!/bin/sh\n"
		  "# trainplane's pilot job (docs/slurm.md): one trainplane-agent per replica, each\n"
		  "# bound to this job alone; trainplane places the job's replicas on them.\n"
		  "# Generated: no value of the job's own is in this text.\n"
		  "rc=0\n");
	for (size_t g = 0; g < s->ncomponents; g++) {
		const char *accel = plan->replicas[first[g]].demand.accel_count ?
				    plan->replicas[first[g]].demand.accel_type : NULL;
		sb_addf(&sb, "TRAINPLANE_PILOT_GROUP=%zu%s%s srun", g,
			accel ? " TRAINPLANE_AGENT_GPU_TYPE=" : "", accel ? accel : "");
		if (s->ncomponents > 1)
			sb_addf(&sb, " --het-group=%zu", g);
		/* Per task again on srun's line: a job submitted through slurmrestd
		 * carries no SLURM_GPUS_PER_TASK for srun to bind by, and its tasks
		 * that shared a node saw all of the node's GPUs (seen on 22.05.8). */
		if (s->components[g].gpus_per_task)
			sb_addf(&sb, " --gpus-per-task=%d", s->components[g].gpus_per_task);
		sb_addf(&sb, " -n %d %s --pilot &\np%zu=$!\n", s->components[g].tasks, cfg->agent, g);
	}
	for (size_t g = 0; g < s->ncomponents; g++)
		sb_addf(&sb, "wait $p%zu; s=$?; [ $rc -eq 0 ] && rc=$s\n", g);
	sb_addstr(&sb, "exit $rc\n");
	return sb_detach(&sb);
}

/* Minutes, rounded up, of a duration such as "7200s"; 0 when absent or bad. */
static int minutes_of(const char *d)
{
	int64_t ns;
	if (!d || wire_duration_parse(d, &ns) || ns <= 0)
		return 0;
	double m = ceil((double)ns / 60e9);
	return m > 1e7 ? 10000000 : (int)m;
}

int slurm_translate(const struct slurm_backend_config *cfg, const struct job_plan *plan,
		    const json_t *job, const char *cluster_tag, const char *pilot_token,
		    struct slurm_translation *out, char *why, size_t whylen)
{
	size_t first[SLURM_MAX_COMPONENTS + 1];
	int64_t id = json_integer_value(json_object_get(job, "id"));
	const char *region = jstr(job, "region") ?: "";
	const json_t *spec = json_object_get(job, "spec");

	memset(out, 0, sizeof(*out));
	if (!plan->n) {
		snprintf(why, whylen, "the job has no replica to run");
		return -1;
	}
	size_t nc = components_of(plan, first, SLURM_MAX_COMPONENTS);
	if (nc > SLURM_MAX_COMPONENTS) {
		snprintf(why, whylen, "the job's replicas come in more than %d shapes",
			 SLURM_MAX_COMPONENTS);
		return -1;
	}
	struct slurm_submit *s = &out->submit;
	out->slots = json_array();
	for (size_t g = 0; g < nc; g++) {
		const struct plan_replica *r = &plan->replicas[first[g]];
		struct slurm_component *c = &s->components[g];
		int64_t mem;
		if (r->demand.tpu) {
			snprintf(why, whylen, "TPUs are not offered in region %s: its Slurm cluster "
				 "has GPUs and CPUs only", region);
			goto fail;
		}
		shape_of(cfg, r, &c->cpus_per_task, &mem);
		c->memory_per_cpu_mb = (mem + c->cpus_per_task - 1) / c->cpus_per_task;
		c->tasks = (int)(first[g + 1] - first[g]);
		if (r->demand.accel_count > 0) {
			if (gres_type_of(cfg, r->demand.accel_type, &c->gres_type)) {
				snprintf(why, whylen, "Accelerator type %s is not available in region %s: "
					 "its Slurm cluster offers none", r->demand.accel_type, region);
				goto fail;
			}
			c->gpus_per_task = r->demand.accel_count;
			c->constraint = jstr(cfg->features, r->demand.accel_type);
		}
		for (size_t i = first[g]; i < first[g + 1]; i++)
			json_array_append_new(out->slots, json_pack(
				"{s:i, s:i, s:i, s:I, s:s?, s:i}", "group", (int)g, "task",
				(int)(i - first[g]), "vcpus", c->cpus_per_task, "memoryMb",
				(json_int_t)mem, "accelType",
				plan->replicas[i].demand.accel_count ? plan->replicas[i].demand.accel_type :
				NULL, "accelCount", plan->replicas[i].demand.accel_count));
	}
	s->ncomponents = nc;
	out->name = xasprintf("tp-%lld", (long long)id);
	out->comment = xasprintf("trainplane %s job %lld", cluster_tag, (long long)id);
	out->output = xasprintf("%s/tp-%%j.out", cfg->work_dir);
	s->name = out->name;
	s->comment = out->comment;
	s->output = out->output;
	s->work_dir = cfg->work_dir;
	s->partition = cfg->partition;
	s->qos = cfg->qos;
	s->account = jstr(cfg->accounts, jstr(job, "project") ?: "") ?: cfg->account;
	s->requeue = cfg->requeue;
	/* trainplane's own timer ends the job first (to the second); Slurm's
	 * limit, in whole minutes, is the backstop. */
	bool vertex = !strcmp(jstr(job, "api") ?: "", "vertex");
	int limit = vertex ? minutes_of(jstr(json_object_get(json_object_get(spec, "jobSpec"),
							  "scheduling"), "timeout") ?: "604800s") :
			     minutes_of(jstr(json_object_get(spec, "scheduling"), "maxRunningTime"));
	s->time_limit_min = limit ? limit + cfg->time_limit_margin_min : 0;
	out->environment = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s}",
				     "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				     "TRAINPLANE_PILOT_SERVER", cfg->server,
				     "TRAINPLANE_PILOT_TOKEN", pilot_token,
				     "TRAINPLANE_PILOT_JOB", json_sprintf("%lld", (long long)id),
				     "TRAINPLANE_PILOT_WORK_DIR", cfg->work_dir,
				     "TRAINPLANE_AGENT_RUNTIME", cfg->runtime);
	if (cfg->agent_ca_file)
		json_object_set_new(out->environment, "TRAINPLANE_AGENT_SERVER_CA_FILE",
				    json_string(cfg->agent_ca_file));
	s->environment = out->environment;
	out->script = job_script(cfg, s, plan, first);
	s->script = out->script;
	return 0;
fail:
	slurm_translation_release(out);
	return -1;
}

void slurm_translation_release(struct slurm_translation *t)
{
	json_decref(t->slots);
	json_decref(t->environment);
	free(t->script);
	free(t->name);
	free(t->comment);
	free(t->output);
	memset(t, 0, sizeof(*t));
}

/* --- the decision table ------------------------------------------------------ */

static bool job_final(const char *s)
{
	return !strcmp(s, "SUCCEEDED") || !strcmp(s, "FAILED") || !strcmp(s, "CANCELLED");
}

static void timeout_words(const char *api, const json_t *spec, char *m, size_t n)
{
	if (!strcmp(api, "vertex"))
		snprintf(m, n, "The job exceeded its timeout (scheduling.timeout) of %s.",
			 jstr(json_object_get(json_object_get(spec, "jobSpec"), "scheduling"),
			      "timeout") ?: "604800s");
	else if (jstr(json_object_get(spec, "scheduling"), "maxRunningTime"))
		snprintf(m, n, "Job exceeded the maximum running time (scheduling.max_running_time) "
			 "of %s.", jstr(json_object_get(spec, "scheduling"), "maxRunningTime"));
	else
		snprintf(m, n, "Job exceeded the time limit of its Slurm partition.");
}

enum slurm_action slurm_decide(const char *job_state, const char *api, const json_t *spec,
			       int64_t slurm_id, int restart_cnt, bool cancel_sent,
			       const struct slurm_job_info *info, bool list_complete,
			       char *message, size_t mlen)
{
	bool jfinal = job_final(job_state), ending = jfinal || !strcmp(job_state, "CANCELLING");
	long long sid = (long long)slurm_id;

	*message = 0;
	if (!info) {
		if (!list_complete || !slurm_id)
			return SLURM_ACT_NONE;
		if (jfinal)
			return SLURM_ACT_DONE;
		if (!strcmp(job_state, "CANCELLING"))
			return SLURM_ACT_NONE;	/* its replicas' ends (or loss) finish it */
		snprintf(message, mlen, "UNAVAILABLE: the Slurm cluster no longer knows its job %lld "
			 "(its record was purged): trainplane lost track of the job.", sid);
		return SLURM_ACT_FAIL;
	}
	bool sfinal = slurm_state_final(info->state);
	if (ending) {
		if (sfinal)
			return jfinal ? SLURM_ACT_DONE : SLURM_ACT_NONE;
		/* COMPLETING (or another passing flag) is ending already */
		return cancel_sent || info->state == SLURM_TRANSIENT ? SLURM_ACT_NONE :
		       SLURM_ACT_CANCEL;
	}
	/* Held after a failed launch (a prolog's failure on 22.05.8): restart_cnt
	 * went up with it, and state_description is at times "" while the
	 * reason stays JobHeldUser. trainplane holds no job of its own. */
	if (info->state == SLURM_PENDING &&
	    (strstr(info->description, "launch failed requeued held") ||
	     (!strcmp(info->reason, "JobHeldUser") && info->restart_cnt > 0))) {
		snprintf(message, mlen, "The Slurm cluster could not start the job's pilots (Slurm job "
			 "%lld: launch failed requeued held).", sid);
		return SLURM_ACT_CANCEL_FAIL;
	}
	if (info->restart_cnt > restart_cnt)
		return SLURM_ACT_REQUEUED;
	if (!sfinal)
		return SLURM_ACT_NONE;
	int code = info->exit_code;
	switch (info->state) {
	case SLURM_TIMEOUT:
		timeout_words(api, spec, message, mlen);
		break;
	case SLURM_NODE_FAIL:
		snprintf(message, mlen, "A node of the job failed in the Slurm cluster (Slurm job %lld "
			 "on %s: NODE_FAIL) and the job was not requeued.", sid,
			 *info->nodes ? info->nodes : "its nodes");
		break;
	case SLURM_CANCELLED:
		snprintf(message, mlen, "The job was cancelled in the Slurm cluster, not through this "
			 "API (Slurm job %lld: CANCELLED).", sid);
		break;
	case SLURM_OUT_OF_MEMORY:
		snprintf(message, mlen, "A replica of the job ran out of memory (Slurm job %lld: "
			 "OUT_OF_MEMORY).", sid);
		break;
	case SLURM_PREEMPTED:
		snprintf(message, mlen, "The job was preempted in the Slurm cluster and not requeued "
			 "(Slurm job %lld: PREEMPTED).", sid);
		break;
	case SLURM_COMPLETED:
	case SLURM_FAILED:
		/* exit_code is a wait() status: a signal, or an exit status */
		snprintf(message, mlen, "The job's pilots ended before its replicas reported their "
			 "end (Slurm job %lld: %s, %s %d%s%s).", sid, info->state_name,
			 code & 0x7f ? "signal" : "exit status", code & 0x7f ? code & 0x7f :
			 (code >> 8) & 0xff, *info->reason && strcmp(info->reason, "None") ? ", " : "",
			 *info->reason && strcmp(info->reason, "None") ? info->reason : "");
		break;
	default:
		snprintf(message, mlen, "The Slurm cluster ended the job (Slurm job %lld: %s%s%s).",
			 sid, info->state_name, *info->reason ? ", " : "", info->reason);
		break;
	}
	return SLURM_ACT_FAIL;
}

/* --- "can it ever fit" ---------------------------------------------------- */

int slurm_backends_fits(struct slurm_backends *b, const char *region, const struct job_plan *plan,
			char *why, size_t whylen)
{
	struct slurm_backend *x = serving(b, region);
	size_t first[SLURM_MAX_COMPONENTS + 1];

	if (!x)
		return 0;
	size_t nc = components_of(plan, first, SLURM_MAX_COMPONENTS);
	if (nc > SLURM_MAX_COMPONENTS) {
		snprintf(why, whylen, "The job's replicas come in more than %d shapes, more than a "
			 "job of region %s (a Slurm cluster) may have.", SLURM_MAX_COMPONENTS, region);
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&x->mu);
	for (size_t g = 0; g < nc && !rc; g++) {
		const struct plan_replica *r = &plan->replicas[first[g]];
		const char *type = NULL;
		int cpus;
		int64_t mem;
		if (r->demand.tpu) {
			snprintf(why, whylen, "TPUs are not offered in region %s: its Slurm cluster has "
				 "GPUs and CPUs only.", region);
			rc = -1;
			break;
		}
		if (r->demand.accel_count && gres_type_of(&x->cfg, r->demand.accel_type, &type)) {
			snprintf(why, whylen, "Accelerator type %s is not available in region %s.",
				 r->demand.accel_type, region);
			rc = -1;
			break;
		}
		if (!x->inv_known)
			continue;
		shape_of(&x->cfg, r, &cpus, &mem);
		bool fits = false;
		int most_gpus = 0, most_cpus = 0;
		int64_t most_mem = 0;
		for (size_t i = 0; i < x->ninv; i++) {
			const struct slurm_node_info *n = &x->inv[i];
			bool typed = !r->demand.accel_count || !type || !strcmp(type, n->gres_type);
			if (!n->usable)
				continue;
			if (typed && n->gpus > most_gpus)
				most_gpus = n->gpus;
			most_cpus = n->cpus > most_cpus ? n->cpus : most_cpus;
			most_mem = n->memory_mb > most_mem ? n->memory_mb : most_mem;
			fits = fits || (typed && n->cpus >= cpus && n->memory_mb >= mem &&
					n->gpus >= r->demand.accel_count);
		}
		if (fits)
			continue;
		rc = -1;
		if (r->demand.accel_count > most_gpus)
			snprintf(why, whylen, "The requested resources are not available in region %s: "
				 "%d %s accelerators per replica, and no node of its Slurm cluster "
				 "(partition %s) has more than %d.", region, r->demand.accel_count,
				 r->demand.accel_type, x->cfg.partition ? x->cfg.partition : "default",
				 most_gpus);
		else
			snprintf(why, whylen, "The requested resources are not available in region %s: "
				 "%d CPUs and %lld MB of memory per replica (machine type %s), and no "
				 "node of its Slurm cluster (partition %s) has them (the most: %d CPUs, "
				 "%lld MB).", region, cpus, (long long)mem,
				 r->machine_type ? r->machine_type : "?",
				 x->cfg.partition ? x->cfg.partition : "default", most_cpus,
				 (long long)most_mem);
	}
	if (!rc && x->inv_known && nc > 1) {
		size_t usable = 0;
		for (size_t i = 0; i < x->ninv; i++)
			usable += x->inv[i].usable;
		if (nc > usable) {
			/* a heterogeneous job's components never share a node */
			snprintf(why, whylen, "The requested resources are not available in region %s: "
				 "the job's %zu kinds of replicas need %zu nodes of its Slurm cluster, "
				 "which has %zu.", region, nc, nc, usable);
			rc = -1;
		}
	}
	pthread_mutex_unlock(&x->mu);
	return rc;
}

/* --- the reconciler -------------------------------------------------------------- */

static void set_unavailable(struct slurm_backend *x, const char *why)
{
	pthread_mutex_lock(&x->mu);
	if (why && !*x->unavailable)
		x->unavailable_since = time(NULL);
	snprintf(x->unavailable, sizeof(x->unavailable), "%s", why ? why : "");
	pthread_mutex_unlock(&x->mu);
}

static int loop_open(void *ctx, char *err, size_t errlen)
{
	struct slurm_backend *x = ctx;

	if (!*x->tag) {
		char id[72];
		if (store_slurm_cluster_id(x->set->ctx.store, id, sizeof(id)) != STORE_OK || !*id) {
			snprintf(err, errlen, "the database did not say the cluster's id");
			return -1;
		}
		snprintf(x->tag, sizeof(x->tag), "%.32s/%s", id, x->cfg.name);
	}
	if (!x->client)
		x->client = slurm_client_new(&x->cfg.client);
	if (slurm_client_open(x->client, err, errlen)) {
		set_unavailable(x, err);
		return -1;
	}
	set_unavailable(x, NULL);
	log_info("slurm backend %s: slurmrestd at %s answers (schema %s)", x->cfg.name,
		 x->cfg.client.url, slurm_client_api(x->client)->version);
	x->poll_since = 0;	/* a full list first: take up every job again */
	return BGLOOP_NO_FD;
}

static void loop_close(void *ctx, const char *why)
{
	struct slurm_backend *x = ctx;
	if (why)
		set_unavailable(x, why);
}

/* Only the scheduler's leader reconciles: a server without a scheduler never does. */
static bool leader(const struct slurm_backend *x)
{
	return x->set->ctx.sched && sched_is_leader(x->set->ctx.sched);
}

static json_t *regions_json(const struct slurm_backend_config *c)
{
	json_t *a = json_array();
	for (size_t i = 0; i < c->nregions; i++)
		json_array_append_new(a, json_string(c->regions[i]));
	return a;
}

/*
 * While Slurm cannot be used: the backend's queued jobs say why (their
 * queue reason, a log line), and fail after unavailable_fail_seconds.
 */
static void note_unavailable(struct slurm_backend *x)
{
	char why[512];
	time_t since;
	json_t *regions = regions_json(&x->cfg), *jobs = NULL;
	char *rj = json_dumps(regions, JSON_COMPACT);

	pthread_mutex_lock(&x->mu);
	snprintf(why, sizeof(why), "%s", x->unavailable);
	since = x->unavailable_since;
	pthread_mutex_unlock(&x->mu);
	if (!*why || store_slurm_new_jobs(x->set->ctx.store, rj, 1000, &jobs) != STORE_OK)
		goto out;
	bool give_up = x->cfg.unavailable_fail_s > 0 &&
		       time(NULL) - since >= x->cfg.unavailable_fail_s;
	json_t *reasons = json_array(), *j;
	size_t i;
	json_array_foreach(jobs, i, j) {
		char *text = xasprintf("UNAVAILABLE: the Slurm cluster that serves region %s cannot "
				       "be used: %s", jstr(j, "region") ?: "", why);
		if (give_up) {
			bool moved;
			if (store_slurm_fail(x->set->ctx.store, json_integer_value(json_object_get(j, "id")),
					     text, &moved) == STORE_OK && moved)
				log_warn("slurm backend %s: job %s failed: Slurm unavailable for %lld s",
					 x->cfg.name, jstr(j, "job_id") ?: "?",
					 (long long)(time(NULL) - since));
		} else {
			json_array_append_new(reasons, json_pack("{s:O, s:s, s:s}", "job",
								 json_object_get(j, "id"), "code",
								 "backend", "text", text));
		}
		free(text);
	}
	if (json_array_size(reasons) && store_slurm_note_reasons(x->set->ctx.store, reasons) != STORE_OK)
		log_debug("slurm backend %s: could not write queue reasons", x->cfg.name);
	json_decref(reasons);
out:
	json_decref(jobs);
	json_decref(regions);
	free(rj);
}

static void refresh_inventory(struct slurm_backend *x)
{
	char err[512];
	int http;
	json_t *reply = NULL;
	struct slurm_node_info *inv = NULL;
	size_t n = 0;
	const struct slurm_api *api = slurm_client_api(x->client);

	x->inv_at_us = mono_usec();
	if (slurm_client_call(x->client, "GET", "/nodes", NULL, &http, &reply, err, sizeof(err)) ||
	    api->error(http, reply, err, sizeof(err)) != SLURM_OK ||
	    api->nodes(reply, x->cfg.partition, &inv, &n, err, sizeof(err)) != SLURM_OK) {
		log_warn("slurm backend %s: reading its nodes: %s", x->cfg.name, err);
		free(inv);
		json_decref(reply);
		return;
	}
	json_decref(reply);
	pthread_mutex_lock(&x->mu);
	free(x->inv);
	x->inv = inv;
	x->ninv = n;
	x->inv_known = true;
	pthread_mutex_unlock(&x->mu);
}

/* GET /jobs?update_time: a 304 keeps what is known. -1: Slurm cannot be used. */
static int poll_jobs(struct slurm_backend *x)
{
	char path[64], err[512];
	int http;
	json_t *reply = NULL;
	const struct slurm_api *api = slurm_client_api(x->client);
	long long start = (long long)time(NULL);

	snprintf(path, sizeof(path), "/jobs/?update_time=%lld", x->poll_since);
	if (slurm_client_call(x->client, "GET", path, NULL, &http, &reply, err, sizeof(err))) {
		bgloop_drop(x->loop, err);
		return -1;
	}
	if (http == 304) {
		json_decref(reply);
		return 0;
	}
	struct slurm_job_info *list = NULL;
	size_t n = 0;
	enum slurm_err e = api->error(http, reply, err, sizeof(err));
	if (e == SLURM_OK)
		e = api->jobs(reply, &list, &n, err, sizeof(err));
	json_decref(reply);
	if (e != SLURM_OK) {
		free(list);
		log_warn("slurm backend %s: GET /jobs: %s", x->cfg.name, err);
		if (e == SLURM_ERR_UNAVAILABLE)
			bgloop_drop(x->loop, err);
		return -1;
	}
	free(x->known);
	x->known = list;
	x->nknown = n;
	x->known_at = (time_t)start;
	x->known_complete = true;
	/* One second before this poll began: Slurm's clock is in whole seconds,
	 * and a change in this very second must show in the next poll. */
	x->poll_since = start - 1;
	return 0;
}

static const struct slurm_job_info *known_by_id(const struct slurm_backend *x, int64_t id)
{
	for (size_t i = 0; i < x->nknown; i++)
		if (x->known[i].job_id == id)
			return &x->known[i];
	return NULL;
}

static const struct slurm_job_info *known_by_comment(const struct slurm_backend *x,
						      const char *comment)
{
	const struct slurm_job_info *found = NULL;
	/* a leader (or a plain job); a live one before a dead one (a submit Slurm
	 * refused with 2014 still leaves a FAILED record with the comment) */
	for (size_t i = 0; i < x->nknown; i++)
		if (!strcmp(x->known[i].comment, comment) &&
		    (!x->known[i].het_job_id || x->known[i].het_job_id == x->known[i].job_id) &&
		    (!found || (slurm_state_final(found->state) &&
				!slurm_state_final(x->known[i].state))))
			found = &x->known[i];
	return found;
}

/* A new secret for a job's pilots: its token, and the hash the database keeps. */
static void pilot_secret(int64_t job, char token[128], char hash_hex[65])
{
	unsigned char raw[32], digest[SHA256_DIGEST_LENGTH];
	char hex[65];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		abort();
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(token, 128, "tpp1.%lld.%s", (long long)job, hex);
	SHA256((const unsigned char *)hex, 64, digest);
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(hash_hex + 2 * i, 3, "%02x", digest[i]);
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(hex, sizeof(hex));
}

/* "trainplane <cluster id>/<backend> job <id>": this installation's jobs,
 * told from another's that shares the Slurm cluster (loop_open() sets it). */
static const char *cluster_tag(const struct slurm_backend *x)
{
	return x->tag;
}

/* Writes what is known of a job's Slurm side; a failure is retried by the next turn. */
static void update(struct slurm_backend *x, int64_t job, const json_t *fields)
{
	if (store_slurm_update(x->set->ctx.store, job, fields) != STORE_OK)
		log_debug("slurm backend %s: could not record job %lld's Slurm side (next turn)",
			  x->cfg.name, (long long)job);
}

static void delete_job(struct slurm_backend *x, int64_t job, int64_t sid);

/*
 * Submits one claimed job (row: store_slurm_active's or new_jobs' shape,
 * with id or job). Plans it, translates it, writes a fresh secret's hash,
 * submits. Fails the job when Slurm can never run it.
 */
static void submit(struct slurm_backend *x, const json_t *job)
{
	const struct catalog *cat;
	struct snap_ref *ref = NULL;
	struct training_spec spec;
	struct job_plan plan = { 0 };
	struct slurm_translation t;
	char why[512], token[128], hash[65];
	int64_t id = json_integer_value(json_object_get(job, "id"));
	json_t *reply = NULL, *body = NULL, *fields = NULL;
	int http;

	cat = snapshot_acquire(x->set->ctx.catalogs, &ref);
	spec_parse_stored(json_object_get(job, "spec"), jstr(job, "region"), &spec);
	int planned = spec_plan_replicas(cat, &spec, json_object_get(job, "labels"), NULL, &plan, why,
					 sizeof(why));
	spec_release(&spec);
	if (planned)
		goto fail;
	pilot_secret(id, token, hash);
	if (slurm_translate(&x->cfg, &plan, job, cluster_tag(x), token, &t, why, sizeof(why)))
		goto fail;
	bool claimed = false;
	if (store_slurm_claim(x->set->ctx.store, id, x->cfg.name, t.slots, hash, &claimed) != STORE_OK)
		goto out_t;
	if (!claimed) {
		/* claimed before (a resubmit): a new secret for this submit */
		fields = json_pack("{s:s}", "token_hash", hash);
		if (store_slurm_update(x->set->ctx.store, id, fields) != STORE_OK)
			goto out_t;
	}
	body = slurm_client_api(x->client)->submit_body(&t.submit);
	if (slurm_client_call(x->client, "POST", "/job/submit", body, &http, &reply, why,
			      sizeof(why))) {
		bgloop_drop(x->loop, why);
		goto out_t;	/* its row stays "new": resubmitted, or found by its comment */
	}
	int64_t sid = 0;
	enum slurm_err e = slurm_client_api(x->client)->submit_result(http, reply, &sid, why,
								       sizeof(why));
	if (e == SLURM_OK) {
		json_decref(fields);
		fields = json_pack("{s:I, s:s}", "slurm_id", (json_int_t)sid, "state", "PENDING");
		atomic_fetch_add_explicit(&x->submitted, 1, memory_order_relaxed);
		if (store_slurm_update(x->set->ctx.store, id, fields) == STORE_OK)
			log_info("slurm backend %s: job %s submitted as Slurm job %lld (%zu component%s)",
				 x->cfg.name, jstr(job, "job_id") ?: "?", (long long)sid,
				 t.submit.ncomponents, t.submit.ncomponents == 1 ? "" : "s");
		goto out_t;
	}
	if (e == SLURM_ERR_UNAVAILABLE) {
		bgloop_drop(x->loop, why);
		goto out_t;
	}
	if (sid > 0)
		delete_job(x, id, sid);	/* accepted and pending for ever (2015): take it back */
	slurm_translation_release(&t);
	{
		char *m = xasprintf("The Slurm cluster that serves region %s cannot run the job: %s",
				    jstr(job, "region") ?: "", why);
		snprintf(why, sizeof(why), "%s", m);
		free(m);
	}
	goto fail_claimed;
out_t:
	slurm_translation_release(&t);
	goto out;
fail:
	/* a job Slurm can never run: claimed (so that it is not tried again) and failed */
	pilot_secret(id, token, hash);
	{
		bool took;
		json_t *none = json_array();
		if (store_slurm_claim(x->set->ctx.store, id, x->cfg.name, none, hash, &took) !=
		    STORE_OK) {
			json_decref(none);
			goto out;
		}
		json_decref(none);
	}
fail_claimed: {
		bool moved;
		atomic_fetch_add_explicit(&x->refused, 1, memory_order_relaxed);
		if (store_slurm_fail(x->set->ctx.store, id, why, &moved) == STORE_OK && moved)
			log_info("slurm backend %s: job %s failed: %s", x->cfg.name,
				 jstr(job, "job_id") ?: "?", why);
		json_decref(fields);
		fields = json_pack("{s:b}", "done", true);
		update(x, id, fields);
	}
out:
	explicit_bzero(token, sizeof(token));
	json_decref(fields);
	json_decref(body);
	json_decref(reply);
	job_plan_release(&plan);
	snapshot_release(ref);
}

static void delete_job(struct slurm_backend *x, int64_t job, int64_t sid)
{
	char path[48], err[512];
	int http;
	json_t *reply = NULL;

	snprintf(path, sizeof(path), "/job/%lld", (long long)sid);
	if (slurm_client_call(x->client, "DELETE", path, NULL, &http, &reply, err, sizeof(err))) {
		bgloop_drop(x->loop, err);
		return;
	}
	enum slurm_err e = slurm_client_api(x->client)->error(http, reply, err, sizeof(err));
	json_decref(reply);
	if (e != SLURM_OK && e != SLURM_ERR_NOT_FOUND) {
		log_warn("slurm backend %s: cancelling Slurm job %lld: %s", x->cfg.name,
			 (long long)sid, err);
		return;
	}
	json_t *f = json_pack("{s:b}", "cancel_sent", true);
	update(x, job, f);
	json_decref(f);
	log_info("slurm backend %s: Slurm job %lld cancelled (trainplane's job %lld ended or was "
		 "cancelled)", x->cfg.name, (long long)sid, (long long)job);
}

static double num_or(const json_t *o, const char *k, double def)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : def;
}

static void reconcile_one(struct slurm_backend *x, const json_t *row)
{
	int64_t job = json_integer_value(json_object_get(row, "job"));
	int64_t sid = json_integer_value(json_object_get(row, "slurm_id"));
	const char *jstate = jstr(row, "job_state") ?: "";
	char message[1024];
	json_t *f = NULL;

	if (!sid) {
		/* claimed, no Slurm id: its submit's answer was lost, or it is being made */
		char *comment = xasprintf("trainplane %s job %lld", cluster_tag(x), (long long)job);
		const struct slurm_job_info *found = known_by_comment(x, comment);
		free(comment);
		if (found) {
			f = json_pack("{s:I, s:s}", "slurm_id", (json_int_t)found->job_id, "state",
				      found->state_name);
			update(x, job, f);
			log_info("slurm backend %s: job %lld is Slurm job %lld (found by its comment)",
				 x->cfg.name, (long long)job, (long long)found->job_id);
		} else if (job_final(jstate) || !strcmp(jstate, "CANCELLING")) {
			f = json_pack("{s:b}", "done", true);
			update(x, job, f);
		} else if (num_or(row, "updated_s", 0) >= RESUBMIT_AFTER_S && x->known_complete &&
			   difftime(time(NULL), x->known_at) < RESUBMIT_AFTER_S / 2) {
			json_t *j = NULL;
			if (store_slurm_job(x->set->ctx.store, job, &j) == STORE_OK)
				submit(x, j);
			json_decref(j);
		}
		json_decref(f);
		return;
	}
	const struct slurm_job_info *info = known_by_id(x, sid);
	/* purged only if the list was read after the submit */
	bool complete = x->known_complete &&
			num_or(row, "submitted_s", 0) > difftime(time(NULL), x->known_at) + 2;
	enum slurm_action a = slurm_decide(jstate, jstr(row, "api") ?: "ml",
					   json_object_get(row, "spec"), sid,
					   (int)json_integer_value(json_object_get(row, "restart_cnt")),
					   json_is_true(json_object_get(row, "cancel_sent")) &&
					   num_or(row, "updated_s", 0) < RECANCEL_AFTER_S,
					   info, complete, message, sizeof(message));
	if (info && (strcmp(info->state_name, jstr(row, "state") ?: "") ||
		     strcmp(info->reason, jstr(row, "reason") ?: ""))) {
		f = json_pack("{s:s, s:s}", "state", info->state_name, "reason", info->reason);
		if (!slurm_state_final(info->state))
			json_object_set_new(f, "final_seen", json_false());
		update(x, job, f);
		json_decref(f);
		f = NULL;
	}
	bool moved = false;
	switch (a) {
	case SLURM_ACT_NONE:
		break;
	case SLURM_ACT_CANCEL:
		/* A job that ended on its own: its pilots are leaving, and Slurm should
		 * say COMPLETED, not CANCELLED. Cancelled ones go at once. */
		if ((!strcmp(jstate, "SUCCEEDED") || !strcmp(jstate, "FAILED")) && info &&
		    info->state == SLURM_RUNNING && num_or(row, "job_final_s", 1e9) < END_GRACE_S)
			break;
		delete_job(x, job, sid);
		break;
	case SLURM_ACT_CANCEL_FAIL:
		delete_job(x, job, sid);
		if (store_slurm_fail(x->set->ctx.store, job, message, &moved) == STORE_OK && moved)
			log_info("slurm backend %s: job %lld failed: %s", x->cfg.name, (long long)job,
				 message);
		break;
	case SLURM_ACT_REQUEUED: {
		char *text = xasprintf("The Slurm cluster requeued the job (Slurm job %lld, restart %d): "
				       "its replicas start again once the pilots of its previous run "
				       "are gone.", (long long)sid, info->restart_cnt);
		if (store_slurm_requeued(x->set->ctx.store, job, info->restart_cnt, text, &moved) ==
		    STORE_OK && moved) {
			atomic_fetch_add_explicit(&x->requeued, 1, memory_order_relaxed);
			log_info("slurm backend %s: %s", x->cfg.name, text);
		}
		free(text);
		break;
	}
	case SLURM_ACT_FAIL: {
		const json_t *seen = json_object_get(row, "final_seen_s");
		if (!json_is_number(seen)) {
			f = json_pack("{s:b}", "final_seen", true);
			update(x, job, f);
			bgloop_wake(x->loop);
		} else if (json_number_value(seen) >= FINAL_GRACE_S) {
			if (store_slurm_fail(x->set->ctx.store, job, message, &moved) == STORE_OK && moved) {
				atomic_fetch_add_explicit(&x->failed, 1, memory_order_relaxed);
				log_info("slurm backend %s: job %lld failed: %s", x->cfg.name,
					 (long long)job, message);
			}
		}
		break;
	}
	case SLURM_ACT_DONE:
		if (store_slurm_done(x->set->ctx.store, job) != STORE_OK)
			log_debug("slurm backend %s: job %lld: done not recorded (next turn)",
				  x->cfg.name, (long long)job);
		break;
	}
	json_decref(f);
}

static void loop_turn(void *ctx, short revents, struct bgloop_wait *wait)
{
	struct slurm_backend *x = ctx;
	json_t *active = NULL, *fresh = NULL, *row;
	size_t i;

	(void)revents;
	wait->deadline_us = bgloop_now(x->loop) + (int64_t)x->cfg.poll_ms * 1000;
	if (bgloop_stopping(x->loop))
		return;
	if (!bgloop_session(x->loop)) {
		/* (each second: it reads the queued jobs of the backend's regions) */
		if (leader(x) && mono_usec() - x->noted_at_us >= 1000000) {
			x->noted_at_us = mono_usec();
			note_unavailable(x);
		}
		return;
	}
	if (mono_usec() - x->inv_at_us >= INVENTORY_EVERY_US || !x->inv_known)
		refresh_inventory(x);
	if (!leader(x)) {
		x->poll_since = 0;	/* a new leader reads everything again */
		return;
	}
	time_t seen = x->known_at;
	if (poll_jobs(x))
		return;
	/* Every job's row when Slurm said something new, after a submit, and at
	 * least every second (trainplane's own intents: a cancel, a timeout). */
	if (x->known_at != seen || x->active_due || mono_usec() - x->active_at_us >= ACTIVE_EVERY_US) {
		x->active_at_us = mono_usec();
		x->active_due = false;
		if (store_slurm_active(x->set->ctx.store, x->cfg.name, &active) == STORE_OK)
			json_array_foreach(active, i, row)
				reconcile_one(x, row);
	}
	json_t *regions = regions_json(&x->cfg);
	char *rj = json_dumps(regions, JSON_COMPACT);
	if (store_slurm_new_jobs(x->set->ctx.store, rj, NEW_JOBS_PER_TURN, &fresh) == STORE_OK) {
		json_array_foreach(fresh, i, row)
			submit(x, row);
		if (json_array_size(fresh) == NEW_JOBS_PER_TURN)
			wait->deadline_us = bgloop_now(x->loop);	/* more are waiting */
		else if (json_array_size(fresh))
			x->active_due = true;	/* see them at the next turn */
	}
	free(rj);
	json_decref(regions);
	json_decref(fresh);
	json_decref(active);
}

static const struct bgloop_ops loop_ops = { loop_open, loop_close, loop_turn };

void slurm_backends_start(struct slurm_backends *b, const struct slurm_backends_ctx *ctx)
{
	if (!b || !b->n)
		return;
	b->ctx = *ctx;
	for (size_t i = 0; i < b->n; i++) {
		struct slurm_backend *x = &b->v[i];
		struct bgloop_config lc = { .name = x->cfg.name, .eager = true,
					    .backoff_min_us = 200000, .backoff_max_us = 5000000 };
		bgloop_start(&lc, &loop_ops, x, &x->loop);
	}
	b->started = true;
}

void slurm_backends_stop(struct slurm_backends *b)
{
	if (!b || !b->started)
		return;
	for (size_t i = 0; i < b->n; i++)
		bgloop_stop(b->v[i].loop);
	b->started = false;
}

void slurm_backends_metrics(struct slurm_backends *b, struct strbuf *sb)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{ "trainplane_slurm_jobs_submitted_total", "Jobs this server submitted to a Slurm backend.",
		  offsetof(struct slurm_backend, submitted) },
		{ "trainplane_slurm_jobs_refused_total", "Jobs failed because their Slurm backend can "
		  "never run them (refused at submit).", offsetof(struct slurm_backend, refused) },
		{ "trainplane_slurm_jobs_requeued_total", "Requeues of Slurm jobs (a new pilot "
		  "generation: the gang restarts).", offsetof(struct slurm_backend, requeued) },
		{ "trainplane_slurm_jobs_failed_total", "Jobs that failed because Slurm ended them "
		  "first (a time limit, a lost node, a cancel in Slurm, a purge).",
		  offsetof(struct slurm_backend, failed) },
	};
	if (!b || !b->n)
		return;
	metrics_family(sb, "trainplane_slurm_backend_up", "gauge",
		       "1 while the Slurm backend's slurmrestd answers and its release is supported.");
	for (size_t i = 0; i < b->n; i++) {
		struct strbuf l = STRBUF_INIT;
		pthread_mutex_lock(&b->v[i].mu);
		bool up = b->started && !*b->v[i].unavailable && *b->v[i].tag;
		pthread_mutex_unlock(&b->v[i].mu);
		metrics_label(&l, "backend", b->v[i].cfg.name);
		metrics_sample(sb, "trainplane_slurm_backend_up", sb_str(&l), up);
		sb_release(&l);
	}
	for (size_t k = 0; k < ARRAY_SIZE(counters); k++) {
		metrics_family(sb, counters[k].name, "counter", counters[k].help);
		for (size_t i = 0; i < b->n; i++) {
			struct strbuf l = STRBUF_INIT;
			const _Atomic uint64_t *v = (const _Atomic uint64_t *)((const char *)&b->v[i] +
									      counters[k].off);
			metrics_label(&l, "backend", b->v[i].cfg.name);
			metrics_sample_u64(sb, counters[k].name, sb_str(&l),
					   atomic_load_explicit(v, memory_order_relaxed));
			sb_release(&l);
		}
	}
}
