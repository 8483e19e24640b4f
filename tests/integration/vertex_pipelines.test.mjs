// Issue 5: the TrainingPipeline that the Python SDK's
// CustomContainerTrainingJob(...).run(...) creates, through the official
// googleapis client: the custom task's inputs as the SDK sends them
// (snake_case keys inside a Struct), one backing CustomJob run by a real
// agent, PIPELINE_STATE_* mirrored from it, cancel, delete and its
// operation, the refusals, and seed 001's GPU-count rule.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { google } from './googleapis.mjs';

import { assertError, client, makeTempDir, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, killMarked, readJobLog, startAgent } from './agents.mjs';

const PROJECT = 'pipelines';
const LOCATION = 'us-central1';
const PARENT = `projects/${PROJECT}/locations/${LOCATION}`;
const CUSTOM_TASK = 'gs://google-cloud-aiplatform/schema/trainingjob/definition/custom_task_1.0.0.yaml';
const IMAGE = 'localhost/trainer:test';

let pg;
before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  await pg?.cleanup();
});
const newDatabase = () => pg.newDatabase('pipelines');

/** What CustomContainerTrainingJob.run(replica_count, machine_type, accelerator_*) sends. */
function sdkPipeline({ displayName = 'seed001-single', command = ['sh', '-c', 'echo hi'], machineType = 'n1-standard-4',
  acceleratorType, acceleratorCount, replicaCount = 1, region } = {}) {
  const machine = { machine_type: machineType };
  if (acceleratorType) {
    machine.accelerator_type = acceleratorType;
    machine.accelerator_count = acceleratorCount;
  }
  const pools = [{ machine_spec: machine, replica_count: 1, container_spec: { image_uri: IMAGE, command } }];
  if (replicaCount > 1) pools.push({ machine_spec: machine, replica_count: replicaCount - 1, container_spec: { image_uri: IMAGE, command } });
  return {
    displayName,
    trainingTaskDefinition: CUSTOM_TASK,
    trainingTaskInputs: { worker_pool_specs: pools, base_output_directory: { output_uri_prefix: 'gs://bucket/out' } },
    labels: { seed: '001' },
    ...(region ? {} : {}),
  };
}

