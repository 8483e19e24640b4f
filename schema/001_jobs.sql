-- Jobs of both APIs. The submitted spec is kept normalised as jsonb; the
-- version column is the etag's source and changes on every update
-- (trigger below), whoever makes it: API handler or scheduler. Versions
-- come from one sequence, so no two states of any jobs share an etag.
CREATE SEQUENCE jobs_version_seq;

CREATE TABLE jobs (
    id               bigserial PRIMARY KEY,
    project          text        NOT NULL,
    api              text        NOT NULL CHECK (api IN ('ml', 'vertex')),
    job_id           text        NOT NULL,
    region           text        NOT NULL DEFAULT '',
    spec             jsonb       NOT NULL,
    state            text        NOT NULL CHECK (state IN ('QUEUED', 'PREPARING', 'RUNNING',
                                   'SUCCEEDED', 'FAILED', 'CANCELLING', 'CANCELLED')),
    error_message    text        NOT NULL DEFAULT '',
    labels           jsonb       NOT NULL DEFAULT '{}',
    output           jsonb       NOT NULL DEFAULT '{}',
    version          bigint      NOT NULL DEFAULT nextval('jobs_version_seq'),
    cancel_requested boolean     NOT NULL DEFAULT false,
    create_time      timestamptz NOT NULL DEFAULT now(),
    start_time       timestamptz,
    end_time         timestamptz,
    update_time      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project, api, job_id)
);

-- list: newest first within a project, keyset pagination on id.
CREATE INDEX jobs_project_api_id ON jobs (project, api, id DESC);
-- the scheduler's queue scan.
CREATE INDEX jobs_active ON jobs (id) WHERE state IN ('QUEUED', 'PREPARING', 'RUNNING', 'CANCELLING');

CREATE FUNCTION jobs_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := nextval('jobs_version_seq');
    NEW.update_time := now();
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_bump_version BEFORE UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_bump_version();
