/*
 * podman_fixture.h - what the podman drivers of this folder share
 * (test_agent_podman_*.c: the container runtime, agent/runtime_container.c,
 * with a real podman): the configuration this machine needs
 * (/work/shared/ENVIRONMENT.md): a busybox image imported as
 * localhost/trainer:test (tests/integration/podman-image.sh builds it when
 * missing, once, under a lock), the `unshare -m` wrapper and
 * --cgroups=disabled / --ulimit extra arguments; each case's fixture (a
 * temp dir and an agent configuration); starting a replica's container
 * and forgetting it; and the helpers of the fence cases (a slow wrapper,
 * the lease file, podman's own view of a container).
 *
 * One driver was all of these cases, one after another (the floor of
 * make test's time); split by theme they run side by side. Header-only:
 * each driver is one file and links nothing else of the tests. A case
 * whose driver finds no usable podman is skipped, saying why.
 */
#ifndef TP_PODMAN_FIXTURE_H
#define TP_PODMAN_FIXTURE_H

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

static inline int sh(const char *cmd)
{
	char *full = xasprintf("%s >/dev/null 2>&1", cmd);
	int rc = system(full);
	free(full);
	return rc;
}

static inline int group_setup(void **state)
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

static inline int setup(void **state)
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

static inline int teardown(void **state)
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
static inline char *replica_id(const char *id)
{
	return xasprintf("%s-%d", id, (int)getpid());
}

/* The container of attempt 1 of replica_id(id); freed by the caller. */
static inline char *container_of(const char *id)
{
	return xasprintf("tp-%s-%d-1", id, (int)getpid());
}

static inline struct replica *start(struct fx *f, const char *id, const char *image,
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

static inline bool container_exists(const char *name)
{
	char *cmd = xasprintf("podman container exists %s", name);
	bool yes = sh(cmd) == 0;
	free(cmd);
	return yes;
}

static inline void forget(struct fx *f, struct replica *r)
{
	char *name = r->container ? xstrdup(r->container) : NULL;
	runtime_forget(&f->cfg, r);
	replica_free(r);
	if (name)
		assert_false(container_exists(name));
	free(name);
}


/* ---- the fence helpers ------------------------------------------------ */

/*
 * A wrapper that sleeps `seconds` before the engine commands named in verbs
 * (a slow pull or a slow start), then runs the engine as WRAPPER does.
 */
static inline char *slow_wrapper(struct fx *f, const char *verbs, int seconds)
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
static inline char *inspect_field(const char *name, const char *fmt)
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
static inline char *container_output(const char *name)
{
	struct strbuf out = STRBUF_INIT;
	char *argv[] = { (char *)"podman", (char *)"logs", (char *)name, NULL };
	(void)run_command(argv, &out, &out, 20000);
	return sb_detach(&out);
}

/* Sets the lease file's deadline ms from now; returns it on the lease clock. */
static inline int64_t set_lease(struct fx *f, int ms, int grace_s)
{
	struct lease l = { lease_clock_usec() + (int64_t)ms * 1000, grace_s, true };
	if (!f->cfg.lease_file)
		f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	return l.deadline_usec;
}

/* A lease clock time as wall-clock usec since the epoch (podman's clock). */
static inline int64_t lease_to_wall(int64_t lease_usec)
{
	return now_usec() + (lease_usec - lease_clock_usec());
}

/*
 * Asserts from podman's state and the container's own output that the
 * container never ran: still created, never started, nothing written.
 */
static inline void assert_never_ran(const char *name)
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


#endif
