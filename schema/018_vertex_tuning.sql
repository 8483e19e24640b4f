-- Vertex hyperparameterTuningJobs (issue 26): a tuning job is a study as
-- an ml v1 job with hyperparameters is (schema/017): a Vertex job whose
-- stored spec has a studySpec runs no replica itself, and its trials are
-- CustomJobs of their own, children of it, each with a numeric id (its
-- row id, as every CustomJob has) that Trial.customJob names.
--
-- `study` is generated: PostgreSQL 15 cannot change a generated column's
-- expression, so it is made again, with the index and the trigger that
-- depend on it.
DROP TRIGGER jobs_study_cascade ON jobs;
DROP INDEX jobs_active_studies;
ALTER TABLE jobs DROP COLUMN study;
ALTER TABLE jobs ADD COLUMN study boolean GENERATED ALWAYS AS
    (parent IS NULL AND ((api = 'ml' AND spec ? 'hyperparameters') OR
                         (api = 'vertex' AND spec ? 'studySpec'))) STORED;
CREATE INDEX jobs_active_studies ON jobs (id) WHERE study
    AND state IN ('QUEUED', 'PREPARING', 'RUNNING', 'CANCELLING');
CREATE TRIGGER jobs_study_cascade AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.study AND NEW.state IN ('CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tp_study_cascade();

-- One row per trial of a study, whatever its job_id: two leaders that
-- suggest the same trial number at once cannot both add it (the second
-- insert conflicts, and its pass sees the first's trial next time).
DROP INDEX jobs_parent;
CREATE UNIQUE INDEX jobs_parent_trial ON jobs (parent, trial) WHERE parent IS NOT NULL;
