/*
 * replica_log.h - a replica's output.log (replica.h) and its shipping to
 * the server: records appended by the supervisor (shim.h) or a runtime,
 * read back in batches that stay pinned until a sync answer acknowledges
 * them, so that a lost answer sends the same lines again and an
 * acknowledged line is never sent twice.
 */
#ifndef TP_AGENT_REPLICA_LOG_H
#define TP_AGENT_REPLICA_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "replica.h"

/* Appends one record to output.log (stream 'O' or 'E'). */
void replica_log_append(const struct replica *r, char stream, const char *text);

/*
 * Pins the next batch of log records if none is pinned: at most max_lines
 * lines and max_bytes of text from output.log after log_off. When more than
 * backlog_max bytes wait unread, the oldest are skipped up to a line
 * boundary and the batch starts with a line "N lines dropped". Returns the
 * number of lines in the pinned batch (0: none).
 */
size_t replica_logs_pin(struct replica *r, size_t max_lines, size_t max_bytes,
			int64_t backlog_max);
/* The pinned batch was acknowledged: drop it and advance log_off. */
void replica_logs_ack(struct replica *r);
/* Bytes of output.log not yet acknowledged (0 when the file is missing). */
int64_t replica_logs_pending(const struct replica *r);
/* Bytes of output.log in no batch yet: after the pinned batch, or after
 * the acknowledged offset when none is pinned. */
int64_t replica_logs_unpinned(const struct replica *r);

#endif
