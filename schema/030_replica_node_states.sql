-- The replica and node state machines (issue 28), as 013 made the job's:
-- their edges, and triggers that refuse any other way of changing a
-- replica's or a node's state.
--
-- The machines' single source is lib/replica_state.c's and
-- lib/node_state.c's tables (the headers describe them); replica_state_edges
-- and node_state_edges are the database's copies, written by migrations. A
-- release that changes a table ships a migration with the new rows: a
-- server refuses to start while a table and its copy differ, and logs the
-- rows to write (store/store_state_edges.c). From a state, a cause leads to
-- at most one state: (from_state, cause) is the key. The create (replica)
-- and register (node) edges leave STATE_UNSPECIFIED (no row yet).
--
-- replica_state_edges.new_attempt: the cause starts a new attempt (restart:
-- a lost replica placed again, or a gang restart; requeue: a preempted
-- replica placed again): the replica goes back to PENDING and its attempt
-- grows. Only those edges change replicas.attempt, and they must.
--
-- Statements move replicas and nodes through the copies: set-wise, the
-- edges a cause takes (replica_state_edges WHERE cause = ...) select the
-- rows and give their new state, and tp_replica_state_after() /
-- tp_node_state_after() say it for one row. An agent's report is taken
-- where an edge joins the replica's state to the reported one, and leaves
-- the state alone where none does (store/store_node.c, node_sync_apply).
--
-- Beneath them, triggers see every write of replicas.state, replicas.attempt
-- and nodes.state, whoever makes it (a statement of a later release, the
-- PL/pgSQL housekeeping of 015-022: tp_expire_nodes, tp_restart_lost,
-- tp_reconcile_job's gang restart, an operator's psql): a write that is not
-- an edge is refused (SQLSTATE 23514, constraint replica_state_edges or
-- node_state_edges; an insert must be PENDING / READY). Writes that leave
-- the state and attempt as they were cost no trigger call.

CREATE TABLE replica_state_edges (
    from_state  text    NOT NULL,
    cause       text    NOT NULL,
    to_state    text    NOT NULL,
    new_attempt boolean NOT NULL,
    PRIMARY KEY (from_state, cause)
);

INSERT INTO replica_state_edges (from_state, cause, to_state, new_attempt) VALUES
    ('STATE_UNSPECIFIED', 'create', 'PENDING', false),
    ('PENDING', 'start', 'STARTING', false),
    ('PENDING', 'run', 'RUNNING', false),
    ('PENDING', 'exit', 'EXITED', false),
    ('PENDING', 'fail_start', 'FAILED_TO_START', false),
    ('PENDING', 'lose', 'LOST', false),
    ('PENDING', 'restart', 'PENDING', true),
    ('PENDING', 'requeue', 'PENDING', true),
    ('STARTING', 'run', 'RUNNING', false),
    ('STARTING', 'exit', 'EXITED', false),
    ('STARTING', 'fail_start', 'FAILED_TO_START', false),
    ('STARTING', 'lose', 'LOST', false),
    ('RUNNING', 'exit', 'EXITED', false),
    ('RUNNING', 'fail_start', 'FAILED_TO_START', false),
    ('RUNNING', 'lose', 'LOST', false),
    ('EXITED', 'fail_start', 'FAILED_TO_START', false),
    ('EXITED', 'restart', 'PENDING', true),
    ('EXITED', 'requeue', 'PENDING', true),
    ('FAILED_TO_START', 'restart', 'PENDING', true),
    ('FAILED_TO_START', 'requeue', 'PENDING', true),
    ('LOST', 'restart', 'PENDING', true),
    ('LOST', 'requeue', 'PENDING', true);

CREATE TABLE node_state_edges (
    from_state text NOT NULL,
    cause      text NOT NULL,
    to_state   text NOT NULL,
    PRIMARY KEY (from_state, cause)
);

