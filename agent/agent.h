/*
 * agent.h - the node agent: registration, the sync loop and reconciliation
 * of the replicas it runs with the server's desired set (PROTOCOL.md).
 *
 * One thread. agent_run() alternates between driving the HTTP request in
 * flight (100 ms at a time) and agent_tick(), which polls every replica
 * (exit, SIGKILL after grace, container start) and reconciles with the last
 * desired set. A long-poll that carried nothing new is abandoned and a new
 * sync sent at once when a replica changes state, or after a second when
 * new log lines wait.
 *
 * The lease (lease.h): every answered register or sync renews it from the
 * moment the request was sent; the deadline goes to <work_dir>/lease for
 * the supervisors. Past the deadline the agent starts nothing, and with
 * disconnect_policy fence it stops every replica itself too (the
 * supervisors do the same for theirs, also when the agent is gone); a
 * replica so stopped is reported LOST, never as an exit.
 */
#ifndef TP_AGENT_AGENT_H
#define TP_AGENT_AGENT_H

#include <signal.h>
#include <stdbool.h>

#include "agent_config.h"
#include "common.h"
#include "lease.h"
#include "replica.h"
#include "sync_msg.h"

#define AGENT_LOG_LINES_MAX 1000		/* per replica per sync */
#define AGENT_LOG_BYTES_MAX (256 * 1024)	/* per replica per sync */
#define AGENT_FORGOTTEN_MAX 512

struct http_client;

struct agent_sent {		/* one report of the sync in flight */
	char *id;
	int attempt;
	int64_t seq;
	int64_t batch_end;	/* -1: no log batch */
};

/*
 * What an orderly stop (SIGTERM, SIGINT) does to the node's replicas:
 *   AGENT_EXIT_LEAVE    they keep running; a restarted agent re-adopts them
 *                       (the default: an agent upgrade)
 *   AGENT_EXIT_STOP     they are stopped as by a maintenance event and
 *                       reported LOST: their jobs restart them elsewhere, or
 *                       here when the agent is back (--stop-replicas-on-exit;
 *                       make run)
 *   AGENT_EXIT_DRAIN    the node takes no new replica and the agent waits
 *                       for its replicas to end by themselves; a second
 *                       signal stops the rest as AGENT_EXIT_STOP
 *                       (--drain-on-exit)
 */
enum agent_exit_mode { AGENT_EXIT_LEAVE, AGENT_EXIT_STOP, AGENT_EXIT_DRAIN };

struct agent {
	const struct agent_config *cfg;	/* borrowed */
	char incarnation[33];
	const char *gpu_type;		/* static; NULL: no GPU */
	int gpu_count;
	struct replica *replicas;	/* owned list */
	struct desired_set desired;
	bool have_desired;		/* a sync answer has been applied */
	int sync_interval, lease;	/* seconds, as the server granted them */
	enum agent_exit_mode exit_mode;	/* what SIGTERM / SIGINT do to the replicas */
	bool stopping;			/* leaving: syncs say so, the node takes no new replica */
	struct lease node_lease;	/* the deadline the agent counts (lease.h) */
	int64_t request_sent_usec;	/* lease_clock_usec() when the request in flight was sent */
	bool lapse_logged;		/* the lapse of the current deadline was logged */
	bool await_stopped;		/* after a 409: register again once every replica ended */

	/* Loop state. */
	struct http_client *http;
	char *url_register, *url_sync;
	bool registered;
	bool syncing;			/* the request in flight is a sync */
	bool inflight_new;		/* ...and carries a report the server has not acknowledged */
	struct agent_sent *sent;
	size_t nsent;
	int64_t sync_started_usec;
	int64_t next_try_usec;
	int backoff_ms;
	bool dirty;			/* a replica changed since the last sync was built */
	int lock_fd;
	/* inotify on the running replicas' folders: a supervisor's exit file
	 * (or anything else written there) wakes the loop at once; -1 none */
	int notify_fd;

