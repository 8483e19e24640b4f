/*
 * Integration tests: the container runtime with a real podman (agent/
 * runtime_container.c), with the configuration this machine needs
 * (/work/shared/ENVIRONMENT.md): a busybox image imported as
 * localhost/trainer:test (tests/integration/podman-image.sh builds it when
 * missing), the `unshare -m` wrapper and --cgroups=disabled / --ulimit extra
 * arguments.
 * Skipped, saying why, where podman cannot run a container.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "fixtures/agent/agent_test.h"
#include "lease.h"
#include "shim.h"

#define IMAGE "localhost/trainer:test"
#define WRAPPER "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec \"$0\" \"$@\"'"
#define EXTRA "--cgroups=disabled --network=host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096"

static const char *skip_reason;
static pid_t fake_daemon;	/* the fake docker daemon, killed by teardown */

static int sh(const char *cmd)
{
	char *full = xasprintf("%s >/dev/null 2>&1", cmd);
	int rc = system(full);
	free(full);
	return rc;
}

static int group_setup(void **state)
{
	(void)state;
	/* The image, built once for every test that needs it (under a lock). */
	switch (WEXITSTATUS(sh("tests/integration/podman-image.sh"))) {
	case 0:
		break;
	case 3:
		skip_reason = "podman is not installed";
		return 0;
	case 4:
		skip_reason = "no " IMAGE " and no /bin/busybox to build it";
		return 0;
	default:
		skip_reason = "cannot import " IMAGE;
		return 0;
	}
	if (sh(WRAPPER " podman run --rm " EXTRA " " IMAGE " sh -c :")) {
		skip_reason = "podman cannot run a container here";
		return 0;
	}
	return 0;
}

struct fx {
	char *dir;
	struct agent_config cfg;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	test_config(&f->cfg, f->dir, RUNTIME_PODMAN);
	f->cfg.container_engine = xstrdup("podman");
	f->cfg.container_wrapper = xstrdup(WRAPPER);
	f->cfg.container_extra_args = xstrdup(EXTRA);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (fake_daemon > 0) {
		kill(fake_daemon, SIGTERM);
		waitpid(fake_daemon, NULL, 0);
		fake_daemon = 0;
		unsetenv("DOCKER_HOST");
	}
	test_rm_rf(f->dir);
	free(f->dir);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

#define NEED_PODMAN() do { \
	if (skip_reason) { \
		fprintf(stderr, "SKIP: %s\n", skip_reason); \
		skip(); \
	} } while (0)

/*
 * A replica id of this process: containers are named after replicas
 * (tp-<replica>-<attempt>) and podman's are the machine's, so another run of
 * this driver at the same time (another checkout's make test) must not meet
 * them. Freed by the caller.
 */
static char *replica_id(const char *id)
{
	return xasprintf("%s-%d", id, (int)getpid());
}

/* The container of attempt 1 of replica_id(id); freed by the caller. */
static char *container_of(const char *id)
{
	return xasprintf("tp-%s-%d-1", id, (int)getpid());
}

static struct replica *start(struct fx *f, const char *id, const char *image,
			     const char *const *command, const char *const *args,
			     const char *const *env)
{
	struct desired_replica d;
	char *uid = replica_id(id);
	struct replica *r = replica_new(f->dir, uid, 1, f->cfg.runtime);
	test_desired(&d, uid, 1, command, args, env);
	free(uid);
	d.image = xstrdup(image);
	d.job = xstrdup("projects/p/jobs/j");
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

static bool container_exists(const char *name)
{
	char *cmd = xasprintf("podman container exists %s", name);
	bool yes = sh(cmd) == 0;
	free(cmd);
	return yes;
}

static void forget(struct fx *f, struct replica *r)
{
	char *name = r->container ? xstrdup(r->container) : NULL;
	runtime_forget(&f->cfg, r);
	replica_free(r);
	if (name)
		assert_false(container_exists(name));
	free(name);
}

static void podman__echo_gives_its_log_line_and_exit_code(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", NULL };
	const char *args[] = { "echo hello-from-container $GREETING; echo to-stderr >&2; exit 4",
			       NULL };
	const char *env[] = { "GREETING=hi", "CUDA_VISIBLE_DEVICES=1", NULL };
	struct replica *r = start(f, "pod-echo", IMAGE, cmd, args, env);
	char *name = container_of("pod-echo");
	assert_int_equal(r->state, RS_STARTING);
	assert_string_equal(r->container, name);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, RS_EXITED);
	assert_int_equal(r->exit_code, 4);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:hello-from-container hi\n"));
	assert_non_null(strstr(logs, "stderr:to-stderr\n"));
	free(logs);
	/* The container stays until the server has recorded the end. */
	assert_true(container_exists(name));
	free(name);
	forget(f, r);
}

