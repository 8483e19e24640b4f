/*
 * runtime_process.c - the process runtime: the replica's command as a host
 * process under its supervisor (shim.h), in its own process group, with
 * gs:// mapped to the storage root; stopped by SIGTERM to the group, then
 * SIGKILL after the grace period. A trainer package replica runs the
 * package bootstrap instead of its command (python_pkg.h): its packages
 * copied into its directory, the runtime's Python from python_runtimes.
 */
#include "runtime.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "python_pkg.h"
#include "shim.h"
#include "strvec.h"

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

	if (d->packages) {
		char *image, *why = pypkg_prepare(cfg, r, d, &argv, &image);
		free(image);	/* none for a host process */
		if (why) {
			replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, why);
			free(why);
			goto out;
		}
		r->python_package = true;
	} else if (!d->command || !d->command[0] || !*d->command[0]) {
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0,
				  "the process runtime needs a command: the replica has none "
				  "(an image's default entrypoint needs a container runtime)");
		goto out;
	} else {
		for (size_t i = 0; d->command[i]; i++)
			strvec_push_own(&argv, runtime_map_gcs(d->command[i], cfg->storage_root,
							       false));
		for (size_t i = 0; d->args && d->args[i]; i++)
			strvec_push_own(&argv, runtime_map_gcs(d->args[i], cfg->storage_root, false));
	}
	for (size_t i = 0; d->env && d->env[i]; i++)
		strvec_push_own(&envp, runtime_map_gcs(d->env[i], cfg->storage_root, false));
	if (!env_has(d->env, "PATH"))
		strvec_pushf(&envp, "PATH=%s", getenv("PATH") ? getenv("PATH") :
			     "/usr/local/bin:/usr/bin:/bin");
	if (!env_has(d->env, "HOME"))
		strvec_pushf(&envp, "HOME=%s", getenv("HOME") ? getenv("HOME") : cwd);
	/* A trial's metric file: in its own folder (runtime.c, trial_setup). */
	if (r->trial_id && !env_has(d->env, "CLOUD_ML_HP_METRIC_FILE"))
		strvec_pushf(&envp, "CLOUD_ML_HP_METRIC_FILE=%s/hypertune/output.metrics", r->dir);

	struct shim_spec spec = { r->dir, strvec_get(&argv), strvec_get(&envp), cwd,
				  cfg->lease_file };
	if (shim_spawn(&spec, &shim, &child, err, sizeof(err))) {
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, err);
		goto out;
	}
	r->shim_pid = shim;
	r->shim_start = proc_start_ticks(shim);
	r->pgid = child;
	replica_transition(r, REPLICA_CAUSE_RUN);
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
	if (r->state != REPLICA_RUNNING && r->state != REPLICA_STARTING)
		return;
	if (replica_read_exit(r, &code, &end) == 1) {
		replica_set_final(r, REPLICA_EXITED, code, end, NULL);
		return;
	}
	if (!proc_alive(r->shim_pid, r->shim_start)) {
		/* The supervisor writes the exit file before it exits: look again. */
		if (replica_read_exit(r, &code, &end) == 1) {
			replica_set_final(r, REPLICA_EXITED, code, end, NULL);
		} else {
			char *msg = xasprintf("exit status lost: the replica's supervisor "
					      "(pid %d) ended without recording it",
					      (int)r->shim_pid);
			if (r->pgid > 0)
				kill(-r->pgid, SIGKILL);	/* no orphan either way */
			replica_set_final(r, REPLICA_EXITED, 255, 0, msg);
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
	if (r->state != REPLICA_RUNNING || !proc_alive(r->shim_pid, r->shim_start))
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

static void nothing_to_release(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	(void)r;
}

const struct runtime_ops runtime_process_ops = {
	process_start, process_poll, process_stop, nothing_to_release,
};
