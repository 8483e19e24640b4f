#include "job_cache.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bgloop.h"
#include "common.h"
#include "log.h"

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
	struct listen_hub *hub;
	struct listen_sub *sub;
	size_t max_entries;

	pthread_mutex_t mu;	/* guards everything below */
	struct job_cache_entry **buckets;
	size_t mask;
	struct job_cache_entry *newest, *oldest;
	size_t entries;		/* cached replies (placeholders not counted) */
	bool up;		/* listening: notifications arrive, fills are kept */
	bool stopping;
	bool told_down;		/* it was lost: say when it is back */
	uint64_t fence_round;	/* the hub's round of the last fence counted */
	struct job_cache_stats stats;
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

/* The hub's thread: the fence is back. */
static void fenced(void *arg, bool ok)
{
	struct job_cache_fence *f = arg;
	struct job_cache *c = f->cache;

	pthread_mutex_lock(&c->mu);
	if (!ok) {
		c->stats.fence_failures++;
	} else if (f->hub.round != c->fence_round) {
		c->fence_round = f->hub.round;	/* the round trips, not their waiters */
		c->stats.fences++;
	}
	pthread_mutex_unlock(&c->mu);
	f->done(f->arg, ok);
}

void job_cache_fence(struct job_cache *c, struct job_cache_fence *f, void (*done)(void *, bool),
		     void *arg)
{
	f->cache = c;
	f->done = done;
	f->arg = arg;
	pthread_mutex_lock(&c->mu);
	bool up = c->up && !c->stopping;
	if (!up)
		c->stats.fence_failures++;
	pthread_mutex_unlock(&c->mu);
	if (!up)
		done(arg, false);
	else
		listen_hub_fence(c->hub, &f->hub, fenced, f);
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

/* --- the hub's callbacks (its thread) -------------------------------------- */

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

/* A notification: digests, space-separated. */
static void on_notify(void *arg, const char *payload)
{
	struct job_cache *c = arg;
	const char *p = payload;
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
			 "emptied", JOB_CACHE_CHANNEL);
}

/* Listening: from here on every change is heard of. */
static void on_up(void *arg)
{
	struct job_cache *c = arg;

	pthread_mutex_lock(&c->mu);
	c->up = true;
	bool was_down = c->told_down;
	c->told_down = false;
	pthread_mutex_unlock(&c->mu);
	if (was_down)
		log_info("job cache: listening again");
}

/* The connection is gone: nothing kept can be trusted any more. */
static void on_down(void *arg, const char *why)
{
	struct job_cache *c = arg;
	char line[256];

	bgloop_one_line(line, sizeof(line), why);
	log_warn("job cache: connection lost (%s): reads go to the database until it is back",
		 line);
	pthread_mutex_lock(&c->mu);
	c->up = false;
	c->told_down = true;
	clear_all(c);
	pthread_mutex_unlock(&c->mu);
}

static const struct listen_sub_ops cache_sub_ops = { on_notify, on_up, on_down };

struct job_cache *job_cache_start(struct listen_hub *hub, size_t max_entries)
{
	struct job_cache *c = xcalloc(1, sizeof(*c));
	size_t nb = 64;

	while (nb < 2 * max_entries)
		nb *= 2;
	c->hub = hub;
	c->max_entries = max_entries;
	c->buckets = xcalloc(nb, sizeof(*c->buckets));
	c->mask = nb - 1;
	pthread_mutex_init(&c->mu, NULL);
	c->sub = listen_hub_subscribe(hub, JOB_CACHE_CHANNEL, &cache_sub_ops, c);
	return c;
}

void job_cache_stop(struct job_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_mutex_unlock(&c->mu);
	listen_hub_unsubscribe(c->hub, c->sub);
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
	free(c);
}
