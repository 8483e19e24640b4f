-- A NOTIFY inside every job insert serialises all committing transactions
-- on PostgreSQL's notification queue lock and defeats group commit. Servers
-- now wake the scheduler leader themselves, outside user transactions.
DROP TRIGGER jobs_wake_scheduler ON jobs;
DROP FUNCTION jobs_wake_scheduler();
