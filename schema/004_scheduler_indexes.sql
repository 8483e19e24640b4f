-- What the scheduler scans every pass, indexed, so that its cost follows
-- the work to do rather than the number of jobs waiting.

-- scheduling.priority as a column: the queue's order can use an index.
ALTER TABLE jobs ADD COLUMN priority integer NOT NULL DEFAULT 0;
UPDATE jobs SET priority = (spec->'scheduling'->>'priority')::int
    WHERE spec->'scheduling' ? 'priority';

-- The queue in placement order (full passes), and new jobs by id (partial passes).
CREATE INDEX jobs_queued_order ON jobs (priority DESC, id) WHERE state = 'QUEUED';
CREATE INDEX jobs_queued_id ON jobs (id) WHERE state = 'QUEUED';
-- Jobs being cancelled, and jobs with time limits to enforce.
CREATE INDEX jobs_cancelling ON jobs (id) WHERE state = 'CANCELLING';
CREATE INDEX jobs_time_limited ON jobs (id)
    WHERE state IN ('QUEUED', 'PREPARING', 'RUNNING') AND spec ? 'scheduling';
