// Issue 5: Vertex CustomJob scheduling.restartJobOnWorkerRestart and
// scheduling.disableRetries, with real agents (process runtime), and
// Vertex task names (workerpool0-0, workerpool1-0) in the job's log.
//
// Every test has two agents: "small" fits one n1-standard-4 replica, "big"
// fits two. Placement fills the fullest node first, so workerpool0 lands
// on small and workerpool1 on big: the gang spans both nodes, and after
// small is killed (kill -9) the whole gang still fits on big.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { google } from './googleapis.mjs';

import { client, makeTempDir, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, getNode, killMarked, listNodes, readJobLog, startAgent, waitNoProcesses, waitNodeState,
} from './agents.mjs';

const PROJECT = 'vxrestart';
const PARENT = `projects/${PROJECT}/locations/us-central1`;
const IMAGE = 'localhost/trainer:test';
const FINAL = ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'];
let pg;
let dbSeq = 0;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  await pg?.cleanup();
});

/** Server, agents small (4 vCPUs) and big (8 vCPUs), a client, a marker and a temp dir. */
async function world(t, name) {
  dbSeq += 1;
  const db = `vxrestart_${dbSeq}`;
  pg.psql(`CREATE DATABASE ${db}`);
  const server = await startServer({
    pg: { url: pg.url.replace('dbname=postgres', `dbname=${db}`) },
    env: {
      TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1',
      TRAINPLANE_LEASE_SECONDS: '3',
    },
  });
  const dir = makeTempDir('tp-vxrestart-');
  const mark = `tpmark_${process.pid}_${name}_${Date.now().toString(36)}`;
  const agents = [];
  t.after(() => {
    for (const a of agents) a.cleanup();
    killMarked(mark);
    server.kill();
  });
  const small = await startAgent(server, { node: `${name}-small`, dir, vcpus: 4, memoryMb: 15360 });
  agents.push(small);
  const big = await startAgent(server, { node: `${name}-big`, dir, vcpus: 8, memoryMb: 30720 });
  agents.push(big);
  const ai = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
  return { server, small, big, ai, dir, mark, go: path.join(dir, 'go') };
}

/**
 * A replica that prints CLUSTER_SPEC, touches the file `touch` (if given),
 * waits for the file `wait` (the go file by default) and exits with `code`.
 */
function pool(w, { code = 0, touch = '', wait = w.go } = {}) {
  const signal = touch ? `touch ${touch}; ` : '';
  return {
    replicaCount: '1',
    machineSpec: { machineType: 'n1-standard-4' },
    containerSpec: {
      imageUri: IMAGE,
      command: ['sh', '-c', `echo "CLUSTER_SPEC=$CLUSTER_SPEC"; ${signal}` +
        `while [ ! -e ${wait} ]; do sleep 0.1; done; echo done; exit ${code}; : ${w.mark}`],
    },
  };
}

async function createJob(w, pools, scheduling) {
  const created = (await w.ai.projects.locations.customJobs.create({
    parent: PARENT,
    requestBody: { displayName: 'gang', jobSpec: { workerPoolSpecs: pools, scheduling } },
  })).data;
  return { name: created.name, id: created.name.split('/').pop() };
}

async function getJob(w, job) {
  return (await w.ai.projects.locations.customJobs.get({ name: job.name })).data;
}

async function waitJob(w, job, states, timeoutMs = 30_000) {
  let got;
  await waitFor(async () => {
    got = await getJob(w, job);
    return states.includes(got.state);
  }, timeoutMs, `job ${job.name} did not reach ${states}`, 100).catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(got)}\n${w.server.stderr().slice(-3000)}`);
  });
  return got;
}

/** CLUSTER_SPEC printed by task (workerpoolN-i) in attempt, parsed, or undefined. */
function clusterSpec(entries, task, attempt) {
  const line = entries.find((e) => e.resource.labels.task_name === task &&
    e.labels['ml.googleapis.com/attempt'] === String(attempt) &&
    (e.textPayload ?? '').startsWith('CLUSTER_SPEC='));
  return line && JSON.parse(line.textPayload.slice('CLUSTER_SPEC='.length));
}

async function waitClusterSpecs(w, job, attempt, tasks = ['workerpool0-0', 'workerpool1-0']) {
  let entries = [];
  await waitFor(async () => {
    entries = await readJobLog(w.server.base, PROJECT, job.id);
    return tasks.every((task) => clusterSpec(entries, task, attempt));
  }, 30_000, `every replica printed CLUSTER_SPEC in attempt ${attempt}`, 100).catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(entries.map((x) => [x.labels, x.textPayload]))}\n` +
      `${w.server.stderr().slice(-3000)}`);
  });
  return entries;
}

