// End-to-end on loopback: the scheduler inside trainplane-server and real
// trainplane-agent processes (process runtime unless said; one test with a
// real podman container, one with the simulate runtime). Each test has its
// own database on the file's PostgreSQL, its own server(s) and agents, and
// kills whatever it started even when it fails.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT, makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, assertStateOrder, cancelJob, createJob, freePort, getJob, getNode, killMarked, leftoverPids,
  listNodes, pgrep, podmanUnusable, readJobLog, startAgent, waitJobState, waitLogLine, waitNodeState,
  waitNoProcesses, watchJob,
} from './agents.mjs';

const PROJECT = 'e2e';
const T4 = 'NVIDIA_TESLA_T4';
const IMAGE = 'localhost/trainer:test';

let pg;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  if (pg) await pg.cleanup();
});

const newDatabase = () => pg.newDatabase('e2e');

/** A unique marker for the command lines of one test's replicas (pgrep -f). */
function marker(name) {
  return `tpmark_${process.pid}_${name}_${Date.now().toString(36)}`;
}

/**
 * The world of one test: a database, its servers and agents, and the
 * markers of its replicas. Everything is killed in t.after, also on
 * failure; finish() stops agents and servers with SIGTERM and asserts clean
 * exits (no sanitizer report, status 0).
 */
function world(t, { serverEnv = {} } = {}) {
  const w = {
    db: newDatabase(),
    dir: makeTempDir('tp-e2e-'),
    servers: [],
    agents: [],
    markers: [],
    serverEnv: {
      TRAINPLANE_SCHEDULER_TICK_MS: '200',
      TRAINPLANE_SYNC_INTERVAL_SECONDS: '2',
      TRAINPLANE_LEASE_SECONDS: '30',
      ...serverEnv,
    },
    async server(env = {}) {
      const s = await startServer({ pg: w.db, env: { ...w.serverEnv, ...env } });
      w.servers.push(s);
      return s;
    },
    async agent(server, opts) {
      const a = await startAgent(server, { dir: w.dir, ...opts });
      w.agents.push(a);
      return a;
    },
    mark(name) {
      const m = marker(name);
      w.markers.push(m);
      return m;
    },
    /**
     * A gate the test opens: `wait` is a shell loop a replica runs until
     * open() is called. A replica that must still run while the test looks
     * at it waits here instead of sleeping for a time a loaded machine can
     * outlast.
     */
    gate(name) {
      const file = path.join(w.dir, `gate-${name}`);
      return { wait: `while [ ! -e ${file} ]; do sleep 0.05; done`, open: () => fs.writeFileSync(file, '') };
    },
    /** Agent logs and server logs, for failure messages. */
    logs() {
      return [...w.agents.map((a) => `== agent ${a.node}\n${a.stderr().slice(-2500)}`),
        ...w.servers.map((s, i) => `== server ${i}\n${s.stderr().slice(-2500)}`)].join('\n');
    },
    /** How long each server took from SIGTERM to its exit in finish(), ms. */
    stopMs: [],
    async finish() {
      for (const a of w.agents) {
        if (a.alive()) await a.stop();
        else a.checkSanitizer();
      }
      for (const s of w.servers) {
        if (!s.alive()) continue;
        const t0 = Date.now();
        await s.stop();
        w.stopMs.push(Date.now() - t0);
      }
    },
  };
  t.after(() => {
    for (const a of w.agents) {
      try { if (a.alive() && a.child.signalCode === null) process.kill(a.pid, 'SIGCONT'); } catch { /* gone */ }
      a.cleanup();
    }
    for (const m of w.markers) killMarked(m);
    for (const s of w.servers) s.kill();
  });
  return w;
}

/** A CUSTOM job's training input: master (and more) as host commands. */
function custom({ master, worker, ps, workerCount = 0, psCount = 0, gpus = 0, workerGpus = gpus,
  machine = 'n1-standard-4', extra = {} }) {
  const accel = (n) => (n ? { acceleratorConfig: { count: String(n), type: T4 } } : {});
  const ti = {
    scaleTier: 'CUSTOM',
    region: 'us-central1',
    masterType: machine,
    masterConfig: { imageUri: IMAGE, containerCommand: ['sh', '-c', master], ...accel(gpus) },
    ...extra,
  };
  if (workerCount) {
    ti.workerType = machine;
    ti.workerCount = String(workerCount);
    ti.workerConfig = worker ? { imageUri: IMAGE, containerCommand: ['sh', '-c', worker], ...accel(workerGpus) }
      : { ...accel(workerGpus) };
  }
  if (psCount) {
    ti.parameterServerType = machine;
    ti.parameterServerCount = String(psCount);
    ti.parameterServerConfig = ps ? { imageUri: IMAGE, containerCommand: ['sh', '-c', ps] } : {};
  }
  return ti;
}

/** Consecutive repeats removed. */
function dedupe(list) {
  return list.filter((x, i) => i === 0 || list[i - 1] !== x);
}

/** Log entries sorted by (timestamp, insertId): what entries:list should return. */
function byTime(entries) {
  return [...entries].sort((x, y) => (x.timestamp < y.timestamp ? -1 : x.timestamp > y.timestamp ? 1
    : Number(x.insertId) - Number(y.insertId)));
}

/** Asserts entries come in timestamp order, as orderBy "timestamp asc" asks. */
function assertTimeOrder(entries) {
  assert.deepEqual(entries.map((e) => `${e.timestamp} ${e.textPayload}`), byTime(entries).map((e) => `${e.timestamp} ${e.textPayload}`),
    'entries:list orders entries by timestamp');
}

