-- Vertex AI: the long-running operations that customJobs.delete returns
-- (done at once), kept so that operations.get answers for them.
CREATE TABLE vertex_operations (
    id          bigserial   PRIMARY KEY,
    project     text        NOT NULL,
    location    text        NOT NULL,
    target      text        NOT NULL,   -- the resource the operation acted on
    create_time timestamptz NOT NULL DEFAULT now()
);
