-- A node stopped on purpose, and the service's own log lines (issue 25
-- items 2 and 3).
--
-- STOPPING: the node's agent is leaving in an orderly way (make run's
-- Ctrl-C, a host shut down, an agent's drain). The node takes no new
-- replica; the replicas it stops report LOST with the reason, and restart
-- elsewhere (attempt + 1) as after node loss, the way Google restarts a
-- job's VMs after a maintenance event. The next registration makes it
-- READY again; a node that never comes back is given up as LOST when its
-- lease passes, as any other.
ALTER TABLE nodes DROP CONSTRAINT nodes_state_check;
ALTER TABLE nodes ADD CONSTRAINT nodes_state_check CHECK (state IN ('READY', 'STOPPING', 'LOST'));

-- The service's lines go to the job's log under the task "service", as
-- Google writes its own (job started, replica failed and why, job failed,
-- cancelled, succeeded): entries:list, stream-logs and gcloud's
-- --stream-logs show them beside the replicas' output. Their stream says
-- the severity: 'system' INFO, 'warning' WARNING, 'error' ERROR
-- (store/store_log.c).
--
-- A job's lines: one for each transition of the state machine, written
-- by its one entry point (so every path writes them). A replica's lines:
-- started, exited, failed to start, lost with its node (the agent's sync,
-- store/store_node.c); restarted (tp_restart_lost, schema/015).
CREATE FUNCTION tp_service_line(p_state text, p_cause text, p_error text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_cause = 'place' THEN 'Waiting for the training program to start: '
            'every replica of the job was placed on a node.'
        WHEN p_cause = 'run' THEN 'The job is running: every replica started.'
        WHEN p_cause = 'succeed' THEN 'Job completed successfully.'
        WHEN p_state = 'FAILED' THEN 'Job failed. ' || coalesce(nullif(p_error, ''), '')
        WHEN p_cause = 'cancel' AND p_state = 'CANCELLING' THEN
            'Job cancellation requested: stopping its replicas.'
        WHEN p_state = 'CANCELLED' THEN 'Job cancelled.'
        WHEN p_cause = 'restart' THEN 'The job restarts replicas lost with their nodes.'
        ELSE format('Job is %s.', p_state) END;
$$;

-- 013's entry point, unchanged but for the line each moved job gets.
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
        INSERT INTO log_entries (job, task, attempt, stream, time, text)
        SELECT m.id, 'service', coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = m.id), 1),
               CASE WHEN m.state = 'FAILED' THEN 'error' ELSE 'system' END, clock_timestamp(),
               tp_service_line(m.state, p_cause, m.error_message)
          FROM moved m)
    SELECT * FROM moved;
END $$;
