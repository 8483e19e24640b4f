/*
 * replica.c - replica records, their directory, status file and exit file
 * (the log file: replica_log.c).
 */
#include "replica.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/*
 * The states an agent's replica is in, and so the ones its status file may
 * hold: PENDING only before runtime_start() (never saved), LOST only in
 * the database (the agent reports a replica its node stopped as LOST, see
 * sync_report()).
 */
static bool replica_state_saved(enum replica_state s)
{
	return s == REPLICA_STARTING || s == REPLICA_RUNNING || s == REPLICA_EXITED ||
	       s == REPLICA_FAILED_TO_START;
}

/* The causes the agent itself applies: a new attempt is a new record, and
 * a loss is the server's word (or a report of an EXITED one). */
static bool agent_cause(enum replica_cause c)
{
	return c == REPLICA_CAUSE_START || c == REPLICA_CAUSE_RUN || c == REPLICA_CAUSE_EXIT ||
	       c == REPLICA_CAUSE_FAIL_START;
}

bool replica_transition(struct replica *r, enum replica_cause cause)
{
	enum replica_state to = replica_state_after(r->state, cause);
	if (to == REPLICA_STATE_UNSPECIFIED || !agent_cause(cause)) {
		log_error("replica %s.%d: %s refused in %s: no edge of the replica state machine "
			  "(lib/replica_state.c) the agent takes; it stays %s", r->id, r->attempt,
			  replica_cause_name(cause) ? replica_cause_name(cause) : "an unknown cause",
			  replica_state_name(r->state), replica_state_name(r->state));
		return false;
	}
	r->state = to;
	return true;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void desired_replica_release(struct desired_replica *d)
{
	if (!d)
		return;
	free(d->replica);
	free(d->job);
	free(d->role);
	free(d->image);
	strv_free(d->command);
	strv_free(d->args);
	strv_free(d->env);
	strv_free(d->packages);
	strv_free(d->buckets);
	free(d->python_module);
	free(d->runtime_version);
	free(d->python_version);
	free(d->executor_image);
	free(d->gpus);
	free(d->ports);
	memset(d, 0, sizeof(*d));
}

struct replica *replica_new(const char *work_dir, const char *id, int attempt,
			    enum agent_runtime rt)
{
	struct replica *r = xcalloc(1, sizeof(*r));
	r->id = xstrdup(id);
	r->attempt = attempt;
	r->runtime = rt;
	r->dir = xasprintf("%s/replicas/%s.%d", work_dir, id, attempt);
	r->state = REPLICA_PENDING;	/* the machine's start: not yet started */
	return r;
}

void replica_free(struct replica *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->dir);
	free(r->cluster);
	free(r->message);
	free(r->container);
	free(r->trial_id);
	free(r->metric_tag);
	json_decref(r->metrics);
	json_decref(r->batch);
	free(r);
}

char *replica_path(const struct replica *r, const char *name)
{
	return xasprintf("%s/%s", r->dir, name);
}

int replica_mkdir(const struct replica *r)
{
	char *work = replica_path(r, "work");
	int rc = mkdir_p(work);
	free(work);
	return rc;
}

int replica_write_atomic(const char *path, const char *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = -1;
	if (fd < 0)
		goto out;
	while (len) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			goto out;
		}
		data += w;
		len -= (size_t)w;
	}
	if (close(fd) || rename(tmp, path))
		goto out;
	rc = 0;
out:
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

