// A new job never inherits an old job's replica (issue 19).
//
// A replica's identity is unique for all time (its job's row id, role and
// index plus 64 random bits made at placement), and an agent works only
// with the replicas of the cluster it is registered with. `make run`
// (tools/run.sh, which `make run` calls once the binaries are built) keeps
// everything under its state directory, so two runs never share an agent's
// work dir, and the scenarios of the issue run their jobs to SUCCEEDED:
//   - make run twice on fresh state directories, one after the other;
//   - make run on a database restored from a copy taken before the first
//     job (sequences rewound: the new job gets the same row id);
//   - an agent moved to another cluster over a work dir that still holds a
//     finished replica of the first one;
//   - two make runs side by side on different state dirs and ports.
// In each case the first life leaves a replica that its agent could not
// report (a worker that ignores SIGTERM, killed after the grace period as
// `make run` stops), which is what a reused identity would be taken for.
//
// The make run scenarios are files of their own, so that the runner runs
// them side by side, each in a process of its own (a test process that is
// slow to see its job succeed would stop make run too late: the worker's
// grace would be over): replica_identity_fresh, _restore and
// _side_by_side.test.mjs; make_run.mjs has their helpers.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_TOKEN, createJob, killMarked, readJobLog, startAgent, waitJobState,
} from './agents.mjs';

// --- an agent moved to another cluster ----------------------------------------------

describe('an agent bound to another cluster', () => {
  let pg;
  after(async () => { await pg?.cleanup(); });

  it('leaves a finished replica of the old cluster alone and runs the new job with the same row id', async () => {
    pg = await startPostgres();
    const dbs = [pg.newDatabase('cluster'), pg.newDatabase('cluster')];
    const env = { TRAINPLANE_SCHEDULER_TICK_MS: '100' };
    const dir = makeTempDir('tp-moved-');
    const workDir = path.join(dir, 'work');
    const job = (marker, code) => ({
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
      masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', `echo ${marker}; sleep 3; exit ${code}`] },
    });

    // Cluster A: job 1's master runs; the agent is killed; the master ends (exit 3) unreported.
    let server = await startServer({ pg: dbs[0], env });
    let agent;
    try {
      agent = await startAgent(server, { node: 'mover', dir, workDir });
      await createJob(server.base, 'demo', 'old_job', job('old-replica', 3));
      await waitJobState(server.base, 'demo', 'old_job', ['RUNNING'], 30_000, () => agent.stderr());
      await agent.kill('SIGKILL');
      const replicas = path.join(workDir, 'replicas');
      await waitFor(() => fs.readdirSync(replicas).some((d) => fs.existsSync(path.join(replicas, d, 'exit'))),
        20_000, 'the old master ended');
      const old = fs.readdirSync(replicas);
      await server.stop();

      // Cluster B: a fresh database (another cluster id, job row ids from 1 again).
      server = await startServer({ pg: dbs[1], env });
      agent = await startAgent(server, { node: 'mover', dir, workDir, configPath: path.join(dir, 'b.yaml') });
      await createJob(server.base, 'demo', 'new_job', job('new-replica', 0));
      await waitJobState(server.base, 'demo', 'new_job', 'SUCCEEDED', 30_000, () => agent.stderr());
      const log = await readJobLog(server.base, 'demo', 'new_job');
      assert.ok(log.some((e) => e.textPayload === 'new-replica'), 'the new replica ran');
      assert.equal(dbs[1].psql("SELECT count(*) FROM replicas WHERE uid LIKE '1-master-0-%'"), '1');

      assert.equal(old.length, 1);
      assert.match(old[0], /^1-master-0-[0-9a-f]{16}\.1$/);
      const clusterA = dbs[0].psql('SELECT id FROM cluster');
      const clusterB = dbs[1].psql('SELECT id FROM cluster');
      assert.notEqual(clusterA, clusterB);
      assert.match(clusterB, /^[0-9a-f]{32}$/);
      // The agent said so, once, and the server heard it in the register body.
      const said = agent.stderr().split('\n').filter((l) => l.includes(old[0].replace(/\.1$/, '')));
      assert.equal(said.filter((l) => /another cluster/.test(l)).length, 1,
        `the agent names the other cluster's replica once:\n${agent.stderr().slice(-3000)}`);
      assert.match(agent.stderr(), new RegExp(`cluster ${clusterA}`));
      assert.match(server.stderr(), new RegExp(`node mover: .*1 replica of cluster ${clusterA}`));
      assert.equal(fs.readFileSync(path.join(workDir, 'cluster'), 'utf8').trim(), clusterB);
      // Left alone: its folder and exit status are as they were.
      assert.ok(fs.existsSync(path.join(replicas, old[0], 'exit')), 'the old replica is left alone');
      const status = JSON.parse(fs.readFileSync(path.join(replicas, old[0], 'status.json'), 'utf8'));
      assert.equal(status.cluster, clusterA);

      // Configured to clean up: the agent removes it.
      await agent.stop();
      agent = await startAgent(server, { node: 'mover', dir, workDir, configPath: path.join(dir, 'c.yaml'),
                                         config: { foreign_replicas: 'remove' } });
      // The agent removes the folder, then says so: wait for both.
      await waitFor(() => !fs.existsSync(path.join(replicas, old[0])), 20_000, 'the foreign replica removed');
      await waitFor(() => /replica \S+ of cluster \S+: removed/.test(agent.stderr()), 10_000,
        `the agent says it removed the foreign replica:\n${agent.stderr().slice(-2000)}`);
      await agent.stop();
      await server.stop();
    } finally {
      agent?.cleanup();
      server.kill();
      killMarked(workDir);
    }
  });
});

