#include "api_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_ml.h"
#include "api_slurm.h"
#include "lease_batch.h"
#include "log.h"
#include "metrics.h"
#include "node_cache.h"
#include "scheduler.h"
#include "sim_fleet.h"
#include "slurm_backend.h"
#include "store_job.h"
#include "store_node.h"
#include "store_slurm.h"
#include "wire.h"

#define SYNC_MAX_WAIT_S 60

static const char *str_field(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static bool int_field(const json_t *o, const char *key, int64_t min, int64_t max, int64_t *out)
{
	const json_t *v = json_object_get(o, key);
	return v && !wire_int64_get(v, out) && *out >= min && *out <= max;
}

#define REPLICA_CLUSTERS_MAX 64

/*
 * What the agent says of its work dir: the cluster it was last bound to
 * (clusterId) and the replicas it holds per cluster (replicaClusters). Logs
 * those of other clusters: the agent leaves them alone (PROTOCOL.md).
 */
static void log_other_clusters(const char *node, const json_t *body, const char *cluster)
{
	const char *bound = str_field(body, "clusterId"), *id;
	const json_t *held = json_object_get(body, "replicaClusters"), *count;

	if (bound && strcmp(bound, cluster))
		log_warn("node %s: its agent was bound to cluster %s until now; this is cluster %s",
			 node, bound, cluster);
	json_object_foreach((json_t *)held, id, count) {
		int64_t n;
		if (!wire_int64_get(count, &n) && n > 0 && strcmp(id, cluster))
			log_warn("node %s: its work dir holds %lld replica%s of cluster %s, not of "
				 "this cluster (%s): the agent leaves %s alone", node, (long long)n,
				 n == 1 ? "" : "s", id, cluster, n == 1 ? "it" : "them");
	}
}

void api_agent_register(struct request *req)
{
	const json_t *b = req->json, *acc = json_object_get(b, "accelerators"),
		     *tpu = json_object_get(b, "tpu"), *ports = json_object_get(b, "portRange");
	struct violations vs = VIOLATIONS_INIT;
	struct node_info n = { .name = req->params[0] };
	int64_t vcpus = 0, mem = 0, lo = 0, hi = 0, count = 0, cores = 0, grace = 0;

	if (req->srv->emulator && sim_fleet_has_node(n.name)) {
		/* Two owners of one node would fight over it (each registration
		 * makes the other's syncs stale). */
		reply_error(req, API_INVALID_ARGUMENT, "Node names that start with \"sim-\" are the "
			    "emulator's simulated fleet's; register this node under another name.");
		return;
	}
	n.incarnation = str_field(b, "incarnation");
	n.region = str_field(b, "region");
	n.zone = str_field(b, "zone");
	n.machine_type = str_field(b, "machineType");
	n.address = str_field(b, "address");
	n.runtime = str_field(b, "runtime");
	n.agent_version = str_field(b, "agentVersion");
	n.disconnect_policy = str_field(b, "disconnectPolicy");
	if (!n.incarnation || !*n.incarnation)
		violations_add(&vs, "incarnation", "required");
	if (!n.region || !*n.region)
		violations_add(&vs, "region", "required");
	if (!n.zone || !*n.zone)
		violations_add(&vs, "zone", "required");
	if (!n.address || !*n.address)
		violations_add(&vs, "address", "required");
	if (!n.runtime || (strcmp(n.runtime, "process") && strcmp(n.runtime, "podman") &&
			   strcmp(n.runtime, "docker") && strcmp(n.runtime, "simulate")))
		violations_add(&vs, "runtime", "must be process, podman, docker or simulate");
	if (!int_field(b, "vcpus", 1, 1 << 20, &vcpus))
		violations_add(&vs, "vcpus", "a positive integer is required");
	if (!int_field(b, "memoryMb", 1, INT64_C(1) << 40, &mem))
		violations_add(&vs, "memoryMb", "a positive integer is required");
	if (json_array_size(ports) != 2 || wire_int64_get(json_array_get(ports, 0), &lo) ||
	    wire_int64_get(json_array_get(ports, 1), &hi) || lo < 1 || hi > 65535 || lo > hi)
		violations_add(&vs, "portRange", "must be [low, high] within 1-65535");
	if (acc && !json_is_null(acc)) {
		n.accel_type = str_field(acc, "type");
		if (!n.accel_type || !int_field(acc, "count", 0, 64, &count))
			violations_add(&vs, "accelerators", "needs a type and a count of 0 to 64");
	}
	if (tpu && !json_is_null(tpu)) {
		n.tpu_type = str_field(tpu, "type");
		if (!n.tpu_type || !int_field(tpu, "cores", 1, 2048, &cores))
			violations_add(&vs, "tpu", "needs a type and a number of cores");
	}
	/* Both optional: an agent that sends neither does not fence (before 010). */
	if (json_object_get(b, "stopGraceSeconds") &&
	    !int_field(b, "stopGraceSeconds", 0, 3600, &grace))
		violations_add(&vs, "stopGraceSeconds", "must be an integer from 0 to 3600");
	if (json_object_get(b, "disconnectPolicy") &&
	    (!n.disconnect_policy || (strcmp(n.disconnect_policy, "fence") &&
				      strcmp(n.disconnect_policy, "keep_running"))))
		violations_add(&vs, "disconnectPolicy", "must be fence or keep_running");
	const json_t *bound = json_object_get(b, "clusterId"),
		     *held = json_object_get(b, "replicaClusters");
	if (bound && !json_is_null(bound) && !wire_cluster_id_ok(json_string_value(bound)))
		violations_add(&vs, "clusterId", "must be 1 to 64 letters, digits, '-' or '_'");
	if (held && !json_is_null(held)) {
		const char *id;
		const json_t *held_n;
		bool ok = json_is_object(held) && json_object_size(held) <= REPLICA_CLUSTERS_MAX;
		json_object_foreach((json_t *)held, id, held_n) {
			int64_t c;
			ok = ok && wire_cluster_id_ok(id) && !wire_int64_get(held_n, &c) && c >= 0 &&
			     c <= 1000000;
		}
		if (!ok)
			violations_add(&vs, "replicaClusters",
				       "must map at most 64 cluster ids to counts of 0 to 1000000");
	}
	if (vs.n) {
		char *msg = api_violations_message(&vs);
		reply_violations(req, &vs, msg);
		free(msg);
		violations_release(&vs);
		return;
	}
	/* A node's own token bounds what the node may declare (the tokens file's
	 * inventory); the cluster token, the operator's own, does not. */
	if (req->caller && req->caller->kind == TOKEN_AGENT) {
		struct auth_node_claim claim = { vcpus, mem, n.accel_type, count, n.tpu_type, cores,
						 n.zone };
		char why[512];
		if (!auth_inventory_allows(req->caller, &claim, why, sizeof(why))) {
			log_warn("node %s: register refused: %s", n.name, why);
			reply_error(req, API_PERMISSION_DENIED, "The caller does not have permission "
				    "to register node %s with this inventory: %s.", n.name, why);
			return;
		}
	}
	/* A Slurm job's pilot declares what its job's row says (auth admitted
	 * the token for this node), in the job's own region; no other node may
	 * stand in a region a Slurm cluster serves. */
	const char *auth = req_header(req, "Authorization");
	const char *bearer = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
	char pilot_region[32];
	struct pilot_claim pilot = { 0 };
	bool is_pilot = false;
	if (api_slurm_pilot_token(bearer)) {
		bool ok = false;
		enum store_rc prc = api_slurm_pilot_check(req->srv->store, n.name, bearer, true, &ok,
							  &pilot);
		if (prc != STORE_OK || !ok) {
			if (prc != STORE_OK)
				reply_store_error(req, prc);
			else
				reply_error(req, API_UNAUTHENTICATED, "Request had invalid authentication "
					    "credentials: this pilot token is not valid for this node.");
			return;
		}
		if (count < pilot.accel_count) {
			reply_error(req, API_INVALID_ARGUMENT, "Pilot %s holds %lld GPUs and its replica "
				    "needs %d: Slurm bound fewer GPUs to the task than its job asked for.",
				    n.name, (long long)count, pilot.accel_count);
			return;
		}
		/* (pilot lives as long as n, which borrows its strings) */
		api_slurm_pilot_region(pilot.job, pilot_region, sizeof(pilot_region));
		n.region = n.zone = pilot_region;
		vcpus = pilot.vcpus;
		mem = pilot.memory_mb;
		n.accel_type = pilot.accel_count ? pilot.accel_type : NULL;
		count = pilot.accel_count;
		n.tpu_type = NULL;
		cores = 0;
		is_pilot = true;
	} else if (slurm_backends_serving(req->srv->slurm, n.region) ||
		   slurm_backends_serving(req->srv->slurm, n.zone) || !strncmp(n.region, "slurm-", 6)) {
		reply_error(req, API_INVALID_ARGUMENT, "Node %s cannot register in region %s: a Slurm "
			    "cluster serves it (docs/slurm.md), and its nodes are Slurm's.", n.name,
			    n.region);
		return;
	}
	n.vcpus = (int)vcpus;
	n.memory_mb = mem;
	n.port_lo = (int)lo;
	n.port_hi = (int)hi;
	n.accel_count = (int)count;
	n.tpu_cores = (int)cores;
	n.lease_s = req->srv->lease_s;
	n.stop_grace_s = (int)grace;
	if (!n.disconnect_policy)
		n.disconnect_policy = "keep_running";
	char cluster[72];
	enum store_rc rc = store_node_register(req->srv->store, &n, cluster, sizeof(cluster));
	if (rc == STORE_OK && is_pilot)
		rc = store_slurm_pilot_add(req->srv->store, n.name, pilot.job, pilot.restart,
					   pilot.slot);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("node %s registered (incarnation %s, %s/%s, %s, stop grace %ds, %s)", n.name,
		 n.incarnation, n.region, n.zone, n.runtime, n.stop_grace_s, n.disconnect_policy);
	log_other_clusters(n.name, b, cluster);
	sched_wake(req->srv->sched);
	reply_json(req, 200, json_pack("{s:s, s:s, s:i, s:i}", "node", n.name, "clusterId", cluster,
				       "syncIntervalSeconds", req->srv->sync_interval_s,
				       "leaseSeconds", req->srv->lease_s));
}

/* The desired set, and the lease this server grants (what the sync renewed). */
static void reply_desired(struct request *req, json_t *desired, int64_t version)
{
	char v[24];
	snprintf(v, sizeof(v), "%lld", (long long)version);
	reply_json(req, 200, json_pack("{s:s, s:o, s:i}", "desiredVersion", v, "replicas", desired,
				       "leaseSeconds", req->srv->lease_s));
}

/* The set did not change since the agent's version: replicas left out (PROTOCOL.md). */
static void reply_unchanged(struct request *req, int64_t version)
{
	char v[24];
	snprintf(v, sizeof(v), "%lld", (long long)version);
	reply_json(req, 200, json_pack("{s:s, s:i}", "desiredVersion", v,
				       "leaseSeconds", req->srv->lease_s));
}

/* A trial replica's measurements as the agent sends them (absent is fine). */
static bool metrics_ok(const json_t *m)
{
	size_t i;
	const json_t *p;

	if (!m)
		return true;
	if (!json_is_array(m) || json_array_size(m) > 100)
		return false;
	json_array_foreach(m, i, p) {
		if (!json_is_object(p) || json_object_size(p) != 2 ||
		    !json_is_integer(json_object_get(p, "step")) ||
		    !json_is_number(json_object_get(p, "value")))
			return false;
	}
	return true;
}

METRIC_COUNTER(syncs_quiet, "trainplane_agent_syncs_quiet_total",
	       "Agent syncs that changed nothing, answered from what the server knew of the node: "
	       "no transaction of their own, their lease renewed in a batch.")
METRIC_COUNTER(syncs_full, "trainplane_agent_syncs_full_total",
	       "Agent syncs that ran the sync's transaction (reports, a new desired set, a node "
	       "this server knew nothing of).")

/*
 * The digest of a sync's reports: their (replica, attempt, seq) in order,
 * what the sync dedupes on. 0 when one lacks them (never quiet).
 */
static uint64_t reports_digest(const json_t *reports)
{
	uint64_t x = 0xcbf29ce484222325ULL;	/* FNV-1a */
	size_t i;
	const json_t *r;

	json_array_foreach(reports, i, r) {
		const char *id = str_field(r, "replica");
		const json_t *attempt = json_object_get(r, "attempt"), *seq = json_object_get(r, "seq");
		if (!id || !json_is_integer(attempt) || !json_is_integer(seq))
			return 0;
		char num[48];
		int n = snprintf(num, sizeof(num), "\x1f%lld\x1f%lld\x1e",
				 (long long)json_integer_value(attempt),
				 (long long)json_integer_value(seq));
		for (const char *p = id; *p; p++)
			x = (x ^ (unsigned char)*p) * 0x100000001b3ULL;
		for (int k = 0; k < n; k++)
			x = (x ^ (unsigned char)num[k]) * 0x100000001b3ULL;
	}
	return x ? x : 1;
}

/*
 * A sync's state across its suspensions (req->ctx). A quiet sync (no
 * report, not stopping, a wait, the agent's desired version and
 * incarnation what the node cache knows) goes RENEWING: suspended until
 * the lease batch that renews it committed; then PARKED. A full sync that
 * parks goes PARKED too. A PARKED poll whose node did not move since stamp
 * is answered at its end without a read.
 */
enum sync_stage { SYNC_FULL, SYNC_RENEWING, SYNC_PARKED };
struct sync_ctx {
	enum sync_stage stage;
	bool renewed;		/* RENEWING: the batch renewed the lease */
	bool known;		/* PARKED: version and stamp are the node cache's */
	int64_t deadline;	/* when the poll's wait ends (mono_usec) */
	int64_t version;
	struct node_stamp stamp;
};

static struct sync_ctx *sync_ctx(struct request *req)
{
	if (!req->ctx) {
		req->ctx = xcalloc(1, sizeof(struct sync_ctx));
		req->ctx_free = free;
	}
	return req->ctx;
}

/* The lease batch's thread: the renewal is written (or not). */
static void lease_written(void *arg, bool renewed)
{
	struct request *req = arg;
	struct sync_ctx *sc = req->ctx;

	sc->renewed = renewed;
	http_resume(req);
}

/*
 * The sync's transaction (store_node_sync): with renew, the lease renewed
 * and the reports applied; without, the node as it is (a poll's end). Then
 * the answer, at once or after a park when may_park.
 */
static void sync_full(struct request *req, const char *node, const char *inc, bool renew,
		      bool may_park, int64_t wait)
{
	const char *known = str_field(req->json, "desiredVersion");
	json_t *reports = json_object_get(req->json, "replicas");
	const json_t *stopping = json_object_get(req->json, "stopping");
	int64_t version = 0;
	json_t *desired = NULL;
	bool changed;

	metric_add(&syncs_full, 1);
	struct node_stamp stamp = node_cache_stamp(req->srv->nodes, node);
	enum store_rc rc = store_node_sync(req->srv->store, node, inc, renew ? req->srv->lease_s : 0,
					   json_is_true(stopping), renew ? reports : NULL, &desired,
					   &version, &changed);
	if (rc == STORE_NOT_FOUND) {
		reply_error(req, API_NOT_FOUND, "Node %s is not registered.", node);
		return;
	}
	if (rc == STORE_STALE) {
		reply_error(req, API_ABORTED,
			    "Node %s is registered by another agent incarnation; register again.",
			    node);
		return;
	}
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	/* (its reports are applied: at this run, or at its first) */
	node_cache_fill(req->srv->nodes, node, stamp, inc, version, reports_digest(reports));
	/* (after the sync: the node is a registered one, its name checked then) */
	if (json_is_true(stopping) && renew)
		log_info("node %s is stopping (its agent is leaving in an orderly way): it takes no "
			 "new replica, and those it stops restart elsewhere", node);
	if (changed)
		sched_wake(req->srv->sched);	/* replicas ended: capacity freed */
	char v[24];
	snprintf(v, sizeof(v), "%lld", (long long)version);
	if (!may_park || changed || wait == 0 || !known || strcmp(known, v)) {
		reply_desired(req, desired, version);
		return;
	}
	struct sync_ctx *sc = sync_ctx(req);
	sc->stage = SYNC_PARKED;
	sc->version = version;
	sc->stamp = stamp;
	sc->known = !node_cache_moved(req->srv->nodes, node, stamp);
	if (!http_park(req, node, mono_usec() + wait * 1000000)) {
		reply_desired(req, desired, version);	/* shutting down: answer now */
		return;
	}
	json_decref(desired);
	/* A change committed between our read and the park would have been
	 * missed: look once more (in the node cache when it knows the node:
	 * a change heard since the stamp; else in the database). */
	if (sc->known) {
		if (node_cache_moved(req->srv->nodes, node, stamp))
			httpd_wake(req->srv->http, node);
		return;
	}
	int64_t now_version;
	if (store_node_version(req->srv->store, node, &now_version) == STORE_OK &&
	    now_version != version)
		httpd_wake(req->srv->http, node);
}

/*
 * A quiet sync whose lease batch is written: parked until its wait ends or
 * its node changes, answered at once if it changed meanwhile; the long way
 * if its lease was not renewed (an unknown node, another incarnation, the
 * batch failed), which renews it or says why not.
 */
static void sync_renewed(struct request *req, const char *node, const char *inc,
			 struct sync_ctx *sc, int64_t wait)
{
	if (!sc->renewed) {
		sc->stage = SYNC_FULL;
		sync_full(req, node, inc, true, true, wait);
		return;
	}
	metric_add(&syncs_quiet, 1);
	if (node_cache_moved(req->srv->nodes, node, sc->stamp)) {
		sync_full(req, node, inc, false, false, wait);	/* the lease is written */
		return;
	}
	sc->stage = SYNC_PARKED;
	sc->known = true;
	if (!http_park(req, node, sc->deadline)) {
		reply_unchanged(req, sc->version);	/* shutting down: answer now */
		return;
	}
	if (node_cache_moved(req->srv->nodes, node, sc->stamp))
		httpd_wake(req->srv->http, node);
}

void api_agent_sync(struct request *req)
{
	const char *node = req->params[0];
	const char *inc = str_field(req->json, "incarnation");
	const char *known = str_field(req->json, "desiredVersion");
	json_t *reports = json_object_get(req->json, "replicas");
	struct sync_ctx *sc = req->ctx;
	int64_t wait = 0;

	if (!inc) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: incarnation Error: required");
		return;
	}
	if (reports && !json_is_array(reports)) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: replicas Error: must be an array");
		return;
	}
	size_t ri;
	json_t *rep;
	json_array_foreach(reports, ri, rep) {
		if (!metrics_ok(json_object_get(rep, "metrics"))) {
			reply_error(req, API_INVALID_ARGUMENT, "Field: replicas[%zu].metrics Error: must be "
				    "an array of at most 100 {\"step\": integer, \"value\": number}", ri);
			return;
		}
	}
	/* A poll held past the lease would outlive it: the agent fences when
	 * its lease passes, counted from when it sent this request. */
	int max_wait = req->srv->lease_s < SYNC_MAX_WAIT_S ? req->srv->lease_s : SYNC_MAX_WAIT_S;
	if (json_object_get(req->json, "waitSeconds") &&
	    !int_field(req->json, "waitSeconds", 0, max_wait, &wait)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: waitSeconds Error: must be an integer from 0 to %d (at most the "
			    "lease, %d seconds)", max_wait, req->srv->lease_s);
		return;
	}
	const json_t *stopping = json_object_get(req->json, "stopping");
	if (stopping && !json_is_boolean(stopping)) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: stopping Error: must be true or false");
		return;
	}
	if (req->resumed && sc && sc->stage == SYNC_RENEWING) {
		sync_renewed(req, node, inc, sc, wait);
		return;
	}
	if (req->resumed) {
		/* The poll's end (its wait, news, or its client's FIN). Nothing
		 * changed since what it was told: the answer needs no read. Else
		 * the set is read; the reports were applied already, and the
		 * lease is not renewed: the agent was alive when the request
		 * arrived (the lease was renewed then), not necessarily now; a
		 * dead agent's parked poll must not keep its node alive. */
		if (sc && sc->stage == SYNC_PARKED && sc->known &&
		    !node_cache_moved(req->srv->nodes, node, sc->stamp))
			reply_unchanged(req, sc->version);
		else
			sync_full(req, node, inc, false, false, wait);
		return;
	}
	/* A quiet sync (no report, or only the reports of the node's last
	 * full sync again): renewed in the next lease batch, answered after it. */
	char cached_inc[256];
	int64_t version;
	uint64_t applied;
	struct node_stamp stamp;
	if (req->srv->leases && wait > 0 && !json_is_true(stopping) && known &&
	    node_cache_get(req->srv->nodes, node, cached_inc, sizeof(cached_inc), &version, &applied,
			   &stamp) && !strcmp(cached_inc, inc) &&
	    (!json_array_size(reports) || (applied && reports_digest(reports) == applied))) {
		char v[24];
		snprintf(v, sizeof(v), "%lld", (long long)version);
		if (!strcmp(known, v)) {
			sc = sync_ctx(req);
			sc->stage = SYNC_RENEWING;
			sc->deadline = mono_usec() + wait * 1000000;
			sc->version = version;
			sc->stamp = stamp;
			http_suspend(req);
			lease_batch_renew(req->srv->leases, node, inc, lease_written, req);
			return;
		}
	}
	sync_full(req, node, inc, true, true, wait);
}

