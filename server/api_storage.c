/*
 * api_storage.c - Cloud Storage's JSON API, the subset training uses
 * (docs/storage.md): buckets (insert, get, list, delete), objects (uploads
 * by media, multipart and resumable sessions; get with alt=media and
 * ranges, also under /download; list with prefix, delimiter and pages;
 * delete; rewrite and copy). What gcloud storage and gcloud ai-platform
 * jobs submit training --package-path send works unchanged.
 *
 * A bucket belongs to the project that made it (?project=); its objects
 * are the files under <storage root>/<bucket>/ (storage_fs.h), which the
 * agents mount at /gcs: a package uploaded here is what a replica
 * installs, and what a replica writes under /gcs/<bucket>/ is an object.
 * Bodies are streamed to files (a head hook sets the sink), never held in
 * memory; downloads are sent from the file (sendfile).
 */
#include "api_storage.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "auth.h"
#include "hash.h"
#include "log.h"
#include "paging.h"
#include "storage_fs.h"
#include "store_storage.h"
#include "wire.h"

#define LIST_MAX 1000
#define JSON_TYPE "application/json; charset=UTF-8"
/* A resumable session's first request, or a multipart body's head: at most this much JSON. */
#define META_MAX (64 * 1024)

/* --- errors: Google's envelope, with Cloud Storage's errors[] too ------------------ */

static void storage_error(struct request *req, int http, const char *reason, const char *fmt, ...)
	PRINTF_LIKE(4, 5);

static void storage_error(struct request *req, int http, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	enum api_code code = http == 400 ? API_INVALID_ARGUMENT : http == 401 ? API_UNAUTHENTICATED :
			     http == 403 ? API_PERMISSION_DENIED : http == 404 ? API_NOT_FOUND :
			     http == 409 ? API_ALREADY_EXISTS : http == 412 ? API_FAILED_PRECONDITION :
			     http == 413 ? API_OUT_OF_RANGE : http == 416 ? API_OUT_OF_RANGE :
			     http == 503 ? API_UNAVAILABLE : API_INTERNAL;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *details = json_array();
	json_array_append_new(details, api_request_info_detail(req->request_id));
	json_t *body = api_error_json(code, http, msg, details);
	json_object_set_new(json_object_get(body, "error"), "errors",
			    json_pack("[{s:s, s:s, s:s}]", "message", msg, "domain", "global",
				      "reason", reason));
	if (http >= 500)
		log_error("%s %s -> %d: %s", req->method, req->path, http, msg);
	reply_json(req, http, body);
}

static void storage_store_error(struct request *req, enum store_rc rc)
{
	reply_store_error(req, rc);
}

/* --- resources ------------------------------------------------------------------- */

static void time_of(int64_t usec, char *buf, size_t len)
{
	wire_time_format(usec, buf, len);
}

/* scheme://host of this server as the client reached it (links in resources). */
static char *base_url(struct request *req)
{
	const char *host = req_header(req, "Host");
	return xasprintf("%s://%s", req->srv->tls_cert_pem ? "https" : "http",
			 host && *host ? host : "localhost");
}

/* A path segment percent-encoded (an object name in a URL). */
static void add_escaped(struct strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p)) {
			sb_addch(sb, (char)*p);
		} else {
			sb_addch(sb, '%');
			sb_addch(sb, hex[*p >> 4]);
			sb_addch(sb, hex[*p & 15]);
		}
	}
}

/*
 * A project's number, as Google's clients expect one (an integer): 12
 * digits derived from its id, the same on every server.
 */
static char *project_number(const char *project)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)project; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return xasprintf("%" PRIu64, (uint64_t)(100000000000ull + h % 900000000000ull));
}

static json_t *bucket_json(struct request *req, const struct storage_bucket *b)
{
	char created[40], updated[40], etag[32];
	char *base = base_url(req);

	time_of(b->create_us, created, sizeof(created));
	time_of(b->update_us, updated, sizeof(updated));
	snprintf(etag, sizeof(etag), "CA%" PRId64 "=", b->metageneration);
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:{s:b}}}",
			      "kind", "storage#bucket", "id", b->name, "name", b->name, "selfLink",
			      "", "projectNumber", b->project, "metageneration", "1", "location",
			      b->location, "storageClass", b->storage_class, "timeCreated", created,
			      "updated", updated, "etag", etag, "iamConfiguration",
			      "uniformBucketLevelAccess", "enabled", 1);
	char *self = xasprintf("%s/storage/v1/b/%s", base, b->name);
	json_object_set_new(j, "selfLink", json_string(self));
	json_object_set_new(j, "metageneration", json_sprintf("%" PRId64, b->metageneration));
	json_object_set_new(j, "locationType", json_string("multi-region"));
	char *number = project_number(b->project);
	json_object_set_new(j, "projectNumber", json_string(number));
	free(number);
	free(self);
	free(base);
	return j;
}

static char *b64(const void *p, size_t n)
{
	return wire_base64_encode(p, n, false);
}

/* The object resource; meta NULL: hashes not known (a listing of files written by others). */
static json_t *object_json(struct request *req, const char *bucket, const char *name,
			   const struct storage_stat *st, const struct storage_object *meta)
{
	char t[40], gen[24], size[24];
	int64_t generation = st->mtime_ns / 1000;
	struct strbuf link = STRBUF_INIT;
	char *base = base_url(req);

	time_of(generation, t, sizeof(t));
	snprintf(gen, sizeof(gen), "%" PRId64, generation);
	snprintf(size, sizeof(size), "%" PRId64, st->size);
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
			      "kind", "storage#object", "name", name, "bucket", bucket,
			      "generation", gen, "metageneration", "1", "contentType",
			      meta && meta->content_type ? meta->content_type :
			      "application/octet-stream", "storageClass", "STANDARD", "size", size,
			      "timeCreated", t, "updated", t, "timeStorageClassUpdated", t);
	char *id = xasprintf("%s/%s/%s", bucket, name, gen);
	json_object_set_new(j, "id", json_string(id));
	free(id);
	sb_addf(&link, "%s/storage/v1/b/%s/o/", base, bucket);
	add_escaped(&link, name);
	json_object_set_new(j, "selfLink", json_string(sb_str(&link)));
	sb_reset(&link);
	sb_addf(&link, "%s/download/storage/v1/b/%s/o/", base, bucket);
	add_escaped(&link, name);
	sb_addf(&link, "?generation=%s&alt=media", gen);
	json_object_set_new(j, "mediaLink", json_string(sb_str(&link)));
	sb_release(&link);
	free(base);
	if (meta) {
		unsigned char crc[4] = { (unsigned char)(meta->crc32c >> 24),
					 (unsigned char)(meta->crc32c >> 16),
					 (unsigned char)(meta->crc32c >> 8), (unsigned char)meta->crc32c };
		char *m = b64(meta->md5, 16), *c = b64(crc, 4);
		json_object_set_new(j, "md5Hash", json_string(m));
		json_object_set_new(j, "crc32c", json_string(c));
		char *etag = xasprintf("C%s=", gen);
		json_object_set_new(j, "etag", json_string(etag));
		free(etag);
		free(m);
		free(c);
		json_t *md = meta->metadata ? json_loads(meta->metadata, 0, NULL) : NULL;
		if (json_is_object(md) && json_object_size(md))
			json_object_set(j, "metadata", md);
		json_decref(md);
	}
	return j;
}