static void podman__env_and_labels_reach_the_container(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "env", NULL };
	const char *env[] = { "TF_CONFIG={\"task\":{\"index\":1}}", NULL };
	struct replica *r = start(f, "pod-env", IMAGE, cmd, NULL, env);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->exit_code, 0);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:TF_CONFIG={\"task\":{\"index\":1}}\n"));
	assert_non_null(strstr(logs, "stdout:NVIDIA_VISIBLE_DEVICES=void\n"));
	free(logs);
	struct strbuf out = STRBUF_INIT;
	char *name = container_of("pod-env"), *label = replica_id("pod-env");
	char *want = xasprintf("%s\n", label);
	char *argv[] = { (char *)"podman", (char *)"inspect", (char *)"--format",
			 (char *)"{{index .Config.Labels \"trainplane.replica\"}}", name, NULL };
	assert_int_equal(run_command(argv, &out, NULL, 20000), 0);
	assert_string_equal(sb_str(&out), want);
	free(name);
	free(label);
	free(want);
	sb_release(&out);
	forget(f, r);
}

static void podman__stop_ends_it_within_the_grace(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-sleep", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, RS_RUNNING);
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 20000));
	assert_int_equal(r->state, RS_EXITED);
	/* sleep as PID 1 ignores SIGTERM: the engine's SIGKILL after 1 s. */
	assert_true(r->exit_code == 137 || r->exit_code == 143);
	forget(f, r);
}

static void podman__missing_image_fails_to_start(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", ":", NULL };
	struct replica *r = start(f, "pod-noimage", "localhost/no-such-image:never", cmd, NULL,
				  NULL);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, RS_FAILED_TO_START);
	assert_non_null(strstr(r->message, "podman run failed"));
	forget(f, r);
}

/* A host directory with a file in it: what an escaped container would reach. */
static char *host_dir_with_secret(void)
{
	char *dir = test_tmpdir();
	char *path = xasprintf("%s/secret", dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("host-secret-4711\n", fp);
	fclose(fp);
	free(path);
	return dir;
}

static bool file_exists_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	bool yes = access(path, F_OK) == 0;
	free(path);
	return yes;
}

/*
 * Issue 12 item 1: an image that is an engine option (`--volume=<host dir>:
 * /host`) with the real image further on in the command or the args. Before
 * the fix `run ... --entrypoint=sh --volume=<dir>:/host localhost/trainer:test
 * -c ...` mounted the host directory. Now the replica fails to start and
 * the host directory is neither read nor written.
 */