INSERT INTO node_state_edges (from_state, cause, to_state) VALUES
    ('STATE_UNSPECIFIED', 'register', 'READY'),
    ('READY', 'register', 'READY'),
    ('READY', 'sync', 'READY'),
    ('READY', 'stop', 'STOPPING'),
    ('READY', 'expire', 'LOST'),
    ('STOPPING', 'register', 'READY'),
    ('STOPPING', 'stop', 'STOPPING'),
    ('STOPPING', 'expire', 'LOST'),
    ('LOST', 'register', 'READY'),
    ('LOST', 'sync', 'READY'),
    ('LOST', 'stop', 'STOPPING');

-- Where cause takes a replica (a node) in p_from; NULL where it does not
-- apply. (PL/pgSQL: its plan is kept for the session, schema/024.)
CREATE FUNCTION tp_replica_state_after(p_from text, p_cause text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT to_state FROM replica_state_edges WHERE from_state = p_from AND cause = p_cause);
END $$;

CREATE FUNCTION tp_node_state_after(p_from text, p_cause text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT to_state FROM node_state_edges WHERE from_state = p_from AND cause = p_cause);
END $$;

-- The guard of replicas.state and replicas.attempt (see above).
CREATE FUNCTION replicas_state_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM replica_state_edges
                       WHERE from_state = 'STATE_UNSPECIFIED' AND to_state = NEW.state) THEN
            RAISE EXCEPTION 'a replica cannot be created %: no edge of the replica state machine '
                'leads there (replica_state_edges)', NEW.state
                USING ERRCODE = 'check_violation', CONSTRAINT = 'replica_state_edges',
                      TABLE = 'replicas';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.attempt IS DISTINCT FROM OLD.attempt THEN
        IF NEW.attempt <= OLD.attempt OR NOT EXISTS (SELECT 1 FROM replica_state_edges
                WHERE from_state = OLD.state AND to_state = NEW.state AND new_attempt) THEN
            RAISE EXCEPTION 'replica % cannot go from % (attempt %) to % (attempt %): no edge of '
                'the replica state machine that starts a new attempt joins them '
                '(replica_state_edges)', OLD.uid, OLD.state, OLD.attempt, NEW.state, NEW.attempt
                USING ERRCODE = 'check_violation', CONSTRAINT = 'replica_state_edges',
                      TABLE = 'replicas';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM replica_state_edges
                      WHERE from_state = OLD.state AND to_state = NEW.state AND NOT new_attempt) THEN
        RAISE EXCEPTION 'replica % cannot go from % to % (attempt %): no edge of the replica '
            'state machine joins them (replica_state_edges)', OLD.uid, OLD.state, NEW.state,
            OLD.attempt
            USING ERRCODE = 'check_violation', CONSTRAINT = 'replica_state_edges', TABLE = 'replicas';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER replicas_state_create BEFORE INSERT ON replicas
    FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM 'PENDING')
    EXECUTE FUNCTION replicas_state_transition();
CREATE TRIGGER replicas_state_transition BEFORE UPDATE OF state, attempt ON replicas
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.attempt IS DISTINCT FROM NEW.attempt)
    EXECUTE FUNCTION replicas_state_transition();

-- The guard of nodes.state.
CREATE FUNCTION nodes_state_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM node_state_edges
                       WHERE from_state = 'STATE_UNSPECIFIED' AND to_state = NEW.state) THEN
            RAISE EXCEPTION 'a node cannot be registered %: no edge of the node state machine '
                'leads there (node_state_edges)', NEW.state
                USING ERRCODE = 'check_violation', CONSTRAINT = 'node_state_edges', TABLE = 'nodes';
        END IF;
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM node_state_edges
                   WHERE from_state = OLD.state AND to_state = NEW.state) THEN
        RAISE EXCEPTION 'node % cannot go from % to %: no edge of the node state machine '
            'joins them (node_state_edges)', OLD.name, OLD.state, NEW.state
            USING ERRCODE = 'check_violation', CONSTRAINT = 'node_state_edges', TABLE = 'nodes';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER nodes_state_create BEFORE INSERT ON nodes
    FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM 'READY')
    EXECUTE FUNCTION nodes_state_transition();
CREATE TRIGGER nodes_state_transition BEFORE UPDATE OF state ON nodes
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION nodes_state_transition();
