-- Issue 12, items 10, 15 and 8: a lookup by job id that needs no
-- statistics, ML units that count every attempt, and the key of page tokens.

-- 1. jobs.get, cancel and patch find a job by (api, project, job_id), the
-- unique key. Without statistics (a fresh database, until autovacuum first
-- analyzes jobs) the planner estimates one row through the unique key and
-- one row through the list index (project, api, id DESC) too (the default
-- selectivity of two equalities, 1/40,000, times the table's size, rounds
-- to one row below 60,000 jobs): a tie, which it settles for the newest
-- index, the list index, and the lookup walks the whole project filtering
-- on job_id. A plan made while the table was small stays until an ANALYZE;
-- an ANALYZE after the migrations would not help, the table being empty
-- then. So the list index is made partial on a condition true of every
-- row that only the list statement states (store_job_list: id > 0): the
-- lookups cannot use it at all, whatever the statistics.
DROP INDEX jobs_project_api_id;
CREATE INDEX jobs_project_api_id ON jobs (project, api, id DESC) WHERE id > 0;

-- 2. consumedMLUnits counts every attempt of every replica. A replica row
-- holds its current attempt only; the run time of the attempts before it
-- is kept in earlier_run_seconds, added whenever a statement starts a new
-- attempt (store_sched.c's restart of a lost replica, the gang restart of
-- tp_reconcile_job, and any later one): an attempt that never started adds
-- nothing, one that has no end (lost with its node) ran until now.
ALTER TABLE replicas ADD COLUMN earlier_run_seconds double precision NOT NULL DEFAULT 0;

CREATE FUNCTION replicas_keep_run_time() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.start_time IS NOT NULL THEN
        NEW.earlier_run_seconds := OLD.earlier_run_seconds
            + greatest(extract(epoch FROM (coalesce(OLD.end_time, now()) - OLD.start_time)), 0);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER replicas_keep_run_time BEFORE UPDATE OF attempt ON replicas
    FOR EACH ROW WHEN (NEW.attempt IS DISTINCT FROM OLD.attempt)
    EXECUTE FUNCTION replicas_keep_run_time();

-- ML units: (vCPUs / 8 + accelerators) per replica-hour of run time, all
-- attempts.
CREATE FUNCTION tp_job_ml_units(j bigint) RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum((earlier_run_seconds + CASE WHEN start_time IS NULL THEN 0
                           ELSE extract(epoch FROM (coalesce(end_time, now()) - start_time)) END)
                        / 3600.0 * (vcpus / 8.0 + accel_count)), 0)
        FROM replicas WHERE job = j;
$$;

