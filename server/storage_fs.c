/*
 * storage_fs.c - the Cloud Storage API's files (storage_fs.h).
 */
#include "storage_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "strbuf.h"
#include "wire.h"

/* Uploads in progress live here, beside the buckets (no bucket name begins with '.'). */
#define TMP_DIR ".trainplane-uploads"
#define NAME_MAX_BYTES 1024
#define SEGMENT_MAX_BYTES 255

struct storage_fs {
	int rootfd;
	int tmpfd;
};

struct storage_fs *storage_fs_open(const char *root, char *err, size_t errlen)
{
	if (mkdir_p(root)) {
		snprintf(err, errlen, "storage root %s: cannot create: %s", root, strerror(errno));
		return NULL;
	}
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		snprintf(err, errlen, "storage root %s: %s", root, strerror(errno));
		return NULL;
	}
	if (mkdirat(rootfd, TMP_DIR, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "storage root %s: cannot create %s: %s", root, TMP_DIR,
			 strerror(errno));
		close(rootfd);
		return NULL;
	}
	int tmpfd = openat(rootfd, TMP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tmpfd < 0) {
		snprintf(err, errlen, "storage root %s: %s: %s", root, TMP_DIR, strerror(errno));
		close(rootfd);
		return NULL;
	}
	struct storage_fs *fs = xcalloc(1, sizeof(*fs));
	fs->rootfd = rootfd;
	fs->tmpfd = tmpfd;
	return fs;
}

void storage_fs_close(struct storage_fs *fs)
{
	if (!fs)
		return;
	close(fs->rootfd);
	close(fs->tmpfd);
	free(fs);
}

/* --- names ------------------------------------------------------------------- */

static bool lower_digit(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool storage_bucket_name_ok(const char *name, const char **why)
{
	size_t n = strlen(name), part = 0;
	bool dotted = strchr(name, '.') != NULL, all_ip = true;
	int dots = 0;

	*why = NULL;
	if (n < 3 || n > (dotted ? 222 : 63)) {
		*why = "a bucket name has 3 to 63 characters (222 with dots)";
		return false;
	}
	if (!lower_digit(name[0]) || !lower_digit(name[n - 1])) {
		*why = "a bucket name begins and ends with a lowercase letter or a digit";
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (ch == '.') {
			if (!part || part > 63) {
				*why = "each dot-separated part of a bucket name has 1 to 63 characters";
				return false;
			}
			part = 0;
			dots++;
			continue;
		}
		if (!lower_digit(ch) && ch != '-' && ch != '_') {
			*why = "a bucket name has only lowercase letters, digits, dashes, "
			       "underscores and dots";
			return false;
		}
		if (!(ch >= '0' && ch <= '9'))
			all_ip = false;
		part++;
	}
	if (part > 63) {
		*why = "each dot-separated part of a bucket name has 1 to 63 characters";
		return false;
	}
	if (dots == 3 && all_ip) {
		*why = "a bucket name cannot be an IP address";
		return false;
	}
	if (!strncmp(name, "goog", 4) || strstr(name, "google") || strstr(name, "g00gle")) {
		*why = "a bucket name cannot begin with \"goog\" or contain \"google\"";
		return false;
	}
	return true;
}

bool storage_object_name_google_ok(const char *name, const char **why)
{
	size_t n = strlen(name);

	*why = NULL;
	if (!n || n > NAME_MAX_BYTES || !wire_utf8_valid(name, n)) {
		*why = "an object name is 1 to 1024 bytes of UTF-8";
		return false;
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		*why = "an object name cannot be \".\" or \"..\"";
		return false;
	}
	if (strpbrk(name, "\r\n")) {
		*why = "an object name has no CR or LF";
		return false;
	}
	return true;
}

bool storage_object_name_ok(const char *name, const char **why)
{
	size_t n = strlen(name), seg = 0;

	*why = NULL;
	if (!n || n > NAME_MAX_BYTES || !wire_utf8_valid(name, n)) {
		*why = "an object name is 1 to 1024 bytes of UTF-8";
		return false;
	}
	if (!strncmp(name, ".well-known/acme-challenge/", 27)) {
		*why = "an object name cannot begin with .well-known/acme-challenge/";
		return false;
	}
	for (size_t i = 0; i <= n; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch == '/' || ch == '\0') {
			const char *s = name + i - seg;
			if (!seg || (seg == 1 && s[0] == '.') || (seg == 2 && s[0] == '.' && s[1] == '.')) {
				*why = "an object name here has no empty, \".\" or \"..\" segment and "
				       "does not begin or end with \"/\" (its objects are files)";
				return false;
			}
			if (seg > SEGMENT_MAX_BYTES) {
				*why = "each \"/\"-separated segment of an object name has at most "
				       "255 bytes here (its objects are files)";
				return false;
			}
			seg = 0;
			continue;
		}
		if (ch < 0x20 || ch == 0x7f) {
			*why = "an object name has no control character (no CR or LF)";
			return false;
		}
		seg++;
	}
	return true;
}

