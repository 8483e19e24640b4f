// Issue 27: the emulator's scripted outcomes (docs/emulator.md, "Scripted
// outcomes"): a rule list decides how matched jobs end on the simulated
// fleet (fail with a code, be preempted like a SPOT VM and restart, hang
// until cancelled, stay QUEUED), and what a tuning trial's metric is, so a
// client can test its failure handling and its tuning code end to end.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { IMAGE, startEmulatorPair } from './emulator.mjs';
import { assertError, client, fieldViolations, waitFor } from './harness.mjs';

let pair;
let emu;
let plain;
let c;

before(async () => {
  pair = await startEmulatorPair({ nodesPerType: 2, env: { TRAINPLANE_EMULATOR_REPLICA_DURATION: '0.3s' } });
  ({ emu, plain, c } = pair);
});
after(async () => {
  if (pair) await pair.stop();
});

const image = IMAGE;

async function until(fn, ms, what) {
  let v;
  await waitFor(async () => (v = await fn()), ms, what);
  return v;
}

async function logOf(project, jobId) {
  const r = await c.post('/v2/entries:list', { resourceNames: [`projects/${project}`],
    filter: `resource.labels.job_id="${jobId}"`, pageSize: 1000 });
  return (r.json.entries || []).map((e) => e.textPayload || '');
}

