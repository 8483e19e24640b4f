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

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';

import {
  REPO_ROOT, SANITIZED, SERVER_BIN, makeTempDir, postgresProcessesFor, request, sanitizerReport,
  startPostgres, startServer, waitFor,
} from './harness.mjs';
import {
  AGENT_BIN, AGENT_TOKEN, createJob, freePort, getNode, killMarked, readJobLog,
  startAgent, waitJobState, waitLogLine,
} from './agents.mjs';

const RUN_SH = path.join(REPO_ROOT, 'tools/run.sh');
const NODES = ['local-gpu-1', 'local-tpu-1'];

// --- make run ------------------------------------------------------------------------

function baseEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRAINPLANE_')) env[k] = v;
  return env;
}

const sanitizerEnv = () => (SANITIZED ? {
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
  LSAN_OPTIONS: 'exitcode=23',
} : {});

/** PIDs of processes (replicas) whose working directory is under dir. */
function processesUnder(dir) {
  const out = [];
  for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cwd;
    try { cwd = fs.readlinkSync(`/proc/${p}/cwd`); } catch { continue; }
    if (cwd.startsWith(dir + '/') && Number(p) !== process.pid) out.push(Number(p));
  }
  return out;
}

const liveRuns = new Set();

/**
 * Starts tools/run.sh (what `make run` runs) from the repository root with
 * its state in stateDir, listening on port; waits until the server answers
 * and both local nodes are READY, calling beforeNodes(run) (when given) as
 * soon as the server answers. Returns { base, stateDir, output(), stop(), kill() }.
 */
async function startRun(stateDir, port, { env = {}, beforeNodes } = {}) {
  const child = spawn(RUN_SH, [SERVER_BIN, AGENT_BIN], {
    cwd: REPO_ROOT,
    detached: true,	// a process group of its own, for the clean-up
    env: {
      ...baseEnv(), ...sanitizerEnv(),
      TRAINPLANE_STATE_DIR: stateDir,
      TRAINPLANE_LISTEN: `127.0.0.1:${port}`,
      // The worker below ignores SIGTERM: its agent SIGKILLs it after this
      // grace, and make run's stop waits for that.
      TRAINPLANE_AGENT_STOP_GRACE_SECONDS: '6',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const run = {
    base: `http://127.0.0.1:${port}`,
    stateDir,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    /** SIGTERM to run.sh (what Ctrl-C does through its trap); waits until it and all it started ended. */
    async stop() {
      if (run.alive()) child.kill('SIGTERM');
      const r = await Promise.race([exited,
        new Promise((resolve) => setTimeout(() => resolve(null), 60_000).unref())]);
      if (!r) {
        run.kill();
        assert.fail(`make run did not stop within 60 s of SIGTERM:\n${out.slice(-4000)}`);
      }
      liveRuns.delete(run);
      // What it wrote last, unless a process it left holds the pipe.
      let timer;
      const closed = (st) => (st.closed ? null : once(st, 'close'));
      await Promise.race([Promise.all([closed(child.stdout), closed(child.stderr)]),
        new Promise((resolve) => { timer = setTimeout(resolve, 3000); })]);
      clearTimeout(timer);
      child.stdout.destroy();
      child.stderr.destroy();
      const report = sanitizerReport(out);
      assert.equal(report, null, `sanitizer report in make run's output:\n${report}`);
      await waitFor(() => processesUnder(stateDir).length === 0 &&
        postgresProcessesFor(path.join(stateDir, 'postgres')).length === 0,
      20_000, `make run left processes behind in ${stateDir}`, 100);
    },
    /** Clean-up after a failure: everything run.sh started, replicas and database too. */
    kill() {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      child.stdout.destroy();
      child.stderr.destroy();
      for (const p of [...processesUnder(stateDir), ...postgresProcessesFor(path.join(stateDir, 'postgres'))]) {
        try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
      }
      liveRuns.delete(run);
    },
  };
  liveRuns.add(run);
  try {
    await waitFor(async () => {
      if (!run.alive()) throw new Error('make run exited');
      return (await request(run.base, 'GET', '/readyz', { timeoutMs: 2000 })).status === 200;
    }, 90_000, 'make run: the server did not become ready', 50);
    if (beforeNodes) await beforeNodes(run);
    for (const n of NODES) {
      await waitFor(async () => (await getNode(run.base, n))?.state === 'READY', 30_000,
        `make run: node ${n} not READY`, 100);
    }
  } catch (e) {
    run.kill();
    throw new Error(`${e.message}\n${out.slice(-6000)}`);
  }
  return run;
}

after(() => {
  for (const r of [...liveRuns]) r.kill();
});

// The job of every scenario: a master that prints a marker and succeeds, and
// a worker that ignores SIGTERM, so that stopping make run just after the
// job SUCCEEDED leaves the worker killed, unreported, in its agent's work dir.
function twoReplicaJob(marker) {
  const script = 'case "$TF_CONFIG" in ' +
    `*'"type":"worker"'*) trap "" TERM; echo worker-${marker}; while :; do sleep 1; done;; ` +
    `*) sleep 2; echo master-${marker}; exit 0;; esac`;
  return {
    scaleTier: 'CUSTOM', region: 'us-central1',
    masterType: 'n1-standard-4', workerType: 'n1-standard-4', workerCount: '1',
    masterConfig: { imageUri: 'localhost/trainer:latest', containerCommand: ['sh', '-c', script],
                    acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } },
    workerConfig: { acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } },
  };
}

/**
 * Runs the two-replica job to SUCCEEDED on a make run. With check, waits
 * until the log shows that both its replicas ran (the master exits 0 whether
 * or not the worker ever started) and returns it; without, returns at once
 * (the caller stops make run within the worker's grace period).
 */
async function runJob(run, jobId, marker, { check = true, created = false } = {}) {
  if (!created) await createJob(run.base, 'demo', jobId, twoReplicaJob(marker));
  await waitJobState(run.base, 'demo', jobId, 'SUCCEEDED', 60_000, () => run.output().slice(-6000));
  if (!check) return [];
  await waitLogLine(run.base, 'demo', jobId, new RegExp(`^master-${marker}$`), 20_000);
  return waitLogLine(run.base, 'demo', jobId, new RegExp(`^worker-${marker}$`), 20_000);
}

/** The replica folders in a local agent's work dir (under the state dir). */
function replicaDirs(stateDir, node = 'local-gpu-1') {
  const dir = path.join(stateDir, `agent-${node}`, 'replicas');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

/** What the checkout's own var/ holds (names, 3 levels), to see that make run leaves it alone. */
function checkoutVar() {
  const root = path.join(REPO_ROOT, 'var');
  const out = [];
  const walk = (d, depth) => {
    let entries;
    try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = path.join(d, e.name);
      out.push(p);
      if (e.isDirectory() && depth < 2) walk(p, depth + 1);
    }
  };
  walk(root, 0);
  return out.sort();
}

// Each scenario has its own state directories and ports: they run at once.
describe('make run keeps its state in its state directory; replica identities never repeat', { concurrency: 3 }, () => {
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

/** chown -R dst as src is (root copies files as root; PostgreSQL's data dir must stay its user's). */
function copyOwnership(src, dst) {
  const st = fs.statSync(src);
  const walk = (p) => {
    fs.lchownSync(p, st.uid, st.gid);
    if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
  };
  walk(dst);
}

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
      await waitFor(() => !fs.existsSync(path.join(replicas, old[0])), 20_000, 'the foreign replica removed');
      assert.match(agent.stderr(), /removed/);
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
