/*
 * agent.c - the node agent's loop: register, sync, reconcile.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "http.h"
#include "log.h"
#include "metric_file.h"
#include "replica_log.h"
#include "runtime.h"
#include "strbuf.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 3000

/* The kernel's id of this boot: replicas cannot outlive it. "" if unknown. */
static void read_boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

static void new_incarnation(struct agent *a)
{
	unsigned char raw[8] = { 0 };
	char boot[64];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw)) {
		int64_t t = now_usec() ^ ((int64_t)getpid() << 32);
		memcpy(raw, &t, sizeof(raw));
	}
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(a->incarnation + 2 * i, 3, "%02x", raw[i]);
	read_boot_id(boot, sizeof(boot));
	char *path = xasprintf("%s/incarnation", a->cfg->work_dir);
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%s %s\n", a->incarnation, boot) < 0 || fclose(f) ||
	    rename(tmp, path))
		log_warn("cannot save the incarnation in %s: %s", path, strerror(errno));
	free(tmp);
	free(path);
}

/*
 * The incarnation survives agent restarts with the work dir, but not a
 * reboot of the host (PROTOCOL.md, "Incarnations").
 */
static void load_incarnation(struct agent *a)
{
	char *path = xasprintf("%s/incarnation", a->cfg->work_dir);
	FILE *f = fopen(path, "r");
	char buf[64] = "", saved_boot[64] = "", boot[64];
	bool ok = false;

	read_boot_id(boot, sizeof(boot));
	if (f) {
		int n = fscanf(f, "%32s %63s", buf, saved_boot);
		ok = n >= 1 && strlen(buf) >= 8 && strspn(buf, "0123456789abcdef") == strlen(buf);
		if (ok && strcmp(saved_boot, boot)) {
			log_info("the host rebooted since incarnation %s: starting a new one", buf);
			ok = false;
		}
		fclose(f);
	}
	free(path);
	if (ok)
		snprintf(a->incarnation, sizeof(a->incarnation), "%.32s", buf);
	else
		new_incarnation(a);
}

/* <work_dir>/cluster: the cluster the work dir is bound to (PROTOCOL.md, "Identity"). */
static void load_cluster(struct agent *a)
{
	char *path = xasprintf("%s/cluster", a->cfg->work_dir);
	FILE *f = fopen(path, "r");
	char buf[SYNC_CLUSTER_ID_MAX + 2] = "";

	a->cluster_id[0] = '\0';
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		if (wire_cluster_id_ok(buf))
			snprintf(a->cluster_id, sizeof(a->cluster_id), "%.*s", SYNC_CLUSTER_ID_MAX, buf);
		else
			log_warn("%s does not hold a cluster id: the work dir is taken as unbound", path);
		fclose(f);
	}
	free(path);
}

static void save_cluster(const struct agent *a)
{
	char *path = xasprintf("%s/cluster", a->cfg->work_dir);
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%s\n", a->cluster_id) < 0 || fclose(f) || rename(tmp, path))
		log_warn("cannot save the cluster id in %s: %s", path, strerror(errno));
	free(tmp);
	free(path);
}

static void free_list(struct replica **list)
{
	while (*list) {
		struct replica *r = *list;
		*list = r->next;
		replica_free(r);
	}
}

static bool finished(const struct replica *r);
static bool drained(const struct agent *a);

/*
 * The deadline a previous life of the agent left (its replicas' supervisors
 * enforce it), so that this one fences and refuses starts by the same one
 * until the server answers.
 */
static void load_lease(struct agent *a)
{
	const struct agent_config *cfg = a->cfg;
	struct lease l;

	a->node_lease = (struct lease){ .grace_s = cfg->stop_grace_seconds, .fence = cfg->fence };
	if (!cfg->lease_file)
		return;
	int rc = lease_read(cfg->lease_file, &l);
	if (rc == 0)
		return;
	a->node_lease.deadline_usec = l.deadline_usec;
	if (rc < 0) {
		log_info("lease file %s is from an earlier boot or unreadable: the lease counts as "
			 "expired until the server answers", cfg->lease_file);
		return;
	}
	/* Until our register is answered the server counts the grace the last
	 * one declared: never let the supervisors wait longer than that. */
	if (l.grace_s < a->node_lease.grace_s)
		a->node_lease.grace_s = l.grace_s;
	if (lease_write(cfg->lease_file, &a->node_lease))
		log_warn("cannot rewrite the lease file %s: %s", cfg->lease_file, strerror(errno));
}

int agent_wait_seconds(const struct agent *a)
{
	/* The lease of an answer runs from its request's send; the next answer
	 * comes up to two waits later (this poll held, then the next one): two
	 * waits and 2 s of round trips must fit in the lease. */
	int cap = (a->lease - 2) / 2;
	if (cap < 0)
		cap = 0;
	return a->sync_interval < cap ? a->sync_interval : cap;
}

bool agent_lease_expired(const struct agent *a)
{
	return lease_expired(&a->node_lease, lease_clock_usec());
}