async function setRules(rules) {
  const r = await c.post('/trainplane/v1/emulator:setRules', { rules });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

describe('scripted outcomes', () => {
  it('setRules checks every rule and names every problem', async () => {
    const r = await c.post('/trainplane/v1/emulator:setRules', { rules: [
      { match: { api: 'gcp' }, outcome: 'fail' },
      { match: { role: 'boss', color: 'red' }, outcome: 'explode' },
      { outcome: 'succeed', metric: '2 * (lr + ' },
      { outcome: 'hang', seconds: 5 },
    ] });
    assertError(r, 400, 'INVALID_ARGUMENT');
    const fields = fieldViolations(r.json.error).map((v) => v.field).sort();
    assert.deepEqual(fields, ['rules[0].exitCode', 'rules[0].match.api', 'rules[1].match.color',
      'rules[1].match.role', 'rules[1].outcome', 'rules[2].metric', 'rules[3].seconds'].sort());
    assert.deepEqual((await c.get('/trainplane/v1/emulator/rules')).json, { rules: [] });
    assertError(await c.post('/trainplane/v1/emulator:setRules', { rules: {} }), 400, 'INVALID_ARGUMENT');
  });

  it('fail by display name: Google\'s message with the exit code; other jobs succeed', async () => {
    await setRules([{ match: { api: 'vertex', displayName: 'flaky-*' }, outcome: 'fail', exitCode: 42, seconds: 0.2 }]);
    assert.equal((await c.get('/trainplane/v1/emulator/rules')).json.rules[0].exitCode, 42);
    const mk = async (displayName) => (await c.post('/v1/projects/rules/locations/us-central1/customJobs', {
      displayName, jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' },
        replicaCount: '1', containerSpec: image }] } })).json.name;
    const bad = await mk('flaky-nightly');
    const good = await mk('steady');
    const b = await until(async () => {
      const j = (await c.get(`/v1/${bad}`)).json;
      return j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 20_000, 'the flaky job to fail');
    assert.match(b.error.message, /non-zero status of 42/);
    await until(async () => (await c.get(`/v1/${good}`)).json.state === 'JOB_STATE_SUCCEEDED', 20_000, 'the steady job');
  });

  it('preempt once: the replica is lost like a SPOT VM, restarts (attempt 2) and succeeds', async () => {
    await setRules([{ match: { project: 'spot' }, outcome: 'preempt', seconds: 0.2, times: 1 }]);
    assert.equal((await c.post('/v1/projects/spot/jobs', { jobId: 'spot_1',
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image } })).status, 200);
    await until(async () => (await c.get('/v1/projects/spot/jobs/spot_1')).json.state === 'SUCCEEDED',
      30_000, 'the preempted job to succeed on its second attempt');
    const log = await logOf('spot', 'spot_1');
    assert.ok(log.some((l) => /preempted/.test(l)), log.join('\n'));
    assert.ok(log.some((l) => /attempt 2/.test(l)), log.join('\n'));
  });

  it('hang until cancelled; queue holds a job with its reason while others run', async () => {
    await setRules([
      { match: { labels: { mode: 'hang' } }, outcome: 'hang' },
      { match: { jobId: 'held_*' }, outcome: 'queue' },
    ]);
    const job = (id, labels = {}) => c.post('/v1/projects/hq/jobs', { jobId: id, labels,
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image } });
    assert.equal((await job('hangs', { mode: 'hang' })).status, 200);
    assert.equal((await job('held_1')).status, 200);
    assert.equal((await job('free_1')).status, 200);
    await until(async () => (await c.get('/v1/projects/hq/jobs/free_1')).json.state === 'SUCCEEDED', 20_000, 'free_1');
    assert.equal((await c.get('/v1/projects/hq/jobs/hangs')).json.state, 'RUNNING');
    assert.equal((await c.get('/v1/projects/hq/jobs/held_1')).json.state, 'QUEUED');
    await until(async () => (await logOf('hq', 'held_1')).some((l) => /rules\[1\] \(outcome queue\) holds it/.test(l)),
      20_000, 'the held job\'s reason in its log');
    assert.equal((await c.post('/v1/projects/hq/jobs/hangs:cancel', {})).status, 200);
    await until(async () => (await c.get('/v1/projects/hq/jobs/hangs')).json.state === 'CANCELLED', 20_000, 'cancelled');
    // Lifting the rule lets the held job run.
    await setRules([]);
    await until(async () => (await c.get('/v1/projects/hq/jobs/held_1')).json.state === 'SUCCEEDED', 20_000,
      'the held job, once released');
  });

  it('a tuning job\'s simulated trials report the metric rule\'s value at their parameters', async () => {
    await setRules([{ match: { project: 'tune' }, outcome: 'succeed', seconds: 0.1,
      metric: '1 - (lr - 0.01)^2 * 1000 - (layers - 4)^2 / 100' }]);
    const res = await c.post('/v1/projects/tune/jobs', { jobId: 'study_1', trainingInput: {
      scaleTier: 'BASIC', region: 'us-central1', masterConfig: image,
      hyperparameters: { goal: 'MAXIMIZE', hyperparameterMetricTag: 'score', maxTrials: 6, maxParallelTrials: 3,
        algorithm: 'RANDOM_SEARCH',
        params: [{ parameterName: 'lr', type: 'DOUBLE', minValue: 0.001, maxValue: 0.1 },
          { parameterName: 'layers', type: 'INTEGER', minValue: 1, maxValue: 8 }] } } });
    assert.equal(res.status, 200, res.text);
    const job = await until(async () => {
      const j = (await c.get('/v1/projects/tune/jobs/study_1')).json;
      return j.state === 'SUCCEEDED' ? j : null;
    }, 60_000, 'the study to end');
    const trials = job.trainingOutput.trials;
    assert.equal(trials.length, 6);
    for (const t of trials) {
      const lr = Number(t.hyperparameters.lr);
      const layers = Number(t.hyperparameters.layers);
      const want = 1 - (lr - 0.01) ** 2 * 1000 - (layers - 4) ** 2 / 100;
      assert.ok(Math.abs(Number(t.finalMetric.objectiveValue) - want) < 1e-9, JSON.stringify(t));
    }
    const best = Math.max(...trials.map((t) => Number(t.finalMetric.objectiveValue)));
    assert.equal(Number(trials[0].finalMetric.objectiveValue), best, 'best trial first');
  });

  it('a Vertex tuning job by display name: every trial reports the rule\'s metric, the best is the optimum', async () => {
    await setRules([{ match: { api: 'vertex', displayName: 'sweep-*' }, outcome: 'succeed', seconds: 0.1,
      metric: '10 - (x - 3)^2' }]);
    const res = await c.post('/v1/projects/tune/locations/us-central1/hyperparameterTuningJobs', {
      displayName: 'sweep-x', maxTrialCount: 5, parallelTrialCount: 5,
      studySpec: { metrics: [{ metricId: 'score', goal: 'MAXIMIZE' }], algorithm: 'GRID_SEARCH',
        parameters: [{ parameterId: 'x', integerValueSpec: { minValue: '1', maxValue: '5' } }] },
      trialJobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1',
        containerSpec: image }] } });
    assert.equal(res.status, 200, res.text);
    const done = await until(async () => {
      const j = (await c.get(`/v1/${res.json.name}`)).json;
      return j.state === 'JOB_STATE_SUCCEEDED' || j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 60_000, 'the Vertex study to end');
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    assert.equal(done.trials.length, 5);
    for (const t of done.trials) {
      const x = Number(t.parameters[0].value);
      const got = Number(t.finalMeasurement.metrics[0].value ?? 0);
      assert.equal(got, 10 - (x - 3) ** 2, JSON.stringify(t));
    }
    const best = done.trials.reduce((a, t) => (Number(t.finalMeasurement.metrics[0].value ?? 0) >
      Number(a.finalMeasurement.metrics[0].value ?? 0) ? t : a));
    assert.equal(Number(best.parameters[0].value), 3);
    await setRules([]);
  });

  it('a server that is no emulator refuses the rules', async () => {
    const p = client(plain.base);
    assertError(await p.get('/trainplane/v1/emulator/rules'), 400, 'FAILED_PRECONDITION', /not an emulator/);
    assertError(await p.post('/trainplane/v1/emulator:setRules', { rules: [] }), 400, 'FAILED_PRECONDITION',
      /not an emulator/);
  });
});
