// bench/slurm.mjs SERVER AGENT [ROUNDS] [JOBS]: the Slurm backend (issue 29;
// docs/slurm.md, docs/benchmarks.md "Slurm backend"), against baselines of
// the same run on the same machine. A private Slurm (tools/slurm-cluster.sh:
// 10 nodes of 128 CPUs and 1 fake T4), trainplane in front of it for
// us-central1 (poll_ms 200, as make run-slurm).
//
//   (a) submit -> RUNNING of a 1-replica ml v1 job (n1-standard-4, no GPU)
//       through trainplane, from the POST to the job's state RUNNING,
//       against sbatch of the same shape (one task, the same CPUs and
//       memory) straight to the cluster, from the sbatch to slurmrestd
//       showing it RUNNING; both polled every 10 ms, ROUNDS (20) of each,
//       alternating: the medians and their ratio.
//   (b) the reconciler's cost with JOBS (1,000) jobs in flight: the server's
//       CPU time (utime + stime of /proc/PID/stat over 10 s) per poll
//       interval, idle and with the jobs PENDING in Slurm (the partition set
//       DOWN: Slurm queues them and runs none; 1,000 pilots would not fit
//       this machine), against the same count of jobs RUNNING on
//       trainplane's own simulated nodes (trainplane-server --emulator),
//       idle and loaded, per interval of the same length.
// Needs root (slurmd runs as root); without it, says so and exits 0.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [serverArg, agentArg, roundsArg, jobsArg] = process.argv.slice(2);
if (process.getuid?.() !== 0) {
  console.log('  slurm: skipped: needs root (the private Slurm runs slurmd as root)');
  process.exit(0);
}
const SERVER = path.resolve(serverArg || 'build/trainplane-server');
const AGENT = path.resolve(agentArg || path.join(path.dirname(SERVER), 'trainplane-agent'));
const ROUNDS = Number(roundsArg || 20), NJOBS = Number(jobsArg || 1000);
const POLL_MS = 200, WINDOW_S = 10;
const CLUSTER = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../tools/slurm-cluster.sh');
const dir = `/tmp/tp-bench-slurm-${process.pid}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const HZ = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;

const portFree = (port) => new Promise((resolve) => {
  const s = net.createServer().once('error', () => resolve(false))
    .once('listening', () => s.close(() => resolve(true))).listen(port, '127.0.0.1');
});
async function freePorts(candidates) {
  for (const pb of candidates) {
    const ports = [pb + 17, pb + 20, ...Array.from({ length: 11 }, (_, i) => pb + 200 + i)];
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return pb;
  }
  throw new Error('no free ports');
}
function sh(args, env = {}) {
  const r = spawnSync(CLUSTER, args, { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`slurm-cluster.sh ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}
const cpuTicks = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);	// utime, stime (fields 14 and 15)
};
/** CPU ms of each pid over WINDOW_S seconds. */
async function cpuOver(pids) {
  const a = pids.map(cpuTicks);
  await sleep(WINDOW_S * 1000);
  return pids.map((p, i) => ((cpuTicks(p) - a[i]) * 1000) / HZ);
}
const perInterval = (ms) => ms / ((WINDOW_S * 1000) / POLL_MS);

const children = [];
function startServer(port, env, args = []) {
  const child = spawn(SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'], env: {
    ...process.env, TRAINPLANE_LISTEN: `127.0.0.1:${port}`, TRAINPLANE_LOG_LEVEL: 'warn', ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  children.push(child);
  const base = `http://127.0.0.1:${port}`;
  return { child, base, stderr: () => stderr };
}
async function call(base, method, p, body) {
  const r = await fetch(`${base}${p}`, { method, headers: { 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return p === '/metrics' ? text : JSON.parse(text);
}
async function ready(s) {
  for (let i = 0; ; i++) {
    try { await call(s.base, 'GET', '/readyz'); return; } catch {
      if (i > 1200 || s.child.exitCode !== null) throw new Error(`the server did not start: ${s.stderr()}`);
      await sleep(50);
    }
  }
}
async function stopServer(s) {
  if (s.child.exitCode === null && s.child.signalCode === null) {
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
  }
}
let clusterUp = false;
function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (clusterUp) spawnSync(CLUSTER, ['stop', dir], { timeout: 60_000 });
  clusterUp = false;
  fs.rmSync(dir, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));

const job = (cmd) => ({ scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
  masterConfig: { imageUri: 'x/y:1', containerCommand: ['sh', '-c', cmd] } });
async function createMany(base, prefix, n, cmd, labels) {
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < n) {
      const k = next++;
      await call(base, 'POST', '/v1/projects/bench/jobs',
        { jobId: `${prefix}${k}`, ...(labels ? { labels } : {}), trainingInput: job(cmd) });
    }
  }));
}

