-- One job state machine (issue 17 item 4): its edges, its one entry point,
-- and a trigger that refuses any other way of changing a job's state.
--
-- The machine's single source is spec/job_state.c's table; job_state_edges
-- is the database's copy, written by migrations (the rows below were
-- generated from the table by store_job_state_edges_sql()). A release that
-- changes the table ships a migration with the new rows: a server refuses
-- to start while its table and this copy differ, and logs the rows to
-- write (store/store_job_state.c). So servers of one schema version always
-- share one machine, and an older server refuses a newer schema.
-- From a state, a cause leads to at most one state: (from_state, cause) is
-- the key. The create edge leaves STATE_UNSPECIFIED (no job yet).
--
-- The entry point, tp_job_transition(jobs, to_state, cause, messages): the
-- statements that move jobs call it (the scheduler's placement, timeouts
-- and restarts of lost replicas, a user's cancel) and so does
-- tp_reconcile_job (the agents' reports, node loss, gang restarts,
-- cancelled jobs); C code calls it through store_job_transition(). It
-- moves those of the jobs that are in a state from which cause leads to
-- to_state (NULL: wherever cause leads), setting error_message to the
-- job's message where one is given; it leaves the others alone (a race
-- lost: a job cancelled while it was being placed) and returns the rows it
-- moved. A cause that leads to to_state from no state is a caller's bug:
-- an error. One call moves any number of jobs in one UPDATE (placement
-- commits thousands a second).
--
-- Beneath it, a trigger sees every write of jobs.state whoever makes it (a
-- statement of a later release, an operator's psql): a write that is not
-- an edge is refused (SQLSTATE 23514, constraint job_state_edges; an insert
-- must be QUEUED), and a legal one gets what goes with its new state, so
-- that no path can forget it:
--   any edge     restarting = false (a restart edge completes a gang
--                restart; CANCELLING and the final states end one)
--   RUNNING      start_time, the first time
--   CANCELLING   cancel_requested
--   final        end_time; a job that was placed (left QUEUED) gets
--                output.consumedMLUnits (every attempt: tp_job_ml_units)
--                and its replicas stopped (tp_stop_replicas; CANCELLED:
--                every replica DONE, reconcile cancels once none runs)
--   SUCCEEDED    start_time, if it never reached RUNNING: its primary's
--   CANCELLED    cancel_requested
-- Before this, a timeout set none of the units (a job that ran for hours,
-- then passed maxRunningTime, showed no consumedMLUnits): it now does.
-- Only a superuser's session_replication_role = replica skips triggers.

CREATE TABLE job_state_edges (
    from_state text NOT NULL,
    cause      text NOT NULL,
    to_state   text NOT NULL,
    PRIMARY KEY (from_state, cause)
);

INSERT INTO job_state_edges (from_state, cause, to_state) VALUES
    ('STATE_UNSPECIFIED', 'create', 'QUEUED'),
    ('QUEUED', 'place', 'PREPARING'),
    ('QUEUED', 'cancel', 'CANCELLED'),
    ('QUEUED', 'timeout', 'FAILED'),
    ('PREPARING', 'run', 'RUNNING'),
    ('PREPARING', 'succeed', 'SUCCEEDED'),
    ('PREPARING', 'fail', 'FAILED'),
    ('PREPARING', 'timeout', 'FAILED'),
    ('PREPARING', 'node_loss', 'FAILED'),
    ('PREPARING', 'restart', 'PREPARING'),
    ('PREPARING', 'cancel', 'CANCELLING'),
    ('RUNNING', 'succeed', 'SUCCEEDED'),
    ('RUNNING', 'fail', 'FAILED'),
    ('RUNNING', 'timeout', 'FAILED'),
    ('RUNNING', 'node_loss', 'FAILED'),
    ('RUNNING', 'restart', 'RUNNING'),
    ('RUNNING', 'cancel', 'CANCELLING'),
    ('CANCELLING', 'cancelled', 'CANCELLED');

-- The guard and the effects of every state change (see above).
CREATE FUNCTION jobs_state_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM job_state_edges
                       WHERE from_state = 'STATE_UNSPECIFIED' AND to_state = NEW.state) THEN
            RAISE EXCEPTION 'a job cannot be created %: no edge of the job state machine '
                'leads there (job_state_edges)', NEW.state
                USING ERRCODE = 'check_violation', CONSTRAINT = 'job_state_edges', TABLE = 'jobs';
        END IF;
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM job_state_edges
                   WHERE from_state = OLD.state AND to_state = NEW.state) THEN
        RAISE EXCEPTION 'job % cannot go from % to %: no edge of the job state machine '
            'joins them (job_state_edges)', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation', CONSTRAINT = 'job_state_edges', TABLE = 'jobs';
    END IF;
    NEW.restarting := false;
    IF NEW.state = OLD.state THEN
        RETURN NEW;	-- a restart: the job stays where it is
    END IF;
    IF NEW.state = 'RUNNING' THEN
        NEW.start_time := coalesce(NEW.start_time, now());
    ELSIF NEW.state = 'CANCELLING' THEN
        NEW.cancel_requested := true;
    ELSIF NEW.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        NEW.end_time := coalesce(NEW.end_time, now());
        IF NEW.state = 'SUCCEEDED' THEN
            NEW.start_time := coalesce(NEW.start_time,
                (SELECT p.start_time FROM replicas p WHERE p.job = NEW.id
                  ORDER BY (p.role NOT IN ('master', 'chief', 'pool0')), p.idx, p.id LIMIT 1),
                now());
        ELSIF NEW.state = 'CANCELLED' THEN
            NEW.cancel_requested := true;
        END IF;
        IF OLD.state <> 'QUEUED' THEN
            NEW.output := NEW.output || jsonb_build_object('consumedMLUnits',
                round(tp_job_ml_units(NEW.id)::numeric, 2));
            IF NEW.state = 'CANCELLED' THEN
                UPDATE replicas SET desired = 'DONE' WHERE job = NEW.id AND desired <> 'DONE';
            ELSE
                PERFORM tp_stop_replicas(NEW.id);
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END $$;

