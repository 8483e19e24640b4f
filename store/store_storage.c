/*
 * store_storage.c - Cloud Storage metadata (store_storage.h).
 */
#include "store_storage.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "store_pg.h"

/* Times as microseconds since the epoch, as the other modules read them. */
#define US(col) "(extract(epoch from " col ") * 1000000)::int8"

#define BUCKET_COLS "name, project, location, storage_class, metageneration, " \
	US("create_time") ", " US("update_time")
#define OBJECT_COLS "bucket, name, content_type, metadata::text, size, mtime_ns, ino, " \
	"encode(md5, 'hex'), crc32c"

static const struct store_stmt stmt_bucket_insert = {
	19, "bucket_insert",
	"INSERT INTO storage_buckets (name, project, location, storage_class) VALUES ($1, $2, $3, $4) "
	"ON CONFLICT (name) DO NOTHING RETURNING " BUCKET_COLS,
	false,
};

static const struct store_stmt stmt_bucket_get = {
	20, "bucket_get", "SELECT " BUCKET_COLS " FROM storage_buckets WHERE name = $1", true,
};

static const struct store_stmt stmt_bucket_list = {
	21, "bucket_list",
	"SELECT " BUCKET_COLS " FROM storage_buckets WHERE project = $1 AND name > $2 "
	"AND starts_with(name, $3) ORDER BY name LIMIT $4::int",
	true,
};

/* 0 rows: no such bucket; deleted = 0: it holds objects. */
static const struct store_stmt stmt_bucket_delete = {
	22, "bucket_delete",
	"WITH b AS (SELECT name FROM storage_buckets WHERE name = $1 FOR UPDATE), "
	"d AS (DELETE FROM storage_buckets WHERE name IN (SELECT name FROM b) AND NOT EXISTS "
	"(SELECT 1 FROM storage_objects WHERE bucket = $1) RETURNING 1) "
	"SELECT (SELECT count(*) FROM d) FROM b",
	false,
};

static const struct store_stmt stmt_object_put = {
	23, "object_put",
	"INSERT INTO storage_objects (bucket, name, size, mtime_ns, ino, content_type, md5, crc32c, "
	"  metadata) VALUES ($1, $2, $3::int8, $4::int8, $5::int8, $6, decode($7, 'hex'), $8::int8, "
	"  $9::jsonb) "
	"ON CONFLICT (bucket, name) DO UPDATE SET size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns, "
	"  ino = EXCLUDED.ino, content_type = EXCLUDED.content_type, md5 = EXCLUDED.md5, "
	"  crc32c = EXCLUDED.crc32c, metadata = EXCLUDED.metadata",
	false,
};

static const struct store_stmt stmt_object_get = {
	24, "object_get", "SELECT " OBJECT_COLS " FROM storage_objects WHERE bucket = $1 AND name = $2",
	true,
};

static const struct store_stmt stmt_object_range = {
	25, "object_range",
	"SELECT " OBJECT_COLS " FROM storage_objects WHERE bucket = $1 AND name >= $2 AND name <= $3 "
	"ORDER BY name",
	true,
};

static const struct store_stmt stmt_object_forget = {
	26, "object_forget", "DELETE FROM storage_objects WHERE bucket = $1 AND name = $2", false,
};

static const struct store_stmt stmt_upload_begin = {
	27, "upload_begin",
	"INSERT INTO storage_uploads (id, bucket, name, content_type, metadata, total) "
	"SELECT $1, $2, $3, $4, $5::jsonb, $6::int8 WHERE EXISTS "
	"(SELECT 1 FROM storage_buckets WHERE name = $2) RETURNING id",
	false,
};

static const struct store_stmt stmt_upload_get = {
	43, "upload_get",
	"SELECT id, bucket, name, content_type, metadata::text, coalesce(total, -1), received, "
	"encode(hash_state, 'hex') FROM storage_uploads WHERE id = $1",
	true,
};

static const struct store_stmt stmt_upload_progress = {
	45, "upload_progress",
	"UPDATE storage_uploads SET received = $3::int8, hash_state = decode($4, 'hex') "
	"WHERE id = $1 AND received = $2::int8 RETURNING id",
	false,
};

static const struct store_stmt stmt_upload_end = {
	44, "upload_end", "DELETE FROM storage_uploads WHERE id = $1 RETURNING id", false,
};

/* --- rows ------------------------------------------------------------------ */

static char *col(const PGresult *res, int row, int c)
{
	return PQgetisnull(res, row, c) ? NULL : xstrdup(PQgetvalue(res, row, c));
}