/** The log lines of one task ("master-replica-0"), text only. */
function taskLines(entries, task) {
  return entries.filter((e) => e.labels?.['ml.googleapis.com/task_name'] === task).map((e) => e.textPayload);
}

/** KEY=value from a task's printed environment. */
function printed(lines, key) {
  const line = lines.find((l) => l.startsWith(`${key}=`));
  return line === undefined ? undefined : line.slice(key.length + 1);
}

const PRINT_ENV = 'echo "TF_CONFIG=$TF_CONFIG"; echo "CLUSTER_SPEC=$CLUSTER_SPEC"; ' +
  'echo "CUDA=$CUDA_VISIBLE_DEVICES"; echo "NVIDIA=$NVIDIA_VISIBLE_DEVICES"; ' +
  'echo "MASTER_ADDR=$MASTER_ADDR"; echo "MASTER_PORT=$MASTER_PORT"; echo "WORLD_SIZE=$WORLD_SIZE"; ' +
  'echo "RANK=$RANK"; echo "ARGS=$0 $*"';	// sh -c 'script' a b: $0 is the first argument

// Each test has a world of its own (database, servers, agents, markers): four run at once.
describe('scheduler and agents end to end', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set', concurrency: 4 }, () => {
  it('runs a 1 master + 2 workers + 1 ps GPU job: TF_CONFIG, GPUs, PyTorch vars, states', async (t) => {
    const w = world(t);
    const server = await w.server();
    const gcs = path.join(w.dir, 'gcs');
    const a = await w.agent(server, { node: 'gpu-a', gpuType: T4, gpuCount: 2, address: '127.0.0.1', config: { storage_root: gcs } });
    const b = await w.agent(server, { node: 'gpu-b', gpuType: T4, gpuCount: 2, address: '127.0.0.2', config: { storage_root: gcs } });
    const m = w.mark('env');
    const done = w.gate('env');
    // Master holds the job RUNNING until the test has looked; workers and
    // the ps run until stopped (the ps never exits by itself).
    const ti = custom({
      master: `${PRINT_ENV}; ${done.wait}; : ${m}`,
      worker: `${PRINT_ENV}; sleep 60; : ${m}`,
      ps: `${PRINT_ENV}; sleep 60; : ${m}`,
      workerCount: 2, psCount: 1, gpus: 1,
    });

    // Freeze gpu-b so that PREPARING (placed, not every replica running)
    // lasts long enough to be seen: 3 GPUs need both nodes.
    process.kill(b.pid, 'SIGSTOP');
    const id = `env_${Date.now()}`;
    const created = await createJob(server.base, PROJECT, id, ti);
    assert.equal(created.state, 'QUEUED');
    const watch = watchJob(server.base, PROJECT, id);
    try {
      await watch.seen('PREPARING', 10_000);
    } finally {
      process.kill(b.pid, 'SIGCONT');
    }
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);

    // While RUNNING: the nodes API shows 3 of the 4 GPUs taken.
    const nodes = await listNodes(server.base);
    const taken = {};
    for (const n of nodes) {
      const acc = n.accelerators.find((x) => x.type === T4);
      assert.equal(acc.total, 2, `${n.name}: ${JSON.stringify(n)}`);
      taken[n.address] = acc.total - acc.free;
    }
    assert.equal(taken['127.0.0.1'] + taken['127.0.0.2'], 3, `GPUs taken: ${JSON.stringify(nodes)}`);
    const nodeReplicas = nodes.reduce((s, n) => s + n.replicas, 0);
    assert.equal(nodeReplicas, 4, 'four replicas placed');
    assert.equal(pgrep(m).length, 4, 'four replica processes run');
    done.open();

    const job = await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 20_000, w.logs);
    const states = dedupe([created.state, ...(await watch.stop())]);
    assertStateOrder(states, ['QUEUED', 'PREPARING', 'RUNNING', 'SUCCEEDED']);
    for (const s of ['QUEUED', 'PREPARING', 'RUNNING', 'SUCCEEDED']) assert.ok(states.includes(s), `${s} seen: ${states}`);
    assert.ok(job.startTime && job.endTime, `startTime and endTime: ${JSON.stringify(job)}`);
    assert.ok(Date.parse(job.createTime) <= Date.parse(job.startTime));
    assert.ok(Date.parse(job.startTime) < Date.parse(job.endTime));
    assert.equal(typeof job.trainingOutput?.consumedMLUnits, 'number', `consumedMLUnits: ${JSON.stringify(job)}`);
    assert.ok(job.trainingOutput.consumedMLUnits >= 0);
    assert.equal(job.errorMessage ?? '', '');

    // The rest were stopped when the master ended.
    await waitNoProcesses(m, 10_000);

    // What each replica was given.
    const entries = await readJobLog(server.base, PROJECT, id);
    const tasks = { master: [0], worker: [0, 1], ps: [0] };
    const seenAddr = new Map();
    const seenGpus = new Map();
    const cluster0 = JSON.parse(printed(taskLines(entries, 'master-replica-0'), 'TF_CONFIG'));
    assert.deepEqual(Object.keys(cluster0.cluster).sort(), ['master', 'ps', 'worker'],
      'custom container without useChiefInTfConfig: "master", no chief, no evaluator');
    assert.equal(cluster0.cluster.worker.length, 2);
    assert.equal(cluster0.cluster.master.length, 1);
    assert.equal(cluster0.cluster.ps.length, 1);
    const all = [...cluster0.cluster.master, ...cluster0.cluster.worker, ...cluster0.cluster.ps];
    assert.equal(new Set(all).size, 4, `four distinct addresses: ${all}`);
    for (const addr of all) {
      assert.match(addr, /^127\.0\.0\.[12]:\d+$/, 'node address and a port');
      const node = addr.startsWith('127.0.0.1:') ? a : b;
      const [lo, hi] = node.keys.port_range.split('-').map(Number);
      const port = Number(addr.split(':')[1]);
      assert.ok(port >= lo && port <= hi, `${addr} in ${node.node}'s port range ${lo}-${hi}`);
    }
    const rankOf = { master: () => 0, worker: (i) => 1 + i };
    for (const [role, indexes] of Object.entries(tasks)) {
      for (const index of indexes) {
        const task = `${role}-replica-${index}`;
        const lines = taskLines(entries, task);
        const tf = JSON.parse(printed(lines, 'TF_CONFIG') ?? 'null');
        assert.ok(tf, `${task} printed TF_CONFIG: ${lines}`);
        assert.deepEqual(tf.cluster, cluster0.cluster, `${task}: the same cluster`);
        assert.equal(tf.task.type, role, `${task}: task type`);
        assert.equal(tf.task.index, index, `${task}: task index`);
        assert.equal(tf.environment, 'cloud');
        assert.equal(typeof tf.job, 'object');
        assert.equal(tf.job.masterType, 'n1-standard-4', `${task}: job is the training input`);
        const cs = JSON.parse(printed(lines, 'CLUSTER_SPEC'));
        assert.deepEqual(cs.cluster, tf.cluster, `${task}: CLUSTER_SPEC cluster`);
        assert.deepEqual({ type: cs.task.type, index: cs.task.index }, { type: role, index });
        const addr = tf.cluster[role][index];
        seenAddr.set(task, addr);
        const host = addr.split(':')[0];
        const cuda = printed(lines, 'CUDA');
        if (role === 'ps') {
          assert.equal(cuda, '', 'the ps has no GPU');
          assert.equal(printed(lines, 'NVIDIA'), 'void');
          assert.equal(printed(lines, 'RANK'), '', 'the ps is not in the PyTorch group');
          assert.equal(printed(lines, 'WORLD_SIZE'), '');
        } else {
          assert.match(cuda, /^\d$/, `${task}: one GPU index`);
          assert.ok(Number(cuda) < 2, `${task}: a GPU of a 2-GPU node`);
          assert.equal(printed(lines, 'NVIDIA'), cuda);
          const list = seenGpus.get(host) ?? [];
          list.push(Number(cuda));
          seenGpus.set(host, list);
          assert.equal(printed(lines, 'MASTER_ADDR'), cluster0.cluster.master[0].split(':')[0]);
          assert.equal(printed(lines, 'MASTER_PORT'), cluster0.cluster.master[0].split(':')[1]);
          assert.equal(printed(lines, 'WORLD_SIZE'), '3');
          assert.equal(printed(lines, 'RANK'), String(rankOf[role](index)), `${task}: RANK`);
        }
      }
    }
    for (const [host, gpus] of seenGpus) {
      assert.equal(new Set(gpus).size, gpus.length, `distinct GPUs on ${host}: ${gpus}`);
      assert.equal(gpus.length, taken[host], `GPUs bound on ${host} match the nodes API while running`);
    }
    // Every GPU free again.
    await waitFor(async () => (await listNodes(server.base)).every((n) => n.accelerators[0].free === 2 && n.replicas === 0),
      10_000, 'GPUs freed');

    // With useChiefInTfConfig the primary is "chief".
    const id2 = `chief_${Date.now()}`;
    await createJob(server.base, PROJECT, id2, custom({
      master: `${PRINT_ENV}; : ${m}`, workerCount: 1, worker: `${PRINT_ENV}; : ${m}`,
      extra: { useChiefInTfConfig: true, jobDir: 'gs://bucket/out' },
    }));
    await waitJobState(server.base, PROJECT, id2, 'SUCCEEDED', 20_000, w.logs);
    const e2 = await waitLogLine(server.base, PROJECT, id2, /^TF_CONFIG=/);
    const tf2 = JSON.parse(printed(taskLines(e2, 'master-replica-0'), 'TF_CONFIG'));
    assert.deepEqual(Object.keys(tf2.cluster).sort(), ['chief', 'worker']);
    assert.deepEqual(tf2.task, { ...tf2.task, type: 'chief', index: 0 });
    assert.equal(printed(taskLines(e2, 'master-replica-0'), 'ARGS'), `--job-dir ${gcs}/bucket/out`,
      '--job-dir appended, gs:// mapped to the storage root');
    await w.finish();
  });

  it('fails the job when a worker exits non-zero, with Google\'s message, and stops the rest', async (t) => {
    const w = world(t);
    const server = await w.server();
    await w.agent(server, { node: 'n1', gpuType: T4, gpuCount: 2 });
    await w.agent(server, { node: 'n2', gpuType: T4, gpuCount: 2 });
    const m = w.mark('fail');
    const fail = w.gate('fail');
    // Worker 1 (RANK 2) exits 3 once the test saw every replica run;
    // everything else runs on.
    const ti = custom({
      master: `sleep 60; : ${m}`,
      worker: `if [ "$RANK" = 2 ]; then ${fail.wait}; exit 3; fi; sleep 60; : ${m}`,
      ps: `sleep 60; : ${m}`,
      workerCount: 2, psCount: 1, gpus: 1,
    });
    const id = `fail_${Date.now()}`;
    await createJob(server.base, PROJECT, id, ti);
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);
    assert.equal(pgrep(m).length, 4, 'every replica runs');
    fail.open();
    const job = await waitJobState(server.base, PROJECT, id, 'FAILED', 15_000, w.logs);
    assert.equal(job.errorMessage, 'The replica worker 1 exited with a non-zero status of 3.');
    assert.ok(job.endTime, 'endTime set');
    assert.equal(typeof job.trainingOutput?.consumedMLUnits, 'number');
    await waitNoProcesses(m, 10_000);
    for (const a of w.agents) assert.deepEqual(leftoverPids(a), [], `nothing left of ${a.node}'s replicas`);
    await waitFor(async () => (await listNodes(server.base)).every((n) => n.replicas === 0), 10_000, 'replicas released');
    await w.finish();
  });

  it('cancels a RUNNING job: CANCELLING, CANCELLED, SIGTERM then SIGKILL after the grace', async (t) => {
    const w = world(t);
    const server = await w.server();
    const a = await w.agent(server, { node: 'c1', stopGraceSeconds: 1 });
    const m = w.mark('cancel');
    const ti = custom({
      master: `echo started; sleep 60; : ${m}`,
      // ignores SIGTERM (and so does its sleep): only SIGKILL ends it
      worker: `trap "" TERM; echo stubborn; while :; do sleep 0.2; done; : ${m}`,
      workerCount: 1,
    });
    const id = `cancel_${Date.now()}`;
    await createJob(server.base, PROJECT, id, ti);
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);
    await waitLogLine(server.base, PROJECT, id, /^stubborn$/);
    assert.equal(pgrep(m).length, 2);
    const t0 = Date.now();
    const watch = watchJob(server.base, PROJECT, id, 20);
    await cancelJob(server.base, PROJECT, id);
    const job = await waitJobState(server.base, PROJECT, id, 'CANCELLED', 15_000, w.logs);
    const states = await watch.stop();
    assert.ok(states.includes('CANCELLING'), `CANCELLING seen: ${states}`);
    assertStateOrder(states, ['RUNNING', 'CANCELLING', 'CANCELLED']);
    assert.ok(Date.now() - t0 >= 900, 'the stubborn worker held the cancel for the 1 s grace');
    assert.ok(job.endTime);
    await waitNoProcesses(m, 5000);
    assert.deepEqual(leftoverPids(a), []);
    assert.match(a.stderr(), /still running after the grace period; SIGKILL/, 'the agent SIGKILLed the stubborn replica');
    await w.finish();
  });

  it('kill -9 of an agent: its node is LOST and the replica restarts elsewhere with attempt 2', async (t) => {
    const w = world(t, { serverEnv: { TRAINPLANE_LEASE_SECONDS: '3', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1' } });
    const server = await w.server();
    const a = await w.agent(server, { node: 'k1' });
    const b = await w.agent(server, { node: 'k2' });
    const m = w.mark('lost');
    const finish = w.gate('lost');
    const id = `lost_${Date.now()}`;
    // Each attempt runs until the test lets it finish (after the kill).
    await createJob(server.base, PROJECT, id, custom({ master: `echo "attempt starts"; ${finish.wait}; echo done; : ${m}` }));
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);
    await waitLogLine(server.base, PROJECT, id, /^attempt starts$/);
    const first = (await listNodes(server.base)).find((n) => n.replicas === 1);
    assert.ok(first, 'a node runs the replica');
    const [victim, survivor] = first.name === 'k1' ? [a, b] : [b, a];
    const orphans = leftoverPids(victim);
    await victim.kill('SIGKILL');
    finish.open();
    try {
      await waitNodeState(server.base, victim.node, 'LOST', 30_000);
      const job = await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 20_000, w.logs);
      assert.equal(job.state, 'SUCCEEDED');
      const entries = byTime(await readJobLog(server.base, PROJECT, id));
      const second = entries.filter((e) => e.labels['ml.googleapis.com/attempt'] === '2');
      assert.deepEqual(second.map((e) => e.textPayload).filter((x) => !/^simulate/.test(x)), ['attempt starts', 'done'],
        `attempt 2 log: ${JSON.stringify(entries.map((e) => [e.labels, e.textPayload]))}`);
      assert.ok(entries.some((e) => e.labels['ml.googleapis.com/attempt'] === '1' && e.textPayload === 'attempt starts'));
      assert.equal((await getNode(server.base, survivor.node)).state, 'READY');
      assert.ok(orphans.length > 0, 'the dead agent\'s replica outlived it (by design)');
    } finally {
      // The orphaned replica of the dead agent is a real process: end it.
      victim.cleanup();
    }
    await waitNoProcesses(m, 5000);
    await w.finish();
  });

  it('consumedMLUnits counts both attempts of a replica restarted after its node was lost', async (t) => {
    const w = world(t, { serverEnv: { TRAINPLANE_LEASE_SECONDS: '3', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1' } });
    const server = await w.server();
    // n1-standard-96 with 8 V100: 96 / 8 + 8 = 20 ML units an hour, so
    // that seconds show in the two decimals the job reports.
    const big = { vcpus: 96, memoryMb: 368640, gpuType: 'NVIDIA_TESLA_V100', gpuCount: 8 };
    const a = await w.agent(server, { node: 'u1', ...big });
    const b = await w.agent(server, { node: 'u2', ...big });
    const m = w.mark('units');
    const flag = path.join(w.dir, `${m}.first-attempt-ran`);
    const id = `units_${Date.now()}`;
    // The first attempt runs until its node is lost; the second one ends.
    const script = `if [ -e ${flag} ]; then echo second; sleep 2; else touch ${flag}; echo first; sleep 600; fi; : ${m}`;
    await createJob(server.base, PROJECT, id, {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-96',
      masterConfig: { imageUri: IMAGE, containerCommand: ['sh', '-c', script],
        acceleratorConfig: { count: '8', type: 'NVIDIA_TESLA_V100' } },
    });
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);
    await waitLogLine(server.base, PROJECT, id, /^first$/);
    // What the database recorded, in seconds since the epoch (one clock: this host's).
    const replica = () => w.db.psql('SELECT r.attempt, extract(epoch FROM r.start_time), '
      + 'coalesce(extract(epoch FROM r.end_time), 0), r.vcpus, r.accel_count FROM replicas r '
      + `JOIN jobs j ON j.id = r.job WHERE j.job_id = '${id}'`).split('|').map(Number);
    const [attempt1, start1, , vcpus, accels] = replica();
    assert.deepEqual([attempt1, vcpus, accels], [1, 96, 8]);
    const rate = vcpus / 8 + accels;	// units per hour
    // Let the first attempt run 6 s: 0.03 units, more than the rounding.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, (start1 + 6) * 1000 - Date.now())));
    const first = (await listNodes(server.base)).find((n) => n.replicas === 1);
    const victim = first.name === 'u1' ? a : b;
    const killed = Date.now() / 1000;
    await victim.kill('SIGKILL');
    try {
      await waitNodeState(server.base, victim.node, 'LOST', 30_000);
      const lostSeen = Date.now() / 1000;
      const job = await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 20_000, w.logs);
      const [attempt2, start2, end2] = replica();
      assert.equal(attempt2, 2);
      assert.ok(end2 > start2 && start2 >= killed, `attempt 2 ran after the kill: ${[killed, start2, end2]}`);
      // Attempt 1 ended when its node was found lost: after the kill,
      // before the test saw the node LOST.
      const hours = (s) => s / 3600;
      const low = rate * hours((killed - start1) + (end2 - start2));
      const high = rate * hours((lostSeen - start1) + (end2 - start2));
      const units = job.trainingOutput?.consumedMLUnits;
      assert.ok(units >= Math.round(low * 100) / 100 && units <= Math.round(high * 100) / 100 + 0.01,
        `consumedMLUnits ${units}: both attempts make ${low.toFixed(4)} to ${high.toFixed(4)}; `
        + `the second alone ${(rate * hours(end2 - start2)).toFixed(4)}`);
    } finally {
      victim.cleanup();	// the lost node's replica outlived its agent
    }
    await waitNoProcesses(m, 5000);
    await w.finish();
  });

  it('survives a server restart mid-run: the job completes and nothing is lost', async (t) => {
    const w = world(t);
    const port = await freePort();
    const env = { TRAINPLANE_LISTEN: `127.0.0.1:${port}` };
    let server = await w.server(env);
    await w.agent(server, { node: 'r1', gpuType: T4, gpuCount: 1 });
    const m = w.mark('restart');
    const ids = { ok: `r_ok_${Date.now()}`, cancelled: `r_can_${Date.now()}`, queued: `r_q_${Date.now()}`,
      failed: `r_fail_${Date.now()}`, running: `r_run_${Date.now()}` };
    await createJob(server.base, PROJECT, ids.ok, custom({ master: `echo ok; : ${m}` }));
    await waitJobState(server.base, PROJECT, ids.ok, 'SUCCEEDED', 10_000, w.logs);
    await createJob(server.base, PROJECT, ids.failed, custom({ master: `exit 7; : ${m}` }));
    await waitJobState(server.base, PROJECT, ids.failed, 'FAILED', 10_000, w.logs);
    // Two GPUs fit no node: queued for ever.
    await createJob(server.base, PROJECT, ids.queued, custom({ master: `: ${m}`, gpus: 2 }));
    await createJob(server.base, PROJECT, ids.cancelled, custom({ master: `: ${m}`, gpus: 2 }));
    await cancelJob(server.base, PROJECT, ids.cancelled);
    await waitJobState(server.base, PROJECT, ids.cancelled, 'CANCELLED', 10_000, w.logs);
    await createJob(server.base, PROJECT, ids.running, custom({ master: `echo before; sleep 4; echo after; : ${m}` }));
    await waitJobState(server.base, PROJECT, ids.running, 'RUNNING', 10_000, w.logs);
    await waitLogLine(server.base, PROJECT, ids.running, /^before$/);

    // A server with a parked agent long-poll must exit cleanly on SIGTERM
    // (it aborted in MHD_stop_daemon with suspended connections before
    // 99dfb93); asserted at the end so that the restart is tested either way.
    const stopError = await server.stop().then(() => null, (e) => e);
    w.servers.pop();
    server = await w.server(env);
    assert.equal(server.port, port);

    const job = await waitJobState(server.base, PROJECT, ids.running, 'SUCCEEDED', 20_000, w.logs);
    assert.ok(job.startTime && job.endTime);
    const log = byTime(await readJobLog(server.base, PROJECT, ids.running));
    assert.deepEqual(log.map((e) => e.textPayload), ['before', 'after'], 'each line once');
    assert.ok(log.every((e) => e.labels['ml.googleapis.com/attempt'] === '1'), 'never restarted');
    const expect = { ok: 'SUCCEEDED', failed: 'FAILED', queued: 'QUEUED', cancelled: 'CANCELLED', running: 'SUCCEEDED' };
    for (const [k, state] of Object.entries(expect)) {
      assert.equal((await getJob(server.base, PROJECT, ids[k])).state, state, `${k} job after the restart`);
    }
    const list = await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs?pageSize=100`);
    assert.equal(list.json.jobs.length, 5, 'every job is still there, none twice');
    assert.equal((await getJob(server.base, PROJECT, ids.failed)).errorMessage,
      'The replica master 0 exited with a non-zero status of 7.');
    await w.finish();
    assert.ifError(stopError);
  });

  it('two servers on one database: the leader is SIGKILLed and the other schedules', async (t) => {
    const w = world(t, { serverEnv: { TRAINPLANE_LEASE_SECONDS: '3', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1' } });
    const s1 = await w.server();
    await waitFor(() => /this server is the leader/.test(s1.stderr()), 10_000, 'first server leads');
    const s2 = await w.server();
    await new Promise((r) => setTimeout(r, 300));
    assert.doesNotMatch(s2.stderr(), /this server is the leader/, 'one leader at a time');
    // One agent on each server.
    await w.agent(s1, { node: 'l1', vcpus: 4 });
    await w.agent(s2, { node: 'l2', vcpus: 4 });
    const m = w.mark('leader');
    const before = `lead_a_${Date.now()}`;
    await createJob(s2.base, PROJECT, before, custom({ master: `echo one; : ${m}` }));
    await waitJobState(s2.base, PROJECT, before, 'SUCCEEDED', 10_000, w.logs);

    s1.kill();
    await s1.exited;
    await waitFor(() => /this server is the leader/.test(s2.stderr()), 15_000,
      `the second server did not take over:\n${s2.stderr().slice(-2000)}`);
    // The agent of the dead server is cut off: the new leader finds its
    // node LOST, and places the next job on the other one.
    await waitNodeState(s2.base, 'l1', 'LOST', 30_000);
    assert.equal((await getNode(s2.base, 'l2')).state, 'READY');
    const next = `lead_b_${Date.now()}`;
    await createJob(s2.base, PROJECT, next, custom({ master: `echo two; : ${m}` }));
    await waitJobState(s2.base, PROJECT, next, 'SUCCEEDED', 15_000, w.logs);
    await waitLogLine(s2.base, PROJECT, next, /^two$/);
    assert.equal((await getJob(s2.base, PROJECT, before)).state, 'SUCCEEDED');
    await w.finish();
  });

  it('a leader change mid-preemption neither loses nor duplicates a replica', async (t) => {
    const quotas = path.join(makeTempDir('tp-e2e-q-'), 'quotas.yaml');
    fs.writeFileSync(quotas, 'preemption:\n  priority_below: 100\n');
    const w = world(t, { serverEnv: { TRAINPLANE_QUOTAS_FILE: quotas } });
    const s1 = await w.server();
    await waitFor(() => /this server is the leader/.test(s1.stderr()), 10_000, 'first server leads');
    const s2 = await w.server();
    // One T4, its agent on the server that survives.
    await w.agent(s2, { node: 'pre', gpuType: T4, gpuCount: 1 });
    const m = w.mark('victim');
    const ran = path.join(w.dir, 'victim-ran');
    const low = `pre_low_${Date.now()}`, high = `pre_high_${Date.now()}`;
    await createJob(s2.base, PROJECT, low, custom({ gpus: 1, extra: { scheduling: { priority: 10 } },
      master: `if [ -e ${ran} ]; then exit 0; fi; touch ${ran}; trap 'exit 143' TERM; while :; do sleep 0.05; done; : ${m}` }));
    await waitJobState(s2.base, PROJECT, low, 'RUNNING', 15_000, w.logs);
    // Count the victim's processes all along: never two at once.
    let most = 0, watching = true;
    const watch = (async () => {
      while (watching) {
        most = Math.max(most, pgrep(m).length);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const release = w.gate('high');
    await createJob(s2.base, PROJECT, high, custom({ gpus: 1, extra: { scheduling: { priority: 500 } },
      master: release.wait }));
    // The leader preempts (the victim is QUEUED again), and dies at once.
    await waitJobState(s2.base, PROJECT, low, 'QUEUED', 15_000, w.logs);
    s1.kill();
    await s1.exited;
    await waitFor(() => /this server is the leader/.test(s2.stderr()), 15_000, 'the second server takes over');
    await waitJobState(s2.base, PROJECT, high, 'RUNNING', 20_000, w.logs);
    release.open();
    await waitJobState(s2.base, PROJECT, high, 'SUCCEEDED', 15_000, w.logs);
    await waitJobState(s2.base, PROJECT, low, 'SUCCEEDED', 20_000, w.logs);
    watching = false;
    await watch;
    assert.ok(most <= 1, `the victim ran ${most} times at once`);
    const lines = (await readJobLog(s2.base, PROJECT, low, '', { service: true }))
      .filter((e) => e.resource.labels.task_name === 'service').map((e) => e.textPayload);
    assert.equal(lines.filter((l) => /^The job was preempted: job /.test(l)).length, 1, lines.join('\n'));
    assert.equal(lines.filter((l) => /^Waiting for the training program/.test(l)).length, 2, lines.join('\n'));
    await w.finish();
  });

  it('backfills: a big job that cannot fit yet does not block a small one behind it', async (t) => {
    const w = world(t);
    const server = await w.server();
    await w.agent(server, { node: 'bf', gpuType: T4, gpuCount: 2 });
    const m = w.mark('backfill');
    const hold = `bf_hold_${Date.now()}`;
    const big = `bf_big_${Date.now()}`;
    const small = `bf_small_${Date.now()}`;
    const release = w.gate('hold');
    await createJob(server.base, PROJECT, hold, custom({ master: `${release.wait}; : ${m}`, gpus: 1 }));
    await waitJobState(server.base, PROJECT, hold, 'RUNNING', 10_000, w.logs);
    await createJob(server.base, PROJECT, big, custom({ master: `echo big; : ${m}`, gpus: 2 }));
    await createJob(server.base, PROJECT, small, custom({ master: `echo small; : ${m}`, gpus: 1 }));
    await waitJobState(server.base, PROJECT, small, 'SUCCEEDED', 10_000, w.logs);
    assert.equal((await getJob(server.base, PROJECT, big)).state, 'QUEUED', 'the big job waits for 2 free GPUs');
    assert.equal((await getJob(server.base, PROJECT, hold)).state, 'RUNNING');
    release.open();
    await waitJobState(server.base, PROJECT, big, 'SUCCEEDED', 15_000, w.logs);
    assert.ok(Date.parse((await getJob(server.base, PROJECT, big)).startTime) >=
      Date.parse((await getJob(server.base, PROJECT, hold)).endTime), 'the big job started after the hold ended');
    await w.finish();
  });

  it('enforces scheduling.maxRunningTime', async (t) => {
    const w = world(t);
    const server = await w.server();
    await w.agent(server, { node: 'to' });
    const m = w.mark('timeout');
    const id = `to_run_${Date.now()}`;
    await createJob(server.base, PROJECT, id, custom({ master: `sleep 60; : ${m}`, extra: { scheduling: { maxRunningTime: '2s' } } }));
    const job = await waitJobState(server.base, PROJECT, id, 'FAILED', 30_000, w.logs);
    assert.match(job.errorMessage, /max_running_time/);
    assert.ok(Date.parse(job.endTime) - Date.parse(job.startTime) >= 1900, 'ran about 2 s');
    assert.equal(job.errorMessage, 'Job exceeded the maximum running time (scheduling.max_running_time) of 2s.');
    await waitNoProcesses(m, 5000);
    await w.finish();
    // A server whose agents have just left exits promptly: a parked
    // long-poll whose agent hung up is finished without running it again,
    // and shutdown must not wait for it. Waiting for it would take the
    // poll's whole wait (the agents ask for 10 s); a loaded 2-core machine
    // running make test has taken 4.1 s to stop a server that did not wait.
    assert.ok(w.stopMs[0] < 8000, `the server took ${w.stopMs[0]} ms to exit after SIGTERM`);
  });

  it('re-adopts its replicas after an agent restart: nothing restarts, the job succeeds', async (t) => {
    const w = world(t);
    const server = await w.server();
    const a = await w.agent(server, { node: 'ra', stopReplicasOnExit: false });
    const m = w.mark('readopt');
    const finish = w.gate('readopt');
    const id = `ra_${Date.now()}`;
    // It runs on through the agent's restart, until the test lets it end.
    await createJob(server.base, PROJECT, id, custom({ master: `echo begin; ${finish.wait}; echo end; exit 0; : ${m}` }));
    await waitJobState(server.base, PROJECT, id, 'RUNNING', 10_000, w.logs);
    await waitLogLine(server.base, PROJECT, id, /^begin$/);
    await a.stop();
    assert.equal(pgrep(m).length, 1, 'the replica outlives its agent');
    await a.restart();
    assert.match(a.stderr(), /adopted/, 'the agent re-adopted the replica');
    const incs = [...a.stderr().matchAll(/registered node ra \(incarnation (\w+)/g)].map((x) => x[1]);
    assert.equal(incs.length, 2, a.stderr());
    finish.open();
    const job = await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 15_000, w.logs);
    const log = await readJobLog(server.base, PROJECT, id);
    // PROTOCOL.md "Incarnations": a restarted agent that re-adopts its
    // replicas registers with the same incarnation, so nothing is
    // restarted elsewhere.
    assert.equal(incs[0], incs[1], 'the incarnation survives the agent restart');
    assert.deepEqual(byTime(log).map((e) => `${e.labels['ml.googleapis.com/attempt']}:${e.textPayload}`), ['1:begin', '1:end'],
      'one attempt, each line once');
    assert.equal(job.errorMessage ?? '', '');
    await w.finish();
    // entries:list with orderBy "timestamp asc" returns entries in timestamp
    // order (before 99dfb93 it returned ["end", "begin"] here: rows were
    // numbered after a join that did not keep the inner ORDER BY).
    assertTimeOrder(log);
  });

  it('runs a real podman container to SUCCEEDED and returns its output through the logging API', async (t) => {
    const wrapper = "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec \"$0\" \"$@\"'";
    const extra = '--cgroups=disabled --network=host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096';
    const why = podmanUnusable(wrapper, extra);
    if (why) {
      t.skip(why);
      return;
    }
    const w = world(t);
    const server = await w.server();
    await w.agent(server, {
      node: 'pod', runtime: 'podman', config: { container_wrapper: wrapper, container_extra_args: extra },
    });
    const m = w.mark('podman');
    const id = `pod_${Date.now()}`;
    await createJob(server.base, PROJECT, id, custom({ master: `echo "hello from $(cat /etc/hostname 2>/dev/null || echo a) container ${m}"; echo "TF_CONFIG=$TF_CONFIG"` }));
    await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 60_000, w.logs);
    const log = await waitLogLine(server.base, PROJECT, id, new RegExp(`container ${m}$`), 15_000);
    const tf = JSON.parse(printed(taskLines(log, 'master-replica-0'), 'TF_CONFIG'));
    assert.equal(tf.task.type, 'master');
    // The container is removed once the server recorded its end.
    await waitFor(() => {
      const r = spawnSync('sh', ['-c', `${wrapper} podman ps -a -q --filter label=trainplane.job=projects/${PROJECT}/jobs/${id}`], { encoding: 'utf8' });
      return r.status === 0 && r.stdout.trim() === '';
    }, 20_000, 'the container was not removed');
    await w.finish();
  });

  it('keeps the agent token and user credentials apart: 401 without it, 403 with it on user routes', async (t) => {
    const w = world(t, { serverEnv: { TRAINPLANE_AGENT_TOKEN: 'e2e-cluster-secret' } });
    const server = await w.server();
    await w.agent(server, { node: 'tok', token: 'e2e-cluster-secret' });
    const bad = await w.agent(server, { node: 'intruder', token: 'wrong-token', ready: false });
    const register = {
      incarnation: 'abc', region: 'us-central1', zone: 'us-central1-a', vcpus: 4, memoryMb: 1024,
      address: '127.0.0.1', portRange: [40000, 40010], runtime: 'process',
    };
    const nodesBefore = await listNodes(server.base);
    const jobsBefore = await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs`);
    const status = async (method, p, body, token) => (await request(server.base, method, p, {
      body, headers: token ? { Authorization: `Bearer ${token}` } : {},
    })).status;
    // Agent routes without the token, or with another one.
    assert.equal(await status('POST', '/agent/v1/nodes/ghost:register', register), 401);
    assert.equal(await status('POST', '/agent/v1/nodes/ghost:register', register, 'wrong'), 401);
    assert.equal(await status('POST', '/agent/v1/nodes/tok:sync', { incarnation: 'x', replicas: [] }), 401);
    assert.equal(await status('POST', '/agent/v1/nodes/tok:register', register, 'trainplane-dev-token'), 401,
      'the default token is not this cluster\'s');
    // User routes with the agent token.
    const secret = 'e2e-cluster-secret';
    assert.equal(await status('GET', `/v1/projects/${PROJECT}/jobs`, undefined, secret), 403);
    assert.equal(await status('POST', `/v1/projects/${PROJECT}/jobs`, { jobId: 'sneaky', trainingInput: custom({ master: 'true' }) }, secret), 403);
    assert.equal(await status('GET', '/trainplane/v1/nodes', undefined, secret), 403);
    assert.equal(await status('POST', '/trainplane/v1/nodes/tok:drain', {}, secret), 403);
    assert.equal(await status('POST', '/v2/entries:list', { resourceNames: [`projects/${PROJECT}`] }, secret), 403);
    // Nothing changed.
    await new Promise((r) => setTimeout(r, 500));
    const nodesAfter = await listNodes(server.base);
    assert.deepEqual(nodesAfter.map((n) => [n.name, n.state]), nodesBefore.map((n) => [n.name, n.state]));
    assert.deepEqual(nodesAfter.map((n) => n.name), ['tok'], 'neither ghost nor the intruder agent registered');
    assert.match(bad.stderr(), /401|UNAUTHENTICATED|token/i, 'the intruder agent was refused');
    const jobsAfter = await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs`);
    assert.deepEqual(jobsAfter.json, jobsBefore.json);
    assert.equal((await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs/sneaky`)).status, 404);
    // The right token works end to end.
    const id = `tok_${Date.now()}`;
    const m = w.mark('token');
    await createJob(server.base, PROJECT, id, custom({ master: `echo fine; : ${m}` }));
    await waitJobState(server.base, PROJECT, id, 'SUCCEEDED', 10_000, w.logs);
    await w.finish();
  });

  it('simulate runtime: fail-3-after-1s goes QUEUED, PREPARING, RUNNING, FAILED with the message', async (t) => {
    const w = world(t);
    const server = await w.server();
    const a = await w.agent(server, { node: 'sim', runtime: 'simulate' });
    const id = `sim_${Date.now()}`;
    process.kill(a.pid, 'SIGSTOP');	// holds PREPARING until it syncs again
    let created;
    let watch;
    try {
      created = await createJob(server.base, PROJECT, id, { scaleTier: 'BASIC', region: 'us-central1',
        masterConfig: { imageUri: IMAGE } }, { labels: { 'trainplane-simulate': 'fail-3-after-1s' } });
      watch = watchJob(server.base, PROJECT, id);
      await watch.seen('PREPARING', 10_000);
    } finally {
      process.kill(a.pid, 'SIGCONT');
    }
    const job = await waitJobState(server.base, PROJECT, id, 'FAILED', 10_000, w.logs);
    const states = dedupe([created.state, ...(await watch.stop())]);
    // RUNNING lasts about a second: a poll on a loaded machine can miss it
    // (make test once saw QUEUED, PREPARING, FAILED); its startTime and
    // endTime say that it ran.
    assert.deepEqual(states.filter((st) => st !== 'RUNNING'), ['QUEUED', 'PREPARING', 'FAILED']);
    assert.equal(job.errorMessage, 'The replica master 0 exited with a non-zero status of 3.');
    const ran = Date.parse(job.endTime) - Date.parse(job.startTime);
    assert.ok(ran >= 900 && ran < 5000, `ran about 1 s: ${ran} ms`);
    const log = await readJobLog(server.base, PROJECT, id);
    assert.ok(log.some((e) => /exiting with 3/.test(e.textPayload) && e.severity === 'ERROR'), JSON.stringify(log));
    // And the default script succeeds.
    const ok = `sim_ok_${Date.now()}`;
    await createJob(server.base, PROJECT, ok, { scaleTier: 'BASIC', region: 'us-central1', masterConfig: { imageUri: IMAGE } },
      { labels: { 'trainplane-simulate': 'run-1s-exit-0' } });
    await waitJobState(server.base, PROJECT, ok, 'SUCCEEDED', 10_000, w.logs);
    await w.finish();
  });
});