static void podman__an_image_that_is_an_option_never_mounts_anything(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	char *host = host_dir_with_secret();
	char *image = xasprintf("--volume=%s:/host", host);
	const char *script = "cat /host/secret; echo escaped > /host/written";
	/* The real image as the command's second word (the first is the entrypoint)... */
	const char *cmd1[] = { "sh", IMAGE, "-c", script, NULL };
	/* ...or, without a command, as the first argument. */
	const char *args2[] = { IMAGE, "sh", "-c", script, NULL };
	/* Other options that would have been read as the engine's. */
	char *image3 = xasprintf("--mount=type=bind,source=%s,target=/host", host);
	const char *cmd3[] = { "sh", IMAGE, "-c", script, NULL };
	struct {
		const char *id, *image;
		const char *const *cmd, *const *args;
	} cases[] = {
		{ "pod-esc-cmd", image, cmd1, NULL },
		{ "pod-esc-args", image, NULL, args2 },
		{ "pod-esc-mount", image3, cmd3, NULL },
		{ "pod-esc-priv", "--privileged", cmd1, NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct replica *r = start(f, cases[i].id, cases[i].image, cases[i].cmd,
					  cases[i].args, NULL);
		assert_true(test_wait_end(&f->cfg, r, 30000));
		char *logs = test_logs(r);
		if (r->state != RS_FAILED_TO_START || strstr(logs, "host-secret-4711"))
			fail_msg("%s: state %s exit %d message %s; logs:\n%s", cases[i].id,
				 replica_state_name(r->state), r->exit_code,
				 r->message ? r->message : "-", logs);
		assert_non_null(strstr(r->message, "not a valid image reference"));
		assert_false(file_exists_in(host, "written"));
		free(logs);
		forget(f, r);
	}
	/* The second wall, which the agent's own check hides above: podman
	 * stops reading options at `--`, so such an image is only a bad name. */
	char *direct = xasprintf(WRAPPER " podman run --rm " EXTRA " -- %s " IMAGE
				 " sh -c 'echo escaped > /host/written'", image);
	assert_int_not_equal(sh(direct), 0);
	assert_false(file_exists_in(host, "written"));
	free(direct);
	test_rm_rf(host);
	free(host);
	free(image);
	free(image3);
}

/*
 * Values that look like engine options, in env values, the command and the
 * args, reach the container as they are: nothing is mounted, and podman's
 * JSON reading of --entrypoint does not turn one word into several.
 */
static void podman__option_like_values_pass_through_literally(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	char *host = host_dir_with_secret();
	char *vol = xasprintf("--volume=%s:/host", host);
	char *env_opt = xasprintf("OPT=%s", vol);
	const char *cmd[] = { "sh", "-c", NULL };
	const char *args[] = { "echo \"env=$OPT $PRIV\"; echo \"args=$0 $1 $2\"; "
			       "if test -e /host; then echo MOUNTED; else echo not-mounted; fi",
			       vol, "--privileged", "--", NULL };
	const char *env[] = { env_opt, "PRIV=--privileged,--network=host", NULL };
	struct replica *r = start(f, "pod-literal", IMAGE, cmd, args, env);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, RS_EXITED);
	assert_int_equal(r->exit_code, 0);
	char *logs = test_logs(r);
	char *want_env = xasprintf("stdout:env=%s --privileged,--network=host\n", vol);
	char *want_args = xasprintf("stdout:args=%s --privileged --\n", vol);
	if (!strstr(logs, want_env) || !strstr(logs, want_args) ||
	    !strstr(logs, "stdout:not-mounted\n"))
		fail_msg("logs:\n%s", logs);
	free(want_env);
	free(want_args);
	free(logs);
	forget(f, r);

	/* podman reads an --entrypoint that parses as a JSON array as the
	 * whole command: a command word is one word, never several. */
	const char *json_cmd[] = { "[\"sh\",\"-c\",\"echo injected\"]", NULL };
	r = start(f, "pod-json-entry", IMAGE, json_cmd, NULL, NULL);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	logs = test_logs(r);
	if (strstr(logs, "injected") || (r->state == RS_EXITED && r->exit_code == 0))
		fail_msg("the entrypoint was read as JSON: state %s exit %d; logs:\n%s",
			 replica_state_name(r->state), r->exit_code, logs);
	free(logs);
	forget(f, r);
	assert_false(file_exists_in(host, "written"));
	test_rm_rf(host);
	free(host);
	free(vol);
	free(env_opt);
}

/* An env name that is not a C identifier (podman reads `NAME*` without a
 * value as "every host variable with this prefix") is refused. */
static void podman__bad_env_names_fail_to_start(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "env", NULL };
	const char *const envs[][2] = {
		{ "BAD-NAME=x", NULL }, { "TRAINPLANE*", NULL }, { "=x", NULL },
		{ "NOVALUE", NULL }, { "1ST=x", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(envs); i++) {
		char *id = xasprintf("pod-badenv-%zu", i);
		struct replica *r = start(f, id, IMAGE, cmd, NULL, envs[i]);
		assert_true(test_wait_end(&f->cfg, r, 30000));
		if (r->state != RS_FAILED_TO_START || !strstr(r->message, "environment variable"))
			fail_msg("%s: state %s message %s", envs[i][0],
				 replica_state_name(r->state), r->message ? r->message : "-");
		forget(f, r);
		free(id);
	}
}

static void podman__exit_code_and_logs_survive_an_agent_restart(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", "echo first; sleep 1; echo second; exit 5", NULL };
	struct replica *r = start(f, "pod-restart", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, RS_RUNNING);
	replica_free(r);	/* agent down */
	test_sleep_ms(1800);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 10000));
	assert_int_equal(list->state, RS_EXITED);
	assert_int_equal(list->exit_code, 5);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:first\nstdout:second\n"));
	free(logs);
	forget(f, list);
}

/* ---- the engine's argv, without podman ------------------------------- */

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A stand-in engine that writes the argv of `create` (without argv[0]) to
 * <dir>/argv, one word a line. */
