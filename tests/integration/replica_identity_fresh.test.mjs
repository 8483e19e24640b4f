// A new job never inherits an old job's replica (issue 19; the scenarios are
// described in replica_identity.test.mjs): make run twice on fresh state
// directories, one after the other.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir } from './harness.mjs';
import { createJob, freePort } from './agents.mjs';
import { checkoutVar, replicaDirs, runJob, startRun, twoReplicaJob } from './make_run.mjs';

describe('make run keeps its state in its state directory; replica identities never repeat', () => {
  it('a fresh state directory after a first run: the job with the same row id runs and succeeds', async () => {
    const varBefore = checkoutVar();
    const first = makeTempDir('tp-run1-');
    const second = makeTempDir('tp-run2-');
    let run = await startRun(first, await freePort());
    await runJob(run, 'hello_1', 'first', { check: false });
    await run.stop();
    const firstOutput = run.output();

    // The job goes in as soon as the server answers, before the agents'
    // first sync, as it would from a script: a reused identity would be
    // taken for the first run's worker before anything was forgotten.
    run = await startRun(second, await freePort(), {
      beforeNodes: (r) => createJob(r.base, 'demo', 'hello_1', twoReplicaJob('second')),
    });
    try {
      const log = await runJob(run, 'hello_1', 'second', { created: true });
      assert.ok(!log.some((e) => /first/.test(e.textPayload ?? '')), 'nothing of the first run in the log');
    } finally {
      await run.stop();
    }
    // The scenario held: the first run's worker was left in its agent's work
    // dir under the first state dir, named <job row id>-<role>-<index>-<random>.<attempt>.
    const left = replicaDirs(first);
    assert.ok(left.some((d) => /^1-worker-0-[0-9a-f]{16}\.1$/.test(d)),
      `the first run's worker is left in ${first}: ${left}\n${firstOutput.slice(-3000)}`);
    assert.match(firstOutput, new RegExp(`work dir ${first}/agent-local-gpu-1\\b`));
    for (const d of [first, second]) {
      for (const f of ['postgres', 'agent-local-gpu-1', 'agent-local-tpu-1', 'gcs', 'logs']) {
        assert.ok(fs.existsSync(path.join(d, f)), `${f} under the state dir ${d}`);
      }
    }
    assert.deepEqual(checkoutVar(), varBefore, 'the checkout\'s var/ is left alone');
  });
});