/* Whether a kept row describes this very file. */
static bool meta_fresh(const struct storage_object *m, const struct storage_stat *st)
{
	return m->size == st->size && m->mtime_ns == st->mtime_ns && m->ino == st->ino;
}

/*
 * What is kept of an object whose file is fd, made fresh: a file written by
 * other means (a replica under /gcs) is hashed now and remembered, keeping
 * the content type and metadata an earlier upload gave it.
 */
static enum store_rc object_meta(struct request *req, const char *bucket, const char *name, int fd,
				 const struct storage_stat *st, struct storage_object *out)
{
	enum store_rc rc = store_object_get(req->srv->store, bucket, name, out);

	if (rc == STORE_OK && meta_fresh(out, st))
		return STORE_OK;
	if (rc != STORE_OK && rc != STORE_NOT_FOUND)
		return rc;
	struct hash_pair hp;
	if (storage_fs_hash(fd, &hp))
		return STORE_ERROR;
	if (rc == STORE_NOT_FOUND) {
		memset(out, 0, sizeof(*out));
		out->bucket = xstrdup(bucket);
		out->name = xstrdup(name);
		out->content_type = xstrdup("application/octet-stream");
	}
	md5_final(&hp.md5, out->md5);
	out->crc32c = hp.crc32c;
	out->size = st->size;
	out->mtime_ns = st->mtime_ns;
	out->ino = st->ino;
	rc = store_object_put(req->srv->store, out);
	return rc == STORE_NOT_FOUND ? STORE_OK : rc;
}

/* --- checks ------------------------------------------------------------------------ */

/* The bucket of the path exists: 0, or replied. */
static int need_bucket(struct request *req, const char *name, struct storage_bucket *b)
{
	enum store_rc rc = store_bucket_get(req->srv->store, name, b);

	if (rc == STORE_NOT_FOUND) {
		storage_error(req, 404, "notFound", "The specified bucket does not exist.");
		return -1;
	}
	if (rc != STORE_OK) {
		storage_store_error(req, rc);
		return -1;
	}
	return 0;
}

static int need_object_name(struct request *req, const char *name)
{
	const char *why;

	if (!name || !*name) {
		storage_error(req, 400, "required", "Required parameter: name.");
		return -1;
	}
	if (!storage_object_name_ok(name, &why)) {
		storage_error(req, 400, "invalid", "Invalid object name: %s.", why);
		return -1;
	}
	return 0;
}

static int query_int64(struct request *req, const char *key, int64_t *v, bool *given)
{
	const char *s = req_query(req, key);

	*given = s != NULL;
	if (s && wire_int64_parse(s, v)) {
		storage_error(req, 400, "invalid", "Invalid value for %s: %s.", key, s);
		return -1;
	}
	return 0;
}

/* --- buckets ---------------------------------------------------------------------- */

void api_storage_buckets_insert(struct request *req)
{
	const char *project = req_query(req, "project");
	const char *name = json_string_value(json_object_get(req->json, "name"));
	const char *location = json_string_value(json_object_get(req->json, "location"));
	const char *sclass = json_string_value(json_object_get(req->json, "storageClass"));
	const char *why;

	if (!project || !*project) {
		storage_error(req, 400, "required", "Required parameter: project.");
		return;
	}
	if (!name) {
		storage_error(req, 400, "required", "Required: bucket name.");
		return;
	}
	if (!storage_bucket_name_ok(name, &why)) {
		storage_error(req, 400, "invalid", "Invalid bucket name: '%.*s': %s.", 222, name, why);
		return;
	}
	struct storage_bucket b = { .name = (char *)name, .project = (char *)project,
				    .location = (char *)(location ? location : "US"),
				    .storage_class = (char *)(sclass ? sclass : "STANDARD") }, out;
	enum store_rc rc = store_bucket_insert(req->srv->store, &b, &out);
	if (rc == STORE_CONFLICT) {
		struct storage_bucket cur;
		bool mine = store_bucket_get(req->srv->store, name, &cur) == STORE_OK &&
			    !strcmp(cur.project, project);
		storage_bucket_release(&cur);
		storage_error(req, 409, "conflict", "%s", mine ?
			      "Your previous request to create the named bucket succeeded and you "
			      "already own it." :
			      "The requested bucket name is not available. The bucket namespace is "
			      "shared by all users of the system. Please select a different name and "
			      "try again.");
		return;
	}
	if (rc != STORE_OK) {
		storage_store_error(req, rc);
		return;
	}
	int e = storage_fs_bucket_create(req->srv->storage, name);
	if (e) {
		if (store_bucket_delete(req->srv->store, name) != STORE_OK)
			log_warn("bucket %s: its row outlives a folder that could not be made", name);
		storage_error(req, 503, "backendError", "Cannot create the bucket's folder: %s.",
			      strerror(-e));
		storage_bucket_release(&out);
		return;
	}
	log_info("bucket %s created in project %s", name, project);
	reply_json(req, 200, bucket_json(req, &out));
	storage_bucket_release(&out);
}

void api_storage_buckets_get(struct request *req)
{
	struct storage_bucket b;

	if (need_bucket(req, req->params[0], &b))
		return;
	reply_json(req, 200, bucket_json(req, &b));
	storage_bucket_release(&b);
}

static int list_size(struct request *req, int *limit)
{
	int64_t v = LIST_MAX;
	bool given;

	if (query_int64(req, "maxResults", &v, &given))
		return -1;
	*limit = v <= 0 || v > LIST_MAX ? LIST_MAX : (int)v;
	return 0;
}