static char *fake_engine(const char *dir)
{
	char *path = xasprintf("%s/engine.sh", dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n[ \"$1\" = create ] || exit 0\n"
		    "for a in \"$@\"; do printf '%%s\\n' \"$a\"; done >'%s/argv.tmp'\n"
		    "mv '%s/argv.tmp' '%s/argv'\necho fake-container-id\n", dir, dir, dir);
	fclose(fp);
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

/* The lines of path once it exists (waits up to timeout_ms), NULL-terminated. */
static char **read_lines(const char *path, int timeout_ms)
{
	FILE *fp = NULL;
	for (int waited = 0; !(fp = fopen(path, "r")) && waited < timeout_ms; waited += 20)
		test_sleep_ms(20);
	if (!fp)
		fail_msg("%s never appeared", path);
	char **v = xcalloc(1, sizeof(char *)), line[4096];
	size_t n = 0;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		v = xrealloc(v, (n + 2) * sizeof(char *));
		v[n++] = xstrdup(line);
		v[n] = NULL;
	}
	fclose(fp);
	return v;
}

static void free_lines(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void dump_argv(char **argv)
{
	for (size_t i = 0; argv[i]; i++)
		print_message("  argv[%zu] = %s\n", i, argv[i]);
}

/*
 * `create`'s argv for both engines: before `--` only options, each user value
 * glued to its option; `--` right before the image; after it the command's
 * words (but the first) and the args, exactly as given.
 */
static void engine_argv__user_values_never_become_options(void **state)
{
	struct fx *f = *state;
	char *engine = fake_engine(f->dir);
	const char *image = "registry.example.com:5000/team/img:v1@sha256:" HEX64;
	const char *cmd[] = { "python3", "--volume=/:/host", NULL };
	const char *args[] = { "--privileged", "--", "-e", "X=1", "--mount=type=bind", NULL };
	const char *env[] = { "OPT=--volume=/:/host", "TF_CONFIG={\"task\":{}}", NULL };
	const char *after_image[] = { "--volume=/:/host", "--privileged", "--", "-e", "X=1",
				      "--mount=type=bind", NULL };
	enum agent_runtime dialects[] = { RUNTIME_PODMAN, RUNTIME_DOCKER };

	free(f->cfg.container_engine);
	f->cfg.container_engine = xstrdup(engine);
	for (size_t k = 0; k < ARRAY_SIZE(dialects); k++) {
		char *argv_path = xasprintf("%s/argv", f->dir);
		unlink(argv_path);
		f->cfg.runtime = dialects[k];
		free(f->cfg.container_wrapper);
		free(f->cfg.container_extra_args);
		f->cfg.container_wrapper = f->cfg.container_extra_args = NULL;
		char *id = xasprintf("argv-%s", agent_runtime_name(dialects[k]));
		struct replica *r = start(f, id, image, cmd, args, env);
		assert_int_equal(r->state, RS_STARTING);
		char **argv = read_lines(argv_path, 20000);
		size_t dd = 0, n = 0;
		while (argv[n])
			n++;
		for (size_t i = 0; i < n && !dd; i++)
			if (!strcmp(argv[i], "--"))
				dd = i;
		bool ok = n > 3 && !strcmp(argv[0], "create") && dd && dd + 1 < n &&
			  !strcmp(argv[dd + 1], image);
		/* Before "--": options only; "--name" is the one taking the next word. */
		for (size_t i = 1; ok && i < dd; i++) {
			if (!strcmp(argv[i], "--name") && i + 1 < dd && !strncmp(argv[i + 1], "tp-", 3))
				i++;
			else if (strcmp(argv[i], "-d") && (strncmp(argv[i], "--", 2) || !strchr(argv[i], '=')))
				ok = false;
		}
		for (size_t i = 0; ok && after_image[i]; i++)
			ok = dd + 2 + i < n && !strcmp(argv[dd + 2 + i], after_image[i]);
		ok = ok && n == dd + 2 + ARRAY_SIZE(after_image) - 1;
		bool has_env = false, has_entry = false;
		for (size_t i = 1; i < dd; i++) {
			has_env |= !strcmp(argv[i], "--env=OPT=--volume=/:/host");
			has_entry |= !strcmp(argv[i], dialects[k] == RUNTIME_DOCKER ?
					     "--entrypoint=python3" : "--entrypoint=[\"python3\"]");
		}
		if (!ok || !has_env || !has_entry) {
			dump_argv(argv);
			fail_msg("%s: bad run argv", agent_runtime_name(dialects[k]));
		}
		free_lines(argv);
		forget(f, r);
		free(id);
		free(argv_path);
	}

	/* A refused image never reaches the engine at all. */
	const char *bad[] = { "--volume=/:/host", "--privileged", "dir:5000/x", "img\n--privileged",
			      "upper/Case" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *argv_path = xasprintf("%s/argv", f->dir);
		unlink(argv_path);
		struct replica *r = start(f, "argv-bad", bad[i], cmd, args, env);
		if (r->state != RS_FAILED_TO_START || r->helper_pid ||
		    !strstr(r->message, "not a valid image reference") || !access(argv_path, F_OK))
			fail_msg("image \"%s\": state %s message %s", bad[i],
				 replica_state_name(r->state), r->message ? r->message : "-");
		forget(f, r);
		free(argv_path);
	}
	free(engine);
}

/* Whether a unix socket accepts connections. */
static bool unix_listening(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0 || strlen(path) >= sizeof(a.sun_path)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/*
 * The real docker client, talking to a fake daemon, turns the agent's argv
 * into the create request meant: the image, the entrypoint, the command and
 * args word for word, env values whole, and no bind mount or privilege.
 */
static void docker_client__reads_the_agent_argv_as_meant(void **state)
{
	struct fx *f = *state;
	if (sh("command -v docker") || sh("command -v python3")) {
		fprintf(stderr, "SKIP: no docker client or no python3\n");
		skip();
	}
	char *sock = xasprintf("%s/docker.sock", f->dir);
	char *record = xasprintf("%s/create.json", f->dir);
	pid_t daemon = fake_daemon = fork();
	assert_true(daemon >= 0);
	if (daemon == 0) {
		execlp("python3", "python3", "tests/unit/fixtures/agent/fake_docker_daemon.py", sock,
		       record, (char *)NULL);
		_exit(127);
	}
	/* Deadlines, not budgets: a loaded machine can take long to start the
	 * python daemon. Until it listens, not only until its socket file
	 * exists: a client between its bind() and its listen() is refused (the
	 * docker client once was, under make test SANITIZE=1 beside a bench). */
	for (int waited = 0; !unix_listening(sock) && waited < 60000; waited += 20)
		test_sleep_ms(20);
	char *host = xasprintf("unix://%s", sock);
	setenv("DOCKER_HOST", host, 1);
	f->cfg.runtime = RUNTIME_DOCKER;
	free(f->cfg.container_engine);
	free(f->cfg.container_wrapper);
	free(f->cfg.container_extra_args);
	f->cfg.container_engine = xstrdup("docker");
	f->cfg.container_wrapper = f->cfg.container_extra_args = NULL;

	const char *image = "localhost:5000/team/img:v1";
	const char *cmd[] = { "python3", "--volume=/:/host", NULL };
	const char *args[] = { "--privileged", "--", "-e", "X=1", NULL };
	const char *env[] = { "OPT=--volume=/:/host,--privileged", NULL };
	struct replica *r = start(f, "docker-argv", image, cmd, args, env);
	for (int waited = 0; access(record, F_OK) && waited < 60000; waited += 20)
		test_sleep_ms(20);
	json_error_t jerr;
	json_t *req = json_load_file(record, 0, &jerr);
	if (!req)
		fail_msg("no create request recorded: %s", jerr.text);
	char *text = json_dumps(req, JSON_COMPACT);
	json_t *want_cmd = json_pack("[s, s, s, s, s]", "--volume=/:/host", "--privileged", "--",
				     "-e", "X=1");
	json_t *want_entry = json_pack("[s]", "python3");
	json_t *hc = json_object_get(req, "HostConfig"), *envs = json_object_get(req, "Env"), *e;
	bool env_whole = false;
	size_t i;
	json_array_foreach(envs, i, e)
		env_whole |= !strcmp(json_string_value(e), "OPT=--volume=/:/host,--privileged");
	if (strcmp(json_string_value(json_object_get(req, "Image")), image) ||
	    !json_equal(json_object_get(req, "Cmd"), want_cmd) ||
	    !json_equal(json_object_get(req, "Entrypoint"), want_entry) || !env_whole ||
	    json_array_size(json_object_get(hc, "Binds")) || json_array_size(json_object_get(hc, "Mounts")) ||
	    json_is_true(json_object_get(hc, "Privileged")))
		fail_msg("create request: %s", text);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, RS_FAILED_TO_START);	/* the fake daemon's 500 */
	forget(f, r);
	free(text);
	json_decref(want_cmd);
	json_decref(want_entry);
	json_decref(req);
	free(host);
	free(sock);
	free(record);
}

/*
 * The fence with no agent around: the container's log follower stops it
 * when the lease passes (lease.h), and the engine kills it after the grace.
 */
static void podman__the_log_follower_fences_the_container_when_the_lease_passes(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	struct lease l = { lease_clock_usec() + 3600 * 1000000LL, 1, true };
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-fence", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, RS_RUNNING);
	char *name = xstrdup(r->container);
	replica_free(r);	/* agent down: nobody polls */
	l.deadline_usec = lease_clock_usec() + 300000;
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	struct strbuf out = STRBUF_INIT;
	char *argv[] = { (char *)"podman", (char *)"inspect", (char *)"--format", (char *)"{{.State.Status}}", name, NULL };
	int64_t gone = 0;
	for (int i = 0; i < 200 && !gone; i++) {
		sb_release(&out);
		if (run_command(argv, &out, NULL, 20000) == 0 && strncmp(sb_str(&out), "running", 7))
			gone = lease_clock_usec();
		else
			test_sleep_ms(50);
	}
	sb_release(&out);
	assert_true(gone > 0);
	fprintf(stderr, "the fenced container was stopped %.2f s after the deadline (grace 1 s)\n",
		(double)(gone - l.deadline_usec) / 1e6);
	assert_true(gone - l.deadline_usec < 6000000);	/* grace 1 s plus the engine's own time */

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, RS_EXITED);
	assert_true(list->fenced);
	forget(f, list);
	free(name);
}

/* ---- the fence of containers still being started (issue 12) --------- */

/*
 * A wrapper that sleeps `seconds` before the engine commands named in verbs
 * (a slow pull or a slow start), then runs the engine as WRAPPER does.
 */
static char *slow_wrapper(struct fx *f, const char *verbs, int seconds)
{
	char *path = xasprintf("%s/slow-wrapper.sh", f->dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n# $1 is the engine, $2 its verb\ncase \"$2\" in %s) sleep %d ;; esac\n"
		    "exec unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; "
		    "exec \"$0\" \"$@\"' \"$@\"\n", verbs, seconds);
	fclose(fp);
	assert_int_equal(chmod(path, 0755), 0);
	free(f->cfg.container_wrapper);
	f->cfg.container_wrapper = xstrdup(path);
	return path;
}

/* `podman inspect --format <fmt> <name>`, trimmed; NULL when it failed. */
static char *inspect_field(const char *name, const char *fmt)
{
	struct strbuf out = STRBUF_INIT;
	char *argv[] = { (char *)"podman", (char *)"inspect", (char *)"--type=container", (char *)"--format", (char *)fmt,
			 (char *)name, NULL };
	if (run_command(argv, &out, NULL, 20000) != 0) {
		sb_release(&out);
		return NULL;
	}
	char *s = sb_detach(&out);
	s[strcspn(s, "\n")] = '\0';
	return s;
}

/* What the container wrote, as `podman logs` has it (the agent aside). */
static char *container_output(const char *name)
{
	struct strbuf out = STRBUF_INIT;
	char *argv[] = { (char *)"podman", (char *)"logs", (char *)name, NULL };
	(void)run_command(argv, &out, &out, 20000);
	return sb_detach(&out);
}

/* Sets the lease file's deadline ms from now; returns it on the lease clock. */
static int64_t set_lease(struct fx *f, int ms, int grace_s)
{
	struct lease l = { lease_clock_usec() + (int64_t)ms * 1000, grace_s, true };
	if (!f->cfg.lease_file)
		f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	return l.deadline_usec;
}

/* A lease clock time as wall-clock usec since the epoch (podman's clock). */
static int64_t lease_to_wall(int64_t lease_usec)
{
	return now_usec() + (lease_usec - lease_clock_usec());
}

/*
 * Asserts from podman's state and the container's own output that the
 * container never ran: still created, never started, nothing written.
 */
static void assert_never_ran(const char *name)
{
	char *st = inspect_field(name, "{{.State.Status}} {{.State.StartedAt.Unix}}");
	char *out = container_output(name);
	long long started = 0;
	char status[32] = "";
	if (!st || sscanf(st, "%31s %lld", status, &started) != 2 || started > 0 ||
	    (strcmp(status, "created") && strcmp(status, "configured")) || strstr(out, "ran"))
		fail_msg("container %s: state \"%s\", output \"%s\"", name, st ? st : "(none)", out);
	free(st);
	free(out);
}

/*
 * Issue 12: the agent is killed while `create` (standing in for a pull)
 * runs, and the lease passes before it ends. Before the fix `run -d` went
 * on and the container ran with no fence at all: two masters. Now nothing
 * starts it: the container stays created, and a restarted agent past its
 * lease starts nothing either.
 */
static void podman__a_container_created_after_the_agent_died_never_runs(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	free(slow_wrapper(f, "create|run", 4));
	int64_t deadline = set_lease(f, 1000, 1);
	const char *cmd[] = { "sh", "-c", "echo ran; sleep 1000", NULL };
	struct replica *r = start(f, "pod-slow-create", IMAGE, cmd, NULL, NULL);
	assert_int_equal(r->state, RS_STARTING);
	char *name = xstrdup(r->container);
	pid_t engine = r->helper_pid;
	replica_free(r);	/* kill -9 of the agent: nobody polls */

	int st;
	for (int i = 0; i < 600 && waitpid(engine, &st, WNOHANG) == 0; i++)
		test_sleep_ms(50);
	int64_t created = lease_clock_usec();
	assert_true(created > deadline + 1000000);	/* the create ended past lease + grace */
	/* Watch it for a while: it must never be running. */
	while (lease_clock_usec() < created + 3000000) {
		char *status = inspect_field(name, "{{.State.Status}}");
		if (status && !strcmp(status, "running"))
			fail_msg("container %s runs %.1f s after the lease passed with no agent",
				 name, (double)(lease_clock_usec() - deadline) / 1e6);
		free(status);
		test_sleep_ms(100);
	}
	assert_never_ran(name);

	/* The agent comes back with its lease long gone: it starts nothing;
	 * the server's STOP (its replica moved elsewhere) ends it unstarted. */
	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	for (int i = 0; i < 10; i++) {
		runtime_poll(&f->cfg, list);
		test_sleep_ms(50);
	}
	assert_int_equal(list->state, RS_STARTING);
	assert_never_ran(name);
	runtime_stop(&f->cfg, list);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, RS_EXITED);
	assert_never_ran(name);
	forget(f, list);
	free(name);
}

