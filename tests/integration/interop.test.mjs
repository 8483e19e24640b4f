// Interop: the official Google Node client (npm googleapis, pinned by
// package-lock.json) talks to the server unchanged, pointed at it with
// rootUrl and an API key (which it sends as ?key=..., accepted and ignored).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { google } from './googleapis.mjs';

import { isBase64, startPostgres, startServer } from './harness.mjs';

let pg;
let server;
let ml;

const PROJECT = 'interop-project';
const parent = `projects/${PROJECT}`;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg });
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

/** Runs a call expected to fail; returns the GaxiosError. */
async function rejects(promise) {
  try {
    const res = await promise;
    assert.fail(`expected an error, got ${res.status} ${JSON.stringify(res.data)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.ok(err.response, `an HTTP error expected: ${err.stack}`);
    return err;
  }
}

function assertJob(job, { id, state = 'QUEUED' } = {}) {
  if (id) assert.equal(job.jobId, id);
  assert.equal(job.state, state);
  assert.ok(isBase64(job.etag), `etag ${job.etag} is base64`);
  assert.ok(!Number.isNaN(Date.parse(job.createTime)), `createTime ${job.createTime}`);
  assert.equal(typeof job.trainingOutput, 'object');
}

function trainingInput() {
  return {
    scaleTier: 'CUSTOM',
    region: 'us-central1',
    masterType: 'n1-standard-8',
    masterConfig: {
      imageUri: 'gcr.io/interop/trainer:1',
      acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: 1 }, // a number, as curl users send
    },
    workerType: 'n1-standard-8',
    workerCount: '2', // a string, as gcloud/apitools send int64
    args: ['--epochs', '3'],
    scheduling: { maxRunningTime: '3600s' },
  };
}

describe('googleapis ml v1 client', () => {
  let created;

  it('projects.getConfig', async () => {
    const res = await ml.projects.getConfig({ name: parent });
    assert.equal(res.status, 200);
    assert.match(res.data.serviceAccount, /^service-\d+@cloud-ml\.google\.com\.iam\.gserviceaccount\.com$/);
    assert.equal(typeof res.data.serviceAccountProject, 'string', 'int64 as a string');
    assert.ok(res.data.serviceAccount.includes(res.data.serviceAccountProject));
    assert.equal(typeof res.data.config.tpuServiceAccount, 'string');
  });

  it('projects.locations.list (paged) and locations.get', async () => {
    const names = [];
    let pageToken;
    do {
      const res = await ml.projects.locations.list({ parent, pageSize: 4, pageToken });
      assert.equal(res.status, 200);
      assert.ok(res.data.locations.length <= 4);
      for (const loc of res.data.locations) {
        assert.match(loc.name, new RegExp(`^${parent}/locations/[a-z0-9-]+$`));
        const training = loc.capabilities.find((c) => c.type === 'TRAINING');
        assert.ok(training, JSON.stringify(loc));
        for (const a of training.availableAccelerators ?? []) assert.match(a, /^(NVIDIA_|TPU_)/);
        names.push(loc.name);
      }
      pageToken = res.data.nextPageToken;
    } while (pageToken);
    assert.equal(new Set(names).size, names.length);
    assert.ok(names.includes(`${parent}/locations/us-central1`));
    const one = await ml.projects.locations.get({ name: `${parent}/locations/us-central1` });
    assert.equal(one.data.name, `${parent}/locations/us-central1`);
  });

  it('projects.jobs.create', async () => {
    const res = await ml.projects.jobs.create({
      parent,
      requestBody: { jobId: 'interop_job_1', trainingInput: trainingInput(), labels: { owner: 'alice' } },
    });
    assert.equal(res.status, 200);
    assertJob(res.data, { id: 'interop_job_1' });
    const ti = res.data.trainingInput;
    assert.equal(ti.workerCount, '2');
    assert.equal(ti.masterConfig.acceleratorConfig.count, '1', 'int64 emitted as a string');
    assert.equal(ti.masterConfig.acceleratorConfig.type, 'NVIDIA_TESLA_T4');
    assert.equal(ti.scaleTier, 'CUSTOM');
    assert.deepEqual(ti.args, ['--epochs', '3']);
    assert.equal(ti.scheduling.maxRunningTime, '3600s');
    assert.deepEqual(res.data.labels, { owner: 'alice' });
    assert.deepEqual(res.data.trainingOutput, {});
    created = res.data;
  });

  it('a duplicate create is a GaxiosError 409 ALREADY_EXISTS with a BadRequest detail', async () => {
    const err = await rejects(ml.projects.jobs.create({
      parent,
      requestBody: { jobId: 'interop_job_1', trainingInput: trainingInput() },
    }));
    assert.equal(err.status, 409);
    assert.equal(err.response.status, 409);
    const e = err.response.data.error;
    assert.equal(e.code, 409);
    assert.equal(e.status, 'ALREADY_EXISTS');
    assert.equal(e.message, 'Field: job.job_id Error: A job with this id already exists.');
    const headers = err.response.headers;
    const requestId = typeof headers.get === 'function' ? headers.get('x-request-id') : headers['x-request-id'];
    assert.deepEqual(e.details, [{
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'job.job_id', description: 'A job with this id already exists.' }],
    }, {
      '@type': 'type.googleapis.com/google.rpc.RequestInfo',
      requestId,
    }]);
    assert.match(e.details[1].requestId, /^[0-9a-f]{32}$/);
    assert.match(err.message, /A job with this id already exists/);
  });

  it('a bad request is a GaxiosError 400 INVALID_ARGUMENT naming the field', async () => {
    const err = await rejects(ml.projects.jobs.create({
      parent,
      requestBody: { jobId: 'interop_bad', trainingInput: { ...trainingInput(), masterTypo: 'x' } },
    }));
    assert.equal(err.status, 400);
    assert.equal(err.response.data.error.status, 'INVALID_ARGUMENT');
    assert.equal(err.response.data.error.details[0].fieldViolations[0].field, 'job.training_input');
  });

  it('projects.jobs.get', async () => {
    const res = await ml.projects.jobs.get({ name: `${parent}/jobs/interop_job_1` });
    assert.equal(res.status, 200);
    assert.deepEqual(res.data, created);
    const err = await rejects(ml.projects.jobs.get({ name: `${parent}/jobs/interop_missing` }));
    assert.equal(err.status, 404);
    assert.equal(err.response.data.error.status, 'NOT_FOUND');
    assert.equal(err.response.data.error.message, `Job ${parent}/jobs/interop_missing was not found.`);
  });

  it('projects.jobs.list with paging (pageSize 2) and a label filter', async () => {
    const made = ['interop_job_1'];
    for (let i = 2; i <= 6; i++) {
      const res = await ml.projects.jobs.create({
        parent,
        requestBody: {
          jobId: `interop_job_${i}`,
          trainingInput: trainingInput(),
          labels: { owner: i % 2 ? 'alice' : 'bob', n: String(i) },
        },
      });
      assert.equal(res.status, 200);
      made.push(res.data.jobId);
    }
    const all = [];
    let pageToken;
    let pages = 0;
    do {
      const res = await ml.projects.jobs.list({ parent, pageSize: 2, pageToken });
      assert.equal(res.status, 200);
      assert.ok(res.data.jobs.length <= 2);
      for (const j of res.data.jobs) assertJob(j);
      all.push(...res.data.jobs.map((j) => j.jobId));
      pageToken = res.data.nextPageToken;
      pages += 1;
    } while (pageToken);
    assert.equal(pages, 3);
    assert.deepEqual(all, [...made].reverse(), 'newest first, no duplicates or omissions');

    const alice = [];
    pageToken = undefined;
    do {
      const res = await ml.projects.jobs.list({ parent, pageSize: 2, pageToken, filter: 'labels.owner=alice' });
      alice.push(...(res.data.jobs ?? []).map((j) => j.jobId));
      pageToken = res.data.nextPageToken;
    } while (pageToken);
    assert.deepEqual(alice, ['interop_job_5', 'interop_job_3', 'interop_job_1']);

    const none = await ml.projects.jobs.list({ parent, filter: 'labels.owner=nobody' });
    assert.equal(none.status, 200);
    assert.deepEqual(none.data, {});

    const err = await rejects(ml.projects.jobs.list({ parent, filter: 'foo:1' }));
    assert.equal(err.status, 400);
    assert.equal(err.response.data.error.message, "Field: filter Error: Invalid filter: unknown field 'foo'");
  });

  it('projects.jobs.patch with a good etag, then a stale one (400 FAILED_PRECONDITION)', async () => {
    const name = `${parent}/jobs/interop_job_1`;
    const current = (await ml.projects.jobs.get({ name })).data;
    const res = await ml.projects.jobs.patch({
      name,
      updateMask: 'labels,etag',
      requestBody: { labels: { owner: 'carol', color: 'blue' }, etag: current.etag },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.data.labels, { owner: 'carol', color: 'blue' });
    assert.ok(isBase64(res.data.etag));
    assert.notEqual(res.data.etag, current.etag, 'the etag changes');

    const err = await rejects(ml.projects.jobs.patch({
      name,
      updateMask: 'labels,etag',
      requestBody: { labels: { owner: 'mallory' }, etag: current.etag },
    }));
    assert.equal(err.status, 400);
    const e = err.response.data.error;
    assert.equal(e.status, 'FAILED_PRECONDITION');
    assert.equal(e.code, 400);
    const pf = e.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.PreconditionFailure');
    assert.ok(pf, JSON.stringify(e));
    assert.equal(pf.violations[0].subject, name);

    // gcloud's `jobs update` sends updateMask=labels and no etag.
    const gcloudStyle = await ml.projects.jobs.patch({ name, updateMask: 'labels', requestBody: { labels: { owner: 'dave' } } });
    assert.deepEqual(gcloudStyle.data.labels, { owner: 'dave' });
    assert.deepEqual((await ml.projects.jobs.get({ name })).data.labels, { owner: 'dave' });
  });

  it('projects.jobs.cancel', async () => {
    const name = `${parent}/jobs/interop_job_2`;
    const before = (await ml.projects.jobs.get({ name })).data;
    const res = await ml.projects.jobs.cancel({ name, requestBody: {} });
    assert.equal(res.status, 200);
    assert.deepEqual(res.data, {});
    const after = (await ml.projects.jobs.get({ name })).data;
    assertJob(after, { id: 'interop_job_2', state: 'CANCELLED' });
    assert.ok(after.errorMessage);
    assert.ok(!Number.isNaN(Date.parse(after.endTime)));
    assert.notEqual(after.etag, before.etag);

    const again = await ml.projects.jobs.cancel({ name, requestBody: {} });
    assert.equal(again.status, 200, 'cancelling a finished job succeeds');
    assert.deepEqual(again.data, {});

    const cancelled = await ml.projects.jobs.list({ parent, filter: 'state:CANCELLED' });
    assert.deepEqual(cancelled.data.jobs.map((j) => j.jobId), ['interop_job_2']);
    // A filter with spaces, as the client encodes it.
    const both = await ml.projects.jobs.list({ parent, filter: 'jobId:interop_job_* AND NOT state:QUEUED' });
    assert.deepEqual(both.data.jobs.map((j) => j.jobId), ['interop_job_2']);

    const err = await rejects(ml.projects.jobs.cancel({ name: `${parent}/jobs/interop_missing`, requestBody: {} }));
    assert.equal(err.status, 404);
    assert.equal(err.response.data.error.status, 'NOT_FOUND');
  });
});
