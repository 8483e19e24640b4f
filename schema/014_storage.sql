-- Cloud Storage, the subset training uses (issue 24). A bucket belongs to a
-- project; its objects are the regular files under <storage root>/<bucket>/,
-- the tree the agents mount at /gcs, so what a replica writes under
-- /gcs/<bucket>/ is an object too (docs/storage.md). This table only keeps
-- what a file cannot say (its content type, custom metadata) and its hashes,
-- each row valid while the file's size, mtime and inode are the ones stamped.

CREATE TABLE storage_buckets (
    name text COLLATE "C" PRIMARY KEY,
    project text NOT NULL,
    location text NOT NULL,
    storage_class text NOT NULL,
    metageneration bigint NOT NULL DEFAULT 1,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX storage_buckets_by_project ON storage_buckets (project, name);

CREATE TABLE storage_objects (
    bucket text COLLATE "C" NOT NULL REFERENCES storage_buckets (name) ON DELETE CASCADE,
    name text COLLATE "C" NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    ino bigint NOT NULL,
    content_type text NOT NULL,
    md5 bytea NOT NULL,
    crc32c bigint NOT NULL,
    metadata jsonb,
    PRIMARY KEY (bucket, name)
);

-- Resumable upload sessions: what the session's first request said, and
-- how far the bytes (a file under the storage root) and their running
-- hashes have come, so that any server of the database takes the next chunk.
CREATE TABLE storage_uploads (
    id text PRIMARY KEY,
    bucket text COLLATE "C" NOT NULL REFERENCES storage_buckets (name) ON DELETE CASCADE,
    name text COLLATE "C" NOT NULL,
    content_type text NOT NULL,
    metadata jsonb,
    total bigint,
    received bigint NOT NULL DEFAULT 0,
    hash_state bytea,
    create_time timestamptz NOT NULL DEFAULT now()
);
