// Issue 5: Vertex AI aiplatform v1 projects.locations.customJobs through
// the official googleapis client: create, get, list (filter, paging),
// cancel, delete with its long-running operation, and validation errors.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { google } from './googleapis.mjs';

import { REPO_ROOT, startPostgres, startServer } from './harness.mjs';

const PROJECT = 'vertexproj';
const LOCATION = 'us-central1';
const PARENT = `projects/${PROJECT}/locations/${LOCATION}`;
let pg, server, ai;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false' } });
  ai = google.aiplatform({ version: 'v1', rootUrl: `http://127.0.0.1:${server.port}/`, auth: 'any-key' });
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

function seedJob(displayName = 'flowers-multi-worker') {
  const job = JSON.parse(fs.readFileSync(
    path.join(REPO_ROOT, 'tests/unit/fixtures/seed001_vertex_multi_worker.json'), 'utf8'));
  job.displayName = displayName;
  return job;
}

async function create(job) {
  return (await ai.projects.locations.customJobs.create({ parent: PARENT, requestBody: job })).data;
}

async function rejects(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the call succeeded');
}

describe('Vertex customJobs', () => {
  it('create answers the job with a numeric id, JOB_STATE_QUEUED and times', async () => {
    const job = seedJob();
    job.labels = { team: 'ml' };
    const got = await create(job);
    assert.match(got.name, new RegExp(`^${PARENT}/customJobs/[0-9]+$`));
    assert.equal(got.displayName, 'flowers-multi-worker');
    assert.equal(got.state, 'JOB_STATE_QUEUED');
    assert.deepEqual(got.labels, { team: 'ml' });
    assert.equal(got.jobSpec.workerPoolSpecs.length, 2);
    assert.equal(got.jobSpec.workerPoolSpecs[1].replicaCount, '1');
    assert.ok(got.createTime && got.updateTime);
    assert.equal(got.error, undefined);

    const again = (await ai.projects.locations.customJobs.get({ name: got.name })).data;
    assert.deepEqual(again, got);
  });

  it("seed 001's single-machine example (2 x V100) is accepted", async () => {
    const job = JSON.parse(fs.readFileSync(
      path.join(REPO_ROOT, 'tests/unit/fixtures/seed001_vertex_single_machine_multi_gpu.json'), 'utf8'));
    const got = await create(job);
    assert.equal(got.state, 'JOB_STATE_QUEUED');
    assert.equal(got.jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount, 2);
  });

  it('get of an unknown job or in another location is 404', async () => {
    const e = await rejects(ai.projects.locations.customJobs.get({ name: `${PARENT}/customJobs/999999` }));
    assert.equal(e.code, 404);
    const got = await create(seedJob());
    const id = got.name.split('/').pop();
    const e2 = await rejects(ai.projects.locations.customJobs.get({
      name: `projects/${PROJECT}/locations/europe-west4/customJobs/${id}` }));
    assert.equal(e2.code, 404);
  });

  it('validation errors come back as INVALID_ARGUMENT with field violations', async () => {
    const noName = seedJob();
    delete noName.displayName;
    let e = await rejects(create(noName));
    assert.equal(e.code, 400);
    assert.equal(e.response.data.error.status, 'INVALID_ARGUMENT');
    assert.match(e.response.data.error.message, /^List of found errors:\t1\.Field: custom_job\.display_name; /);

    const twoMasters = seedJob();
    twoMasters.jobSpec.workerPoolSpecs[0].replicaCount = '2';
    e = await rejects(create(twoMasters));
    assert.equal(e.code, 400);
    const fields = e.response.data.error.details[0].fieldViolations.map((v) => v.field);
    assert.ok(fields.some((f) => f.startsWith('job_spec.worker_pool_specs[0]')), fields.join());

    const unknown = seedJob();
    unknown.jobSpec.workerPoolSpecs[0].machineSpec.machineTypo = 'x';
    e = await rejects(create(unknown));
    assert.equal(e.code, 400);
    assert.match(e.response.data.error.message, /Unknown name "machineTypo"/);
  });

  it('list filters by state, display_name and labels, and pages', async () => {
    const a = await create({ ...seedJob('list_alpha'), labels: { kind: 'list' } });
    const b = await create({ ...seedJob('list_beta'), labels: { kind: 'list' } });
    await ai.projects.locations.customJobs.cancel({ name: a.name });

    let res = (await ai.projects.locations.customJobs.list({ parent: PARENT, filter: 'labels.kind=list' })).data;
    assert.deepEqual(res.customJobs.map((j) => j.name), [b.name, a.name]);

    res = (await ai.projects.locations.customJobs.list({
      parent: PARENT, filter: 'labels.kind=list AND state="JOB_STATE_CANCELLED"' })).data;
    assert.deepEqual(res.customJobs.map((j) => j.name), [a.name]);

    res = (await ai.projects.locations.customJobs.list({ parent: PARENT, filter: 'display_name:"list_b*"' })).data;
    assert.deepEqual(res.customJobs.map((j) => j.name), [b.name]);

    const page1 = (await ai.projects.locations.customJobs.list({
      parent: PARENT, filter: 'labels.kind=list', pageSize: 1 })).data;
    assert.equal(page1.customJobs.length, 1);
    assert.ok(page1.nextPageToken);
    const page2 = (await ai.projects.locations.customJobs.list({
      parent: PARENT, filter: 'labels.kind=list', pageSize: 1, pageToken: page1.nextPageToken })).data;
    assert.deepEqual(page2.customJobs.map((j) => j.name), [a.name]);

    const other = (await ai.projects.locations.customJobs.list({
      parent: `projects/${PROJECT}/locations/europe-west4` })).data;
    assert.deepEqual(other, {});
  });

  it('create, get and list give the same bytes: proto field order, int64 as strings (issue 17)', async () => {
    const base = `http://127.0.0.1:${server.port}/v1/projects/canonproj/locations/${LOCATION}`;
    const fetchText = async (url, init) => {
      const r = await fetch(url, init);
      assert.equal(r.status, 200, await r.clone().text());
      return r.text();
    };
    // Keys in another order than the protos', numbers as numbers, an empty pool.
    const body = {
      labels: { zeta: 'z', alpha: 'a' },
      jobSpec: {
        scheduling: { timeout: '3600s', strategy: 'SPOT' },
        workerPoolSpecs: [
          {
            containerSpec: { args: ['--x'], imageUri: 'gcr.io/p/t:1' },
            replicaCount: 1,
            machineSpec: { acceleratorCount: 1, acceleratorType: 'NVIDIA_TESLA_T4', machineType: 'n1-standard-4' },
          },
          {},
        ],
      },
      displayName: 'canonical',
    };
    // Compact (prettyPrint=false): the bytes each path renders; pretty by default.
    const created = await fetchText(`${base}/customJobs?prettyPrint=false`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const job = JSON.parse(created);
    assert.equal(await fetchText(`http://127.0.0.1:${server.port}/v1/${job.name}?prettyPrint=false`), created, 'get');
    assert.equal(await fetchText(`${base}/customJobs?prettyPrint=false`), `{"customJobs":[${created}]}`, 'list');
    assert.equal(await fetchText(`http://127.0.0.1:${server.port}/v1/${job.name}`),
      `${JSON.stringify(job, null, 2)}\n`, 'get, pretty');
    assert.deepEqual(Object.keys(job), ['name', 'displayName', 'jobSpec', 'state', 'createTime',
      'updateTime', 'labels']);
    assert.deepEqual(Object.keys(job.jobSpec), ['workerPoolSpecs', 'scheduling']);
    assert.deepEqual(Object.keys(job.jobSpec.workerPoolSpecs[0]), ['machineSpec', 'replicaCount', 'containerSpec']);
    assert.deepEqual(Object.keys(job.jobSpec.workerPoolSpecs[0].machineSpec),
      ['machineType', 'acceleratorType', 'acceleratorCount']);
    assert.deepEqual(Object.keys(job.jobSpec.scheduling), ['timeout', 'strategy']);
    assert.deepEqual(Object.keys(job.labels), ['alpha', 'zeta']);
    assert.ok(created.includes('"replicaCount":"1"'), created);
    assert.ok(created.includes('"workerPoolSpecs":[{"machineSpec"') && created.includes('},{}]'), created);
  });

  it('cancel: queued jobs are cancelled with error code 1; finished ones refuse', async () => {
    const got = await create(seedJob());
    const res = await ai.projects.locations.customJobs.cancel({ name: got.name });
    assert.deepEqual(res.data, {});
    const after1 = (await ai.projects.locations.customJobs.get({ name: got.name })).data;
    assert.equal(after1.state, 'JOB_STATE_CANCELLED');
    assert.equal(after1.error.code, 1);
    assert.ok(after1.endTime);

    const e = await rejects(ai.projects.locations.customJobs.cancel({ name: got.name }));
    assert.equal(e.code, 400);
    assert.equal(e.response.data.error.status, 'FAILED_PRECONDITION');
    assert.equal(e.response.data.error.message,
      `The CustomJob "${got.name}" is in state JOB_STATE_CANCELLED and cannot be canceled.`);
  });

  it('delete refuses an unfinished job, answers a done operation, and operations.get finds it', async () => {
    const got = await create(seedJob());
    let e = await rejects(ai.projects.locations.customJobs.delete({ name: got.name }));
    assert.equal(e.code, 400);
    assert.equal(e.response.data.error.status, 'FAILED_PRECONDITION');

    await ai.projects.locations.customJobs.cancel({ name: got.name });
    const op = (await ai.projects.locations.customJobs.delete({ name: got.name })).data;
    assert.match(op.name, new RegExp(`^${PARENT}/operations/[0-9]+$`));
    assert.equal(op.done, true);
    assert.equal(op.metadata['@type'], 'type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata');
    assert.equal(op.response['@type'], 'type.googleapis.com/google.protobuf.Empty');

    const again = (await ai.projects.locations.operations.get({ name: op.name })).data;
    assert.deepEqual(again, op);

    e = await rejects(ai.projects.locations.customJobs.get({ name: got.name }));
    assert.equal(e.code, 404);
    e = await rejects(ai.projects.locations.operations.get({ name: `${PARENT}/operations/424242` }));
    assert.equal(e.code, 404);

    const ops = (await ai.projects.locations.operations.list({ name: PARENT })).data;
    assert.deepEqual(ops.operations.map((o) => o.name), [op.name]);
    const one = (await ai.projects.locations.operations.list({ name: PARENT, pageSize: 1 })).data;
    assert.equal(one.operations.length, 1);
    assert.equal(one.nextPageToken, undefined);

    const waited = (await ai.projects.locations.operations.wait({ name: op.name })).data;
    assert.deepEqual(waited, op);
    assert.deepEqual((await ai.projects.locations.operations.delete({ name: op.name })).data, {});
    e = await rejects(ai.projects.locations.operations.get({ name: op.name }));
    assert.equal(e.code, 404);
    e = await rejects(ai.projects.locations.operations.delete({ name: op.name }));
    assert.equal(e.code, 404);
  });
});
