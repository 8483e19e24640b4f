-- pgbench: the same row the server inserts for a job, into a clone of the
-- jobs table (same unique key, indexes and trigger), one row per transaction.
INSERT INTO bench_jobs (api, project, job_id, region, spec, labels, state)
VALUES ('ml', 'bench', 'p' || :client_id || '_' || nextval('bench_seq'), 'us-central1',
 '{"args": ["--epochs", "10"], "region": "us-central1", "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "workerType": "n1-standard-8", "workerCount": "2", "masterConfig": {"imageUri": "localhost/trainer:latest", "acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "4"}}, "workerConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": "4"}}}',
 '{"owner": "bench"}', 'QUEUED')
RETURNING id, version, create_time;
