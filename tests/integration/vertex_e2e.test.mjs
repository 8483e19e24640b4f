// Issue 5 end to end: a two-pool Vertex CustomJob (seed 001's shape),
// created through the official googleapis client, is planned by the
// scheduler and run by a real trainplane-agent (process runtime); its
// replicas print CLUSTER_SPEC, TF_CONFIG and the AIP_* variables, and the
// job reaches JOB_STATE_SUCCEEDED.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { google } from './googleapis.mjs';

import { makeTempDir, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, killMarked, readJobLog, startAgent } from './agents.mjs';

const PROJECT = 'vertexe2e';
const LOCATION = 'us-central1';
const PARENT = `projects/${PROJECT}/locations/${LOCATION}`;
const IMAGE = 'localhost/trainer:test';
let pg;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});

const newDatabase = () => pg.newDatabase('vertex');
after(async () => {
  await pg?.cleanup();
});

function printed(entries, task, key) {
  const line = entries.filter((e) => e.labels?.['ml.googleapis.com/task_name'] === task)
    .map((e) => e.textPayload ?? '').find((l) => l.startsWith(`${key}=`));
  return line === undefined ? undefined : line.slice(key.length + 1);
}

describe('Vertex customJobs on agents', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set' }, () => {
  it('runs a two-pool job: CLUSTER_SPEC, TF_CONFIG, AIP_* and JOB_STATE_SUCCEEDED', async (t) => {
    const mark = `tpmark_${process.pid}_vertex_${Date.now().toString(36)}`;
    const server = await startServer({
      pg: newDatabase(),
      env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' },
    });
    const dir = makeTempDir('tp-vertex-');
    const agent = await startAgent(server, { node: 'vx-a', dir });
    t.after(() => {
      agent.cleanup();
      killMarked(mark);
      server.kill();
    });
    const ai = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
    const script = `echo "CLUSTER_SPEC=$CLUSTER_SPEC"; echo "TF_CONFIG=$TF_CONFIG"; ` +
      `echo "AIP_MODEL_DIR=$AIP_MODEL_DIR"; echo "FOO=$FOO"; echo ${mark} >/dev/null`;
    const pool = (count) => ({
      replicaCount: String(count),
      machineSpec: { machineType: 'n1-standard-4' },
      containerSpec: { imageUri: IMAGE, command: ['sh', '-c', script], env: [{ name: 'FOO', value: 'bar' }] },
    });
    const created = (await ai.projects.locations.customJobs.create({
      parent: PARENT,
      requestBody: {
        displayName: 'flowers-multi-worker',
        jobSpec: { workerPoolSpecs: [pool(1), pool(2)], baseOutputDirectory: { outputUriPrefix: 'gs://bucket/out' } },
      },
    })).data;
    const id = created.name.split('/').pop();

    let job;
    await waitFor(async () => {
      job = (await ai.projects.locations.customJobs.get({ name: created.name })).data;
      return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'].includes(job.state);
    }, 30_000, `job ${created.name} did not finish`, 100);
    assert.equal(job.state, 'JOB_STATE_SUCCEEDED', `${JSON.stringify(job)}\n${server.stderr().slice(-3000)}`);
    assert.ok(job.startTime && job.endTime);
    assert.equal(job.error, undefined);

    let entries = [];
    await waitFor(async () => {
      entries = await readJobLog(server.base, PROJECT, id);
      return ['workerpool0-0', 'workerpool1-0', 'workerpool1-1']
        .every((task) => printed(entries, task, 'CLUSTER_SPEC'));
    }, 10_000, 'every replica printed CLUSTER_SPEC', 100);

    const cs = JSON.parse(printed(entries, 'workerpool0-0', 'CLUSTER_SPEC'));
    assert.deepEqual(Object.keys(cs.cluster).sort(), ['workerpool0', 'workerpool1']);
    assert.equal(cs.cluster.workerpool0.length, 1);
    assert.equal(cs.cluster.workerpool1.length, 2);
    assert.equal(cs.environment, 'cloud');
    assert.deepEqual(cs.task, { type: 'workerpool0', index: 0 });
    assert.equal(cs.job.workerPoolSpecs.length, 2);
    const w1 = JSON.parse(printed(entries, 'workerpool1-1', 'CLUSTER_SPEC'));
    assert.deepEqual(w1.task, { type: 'workerpool1', index: 1 });
    assert.deepEqual(w1.cluster, cs.cluster);

    const tf = JSON.parse(printed(entries, 'workerpool1-0', 'TF_CONFIG'));
    assert.deepEqual(tf.cluster, { chief: cs.cluster.workerpool0, worker: cs.cluster.workerpool1 });
    assert.deepEqual(tf.task, { type: 'worker', index: 0 });
    assert.equal(printed(entries, 'workerpool0-0', 'AIP_MODEL_DIR'), 'gs://bucket/out/model/');
    assert.equal(printed(entries, 'workerpool1-1', 'FOO'), 'bar');

    await agent.stop();
    await server.stop();
  });

  it('enforces scheduling.timeout: the job fails with DEADLINE_EXCEEDED and its replicas stop', async (t) => {
    const mark = `tpmark_${process.pid}_vxtimeout_${Date.now().toString(36)}`;
    const server = await startServer({
      pg: newDatabase(),
      env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' },
    });
    const dir = makeTempDir('tp-vertex-');
    const agent = await startAgent(server, { node: 'vx-b', dir });
    t.after(() => {
      agent.cleanup();
      killMarked(mark);
      server.kill();
    });
    const ai = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
    const created = (await ai.projects.locations.customJobs.create({
      parent: PARENT,
      requestBody: {
        displayName: 'sleeper',
        jobSpec: {
          workerPoolSpecs: [{
            replicaCount: '1',
            machineSpec: { machineType: 'n1-standard-4' },
            containerSpec: { imageUri: IMAGE, command: ['sh', '-c', `sleep 60; echo ${mark}`] },
          }],
          scheduling: { timeout: '1s' },
        },
      },
    })).data;
    let job;
    await waitFor(async () => {
      job = (await ai.projects.locations.customJobs.get({ name: created.name })).data;
      return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'].includes(job.state);
    }, 30_000, `job ${created.name} did not finish`, 100).catch((e) => {
      throw new Error(`${e.message}: ${JSON.stringify(job)}\n${server.stderr().slice(-3000)}`);
    });
    assert.equal(job.state, 'JOB_STATE_FAILED');
    assert.equal(job.error.code, 4);
    assert.match(job.error.message, /timeout/);
    await agent.stop();
    await server.stop();
  });
});
