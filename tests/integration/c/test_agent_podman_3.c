/*
 * test_agent_podman_3.c - part 3 of 3 of test_agent_podman.c's cases, in a
 * driver of its own so that the parts run side by side (make test).
 */
#define PODMAN_PART 3
#include "test_agent_podman.c"