int replica_save(const struct replica *r)
{
	json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:I,"
			      " s:i, s:i, s:I, s:i, s:f, s:i}",
			      "replica", r->id, "attempt", r->attempt,
			      "runtime", agent_runtime_name(r->runtime),
			      "state", replica_state_name(r->state), "exitCode", r->exit_code,
			      "startUsec", (json_int_t)r->start_usec,
			      "endUsec", (json_int_t)r->end_usec,
			      "seq", (json_int_t)r->seq, "ackedSeq", (json_int_t)r->acked_seq,
			      "logOffset", (json_int_t)r->log_off,
			      "stopping", r->stopping, "killed", r->killed,
			      "killUsec", (json_int_t)r->kill_usec,
			      "shimPid", (int)r->shim_pid, "pgid", (int)r->pgid,
			      "shimStart", (json_int_t)r->shim_start,
			      "simExit", r->sim_exit, "simSeconds", r->sim_seconds,
			      "helperPid", (int)r->helper_pid);
	int rc = -1;
	if (!o)
		goto out;
	if (r->message)
		json_object_set_new(o, "message", json_string(r->message));
	if (r->container)
		json_object_set_new(o, "container", json_string(r->container));
	if (r->fenced)
		json_object_set_new(o, "fenced", json_true());
	if (r->node_stopped)
		json_object_set_new(o, "nodeStopped", json_true());
	if (r->trial_id)
		json_object_set_new(o, "trial", json_string(r->trial_id));
	if (r->metric_tag)
		json_object_set_new(o, "metricTag", json_string(r->metric_tag));
	if (r->python_package)
		json_object_set_new(o, "pythonPackage", json_true());
	if (r->cluster)
		json_object_set_new(o, "cluster", json_string(r->cluster));
	json_object_set_new(o, "helperStart", json_integer((json_int_t)r->helper_start));
	char *text = json_dumps(o, JSON_COMPACT);
	char *path = replica_path(r, "status.json");
	if (text)
		rc = replica_write_atomic(path, text, strlen(text));
	if (rc)
		log_error("replica %s.%d: cannot write %s: %s", r->id, r->attempt, path,
			  strerror(errno));
	free(path);
	free(text);
out:
	json_decref(o);
	return rc;
}

struct replica *replica_load(const char *dir)
{
	char *path = xasprintf("%s/status.json", dir);
	json_error_t jerr;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	struct replica *r = NULL;
	const char *id = NULL, *rt = NULL, *st = NULL, *msg = NULL, *cont = NULL, *cluster = NULL;
	json_int_t start = 0, end = 0, seq = 0, acked = 0, off = 0, kill_at = 0;
	json_int_t shim_start = 0, helper_start = 0;
	int attempt = 0, code = 0, stopping = 0, killed = 0, shim = 0, pgid = 0, sim_exit = 0;
	int helper = 0;
	double sim_seconds = 0;
	enum agent_runtime runtime;
	enum replica_state state;