/*
 * `start` itself is slow (a slow storage driver, a loaded host) and the
 * lease passes while it is in flight with no agent: the supervisor that
 * runs it abandons it at the deadline, so the container never runs, and
 * the attempt is LOST.
 */
static void podman__a_start_in_flight_at_the_deadline_is_abandoned(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	free(slow_wrapper(f, "start", 6));
	set_lease(f, 3600 * 1000, 1);
	const char *cmd[] = { "sh", "-c", "echo ran; sleep 1000", NULL };
	struct replica *r = start(f, "pod-slow-start", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == RS_STARTING && !r->shim_pid; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	/* Created; its supervisor is starting it (and sleeping in the wrapper). */
	assert_int_equal(r->state, RS_STARTING);
	assert_true(r->shim_pid > 0);
	int64_t spawned = lease_clock_usec();
	char *name = xstrdup(r->container);
	pid_t shim = r->shim_pid;
	int64_t deadline = set_lease(f, 500, 1);
	replica_free(r);	/* the agent dies */
	for (int i = 0; i < 400 && waitpid(shim, NULL, WNOHANG) == 0; i++)
		test_sleep_ms(50);
	int64_t done = lease_clock_usec();
	fprintf(stderr, "the supervisor gave the start up and ended %.2f s after the deadline "
		"(grace 1 s)\n", (double)(done - deadline) / 1e6);
	/* Past the wrapper's 6 s: had the start not been abandoned, the engine
	 * would have started it by now. */
	while (lease_clock_usec() < spawned + 7000000)
		test_sleep_ms(100);
	assert_never_ran(name);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, RS_EXITED);
	assert_true(list->fenced);	/* reported LOST: restarted elsewhere */
	assert_never_ran(name);
	forget(f, list);
	free(name);
}

