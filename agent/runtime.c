/*
 * runtime.c - the runtime dispatch, re-adoption, and the process and
 * simulate runtimes (the container runtime is in runtime_container.c).
 */
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "shim.h"
#include "strbuf.h"
#include "strvec.h"

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

void runtime_start(const struct agent_config *cfg, struct replica *r,
		   const struct desired_replica *d)
{
	if (replica_mkdir(r)) {
		char *msg = xasprintf("cannot create %s: %s", r->dir, strerror(errno));
		replica_set_final(r, RS_FAILED_TO_START, 0, 0, msg);
		log_error("replica %s.%d: %s", r->id, r->attempt, msg);
		free(msg);
		return;
	}
	r->state = RS_STARTING;
	r->start_usec = now_usec();
	save(r);	/* before anything runs: a crash from here on is re-adoptable */
	runtime_ops_for(r->runtime)->start(cfg, r, d);
	log_info("replica %s.%d: %s%s%s", r->id, r->attempt, replica_state_name(r->state),
		 r->message ? ": " : "", r->message ? r->message : "");
	save(r);
}

bool runtime_poll(const struct agent_config *cfg, struct replica *r)
{
	enum replica_state before = r->state;
	if (r->state == RS_EXITED || r->state == RS_FAILED_TO_START)
		return false;
	runtime_ops_for(r->runtime)->poll(cfg, r);
	if (r->state == before)
		return false;
	if (r->state == RS_EXITED)
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
	if (r->stopping || r->state == RS_EXITED || r->state == RS_FAILED_TO_START)
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

/* ---- simulate -------------------------------------------------------- */

int simulate_script_parse(const char *s, double *seconds, int *exit_code)
{
	double sec;
	int code, end = -1;

	if (!s)
		return -1;
	if ((sscanf(s, "run-%lfs-exit-%d%n", &sec, &code, &end) == 2 && end >= 0 && !s[end]) ||
	    (end = -1, sscanf(s, "fail-%d-after-%lfs%n", &code, &sec, &end) == 2 && end >= 0 &&
	     !s[end])) {
		/* both forms parsed */
	} else if (end = -1, sscanf(s, "succeed-after-%lfs%n", &sec, &end) == 1 && end >= 0 &&
		   !s[end]) {
		code = 0;
	} else {
		return -1;
	}
	if (!(sec >= 0 && sec <= 86400 * 365) || code < 0 || code > 255)
		return -1;
	*seconds = sec;
	*exit_code = code;
	return 0;
}

static void simulate_start(const struct agent_config *cfg, struct replica *r,
			   const struct desired_replica *d)
{
	if (d && d->has_simulate) {
		r->sim_seconds = d->sim_seconds;
		r->sim_exit = d->sim_exit;
	} else if (simulate_script_parse(cfg->simulate_default, &r->sim_seconds, &r->sim_exit)) {
		r->sim_seconds = 2;
		r->sim_exit = 0;
	}
	char *line = xasprintf("simulate: replica %s attempt %d runs for %gs, then exits with %d",
			       r->id, r->attempt, r->sim_seconds, r->sim_exit);
	replica_log_append(r, 'O', line);
	free(line);
	r->state = RS_RUNNING;
}

static void simulate_poll(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	int64_t end = r->start_usec + (int64_t)(r->sim_seconds * 1e6);
	if (r->state != RS_RUNNING || now_usec() < end)
		return;
	char *line = xasprintf("simulate: exiting with %d", r->sim_exit);
	replica_log_append(r, r->sim_exit ? 'E' : 'O', line);
	free(line);
	replica_set_final(r, RS_EXITED, r->sim_exit, end, NULL);
}

static void simulate_stop(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	r->stopping = true;
	if (r->state != RS_RUNNING && r->state != RS_STARTING)
		return;
	replica_log_append(r, 'E', "simulate: stopped by SIGTERM");
	replica_set_final(r, RS_EXITED, 128 + SIGTERM, 0, NULL);
}

static void nothing_to_release(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	(void)r;
}

const struct runtime_ops runtime_simulate_ops = {
	simulate_start, simulate_poll, simulate_stop, nothing_to_release,
};

/* ---- process --------------------------------------------------------- */

static bool env_has(char **env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return true;
	return false;
}

static void process_start(const struct agent_config *cfg, struct replica *r,
			  const struct desired_replica *d)
{
	struct strvec argv = STRVEC_INIT, envp = STRVEC_INIT;
	char err[512], *cwd = replica_path(r, "work");
	pid_t shim, child;

	if (!d->command || !d->command[0] || !*d->command[0]) {
		replica_set_final(r, RS_FAILED_TO_START, 0, 0,
				  "the process runtime needs a command: the replica has none "
				  "(an image's default entrypoint needs a container runtime)");
		goto out;
	}
	for (size_t i = 0; d->command[i]; i++)
		strvec_push_own(&argv, runtime_map_gcs(d->command[i], cfg->storage_root, false));
	for (size_t i = 0; d->args && d->args[i]; i++)
		strvec_push_own(&argv, runtime_map_gcs(d->args[i], cfg->storage_root, false));
	for (size_t i = 0; d->env && d->env[i]; i++)
		strvec_push_own(&envp, runtime_map_gcs(d->env[i], cfg->storage_root, false));
	if (!env_has(d->env, "PATH"))
		strvec_pushf(&envp, "PATH=%s", getenv("PATH") ? getenv("PATH") :
			     "/usr/local/bin:/usr/bin:/bin");
	if (!env_has(d->env, "HOME"))
		strvec_pushf(&envp, "HOME=%s", getenv("HOME") ? getenv("HOME") : cwd);

	struct shim_spec spec = { r->dir, strvec_get(&argv), strvec_get(&envp), cwd,
				  cfg->lease_file };
	if (shim_spawn(&spec, &shim, &child, err, sizeof(err))) {
		replica_set_final(r, RS_FAILED_TO_START, 0, 0, err);
		goto out;
	}
	r->shim_pid = shim;
	r->shim_start = proc_start_ticks(shim);
	r->pgid = child;
	r->state = RS_RUNNING;
out:
	strvec_clear(&argv);
	strvec_clear(&envp);
	free(cwd);
}

/* Reaps our own supervisor if it is our child (not after an agent restart). */
static void reap(pid_t pid)
{
	if (pid > 0)
		while (waitpid(pid, NULL, WNOHANG) < 0 && errno == EINTR)
			;
}

static void process_poll(const struct agent_config *cfg, struct replica *r)
{
	int code;
	int64_t end;
	(void)cfg;

	reap(r->shim_pid);
	if (r->state != RS_RUNNING && r->state != RS_STARTING)
		return;
	if (replica_read_exit(r, &code, &end) == 1) {
		replica_set_final(r, RS_EXITED, code, end, NULL);
		return;
	}
	if (!proc_alive(r->shim_pid, r->shim_start)) {
		/* The supervisor writes the exit file before it exits: look again. */
		if (replica_read_exit(r, &code, &end) == 1) {
			replica_set_final(r, RS_EXITED, code, end, NULL);
		} else {
			char *msg = xasprintf("exit status lost: the replica's supervisor "
					      "(pid %d) ended without recording it",
					      (int)r->shim_pid);
			if (r->pgid > 0)
				kill(-r->pgid, SIGKILL);	/* no orphan either way */
			replica_set_final(r, RS_EXITED, 255, 0, msg);
			free(msg);
		}
		return;
	}
	if (r->stopping && !r->killed && now_usec() >= r->kill_usec) {
		log_warn("replica %s.%d: still running after the grace period; SIGKILL",
			 r->id, r->attempt);
		shim_signal_replica(r->shim_pid, r->pgid, SIGKILL);
		r->killed = true;
		if (replica_save(r))
			log_warn("replica %s.%d: status not saved", r->id, r->attempt);
	}
}

static void process_stop(const struct agent_config *cfg, struct replica *r)
{
	r->stopping = true;
	r->kill_usec = now_usec() + (int64_t)cfg->stop_grace_seconds * 1000000;
	if (r->state != RS_RUNNING || !proc_alive(r->shim_pid, r->shim_start))
		return;
	/* The supervisor is alive, so neither its descendants' pids nor the
	 * group id have been recycled. */
	if (cfg->stop_grace_seconds > 0) {
		shim_signal_replica(r->shim_pid, r->pgid, SIGTERM);
	} else {
		shim_signal_replica(r->shim_pid, r->pgid, SIGKILL);
		r->killed = true;
	}
}

const struct runtime_ops runtime_process_ops = {
	process_start, process_poll, process_stop, nothing_to_release,
};
