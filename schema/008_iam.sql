-- IAM policies on ml jobs (getIamPolicy / setIamPolicy). A policy's etag
-- comes from its own sequence and changes on every set; a job without a
-- row has the empty policy, etag 0. Deleting a job deletes its policy.
CREATE SEQUENCE iam_etag_seq;

CREATE TABLE iam_policies (
    project     text        NOT NULL,
    api         text        NOT NULL,
    job_id      text        NOT NULL,
    policy      jsonb       NOT NULL,
    etag        bigint      NOT NULL DEFAULT nextval('iam_etag_seq'),
    update_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, api, job_id),
    FOREIGN KEY (project, api, job_id) REFERENCES jobs (project, api, job_id) ON DELETE CASCADE
);

-- Sets a job's policy if expected_etag (NULL: any) is the current one (0:
-- none yet). Returns the new etag, -1 when the job does not exist, -2 when
-- the etag is stale. Concurrent sets on one job are serialised by a
-- transaction-scoped advisory lock in a key space of its own (class 8).
CREATE FUNCTION tp_set_iam_policy(p_project text, p_api text, p_job text, p_policy jsonb,
                                  expected_etag bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    cur bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(8, hashtext(p_project || '/' || p_api || '/' || p_job));
    IF NOT EXISTS (SELECT 1 FROM jobs WHERE project = p_project AND api = p_api
                                        AND job_id = p_job) THEN
        RETURN -1;
    END IF;
    SELECT etag INTO cur FROM iam_policies
     WHERE project = p_project AND api = p_api AND job_id = p_job;
    IF expected_etag IS NOT NULL AND expected_etag <> COALESCE(cur, 0) THEN
        RETURN -2;
    END IF;
    INSERT INTO iam_policies (project, api, job_id, policy)
         VALUES (p_project, p_api, p_job, p_policy)
    ON CONFLICT (project, api, job_id) DO UPDATE
        SET policy = EXCLUDED.policy, etag = nextval('iam_etag_seq'), update_time = now()
    RETURNING etag INTO cur;
    RETURN cur;
END $$;
