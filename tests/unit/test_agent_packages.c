/*
 * Unit tests: trainer packages on the agent (agent/python_pkg.c,
 * agent/python_runtimes.c): the runtime map and its lookup, module names,
 * package URIs resolved beneath the storage root (no "..", no symbolic link
 * out, no FIFO that would block), the bootstrap's argv, reading whether a
 * replica that ended had started its module, and the process runtime for
 * real with the host's /usr/bin/python3 (no pip run here: that is
 * tests/integration/packages.test.mjs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/stat.h>

#include "fixtures/agent/agent_test.h"
#include "python_pkg.h"
#include "python_runtimes.h"

struct fx {
	char *dir, *root;
	struct agent_config cfg;
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	f->root = xasprintf("%s/gcs", f->dir);
	test_config(&f->cfg, f->dir, RUNTIME_PROCESS);
	f->cfg.storage_root = xstrdup(f->root);
	char *pkgs = xasprintf("%s/bucket/pkgs", f->root);
	assert_int_equal(mkdir_p(pkgs), 0);
	char *file = xasprintf("%s/trainer-0.1.tar.gz", pkgs);
	write_file(file, "not really a tarball");
	free(file);
	free(pkgs);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	test_rm_rf(f->dir);
	free(f->dir);
	free(f->root);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

/* ---- the runtime map ------------------------------------------------------ */

static void runtimes__checked_for_the_runtime(void **state)
{
	(void)state;
	assert_null(python_runtimes_check(NULL, RUNTIME_PROCESS));
	assert_null(python_runtimes_check("", RUNTIME_PROCESS));
	assert_null(python_runtimes_check("2.11/3.7=/opt/py37/bin/python3 2.11=/usr/bin/python3,"
					  " *=/usr/bin/python3", RUNTIME_PROCESS));
	assert_null(python_runtimes_check("2.11=localhost/tf:2.11 gcr.io/p/e:1=python:3.11",
					  RUNTIME_PODMAN));
	assert_non_null(strstr(python_runtimes_check("2.11", RUNTIME_PROCESS), "SELECTOR=VALUE"));
	assert_non_null(strstr(python_runtimes_check("=/usr/bin/python3", RUNTIME_PROCESS),
			       "SELECTOR=VALUE"));
	assert_non_null(strstr(python_runtimes_check("*=", RUNTIME_PROCESS), "SELECTOR=VALUE"));
	assert_non_null(strstr(python_runtimes_check("*=python3", RUNTIME_PROCESS),
			       "absolute path"));
	assert_non_null(strstr(python_runtimes_check("*=--privileged", RUNTIME_DOCKER),
			       "not an image reference"));
	/* The simulate runtime runs nothing: any value. */
	assert_null(python_runtimes_check("*=anything", RUNTIME_SIMULATE));

	char *v = python_runtimes_get("a=1 b/c=2,*=3", "b/c");
	assert_string_equal(v, "2");
	free(v);
	assert_null(python_runtimes_get("a=1 ab=2", "b"));
	assert_null(python_runtimes_get(NULL, "*"));
}

static void set_runtime(struct desired_replica *d, const char *rv, const char *pv,
			const char *img)
{
	free(d->runtime_version);
	free(d->python_version);
	free(d->executor_image);
	d->runtime_version = rv ? xstrdup(rv) : NULL;
	d->python_version = pv ? xstrdup(pv) : NULL;
	d->executor_image = img ? xstrdup(img) : NULL;
}

static void expect_runtime(const struct agent_config *cfg, const struct desired_replica *d,
			   const char *want, const char *err_part)
{
	char err[512] = "";
	char *got = pypkg_runtime(cfg, d, err, sizeof(err));
	if (want) {
		if (!got)
			fail_msg("no runtime: %s", err);
		assert_string_equal(got, want);
	} else {
		assert_null(got);
		if (!strstr(err, err_part))
			fail_msg("'%s' not in '%s'", err_part, err);
	}
	free(got);
}

