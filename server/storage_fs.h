/*
 * storage_fs.h - the Cloud Storage API's files: <root>/<bucket>/<object
 * name>, the tree the agents mount at /gcs, so that what a replica writes
 * under /gcs/<bucket>/ is an object too.
 *
 * Every path is walked component by component from the root's descriptor
 * with O_NOFOLLOW (openat), never as a string: a symbolic link planted in
 * the tree (a replica may write there) is never followed out of it, and no
 * name reaches a path unchecked (storage_object_name_ok refuses ".", "..",
 * empty segments and control characters first).
 */
#ifndef TP_STORAGE_FS_H
#define TP_STORAGE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash.h"

struct storage_fs;

/* Opens (creating it) the root; NULL with err. */
struct storage_fs *storage_fs_open(const char *root, char *err, size_t errlen);
void storage_fs_close(struct storage_fs *fs);

/* Bucket names as Google takes them; why says what is wrong. */
bool storage_bucket_name_ok(const char *name, const char **why);
/*
 * Object names: Google's rules (1 to 1024 bytes of UTF-8, no CR or LF, not
 * "." or "..") and a file tree's (no control character, no empty, "." or
 * ".." segment, no leading "/", segments of at most 255 bytes).
 */
bool storage_object_name_ok(const char *name, const char **why);
/*
 * Google's rules alone: what a read or a delete may name. A name Google
 * takes that cannot be a file here ("dir/", "a//b") names no object: 404.
 */
bool storage_object_name_google_ok(const char *name, const char **why);

/* The bucket's folder: 0, or -errno. */
int storage_fs_bucket_create(struct storage_fs *fs, const char *bucket);
/* Removes the bucket's folder if empty: 0, -ENOTEMPTY, -ENOENT, other -errno. */
int storage_fs_bucket_remove(struct storage_fs *fs, const char *bucket);

/* A regular file's facts. */
struct storage_stat {
	int64_t size;
	int64_t mtime_ns;
	int64_t ino;
};

/* Opens an object's file for reading: fd >= 0 with st, or -errno (-ENOENT: none). */
int storage_fs_open_read(struct storage_fs *fs, const char *bucket, const char *name,
			 struct storage_stat *st);
int storage_fs_stat(struct storage_fs *fs, const char *bucket, const char *name,
		    struct storage_stat *st);
/* Removes an object's file (and the folders it leaves empty): 0 or -errno. */
int storage_fs_remove(struct storage_fs *fs, const char *bucket, const char *name);

/*
 * A new file being written (an upload), outside every bucket until
 * committed: fd >= 0 and its temporary name (caller frees), or -errno.
 * storage_fs_tmp_open reopens an existing one (a resumable session's) for
 * appending at offset (truncated there); -ENOENT when it is missing or
 * shorter than offset (it is created only at offset 0).
 */
int storage_fs_tmp_create(struct storage_fs *fs, char **tmpname);
int storage_fs_tmp_open(struct storage_fs *fs, const char *tmpname, int64_t offset);
void storage_fs_tmp_remove(struct storage_fs *fs, const char *tmpname);
/*
 * Moves a finished file into place as the object (replacing one of that
 * name), creating the folders on the way: 0 with its stat, or -errno
 * (-ENOTDIR / -EISDIR: a name conflicts with an object's folder or file).
 */
int storage_fs_commit(struct storage_fs *fs, const char *tmpname, const char *bucket,
		      const char *name, struct storage_stat *st);

/* Hashes a file's bytes from its start (for objects written by other means). */
int storage_fs_hash(int fd, struct hash_pair *hp);

/*
 * Lists a bucket's objects in name order (Google's: bytewise), those whose
 * names begin with prefix and come after `after`; with delimiter "/" the
 * folders below the prefix are given as prefixes ("a/b/") instead of
 * their objects. emit() is called for each, in order, until it returns
 * false (is_prefix tells which; st is NULL for a prefix). Only regular
 * files are objects; symbolic links are not followed. 0 or -errno.
 */
int storage_fs_list(struct storage_fs *fs, const char *bucket, const char *prefix,
		    const char *delimiter, const char *after,
		    bool (*emit)(void *arg, const char *name, bool is_prefix,
				 const struct storage_stat *st),
		    void *arg);

#endif
