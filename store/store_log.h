/*
 * store_log.h - job logs as Cloud Logging entries.
 */
#ifndef TP_STORE_LOG_H
#define TP_STORE_LOG_H

#include <jansson.h>
#include <stdbool.h>

#include "store.h"

/*
 * One page of a project's log entries as LogEntry JSON objects (new
 * array), ordered by time then insertion, after the position (time_us, id)
 * when id > 0, that filter (spec/list_filter.h, parsed against
 * list_filter_log_entries; NULL: every entry) matches.
 */
struct list_filter;
enum store_rc store_log_list(struct store *st, const char *project, bool desc, int64_t after_us,
			     int64_t after_id, int limit, const struct list_filter *filter,
			     json_t **out) MUST_CHECK;

/*
 * A line from trainplane itself (attempt 0) in a job's log, under task
 * (e.g. "service"): what users read with stream-logs. Its severity is INFO,
 * or WARNING when warning (streams "system", "warning": schema/016).
 */
enum store_rc store_log_add(struct store *st, int64_t job, const char *task, bool warning,
			    const char *text) MUST_CHECK;

/* Deletes entries older than days. *deleted: how many. */
enum store_rc store_log_expire(struct store_conn *c, int days, long *deleted) MUST_CHECK;

#endif
