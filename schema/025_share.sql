-- Sharing the cluster (issue 28): preemption, quotas' classes, and why a
-- job waits. The policy itself is the scheduler's (scheduler/policy.h);
-- the database keeps what it decides.

-- The preempt edge (spec/job_state.c): a placed job whose resources a job
-- that outranks it takes goes back to the queue; its replicas stop, and
-- the next placement starts them again with attempt + 1.
INSERT INTO job_state_edges (from_state, cause, to_state) VALUES
    ('PREPARING', 'preempt', 'QUEUED'),
    ('RUNNING', 'preempt', 'QUEUED');

-- Vertex's scheduling.strategy (ml v1 has none): SPOT jobs are
-- preemptible, SPOT and FLEX_START count against the preemptible quotas.
ALTER TABLE jobs ADD COLUMN strategy text GENERATED ALWAYS AS
    (coalesce(spec #>> '{jobSpec,scheduling,strategy}', spec #>> '{scheduling,strategy}', ''))
    STORED;
-- How often the job was preempted: Google restarts a SPOT job up to six times.
ALTER TABLE jobs ADD COLUMN preemptions integer NOT NULL DEFAULT 0;

-- Why each queued job waits, as the scheduler last saw it: code
-- (capacity, never_fits, quota, reserved, preempting; jobs an emulator rule holds, and
-- jobs of regions without a node, get their log line elsewhere and no row)
-- and the sentence its log got when the reason changed.
CREATE TABLE job_queue_reasons (
    job   bigint      PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    code  text        NOT NULL,
    text  text        NOT NULL,
    since timestamptz NOT NULL
);

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
        WHEN p_state = 'CANCELLED' THEN 'Job cancelled.'
        WHEN p_cause = 'restart' THEN 'The job restarts replicas lost with their nodes.'
        WHEN p_cause = 'preempt' THEN 'The job was preempted: its replicas stop, and it '
            'waits in the queue to start again.'
        ELSE format('Job is %s.', p_state) END;
$$;

-- Preempts jobs: p_texts[i] says by whom, for the victim's log. A job
-- still placed goes back to QUEUED (its replicas told to stop), unless it
-- was preempted p_max times already: then it fails, as a SPOT job does
-- after Google's six restarts. Locks as every sweep does (schema/015):
-- the jobs, then their nodes (stopping replicas bumps their nodes).
CREATE FUNCTION tp_preempt_jobs(p_jobs bigint[], p_texts text[], p_max int)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    out_of bigint[];
    moved bigint[];
BEGIN
    PERFORM tp_lock_jobs(p_jobs, NULL, true);
    SELECT array_agg(id) INTO out_of FROM jobs
     WHERE id = ANY (p_jobs) AND state IN ('PREPARING', 'RUNNING') AND preemptions >= p_max;
    PERFORM tp_job_transition(out_of, 'FAILED', 'fail',
        ARRAY(SELECT format('STOCKOUT: the job''s resources were preempted %s times, and it '
                            'is not restarted again.', p_max + 1) FROM unnest(out_of)));
    moved := ARRAY(SELECT j.id FROM tp_job_transition(
                     ARRAY(SELECT j.id FROM jobs j WHERE j.id = ANY (p_jobs)
                            AND j.state IN ('PREPARING', 'RUNNING')
                            AND NOT (j.id = ANY (coalesce(out_of, '{}')))),
                     'QUEUED', 'preempt') j);
    UPDATE jobs SET preemptions = preemptions + 1 WHERE id = ANY (moved);
    UPDATE replicas p SET desired = CASE
            WHEN p.state IN ('EXITED', 'FAILED_TO_START', 'LOST') OR p.node IS NULL
            THEN 'DONE' ELSE 'STOP' END
     WHERE p.job = ANY (moved) AND p.desired = 'RUN';
    INSERT INTO log_entries (job, task, attempt, stream, time, text, trial)
    SELECT coalesce(j.parent, j.id), 'service',
           coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = j.id), 1),
           'warning', tp_at(clock_timestamp()),
           CASE WHEN j.parent IS NULL THEN '' ELSE format('Trial %s: ', j.trial) END
           || format('%s (preemption %s; after %s, a preempted job fails).',
                     x.text, j.preemptions, p_max),
           j.trial
      FROM unnest(p_jobs, p_texts) AS x(id, text) JOIN jobs j ON j.id = x.id
     WHERE j.id = ANY (moved);
    RETURN coalesce(cardinality(moved), 0) + coalesce(cardinality(out_of), 0);
END $$;
