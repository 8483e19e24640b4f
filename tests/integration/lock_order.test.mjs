// One lock order (spec/job_state.h, "Locks"): many two-node jobs whose
// replicas all fail at the same instant, each node's agent reporting at
// once, and PostgreSQL (deadlock_timeout 5 ms, so that a wait cycle is
// found at once) never finds a deadlock. Before the order, one sync held
// its node's row and waited for the job while the other held the job and
// updated the first node's row (the replica trigger's version bump):
// 40P01, a 500 to the agent, a 2 KB SQL dump at ERROR.
//
// This test plays the agents (as sync_protocol.test.mjs does), so that
// the reports of both nodes leave at the same instant.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { client, startPostgres, startServer, waitFor } from './harness.mjs';

const TOKEN = 'lock-order-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const NODES = ['la', 'lb', 'lc', 'ld', 'le', 'lf'];
const ROUNDS = 12;
let pg, server, c;

before(async () => {
  pg = await startPostgres();
  pg.psql("ALTER SYSTEM SET deadlock_timeout = '5ms'");
  pg.psql('SELECT pg_reload_conf()');
  server = await startServer({ pg, env: { TRAINPLANE_AGENT_TOKEN: TOKEN, TRAINPLANE_SCHEDULER_TICK_MS: '50',
                                          TRAINPLANE_DB_POOL_SIZE: '8', TRAINPLANE_HTTP_THREADS: '8' } });
  c = client(`http://127.0.0.1:${server.port}`);
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

const sync = (name, body) => c.post(`/agent/v1/nodes/${name}:sync`, body, { headers: AUTH, timeoutMs: 20_000 });
const job = (id) => c.get(`/v1/projects/locks/jobs/${id}`).then((r) => r.json);

// Each replica takes a whole node (16 vCPUs of 16): a job of a master and
// a worker always spans two nodes, and three of them fill the six.
async function createJob(id) {
  const res = await c.post('/v1/projects/locks/jobs', { jobId: id, trainingInput: {
    scaleTier: 'CUSTOM', region: 'us-west1', masterType: 'n1-standard-16',
    masterConfig: { imageUri: 'x', containerCommand: ['true'] },
    workerType: 'n1-standard-16', workerCount: '1',
  } });
  assert.equal(res.status, 200, res.text);
}

describe('lock order', () => {
  it('replicas of multi-node jobs failing at the same instant never deadlock', async () => {
    for (const n of NODES) {
      const r = await c.post(`/agent/v1/nodes/${n}:register`, {
        incarnation: `inc-${n}`, region: 'us-west1', zone: 'us-west1-b', vcpus: 16, memoryMb: 122880,
        address: '127.0.0.4', portRange: [27000, 27009], runtime: 'process',
      }, { headers: AUTH });
      assert.equal(r.status, 200, r.text);
    }
    const failed = [];
    for (let round = 0; round < ROUNDS; round++) {
      const ids = [0, 1, 2].map((k) => `r${round}_${k}`);
      for (const id of ids) await createJob(id);
      // Every node holds one replica of this round.
      const held = new Map();
      await waitFor(async () => {
        for (const n of NODES) {
          const r = await sync(n, { incarnation: `inc-${n}`, waitSeconds: 0, replicas: [] });
          assert.equal(r.status, 200, r.text);
          held.set(n, r.json.replicas.filter((x) => ids.some((id) => x.job.endsWith(`/${id}`))));
        }
        return NODES.every((n) => held.get(n).length === 1);
      }, 20_000, `round ${round}: one replica on each node`);
      // All fail at once: every node reports its exit in the same instant.
      const answers = await Promise.all(NODES.map((n) => {
        const r = held.get(n)[0];
        return sync(n, { incarnation: `inc-${n}`, waitSeconds: 0, replicas: [
          { replica: r.replica, attempt: r.attempt, seq: 1, state: 'EXITED', exitCode: 3,
            endTime: new Date().toISOString() }] });
      }));
      for (const a of answers) assert.equal(a.status, 200, `a sync failed: ${a.text}\n${server.stderr().slice(-3000)}`);
      for (const id of ids) {
        const j = await job(id);
        assert.equal(j.state, 'FAILED', JSON.stringify(j));
        failed.push(j);
      }
      // The nodes stop the survivors' replicas (none: both failed) and
      // report nothing more; the next round's jobs take the nodes.
      await waitFor(async () => {
        for (const n of NODES) {
          const r = await sync(n, { incarnation: `inc-${n}`, waitSeconds: 0, replicas: [] });
          if (r.json.replicas.length) return false;
        }
        return true;
      }, 10_000, `round ${round}: the nodes freed`);
    }
    assert.equal(failed.length, ROUNDS * 3);
    for (const j of failed)
      assert.match(j.errorMessage, /^The replica (master|worker) 0 exited with a non-zero status of 3\.$/);
    const pglog = fs.readFileSync(pg.log, 'utf8');
    assert.doesNotMatch(pglog, /deadlock detected|40P01/, 'PostgreSQL found a deadlock');
    assert.doesNotMatch(server.stderr() + server.stdout(), /deadlock|40P01|40001/, 'the server met a conflict');
  });
});
