/*
 * snapshot.h - one immutable object that can be replaced while readers use
 * it: the catalog and the tokens file, reloaded on SIGHUP.
 *
 * A reader acquires the current version and releases it when done; a
 * replaced version is freed when its last reader releases it, so a reload
 * never waits for readers and never frees what one still holds.
 */
#ifndef TP_SNAPSHOT_H
#define TP_SNAPSHOT_H

struct snapshot;
struct snap_ref;

/* Holds obj (may be NULL), freed with free_fn when replaced and unused. */
struct snapshot *snapshot_new(void *obj, void (*free_fn)(void *));
/* The current object (may be NULL); *ref must go to snapshot_release(). */
void *snapshot_acquire(struct snapshot *s, struct snap_ref **ref);
void snapshot_release(struct snap_ref *ref);	/* NULL is a no-op */
/* Makes obj the current object; the old one goes when its readers are done. */
void snapshot_replace(struct snapshot *s, void *obj);
/* Frees s and its current object; no reader may hold a reference. */
void snapshot_free(struct snapshot *s);

#endif