void agent_lease_renewed(struct agent *a, int64_t sent_usec, int lease_s)
{
	bool was_expired = agent_lease_expired(a);

	/* Answers come in the order their requests were sent (one at a time),
	 * so the latest answer's lease is the one the server counts. */
	a->node_lease.deadline_usec = lease_deadline(sent_usec, lease_s);
	a->node_lease.grace_s = a->cfg->stop_grace_seconds;
	a->node_lease.fence = a->cfg->fence;
	if (was_expired && !agent_lease_expired(a)) {
		log_info("the server answered again: lease renewed for %ds", lease_s);
		a->lapse_logged = false;
	}
	if (a->cfg->lease_file && lease_write(a->cfg->lease_file, &a->node_lease))
		log_error("cannot write the lease file %s: %s; the supervisors stop the replicas "
			  "when the last deadline written passes", a->cfg->lease_file, strerror(errno));
}

/*
 * Past the lease: log it once, and with disconnect_policy fence stop every
 * replica (the supervisors of process replicas do it too; this covers the
 * simulate runtime and containers that are still being started). True
 * when a replica ended here.
 */
static bool fence_if_lapsed(struct agent *a)
{
	int64_t now = lease_clock_usec();
	bool changed = false;

	if (!lease_expired(&a->node_lease, now))
		return false;
	if (!a->lapse_logged) {
		a->lapse_logged = true;
		log_warn("no sync answered within the lease (it ended %.1fs ago): %s",
			 (double)(now - a->node_lease.deadline_usec) / 1e6,
			 a->cfg->fence ? "stopping every replica (disconnect_policy fence); the server "
			 "restarts them elsewhere" : "keeping the replicas running "
			 "(disconnect_policy keep_running); starting nothing new");
	}
	if (!a->cfg->fence)
		return false;
	for (struct replica *r = a->replicas; r; r = r->next) {
		if (finished(r) || r->fenced)
			continue;
		r->fenced = true;
		if (replica_save(r))
			log_warn("replica %s.%d: fence not saved", r->id, r->attempt);
		log_warn("replica %s.%d: fenced", r->id, r->attempt);
		runtime_stop(a->cfg, r);
		changed |= finished(r);	/* simulate: at once */
	}
	return changed;
}

static char *url_for(const char *server, const char *node, const char *verb)
{
	size_t n = strlen(server);
	while (n && server[n - 1] == '/')
		n--;
	return xasprintf("%.*s/agent/v1/nodes/%s:%s", (int)n, server, node, verb);
}

int agent_init(struct agent *a, const struct agent_config *cfg, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	a->cfg = cfg;
	a->lock_fd = -1;
	a->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (a->notify_fd < 0)
		log_warn("inotify: %s: replicas' ends are seen within 100 ms, not at once",
			 strerror(errno));
	a->sync_interval = 10;
	a->lease = 30;
	char *replicas = xasprintf("%s/replicas", cfg->work_dir);
	int rc = mkdir_p(replicas);
	free(replicas);
	if (rc) {
		snprintf(err, errlen, "work_dir '%s': cannot create: %s", cfg->work_dir,
			 strerror(errno));
		return -1;
	}
	char *lock = xasprintf("%s/agent.lock", cfg->work_dir);
	a->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lock);
	if (a->lock_fd < 0 || flock(a->lock_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "work_dir '%s': %s", cfg->work_dir,
			 a->lock_fd < 0 ? strerror(errno) : "another agent is using it");
		return -1;
	}
	load_incarnation(a);
	load_lease(a);
	if (cfg->gpu_type) {
		a->gpu_type = cfg->gpu_type;
		a->gpu_count = cfg->gpu_count;
	} else if (!cfg->tpu_type) {
		struct gpu_info gpus[GPU_MAX];
		size_t n = gpu_discover(gpus, GPU_MAX);
		a->gpu_count = gpu_inventory(gpus, n, &a->gpu_type);
	}
	a->url_register = url_for(cfg->server, cfg->node, "register");
	a->url_sync = url_for(cfg->server, cfg->node, "sync");
	load_cluster(a);
	int n = runtime_adopt_all(cfg, a->cluster_id[0] ? a->cluster_id : NULL, &a->replicas,
				  &a->foreign);
	if (n)
		log_info("adopted %d replica%s from %s", n, n == 1 ? "" : "s", cfg->work_dir);
	for (struct replica *r = a->replicas; r; r = r->next)
		if (!r->cluster && a->cluster_id[0])
			r->cluster = xstrdup(a->cluster_id);	/* saved by an older agent */
	int others = 0;
	for (struct replica *r = a->foreign; r; r = r->next)
		others++;
	if (others)
		log_warn("%s holds %d replica%s of clusters other than %s: not adopted; the "
			 "server's cluster decides at registration", cfg->work_dir, others,
			 others == 1 ? "" : "s", a->cluster_id);
	return 0;
}

static void sent_clear(struct agent *a)
{
	for (size_t i = 0; i < a->nsent; i++)
		free(a->sent[i].id);
	free(a->sent);
	a->sent = NULL;
	a->nsent = 0;
}

