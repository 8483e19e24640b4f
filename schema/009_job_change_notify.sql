-- Every server keeps the jobs it has rendered in memory (store/job_cache.c)
-- and must hear of every change to one and of its deletion, whoever makes
-- it: a server, the scheduler, an agent's report or plain SQL. A payload is
-- the SHA-256s (hex) of the changed jobs' 'api/project/job_id', separated by
-- spaces, at most 100 a notification: fixed length whatever a project's
-- name, and one notification for a hundred rows of a bulk update (the
-- scheduler's commits). pg_notify is delivered at commit, in commit order.
--
-- Inserts do not notify: a job that did not exist cannot be cached, and a
-- NOTIFY in every insert would serialise concurrent creates' commits on
-- the notification queue's lock (see 003).
CREATE FUNCTION jobs_notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tp_job', string_agg(digest, ' '))
    FROM (SELECT encode(sha256(convert_to(api || '/' || project || '/' || job_id, 'UTF8')), 'hex')
                     AS digest,
                 (row_number() OVER () - 1) / 100 AS chunk
          FROM changed) d
    GROUP BY chunk;
    RETURN NULL;
END $$;

-- (a trigger with a transition table takes one event)
CREATE TRIGGER jobs_notify_updates AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify_changes();
CREATE TRIGGER jobs_notify_deletes AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify_changes();
