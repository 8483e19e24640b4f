#include "node_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* More entries than this (names of nodes synced): everything is dropped. */
#define NODE_CACHE_MAX 1000000

struct entry {
	struct entry *next;
	uint64_t hash;
	uint64_t gen;		/* bumped by each change heard */
	bool known;		/* inc and version hold what a full sync read */
	int64_t version;
	uint64_t reports;	/* digest of the last full sync's reports, applied */
	char *inc;
	char name[];
};

struct node_cache {
	pthread_mutex_t mu;
	bool up;		/* listening: changes are heard */
	uint64_t epoch;		/* bumped when everything is dropped */
	struct entry **buckets;	/* a power of two of them */
	size_t nbuckets, n;
};

static uint64_t name_hash(const char *s)
{
	uint64_t x = 0xcbf29ce484222325ULL;	/* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		x = (x ^ *p) * 0x100000001b3ULL;
	return x ^ (x >> 31);
}

struct node_cache *node_cache_new(void)
{
	struct node_cache *nc = xcalloc(1, sizeof(*nc));
	pthread_mutex_init(&nc->mu, NULL);
	nc->epoch = 1;
	nc->nbuckets = 1024;
	nc->buckets = xcalloc(nc->nbuckets, sizeof(*nc->buckets));
	return nc;
}

static void drop_all(struct node_cache *nc)
{
	for (size_t i = 0; i < nc->nbuckets; i++)
		while (nc->buckets[i]) {
			struct entry *e = nc->buckets[i];
			nc->buckets[i] = e->next;
			free(e->inc);
			free(e);
		}
	nc->n = 0;
	nc->epoch++;
}

void node_cache_free(struct node_cache *nc)
{
	if (!nc)
		return;
	drop_all(nc);
	free(nc->buckets);
	pthread_mutex_destroy(&nc->mu);
	free(nc);
}

static struct entry *find(struct node_cache *nc, const char *node, uint64_t h)
{
	for (struct entry *e = nc->buckets[h & (nc->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && !strcmp(e->name, node))
			return e;
	return NULL;
}

static struct entry *find_or_add(struct node_cache *nc, const char *node)
{
	uint64_t h = name_hash(node);
	struct entry *e = find(nc, node, h);
	if (e)
		return e;
	if (nc->n >= NODE_CACHE_MAX)
		drop_all(nc);
	if (nc->n >= nc->nbuckets) {
		size_t nb = nc->nbuckets * 2;
		struct entry **b = xcalloc(nb, sizeof(*b));
		for (size_t i = 0; i < nc->nbuckets; i++)
			while (nc->buckets[i]) {
				struct entry *x = nc->buckets[i];
				nc->buckets[i] = x->next;
				x->next = b[x->hash & (nb - 1)];
				b[x->hash & (nb - 1)] = x;
			}
		free(nc->buckets);
		nc->buckets = b;
		nc->nbuckets = nb;
	}
	size_t len = strlen(node);
	e = xcalloc(1, sizeof(*e) + len + 1);
	memcpy(e->name, node, len + 1);
	e->hash = h;
	e->gen = 1;
	e->next = nc->buckets[h & (nc->nbuckets - 1)];
	nc->buckets[h & (nc->nbuckets - 1)] = e;
	nc->n++;
	return e;
}

void node_cache_listening(struct node_cache *nc, bool up)
{
	if (!nc)
		return;
	pthread_mutex_lock(&nc->mu);
	drop_all(nc);
	nc->up = up;
	pthread_mutex_unlock(&nc->mu);
}

void node_cache_changed(struct node_cache *nc, const char *node)
{
	if (!nc)
		return;
	pthread_mutex_lock(&nc->mu);
	struct entry *e = find(nc, node, name_hash(node));
	if (e) {
		e->gen++;
		e->known = false;
	}
	pthread_mutex_unlock(&nc->mu);
}

struct node_stamp node_cache_stamp(struct node_cache *nc, const char *node)
{
	struct node_stamp s = { 0, 0 };
	if (!nc)
		return s;
	pthread_mutex_lock(&nc->mu);
	if (nc->up) {
		s.gen = find_or_add(nc, node)->gen;
		s.epoch = nc->epoch;
	}
	pthread_mutex_unlock(&nc->mu);
	return s;
}

/* Whether e is as it was at stamp (called with the lock held). */
static bool unmoved(const struct node_cache *nc, const struct entry *e, struct node_stamp s)
{
	return nc->up && s.epoch == nc->epoch && e && e->gen == s.gen;
}

void node_cache_fill(struct node_cache *nc, const char *node, struct node_stamp stamp,
		     const char *incarnation, int64_t version, uint64_t reports)
{
	if (!nc)
		return;
	pthread_mutex_lock(&nc->mu);
	struct entry *e = find(nc, node, name_hash(node));
	if (unmoved(nc, e, stamp)) {
		if (!e->inc || strcmp(e->inc, incarnation)) {
			free(e->inc);
			e->inc = xstrdup(incarnation);
		}
		e->version = version;
		e->reports = reports;
		e->known = true;
	}
	pthread_mutex_unlock(&nc->mu);
}

bool node_cache_get(struct node_cache *nc, const char *node, char *inc, size_t incsize,
		    int64_t *version, uint64_t *reports, struct node_stamp *stamp)
{
	bool ok = false;
	if (!nc)
		return false;
	pthread_mutex_lock(&nc->mu);
	struct entry *e = nc->up ? find(nc, node, name_hash(node)) : NULL;
	if (e && e->known && strlen(e->inc) < incsize) {
		strcpy(inc, e->inc);
		*version = e->version;
		*reports = e->reports;
		stamp->gen = e->gen;
		stamp->epoch = nc->epoch;
		ok = true;
	}
	pthread_mutex_unlock(&nc->mu);
	return ok;
}

bool node_cache_moved(struct node_cache *nc, const char *node, struct node_stamp stamp)
{
	if (!nc)
		return true;
	pthread_mutex_lock(&nc->mu);
	bool moved = !unmoved(nc, find(nc, node, name_hash(node)), stamp);
	pthread_mutex_unlock(&nc->mu);
	return moved;
}
