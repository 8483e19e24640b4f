/*
 * python_pkg.h - trainer packages: a replica of an ml v1 job with
 * packageUris + pythonModule, or of a Vertex pythonPackageSpec pool
 * (agent/PROTOCOL.md: "packages", "pythonModule", "pythonRuntime").
 *
 * Such a replica runs a small Python bootstrap of ours, never a shell:
 *
 *   <python> -I -c <BOOTSTRAP> <venv> <module> <n> <package>... <arg>...
 *
 * which (1) makes a virtual environment <venv> that sees the Python's own
 * site-packages (--system-site-packages), (2) installs the packages into it
 * offline (`pip install --isolated --no-index --no-build-isolation`), and
 * (3) replaces itself with the venv's Python running the module as
 * `python -m` does (runpy), the args after it. <python> is the node's
 * interpreter for the job's runtime (the agent key python_runtimes); in a
 * container it is the image's python3 and <venv> lies in the container.
 *
 * Why a venv with --system-site-packages and not `pip install --target`:
 * with --target pip ignores what is installed (it sets ignore_installed),
 * so a package whose install_requires names a library the runtime has (the
 * runtime image's TensorFlow, NumPy, ...) fails offline with "No matching
 * distribution found"; a venv that sees the system's site-packages takes
 * those as satisfied, fails with pip's message on one that is missing, and
 * never writes outside the replica's own directory (tested:
 * tests/integration/packages.test.mjs).
 *
 * Until the module runs, the replica is starting: the bootstrap writes
 * "[trainplane] started: python -m <module>" to stderr just before the
 * module's code runs, and on a failure before that
 * "[trainplane] failed: <why>" (pip's ERROR lines; Python's own "No module
 * named ..."). A replica that ends non-zero without the first line never
 * started: it is reported FAILED_TO_START with that reason, which the
 * server puts in the job's errorMessage; the whole output is in its log.
 */
#ifndef TP_AGENT_PYTHON_PKG_H
#define TP_AGENT_PYTHON_PKG_H

#include <stdbool.h>
#include <stddef.h>

#include "agent_config.h"
#include "replica.h"
#include "strvec.h"

#define PYPKG_MAX_PACKAGES 100		/* packageUris, as the APIs allow */
#define PYPKG_MODULE_MAX 255
#define PYPKG_DEFAULT_PYTHON "/usr/bin/python3"	/* process runtime, map unset */
#define PYPKG_CONTAINER_PYTHON "python3"	/* the interpreter inside an image */
#define PYPKG_CONTAINER_VENV "/tmp/trainplane/venv"
#define PYPKG_MARK_STARTED "[trainplane] started: "
#define PYPKG_MARK_FAILED "[trainplane] failed: "

/*
 * The Python of a package replica: what python_runtimes maps its selector
 * to, trying "<runtimeVersion>/<pythonVersion>", "<runtimeVersion>" (ml v1)
 * or "<executorImageUri>" (Vertex), then "*". Without a map: the process
 * runtime's PYPKG_DEFAULT_PYTHON; in a container the executor image itself
 * (Vertex), none for an ml v1 runtime version. Returns a new string (a
 * host path, or an image), or NULL with the reason in err.
 */
char *pypkg_runtime(const struct agent_config *cfg, const struct desired_replica *d, char *err,
		    size_t errlen);

/* Whether m is a module name: dotted identifiers ([A-Za-z_][A-Za-z0-9_]*). */
bool pypkg_module_ok(const char *m);

/*
 * Opens the file a gs:// URI names under the storage root, beneath it (no
 * "..", no symbolic link out of it: openat2 RESOLVE_BENEATH), a regular
 * file. Returns the descriptor, or -1 with the reason in err. *rel (may be
 * NULL) points into uri: "bucket/object".
 */
int pypkg_open(const char *storage_root, const char *uri, const char **rel, char *err,
	       size_t errlen);

/*
 * The argv of a package replica, appended to argv: python, "-I", "-c",
 * the bootstrap, venv, module, the packages' count and paths, then args
 * (gs:// mapped for the runtime). For a host process (container false) each
 * package is copied into <dir>/packages/<i>/<file name>; for a container
 * it is checked where it lies and named under /gcs/. 0, or -1 with the
 * reason in err (argv then holds a part).
 */
int pypkg_argv(const struct agent_config *cfg, const char *dir, const char *python,
	       const struct desired_replica *d, bool container, struct strvec *argv, char *err,
	       size_t errlen) MUST_CHECK;

/*
 * What a package replica r runs, for cfg's runtime: the runtime's Python
 * (pypkg_runtime()), then pypkg_argv() with r's directory made absolute
 * (the process's cwd is its work/). A host process: argv is the whole
 * command, and *image is NULL. A container: *image (a new string) is the
 * image to run and argv[0] its entrypoint. Returns NULL, or why r cannot
 * start (a new string; argv is then cleared).
 */
char *pypkg_prepare(const struct agent_config *cfg, const struct replica *r,
		    const struct desired_replica *d, struct strvec *argv, char **image);

/*
 * After a package replica ended with a non-zero code: reads its output
 * log (<dir>/output.log). Returns NULL when the module had started (an exit
 * of the trainer), else why it never started (a new string: the
 * bootstrap's "failed" line, or its last line on stderr).
 */
char *pypkg_start_failure(const char *log_path, int exit_code);

#endif
