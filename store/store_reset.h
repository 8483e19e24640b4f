/*
 * store_reset.h - the emulator's reset (docs/emulator.md, "Reset"): one
 * project's jobs, or every job, gone with everything they own.
 */
#ifndef TP_STORE_RESET_H
#define TP_STORE_RESET_H

#include <stdint.h>

#include "store.h"

/*
 * Deletes the jobs of project (NULL: of every project), of both APIs, with
 * their replicas, log entries, trials, IAM policies and Vertex operations,
 * in one transaction; the nodes that ran their live replicas get a new
 * desired set (their agents stop them) and the servers' job caches forget
 * them. Vertex ids are never reused; ml v1 job ids are free again.
 * *deleted: the jobs deleted (trials included).
 */
enum store_rc store_reset(struct store *st, const char *project, int64_t *deleted) MUST_CHECK;

#endif
