// Agent helpers for the end-to-end scheduler tests: start a real
// trainplane-agent with a declared inventory and a private work dir, wait
// for its node through the nodes API, stop or kill it, and clean up every
// process it left behind (replicas outlive a killed agent by design).
// Job helpers: create, watch the states a job goes through, wait for a
// state, read its log through the logging API, find replica processes.
//
// Builds on harness.mjs (the private PostgreSQL and the server).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

import { REPO_ROOT, SANITIZED, makeTempDir, request, sanitizerReport, waitFor } from './harness.mjs';

export const AGENT_BIN = process.env.TRAINPLANE_AGENT_BIN;
export const AGENT_TOKEN = 'trainplane-dev-token';

// --- clean-up on exit --------------------------------------------------------

const liveAgents = new Set();

function killAgentTree(agent) {
  try { if (agent.alive()) agent.child.kill('SIGKILL'); } catch { /* gone */ }
  killLeftovers(agent);
}

process.on('exit', () => {
  for (const a of liveAgents) killAgentTree(a);
  liveAgents.clear();
});

// --- processes -------------------------------------------------------------------

function procEntries() {
  return fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
}

function cmdlineOf(pid) {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { return null; }
}

function cwdOf(pid) {
  try { return fs.readlinkSync(`/proc/${pid}/cwd`); } catch { return null; }
}

function isZombie(pid) {
  try { return / Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ')')); } catch { return true; }
}

/**
 * PIDs of live (non-zombie) processes whose command line contains `marker`
 * (what `pgrep -f marker` finds; this process and pgrep itself excluded).
 */
export function pgrep(marker) {
  const r = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
  return (r.stdout || '').split('\n').filter(Boolean).map(Number)
    .filter((pid) => pid !== process.pid && !isZombie(pid));
}

/** SIGKILLs every process `pgrep -f marker` finds. */
export function killMarked(marker) {
  for (const pid of pgrep(marker)) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

/** Waits until no process matches `marker`; throws with their command lines otherwise. */
export async function waitNoProcesses(marker, timeoutMs = 10_000) {
  try {
    await waitFor(() => pgrep(marker).length === 0, timeoutMs, 'processes still running', 50);
  } catch {
    const left = pgrep(marker).map((p) => `${p}: ${(cmdlineOf(p) ?? []).join(' ')}`);
    if (left.length) assert.fail(`processes matching '${marker}' still running after ${timeoutMs} ms:\n${left.join('\n')}`);
  }
}

/**
 * The processes an agent left behind: its supervisors (forks of the agent,
 * so their command line names the agent's config file) and the replicas
 * (their working directory is under the agent's work dir).
 */
export function leftoverPids(agent) {
  const out = [];
  for (const pid of procEntries()) {
    if (pid === process.pid || pid === agent.pid || isZombie(pid)) continue;
    const cmd = cmdlineOf(pid);
    const cwd = cwdOf(pid);
    if ((cmd && cmd.includes(agent.configPath)) || (cwd && cwd.startsWith(agent.workDir + '/'))) out.push(pid);
  }
  return out;
}

function killLeftovers(agent) {
  for (let round = 0; round < 3; round++) {
    const pids = leftoverPids(agent);
    if (!pids.length) return;
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    spawnSync('sleep', ['0.05']);
  }
}

// --- podman ------------------------------------------------------------------------

/** The test image: a busybox rootfs imported as a local image (ENVIRONMENT.md). */
export const PODMAN_IMAGE = 'localhost/trainer:test';
/** What podman needs on the build machines (agent/README.md, "podman on the build machines"). */
export const PODMAN_WRAPPER = "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec \"$0\" \"$@\"'";
export const PODMAN_EXTRA = '--cgroups=disabled --network=host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096';

/** Why podman cannot run a container here (null when it can); builds the test image when missing. */
export function podmanUnusable(wrapper = PODMAN_WRAPPER, extra = PODMAN_EXTRA) {
  const IMAGE = PODMAN_IMAGE;
  const sh = (cmd) => spawnSync('sh', ['-c', cmd], { encoding: 'utf8', timeout: 60_000 });
  if (sh('command -v podman').status !== 0) return 'podman is not installed';
  // The image, built once for every test that needs it (under a lock).
  const img = spawnSync(path.join(REPO_ROOT, 'tests/integration/podman-image.sh'), { encoding: 'utf8', timeout: 120_000 });
  if (img.status !== 0) return img.stderr.trim() || `tests/integration/podman-image.sh: ${img.status ?? img.signal}`;
  const r = sh(`${wrapper} podman run --rm ${extra} ${IMAGE} sh -c :`);
  if (r.status !== 0) return `podman cannot run a container here: ${r.stderr.slice(-500)}`;
  return null;
}

// --- ports -------------------------------------------------------------------------

// Ports a test names itself (a server restarted on the same port, make
// run's listen port, a PostgreSQL on TCP) come from below the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768 up here),
// so no port-0 listener or outgoing connection of a test running beside
// this one is ever given one of them; and each is reserved by a file in a
// directory every test process shares, so no two test processes pick the
// same one. A reservation lasts until this process exits; one whose process
// is gone is taken over.
const PORT_DIR = path.join(os.tmpdir(), 'trainplane-test-ports');
const PORT_LOW = 10000;
const PORT_HIGH = 20000;	// exclusive; make run's replica blocks start at 21000
const reservedPorts = new Set();

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

/** Runs fn() while holding PORT_DIR's lock (a directory: made atomically, or not at all). */
function withPortLock(fn) {
  const lock = path.join(PORT_DIR, 'lock');
  for (let waited = 0; ; waited++) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      // A holder killed inside the few lines below leaves it behind.
      try { if (Date.now() - fs.statSync(lock).mtimeMs > 10_000) fs.rmdirSync(lock); } catch { /* gone */ }
      if (waited > 2000) throw new Error(`${lock} held for too long`);
      spawnSync('sleep', ['0.005']);
    }
  }
  try { return fn(); } finally { fs.rmdirSync(lock); }
}

