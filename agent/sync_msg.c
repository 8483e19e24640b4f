/*
 * sync_msg.c - building and parsing the agent protocol's JSON.
 */
#include "sync_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_pkg.h"
#include "simulate_script.h"
#include "wire.h"

json_t *sync_register_body(const struct agent_config *cfg, const char *incarnation,
			   const char *gpu_type, int gpu_count)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:[i,i], s:s, s:s}",
			      "incarnation", incarnation, "region", cfg->region ? cfg->region : "",
			      "zone", cfg->zone ? cfg->zone : "", "vcpus", cfg->vcpus,
			      "memoryMb", cfg->memory_mb, "address", cfg->address,
			      "portRange", cfg->port_min, cfg->port_max,
			      "runtime", agent_runtime_name(cfg->runtime),
			      "agentVersion", AGENT_VERSION);
	json_object_set_new(o, "stopGraceSeconds", json_integer(cfg->stop_grace_seconds));
	json_object_set_new(o, "disconnectPolicy",
			    json_string(cfg->fence ? "fence" : "keep_running"));
	if (cfg->machine_type)
		json_object_set_new(o, "machineType", json_string(cfg->machine_type));
	if (gpu_type && gpu_count > 0)
		json_object_set_new(o, "accelerators",
				    json_pack("{s:s, s:i}", "type", gpu_type, "count", gpu_count));
	if (cfg->tpu_type)
		json_object_set_new(o, "tpu", json_pack("{s:s, s:i}", "type", cfg->tpu_type,
							"cores", cfg->tpu_cores));
	return o;
}

void sync_register_clusters(json_t *body, const char *bound, const struct replica *adopted,
			    const struct replica *foreign)
{
	json_t *held = json_object();
	const struct replica *lists[] = { adopted, foreign };

	if (bound && *bound)
		json_object_set_new(body, "clusterId", json_string(bound));
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++) {
		for (const struct replica *r = lists[k]; r; r = r->next) {
			if (!r->cluster || !wire_cluster_id_ok(r->cluster))
				continue;
			json_t *n = json_object_get(held, r->cluster);
			if (n)
				json_integer_set(n, json_integer_value(n) + 1);
			else if (json_object_size(held) < SYNC_REPLICA_CLUSTERS_MAX)
				json_object_set_new(held, r->cluster, json_integer(1));
		}
	}
	if (json_object_size(held))
		json_object_set_new(body, "replicaClusters", held);
	else
		json_decref(held);
}

int sync_parse_register(const char *body, size_t len, int *interval, int *lease,
			char *cluster_id, size_t cluster_id_len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *o = json_loadb(body, len, 0, &jerr);
	json_int_t i = *interval, l = *lease;
	const char *cluster = NULL;
	int rc = -1;

	if (!o) {
		snprintf(err, errlen, "register answer: invalid JSON at line %d column %d: %s",
			 jerr.line, jerr.column, jerr.text);
		return -1;
	}
	if (json_unpack_ex(o, &jerr, 0, "{s?I, s?I, s?s}", "syncIntervalSeconds", &i,
			   "leaseSeconds", &l, "clusterId", &cluster)) {
		snprintf(err, errlen, "register answer: %s", jerr.text);
		goto out;
	}
	if (cluster && (!wire_cluster_id_ok(cluster) || strlen(cluster) >= cluster_id_len)) {
		snprintf(err, errlen, "register answer: clusterId '%.80s' is not 1 to %d letters, "
			 "digits, '-' or '_'", cluster, SYNC_CLUSTER_ID_MAX);
		goto out;
	}
	if (i < 1 || i > 3600) {
		snprintf(err, errlen, "register answer: syncIntervalSeconds %lld out of range",
			 (long long)i);
		goto out;
	}
	/* An int: 4294967296 must not become 0, nor 2147483648 a negative lease. */
	if (l < 1 || l > 86400) {
		snprintf(err, errlen, "register answer: leaseSeconds %lld out of range",
			 (long long)l);
		goto out;
	}
	*interval = (int)i;
	*lease = (int)l;
	snprintf(cluster_id, cluster_id_len, "%s", cluster ? cluster : "");
	rc = 0;
out:
	json_decref(o);
	return rc;
}

