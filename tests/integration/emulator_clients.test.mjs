// Issue 27: a client test suite written as a team testing its own tooling
// would write it, with Google's Node clients (googleapis for ml v1,
// @google-cloud/aiplatform for Vertex) against `trainplane-server
// --emulator`: jobs Google would run (any region, any accelerator the
// catalog offers, large gangs) run on the simulated fleet, through the real
// scheduler and state machine, to SUCCEEDED, with their cluster in the log.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import aiplatform from '@google-cloud/aiplatform';
import { OAuth2Client } from 'google-auth-library';

import { AGENT_TOKEN } from './agents.mjs';
import { google } from './googleapis.mjs';
import { startPostgres, startServer, waitFor } from './harness.mjs';

// waitFor() with the value the condition found.
async function until(fn, timeoutMs, message) {
  let value;
  await waitFor(async () => (value = await fn()), timeoutMs, message);
  return value;
}

const { v1 } = aiplatform;
const PROJECT = 'emu';

let pg;
let server;
let ml;
let jobs;
let logging;

before(async () => {
  pg = await startPostgres();
  server = await startServer({
    pg, args: ['--emulator'],
    // (a fleet of 3 nodes of each kind a region: enough here, registered in a moment)
    env: { TRAINPLANE_EMULATOR_NODES_PER_TYPE: '3', TRAINPLANE_EMULATOR_REPLICA_DURATION: '0.3s', TRAINPLANE_SCHEDULER_TICK_MS: '200' },
  });
  ml = google.ml({ version: 'v1', rootUrl: `http://127.0.0.1:${server.port}/`, auth: 'any-key' });
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: 'any-token', expiry_date: Date.now() + 3600_000 });
  const opts = { apiEndpoint: '127.0.0.1', port: server.port, protocol: 'http', fallback: true, authClient };
  jobs = new v1.JobServiceClient(opts);
  logging = async (jobId) => {
    const res = await fetch(`${server.base}/v2/entries:list`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ resourceNames: [`projects/${PROJECT}`], filter: `resource.labels.job_id="${jobId}"`, pageSize: 1000 }),
    });
    return ((await res.json()).entries || []).map((e) => e.textPayload || '');
  };
});
after(async () => {
  if (server) await server.stop();
  if (pg) await pg.cleanup();
});

async function mlJob(jobId, trainingInput) {
  await ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: { jobId, trainingInput } });
  return until(async () => {
    const j = (await ml.projects.jobs.get({ name: `projects/${PROJECT}/jobs/${jobId}` })).data;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) ? j : null;
  }, 30_000, `${jobId} to end`);
}

async function vertexJob(region, displayName, workerPoolSpecs) {
  const [job] = await jobs.createCustomJob({
    parent: `projects/${PROJECT}/locations/${region}`,
    customJob: { displayName, jobSpec: { workerPoolSpecs } },
  });
  const done = await until(async () => {
    const [j] = await jobs.getCustomJob({ name: job.name });
    return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'].includes(j.state) ? j : null;
  }, 30_000, `${displayName} to end`);
  return { ...done, id: job.name.split('/').pop() };
}

const image = { imageUri: 'us-docker.pkg.dev/team/trainer:1' };

