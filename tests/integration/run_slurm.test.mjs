// make run-slurm (tools/run-slurm.sh; docs/slurm.md) keeps its promise:
// started with a state dir and listen address of its own, it brings up a
// private Slurm and trainplane in front of it; the job its banner tells
// how to submit, submitted with that very curl line, runs to SUCCEEDED on
// Slurm's nodes (its replicas print their GPUs and TF_CONFIG); Slurm's own
// tools, pointed at the config it names, show the job; and Ctrl-C (SIGINT
// to its process group, as a terminal sends it) stops the server and every
// Slurm daemon it started. Needs root (slurmd runs as root here).

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { REPO_ROOT, SERVER_BIN, makeTempDir, postgresProcessesFor, request, waitFor } from './harness.mjs';
import { AGENT_BIN, freePort, waitJobState, waitLogLine } from './agents.mjs';

const RUN_SLURM = path.join(REPO_ROOT, 'tools/run-slurm.sh');
const CLUSTER = path.join(REPO_ROOT, 'tools/slurm-cluster.sh');
const root = process.getuid?.() === 0;
const skip = !root ? 'make run-slurm needs root here (its private Slurm runs slurmd as root)'
  : !SERVER_BIN || !AGENT_BIN ? 'TRAINPLANE_SERVER_BIN / TRAINPLANE_AGENT_BIN not set' : false;

const portFree = (port) => new Promise((resolve) => {
  const s = net.createServer().once('error', () => resolve(false))
    .once('listening', () => s.close(() => resolve(true))).listen(port, '127.0.0.1');
});

/** A Slurm port base (slurm-cluster.sh: base+17, +20, +200..+203) free now, apart from slurm.test.mjs's. */
async function portBase() {
  for (let i = 0; i < 50; i++) {
    const pb = 12000 + ((process.pid * 7 + i * 97) % 160) * 25;
    const ports = [pb + 17, pb + 20, pb + 200, pb + 201, pb + 202, pb + 203];
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return pb;
  }
  throw new Error('no free port base for the Slurm cluster');
}

/** Processes of this run: by the state dir in their command line, working dir or environment. */
function processesOf(state) {
  const out = [];
  for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    if (Number(p) === process.pid) continue;
    const read = (f) => { try { return fs.readFileSync(`/proc/${p}/${f}`, 'utf8'); } catch { return ''; } };
    let cwd = '';
    try { cwd = fs.readlinkSync(`/proc/${p}/cwd`); } catch { /* gone */ }
    const cmd = read('cmdline').split('\0').join(' ');
    if (cmd.includes(`${state}/`) || cwd === state || cwd.startsWith(`${state}/`) ||
        read('environ').split('\0').includes(`TRAINPLANE_STATE_DIR=${state}`)) {
      out.push(`${p} ${cmd}`);
    }
  }
  return out;
}