void agent_release(struct agent *a)
{
	http_client_free(a->http);
	a->http = NULL;
	free_list(&a->replicas);
	free_list(&a->foreign);
	desired_set_release(&a->desired);
	sent_clear(a);
	free(a->url_register);
	free(a->url_sync);
	for (size_t i = 0; i < AGENT_FORGOTTEN_MAX; i++)
		free(a->forgotten[i]);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	if (a->notify_fd >= 0)
		close(a->notify_fd);
	memset(a, 0, sizeof(*a));
	a->lock_fd = a->notify_fd = -1;
}

struct replica *agent_find(struct agent *a, const char *id, int attempt)
{
	for (struct replica *r = a->replicas; r; r = r->next)
		if (r->attempt == attempt && !strcmp(r->id, id))
			return r;
	return NULL;
}

static bool finished(const struct replica *r)
{
	return r->state == REPLICA_EXITED || r->state == REPLICA_FAILED_TO_START;
}

static bool was_forgotten(const struct agent *a, const char *id, int attempt)
{
	char key[256];
	snprintf(key, sizeof(key), "%s.%d", id, attempt);
	for (size_t i = 0; i < AGENT_FORGOTTEN_MAX; i++)
		if (a->forgotten[i] && !strcmp(a->forgotten[i], key))
			return true;
	return false;
}

/*
 * Whether another cluster's replica holds (id, attempt) here: ids are unique
 * for all time, so only a broken server asks for one, but its folder is
 * not this cluster's to reuse. Logged once.
 */
static bool held_by_foreign(struct agent *a, const char *id, int attempt)
{
	for (struct replica *r = a->foreign; r; r = r->next) {
		if (r->attempt != attempt || strcmp(r->id, id))
			continue;
		if (!r->clash_logged)
			log_error("the server asks for replica %s.%d, which names a replica of "
				  "another cluster (%s) in this work dir: not started", id, attempt,
				  r->cluster ? r->cluster : "?");
		r->clash_logged = true;
		return true;
	}
	return false;
}

static void remember_forgotten(struct agent *a, const struct replica *r)
{
	size_t i = a->forgotten_next++ % AGENT_FORGOTTEN_MAX;
	free(a->forgotten[i]);
	a->forgotten[i] = xasprintf("%s.%d", r->id, r->attempt);
}

/* Whether the server has seen r's final report and r has no log left to send. */
static bool fully_reported(const struct replica *r)
{
	return finished(r) && r->rep_valid && r->rep_state == r->state &&
	       r->acked_seq >= r->seq && !r->batch && replica_logs_pending(r) == 0;
}

/* A new replica of this agent's cluster for d, not started yet. */
static struct replica *replica_add(struct agent *a, const struct desired_replica *d)
{
	struct replica *r = replica_new(a->cfg->work_dir, d->replica, d->attempt, a->cfg->runtime);
	r->cluster = a->cluster_id[0] ? xstrdup(a->cluster_id) : NULL;
	r->next = a->replicas;
	a->replicas = r;
	return r;
}

bool agent_reconcile(struct agent *a)
{
	const struct agent_config *cfg = a->cfg;
	bool changed = false;

	if (!a->have_desired)
		return false;	/* before the first answer nothing is known: touch nothing */
	for (size_t i = 0; i < a->desired.n; i++) {
		const struct desired_replica *d = &a->desired.v[i];
		struct replica *r = agent_find(a, d->replica, d->attempt);
		if (r || was_forgotten(a, d->replica, d->attempt) ||
		    held_by_foreign(a, d->replica, d->attempt)) {
			if (r && !d->run)
				runtime_stop(cfg, r);
			continue;	/* never start an attempt twice */
		}
		if (!d->run) {
			/* Stopped before it was started (a cancel just after its
			 * placement): it ends here, or the server waits for an
			 * end no process will ever report. */
			runtime_skip(replica_add(a, d));
			changed = true;
			continue;
		}
		bool older_alive = false;
		for (struct replica *o = a->replicas; o; o = o->next) {
			if (!strcmp(o->id, d->replica) && o->attempt != d->attempt && !finished(o)) {
				runtime_stop(cfg, o);
				older_alive = true;
			}
		}
		if (older_alive)
			continue;	/* start once the other attempt has ended */
		if (agent_lease_expired(a))
			continue;	/* past the lease the server may have moved it elsewhere */
		runtime_start(cfg, replica_add(a, d), d);
		changed = true;
	}
	for (struct replica **pp = &a->replicas; *pp;) {
		struct replica *r = *pp;
		if (desired_find(&a->desired, r->id, r->attempt)) {
			pp = &r->next;
			continue;
		}
		if (!finished(r)) {
			runtime_stop(cfg, r);
		} else if (fully_reported(r)) {
			*pp = r->next;
			runtime_forget(cfg, r);
			remember_forgotten(a, r);
			replica_free(r);
			continue;
		}
		pp = &r->next;
	}
	return changed;
}

/* Moves the replicas of list that match (of cluster, or not) to the front of *to. */
static void move_replicas(struct replica **list, struct replica **to, const char *cluster,
			  bool of_cluster)
{
	for (struct replica **pp = list; *pp;) {
		struct replica *r = *pp;
		if ((r->cluster && !strcmp(r->cluster, cluster)) != of_cluster) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = *to;
		*to = r;
	}
}

