/*
 * stream_logs.c - `stream-logs` of both APIs: the job's log entries
 * (logging's entries:list) printed as gcloud does, until the job ends.
 */
#include "stream_logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "common.h"
#include "wire.h"

static const char *task_of(const json_t *e)
{
	const char *t = json_string_value(json_object_get(json_object_get(json_object_get(e, "resource"),
								 "labels"), "task_name"));
	if (!t)
		t = json_string_value(json_object_get(json_object_get(e, "labels"), "task_name"));
	if (!t)
		t = json_string_value(json_object_get(json_object_get(e, "labels"), "ml.googleapis.com/task_name"));
	return t ? t : "unknown_task";
}

/*
 * How far back each read looks, by receipt time, for lines that
 * concurrent transactions committed after later ones were read.
 */
#define LOOKBACK_US (INT64_C(5) * 1000000)

/*
 * Follows by receiveTimestamp (when the server took a line), not by
 * timestamp: a replica's lines carry the time the agent read them and
 * reach the server with its next sync, after lines with later timestamps
 * (the service's, another replica's), and a reader that went on by
 * timestamp skipped them. Each read takes what was received since the
 * newest line seen, less LOOKBACK_US; the lines of that window already
 * printed are known by their insertId.
 */
int cli_stream_logs(const char *job_get, const char *log_project, const char *log_job_id,
		    const char *success_state, const char *task, double interval)
{
	int64_t newest = 0;			/* the newest receipt seen (usec) */
	json_t *seen = json_object();		/* insertId -> receipt, within the look-back */
	int ended = 0, rc = 1, tail_reads = 0;

	for (;;) {
		/* is the job over? then one last read gets the tail */
		json_t *j = cli_call("GET", job_get, NULL);
		if (!j)
			break;
		ended = json_object_get(j, "endTime") != NULL;
		const char *state = json_string_value(json_object_get(j, "state"));
		if (ended)
			rc = state && !strcmp(state, success_state) ? 0 : 1;
		json_decref(j);
		const char *token = NULL;
		json_t *page = NULL;
		int failed = 0;
		int64_t from = newest ? newest - LOOKBACK_US : 0;
		do {
			struct strbuf f = STRBUF_INIT;
			sb_addstr(&f, "resource.labels.job_id=");
			sb_add_json_str(&f, log_job_id);
			if (task) {
				sb_addstr(&f, " AND (resource.labels.task_name=");
				sb_add_json_str(&f, task);
				sb_addstr(&f, " OR labels.task_name=");
				sb_add_json_str(&f, task);
				sb_addch(&f, ')');
			}
			if (from) {
				char t[48];
				wire_time_format(from, t, sizeof(t));
				sb_addf(&f, " AND receiveTimestamp>=\"%s\"", t);
			}
			char *proj = xasprintf("projects/%s", log_project);
			json_t *req = json_pack("{s:[s],s:s,s:s,s:i}", "resourceNames", proj, "filter", sb_str(&f),
						"orderBy", "timestamp asc", "pageSize", 1000);
			if (token)
				json_object_set_new(req, "pageToken", json_string(token));
			free(proj);
			sb_release(&f);
			json_decref(page);
			page = cli_call("POST", "/v2/entries:list", req);
			json_decref(req);
			if (!page) {
				failed = 1;
				break;
			}
			size_t i;
			json_t *e;
			json_array_foreach(json_object_get(page, "entries"), i, e) {
				const char *ts = json_string_value(json_object_get(e, "timestamp"));
				const char *rt = json_string_value(json_object_get(e, "receiveTimestamp"));
				const char *id = json_string_value(json_object_get(e, "insertId"));
				int64_t got;
				if (!ts || !id || !rt || wire_time_parse(rt, &got))
					continue;
				if (json_object_get(seen, id))
					continue;
				json_object_set_new(seen, id, json_integer(got));
				if (got > newest)
					newest = got;
				const char *msg = json_string_value(json_object_get(e, "textPayload"));
				if (!msg)
					msg = json_string_value(json_object_get(json_object_get(e, "jsonPayload"), "message"));
				const char *sev = json_string_value(json_object_get(e, "severity"));
				printf("%s\t%s\t%s\t\t%s\n", sev ? sev : "DEFAULT", ts, task_of(e), msg ? msg : "");
			}
			fflush(stdout);
			token = json_string_value(json_object_get(page, "nextPageToken"));
		} while (token && *token);
		json_decref(page);
		if (failed) {
			rc = 1;
			break;
		}
		/* what no later read can return any more is forgotten */
		const char *key;
		json_t *v, *tmp;
		json_object_foreach_safe(seen, tmp, key, v) {
			if (json_integer_value(v) < newest - LOOKBACK_US)
				json_object_del(seen, key);
		}
		/* one more read after the end: lines the agent shipped late */
		if (ended && tail_reads++ >= 1)
			break;
		usleep((useconds_t)((ended ? 0.5 : interval) * 1e6));
	}
	json_decref(seen);
	return rc;
}

double cli_polling(const char *interval)
{
	return atof(interval) > 0 ? atof(interval) : 1;
}