-- (an insert other than QUEUED is refused by the function: QUEUED, the
-- create edge's end, costs creates nothing)
CREATE TRIGGER jobs_state_create BEFORE INSERT ON jobs
    FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM 'QUEUED')
    EXECUTE FUNCTION jobs_state_transition();
CREATE TRIGGER jobs_state_transition BEFORE UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_state_transition();

-- The entry point (see above). p_messages[i] is p_jobs[i]'s message (NULL,
-- or shorter: the error message is kept). ROWS: a placement commit's batch
-- (scheduler.c: 100); the default guess, 1000, makes the commit's plan look
-- expensive enough to JIT-compile, which takes longer than the statement.
CREATE FUNCTION tp_job_transition(p_jobs bigint[], p_to text, p_cause text,
                                  p_messages text[] DEFAULT NULL)
RETURNS SETOF jobs LANGUAGE plpgsql ROWS 100 AS $$
DECLARE
    froms text[];
BEGIN
    -- (no job is in STATE_UNSPECIFIED: create is an insert)
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
    UPDATE jobs j SET state = coalesce(p_to, (SELECT e.to_state FROM job_state_edges e
                                              WHERE e.from_state = j.state AND e.cause = p_cause)),
                      error_message = coalesce(m.message, j.error_message)
      FROM unnest(p_jobs, p_messages) AS m(id, message)
     WHERE j.id = m.id AND j.state = ANY (froms)
    RETURNING j.*;
END $$;

-- The same for one job.
CREATE FUNCTION tp_job_transition(p_job bigint, p_to text, p_cause text, p_message text DEFAULT NULL)
RETURNS SETOF jobs LANGUAGE sql ROWS 1 AS $$
    SELECT * FROM tp_job_transition(ARRAY[p_job], p_to, p_cause, ARRAY[p_message]);
$$;

-- 012's reconciler (007's rules, every attempt's units), its transitions
-- through the entry point: what it returns is the state the job is in.
CREATE OR REPLACE FUNCTION tp_reconcile_job(j bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    cur  jobs%ROWTYPE;
    bad  replicas%ROWTYPE;
    prim replicas%ROWTYPE;
    moved text;
    no_retry boolean;
    gang boolean;
BEGIN
    SELECT * INTO cur FROM jobs WHERE id = j FOR UPDATE;
    IF NOT FOUND OR cur.state IN ('QUEUED', 'SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RETURN cur.state;
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
