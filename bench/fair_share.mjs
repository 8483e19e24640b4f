// bench/fair_share.mjs SERVER [SECONDS]: fair share measured on the
// emulator's simulated fleet (make bench; docs/quotas.md). Three projects
// with weights 1:1:2 keep more 1-GPU jobs queued than us-central1's T4s
// hold, each job running the fleet's replica duration (1 s); after SECONDS
// (default 60) of real time the GPU-seconds each project got in the
// settled part (the first quarter left out) are compared with its weighted
// share, and the region's GPU utilization is printed (work conservation).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [server, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg || 60);
const port = 18600 + (process.pid % 300);
const base = `http://127.0.0.1:${port}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tp-fair-'));
const weights = { 'fair-a': 1, 'fair-b': 1, 'fair-c': 2 };
fs.writeFileSync(path.join(dir, 'quotas.yaml'),
  `projects:\n${Object.entries(weights).map(([p, w]) => `  ${p}: {weight: ${w}}\n`).join('')}`);

const child = spawn(server, ['--emulator'], { stdio: ['ignore', 'ignore', 'pipe'], env: {
  ...process.env, TRAINPLANE_LISTEN: `127.0.0.1:${port}`, TRAINPLANE_LOG_LEVEL: 'warn',
  TRAINPLANE_EMULATOR_NODES_PER_TYPE: '2', TRAINPLANE_EMULATOR_REPLICA_DURATION: '1s',
  TRAINPLANE_SCHEDULER_TICK_MS: '100', TRAINPLANE_QUOTAS_FILE: path.join(dir, 'quotas.yaml'),
} });
let stderr = '';
child.stderr.on('data', (d) => { stderr += d; });
const done = () => { child.kill('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); };
process.on('exit', done);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function call(method, p, body) {
  const r = await fetch(`${base}${p}`, { method, headers: { 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return JSON.parse(text);
}
for (let i = 0; ; i++) {
  try { await call('GET', '/readyz'); break; } catch (e) {
    if (i > 600 || child.exitCode !== null) throw new Error(`the server did not start: ${stderr}`);
    await sleep(50);
  }
}
let gpus = 0;
for (let i = 0; i < 200 && !gpus; i++) {
  const nodes = (await call('GET', '/trainplane/v1/nodes')).nodes || [];
  for (const n of nodes)
    if (n.zone?.startsWith('us-central1') && n.state === 'READY')
      for (const a of n.accelerators || []) if (a.type === 'NVIDIA_TESLA_T4') gpus += Number(a.total);
  if (!gpus) await sleep(100);
}
const job = { scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
  masterConfig: { imageUri: 'x/y:1', acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } } };
let seq = 0;
const t0 = Date.now();
const until = t0 + seconds * 1000;
// Each project keeps as many jobs queued as the region has GPUs.
while (Date.now() < until) {
  await Promise.all(Object.keys(weights).map(async (p) => {
    const queued = (await call('GET', `/trainplane/v1/projects/${p}/queue`)).jobs.length;
    for (let k = queued; k < gpus; k++)
      await call('POST', `/v1/projects/${p}/jobs`, { jobId: `f${seq++}`, trainingInput: job });
  }));
  await sleep(200);
}
const settled = t0 + (seconds * 1000) / 4;
const end = Date.now();
const got = {};
for (const p of Object.keys(weights)) {
  got[p] = 0;
  let token = '';
  do {
    const page = await call('GET', `/v1/projects/${p}/jobs?pageSize=1000${token ? `&pageToken=${token}` : ''}`);
    for (const j of page.jobs || []) {
      if (!j.startTime) continue;
      const s = Math.max(Date.parse(j.startTime), settled);
      const e = Math.min(j.endTime ? Date.parse(j.endTime) : end, end);
      if (e > s) got[p] += (e - s) / 1000;
    }
    token = page.nextPageToken;
  } while (token);
}
const total = Object.values(got).reduce((a, b) => a + b, 0);
const wsum = Object.values(weights).reduce((a, b) => a + b, 0);
console.log(`fair share, ${gpus} simulated T4s in us-central1, ${seconds} s (settled after ${seconds / 4} s), ${seq} jobs:`);
let worst = 0;
for (const [p, w] of Object.entries(weights)) {
  const share = got[p] / total, want = w / wsum;
  worst = Math.max(worst, Math.abs(share - want) / want);
  console.log(`  ${p} (weight ${w}): ${(share * 100).toFixed(1)} % of the GPU-seconds (weighted share ${(want * 100).toFixed(1)} %)`);
}
console.log(`  worst deviation from the weighted share: ${(worst * 100).toFixed(1)} % of it; GPU utilization ${((total / (gpus * (end - settled) / 1000)) * 100).toFixed(1)} %`);
process.exit(0);