// --- the cluster and the server in front of it ----------------------------------------
const pb = await freePorts(Array.from({ length: 40 }, (_, i) => 12000 + ((process.pid + i * 13) % 160) * 25));
sh(['install']);
sh(['setup', dir, '10', '1', String(pb)], { TP_SLURM_CPUS: '128', TP_SLURM_MEMORY_MB: '1048576' });
clusterUp = true;
const cenv = Object.fromEntries(fs.readFileSync(path.join(dir, 'cluster.env'), 'utf8').split('\n')
  .map((l) => /^(\w+)=(.*)$/.exec(l)).filter(Boolean).map((m) => [m[1], m[2]]));
sh(['start', dir]);
const slurmEnv = { ...process.env, SLURM_CONF: cenv.SLURM_CONF };
const rest = `http://127.0.0.1:${cenv.TP_SLURM_REST_PORT}/slurm/v0.0.38`;
const token = fs.readFileSync(cenv.TP_SLURM_TOKEN_FILE, 'utf8').trim();
async function slurmState(id) {
  const r = await fetch(`${rest}/job/${id}`, { headers: { 'X-SLURM-USER-NAME': cenv.TP_SLURM_USER,
    'X-SLURM-USER-TOKEN': token } });
  return (await r.json()).jobs?.[0]?.job_state;
}
const port = await (async () => { for (let p = 19600 + (process.pid % 300); ; p++) if (await portFree(p)) return p; })();
fs.writeFileSync(path.join(dir, 'slurm.yaml'), `backends:
  bench:
    regions: [us-central1]
    url: http://127.0.0.1:${cenv.TP_SLURM_REST_PORT}
    user: ${cenv.TP_SLURM_USER}
    token_file: ${cenv.TP_SLURM_TOKEN_FILE}
    partition: tp
    gres: {NVIDIA_TESLA_T4: t4}
    agent: ${AGENT}
    server: http://127.0.0.1:${port}/
    work_dir: ${dir}/work
    poll_ms: ${POLL_MS}
`);
const srv = startServer(port, { TRAINPLANE_STATE_DIR: path.join(dir, 'var'),
  TRAINPLANE_SLURM_FILE: path.join(dir, 'slurm.yaml') });
await ready(srv);

// --- (a) submit -> RUNNING ---------------------------------------------------------------
async function until(fn, want, ms = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const s = await fn();
    if (want.includes(s)) return s;
    if (Date.now() - t0 > ms) throw new Error(`still ${s} after ${ms} ms`);
    await sleep(10);
  }
}
const tpState = (id) => async () => (await call(srv.base, 'GET', `/v1/projects/bench/jobs/${id}`)).state;
const tp = [], sb = [];
let shape = null;
for (let i = 0; i < ROUNDS; i++) {
  let t0 = Date.now();
  await call(srv.base, 'POST', '/v1/projects/bench/jobs', { jobId: `lat${i}`, trainingInput: job('sleep 0.5') });
  await until(tpState(`lat${i}`), ['RUNNING', 'SUCCEEDED', 'FAILED']);
  tp.push(Date.now() - t0);
  if ((await until(tpState(`lat${i}`), ['SUCCEEDED', 'FAILED'])) !== 'SUCCEEDED') {
    throw new Error(`job lat${i} failed: ${JSON.stringify(await call(srv.base, 'GET', `/v1/projects/bench/jobs/lat${i}`))}`);
  }
  if (!shape) {
    // The trainplane job's Slurm shape: the baseline asks the same.
    const q = spawnSync('squeue', ['-h', '-t', 'all', '-o', '%j %c %m'], { encoding: 'utf8', env: slurmEnv });
    const m = /^tp-\d+ (\d+) (\d+)([MG]?)/m.exec(q.stdout);
    if (!m) throw new Error(`the trainplane job's Slurm record: ${q.stdout}${q.stderr}`);
    shape = { cpus: m[1], memMb: String(Number(m[2]) * (m[3] === 'G' ? 1024 : 1)) };
  }
  t0 = Date.now();
  const r = spawnSync('sbatch', ['--parsable', '-p', 'tp', '-n', '1', '-c', shape.cpus, `--mem-per-cpu=${shape.memMb}`,
    '-o', '/dev/null', '-D', '/tmp', '--wrap', 'sleep 0.5'], { encoding: 'utf8', env: slurmEnv });
  const sid = Number.parseInt(r.stdout, 10);
  if (!sid) throw new Error(`sbatch: ${r.stdout}${r.stderr}`);
  await until(() => slurmState(sid), ['RUNNING', 'COMPLETED', 'FAILED']);
  sb.push(Date.now() - t0);
  await until(() => slurmState(sid), ['COMPLETED', 'FAILED']);
}
console.log(`  slurm: submit -> RUNNING (median of ${ROUNDS}): through trainplane ${median(tp)} ms, `
  + `sbatch straight to Slurm ${median(sb)} ms: ${(median(tp) / median(sb)).toFixed(1)}x `
  + `(reconcile interval poll_ms ${POLL_MS}; ${shape.cpus} CPUs, ${shape.memMb} MB each; `
  + `trainplane p90 ${[...tp].sort((a, b) => a - b)[Math.floor(ROUNDS * 0.9)]} ms, `
  + `sbatch p90 ${[...sb].sort((a, b) => a - b)[Math.floor(ROUNDS * 0.9)]} ms)`);

