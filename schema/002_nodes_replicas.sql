-- Nodes (one per agent), the replicas placed on them, and job logs.

CREATE TABLE nodes (
    name            text        PRIMARY KEY,
    incarnation     text        NOT NULL,       -- changes every agent start
    region          text        NOT NULL,
    zone            text        NOT NULL,
    machine_type    text        NOT NULL DEFAULT '',
    vcpus           integer     NOT NULL CHECK (vcpus >= 0),
    memory_mb       bigint      NOT NULL CHECK (memory_mb >= 0),
    address         text        NOT NULL,
    port_lo         integer     NOT NULL,
    port_hi         integer     NOT NULL CHECK (port_hi >= port_lo),
    runtime         text        NOT NULL,
    accel_type      text,                       -- GPU type, NULL without GPUs
    accel_count     integer     NOT NULL DEFAULT 0 CHECK (accel_count BETWEEN 0 AND 64),
    tpu_type        text,                       -- a TPU host: TPU_V2, TPU_V3
    tpu_cores       integer     NOT NULL DEFAULT 0,
    state           text        NOT NULL DEFAULT 'READY' CHECK (state IN ('READY', 'LOST')),
    draining        boolean     NOT NULL DEFAULT false,
    agent_version   text        NOT NULL DEFAULT '',
    desired_version bigint      NOT NULL DEFAULT 1,    -- bumped when its desired set changes
    registered_at   timestamptz NOT NULL DEFAULT now(),
    last_sync       timestamptz NOT NULL DEFAULT now()
);

-- A replica is one task of a job (master 0, worker 3, ...). uid is stable
-- across restarts; attempt counts them. The desired column is what the
-- node's agent is told; state is what it reported.
CREATE TABLE replicas (
    id          bigserial   PRIMARY KEY,
    job         bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    uid         text        NOT NULL UNIQUE,
    role        text        NOT NULL,           -- master, worker, ps, evaluator
    idx         integer     NOT NULL,
    attempt     integer     NOT NULL DEFAULT 1,
    desired     text        NOT NULL DEFAULT 'RUN' CHECK (desired IN ('RUN', 'STOP', 'DONE')),
    state       text        NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'STARTING',
                    'RUNNING', 'EXITED', 'FAILED_TO_START', 'LOST')),
    node        text        REFERENCES nodes (name),
    gpus        integer[]   NOT NULL DEFAULT '{}',
    port        integer,
    spec        jsonb       NOT NULL,           -- image, command, args, env, simulate
    exit_code   integer,
    message     text        NOT NULL DEFAULT '',
    seq         bigint      NOT NULL DEFAULT 0, -- last applied report of this attempt
    start_time  timestamptz,
    end_time    timestamptz,
    -- what the replica takes from its node, for placement snapshots
    vcpus       integer     NOT NULL DEFAULT 0,
    memory_mb   bigint      NOT NULL DEFAULT 0,
    accel_type  text,
    accel_count integer     NOT NULL DEFAULT 0,
    tpu         boolean     NOT NULL DEFAULT false,
    UNIQUE (job, role, idx)
);
CREATE INDEX replicas_node ON replicas (node) WHERE desired <> 'DONE';
CREATE INDEX replicas_job ON replicas (job);

CREATE TABLE log_entries (
    id      bigserial   PRIMARY KEY,
    job     bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    task    text        NOT NULL,               -- master-replica-0, worker-replica-1, ...
    attempt integer     NOT NULL,
    stream  text        NOT NULL,               -- stdout, stderr, system
    time    timestamptz NOT NULL,
    text    text        NOT NULL
);
CREATE INDEX log_entries_job ON log_entries (job, id);

-- What a node should run changed: bump its version and wake its long-poll
-- (pg_notify is delivered at commit, to every server).
CREATE FUNCTION replicas_desired_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.node IS NOT NULL AND OLD.node IS DISTINCT FROM NEW.node THEN
        UPDATE nodes SET desired_version = desired_version + 1 WHERE name = OLD.node;
        PERFORM pg_notify('tp_node', OLD.node);
    END IF;
    IF NEW.node IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.desired IS DISTINCT FROM OLD.desired
            OR NEW.attempt <> OLD.attempt OR NEW.node IS DISTINCT FROM OLD.node) THEN
        UPDATE nodes SET desired_version = desired_version + 1 WHERE name = NEW.node;
        PERFORM pg_notify('tp_node', NEW.node);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER replicas_desired_changed AFTER INSERT OR UPDATE ON replicas
    FOR EACH ROW EXECUTE FUNCTION replicas_desired_changed();

