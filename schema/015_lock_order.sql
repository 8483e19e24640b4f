-- One lock order (issue 25 item 1; spec/job_state.h, "Locks").
--
-- Every transaction that changes replicas or moves a job takes its row
-- locks up front, in one order: the jobs it may touch, by id, then the
-- nodes whose rows it may write (its own, and those of the jobs'
-- replicas where a replica elsewhere may be stopped, restarted or placed:
-- the replica trigger bumps a node's desired_version), by name. After
-- that step it waits on no other transaction, so no wait cycle can form:
-- a transaction waits only in its lock step, and only on rows later in
-- the order than every row it holds.
--
-- Before, an agent's sync locked its node's row (the lease), then its
-- replicas, then the job (tp_reconcile_job); a job that failed stopped its
-- replicas on the other nodes, whose rows the trigger then updated. Two
-- nodes reporting one job's failure at the same instant deadlocked
-- (40P01): one held its node and waited for the job, the other held the
-- job and waited for the first node's row (or for a replica row it had
-- locked).
--
-- Who takes what (store/):
--   agent sync with reports   its jobs; its node, and every node of those
--                             jobs when a report ends a replica (EXITED,
--                             FAILED_TO_START, LOST) or a job is CANCELLING
--                             or restarting (the reconcile may stop or
--                             restart replicas there)
--   agent sync, no reports    its node only (the lease)
--   agent register            the jobs of its live replicas; its node
--   placement commit          the placed jobs; the nodes they go to
--   a restarted replica moved its job; its new node
--   housekeeping              each sweep on its own: the jobs it acts on
--                             and every node of them (tp_lock_jobs(.., true))
-- Replica rows need no entry: a replica is written only by a holder of its
-- job's lock.

-- Locks p_jobs (by id), then p_nodes and, where p_job_nodes (or where the
-- job is CANCELLING or restarting: its reconcile stops or moves replicas),
-- the nodes of those jobs' replicas (by name). The nodes are chosen after
-- the jobs are locked, so that they are the jobs' current ones.
CREATE FUNCTION tp_lock_jobs(p_jobs bigint[], p_nodes text[], p_job_nodes boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_jobs), 0) > 0 THEN
        PERFORM 1 FROM jobs WHERE id = ANY (p_jobs) ORDER BY id FOR UPDATE;
    END IF;
    PERFORM 1 FROM nodes n
     WHERE n.name = ANY (coalesce(p_nodes, '{}'))
        OR (coalesce(cardinality(p_jobs), 0) > 0 AND n.name IN (
            SELECT p.node FROM replicas p JOIN jobs j ON j.id = p.job
             WHERE p.job = ANY (p_jobs) AND p.node IS NOT NULL
               AND (p_job_nodes OR j.state = 'CANCELLING' OR j.restarting)))
     ORDER BY n.name FOR NO KEY UPDATE;
END $$;

-- Housekeeping, one sweep per transaction (store_sched_housekeeping):
-- each chooses its jobs without locks, locks them and their nodes, then
-- acts on those alone, its conditions checked again under the locks.

-- Nodes whose lease and stop grace passed are LOST; their replicas too
-- (those being stopped are done with their node; the others restart). A
-- node whose agent is stopping (schema/016) is given up the same way.
CREATE FUNCTION tp_expire_nodes(p_lease int, p_margin int, OUT lost bigint, OUT gone bigint)
LANGUAGE plpgsql AS $$
DECLARE
    cands text[];
BEGIN
    lost := 0;
    gone := 0;
    SELECT array_agg(name) INTO cands FROM nodes
     WHERE state IN ('READY', 'STOPPING')
       AND last_sync < now() - make_interval(secs => coalesce(lease_s, p_lease))
           - make_interval(secs => stop_grace_s + p_margin);
    IF cands IS NULL THEN
        RETURN;
    END IF;
    PERFORM tp_lock_jobs(ARRAY(SELECT DISTINCT job FROM replicas WHERE node = ANY (cands)
                                AND desired <> 'DONE' AND state IN ('PENDING', 'STARTING', 'RUNNING')),
                         cands);
    WITH l AS (UPDATE nodes SET state = 'LOST' WHERE name = ANY (cands) AND state IN ('READY', 'STOPPING')
                 AND last_sync < now() - make_interval(secs => coalesce(lease_s, p_lease))
                     - make_interval(secs => stop_grace_s + p_margin)
               RETURNING name),
         g AS (UPDATE replicas SET state = 'LOST', end_time = now(),
                   desired = CASE WHEN desired = 'STOP' THEN 'DONE' ELSE desired END
                WHERE node IN (SELECT name FROM l) AND desired <> 'DONE'
                  AND state IN ('PENDING', 'STARTING', 'RUNNING') RETURNING 1)
    SELECT (SELECT count(*) FROM l), (SELECT count(*) FROM g) INTO lost, gone;