	char *forgotten[AGENT_FORGOTTEN_MAX];	/* "id.attempt" never to start again */
	size_t forgotten_next;

	/* The cluster (PROTOCOL.md, "Identity"): the one the work dir is bound
	 * to, kept in <work_dir>/cluster; replicas are adopted only for it. */
	char cluster_id[SYNC_CLUSTER_ID_MAX + 1];	/* "": not bound yet */
	bool cluster_known;		/* a register answer of this life named it */
	struct replica *foreign;	/* owned: other clusters' replicas, left alone
					 * (or removed: foreign_replicas) */

	/* Pilot mode (agent/README.md, "Pilot mode"): the agent of one task of
	 * a Slurm job, which leaves once its replica is done. */
	bool pilot;
	int *gpu_map;			/* the node's GPU i is Slurm's gpu_map[i]; NULL: identity */
	size_t ngpu_map;
	bool pilot_had_work;		/* the server gave it a replica to run */
	int64_t pilot_started_usec;
	int pilot_exit;			/* the exit status to leave with */
};

/* Pilot mode: the longest a pilot waits for its replica before it leaves. */
#define AGENT_PILOT_IDLE_MAX_USEC (INT64_C(600) * 1000000)

/*
 * Prepares the work dir (lock, incarnation, cluster), discovers or takes the
 * declared accelerators, and re-adopts the replicas found there that are
 * the work dir's cluster's (the others wait in a->foreign). 0, or -1 with
 * a message in err. Release with agent_release() either way.
 */
int agent_init(struct agent *a, const struct agent_config *cfg, char *err,
	       size_t errlen) MUST_CHECK;
void agent_release(struct agent *a);

/* Runs until *quit is set; returns the exit status (0). */
int agent_run(struct agent *a, volatile sig_atomic_t *quit);

/* Polls every replica and reconciles; true when a replica changed state. */
bool agent_tick(struct agent *a);
/* Starts and stops replicas to match a->desired; true when something changed. */
bool agent_reconcile(struct agent *a);
/* Stops every replica (409, or --stop-replicas-on-exit). */
void agent_stop_all(struct agent *a);

/*
 * Builds the sync body: pins each replica's next log batch, bumps seq where
 * the report changed (saved before it is sent), records what is sent.
 * Caller frees the string.
 */
char *agent_sync_body(struct agent *a, int wait_seconds);
/* A 200 answered the sync built last: acknowledge its reports, renew the
 * lease from request_sent_usec (when set) and apply the desired set in
 * body. 0, or -1 when the body does not parse (nothing renewed). */
int agent_sync_done(struct agent *a, const char *body, size_t len) MUST_CHECK;

/*
 * The server answered a request sent at sent_usec (lease_clock_usec())
 * with a lease of lease_s seconds: the deadline moves to sent + lease when
 * that is later, and the lease file is rewritten.
 */
void agent_lease_renewed(struct agent *a, int64_t sent_usec, int lease_s);
/*
 * The long-poll wait to ask for: the server's sync interval, but at most
 * (lease - 2) / 2 seconds, so that the answer to the next sync, which may
 * be held as long, still comes before the lease of this one ends.
 */
int agent_wait_seconds(const struct agent *a);
/* Whether the agent's lease is known and has passed. */
bool agent_lease_expired(const struct agent *a);

/* Finds the replica for (id, attempt), or NULL. */
struct replica *agent_find(struct agent *a, const char *id, int attempt);

/*
 * The register answer named the server's cluster (cluster; "" from a server
 * without cluster ids: nothing changes). When the work dir was bound to
 * another, it is bound to this one now (<work_dir>/cluster) and the old
 * cluster's desired set is dropped. Replicas of other clusters leave the
 * agent's list for a->foreign, untouched, each logged once; this cluster's
 * found there are adopted.
 */
void agent_bind_cluster(struct agent *a, const char *cluster);

#endif
