// Fencing of lost nodes (issue 12 item 3): when an agent stops renewing its
// lease (kill -9, or SIGSTOP for longer than the lease), the replicas it ran
// are stopped on their node before the server starts them again elsewhere,
// so the old and the new copy of a task never run at once.
//
// Real server, real agents, process replicas. Each replica appends a line
// "<uptime s> <role> <pid> <event>" to one shared file every 50 ms (the
// host's /proc/uptime, in 10 ms steps, read by the shell's own `read`: a
// `date` would be a fork and an exec every 50 ms, most of the file's CPU);
// a new attempt is a new shell, so a new pid. The test asserts that the old copy's
// last line comes before the new copy's first, and prints the timeline
// measured from the moment the node's lease passed (its last sync as the
// server recorded it, plus the lease).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, PODMAN_EXTRA, PODMAN_IMAGE, PODMAN_WRAPPER, cancelJob, createJob, getJob, getNode, killMarked,
  podmanUnusable, startAgent, waitJobState, waitNodeState,
} from './agents.mjs';

const PROJECT = 'fence';
const T4 = 'NVIDIA_TESLA_T4';
const LEASE_S = 4;
const GRACE_S = 1;

let pg;
before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  if (pg) await pg.cleanup();
});

let worlds = 0;

/** A server with a short lease and three 1-GPU agents; everything killed after the test. */
async function world(t, { lease = LEASE_S, syncInterval = 1 } = {}) {
  const w = { dir: makeTempDir('tp-fence-'), agents: [], servers: [] };
  t.after(() => {
    for (const a of w.agents) {
      try { if (a.alive()) process.kill(a.pid, 'SIGCONT'); } catch { /* gone */ }
      a.cleanup();
    }
    if (w.mark) killMarked(w.mark);
    for (const s of w.servers) s.kill();
  });
  w.server = await startServer({
    pg: pg.newDatabase('fence'),
    env: {
      TRAINPLANE_SCHEDULER_TICK_MS: '200',
      TRAINPLANE_SYNC_INTERVAL_SECONDS: String(syncInterval),
      TRAINPLANE_LEASE_SECONDS: String(lease),
    },
  });
  w.servers.push(w.server);
  for (const [i, node] of ['f1', 'f2', 'f3'].entries()) {
    w.agents.push(await startAgent(w.server, {
      node, dir: w.dir, gpuType: T4, gpuCount: 1, address: `127.0.0.${i + 1}`, stopGraceSeconds: GRACE_S,
    }));
  }
  w.file = path.join(w.dir, 'signs-of-life.txt');
  fs.writeFileSync(w.file, '');
  w.mark = `tpfence_${process.pid}_${Date.now().toString(36)}_${++worlds}`;
  w.logs = () => [...w.agents.map((a) => `== agent ${a.node}\n${a.stderr().slice(-2500)}`),
    `== server\n${w.server.stderr().slice(-2500)}`].join('\n');
  return w;
}

/**
 * A 2-node job: master and one worker, one GPU each (so on two of the three
 * 1-GPU nodes). The master ignores SIGTERM (only the SIGKILL after the grace
 * ends it: the worst case); the worker writes a line when SIGTERM comes and
 * exits.
 */
function twoNodeJob(w) {
  const sign = (role, event) => `read up rest < /proc/uptime; echo "$up ${role} $$ ${event}" >> ${w.file}`;
  const alive = (role) => `while :; do ${sign(role, 'alive')}; sleep 0.05; done`;
  const master = `trap "" TERM; ${alive('master')}; : ${w.mark}`;
  const worker = `trap '${sign('worker', 'sigterm')}; exit 143' TERM; ${alive('worker')}; : ${w.mark}`;
  const accel = { acceleratorConfig: { count: '1', type: T4 } };
  return {
    scaleTier: 'CUSTOM', region: 'us-central1',
    masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'localhost/trainer:test', containerCommand: ['sh', '-c', master], ...accel },
    workerType: 'n1-standard-4', workerCount: '1',
    workerConfig: { imageUri: 'localhost/trainer:test', containerCommand: ['sh', '-c', worker], ...accel },
  };
}

/** Epoch ms = uptime ms + this (within the 10 ms of an uptime step; once, so every line shares it). */
const UPTIME_OFFSET_MS = Date.now() - Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;

