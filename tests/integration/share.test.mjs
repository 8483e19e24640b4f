// Sharing the cluster (issue 28) with real agents: a job that no node can
// hold never holds up one that fits; quotas refuse what can never fit with
// Google's 429 (googleapis and @google-cloud/aiplatform see it), hold what
// fits beside the project's running work, and are reloaded on SIGHUP; a
// STANDARD job preempts a running SPOT job, which goes back to the queue
// and succeeds on its second attempt; the quotas API shows limits and use.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import aiplatform from '@google-cloud/aiplatform';
import { OAuth2Client } from 'google-auth-library';

import { google } from './googleapis.mjs';
import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { createJob, getJob, readJobLog, startAgent, waitJobState } from './agents.mjs';

const T4 = 'NVIDIA_TESLA_T4';
const dir = makeTempDir('tp-share-');
const quotasFile = path.join(dir, 'quotas.yaml');
const QUOTAS = `
projects:
  capped:
    limits: {${T4}: 1}
  tiny:
    limits: {${T4}: 0, cpus: 64}
    preemptible: {${T4}: 0}
preemption:
  priority_below: 100
`;

let pg, server, agent, euAgent, ml, jobs;
before(async () => {
  fs.writeFileSync(quotasFile, QUOTAS);
  pg = await startPostgres();
  server = await startServer({ pg, env: {
    TRAINPLANE_SCHEDULER_TICK_MS: '100',
    // A job waits 1 s before it may reserve its region: the impossible one
    // below is well past it when the possible ones come.
    TRAINPLANE_STARVE_SECONDS: '1',
    TRAINPLANE_QUOTAS_FILE: quotasFile,
    // A job no node can hold fails after 4 s (the default waits for ever).
    TRAINPLANE_NEVER_FITS_FAIL_SECONDS: '4',
  } });
  agent = await startAgent(server, { node: 'share-1', gpuType: T4, gpuCount: 2, dir });
  euAgent = await startAgent(server, { node: 'share-eu', region: 'europe-west4', zone: 'europe-west4-b',
    gpuType: T4, gpuCount: 1, dir });
  ml = google.ml({ version: 'v1', rootUrl: `http://127.0.0.1:${server.port}/`, auth: 'any-key' });
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: 'any-token', expiry_date: Date.now() + 3600_000 });
  jobs = new aiplatform.v1.JobServiceClient({ apiEndpoint: '127.0.0.1', port: server.port,
    protocol: 'http', fallback: true, authClient });
});
after(async () => {
  try {
    await agent?.stop();
    await euAgent?.stop();
    await server?.stop();
  } finally {
    agent?.cleanup();
    euAgent?.cleanup();
    server?.kill();
    await pg?.cleanup();
  }
});

const stderr = () => `${agent.stderr()}\n${euAgent.stderr()}\n${server.stderr().slice(-4000)}`;

const mlJob = (command, extra = {}, top = {}) => ({
  scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
  masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', command], ...extra }, ...top,
});
const oneT4 = { acceleratorConfig: { type: T4, count: '1' } };

/** A file the test creates to let a replica finish: `wait` is the loop that waits for it. */
function gate(name) {
  const file = path.join(dir, `gate-${name}`);
  return { wait: `while [ ! -e ${file} ]; do sleep 0.1; done`, open: () => fs.writeFileSync(file, '') };
}

const serviceLines = async (project, id) => (await readJobLog(server.base, project, id, '', { service: true }))
  .filter((e) => e.resource.labels.task_name === 'service').map((e) => `${e.severity} ${e.textPayload}`);

async function waitService(project, id, re) {
  let got = [];
  await waitFor(async () => (got = await serviceLines(project, id)).some((l) => re.test(l)), 20_000,
    `a service line ${re} for ${id}`).catch((e) => { throw new Error(`${e.message}:\n${got.join('\n')}\n${stderr()}`); });
  return got;
}

async function quotasOf(project) {
  const res = await request(server.base, 'GET', `/trainplane/v1/projects/${project}/quotas`);
  assert.equal(res.status, 200, res.text);
  return res.json;
}

async function vertexCreate(project, region, displayName, command, scheduling) {
  const res = await request(server.base, 'POST', `/v1/projects/${project}/locations/${region}/customJobs`, { body: {
    displayName, jobSpec: { ...(scheduling ? { scheduling } : {}), workerPoolSpecs: [{
      machineSpec: { machineType: 'n1-standard-4', acceleratorType: T4, acceleratorCount: 1 }, replicaCount: 1,
      containerSpec: { imageUri: 'x', command: ['sh', '-c', command] } }] } } });
  assert.equal(res.status, 200, res.text);
  return res.json.name;
}