void api_nodes_list(struct request *req)
{
	json_t *nodes;
	enum store_rc rc = store_node_list(req->srv->store, &nodes);

	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	if (json_array_size(nodes))
		reply_json(req, 200, json_pack("{s:o}", "nodes", nodes));
	else {
		json_decref(nodes);
		reply_json(req, 200, json_object());
	}
}

static void set_draining(struct request *req, bool draining)
{
	json_t *node;
	enum store_rc rc = store_node_set_draining(req->srv->store, req->params[0], draining, &node);

	if (rc == STORE_NOT_FOUND) {
		reply_error(req, API_NOT_FOUND, "Node %s was not found.", req->params[0]);
		return;
	}
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("node %s %s", req->params[0], draining ? "draining" : "undrained");
	sched_wake(req->srv->sched);
	reply_json(req, 200, node);
}

void api_nodes_drain(struct request *req)
{
	set_draining(req, true);
}

void api_nodes_undrain(struct request *req)
{
	set_draining(req, false);
}

/*
 * The job a replicas list names, in project: "projects/P/jobs/ID" (ml) or
 * "projects/P/locations/L/{customJobs,trainingPipelines,
 * hyperparameterTuningJobs}/N" (Vertex). Fills key (pointing into buf)
 * and *region (NULL: any); false when name is neither.
 */
