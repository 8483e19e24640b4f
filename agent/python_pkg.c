/*
 * python_pkg.c - trainer packages (python_pkg.h): the runtime map, the
 * packages found beneath the storage root, the bootstrap's argv, and
 * whether a replica that ended had started its module.
 */
#include "python_pkg.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "python_runtimes.h"
#include "runtime.h"
#include "strbuf.h"
#include "wire.h"

/*
 * The module's runner, in the venv's Python: the checks `python -m` makes
 * (runpy's own, so the same "No module named ..." words), the start mark,
 * then the module as __main__ as `python -m` runs it. argv: module, args.
 */
static const char run_script[] =
	"import runpy, sys\n"
	"m = sys.argv[1]\n"
	"del sys.argv[0]\n"
	"find = getattr(runpy, '_get_module_details', None)\n"
	"if find is not None:\n"
	"    try:\n"
	"        find(m)\n"
	"    except ImportError as e:\n"
	"        msg = '%s: %s' % (sys.executable, e)\n"
	"        sys.stderr.write(msg + '\\n')\n"
	"        sys.stderr.write('" PYPKG_MARK_FAILED "' + msg + '\\n')\n"
	"        sys.exit(1)\n"
	"sys.stderr.write('" PYPKG_MARK_STARTED "python -m ' + m + '\\n')\n"
	"sys.stderr.flush()\n"
	"run = getattr(runpy, '_run_module_as_main', None)\n"
	"if run is not None:\n"
	"    run(m)\n"
	"else:\n"
	"    runpy.run_module(m, run_name='__main__', alter_sys=True)\n";

/*
 * The bootstrap, in the runtime's Python with -I (no PYTHON* variable, no
 * user site: the job's environment cannot change how it installs). argv:
 * venv, module, n, n packages, args. The venv sees the system's
 * site-packages (python_pkg.h says why not --target); pip runs offline
 * and isolated (no index, no build isolation, which would fetch
 * setuptools, no cache, no configuration or PIP_* variable); then the
 * venv's Python, without -I, runs the module with the job's environment.
 */
static const char bootstrap_script[] =
	"import os, subprocess, sys\n"
	"def say(m):\n"
	"    sys.stderr.write('[trainplane] ' + m + '\\n')\n"
	"    sys.stderr.flush()\n"
	"def fail(m):\n"
	"    sys.stderr.write('" PYPKG_MARK_FAILED "' + m + '\\n')\n"
	"    sys.exit(1)\n"
	"venv, module, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
	"pkgs, args = sys.argv[4:4 + n], sys.argv[4 + n:]\n"
	"py = os.path.join(venv, 'bin', 'python')\n"
	"if not os.path.exists(py):\n"
	"    say('making a virtual environment that sees the system site-packages: ' + venv)\n"
	"    try:\n"
	"        import venv as v\n"
	"        v.EnvBuilder(system_site_packages=True, symlinks=True).create(venv)\n"
	"    except Exception as e:\n"
	"        fail('cannot make a virtual environment in %s: %s' % (venv, e))\n"
	"if pkgs:\n"
	"    say('installing ' + ', '.join(os.path.basename(p) for p in pkgs))\n"
	"    try:\n"
	"        r = subprocess.run([py, '-I', '-m', 'pip', 'install', '--isolated', '--no-index',\n"
	"                            '--no-build-isolation', '--no-cache-dir',\n"
	"                            '--disable-pip-version-check', '--no-input',\n"
	"                            '--no-warn-script-location'] + pkgs,\n"
	"                           stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
	"    except OSError as e:\n"
	"        fail('cannot run pip: %s' % e)\n"
	"    err = r.stderr.decode('utf-8', 'replace')\n"
	"    sys.stderr.write(err)\n"
	"    sys.stderr.flush()\n"
	"    if r.returncode:\n"
	"        lines = [l.strip() for l in err.splitlines() if l.strip()]\n"
	"        why = [l for l in lines if l.startswith('ERROR:')] or lines[-3:]\n"
	"        fail('installing the packages failed (pip exit status %d): %s'\n"
	"             % (r.returncode, ' '.join(why) or 'no message'))\n"
	"try:\n"
	"    os.execv(py, [py, '-c', RUN, module] + args)\n"
	"except OSError as e:\n"
	"    fail('cannot run %s: %s' % (py, e))\n";