/** Reserves port for this process; false when a live test process holds it. */
function reservePort(port) {
  fs.mkdirSync(PORT_DIR, { recursive: true, mode: 0o1777 });
  const file = path.join(PORT_DIR, String(port));
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
    // Taken over only when its process is gone, one taker at a time.
    const took = withPortLock(() => {
      let holder = 0;
      let age = Infinity;
      try {
        age = Date.now() - fs.statSync(file).mtimeMs;
        holder = Number(fs.readFileSync(file, 'utf8'));
      } catch { /* removed meanwhile */ }
      if (holder ? pidAlive(holder) : age < 5000) return false;	// empty: its maker writes its pid now
      fs.writeFileSync(file, String(process.pid));
      return true;
    });
    if (!took) return false;
  }
  reservedPorts.add(port);
  return true;
}

process.on('exit', () => {
  for (const port of reservedPorts) {
    try { fs.unlinkSync(path.join(PORT_DIR, String(port))); } catch { /* gone */ }
  }
});

function canListen(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that is free and stays this process's own (for a
 * server restarted on the same port, make run's listen port, ...).
 */
export async function freePort() {
  for (let tries = 0; tries < 1000; tries++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (reservedPorts.has(port) || !reservePort(port)) continue;
    if (await canListen(port)) return port;
    // Something else listens there: keep the reservation (nobody else should try it).
  }
  throw new Error(`no free port in ${PORT_LOW}-${PORT_HIGH - 1}`);
}

let portBlock = 0;
/** A distinct port range per agent of this test process. */
function nextPortRange() {
  const base = 30000 + ((process.pid % 50) * 400) + (portBlock++ % 20) * 20;
  return `${base}-${base + 19}`;
}

// --- agents --------------------------------------------------------------------------

function yamlValue(v) {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(String(v));	// a YAML double-quoted scalar
}

/** The agent's environment: this one minus any TRAINPLANE_* setting. */
function baseEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('TRAINPLANE_')) env[k] = v;
  }
  return env;
}

function sanitizerEnv() {
  return {
    ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0',
    UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
    LSAN_OPTIONS: 'exitcode=23',
  };
}