void agent_bind_cluster(struct agent *a, const char *cluster)
{
	const struct agent_config *cfg = a->cfg;
	struct replica *back = NULL;
	int others = 0;

	if (!cluster || !*cluster)
		return;	/* a server without cluster ids: everything as before */
	if (strcmp(a->cluster_id, cluster)) {
		if (a->cluster_id[0])
			log_warn("work dir %s was bound to cluster %s; the server at %s is cluster %s: "
				 "bound to it now, the other cluster's replicas are left to it",
				 cfg->work_dir, a->cluster_id, cfg->server, cluster);
		else
			log_info("work dir %s bound to cluster %s", cfg->work_dir, cluster);
		snprintf(a->cluster_id, sizeof(a->cluster_id), "%s", cluster);
		save_cluster(a);
		/* What another cluster wanted here is not this one's to run. */
		desired_set_release(&a->desired);
		a->have_desired = false;
	}
	a->cluster_known = true;
	/* Replicas saved for no cluster were started before servers had ids. */
	for (struct replica *r = a->replicas; r; r = r->next) {
		if (!r->cluster) {
			r->cluster = xstrdup(cluster);
			if (replica_save(r))
				log_warn("replica %s.%d: cluster not saved", r->id, r->attempt);
		}
	}
	move_replicas(&a->replicas, &a->foreign, cluster, false);
	move_replicas(&a->foreign, &back, cluster, true);
	while (back) {
		struct replica *r = back;
		back = r->next;
		r->next = a->replicas;
		a->replicas = r;
		r->foreign_logged = false;
		runtime_adopt(cfg, r);
	}
	for (struct replica *r = a->foreign; r; r = r->next) {
		others++;
		if (r->foreign_logged)
			continue;
		r->foreign_logged = true;
		log_warn("replica %s.%d belongs to another cluster (%s), not to this server's (%s): "
			 "%s", r->id, r->attempt, r->cluster, cluster, cfg->remove_foreign ?
			 "removing it (foreign_replicas: remove)" : "never adopted, left alone "
			 "(foreign_replicas: leave)");
	}
	if (others)
		log_warn("work dir %s: %d replica%s of other clusters %s", cfg->work_dir, others,
			 others == 1 ? "" : "s", cfg->remove_foreign ? "to remove" : "left alone");
}

/*
 * foreign_replicas: remove, once the server's cluster is known: stops the
 * other clusters' replicas and deletes them when they ended.
 */
static void remove_foreign(struct agent *a)
{
	const struct agent_config *cfg = a->cfg;

	if (!cfg->remove_foreign || !a->cluster_known)
		return;
	for (struct replica **pp = &a->foreign; *pp;) {
		struct replica *r = *pp;
		if (!finished(r)) {
			runtime_poll(cfg, r);
			runtime_stop(cfg, r);
		}
		if (!finished(r)) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		runtime_forget(cfg, r);
		log_info("replica %s.%d of cluster %s: removed (foreign_replicas: remove)", r->id,
			 r->attempt, r->cluster ? r->cluster : "?");
		replica_free(r);
	}
}

/*
 * Watches a running replica's folder, where its supervisor writes its exit
 * file (renamed in: IN_MOVED_TO): the loop wakes when it ends. The watch
 * goes with the folder.
 */
static void watch_replica(struct agent *a, struct replica *r)
{
	if (a->notify_fd < 0 || r->watched || finished(r) || !r->dir)
		return;
	r->watched = true;
	if (inotify_add_watch(a->notify_fd, r->dir, IN_MOVED_TO | IN_ONLYDIR) < 0)
		log_debug("replica %s.%d: inotify: %s", r->id, r->attempt, strerror(errno));
}

/* Reads the inotify events away: what changed, agent_tick() looks at. */
static void drain_notify(struct agent *a)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (a->notify_fd < 0)
		return;
	while (read(a->notify_fd, buf, sizeof(buf)) > 0)
		;
}

/*
 * How long the loop may wait for the server before it looks at the
 * replicas again: 100 ms, less when a replica's runtime knows it changes
 * sooner (a simulated replica's end), 0 when a change waits to be sent.
 */
static int loop_wait_ms(const struct agent *a)
{
	int64_t wait = 100000, now = now_usec();

	if (a->dirty && a->syncing && !a->inflight_new)
		return 0;
	for (const struct replica *r = a->replicas; r; r = r->next) {
		int64_t next = runtime_next_event(r);
		if (next && next - now < wait)
			wait = next - now;
	}
	return wait <= 0 ? 0 : (int)((wait + 999) / 1000);
}

bool agent_tick(struct agent *a)
{
	bool changed = false;
	remove_foreign(a);
	for (struct replica *r = a->replicas; r; r = r->next) {
		changed |= runtime_poll(a->cfg, r);
		watch_replica(a, r);
	}
	changed |= fence_if_lapsed(a);
	changed |= agent_reconcile(a);
	if (changed)
		a->dirty = true;
	return changed;
}

void agent_stop_all(struct agent *a)
{
	for (struct replica *r = a->replicas; r; r = r->next)
		runtime_stop(a->cfg, r);
}

