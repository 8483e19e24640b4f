-- A tuning study is QUEUED until one of its trials is placed (the study
-- pass, scheduler/study.c, moves it on at its next pass), so a cancel can
-- find it QUEUED while its trials run. The cancel edge took it straight to
-- CANCELLED: its output never got its trials, and it said CANCELLED while
-- its trials were still being stopped. Now a QUEUED study with a trial
-- placed (PREPARING or RUNNING) takes the cancel_trials edge to
-- CANCELLING, as it does from PREPARING: its trials are cancelled
-- (schema/017's cascade), and the study pass ends it CANCELLED once they
-- have stopped, with their last states in its output. A study whose trials
-- all wait unplaced, like any QUEUED job, is CANCELLED at once: nothing
-- runs, and its trials are CANCELLED with it.
-- spec/job_state.c has the edge too.

INSERT INTO job_state_edges (from_state, cause, to_state) VALUES
    ('QUEUED', 'cancel_trials', 'CANCELLING');

-- A study's cancellation stops trials, not replicas.
CREATE OR REPLACE FUNCTION tp_service_line(p_state text, p_cause text, p_error text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_cause = 'place' THEN 'Waiting for the training program to start: '
            'every replica of the job was placed on a node.'
        WHEN p_cause = 'run' THEN 'The job is running: every replica started.'
        WHEN p_cause = 'succeed' THEN 'Job completed successfully.'
        WHEN p_state = 'FAILED' THEN 'Job failed. ' || coalesce(nullif(p_error, ''), '')
        WHEN p_cause = 'cancel' AND p_state = 'CANCELLING' THEN
            'Job cancellation requested: stopping its replicas.'
        WHEN p_cause = 'cancel_trials' THEN 'Job cancellation requested: stopping its trials.'
        WHEN p_state = 'CANCELLED' THEN 'Job cancelled.'
        WHEN p_cause = 'restart' THEN 'The job restarts replicas lost with their nodes.'
        WHEN p_cause = 'preempt' THEN 'The job was preempted: its replicas stop, and it '
            'waits in the queue to start again.'
        ELSE format('Job is %s.', p_state) END;
$$;

-- 022's entry point; "cancel" of a QUEUED study with a trial placed takes
-- cancel_trials (p_to NULL: the edge decides; callers that name the
-- target get exactly it, as before).
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
                              WHERE e.from_state = j.state AND e.cause =
                                CASE WHEN p_cause = 'cancel' AND j.study AND j.state = 'QUEUED'
                                      AND EXISTS (SELECT 1 FROM jobs c WHERE c.parent = j.id
                                                  AND c.state IN ('PREPARING', 'RUNNING'))
                                     THEN 'cancel_trials' ELSE p_cause END)),
                          error_message = coalesce(m.message, j.error_message)
          FROM unnest(p_jobs, p_messages) AS m(id, message)
         WHERE j.id = m.id AND j.state = ANY (froms)
        RETURNING j.*),
    logged AS (
        INSERT INTO log_entries (job, task, attempt, stream, time, text, trial)
        SELECT coalesce(m.parent, m.id), 'service',
               coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = m.id), 1),
               CASE WHEN m.state = 'FAILED' THEN 'error' ELSE 'system' END, tp_at(clock_timestamp()),
               CASE WHEN m.parent IS NULL THEN tp_service_line(m.state,
                        CASE WHEN m.study AND m.state = 'CANCELLING' THEN 'cancel_trials'
                             ELSE p_cause END, m.error_message)
                    ELSE format('Trial %s: %s', m.trial,
                                tp_service_line(m.state, p_cause, m.error_message)) END,
               m.trial
          FROM moved m)
    SELECT * FROM moved;
END $$;