void api_storage_buckets_list(struct request *req)
{
	const char *project = req_query(req, "project");
	const char *prefix = req_query(req, "prefix");
	const char *token = req_query(req, "pageToken");
	const unsigned char *key = store_page_token_key(req->srv->store);
	const char *scope[] = { "storage.buckets.list", project, prefix };
	char *after = NULL;
	int limit;

	if (!project || !*project) {
		storage_error(req, 400, "required", "Required parameter: project.");
		return;
	}
	if (list_size(req, &limit))
		return;
	if (token && *token && !(after = paging_token_read_text(key, scope, 3, token))) {
		storage_error(req, 400, "invalid", "Invalid page token.");
		return;
	}
	struct storage_bucket *v;
	size_t n;
	enum store_rc rc = store_bucket_list(req->srv->store, project, prefix, after, limit + 1, &v,
					     &n);
	free(after);
	if (rc != STORE_OK) {
		storage_store_error(req, rc);
		return;
	}
	json_t *out = json_pack("{s:s}", "kind", "storage#buckets"), *items = json_array();
	for (size_t i = 0; i < n && i < (size_t)limit; i++)
		json_array_append_new(items, bucket_json(req, &v[i]));
	if (json_array_size(items))
		json_object_set_new(out, "items", items);
	else
		json_decref(items);
	if (n > (size_t)limit) {
		char *next = paging_token_make_text(key, scope, 3, v[limit - 1].name);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	storage_buckets_free(v, n);
	reply_json(req, 200, out);
}

void api_storage_buckets_delete(struct request *req)
{
	struct storage_bucket b;

	if (need_bucket(req, req->params[0], &b))
		return;
	storage_bucket_release(&b);
	int e = storage_fs_bucket_remove(req->srv->storage, req->params[0]);
	if (e == -ENOTEMPTY || e == -EEXIST) {
		storage_error(req, 409, "conflict", "The bucket you tried to delete is not empty.");
		return;
	}
	if (e && e != -ENOENT) {
		storage_error(req, 503, "backendError", "Cannot remove the bucket's folder: %s.",
			      strerror(-e));
		return;
	}
	enum store_rc rc = store_bucket_delete(req->srv->store, req->params[0]);
	if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
		storage_store_error(req, rc);
		return;
	}
	log_info("bucket %s deleted", req->params[0]);
	reply_text(req, 204, JSON_TYPE, NULL, 0);
}

/* --- listing objects ---------------------------------------------------------------- */

struct listing {
	struct request *req;
	const char *bucket;
	int limit;
	int count;
	json_t *items, *prefixes;
	char *last;		/* the last name or prefix given */
	bool more;
	/* the files of this page, for their kept rows */
	char **names;
	struct storage_stat *stats;
	size_t n;
};

static bool list_emit(void *arg, const char *name, bool is_prefix, const struct storage_stat *st)
{
	struct listing *l = arg;

	if (l->count == l->limit) {
		l->more = true;
		return false;
	}
	l->count++;
	free(l->last);
	l->last = xstrdup(name);
	if (is_prefix) {
		json_array_append_new(l->prefixes, json_string(name));
		return true;
	}
	l->names = xrealloc(l->names, (l->n + 1) * sizeof(*l->names));
	l->stats = xrealloc(l->stats, (l->n + 1) * sizeof(*l->stats));
	l->names[l->n] = xstrdup(name);
	l->stats[l->n++] = *st;
	return true;
}