/*
 * The agent is gone and the container's log follower (`logs -f`) dies (an
 * engine restart does that): before the fix the fence went with it and the
 * container ran on past the lease. Now the supervisor follows the logs
 * again and still stops the container when the lease passes.
 */
static void podman__the_fence_outlives_a_killed_log_follower(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	set_lease(f, 3600 * 1000, 1);
	/* PID 1 in the container: SIGTERM does nothing, only the kill ends it. */
	const char *cmd[] = { "sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done",
			      NULL };
	struct replica *r = start(f, "pod-follower", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	if (r->state != RS_RUNNING)
		fail_msg("state %s: %s", replica_state_name(r->state), r->message ? r->message : "-");
	char *logpath = replica_path(r, "output.log");
	struct stat sb;
	for (int i = 0; i < 200 && (stat(logpath, &sb) || sb.st_size == 0); i++)
		test_sleep_ms(50);
	assert_true(sb.st_size > 0);
	char *name = xstrdup(r->container);
	pid_t shim = r->shim_pid;
	replica_free(r);	/* the agent dies */

	assert_true(test_signal_descendants(shim, SIGKILL) > 0);	/* and so does `logs -f` */
	stat(logpath, &sb);
	off_t at_kill = sb.st_size;
	test_sleep_ms(1000);
	int64_t deadline = set_lease(f, 1000, 1);
	int64_t deadline_wall = lease_to_wall(deadline);
	char *status = NULL;
	while (lease_clock_usec() < deadline + 15000000) {
		free(status);
		status = inspect_field(name, "{{.State.Status}}");
		if (status && strcmp(status, "running"))
			break;
		test_sleep_ms(100);
	}
	if (!status || !strcmp(status, "running"))
		fail_msg("container %s still runs %.1f s after the lease passed", name,
			 (double)(lease_clock_usec() - deadline) / 1e6);
	free(status);
	/* When it ended, by podman's own record. */
	char *fin = NULL;
	for (int i = 0; i < 100; i++) {
		free(fin);
		fin = inspect_field(name, "{{.State.Status}} {{.State.FinishedAt.UnixNano}}");
		if (fin && !strncmp(fin, "exited ", 7))
			break;
		test_sleep_ms(100);
	}
	long long fin_ns = 0;
	if (!fin || sscanf(fin, "exited %lld", &fin_ns) != 1 || fin_ns <= 0)
		fail_msg("container %s: %s", name, fin ? fin : "(no such container)");
	double after = (double)(fin_ns / 1000 - deadline_wall) / 1e6;
	fprintf(stderr, "follower killed, lease passed: the container ended %.2f s after the "
		"deadline (grace 1 s; the server waits 3 s)\n", after);
	assert_true(after > 0);		/* the fence, not something else, ended it */
	assert_true(after < 1 + 2);	/* within the grace and the server's 2 s margin */
	free(fin);
	/* The supervisor followed the logs again after the follower died. */
	stat(logpath, &sb);
	assert_true(sb.st_size > at_kill);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, RS_EXITED);
	assert_true(list->fenced);
	forget(f, list);
	free(name);
	free(logpath);
}

