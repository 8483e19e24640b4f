#include "job_cache.h"

#include <errno.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "store.h"

#define RECONNECT_GAP_US 500000
#define FENCE_TIMEOUT_US 2000000	/* a fence unanswered this long: the connection is dead */

/* A cached reply; while pending, the placeholder of a fill. */
struct job_cache_entry {
	struct job_cache_entry *chain;	/* in its bucket */
	struct job_cache_entry *newer, *older;	/* the LRU list (cached replies only) */
	uint8_t digest[32];
	char *name;
	char *reply;
	size_t len;
	bool pending;		/* a fill's placeholder: no reply yet */
	bool spoiled;		/* the placeholder's key changed meanwhile: fill nothing */
};

struct job_cache {
	char *conninfo;
	size_t max_entries;
	pthread_t thread;
	int efd;		/* wakes the thread while it is idle */

	pthread_mutex_t mu;	/* guards everything below, up to the thread's own */
	struct job_cache_entry **buckets;
	size_t mask;
	struct job_cache_entry *newest, *oldest;
	size_t entries;		/* cached replies (placeholders not counted) */
	bool up;		/* listening: notifications arrive, fills are kept */
	bool stopping;
	bool idle;		/* the thread sleeps with no fence out: a fence must wake it */
	struct job_cache_fence *waiting, **waiting_tail;	/* for the next fence */
	struct job_cache_stats stats;

	/* the thread's own */
	PGconn *pg;
	struct job_cache_fence *answering;	/* waits on the fence that is out */
	bool fence_out;
	int64_t fence_sent_us;
	bool want_write;
	int64_t next_connect_us;
	bool told_down;
};

/* Fetched once: EVP_sha256() alone looks the algorithm up on every use. */
static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!sha256)
		abort();
}

void job_cache_key_init(struct job_cache_key *k, const char *api, const char *project,
			const char *job_id, const char *view)
{
	unsigned n = 0;

	k->name = xasprintf("%s/%s/%s%s%s", api, project, job_id, view ? "\t" : "", view ? view : "");
	size_t job_len = strlen(api) + strlen(project) + strlen(job_id) + 2;
	pthread_once(&sha256_once, fetch_sha256);
	if (!EVP_Digest(k->name, job_len, k->digest, &n, sha256, NULL) || n != sizeof(k->digest))
		abort();
}

void job_cache_key_release(struct job_cache_key *k)
{
	free(k->name);
	k->name = NULL;
}

/* --- the table (c->mu held) ------------------------------------------------ */

static struct job_cache_entry **bucket(struct job_cache *c, const uint8_t *digest)
{
	uint64_t h;
	memcpy(&h, digest, sizeof(h));
	return &c->buckets[h & c->mask];
}

static struct job_cache_entry *find(struct job_cache *c, const struct job_cache_key *k)
{
	for (struct job_cache_entry *e = *bucket(c, k->digest); e; e = e->chain)
		if (!memcmp(e->digest, k->digest, sizeof(e->digest)) && !strcmp(e->name, k->name))
			return e;
	return NULL;
}