static bool replicas_job(const char *project, const char *name, char *buf, size_t len,
			 struct job_key *key, const char **region)
{
	static const char *const vertex[] = { "customJobs", "trainingPipelines",
					      "hyperparameterTuningJobs" };
	size_t plen = strlen(project);

	if (!name || strncmp(name, "projects/", 9) || strncmp(name + 9, project, plen) ||
	    name[9 + plen] != '/' || strlen(name) >= len)
		return false;
	strcpy(buf, name + 10 + plen);
	*key = (struct job_key){ "ml", project, NULL };
	*region = NULL;
	if (!strncmp(buf, "jobs/", 5)) {
		key->job_id = buf + 5;
		return api_ml_job_id_valid(key->job_id);
	}
	char *loc = buf + 10, *kind = strchr(loc, '/'), *id = kind ? strchr(kind + 1, '/') : NULL;
	if (strncmp(buf, "locations/", 10) || !id || !id[1] || id[strspn(id + 1, "0123456789") + 1])
		return false;
	*kind++ = '\0';
	*id++ = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(vertex); i++)
		if (!strcmp(kind, vertex[i]) && *loc && loc[strspn(loc, "abcdefghijklmnopqrstuvwxyz0123456789-")] == '\0') {
			*key = (struct job_key){ "vertex", project, id };
			*region = loc;
			return strlen(id) <= 19;
		}
	return false;
}

void api_replicas_list(struct request *req)
{
	const char *name = req_query(req, "job");
	char buf[512];
	struct job_key key;
	const char *region;
	json_t *replicas;

	if (!replicas_job(req->params[0], name, buf, sizeof(buf), &key, &region)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: job Error: name a job of project %s: projects/%s/jobs/ID, or "
			    "projects/%s/locations/LOCATION/customJobs/ID (trainingPipelines, "
			    "hyperparameterTuningJobs).", req->params[0], req->params[0], req->params[0]);
		return;
	}
	enum store_rc rc = store_replica_list(req->srv->store, &key, region, &replicas);
	if (rc == STORE_NOT_FOUND) {
		reply_error(req, API_NOT_FOUND, "The job %s was not found.", name);
		return;
	}
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	reply_json(req, 200, json_pack("{s:o}", "replicas", replicas));
}
