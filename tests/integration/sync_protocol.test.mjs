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
// The replicas' own lines (the service's lines, task "service", are tested on their own).
const logs = (id) => c.post('/v2/entries:list', { resourceNames: ['projects/sync'],
  filter: `resource.labels.job_id="${id}" AND resource.labels.task_name!="service"` })
  .then((r) => r.json.entries ?? []);

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

  it('a report whose trial measurements are not [{step, value}] (at most 100) is 400, naming it', async () => {
    assert.equal((await node('nm', 'inc-m')).status, 200);
    for (const metrics of ['x', [{ step: 1 }], [{ step: 'a', value: 1 }], Array(101).fill({ step: 1, value: 1 })]) {
      const res = await sync('nm', { incarnation: 'inc-m', replicas: [
        { replica: 'r', attempt: 1, seq: 1, state: 'RUNNING', metrics }] });
      assertError(res, 400, 'INVALID_ARGUMENT', /^Field: replicas\[0\]\.metrics Error: /);
    }
    const ok = await sync('nm', { incarnation: 'inc-m', waitSeconds: 0, replicas: [
      { replica: 'r', attempt: 1, seq: 1, state: 'RUNNING', metrics: [{ step: 3, value: 0.5 }] }] });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await drain('nm')).status, 200);
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

  it('a replica the agent fenced (reported LOST) restarts with the next attempt; its job runs on', async () => {
    // n3 (inc-3b) holds inc1's master, attempt 2, and is the only node taking work.
    const d = await desired('n3', 'inc-3b', 1);
    const r = d.replicas[0];
    assert.equal((await sync('n3', { incarnation: 'inc-3b', waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 1, state: 'RUNNING' }] })).status, 200);
    await waitFor(async () => (await job('inc1')).state === 'RUNNING', 5000, 'inc1 RUNNING');
    // Its lease passed: the agent stopped it (a SIGKILL after the grace) and says so.
    const lost = await sync('n3', { incarnation: 'inc-3b', waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 2, state: 'LOST', exitCode: 137,
        message: "stopped by the node's fence: no sync was answered within the lease (exit status 137)" }] });
    assert.equal(lost.status, 200, lost.text);
    let again;
    await waitFor(async () => {
      again = await sync('n3', { incarnation: 'inc-3b', waitSeconds: 0, replicas: [] });
      return again.json.replicas.some((x) => x.replica === r.replica && x.attempt === r.attempt + 1);
    }, 10_000, `${r.replica} restarted with attempt ${r.attempt + 1}`);
    assert.ok(!again.json.replicas.some((x) => x.attempt === r.attempt), 'the fenced attempt left the set');
    assert.ok(['PREPARING', 'RUNNING'].includes((await job('inc1')).state), 'a fence is no exit: the job runs on');
  });

  it('refuses a bad stop grace or disconnect policy, and lists what a node declared', async () => {
    const bad = await node('n9', 'inc-9', { stopGraceSeconds: -1, disconnectPolicy: 'never' });
    const e = assertError(bad, 400, 'INVALID_ARGUMENT');
    for (const f of ['stopGraceSeconds', 'disconnectPolicy'])
      assert.ok(e.message.includes(`Field: ${f} `), `${f} named in: ${e.message}`);
    assert.equal((await node('n9', 'inc-9', { stopGraceSeconds: 7, disconnectPolicy: 'fence' })).status, 200);
    assert.equal((await drain('n9')).status, 200);
    const listed = (await c.get('/trainplane/v1/nodes')).json.nodes.find((n) => n.name === 'n9');
    assert.equal(listed.stopGraceSeconds, 7);
    assert.equal(listed.disconnectPolicy, 'fence');
    // An agent that declares neither (before fencing existed) does not fence.
    assert.equal((await node('n10', 'inc-10')).status, 200);
    assert.equal((await drain('n10')).status, 200);
    const old = (await c.get('/trainplane/v1/nodes')).json.nodes.find((n) => n.name === 'n10');
    assert.equal(old.stopGraceSeconds, 0);
    assert.equal(old.disconnectPolicy, 'keep_running');
  });

  // A sync that changes nothing (no report, the node's version, the same
  // incarnation) runs no transaction of its own: its lease goes into the
  // next batch, and its answer waits for that batch's commit (issue 28).
  const syncFigures = async () => {
    const text = (await c.get('/metrics')).text;
    const fig = (name) => Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1]);
    return { quiet: fig('trainplane_agent_syncs_quiet_total'), full: fig('trainplane_agent_syncs_full_total') };
  };
  const lastSync = (name) => pg.psql(`SELECT (extract(epoch FROM last_sync) * 1e6)::int8 FROM nodes WHERE name = '${name}'`).trim();
  const quietNode = (name, inc) => node(name, inc, { region: 'europe-west1', zone: 'europe-west1-b', accelerators: null });

  it('a sync that changes nothing runs no sync transaction, and its lease is still written', async () => {
    assert.equal((await quietNode('q1', 'inc-q1')).status, 200);
    const v = (await sync('q1', { incarnation: 'inc-q1', waitSeconds: 0, replicas: [] })).json.desiredVersion;
    // Once the server knows the node (its register's notification heard), syncs are quiet.
    const before = await syncFigures();
    await waitFor(async () => {
      const r = await sync('q1', { incarnation: 'inc-q1', waitSeconds: 1, desiredVersion: v, replicas: [] });
      assert.equal(r.status, 200, r.text);
      return (await syncFigures()).quiet > before.quiet;
    }, 10_000, 'a quiet sync');
    const f0 = await syncFigures();
    for (let i = 0; i < 3; i++) {
      const l0 = lastSync('q1');
      const t0 = Date.now();
      const r = await sync('q1', { incarnation: 'inc-q1', waitSeconds: 1, desiredVersion: v, replicas: [] });
      assert.equal(r.status, 200, r.text);
      assert.ok(Date.now() - t0 >= 900, `held ~1 s, got ${Date.now() - t0} ms`);
      assert.equal(r.json.desiredVersion, v);
      assert.ok(r.json.leaseSeconds > 0);
      assert.equal(r.json.replicas, undefined, 'the set is left out: it did not change');
      // The answer came after the batch committed: the lease is in the table.
      assert.ok(BigInt(lastSync('q1')) > BigInt(l0), 'the quiet sync renewed the lease');
    }
    const f1 = await syncFigures();
    assert.equal(f1.full, f0.full, 'no sync transaction ran');
    assert.equal(f1.quiet, f0.quiet + 3);
  });

  it('a sync that repeats the reports of the last one (no new seq) is quiet too; a new seq is not', async () => {
    // (an incarnation that needs quoting in the batch's text[] literal)
    const inc = 'inc "q2" {a,b} \\ NULL \u00e9';
    assert.equal((await quietNode('q2', inc)).status, 200);
    const rep = (seq) => [{ replica: '1-master-0-00000000000000aa', attempt: 1, seq, state: 'RUNNING' }];
    const v = (await sync('q2', { incarnation: inc, waitSeconds: 0, replicas: rep(1) })).json.desiredVersion;
    const before = await syncFigures();
    await waitFor(async () => {
      const r = await sync('q2', { incarnation: inc, waitSeconds: 1, desiredVersion: v, replicas: rep(1) });
      assert.equal(r.status, 200, r.text);
      return (await syncFigures()).quiet > before.quiet;
    }, 10_000, 'a quiet sync with the same reports');
    const f0 = await syncFigures();
    assert.equal((await sync('q2', { incarnation: inc, waitSeconds: 1, desiredVersion: v, replicas: rep(1) })).status, 200);
    const f1 = await syncFigures();
    assert.deepEqual([f1.quiet, f1.full], [f0.quiet + 1, f0.full]);
    assert.equal((await sync('q2', { incarnation: inc, waitSeconds: 1, desiredVersion: v, replicas: rep(2) })).status, 200);
    const f2 = await syncFigures();
    assert.ok(f2.full > f1.full, 'a new seq runs the sync');
  });

  it('a quiet poll ends at once with 409 when another incarnation registers; its old incarnation gets 409', async () => {
    const v = (await sync('q1', { incarnation: 'inc-q1', waitSeconds: 0, replicas: [] })).json.desiredVersion;
    const before = await syncFigures();
    await waitFor(async () => {
      await sync('q1', { incarnation: 'inc-q1', waitSeconds: 1, desiredVersion: v, replicas: [] });
      return (await syncFigures()).quiet > before.quiet;
    }, 10_000, 'a quiet sync');
    const t0 = Date.now();
    const held = sync('q1', { incarnation: 'inc-q1', waitSeconds: 15, desiredVersion: v, replicas: [] });
    await waitFor(async () => (await syncFigures()).quiet > before.quiet + 1, 5000, 'the held poll quiet');
    assert.equal((await quietNode('q1', 'inc-q1b')).status, 200);
    assertError(await held, 409, 'ABORTED');
    assert.ok(Date.now() - t0 < 5000, `ended in ${Date.now() - t0} ms`);
    assertError(await sync('q1', { incarnation: 'inc-q1', waitSeconds: 1, desiredVersion: v, replicas: [] }),
                409, 'ABORTED');
  });
});