static json_t *time_or_null(int64_t usec)
{
	char ts[48];
	if (!usec)
		return json_null();
	wire_time_format(usec, ts, sizeof(ts));
	return json_string(ts);
}

json_t *sync_report(const struct replica *r)
{
	enum replica_state st = r->rep_valid ? r->rep_state : r->state;
	/* A replica the node stopped (its fence, or its agent's orderly stop)
	 * did not end by itself, whatever its status: LOST (the server
	 * restarts it), never an exit that could end its job. */
	json_t *o = json_pack("{s:s, s:i, s:I, s:s}", "replica", r->id, "attempt", r->attempt,
			      "seq", (json_int_t)r->seq, "state",
			      st == REPLICA_EXITED && (r->fenced || r->node_stopped) ? "LOST" :
			      replica_state_name(st));
	if (st == REPLICA_EXITED)
		json_object_set_new(o, "exitCode", json_integer(r->rep_valid ? r->rep_exit :
								  r->exit_code));
	json_object_set_new(o, "message", json_string(r->message && (st == REPLICA_EXITED ||
							  st == REPLICA_FAILED_TO_START) ? r->message : ""));
	json_object_set_new(o, "startTime", time_or_null(r->start_usec));
	json_object_set_new(o, "endTime", time_or_null(st == REPLICA_EXITED ||
						       st == REPLICA_FAILED_TO_START ? r->end_usec : 0));
	json_object_set_new(o, "logs", r->batch ? json_incref(r->batch) : json_array());
	if (r->metrics)
		json_object_set_new(o, "metrics", json_incref(r->metrics));
	return o;
}

void desired_set_release(struct desired_set *ds)
{
	for (size_t i = 0; i < ds->n; i++)
		desired_replica_release(&ds->v[i]);
	free(ds->v);
	free(ds->version);
	memset(ds, 0, sizeof(*ds));
}

const struct desired_replica *desired_find(const struct desired_set *ds, const char *id,
					   int attempt)
{
	for (size_t i = 0; i < ds->n; i++)
		if (ds->v[i].attempt == attempt && !strcmp(ds->v[i].replica, id))
			return &ds->v[i];
	return NULL;
}

/* A JSON array of strings (NULL/absent: empty) into a NULL-terminated vector. */
static int str_array(json_t *a, const char *what, char ***out, char *err, size_t errlen)
{
	size_t i;
	json_t *v;
	if (a && !json_is_array(a)) {
		snprintf(err, errlen, "'%s' is not an array", what);
		return -1;
	}
	*out = xcalloc(json_array_size(a) + 1, sizeof(char *));
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "'%s'[%zu] is not a string", what, i);
			return -1;
		}
		(*out)[i] = xstrdup(json_string_value(v));
	}
	return 0;
}

static int int_array(json_t *a, const char *what, int **out, size_t *n, char *err,
		     size_t errlen)
{
	size_t i;
	json_t *v;
	if (a && !json_is_array(a)) {
		snprintf(err, errlen, "'%s' is not an array", what);
		return -1;
	}
	*n = json_array_size(a);
	*out = xcalloc(*n + 1, sizeof(int));
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 65535) {
			snprintf(err, errlen, "'%s'[%zu] is not a small integer", what, i);
			return -1;
		}
		(*out)[i] = (int)json_integer_value(v);
	}
	return 0;
}

/* An optional string member of o into *out (NULL when absent, null or ""). */
static int opt_string(json_t *o, const char *key, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (v && !json_is_string(v) && !json_is_null(v)) {
		snprintf(err, errlen, "'pythonRuntime.%s' is not a string", key);
		return -1;
	}
	*out = v && json_is_string(v) && json_string_length(v) ? xstrdup(json_string_value(v)) :
								     NULL;
	return 0;
}

/*
 * A trainer package replica's "packages", "pythonModule" and
 * "pythonRuntime" (agent/PROTOCOL.md). Only their types are the answer's:
 * a value the job chose (a URI outside the storage root, a module that is
 * no module name) fails that replica at start, never the whole answer.
 */
