/*
 * stream_logs.h - `stream-logs`: a job's log followed until the job ends.
 */
#ifndef TP_CLI_STREAM_LOGS_H
#define TP_CLI_STREAM_LOGS_H

/*
 * Follows a job's log until the job ends, printing each entry once as
 * gcloud does ("SEVERITY\tTIME\tTASK\t\tMESSAGE"); returns the exit status
 * (0 only if it ended in success_state). job_get is the job's GET path;
 * log_project and log_job_id are what its log entries carry
 * (resource.labels.job_id is the ml job id, or a CustomJob's numeric id);
 * task (may be NULL) keeps one task's lines. Polls every interval seconds.
 */
int cli_stream_logs(const char *job_get, const char *log_project, const char *log_job_id,
		    const char *success_state, const char *task, double interval);
/* --polling-interval's value in seconds; 1 when it is not a positive number. */
double cli_polling(const char *interval);

#endif
