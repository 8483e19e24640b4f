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
 *   STARTING  `create --name tp-<replica>-<attempt> ...` runs in the
 *             background (an image pull must not stall the sync loop). A
 *             created container never runs by itself: an agent killed
 *             meanwhile leaves nothing running that would need a fence.
 *             Then, if the lease holds, the container's supervisor
 *             (shim_spawn_container()) checks the lease again and runs
 *             `start`; it is the container's fence from then on, and says
 *             how the start went in <dir>/started.
 *   RUNNING   started; the supervisor runs `logs -f <name>` into
 *             output.log, follows again when that ends while the container
 *             runs, and ends (writing <dir>/exit) once it does not
 *   EXITED    `inspect` says exited; the code is .State.ExitCode. The
 *             container is kept until the server recorded the end, so the
 *             code survives any agent restart; runtime_forget() removes it.
 * Stopping is `stop -t <grace> <name>` in the background (the engine sends
 * SIGKILL after the grace period itself); one that has not started yet is
 * not started.
 *
 * Nothing the server sends is ever read as an engine option (issue 12: an
 * image "--volume=/:/host" mounted the node's root). In `create`, every value
 * before the image is glued to its option (`--env=K=V`, `--label=k=v`,
 * `--entrypoint=...`), a `--` ends the options, and then come the image,
 * the command and the args, which both engines pass to the container as they
 * are (checked with podman 4.3 and the docker 28 client). The image must be
 * a valid reference (lib/imageref.h) and env names C identifiers, or the
 * replica fails to start, even though the server checked both already.
 *
 * A trainer package replica (python_pkg.h) runs the package bootstrap with
 * the image's python3 as entrypoint, in the image python_runtimes names
 * (by default a Vertex job's executor image); its packages are read from
 * /gcs (its project's buckets, mounted), its venv lies in the container.
 *
 * Storage: with storage_root set, the container gets each bucket of its
 * job's project at /gcs/<bucket> (the sync's "buckets"), read-write, and
 * nothing else of the root: tenants on one node do not see each other's
 * data (issue 28).
 */
#include "runtime.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "imageref.h"
#include "lease.h"
#include "log.h"
#include "proc.h"
#include "python_pkg.h"
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
static char *refuse_reason(const char *image, const struct desired_replica *d)
{
	const char *why;

	if (!image || !*image)
		return xstrdup("the replica has no image");
	if ((why = imageref_parse(image, NULL)))
		return xasprintf("the image \"%s\" is not a valid image reference: %s; expected "
				 IMAGEREF_FORM, quotable(image), why);
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

/*
 * A bucket name fit to be a path component: Google's characters (a-z, 0-9,
 * '-', '_', '.'), 3 to 222 of them, a letter or digit at each end, no
 * "..". The server checked it when the bucket was made; the agent builds a
 * host path of it, so it checks again.
 */
static bool bucket_name_ok(const char *b)
{
	size_t n = strlen(b);
	if (n < 3 || n > 222 || strstr(b, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		bool alnum = (b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9');
		if (!alnum && ((i == 0 || i == n - 1) || (b[i] != '-' && b[i] != '_' && b[i] != '.')))
			return false;
	}
	return true;
}

#define MAX_BUCKETS 1000

/*
 * /gcs in the container: each bucket of the job's project that has a
 * folder in the storage root, read-write at /gcs/<bucket> (as Vertex's
 * Cloud Storage FUSE mounts the buckets the job's service account may use),
 * never the root itself: another project's buckets are not there at all.
 * A folder that is not a plain directory (a link) is not mounted. Returns
 * NULL, or why the replica cannot start (a new string).
 */
static char *mount_buckets(const struct agent_config *cfg, const struct desired_replica *d,
			   struct strvec *sv)
{
	size_t n = 0;
	for (; d->buckets && d->buckets[n]; n++)
		if (!bucket_name_ok(d->buckets[n]))
			return xasprintf("the server sent bucket %zu of the job's project as \"%s\", "
					 "which is no bucket name: nothing is mounted",
					 n, quotable(d->buckets[n]));
	if (n > MAX_BUCKETS)
		return xasprintf("the job's project has %zu buckets: a container mounts at most %d",
				 n, MAX_BUCKETS);
	for (size_t i = 0; i < n; i++) {
		char *path = xasprintf("%s/%s", cfg->storage_root, d->buckets[i]);
		struct stat st;
		if (!lstat(path, &st) && S_ISDIR(st.st_mode))
			strvec_pushf(sv, "--volume=%s:/gcs/%s", path, d->buckets[i]);
		free(path);
	}
	return NULL;
}

static void container_start(const struct agent_config *cfg, struct replica *r,
			    const struct desired_replica *d)
{
	struct strvec sv = STRVEC_INIT, pkg_argv = STRVEC_INIT;
	struct strbuf name = STRBUF_INIT, gpus = STRBUF_INIT, cuda = STRBUF_INIT;
	bool docker = cfg->runtime == RUNTIME_DOCKER;
	const char *image = d->image;
	char *const *command = d->command, *const *args = d->args;
	char *pkg_image = NULL, *refused = NULL;

	if (d->packages) {
		/* A trainer package: the bootstrap in the runtime's image, its
		 * python3 the entrypoint, the args inside its argv already. */
		refused = pypkg_prepare(cfg, r, d, &pkg_argv, &pkg_image);
		image = pkg_image;
		command = strvec_get(&pkg_argv);
		args = NULL;
		r->python_package = !refused;
	}
	if (!refused)
		refused = refuse_reason(image, d);
	if (refused) {
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, refused);
		free(refused);
		goto out;
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
	strvec_push(&sv, "create");
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
		if (runtime_env_value(d->env, "CUDA_VISIBLE_DEVICES"))
			strvec_pushf(&sv, "--env=CUDA_VISIBLE_DEVICES=%s",
				     runtime_env_value(d->env, "CUDA_VISIBLE_DEVICES"));
	}
	if (cfg->storage_root && *cfg->storage_root && (refused = mount_buckets(cfg, d, &sv))) {
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, refused);
		free(refused);
		goto out;
	}
	/* A trial's metric file, where the cloudml-hypertune library writes by
	 * default: its replica's own folder (runtime.c, trial_setup). */
	if (r->trial_id) {
		strvec_pushf(&sv, "--volume=%s/hypertune:/tmp/hypertune", r->dir);
		if (!runtime_env_value(d->env, "CLOUD_ML_HP_METRIC_FILE"))
			strvec_push(&sv, "--env=CLOUD_ML_HP_METRIC_FILE=/tmp/hypertune/output.metrics");
	}
	strvec_split(&sv, cfg->container_extra_args);
	if (command && command[0] && docker) {
		strvec_pushf(&sv, "--entrypoint=%s", command[0]);
	} else if (command && command[0]) {
		/* podman reads an --entrypoint that parses as a JSON array as the
		 * whole command line: give it one, of exactly one word. */
		json_t *word = json_pack("[s]", command[0]);
		char *text = word ? json_dumps(word, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(word);
		if (!text) {
			replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0,
					  "the command's first word is not valid UTF-8");
			goto out;
		}
		strvec_pushf(&sv, "--entrypoint=%s", text);
		free(text);
	}
	strvec_push(&sv, "--");		/* no option after this, whatever the image says */
	strvec_push(&sv, image);
	for (size_t i = 1; command && command[0] && command[i]; i++)
		strvec_push_own(&sv, d->packages ? xstrdup(command[i]) :	/* mapped already */
				     runtime_map_gcs(command[i], cfg->storage_root, true));
	for (size_t i = 0; args && args[i]; i++)
		strvec_push_own(&sv, runtime_map_gcs(args[i], cfg->storage_root, true));

	char *out = replica_path(r, "engine.out"), *err = replica_path(r, "engine.err");
	unlink(err);
	r->helper_pid = spawn_background(strvec_get(&sv), out, err);
	r->helper_start = r->helper_pid > 0 ? proc_start_ticks(r->helper_pid) : 0;
	free(out);
	free(err);
	if (r->helper_pid < 0) {
		r->helper_pid = 0;
		replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, "cannot fork the container engine");
		goto out;
	}
	/* STARTING since runtime_start(): the supervisor's word moves it on */
out:
	strvec_clear(&sv);
	strvec_clear(&pkg_argv);
	free(pkg_image);
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

/*
 * Starts the container's supervisor (shim.h): with start, it starts the
 * container (if the lease still holds); without, it follows a container
 * that runs already, its logs from since_usec (0: all). Either way it is
 * the container's fence.
 */
static void spawn_supervisor(const struct agent_config *cfg, struct replica *r, bool start,
			     int64_t since_usec)
{
	struct strvec engine = STRVEC_INIT;
	char err[256];
	pid_t shim;

	engine_argv(cfg, &engine);
	const char *stale[] = { "exit", start ? "started" : NULL, start ? "start.err" : NULL };
	for (size_t i = 0; i < ARRAY_SIZE(stale) && stale[i]; i++) {
		char *path = replica_path(r, stale[i]);
		unlink(path);	/* a former supervisor's word */
		free(path);
	}
	struct shim_container_spec spec = {
		.dir = r->dir, .engine = strvec_get(&engine), .name = r->container,
		.lease_path = cfg->lease_file, .stop_grace_s = cfg->stop_grace_seconds,
		.start = start, .logs_since_usec = since_usec,
	};
	if (shim_spawn_container(&spec, &shim, err, sizeof(err))) {
		log_warn("replica %s.%d: %s", r->id, r->attempt, err);
		r->shim_pid = 0;
	} else {
		r->shim_pid = shim;
		r->shim_start = proc_start_ticks(shim);
	}
	r->pgid = 0;	/* the supervisor's engine calls have groups of their own */
	strvec_clear(&engine);
}

/* Whether r's supervisor runs (the same process as started it). */
static bool supervisor_alive(const struct replica *r)
{
	return r->shim_pid > 0 && proc_alive(r->shim_pid, r->shim_start);
}

static void reap(pid_t *pid)
{
	if (*pid > 0 && waitpid(*pid, NULL, WNOHANG) == *pid)
		*pid = 0;
}

/* The last line of r's file name (engine.err, start.err), for a message. */
static char *last_line_of(const struct replica *r, const char *name)
{
	char *path = replica_path(r, name);
	FILE *f = fopen(path, "r");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t got;
	while (f && (got = fread(buf, 1, sizeof(buf), f)) > 0 && sb.len < 65536)
		sb_add(&sb, buf, got);
	if (f)
		fclose(f);
	char *line = last_line(sb_str(&sb));
	sb_release(&sb);
	free(path);
	return line;
}

/* What the start supervisor wrote to <dir>/started (shim.h), or "" (none yet). */
static void read_started(const struct replica *r, char *word, size_t len, int *code)
{
	char *path = replica_path(r, "started");
	FILE *f = fopen(path, "r");
	char fmt[32];
	*word = '\0';
	*code = 0;
	snprintf(fmt, sizeof(fmt), "%%%zus %%d", len - 1);
	if (f && fscanf(f, fmt, word, code) < 1)
		*word = '\0';
	if (f)
		fclose(f);
	free(path);
}

/* A stop (or the fence) came before the container was started: it never runs. */
static void end_unstarted(struct replica *r)
{
	char *marker = replica_path(r, "fenced");
	bool fenced = r->fenced || access(marker, F_OK) == 0;
	free(marker);
	/* Fenced: the fence's own message (reported LOST). */
	replica_set_final(r, REPLICA_EXITED, 128 + SIGTERM, 0,
			  fenced ? NULL : "stopped before the container was started");
}

static void fail_to_start(const struct agent_config *cfg, struct replica *r, const char *step,
			  const char *errfile)
{
	char *line = last_line_of(r, errfile);
	char *msg = xasprintf("%s run failed (%s)%s%s", agent_runtime_name(cfg->runtime), step,
			      *line ? ": " : ", no message", line);
	replica_set_final(r, REPLICA_FAILED_TO_START, 0, 0, msg);
	free(msg);
	free(line);
}

static bool not_started_status(const char *status)
{
	return !strcmp(status, "created") || !strcmp(status, "configured") ||
	       !strcmp(status, "initialized");
}

/* STARTING: the container is created, then started by its supervisor. */
static void poll_starting(const struct agent_config *cfg, struct replica *r)
{
	char status[32], said[32];
	int code = 0, rc = -1, st;

	/* The supervisor's word on the start, once it has one. */
	read_started(r, said, sizeof(said), &code);
	if (!strcmp(said, SHIM_STARTED)) {
		replica_transition(r, REPLICA_CAUSE_RUN);
		r->next_inspect_usec = now_usec() + 200000;
		if (r->stopping) {
			r->stopping = false;	/* a stop asked while starting: do it now */
			runtime_container_ops.stop(cfg, r);
		}
		return;
	}
	if (!strcmp(said, SHIM_START_FAILED)) {
		fail_to_start(cfg, r, "start", "start.err");
		return;
	}
	if (!strcmp(said, SHIM_START_LEASE)) {
		/* The lease had passed: fenced, or (keep_running) waiting for
		 * a renewal, unless a stop came meanwhile. */
		char *marker = replica_path(r, "fenced");
		bool fenced = access(marker, F_OK) == 0;
		free(marker);
		if (fenced || r->stopping)
			end_unstarted(r);
		else if (!supervisor_alive(r) && lease_allows_start(cfg->lease_file, lease_clock_usec()))
			spawn_supervisor(cfg, r, true, 0);
		return;
	}
	if (supervisor_alive(r))
		return;		/* starting it */

	/* No supervisor: `create` is running, or it ended (and then a
	 * supervisor that died before it said anything, or none yet). */
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
	if (rc == -1 && !r->stopping && now_usec() < r->next_inspect_usec)
		return;		/* waiting for a renewal: ask the engine once a second */
	int found = inspect(cfg, r, status, sizeof(status), &code);
	if (found < 0)
		return;
	if (found == 1 && (rc == 0 || rc == -1) && not_started_status(status)) {
		if (r->stopping)
			end_unstarted(r);
		else if (lease_allows_start(cfg->lease_file, lease_clock_usec()))
			spawn_supervisor(cfg, r, true, 0);
		else	/* past the lease: start nothing (the agent's fence stops
			 * it, or a renewal lets it start) */
			r->next_inspect_usec = now_usec() + 1000000;
		return;
	}
	if (found == 1 && (rc == 0 || rc == -1)) {
		/* Started already (by a supervisor that died before it said so,
		 * or by an agent of before `create`): follow it, fence it. */
		replica_transition(r, REPLICA_CAUSE_RUN);
		spawn_supervisor(cfg, r, false, 0);
		r->next_inspect_usec = now_usec() + 200000;
		if (r->stopping) {
			r->stopping = false;
			runtime_container_ops.stop(cfg, r);
		}
		return;
	}
	fail_to_start(cfg, r, "create", "engine.err");
	if (found == 1)
		(void)engine_simple(cfg, r, "rm", "-f");	/* a half-created container */
}

static void container_poll(const struct agent_config *cfg, struct replica *r)
{
	char status[32];
	int code = 0, ecode;
	int64_t eend, now = now_usec();

	reap(&r->shim_pid);
	if (r->state == REPLICA_STARTING) {
		poll_starting(cfg, r);
		return;
	}
	if (r->state != REPLICA_RUNNING)
		return;
	if (r->helper_pid > 0 && waitpid(r->helper_pid, NULL, WNOHANG) == r->helper_pid)
		r->helper_pid = 0;	/* `stop` finished */
	bool follower_done = replica_read_exit(r, &ecode, &eend) == 1 || !supervisor_alive(r);
	if (!follower_done && now < r->next_inspect_usec)
		return;
	int found = inspect(cfg, r, status, sizeof(status), &code);
	r->next_inspect_usec = now + (follower_done ? 1000000 : INSPECT_EVERY_USEC);
	if (found < 0)
		return;
	if (found == 0) {
		replica_set_final(r, REPLICA_EXITED, 255, 0,
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
			shim_kill_supervisor(r->shim_pid);	/* alive: not follower_done */
		}
		replica_set_final(r, REPLICA_EXITED, code, 0, NULL);
		return;
	}
	if (follower_done && (!strcmp(status, "running") || !strcmp(status, "paused"))) {
		/* The supervisor died (killed?) while the container runs: a new
		 * one follows it from when the last ended, and fences it. */
		spawn_supervisor(cfg, r, false, replica_read_exit(r, &ecode, &eend) == 1 ? eend : now);
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
	if (r->state != REPLICA_RUNNING)
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
	if (supervisor_alive(r))
		shim_kill_supervisor(r->shim_pid);	/* and its engine calls */
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