/*
 * Pilot mode: the server numbers the node's GPUs 0..n-1; Slurm bound this
 * task to its own indices (CUDA_VISIBLE_DEVICES at start). The replica gets
 * Slurm's: in gpus (containers) and in its CUDA_ and NVIDIA_VISIBLE_DEVICES.
 */
static void pilot_remap(const struct agent *a, struct desired_set *ds)
{
	if (!a->gpu_map)
		return;
	for (size_t i = 0; i < ds->n; i++) {
		struct desired_replica *d = &ds->v[i];
		struct strbuf list = STRBUF_INIT;
		for (size_t k = 0; k < d->ngpus; k++) {
			if (d->gpus[k] >= 0 && (size_t)d->gpus[k] < a->ngpu_map)
				d->gpus[k] = a->gpu_map[d->gpus[k]];
			sb_addf(&list, "%s%d", k ? "," : "", d->gpus[k]);
		}
		for (char **e = d->env; d->ngpus && e && *e; e++) {
			const char *name = !strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) ?
					   "CUDA_VISIBLE_DEVICES" :
					   !strncmp(*e, "NVIDIA_VISIBLE_DEVICES=", 23) ?
					   "NVIDIA_VISIBLE_DEVICES" : NULL;
			if (name) {
				free(*e);
				*e = xasprintf("%s=%s", name, sb_str(&list));
			}
		}
		sb_release(&list);
	}
}

/*
 * Pilot mode: whether its work is done. It leaves once the server wants
 * nothing more of it and knows how its replica ended; once fenced (the
 * server no longer admits this run: Slurm restarted the job elsewhere)
 * and its replica stopped; or when no replica came for it at all.
 */
static bool pilot_done(struct agent *a)
{
	bool run = false, ended = true;

	if (!a->pilot)
		return false;
	for (size_t i = 0; i < a->desired.n; i++)
		run |= a->desired.v[i].run;
	if (run) {
		a->pilot_had_work = true;
		return false;
	}
	for (const struct replica *r = a->replicas; r; r = r->next) {
		ended &= finished(r);
		if (finished(r) && r->state == REPLICA_EXITED && r->exit_code && !r->fenced)
			a->pilot_exit = r->exit_code;
	}
	if (!ended)
		return false;
	if (a->pilot_had_work && a->have_desired && drained(a))
		return true;
	if (a->lapse_logged) {
		if (!a->pilot_exit)
			a->pilot_exit = 1;
		return true;
	}
	if (!a->pilot_had_work && mono_usec() - a->pilot_started_usec > AGENT_PILOT_IDLE_MAX_USEC) {
		log_warn("pilot %s: no replica came for it in %lld s: leaving", a->cfg->node,
			 (long long)(AGENT_PILOT_IDLE_MAX_USEC / 1000000));
		a->pilot_exit = 1;
		return true;
	}
	return false;
}

/*
 * A trial replica's measurements, read from its metric file at most twice
 * a second while it runs, and once more when it has ended (its last
 * report carries its last measurements). True when they changed since
 * the last report: [{"step", "value"}], the last 100, non-finite values
 * left out (JSON has none).
 */
static bool trial_metrics_read(struct replica *r)
{
	if (!r->trial_id)
		return false;
	int64_t now = mono_usec();
	bool ended = r->state == REPLICA_EXITED || r->state == REPLICA_FAILED_TO_START;
	if (ended ? r->metrics_final_read :
	    r->metrics_read_usec && now - r->metrics_read_usec < 500000)
		return false;
	r->metrics_read_usec = now;
	r->metrics_final_read = ended;

	char err[256];
	struct metric_series s = { 0 };
	struct stat st;
	/* The walk follows no symlink the trainer may have made (metric_file.h). */
	int rc = metric_file_read(r->dir, r->metric_tag, r->trial_id, &s, &st, err, sizeof(err));
	/* What trial_metrics_changed() compares with. */
	r->metrics_size = st.st_size;
	r->metrics_mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	if (rc) {
		log_warn("replica %s.%d: its metric file: %s", r->id, r->attempt, err);
		return false;
	}
	json_t *points = json_array();
	size_t from = s.n > 100 ? s.n - 100 : 0;
	for (size_t i = from; i < s.n; i++)
		if (isfinite(s.v[i].value))
			json_array_append_new(points, json_pack("{s:I, s:f}", "step",
								(json_int_t)s.v[i].global_step,
								"value", s.v[i].value));
	metric_series_release(&s);
	if (!json_array_size(points) || (r->metrics && json_equal(points, r->metrics))) {
		json_decref(points);
		return false;
	}
	json_decref(r->metrics);
	r->metrics = points;
	return true;
}

