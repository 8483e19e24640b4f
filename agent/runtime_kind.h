/*
 * runtime_kind.h - which runtime runs a node's replicas (the `runtime` key),
 * and its names. Both the configuration and each replica's status file
 * name it; nothing here depends on either.
 */
#ifndef TP_AGENT_RUNTIME_KIND_H
#define TP_AGENT_RUNTIME_KIND_H

#include "common.h"

enum agent_runtime {
	RUNTIME_PROCESS,	/* the command as a host process; image ignored */
	RUNTIME_PODMAN,		/* containers through the podman CLI */
	RUNTIME_DOCKER,		/* containers through the docker CLI */
	RUNTIME_SIMULATE,	/* nothing runs; a scripted duration and exit code */
};

/* "process" ... "simulate" -> enum. 0 or -1. */
int agent_runtime_parse(const char *s, enum agent_runtime *out) MUST_CHECK;
/* The name agent_runtime_parse() takes; "?" for a value out of range. */
const char *agent_runtime_name(enum agent_runtime rt);

#endif
