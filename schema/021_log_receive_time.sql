-- LogEntry.receiveTimestamp (issue 25's "failures missing from the log
-- stream", the rest): when the server took the line, as Cloud Logging's is
-- when it received it. A replica's lines carry the time the agent read
-- them and reach the server with its next sync, so a line can arrive
-- after lines with later timestamps (the service's own, another
-- replica's); a follower that reads on by timestamp skipped it. By receipt
-- time nothing arrives behind the reader but what concurrent transactions
-- commit late, which a short look-back covers (cli/stream_logs.c).
-- Rows from before keep NULL and show their timestamp (no table rewrite:
-- the default is set after the column is added).
ALTER TABLE log_entries ADD COLUMN received timestamptz;
ALTER TABLE log_entries ALTER COLUMN received SET DEFAULT clock_timestamp();
CREATE INDEX log_entries_job_received ON log_entries (job, (coalesce(received, time)));