// --- (b) the reconciler's cost per interval ------------------------------------------------
const pidOf = (f) => Number(fs.readFileSync(path.join(dir, 'run', f), 'utf8'));
const daemons = [pidOf('slurmrestd.fg.pid'), pidOf('slurmctld.fg.pid')];
await sleep(2000);
const [slurmIdle] = await cpuOver([srv.child.pid]);
// The partition DOWN: Slurm queues the jobs and starts none (and stays so:
// the cluster's stop below cancels them before any could start).
const down = spawnSync('scontrol', ['update', 'PartitionName=tp', 'State=DOWN'], { encoding: 'utf8', env: slurmEnv });
if (down.status !== 0) throw new Error(`scontrol update PartitionName=tp State=DOWN: ${down.stderr}`);
let t0 = Date.now();
await createMany(srv.base, 'fl', NJOBS, 'sleep 3600');
const created = (Date.now() - t0) / 1000;
const pending = () => spawnSync('squeue', ['-h', '-t', 'pending', '-o', '%i'], { encoding: 'utf8', env: slurmEnv })
  .stdout.split('\n').filter(Boolean).length;
for (let n = 0; (n = pending()) < NJOBS;) {
  if (Date.now() - t0 > 300_000) throw new Error(`only ${n} of ${NJOBS} jobs reached Slurm`);
  await sleep(200);
}
const inSlurm = (Date.now() - t0) / 1000;
await sleep(2000);
const [slurmLoaded, restLoaded, ctldLoaded] = await cpuOver([srv.child.pid, ...daemons]);
await stopServer(srv);
sh(['stop', dir]);
clusterUp = false;

// The same count RUNNING on the emulator's simulated fleet.
const eport = await (async () => { for (let p = port + 1; ; p++) if (await portFree(p)) return p; })();
const emu = startServer(eport, {}, ['--emulator']);
await ready(emu);
let nodes = 0;
for (let i = 0, last = -1, still = 0; i < 120; i++, await sleep(500)) {
  nodes = Number(/^trainplane_nodes\{state="READY"\} (\d+)/m.exec(await call(emu.base, 'GET', '/metrics'))?.[1] || 0);
  if (nodes > 0 && nodes === last && ++still >= 3) break;
  if (nodes !== last) still = 0;
  last = nodes;
}
await sleep(2000);
const [emuIdle] = await cpuOver([emu.child.pid]);
await createMany(emu.base, 'fl', NJOBS, 'sleep 3600', { 'trainplane-simulate': 'run-3600s-exit-0' });
const running = async () => {
  let n = 0, tok = '';
  do {
    const r = await call(emu.base, 'GET', `/v1/projects/bench/jobs?filter=state%3DRUNNING&pageSize=1000${tok ? `&pageToken=${tok}` : ''}`);
    n += (r.jobs || []).length;
    tok = r.nextPageToken || '';
  } while (tok);
  return n;
};
let nrun = 0;
for (const t1 = Date.now(); (nrun = await running()) < NJOBS && Date.now() - t1 < 120_000;) await sleep(500);
await sleep(2000);
const [emuLoaded] = await cpuOver([emu.child.pid]);
await stopServer(emu);

const f = (ms) => perInterval(ms).toFixed(2);
console.log(`  slurm: ${NJOBS} jobs in flight (created in ${created.toFixed(1)} s, all in Slurm's queue after `
  + `${inSlurm.toFixed(1)} s), the server's CPU per ${POLL_MS} ms interval over ${WINDOW_S} s: `
  + `${f(slurmLoaded)} ms with them PENDING in Slurm (idle: ${f(slurmIdle)} ms; slurmrestd ${f(restLoaded)} ms, `
  + `slurmctld ${f(ctldLoaded)} ms), against ${f(emuLoaded)} ms with ${nrun} RUNNING on the emulator's `
  + `${nodes} simulated nodes (idle: ${f(emuIdle)} ms): the increment ${f(slurmLoaded - slurmIdle)} ms `
  + `against ${f(emuLoaded - emuIdle)} ms`);
