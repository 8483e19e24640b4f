// bench/preempt_latency.mjs: a STANDARD job's submit -> RUNNING on a full
// node, where it must preempt a SPOT job first (make bench; docs/quotas.md).
// A real PostgreSQL, server and agent (process runtime, one T4, a stop
// grace of 1 s); the SPOT replica exits at SIGTERM, as a checkpointing
// trainer does. The baseline, measured in the same run: the same STANDARD
// job's submit -> RUNNING on the idle node. Needs TRAINPLANE_SERVER_BIN and
// TRAINPLANE_AGENT_BIN.
import { request, startPostgres, startServer } from '../tests/integration/harness.mjs';
import { startAgent } from '../tests/integration/agents.mjs';

const ROUNDS = Number(process.argv[2] || 5);
const T4 = 'NVIDIA_TESLA_T4';
const pg = await startPostgres();
const server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '1000' } });
const agent = await startAgent(server, { node: 'lat', region: 'europe-west4', zone: 'europe-west4-b',
  gpuType: T4, gpuCount: 1, stopGraceSeconds: 1 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function create(name, command, scheduling) {
  const res = await request(server.base, 'POST', '/v1/projects/lat/locations/europe-west4/customJobs', { body: {
    displayName: name, jobSpec: { ...(scheduling ? { scheduling } : {}), workerPoolSpecs: [{
      machineSpec: { machineType: 'n1-standard-4', acceleratorType: T4, acceleratorCount: 1 }, replicaCount: 1,
      containerSpec: { imageUri: 'x', command: ['sh', '-c', command] } }] } } });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.name;
}
async function until(name, states) {
  for (;;) {
    const j = (await request(server.base, 'GET', `/v1/${name}`)).json;
    if (states.includes(j.state)) return j;
    await sleep(10);
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const idle = [], preempting = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    let t0 = Date.now();
    let std = await create(`idle-${i}`, 'sleep 0.3');
    await until(std, ['JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED']);
    idle.push(Date.now() - t0);
    await until(std, ['JOB_STATE_SUCCEEDED']);
    const spot = await create(`spot-${i}`, "trap 'exit 143' TERM; while :; do sleep 0.05; done", { strategy: 'SPOT' });
    await until(spot, ['JOB_STATE_RUNNING']);
    t0 = Date.now();
    std = await create(`std-${i}`, 'sleep 0.3');
    await until(std, ['JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED']);
    preempting.push(Date.now() - t0);
    await until(std, ['JOB_STATE_SUCCEEDED']);
    await request(server.base, 'POST', `/v1/${spot}:cancel`);
    await until(spot, ['JOB_STATE_CANCELLED', 'JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED']);
  }
  console.log(`preemption latency, ${ROUNDS} rounds (median): submit -> RUNNING ${median(preempting)} ms through a `
    + `SPOT victim, ${median(idle)} ms on the idle node; the goal: the victim's grace (1000 ms) + 1000 ms`);
} finally {
  await agent.stop();
  await server.stop();
  agent.cleanup();
  await pg.cleanup();
}