	if (!o) {
		log_warn("replica: ignoring %s: %s", path, jerr.text);
		goto out;
	}
	if (json_unpack_ex(o, &jerr, 0,
			   "{s:s, s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:I,"
			   " s:i, s:i, s:I, s:i, s:F, s?s, s?s, s?i, s?I, s?s}",
			   "replica", &id, "attempt", &attempt, "runtime", &rt, "state", &st,
			   "exitCode", &code, "startUsec", &start, "endUsec", &end, "seq", &seq,
			   "ackedSeq", &acked, "logOffset", &off, "stopping", &stopping,
			   "killed", &killed, "killUsec", &kill_at, "shimPid", &shim,
			   "pgid", &pgid, "shimStart", &shim_start, "simExit", &sim_exit,
			   "simSeconds", &sim_seconds, "message", &msg, "container", &cont,
			   "helperPid", &helper, "helperStart", &helper_start, "cluster", &cluster) ||
	    agent_runtime_parse(rt, &runtime) || !replica_state_saved(state = replica_state_parse(st))) {
		log_warn("replica: ignoring %s: %s", path, jerr.text);
		goto out;
	}
	r = xcalloc(1, sizeof(*r));
	r->id = xstrdup(id);
	r->attempt = attempt;
	r->dir = xstrdup(dir);
	r->cluster = cluster && *cluster ? xstrdup(cluster) : NULL;
	r->runtime = runtime;
	r->state = state;	/* restored, not moved: the state it was saved in */
	r->exit_code = code;
	r->message = msg ? xstrdup(msg) : NULL;
	r->start_usec = start;
	r->end_usec = end;
	r->seq = seq;
	r->acked_seq = acked;
	r->log_off = r->batch_end = off;
	r->stopping = stopping;
	r->killed = killed;
	r->kill_usec = kill_at;
	r->shim_pid = shim;
	r->pgid = pgid;
	r->shim_start = (unsigned long long)shim_start;
	r->sim_exit = sim_exit;
	r->sim_seconds = sim_seconds;
	r->container = cont ? xstrdup(cont) : NULL;
	r->helper_pid = helper;
	r->helper_start = (unsigned long long)helper_start;
	r->fenced = json_is_true(json_object_get(o, "fenced"));
	r->node_stopped = json_is_true(json_object_get(o, "nodeStopped"));
	const char *trial = json_string_value(json_object_get(o, "trial"));
	const char *tag = json_string_value(json_object_get(o, "metricTag"));
	r->trial_id = trial ? xstrdup(trial) : NULL;
	r->metric_tag = tag ? xstrdup(tag) : NULL;
	r->python_package = json_is_true(json_object_get(o, "pythonPackage"));
out:
	json_decref(o);
	free(path);
	return r;
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *sub = xasprintf("%s/%s", path, e->d_name);
		struct stat st;
		if (!lstat(sub, &st) && S_ISDIR(st.st_mode))
			remove_tree(sub);
		else
			unlink(sub);
		free(sub);
	}
	closedir(d);
	rmdir(path);
}

void replica_remove_files(const struct replica *r)
{
	remove_tree(r->dir);
}

bool replica_set_final(struct replica *r, enum replica_state st, int exit_code,
		       int64_t end_usec, const char *message)
{
	enum replica_cause cause;
	if (st != REPLICA_EXITED && st != REPLICA_FAILED_TO_START) {
		log_error("replica %s.%d: %s is no end the agent sets", r->id, r->attempt,
			  replica_state_name(st));
		return false;
	}
	if (!replica_cause_of_report(st, &cause) || !replica_transition(r, cause))
		return false;
	r->exit_code = st == REPLICA_EXITED ? exit_code : 0;
	r->end_usec = end_usec ? end_usec : now_usec();
	free(r->message);
	r->message = message ? xstrdup(message) : NULL;
	if (st == REPLICA_EXITED && !r->fenced) {
		char *marker = replica_path(r, "fenced");
		r->fenced = access(marker, F_OK) == 0;
		free(marker);
	}
	if (st == REPLICA_EXITED && r->fenced && !r->message)
		r->message = xasprintf("stopped by the node's fence: no sync was answered within "
				       "the lease (exit status %d)", exit_code);
	else if (st == REPLICA_EXITED && r->node_stopped && !r->message)
		r->message = xasprintf("the node's agent stopped in an orderly way, as in a "
				       "maintenance event; exit status %d", exit_code);
	return true;
}

int replica_read_exit(const struct replica *r, int *code, int64_t *end_usec)
{
	char *path = replica_path(r, "exit");
	FILE *f = fopen(path, "r");
	long long c, e;
	int rc = -1;

	free(path);
	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (fscanf(f, "%lld %lld", &c, &e) == 2 && c >= 0 && c <= 255) {
		*code = (int)c;
		*end_usec = e;
		rc = 1;
	}
	fclose(f);
	return rc;
}

int replica_write_exit(const char *dir, int code, int64_t end_usec)
{
	char path[4096], text[64];
	int n = snprintf(text, sizeof(text), "%d %lld\n", code, (long long)end_usec);
	if ((size_t)snprintf(path, sizeof(path), "%s/exit", dir) >= sizeof(path))
		return -1;
	return replica_write_atomic(path, text, (size_t)n);
}
