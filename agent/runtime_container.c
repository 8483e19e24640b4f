/*
 * runtime_container.c - podman and docker through their CLI.
 *
 * Every engine command runs as
 *     <container_engine> ARGS...                          (no wrapper), or
 *     /bin/sh -c '<container_wrapper> "$@"' sh <engine> ARGS...
 * so the wrapper is a shell command prefix that receives the engine command
 * as its arguments: on the build machines (ENVIRONMENT.md)
 *     unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$0" "$@"'
 *
 * Life of an attempt:
 *   STARTING  `run -d --name tp-<replica>-<attempt> ...` runs in the
 *             background (an image pull must not stall the sync loop)
 *   RUNNING   `inspect` saw the container; a supervisor (shim.h) runs
 *             `logs -f <name>` into output.log
 *   EXITED    `inspect` says exited; the code is .State.ExitCode. The
 *             container is kept until the server recorded the end, so the
 *             code survives any agent restart; runtime_forget() removes it.
 * Stopping is `stop -t <grace> <name>` in the background (the engine sends
 * SIGKILL after the grace period itself).
 *
 * Nothing the server sends is ever read as an engine option (issue 12: an
 * image "--volume=/:/host" mounted the node's root). In `run`, every value
 * before the image is glued to its option (`--env=K=V`, `--label=k=v`,
 * `--entrypoint=...`), a `--` ends the options, and then come the image,
 * the command and the args, which both engines pass to the container as they
 * are (checked with podman 4.3 and the docker 28 client). The image must be
 * a valid reference (lib/imageref.h) and env names C identifiers, or the
 * replica fails to start, even though the server checked both already.
 */
#include "runtime.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "imageref.h"
#include "log.h"
#include "proc.h"
#include "shim.h"
#include "strbuf.h"
#include "strvec.h"
#include "wire.h"

#define INSPECT_TIMEOUT_MS 20000
#define INSPECT_EVERY_USEC (5 * 1000000LL)

/* Starts argv with the engine command (and the wrapper) in front. */
static void engine_argv(const struct agent_config *cfg, struct strvec *sv)
{
	const char *engine = cfg->container_engine ? cfg->container_engine :
		agent_runtime_name(cfg->runtime);
	if (cfg->container_wrapper && *cfg->container_wrapper) {
		strvec_push(sv, "/bin/sh");
		strvec_push(sv, "-c");
		strvec_pushf(sv, "%s \"$@\"", cfg->container_wrapper);
		strvec_push(sv, "sh");
	}
	strvec_push(sv, engine);
}

static const char *env_value(char **env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/* The last non-empty line of s, trimmed, into a new string. */
static char *last_line(const char *s)
{
	const char *end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	const char *start = end;
	while (start > s && start[-1] != '\n')
		start--;
	return xstrndup(start, (size_t)(end - start));
}

/* s when it is printable ASCII and short, for a message; else a placeholder. */
static const char *quotable(const char *s)
{
	if (strlen(s) > 200)
		return "(too long to repeat)";
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f)
			return "(not printable)";
	return s;
}

/*
 * Why the replica must not reach the engine (a new string), or NULL: an
 * image that is not a reference, an env entry that is not NAME=VALUE with a
 * C identifier for NAME (podman reads `-e NAME` as "copy the agent's own
 * NAME" and `-e PREFIX*` as "copy all of the agent's PREFIX... variables").
 */
static char *refuse_reason(const struct desired_replica *d)
{
	const char *why;

	if (!d->image || !*d->image)
		return xstrdup("the replica has no image");
	if ((why = imageref_parse(d->image, NULL)))
		return xasprintf("the image \"%s\" is not a valid image reference: %s; expected "
				 IMAGEREF_FORM, quotable(d->image), why);
	for (size_t i = 0; d->env && d->env[i]; i++) {
		const char *eq = strchr(d->env[i], '=');
		char *name = eq ? xstrndup(d->env[i], (size_t)(eq - d->env[i])) : NULL;
		bool ok = env_name_valid(name);
		char *msg = ok ? NULL :
			    xasprintf("environment variable \"%s\" is not NAME=VALUE with a "
				      "C identifier ([A-Za-z_][A-Za-z0-9_]*) for NAME",
				      quotable(name ? name : d->env[i]));
		free(name);
		if (msg)
			return msg;
	}
	return NULL;
}

