// Issue 5: the official @google-cloud/aiplatform Node client (google-gax) in
// its REST mode against trainplane, as a user would point it at an
// emulator: apiEndpoint/port of the server, protocol 'http', fallback (REST
// instead of gRPC), and an OAuth2 client holding any access token (nothing
// is fetched from Google). JobServiceClient drives customJobs,
// PipelineServiceClient trainingPipelines.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import aiplatform from '@google-cloud/aiplatform';
import { OAuth2Client } from 'google-auth-library';

import { startPostgres, startServer } from './harness.mjs';

const { v1, helpers } = aiplatform;
const PARENT = 'projects/sdk/locations/us-central1';
const CUSTOM_TASK = 'gs://google-cloud-aiplatform/schema/trainingjob/definition/custom_task_1.0.0.yaml';

let pg;
let server;
let opts;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg });
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: 'any-token', expiry_date: Date.now() + 3600_000 });
  opts = { apiEndpoint: '127.0.0.1', port: server.port, protocol: 'http', fallback: true, authClient };
});
after(async () => {
  if (server) await server.stop();
  if (pg) await pg.cleanup();
});

describe('@google-cloud/aiplatform (REST fallback) against trainplane', () => {
  it('JobServiceClient: createCustomJob, getCustomJob, listCustomJobs, cancelCustomJob, deleteCustomJob', async () => {
    const jobs = new v1.JobServiceClient(opts);
    const [job] = await jobs.createCustomJob({
      parent: PARENT,
      customJob: {
        displayName: 'from-the-sdk',
        jobSpec: {
          workerPoolSpecs: [{
            machineSpec: { machineType: 'n1-standard-4', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1 },
            replicaCount: 1,
            containerSpec: { imageUri: 'localhost/trainer:test', command: ['python', 'train.py'] },
          }],
        },
        labels: { via: 'sdk' },
      },
    });
    assert.match(job.name, /^projects\/sdk\/locations\/us-central1\/customJobs\/\d+$/);
    assert.equal(job.state, 'JOB_STATE_QUEUED');
    assert.equal(job.jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType, 'NVIDIA_TESLA_T4');
    assert.equal(String(job.jobSpec.workerPoolSpecs[0].replicaCount), '1');
    assert.ok(job.createTime.seconds > 0, 'timestamps parse into the SDK\'s Timestamp');
    const [got] = await jobs.getCustomJob({ name: job.name });
    assert.equal(got.displayName, 'from-the-sdk');
    assert.deepEqual(got.labels, { via: 'sdk' });
    const [list] = await jobs.listCustomJobs({ parent: PARENT, filter: 'labels.via="sdk"' });
    assert.deepEqual(list.map((j) => j.name), [job.name]);
    await jobs.cancelCustomJob({ name: job.name });
    assert.equal((await jobs.getCustomJob({ name: job.name }))[0].state, 'JOB_STATE_CANCELLED');
    const [op] = await jobs.deleteCustomJob({ name: job.name });
    await op.promise();
    await assert.rejects(jobs.getCustomJob({ name: job.name }), (e) => e.code === 5 && /does not exist/.test(e.message));
    // An invalid spec comes back as the SDK's INVALID_ARGUMENT error.
    await assert.rejects(jobs.createCustomJob({
      parent: PARENT,
      customJob: { displayName: 'bad', jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4', acceleratorType: 'NVIDIA_TESLA_T4' }, replicaCount: 1, containerSpec: { imageUri: 'x' } }] } },
    }), (e) => e.code === 3 && /Both `accelerator_type` and `accelerator_count` should be specified or none/.test(e.message));
  });

  it('PipelineServiceClient: a custom-task TrainingPipeline, as CustomContainerTrainingJob makes it', async () => {
    const pipelines = new v1.PipelineServiceClient(opts);
    const [tp] = await pipelines.createTrainingPipeline({
      parent: PARENT,
      trainingPipeline: {
        displayName: 'sdk-pipeline',
        trainingTaskDefinition: CUSTOM_TASK,
        trainingTaskInputs: helpers.toValue({
          workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: 1, containerSpec: { imageUri: 'localhost/trainer:test' } }],
          baseOutputDirectory: { outputUriPrefix: 'gs://bucket/sdk' },
        }),
      },
    });
    assert.equal(tp.state, 'PIPELINE_STATE_QUEUED');
    const meta = helpers.fromValue(tp.trainingTaskMetadata);
    assert.match(meta.backingCustomJob, /^projects\/sdk\/locations\/us-central1\/customJobs\/\d+$/);
    assert.equal(meta.backingCustomJob.split('/').pop(), tp.name.split('/').pop());
    const [got] = await pipelines.getTrainingPipeline({ name: tp.name });
    assert.equal(helpers.fromValue(got.trainingTaskInputs).baseOutputDirectory.outputUriPrefix, 'gs://bucket/sdk');
    await pipelines.cancelTrainingPipeline({ name: tp.name });
    assert.equal((await pipelines.getTrainingPipeline({ name: tp.name }))[0].state, 'PIPELINE_STATE_CANCELLED');
    // gax's REST mode maps the HTTP status: 400 is INVALID_ARGUMENT (3) to it,
    // whatever the envelope's status (FAILED_PRECONDITION) says; so it would
    // be against Google too.
    await assert.rejects(pipelines.cancelTrainingPipeline({ name: tp.name }),
      (e) => e.code === 3 && /is in state PIPELINE_STATE_CANCELLED and cannot be canceled/.test(e.message));
  });
});