/**
 * Starts an agent for `server` (a harness server or a base URL string).
 *
 * Options: node (required), dir (a temp dir for the config and the work dir;
 * one is made when absent), region, zone, vcpus, memoryMb, machineType,
 * gpuType/gpuCount, tpuType/tpuCores, runtime ('process'), address
 * ('127.0.0.1'; any 127.x.y.z is loopback too), portRange,
 * workDir (default <dir>/work-<node>), stopGraceSeconds (1), token,
 * config (more agent keys, e.g. { container_wrapper: '...' }), env,
 * stopReplicasOnExit (true), ready (wait for READY in the nodes API; true).
 *
 * Returns { node, workDir, configPath, child, pid, exited, stderr(),
 * alive(), stop(), kill(signal), cleanup(), restart() }.
 */
export async function startAgent(server, opts) {
  assert.ok(AGENT_BIN, 'TRAINPLANE_AGENT_BIN must name the agent binary');
  const base = typeof server === 'string' ? server : server.base;
  const {
    node, region = 'us-central1', zone = 'us-central1-a', vcpus = 16, memoryMb = 61440,
    machineType, gpuType, gpuCount, tpuType, tpuCores, runtime = 'process', address = '127.0.0.1',
    stopGraceSeconds = 1, token, config = {}, env = {}, stopReplicasOnExit = true, drainOnExit = false,
    ready = true,
    readyTimeoutMs = 20_000,
  } = opts;
  assert.ok(node, 'startAgent needs a node name');
  const dir = opts.dir ?? makeTempDir('tp-agent-');
  const workDir = opts.workDir ?? path.join(dir, `work-${node}`);
  const configPath = opts.configPath ?? path.join(dir, `agent-${node}.yaml`);
  const keys = {
    server: `${base}/`,
    node,
    region,
    zone,
    vcpus,
    memory_mb: memoryMb,
    runtime,
    address,
    port_range: opts.portRange ?? nextPortRange(),
    work_dir: workDir,
    stop_grace_seconds: stopGraceSeconds,
    log_level: 'info',
    ...(machineType ? { machine_type: machineType } : {}),
    ...(gpuType ? { gpu_type: gpuType, gpu_count: gpuCount ?? 1 } : {}),
    ...(tpuType ? { tpu_type: tpuType, tpu_cores: tpuCores ?? 8 } : {}),
    ...(token !== undefined ? { token } : {}),
    ...config,
  };
  fs.writeFileSync(configPath, Object.entries(keys).map(([k, v]) => `${k}: ${yamlValue(v)}\n`).join(''));

  const agent = {
    node,
    base,
    dir,
    workDir,
    configPath,
    keys,
    child: null,
    pid: 0,
    exited: null,
    log: '',
    stderr: () => agent.log,
    alive: () => !!agent.child && agent.child.exitCode === null && agent.child.signalCode === null,
    /** SIGTERM; asserts exit 0 within 20 s and no sanitizer report. */
    async stop() {
      if (!agent.child) return;
      if (agent.alive()) agent.child.kill('SIGTERM');
      const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 20_000).unref());
      const r = await Promise.race([agent.exited, timeout]);
      if (!r) {
        agent.child.kill('SIGKILL');
        await agent.exited;
        assert.fail(`agent ${node} did not exit within 20 s of SIGTERM:\n${agent.log.slice(-4000)}`);
      }
      agent.checkSanitizer();
      assert.deepEqual(r, { code: 0, signal: null },
        `agent ${node} exit after SIGTERM: ${JSON.stringify(r)}\n${agent.log.slice(-4000)}`);
    },
    /** Sends `signal` (SIGKILL by default) and waits for the exit. */
    async kill(signal = 'SIGKILL') {
      if (!agent.alive()) return;
      agent.child.kill(signal);
      await agent.exited;
    },
    /** Asserts no sanitizer report in the agent's stderr so far. */
    checkSanitizer() {
      const report = sanitizerReport(agent.log);
      assert.equal(report, null, `sanitizer report in agent ${node}'s stderr:\n${report}`);
    },
    /** Kills the agent and every process it left behind (replicas, supervisors). */
    cleanup() {
      killAgentTree(agent);
      liveAgents.delete(agent);
    },
    /** Starts the same agent again (same config, same work dir). */
    async restart({ ready: r = true } = {}) {
      await launch();
      if (r) await waitNodeReady(base, node, readyTimeoutMs, agent);
      return agent;
    },
  };

  async function launch() {
    const args = ['--config', configPath, ...(drainOnExit ? ['--drain-on-exit'] :
      stopReplicasOnExit ? ['--stop-replicas-on-exit'] : [])];
    const child = spawn(AGENT_BIN, args, {
      cwd: dir,
      env: { ...baseEnv(), ...(SANITIZED ? sanitizerEnv() : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent.child = child;
    agent.pid = child.pid;
    agent.log += `--- agent ${node} started (pid ${child.pid}) ---\n`;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => { agent.log += d; });
    child.stderr.on('data', (d) => { agent.log += d; });
    agent.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal }));
    });
    liveAgents.add(agent);
  }

  await launch();
  if (ready) {
    try {
      await waitNodeReady(base, node, readyTimeoutMs, agent);
    } catch (e) {
      agent.cleanup();
      throw e;
    }
  }
  return agent;
}

