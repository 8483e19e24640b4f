/*
 * sim_rules.h - the emulator's scripted outcomes (docs/emulator.md,
 * "Scripted outcomes"): a list of rules, each a match and an outcome; the
 * first rule that matches a replica decides how its simulated run ends.
 *
 *   {"match": {"project": "ci-*", "jobId": "nightly_*", "displayName": "...",
 *              "labels": {"team": "ml"}, "api": "ml" | "vertex",
 *              "role": "master" | "worker" | "parameter_server" | "evaluator"
 *                      | "workerpool0" .. "workerpool3"},
 *    "outcome": "succeed" | "fail" | "preempt" | "hang" | "queue",
 *    "seconds": 5,          (succeed, fail, preempt: the run's length)
 *    "exitCode": 3,         (fail: 1-255)
 *    "times": 1,            (preempt: the attempts preempted, default 1)
 *    "metric": "-(lr - 0.01)^2"}   (succeed: a tuning trial's metric)
 *
 * A role names a replica role of ml v1 or the Vertex worker pool in its
 * place (chief and workerpool0 are the master, workerpool1 the workers,
 * ...). Globs are fnmatch(3) patterns (* ? [...]); an absent match key matches
 * anything. "queue" holds the whole job QUEUED; the others script the
 * matched replicas. The job label `trainplane-simulate` wins over rules.
 */
#ifndef TP_SIM_RULES_H
#define TP_SIM_RULES_H

#include <jansson.h>
#include <stdbool.h>

#include "common.h"
#include "violation.h"

#define SIM_RULES_MAX 1000

struct sim_rules;

/*
 * Parses and checks a rule list (a JSON array), reporting every problem
 * into vs with its path under prefix ("rules[2].match.api"). NULL when
 * there was any.
 */
struct sim_rules *sim_rules_parse(const json_t *list, const char *prefix, struct violations *vs);
void sim_rules_free(struct sim_rules *r);	/* NULL is a no-op */
size_t sim_rules_count(const struct sim_rules *r);

/* What a rule is matched against. */
struct sim_job {
	const char *project;
	const char *job_id;		/* ml v1 jobId, or the Vertex numeric id */
	const char *display_name;	/* Vertex; NULL for ml v1 */
	const json_t *labels;		/* object or NULL */
	bool vertex;
};

/* Does a rule hold the job in the queue? Its index, or -1. */
int sim_rules_holds(const struct sim_rules *r, const struct sim_job *job);

/*
 * The simulate object of a replica of role (its role index: 0 master or
 * chief or workerpool0, 1 worker or workerpool1, 2 parameter_server or
 * workerpool2, 3 evaluator or workerpool3): {"seconds"?, "exitCode"?, "outcome": "exit" | "hang" |
 * "preempt", "preemptTimes"?, "metric"?} from the first rule that matches,
 * or NULL. lookup and ctx give a trial's parameter values for a metric
 * (NULL: no trial); a metric that cannot be evaluated is left out, with
 * why in err (err[0] is '\0' otherwise).
 */
typedef int (*sim_rules_param)(void *ctx, const char *name, double *value);
json_t *sim_rules_simulate(const struct sim_rules *r, const struct sim_job *job, int role,
			   sim_rules_param lookup, void *ctx, char *err, size_t errlen);

#endif