/* ---- the runtime map ------------------------------------------------------ */

char *pypkg_runtime(const struct agent_config *cfg, const struct desired_replica *d, char *err,
		    size_t errlen)
{
	bool container = cfg->runtime == RUNTIME_PODMAN || cfg->runtime == RUNTIME_DOCKER;
	const char *rv = d->runtime_version, *pv = d->python_version, *img = d->executor_image;
	char *keys[3] = { NULL, NULL, NULL }, *found = NULL;
	size_t nkeys = 0;
	struct strbuf what = STRBUF_INIT, tried = STRBUF_INIT;

	if (rv && pv)
		keys[nkeys++] = xasprintf("%s/%s", rv, pv);
	if (rv)
		keys[nkeys++] = xstrdup(rv);
	else if (img)
		keys[nkeys++] = xstrdup(img);
	if (rv)
		sb_addf(&what, "runtime version %s%s%s", rv, pv ? " with Python " : "", pv ? pv : "");
	else if (img)
		sb_addf(&what, "executor image %s", img);
	else
		sb_addstr(&what, "a job that names no runtime");

	if (!cfg->python_runtimes || !*cfg->python_runtimes) {
		if (!container)
			found = xstrdup(PYPKG_DEFAULT_PYTHON);
		else if (img && !rv)
			found = xstrdup(img);
		else
			snprintf(err, errlen, "%s has no image on node %s: the agent key python_runtimes "
				 "maps none (e.g. python_runtimes: '%s=IMAGE')", sb_str(&what), cfg->node,
				 rv ? rv : "*");
		goto out;
	}
	for (size_t i = 0; i < nkeys && !found; i++) {
		found = python_runtimes_get(cfg->python_runtimes, keys[i]);
		sb_addf(&tried, "%s, ", keys[i]);
	}
	if (!found)
		found = python_runtimes_get(cfg->python_runtimes, "*");
	sb_addstr(&tried, "*");
	if (!found)
		snprintf(err, errlen, "%s is not available on node %s: the agent key python_runtimes "
			 "maps none of %s", sb_str(&what), cfg->node, sb_str(&tried));
out:
	for (size_t i = 0; i < nkeys; i++)
		free(keys[i]);
	sb_release(&what);
	sb_release(&tried);
	return found;
}

/* ---- names and files ------------------------------------------------------- */

static bool ident_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool pypkg_module_ok(const char *m)
{
	bool at_start = true;

	if (!m || !*m || strlen(m) > PYPKG_MODULE_MAX)
		return false;
	for (const char *p = m; *p; p++) {
		if (*p == '.') {
			if (at_start)
				return false;
			at_start = true;
		} else if (at_start ? !ident_start(*p) : !(ident_start(*p) || (*p >= '0' && *p <= '9'))) {
			return false;
		} else {
			at_start = false;
		}
	}
	return !at_start;
}

/* A short, printable form of s for a message. */
static const char *shown(const char *s)
{
	if (strlen(s) > 300)
		return "(too long to repeat)";
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return "(not printable)";
	return s;
}

/* Checks "bucket/object" as text: no empty, "." or ".." component. */
static const char *bad_object_path(const char *rel)
{
	const char *p = rel;

	if (!*rel || *rel == '/')
		return "has no bucket";
	if (!strchr(rel, '/') || rel[strlen(rel) - 1] == '/')
		return "names no file";
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (!n)
			return "has an empty path segment ('//')";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "has a '.' or '..' segment";
		p += n + (end ? 1 : 0);
	}
	return NULL;
}