-- 007's state machine, unchanged but for its units: tp_job_ml_units().
CREATE OR REPLACE FUNCTION tp_reconcile_job(j bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    cur  jobs%ROWTYPE;
    bad  replicas%ROWTYPE;
    prim replicas%ROWTYPE;
    units double precision;
    no_retry boolean;
    gang boolean;
BEGIN
    SELECT * INTO cur FROM jobs WHERE id = j FOR UPDATE;
    IF NOT FOUND OR cur.state IN ('QUEUED', 'SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RETURN cur.state;
    END IF;
    units := tp_job_ml_units(j);
    IF cur.state = 'CANCELLING' THEN
        PERFORM tp_stop_replicas(j);
        IF NOT EXISTS (SELECT 1 FROM replicas WHERE job = j AND desired = 'STOP'
                       AND state IN ('PENDING', 'STARTING', 'RUNNING')) THEN
            UPDATE replicas SET desired = 'DONE' WHERE job = j AND desired <> 'DONE';
            UPDATE jobs SET state = 'CANCELLED', end_time = now(), restarting = false,
                output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
                WHERE id = j;
            RETURN 'CANCELLED';
        END IF;
        RETURN cur.state;
    END IF;
    IF cur.restarting THEN
        IF EXISTS (SELECT 1 FROM replicas WHERE job = j AND node IS NOT NULL
                   AND state IN ('STARTING', 'RUNNING')) THEN
            RETURN cur.state;
        END IF;
        UPDATE replicas SET attempt = (SELECT max(attempt) FROM replicas WHERE job = j) + 1,
            desired = 'RUN', state = 'PENDING', node = NULL, gpus = '{}', port = NULL, seq = 0,
            exit_code = NULL, message = '', start_time = NULL, end_time = NULL
            WHERE job = j;
        UPDATE jobs SET restarting = false WHERE id = j;
        RETURN cur.state;
    END IF;
    no_retry := cur.api = 'vertex'
        AND coalesce((cur.spec #>> '{jobSpec,scheduling,disableRetries}')::boolean, false);
    gang := cur.api = 'vertex' AND NOT no_retry
        AND coalesce((cur.spec #>> '{jobSpec,scheduling,restartJobOnWorkerRestart}')::boolean, false);
    SELECT * INTO bad FROM replicas WHERE job = j
        AND (state = 'FAILED_TO_START' OR (state = 'EXITED' AND exit_code <> 0)
             OR (no_retry AND state = 'LOST' AND desired = 'RUN'))
        ORDER BY end_time NULLS LAST, id LIMIT 1;
    IF FOUND THEN
        PERFORM tp_stop_replicas(j);
        UPDATE jobs SET state = 'FAILED', end_time = now(),
            error_message = CASE bad.state
                WHEN 'FAILED_TO_START' THEN format('The replica %s could not be started: %s',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.message)
                WHEN 'LOST' THEN format('The replica %s was lost: its node %s stopped reporting '
                    'or restarted, and scheduling.disableRetries is set.',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.node)
                ELSE format('The replica %s exited with a non-zero status of %s.',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.exit_code) END,
            output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
            WHERE id = j;
        RETURN 'FAILED';
    END IF;
    IF gang AND EXISTS (SELECT 1 FROM replicas WHERE job = j AND state = 'LOST' AND desired = 'RUN') THEN
        UPDATE replicas SET desired = 'STOP' WHERE job = j AND desired = 'RUN' AND node IS NOT NULL
            AND state IN ('PENDING', 'STARTING', 'RUNNING');
        UPDATE jobs SET restarting = true WHERE id = j;
        RETURN tp_reconcile_job(j);	-- restarts at once when nothing is left to stop
    END IF;
    SELECT * INTO prim FROM replicas WHERE job = j ORDER BY (role NOT IN ('master', 'chief', 'pool0')), idx, id LIMIT 1;
    IF FOUND AND prim.state = 'EXITED' AND prim.exit_code = 0 THEN
        PERFORM tp_stop_replicas(j);
        UPDATE jobs SET state = 'SUCCEEDED', end_time = now(),
            start_time = coalesce(start_time, prim.start_time, now()),
            output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
            WHERE id = j;
        RETURN 'SUCCEEDED';
    END IF;
    IF cur.state = 'PREPARING' AND NOT EXISTS (SELECT 1 FROM replicas WHERE job = j
            AND state NOT IN ('RUNNING', 'EXITED')) THEN
        UPDATE jobs SET state = 'RUNNING', start_time = now() WHERE id = j;
        RETURN 'RUNNING';
    END IF;
    RETURN cur.state;
END $$;

-- 3. Page tokens (server/paging.h) are encrypted and authenticated with a
-- key that every server of this database shares, made here once. Whoever
-- reads it can make and read page tokens, that is choose where a list
-- starts and learn the row ids inside tokens; it opens no project a caller
-- could not list anyway (every list is authorised on its own). Servers
-- read it at start (and make it anew if the row was deleted) and never
-- show it. Rotate it with
--   UPDATE server_keys SET key = tp_server_key_new() WHERE name = 'page_token';
-- and a restart of every server: tokens made before stop working (400).
-- Random bytes from core PostgreSQL (no pgcrypto): gen_random_uuid() takes
-- 122 bits from the strong random source, three of them hashed to 32 bytes.
CREATE FUNCTION tp_server_key_new() RETURNS bytea LANGUAGE sql VOLATILE AS $$
    SELECT sha256(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text
                                 || gen_random_uuid()::text, '-', ''), 'hex'));
$$;

CREATE TABLE server_keys (
    name       text        PRIMARY KEY,
    key        bytea       NOT NULL CHECK (octet_length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO server_keys (name, key) VALUES ('page_token', tp_server_key_new());
