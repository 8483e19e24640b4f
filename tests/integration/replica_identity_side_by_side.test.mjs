// A new job never inherits an old job's replica (issue 19; the scenarios are
// described in replica_identity.test.mjs): two make runs side by side on
// different state dirs and ports.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { makeTempDir } from './harness.mjs';
import { createJob, freePort } from './agents.mjs';
import { runJob, startRun, twoReplicaJob } from './make_run.mjs';

describe('make run keeps its state in its state directory; replica identities never repeat', () => {
  it('two make runs side by side on different state dirs and ports each run their jobs', async () => {
    const dirs = [makeTempDir('tp-run-a-'), makeTempDir('tp-run-b-')];
    let ports = [await freePort()];
    // run.sh derives each run's replica port block from its listen port
    // (TRAINPLANE_RUN_PORTS overrides): take a second port with another block.
    for (;;) {
      const p = await freePort();
      if (p !== ports[0] && (p - ports[0]) % 55 !== 0) { ports.push(p); break; }
    }
    const runs = [];
    try {
      runs.push(await startRun(dirs[0], ports[0]));
      runs.push(await startRun(dirs[1], ports[1]));
      const ranges = runs.map((r) => {
        const m = /local-gpu-1 \(ports (\d+)-(\d+)\).*local-tpu-1 \(ports (\d+)-(\d+)\)/s.exec(r.output());
        assert.ok(m, `make run names its agents' port ranges:\n${r.output().slice(0, 3000)}`);
        return m.slice(1).map(Number);
      });
      const all = ranges.flatMap((r) => [[r[0], r[1]], [r[2], r[3]]]);
      for (const [i, x] of all.entries()) {
        for (const y of all.slice(i + 1)) assert.ok(x[1] < y[0] || y[1] < x[0], `port ranges overlap: ${ranges}`);
      }
      // The same job id and the same row id on both, at the same time.
      await Promise.all(runs.map((r, i) => createJob(r.base, 'demo', 'side_1', twoReplicaJob(`side${i}`))));
      for (const [i, r] of runs.entries()) {
        const log = await runJob(r, 'side_1', `side${i}`, { created: true });
        const text = log.map((e) => e.textPayload ?? '').join('\n');
        assert.ok(!text.includes(`side${1 - i}`), 'each run sees only its own replicas');
      }
    } finally {
      for (const r of runs) await r.stop();
    }
  });
});