/** The shared file's lines: [{ t (epoch ms), role, pid, event }]. */
function signs(w) {
  return fs.readFileSync(w.file, 'utf8').split('\n').filter(Boolean).map((l) => {
    const [up, role, pid, event] = l.split(' ');
    return { t: Math.round(Number(up) * 1000 + UPTIME_OFFSET_MS), role, pid: Number(pid), event };
  });
}

/** The copies of `role` in order of first appearance: [{ pid, first, last, events }]. */
function copies(w, role) {
  const by = new Map();
  for (const s of signs(w).filter((x) => x.role === role)) {
    const c = by.get(s.pid) ?? { pid: s.pid, first: s.t, last: s.t, events: [] };
    c.first = Math.min(c.first, s.t);
    c.last = Math.max(c.last, s.t);
    c.events.push(s.event);
    by.set(s.pid, c);
  }
  return [...by.values()].sort((a, b) => a.first - b.first);
}

/** The agent whose work dir holds the current directory of process `pid`. */
function agentOf(w, pid) {
  const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
  const a = w.agents.find((x) => cwd.startsWith(`${x.workDir}/`));
  assert.ok(a, `process ${pid} (cwd ${cwd}) belongs to no agent`);
  return a;
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return !/ Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ')'));
  } catch {
    return false;
  }
}

/** Starts the job and waits until both replicas write; returns the role's first copy and its agent. */
async function startJob(w, id, role) {
  await createJob(w.server.base, PROJECT, id, twoNodeJob(w));
  await waitJobState(w.server.base, PROJECT, id, 'RUNNING', 20_000, w.logs);
  await waitFor(() => copies(w, 'master').length === 1 && copies(w, 'worker').length === 1, 10_000,
    'both replicas write their signs of life');
  const [old] = copies(w, role);
  return { old, agent: agentOf(w, old.pid) };
}

/**
 * Waits for the second copy of `role` and for it to have written for a
 * second; asserts the first copy's last sign of life comes before the second
 * copy's first, and returns the timeline relative to the lease's end.
 */
async function assertNoOverlap(w, role, old, victim, what) {
  await waitFor(() => copies(w, role).length >= 2, 40_000, `a second ${role} started`, 50)
    .catch((e) => { throw new Error(`${e.message}\n${w.logs()}`); });
  const [, fresh] = copies(w, role);
  await waitFor(() => copies(w, role)[1].last - fresh.first >= 1000, 10_000, `the new ${role} runs`, 50);
  const [first, second, ...more] = copies(w, role);
  assert.deepEqual(more, [], `no third copy of the ${role}`);
  const node = await waitNodeState(w.server.base, victim.node, 'LOST', 1000).catch(() => null);
  const lastSync = Date.parse((node ?? await getNode(w.server.base, victim.node)).lastSyncTime);
  const leaseEnd = lastSync + LEASE_S * 1000;
  const timeline = {
    case: what,
    role,
    oldLastSignOfLife_s: (first.last - leaseEnd) / 1000,
    newFirstSignOfLife_s: (second.first - leaseEnd) / 1000,
    gap_ms: second.first - first.last,
    oldGotSigterm: first.events.includes('sigterm'),
  };
  console.log(`# ${what}: the lease of ${victim.node} passed at ${new Date(leaseEnd).toISOString()}; ` +
    `old ${role} (pid ${first.pid}) last alive ${timeline.oldLastSignOfLife_s.toFixed(2)} s after it` +
    `${timeline.oldGotSigterm ? ' (SIGTERM noted)' : ''}; new ${role} (pid ${second.pid}) first alive ` +
    `${timeline.newFirstSignOfLife_s.toFixed(2)} s after it; overlap ${Math.max(0, -timeline.gap_ms)} ms`);
  assert.ok(first.last < second.first,
    `two copies of the ${role} ran at once: the old one (pid ${first.pid}) wrote until ${first.last}, ` +
    `the new one (pid ${second.pid}) from ${second.first} (${JSON.stringify(timeline)})\n${w.logs()}`);
  assert.ok(!processAlive(first.pid), `the old ${role} (pid ${first.pid}) is gone`);
  return timeline;
}

