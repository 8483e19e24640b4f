/*
 * simulate_script.h - the script of a simulated replica: how long it runs
 * and how it exits. The server sends one per replica (the sync answer's
 * `simulate`), the agent's simulate_default key gives the rest; the
 * simulate runtime (runtime_simulate.c) plays it.
 */
#ifndef TP_AGENT_SIMULATE_SCRIPT_H
#define TP_AGENT_SIMULATE_SCRIPT_H

#include "common.h"

/*
 * Parses a simulate script: "run-<N>s-exit-<C>", "fail-<C>-after-<N>s" or
 * "succeed-after-<N>s" (N may have a fraction, at most a year; C 0-255).
 * 0 or -1.
 */
int simulate_script_parse(const char *s, double *seconds, int *exit_code) MUST_CHECK;

#endif