/* openat2(dirfd, path, RESOLVE_BENEATH); -1 with errno ENOSYS where the kernel has none. */
static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Kernels before 5.6: the resolved path must lie under the resolved root. */
static int open_checked(const char *root, const char *rel)
{
	char *full = xasprintf("%s/%s", root, rel);
	char *rroot = realpath(root, NULL), *rfull = realpath(full, NULL);
	int fd = -1;

	if (!rroot || !rfull) {
		errno = !rroot ? errno : ENOENT;
	} else if (strncmp(rfull, rroot, strlen(rroot)) ||
		   (rfull[strlen(rroot)] != '/' && strcmp(rroot, "/"))) {
		errno = EXDEV;
	} else {
		fd = open(rfull, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	}
	free(full);
	free(rroot);
	free(rfull);
	return fd;
}

int pypkg_open(const char *storage_root, const char *uri, const char **rel_out, char *err,
	       size_t errlen)
{
	const char *rel, *bad;
	struct stat st;
	int root, fd;

	if (strncmp(uri, "gs://", 5)) {
		snprintf(err, errlen, "package URI \"%s\" is not a gs:// URI", shown(uri));
		return -1;
	}
	rel = uri + 5;
	if ((bad = bad_object_path(rel))) {
		snprintf(err, errlen, "package URI \"%s\" %s", shown(uri), bad);
		return -1;
	}
	if (!storage_root || !*storage_root) {
		snprintf(err, errlen, "package %s cannot be read: this node has no storage root "
			 "(agent key storage_root) to find gs:// files in", shown(uri));
		return -1;
	}
	root = open(storage_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		snprintf(err, errlen, "package %s cannot be read: the storage root: %s", shown(uri),
			 strerror(errno));
		return -1;
	}
	fd = open_beneath(root, rel);
	if (fd < 0 && errno == ENOSYS)
		fd = open_checked(storage_root, rel);
	int e = errno;
	close(root);
	if (fd < 0 && (e == EXDEV || e == ELOOP)) {
		snprintf(err, errlen, "package %s resolves outside the storage root (a symbolic "
			 "link out of it)", shown(uri));
		return -1;
	}
	if (fd < 0) {
		snprintf(err, errlen, "package %s cannot be read: %s", shown(uri),
			 e == ENOENT ? "no such object in the storage root" : strerror(e));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "package %s is not a file", shown(uri));
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
	if (rel_out)
		*rel_out = rel;
	return fd;
}

/* Copies from fd into a new file path. 0, or -1 with errno. */
static int copy_to(int fd, const char *path)
{
	char buf[65536];
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), rc = -1;
	ssize_t got;

	if (out < 0)
		return -1;
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto out;
		for (ssize_t off = 0; off < got;) {
			ssize_t w = write(out, buf + off, (size_t)(got - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			off += w;
		}
	}
	rc = 0;
out:
	if (close(out))
		rc = -1;
	return rc;
}

int pypkg_argv(const struct agent_config *cfg, const char *dir, const char *python,
	       const struct desired_replica *d, bool container, struct strvec *argv, char *err,
	       size_t errlen)
{
	size_t n = 0;
	struct strvec pkgs = STRVEC_INIT;
	int rc = -1;

	while (d->packages && d->packages[n])
		n++;
	if (n > PYPKG_MAX_PACKAGES) {
		snprintf(err, errlen, "%zu packages: at most %d", n, PYPKG_MAX_PACKAGES);
		return -1;
	}
	if (!pypkg_module_ok(d->python_module)) {
		snprintf(err, errlen, "pythonModule \"%s\" is not a Python module name (dotted "
			 "identifiers, e.g. trainer.task)",
			 shown(d->python_module ? d->python_module : ""));
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *rel;
		int fd = pypkg_open(cfg->storage_root, d->packages[i], &rel, err, errlen);
		if (fd < 0)
			goto out;
		if (container) {
			strvec_pushf(&pkgs, "/gcs/%s", rel);
			close(fd);
			continue;
		}
		const char *base = strrchr(rel, '/') + 1;
		char *sub = xasprintf("%s/packages/%zu", dir, i);
		char *path = xasprintf("%s/%s", sub, base);
		int e = mkdir_p(sub) ? errno : copy_to(fd, path) ? errno : 0;
		close(fd);
		free(sub);
		if (e) {
			snprintf(err, errlen, "package %s cannot be copied to %s: %s",
				 shown(d->packages[i]), path, strerror(e));
			free(path);
			goto out;
		}
		strvec_push_own(&pkgs, path);
	}
	strvec_push(argv, python);
	strvec_push(argv, "-I");
	strvec_push(argv, "-c");
	/* The runner travels inside the bootstrap as a Python string literal
	 * (a JSON string in ASCII is one). */
	json_t *lit = json_string(run_script);
	char *quoted = json_dumps(lit, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	json_decref(lit);
	strvec_pushf(argv, "RUN = %s\n%s", quoted, bootstrap_script);
	free(quoted);
	if (container)
		strvec_push(argv, PYPKG_CONTAINER_VENV);
	else
		strvec_pushf(argv, "%s/venv", dir);
	strvec_push(argv, d->python_module);
	strvec_pushf(argv, "%zu", n);
	for (size_t i = 0; i < n; i++)
		strvec_push(argv, pkgs.v[i]);
	for (size_t i = 0; d->args && d->args[i]; i++)
		strvec_push_own(argv, runtime_map_gcs(d->args[i], cfg->storage_root, container));
	rc = 0;
out:
	strvec_clear(&pkgs);
	return rc;
}

char *pypkg_prepare(const struct agent_config *cfg, const struct replica *r,
		    const struct desired_replica *d, struct strvec *argv, char **image)
{
	bool container = cfg->runtime == RUNTIME_PODMAN || cfg->runtime == RUNTIME_DOCKER;
	char err[1024], *python, *dir = NULL, *why = NULL;

	*image = NULL;
	python = pypkg_runtime(cfg, d, err, sizeof(err));
	if (!python)
		return xstrdup(err);
	if (!container && access(python, X_OK)) {
		why = xasprintf("the Python of this job's runtime on node %s, %s: %s", cfg->node,
				python, strerror(errno));
		goto out;
	}
	dir = realpath(r->dir, NULL);
	if (!dir) {
		why = xasprintf("%s: %s", r->dir, strerror(errno));
		goto out;
	}
	if (pypkg_argv(cfg, dir, container ? PYPKG_CONTAINER_PYTHON : python, d, container, argv,
		       err, sizeof(err))) {
		why = xstrdup(err);
		strvec_clear(argv);
		goto out;
	}
	if (container) {
		*image = python;
		python = NULL;
	}
out:
	free(dir);
	free(python);
	return why;
}

/* ---- did it start? ---------------------------------------------------------- */

#define START_SCAN_MAX (8 << 20)	/* the bootstrap's output precedes the mark */
#define MESSAGE_MAX 2000

char *pypkg_start_failure(const char *log_path, int exit_code)
{
	FILE *f = fopen(log_path, "r");
	char *line = NULL, *failed = NULL, *last = NULL, *msg;
	size_t cap = 0;
	ssize_t got;
	long read_bytes = 0;

	while (f && read_bytes < START_SCAN_MAX && (got = getline(&line, &cap, f)) > 0) {
		read_bytes += got;
		if (line[got - 1] == '\n')
			line[--got] = '\0';
		/* "<usec> <O|E> <text>" */
		char *sp = strchr(line, ' ');
		if (!sp || sp[1] != 'E' || sp[2] != ' ')
			continue;
		const char *text = sp + 3;
		if (!strncmp(text, PYPKG_MARK_STARTED, strlen(PYPKG_MARK_STARTED))) {
			free(failed);
			free(last);
			free(line);
			fclose(f);
			return NULL;
		}
		if (!strncmp(text, PYPKG_MARK_FAILED, strlen(PYPKG_MARK_FAILED))) {
			free(failed);
			failed = xstrdup(text + strlen(PYPKG_MARK_FAILED));
		} else if (*text) {
			free(last);
			last = xstrdup(text);
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (failed)
		msg = failed;
	else if (last)
		msg = xasprintf("the package bootstrap ended with exit status %d before the module "
				"started: %s", exit_code, last);
	else
		msg = xasprintf("the package bootstrap ended with exit status %d before the module "
				"started, with no message", exit_code);
	free(last);
	if (msg != failed)
		free(failed);
	if (strlen(msg) > MESSAGE_MAX)
		strcpy(msg + MESSAGE_MAX - 3, "...");
	char *clean = wire_utf8_sanitize(msg);
	free(msg);
	return clean;
}