describe('emulator: every job Google would run runs', () => {
  it('the fleet covers the catalog: every region has CPU nodes, and GPU and TPU nodes where offered', async () => {
    const nodes = (await (await fetch(`${server.base}/trainplane/v1/nodes`)).json()).nodes;
    assert.ok(nodes.length > 100, `a fleet, not ${nodes.length} nodes`);
    assert.ok(nodes.every((n) => n.runtime === 'simulate' && n.state === 'READY'));
    const types = new Set(nodes.flatMap((n) => (n.accelerators || []).map((a) => a.type)));
    for (const t of ['NVIDIA_TESLA_A100', 'NVIDIA_TESLA_V100', 'NVIDIA_H100_80GB', 'NVIDIA_H200_141GB', 'TPU_V3'])
      assert.ok(types.has(t), `${t} nodes`);
    const regions = new Set(nodes.map((n) => n.region));
    assert.ok(regions.has('europe-west4') && regions.has('us-central1') && regions.has('asia-east1'));
  });

  it('a real agent cannot take a simulated node\'s name', async () => {
    const res = await fetch(`${server.base}/agent/v1/nodes/sim-us-central1-a-cpu-0:register`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${AGENT_TOKEN}` },
      body: JSON.stringify({ incarnation: 'x1', region: 'us-central1', zone: 'us-central1-a', address: '127.0.0.1',
        runtime: 'simulate', vcpus: 4, memoryMb: 4096, portRange: [30000, 30010] }),
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, /simulated fleet/);
  });

  it('ml v1 (googleapis): 8 x A100 in us-central1, master and 2 workers, TF_CONFIG in the log', async () => {
    const j = await mlJob('a100_8', {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'a2-highgpu-8g', masterConfig: image,
      workerType: 'a2-highgpu-8g', workerCount: '2',
    });
    assert.equal(j.state, 'SUCCEEDED', j.errorMessage);
    const log = await logging('a100_8');
    const tf = log.filter((l) => l.startsWith('TF_CONFIG='));
    assert.equal(tf.length, 3, 'each replica prints TF_CONFIG');
    const cfg = JSON.parse(tf[0].slice('TF_CONFIG='.length));
    assert.equal(cfg.cluster.master.length, 1);
    assert.equal(cfg.cluster.worker.length, 2);
    assert.ok(log.includes('CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7'), 'all 8 GPUs bound');
  });

  it('ml v1: a V100 job in europe-west4', async () => {
    const j = await mlJob('v100_ew4', {
      scaleTier: 'CUSTOM', region: 'europe-west4', masterType: 'n1-standard-8',
      masterConfig: { ...image, acceleratorConfig: { count: '2', type: 'NVIDIA_TESLA_V100' } },
    });
    assert.equal(j.state, 'SUCCEEDED', j.errorMessage);
    assert.ok((await logging('v100_ew4')).some((l) => l.startsWith('CLUSTER_SPEC=')));
  });

  it('ml v1: a TPU_V3 job', async () => {
    const j = await mlJob('tpu_v3', {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-highcpu-16', masterConfig: image,
      workerType: 'cloud_tpu', workerCount: '1',
      workerConfig: { acceleratorConfig: { type: 'TPU_V3', count: '8' }, tpuTfVersion: '2.4' },
    });
    assert.equal(j.state, 'SUCCEEDED', j.errorMessage);
  });

  it('Vertex: 8 x H200 on a3-ultragpu-8g (googleapis), and 1 x H100 on a3-highgpu-1g (@google-cloud/aiplatform)', async () => {
    // @google-cloud/aiplatform 3.35 (package.json) predates NVIDIA_H200_141GB:
    // its protobuf enum drops the value, so the H200 job goes through the
    // discovery-based googleapis client, whose enums are strings.
    const vertex = google.aiplatform({ version: 'v1', rootUrl: `http://127.0.0.1:${server.port}/`, auth: 'any-key' });
    const created = (await vertex.projects.locations.customJobs.create({
      parent: `projects/${PROJECT}/locations/us-central1`,
      requestBody: { displayName: 'h200', jobSpec: { workerPoolSpecs: [{
        machineSpec: { machineType: 'a3-ultragpu-8g', acceleratorType: 'NVIDIA_H200_141GB', acceleratorCount: 8 },
        replicaCount: '1', containerSpec: image }] } },
    })).data;
    const h200 = await until(async () => {
      const j = (await vertex.projects.locations.customJobs.get({ name: created.name })).data;
      return j.state === 'JOB_STATE_SUCCEEDED' || j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 30_000, 'the H200 job to end');
    assert.equal(h200.state, 'JOB_STATE_SUCCEEDED', h200.error && h200.error.message);
    assert.ok((await logging(created.name.split('/').pop())).includes('CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7'));
    const h100 = await vertexJob('us-central1', 'h100', [{
      machineSpec: { machineType: 'a3-highgpu-1g', acceleratorType: 'NVIDIA_H100_80GB', acceleratorCount: 1 },
      replicaCount: 1, containerSpec: image,
    }]);
    assert.equal(h100.state, 'JOB_STATE_SUCCEEDED', h100.error && h100.error.message);
    const log = await logging(h100.id);
    assert.ok(log.includes('CUDA_VISIBLE_DEVICES=0'), log.join('\n'));
    assert.ok(log.some((l) => l.startsWith('CLUSTER_SPEC=')));
  });

  it('Vertex: a gang of a chief and 10 workers starts at once and succeeds', async () => {
    const j = await vertexJob('us-central1', 'gang', [
      { machineSpec: { machineType: 'n1-standard-8', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1 },
        replicaCount: 1, containerSpec: image },
      { machineSpec: { machineType: 'n1-standard-8', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1 },
        replicaCount: 10, containerSpec: image },
    ]);
    assert.equal(j.state, 'JOB_STATE_SUCCEEDED', j.error && j.error.message);
    const specs = (await logging(j.id)).filter((l) => l.startsWith('CLUSTER_SPEC='))
      .map((l) => JSON.parse(l.slice('CLUSTER_SPEC='.length)));
    assert.equal(specs.length, 11, 'every replica prints its CLUSTER_SPEC');
    assert.equal(specs[0].cluster.workerpool1.length, 10);
    assert.deepEqual(new Set(specs.map((s) => JSON.stringify(s.cluster))).size, 1, 'one cluster for all');
  });

  it('a real job label script still scripts a replica: fail-3-after-1s fails with Google\'s message', async () => {
    await ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: {
      jobId: 'scripted_fail', labels: { 'trainplane-simulate': 'fail-3-after-1s' },
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image },
    } });
    const j = await until(async () => {
      const d = (await ml.projects.jobs.get({ name: `projects/${PROJECT}/jobs/scripted_fail` })).data;
      return d.state === 'FAILED' ? d : null;
    }, 30_000, 'the scripted failure');
    assert.match(j.errorMessage, /non-zero status of 3/);
  });

  it('cancel stops a running simulated replica', async () => {
    await ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: {
      jobId: 'long_one', labels: { 'trainplane-simulate': 'run-3600s-exit-0' },
      trainingInput: { scaleTier: 'BASIC_GPU', region: 'us-central1', masterConfig: image },
    } });
    const name = `projects/${PROJECT}/jobs/long_one`;
    await waitFor(async () => (await ml.projects.jobs.get({ name })).data.state === 'RUNNING', 30_000, 'RUNNING');
    await ml.projects.jobs.cancel({ name });
    await waitFor(async () => (await ml.projects.jobs.get({ name })).data.state === 'CANCELLED', 30_000, 'CANCELLED');
    assert.ok((await logging('long_one')).includes('simulate: stopped by SIGTERM'));
  });
});