/** The port range of an agent as [lo, hi]. */
function ports(agent) {
  return agent.keys.port_range.split('-').map(Number);
}

function inRange(addr, [lo, hi]) {
  const port = Number(addr.split(':')[1]);
  return port >= lo && port <= hi;
}

/** Runs the job until both replicas printed attempt 1, checks the split, kills small. */
async function killSmallMidRun(w, job) {
  await waitJob(w, job, ['JOB_STATE_RUNNING']);
  const entries = await waitClusterSpecs(w, job, 1);
  const first = clusterSpec(entries, 'workerpool0-0', 1).cluster;
  assert.ok(inRange(first.workerpool0[0], ports(w.small)), `workerpool0 on small: ${JSON.stringify(first)}`);
  assert.ok(inRange(first.workerpool1[0], ports(w.big)), `workerpool1 on big: ${JSON.stringify(first)}`);
  await w.small.kill('SIGKILL');
  // LOST at lease + grace + margin (6 s here; sync_protocol.test.mjs holds
  // the server to that): this deadline is a safety net for a loaded machine.
  await waitNodeState(w.server.base, w.small.node, 'LOST', 30_000);
  return first;
}

// Each test has a world of its own (database, server, agents, marker): they run at once.
describe('Vertex scheduling on worker loss', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set', concurrency: 4 }, () => {
  it('restartJobOnWorkerRestart: kill -9 of one agent restarts the whole gang with attempt 2 and new addresses', async (t) => {
    const w = await world(t, 'gang');
    const job = await createJob(w, [pool(w), pool(w)], { restartJobOnWorkerRestart: true });
    const first = await killSmallMidRun(w, job);

    const entries = await waitClusterSpecs(w, job, 2);
    const cs0 = clusterSpec(entries, 'workerpool0-0', 2);
    const cs1 = clusterSpec(entries, 'workerpool1-0', 2);
    assert.deepEqual(cs0.cluster, cs1.cluster, 'both replicas of attempt 2 see the same cluster');
    assert.deepEqual(cs0.task, { type: 'workerpool0', index: 0 });
    assert.deepEqual(cs1.task, { type: 'workerpool1', index: 0 });
    for (const addr of [cs0.cluster.workerpool0[0], cs0.cluster.workerpool1[0]]) {
      assert.ok(inRange(addr, ports(w.big)), `attempt 2 runs on the surviving node: ${addr}`);
    }
    assert.notEqual(cs0.cluster.workerpool0[0], first.workerpool0[0], 'workerpool0 moved');
    assert.notEqual(cs0.cluster.workerpool0[0], cs0.cluster.workerpool1[0]);
    // The surviving replica of attempt 1 was stopped, not left running beside attempt 2.
    assert.ok(!entries.some((e) => e.resource.labels.task_name === 'workerpool1-0' &&
      e.labels['ml.googleapis.com/attempt'] === '1' && e.textPayload === 'done'));
    const nodes = await listNodes(w.server.base);
    assert.equal(nodes.find((n) => n.name === w.big.node).replicas, 2, JSON.stringify(nodes));

    fs.writeFileSync(w.go, '');
    const done = await waitJob(w, job, FINAL);
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    assert.equal(done.error, undefined);
    const log = await readJobLog(w.server.base, PROJECT, job.id);
    const attempts = new Set(log.filter((e) => e.textPayload === 'done')
      .map((e) => `${e.resource.labels.task_name}/${e.labels['ml.googleapis.com/attempt']}`));
    assert.ok(attempts.has('workerpool0-0/2'), JSON.stringify([...attempts]));
    assert.ok(!attempts.has('workerpool1-0/1'), 'attempt 1 of workerpool1-0 never finished');
    w.small.cleanup();	// its orphaned attempt-1 replica
    await waitNoProcesses(w.mark, 10_000);
    await w.big.stop();
    await w.server.stop();
  });

  it('without the flag only the lost replica restarts; its peer keeps attempt 1 and its address', async (t) => {
    const w = await world(t, 'single');
    const job = await createJob(w, [pool(w), pool(w)]);
    const first = await killSmallMidRun(w, job);
    const entries = await waitClusterSpecs(w, job, 2, ['workerpool0-0']);
    const cs0 = clusterSpec(entries, 'workerpool0-0', 2);
    assert.equal(cs0.cluster.workerpool1[0], first.workerpool1[0], 'the peer kept its address');
    assert.ok(inRange(cs0.cluster.workerpool0[0], ports(w.big)));
    assert.equal(clusterSpec(entries, 'workerpool1-0', 2), undefined, 'workerpool1-0 was not restarted');
    fs.writeFileSync(w.go, '');
    const done = await waitJob(w, job, FINAL);
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    w.small.cleanup();
  });

  it('disableRetries: kill -9 of one agent fails the job at once, nothing restarts', async (t) => {
    const w = await world(t, 'noretry');
    // disableRetries overrides restartJobOnWorkerRestart.
    const job = await createJob(w, [pool(w), pool(w)], { disableRetries: true, restartJobOnWorkerRestart: true });
    await killSmallMidRun(w, job);
    const done = await waitJob(w, job, FINAL, 15_000);
    assert.equal(done.state, 'JOB_STATE_FAILED');
    assert.equal(done.error.code, 13);
    assert.equal(done.error.message, `The replica workerpool0-0 was lost: its node ${w.small.node} stopped ` +
      'reporting or restarted, and scheduling.disableRetries is set.');
    // The survivor is stopped and nothing runs a second attempt.
    await waitFor(async () => (await getNode(w.server.base, w.big.node)).replicas === 0, 10_000,
      'the surviving replica was stopped');
    const log = await readJobLog(w.server.base, PROJECT, job.id);
    assert.ok(log.length > 0 && log.every((e) => e.labels['ml.googleapis.com/attempt'] === '1'),
      JSON.stringify(log.map((e) => [e.labels, e.textPayload])));
    w.small.cleanup();
  });

  it('disableRetries: a failing worker fails the job with its Vertex task name; logs carry task names', async (t) => {
    const w = await world(t, 'fail');
    // The worker fails once the primary has printed its CLUSTER_SPEC.
    const started = path.join(w.dir, 'primary-started');
    const job = await createJob(w, [pool(w, { touch: started }), pool(w, { code: 3, wait: started })],
      { disableRetries: true });
    const done = await waitJob(w, job, FINAL);
    assert.equal(done.state, 'JOB_STATE_FAILED');
    assert.equal(done.error.code, 3);
    assert.equal(done.error.message, 'The replica workerpool1-0 exited with a non-zero status of 3.');

    let log = [];
    await waitFor(async () => {
      log = await readJobLog(w.server.base, PROJECT, job.id, 'resource.labels.task_name="workerpool1-0"');
      return log.some((e) => e.textPayload === 'done');
    }, 10_000, 'workerpool1-0 logged "done"');
    assert.ok(log.every((e) => e.resource.type === 'ml_job' && e.resource.labels.job_id === job.id &&
      e.resource.labels.task_name === 'workerpool1-0' &&
      e.labels['ml.googleapis.com/task_name'] === 'workerpool1-0' &&
      e.logName === `projects/${PROJECT}/logs/workerpool1-0` &&
      e.labels['ml.googleapis.com/attempt'] === '1'), JSON.stringify(log));
    // Each node's agent ships its replica's lines on its own schedule: the
    // primary's may come after the failing worker's.
    let tasks = [];
    await waitFor(async () => {
      const all = await readJobLog(w.server.base, PROJECT, job.id);
      tasks = [...new Set(all.map((e) => e.resource.labels.task_name))].sort();
      return tasks.length === 2;
    }, 10_000, "both task names in the job's log");
    assert.deepEqual(tasks, ['workerpool0-0', 'workerpool1-0']);
    await waitNoProcesses(w.mark, 10_000);
    await w.small.stop();
    await w.big.stop();
    await w.server.stop();
  });
});

