// A new job never inherits an old job's replica (issue 19; the scenarios are
// described in replica_identity.test.mjs): make run on a database restored from
// a copy taken before the first job (sequences rewound: the new job gets the
// same row id).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, waitFor } from './harness.mjs';
import { freePort } from './agents.mjs';
import { copyOwnership, replicaDirs, runJob, startRun } from './make_run.mjs';

describe('make run keeps its state in its state directory; replica identities never repeat', () => {
  it('a database restored from a copy taken before the first job: the job with the rewound row id runs', async () => {
    const state = makeTempDir('tp-run-restore-');
    const port = await freePort();
    let run = await startRun(state, port);
    await run.stop();
    // The copy of the stopped embedded database: schema, cluster id, nodes, no job.
    const pgData = path.join(state, 'postgres');
    const backup = path.join(makeTempDir('tp-run-backup-'), 'postgres');
    fs.cpSync(pgData, backup, { recursive: true, preserveTimestamps: true });
    copyOwnership(pgData, backup);

    run = await startRun(state, port);
    await runJob(run, 'before_restore', 'first', { check: false });
    await run.stop();
    const left = replicaDirs(state).filter((d) => /^1-worker-0-/.test(d));

    fs.rmSync(pgData, { recursive: true, force: true });
    fs.cpSync(backup, pgData, { recursive: true, preserveTimestamps: true });
    copyOwnership(backup, pgData);
    run = await startRun(state, port);
    try {
      const jobsBefore = await request(run.base, 'GET', '/v1/projects/demo/jobs');
      assert.deepEqual(jobsBefore.json, {}, 'the restored database has no job');
      await runJob(run, 'after_restore', 'second');
      assert.equal(left.length, 1, `the first job's worker was left behind: ${left}`);
      // The leftover is of this very cluster (the copy kept the cluster id),
      // but this database never assigned it: the server says so once, the
      // agent reports it, and forgets it when told nothing of it.
      await waitFor(() => !replicaDirs(state).includes(left[0]), 20_000,
        `the leftover ${left[0]} is forgotten`);
      const uid = left[0].replace(/\.1$/, '');
      const said = run.output().split('\n').filter((l) => l.includes(`claims replica ${uid}`));
      assert.equal(said.length, 1, `the server logs the unknown replica once:\n${said.join('\n')}`);
    } finally {
      await run.stop();
    }
  });
});