// Each test has a world of its own (database, server, agents, markers): two run at once.
describe('fencing of lost nodes', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set', concurrency: 2 }, () => {
  it('kill -9 of the agent running the master: the old master is gone before the new one starts', async (t) => {
    const w = await world(t);
    const id = `kill9_${Date.now()}`;
    const { old, agent: victim } = await startJob(w, id, 'master');
    await victim.kill('SIGKILL');
    const timeline = await assertNoOverlap(w, 'master', old, victim, 'kill -9');
    // The stubborn master ignored SIGTERM: the SIGKILL after the grace ended
    // it, no later than the lease plus the grace (and a scheduling hiccup).
    assert.ok(timeline.oldLastSignOfLife_s < GRACE_S + 0.5,
      `the old master was stopped by lease + grace: ${JSON.stringify(timeline)}\n${w.logs()}`);
    assert.ok(timeline.newFirstSignOfLife_s >= GRACE_S,
      `the new master started after lease + grace: ${JSON.stringify(timeline)}`);
    assert.equal((await getJob(w.server.base, PROJECT, id)).state, 'RUNNING', 'the job runs on');
    assert.equal(copies(w, 'worker').length, 1, 'the worker on the other node was left alone');
    await cancelJob(w.server.base, PROJECT, id);
    await waitJobState(w.server.base, PROJECT, id, 'CANCELLED', 20_000, w.logs);
    victim.cleanup();
    for (const a of w.agents) if (a.alive()) await a.stop();
    await w.server.stop();
  });

  it('SIGSTOP of an agent past its lease, then SIGCONT: the old worker is gone before the new one starts', async (t) => {
    const w = await world(t);
    const id = `stop_${Date.now()}`;
    const { old, agent: frozen } = await startJob(w, id, 'worker');
    process.kill(frozen.pid, 'SIGSTOP');
    let timeline;
    try {
      timeline = await assertNoOverlap(w, 'worker', old, frozen, 'SIGSTOP');
    } finally {
      process.kill(frozen.pid, 'SIGCONT');
    }
    assert.ok(timeline.oldGotSigterm, `the old worker was sent SIGTERM: ${JSON.stringify(timeline)}`);
    assert.ok(timeline.oldLastSignOfLife_s < GRACE_S + 0.5,
      `the old worker was stopped by lease + grace: ${JSON.stringify(timeline)}\n${w.logs()}`);
    // Thawed, the agent comes back: its node is READY again, it forgets the
    // fenced attempt and starts nothing of it; the job runs on.
    await waitNodeState(w.server.base, frozen.node, 'READY', 15_000, frozen);
    await waitFor(async () => (await getNode(w.server.base, frozen.node)).replicas === 0, 10_000,
      'the thawed node holds nothing');
    // A few sync rounds of the thawed agent: nothing of the old attempt may start again.
    const back = Date.parse((await getNode(w.server.base, frozen.node)).lastSyncTime);
    await waitFor(async () => Date.parse((await getNode(w.server.base, frozen.node)).lastSyncTime) >= back + 2000,
      10_000, 'the thawed agent syncs on', 100);
    assert.match(frozen.stderr(), /lease renewed/, 'the thawed agent renewed its lease');
    assert.equal(copies(w, 'worker').length, 2, `no third worker: ${JSON.stringify(copies(w, 'worker'))}`);
    assert.equal(copies(w, 'master').length, 1, 'the master on the other node was left alone');
    assert.equal((await getJob(w.server.base, PROJECT, id)).state, 'RUNNING', 'the job runs on');
    await cancelJob(w.server.base, PROJECT, id);
    await waitJobState(w.server.base, PROJECT, id, 'CANCELLED', 20_000, w.logs);
    for (const a of w.agents) if (a.alive()) await a.stop();
    await w.server.stop();
  });

  it('an agent restarted within its lease re-adopts its replicas: nothing is fenced or restarted', async (t) => {
    // A lease long enough for a restart on a loaded machine (starting a
    // process can take seconds there): what is checked is that a restart
    // within it is not fenced, not how fast a restart is.
    const lease = 10;
    const w = await world(t, { lease });
    const id = `readopt_${Date.now()}`;
    const { old, agent } = await startJob(w, id, 'master');
    await agent.kill('SIGKILL');
    await agent.restart();	// registers (renewing the lease) well within 10 s
    // Past the old lease, its grace and the margin: still the one copy.
    const until = Date.now() + (lease + GRACE_S + 3) * 1000;
    await waitFor(() => Date.now() > until && copies(w, 'master')[0].last > until - 500, 20_000,
      'the master writes on past the old lease', 100);
    assert.equal(copies(w, 'master').length, 1, `one master: ${JSON.stringify(copies(w, 'master'))}`);
    assert.equal(copies(w, 'master')[0].pid, old.pid);
    assert.ok(processAlive(old.pid));
    assert.equal((await getNode(w.server.base, agent.node)).state, 'READY');
    assert.doesNotMatch(agent.stderr(), /no sync answered within the lease|fenced/);
    await cancelJob(w.server.base, PROJECT, id);
    await waitJobState(w.server.base, PROJECT, id, 'CANCELLED', 20_000, w.logs);
    for (const a of w.agents) if (a.alive()) await a.stop();
    await w.server.stop();
  });

  it('a long-poll interval near the lease does not lapse it: the agent asks for less', async (t) => {
    // lease 10 s, sync every 8 s: two 8 s polls outlast a lease counted from
    // the first one's send; the agent waits at most (10 - 2) / 2 = 4 s. (A
    // lease of seconds, not of a moment: a loaded machine can take a second
    // or two to answer a sync, and a lapse then would be the machine's.)
    const w = await world(t, { lease: 10, syncInterval: 8 });
    const id = `interval_${Date.now()}`;
    const { old, agent } = await startJob(w, id, 'master');
    // Several poll rounds of the master's agent (its node's last sync moves on).
    const from = Date.parse((await getNode(w.server.base, agent.node)).lastSyncTime);
    await waitFor(async () => Date.parse((await getNode(w.server.base, agent.node)).lastSyncTime) >= from + 10_000,
      30_000, 'ten seconds of syncs', 200);
    assert.equal(copies(w, 'master').length, 1, `one master: ${JSON.stringify(copies(w, 'master'))}`);
    assert.ok(processAlive(old.pid), 'the master was never fenced');
    for (const a of w.agents)
      assert.doesNotMatch(a.stderr(), /no sync answered within the lease/, `agent ${a.node} lapsed`);
    assert.equal((await getNode(w.server.base, agent.node)).state, 'READY');
    await cancelJob(w.server.base, PROJECT, id);
    await waitJobState(w.server.base, PROJECT, id, 'CANCELLED', 20_000, w.logs);
    for (const a of w.agents) if (a.alive()) await a.stop();
    await w.server.stop();
  });
});

