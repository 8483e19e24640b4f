-- The emulator's clock (docs/emulator.md, "The clock"). Job time is read
-- through tp_now(): emulated time, which is now() itself until an emulator
-- advances the clock or changes its speed:
--   tp_now() = base_emu + (now() - base_real) * speed
-- Job and replica timestamps, the timers judged on them (maxRunningTime,
-- maxWaitTime, Vertex scheduling.timeout), the queue's waits and the log's
-- lines use it. Node leases and liveness stay on now(): a real agent is a
-- real process that cannot be sped up (at speed 60 its 10-second sync would
-- be ten emulated minutes, and every real node would be LOST).
--
-- The server's statements write the clock out (store/store_pg.h, TP_NOW:
-- planned once with them); tp_now() stands in defaults and functions, in
-- PL/pgSQL since 024 (a SQL function reading a table is planned at every call).

CREATE TABLE emulator_clock (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    base_real timestamptz NOT NULL DEFAULT now(),
    base_emu  timestamptz NOT NULL DEFAULT now(),
    speed     float8 NOT NULL DEFAULT 1 CHECK (speed > 0 AND speed <= 1000000)
);
INSERT INTO emulator_clock DEFAULT VALUES;

CREATE FUNCTION tp_now() RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT c.base_emu + (now() - c.base_real) * c.speed FROM emulator_clock c
$$;

-- A real instant (an agent's report, clock_timestamp()) on the emulator's clock.
CREATE FUNCTION tp_at(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT c.base_emu + (t - c.base_real) * c.speed FROM emulator_clock c
$$;

ALTER TABLE jobs ALTER COLUMN create_time SET DEFAULT tp_now();
ALTER TABLE jobs ALTER COLUMN update_time SET DEFAULT tp_now();
ALTER TABLE vertex_operations ALTER COLUMN create_time SET DEFAULT tp_now();

-- The functions that stamp job time, as their latest migration left them,
-- with tp_now() (and tp_at(clock_timestamp()) for log lines) for now().

-- from schema/001_jobs.sql
CREATE OR REPLACE FUNCTION jobs_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := nextval('jobs_version_seq');
    NEW.update_time := tp_now();
    RETURN NEW;
END $$;

-- from schema/013_job_state_machine.sql
CREATE OR REPLACE FUNCTION jobs_state_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM job_state_edges
                       WHERE from_state = 'STATE_UNSPECIFIED' AND to_state = NEW.state) THEN
            RAISE EXCEPTION 'a job cannot be created %: no edge of the job state machine '
                'leads there (job_state_edges)', NEW.state
                USING ERRCODE = 'check_violation', CONSTRAINT = 'job_state_edges', TABLE = 'jobs';
        END IF;
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM job_state_edges
                   WHERE from_state = OLD.state AND to_state = NEW.state) THEN
        RAISE EXCEPTION 'job % cannot go from % to %: no edge of the job state machine '
            'joins them (job_state_edges)', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation', CONSTRAINT = 'job_state_edges', TABLE = 'jobs';
    END IF;
    NEW.restarting := false;
    IF NEW.state = OLD.state THEN
        RETURN NEW;	-- a restart: the job stays where it is
    END IF;
    IF NEW.state = 'RUNNING' THEN
        NEW.start_time := coalesce(NEW.start_time, tp_now());
    ELSIF NEW.state = 'CANCELLING' THEN
        NEW.cancel_requested := true;
    ELSIF NEW.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        NEW.end_time := coalesce(NEW.end_time, tp_now());
        IF NEW.state = 'SUCCEEDED' THEN
            NEW.start_time := coalesce(NEW.start_time,
                (SELECT p.start_time FROM replicas p WHERE p.job = NEW.id
                  ORDER BY (p.role NOT IN ('master', 'chief', 'pool0')), p.idx, p.id LIMIT 1),
                tp_now());
        ELSIF NEW.state = 'CANCELLED' THEN
            NEW.cancel_requested := true;
        END IF;
        IF OLD.state <> 'QUEUED' THEN
            NEW.output := NEW.output || jsonb_build_object('consumedMLUnits',
                round(tp_job_ml_units(NEW.id)::numeric, 2));
            IF NEW.state = 'CANCELLED' THEN
                UPDATE replicas SET desired = 'DONE' WHERE job = NEW.id AND desired <> 'DONE';
            ELSE
                PERFORM tp_stop_replicas(NEW.id);
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END $$;

-- from schema/012_page_key_job_lookup_attempt_units.sql
CREATE OR REPLACE FUNCTION replicas_keep_run_time() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.start_time IS NOT NULL THEN
        NEW.earlier_run_seconds := OLD.earlier_run_seconds
            + greatest(extract(epoch FROM (coalesce(OLD.end_time, tp_now()) - OLD.start_time)), 0);
    END IF;
    RETURN NEW;
END $$;

-- from schema/015_lock_order.sql
CREATE OR REPLACE FUNCTION tp_expire_nodes(p_lease int, p_margin int, OUT lost bigint, OUT gone bigint)
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
         g AS (UPDATE replicas SET state = 'LOST', end_time = tp_now(),
                   desired = CASE WHEN desired = 'STOP' THEN 'DONE' ELSE desired END
                WHERE node IN (SELECT name FROM l) AND desired <> 'DONE'
                  AND state IN ('PENDING', 'STARTING', 'RUNNING') RETURNING 1)
    SELECT (SELECT count(*) FROM l), (SELECT count(*) FROM g) INTO lost, gone;
END $$;

-- from schema/012_page_key_job_lookup_attempt_units.sql
CREATE OR REPLACE FUNCTION tp_job_ml_units(j bigint) RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum((earlier_run_seconds + CASE WHEN start_time IS NULL THEN 0
                           ELSE extract(epoch FROM (coalesce(end_time, tp_now()) - start_time)) END)
                        / 3600.0 * (vcpus / 8.0 + accel_count)), 0)
        FROM replicas WHERE job = j;
$$;

-- from schema/020_study_cancel_trial_lines.sql
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
        INSERT INTO log_entries (job, task, attempt, stream, time, text, trial)
        SELECT coalesce(m.parent, m.id), 'service',
               coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = m.id), 1),
               CASE WHEN m.state = 'FAILED' THEN 'error' ELSE 'system' END, tp_at(clock_timestamp()),
               CASE WHEN m.parent IS NULL THEN tp_service_line(m.state, p_cause, m.error_message)
                    ELSE format('Trial %s: %s', m.trial,
                                tp_service_line(m.state, p_cause, m.error_message)) END,
               m.trial
          FROM moved m)
    SELECT * FROM moved;
END $$;

-- from schema/015_lock_order.sql
CREATE OR REPLACE FUNCTION tp_restart_lost() RETURNS bigint LANGUAGE plpgsql AS $$
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
                    SELECT upd.job, 'service', upd.attempt, 'warning', tp_at(clock_timestamp()),
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