char *agent_sync_body(struct agent *a, int wait_seconds)
{
	json_t *reps = json_array();
	int64_t backlog = (int64_t)a->cfg->log_backlog_mb << 20;
	size_t n = 0;

	sent_clear(a);
	for (struct replica *r = a->replicas; r; r = r->next)
		n++;
	a->sent = xcalloc(n + 1, sizeof(*a->sent));
	a->inflight_new = false;
	for (struct replica *r = a->replicas; r; r = r->next) {
		bool new_batch = !r->batch && replica_logs_pin(r, AGENT_LOG_LINES_MAX,
							       AGENT_LOG_BYTES_MAX, backlog) > 0;
		/* A replica's end goes out with its last lines, never before: the
		 * server takes no lines of a replica it recorded as ended (they
		 * were lost, and stream-logs ended without them). While lines
		 * remain beyond this sync's batch, the state it last reported
		 * stands (or, never reported, RUNNING for one that ran and
		 * STARTING for one that did not start). */
		bool new_metrics = trial_metrics_read(r);
		enum replica_state st = r->state;
		if ((st == REPLICA_EXITED || st == REPLICA_FAILED_TO_START) && replica_logs_unpinned(r) > 0)
			st = r->rep_valid && r->rep_state != REPLICA_EXITED &&
			     r->rep_state != REPLICA_FAILED_TO_START ? r->rep_state :
			     st == REPLICA_EXITED ? REPLICA_RUNNING : REPLICA_STARTING;
		bool new_state = !r->rep_valid || r->rep_state != st ||
				 (st == REPLICA_EXITED && r->rep_exit != r->exit_code);
		if (new_batch || new_state || new_metrics) {
			r->seq++;
			r->rep_state = st;
			r->rep_exit = r->exit_code;
			r->rep_valid = true;
			/* Saved before it is sent: a restarted agent never reuses it. */
			if (replica_save(r))
				log_warn("replica %s.%d: seq not saved", r->id, r->attempt);
		}
		if (new_batch)
			r->batch_seq = r->seq;
		struct agent_sent *s = &a->sent[a->nsent++];
		s->id = xstrdup(r->id);
		s->attempt = r->attempt;
		s->seq = r->seq;
		s->batch_end = r->batch ? r->batch_end : -1;
		if (r->seq > r->acked_seq)
			a->inflight_new = true;
		json_array_append_new(reps, sync_report(r));
	}
	json_t *body = json_pack("{s:s, s:i, s:o}", "incarnation", a->incarnation,
				 "waitSeconds", wait_seconds, "replicas", reps);
	if (a->stopping)
		json_object_set_new(body, "stopping", json_true());
	if (a->desired.version)
		json_object_set_new(body, "desiredVersion", json_string(a->desired.version));
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	a->dirty = false;
	return text;
}

int agent_sync_done(struct agent *a, const char *body, size_t len)
{
	struct desired_set ds = { 0 };
	char err[512];
	int rc = 0;

	for (size_t i = 0; i < a->nsent; i++) {
		struct agent_sent *s = &a->sent[i];
		struct replica *r = agent_find(a, s->id, s->attempt);
		if (!r)
			continue;
		bool save = false;
		if (s->seq > r->acked_seq) {
			r->acked_seq = s->seq;
			save = true;
		}
		if (r->batch && s->batch_end == r->batch_end) {
			replica_logs_ack(r);
			save = true;
		}
		if (save && replica_save(r))
			log_warn("replica %s.%d: acknowledgement not saved", r->id, r->attempt);
	}
	sent_clear(a);
	if (sync_parse_answer(body, len, &ds, err, sizeof(err))) {
		log_error("%s", err);
		rc = -1;
		goto out;
	}
	if (ds.lease_s > 0)
		a->lease = ds.lease_s;
	if (a->request_sent_usec)
		agent_lease_renewed(a, a->request_sent_usec, a->lease);
	if (ds.has_replicas) {
		pilot_remap(a, &ds);
		desired_set_release(&a->desired);
		a->desired = ds;
		a->have_desired = true;
	} else {
		/* No replicas: the set did not change (PROTOCOL.md); keep ours. */
		if (ds.version) {
			free(a->desired.version);
			a->desired.version = ds.version;
			ds.version = NULL;
		}
		desired_set_release(&ds);
	}
	if (agent_reconcile(a))
		a->dirty = true;
out:
	return rc;
}

/* ---- the loop -------------------------------------------------------- */

static void backoff(struct agent *a, const char *what)
{
	a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (a->backoff_ms > BACKOFF_MAX_MS)
		a->backoff_ms = BACKOFF_MAX_MS;
	a->next_try_usec = mono_usec() + (int64_t)a->backoff_ms * 1000;
	if (a->backoff_ms >= BACKOFF_MAX_MS)
		log_warn("%s; retrying every %d ms", what, a->backoff_ms);
	else
		log_info("%s; retrying in %d ms", what, a->backoff_ms);
}

static void start_request(struct agent *a)
{
	char *body;
	int rc;

	if (!a->registered) {
		json_t *o = sync_register_body(a->cfg, a->incarnation, a->gpu_type, a->gpu_count);
		sync_register_clusters(o, a->cluster_id, a->replicas, a->foreign);
		body = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		a->request_sent_usec = lease_clock_usec();	/* no later than the send */
		rc = http_post_start(a->http, a->url_register, body, 15);
		a->syncing = false;
	} else {
		body = agent_sync_body(a, agent_wait_seconds(a));
		a->request_sent_usec = lease_clock_usec();
		rc = http_post_start(a->http, a->url_sync, body, a->sync_interval + 15);
		a->syncing = true;
		a->sync_started_usec = mono_usec();
	}
	free(body);
	if (rc)
		backoff(a, "cannot start an HTTP request");
}