/** podman's view of the containers of a job: [{ name, attempt, status, started }], started in s (<= 0: never). */
function containersOf(job) {
  const ids = spawnSync('podman', ['ps', '-a', '-q', '--filter', `label=trainplane.job=${job}`], { encoding: 'utf8' });
  return ids.stdout.split('\n').filter(Boolean).map((cid) => {
    const r = spawnSync('podman', ['inspect', '--type=container', '--format',
      '{{.Name}} {{index .Config.Labels "trainplane.attempt"}} {{.State.Status}} {{.State.StartedAt.Unix}}', cid],
    { encoding: 'utf8' });
    const [name, attempt, status, started] = r.stdout.trim().split(' ');
    return { name, attempt: Number(attempt), status, started: Number(started) };
  });
}

describe('fencing of containers being created', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set' }, () => {
  it('kill -9 of the agent while its container is still being created: that container never runs', async (t) => {
    const why = podmanUnusable();
    if (why) {
      t.skip(why);
      return;
    }
    const dir = makeTempDir('tp-fence-pod-');
    const gcs = path.join(dir, 'gcs');
    fs.mkdirSync(gcs);
    // In a bucket of the job's project: a container sees its project's
    // buckets only (/gcs/<bucket>), made below through the storage API.
    const signsFile = path.join(gcs, 'fence-signs', 'signs.txt');
    const id = `podcreate_${Date.now()}`;
    const job = `projects/${PROJECT}/jobs/${id}`;
    const agents = [];
    let server;
    t.after(async () => {
      for (const a of agents) a.cleanup();
      spawnSync('sh', ['-c', `podman ps -a -q --filter label=trainplane.job=${job} | xargs -r podman rm -f`]);
      if (server) await server.stop().catch(() => server.kill());
    });
    server = await startServer({
      pg: pg.newDatabase('fencepod'),
      env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1', TRAINPLANE_LEASE_SECONDS: String(LEASE_S),
        TRAINPLANE_STORAGE_ROOT: gcs },
    });
    const bucket = await request(server.base, 'POST', `/storage/v1/b?project=${PROJECT}`, { body: { name: 'fence-signs' } });
    assert.equal(bucket.status, 200, bucket.text);
    fs.mkdirSync(path.dirname(signsFile), { recursive: true });
    fs.writeFileSync(signsFile, '');
    // The first node's `create` (the pull; `run -d` before the fix) takes 9 s:
    // longer than lease + grace + 2 s.
    const slow = path.join(dir, 'slow-create.sh');
    fs.writeFileSync(slow, '#!/bin/sh\n# $1 is the engine, $2 its verb\n' +
      `case "$2" in create|run) touch ${dir}/create-began; sleep 9 ;; esac\n` +
      `${PODMAN_WRAPPER} "$@"\nrc=$?\ncase "$2" in create|run) touch ${dir}/create-ended ;; esac\nexit $rc\n`);
    fs.chmodSync(slow, 0o755);
    const podman = (node, wrapper) => startAgent(server, {
      node, dir, gpuType: T4, gpuCount: 1, stopGraceSeconds: GRACE_S, runtime: 'podman',
      config: { container_wrapper: wrapper, container_extra_args: PODMAN_EXTRA, storage_root: gcs },
    });
    const victim = await podman('c1', slow);
    agents.push(victim);
    // Each copy of the master names itself (a fresh uuid) and writes the host's
    // uptime (0.01 s) every 50 ms to the shared storage.
    const master = 'id=$(cat /proc/sys/kernel/random/uuid); while :; do read up rest < /proc/uptime; ' +
      'echo "$up $id alive" >> /gcs/fence-signs/signs.txt; sleep 0.05; done';
    await createJob(server.base, PROJECT, id, {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
      masterConfig: { imageUri: PODMAN_IMAGE, containerCommand: ['sh', '-c', master],
        acceleratorConfig: { count: '1', type: T4 } },
    });
    await waitFor(() => fs.existsSync(path.join(dir, 'create-began')), 20_000, 'the first create began');
    agents.push(await podman('c2', PODMAN_WRAPPER));
    await victim.kill('SIGKILL');

    const uptimeOffset = () => Date.now() - Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
    const copies = () => {
      const off = uptimeOffset();
      const by = new Map();
      for (const line of fs.readFileSync(signsFile, 'utf8').split('\n').filter(Boolean)) {
        const [up, uuid] = line.split(' ');
        const at = Number(up) * 1000 + off;
        const c = by.get(uuid) ?? { uuid, first: at, last: at };
        c.last = Math.max(c.last, at);
        by.set(uuid, c);
      }
      return [...by.values()].sort((a, b) => a.first - b.first);
    };
    const logs = () => agents.map((a) => `== agent ${a.node}\n${a.stderr().slice(-2500)}`).join('\n');
    await waitFor(() => copies().length >= 1, 60_000, 'a copy of the master runs').catch((e) => {
      throw new Error(`${e.message}\n${logs()}`);
    });
    // The old create ends (9 s after it began); watch 3 s more.
    const ended = path.join(dir, 'create-ended');
    await waitFor(() => fs.existsSync(ended), 30_000, 'the first create ended');
    const createEnded = fs.statSync(ended).mtimeMs;
    await waitFor(() => Date.now() > createEnded + 3000, 10_000, 'three seconds past it', 100);

    const node = await getNode(server.base, 'c1');
    assert.equal(node.state, 'LOST');
    const leaseEnd = Date.parse(node.lastSyncTime) + LEASE_S * 1000;
    const seen = copies();
    const containers = containersOf(job);
    const old = containers.find((c) => c.attempt === 1);
    const fresh = containers.find((c) => c.attempt === 2);
    console.log(`# container being created: the lease of c1 passed at ${new Date(leaseEnd).toISOString()}; ` +
      `the old create ended ${((createEnded - leaseEnd) / 1000).toFixed(2)} s after it, leaving the container ` +
      `${old?.status}; the new master first alive ${((seen[0].first - leaseEnd) / 1000).toFixed(2)} s after it; ` +
      `copies that ever ran: ${seen.length}`);
    assert.ok(createEnded > leaseEnd + (GRACE_S + 2) * 1000, 'the create outlasted lease + grace + 2 s');
    assert.equal(seen.length, 1, `one copy of the master ever ran: ${JSON.stringify(seen)} ${JSON.stringify(containers)}\n${logs()}`);
    assert.ok(old, `the old attempt's container exists: ${JSON.stringify(containers)}`);
    assert.ok(old.status === 'created' && old.started <= 0, `the old container never started: ${JSON.stringify(old)}`);
    assert.ok(fresh && fresh.status === 'running', `the new attempt runs: ${JSON.stringify(containers)}`);
    assert.ok(seen[0].first > leaseEnd + GRACE_S * 1000, 'the new master started after lease + grace');

    await cancelJob(server.base, PROJECT, id);
    await waitJobState(server.base, PROJECT, id, 'CANCELLED', 30_000, logs);
    for (const a of agents) if (a.alive()) await a.stop();
  });
});