/*
 * The agent is restarted while `create` runs, within its lease: the new
 * agent finds the created container and starts it (through a supervisor
 * that checks the lease first); its output and exit code arrive.
 */
static void podman__a_container_created_while_the_agent_restarted_is_started(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	free(slow_wrapper(f, "create", 2));
	set_lease(f, 3600 * 1000, 10);
	const char *cmd[] = { "sh", "-c", "echo started-late; exit 6", NULL };
	struct replica *r = start(f, "pod-adopt-create", IMAGE, cmd, NULL, NULL);
	pid_t engine = r->helper_pid;
	replica_free(r);	/* the agent restarts... */
	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_int_equal(list->state, RS_STARTING);	/* ...while create runs */
	for (int i = 0; i < 600 && waitpid(engine, NULL, WNOHANG) == 0; i++) {
		runtime_poll(&f->cfg, list);
		test_sleep_ms(50);
	}
	assert_true(test_wait_end(&f->cfg, list, 30000));
	assert_int_equal(list->state, RS_EXITED);
	assert_int_equal(list->exit_code, 6);
	assert_false(list->fenced);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:started-late\n"));
	free(logs);
	forget(f, list);
}

/*
 * A supervisor whose container was removed ends, even when its replica's
 * directory went first (a work dir wiped by hand): it must not follow and
 * inspect a container that is gone for good.
 */
