// The service's own lines in a job's log (issue 25 item 3), under the task
// "service", as Google writes its own: why a job waits, each replica
// started on which node, a replica's failure with its reason and status,
// the job failed / cancelled / succeeded, with severities.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, startPostgres, startServer, waitFor } from './harness.mjs';
import { cancelJob, createJob, readJobLog, startAgent, waitJobState } from './agents.mjs';

let pg, server, agent;
before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
  agent = await startAgent(server, { node: 'svc-1', gpuType: 'NVIDIA_TESLA_T4', gpuCount: 1 });
});
after(async () => {
  try {
    await agent?.stop();
    await server?.stop();
  } finally {
    agent?.cleanup();
    server?.kill();
    await pg?.cleanup();
  }
});

const job = (command, extra = {}) => ({
  scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
  masterConfig: { imageUri: 'x', ...(command ? { containerCommand: ['sh', '-c', command] } : {}), ...extra },
});
const lines = async (id) => (await readJobLog(server.base, 'demo', id, '', { service: true }))
  .filter((e) => e.resource.labels.task_name === 'service')
  .map((e) => `${e.severity} ${e.textPayload}`);

async function waitLines(id, re) {
  let got = [];
  await waitFor(async () => (got = await lines(id)).some((l) => re.test(l)), 20_000,
    `a service line ${re} for ${id}`).catch((e) => { throw new Error(`${e.message}:\n${got.join('\n')}`); });
  return got;
}

describe('the service lines of a job', () => {
  it('a job that succeeds: placed, the replica running on its node, running, succeeded, in order', async () => {
    // It waits for a gate, so that its agent reports it running before it exits.
    const gate = path.join(makeTempDir('tp-svc-'), 'gate');
    await createJob(server.base, 'demo', 'svc_ok', job(`while [ ! -e ${gate} ]; do sleep 0.1; done`));
    await waitJobState(server.base, 'demo', 'svc_ok', 'RUNNING', 30_000, () => agent.stderr());
    fs.writeFileSync(gate, '');
    await waitJobState(server.base, 'demo', 'svc_ok', 'SUCCEEDED', 30_000, () => agent.stderr());
    const got = await waitLines('svc_ok', /Job completed successfully/);
    assert.deepEqual(got, [
      'INFO Waiting for the training program to start: every replica of the job was placed on a node.',
      'INFO The replica master 0 is running on node svc-1 (attempt 1).',
      'INFO The job is running: every replica started.',
      'INFO The replica master 0 exited successfully.',
      'INFO Job completed successfully.',
    ]);
  });

  it('a replica that exits non-zero, and one that cannot start: ERROR lines with the reason', async () => {
    await createJob(server.base, 'demo', 'svc_exit', job('exit 3'));
    await waitJobState(server.base, 'demo', 'svc_exit', 'FAILED', 30_000, () => agent.stderr());
    let got = await waitLines('svc_exit', /Job failed/);
    assert.ok(got.includes('ERROR The replica master 0 exited with a non-zero status of 3.'), got.join('\n'));
    assert.ok(got.includes('ERROR Job failed. The replica master 0 exited with a non-zero status of 3.'), got.join('\n'));
    // A filter on the severity finds them (the filter and the entries map streams alike).
    const errors = await readJobLog(server.base, 'demo', 'svc_exit', 'severity=ERROR', { service: true });
    assert.deepEqual(errors.filter((e) => e.resource.labels.task_name === 'service').map((e) => e.textPayload),
      ['The replica master 0 exited with a non-zero status of 3.',
       'Job failed. The replica master 0 exited with a non-zero status of 3.']);

    // docs/cli.md's tf_1: an image and no command, on the process runtime.
    await createJob(server.base, 'demo', 'svc_nocmd', job(null));
    await waitJobState(server.base, 'demo', 'svc_nocmd', 'FAILED', 30_000, () => agent.stderr());
    got = await waitLines('svc_nocmd', /Job failed/);
    assert.ok(got.some((l) => /^ERROR The replica master 0 could not be started: .+/.test(l)), got.join('\n'));
    assert.ok(got.some((l) => /^ERROR Job failed\. The replica master 0 could not be started: .+/.test(l)), got.join('\n'));
  });

  it('a job that waits says why; a cancelled one says so', async () => {
    // No node of us-central1 has A100s: it waits for good.
    await createJob(server.base, 'demo', 'svc_a100', { ...job('true', {
      acceleratorConfig: { type: 'NVIDIA_TESLA_A100', count: '8' } }), masterType: 'a2-highgpu-8g' });
    let got = await waitLines('svc_a100', /queued/);
    // (a warning: nothing registered can run it; Google's word for it at the end)
    assert.match(got[0], /^WARNING The job is queued: no node in region us-central1 can hold its replica master 0 \(.*8 x NVIDIA_TESLA_A100\), even when idle; it waits until such a node registers \(ZONE_RESOURCE_POOL_EXHAUSTED\)\.$/);
    // No node in the region at all.
    await createJob(server.base, 'demo', 'svc_eu', { ...job('true'), region: 'europe-west4' });
    got = await waitLines('svc_eu', /queued/);
    assert.deepEqual(got, ['INFO The job is queued: no node in region europe-west4 takes work now; it waits until one registers.']);
    // Capacity: the one T4 is taken by a job that waits for a gate.
    await createJob(server.base, 'demo', 'svc_busy', job('sleep 30', {
      acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } }));
    await waitJobState(server.base, 'demo', 'svc_busy', 'RUNNING', 30_000, () => agent.stderr());
    await createJob(server.base, 'demo', 'svc_wait', job('true', {
      acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } }));
    got = await waitLines('svc_wait', /queued/);
    assert.deepEqual(got, ['INFO The job is queued: waiting for capacity in region us-central1 (the nodes that can hold its replicas are busy).']);
    await cancelJob(server.base, 'demo', 'svc_wait');
    got = await waitLines('svc_wait', /cancelled/);
    assert.equal(got.at(-1), 'INFO Job cancelled.');
    await cancelJob(server.base, 'demo', 'svc_busy');
    await waitJobState(server.base, 'demo', 'svc_busy', 'CANCELLED', 30_000, () => agent.stderr());
    got = await lines('svc_busy');
    assert.ok(got.includes('INFO Job cancellation requested: stopping its replicas.'), got.join('\n'));
    assert.equal(got.at(-1), 'INFO Job cancelled.');
  });
});