END $$;

-- Reconciles p_jobs (the Vertex jobs with lost replicas, the jobs being
-- cancelled): locked first, with every node of theirs.
CREATE FUNCTION tp_reconcile_jobs(p_jobs bigint[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    j bigint;
    n bigint := 0;
BEGIN
    PERFORM tp_lock_jobs(p_jobs, NULL, true);
    FOR j IN SELECT DISTINCT x FROM unnest(p_jobs) x ORDER BY x LOOP
        PERFORM tp_reconcile_job(j);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

-- Any other lost replica of a running job starts again elsewhere: attempt
-- + 1, through the state machine's restart edge (a job that has none from
-- its state, CANCELLING, restarts nothing), with a line in the job's log
-- for each (schema/016, "The service's lines"): which replica, its new
-- attempt, and why (the agent's reason, or its node's silence). Returns
-- the replicas restarted.
CREATE FUNCTION tp_restart_lost() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    cands bigint[];
    n bigint;
BEGIN
    SELECT array_agg(DISTINCT p.job) INTO cands FROM replicas p JOIN jobs j ON j.id = p.job
     WHERE p.state = 'LOST' AND p.desired = 'RUN' AND NOT j.restarting;
    IF cands IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM tp_lock_jobs(cands, NULL, true);
    WITH lost AS (SELECT DISTINCT p.job FROM replicas p JOIN jobs j ON j.id = p.job
                   WHERE p.job = ANY (cands) AND p.state = 'LOST' AND p.desired = 'RUN'
                     AND NOT j.restarting),
         moved AS (SELECT m.id, m.api FROM tp_job_transition(ARRAY(SELECT job FROM lost), NULL, 'restart') m),
         was AS MATERIALIZED (SELECT p.id, p.node, p.message FROM replicas p JOIN moved ON p.job = moved.id
                               WHERE p.state = 'LOST' AND p.desired = 'RUN'),
         upd AS (UPDATE replicas p SET attempt = p.attempt + 1, state = 'PENDING', node = NULL,
                     gpus = '{}', port = NULL, seq = 0, exit_code = NULL, message = '',
                     start_time = NULL, end_time = NULL
                   FROM moved WHERE p.job = moved.id AND p.state = 'LOST' AND p.desired = 'RUN'
                 RETURNING p.id, p.job, p.role, p.idx, p.attempt, moved.api),
         logged AS (INSERT INTO log_entries (job, task, attempt, stream, time, text)
                    SELECT upd.job, 'service', upd.attempt, 'warning', clock_timestamp(),
                           format('The replica %s restarts (attempt %s): %s. It starts again as soon '
                                  'as a node has room for it.', tp_replica_label(upd.api, upd.role, upd.idx),
                                  upd.attempt,
                                  CASE WHEN was.message <> '' THEN format('it was stopped with its node %s (%s)',
                                                                          was.node, was.message)
                                       ELSE format('its node %s stopped reporting', was.node) END)
                      FROM upd JOIN was ON was.id = upd.id)
    SELECT count(*) INTO n FROM upd;
    RETURN n;
END $$;

-- Fails p_jobs that are still in p_states (their time limit passed), each
-- with its message, through the state machine's timeout edge.
CREATE FUNCTION tp_fail_timed_out(p_jobs bigint[], p_states text[], p_messages text[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF coalesce(cardinality(p_jobs), 0) = 0 THEN
        RETURN 0;
    END IF;
    PERFORM tp_lock_jobs(p_jobs, NULL, true);
    WITH t AS (SELECT x.id, x.message FROM unnest(p_jobs, p_states, p_messages) AS x(id, state, message)
                 JOIN jobs j ON j.id = x.id AND j.state = x.state),
         a AS (SELECT array_agg(id) AS ids, array_agg(message) AS messages FROM t)
    SELECT count(*) INTO n FROM a, tp_job_transition(a.ids, 'FAILED', 'timeout', a.messages);
    RETURN n;
END $$;