static int64_t col_i64(const PGresult *res, int row, int c)
{
	return strtoll(PQgetvalue(res, row, c), NULL, 10);
}

static void bucket_from(const PGresult *res, int row, struct storage_bucket *b)
{
	b->name = col(res, row, 0);
	b->project = col(res, row, 1);
	b->location = col(res, row, 2);
	b->storage_class = col(res, row, 3);
	b->metageneration = col_i64(res, row, 4);
	b->create_us = col_i64(res, row, 5);
	b->update_us = col_i64(res, row, 6);
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : 0;
}

static void hex_to(const char *hex, unsigned char *out, size_t max, size_t *n)
{
	size_t i = 0;
	for (; i < max && hex[2 * i] && hex[2 * i + 1]; i++)
		out[i] = (unsigned char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	if (n)
		*n = i;
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static void object_from(const PGresult *res, int row, struct storage_object *o)
{
	o->bucket = col(res, row, 0);
	o->name = col(res, row, 1);
	o->content_type = col(res, row, 2);
	o->metadata = col(res, row, 3);
	o->size = col_i64(res, row, 4);
	o->mtime_ns = col_i64(res, row, 5);
	o->ino = col_i64(res, row, 6);
	hex_to(PQgetvalue(res, row, 7), o->md5, 16, NULL);
	o->crc32c = (uint32_t)col_i64(res, row, 8);
}

void storage_bucket_release(struct storage_bucket *b)
{
	if (!b)
		return;
	free(b->name);
	free(b->project);
	free(b->location);
	free(b->storage_class);
	memset(b, 0, sizeof(*b));
}

void storage_buckets_free(struct storage_bucket *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		storage_bucket_release(&v[i]);
	free(v);
}

void storage_object_release(struct storage_object *o)
{
	if (!o)
		return;
	free(o->bucket);
	free(o->name);
	free(o->content_type);
	free(o->metadata);
	memset(o, 0, sizeof(*o));
}

void storage_objects_free(struct storage_object *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		storage_object_release(&v[i]);
	free(v);
}

void storage_upload_release(struct storage_upload *u)
{
	if (!u)
		return;
	free(u->id);
	free(u->bucket);
	free(u->name);
	free(u->content_type);
	free(u->metadata);
	memset(u, 0, sizeof(*u));
}

/* Runs stmt on a pooled connection. */
static PGresult *run(struct store *st, const struct store_stmt *stmt, int n,
		     const char *const *params, enum store_rc *rc)
{
	struct store_conn *c = store_acquire(st);
	PGresult *res = store_exec(c, stmt, n, params, rc);
	store_release(st, c);
	return res;
}

/* --- buckets ---------------------------------------------------------------- */

enum store_rc store_bucket_insert(struct store *st, const struct storage_bucket *b,
				  struct storage_bucket *out)
{
	const char *params[] = { b->name, b->project, b->location, b->storage_class };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_bucket_insert, 4, params, &rc);

	memset(out, 0, sizeof(*out));
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_CONFLICT;
	if (rc == STORE_OK)
		bucket_from(res, 0, out);
	PQclear(res);
	return rc;
}

enum store_rc store_bucket_get(struct store *st, const char *name, struct storage_bucket *out)
{
	const char *params[] = { name };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_bucket_get, 1, params, &rc);

	memset(out, 0, sizeof(*out));
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK)
		bucket_from(res, 0, out);
	PQclear(res);
	return rc;
}

enum store_rc store_bucket_list(struct store *st, const char *project, const char *prefix,
				const char *after, int limit, struct storage_bucket **out,
				size_t *n)
{
	char lim[16];
	snprintf(lim, sizeof(lim), "%d", limit);
	const char *params[] = { project, after ? after : "", prefix ? prefix : "", lim };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_bucket_list, 4, params, &rc);

	*out = NULL;
	*n = 0;
	if (rc == STORE_OK) {
		*n = (size_t)PQntuples(res);
		*out = xcalloc(*n ? *n : 1, sizeof(**out));
		for (size_t i = 0; i < *n; i++)
			bucket_from(res, (int)i, &(*out)[i]);
	}
	PQclear(res);
	return rc;
}

enum store_rc store_bucket_delete(struct store *st, const char *name)
{
	const char *params[] = { name };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_bucket_delete, 1, params, &rc);

	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	else if (rc == STORE_OK && strcmp(PQgetvalue(res, 0, 0), "1"))
		rc = STORE_STALE;
	PQclear(res);
	return rc;
}