static int parse_python(json_t *packages, json_t *module, json_t *pyrt,
			struct desired_replica *d, char *err, size_t errlen)
{
	if (!packages || json_is_null(packages))
		return 0;	/* not a package replica: the other two are not read */
	if (json_array_size(packages) > PYPKG_MAX_PACKAGES) {
		snprintf(err, errlen, "'packages' has %zu entries: at most %d",
			 json_array_size(packages), PYPKG_MAX_PACKAGES);
		return -1;
	}
	if (str_array(packages, "packages", &d->packages, err, errlen))
		return -1;
	if (!json_is_string(module)) {
		snprintf(err, errlen, "'pythonModule' is not a string");
		return -1;
	}
	d->python_module = xstrdup(json_string_value(module));
	if (pyrt && !json_is_object(pyrt) && !json_is_null(pyrt)) {
		snprintf(err, errlen, "'pythonRuntime' is not an object");
		return -1;
	}
	if (json_is_object(pyrt) &&
	    (opt_string(pyrt, "runtimeVersion", &d->runtime_version, err, errlen) ||
	     opt_string(pyrt, "pythonVersion", &d->python_version, err, errlen) ||
	     opt_string(pyrt, "executorImageUri", &d->executor_image, err, errlen)))
		return -1;
	return 0;
}

static int parse_desired(json_t *o, size_t idx, struct desired_replica *d, char *err,
			 size_t errlen)
{
	json_error_t jerr;
	const char *id = NULL, *desired = NULL, *job = NULL, *role = NULL, *image = NULL;
	json_t *command = NULL, *args = NULL, *env = NULL, *gpus = NULL, *ports = NULL;
	json_t *sim = NULL, *packages = NULL, *module = NULL, *pyrt = NULL, *buckets = NULL;
	json_int_t attempt = 0, index = 0;
	char why[160];

	if (json_unpack_ex(o, &jerr, 0,
			   "{s:s, s:I, s:s, s?s, s?s, s?I, s?s, s?o, s?o, s?o, s?o, s?o, s?o,"
			   " s?o, s?o, s?o, s?o}",
			   "replica", &id, "attempt", &attempt, "desired", &desired, "job", &job,
			   "role", &role, "index", &index, "image", &image, "command", &command,
			   "args", &args, "env", &env, "gpus", &gpus, "ports", &ports,
			   "simulate", &sim, "packages", &packages, "pythonModule", &module,
			   "pythonRuntime", &pyrt, "buckets", &buckets)) {
		snprintf(err, errlen, "replicas[%zu]: %s", idx, jerr.text);
		return -1;
	}
	if (!*id || strchr(id, '/') || !strcmp(id, ".") || !strcmp(id, "..") ||
	    strlen(id) > 200) {
		snprintf(err, errlen, "replicas[%zu]: bad replica name '%s'", idx, id);
		return -1;
	}
	if (attempt < 0 || attempt > 1000000) {
		snprintf(err, errlen, "replicas[%zu]: attempt %lld out of range", idx,
			 (long long)attempt);
		return -1;
	}
	if (strcmp(desired, "RUN") && strcmp(desired, "STOP")) {
		snprintf(err, errlen, "replicas[%zu]: desired '%s' is neither RUN nor STOP", idx,
			 desired);
		return -1;
	}
	d->replica = xstrdup(id);
	d->attempt = (int)attempt;
	d->run = !strcmp(desired, "RUN");
	d->job = job ? xstrdup(job) : NULL;
	d->role = role ? xstrdup(role) : NULL;
	d->index = (int)index;
	d->image = image ? xstrdup(image) : NULL;
	if (str_array(command, "command", &d->command, why, sizeof(why)) ||
	    str_array(args, "args", &d->args, why, sizeof(why)) ||
	    str_array(env, "env", &d->env, why, sizeof(why)) ||
	    int_array(gpus, "gpus", &d->gpus, &d->ngpus, why, sizeof(why)) ||
	    int_array(ports, "ports", &d->ports, &d->nports, why, sizeof(why)) ||
	    (buckets && !json_is_null(buckets) &&
	     str_array(buckets, "buckets", &d->buckets, why, sizeof(why)))) {
		snprintf(err, errlen, "replicas[%zu]: %s", idx, why);
		return -1;
	}
	if (parse_python(packages, module, pyrt, d, why, sizeof(why))) {
		snprintf(err, errlen, "replicas[%zu]: %s", idx, why);
		return -1;
	}
	if (sim && json_is_string(sim)) {
		if (simulate_script_parse(json_string_value(sim), &d->sim_seconds, &d->sim_exit)) {
			snprintf(err, errlen, "replicas[%zu]: bad simulate script '%s'", idx,
				 json_string_value(sim));
			return -1;
		}
		d->has_simulate = true;
	} else if (sim && json_is_object(sim)) {
		/* The server's rules (docs/emulator.md): no seconds is the agent's
		 * default; "hang" runs until stopped (a year); "preempt" and
		 * "metric" are the simulated fleet's, played here as an exit. */
		double sec = -1;
		int code = 0;
		const char *outcome = NULL;
		if (json_unpack_ex(sim, &jerr, 0, "{s?F, s?i, s?s}", "seconds", &sec, "exitCode",
				   &code, "outcome", &outcome) || sec > 86400.0 * 365 || code < 0 ||
		    code > 255 || (sec < 0 && json_object_get(sim, "seconds"))) {
			snprintf(err, errlen, "replicas[%zu]: bad simulate object", idx);
			return -1;
		}
		if (outcome && !strcmp(outcome, "hang"))
			sec = 86400.0 * 365;
		d->sim_seconds = sec;
		d->sim_exit = code;
		d->has_simulate = true;
	} else if (sim && !json_is_null(sim)) {
		snprintf(err, errlen, "replicas[%zu]: 'simulate' is neither an object nor a string",
			 idx);
		return -1;
	}
	return 0;
}

