-- Fencing of lost nodes (agent/PROTOCOL.md, "Leases and fencing").
--
-- Every answered sync renews a node's lease: last_sync = now() for lease_s
-- seconds, the lease this server granted (the agent counts the same lease
-- from when it sent the sync). When it passes unrenewed, an agent with
-- disconnect_policy 'fence' stops its replicas: SIGTERM, then SIGKILL
-- stop_grace_s later. The scheduler gives the node up (LOST) and restarts
-- its replicas elsewhere only after last_sync + lease_s + stop_grace_s + a
-- margin (store/store_sched.c), so an old copy is gone before its new copy
-- starts. Each node is judged by the lease it was granted, not by the
-- leader's setting, so servers with different lease_seconds stay safe.
--
-- Nodes registered before this migration (agents that do not fence) keep
-- lease_s NULL (the leader's lease applies), a grace of 0 and keep_running.
ALTER TABLE nodes
    ADD COLUMN lease_s integer CHECK (lease_s > 0),
    ADD COLUMN stop_grace_s integer NOT NULL DEFAULT 0 CHECK (stop_grace_s BETWEEN 0 AND 3600),
    ADD COLUMN disconnect_policy text NOT NULL DEFAULT 'keep_running'
        CHECK (disconnect_policy IN ('fence', 'keep_running'));
