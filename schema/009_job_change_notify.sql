-- Every server keeps the jobs it has rendered in memory (store/job_cache.c)
-- and must hear of every change to one and of its deletion, whoever makes
-- it: a server, the scheduler, an agent's report or plain SQL. The payload
-- is the SHA-256 (hex) of 'api/project/job_id': fixed length, whatever the
-- project's name. pg_notify is delivered at commit, in commit order.
--
-- Inserts do not notify: a job that did not exist cannot be cached, and a
-- NOTIFY in every insert would serialise concurrent creates' commits on
-- the notification queue's lock (see 003).
CREATE FUNCTION jobs_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tp_job', encode(sha256(convert_to(
        OLD.api || '/' || OLD.project || '/' || OLD.job_id, 'UTF8')), 'hex'));
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_notify_change AFTER UPDATE OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify_change();