void api_storage_objects_list(struct request *req)
{
	const char *bucket = req->params[0];
	const char *prefix = req_query(req, "prefix");
	const char *delimiter = req_query(req, "delimiter");
	const char *token = req_query(req, "pageToken");
	const unsigned char *key = store_page_token_key(req->srv->store);
	const char *scope[] = { "storage.objects.list", bucket, prefix, delimiter };
	struct storage_bucket b;
	struct listing l = { .req = req, .bucket = bucket };
	char *after = NULL;

	if (need_bucket(req, bucket, &b))
		return;
	storage_bucket_release(&b);
	if (list_size(req, &l.limit))
		return;
	if (token && *token && !(after = paging_token_read_text(key, scope, 4, token))) {
		storage_error(req, 400, "invalid", "Invalid page token.");
		return;
	}
	l.items = json_array();
	l.prefixes = json_array();
	int e = storage_fs_list(req->srv->storage, bucket, prefix, delimiter, after, list_emit, &l);
	free(after);
	if (e && e != -ENOENT) {
		storage_error(req, 503, "backendError", "Cannot list the bucket: %s.", strerror(-e));
		goto out;
	}
	/* Hashes and content types that are kept (and fresh) for this page's files. */
	struct storage_object *kept = NULL;
	size_t nkept = 0;
	if (l.n && store_object_range(req->srv->store, bucket, l.names[0], l.names[l.n - 1], &kept,
				      &nkept) != STORE_OK)
		nkept = 0;
	for (size_t i = 0, k = 0; i < l.n; i++) {
		while (k < nkept && strcmp(kept[k].name, l.names[i]) < 0)
			k++;
		const struct storage_object *m = k < nkept && !strcmp(kept[k].name, l.names[i]) &&
						 meta_fresh(&kept[k], &l.stats[i]) ? &kept[k] : NULL;
		json_array_append_new(l.items, object_json(req, bucket, l.names[i], &l.stats[i], m));
	}
	storage_objects_free(kept, nkept);
	json_t *out = json_pack("{s:s}", "kind", "storage#objects");
	if (json_array_size(l.items))
		json_object_set(out, "items", l.items);
	if (json_array_size(l.prefixes))
		json_object_set(out, "prefixes", l.prefixes);
	if (l.more && l.last) {
		char *next = paging_token_make_text(key, scope, 4, l.last);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	reply_json(req, 200, out);
out:
	json_decref(l.items);
	json_decref(l.prefixes);
	for (size_t i = 0; i < l.n; i++)
		free(l.names[i]);
	free(l.names);
	free(l.stats);
	free(l.last);
}

/* --- reading objects ------------------------------------------------------------------ */

/*
 * Range: "bytes=a-b", "bytes=a-", "bytes=-n". 1 with [*from, *to] inside
 * size, 0 when absent or unusable (the whole object), -1 when it lies
 * beyond the object (416).
 */
static int parse_range(const char *h, int64_t size, int64_t *from, int64_t *to)
{
	char *end;

	if (!h || strncasecmp(h, "bytes=", 6) || strchr(h, ','))
		return 0;
	h += 6;
	if (*h == '-') {
		long long n = strtoll(h + 1, &end, 10);
		if (*end || n <= 0)
			return 0;
		*from = n >= size ? 0 : size - n;
		*to = size - 1;
		return size ? 1 : -1;
	}
	long long a = strtoll(h, &end, 10);
	if (end == h || *end != '-' || a < 0)
		return 0;
	const char *bpart = end + 1;
	long long bnum = *bpart ? strtoll(bpart, &end, 10) : size - 1;
	if (*bpart && (*end || bnum < a))
		return 0;
	if (a >= size)
		return -1;
	*from = a;
	*to = bnum >= size ? size - 1 : bnum;
	return 1;
}

/* A name that could be an object here (Google's names that cannot be files are none). */
static bool storable(const char *name)
{
	const char *why;
	return name && storage_object_name_ok(name, &why);
}

/* Not found as Google says it. */
static void no_such_object(struct request *req, const char *bucket, const char *name)
{
	storage_error(req, 404, "notFound", "No such object: %s/%s", bucket, name);
}

static void object_download(struct request *req, const char *bucket, const char *name, int fd,
			    const struct storage_stat *st)
{
	struct storage_object meta;
	int64_t from = 0, to = st->size - 1;
	int r = parse_range(req_header(req, "Range"), st->size, &from, &to);
	struct strbuf extra = STRBUF_INIT;

	sb_addf(&extra, "X-Request-Id: %s\r\nX-Goog-Generation: %" PRId64 "\r\n"
		"X-Goog-Metageneration: 1\r\nX-Goog-Stored-Content-Length: %" PRId64 "\r\n"
		"Accept-Ranges: bytes\r\n", req->request_id, st->mtime_ns / 1000, st->size);
	if (r < 0) {
		close(fd);
		sb_release(&extra);
		storage_error(req, 416, "requestedRangeNotSatisfiable",
			      "The requested range cannot be satisfied.");
		return;
	}
	/* Hashes of the whole object, as Google sends them (the client checks a whole download). */
	if (store_object_get(req->srv->store, bucket, name, &meta) == STORE_OK &&
	    meta_fresh(&meta, st)) {
		unsigned char crc[4] = { (unsigned char)(meta.crc32c >> 24),
					 (unsigned char)(meta.crc32c >> 16),
					 (unsigned char)(meta.crc32c >> 8), (unsigned char)meta.crc32c };
		char *m = b64(meta.md5, 16), *c = b64(crc, 4);
		sb_addf(&extra, "X-Goog-Hash: crc32c=%s,md5=%s\r\n", c, m);
		free(m);
		free(c);
	}
	const char *type = meta.content_type ? meta.content_type : "application/octet-stream";
	if (r > 0)
		sb_addf(&extra, "Content-Range: bytes %" PRId64 "-%" PRId64 "/%" PRId64 "\r\n", from, to,
			st->size);
	req->replied = true;
	req->status = r > 0 ? 206 : 200;
	httpd_respond_file(req->hr, req->status, type, fd, (uint64_t)from,
			   st->size ? (uint64_t)(to - from + 1) : 0, extra.buf, req->close);
	storage_object_release(&meta);
	sb_release(&extra);
}

static void object_get(struct request *req, const char *bucket, const char *name, bool media)
{
	struct storage_bucket b;
	struct storage_stat st;
	int64_t gen = 0;
	bool gen_given;

	if (need_bucket(req, bucket, &b))
		return;
	storage_bucket_release(&b);
	if (query_int64(req, "generation", &gen, &gen_given))
		return;
	if (!storable(name)) {
		no_such_object(req, bucket, name);
		return;
	}
	int fd = storage_fs_open_read(req->srv->storage, bucket, name, &st);
	if (fd < 0 || (gen_given && gen != st.mtime_ns / 1000)) {
		if (fd >= 0)
			close(fd);
		no_such_object(req, bucket, name);
		return;
	}
	if (media || req->sys.media) {
		object_download(req, bucket, name, fd, &st);
		return;
	}
	struct storage_object meta;
	enum store_rc rc = object_meta(req, bucket, name, fd, &st, &meta);
	close(fd);
	if (rc != STORE_OK) {
		storage_object_release(&meta);
		storage_store_error(req, rc);
		return;
	}
	reply_json(req, 200, object_json(req, bucket, name, &st, &meta));
	storage_object_release(&meta);
}

void api_storage_objects_get(struct request *req)
{
	object_get(req, req->params[0], req->params[1], false);
}

void api_storage_objects_download(struct request *req)
{
	object_get(req, req->params[0], req->params[1], true);
}

void api_storage_objects_delete(struct request *req)
{
	const char *bucket = req->params[0], *name = req->params[1];
	struct storage_bucket b;
	struct storage_stat st;
	int64_t gen = 0, ifgen = 0;
	bool gen_given, ifgen_given;

	if (need_bucket(req, bucket, &b))
		return;
	storage_bucket_release(&b);
	if (query_int64(req, "generation", &gen, &gen_given) ||
	    query_int64(req, "ifGenerationMatch", &ifgen, &ifgen_given))
		return;
	if (!storable(name) || storage_fs_stat(req->srv->storage, bucket, name, &st) ||
	    (gen_given && gen != st.mtime_ns / 1000)) {
		no_such_object(req, bucket, name);
		return;
	}
	if (ifgen_given && ifgen != st.mtime_ns / 1000) {
		storage_error(req, 412, "conditionNotMet",
			      "At least one of the pre-conditions you specified did not hold.");
		return;
	}
	int e = storage_fs_remove(req->srv->storage, bucket, name);
	if (e) {
		if (e == -ENOENT)
			no_such_object(req, bucket, name);
		else
			storage_error(req, 503, "backendError", "Cannot remove the object: %s.",
				      strerror(-e));
		return;
	}
	if (store_object_forget(req->srv->store, bucket, name) != STORE_OK)
		log_debug("object %s/%s: its kept row stays (stale, it is ignored)", bucket, name);
	reply_text(req, 204, JSON_TYPE, NULL, 0);
}

/* --- writing objects ------------------------------------------------------------------ */

/* An upload's body on its way to a file (the request's ctx). */
struct upload {
	struct storage_fs *fs;
	char *tmpname;		/* the file being written */
	int fd;
	int kind;		/* 'm' media, 'p' multipart, 'r' a resumable session's chunk */
	struct hash_pair hp;	/* of what was written */
	int64_t written;
	int64_t skip;		/* a resumable chunk's bytes we have already */
	int error;		/* errno of a failed write */
	struct storage_upload session;	/* 'r' */
	int64_t chunk_from;	/* 'r': where the chunk begins */
	int64_t total;		/* 'r': the object's size when said (-1 not yet) */
	bool keep_tmp;		/* 'r': the session's file stays for the next chunk */
};

static void upload_free(void *p)
{
	struct upload *u = p;

	if (u->fd >= 0)
		close(u->fd);
	if (u->tmpname && !u->keep_tmp)
		storage_fs_tmp_remove(u->fs, u->tmpname);
	free(u->tmpname);
	storage_upload_release(&u->session);
	free(u);
}

static int upload_sink(struct request *req, const char *data, size_t len)
{
	struct upload *u = req->ctx;

	if (u->skip) {
		size_t s = (int64_t)len < u->skip ? len : (size_t)u->skip;
		u->skip -= (int64_t)s;
		data += s;
		len -= s;
	}
	if (u->kind != 'p')
		hash_pair_update(&u->hp, data, len);
	while (len) {
		ssize_t n = write(u->fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			u->error = errno;
			return -1;
		}
		data += n;
		len -= (size_t)n;
		u->written += n;
	}
	return 0;
}

static uint64_t max_object(struct request *req)
{
	return req->srv->storage_max_object ? req->srv->storage_max_object : (uint64_t)5 << 40;
}

/* The head of an upload (POST: media or multipart streamed, a resumable session's start buffered). */
void api_storage_objects_insert_head(struct request *req)
{
	const char *type = req_query(req, "uploadType");

	struct storage_bucket b;

	if (!req->srv->storage) {
		storage_error(req, 503, "backendError", "This server has no storage root.");
		return;
	}
	/* No bucket: said before a byte of the body is written anywhere. */
	if (need_bucket(req, req->params[0], &b))
		return;
	storage_bucket_release(&b);
	if (type && !strcmp(type, "resumable")) {
		req_stream_body(req, META_MAX, NULL);	/* its metadata, kept in memory */
		return;
	}
	if (!type || (strcmp(type, "media") && strcmp(type, "multipart"))) {
		storage_error(req, 400, "invalid",
			      "Invalid uploadType: use media, multipart or resumable.");
		return;
	}
	struct upload *u = xcalloc(1, sizeof(*u));
	u->fs = req->srv->storage;
	u->kind = type[0] == 'm' && type[1] == 'e' ? 'm' : 'p';
	u->total = -1;
	hash_pair_init(&u->hp);
	u->fd = storage_fs_tmp_create(u->fs, &u->tmpname);
	req->ctx = u;
	req->ctx_free = upload_free;
	if (u->fd < 0) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root: %s.",
			      strerror(-u->fd));
		return;
	}
	req_stream_body(req, max_object(req), upload_sink);
}