async function vertexState(name, want, timeoutMs = 30_000) {
  let got;
  await waitFor(async () => {
    const res = await request(server.base, 'GET', `/v1/${name}`);
    got = res.json;
    return [].concat(want).includes(got.state);
  }, timeoutMs, `${name} in ${want}`).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(got)}\n${stderr()}`); });
  return got;
}

describe('sharing the cluster', () => {
  it('a job no node can hold never delays one that fits, and says why', async () => {
    // 4 T4s: the largest node has 2. Past the starve limit it reserves nothing.
    await createJob(server.base, 'demo', 'too_big', mlJob('true',
      { acceleratorConfig: { type: T4, count: '4' } }, { masterType: 'n1-standard-16' }));
    const lines = await waitService('demo', 'too_big', /queued/);
    assert.match(lines[0], /^WARNING The job is queued: no node in region us-central1 can hold its replica master 0 .*4 x NVIDIA_TESLA_T4\), even when idle; .*ZONE_RESOURCE_POOL_EXHAUSTED/);
    assert.equal((await quotasOf('demo')).queuedJobs.never_fits, '1');
    await new Promise((r) => setTimeout(r, 1200));	// (past the starve limit, on purpose: not a wait for a state)
    await createJob(server.base, 'demo', 'fits_gpu', mlJob('true', oneT4));
    await createJob(server.base, 'demo', 'fits_cpu', mlJob('true'));
    await waitJobState(server.base, 'demo', 'fits_gpu', 'SUCCEEDED', 30_000, stderr);
    await waitJobState(server.base, 'demo', 'fits_cpu', 'SUCCEEDED', 30_000, stderr);
    // never_fits_fail_seconds (4 s here) gives it up.
    await waitJobState(server.base, 'demo', 'too_big', 'FAILED', 30_000, stderr);
    assert.match((await getJob(server.base, 'demo', 'too_big')).errorMessage,
      /^The job could not be placed: no node in region us-central1 can hold its replica master 0 .*\(ZONE_RESOURCE_POOL_EXHAUSTED\)\. It waited 4 s \(never_fits_fail_seconds\) and is given up\.$/);
  });

  it('a job over its project\'s limit is refused with Google\'s 429 (googleapis, ml v1)', async () => {
    const err = await ml.projects.jobs.create({ parent: 'projects/tiny', requestBody: {
      jobId: 'no_t4', trainingInput: mlJob('true', oneT4) } }).then(() => null, (e) => e);
    assert.ok(err, 'the create was accepted');
    assert.equal(err.code, 429);
    const body = err.response.data.error;
    assert.equal(body.status, 'RESOURCE_EXHAUSTED');
    assert.equal(body.message, 'Quota failure for project tiny. The request for 1 T4 accelerators exceeds '
      + 'the allowed maximum of 0 T4 accelerators. To read more about Cloud ML Engine quota, see '
      + 'https://cloud.google.com/ml-engine/quotas.');
    const qf = body.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.QuotaFailure');
    assert.deepEqual(qf.violations, [{ subject: 'tiny',
      description: 'The request for 1 T4 accelerators exceeds the allowed maximum of 0 T4 accelerators.' }]);
    // CPUs too (64 at most: 96 asked).
    const cpu = await request(server.base, 'POST', '/v1/projects/tiny/jobs', { body: { jobId: 'many_cpus',
      trainingInput: mlJob('true', {}, { masterType: 'n1-standard-96' }) } });
    assert.equal(cpu.status, 429, cpu.text);
    assert.match(cpu.json.error.message, /The request for 96 CPUs exceeds the allowed maximum of 64 CPUs\./);
    // Nothing was stored.
    assert.equal((await request(server.base, 'GET', '/v1/projects/tiny/jobs/no_t4')).status, 404);
  });

  it('Vertex: 429 with the quota metric, the preemptible one for SPOT (@google-cloud/aiplatform)', async () => {
    const spec = (scheduling) => ({ displayName: 'q', jobSpec: { ...(scheduling ? { scheduling } : {}), workerPoolSpecs: [{
      machineSpec: { machineType: 'n1-standard-4', acceleratorType: T4, acceleratorCount: 1 }, replicaCount: 1,
      containerSpec: { imageUri: 'x', command: ['true'] } }] } });
    const parent = 'projects/tiny/locations/us-central1';
    let err = await jobs.createCustomJob({ parent, customJob: spec() }).then(() => null, (e) => e);
    assert.ok(err, 'the create was accepted');
    assert.equal(err.code, 8);	// RESOURCE_EXHAUSTED
    assert.match(err.message, /The following quota metrics exceed quota limits: aiplatform\.googleapis\.com\/custom_model_training_nvidia_t4_gpus/);
    err = await jobs.createCustomJob({ parent, customJob: spec({ strategy: 'SPOT' }) }).then(() => null, (e) => e);
    assert.equal(err?.code, 8);
    assert.match(err.message, /custom_model_training_preemptible_nvidia_t4_gpus/);
  });

  it('a project at its limit waits, says why, and runs once its usage allows', async () => {
    const g = gate('capped');
    await createJob(server.base, 'capped', 'first', mlJob(g.wait, oneT4));
    await waitJobState(server.base, 'capped', 'first', 'RUNNING', 30_000, stderr);
    await createJob(server.base, 'capped', 'second', mlJob('true', oneT4));
    const lines = await waitService('capped', 'second', /quota/);
    assert.ok(lines.some((l) => /^WARNING The job is queued: project capped is at its quota in region us-central1\. The request for 1 T4 accelerators exceeds the allowed maximum of 1 T4 accelerators \(1 T4 in use\)\./.test(l)), lines.join('\n'));
    // The node has a second T4 free: only the quota holds the job.
    assert.equal((await getJob(server.base, 'capped', 'second')).state, 'QUEUED');
    const q = await quotasOf('capped');
    assert.equal(q.configured, true);
    const region = q.regions.find((r) => r.region === 'us-central1');
    assert.deepEqual(region.quotas.find((e) => e.resource === T4), { resource: T4, limit: '1', usage: '1' });
    assert.equal(q.queuedJobs.quota, '1');
    // The queue API and the CLI say the same.
    const queue = (await request(server.base, 'GET', '/trainplane/v1/projects/capped/queue')).json;
    assert.deepEqual(queue.jobs.map((j) => [j.name, j.reason]), [['projects/capped/jobs/second', 'quota']]);
    assert.match(queue.jobs[0].message, /at its quota/);
    const cli = (...args) => spawnSync(process.env.TRAINPLANE_CLI_BIN,
      ['--endpoint', server.base, '--project', 'capped', ...args], { encoding: 'utf8' });
    let out = cli('quotas', 'list');
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /^REGION\s+RESOURCE\s+LIMIT\s+USAGE\s+PREEMPTIBLE_LIMIT\s+PREEMPTIBLE_USAGE$/m);
    assert.match(out.stdout, /^\*\s+NVIDIA_TESLA_T4\s+1\s*$/m);
    assert.match(out.stdout, /^us-central1\s+NVIDIA_TESLA_T4\s+1\s+1\s*$/m);
    out = cli('queue', 'list', '--format', 'value(jobId,reason)');
    assert.equal(out.status, 0, out.stderr);
    assert.equal(out.stdout, 'second\tquota\n');
    g.open();
    await waitJobState(server.base, 'capped', 'second', 'SUCCEEDED', 30_000, stderr);
  });

  it('a STANDARD job preempts a running SPOT job, which restarts and succeeds', async () => {
    // europe-west4 has one T4. The SPOT replica runs until stopped, the
    // first time; its second attempt finds the marker and succeeds.
    const marker = path.join(dir, 'spot-ran');
    const spot = await vertexCreate('demo', 'europe-west4', 'spot',
      `if [ -e ${marker} ]; then exit 0; fi; touch ${marker}; trap 'exit 143' TERM; while :; do sleep 0.1; done`,
      { strategy: 'SPOT' });
    await vertexState(spot, 'JOB_STATE_RUNNING');
    const g = gate('standard');
    const standard = await vertexCreate('demo', 'europe-west4', 'standard', g.wait);
    // The SPOT job goes back to the queue; the STANDARD one takes the GPU.
    await vertexState(spot, 'JOB_STATE_QUEUED');
    await vertexState(standard, 'JOB_STATE_RUNNING');
    const spotId = spot.split('/').pop();
    const lines = await waitService('demo', spotId, /preempted/);
    assert.ok(lines.some((l) => /^WARNING The job was preempted: job \d+ of project demo \(not SPOT, while this job is SPOT\) needs its resources in region europe-west4 \(preemption 1;/.test(l)), lines.join('\n'));
    g.open();
    await vertexState(standard, 'JOB_STATE_SUCCEEDED');
    const done = await vertexState(spot, ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED'], 30_000);
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    // Placed twice: its second attempt found the marker and exited 0 (too fast,
    // maybe, for a report of it running).
    const after = await serviceLines('demo', spotId);
    assert.equal(after.filter((l) => l.startsWith('INFO Waiting for the training program')).length, 2, after.join('\n'));
    assert.equal(after.at(-1), 'INFO Job completed successfully.', after.join('\n'));
  });

  it('a job of a higher priority preempts a whole gang below the preemptible class', async () => {
    // Both us-central1 T4s go to a priority-10 job (a gang of two); a
    // priority-500 job needing one takes its place, and it restarts after.
    const marker = path.join(dir, 'low-ran');
    const once = `if [ -e ${marker}-$RANK ]; then exit 0; fi; touch ${marker}-$RANK; `
      + "trap 'exit 143' TERM; while :; do sleep 0.1; done";
    await createJob(server.base, 'demo', 'low', mlJob(once, oneT4, {
      workerType: 'n1-standard-4', workerCount: '1', workerConfig: { imageUri: 'x', containerCommand: ['sh', '-c', once], ...oneT4 },
      scheduling: { priority: 10 } }));
    await waitJobState(server.base, 'demo', 'low', 'RUNNING', 30_000, stderr);
    const g = gate('high');
    await createJob(server.base, 'demo', 'high', mlJob(g.wait, oneT4, { scheduling: { priority: 500 } }));
    await waitJobState(server.base, 'demo', 'high', 'RUNNING', 30_000, stderr);
    assert.equal((await getJob(server.base, 'demo', 'low')).state, 'QUEUED');
    const lines = await waitService('demo', 'low', /preempted/);
    assert.ok(lines.some((l) => /^WARNING The job was preempted: job high of project demo \(of a higher priority\)/.test(l)), lines.join('\n'));
    g.open();
    await waitJobState(server.base, 'demo', 'high', 'SUCCEEDED', 30_000, stderr);
    await waitJobState(server.base, 'demo', 'low', 'SUCCEEDED', 30_000, stderr);
    const after = await serviceLines('demo', 'low');
    // Placed twice, the whole gang each time; the second attempt succeeds.
    assert.equal(after.filter((l) => l.startsWith('INFO Waiting for the training program')).length, 2, after.join('\n'));
    assert.equal(after.filter((l) => / stopped \(exit status 143\)/.test(l)).length, 2, after.join('\n'));
  });

  it('the leader\'s copy of the nodes follows a drain (it is kept between passes while they do not change)', async () => {
    // A 2-T4 job waits behind a 1-T4 one: passes run with the nodes unchanged.
    const g = gate('drain-hold');
    await createJob(server.base, 'demo', 'drain_hold', mlJob(g.wait, oneT4));
    await waitJobState(server.base, 'demo', 'drain_hold', 'RUNNING', 30_000, stderr);
    await createJob(server.base, 'demo', 'drain_wait', mlJob('true',
      { acceleratorConfig: { type: T4, count: '2' } }, { masterType: 'n1-standard-8' }));
    await waitService('demo', 'drain_wait', /waiting for capacity/);
    assert.equal((await request(server.base, 'POST', '/trainplane/v1/nodes/share-1:drain', { body: {} })).status, 200);
    g.open();
    await waitJobState(server.base, 'demo', 'drain_hold', 'SUCCEEDED', 30_000, stderr);
    // Both T4s are free now, but the node is drained: passes go on and place nothing.
    const passes = async () => Number(/^trainplane_scheduler_pass_duration_seconds_count (\d+)/m
      .exec((await request(server.base, 'GET', '/metrics')).text)?.[1] || 0);
    const seen = await passes();
    await waitFor(async () => (await passes()) >= seen + 3, 20_000, 'three more passes');
    assert.equal((await getJob(server.base, 'demo', 'drain_wait')).state, 'QUEUED');
    assert.equal((await request(server.base, 'POST', '/trainplane/v1/nodes/share-1:undrain', { body: {} })).status, 200);
    await waitJobState(server.base, 'demo', 'drain_wait', 'SUCCEEDED', 30_000, stderr);
  });

  it('SIGHUP reloads the quotas file; a bad file keeps the old limits', async () => {
    const body = { jobId: 'after_hup', trainingInput: mlJob('true', oneT4) };
    assert.equal((await request(server.base, 'POST', '/v1/projects/tiny/jobs', { body })).status, 429);
    fs.writeFileSync(quotasFile, 'projects:\n  tiny:\n    limits: {NO_SUCH_GPU: 1}\n');
    server.child.kill('SIGHUP');
    await waitFor(() => /quotas not reloaded.*NO_SUCH_GPU/.test(server.stderr()), 10_000, 'the refusal of the bad file');
    assert.equal((await request(server.base, 'POST', '/v1/projects/tiny/jobs', { body })).status, 429);
    fs.writeFileSync(quotasFile, QUOTAS.replace(`limits: {${T4}: 0, cpus: 64}`, `limits: {${T4}: 1, cpus: 64}`));
    server.child.kill('SIGHUP');
    await waitFor(async () => (await request(server.base, 'POST', '/v1/projects/tiny/jobs', { body })).status === 200,
      10_000, 'the create after the reload');
    await waitJobState(server.base, 'tiny', 'after_hup', 'SUCCEEDED', 30_000, stderr);
  });
});