/* --- objects ---------------------------------------------------------------- */

enum store_rc store_object_put(struct store *st, const struct storage_object *o)
{
	char size[24], mtime[24], ino[24], crc[24], md5[33];

	snprintf(size, sizeof(size), "%" PRId64, o->size);
	snprintf(mtime, sizeof(mtime), "%" PRId64, o->mtime_ns);
	snprintf(ino, sizeof(ino), "%" PRId64, o->ino);
	snprintf(crc, sizeof(crc), "%" PRIu32, o->crc32c);
	to_hex(o->md5, 16, md5);
	const char *params[] = { o->bucket, o->name, size, mtime, ino, o->content_type, md5, crc,
				 o->metadata };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_object_put, 9, params, &rc);
	PQclear(res);
	if (rc == STORE_ERROR) {
		/* A bucket that does not exist fails the foreign key. */
		struct storage_bucket b;
		if (store_bucket_get(st, o->bucket, &b) == STORE_NOT_FOUND)
			rc = STORE_NOT_FOUND;
		storage_bucket_release(&b);
	}
	return rc;
}

enum store_rc store_object_get(struct store *st, const char *bucket, const char *name,
			       struct storage_object *out)
{
	const char *params[] = { bucket, name };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_object_get, 2, params, &rc);

	memset(out, 0, sizeof(*out));
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK)
		object_from(res, 0, out);
	PQclear(res);
	return rc;
}

enum store_rc store_object_range(struct store *st, const char *bucket, const char *first,
				 const char *last, struct storage_object **out, size_t *n)
{
	const char *params[] = { bucket, first, last };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_object_range, 3, params, &rc);

	*out = NULL;
	*n = 0;
	if (rc == STORE_OK) {
		*n = (size_t)PQntuples(res);
		*out = xcalloc(*n ? *n : 1, sizeof(**out));
		for (size_t i = 0; i < *n; i++)
			object_from(res, (int)i, &(*out)[i]);
	}
	PQclear(res);
	return rc;
}

enum store_rc store_object_forget(struct store *st, const char *bucket, const char *name)
{
	const char *params[] = { bucket, name };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_object_forget, 2, params, &rc);
	PQclear(res);
	return rc;
}

/* --- resumable uploads ---------------------------------------------------------- */

enum store_rc store_upload_begin(struct store *st, const struct storage_upload *u)
{
	char total[24];
	if (u->total >= 0)
		snprintf(total, sizeof(total), "%" PRId64, u->total);
	const char *params[] = { u->id, u->bucket, u->name, u->content_type, u->metadata,
				 u->total >= 0 ? total : NULL };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_upload_begin, 6, params, &rc);

	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;	/* no such bucket */
	PQclear(res);
	return rc;
}

enum store_rc store_upload_get(struct store *st, const char *id, struct storage_upload *out)
{
	const char *params[] = { id };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_upload_get, 1, params, &rc);

	memset(out, 0, sizeof(*out));
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK) {
		out->id = col(res, 0, 0);
		out->bucket = col(res, 0, 1);
		out->name = col(res, 0, 2);
		out->content_type = col(res, 0, 3);
		out->metadata = col(res, 0, 4);
		out->total = col_i64(res, 0, 5);
		out->received = col_i64(res, 0, 6);
		if (!PQgetisnull(res, 0, 7))
			hex_to(PQgetvalue(res, 0, 7), out->hash_state, sizeof(out->hash_state),
			       &out->hash_state_len);
	}
	PQclear(res);
	return rc;
}

enum store_rc store_upload_end(struct store *st, const char *id)
{
	const char *params[] = { id };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_upload_end, 1, params, &rc);

	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	PQclear(res);
	return rc;
}

enum store_rc store_upload_progress(struct store *st, const char *id, int64_t from,
				    int64_t received, const unsigned char *hash_state,
				    size_t hash_state_len)
{
	char f[24], r[24], hs[2 * 96 + 1];

	if (hash_state_len > 96)
		hash_state_len = 96;
	snprintf(f, sizeof(f), "%" PRId64, from);
	snprintf(r, sizeof(r), "%" PRId64, received);
	to_hex(hash_state, hash_state_len, hs);
	const char *params[] = { id, f, r, hs };
	enum store_rc rc;
	PGresult *res = run(st, &stmt_upload_progress, 4, params, &rc);

	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_STALE;
	PQclear(res);
	return rc;
}
