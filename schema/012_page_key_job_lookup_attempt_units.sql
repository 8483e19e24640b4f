-- Issue 12: a lookup by job id that needs no statistics (item 10).

-- jobs.get, cancel and patch find a job by (api, project, job_id), the
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
