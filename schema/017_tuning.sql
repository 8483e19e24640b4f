-- Hyperparameter tuning, ml v1 (issue 26): a tuning job is a study, and
-- each trial is a job of its own, a child of the study's: the whole gang
-- of the study's spec with the trial's values as flags, placed, run,
-- restarted and ended like any job, through the same state machine
-- (docs/tuning.md). The scheduler's study pass (scheduler/study.c)
-- suggests trials, moves the study, and writes its trainingOutput.
--
--   parent        the study a trial belongs to (NULL: a job, or a study)
--   trial         the trial's number in its study: 1, 2, ...
--   trial_params  the trial's values, [[name, value as Google writes it], ...]
--   stopped_early the study stopped the trial by the median stopping rule
--                 (enableTrialEarlyStopping): cancelled, its last measurement
--                 its final one
--   study         a job that is a study: ml v1 with
--                 trainingInput.hyperparameters (an ml job's spec is its
--                 TrainingInput); it runs no replica itself
-- A trial's job_id is "<study's job_id>/trials/<n>": no API id has a "/",
-- so no API call names a trial, and lists leave them out.
ALTER TABLE jobs ADD COLUMN parent bigint REFERENCES jobs (id) ON DELETE CASCADE,
                 ADD COLUMN trial integer,
                 ADD COLUMN trial_params jsonb,
                 ADD COLUMN stopped_early boolean NOT NULL DEFAULT false,
                 ADD COLUMN study boolean GENERATED ALWAYS AS
                     (api = 'ml' AND parent IS NULL AND spec ? 'hyperparameters') STORED;
CREATE INDEX jobs_parent ON jobs (parent, trial) WHERE parent IS NOT NULL;
CREATE INDEX jobs_active_studies ON jobs (id) WHERE study
    AND state IN ('QUEUED', 'PREPARING', 'RUNNING', 'CANCELLING');

-- What the trainer of a trial reported through its metric file
-- (CLOUD_ML_HP_METRIC_FILE, read by the agent): [{"step", "value"}], the
-- last 100, oldest first, as the agent last sent them.
ALTER TABLE replicas ADD COLUMN metrics jsonb NOT NULL DEFAULT '[]';

-- A trial's replicas write their lines (their output, and the service's
-- lines about them) into the study's log, each with its trial, so that
-- stream-logs of the study shows every trial, told apart by
-- labels."ml.googleapis.com/trial_id".
ALTER TABLE log_entries ADD COLUMN trial integer;

-- A study that ends or is being cancelled cancels its trials that are
-- still queued or running (the state machine's cancel edge: QUEUED ->
-- CANCELLED, PREPARING / RUNNING -> CANCELLING). Trials are created after
-- their study, so their ids are higher: the lock order (schema/015) holds.
CREATE FUNCTION tp_study_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM tp_job_transition(ARRAY(SELECT id FROM jobs WHERE parent = NEW.id
                                             AND state IN ('QUEUED', 'PREPARING', 'RUNNING')
                                           ORDER BY id), NULL, 'cancel');
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_study_cascade AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.study AND NEW.state IN ('CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tp_study_cascade();