static void runtimes__looked_up_most_specific_first(void **state)
{
	struct fx *f = *state;
	struct desired_replica d = { 0 };

	/* No map: the host's python3 for every runtime (process runtime). */
	set_runtime(&d, "2.11", "3.7", NULL);
	expect_runtime(&f->cfg, &d, PYPKG_DEFAULT_PYTHON, NULL);
	set_runtime(&d, NULL, NULL, "gcr.io/p/e:1");
	expect_runtime(&f->cfg, &d, PYPKG_DEFAULT_PYTHON, NULL);

	f->cfg.python_runtimes = xstrdup("2.11/3.7=/a 2.11=/b gcr.io/p/e:1=/e *=/c");
	set_runtime(&d, "2.11", "3.7", NULL);
	expect_runtime(&f->cfg, &d, "/a", NULL);
	set_runtime(&d, "2.11", NULL, NULL);
	expect_runtime(&f->cfg, &d, "/b", NULL);
	set_runtime(&d, "2.11", "2.7", NULL);
	expect_runtime(&f->cfg, &d, "/b", NULL);
	set_runtime(&d, "1.15", "3.7", NULL);
	expect_runtime(&f->cfg, &d, "/c", NULL);
	set_runtime(&d, NULL, NULL, "gcr.io/p/e:1");
	expect_runtime(&f->cfg, &d, "/e", NULL);

	/* A map without "*": what it does not name is not on this node. */
	free(f->cfg.python_runtimes);
	f->cfg.python_runtimes = xstrdup("2.11=/b");
	set_runtime(&d, "1.15", "3.7", NULL);
	expect_runtime(&f->cfg, &d, NULL, "runtime version 1.15 with Python 3.7 is not available "
		       "on node test-node: the agent key python_runtimes maps none of 1.15/3.7, "
		       "1.15, *");
	set_runtime(&d, NULL, NULL, "gcr.io/p/e:2");
	expect_runtime(&f->cfg, &d, NULL, "executor image gcr.io/p/e:2 is not available");

	/* Containers: no map runs a Vertex job in its executor image; an ml v1
	 * runtime version has no image unless the map names one. */
	free(f->cfg.python_runtimes);
	f->cfg.python_runtimes = NULL;
	f->cfg.runtime = RUNTIME_PODMAN;
	set_runtime(&d, NULL, NULL, "gcr.io/p/e:1");
	expect_runtime(&f->cfg, &d, "gcr.io/p/e:1", NULL);
	set_runtime(&d, "2.11", NULL, NULL);
	expect_runtime(&f->cfg, &d, NULL, "runtime version 2.11 has no image on node test-node");
	f->cfg.python_runtimes = xstrdup("2.11=localhost/tf:2.11");
	expect_runtime(&f->cfg, &d, "localhost/tf:2.11", NULL);
	f->cfg.runtime = RUNTIME_PROCESS;
	desired_replica_release(&d);
}

static void module_names(void **state)
{
	(void)state;
	static const char *const good[] = { "trainer", "trainer.task", "_x.y_2.Z", NULL };
	static const char *const bad[] = { "", ".trainer", "trainer.", "trainer..task", "2x",
					   "trainer.2", "-c", "trainer task", "a;b", "a/b",
					   "tr\xc3\xa4iner", NULL };
	for (size_t i = 0; good[i]; i++)
		if (!pypkg_module_ok(good[i]))
			fail_msg("refused %s", good[i]);
	for (size_t i = 0; bad[i]; i++)
		if (pypkg_module_ok(bad[i]))
			fail_msg("accepted %s", bad[i]);
	char long_name[300];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_false(pypkg_module_ok(long_name));
	assert_false(pypkg_module_ok(NULL));
}

/* ---- package URIs beneath the storage root --------------------------------- */

static void expect_open_fails(const char *root, const char *uri, const char *part)
{
	char err[512] = "";
	int fd = pypkg_open(root, uri, NULL, err, sizeof(err));
	if (fd >= 0)
		fail_msg("opened %s", uri);
	if (!strstr(err, part))
		fail_msg("%s: '%s' not in '%s'", uri, part, err);
}

