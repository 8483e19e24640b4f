-- Vertex AI scheduling.restartJobOnWorkerRestart and scheduling.disableRetries,
-- and Vertex task names (workerpool0-0, workerpool1-2, ...).

-- A gang restart in progress: the job's replicas are being stopped; once
-- none runs, every one starts again as a new attempt (tp_reconcile_job).
ALTER TABLE jobs ADD COLUMN restarting boolean NOT NULL DEFAULT false;

-- The task name of a replica in logs: ml v1 "worker-replica-1", Vertex
-- "workerpool1-1" (pool i runs as role i: master, worker, ps, evaluator).
CREATE FUNCTION tp_task_name(api text, role text, idx integer) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN api = 'vertex'
        THEN 'workerpool' || (array_position(ARRAY['master', 'worker', 'ps', 'evaluator'], role) - 1)
             || '-' || idx
        ELSE role || '-replica-' || idx END;
$$;

-- The replica as error messages name it: "worker 1" (ml v1), "workerpool1-1" (Vertex).
CREATE FUNCTION tp_replica_label(api text, role text, idx integer) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN api = 'vertex' THEN tp_task_name(api, role, idx) ELSE role || ' ' || idx END;
$$;

UPDATE log_entries l SET task = tp_task_name('vertex', split_part(l.task, '-replica-', 1),
                                             split_part(l.task, '-replica-', 2)::int)
    FROM jobs j WHERE j.id = l.job AND j.api = 'vertex' AND l.task LIKE '%-replica-%';

-- The job state machine (002's rules), plus node loss for Vertex jobs:
--   disableRetries: a replica lost with its node fails the job, as a
--     replica exiting non-zero does (it overrides restartJobOnWorkerRestart).
--   restartJobOnWorkerRestart: a lost replica stops every other replica of
--     the job (restarting); once none runs (a stopped replica that had not
--     reported starting yet does not wait), all of them become PENDING
--     again, unplaced, with one new attempt number: the scheduler places
--     them as a gang, with fresh addresses for every one. While restarting,
--     the exits of the stopped replicas decide nothing.
--   otherwise the scheduler restarts each lost replica by itself.
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
    -- ML units: (vCPUs / 8 + accelerators) per replica-hour of run time.
    SELECT coalesce(sum(extract(epoch FROM (coalesce(end_time, now()) - start_time)) / 3600.0
                        * (vcpus / 8.0 + accel_count)), 0)
        INTO units FROM replicas WHERE job = j AND start_time IS NOT NULL;
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
