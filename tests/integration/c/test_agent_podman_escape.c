/*
 * Integration tests: user values never become engine options (issue 12
 * item 1): an image that is an option, option-like env values, command
 * words and args, bad env names, with a real podman; the engine's argv
 * for both dialects (a stand-in engine); the real docker client against a
 * fake daemon (tests/unit/fixtures/agent/fake_docker_daemon.py); and a
 * container's /gcs: its project's buckets, never another's (issue 28).
 * The set-up: podman_fixture.h.
 */
#include "podman_fixture.h"

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
		if (r->state != REPLICA_FAILED_TO_START || strstr(logs, "host-secret-4711"))
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
	assert_int_equal(r->state, REPLICA_EXITED);
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
	if (strstr(logs, "injected") || (r->state == REPLICA_EXITED && r->exit_code == 0))
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

static void write_file(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	free(path);
}

/* A replica of project A's job with buckets (the sync's "buckets"). */
static struct replica *start_with_buckets(struct fx *f, const char *id, const char *const *buckets,
					  const char *script)
{
	struct desired_replica d;
	const char *cmd[] = { "sh", "-c", script, NULL };
	char *uid = replica_id(id);
	struct replica *r = replica_new(f->dir, uid, 1, f->cfg.runtime);
	test_desired(&d, uid, 1, cmd, NULL, NULL);
	free(uid);
	d.image = xstrdup(IMAGE);
	d.job = xstrdup("projects/a/jobs/j");
	size_t n = 0;
	while (buckets[n])
		n++;
	d.buckets = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		d.buckets[i] = xstrdup(buckets[i]);
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

/*
 * Issue 28: tenants on one node. The storage root holds project A's bucket
 * and project B's; a container of A's job gets /gcs/a-bucket read-write and
 * no trace of B's bucket (nor of the root, nor of a link planted in it).
 * A bucket name that is no bucket name ("..") mounts nothing: the replica
 * fails to start.
 */
static void podman__a_container_sees_its_projects_buckets_only(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	char *root = xasprintf("%s/gcs", f->dir), *a = xasprintf("%s/a-bucket", root),
	     *b = xasprintf("%s/b-bucket", root), *link = xasprintf("%s/a-link", root);
	char *host = host_dir_with_secret();
	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(a, 0777), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	assert_int_equal(symlink(host, link), 0);
	write_file(a, "own.txt", "own-data-a\n");
	write_file(b, "secret.txt", "tenant-b-secret\n");
	free(f->cfg.storage_root);
	f->cfg.storage_root = xstrdup(root);

	const char *buckets[] = { "a-bucket", "a-link", NULL };
	struct replica *r = start_with_buckets(f, "pod-gcs-a", buckets,
		"cat /gcs/a-bucket/own.txt; echo \"ls=$(ls /gcs | tr '\\n' ' ')\"; "
		"if test -e /gcs/b-bucket; then echo SEES-B; else echo no-b; fi; "
		"cat /gcs/b-bucket/secret.txt /gcs/a-link/secret 2>/dev/null; "
		"echo from-a > /gcs/a-bucket/written.txt && echo wrote");
	assert_true(test_wait_end(&f->cfg, r, 30000));
	char *logs = test_logs(r);
	if (r->state != REPLICA_EXITED || !strstr(logs, "stdout:own-data-a\n") ||
	    !strstr(logs, "stdout:ls=a-bucket \n") || !strstr(logs, "stdout:no-b\n") ||
	    strstr(logs, "tenant-b-secret") || strstr(logs, "host-secret-4711") ||
	    !strstr(logs, "stdout:wrote\n"))
		fail_msg("state %s exit %d message %s; logs:\n%s", replica_state_name(r->state),
			 r->exit_code, r->message ? r->message : "-", logs);
	assert_true(file_exists_in(a, "written.txt"));
	free(logs);
	forget(f, r);

	const char *bad[] = { "a-bucket", "..", NULL };
	r = start_with_buckets(f, "pod-gcs-bad", bad, "ls /gcs");
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "which is no bucket name: nothing is mounted"));
	forget(f, r);
	test_rm_rf(host);
	free(host);
	free(root);
	free(a);
	free(b);
	free(link);
}

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
		if (r->state != REPLICA_FAILED_TO_START || !strstr(r->message, "environment variable"))
			fail_msg("%s: state %s message %s", envs[i][0],
				 replica_state_name(r->state), r->message ? r->message : "-");
		forget(f, r);
		free(id);
	}
}

/* ---- the engine's argv, without podman ------------------------------- */

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

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
		assert_int_equal(r->state, REPLICA_STARTING);
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
		if (r->state != REPLICA_FAILED_TO_START || r->helper_pid ||
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
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);	/* the fake daemon's 500 */
	forget(f, r);
	free(text);
	json_decref(want_cmd);
	json_decref(want_entry);
	json_decref(req);
	free(host);
	free(sock);
	free(record);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__an_image_that_is_an_option_never_mounts_anything, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__option_like_values_pass_through_literally, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__bad_env_names_fail_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_container_sees_its_projects_buckets_only, setup, teardown),
		cmocka_unit_test_setup_teardown(engine_argv__user_values_never_become_options, setup, teardown),
		cmocka_unit_test_setup_teardown(docker_client__reads_the_agent_argv_as_meant, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