// --- the nodes API --------------------------------------------------------------------

/** GET /trainplane/v1/nodes: the nodes array. */
export async function listNodes(base) {
  const res = await request(base, 'GET', '/trainplane/v1/nodes');
  assert.equal(res.status, 200, `GET nodes: ${res.text}`);
  return res.json.nodes ?? [];
}

/** One node of the nodes API, or undefined. */
export async function getNode(base, name) {
  return (await listNodes(base)).find((n) => n.name === name);
}

/** Waits until the node is in `state` (READY, LOST, DRAINING); returns it. */
export async function waitNodeState(base, name, state, timeoutMs = 20_000, agent = null) {
  let node;
  try {
    await waitFor(async () => {
      node = await getNode(base, name);
      return node?.state === state;
    }, timeoutMs, `node ${name} did not become ${state} within ${timeoutMs} ms`, 50);
  } catch (e) {
    throw new Error(`${e.message} (last: ${JSON.stringify(node)})${agent ? `\n${agent.log.slice(-3000)}` : ''}`);
  }
  return node;
}

/** Waits until the node is READY and synced by the given agent's current life. */
export async function waitNodeReady(base, name, timeoutMs = 20_000, agent = null) {
  if (agent) {
    // A restarted agent: wait for its own register, not the previous life's row.
    await waitFor(() => !agent.alive() || /registered node /.test(agent.log.split(/--- agent .* started/).pop()),
      timeoutMs, `agent ${name} did not register`, 50)
      .catch((e) => { throw new Error(`${e.message}\n${agent.log.slice(-3000)}`); });
    if (!agent.alive()) throw new Error(`agent ${name} exited: ${agent.log.slice(-3000)}`);
  }
  return waitNodeState(base, name, 'READY', timeoutMs, agent);
}

// --- jobs ---------------------------------------------------------------------------------

/** POST a job; asserts 200; returns the created job. */
export async function createJob(base, project, jobId, trainingInput, extra = {}) {
  const res = await request(base, 'POST', `/v1/projects/${project}/jobs`, {
    body: { jobId, trainingInput, ...extra },
  });
  assert.equal(res.status, 200, `create ${jobId}: ${res.text}`);
  return res.json;
}

export async function getJob(base, project, jobId) {
  const res = await request(base, 'GET', `/v1/projects/${project}/jobs/${jobId}`);
  assert.equal(res.status, 200, `get ${jobId}: ${res.text}`);
  return res.json;
}

export async function cancelJob(base, project, jobId) {
  const res = await request(base, 'POST', `/v1/projects/${project}/jobs/${jobId}:cancel`, { body: {} });
  assert.equal(res.status, 200, `cancel ${jobId}: ${res.text}`);
  return res.json;
}

const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/**
 * Waits until the job is in one of `states` (a string or an array); fails
 * early when it reaches a final state that is not wanted. Returns the job.
 */