static const char *answer_message(struct agent *a)
{
	size_t len;
	const char *body = http_body(a->http, &len);
	return len ? body : "(empty answer)";
}

static void request_done(struct agent *a, long status)
{
	size_t len;
	const char *body = http_body(a->http, &len);
	int64_t took = mono_usec() - a->sync_started_usec;

	if (status == 0) {
		char *what = xasprintf("%s to %s failed: %s", a->syncing ? "sync" : "register",
				       a->cfg->server, http_error(a->http));
		backoff(a, what);
		free(what);
		return;
	}
	if (!a->syncing) {
		char err[512], cluster[SYNC_CLUSTER_ID_MAX + 1];
		if (status == 200 &&
		    !sync_parse_register(body, len, &a->sync_interval, &a->lease, cluster,
					 sizeof(cluster), err, sizeof(err))) {
			log_info("registered node %s (incarnation %s, %s runtime, sync every %ds, "
				 "lease %ds, disconnect_policy %s%s%s)", a->cfg->node, a->incarnation,
				 agent_runtime_name(a->cfg->runtime), a->sync_interval, a->lease,
				 a->cfg->fence ? "fence" : "keep_running", *cluster ? ", cluster " : "",
				 cluster);
			agent_lease_renewed(a, a->request_sent_usec, a->lease);
			agent_bind_cluster(a, cluster);
			a->registered = true;
			a->backoff_ms = 0;
			a->next_try_usec = 0;
			return;
		}
		char *what = status == 200 ? xstrdup(err) :
			xasprintf("register answered %ld: %.300s", status, answer_message(a));
		backoff(a, what);
		free(what);
		return;
	}
	if (status == 200) {
		bool had_new = a->inflight_new;
		char *old_version = a->desired.version ? xstrdup(a->desired.version) : NULL;
		if (agent_sync_done(a, body, len)) {
			backoff(a, "the sync answer is unusable");
		} else {
			a->backoff_ms = 0;
			/* An answer that came at once with nothing new either way
			 * would make a hot loop: hold the next one back a little. */
			bool same = (!old_version && !a->desired.version) ||
				    (old_version && a->desired.version &&
				     !strcmp(old_version, a->desired.version));
			a->next_try_usec = !had_new && same && !a->dirty && took < 200000 ?
				mono_usec() + 1000000 : 0;
		}
		free(old_version);
		return;
	}
	sent_clear(a);
	if (status == 404) {
		log_warn("the server does not know node %s: registering again", a->cfg->node);
		a->registered = false;
		a->next_try_usec = 0;
	} else if (status == 409) {
		log_error("incarnation %s of node %s was replaced by another agent: stopping "
			  "every replica and registering again", a->incarnation, a->cfg->node);
		agent_stop_all(a);
		new_incarnation(a);
		a->registered = false;
		a->await_stopped = true;	/* the new register gives their work away at once */
		a->next_try_usec = 0;
	} else {
		char *what = xasprintf("sync answered %ld: %.300s", status, answer_message(a));
		backoff(a, what);
		free(what);
	}
}

/*
 * Whether a trial's metric file changed since it was last read (its size
 * or time): a new measurement goes out within a second, not at the end of
 * the long-poll (early stopping decides on them).
 */
static bool trial_metrics_changed(const struct replica *r)
{
	struct stat st;
	char err[256];
	if (!r->trial_id)
		return false;
	int fd = metric_file_open(r->dir, &st, err, sizeof(err));
	if (fd < 0)
		return false;	/* not there, or refused: trial_metrics_read() says why */
	close(fd);
	return st.st_size != r->metrics_size ||
	       st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec != r->metrics_mtime_ns;
}

/* Whether to drop an idle long-poll and sync again now. */
static bool resync_now(struct agent *a)
{
	if (!a->syncing || a->inflight_new)
		return false;	/* a sync carrying news is answered at once anyway */
	if (a->dirty)
		return true;
	int64_t age = mono_usec() - a->sync_started_usec;
	if (age < 1000000)
		return false;
	for (struct replica *r = a->replicas; r; r = r->next)
		if ((!r->batch && replica_logs_pending(r) > 0) || trial_metrics_changed(r))
			return true;
	return false;
}

static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* Up to ms, or until a watched replica folder changes. */
static void wait_events(struct agent *a, int ms)
{
	struct pollfd p = { a->notify_fd, POLLIN, 0 };

	if (a->notify_fd < 0) {
		nap(ms);
		return;
	}
	if (poll(&p, 1, ms) > 0)
		drain_notify(a);
}

/*
 * One sync now, blocking, at most timeout_s: true when answered 200. The
 * answer is applied when apply; the last sync of an agent that leaves is
 * not: the replica folders stay until the next agent start on this work
 * dir forgets them, as after any stop.
 */