describe('emulator: a client suite\'s own scripts, clock and isolation', () => {
  const control = async (verb, body) => {
    const r = await fetch(`${server.base}/trainplane/v1/emulator:${verb}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const text = await r.text();
    assert.equal(r.status, 200, text);
    return JSON.parse(text);
  };

  it('a scripted failure reaches @google-cloud/aiplatform as Google\'s error', async () => {
    await control('setRules', { rules: [{ match: { displayName: 'doomed-*' }, outcome: 'fail', exitCode: 13, seconds: 0.1 }] });
    const j = await vertexJob('us-central1', 'doomed-run', [{ machineSpec: { machineType: 'n1-standard-4' },
      replicaCount: 1, containerSpec: image }]);
    assert.equal(j.state, 'JOB_STATE_FAILED');
    assert.match(j.error.message, /non-zero status of 13/);
    await control('setRules', { rules: [] });
  });

  it('a SPOT job is preempted once and restarted, then succeeds', async () => {
    await control('setRules', { rules: [{ match: { labels: { tier: 'spot' } }, outcome: 'preempt', seconds: 0.2 }] });
    const [job] = await jobs.createCustomJob({ parent: `projects/${PROJECT}/locations/us-central1`, customJob: {
      displayName: 'spot', labels: { tier: 'spot' },
      jobSpec: { scheduling: { strategy: 'SPOT' }, workerPoolSpecs: [{
        machineSpec: { machineType: 'g2-standard-8', acceleratorType: 'NVIDIA_L4', acceleratorCount: 1 },
        replicaCount: 1, containerSpec: image }] } } });
    const done = await until(async () => {
      const [j] = await jobs.getCustomJob({ name: job.name });
      return j.state === 'JOB_STATE_SUCCEEDED' || j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 30_000, 'the SPOT job to end');
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED');
    const log = await logging(job.name.split('/').pop());
    assert.ok(log.some((l) => /preempted/.test(l)) && log.some((l) => /attempt 2/.test(l)), log.join('\n'));
    await control('setRules', { rules: [] });
  });

  it('a 2-hour maxRunningTime is exceeded through the clock (googleapis)', async () => {
    await ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: {
      jobId: 'two_hours', labels: { 'trainplane-simulate': 'run-86400s-exit-0' },
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image,
        scheduling: { maxRunningTime: '7200s' } } } });
    const name = `projects/${PROJECT}/jobs/two_hours`;
    await until(async () => (await ml.projects.jobs.get({ name })).data.state === 'RUNNING', 30_000, 'RUNNING');
    await control('advanceClock', { duration: '7201s' });
    const j = await until(async () => {
      const d = (await ml.projects.jobs.get({ name })).data;
      return d.state === 'FAILED' ? d : null;
    }, 30_000, 'FAILED by maxRunningTime');
    assert.match(j.errorMessage, /max_running_time/);
  });

  it('a tuning job\'s simulated trials find the configured optimum (googleapis)', async () => {
    await control('setRules', { rules: [{ match: { jobId: 'optimum' }, outcome: 'succeed', seconds: 0.1,
      metric: '-(lr - 0.03)^2 - (units - 64)^2' }] });
    await ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: { jobId: 'optimum', trainingInput: {
      scaleTier: 'BASIC', region: 'us-central1', masterConfig: image,
      hyperparameters: { goal: 'MAXIMIZE', hyperparameterMetricTag: 'score', algorithm: 'GRID_SEARCH',
        maxTrials: 9, maxParallelTrials: 3, params: [
          { parameterName: 'lr', type: 'DISCRETE', discreteValues: [0.01, 0.03, 0.1] },
          { parameterName: 'units', type: 'DISCRETE', discreteValues: [32, 64, 128] }] } } } });
    const j = await until(async () => {
      const d = (await ml.projects.jobs.get({ name: `projects/${PROJECT}/jobs/optimum` })).data;
      return d.state === 'SUCCEEDED' || d.state === 'FAILED' ? d : null;
    }, 60_000, 'the study to end');
    assert.equal(j.state, 'SUCCEEDED', j.errorMessage);
    const best = j.trainingOutput.trials[0];
    assert.deepEqual([Number(best.hyperparameters.lr), Number(best.hyperparameters.units)], [0.03, 64]);
    assert.equal(Number(best.finalMetric.objectiveValue ?? 0), 0);	// (proto3 JSON leaves a 0 out)
    await control('setRules', { rules: [] });
  });

  it('reset between tests: the project is empty again, for both clients', async () => {
    const r = await control('reset', { project: PROJECT });
    assert.ok(r.deletedJobs >= 10);
    assert.deepEqual((await ml.projects.jobs.list({ parent: `projects/${PROJECT}` })).data, {});
    const [list] = await jobs.listCustomJobs({ parent: `projects/${PROJECT}/locations/us-central1` });
    assert.equal(list.length, 0);
  });
});
