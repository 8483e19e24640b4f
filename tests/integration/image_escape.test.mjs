// Issue 12 item 1: an image that is an engine option escaped the container
// (`imageUri: "--volume=<host dir>:/host"` with the real image in the
// command). Every place an image enters the API refuses what is not an
// image reference, with 400 INVALID_ARGUMENT naming the field: ml v1's four
// replica configs, Vertex's containerSpec.imageUri and
// pythonPackageSpec.executorImageUri, in customJobs and in trainingPipelines;
// Vertex env names too. Nothing refused is stored. Valid references with
// registry ports, digests, IPv6 registries and localhost/ names are accepted.
// (The agent's own refusal, with real podman: tests/integration/c/test_agent_podman_escape.c.)

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertError, client, fieldViolations, jobId, startPostgres, startServer, trainingInput,
} from './harness.mjs';

const DIGEST = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';
const HOSTILE = [
  '--volume=/:/host',
  '--privileged',
  '--mount=type=bind,source=/,target=/host',
  '-v',
  ' localhost/trainer:test',
  'localhost/trainer:test --privileged',
  'localhost/trainer:test\n--privileged',
  'localhost/trainer:test\u001b[2J',
  'dir:5000/x',
  'oci-archive:img.tar',
  'docker-archive:img.tar',
  'Localhost/Trainer:test',
  'localhost/trainer:',
  `localhost/trainer@${DIGEST.slice(0, 20)}`,
  `${'a'.repeat(256)}:tag`,
];
const VALID = [
  'localhost/trainer:test',
  'localhost:5000/trainer:test',
  `gcr.io/p/t@${DIGEST}`,
  `registry.example.com:443/team/img:v1@${DIGEST}`,
  '[::1]:5000/img:tag',
  'us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-4:latest',
  'busybox',
];
const ROLES = [
  ['masterConfig', 'master_config'],
  ['workerConfig', 'worker_config'],
  ['parameterServerConfig', 'parameter_server_config'],
  ['evaluatorConfig', 'evaluator_config'],
];

let pg;
let server;
let c;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false' } });
  c = client(server.base);
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

const jobCount = () => Number(pg.psql('SELECT count(*) FROM jobs'));

/** A CUSTOM ml v1 job with all four roles, role's image replaced by image. */
function customInput(role, image) {
  const ti = {
    scaleTier: 'CUSTOM',
    region: 'us-central1',
    masterType: 'n1-standard-4',
    workerType: 'n1-standard-4',
    workerCount: '1',
    parameterServerType: 'n1-standard-4',
    parameterServerCount: '1',
    evaluatorType: 'n1-standard-4',
    evaluatorCount: '1',
  };
  for (const [key] of ROLES) ti[key] = { imageUri: 'localhost/trainer:test', containerCommand: ['sh'] };
  ti[role] = { imageUri: image, containerCommand: ['sh', 'localhost/trainer:test', '-c', 'cat /host/etc/shadow'] };
  return ti;
}

/** The one field violation of a 400 reply, checked against the field and the message. */
function assertImageRefused(res, field, shape, what) {
  const e = assertError(res, 400, 'INVALID_ARGUMENT');
  const violations = fieldViolations(e);
  assert.ok(violations.some((v) => v.field === field && /^Invalid image URI\b/.test(v.description)),
    `${what}: a violation on ${field} expected: ${JSON.stringify(violations)}`);
  assert.match(e.message, shape, what);
  return violations;
}

describe('ml v1: jobs.create refuses an image that is not a reference', () => {
  it('in every replica config, naming the field, and stores nothing', async () => {
    const before = jobCount();
    for (const [role, snake] of ROLES) {
      for (const image of HOSTILE) {
        const res = await c.post('/v1/projects/p/jobs', { jobId: jobId('esc'), trainingInput: customInput(role, image) });
        const field = `training_input.${snake}.image_uri`;
        assertImageRefused(res, field, new RegExp(`Field: ${field.replace(/[.[\]]/g, '\\$&')} Error: Invalid image URI`),
          `${role} ${JSON.stringify(image)}`);
      }
    }
    // The BASIC tier's only image, as in the escape that was reported.
    const res = await c.post('/v1/projects/p/jobs', {
      jobId: jobId('esc'),
      trainingInput: trainingInput({
        masterConfig: { imageUri: '--volume=/tmp:/host', containerCommand: ['sh', 'localhost/trainer:test', '-c', 'id'] },
      }),
    });
    const e = assertError(res, 400, 'INVALID_ARGUMENT',
      'Field: training_input.master_config.image_uri Error: Invalid image URI "--volume=/tmp:/host": it starts '
      + 'with "-" as a command-line option does. An image URI is [registry[:port]/]path[:tag][@digest], e.g. '
      + 'us-docker.pkg.dev/my-project/trainers/mnist:v2.');
    assert.deepEqual(fieldViolations(e).map((v) => v.field), ['training_input.master_config.image_uri']);
    assert.equal(jobCount(), before, 'no refused job was stored');
  });

  it('a hostile value with control characters is not echoed', async () => {
    const res = await c.post('/v1/projects/p/jobs', {
      jobId: jobId('esc'), trainingInput: trainingInput({ masterConfig: { imageUri: 'x\u001b[31mforged\n--privileged' } }),
    });
    const e = assertError(res, 400, 'INVALID_ARGUMENT', /^Field: training_input\.master_config\.image_uri Error: Invalid image URI: it contains whitespace/);
    assert.ok(!e.message.includes('forged'));
  });

  it('accepts references with registry ports, digests, IPv6 registries and localhost/ names', async () => {
    for (const image of VALID) {
      const res = await c.post('/v1/projects/p/jobs', { jobId: jobId('ok'), trainingInput: trainingInput({ masterConfig: { imageUri: image } }) });
      assert.equal(res.status, 200, `${image}: ${res.text}`);
      assert.equal(res.json.trainingInput.masterConfig.imageUri, image);
      const custom = await c.post('/v1/projects/p/jobs', { jobId: jobId('ok'), trainingInput: customInput('workerConfig', image) });
      assert.equal(custom.status, 200, `${image}: ${custom.text}`);
    }
  });
});

