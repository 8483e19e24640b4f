/*
 * runtime.c - what every runtime shares: the dispatch to a replica's
 * runtime (runtime_process.c, runtime_container.c, runtime_simulate.c),
 * saving its status around each step, re-adoption after an agent restart,
 * and the gs:// mapping.
 */
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "log.h"
#include "metric_file.h"
#include "python_pkg.h"
#include "strbuf.h"

const struct runtime_ops *runtime_ops_for(enum agent_runtime rt)
{
	switch (rt) {
	case RUNTIME_PROCESS:
		return &runtime_process_ops;
	case RUNTIME_PODMAN:
	case RUNTIME_DOCKER:
		return &runtime_container_ops;
	case RUNTIME_SIMULATE:
		return &runtime_simulate_ops;
	}
	return &runtime_simulate_ops;
}

static void save(struct replica *r)
{
	if (replica_save(r))
		log_warn("replica %s.%d: status not saved; a restart may lose it", r->id,
			 r->attempt);
}

const char *runtime_env_value(char **env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/*
 * A tuning trial's replica (the scheduler gives it CLOUD_ML_TRIAL_ID and
 * CLOUD_ML_HP_METRIC_TAG): its trial and tag, and the folder its metric
 * file goes in (<dir>/hypertune; a container sees it at /tmp/hypertune,
 * the library's default). A trial id that is not a number is ignored.
 */
static void trial_setup(struct replica *r, const struct desired_replica *d)
{
	const char *trial = runtime_env_value(d->env, "CLOUD_ML_TRIAL_ID");
	const char *tag = runtime_env_value(d->env, "CLOUD_ML_HP_METRIC_TAG");

	if (!trial || !*trial || strlen(trial) > 20 || strspn(trial, "0123456789") != strlen(trial))
		return;
	r->trial_id = xstrdup(trial);
	r->metric_tag = xstrdup(tag && *tag ? tag : METRIC_DEFAULT_TAG);
	char *dir = replica_path(r, "hypertune");
	if (mkdir(dir, 0777) && errno != EEXIST)
		log_warn("replica %s.%d: cannot create %s: %s", r->id, r->attempt, dir,
			 strerror(errno));
	free(dir);
}

void runtime_start(const struct agent_config *cfg, struct replica *r,
		   const struct desired_replica *d)
{
	if (replica_mkdir(r)) {
		char *msg = xasprintf("cannot create %s: %s", r->dir, strerror(errno));
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, msg);
		log_error("replica %s.%d: %s", r->id, r->attempt, msg);
		free(msg);
		return;
	}
	if (!replica_transition(r, REPLICA_CAUSE_START))
		return;		/* started already (logged): nothing more to start */
	r->start_usec = now_usec();
	trial_setup(r, d);
	save(r);	/* before anything runs: a crash from here on is re-adoptable */
	runtime_ops_for(r->runtime)->start(cfg, r, d);
	log_info("replica %s.%d: %s%s%s", r->id, r->attempt, replica_state_name(r->state),
		 r->message ? ": " : "", r->message ? r->message : "");
	save(r);
}

void runtime_skip(struct replica *r)
{
	if (replica_mkdir(r))
		log_warn("replica %s.%d: cannot create %s: %s", r->id, r->attempt, r->dir,
			 strerror(errno));
	replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, REPLICA_SKIPPED_MESSAGE);
	log_info("replica %s.%d: stopped before it started", r->id, r->attempt);
	save(r);
}

/*
 * A package replica that ended non-zero before its module started (pip
 * failed, no such module): a failure to start, with the reason
 * (python_pkg.h). A stop or the fence is no such failure.
 */
static void package_start_check(struct replica *r)
{
	if (!r->python_package || r->state != REPLICA_EXITED || !r->exit_code || r->fenced ||
	    r->stopping)
		return;
	char *log = replica_path(r, "output.log");
	char *why = pypkg_start_failure(log, r->exit_code);
	if (why)
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, r->end_usec, why);
	free(why);
	free(log);
}

int64_t runtime_next_event(const struct replica *r)
{
	const struct runtime_ops *ops = runtime_ops_for(r->runtime);
	if (r->state == REPLICA_EXITED || r->state == REPLICA_FAILED_TO_START || !ops->next_event)
		return 0;
	return ops->next_event(r);
}

