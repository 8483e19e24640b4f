-- The cluster's identity: one random id, made once with the schema. It
-- names this installation to its agents (the register answer carries it,
-- each agent records it in its work dir and in every replica it starts),
-- so that an agent moved to another installation, or a work dir shared by
-- two, never takes one cluster's replicas for the other's. A backup
-- restored keeps it (it is the same cluster); a fresh database gets a new
-- one. Replica ids are unique without it (scheduler.c adds 64 random bits
-- to each job's replica ids at placement, which a restored backup's
-- rewound sequences cannot repeat).
CREATE TABLE cluster (
    id          text        PRIMARY KEY CHECK (id ~ '^[0-9a-f]{32}$'),
    create_time timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX cluster_one_row ON cluster ((true));
INSERT INTO cluster (id) VALUES (replace(gen_random_uuid()::text, '-', ''));