static void container_start(const struct agent_config *cfg, struct replica *r,
			    const struct desired_replica *d)
{
	struct strvec sv = STRVEC_INIT;
	struct strbuf name = STRBUF_INIT, gpus = STRBUF_INIT, cuda = STRBUF_INIT;
	bool docker = cfg->runtime == RUNTIME_DOCKER;
	char *refused = refuse_reason(d);

	if (refused) {
		replica_set_final(r, RS_FAILED_TO_START, 0, 0, refused);
		free(refused);
		return;
	}
	sb_addstr(&name, "tp-");
	for (const char *p = r->id; *p; p++)
		sb_addch(&name, isalnum((unsigned char)*p) || *p == '_' || *p == '.' ||
			 *p == '-' ? *p : '_');
	sb_addf(&name, "-%d", r->attempt);
	free(r->container);
	r->container = sb_detach(&name);

	for (size_t i = 0; i < d->ngpus; i++) {
		sb_addf(&gpus, "%s%d", i ? "," : "", d->gpus[i]);
		sb_addf(&cuda, "%s%zu", i ? "," : "", i);
	}

	engine_argv(cfg, &sv);
	strvec_push(&sv, "run");
	strvec_push(&sv, "-d");
	strvec_push(&sv, "--name");
	strvec_push(&sv, r->container);
	strvec_pushf(&sv, "--label=trainplane.replica=%s", r->id);
	strvec_pushf(&sv, "--label=trainplane.attempt=%d", r->attempt);
	if (r->cluster)
		strvec_pushf(&sv, "--label=trainplane.cluster=%s", r->cluster);
	if (d->job)
		strvec_pushf(&sv, "--label=trainplane.job=%s", d->job);
	for (size_t i = 0; d->env && d->env[i]; i++) {
		/* Inside the container the bound GPUs are renumbered from 0:
		 * the engine gets the host indices, CUDA the container's. */
		if (!strncmp(d->env[i], "CUDA_VISIBLE_DEVICES=", 21) ||
		    !strncmp(d->env[i], "NVIDIA_VISIBLE_DEVICES=", 23))
			continue;
		char *kv = runtime_map_gcs(d->env[i], cfg->storage_root, true);
		strvec_pushf(&sv, "--env=%s", kv);
		free(kv);
	}
	if (d->ngpus) {
		strvec_pushf(&sv, "--env=NVIDIA_VISIBLE_DEVICES=%s", sb_str(&gpus));
		strvec_pushf(&sv, "--env=CUDA_VISIBLE_DEVICES=%s", sb_str(&cuda));
		if (docker)
			strvec_pushf(&sv, "--gpus=\"device=%s\"", sb_str(&gpus));
	} else {
		strvec_push(&sv, "--env=NVIDIA_VISIBLE_DEVICES=void");
		if (env_value(d->env, "CUDA_VISIBLE_DEVICES"))
			strvec_pushf(&sv, "--env=CUDA_VISIBLE_DEVICES=%s",
				     env_value(d->env, "CUDA_VISIBLE_DEVICES"));
	}
	if (cfg->storage_root && *cfg->storage_root)
		strvec_pushf(&sv, "--volume=%s:/gcs", cfg->storage_root);
	strvec_split(&sv, cfg->container_extra_args);
	if (d->command && d->command[0] && docker) {
		strvec_pushf(&sv, "--entrypoint=%s", d->command[0]);
	} else if (d->command && d->command[0]) {
		/* podman reads an --entrypoint that parses as a JSON array as the
		 * whole command line: give it one, of exactly one word. */
		json_t *word = json_pack("[s]", d->command[0]);
		char *text = word ? json_dumps(word, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(word);
		if (!text) {
			replica_set_final(r, RS_FAILED_TO_START, 0, 0,
					  "the command's first word is not valid UTF-8");
			goto out;
		}
		strvec_pushf(&sv, "--entrypoint=%s", text);
		free(text);
	}
	strvec_push(&sv, "--");		/* no option after this, whatever the image says */
	strvec_push(&sv, d->image);
	for (size_t i = 1; d->command && d->command[0] && d->command[i]; i++)
		strvec_push_own(&sv, runtime_map_gcs(d->command[i], cfg->storage_root, true));
	for (size_t i = 0; d->args && d->args[i]; i++)
		strvec_push_own(&sv, runtime_map_gcs(d->args[i], cfg->storage_root, true));

	char *out = replica_path(r, "engine.out"), *err = replica_path(r, "engine.err");
	unlink(err);
	r->helper_pid = spawn_background(strvec_get(&sv), out, err);
	r->helper_start = r->helper_pid > 0 ? proc_start_ticks(r->helper_pid) : 0;
	free(out);
	free(err);
	if (r->helper_pid < 0) {
		r->helper_pid = 0;
		replica_set_final(r, RS_FAILED_TO_START, 0, 0, "cannot fork the container engine");
		goto out;
	}
	r->state = RS_STARTING;
out:
	strvec_clear(&sv);
	sb_release(&gpus);
	sb_release(&cuda);
}

/*
 * Asks the engine for the container's status and exit code. Returns 1 with
 * status ("running", "exited", ...) and code, 0 when the container does not
 * exist, -1 when the engine failed (try again later).
 */
static int inspect(const struct agent_config *cfg, const struct replica *r, char *status,
		   size_t len, int *code)
{
	struct strvec sv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int rc;

	engine_argv(cfg, &sv);
	strvec_push(&sv, "inspect");
	strvec_push(&sv, "--type=container");
	strvec_push(&sv, "--format={{.State.Status}} {{.State.ExitCode}}");
	strvec_push(&sv, r->container);
	rc = run_command(strvec_get(&sv), &out, &err, INSPECT_TIMEOUT_MS);
	if (rc == 0 && sscanf(sb_str(&out), "%31s %d", status, code) == 2 && len >= 32) {
		rc = 1;
	} else if (strcasestr(sb_str(&err), "no such")) {
		rc = 0;
	} else {
		log_warn("replica %s.%d: inspect %s failed (%d): %s", r->id, r->attempt,
			 r->container, rc, sb_str(&err));
		rc = -1;
	}
	strvec_clear(&sv);
	sb_release(&out);
	sb_release(&err);
	return rc;
}

/* Runs `engine <verb> [opt] <name>` to completion (rm -f, kill). */
static int engine_simple(const struct agent_config *cfg, const struct replica *r,
			 const char *verb, const char *opt)
{
	struct strvec sv = STRVEC_INIT;
	struct strbuf err = STRBUF_INIT;
	engine_argv(cfg, &sv);
	strvec_push(&sv, verb);
	if (opt)
		strvec_push(&sv, opt);
	strvec_push(&sv, r->container);
	int rc = run_command(strvec_get(&sv), NULL, &err, INSPECT_TIMEOUT_MS);
	if (rc)
		log_debug("replica %s.%d: %s %s: %s", r->id, r->attempt, verb, r->container,
			  sb_str(&err));
	strvec_clear(&sv);
	sb_release(&err);
	return rc;
}

/* Starts the supervisor that follows the container's output. */
static void follow_logs(const struct agent_config *cfg, struct replica *r, int64_t since_usec)
{
	struct strvec sv = STRVEC_INIT, env = STRVEC_INIT, fence = STRVEC_INIT, kill_cmd = STRVEC_INIT;
	char err[256], ts[48];
	pid_t shim, child;

	engine_argv(cfg, &sv);
	strvec_push(&sv, "logs");
	strvec_push(&sv, "-f");
	if (since_usec) {
		wire_time_format(since_usec, ts, sizeof(ts));
		strvec_pushf(&sv, "--since=%s", ts);
	}
	strvec_push(&sv, r->container);
	for (char **e = environ; e && *e; e++)
		strvec_push(&env, *e);
	char *exit_file = replica_path(r, "exit");
	unlink(exit_file);	/* for containers: "the log follower ended" */
	free(exit_file);
	/* The follower is the container's fence (lease.h): `stop` when the
	 * lease passes, `kill` when the grace is over. */
	engine_argv(cfg, &fence);
	strvec_push(&fence, "stop");
	strvec_pushf(&fence, "--time=%d", cfg->stop_grace_seconds);
	strvec_push(&fence, r->container);
	engine_argv(cfg, &kill_cmd);
	strvec_push(&kill_cmd, "kill");
	strvec_push(&kill_cmd, r->container);
	struct shim_spec spec = { r->dir, strvec_get(&sv), strvec_get(&env), r->dir,
				  cfg->lease_file, strvec_get(&fence), strvec_get(&kill_cmd) };
	if (shim_spawn(&spec, &shim, &child, err, sizeof(err))) {
		log_warn("replica %s.%d: cannot follow its logs: %s", r->id, r->attempt, err);
		r->shim_pid = 0;
	} else {
		r->shim_pid = shim;
		r->shim_start = proc_start_ticks(shim);
		r->pgid = child;
	}
	strvec_clear(&sv);
	strvec_clear(&env);
	strvec_clear(&fence);
	strvec_clear(&kill_cmd);
}

static void reap(pid_t *pid)
{
	if (*pid > 0 && waitpid(*pid, NULL, WNOHANG) == *pid)
		*pid = 0;
}

/* STARTING: has `run` finished, and with what? */
static void poll_starting(const struct agent_config *cfg, struct replica *r)
{
	char status[32];
	int code = 0, rc = -1, st;

	if (r->helper_pid > 0) {
		pid_t w = waitpid(r->helper_pid, &st, WNOHANG);
		if (w == 0)
			return;		/* still pulling or creating */
		if (w == r->helper_pid)
			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		else if (proc_alive(r->helper_pid, r->helper_start))
			return;		/* adopted: not our child, still running */
		r->helper_pid = 0;
	}
	int found = inspect(cfg, r, status, sizeof(status), &code);
	if (found < 0)
		return;
	if (found == 1 && (rc == 0 || rc == -1) && strcmp(status, "created") &&
	    strcmp(status, "configured")) {
		r->state = RS_RUNNING;
		follow_logs(cfg, r, 0);
		r->next_inspect_usec = now_usec() + 200000;
		if (r->stopping) {
			r->stopping = false;	/* a stop asked while starting: do it now */
			runtime_container_ops.stop(cfg, r);
		}
		return;
	}
	char *errpath = replica_path(r, "engine.err");
	FILE *f = fopen(errpath, "r");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t got;
	while (f && (got = fread(buf, 1, sizeof(buf), f)) > 0 && sb.len < 65536)
		sb_add(&sb, buf, got);
	if (f)
		fclose(f);
	char *line = last_line(sb_str(&sb));
	char *msg = xasprintf("%s run failed%s%s", agent_runtime_name(cfg->runtime),
			      *line ? ": " : " (no message)", line);
	replica_set_final(r, RS_FAILED_TO_START, 0, 0, msg);
	if (found == 1)
		(void)engine_simple(cfg, r, "rm", "-f");	/* a half-created container */
	free(msg);
	free(line);
	sb_release(&sb);
	free(errpath);
}

static void container_poll(const struct agent_config *cfg, struct replica *r)
{
	char status[32];
	int code = 0, ecode;
	int64_t eend, now = now_usec();

	reap(&r->shim_pid);
	if (r->state == RS_STARTING) {
		poll_starting(cfg, r);
		return;
	}
	if (r->state != RS_RUNNING)
		return;
	if (r->helper_pid > 0 && waitpid(r->helper_pid, NULL, WNOHANG) == r->helper_pid)
		r->helper_pid = 0;	/* `stop` finished */
	bool follower_done = replica_read_exit(r, &ecode, &eend) == 1 ||
			     !proc_alive(r->shim_pid, r->shim_start);
	if (!follower_done && now < r->next_inspect_usec)
		return;
	int found = inspect(cfg, r, status, sizeof(status), &code);
	r->next_inspect_usec = now + (follower_done ? 1000000 : INSPECT_EVERY_USEC);
	if (found < 0)
		return;
	if (found == 0) {
		replica_set_final(r, RS_EXITED, 255, 0,
				  "the container vanished (removed outside the agent)");
		return;
	}
	if (!strcmp(status, "exited") || !strcmp(status, "stopped") || !strcmp(status, "dead")) {
		if (!follower_done) {
			/* Give `logs -f` a moment to deliver the last lines; it
			 * ends by itself when the container has. */
			if (!r->exit_seen_usec)
				r->exit_seen_usec = now;
			if (now < r->exit_seen_usec + 2000000) {
				r->next_inspect_usec = now + 200000;
				return;
			}
			if (r->pgid > 0)
				kill(-r->pgid, SIGKILL);
		}
		replica_set_final(r, RS_EXITED, code, 0, NULL);
		return;
	}
	if (follower_done && (!strcmp(status, "running") || !strcmp(status, "paused"))) {
		/* The follower died (killed?) while the container runs: follow again
		 * from when it ended. */
		follow_logs(cfg, r, replica_read_exit(r, &ecode, &eend) == 1 ? eend : now);
		r->next_inspect_usec = now + INSPECT_EVERY_USEC;
	}
	if (r->stopping && !r->killed && now >= r->kill_usec) {
		log_warn("replica %s.%d: %s still running after stop; killing it", r->id,
			 r->attempt, r->container);
		(void)engine_simple(cfg, r, "kill", NULL);
		r->killed = true;
	}
}

static void container_stop(const struct agent_config *cfg, struct replica *r)
{
	r->stopping = true;
	/* `stop` sends SIGKILL after the grace itself; ours is a safety net. */
	r->kill_usec = now_usec() + ((int64_t)cfg->stop_grace_seconds + 30) * 1000000;
	if (r->state != RS_RUNNING)
		return;		/* STARTING: poll_starting() stops it once it runs */
	struct strvec sv = STRVEC_INIT;
	engine_argv(cfg, &sv);
	strvec_push(&sv, "stop");
	strvec_pushf(&sv, "--time=%d", cfg->stop_grace_seconds);
	strvec_push(&sv, r->container);
	if (r->helper_pid > 0)
		waitpid(r->helper_pid, NULL, WNOHANG);
	r->helper_pid = spawn_background(strvec_get(&sv), NULL, NULL);
	r->helper_start = r->helper_pid > 0 ? proc_start_ticks(r->helper_pid) : 0;
	if (r->helper_pid < 0)
		r->helper_pid = 0;
	r->next_inspect_usec = now_usec() + 200000;
	strvec_clear(&sv);
}

static void container_release(const struct agent_config *cfg, struct replica *r)
{
	if (r->shim_pid > 0 && proc_alive(r->shim_pid, r->shim_start) && r->pgid > 0)
		kill(-r->pgid, SIGKILL);
	reap(&r->shim_pid);
	if (r->helper_pid > 0) {
		if (proc_alive(r->helper_pid, r->helper_start))
			kill(r->helper_pid, SIGKILL);
		waitpid(r->helper_pid, NULL, 0);
		r->helper_pid = 0;
	}
	if (r->container)
		(void)engine_simple(cfg, r, "rm", "-f");
}

const struct runtime_ops runtime_container_ops = {
	container_start, container_poll, container_stop, container_release,
};
