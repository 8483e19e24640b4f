-- A trial's measurements are its current attempt's (issue 26). A replica
-- row holds its current attempt only: a restart (attempt + 1, the restart
-- of a lost replica in tp_restart_lost, the gang restart of
-- tp_reconcile_job, and any later one) clears its seq, exit code, message
-- and times, but schema/017's metrics stayed: until the new attempt's
-- trainer reported, the study showed the lost attempt's last measurement
-- as the trial's finalMetric, early stopping judged the trial on a run that
-- was gone, and a new attempt that succeeded without reporting took the
-- lost one's objective. The new attempt's trainer starts a new metric file
-- (a fresh replica folder): its measurements start empty too.
CREATE FUNCTION replicas_new_attempt_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.metrics := '[]';
    RETURN NEW;
END $$;

CREATE TRIGGER replicas_new_attempt_metrics BEFORE UPDATE OF attempt ON replicas
    FOR EACH ROW WHEN (NEW.attempt IS DISTINCT FROM OLD.attempt AND OLD.metrics <> '[]')
    EXECUTE FUNCTION replicas_new_attempt_metrics();
