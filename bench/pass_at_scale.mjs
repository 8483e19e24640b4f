// bench/pass_at_scale.mjs SERVER [NODES_PER_TYPE] [JOBS]: the whole
// scheduling pass (snapshot, plans, quotas and fair share, placement,
// commits, reasons) at issue 28's size, on the emulator's simulated fleet:
// NODES_PER_TYPE (default 69: about 10,000 nodes) of every kind in every
// region, and JOBS (default 100,000) 1 x A100 jobs of 20 projects (weights
// 1-3, a quotas file) queued in us-central1, where a few hundred A100s
// run them for an hour each. Prints the fleet's size, the mean pass time
// while the queue is deep (the leader's trainplane_scheduler_pass_duration
// histogram over 20 s), and the server's RSS. make bench runs it smaller
// (BENCH_SCALE_NODES, BENCH_SCALE_JOBS).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [server, perTypeArg, jobsArg] = process.argv.slice(2);
const perType = Number(perTypeArg || 69), njobs = Number(jobsArg || 100000);
const port = 19000 + (process.pid % 500);
const base = `http://127.0.0.1:${port}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tp-scale-'));
const projects = Array.from({ length: 20 }, (_, i) => `scale-${i}`);
fs.writeFileSync(path.join(dir, 'quotas.yaml'),
  `projects:\n${projects.map((p, i) => `  ${p}: {weight: ${1 + (i % 3)}, limits: {NVIDIA_TESLA_A100: 100000}}\n`).join('')}`);
const child = spawn(server, ['--emulator'], { stdio: ['ignore', 'ignore', 'pipe'], env: {
  ...process.env, TRAINPLANE_LISTEN: `127.0.0.1:${port}`, TRAINPLANE_LOG_LEVEL: 'warn',
  TRAINPLANE_EMULATOR_NODES_PER_TYPE: String(perType), TRAINPLANE_QUOTAS_FILE: path.join(dir, 'quotas.yaml'),
} });
let stderr = '';
child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
process.on('exit', () => { child.kill('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function call(method, p, body) {
  const r = await fetch(`${base}${p}`, { method, headers: { 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return p === '/metrics' ? text : JSON.parse(text);
}
for (let i = 0; ; i++) {
  try { await call('GET', '/readyz'); break; } catch {
    if (i > 1200 || child.exitCode !== null) throw new Error(`the server did not start: ${stderr}`);
    await sleep(50);
  }
}
let nodes = 0, last = -1, still = 0;
for (let i = 0; i < 600; i++) {
  const m = await call('GET', '/metrics');
  nodes = Number(/^trainplane_nodes\{state="READY"\} (\d+)/m.exec(m)?.[1] || 0);
  if (nodes > 0 && nodes === last && ++still >= 3) break;
  if (nodes !== last) still = 0;
  last = nodes;
  await sleep(1000);
}
const t0 = Date.now();
let next = 0;
const job = { scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'a2-highgpu-1g',
  masterConfig: { imageUri: 'x/y:1', acceleratorConfig: { type: 'NVIDIA_TESLA_A100', count: '1' } } };
await Promise.all(Array.from({ length: 32 }, async () => {
  while (next < njobs) {
    const k = next++;
    await call('POST', `/v1/projects/${projects[k % projects.length]}/jobs`,
      { jobId: `s${k}`, labels: { 'trainplane-simulate': 'run-3600s-exit-0' }, trainingInput: job });
  }
}));
const createS = (Date.now() - t0) / 1000;
const hist = (text) => ({
  sum: Number(/^trainplane_scheduler_pass_duration_seconds_sum (\S+)/m.exec(text)?.[1] || 0),
  count: Number(/^trainplane_scheduler_pass_duration_seconds_count (\S+)/m.exec(text)?.[1] || 0),
  le: Object.fromEntries([...text.matchAll(/^trainplane_scheduler_pass_duration_seconds_bucket\{le="([^"]+)"\} (\S+)/mg)]
    .map((m) => [m[1], Number(m[2])])),
});
await sleep(5000);
const a = hist(await call('GET', '/metrics'));
await sleep(20000);
const b = hist(await call('GET', '/metrics'));
const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] || 0) / 1024;
const running = await call('GET', '/v1/projects/scale-0/jobs?filter=state%3DRUNNING&pageSize=1000');
console.log(`pass at scale: ${nodes} simulated nodes, ${njobs} jobs created in ${createS.toFixed(1)} s `
  + `(${(njobs / createS).toFixed(0)}/s); ${(running.jobs || []).length}+ of scale-0's running`);
if (process.env.KEEP) {
  console.log(`server pid ${child.pid} at ${base}; profiling for ${process.env.KEEP} s`);
  await sleep(Number(process.env.KEEP) * 1000);
}
console.log(`  ${b.count - a.count} passes over the deep queue in 20 s: mean ${((b.sum - a.sum) / Math.max(1, b.count - a.count) * 1000).toFixed(1)} ms `
  + `(goal < 100 ms); server RSS ${rss.toFixed(0)} MiB (goal < 1 GiB)`);
const buckets = Object.keys(b.le).filter((k) => k !== '+Inf').sort((x, y) => Number(x) - Number(y));
console.log(`  passes by duration: ${buckets.map((k) => `<= ${Number(k) * 1000} ms: ${b.le[k] - (a.le[k] || 0)}`).join(', ')}, `
  + `all: ${b.count - a.count}`);
process.exit(0);