/* --- walking ------------------------------------------------------------------ */

/*
 * Opens the folder holding path's last segment (dir + base), walking from
 * the bucket's folder without following links; with create, makes the
 * folders on the way. Returns the folder's fd (and *base into path) or -errno.
 */
static int open_parent(struct storage_fs *fs, const char *bucket, const char *path, bool create,
		       const char **base)
{
	int fd = openat(fs->rootfd, bucket, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	const char *p = path;
	for (;;) {
		const char *slash = strchr(p, '/');
		if (!slash)
			break;
		char seg[SEGMENT_MAX_BYTES + 1];
		size_t len = (size_t)(slash - p);
		if (len > SEGMENT_MAX_BYTES) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(seg, p, len);
		seg[len] = '\0';
		int next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, seg, 0755) && errno != EEXIST) {
				int e = errno;
				close(fd);
				return -e;
			}
			next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int e = errno;
		close(fd);
		if (next < 0)
			return e == ELOOP ? -ENOTDIR : -e;
		fd = next;
		p = slash + 1;
	}
	*base = p;
	return fd;
}

static void stat_of(const struct stat *sb, struct storage_stat *st)
{
	st->size = (int64_t)sb->st_size;
	st->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
	st->ino = (int64_t)sb->st_ino;
}

int storage_fs_bucket_create(struct storage_fs *fs, const char *bucket)
{
	if (mkdirat(fs->rootfd, bucket, 0755) && errno != EEXIST)
		return -errno;
	struct stat sb;
	if (fstatat(fs->rootfd, bucket, &sb, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return S_ISDIR(sb.st_mode) ? 0 : -ENOTDIR;
}

int storage_fs_bucket_remove(struct storage_fs *fs, const char *bucket)
{
	return unlinkat(fs->rootfd, bucket, AT_REMOVEDIR) ? -errno : 0;
}

int storage_fs_open_read(struct storage_fs *fs, const char *bucket, const char *name,
			 struct storage_stat *st)
{
	const char *base;
	int dirfd = open_parent(fs, bucket, name, false, &base);
	if (dirfd < 0)
		return dirfd == -ENOTDIR ? -ENOENT : dirfd;
	int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	int e = errno;
	close(dirfd);
	if (fd < 0)
		return e == ELOOP ? -ENOENT : -e;
	struct stat sb;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -ENOENT;	/* a folder, a device: no object */
	}
	stat_of(&sb, st);
	return fd;
}

int storage_fs_stat(struct storage_fs *fs, const char *bucket, const char *name,
		    struct storage_stat *st)
{
	int fd = storage_fs_open_read(fs, bucket, name, st);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int storage_fs_remove(struct storage_fs *fs, const char *bucket, const char *name)
{
	const char *base;
	int dirfd = open_parent(fs, bucket, name, false, &base);
	if (dirfd < 0)
		return dirfd == -ENOTDIR ? -ENOENT : dirfd;
	struct stat sb;
	int rc = 0;
	if (fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
		rc = -ENOENT;
	else if (unlinkat(dirfd, base, 0))
		rc = -errno;
	close(dirfd);
	if (rc)
		return rc;
	/* The folders it leaves empty go too, as Google has no folders. */
	char *path = xstrdup(name);
	for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
		*slash = '\0';
		dirfd = open_parent(fs, bucket, path, false, &base);
		if (dirfd < 0)
			break;
		int gone = unlinkat(dirfd, base, AT_REMOVEDIR);
		close(dirfd);
		if (gone)
			break;
	}
	free(path);
	return 0;
}

int storage_fs_tmp_create(struct storage_fs *fs, char **tmpname)
{
	unsigned char rnd[12];
	char name[40];
	size_t got = 0;

	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	snprintf(name, sizeof(name), "u-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(name + 2 + 2 * i, 3, "%02x", rnd[i]);
	int fd = openat(fs->tmpfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	*tmpname = xstrdup(name);
	return fd;
}

static bool tmp_name_ok(const char *tmpname)
{
	if (strncmp(tmpname, "u-", 2) || strlen(tmpname) != 26)
		return false;
	for (const char *p = tmpname + 2; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int storage_fs_tmp_open(struct storage_fs *fs, const char *tmpname, int64_t offset)
{
	if (!tmp_name_ok(tmpname))
		return -EINVAL;
	/* Created for the first bytes only: a file that lost what the session
	 * holds is never made up (zeros) again. */
	int fd = openat(fs->tmpfd, tmpname,
			O_RDWR | O_NOFOLLOW | O_CLOEXEC | (offset ? 0 : O_CREAT), 0644);
	if (fd < 0)
		return -errno;
	struct stat sb;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < offset) {
		close(fd);
		return -ENOENT;
	}
	if (ftruncate(fd, offset) || lseek(fd, offset, SEEK_SET) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void storage_fs_tmp_remove(struct storage_fs *fs, const char *tmpname)
{
	if (tmp_name_ok(tmpname))
		unlinkat(fs->tmpfd, tmpname, 0);
}

int storage_fs_commit(struct storage_fs *fs, const char *tmpname, const char *bucket,
		      const char *name, struct storage_stat *st)
{
	const char *base;
	if (!tmp_name_ok(tmpname))
		return -EINVAL;
	int dirfd = open_parent(fs, bucket, name, true, &base);
	if (dirfd < 0)
		return dirfd;
	struct stat sb;
	bool replaces = !fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW);
	if (replaces && !S_ISREG(sb.st_mode)) {
		close(dirfd);
		return S_ISDIR(sb.st_mode) ? -EISDIR : -EEXIST;	/* no link replaced either */
	}
	/*
	 * The generation is the mtime in microseconds: stamped from the precise
	 * clock (the file system's own is a clock tick coarse, and two uploads
	 * in one tick would share a generation), later than the one replaced.
	 */
	struct timespec ts[2];
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	if (replaces && ((int64_t)sb.st_mtim.tv_sec * 1000000 + sb.st_mtim.tv_nsec / 1000) >=
			((int64_t)ts[0].tv_sec * 1000000 + ts[0].tv_nsec / 1000)) {
		int64_t us = (int64_t)sb.st_mtim.tv_sec * 1000000 + sb.st_mtim.tv_nsec / 1000 + 1;
		ts[0].tv_sec = (time_t)(us / 1000000);
		ts[0].tv_nsec = (long)(us % 1000000) * 1000;
	}
	ts[1] = ts[0];
	if (utimensat(fs->tmpfd, tmpname, ts, AT_SYMLINK_NOFOLLOW)) {
		int e = errno;
		close(dirfd);
		return -e;
	}
	if (renameat(fs->tmpfd, tmpname, dirfd, base)) {
		int e = errno;
		close(dirfd);
		return -e;
	}
	int rc = fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	close(dirfd);
	if (!rc)
		stat_of(&sb, st);
	return rc;
}

int storage_fs_hash(int fd, struct hash_pair *hp)
{
	char *buf = xmalloc(1 << 20);
	off_t off = 0;
	ssize_t n;

	hash_pair_init(hp);
	while ((n = pread(fd, buf, 1 << 20, off)) > 0) {
		hash_pair_update(hp, buf, (size_t)n);
		off += n;
	}
	free(buf);
	return n < 0 ? -errno : 0;
}

/* --- listing ------------------------------------------------------------------ */

struct entry {
	char *name;		/* the segment */
	char *key;		/* the segment, and "/" for a folder: the order of full names */
	bool dir;
};

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

struct walk {
	struct storage_fs *fs;
	const char *prefix;
	const char *delimiter;
	const char *after;
	bool (*emit)(void *, const char *, bool, const struct storage_stat *);
	void *arg;
	char *last_prefix;	/* the last prefix emitted (delimiter grouping) */
	bool stop;
};

static bool starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* One object (or the prefix that groups it); false to stop. */
static bool visit_name(struct walk *wk, const char *name, const struct storage_stat *st)
{
	size_t plen = strlen(wk->prefix);
	if (!starts_with(name, wk->prefix))
		return true;
	if (wk->delimiter && *wk->delimiter) {
		const char *d = strstr(name + plen, wk->delimiter);
		if (d) {
			size_t glen = (size_t)(d - name) + strlen(wk->delimiter);
			if (wk->last_prefix && strlen(wk->last_prefix) == glen &&
			    !strncmp(wk->last_prefix, name, glen))
				return true;
			char *group = xstrndup(name, glen);
			free(wk->last_prefix);
			wk->last_prefix = group;
			if (wk->after && strcmp(group, wk->after) <= 0)
				return true;
			return wk->emit(wk->arg, group, true, NULL);
		}
	}
	if (wk->after && strcmp(name, wk->after) <= 0)
		return true;
	return wk->emit(wk->arg, name, false, st);
}

/* Walks the folder dirfd, whose objects' names begin with path ("" or "a/b/"). */
static int walk_dir(struct walk *wk, int dirfd, const char *path)
{
	DIR *d = fdopendir(dirfd);
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d) {
		close(dirfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*path && !strcmp(de->d_name, TMP_DIR))
			continue;
		struct stat sb;
		if (fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;
		if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
			continue;	/* links, devices: no objects */
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n].name = xstrdup(de->d_name);
		v[n].dir = S_ISDIR(sb.st_mode);
		v[n].key = v[n].dir ? xasprintf("%s/", de->d_name) : xstrdup(de->d_name);
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);	/* (v is NULL in an empty folder) */
	int rc = 0;
	for (size_t i = 0; i < n && !wk->stop; i++) {
		char *full = xasprintf("%s%s%s", path, v[i].name, v[i].dir ? "/" : "");
		size_t flen = strlen(full);
		size_t plen = strlen(wk->prefix);
		/* Only what can begin with the prefix (or lead to it). */
		bool related = flen >= plen ? starts_with(full, wk->prefix) :
					      starts_with(wk->prefix, full);
		if (!related) {
			free(full);
			continue;
		}
		if (v[i].dir) {
			/* Everything under it is at or before `after`: skip it. */
			bool before = wk->after && strcmp(full, wk->after) < 0 &&
				      !starts_with(wk->after, full);
			/* Grouped by "/" as one prefix: no need to look inside. */
			bool grouped = wk->delimiter && !strcmp(wk->delimiter, "/") && flen > plen;
			if (before) {
				free(full);
				continue;
			}
			if (grouped) {
				if (!visit_name(wk, full, NULL))
					wk->stop = true;
			} else {
				int sub = openat(dirfd, v[i].name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					rc = walk_dir(wk, sub, full);
			}
		} else {
			struct stat sb;
			if (!fstatat(dirfd, v[i].name, &sb, AT_SYMLINK_NOFOLLOW) &&
			    S_ISREG(sb.st_mode)) {
				struct storage_stat st;
				stat_of(&sb, &st);
				if (!visit_name(wk, full, &st))
					wk->stop = true;
			}
		}
		free(full);
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].key);
	}
	free(v);
	closedir(d);
	return rc;
}

int storage_fs_list(struct storage_fs *fs, const char *bucket, const char *prefix,
		    const char *delimiter, const char *after,
		    bool (*emit)(void *arg, const char *name, bool is_prefix,
				 const struct storage_stat *st),
		    void *arg)
{
	struct walk wk = { fs, prefix ? prefix : "", delimiter, after, emit, arg, NULL, false };
	/* Start in the deepest folder the prefix names. */
	const char *slash = strrchr(wk.prefix, '/');
	char *start = slash ? xstrndup(wk.prefix, (size_t)(slash - wk.prefix) + 1) : xstrdup("");
	int dirfd;

	if (*start) {
		const char *base;
		char *dirpath = xstrndup(start, strlen(start) - 1);
		char *withbase = xasprintf("%s/x", dirpath);
		int parent = open_parent(fs, bucket, withbase, false, &base);
		free(withbase);
		free(dirpath);
		dirfd = parent;
		if (dirfd < 0) {
			free(start);
			/* no such folder: nothing to list (but the bucket must exist) */
			struct stat sb;
			if (fstatat(fs->rootfd, bucket, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode))
				return -ENOENT;
			return 0;
		}
	} else {
		dirfd = openat(fs->rootfd, bucket, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dirfd < 0) {
			free(start);
			return -errno;
		}
	}
	int rc = walk_dir(&wk, dirfd, start);
	free(start);
	free(wk.last_prefix);
	return rc;
}
