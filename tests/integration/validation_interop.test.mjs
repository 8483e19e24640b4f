// Issue 3 through HTTP with the official Node client: the seeds' configs are
// accepted as written, and the catalog's rules come back as Google's errors
// (status, message, google.rpc.BadRequest field violations) to googleapis.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { google } from './googleapis.mjs';

import { REPO_ROOT, startPostgres, startServer } from './harness.mjs';

const FIXTURES = path.join(REPO_ROOT, 'tests/unit/fixtures');
const PROJECT = 'validation';
let pg, server, ml, n = 0;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false' } });
  ml = google.ml({ version: 'v1', rootUrl: `http://127.0.0.1:${server.port}/`, auth: 'any-key' });
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

function fixture(name) {
  const job = JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8'));
  job.jobId = `${job.jobId ?? 'job'}_${++n}`;
  return job;
}

async function create(job) {
  return ml.projects.jobs.create({ parent: `projects/${PROJECT}`, requestBody: job });
}

/** Creates a job that must be refused; returns {message, violations}. */
async function refused(job) {
  try {
    const res = await create(job);
    assert.fail(`accepted: ${JSON.stringify(res.data)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.equal(err.response?.status, 400, err.message);
    const e = err.response.data.error;
    assert.equal(e.status, 'INVALID_ARGUMENT');
    const bad = e.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
    assert.ok(bad, 'a BadRequest detail');
    return { message: e.message, violations: bad.fieldViolations };
  }
}

function ml_job(trainingInput) {
  return { jobId: `v_${++n}`, trainingInput };
}

describe('the seeds\' configs through googleapis', () => {
  const valid = fs.readdirSync(FIXTURES).filter((f) => /^seed00[02]_.*\.json$/.test(f) &&
                                                      !f.includes('mixed_gpus_us_central1'));
  assert.ok(valid.length >= 9, `seed fixtures found: ${valid}`);
  for (const name of valid) {
    it(`${name} is accepted as written`, async () => {
      const job = fixture(name);
      const res = await create(job);
      assert.equal(res.status, 200);
      assert.equal(res.data.state, 'QUEUED');
      assert.equal(res.data.trainingInput.region, job.trainingInput.region);
    });
  }

  it('seed 000: T4 master, K80 ps and P100 workers cannot run in us-central1', async () => {
    const { message, violations } = await refused(fixture('seed000_mixed_gpus_us_central1.json'));
    const want = 'No zone in region "us-central1" offers all of the accelerator types the job uses ' +
      '(NVIDIA_TESLA_K80, NVIDIA_TESLA_P100, NVIDIA_TESLA_T4). A job that uses more than one ' +
      'accelerator type must run in one zone that offers all of them.';
    assert.equal(message, `Field: training_input.region Error: ${want}`);
    assert.deepEqual(violations, [{ field: 'training_input.region', description: want }]);
  });

  it('the same job in us-east1, whose zones offer all three, is accepted', async () => {
    const job = fixture('seed000_mixed_gpus_us_central1.json');
    job.trainingInput.region = 'us-east1';
    assert.equal((await create(job)).status, 200);
  });
});

describe('catalog rules as Google errors through googleapis', () => {
  const master = (type, gpu, count, extra = {}) => ({
    scaleTier: 'CUSTOM', region: 'us-central1', masterType: type,
    masterConfig: { imageUri: 'gcr.io/p/t:1', acceleratorConfig: { type: gpu, count: String(count) } },
    ...extra,
  });

  for (const [machine, gpu, ok, bad] of [
    ['n1-highcpu-16', 'NVIDIA_TESLA_T4', [2, 4], [3]],
    ['n1-standard-32', 'NVIDIA_TESLA_V100', [4, 8], [2]],
  ]) {
    for (const count of ok) {
      it(`${count} x ${gpu} on ${machine} is accepted`, async () => {
        assert.equal((await create(ml_job(master(machine, gpu, count)))).status, 200);
      });
    }
    for (const count of bad) {
      it(`${count} x ${gpu} on ${machine} is refused with the supported counts`, async () => {
        const { violations } = await refused(ml_job(master(machine, gpu, count)));
        assert.equal(violations.length, 1);
        assert.equal(violations[0].field, 'training_input.master_config.accelerator_config.count');
        assert.match(violations[0].description,
          new RegExp(`^Accelerator count ${count} is not supported for accelerator "${gpu}" on ` +
                     `machine type "${machine}"\\. Supported counts: `));
      });
    }
  }

  it('reports every violation at once, each with its field', async () => {
    const { message, violations } = await refused(ml_job({
      scaleTier: 'CUSTOM', region: 'mars-north1', workerCount: '2',
      masterConfig: { imageUri: 'gcr.io/p/t:1' },
    }));
    const fields = violations.map((v) => v.field).sort();
    assert.deepEqual(fields, ['training_input.master_type', 'training_input.region',
                              'training_input.worker_type']);
    for (const v of violations) assert.ok(message.includes(`Field: ${v.field} Error: ${v.description}`));
    assert.ok(violations.some((v) => v.description === 'Region "mars-north1" is not supported for training.'));
  });

  it('an unknown machine type and a region without GPUs', async () => {
    let r = await refused(ml_job(master('n9-huge-1', 'NVIDIA_TESLA_T4', 1)));
    assert.ok(r.violations.some((v) => v.field === 'training_input.master_type'), r.message);
    r = await refused(ml_job({ ...master('n1-standard-8', 'NVIDIA_TESLA_T4', 1), region: 'europe-west3' }));
    assert.ok(r.violations.some((v) => v.field === 'training_input.region'), r.message);
  });

  it('TPU rules: parameter servers and a wrong TPU count are refused', async () => {
    const tpu = fixture('seed002_tpu_v2.json');
    tpu.trainingInput.workerConfig.acceleratorConfig.count = '4';
    const r = await refused(tpu);
    assert.ok(r.violations.some((v) => v.field.startsWith('training_input.worker_config.accelerator_config')),
              r.message);
  });
});
