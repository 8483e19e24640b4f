// make run (tools/run.sh) under test: the helpers of the replica identity
// files (replica_identity*.test.mjs, issue 19), each of which starts make
// runs on state directories and ports of its own.

import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';

import {
  REPO_ROOT, SANITIZED, SERVER_BIN, postgresProcessesFor, request, sanitizerReport, waitFor,
} from './harness.mjs';
import { AGENT_BIN, createJob, getNode, waitJobState, waitLogLine } from './agents.mjs';

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
export async function startRun(stateDir, port, { env = {}, beforeNodes } = {}) {
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
    /**
     * SIGTERM to run.sh (what Ctrl-C does through its trap); waits until it
     * and all it started ended. { signal, group }: another signal, sent to
     * run.sh's whole process group as a terminal's Ctrl-C (SIGINT) or
     * hang-up (SIGHUP) reaches a foreground job.
     */
    async stop({ signal = 'SIGTERM', group = false } = {}) {
      if (run.alive()) {
        if (group) process.kill(-child.pid, signal);
        else child.kill(signal);
      }
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
      const left = () => [...processesUnder(stateDir), ...postgresProcessesFor(path.join(stateDir, 'postgres'))];
      try {
        await waitFor(() => left().length === 0, 20_000, `make run left processes behind in ${stateDir}`, 100);
      } catch (e) {
        const what = left().map((p) => {
          const read = (f) => { try { return fs.readFileSync(`/proc/${p}/${f}`, 'utf8'); } catch { return '?'; } };
          return `${p} [${/^State:\s*(.*)$/m.exec(read('status'))?.[1]}] ${read('cmdline').split('\0').join(' ')}`;
        });
        assert.fail(`${e.message}:\n${what.join('\n')}\n--- its output:\n${out.slice(-4000)}`);
      }
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
// job SUCCEEDED leaves the worker killed in its agent's work dir (its end
// reported as the agent leaves, its folder kept until the agent's next
// start on that work dir forgets it).
export function twoReplicaJob(marker) {
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
export async function runJob(run, jobId, marker, { check = true, created = false } = {}) {
  if (!created) await createJob(run.base, 'demo', jobId, twoReplicaJob(marker));
  await waitJobState(run.base, 'demo', jobId, 'SUCCEEDED', 60_000, () => run.output().slice(-6000));
  if (!check) return [];
  await waitLogLine(run.base, 'demo', jobId, new RegExp(`^master-${marker}$`), 20_000);
  return waitLogLine(run.base, 'demo', jobId, new RegExp(`^worker-${marker}$`), 20_000);
}

/** The replica folders in a local agent's work dir (under the state dir). */
export function replicaDirs(stateDir, node = 'local-gpu-1') {
  const dir = path.join(stateDir, `agent-${node}`, 'replicas');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

/** What the checkout's own var/ holds (names, 3 levels), to see that make run leaves it alone. */
export function checkoutVar() {
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

/** chown -R dst as src is (root copies files as root; PostgreSQL's data dir must stay its user's). */
export function copyOwnership(src, dst) {
  const st = fs.statSync(src);
  const walk = (p) => {
    fs.lchownSync(p, st.uid, st.gid);
    if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
  };
  walk(dst);
}