describe('trainingPipelines: API', () => {
  let server;
  let ai;
  let c;
  before(async () => {
    server = await startServer({ pg: newDatabase() });
    ai = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
    c = client(server.base);
  });
  after(async () => {
    if (server) await server.stop();
  });

  it('create/get/list/cancel/delete through googleapis, mirroring the backing CustomJob', async () => {
    const created = (await ai.projects.locations.trainingPipelines.create({ parent: PARENT, requestBody: sdkPipeline() })).data;
    assert.match(created.name, /^projects\/pipelines\/locations\/us-central1\/trainingPipelines\/\d+$/);
    assert.equal(created.state, 'PIPELINE_STATE_QUEUED');
    assert.equal(created.displayName, 'seed001-single');
    assert.equal(created.trainingTaskDefinition, CUSTOM_TASK);
    assert.deepEqual(created.labels, { seed: '001' });
    // The inputs come back normalised (camelCase, int64 as strings).
    assert.deepEqual(created.trainingTaskInputs.workerPoolSpecs[0].machineSpec, { machineType: 'n1-standard-4' });
    assert.equal(created.trainingTaskInputs.workerPoolSpecs[0].replicaCount, '1');
    const backing = created.trainingTaskMetadata.backingCustomJob;
    assert.match(backing, /^projects\/pipelines\/locations\/us-central1\/customJobs\/\d+$/);
    const job = (await ai.projects.locations.customJobs.get({ name: backing })).data;
    assert.equal(job.state, 'JOB_STATE_QUEUED');
    assert.equal(job.displayName, 'seed001-single');
    assert.equal(job._pipeline, undefined, 'the pipeline record stays out of the CustomJob');
    assert.deepEqual(job.jobSpec.workerPoolSpecs, created.trainingTaskInputs.workerPoolSpecs);

    const got = (await ai.projects.locations.trainingPipelines.get({ name: created.name })).data;
    assert.deepEqual(got, created);
    const other = (await ai.projects.locations.customJobs.create({
      parent: PARENT,
      requestBody: { displayName: 'plain', jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: { imageUri: IMAGE } }] } },
    })).data;
    const list = (await ai.projects.locations.trainingPipelines.list({ parent: PARENT })).data;
    assert.deepEqual(list.trainingPipelines.map((p) => p.name), [created.name], 'a plain CustomJob is no pipeline');
    assertError(await c.get(`/v1/${PARENT}/trainingPipelines/${other.name.split('/').pop()}`), 404, 'NOT_FOUND',
      /^The TrainingPipeline "projects\/pipelines\/locations\/us-central1\/trainingPipelines\/\d+" does not exist\.$/);
    assert.deepEqual((await ai.projects.locations.trainingPipelines.list({ parent: PARENT, filter: 'state="PIPELINE_STATE_QUEUED" AND labels.seed="001"' })).data.trainingPipelines.length, 1);
    assert.deepEqual((await ai.projects.locations.trainingPipelines.list({ parent: PARENT, filter: 'display_name="nope"' })).data, {});

    // Delete while queued: refused; cancel; cancel again: refused with Vertex's words; delete.
    assertError(await c.del(`/v1/${created.name}`), 400, 'FAILED_PRECONDITION', /is in state PIPELINE_STATE_QUEUED and cannot be deleted/);
    await ai.projects.locations.trainingPipelines.cancel({ name: created.name });
    const cancelled = (await ai.projects.locations.trainingPipelines.get({ name: created.name })).data;
    assert.equal(cancelled.state, 'PIPELINE_STATE_CANCELLED');
    assert.equal(cancelled.error.code, 1);
    assertError(await c.post(`/v1/${created.name}:cancel`, {}), 400, 'FAILED_PRECONDITION',
      `The TrainingPipeline "${created.name}" is in state PIPELINE_STATE_CANCELLED and cannot be canceled.`);
    const op = (await ai.projects.locations.trainingPipelines.delete({ name: created.name })).data;
    assert.equal(op.done, true);
    assert.match(op.name, /^projects\/pipelines\/locations\/us-central1\/operations\/\d+$/);
    assert.equal((await ai.projects.locations.operations.get({ name: op.name })).data.done, true);
    assertError(await c.get(`/v1/${created.name}`), 404, 'NOT_FOUND');
  });

  it('every list method shares one paging and filter preamble, each in its API\'s words', async () => {
    for (const name of ['page-1', 'page-2', 'page-3'])
      await ai.projects.locations.trainingPipelines.create({ parent: PARENT, requestBody: { ...sdkPipeline({ displayName: name }), labels: { paged: 'yes' } } });
    const lists = [
      [`/v1/${PARENT}/trainingPipelines`, 'trainingPipelines', 'labels.paged=yes', /^Invalid page size: must be non-negative\.$/,
        /^Invalid page token: it is malformed or doesn't match arguments from the request\.$/, /^Invalid filter: /],
      [`/v1/${PARENT}/customJobs`, 'customJobs', 'labels.paged=yes', /^Invalid page size: must be non-negative\.$/,
        /^Invalid page token: it is malformed or doesn't match arguments from the request\.$/, /^Invalid filter: /],
      [`/v1/projects/${PROJECT}/jobs`, 'jobs', 'state:QUEUED', /^Field: page_size Error: The page size must be a non-negative integer\.$/,
        /^Field: page_token Error: The page token is invalid or doesn't match arguments from the request\.$/, /^Field: filter Error: /],
    ];
    for (const [url, key, filter, badSize, badToken, badFilter] of lists) {
      assertError(await c.get(`${url}?pageSize=-1`), 400, 'INVALID_ARGUMENT', badSize);
      assertError(await c.get(`${url}?filter=nosuch%3D1`), 400, 'INVALID_ARGUMENT', badFilter);
      assertError(await c.get(`${url}?pageToken=not-a-token`), 400, 'INVALID_ARGUMENT', badToken);
      if (key === 'jobs') continue;	/* no ml jobs in this project */
      const page1 = (await c.get(`${url}?pageSize=2&filter=${encodeURIComponent(filter)}`)).json;
      assert.equal(page1[key].length, 2, url);
      assertError(await c.get(`${url}?pageToken=${page1.nextPageToken}`), 400, 'INVALID_ARGUMENT', badToken);
      const page2 = (await c.get(`${url}?pageSize=2&filter=${encodeURIComponent(filter)}&pageToken=${page1.nextPageToken}`)).json;
      assert.deepEqual(page2[key].map((x) => x.displayName), ['page-1'], url);
      assert.equal(page2.nextPageToken, undefined);
    }
    const ops = `/v1/${PARENT}/operations`;
    assertError(await c.get(`${ops}?pageSize=x`), 400, 'INVALID_ARGUMENT', /^Invalid page size: must be non-negative\.$/);
    assertError(await c.get(`${ops}?pageToken=not-a-token`), 400, 'INVALID_ARGUMENT', /^Invalid page token\.$/);
    const locs = `/v1/projects/${PROJECT}/locations`;
    assertError(await c.get(`${locs}?pageSize=-3`), 400, 'INVALID_ARGUMENT', /^Field: page_size Error: /);
    const l1 = (await c.get(`${locs}?pageSize=1`)).json;
    assert.equal(l1.locations.length, 1);
    const l2 = (await c.get(`${locs}?pageSize=1&pageToken=${l1.nextPageToken}`)).json;
    assert.ok(l1.locations[0].name && l2.locations[0].name);
    assert.notEqual(l2.locations[0].name, l1.locations[0].name);
  });

  it('refuses other task definitions, datasets, model upload and bad pools, with the pipeline\'s field paths', async () => {
    const url = `/v1/${PARENT}/trainingPipelines`;
    assertError(await c.post(url, { ...sdkPipeline(), trainingTaskDefinition: 'gs://google-cloud-aiplatform/schema/trainingjob/definition/automl_tabular_1.0.0.yaml' }),
      501, 'UNIMPLEMENTED', /automl_tabular_1\.0\.0\.yaml is not supported: trainplane runs custom training pipelines only/);
    assertError(await c.post(url, { ...sdkPipeline(), inputDataConfig: { datasetId: '1' } }), 501, 'UNIMPLEMENTED', /Managed datasets/);
    assertError(await c.post(url, { ...sdkPipeline(), modelToUpload: { displayName: 'm' } }), 501, 'UNIMPLEMENTED', /model_to_upload/);
    const noCount = sdkPipeline({ acceleratorType: 'NVIDIA_TESLA_V100' });
    const e = assertError(await c.post(url, noCount), 400, 'INVALID_ARGUMENT', /List of found errors/);
    assert.ok(e.details[0].fieldViolations.some((v) => v.field.startsWith('training_pipeline.training_task_inputs.worker_pool_specs[0].machine_spec')),
      JSON.stringify(e.details));
    const typo = sdkPipeline();
    typo.trainingTaskInputs.worker_pool_specs[0].machine_spex = {};
    assertError(await c.post(url, typo), 400, 'INVALID_ARGUMENT', /Unknown name "machine_spex" at 'training_pipeline\.training_task_inputs\.worker_pool_specs\[0\]'/);
    const { displayName, ...unnamed } = sdkPipeline();
    assert.ok(displayName);
    assertError(await c.post(url, unnamed), 400, 'INVALID_ARGUMENT', /training_pipeline\.display_name; Message: Required field is not set/);
    const { trainingTaskInputs, ...noInputs } = sdkPipeline();
    assert.ok(trainingTaskInputs);
    assertError(await c.post(url, noInputs), 400, 'INVALID_ARGUMENT', /training_pipeline\.training_task_inputs; Message: Required field is not set/);
  });
});

describe('trainingPipelines on agents', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set' }, () => {
  it('seed 001 single machine, 2 x V100: scheduled on such a node, PIPELINE_STATE_SUCCEEDED', async (t) => {
    const mark = `tpmark_${process.pid}_pipe_${Date.now().toString(36)}`;
    const server = await startServer({ pg: newDatabase(), env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' } });
    const dir = makeTempDir('tp-pipe-');
    // A node with 4 x V100 (declared: no GPU exists on this machine) in a zone that has them.
    const agent = await startAgent(server, { node: 'v100-node', dir, zone: 'us-central1-a', gpuType: 'NVIDIA_TESLA_V100', gpuCount: 4 });
    t.after(() => {
      agent.cleanup();
      killMarked(mark);
      server.kill();
    });
    const ai = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
    const created = (await ai.projects.locations.trainingPipelines.create({
      parent: PARENT,
      requestBody: sdkPipeline({
        displayName: 'flowers-2xv100', acceleratorType: 'NVIDIA_TESLA_V100', acceleratorCount: 2,
        command: ['sh', '-c', `echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; echo "AIP_MODEL_DIR=$AIP_MODEL_DIR"; : ${mark}`],
      }),
    })).data;
    let p;
    await waitFor(async () => {
      p = (await ai.projects.locations.trainingPipelines.get({ name: created.name })).data;
      return /SUCCEEDED|FAILED|CANCELLED/.test(p.state);
    }, 30_000, 'the pipeline did not finish', 100);
    assert.equal(p.state, 'PIPELINE_STATE_SUCCEEDED', `${JSON.stringify(p)}\n${agent.stderr().slice(-2000)}`);
    assert.ok(p.startTime && p.endTime);
    const jobId = p.trainingTaskMetadata.backingCustomJob.split('/').pop();
    const job = (await ai.projects.locations.customJobs.get({ name: p.trainingTaskMetadata.backingCustomJob })).data;
    assert.equal(job.state, 'JOB_STATE_SUCCEEDED');
    const entries = await readJobLog(server.base, PROJECT, jobId);
    const text = entries.map((e) => e.textPayload).join('\n');
    assert.match(text, /CUDA_VISIBLE_DEVICES=\d,\d/, text);
    assert.match(text, /AIP_MODEL_DIR=gs:\/\/bucket\/out\/model\//, text);
  });

  it('pools with different GPU counts run, and the job log says why MultiWorkerMirroredStrategy would object', async (t) => {
    const server = await startServer({ pg: newDatabase() });
    t.after(() => server.kill());
    const c = client(server.base);
    const body = sdkPipeline({ acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1, replicaCount: 3 });
    body.trainingTaskInputs.worker_pool_specs[1].machine_spec = { machine_type: 'n1-standard-8', accelerator_type: 'NVIDIA_TESLA_T4', accelerator_count: 4 };
    const r = await c.post(`/v1/${PARENT}/trainingPipelines`, body);
    assert.equal(r.status, 200, r.text);
    const jobId = r.json.trainingTaskMetadata.backingCustomJob.split('/').pop();
    const entries = await readJobLog(server.base, PROJECT, jobId, '', { service: true });
    const warning = entries.find((e) => /MultiWorkerMirroredStrategy/.test(e.textPayload ?? ''));
    assert.ok(warning, JSON.stringify(entries));
    assert.match(warning.textPayload, /workerPoolSpecs\[0\] has 1 GPU\(s\) per machine and workerPoolSpecs\[1\] has 4/);
    assert.equal(warning.labels['ml.googleapis.com/task_name'], 'service');
    assert.equal(warning.severity, 'WARNING');
    // Equal counts: no warning.
    const same = await c.post(`/v1/${PARENT}/trainingPipelines`, sdkPipeline({ acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 2, replicaCount: 3 }));
    const sameId = same.json.trainingTaskMetadata.backingCustomJob.split('/').pop();
    const sameLog = await readJobLog(server.base, PROJECT, sameId, '', { service: true });
    assert.ok(!sameLog.some((e) => /MultiWorkerMirroredStrategy/.test(e.textPayload ?? '')), JSON.stringify(sameLog));
  });
});