static void podman__the_supervisor_ends_when_its_container_is_removed(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-removed", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	if (r->state != RS_RUNNING)
		fail_msg("state %s: %s", replica_state_name(r->state), r->message ? r->message : "-");
	pid_t shim = r->shim_pid;
	/* -t 0: a sleep as PID 1 ignores SIGTERM, and rm -f would wait the
	 * container's 10 s stop timeout for nothing before it kills. */
	char *rm = xasprintf("podman rm -f -t 0 %s", r->container);
	test_rm_rf(r->dir);
	replica_free(r);	/* the agent is gone too */
	assert_int_equal(sh(rm), 0);
	int waited = 0;
	while (waitpid(shim, NULL, WNOHANG) == 0 && waited < 20000) {
		test_sleep_ms(50);
		waited += 50;
	}
	if (waited >= 20000) {
		kill(shim, SIGKILL);
		waitpid(shim, NULL, 0);
		fail_msg("the supervisor outlived its container by 20 s");
	}
	free(rm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__echo_gives_its_log_line_and_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__env_and_labels_reach_the_container, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__stop_ends_it_within_the_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__missing_image_fails_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__exit_code_and_logs_survive_an_agent_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__an_image_that_is_an_option_never_mounts_anything, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__option_like_values_pass_through_literally, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__bad_env_names_fail_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(engine_argv__user_values_never_become_options, setup, teardown),
		cmocka_unit_test_setup_teardown(docker_client__reads_the_agent_argv_as_meant, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__the_log_follower_fences_the_container_when_the_lease_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_container_created_after_the_agent_died_never_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_start_in_flight_at_the_deadline_is_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__the_fence_outlives_a_killed_log_follower, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_container_created_while_the_agent_restarted_is_started, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__the_supervisor_ends_when_its_container_is_removed, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
