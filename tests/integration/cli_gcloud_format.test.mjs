// The CLI's output language against Google's own gcloud (Cloud SDK 528,
// /usr/bin/gcloud): one server, jobs created through the API (they fail at
// once: the agent's process runtime cannot start an image without a
// command, which gives them an errorMessage), then the same
// command with the same --format, --filter, --sort-by, --limit or --uri run
// by gcloud (a private configuration pointing ml and aiplatform at the
// server) and by build/trainplane; stdout must be the same bytes.
// Without gcloud every test is reported skipped, with the reason.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, startAgent } from './agents.mjs';
import { GCLOUD, runTo, sameAsGcloud, sideBySideEnv, writeGcloudConfig } from './gcloud.mjs';

const CLI = process.env.TRAINPLANE_CLI_BIN;
const PROJECT = 'demo';
const REGION = 'us-central1';
// Every case (make test-gcloud-format), or one of each feature (make test).
const FULL = process.env.TRAINPLANE_GCLOUD_FORMAT_FULL === '1';
const skip = (!GCLOUD && 'gcloud is not installed: no gcloud on the PATH or at /usr/bin/gcloud') ||
  (!CLI && 'TRAINPLANE_CLI_BIN is not set') || (!AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set');

let pg;
let server;
let agent;
let dir;
let gcloudConfig;
let customJob;

function run(bin, args) {
  return runTo(bin, args, sideBySideEnv(gcloudConfig, server.base, PROJECT));
}

/** Runs args with gcloud and with trainplane; both must exit 0 and print the same bytes. */
async function same(args) {
  return (await sameAsGcloud(CLI, args, sideBySideEnv(gcloudConfig, server.base, PROJECT))).g.stdout;
}

async function createJob(body) {
  const res = await request(server.base, 'POST', `/v1/projects/${PROJECT}/jobs`, { body });
  assert.equal(res.status, 200, res.text);
}

describe('the CLI prints what gcloud prints', { skip, concurrency: 4 }, () => {
  before(async () => {
    dir = makeTempDir('tp-cli-gcloud-');
    pg = await startPostgres();
    server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '200' } });
    // The agent's process runtime refuses these replicas at once (an image and no command): each job FAILS with an errorMessage.
    agent = await startAgent(server, { node: 'fmt-node-1', dir, region: REGION, vcpus: 16, memoryMb: 65536 });
    gcloudConfig = writeGcloudConfig(dir, server.base, PROJECT);
    const ti = { scaleTier: 'BASIC', region: REGION, masterConfig: { imageUri: 'localhost/none:x' } };
    await createJob({ jobId: 'fmt_a', labels: { team: 'x' }, trainingInput: ti });
    await createJob({ jobId: 'fmt_b_with_a_much_longer_identifier_than_the_others', trainingInput: ti });
    await createJob({ jobId: 'fmt_c', labels: { team: 'y' }, trainingInput: { ...ti, args: ['--epochs', '3'] } });
    const cj = await request(server.base, 'POST', `/v1/projects/${PROJECT}/locations/${REGION}/customJobs`, {
      body: { displayName: 'fmt-cj', jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' },
        replicaCount: '1', containerSpec: { imageUri: 'localhost/x:y' } }] } },
    });
    assert.equal(cj.status, 200, cj.text);
    customJob = cj.json.name;
    // Wait for every job to have failed, so that gcloud and trainplane see the same jobs.
    await waitFor(async () => {
      const l = await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs`);
      const c = await request(server.base, 'GET', `/v1/${customJob}`);
      return l.json.jobs?.length === 3 && l.json.jobs.every((j) => j.state === 'FAILED') &&
        c.json.state === 'JOB_STATE_FAILED';
    }, 60_000, 'the jobs did not fail');
  });
  after(async () => {
    if (agent) await agent.stop();
    if (server) await server.stop();
    if (pg) await pg.cleanup();
  });

  // Each gcloud run costs a second or two of CPU: make test runs the four
  // cases marked core (JSON, value(), the list's table, a filter),
  // `make test-gcloud-format` (FULL) every case. test_cli_format checks the
  // rest of the output language against bytes made with gcloud's own
  // ruamel and json.dumps.
  const cases = (list) => list.filter((c) => FULL || c.core).map((c) => c.v);
  for (const format of cases([{ v: 'json', core: 1 }, { v: 'yaml' }, { v: 'value(state)' },
    { v: 'value(state,errorMessage)', core: 1 }, { v: 'table(jobId,state)' },
    { v: 'value(trainingInput.region)' }, { v: 'value(labels)' }, { v: 'csv(jobId,state)' },
    { v: 'table[no-heading](jobId,state)' }, { v: 'table[box](jobId,state)' },
    { v: 'table(jobId:label=ID,state,createTime.date())' }, { v: 'value(trainingInput)' },
    { v: 'value(trainingOutput.consumedMLUnits,trainingInput.args)' }, { v: 'default' }])) {
    it(`ai-platform jobs describe --format '${format}'`, async () => {
      await same(['ai-platform', 'jobs', 'describe', 'fmt_c', '--format', format]);
    });
  }

  for (const format of cases([{ v: 'json' }, { v: 'yaml' },
    { v: 'value(jobSpec.workerPoolSpecs[0].machineSpec.machineType,error.code)' },
    { v: 'table(name.basename(),displayName,state)' }])) {
    it(`ai custom-jobs describe --format '${format}'`, async () => {
      await same(['ai', 'custom-jobs', 'describe', customJob, '--format', format]);
    });
  }

  const lists = cases([
    { v: [], core: 1 },
    { v: ['--format', 'json'] },
    { v: ['--format', 'yaml'] },
    { v: ['--format', 'table(jobId,state,createTime)'] },
    { v: ['--format', 'value(jobId)', '--filter', 'labels.team=x'] },
    { v: ['--format', 'value(jobId)', '--filter', 'state=FAILED AND NOT jobId:fmt_a'], core: 1 },
    { v: ['--format', 'value(jobId)', '--filter', '(labels.team=x OR labels.team=y)'] },
    { v: ['--format', 'value(jobId)', '--filter', 'createTime>2026-01-01'] },
    { v: ['--format', 'value(jobId)', '--filter', 'jobId~^fmt_[ab]'] },
    { v: ['--format', 'value(jobId)', '--sort-by', '~jobId'] },
    { v: ['--format', 'value(jobId)', '--sort-by', 'state,~jobId', '--limit', '2'] },
    { v: ['--format', 'value(jobId)', '--page-size', '1', '--limit', '2'] },
  ]);
  for (const args of lists) {
    it(`ai-platform jobs list ${args.join(' ')}`, async () => {
      const out = await same(['ai-platform', 'jobs', 'list', ...args]);
      assert.ok(out.length > 0 || args.includes('--filter'), 'printed nothing');
    });
  }

  it('ai custom-jobs list --uri, --format yaml, --filter', { skip: !FULL && 'make test-gcloud-format' }, async () => {
    const uri = await same(['ai', 'custom-jobs', 'list', '--region', REGION, '--uri']);
    assert.equal(uri, `${server.base}/v1/${customJob}\n`);
    if (!FULL) return;
    await same(['ai', 'custom-jobs', 'list', '--region', REGION, '--format', 'yaml']);
    await same(['ai', 'custom-jobs', 'list', '--region', REGION, '--format', 'value(name)', '--filter', 'display_name=fmt-cj']);
  });

  it('ai-platform jobs list --uri: trainplane prints the URIs gcloud leaves out', { skip: !FULL && 'make test-gcloud-format' }, async () => {
    const [g, t] = await Promise.all([run(GCLOUD, ['ai-platform', 'jobs', 'list', '--uri']),
      run(CLI, ['ai-platform', 'jobs', 'list', '--uri', '--sort-by', 'jobId'])]);
    assert.equal(g.stdout, '');	// gcloud 528 has no URI for an ml v1 job: it prints nothing
    assert.equal(t.stdout, ['fmt_a', 'fmt_b_with_a_much_longer_identifier_than_the_others', 'fmt_c']
      .map((j) => `${server.base}/v1/projects/${PROJECT}/jobs/${j}\n`).join(''));
  });
});