int sync_parse_answer(const char *body, size_t len, struct desired_set *out, char *err,
		      size_t errlen)
{
	json_error_t jerr;
	json_t *o = json_loadb(body, len, 0, &jerr), *reps = NULL, *ver = NULL, *v;
	size_t i;
	int rc = -1;

	desired_set_release(out);
	if (!o) {
		snprintf(err, errlen, "sync answer: invalid JSON at line %d column %d: %s",
			 jerr.line, jerr.column, jerr.text);
		return -1;
	}
	json_int_t lease = 0;
	if (json_unpack_ex(o, &jerr, 0, "{s?o, s?o, s?I}", "desiredVersion", &ver, "replicas", &reps,
			   "leaseSeconds", &lease)) {
		snprintf(err, errlen, "sync answer: %s", jerr.text);
		goto out;
	}
	if (lease < 0 || lease > 86400) {
		snprintf(err, errlen, "sync answer: leaseSeconds %lld out of range", (long long)lease);
		goto out;
	}
	out->lease_s = (int)lease;
	if (ver && json_is_string(ver))
		out->version = xstrdup(json_string_value(ver));
	else if (ver && json_is_integer(ver))
		out->version = xasprintf("%lld", (long long)json_integer_value(ver));
	else if (ver && !json_is_null(ver)) {
		snprintf(err, errlen, "sync answer: desiredVersion is neither a string nor a number");
		goto out;
	}
	if (reps && !json_is_array(reps) && !json_is_null(reps)) {
		snprintf(err, errlen, "sync answer: replicas is not an array");
		goto out;
	}
	out->has_replicas = reps && json_is_array(reps);
	out->v = xcalloc(json_array_size(reps) + 1, sizeof(*out->v));
	json_array_foreach(reps, i, v) {
		if (!json_is_object(v)) {
			snprintf(err, errlen, "sync answer: replicas[%zu] is not an object", i);
			goto out;
		}
		out->n = i + 1;
		if (parse_desired(v, i, &out->v[i], err, errlen))
			goto out;
	}
	rc = 0;
out:
	if (rc)
		desired_set_release(out);
	json_decref(o);
	return rc;
}