let child = null, state = null;
after(() => {
  if (!state) return;
  if (child && child.exitCode === null && child.signalCode === null) {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  spawnSync(CLUSTER, ['stop', path.join(state, 'slurm')], { timeout: 60_000 });
  for (const line of processesOf(state)) {
    try { process.kill(Number(line.split(' ')[0]), 'SIGKILL'); } catch { /* gone */ }
  }
  for (const p of postgresProcessesFor(path.join(state, 'postgres'))) {
    try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
  }
});

describe('make run-slurm', { skip }, () => {
  it('submits the banner\'s job to its Slurm, runs it to SUCCEEDED, and Ctrl-C stops every daemon', async () => {
    state = makeTempDir('tp-run-slurm-');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRAINPLANE_')) env[k] = v;
    child = spawn(RUN_SLURM, [SERVER_BIN, AGENT_BIN], {
      cwd: REPO_ROOT,
      detached: true,	// a process group of its own, as a terminal's foreground job
      env: { ...env, TRAINPLANE_STATE_DIR: state, TRAINPLANE_LISTEN: `127.0.0.1:${port}`,
             TRAINPLANE_SLURM_PORT_BASE: String(await portBase()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    for (const s of [child.stdout, child.stderr]) { s.setEncoding('utf8'); s.on('data', (d) => { out += d; }); }
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const alive = () => child.exitCode === null && child.signalCode === null;
    const ctx = () => `\n--- make run-slurm's output:\n${out.slice(-5000)}`;

    await waitFor(async () => {
      if (!alive()) throw new Error(`make run-slurm exited${ctx()}`);
      return out.includes('More in docs/slurm.md') &&
        (await request(base, 'GET', '/readyz', { timeoutMs: 2000 })).status === 200;
    }, 30_000, 'make run-slurm did not come up', 50);

    // The banner's own curl line, as a user would paste it.
    const curl = /^ {4}(curl -s -X POST \S+\/v1\/projects\/demo\/jobs [\s\S]*?\}\}\}\}')$/m.exec(out)?.[1];
    assert.ok(curl, `no submit line in the banner${ctx()}`);
    const jobId = /"jobId": "([^"]+)"/.exec(curl)[1];
    const sub = spawnSync('bash', ['-c', curl], { encoding: 'utf8', timeout: 15_000 });
    assert.equal(sub.status, 0, sub.stderr);
    assert.equal(JSON.parse(sub.stdout).jobId, jobId, sub.stdout);
    await waitJobState(base, 'demo', jobId, 'SUCCEEDED', 20_000, ctx);
    const log = await waitLogLine(base, 'demo', jobId, /^CUDA_VISIBLE_DEVICES=\d\S* TF_CONFIG=\{.*"type":"worker"/, 10_000);
    assert.ok(log.some((e) => /^CUDA_VISIBLE_DEVICES=\d\S* TF_CONFIG=\{.*"type":"master"/.test(e.textPayload ?? '')),
      log.map((e) => e.textPayload).join('\n'));

    // Slurm's tools, pointed at the config the banner names, show the job
    // COMPLETED: a job that ended on its own is never cancelled in Slurm.
    const conf = path.join(state, 'slurm/etc/slurm.conf');
    assert.ok(out.includes(`SLURM_CONF=${conf} squeue -t all`), ctx());
    const squeue = () => spawnSync('squeue', ['-h', '-t', 'all', '-o', '%i %j %T %u'], {
      encoding: 'utf8', env: { ...process.env, SLURM_CONF: conf } });
    let sq;
    await waitFor(() => /^\s*\d+ tp-\d+ COMPLETED tpslurm$/m.test((sq = squeue()).stdout), 10_000,
      'squeue does not show the job ended', 100).catch((e) => assert.fail(`${e.message}: ${sq.stdout}${sq.stderr}`));
    const sid = /^\s*(\d+) tp-/m.exec(sq.stdout)[1];
    assert.match(fs.readFileSync(path.join(state, `slurm/work/tp-${sid}.out`), 'utf8'), /pilot slurm-/);

    // Ctrl-C: the server and every Slurm daemon stop.
    assert.ok(processesOf(state).some((p) => / slurmctld /.test(p)), processesOf(state).join('\n'));
    process.kill(-child.pid, 'SIGINT');
    const r = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(null), 20_000).unref())]);
    assert.ok(r, `make run-slurm did not stop within 20 s of SIGINT${ctx()}`);
    assert.match(out, /stopped the server and the Slurm daemons/);
    await waitFor(() => processesOf(state).length === 0 &&
      postgresProcessesFor(path.join(state, 'postgres')).length === 0, 10_000,
    'make run-slurm left processes behind', 100).catch((e) => {
      assert.fail(`${e.message}:\n${processesOf(state).join('\n')}${ctx()}`);
    });
    assert.deepEqual(fs.readdirSync(path.join(state, 'slurm/run')).filter((f) => f.endsWith('.fg.pid')), []);
  });
});