bool runtime_poll(const struct agent_config *cfg, struct replica *r)
{
	enum replica_state before = r->state;
	if (r->state == REPLICA_EXITED || r->state == REPLICA_FAILED_TO_START)
		return false;
	runtime_ops_for(r->runtime)->poll(cfg, r);
	package_start_check(r);
	if (r->state == before)
		return false;
	if (r->state == REPLICA_EXITED)
		log_info("replica %s.%d: exited with %d%s%s", r->id, r->attempt, r->exit_code,
			 r->message ? ": " : "", r->message ? r->message : "");
	else
		log_info("replica %s.%d: %s%s%s", r->id, r->attempt,
			 replica_state_name(r->state), r->message ? ": " : "",
			 r->message ? r->message : "");
	save(r);
	return true;
}

void runtime_stop(const struct agent_config *cfg, struct replica *r)
{
	if (r->stopping || r->state == REPLICA_EXITED || r->state == REPLICA_FAILED_TO_START)
		return;
	log_info("replica %s.%d: stopping (grace %ds)", r->id, r->attempt,
		 cfg->stop_grace_seconds);
	runtime_ops_for(r->runtime)->stop(cfg, r);
	save(r);
}

void runtime_forget(const struct agent_config *cfg, struct replica *r)
{
	runtime_ops_for(r->runtime)->release(cfg, r);
	/* Our own supervisor has written its exit file and is ending: reap it
	 * (returns at once when it is not our child). */
	if (r->shim_pid > 0)
		while (waitpid(r->shim_pid, NULL, 0) < 0 && errno == EINTR)
			;
	replica_remove_files(r);
	log_debug("replica %s.%d: forgotten", r->id, r->attempt);
}

void runtime_adopt(const struct agent_config *cfg, struct replica *r)
{
	runtime_poll(cfg, r);
	log_info("replica %s.%d: adopted (%s%s)", r->id, r->attempt, replica_state_name(r->state),
		 r->stopping ? ", stopping" : "");
}

/* Whether a status file names the folder it is in ("<replica>.<attempt>"). */
static bool names_its_folder(const struct replica *r, const char *folder)
{
	size_t n = strlen(r->id);
	char attempt[16];
	snprintf(attempt, sizeof(attempt), "%d", r->attempt);
	return !strncmp(folder, r->id, n) && folder[n] == '.' && !strcmp(folder + n + 1, attempt);
}

int runtime_adopt_all(const struct agent_config *cfg, const char *cluster,
		      struct replica **list, struct replica **foreign)
{
	char *root = xasprintf("%s/replicas", cfg->work_dir);
	DIR *d = opendir(root);
	struct dirent *e;
	int n = 0;

	if (!d) {
		free(root);
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *dir = xasprintf("%s/%s", root, e->d_name);
		char *status = xasprintf("%s/status.json", dir);
		struct stat st;
		if (stat(status, &st)) {
			/* Created, crashed before its first save: nothing ever ran. */
			struct replica tmp = { .dir = dir };
			log_warn("replica dir %s has no status; removing it", dir);
			replica_remove_files(&tmp);
		} else {
			struct replica *r = replica_load(dir);
			if (r && !names_its_folder(r, e->d_name)) {
				/* Copied or renamed by hand: not what any server assigned here. */
				log_warn("%s holds the status of replica %s.%d: not adopted, left alone",
					 dir, r->id, r->attempt);
				replica_free(r);
			} else if (r && cluster && r->cluster && strcmp(r->cluster, cluster)) {
				if (foreign) {
					r->next = *foreign;
					*foreign = r;
				} else {
					replica_free(r);
				}
			} else if (r) {
				r->next = *list;
				*list = r;
				runtime_adopt(cfg, r);
				n++;
			}
		}
		free(status);
		free(dir);
	}
	closedir(d);
	free(root);
	return n;
}

char *runtime_map_gcs(const char *s, const char *storage_root, bool container)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p;
	if (!storage_root || !*storage_root)
		return xstrdup(s);
	while ((p = strstr(s, "gs://"))) {
		sb_add(&sb, s, (size_t)(p - s));
		if (container) {
			sb_addstr(&sb, "/gcs/");
		} else {
			size_t n = strlen(storage_root);
			while (n > 1 && storage_root[n - 1] == '/')
				n--;
			sb_add(&sb, storage_root, n);
			sb_addch(&sb, '/');
		}
		s = p + 5;
	}
	sb_addstr(&sb, s);
	return sb_detach(&sb);
}