// The same rules seen from the agent protocol, with this test playing both
// agents: exact about what each node is told and when.

/**
 * A server with nodes small (4 vCPUs, 127.0.0.4) and big (8 vCPUs,
 * 127.0.0.8) played by this test, and a gang job running workerpool0 on
 * small and workerpool1 on big (attempt 1, both reported RUNNING).
 */
async function protocolWorld(t, { startTime } = {}) {
  dbSeq += 1;
  const db = `vxrestart_${dbSeq}`;
  pg.psql(`CREATE DATABASE ${db}`);
  const server = await startServer({
    pg: { url: pg.url.replace('dbname=postgres', `dbname=${db}`) },
    env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' },
  });
  t.after(() => server.kill());
  const c = client(server.base);
  const AUTH = { headers: { authorization: 'Bearer trainplane-dev-token' } };
  const register = (name, inc, vcpus, portRange) => c.post(`/agent/v1/nodes/${name}:register`, {
    incarnation: inc, region: 'us-central1', zone: 'us-central1-a', vcpus, memoryMb: 30720,
    address: `127.0.0.${vcpus}`, portRange, runtime: 'process',
  }, AUTH);
  const inc = { small: 's1', big: 'b1' };
  const sync = async (name, replicas = []) => {
    const r = await c.post(`/agent/v1/nodes/${name}:sync`, { incarnation: inc[name], waitSeconds: 0, replicas },
      { ...AUTH, timeoutMs: 20_000 });
    assert.equal(r.status, 200, r.text);
    return r.json.replicas;
  };
  const until = async (what, fn) => {
    let last;
    await waitFor(async () => (last = await fn()), 10_000, what).catch((e) => {
      throw new Error(`${e.message}: ${JSON.stringify(last)}\n${server.stderr().slice(-2000)}`);
    });
    return last;
  };
  const state = async (id) => (await c.get(`/v1/${PARENT}/customJobs/${id}`)).json;
  const report = (r, seq, st, extra = {}) => ({ replica: r.replica, attempt: r.attempt, seq, state: st, ...extra });
  const env = (r, key) => JSON.parse(r.env.find((e) => e.startsWith(`${key}=`)).slice(key.length + 1));

  assert.equal((await register('small', inc.small, 4, [26000, 26009])).status, 200);
  assert.equal((await register('big', inc.big, 8, [27000, 27009])).status, 200);
  const spec = { replicaCount: '1', machineSpec: { machineType: 'n1-standard-4' },
    containerSpec: { imageUri: IMAGE, command: ['true'] } };
  const created = await c.post(`/v1/${PARENT}/customJobs`, { displayName: 'proto',
    jobSpec: { workerPoolSpecs: [spec, spec], scheduling: { restartJobOnWorkerRestart: true } } });
  assert.equal(created.status, 200, created.text);
  const id = created.json.name.split('/').pop();

  const [p0] = await until('small given workerpool0', async () => (await sync('small')).length === 1 && sync('small'));
  const [p1] = await until('big given workerpool1', async () => (await sync('big')).length === 1 && sync('big'));
  assert.deepEqual([p0.role, p0.attempt, p1.role, p1.attempt], ['master', 1, 'worker', 1]);
  const started = startTime ? { startTime } : {};
  await sync('small', [report(p0, 1, 'RUNNING', started)]);
  await sync('big', [report(p1, 1, 'RUNNING', started)]);
  await until('RUNNING', async () => (await state(id)).state === 'JOB_STATE_RUNNING');
  const psql = (sql) => pg.psql(sql, db);
  return { server, register, inc, sync, until, state, report, env, id, p0, p1, psql };
}