static bool sync_now(struct agent *a, long timeout_s, bool apply)
{
	char *body = agent_sync_body(a, 0);
	long status = http_post(a->http, a->url_sync, body, timeout_s);
	size_t len;
	const char *answer = http_body(a->http, &len);
	bool ok = status == 200 && (!apply || !agent_sync_done(a, answer, len));

	free(body);
	if (!ok)
		sent_clear(a);
	return ok;
}

/* Drained: every replica ended and the server acknowledged its end. */
static bool drained(const struct agent *a)
{
	for (const struct replica *r = a->replicas; r; r = r->next)
		if (!finished(r) || r->acked_seq < r->seq)
			return false;
	return true;
}

/*
 * Whether the main loop ends: at the first signal, or with
 * AGENT_EXIT_DRAIN once drained (or at a second signal). Draining, every
 * sync says the node is stopping, so that it takes no new replica.
 */
static bool leaving(struct agent *a, volatile sig_atomic_t *quit)
{
	if (pilot_done(a)) {
		log_info("pilot %s: its replica is done: leaving (exit status %d)", a->cfg->node,
			 a->pilot_exit);
		return true;
	}
	if (!*quit)
		return false;
	if (a->exit_mode != AGENT_EXIT_DRAIN || *quit > 1)
		return true;
	if (!a->stopping) {
		a->stopping = true;
		a->dirty = true;
		log_info("signal received: draining node %s: it takes no new replica, and the agent "
			 "leaves once its replicas have ended (a second signal stops them now, as a "
			 "maintenance event)", a->cfg->node);
	}
	return drained(a);	/* no replica left, or each one ended and acknowledged */
}

/*
 * An orderly stop (AGENT_EXIT_STOP, or a drain cut short): the server is
 * told first that the node is stopping (it places nothing more here), the
 * replicas are stopped as a maintenance event stops a VM's, and their end
 * is reported LOST with the reason, so that their jobs restart them
 * (attempt + 1) elsewhere or here when the agent is back. A server that
 * cannot be reached now hears it from the next agent start: the reason is
 * saved with each replica.
 */
static void stop_for_exit(struct agent *a)
{
	int64_t deadline = mono_usec() + ((int64_t)a->cfg->stop_grace_seconds + 10) * 1000000;
	int n = 0;

	a->stopping = true;
	if (a->registered)
		(void)sync_now(a, 3, true);
	for (struct replica *r = a->replicas; r; r = r->next) {
		if (finished(r))
			continue;
		r->node_stopped = true;
		if (replica_save(r))
			log_warn("replica %s.%d: its stop reason was not saved", r->id, r->attempt);
		runtime_stop(a->cfg, r);
		n++;
	}
	for (;;) {
		bool busy = false;
		for (struct replica *r = a->replicas; r; r = r->next) {
			runtime_poll(a->cfg, r);
			busy |= !finished(r);
		}
		if (!busy || mono_usec() > deadline)
			break;
		nap(50);
	}
	if (!n) {
		log_info("signal received: leaving; no replica was running");
		return;
	}
	if (a->registered && sync_now(a, 5, false))
		log_info("signal received: %d replica(s) stopped as by a maintenance event; the "
			 "server restarts them elsewhere, or here when the agent is back", n);
	else
		log_info("signal received: %d replica(s) stopped as by a maintenance event; the "
			 "server was not reached, and hears it when the agent starts again", n);
}

int agent_run(struct agent *a, volatile sig_atomic_t *quit)
{
	int64_t last_log_check = 0;

	a->http = http_client_new(a->cfg->token, a->cfg->server_ca_file,
				  a->cfg->allow_insecure_http);
	if (!a->http) {
		log_error("libcurl failed to start");
		return 1;
	}
	log_info("agent for node %s: server %s, work dir %s", a->cfg->node, a->cfg->server,
		 a->cfg->work_dir);
	while (!leaving(a, quit)) {
		agent_tick(a);
		if (http_busy(a->http)) {
			long status;
			bool done = http_step(a->http, loop_wait_ms(a), a->notify_fd, &status);
			drain_notify(a);
			if (done) {
				request_done(a, status);
			} else if (mono_usec() - last_log_check >= 250000 || a->dirty) {
				last_log_check = mono_usec();
				if (resync_now(a)) {
					http_abort(a->http);
					start_request(a);
				}
			}
			continue;
		}
		if (a->await_stopped) {
			bool busy = false;
			for (struct replica *r = a->replicas; r; r = r->next)
				busy |= !finished(r);
			if (busy) {
				nap(100);
				continue;
			}
			a->await_stopped = false;
		}
		int64_t wait = a->next_try_usec - mono_usec();
		if (wait > 0 && !(a->dirty && a->registered && a->backoff_ms == 0)) {
			int ms = loop_wait_ms(a);
			wait_events(a, wait / 1000 + 1 < ms ? (int)(wait / 1000) + 1 : ms);
			continue;
		}
		start_request(a);
	}
	http_abort(a->http);
	if (a->pilot && !*quit)
		return a->pilot_exit;	/* done: nothing of its own is left running */
	if (a->exit_mode == AGENT_EXIT_LEAVE) {
		log_info("signal received: leaving; the replicas keep running, and a restarted agent "
			 "re-adopts them");
		return 0;
	}
	stop_for_exit(a);
	return 0;
}