const PARENT = '/v1/projects/vx/locations/us-central1';

function customJob({ image = 'localhost/trainer:test', executor, env } = {}) {
  const pools = [{
    machineSpec: { machineType: 'n1-standard-4' },
    replicaCount: '1',
    containerSpec: { imageUri: image, command: ['sh', 'localhost/trainer:test', '-c', 'id'], ...(env ? { env } : {}) },
  }];
  if (executor !== undefined) {
    pools.push({
      machineSpec: { machineType: 'n1-standard-4' },
      replicaCount: '2',
      pythonPackageSpec: { executorImageUri: executor, packageUris: ['gs://b/t.tar.gz'], pythonModule: 't.task' },
    });
  }
  return { displayName: 'escape', jobSpec: { workerPoolSpecs: pools } };
}

describe('Vertex: customJobs and trainingPipelines refuse what is not an image reference', () => {
  it('containerSpec.imageUri and pythonPackageSpec.executorImageUri, naming the field', async () => {
    const before = jobCount();
    for (const image of HOSTILE) {
      let res = await c.post(`${PARENT}/customJobs`, customJob({ image }));
      assertImageRefused(res, 'job_spec.worker_pool_specs[0].container_spec.image_uri',
        /^List of found errors:\t1\.Field: job_spec\.worker_pool_specs\[0\]\.container_spec\.image_uri; Message: Invalid image URI/,
        JSON.stringify(image));
      res = await c.post(`${PARENT}/customJobs`, customJob({ executor: image }));
      assertImageRefused(res, 'job_spec.worker_pool_specs[1].python_package_spec.executor_image_uri',
        /Field: job_spec\.worker_pool_specs\[1\]\.python_package_spec\.executor_image_uri; Message: Invalid image URI/,
        JSON.stringify(image));
    }
    assert.equal(jobCount(), before, 'no refused job was stored');
  });

  it('trainingPipelines: the custom task inputs, with the pipeline field path', async () => {
    const before = jobCount();
    for (const image of ['--volume=/:/host', '--privileged', 'dir:foo']) {
      const res = await c.post(`${PARENT}/trainingPipelines`, {
        displayName: 'escape',
        trainingTaskDefinition: 'gs://google-cloud-aiplatform/schema/trainingjob/definition/custom_task_1.0.0.yaml',
        trainingTaskInputs: {
          worker_pool_specs: [{
            machine_spec: { machine_type: 'n1-standard-4' }, replica_count: 1,
            container_spec: { image_uri: image, command: ['sh', 'localhost/trainer:test'] },
          }],
        },
      });
      assertImageRefused(res, 'training_pipeline.training_task_inputs.worker_pool_specs[0].container_spec.image_uri',
        /Field: training_pipeline\.training_task_inputs\.worker_pool_specs\[0\]\.container_spec\.image_uri; Message: Invalid image URI/,
        JSON.stringify(image));
    }
    assert.equal(jobCount(), before);
  });

  it('env names must be C identifiers', async () => {
    for (const name of ['BAD-NAME', 'TRAINPLANE*', '1X', '--privileged', 'A=B']) {
      const res = await c.post(`${PARENT}/customJobs`, customJob({ env: [{ name, value: 'x' }] }));
      const e = assertError(res, 400, 'INVALID_ARGUMENT');
      assert.deepEqual(fieldViolations(e).map((v) => v.field), ['job_spec.worker_pool_specs[0].container_spec.env[0].name'],
        JSON.stringify(name));
      assert.match(e.message, /Message: Invalid environment variable name .*it must be a C identifier/);
    }
    const ok = await c.post(`${PARENT}/customJobs`, customJob({ env: [{ name: 'OPT', value: '--volume=/:/host' }, { name: '_x9', value: '' }] }));
    assert.equal(ok.status, 200, ok.text);
  });

  it('accepts valid references in both places', async () => {
    for (const image of VALID) {
      const res = await c.post(`${PARENT}/customJobs`, customJob({ image, executor: image }));
      assert.equal(res.status, 200, `${image}: ${res.text}`);
      assert.equal(res.json.jobSpec.workerPoolSpecs[0].containerSpec.imageUri, image);
    }
  });
});