// Leases, with a short one: what a sync may ask for, and that only a sync
// that arrives renews a lease (agent/PROTOCOL.md, "Leases and fencing").
describe('agent leases', () => {
  const LEASE_S = 6;
  const GRACE_S = 1;
  const MARGIN_S = 2;	// store/store_sched.c FENCE_MARGIN_S
  let s2, c2;

  before(async () => {
    s2 = await startServer({ pg: pg.newDatabase('lease'), env: { TRAINPLANE_AGENT_TOKEN: TOKEN,
      TRAINPLANE_SCHEDULER_TICK_MS: '100', TRAINPLANE_LEASE_SECONDS: String(LEASE_S),
      TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' } });
    c2 = client(`http://127.0.0.1:${s2.port}`);
  });
  after(async () => {
    try {
      if (s2) await s2.stop();
    } finally {
      s2?.kill();
    }
  });

  const register2 = (name, inc) => c2.post(`/agent/v1/nodes/${name}:register`, {
    incarnation: inc, region: 'us-west1', zone: 'us-west1-b', vcpus: 4, memoryMb: 4096,
    address: '127.0.0.3', portRange: [26000, 26009], runtime: 'process',
    stopGraceSeconds: GRACE_S, disconnectPolicy: 'fence',
  }, { headers: AUTH });
  const nodeOf = async (name) => (await c2.get('/trainplane/v1/nodes')).json.nodes.find((n) => n.name === name);

  it('the register and every sync answer say the lease; a wait longer than it is refused', async () => {
    const reg = await register2('l1', 'inc-l1');
    assert.equal(reg.status, 200, reg.text);
    assert.equal(reg.json.leaseSeconds, LEASE_S);
    const ok = await c2.post('/agent/v1/nodes/l1:sync', { incarnation: 'inc-l1', waitSeconds: 0, replicas: [] },
                             { headers: AUTH });
    assert.equal(ok.status, 200, ok.text);
    const t0 = Date.now();
    const res = await c2.post('/agent/v1/nodes/l1:sync', { incarnation: 'inc-l1', waitSeconds: LEASE_S + 1,
      desiredVersion: ok.json.desiredVersion, replicas: [] }, { headers: AUTH, timeoutMs: 20_000 });
    const e = assertError(res, 400, 'INVALID_ARGUMENT');
    assert.match(e.message, /^Field: waitSeconds Error: .*6/);
    assert.ok(Date.now() - t0 < 2000, 'refused at once, not held');
    assert.equal(ok.json.leaseSeconds, LEASE_S, 'the sync answer says the lease it renewed');
    // As long as the lease is allowed (answered at once here: no desiredVersion).
    const asLong = await c2.post('/agent/v1/nodes/l1:sync', { incarnation: 'inc-l1', waitSeconds: LEASE_S,
      replicas: [] }, { headers: AUTH });
    assert.equal(asLong.status, 200, asLong.text);
  });

  it("a dead agent's parked long-poll does not renew its lease: LOST at lease + grace + margin", async () => {
    const reg = await register2('l2', 'inc-l2');
    assert.equal(reg.status, 200, reg.text);
    const first = await c2.post('/agent/v1/nodes/l2:sync', { incarnation: 'inc-l2', waitSeconds: 0, replicas: [] },
                                { headers: AUTH });
    assert.equal(first.status, 200);
    // The agent's last sync: a long-poll with nothing to do, parked by the
    // server; the agent dies at once (its request is abandoned).
    const WAIT_S = 5;
    const parked = c2.post('/agent/v1/nodes/l2:sync', { incarnation: 'inc-l2', waitSeconds: WAIT_S,
      desiredVersion: first.json.desiredVersion, replicas: [] }, { headers: AUTH, timeoutMs: 300 })
      .catch(() => null);
    await parked;
    const synced = Date.parse((await nodeOf('l2')).lastSyncTime);
    // The parked poll times out on the server after WAIT_S: the node must
    // still count from the poll's arrival, and be given up at lease + grace
    // + margin after it (not WAIT_S later).
    let lost;
    await waitFor(async () => {
      const n = await nodeOf('l2');
      if (n.state === 'LOST') lost = { at: Date.now(), node: n };
      return !!lost;
    }, (LEASE_S + GRACE_S + MARGIN_S + WAIT_S + 5) * 1000, 'node l2 LOST', 50);
    assert.equal(Date.parse(lost.node.lastSyncTime), synced,
      `the resumed long-poll renewed the lease: last sync ${lost.node.lastSyncTime}, was ${new Date(synced).toISOString()}`);
    const after = (lost.at - synced) / 1000;
    console.log(`# node l2: LOST ${after.toFixed(2)} s after its last sync (lease ${LEASE_S} s, grace ${GRACE_S} s, ` +
      `margin ${MARGIN_S} s, the parked poll's wait ${WAIT_S} s)`);
    assert.ok(after >= LEASE_S + GRACE_S, `not given up before lease + grace: ${after} s`);
    assert.ok(after < LEASE_S + GRACE_S + MARGIN_S + 1.5, `given up at lease + grace + margin: ${after} s`);
  });
});

// A LOST attempt is over: nothing its agent reports later may decide its
// job. The scheduler's housekeeping (which restarts lost replicas) runs
// once a minute here, so the reports below land while the attempt is LOST.
describe('a lost attempt is final', () => {
  let s3, c3;

  before(async () => {
    s3 = await startServer({ pg: pg.newDatabase('lostfinal'), env: { TRAINPLANE_AGENT_TOKEN: TOKEN,
      TRAINPLANE_SCHEDULER_TICK_MS: '60000' } });
    c3 = client(`http://127.0.0.1:${s3.port}`);
  });
  after(async () => {
    try {
      if (s3) await s3.stop();
    } finally {
      s3?.kill();
    }
  });

  const register3 = (name, inc) => c3.post(`/agent/v1/nodes/${name}:register`, {
    incarnation: inc, region: 'us-west1', zone: 'us-west1-b', vcpus: 16, memoryMb: 61440,
    address: '127.0.0.4', portRange: [27000, 27009], runtime: 'process',
    stopGraceSeconds: 1, disconnectPolicy: 'fence',
  }, { headers: AUTH });
  const sync3 = (name, body) => c3.post(`/agent/v1/nodes/${name}:sync`, body, { headers: AUTH });
  const job3 = (id) => c3.get(`/v1/projects/sync/jobs/${id}`).then((r) => r.json);

  /** A 1-replica job placed on `name`; returns its desired entry once RUNNING. */
  async function running(name, inc, id) {
    const res = await c3.post('/v1/projects/sync/jobs', { jobId: id, trainingInput: {
      scaleTier: 'CUSTOM', region: 'us-west1', masterType: 'n1-standard-4',
      masterConfig: { imageUri: 'x', containerCommand: ['true'] } } });
    assert.equal(res.status, 200, res.text);
    let r;
    await waitFor(async () => {
      const d = await sync3(name, { incarnation: inc, waitSeconds: 0, replicas: [] });
      r = d.json.replicas?.find((x) => x.job.endsWith(`/${id}`));
      return !!r;
    }, 10_000, `${id} placed on ${name}`);
    assert.equal((await sync3(name, { incarnation: inc, waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 1, state: 'RUNNING' }] })).status, 200);
    await waitFor(async () => (await job3(id)).state === 'RUNNING', 5000, `${id} RUNNING`);
    return r;
  }

  it('the exit of a fenced attempt, or of one its node re-registered without, fails nothing', async () => {
    assert.equal((await register3('f1', 'inc-f1')).status, 200);
    const r = await running('f1', 'inc-f1', 'final1');
    // Fenced (LOST), then the 143 of that same attempt arrives: ignored.
    await sync3('f1', { incarnation: 'inc-f1', waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 2, state: 'LOST', exitCode: 143 }] });
    await sync3('f1', { incarnation: 'inc-f1', waitSeconds: 0, replicas: [
      { replica: r.replica, attempt: r.attempt, seq: 3, state: 'EXITED', exitCode: 143 }] });
    let j = await job3('final1');
    assert.equal(j.state, 'RUNNING', `a fenced attempt's exit failed its job: ${JSON.stringify(j)}`);

    // The node comes back with a new incarnation (its replicas are LOST),
    // and the stop of the old attempt is reported under it: ignored too.
    const r2 = await running('f1', 'inc-f1', 'final2');
    assert.equal((await register3('f1', 'inc-f1b')).status, 200);
    await sync3('f1', { incarnation: 'inc-f1b', waitSeconds: 0, replicas: [
      { replica: r2.replica, attempt: r2.attempt, seq: 2, state: 'EXITED', exitCode: 143 }] });
    j = await job3('final2');
    assert.equal(j.state, 'RUNNING', `a lost attempt's exit failed its job: ${JSON.stringify(j)}`);
  });
});