// --- the server's side, played by the test --------------------------------------------

describe('the server and replicas it never assigned', () => {
  let pg, server;
  before(async () => {
    pg = await startPostgres();
    server = await startServer({ pg });
  });
  after(async () => {
    try { if (server) await server.stop(); } finally { server?.kill(); await pg?.cleanup(); }
  });
  const auth = { authorization: `Bearer ${AGENT_TOKEN}` };
  const register = (name, extra = {}) => request(server.base, 'POST', `/agent/v1/nodes/${name}:register`, {
    headers: auth,
    body: { incarnation: `inc-${name}`, region: 'us-central1', zone: 'us-central1-a', vcpus: 4,
            memoryMb: 8192, address: '127.0.0.1', portRange: [25000, 25009], runtime: 'process', ...extra },
  });
  const sync = (name, replicas) => request(server.base, 'POST', `/agent/v1/nodes/${name}:sync`, {
    headers: auth, body: { incarnation: `inc-${name}`, waitSeconds: 0, replicas },
  });

  it('answers the register with its cluster id and checks what the agent says of its work dir', async () => {
    const cluster = pg.psql('SELECT id FROM cluster');
    const ok = await register('n1', { clusterId: 'f'.repeat(32), replicaClusters: { ['f'.repeat(32)]: 2 } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.clusterId, cluster);
    await waitFor(() => /node n1: .*2 replicas of cluster f{32}/.test(server.stderr()), 5000,
      'the server logs the other cluster\'s replicas');
    for (const [extra, field] of [
      [{ clusterId: 'bad id/..' }, 'clusterId'],
      [{ clusterId: 7 }, 'clusterId'],
      [{ replicaClusters: [] }, 'replicaClusters'],
      [{ replicaClusters: { 'x y': 1 } }, 'replicaClusters'],
      [{ replicaClusters: { abc: -1 } }, 'replicaClusters'],
    ]) {
      const res = await register('n2', extra);
      assert.equal(res.status, 400, `${JSON.stringify(extra)}: ${res.text}`);
      assert.match(res.json.error.message, new RegExp(`Field: ${field} `));
    }
  });

  it('logs a replica an agent claims but it never assigned once per node and replica, and ignores it', async () => {
    assert.equal((await register('n1')).status, 200);
    assert.equal((await register('n3')).status, 200);
    const ghost = { replica: '77-master-0-0123456789abcdef', attempt: 1, seq: 1, state: 'EXITED', exitCode: 0 };
    for (let i = 0; i < 3; i++) {
      for (const n of ['n1', 'n3']) {
        const res = await sync(n, [{ ...ghost, seq: i + 1 }]);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.json.replicas, []);
      }
    }
    // A hostile name reaches the log only as printable characters.
    assert.equal((await sync('n1', [{ ...ghost, replica: 'evil\nFAKE LOG LINE' }])).status, 200);
    await waitFor(() => (server.stderr().match(/claims replica/g) ?? []).length >= 3, 5000, 'three lines');
    const lines = server.stderr().split('\n').filter((l) => l.includes('claims replica'));
    assert.equal(lines.filter((l) => l.includes('node n1 claims replica 77-master-0-0123456789abcdef')).length, 1,
      lines.join('\n'));
    assert.equal(lines.filter((l) => l.includes('node n3 claims replica 77-master-0-0123456789abcdef')).length, 1);
    assert.ok(!server.stderr().split('\n').some((l) => l.startsWith('FAKE LOG LINE')), 'no forged line');
  });
});