/*
 * Puts the finished file in place as bucket/name and keeps its metadata.
 * Returns the object's resource, or NULL when it replied with an error.
 */
/*
 * A content type is sent back as a header of every download: printable
 * ASCII only (no CR or LF: no header of the client's making), 1 to 256.
 */
static bool content_type_ok(const char *ct)
{
	size_t n = 0;

	for (; ct[n]; n++)
		if ((unsigned char)ct[n] < 0x20 || (unsigned char)ct[n] > 0x7e || n == 256)
			return false;
	return n > 0;
}

static json_t *upload_commit(struct request *req, struct upload *u, const char *bucket,
			  const char *name, const char *content_type, const char *metadata,
			  const unsigned char md5[16], uint32_t crc)
{
	struct storage_stat st;
	int64_t ifgen = 0;
	bool ifgen_given;

	if (content_type && *content_type && !content_type_ok(content_type)) {
		storage_error(req, 400, "invalid", "Invalid contentType: printable ASCII, at most "
			      "256 characters.");
		return NULL;
	}

	if (query_int64(req, "ifGenerationMatch", &ifgen, &ifgen_given))
		return NULL;
	if (ifgen_given) {
		struct storage_stat cur;
		bool exists = !storage_fs_stat(u->fs, bucket, name, &cur);
		if ((ifgen == 0 && exists) || (ifgen && (!exists || cur.mtime_ns / 1000 != ifgen))) {
			storage_error(req, 412, "conditionNotMet",
				      "At least one of the pre-conditions you specified did not hold.");
			return NULL;
		}
	}
	close(u->fd);
	u->fd = -1;
	int e = storage_fs_commit(u->fs, u->tmpname, bucket, name, &st);
	if (e) {
		if (e == -EISDIR || e == -ENOTDIR || e == -EEXIST)
			storage_error(req, 409, "conflict",
				      "The object name %s conflicts with another object's: here an "
				      "object's name cannot be a folder of another's (its objects "
				      "are files).", name);
		else
			storage_error(req, 503, "backendError", "Cannot write the object: %s.",
				      strerror(-e));
		return NULL;
	}
	u->keep_tmp = true;	/* renamed: nothing to remove */
	struct storage_object meta = { .bucket = (char *)bucket, .name = (char *)name,
				       .content_type = (char *)(content_type && *content_type ?
								content_type :
								"application/octet-stream"),
				       .metadata = (char *)metadata, .size = st.size,
				       .mtime_ns = st.mtime_ns, .ino = st.ino, .crc32c = crc };
	memcpy(meta.md5, md5, 16);
	enum store_rc rc = store_object_put(req->srv->store, &meta);
	if (rc != STORE_OK) {
		storage_store_error(req, rc);
		return NULL;
	}
	log_debug("object %s/%s written (%" PRId64 " bytes)", bucket, name, st.size);
	return object_json(req, bucket, name, &st, &meta);
}

/* The metadata a request gives an object: contentType and metadata of its JSON. */
static char *metadata_text(const json_t *j)
{
	const json_t *m = json_object_get(j, "metadata");
	return json_is_object(m) ? json_dumps(m, JSON_COMPACT) : NULL;
}

/* The boundary of a multipart/related Content-Type (quoted with " or ', as Python's email writes it). */
static char *multipart_boundary(const char *ct)
{
	const char *p = ct ? strcasestr(ct, "boundary=") : NULL;

	if (!p || strncasecmp(ct, "multipart/related", 17))
		return NULL;
	p += 9;
	char q = *p == '"' || *p == '\'' ? *p++ : 0;
	size_t n = q ? strcspn(p, q == '"' ? "\"" : "'") : strcspn(p, "; \t");
	return n && n <= 70 ? xstrndup(p, n) : NULL;
}

/* Where a part's head ends (its blank line: CRLF or, as Python's email writes it, LF). */
static char *head_end(char *p, char *end, size_t *seplen)
{
	char *crlf = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
	char *lf = memmem(p, (size_t)(end - p), "\n\n", 2);

	if (lf && (!crlf || lf < crlf)) {
		*seplen = 2;
		return lf;
	}
	*seplen = 4;
	return crlf;
}

/*
 * The multipart body in the upload's file: its JSON part, and where the
 * media lies. Lines may end in CRLF (RFC 2046) or LF (Python's email, which
 * gcloud uses); the line end before a delimiter belongs to the delimiter.
 */