/** Waits until both replicas are placed again; returns them with node and host. */
async function placedAgain(w) {
  return w.until('both replicas placed again', async () => {
    const all = [...(await w.sync('small')).map((r) => ({ ...r, node: 'small', host: '127.0.0.4' })),
      ...(await w.sync('big')).map((r) => ({ ...r, node: 'big', host: '127.0.0.8' }))];
    return all.length === 2 && all.every((r) => r.desired === 'RUN') && all;
  });
}

describe('Vertex gang restart, agent protocol', () => {
  it('stops the survivors first; only when none runs is the whole gang placed again as attempt 2', async (t) => {
    const w = await protocolWorld(t);
    const { server, register, inc, sync, until, state, report, env, id, p1 } = w;

    // small's host reboots: a new incarnation; its replica is lost.
    inc.small = 's2';
    assert.equal((await register('small', inc.small, 4, [26000, 26009])).status, 200);
    const stopping = await until('big told to stop workerpool1-0', async () => {
      const d = await sync('big');
      return d.length === 1 && d[0].desired === 'STOP' && d;
    });
    assert.equal(stopping[0].attempt, 1);
    // While the survivor still runs, nothing is placed and the job neither fails nor succeeds.
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await sync('small'), []);
    assert.deepEqual((await sync('big')).map((r) => [r.attempt, r.desired]), [[1, 'STOP']]);
    assert.equal((await state(id)).state, 'JOB_STATE_RUNNING');

    // The survivor reports its SIGTERM exit: the whole gang is placed again, attempt 2.
    await sync('big', [report(p1, 2, 'EXITED', { exitCode: 143 })]);
    const placed = await placedAgain(w);
    assert.deepEqual(placed.map((r) => r.attempt), [2, 2]);
    const [n0, n1] = [placed.find((r) => r.role === 'master'), placed.find((r) => r.role === 'worker')];
    const cs0 = env(n0, 'CLUSTER_SPEC');
    const cs1 = env(n1, 'CLUSTER_SPEC');
    assert.deepEqual(cs0.cluster, cs1.cluster);
    assert.deepEqual(cs0.cluster, {
      workerpool0: [`${n0.host}:${n0.ports[0]}`], workerpool1: [`${n1.host}:${n1.ports[0]}`],
    }, 'every replica finds each peer where it was placed now');
    assert.deepEqual(env(n1, 'TF_CONFIG').cluster, { chief: cs0.cluster.workerpool0, worker: cs0.cluster.workerpool1 });
    assert.equal((await state(id)).state, 'JOB_STATE_RUNNING');

    // Attempt 2 runs and the primary finishes: JOB_STATE_SUCCEEDED.
    await sync(n1.node, [report(n1, 1, 'RUNNING')]);
    await sync(n0.node, [report(n0, 1, 'RUNNING')]);
    await sync(n0.node, [report(n0, 2, 'EXITED', { exitCode: 0 })]);
    const done = await until('SUCCEEDED', async () => {
      const j = await state(id);
      return j.state === 'JOB_STATE_SUCCEEDED' && j;
    });
    assert.equal(done.error, undefined);
    await server.stop();
  });

  it('consumedMLUnits counts the attempt before a gang restart', async (t) => {
    // Attempt 1 of both replicas started three hours ago (as their agents
    // report), attempt 2 runs for seconds: 2 x 3 h x 0.5 units an hour
    // (n1-standard-4: 4 vCPUs / 8), with the second attempt's few seconds.
    const t0 = Date.now() - 3 * 3600e3;
    const w = await protocolWorld(t, { startTime: new Date(t0).toISOString() });
    const { register, inc, sync, until, state, report, id, p1 } = w;
    const lost = Date.now();	// small's replica ends with its node's restart, after this
    inc.small = 's2';
    assert.equal((await register('small', inc.small, 4, [26000, 26009])).status, 200);
    await until('big told to stop workerpool1-0', async () => (await sync('big'))[0]?.desired === 'STOP');
    await sync('big', [report(p1, 2, 'EXITED', { exitCode: 143, endTime: new Date().toISOString() })]);
    const placed = await placedAgain(w);
    assert.deepEqual(placed.map((r) => r.attempt), [2, 2]);
    const [n0, n1] = [placed.find((r) => r.role === 'master'), placed.find((r) => r.role === 'worker')];
    await sync(n1.node, [report(n1, 1, 'RUNNING')]);
    await sync(n0.node, [report(n0, 1, 'RUNNING')]);
    await sync(n0.node, [report(n0, 2, 'EXITED', { exitCode: 0 })]);
    await until('SUCCEEDED', async () => (await state(id)).state === 'JOB_STATE_SUCCEEDED');
    const done = Date.now();
    const units = Number(w.psql(`SELECT output->>'consumedMLUnits' FROM jobs WHERE id = ${id}`));
    // Each replica ran from t0 to at least `lost` (attempt 1), and at most
    // until `done` over both attempts.
    const hours = (ms) => ms / 3600e3;
    const low = 2 * 0.5 * hours(lost - t0), high = 2 * 0.5 * hours(done - t0);
    assert.ok(units >= Math.round(low * 100) / 100 && units <= Math.round(high * 100) / 100,
      `consumedMLUnits ${units}: both attempts make ${low.toFixed(4)} to ${high.toFixed(4)}`);
    await w.server.stop();
  });

  it('a survivor lost with its node while being stopped ends the wait too', async (t) => {
    const w = await protocolWorld(t);
    w.inc.small = 's2';
    assert.equal((await w.register('small', w.inc.small, 4, [26000, 26009])).status, 200);
    await w.until('big told to stop workerpool1-0', async () => (await w.sync('big'))[0]?.desired === 'STOP');
    // big's host reboots too before its replica reported the stop.
    w.inc.big = 'b2';
    assert.equal((await w.register('big', w.inc.big, 8, [27000, 27009])).status, 200);
    const placed = await placedAgain(w);
    assert.deepEqual(placed.map((r) => r.attempt), [2, 2]);
    assert.equal((await w.state(w.id)).state, 'JOB_STATE_RUNNING');
    await w.server.stop();
  });
});