export async function waitJobState(base, project, jobId, states, timeoutMs = 30_000, context = () => '') {
  const want = new Set([].concat(states));
  const deadline = Date.now() + timeoutMs;
  let job;
  for (;;) {
    try {
      job = await getJob(base, project, jobId);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    if (want.has(job.state)) return job;
    if (FINAL.has(job.state)) {
      assert.fail(`job ${jobId} ended ${job.state} while waiting for ${[...want]}: ` +
        `${JSON.stringify(job)}\n${context()}`);
    }
    if (Date.now() > deadline) {
      assert.fail(`job ${jobId} not ${[...want]} within ${timeoutMs} ms (last ${job.state}): ` +
        `${JSON.stringify(job)}\n${context()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Polls the job every `intervalMs` and records every distinct state in the
 * order seen: { states, stop() }. Transient states can be missed by a poller;
 * tests that need one make it last (e.g. a frozen agent holds PREPARING).
 */
export function watchJob(base, project, jobId, intervalMs = 20) {
  const states = [];
  let running = true;
  let final = false;
  const poll = async () => {
    try {
      const res = await request(base, 'GET', `/v1/projects/${project}/jobs/${jobId}`, { timeoutMs: 5000 });
      const s = res.json?.state;
      if (s && states[states.length - 1] !== s) states.push(s);
      if (FINAL.has(s)) final = true;
    } catch { /* server restarting */ }
  };
  const loop = (async () => {
    while (running && !final) {
      await poll();
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    states,
    /** Waits until this watcher itself has seen `state`. */
    async seen(state, timeoutMs = 10_000) {
      await waitFor(() => states.includes(state) || final, timeoutMs, `job ${jobId} not seen ${state}`, 10);
      assert.ok(states.includes(state), `job ${jobId} not seen ${state}: ${states}`);
    },
    /** Stops polling after one last look; returns the states seen. */
    async stop() {
      running = false;
      await loop;
      if (!final) await poll();
      return states;
    },
  };
}

/** Asserts `seen` lists states in the order of `order` (none repeated, none out of order). */
export function assertStateOrder(seen, order) {
  let at = -1;
  for (const s of seen) {
    const i = order.indexOf(s);
    assert.ok(i > at, `state ${s} out of order in ${JSON.stringify(seen)} (expected order ${order.join('→')})`);
    at = i;
  }
}

// --- logs ------------------------------------------------------------------------------------

/**
 * Every log entry of a job through POST /v2/entries:list (all pages, oldest
 * first). `extraFilter` is ANDed to the job filter.
 */
/**
 * The job's log entries, oldest first: the replicas' lines; with
 * { service: true } the service's own lines (task "service") too.
 */
export async function readJobLog(base, project, jobId, extraFilter = '', { service = false } = {}) {
  if (!service) extraFilter = ['resource.labels.task_name!="service"', extraFilter].filter(Boolean).join(' AND ');
  const entries = [];
  let pageToken;
  for (let page = 0; page < 100; page++) {
    const body = {
      resourceNames: [`projects/${project}`],
      filter: `resource.type="ml_job" AND resource.labels.job_id="${jobId}"${extraFilter ? ` AND ${extraFilter}` : ''}`,
      orderBy: 'timestamp asc',
      pageSize: 1000,
      ...(pageToken ? { pageToken } : {}),
    };
    const res = await request(base, 'POST', '/v2/entries:list', { body });
    assert.equal(res.status, 200, `entries:list: ${res.text}`);
    entries.push(...(res.json.entries ?? []));
    pageToken = res.json.nextPageToken;
    if (!pageToken) break;
  }
  return entries;
}

/** Waits until the job's log has an entry whose text matches `re`; returns the log. */
export async function waitLogLine(base, project, jobId, re, timeoutMs = 10_000) {
  let entries = [];
  try {
    await waitFor(async () => {
      entries = await readJobLog(base, project, jobId);
      return entries.some((e) => re.test(e.textPayload ?? ''));
    }, timeoutMs, `no log line matching ${re} for ${jobId}`, 100);
  } catch (e) {
    throw new Error(`${e.message}; log:\n${entries.map((x) => x.textPayload).join('\n')}`);
  }
  return entries;
}

/**
 * A test file's end: stops its agents (each checked: exit 0, no sanitizer
 * report), then its server, and cleans up whatever is left, PostgreSQL last.
 */
export async function stopAll({ agents = [], server, pg }) {
  try {
    for (const a of agents) await a?.stop();
    await server?.stop();
  } finally {
    for (const a of agents) a?.cleanup();
    server?.kill();
    await pg?.cleanup();
  }
}

export { REPO_ROOT };