static int multipart_parse(struct upload *u, const char *boundary, json_t **meta, char **media_type,
			   int64_t *from, int64_t *to)
{
	char *head = xmalloc(META_MAX + 1);
	char *tail = NULL;
	int rc = -1;
	ssize_t n = pread(u->fd, head, META_MAX, 0);
	char *delim = xasprintf("--%s", boundary);
	size_t dlen = strlen(delim), sep;

	*meta = NULL;
	*media_type = NULL;
	if (n <= 0)
		goto out;
	head[n] = '\0';
	char *end = head + n;
	char *p = memmem(head, (size_t)n, delim, dlen);
	char *hend = p ? head_end(p, end, &sep) : NULL;
	if (!hend)
		goto out;
	char *json_start = hend + sep;
	char *next = memmem(json_start, (size_t)(end - json_start), delim, dlen);
	if (!next)
		goto out;
	*meta = json_loadb(json_start, (size_t)(next - json_start), 0, NULL);
	char *mh = next + dlen;
	char *mhend = head_end(mh, end, &sep);
	if (!json_is_object(*meta) || !mhend)
		goto out;
	*mhend = '\0';
	char *ct = strcasestr(mh, "\nContent-Type:");
	if (ct) {
		ct += 14;
		while (*ct == ' ')
			ct++;
		*media_type = xstrndup(ct, strcspn(ct, "\r\n"));
	}
	*from = (int64_t)(mhend + sep - head);
	/* The closing delimiter: "\n--boundary--" near the end. */
	size_t tlen = dlen + 64;
	int64_t tstart = u->written > (int64_t)tlen ? u->written - (int64_t)tlen : 0;
	if (tstart < *from)
		tstart = *from;
	tail = xmalloc(tlen + 1);
	ssize_t tn = pread(u->fd, tail, tlen, tstart);
	if (tn < 0)
		goto out;
	char *close_delim = xasprintf("\n%s--", delim);
	char *c = memmem(tail, (size_t)tn, close_delim, strlen(close_delim));
	free(close_delim);
	if (!c)
		goto out;
	if (c > tail && c[-1] == '\r')
		c--;
	*to = tstart + (c - tail);
	rc = *to >= *from ? 0 : -1;
out:
	free(delim);
	free(head);
	free(tail);
	return rc;
}

/* Copies [from, to) of the upload's file into a new one (hashing it), which replaces it. */
static int upload_extract(struct upload *u, int64_t from, int64_t to)
{
	char *tmp2;
	int fd2 = storage_fs_tmp_create(u->fs, &tmp2);
	char *buf = xmalloc(1 << 20);
	int rc = 0;

	if (fd2 < 0) {
		free(buf);
		return fd2;
	}
	hash_pair_init(&u->hp);
	for (int64_t off = from; off < to;) {
		size_t want = to - off > (1 << 20) ? (1 << 20) : (size_t)(to - off);
		ssize_t n = pread(u->fd, buf, want, off);
		if (n <= 0 || write(fd2, buf, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
		hash_pair_update(&u->hp, buf, (size_t)n);
		off += n;
	}
	free(buf);
	close(u->fd);
	storage_fs_tmp_remove(u->fs, u->tmpname);
	free(u->tmpname);
	u->fd = fd2;
	u->tmpname = tmp2;
	return rc;
}

static void insert_media(struct request *req, struct upload *u, const char *bucket)
{
	const char *name = req_query(req, "name");
	unsigned char md5[16];

	if (need_object_name(req, name))
		return;
	md5_final(&u->hp.md5, md5);
	json_t *obj = upload_commit(req, u, bucket, name, req_header(req, "Content-Type"), NULL, md5,
				    u->hp.crc32c);
	if (obj)
		reply_json(req, 200, obj);
}

static void insert_multipart(struct request *req, struct upload *u, const char *bucket)
{
	char *boundary = multipart_boundary(req_header(req, "Content-Type"));
	json_t *meta = NULL;
	char *media_type = NULL;
	int64_t from = 0, to = 0;
	unsigned char md5[16];

	if (!boundary || multipart_parse(u, boundary, &meta, &media_type, &from, &to)) {
		storage_error(req, 400, "invalid",
			      "Invalid multipart upload: a multipart/related body of a JSON part "
			      "and a media part is expected.");
		goto out;
	}
	const char *name = json_string_value(json_object_get(meta, "name"));
	if (!name)
		name = req_query(req, "name");
	if (need_object_name(req, name))
		goto out;
	if (upload_extract(u, from, to)) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root.");
		goto out;
	}
	const char *ct = json_string_value(json_object_get(meta, "contentType"));
	char *md = metadata_text(meta);
	md5_final(&u->hp.md5, md5);
	json_t *obj = upload_commit(req, u, bucket, name, ct ? ct : media_type, md, md5,
				    u->hp.crc32c);
	if (obj)
		reply_json(req, 200, obj);
	free(md);
out:
	free(boundary);
	free(media_type);
	json_decref(meta);
}

/* A resumable session begins: its metadata kept, its URL in Location. */
static void insert_resumable(struct request *req, const char *bucket)
{
	size_t len;
	const char *body = httpd_req_body(req->hr, &len);
	json_t *meta = len ? json_loadb(body, len, 0, NULL) : json_object();
	unsigned char rnd[12];
	char id[25];
	size_t got = 0;

	if (!json_is_object(meta)) {
		json_decref(meta);
		storage_error(req, 400, "parseError", "Invalid JSON payload received.");
		return;
	}
	const char *name = json_string_value(json_object_get(meta, "name"));
	if (!name)
		name = req_query(req, "name");
	if (need_object_name(req, name)) {
		json_decref(meta);
		return;
	}
	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	const char *ct = json_string_value(json_object_get(meta, "contentType"));
	if (!ct)
		ct = req_header(req, "X-Upload-Content-Type");
	if (ct && !content_type_ok(ct)) {
		json_decref(meta);
		storage_error(req, 400, "invalid", "Invalid contentType: printable ASCII, at most "
			      "256 characters.");
		return;
	}
	const char *total = req_header(req, "X-Upload-Content-Length");
	int64_t t = -1;
	if (total && wire_int64_parse(total, &t))
		t = -1;
	if (t > (int64_t)max_object(req)) {
		json_decref(meta);
		storage_error(req, 413, "uploadTooLarge",
			      "The object's size (%" PRId64 " bytes) exceeds the maximum object size "
			      "(%" PRIu64 " bytes).", t, max_object(req));
		return;
	}
	char *md = metadata_text(meta);
	struct storage_upload s = { .id = id, .bucket = (char *)bucket, .name = (char *)name,
				    .content_type = (char *)(ct ? ct : "application/octet-stream"),
				    .metadata = md, .total = t };
	enum store_rc rc = store_upload_begin(req->srv->store, &s);
	free(md);
	json_decref(meta);
	if (rc != STORE_OK) {
		storage_store_error(req, rc);
		return;
	}
	char *base = base_url(req);
	char *extra = xasprintf("X-Request-Id: %s\r\nLocation: %s%s/upload/storage/v1/b/%s/o?"
				"uploadType=resumable&upload_id=%s\r\nX-GUploader-UploadID: %s\r\n",
				req->request_id, base,
				!strncmp(req->path, "/resumable/", 11) ? "/resumable" : "", bucket,
				id, id);
	free(base);
	req->replied = true;
	req->status = 200;
	httpd_respond(req->hr, 200, "text/plain; charset=utf-8", NULL, 0, extra, req->close);
	free(extra);
}

void api_storage_objects_insert(struct request *req)
{
	const char *bucket = req->params[0];
	const char *type = req_query(req, "uploadType");
	struct storage_bucket b;
	struct upload *u = req->ctx;

	if (need_bucket(req, bucket, &b))
		return;
	storage_bucket_release(&b);
	if (type && !strcmp(type, "resumable") && !req_query(req, "upload_id")) {
		insert_resumable(req, bucket);
		return;
	}
	if (!u) {
		storage_error(req, 400, "invalid", "Invalid upload request.");
		return;
	}
	if (u->error) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root: %s.",
			      strerror(u->error));
		return;
	}
	if (u->kind == 'm')
		insert_media(req, u, bucket);
	else
		insert_multipart(req, u, bucket);
}

