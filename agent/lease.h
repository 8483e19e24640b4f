/*
 * lease.h - the node's lease as the agent measures it, the file that hands
 * it to the replicas' supervisors, and the supervisors' fence.
 *
 * The server renews a node's lease at every sync (and register) it
 * answers, from that moment (its database clock, at or after the request
 * arrived) for the lease it grants (leaseSeconds of the answer). The agent
 * counts the same lease from the moment it SENT the last request answered
 * 200, which is earlier, on CLOCK_BOOTTIME (monotonic, and it keeps counting
 * while the host is suspended): its deadline is never later than the
 * server's. When the deadline passes unrenewed and the node's policy is
 * `fence`, every replica is sent SIGTERM and, stop_grace_seconds later,
 * SIGKILL; the server gives the node up (LOST) and restarts its replicas
 * elsewhere only after the lease, that grace and a margin
 * (agent/PROTOCOL.md, "Leases and fencing").
 *
 * An agent that is killed or stopped cannot fence: the supervisors of its
 * replicas (shim.h), which outlive it, do. The agent writes its deadline to
 * <work_dir>/lease after every renewal, atomically (tmp + rename):
 *     "trainplane-lease 1 <deadline usec> <grace s> <fence|keep_running> <boot id>\n"
 * and each supervisor reads it when its last known deadline passes.
 */
#ifndef TP_AGENT_LEASE_H
#define TP_AGENT_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

struct lease {
	int64_t deadline_usec;	/* lease_clock_usec() time; 0: no lease known */
	int grace_s;		/* SIGTERM to SIGKILL, as the server counts it for this node */
	bool fence;		/* stop the replicas when the deadline passes */
};

/* CLOCK_BOOTTIME in microseconds. */
int64_t lease_clock_usec(void);

/* The deadline of a lease of lease_s seconds renewed by a request sent at sent_usec. */
int64_t lease_deadline(int64_t sent_usec, int lease_s);

/* Whether a lease is known and its deadline has passed at now. */
bool lease_expired(const struct lease *l, int64_t now);

/* Writes the lease file atomically. 0 or -1 (errno). */
int lease_write(const char *path, const struct lease *l) MUST_CHECK;

/*
 * Reads the lease file: 1 with *out set; 0 when there is none; -1 when it
 * cannot be read or parsed, or was written in an earlier boot of the host
 * (its clock started again): *out then says "long expired".
 */
int lease_read(const char *path, struct lease *out);

/*
 * Whether a replica may be started at now by the lease file at path: there
 * is none (path NULL, or no file: no lease to keep), or its deadline has not
 * passed, whatever the policy (past the lease the server may have moved the
 * replica elsewhere). An unreadable file or one from an earlier boot allows
 * nothing.
 */
bool lease_allows_start(const char *path, int64_t now);

/*
 * The supervisor's fence, a pure state machine over the lease file so that
 * it can be tested without processes. Zero-initialise it and set path
 * (NULL: never fence). Call lease_fence_step() whenever convenient and at
 * the latest at *next_usec; it says what to do now:
 *   FENCE_NONE  nothing
 *   FENCE_TERM  the deadline passed: record the fence and send SIGTERM
 *               (once); FENCE_KILL follows at deadline + grace
 *   FENCE_KILL  the grace is over: SIGKILL (once)
 * The file is read when the last deadline read passes, and at least once a
 * second (a switch to keep_running, a longer grace). No file ever read
 * means no lease to enforce (a replica started outside an agent's lease);
 * a file that disappears leaves the last deadline read in force. Once
 * FENCE_TERM was returned, nothing undoes it.
 */
enum fence_action { FENCE_NONE, FENCE_TERM, FENCE_KILL };
struct lease_fence {
	const char *path;
	struct lease seen;	/* the file as last read */
	int64_t next_read;
	int stage;		/* 0 none, 1 SIGTERM sent, 2 SIGKILL sent */
	int64_t kill_at;
};
enum fence_action lease_fence_step(struct lease_fence *f, int64_t now, int64_t *next_usec);

#endif
