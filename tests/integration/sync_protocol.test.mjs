// The agent protocol seen from the agent's side (agent/PROTOCOL.md), with
// this test playing the agent: registration, the long-poll, and that stale,
// duplicate and replayed reports change nothing.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertError, client, startPostgres, startServer, waitFor } from './harness.mjs';

const TOKEN = 'sync-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
let pg, server, c;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_AGENT_TOKEN: TOKEN, TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
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

const node = (name, inc, extra = {}) => c.post(`/agent/v1/nodes/${name}:register`, {
  incarnation: inc, region: 'us-west1', zone: 'us-west1-b', vcpus: 16, memoryMb: 61440,
  address: '127.0.0.2', portRange: [25000, 25009], runtime: 'process',
  accelerators: { type: 'NVIDIA_TESLA_T4', count: 4 }, ...extra,
}, { headers: AUTH });
const sync = (name, body) => c.post(`/agent/v1/nodes/${name}:sync`, body, { headers: AUTH, timeoutMs: 20_000 });
const drain = (name, on = true) => c.post(`/trainplane/v1/nodes/${name}:${on ? 'drain' : 'undrain'}`, {});
const job = (id) => c.get(`/v1/projects/sync/jobs/${id}`).then((r) => r.json);
const logs = (id) => c.post('/v2/entries:list', { resourceNames: ['projects/sync'],
  filter: `resource.labels.job_id="${id}"` }).then((r) => r.json.entries ?? []);

async function createJob(id, workers = 1) {
  const trainingInput = {
    scaleTier: 'CUSTOM', region: 'us-west1', masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'x', containerCommand: ['true'],
                    acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } },
  };
  if (workers > 0) {
    Object.assign(trainingInput, {
      workerType: 'n1-standard-4', workerCount: String(workers),
      workerConfig: { acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } },
    });
  }
  const res = await c.post('/v1/projects/sync/jobs', { jobId: id, trainingInput });
  assert.equal(res.status, 200, res.text);
}

/** Long-polls until the desired set holds `count` replicas; returns the answer. */
async function desired(name, inc, count) {
  let answer;
  await waitFor(async () => {
    const r = await sync(name, { incarnation: inc, waitSeconds: 2, replicas: [] });
    assert.equal(r.status, 200, r.text);
    answer = r.json;
    return answer.replicas.length === count;
  }, 15_000, `node ${name} to be given ${count} replicas`);
  return answer;
}