/* --- resumable chunks ------------------------------------------------------------------ */

/* "bytes A-B/TOTAL", "bytes A-B/" then "*", or "bytes " "*" "/TOTAL" (no data). 0, or -1 when malformed. */
static int parse_content_range(const char *h, int64_t *from, int64_t *to, int64_t *total)
{
	char *end;

	*from = *to = -1;
	*total = -1;
	if (!h || strncasecmp(h, "bytes ", 6))
		return h ? -1 : 0;
	h += 6;
	if (*h == '*') {
		h++;
	} else {
		*from = strtoll(h, &end, 10);
		if (end == h || *end != '-')
			return -1;
		h = end + 1;
		*to = strtoll(h, &end, 10);
		if (end == h || *to < *from || *from < 0)
			return -1;
		h = end;
	}
	if (*h++ != '/')
		return -1;
	if (*h == '*')
		return h[1] ? -1 : 0;
	*total = strtoll(h, &end, 10);
	return end == h || *end || *total < 0 ? -1 : 0;
}

void api_storage_objects_upload_head(struct request *req)
{
	const char *id = req_query(req, "upload_id");
	int64_t from, to, total;

	if (!req->srv->storage) {
		storage_error(req, 503, "backendError", "This server has no storage root.");
		return;
	}
	struct upload *u = xcalloc(1, sizeof(*u));
	u->fs = req->srv->storage;
	u->kind = 'r';
	u->fd = -1;
	u->keep_tmp = true;
	req->ctx = u;
	req->ctx_free = upload_free;
	if (!id || store_upload_get(req->srv->store, id, &u->session) != STORE_OK ||
	    strcmp(u->session.bucket, req->params[0])) {
		storage_error(req, 404, "notFound", "No such upload session.");
		return;
	}
	if (parse_content_range(req_header(req, "Content-Range"), &from, &to, &total)) {
		storage_error(req, 400, "invalid", "Invalid Content-Range.");
		return;
	}
	u->total = total >= 0 ? total : u->session.total;
	u->chunk_from = from;
	if (from > u->session.received) {
		storage_error(req, 400, "invalid",
			      "The chunk begins at byte %" PRId64 " but the upload stands at %" PRId64
			      ".", from, u->session.received);
		return;
	}
	if (total >= 0 && (to >= total || total < u->session.received)) {
		storage_error(req, 400, "invalid",
			      "The Content-Range goes past the object's size (%" PRId64 " bytes).",
			      total);
		return;
	}
	if (u->total > (int64_t)max_object(req)) {
		storage_error(req, 413, "uploadTooLarge",
			      "The object's size (%" PRId64 " bytes) exceeds the maximum object size "
			      "(%" PRIu64 " bytes).", u->total, max_object(req));
		return;
	}
	u->skip = from >= 0 ? u->session.received - from : 0;
	hash_pair_init(&u->hp);
	if (u->session.hash_state_len == HASH_STATE_BYTES)
		hash_pair_load(&u->hp, u->session.hash_state);
	u->tmpname = xasprintf("u-%s", u->session.id);
	u->fd = storage_fs_tmp_open(u->fs, u->tmpname, u->session.received);
	if (u->fd == -ENOENT) {
		/* Its bytes are gone (the file removed under the storage root): the
		 * session cannot go on, and the client starts a new one. */
		if (store_upload_end(req->srv->store, u->session.id) != STORE_OK)
			log_debug("upload session %s: not ended", u->session.id);
		storage_error(req, 404, "notFound", "No such upload session (its data is lost).");
		return;
	}
	if (u->fd < 0) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root: %s.",
			      strerror(-u->fd));
		return;
	}
	u->written = u->session.received;
	/* The chunk may not take the object past the maximum size either. */
	int64_t at = from >= 0 ? from : u->session.received;
	req_stream_body(req, max_object(req) > (uint64_t)at ? max_object(req) - (uint64_t)at : 0,
			upload_sink);
}

void api_storage_objects_upload(struct request *req)
{
	struct upload *u = req->ctx;
	const char *bucket = req->params[0];

	if (!u || u->fd < 0) {
		storage_error(req, 404, "notFound", "No such upload session.");
		return;
	}
	if (u->error) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root: %s.",
			      strerror(u->error));
		return;
	}
	unsigned char state[HASH_STATE_BYTES];
	hash_pair_save(&u->hp, state);
	if (u->written != u->session.received) {
		enum store_rc rc = store_upload_progress(req->srv->store, u->session.id,
							 u->session.received, u->written, state,
							 sizeof(state));
		if (rc != STORE_OK) {
			storage_store_error(req, rc == STORE_STALE ? STORE_CONFLICT : rc);
			return;
		}
	}
	if (u->total >= 0 && u->written >= u->total) {
		unsigned char md5[16];
		md5_final(&u->hp.md5, md5);
		/* Not committed (a conflict, a precondition): the session's file
		 * stays whole with it, for a retry. */
		json_t *obj = upload_commit(req, u, bucket, u->session.name, u->session.content_type,
					    u->session.metadata, md5, u->hp.crc32c);
		if (obj) {
			if (store_upload_end(req->srv->store, u->session.id) != STORE_OK)
				log_debug("upload session %s: not ended", u->session.id);
			reply_json(req, 200, obj);
		}
		return;
	}
	/* Not all there yet: 308 with what we have. */
	char *extra = u->written ? xasprintf("X-Request-Id: %s\r\nRange: bytes=0-%" PRId64 "\r\n",
					     req->request_id, u->written - 1) :
				   xasprintf("X-Request-Id: %s\r\n", req->request_id);
	req->replied = true;
	req->status = 308;
	httpd_respond(req->hr, 308, "text/plain; charset=utf-8", NULL, 0, extra, req->close);
	free(extra);
}

