-- Tuning studies, the rest (issue 26).
--
-- 1. A trial's transitions (placed, running, succeeded, failed, ...) are
--    lines of its study's log, with its trial (as its replicas' lines
--    already are: schema/017), "Trial N: <the line>": stream-logs of the
--    study shows them, and no line is left in a log no API names.
-- 2. A study that is cancelled stays CANCELLING until its trials have
--    stopped; the study pass (scheduler/study.c) then ends it CANCELLED,
--    with its trials' last states in its output. The housekeeping's
--    reconcile leaves a CANCELLING study alone.
-- 3. The lock step (schema/015) locks job rows FOR NO KEY UPDATE: two lock
--    steps still exclude each other, but a row that references a locked
--    job (a trial's line in its study's log, a trial added to its study)
--    no longer waits for it. Before, a sync that held a trial and wrote a
--    line to its study's log waited for the study, which the study pass
--    held while it waited for that trial (to stop it early): a cycle.

CREATE OR REPLACE FUNCTION tp_lock_jobs(p_jobs bigint[], p_nodes text[], p_job_nodes boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_jobs), 0) > 0 THEN
        PERFORM 1 FROM jobs WHERE id = ANY (p_jobs) ORDER BY id FOR NO KEY UPDATE;
    END IF;
    PERFORM 1 FROM nodes n
     WHERE n.name = ANY (coalesce(p_nodes, '{}'))
        OR (coalesce(cardinality(p_jobs), 0) > 0 AND n.name IN (
            SELECT p.node FROM replicas p JOIN jobs j ON j.id = p.job
             WHERE p.job = ANY (p_jobs) AND p.node IS NOT NULL
               AND (p_job_nodes OR j.state = 'CANCELLING' OR j.restarting)))
     ORDER BY n.name FOR NO KEY UPDATE;
END $$;

-- 016's entry point: a trial's line goes to its study's log, with its trial.
CREATE OR REPLACE FUNCTION tp_job_transition(p_jobs bigint[], p_to text, p_cause text,
                                             p_messages text[] DEFAULT NULL)
RETURNS SETOF jobs LANGUAGE plpgsql ROWS 100 AS $$
DECLARE
    froms text[];
BEGIN
    SELECT array_agg(e.from_state) INTO froms FROM job_state_edges e
     WHERE e.cause = p_cause AND (p_to IS NULL OR e.to_state = p_to)
       AND e.from_state <> 'STATE_UNSPECIFIED';
    IF froms IS NULL THEN
        RAISE EXCEPTION 'no edge of the job state machine leads to % for the cause %',
            coalesce(p_to, 'any state'), p_cause USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(cardinality(p_jobs), 0) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH moved AS (
        UPDATE jobs j SET state = coalesce(p_to, (SELECT e.to_state FROM job_state_edges e
                                                  WHERE e.from_state = j.state AND e.cause = p_cause)),
                          error_message = coalesce(m.message, j.error_message)
          FROM unnest(p_jobs, p_messages) AS m(id, message)
         WHERE j.id = m.id AND j.state = ANY (froms)
        RETURNING j.*),
    logged AS (
        INSERT INTO log_entries (job, task, attempt, stream, time, text, trial)
        SELECT coalesce(m.parent, m.id), 'service',
               coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = m.id), 1),
               CASE WHEN m.state = 'FAILED' THEN 'error' ELSE 'system' END, clock_timestamp(),
               CASE WHEN m.parent IS NULL THEN tp_service_line(m.state, p_cause, m.error_message)
                    ELSE format('Trial %s: %s', m.trial,
                                tp_service_line(m.state, p_cause, m.error_message)) END,
               m.trial
          FROM moved m)
    SELECT * FROM moved;
END $$;

-- 013's reconcile, but for a CANCELLING study (2. above).
CREATE OR REPLACE FUNCTION tp_reconcile_job(j bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    cur  jobs%ROWTYPE;
    bad  replicas%ROWTYPE;
    prim replicas%ROWTYPE;
    moved text;
    no_retry boolean;
    gang boolean;
BEGIN
    SELECT * INTO cur FROM jobs WHERE id = j FOR NO KEY UPDATE;
    IF NOT FOUND OR cur.state IN ('QUEUED', 'SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RETURN cur.state;
    END IF;
    IF cur.state = 'CANCELLING' AND cur.study THEN
        RETURN cur.state;	-- the study pass ends it once its trials have stopped
    END IF;
    IF cur.state = 'CANCELLING' THEN
        PERFORM tp_stop_replicas(j);
        IF NOT EXISTS (SELECT 1 FROM replicas WHERE job = j AND desired = 'STOP'
                       AND state IN ('PENDING', 'STARTING', 'RUNNING')) THEN
            SELECT state INTO moved FROM tp_job_transition(j, 'CANCELLED', 'cancelled');
        END IF;
        RETURN coalesce(moved, cur.state);
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
        SELECT state INTO moved FROM tp_job_transition(j, cur.state, 'restart');
        RETURN coalesce(moved, cur.state);
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
        SELECT state INTO moved FROM tp_job_transition(j, 'FAILED',
            CASE bad.state WHEN 'LOST' THEN 'node_loss' ELSE 'fail' END,
            CASE bad.state
                WHEN 'FAILED_TO_START' THEN format('The replica %s could not be started: %s',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.message)
                WHEN 'LOST' THEN format('The replica %s was lost: its node %s stopped reporting '
                    'or restarted, and scheduling.disableRetries is set.',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.node)
                ELSE format('The replica %s exited with a non-zero status of %s.',
                    tp_replica_label(cur.api, bad.role, bad.idx), bad.exit_code) END);
        RETURN coalesce(moved, cur.state);
    END IF;
    IF gang AND EXISTS (SELECT 1 FROM replicas WHERE job = j AND state = 'LOST' AND desired = 'RUN') THEN
        -- The gang stops; the restart edge is taken once none runs (above).
        UPDATE replicas SET desired = 'STOP' WHERE job = j AND desired = 'RUN' AND node IS NOT NULL
            AND state IN ('PENDING', 'STARTING', 'RUNNING');
        UPDATE jobs SET restarting = true WHERE id = j;
        RETURN tp_reconcile_job(j);	-- restarts at once when nothing is left to stop
    END IF;
    SELECT * INTO prim FROM replicas WHERE job = j ORDER BY (role NOT IN ('master', 'chief', 'pool0')), idx, id LIMIT 1;
    IF FOUND AND prim.state = 'EXITED' AND prim.exit_code = 0 THEN
        SELECT state INTO moved FROM tp_job_transition(j, 'SUCCEEDED', 'succeed');
        RETURN coalesce(moved, cur.state);
    END IF;
    IF cur.state = 'PREPARING' AND NOT EXISTS (SELECT 1 FROM replicas WHERE job = j
            AND state NOT IN ('RUNNING', 'EXITED')) THEN
        SELECT state INTO moved FROM tp_job_transition(j, 'RUNNING', 'run');
        RETURN coalesce(moved, cur.state);
    END IF;
    RETURN cur.state;
END $$;
