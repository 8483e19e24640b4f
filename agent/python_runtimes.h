/*
 * python_runtimes.h - the agent key python_runtimes: which Python runs a
 * trainer package replica (python_pkg.h), by the job's runtime.
 *
 * The value is blank- (or comma-) separated SELECTOR=VALUE words:
 *   SELECTOR  "<runtimeVersion>/<pythonVersion>", "<runtimeVersion>" (ml v1),
 *             an executor image URI (Vertex pythonPackageSpec), or "*"
 *   VALUE     process runtime: the absolute path of a host Python
 *             interpreter; podman/docker: an image whose python3 runs it
 * e.g. "2.11/3.7=/opt/py37/bin/python3 2.11=/usr/bin/python3 *=/usr/bin/python3".
 * Nothing here does I/O; the lookup order is python_pkg.c's.
 */
#ifndef TP_AGENT_PYTHON_RUNTIMES_H
#define TP_AGENT_PYTHON_RUNTIMES_H

#include "runtime_kind.h"

/* NULL when map (NULL or "" is fine) is well formed for runtime rt; else
 * why not (a static buffer). */
const char *python_runtimes_check(const char *map, enum agent_runtime rt);

/* The VALUE of SELECTOR key in map (a new string), or NULL. */
char *python_runtimes_get(const char *map, const char *key);

#endif
