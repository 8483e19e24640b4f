#include "snapshot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common.h"

struct snap_ref {
	atomic_int refs;	/* the holder's one, plus one per reader */
	void *obj;
	void (*free_fn)(void *);
};

struct snapshot {
	pthread_rwlock_t lock;	/* readers share it; replace() takes it alone */
	struct snap_ref *cur;
	void (*free_fn)(void *);
};

static struct snap_ref *ref_new(void *obj, void (*free_fn)(void *))
{
	struct snap_ref *r = xcalloc(1, sizeof(*r));
	atomic_init(&r->refs, 1);
	r->obj = obj;
	r->free_fn = free_fn;
	return r;
}

struct snapshot *snapshot_new(void *obj, void (*free_fn)(void *))
{
	struct snapshot *s = xcalloc(1, sizeof(*s));
	pthread_rwlock_init(&s->lock, NULL);
	s->free_fn = free_fn;
	s->cur = ref_new(obj, free_fn);
	return s;
}

void *snapshot_acquire(struct snapshot *s, struct snap_ref **ref)
{
	/* The increment happens under the lock that replace() swaps under
	 * (shared among readers), so the holder's reference still pins cur
	 * while we take ours. */
	pthread_rwlock_rdlock(&s->lock);
	struct snap_ref *r = s->cur;
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	pthread_rwlock_unlock(&s->lock);
	*ref = r;
	return r->obj;
}

void snapshot_release(struct snap_ref *ref)
{
	if (!ref || atomic_fetch_sub_explicit(&ref->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (ref->obj && ref->free_fn)
		ref->free_fn(ref->obj);
	free(ref);
}

void snapshot_replace(struct snapshot *s, void *obj)
{
	struct snap_ref *r = ref_new(obj, s->free_fn), *old;

	pthread_rwlock_wrlock(&s->lock);
	old = s->cur;
	s->cur = r;
	pthread_rwlock_unlock(&s->lock);
	snapshot_release(old);
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	snapshot_release(s->cur);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}