describe('agent protocol', () => {
  it('refuses a bad registration with the fields named', async () => {
    const res = await c.post('/agent/v1/nodes/n0:register', { incarnation: 'x', runtime: 'kubernetes' },
                             { headers: AUTH });
    const e = assertError(res, 400, 'INVALID_ARGUMENT');
    for (const f of ['region', 'zone', 'vcpus', 'memoryMb', 'portRange', 'runtime'])
      assert.ok(e.message.includes(`Field: ${f} `), `${f} named in: ${e.message}`);
  });

  it('404 for an unknown node, 409 ABORTED for another incarnation', async () => {
    assertError(await sync('nobody', { incarnation: 'i', replicas: [] }), 404, 'NOT_FOUND');
    assert.equal((await node('n1', 'inc-a')).status, 200);
    assertError(await sync('n1', { incarnation: 'inc-b', replicas: [] }), 409, 'ABORTED');
  });

  it('the long-poll waits when nothing changed and answers as soon as the node is given work', async () => {
    assert.equal((await node('n2', 'inc-2')).status, 200);
    // Only n2 may take work: n1 (same region) is drained.
    const drained = await drain('n1');
    assert.equal(drained.status, 200, drained.text);
    assert.equal(drained.json.state, 'DRAINING');
    // Learn the current version, then poll with it: nothing to do, so it waits.
    const first = await sync('n2', { incarnation: 'inc-2', waitSeconds: 0, replicas: [] });
    const v = first.json.desiredVersion;
    let t0 = Date.now();
    const idle = await sync('n2', { incarnation: 'inc-2', waitSeconds: 1, desiredVersion: v, replicas: [] });
    assert.ok(Date.now() - t0 >= 900, `held ~1 s, got ${Date.now() - t0} ms`);
    assert.equal(idle.json.desiredVersion, v);
    // Hold a long poll, then create a job: the answer comes well before the wait ends.
    t0 = Date.now();
    const held = sync('n2', { incarnation: 'inc-2', waitSeconds: 15, desiredVersion: v, replicas: [] });
    await new Promise((r) => setTimeout(r, 200));
    await createJob('poll1', 0);
    const woke = await held;
    assert.ok(Date.now() - t0 < 5000, `woken in ${Date.now() - t0} ms`);
    assert.notEqual(woke.json.desiredVersion, v);
  });

  it('applies each report once: duplicates, stale attempts and other nodes change nothing', async () => {
    // n2 holds poll1's master; give it a 2-replica job too.
    await createJob('dup1', 1);
    const d = await desired('n2', 'inc-2', 3);
    const master = d.replicas.find((r) => r.job.endsWith('/dup1') && r.role === 'master');
    const worker = d.replicas.find((r) => r.job.endsWith('/dup1') && r.role === 'worker');
    assert.ok(master && worker, JSON.stringify(d));
    assert.equal(new Set(d.replicas.map((r) => r.gpus[0])).size, 3, 'distinct GPUs');

    const running = (r, seq, text) => ({ replica: r.replica, attempt: r.attempt, seq, state: 'RUNNING',
                                         logs: [{ stream: 'stdout', text }] });
    const rep = { incarnation: 'inc-2', waitSeconds: 0,
                  replicas: [running(master, 1, 'm1'), running(worker, 1, 'w1')] };
    assert.equal((await sync('n2', rep)).status, 200);
    await waitFor(async () => (await job('dup1')).state === 'RUNNING', 5000, 'dup1 RUNNING');
    // The same reports again (a retried sync), a stale attempt, another node's claim.
    assert.equal((await sync('n2', rep)).status, 200);
    assert.equal((await sync('n2', { incarnation: 'inc-2', waitSeconds: 0, replicas: [
      { replica: master.replica, attempt: master.attempt - 1, seq: 9, state: 'EXITED', exitCode: 1 },
      { replica: worker.replica, attempt: worker.attempt + 1, seq: 9, state: 'EXITED', exitCode: 2 },
    ] })).status, 200);
    assert.equal((await node('n3', 'inc-3')).status, 200);
    assert.equal((await drain('n3')).status, 200);
    assert.equal((await sync('n3', { incarnation: 'inc-3', waitSeconds: 0, replicas: [
      { replica: master.replica, attempt: master.attempt, seq: 9, state: 'EXITED', exitCode: 5 },
    ] })).status, 200);
    assert.equal((await job('dup1')).state, 'RUNNING', 'nothing stale or foreign was applied');
    assert.deepEqual((await logs('dup1')).map((e) => e.textPayload).sort(), ['m1', 'w1'],
                     'each log line once');

    // The master ends: SUCCEEDED, the worker is told to stop, the master leaves the set.
    const after = await sync('n2', { incarnation: 'inc-2', waitSeconds: 0, replicas: [
      { replica: master.replica, attempt: master.attempt, seq: 2, state: 'EXITED', exitCode: 0 }] });
    const mine = after.json.replicas.filter((r) => r.job.endsWith('/dup1'));
    assert.deepEqual(mine.map((r) => [r.role, r.desired]), [['worker', 'STOP']]);
    assert.equal((await job('dup1')).state, 'SUCCEEDED');
    // The worker's final report removes it from the set.
    const done = await sync('n2', { incarnation: 'inc-2', waitSeconds: 0, replicas: [
      { replica: worker.replica, attempt: worker.attempt, seq: 2, state: 'EXITED', exitCode: 143 }] });
    assert.equal(done.json.replicas.filter((r) => r.job.endsWith('/dup1')).length, 0);
    assert.equal((await job('dup1')).state, 'SUCCEEDED', 'a stopped worker does not fail a finished job');
  });

  it('a failed start fails the job with the reason', async () => {
    await createJob('fts1', 0);
    const d = await desired('n2', 'inc-2', 2);
    const r = d.replicas.find((x) => x.job.endsWith('/fts1'));
    await sync('n2', { incarnation: 'inc-2', waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 1, state: 'FAILED_TO_START', message: 'image not found' }] });
    const j = await job('fts1');
    assert.equal(j.state, 'FAILED');
    assert.equal(j.errorMessage, 'The replica master 0 could not be started: image not found');
  });

  it('a new incarnation marks the old replicas lost and they restart with attempt 2', async () => {
    assert.equal((await drain('n2')).status, 200);
    const undrained = await drain('n3', false);
    assert.equal(undrained.json.state, 'READY');
    await createJob('inc1', 0);
    const d = await desired('n3', 'inc-3', 1);
    const r = d.replicas[0];
    assert.equal(r.attempt, 1);
    assert.equal((await node('n3', 'inc-3b')).status, 200);	// the host rebooted
    const again = await desired('n3', 'inc-3b', 1);
    assert.equal(again.replicas[0].replica, r.replica);
    assert.equal(again.replicas[0].attempt, 2);
  });
});