static void packages__found_beneath_the_root_only(void **state)
{
	struct fx *f = *state;
	char err[512];
	const char *rel = NULL;

	int fd = pypkg_open(f->root, "gs://bucket/pkgs/trainer-0.1.tar.gz", &rel, err, sizeof(err));
	assert_true(fd >= 0);
	assert_string_equal(rel, "bucket/pkgs/trainer-0.1.tar.gz");
	close(fd);

	expect_open_fails(f->root, "/etc/passwd", "is not a gs:// URI");
	expect_open_fails(f->root, "s3://bucket/pkgs/trainer-0.1.tar.gz", "is not a gs:// URI");
	expect_open_fails(f->root, "file:///etc/passwd", "is not a gs:// URI");
	expect_open_fails(NULL, "gs://bucket/pkgs/trainer-0.1.tar.gz", "no storage root");
	expect_open_fails("", "gs://bucket/pkgs/trainer-0.1.tar.gz", "no storage root");
	expect_open_fails(f->root, "gs://bucket/../../../etc/passwd", "'.' or '..' segment");
	expect_open_fails(f->root, "gs://bucket/pkgs/./trainer-0.1.tar.gz", "'.' or '..' segment");
	expect_open_fails(f->root, "gs://bucket//pkgs/trainer-0.1.tar.gz", "empty path segment");
	expect_open_fails(f->root, "gs:///etc/passwd", "has no bucket");
	expect_open_fails(f->root, "gs://bucket", "names no file");
	expect_open_fails(f->root, "gs://bucket/pkgs/", "names no file");
	expect_open_fails(f->root, "gs://bucket/pkgs/missing.tar.gz", "no such object");
	expect_open_fails(f->root, "gs://bucket/pkgs", "is not a file");
	expect_open_fails(f->root, "gs://bucket/\n", "(not printable)");

	/* Symbolic links: within the root they are followed; out of it, never. */
	char *in = xasprintf("%s/bucket/alias.tar.gz", f->root);
	char *out_file = xasprintf("%s/bucket/passwd", f->root);
	char *out_dir = xasprintf("%s/bucket/etc", f->root);
	char *abs_in = xasprintf("%s/bucket/pkgs/trainer-0.1.tar.gz", f->root);
	char *secret = xasprintf("%s/secret", f->dir);
	write_file(secret, "outside");
	assert_int_equal(symlink("pkgs/trainer-0.1.tar.gz", in), 0);
	assert_int_equal(symlink(secret, out_file), 0);
	assert_int_equal(symlink("/etc", out_dir), 0);
	fd = pypkg_open(f->root, "gs://bucket/alias.tar.gz", NULL, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	expect_open_fails(f->root, "gs://bucket/passwd", "resolves outside the storage root");
	expect_open_fails(f->root, "gs://bucket/etc/passwd", "resolves outside the storage root");
	/* An absolute link back into the root still leaves RESOLVE_BENEATH. */
	char *abs_link = xasprintf("%s/bucket/abs.tar.gz", f->root);
	assert_int_equal(symlink(abs_in, abs_link), 0);
	expect_open_fails(f->root, "gs://bucket/abs.tar.gz", "resolves outside the storage root");

	/* A FIFO is refused at once, not waited on. */
	char *fifo = xasprintf("%s/bucket/pkgs/fifo.tar.gz", f->root);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	expect_open_fails(f->root, "gs://bucket/pkgs/fifo.tar.gz", "is not a file");

	free(in);
	free(out_file);
	free(out_dir);
	free(abs_in);
	free(abs_link);
	free(secret);
	free(fifo);
}

/* ---- the bootstrap's argv ---------------------------------------------------- */

static void package_desired(struct desired_replica *d, const char *module,
			    const char *const *packages, const char *const *args)
{
	test_desired(d, "5-master-0-00112233aabbccdd", 1, NULL, args, NULL);
	d->packages = test_strv(packages);
	d->python_module = xstrdup(module);
	d->runtime_version = xstrdup("2.11");
}

static void argv__host_process_copies_the_packages(void **state)
{
	struct fx *f = *state;
	struct desired_replica d;
	struct strvec argv = STRVEC_INIT;
	char err[512];
	const char *pkgs[] = { "gs://bucket/pkgs/trainer-0.1.tar.gz",
			       "gs://bucket/pkgs/trainer-0.1.tar.gz", NULL };
	const char *args[] = { "--epochs", "2", "--job-dir", "gs://bucket/out", NULL };
	char *rdir = xasprintf("%s/r", f->dir);

	assert_int_equal(mkdir_p(rdir), 0);
	package_desired(&d, "trainer.task", pkgs, args);
	assert_int_equal(pypkg_argv(&f->cfg, rdir, "/usr/bin/python3", &d, false, &argv, err,
				    sizeof(err)), 0);
	char **v = strvec_get(&argv);
	assert_string_equal(v[0], "/usr/bin/python3");
	assert_string_equal(v[1], "-I");
	assert_string_equal(v[2], "-c");
	assert_true(!strncmp(v[3], "RUN = \"", 7));
	assert_non_null(strstr(v[3], "'--no-index'"));
	assert_non_null(strstr(v[3], "'--no-build-isolation'"));
	assert_non_null(strstr(v[3], "system_site_packages=True"));
	char *want = xasprintf("%s/venv", rdir);
	assert_string_equal(v[4], want);
	free(want);
	assert_string_equal(v[5], "trainer.task");
	assert_string_equal(v[6], "2");
	/* Each package its own folder: two of one name do not collide. */
	for (int i = 0; i < 2; i++) {
		want = xasprintf("%s/packages/%d/trainer-0.1.tar.gz", rdir, i);
		assert_string_equal(v[7 + i], want);
		struct stat st;
		assert_int_equal(stat(want, &st), 0);
		assert_int_equal(st.st_size, (off_t)strlen("not really a tarball"));
		free(want);
	}
	assert_string_equal(v[9], "--epochs");
	assert_string_equal(v[10], "2");
	assert_string_equal(v[11], "--job-dir");
	want = xasprintf("%s/bucket/out", f->root);
	assert_string_equal(v[12], want);
	free(want);
	assert_null(v[13]);
	strvec_clear(&argv);
	desired_replica_release(&d);
	free(rdir);
}

static void argv__container_names_them_under_gcs(void **state)
{
	struct fx *f = *state;
	struct desired_replica d;
	struct strvec argv = STRVEC_INIT;
	char err[512];
	const char *pkgs[] = { "gs://bucket/pkgs/trainer-0.1.tar.gz", NULL };
	const char *args[] = { "--data=gs://bucket/data", NULL };

	package_desired(&d, "trainer.task", pkgs, args);
	assert_int_equal(pypkg_argv(&f->cfg, "/nonexistent", PYPKG_CONTAINER_PYTHON, &d, true,
				    &argv, err, sizeof(err)), 0);
	char **v = strvec_get(&argv);
	assert_string_equal(v[0], "python3");
	assert_string_equal(v[4], PYPKG_CONTAINER_VENV);
	assert_string_equal(v[6], "1");
	assert_string_equal(v[7], "/gcs/bucket/pkgs/trainer-0.1.tar.gz");
	assert_string_equal(v[8], "--data=/gcs/bucket/data");
	assert_null(v[9]);
	strvec_clear(&argv);
	desired_replica_release(&d);
}

static void argv__refuses_bad_modules_and_packages(void **state)
{
	struct fx *f = *state;
	struct desired_replica d;
	struct strvec argv = STRVEC_INIT;
	char err[512];
	const char *pkgs[] = { "gs://bucket/pkgs/trainer-0.1.tar.gz", "gs://bucket/../x", NULL };

	package_desired(&d, "trainer.task; rm -rf /", pkgs, NULL);
	assert_int_equal(pypkg_argv(&f->cfg, f->dir, "/usr/bin/python3", &d, false, &argv, err,
				    sizeof(err)), -1);
	assert_non_null(strstr(err, "pythonModule \"trainer.task; rm -rf /\" is not a Python "
			       "module name"));
	free(d.python_module);
	d.python_module = xstrdup("trainer.task");
	assert_int_equal(pypkg_argv(&f->cfg, f->dir, "/usr/bin/python3", &d, false, &argv, err,
				    sizeof(err)), -1);
	assert_non_null(strstr(err, "package URI \"gs://bucket/../x\" has a '.' or '..' segment"));
	strvec_clear(&argv);
	desired_replica_release(&d);
}

/* ---- did it start? ------------------------------------------------------------- */

static void start_failure__read_from_the_log(void **state)
{
	struct fx *f = *state;
	char *log = xasprintf("%s/output.log", f->dir);
	char *why;

	write_file(log, "1 E [trainplane] installing trainer-0.1.tar.gz\n"
		   "2 O Processing ./trainer-0.1.tar.gz\n"
		   "3 E " PYPKG_MARK_STARTED "python -m trainer.task\n"
		   "4 E " PYPKG_MARK_FAILED "forged by the trainer\n"
		   "5 E Traceback (most recent call last):\n");
	assert_null(pypkg_start_failure(log, 1));

	write_file(log, "1 E [trainplane] installing trainer-0.1.tar.gz\n"
		   "2 E ERROR: No matching distribution found for nodep\n"
		   "3 E " PYPKG_MARK_FAILED "installing the packages failed (pip exit status 1): "
		   "ERROR: No matching distribution found for nodep\n"
		   "4 O " PYPKG_MARK_STARTED "on stdout: not ours\n");
	why = pypkg_start_failure(log, 1);
	assert_string_equal(why, "installing the packages failed (pip exit status 1): ERROR: No "
			    "matching distribution found for nodep");
	free(why);

	write_file(log, "1 O out\n2 E SyntaxError: invalid syntax\n3 O more\n");
	why = pypkg_start_failure(log, 1);
	assert_string_equal(why, "the package bootstrap ended with exit status 1 before the "
			    "module started: SyntaxError: invalid syntax");
	free(why);

	unlink(log);
	why = pypkg_start_failure(log, 137);
	assert_string_equal(why, "the package bootstrap ended with exit status 137 before the "
			    "module started, with no message");
	free(why);

	/* Not UTF-8, and too long: cleaned and cut. */
	struct strbuf sb = STRBUF_INIT;
	sb_addstr(&sb, "1 E " PYPKG_MARK_FAILED "\xff");
	for (int i = 0; i < 5000; i++)
		sb_addch(&sb, 'x');
	sb_addch(&sb, '\n');
	write_file(log, sb_str(&sb));
	sb_release(&sb);
	why = pypkg_start_failure(log, 1);
	assert_true(!strncmp(why, "\xef\xbf\xbdxxx", 6));
	assert_true(strlen(why) <= 2005);
	assert_non_null(strstr(why, "..."));
	free(why);
	free(log);
}

/* ---- the process runtime, for real ---------------------------------------------- */

static bool have_python(void)
{
	return access(PYPKG_DEFAULT_PYTHON, X_OK) == 0;
}

static struct replica *start_package(struct fx *f, const char *id, const char *module,
				     const char *const *pkgs, const char *const *args,
				     const char *module_file, const char *module_text)
{
	struct desired_replica d;
	struct replica *r = replica_new(f->dir, id, 1, RUNTIME_PROCESS);
	package_desired(&d, module, pkgs, args);
	if (module_file) {
		/* A module in the replica's work dir (its cwd, on sys.path). */
		char *work = replica_path(r, "work"), *path = xasprintf("%s/%s", work, module_file);
		assert_int_equal(mkdir_p(work), 0);
		write_file(path, module_text);
		free(path);
		free(work);
	}
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

static void process__package_uri_problems_fail_to_start(void **state)
{
	struct fx *f = *state;
	const char *outside[] = { "gs://bucket/../../etc/passwd", NULL };
	const char *missing[] = { "gs://bucket/pkgs/nope.tar.gz", NULL };
	struct replica *r = start_package(f, "p-out", "trainer.task", outside, NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "'.' or '..' segment"));
	runtime_forget(&f->cfg, r);
	replica_free(r);

	r = start_package(f, "p-missing", "trainer.task", missing, NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_string_equal(r->message, "package gs://bucket/pkgs/nope.tar.gz cannot be read: no "
			    "such object in the storage root");
	runtime_forget(&f->cfg, r);
	replica_free(r);

	free(f->cfg.storage_root);
	f->cfg.storage_root = NULL;
	r = start_package(f, "p-noroot", "trainer.task", missing, NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "this node has no storage root"));
	runtime_forget(&f->cfg, r);
	replica_free(r);

	/* An unmapped runtime, an interpreter that is not there. */
	f->cfg.python_runtimes = xstrdup("1.15=/usr/bin/python3");
	r = start_package(f, "p-unmapped", "trainer.task", NULL, NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "runtime version 2.11 is not available on node "
			       "test-node"));
	runtime_forget(&f->cfg, r);
	replica_free(r);
	free(f->cfg.python_runtimes);
	f->cfg.python_runtimes = xstrdup("*=/nonexistent/python3");
	r = start_package(f, "p-nopython", "trainer.task", NULL, NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_string_equal(r->message, "the Python of this job's runtime on node test-node, "
			    "/nonexistent/python3: No such file or directory");
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void process__no_such_module_fails_to_start_with_pythons_words(void **state)
{
	struct fx *f = *state;
	if (!have_python())
		skip();
	struct replica *r = start_package(f, "p-nomod", "trainplane_no_such_module.task", NULL,
					  NULL, NULL, NULL);
	assert_int_equal(r->state, REPLICA_RUNNING);
	assert_true(r->python_package);
	assert_true(test_wait_end(&f->cfg, r, 20000));
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	/* What `python -m` says when the package itself is missing. */
	char *want = xasprintf("%s/venv/bin/python: Error while finding module specification for "
			       "'trainplane_no_such_module.task' (ModuleNotFoundError: No module "
			       "named 'trainplane_no_such_module')", r->dir);
	assert_string_equal(r->message, want);
	free(want);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stderr:" PYPKG_MARK_FAILED));
	assert_non_null(strstr(logs, "No module named 'trainplane_no_such_module'"));
	free(logs);
	/* Reloaded (an agent restart): still a package replica. */
	struct replica *again = replica_load(r->dir);
	assert_true(again->python_package);
	replica_free(again);
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

static void process__a_started_module_exits_as_itself(void **state)
{
	struct fx *f = *state;
	if (!have_python())
		skip();
	const char *args[] = { "--job-dir", "gs://bucket/out", NULL };
	struct replica *r = start_package(f, "p-exit", "exit3", NULL, args, "exit3.py",
					  "import sys\nprint('argv', sys.argv[1:])\n"
					  "print('prefix', sys.prefix)\nsys.exit(3)\n");
	assert_true(test_wait_end(&f->cfg, r, 20000));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 3);
	char *logs = test_logs(r);
	char *want = xasprintf("stdout:argv ['--job-dir', '%s/bucket/out']\n", f->root);
	assert_non_null(strstr(logs, want));
	free(want);
	/* It ran in the replica's own venv, not the system's Python. */
	want = xasprintf("stdout:prefix %s/venv\n", r->dir);
	assert_non_null(strstr(logs, want));
	free(want);
	assert_non_null(strstr(logs, "stderr:" PYPKG_MARK_STARTED "python -m exit3\n"));
	free(logs);
	runtime_forget(&f->cfg, r);
	replica_free(r);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runtimes__checked_for_the_runtime),
		cmocka_unit_test_setup_teardown(runtimes__looked_up_most_specific_first, setup, teardown),
		cmocka_unit_test(module_names),
		cmocka_unit_test_setup_teardown(packages__found_beneath_the_root_only, setup, teardown),
		cmocka_unit_test_setup_teardown(argv__host_process_copies_the_packages, setup, teardown),
		cmocka_unit_test_setup_teardown(argv__container_names_them_under_gcs, setup, teardown),
		cmocka_unit_test_setup_teardown(argv__refuses_bad_modules_and_packages, setup, teardown),
		cmocka_unit_test_setup_teardown(start_failure__read_from_the_log, setup, teardown),
		cmocka_unit_test_setup_teardown(process__package_uri_problems_fail_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(process__no_such_module_fails_to_start_with_pythons_words,
						setup, teardown),
		cmocka_unit_test_setup_teardown(process__a_started_module_exits_as_itself, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