-- The job state machine, in one place: called in the transaction that
-- changed a job's replicas (agent reports, placement, node loss, cancel,
-- timeouts). Rules:
--   CANCELLING: every replica is told to stop; CANCELLED once none runs.
--   a replica failed to start or exited non-zero: FAILED, the rest stop.
--   the primary (master 0 / chief / pool 0 replica 0) exited 0: SUCCEEDED,
--     the rest stop (parameter servers never exit by themselves).
--   PREPARING and every replica running (or done): RUNNING.
-- Stopping a replica that never started needs no agent: it is DONE.
CREATE FUNCTION tp_stop_replicas(j bigint) RETURNS void LANGUAGE sql AS $$
    UPDATE replicas SET desired = CASE
            WHEN state IN ('EXITED', 'FAILED_TO_START', 'LOST') OR node IS NULL THEN 'DONE'
            ELSE 'STOP' END
        WHERE job = j AND desired = 'RUN';
$$;

CREATE FUNCTION tp_reconcile_job(j bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    cur  jobs%ROWTYPE;
    bad  replicas%ROWTYPE;
    prim replicas%ROWTYPE;
    units double precision;
BEGIN
    SELECT * INTO cur FROM jobs WHERE id = j FOR UPDATE;
    IF NOT FOUND OR cur.state IN ('QUEUED', 'SUCCEEDED', 'FAILED', 'CANCELLED') THEN
        RETURN cur.state;
    END IF;
    -- ML units: (vCPUs / 8 + accelerators) per replica-hour of run time.
    SELECT coalesce(sum(extract(epoch FROM (coalesce(end_time, now()) - start_time)) / 3600.0
                        * (vcpus / 8.0 + accel_count)), 0)
        INTO units FROM replicas WHERE job = j AND start_time IS NOT NULL;
    IF cur.state = 'CANCELLING' THEN
        PERFORM tp_stop_replicas(j);
        IF NOT EXISTS (SELECT 1 FROM replicas WHERE job = j AND desired = 'STOP'
                       AND state IN ('PENDING', 'STARTING', 'RUNNING')) THEN
            UPDATE replicas SET desired = 'DONE' WHERE job = j AND desired <> 'DONE';
            UPDATE jobs SET state = 'CANCELLED', end_time = now(),
                output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
                WHERE id = j;
            RETURN 'CANCELLED';
        END IF;
        RETURN cur.state;
    END IF;
    SELECT * INTO bad FROM replicas WHERE job = j
        AND (state = 'FAILED_TO_START' OR (state = 'EXITED' AND exit_code <> 0))
        ORDER BY end_time NULLS LAST, id LIMIT 1;
    IF FOUND THEN
        PERFORM tp_stop_replicas(j);
        UPDATE jobs SET state = 'FAILED', end_time = now(),
            error_message = CASE WHEN bad.state = 'FAILED_TO_START'
                THEN format('The replica %s %s could not be started: %s', bad.role, bad.idx, bad.message)
                ELSE format('The replica %s %s exited with a non-zero status of %s.', bad.role, bad.idx, bad.exit_code) END,
            output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
            WHERE id = j;
        RETURN 'FAILED';
    END IF;
    SELECT * INTO prim FROM replicas WHERE job = j ORDER BY (role NOT IN ('master', 'chief', 'pool0')), idx, id LIMIT 1;
    IF FOUND AND prim.state = 'EXITED' AND prim.exit_code = 0 THEN
        PERFORM tp_stop_replicas(j);
        UPDATE jobs SET state = 'SUCCEEDED', end_time = now(),
            start_time = coalesce(start_time, prim.start_time, now()),
            output = output || jsonb_build_object('consumedMLUnits', round(units::numeric, 2))
            WHERE id = j;
        RETURN 'SUCCEEDED';
    END IF;
    IF cur.state = 'PREPARING' AND NOT EXISTS (SELECT 1 FROM replicas WHERE job = j
            AND state NOT IN ('RUNNING', 'EXITED')) THEN
        UPDATE jobs SET state = 'RUNNING', start_time = now() WHERE id = j;
        RETURN 'RUNNING';
    END IF;
    RETURN cur.state;
END $$;

-- Wake the scheduler leader when a job is created or cancelled.
CREATE FUNCTION jobs_wake_scheduler() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tp_sched', '');
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_wake_scheduler AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_wake_scheduler();
