/*
 * runtime_kind.c - the runtimes' names.
 */
#include "runtime_kind.h"

#include <string.h>

static const char *const runtime_names[] = {
	[RUNTIME_PROCESS] = "process", [RUNTIME_PODMAN] = "podman",
	[RUNTIME_DOCKER] = "docker", [RUNTIME_SIMULATE] = "simulate",
};

int agent_runtime_parse(const char *s, enum agent_runtime *out)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(runtime_names); i++) {
		if (!strcmp(s, runtime_names[i])) {
			*out = (enum agent_runtime)i;
			return 0;
		}
	}
	return -1;
}

const char *agent_runtime_name(enum agent_runtime rt)
{
	return (size_t)rt < ARRAY_SIZE(runtime_names) ? runtime_names[rt] : "?";
}
