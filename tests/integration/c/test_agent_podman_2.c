/*
 * test_agent_podman_2.c - part 2 of 3 of test_agent_podman.c's cases, in a
 * driver of its own so that the parts run side by side (make test).
 */
#define PODMAN_PART 2
#include "test_agent_podman.c"