/* --- rewrite and copy --------------------------------------------------------------------- */

static void object_copy(struct request *req, bool rewrite)
{
	const char *sb = req->params[0], *so = req->params[1], *db = req->params[2],
		   *dobj = req->params[3];
	struct storage_bucket b;
	struct storage_stat st;

	if (need_bucket(req, sb, &b))
		return;
	storage_bucket_release(&b);
	if (need_bucket(req, db, &b))
		return;
	/* The destination's project must be the caller's too. */
	if (req->srv->auth_mode == AUTH_TOKENS && req->caller &&
	    !auth_token_allows(req->caller, b.project, "storage.objects.create")) {
		storage_bucket_release(&b);
		storage_error(req, 403, "forbidden",
			      "The caller does not have storage.objects.create access to the "
			      "destination bucket.");
		return;
	}
	storage_bucket_release(&b);
	if (need_object_name(req, so) || need_object_name(req, dobj))
		return;
	int fd = storage_fs_open_read(req->srv->storage, sb, so, &st);
	if (fd < 0) {
		no_such_object(req, sb, so);
		return;
	}
	struct storage_object meta;
	enum store_rc rc = object_meta(req, sb, so, fd, &st, &meta);
	if (rc != STORE_OK) {
		close(fd);
		storage_object_release(&meta);
		storage_store_error(req, rc);
		return;
	}
	struct upload *u = xcalloc(1, sizeof(*u));
	u->fs = req->srv->storage;
	u->fd = storage_fs_tmp_create(u->fs, &u->tmpname);
	req->ctx = u;
	req->ctx_free = upload_free;
	char *buf = xmalloc(1 << 20);
	ssize_t n = 0;
	for (off_t off = 0; u->fd >= 0 && (n = pread(fd, buf, 1 << 20, off)) > 0; off += n)
		if (write(u->fd, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	free(buf);
	close(fd);
	if (u->fd < 0 || n < 0) {
		storage_object_release(&meta);
		storage_error(req, 503, "backendError", "Cannot copy the object.");
		return;
	}
	json_t *obj = upload_commit(req, u, db, dobj, meta.content_type, meta.metadata, meta.md5,
				    meta.crc32c);
	storage_object_release(&meta);
	if (!obj)
		return;
	if (!rewrite) {
		reply_json(req, 200, obj);
		return;
	}
	json_t *size = json_object_get(obj, "size");
	reply_json(req, 200, json_pack("{s:s, s:O, s:O, s:b, s:o}", "kind",
				       "storage#rewriteResponse", "totalBytesRewritten", size,
				       "objectSize", size, "done", 1, "resource", obj));
}

void api_storage_objects_rewrite(struct request *req)
{
	object_copy(req, true);
}

void api_storage_objects_copy(struct request *req)
{
	object_copy(req, false);
}

/* --- compose (gcloud's parallel composite uploads) and the bucket's layout ---------------- */

void api_storage_objects_compose(struct request *req)
{
	const char *bucket = req->params[0], *name = req->params[1];
	const json_t *sources = json_object_get(req->json, "sourceObjects");
	const json_t *dest = json_object_get(req->json, "destination");
	struct storage_bucket b;

	if (need_bucket(req, bucket, &b))
		return;
	storage_bucket_release(&b);
	if (need_object_name(req, name))
		return;
	if (!json_is_array(sources) || !json_array_size(sources) || json_array_size(sources) > 32) {
		storage_error(req, 400, "invalid", "sourceObjects must list 1 to 32 objects.");
		return;
	}
	struct upload *u = xcalloc(1, sizeof(*u));
	u->fs = req->srv->storage;
	u->fd = storage_fs_tmp_create(u->fs, &u->tmpname);
	req->ctx = u;
	req->ctx_free = upload_free;
	if (u->fd < 0) {
		storage_error(req, 503, "backendError", "Cannot write under the storage root: %s.",
			      strerror(-u->fd));
		return;
	}
	hash_pair_init(&u->hp);
	char *buf = xmalloc(1 << 20);
	size_t i;
	const json_t *src;
	json_array_foreach(sources, i, src) {
		const char *sname = json_string_value(json_object_get(src, "name"));
		struct storage_stat st;
		if (need_object_name(req, sname))
			goto out;
		int fd = storage_fs_open_read(u->fs, bucket, sname, &st);
		if (fd < 0) {
			no_such_object(req, bucket, sname);
			goto out;
		}
		ssize_t n;
		for (off_t off = 0; (n = pread(fd, buf, 1 << 20, off)) > 0; off += n) {
			if (write(u->fd, buf, (size_t)n) != n) {
				n = -1;
				break;
			}
			hash_pair_update(&u->hp, buf, (size_t)n);
		}
		close(fd);
		if (n < 0) {
			storage_error(req, 503, "backendError", "Cannot compose the object.");
			goto out;
		}
	}
	unsigned char md5[16];
	md5_final(&u->hp.md5, md5);
	const char *ct = json_string_value(json_object_get(dest, "contentType"));
	char *md = metadata_text(dest);
	/* (the destination's md5Hash and crc32c, if sent, are the client's guesses: ours are computed) */
	json_t *obj = upload_commit(req, u, bucket, name, ct, md, md5, u->hp.crc32c);
	free(md);
	if (obj)
		reply_json(req, 200, obj);
out:
	free(buf);
}

void api_storage_buckets_storage_layout(struct request *req)
{
	struct storage_bucket b;

	if (need_bucket(req, req->params[0], &b))
		return;
	reply_json(req, 200, json_pack("{s:s, s:s, s:s, s:s, s:{s:b}}", "kind",
				       "storage#storageLayout", "bucket", b.name, "location", b.location,
				       "locationType", "multi-region", "hierarchicalNamespace",
				       "enabled", 0));
	storage_bucket_release(&b);
}
