// Issue 27: the emulator's reset (docs/emulator.md, "Reset"): one call
// clears a project (or every project) for test isolation: jobs of both APIs,
// a tuning job with its trials, running replicas stopped on the simulated
// fleet, nothing left in a server's cache; refused outside emulator mode.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { IMAGE, startEmulatorPair } from './emulator.mjs';
import { assertError, client, waitFor } from './harness.mjs';

let pair;
let emu;
let plain;
let c;

before(async () => {
  pair = await startEmulatorPair({ nodesPerType: 3 });
  ({ emu, plain, c } = pair);
});
after(async () => {
  if (pair) await pair.stop();
});

const image = IMAGE;
const forever = { 'trainplane-simulate': 'run-3600s-exit-0' };

async function busyReplicas() {
  const nodes = (await c.get('/trainplane/v1/nodes')).json.nodes;
  return nodes.reduce((n, x) => n + x.replicas, 0);
}

async function fill(project) {
  for (const id of ['a', 'b', 'c']) {
    const r = await c.post(`/v1/projects/${project}/jobs`, { jobId: id, labels: forever,
      trainingInput: { scaleTier: 'BASIC_GPU', region: 'us-central1', masterConfig: image } });
    assert.equal(r.status, 200, r.text);
  }
  const v = await c.post(`/v1/projects/${project}/locations/europe-west4/customJobs`, {
    displayName: 'vx', labels: forever, jobSpec: { workerPoolSpecs: [
      { machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: image },
      { machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: image }] } });
  assert.equal(v.status, 200, v.text);
  const t = await c.post(`/v1/projects/${project}/jobs`, { jobId: 'tune', labels: forever, trainingInput: {
    scaleTier: 'BASIC', region: 'us-central1', masterConfig: image,
    hyperparameters: { goal: 'MAXIMIZE', hyperparameterMetricTag: 'acc', maxTrials: 4, maxParallelTrials: 2,
      params: [{ parameterName: 'lr', type: 'DOUBLE', minValue: 0.001, maxValue: 0.1 }] } } });
  assert.equal(t.status, 200, t.text);
  return v.json.name;
}

describe('the emulator\'s reset', () => {
  it('clears one project, running replicas and trials included, and leaves the others alone', async () => {
    const vname = await fill('red');
    await fill('blue');
    // Running: 3 + 2 + 2 trials for each project.
    await waitFor(async () => (await busyReplicas()) >= 14, 30_000, 'every replica running');
    assert.equal((await c.get('/v1/projects/red/jobs/a')).status, 200);	// (now in the cache)
    assert.equal((await c.get(`/v1/${vname}`)).status, 200);
    const r = await c.post('/trainplane/v1/emulator:reset', { project: 'red' });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.deletedJobs >= 5, JSON.stringify(r.json));	// 5 jobs and the trials made so far
    // Gone at once, from every reader.
    assertError(await c.get('/v1/projects/red/jobs/a'), 404, 'NOT_FOUND');
    assertError(await c.get(`/v1/${vname}`), 404, 'NOT_FOUND');
    assert.deepEqual((await c.get('/v1/projects/red/jobs')).json, {});
    assert.deepEqual((await c.get('/v1/projects/red/locations/europe-west4/customJobs')).json, {});
    // Their replicas stop on the fleet; blue's keep running.
    await waitFor(async () => (await busyReplicas()) === 7, 30_000, 'red\'s replicas stopped');
    assert.equal((await c.get('/v1/projects/blue/jobs/a')).json.state, 'RUNNING');
    // The same ml v1 job id again; a new Vertex id, never an old one.
    assert.equal((await c.post('/v1/projects/red/jobs', { jobId: 'a',
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image } })).status, 200);
    const v2 = await c.post('/v1/projects/red/locations/europe-west4/customJobs', { displayName: 'again',
      jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: image }] } });
    assert.ok(BigInt(v2.json.name.split('/').pop()) > BigInt(vname.split('/').pop()));
  });

  it('{} clears every project', async () => {
    const r = await c.post('/trainplane/v1/emulator:reset', {});
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.deletedJobs >= 7);
    assert.deepEqual((await c.get('/v1/projects/blue/jobs')).json, {});
    await waitFor(async () => (await busyReplicas()) === 0, 30_000, 'every replica stopped');
  });

  it('bad bodies are 400, and a server that is no emulator refuses', async () => {
    assertError(await c.post('/trainplane/v1/emulator:reset', { project: 'Not A Project' }), 400, 'INVALID_ARGUMENT', /project/);
    assertError(await c.post('/trainplane/v1/emulator:reset', { project: 7 }), 400, 'INVALID_ARGUMENT', /project/);
    assertError(await c.post('/trainplane/v1/emulator:reset', { projects: ['x'] }), 400, 'INVALID_ARGUMENT', /reset/);
    assertError(await client(plain.base).post('/trainplane/v1/emulator:reset', {}), 400, 'FAILED_PRECONDITION',
      /not an emulator/);
  });
});
