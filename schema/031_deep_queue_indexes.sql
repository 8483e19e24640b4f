-- The sweep that fails FLEX_START jobs past their maxWaitDuration
-- (store_sched.c, sched_vertex_timeouts) runs every scheduler tick: with a
-- deep queue it read every queued job's spec to find the few FLEX_START ones.
-- They are indexed now, by the strategy column of schema/025.
CREATE INDEX jobs_flex_queued ON jobs (id) WHERE state = 'QUEUED' AND strategy = 'FLEX_START';

-- The study pass's read of the active studies (store_study.c, study_active),
-- every pass: with a deep queue the jobs_active_studies index (every study,
-- ended ones too) lost to a scan of the active jobs.
CREATE INDEX jobs_studies_active ON jobs (id) WHERE study AND state IN ('QUEUED', 'PREPARING',
    'RUNNING', 'CANCELLING');
