-- The Slurm backend (issue 29, docs/slurm.md): a region or zone served by
-- an existing Slurm cluster. Each job of such a region is one Slurm job; its
-- batch step starts one pilot agent per replica (srun), the pilots register
-- as nodes of the job alone, and the scheduler places the job's replicas on
-- them as on any node.

-- A job's Slurm side: the Slurm job, what Slurm last said of it, and the
-- pilots it is to start. The reconciler (scheduler/slurm_backend.c, on the
-- leader) writes it; the agent routes read it to admit a pilot.
CREATE TABLE slurm_jobs (
    job          bigint      PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    backend      text        NOT NULL,              -- the name of its slurm_file backend
    slurm_id     bigint,                            -- NULL until Slurm answered the submit
    -- new: claimed, not yet submitted (or the submit's answer was lost);
    -- then Slurm's job_state as last seen (PENDING, RUNNING, COMPLETED, ...)
    state        text        NOT NULL DEFAULT 'new',
    reason       text        NOT NULL DEFAULT '',   -- Slurm's state_reason
    restart_cnt  integer     NOT NULL DEFAULT 0,    -- Slurm's requeues so far: the pilots' generation
    -- one pilot per replica: slots[i] = {"group", "task", "vcpus", "memoryMb",
    -- "accelType", "accelCount"} of the replica the pilot of (group, task) holds
    slots        jsonb       NOT NULL,
    token_hash   bytea       NOT NULL,              -- SHA-256 of the pilots' secret
    cancel_sent  boolean     NOT NULL DEFAULT false,    -- a DELETE went to Slurm
    final_seen   timestamptz,                       -- Slurm first said final (a grace for the last reports)
    done         boolean     NOT NULL DEFAULT false,    -- both sides final: nothing left to do
    submitted_at timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX slurm_jobs_active ON slurm_jobs (backend) WHERE NOT done;
CREATE UNIQUE INDEX slurm_jobs_slurm_id ON slurm_jobs (backend, slurm_id);

-- The pilots that registered: each is a node row of its own (name
-- slurm-<job>-r<restart>-g<group>-t<task>), in region slurm-<job>, which no
-- other job's region is: only its job is ever placed there.
CREATE TABLE slurm_pilots (
    node         text        PRIMARY KEY,
    job          bigint      NOT NULL REFERENCES slurm_jobs (job) ON DELETE CASCADE,
    restart_cnt  integer     NOT NULL,
    slot         integer     NOT NULL
);
CREATE INDEX slurm_pilots_job ON slurm_pilots (job, restart_cnt);

-- The backend cause: the cluster behind a region (Slurm) ended the job
-- before its replicas did (a time limit, a lost node, a cancel by the
-- cluster's administrator, a purged record). spec/job_state.c has it too.
INSERT INTO job_state_edges (from_state, cause, to_state) VALUES
    ('QUEUED', 'backend', 'FAILED'),
    ('PREPARING', 'backend', 'FAILED'),
    ('RUNNING', 'backend', 'FAILED');

-- Fails a job for its backend, as tp_fail_timed_out does for timers: locks
-- the job then its nodes (schema/015's order), then takes the backend edge
-- if the job is still QUEUED, PREPARING or RUNNING. Returns whether it did.
CREATE FUNCTION tp_backend_fail(p_job bigint, p_message text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM tp_lock_jobs(ARRAY[p_job], NULL, true);
    RETURN EXISTS (SELECT 1 FROM tp_job_transition(ARRAY[p_job], 'FAILED', 'backend',
                                                   ARRAY[p_message]));
END $$;

-- Slurm requeued the job (a lost node, a preemption): Slurm restarts the
-- whole job, so its replicas restart as a gang (schema/007's restarting),
-- attempt + 1, on the pilots of the new run. The pilots of older runs take
-- no new replica (drained) and are told to stop theirs; they may still
-- report (their tokens still sync), and the gang restarts once none of its
-- replicas runs: when those pilots said their replicas stopped, or when
-- their nodes' leases passed. Never two copies at once. Returns whether
-- the generation moved.
CREATE FUNCTION tp_slurm_requeued(p_job bigint, p_restart_cnt int, p_text text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    old_nodes text[];
BEGIN
    SELECT array_agg(node) INTO old_nodes FROM slurm_pilots
     WHERE job = p_job AND restart_cnt < p_restart_cnt;
    PERFORM tp_lock_jobs(ARRAY[p_job], coalesce(old_nodes, '{}'), true);
    UPDATE slurm_jobs SET restart_cnt = p_restart_cnt, updated_at = now()
     WHERE job = p_job AND restart_cnt < p_restart_cnt;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE nodes SET draining = true WHERE name = ANY (coalesce(old_nodes, '{}')) AND NOT draining;
    INSERT INTO log_entries (job, task, attempt, stream, time, text)
    SELECT p_job, 'service', coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = p_job), 1),
           'system', clock_timestamp(), p_text;
    IF EXISTS (SELECT 1 FROM jobs WHERE id = p_job AND state IN ('PREPARING', 'RUNNING')) THEN
        UPDATE replicas SET desired = 'STOP' WHERE job = p_job AND desired = 'RUN'
           AND node IS NOT NULL AND state IN ('PENDING', 'STARTING', 'RUNNING');
        UPDATE jobs SET restarting = true WHERE id = p_job;
        PERFORM tp_reconcile_job(p_job);
    END IF;
    RETURN true;
END $$;

-- Both sides of a job are final: nothing is left to reconcile, and its
-- pilots are gone with their Slurm job. Their nodes go too (a pilot is a
-- node of one job's life, as a pod is); the replicas they ran keep all
-- they did but the node's name, which their job's log still says.
CREATE FUNCTION tp_slurm_done(p_job bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    gone text[];
BEGIN
    SELECT array_agg(sp.node) INTO gone FROM slurm_pilots sp WHERE sp.job = p_job
       AND NOT EXISTS (SELECT 1 FROM replicas p WHERE p.node = sp.node
                        AND p.state IN ('PENDING', 'STARTING', 'RUNNING') AND p.desired <> 'DONE');
    PERFORM tp_lock_jobs(ARRAY[p_job], coalesce(gone, '{}'), true);
    UPDATE slurm_jobs SET done = true, updated_at = now() WHERE job = p_job;
    IF gone IS NULL THEN
        RETURN;
    END IF;
    UPDATE replicas SET node = NULL WHERE node = ANY (gone);
    DELETE FROM slurm_pilots WHERE node = ANY (gone);
    DELETE FROM nodes WHERE name = ANY (gone);
END $$;