static void lru_unlink(struct job_cache *c, struct job_cache_entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void lru_push(struct job_cache *c, struct job_cache_entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	else
		c->oldest = e;
	c->newest = e;
}

static void entry_free(struct job_cache_entry *e)
{
	free(e->name);
	free(e->reply);
	free(e);
}

/* Takes e out of its bucket and, if cached, out of the LRU list; frees it. */
static void drop(struct job_cache *c, struct job_cache_entry *e)
{
	for (struct job_cache_entry **pp = bucket(c, e->digest); *pp; pp = &(*pp)->chain) {
		if (*pp == e) {
			*pp = e->chain;
			break;
		}
	}
	if (!e->pending) {
		lru_unlink(c, e);
		c->entries--;
	}
	entry_free(e);
}

/* A notification: whatever is kept under this digest is stale. */
static void invalidate(struct job_cache *c, const uint8_t *digest)
{
	struct job_cache_entry *e = *bucket(c, digest), *next;

	for (; e; e = next) {
		next = e->chain;
		if (memcmp(e->digest, digest, sizeof(e->digest)))
			continue;
		c->stats.invalidations++;
		if (e->pending)
			e->spoiled = true;	/* its fill ends it */
		else
			drop(c, e);
	}
}

/* The connection is gone: nothing kept can be trusted any more. */
static void clear_all(struct job_cache *c)
{
	for (size_t i = 0; i <= c->mask; i++) {
		for (struct job_cache_entry *e = c->buckets[i], *next; e; e = next) {
			next = e->chain;
			if (e->pending)
				e->spoiled = true;
			else
				drop(c, e);
		}
	}
}

/* --- the public side --------------------------------------------------------- */

bool job_cache_holds(struct job_cache *c, const struct job_cache_key *k)
{
	pthread_mutex_lock(&c->mu);
	struct job_cache_entry *e = c->up ? find(c, k) : NULL;
	bool held = e && !e->pending;
	if (!held)
		c->stats.misses++;
	pthread_mutex_unlock(&c->mu);
	return held;
}

static void wake(struct job_cache *c)
{
	uint64_t one = 1;
	if (write(c->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_error("job cache: cannot wake its thread: %s", strerror(errno));
}

void job_cache_fence(struct job_cache *c, struct job_cache_fence *f, void (*done)(void *, bool),
		     void *arg)
{
	f->next = NULL;
	f->done = done;
	f->arg = arg;
	pthread_mutex_lock(&c->mu);
	if (!c->up || c->stopping) {
		c->stats.fence_failures++;
		pthread_mutex_unlock(&c->mu);
		done(arg, false);
		return;
	}
	*c->waiting_tail = f;
	c->waiting_tail = &f->next;
	bool idle = c->idle;
	c->idle = false;
	pthread_mutex_unlock(&c->mu);
	if (idle)
		wake(c);
}

char *job_cache_get(struct job_cache *c, const struct job_cache_key *k, size_t *len)
{
	char *copy = NULL;

	pthread_mutex_lock(&c->mu);
	struct job_cache_entry *e = c->up ? find(c, k) : NULL;
	if (e && !e->pending) {
		copy = xmalloc(e->len + 1);
		memcpy(copy, e->reply, e->len + 1);
		*len = e->len;
		lru_unlink(c, e);
		lru_push(c, e);
		c->stats.hits++;
	} else {
		c->stats.misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return copy;
}

struct job_cache_entry *job_cache_fill_begin(struct job_cache *c, const struct job_cache_key *k)
{
	struct job_cache_entry *e = NULL;

	pthread_mutex_lock(&c->mu);
	if (c->up && !c->stopping && !find(c, k)) {
		e = xcalloc(1, sizeof(*e));
		memcpy(e->digest, k->digest, sizeof(e->digest));
		e->name = xstrdup(k->name);
		e->pending = true;
		struct job_cache_entry **b = bucket(c, e->digest);
		e->chain = *b;
		*b = e;
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

void job_cache_fill_end(struct job_cache *c, struct job_cache_entry *e, const char *reply,
			size_t len)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->mu);
	if (!reply || e->spoiled || !c->up || !c->max_entries) {
		drop(c, e);
	} else {
		e->reply = xmalloc(len + 1);
		memcpy(e->reply, reply, len);
		e->reply[len] = '\0';
		e->len = len;
		e->pending = false;
		lru_push(c, e);
		c->entries++;
		c->stats.fills++;
		while (c->entries > c->max_entries)
			drop(c, c->oldest);
	}
	pthread_mutex_unlock(&c->mu);
}

void job_cache_stats(struct job_cache *c, struct job_cache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->stats;
	out->entries = c->entries;
	pthread_mutex_unlock(&c->mu);
}

/* --- the thread -------------------------------------------------------------- */

static void complete(struct job_cache_fence *list, bool ok)
{
	for (struct job_cache_fence *f = list, *next; f; f = next) {
		next = f->next;	/* f is the caller's again once done runs */
		f->done(f->arg, ok);
	}
}

static int nibble(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* 64 lowercase hex digits at hex, ended by a space or the end. */
static bool hex_digest(const char *hex, uint8_t *out)
{
	for (int i = 0; i < 32; i++) {
		int hi = nibble(hex[2 * i]), lo = hi < 0 ? -1 : nibble(hex[2 * i + 1]);
		if (lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return hex[64] == '\0' || hex[64] == ' ';
}

/* Applies the notifications libpq has read so far: digests, space-separated. */
static void apply_notifications(struct job_cache *c)
{
	PGnotify *n;

	while ((n = PQnotifies(c->pg))) {
		const char *p = n->extra;
		bool bad = false;
		pthread_mutex_lock(&c->mu);
		while (*p && !bad) {
			uint8_t digest[32];
			bad = !hex_digest(p, digest);
			if (!bad) {
				invalidate(c, digest);
				p += p[64] ? 65 : 64;
			}
		}
		if (bad)	/* not ours to read: trust nothing kept */
			clear_all(c);
		pthread_mutex_unlock(&c->mu);
		if (bad)
			log_warn("job cache: notification on %s with an unexpected payload: cache "
				 "emptied", n->relname);
		PQfreemem(n);
	}
}

/*
 * c->mu held: no more fences or fills; returns, as one list, what waits on
 * the fence that is out and on the next one (they fail).
 */
static struct job_cache_fence *go_down(struct job_cache *c)
{
	struct job_cache_fence *all = c->answering, **tail = &all;

	c->up = false;
	c->answering = NULL;
	while (*tail)
		tail = &(*tail)->next;
	*tail = c->waiting;
	c->waiting = NULL;
	c->waiting_tail = &c->waiting;
	for (struct job_cache_fence *f = all; f; f = f->next)
		c->stats.fence_failures++;
	return all;
}

/* libpq's messages span lines: one line for the log. */
static void one_line(char *out, size_t n, const char *msg)
{
	size_t len = 0;
	for (; *msg && len + 1 < n; msg++) {
		bool space = *msg == '\n' || *msg == '\t';
		if (space && (!len || out[len - 1] == ' '))
			continue;
		out[len++] = space ? ' ' : *msg;
	}
	while (len && out[len - 1] == ' ')
		len--;
	out[len] = '\0';
}

static void connection_lost(struct job_cache *c, const char *why)
{
	char line[256];

	one_line(line, sizeof(line), why);
	log_warn("job cache: connection lost (%s): reads go to the database until it is back",
		 line);
	PQfinish(c->pg);
	c->pg = NULL;
	c->fence_out = false;
	c->want_write = false;
	c->next_connect_us = mono_usec() + RECONNECT_GAP_US;
	c->told_down = true;
	pthread_mutex_lock(&c->mu);
	clear_all(c);
	struct job_cache_fence *failed = go_down(c);
	pthread_mutex_unlock(&c->mu);
	complete(failed, false);
}

static void connect_listen(struct job_cache *c)
{
	if (mono_usec() < c->next_connect_us)
		return;
	c->pg = store_pg_connect(c->conninfo, "job-cache");
	PGresult *r = NULL;
	/* On a server that takes no writes, nothing it tells us is current. */
	bool ok = PQstatus(c->pg) == CONNECTION_OK && !store_pg_read_only(c->pg);
	if (ok) {
		r = PQexec(c->pg, "LISTEN " JOB_CACHE_CHANNEL);
		ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	}
	ok = ok && PQenterPipelineMode(c->pg) && !PQsetnonblocking(c->pg, 1);
	if (!ok) {
		if (!c->told_down) {
			char line[256];
			one_line(line, sizeof(line),
				 r ? PQresultErrorMessage(r) : PQstatus(c->pg) == CONNECTION_OK ?
				 "the database does not take writes" : PQerrorMessage(c->pg));
			log_warn("job cache: cannot listen (%s): reads go to the database", line);
		}
		c->told_down = true;
		PQclear(r);
		PQfinish(c->pg);
		c->pg = NULL;
		c->next_connect_us = mono_usec() + RECONNECT_GAP_US;
		return;
	}
	PQclear(r);
	if (c->told_down)
		log_info("job cache: listening again");
	c->told_down = false;
	pthread_mutex_lock(&c->mu);
	c->up = true;		/* from here on every change is heard of */
	pthread_mutex_unlock(&c->mu);
}

static void send_fence(struct job_cache *c)
{
	if (!PQpipelineSync(c->pg)) {
		connection_lost(c, PQerrorMessage(c->pg));
		return;
	}
	c->fence_out = true;
	c->fence_sent_us = mono_usec();
	int f = PQflush(c->pg);
	if (f < 0)
		connection_lost(c, PQerrorMessage(c->pg));
	else
		c->want_write = f == 1;
}

/* What the connection sent: notifications, and perhaps the fence's answer. */
static void read_input(struct job_cache *c)
{
	bool synced = false;

	if (!PQconsumeInput(c->pg)) {
		connection_lost(c, PQerrorMessage(c->pg));
		return;
	}
	while (c->fence_out && !PQisBusy(c->pg)) {
		PGresult *r = PQgetResult(c->pg);
		if (!r)
			break;
		ExecStatusType st = PQresultStatus(r);
		PQclear(r);
		if (st != PGRES_PIPELINE_SYNC) {
			connection_lost(c, "unexpected answer to a fence");
			return;
		}
		synced = true;
		c->fence_out = false;
	}
	/* Every notification sent before the sync's answer has been parsed by
	 * now: applied before the fence's waiters go on. */
	apply_notifications(c);
	if (PQstatus(c->pg) != CONNECTION_OK) {
		connection_lost(c, PQerrorMessage(c->pg));
		return;
	}
	/* The server said with its answer that it no longer takes writes: a
	 * failover may have left it behind, and the changes made on the new
	 * primary are never heard of here. The fence proves nothing. */
	if (synced && store_pg_read_only(c->pg)) {
		connection_lost(c, "the database no longer takes writes (a standby now, or "
			       "default_transaction_read_only)");
		return;
	}
	if (synced) {
		pthread_mutex_lock(&c->mu);
		struct job_cache_fence *done = c->answering;
		c->answering = NULL;
		pthread_mutex_unlock(&c->mu);
		complete(done, true);
	}
}

static void *cache_thread(void *arg)
{
	struct job_cache *c = arg;

	for (;;) {
		if (!c->pg)
			connect_listen(c);
		pthread_mutex_lock(&c->mu);
		if (c->stopping) {
			pthread_mutex_unlock(&c->mu);
			break;
		}
		bool send = c->pg && !c->fence_out && c->waiting;
		if (send) {
			c->answering = c->waiting;
			c->waiting = NULL;
			c->waiting_tail = &c->waiting;
			c->stats.fences++;
		}
		c->idle = !send && !c->waiting;
		pthread_mutex_unlock(&c->mu);
		if (send)
			send_fence(c);

		struct pollfd fds[2] = { { .fd = c->efd, .events = POLLIN } };
		nfds_t n = 1;
		int timeout = RECONNECT_GAP_US / 1000;
		if (c->pg) {
			fds[1] = (struct pollfd){ .fd = PQsocket(c->pg),
						  .events = POLLIN | (c->want_write ? POLLOUT : 0) };
			n = 2;
			int64_t left = FENCE_TIMEOUT_US - (mono_usec() - c->fence_sent_us);
			timeout = !c->fence_out ? -1 : left > 0 ? (int)(left / 1000) + 1 : 0;
		}
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			log_error("job cache: poll: %s", strerror(errno));
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_error("job cache: eventfd: %s", strerror(errno));
		}
		pthread_mutex_lock(&c->mu);
		c->idle = false;
		pthread_mutex_unlock(&c->mu);
		if (!c->pg || n < 2)
			continue;
		if (fds[1].revents & POLLOUT) {
			int f = PQflush(c->pg);
			c->want_write = f == 1;
			if (f < 0) {
				connection_lost(c, PQerrorMessage(c->pg));
				continue;
			}
		}
		if (fds[1].revents & (POLLIN | POLLERR | POLLHUP))
			read_input(c);
		if (c->pg && c->fence_out && mono_usec() - c->fence_sent_us > FENCE_TIMEOUT_US)
			connection_lost(c, "a fence went unanswered for 2 s");
	}
	/* stopping: what still waits learns nothing more */
	pthread_mutex_lock(&c->mu);
	struct job_cache_fence *failed = go_down(c);
	pthread_mutex_unlock(&c->mu);
	complete(failed, false);
	PQfinish(c->pg);
	c->pg = NULL;
	return NULL;
}

struct job_cache *job_cache_start(const char *conninfo, size_t max_entries)
{
	struct job_cache *c = xcalloc(1, sizeof(*c));
	size_t nb = 64;

	while (nb < 2 * max_entries)
		nb *= 2;
	c->conninfo = xstrdup(conninfo);
	c->max_entries = max_entries;
	c->buckets = xcalloc(nb, sizeof(*c->buckets));
	c->mask = nb - 1;
	c->waiting_tail = &c->waiting;
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0)
		abort();
	pthread_mutex_init(&c->mu, NULL);
	if (pthread_create(&c->thread, NULL, cache_thread, c))
		abort();
	return c;
}

void job_cache_stop(struct job_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_mutex_unlock(&c->mu);
	wake(c);
	pthread_join(c->thread, NULL);
	close(c->efd);
	/* placeholders still out belong to their fills: the server stops its
	 * requests before the cache, so there are none */
	for (size_t i = 0; i <= c->mask; i++) {
		for (struct job_cache_entry *e = c->buckets[i], *next; e; e = next) {
			next = e->chain;
			entry_free(e);
		}
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->mu);
	free(c->conninfo);
	free(c);
}
