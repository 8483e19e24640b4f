/*
 * commands.h - the CLI's command groups, one file each. Each runs one verb
 * of its group with the arguments after the verb, and returns the exit
 * status (0 ok, 1 the server refused or the job failed, EXIT_USAGE).
 */
#ifndef TP_CLI_COMMANDS_H
#define TP_CLI_COMMANDS_H

/* trainplane ai-platform jobs VERB ... (jobs.c): the ml v1 Jobs API. */
int cli_jobs_run(const char *verb, int argc, char **argv);
/* trainplane ai custom-jobs VERB ... (custom_jobs.c): Vertex AI's CustomJobs. */
int cli_custom_jobs_run(const char *verb, int argc, char **argv);
/* trainplane ai hp-tuning-jobs VERB ... (hp_tuning_jobs.c): Vertex AI's HyperparameterTuningJobs. */
int cli_hp_tuning_jobs_run(const char *verb, int argc, char **argv);
/* trainplane nodes VERB ... (nodes.c): the agents' nodes. */
int cli_nodes_run(const char *verb, int argc, char **argv);

/* trainplane quotas list | queue list (quotas.c): a project's limits, usage and queue. */
int cli_quotas_run(const char *group, const char *verb, int argc, char **argv);

/* trainplane emulator VERB ... (emulator.c): an emulator's reset, clock and rules. */
int cli_emulator_run(const char *verb, int argc, char **argv);

#endif
