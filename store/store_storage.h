/*
 * store_storage.h - Cloud Storage metadata: buckets (owned by projects),
 * objects (their bytes are files under the storage root, written by the
 * caller before the metadata), resumable upload sessions
 * (schema/014_storage.sql).
 */
#ifndef TP_STORE_STORAGE_H
#define TP_STORE_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct storage_bucket {
	char *name;
	char *project;
	char *location;
	char *storage_class;
	int64_t metageneration;
	int64_t create_us, update_us;	/* microseconds since the epoch */
};

/*
 * What the database keeps of an object: what its file cannot say, and its
 * hashes, valid while the file's size, mtime and inode are these.
 */
struct storage_object {
	char *bucket;
	char *name;
	char *content_type;
	char *metadata;		/* a JSON object as text, or NULL */
	int64_t size;
	int64_t mtime_ns;
	int64_t ino;
	unsigned char md5[16];
	uint32_t crc32c;
};

void storage_bucket_release(struct storage_bucket *b);
void storage_buckets_free(struct storage_bucket *v, size_t n);
void storage_object_release(struct storage_object *o);
void storage_objects_free(struct storage_object *v, size_t n);

/* A new bucket (b's name, project, location, class). STORE_CONFLICT: the name is taken. */
enum store_rc store_bucket_insert(struct store *st, const struct storage_bucket *b,
				  struct storage_bucket *out) MUST_CHECK;
enum store_rc store_bucket_get(struct store *st, const char *name,
			       struct storage_bucket *out) MUST_CHECK;
/* A project's buckets in name order, after `after` (NULL: from the start), at most limit. */
enum store_rc store_bucket_list(struct store *st, const char *project, const char *prefix,
				const char *after, int limit, struct storage_bucket **out,
				size_t *n) MUST_CHECK;
/* STORE_NOT_FOUND: none; STORE_STALE: it still holds objects. */
enum store_rc store_bucket_delete(struct store *st, const char *name) MUST_CHECK;

/* Writes (replaces) what is kept of an object. STORE_NOT_FOUND: no such bucket. */
enum store_rc store_object_put(struct store *st, const struct storage_object *o) MUST_CHECK;
enum store_rc store_object_get(struct store *st, const char *bucket, const char *name,
			       struct storage_object *out) MUST_CHECK;
/* What is kept of the objects from first to last (names, inclusive), in name order. */
enum store_rc store_object_range(struct store *st, const char *bucket, const char *first,
				 const char *last, struct storage_object **out,
				 size_t *n) MUST_CHECK;
enum store_rc store_object_forget(struct store *st, const char *bucket,
				  const char *name) MUST_CHECK;

/* A resumable upload session: what its first request said. */
struct storage_upload {
	char *id;
	char *bucket;
	char *name;
	char *content_type;
	char *metadata;		/* JSON text or NULL */
	int64_t total;		/* -1: not said yet */
	int64_t received;	/* bytes taken so far */
	unsigned char hash_state[96];	/* hash_pair_save() of those bytes (HASH_STATE_BYTES) */
	size_t hash_state_len;	/* 0: none yet */
};
void storage_upload_release(struct storage_upload *u);
enum store_rc store_upload_begin(struct store *st, const struct storage_upload *u) MUST_CHECK;
enum store_rc store_upload_get(struct store *st, const char *id,
			       struct storage_upload *out) MUST_CHECK;
/* Records a chunk taken: received (was `from`) and the hashes' state. STORE_STALE: not at from. */
enum store_rc store_upload_progress(struct store *st, const char *id, int64_t from,
				    int64_t received, const unsigned char *hash_state,
				    size_t hash_state_len) MUST_CHECK;
enum store_rc store_upload_end(struct store *st, const char *id) MUST_CHECK;

#endif
