// A node stopped on purpose is not a failed trainer (issue 25 item 2):
// make run's Ctrl-C while a job runs stops its replicas as a maintenance
// event does, and the job restarts (attempt 2) and succeeds when make run
// starts again, with the service's lines saying so; closing the terminal
// (SIGHUP) stops every trainer too.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  createJob, freePort, getJob, getNode, killMarked, pgrep, readJobLog, startAgent, waitJobState,
} from './agents.mjs';
import { startRun } from './make_run.mjs';

const markers = [];
after(() => { for (const m of markers) killMarked(m); });

// A master that waits for a gate file, then succeeds; a worker that runs
// until it is stopped. Both carry the marker on their command lines.
function gatedJob(marker, gate) {
  const script = `: ${marker}; case "$TF_CONFIG" in *'"type":"worker"'*) while :; do sleep 0.2; done;; ` +
    `*) while [ ! -e ${gate} ]; do sleep 0.2; done; echo master-done-${marker}; exit 0;; esac`;
  return {
    scaleTier: 'CUSTOM', region: 'us-central1',
    masterType: 'n1-standard-4', workerType: 'n1-standard-4', workerCount: '1',
    masterConfig: { imageUri: 'localhost/trainer:latest', containerCommand: ['sh', '-c', script],
                    acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } },
    workerConfig: { acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } },
  };
}

const service = (entries) => entries.filter((e) => e.resource.labels.task_name === 'service');
const texts = (entries) => entries.map((e) => `${e.severity} ${e.textPayload}`).join('\n');

describe('an orderly stop of make run', () => {
  it("Ctrl-C mid-job: the job is not failed; it restarts with attempt 2 and succeeds on the next make run", async () => {
    const state = makeTempDir('tp-orderly-');
    const port = await freePort();
    const marker = `orderly-${process.pid}-${Date.now()}`;
    const gate = path.join(state, 'gate');
    markers.push(marker);
    let run = await startRun(state, port);
    await createJob(run.base, 'demo', 'stop_1', gatedJob(marker, gate));
    await waitJobState(run.base, 'demo', 'stop_1', 'RUNNING', 60_000, () => run.output().slice(-4000));
    assert.equal(pgrep(marker).length >= 2, true, 'both replicas run');

    // Ctrl-C: SIGINT to the whole foreground process group.
    await run.stop({ signal: 'SIGINT', group: true });
    assert.deepEqual(pgrep(marker), [], 'no trainer left running');
    assert.doesNotMatch(run.output(), /\bWARN\b.*(leadership lost|fence|fenced)|\bERROR\b/,
                        'an orderly stop logs no warning or error');

    fs.writeFileSync(gate, '');
    run = await startRun(state, port);
    try {
      const before = await getJob(run.base, 'demo', 'stop_1');
      assert.ok(['PREPARING', 'RUNNING', 'SUCCEEDED'].includes(before.state), JSON.stringify(before));
      await waitJobState(run.base, 'demo', 'stop_1', 'SUCCEEDED', 60_000, () => run.output().slice(-4000));
      const log = await readJobLog(run.base, 'demo', 'stop_1', '', { service: true });
      const lines = texts(service(log));
      assert.match(lines, /WARNING The replica (master|worker) 0 was stopped with its node local-gpu-1: the node's agent stopped in an orderly way, as in a maintenance event; exit status 143/, lines);
      assert.match(lines, /WARNING The replica master 0 restarts \(attempt 2\)/, lines);
      assert.match(lines, /INFO Job completed successfully\./, lines);
      const done = log.find((e) => e.textPayload === `master-done-${marker}`);
      assert.ok(done, texts(log));
      assert.equal(done.labels['ml.googleapis.com/attempt'], '2', 'the master succeeded in its second attempt');
      assert.doesNotMatch(run.output(), /\bWARN\b.*(leadership lost|fence|fenced)|\bERROR\b/,
                          'an orderly start logs no warning or error');
    } finally {
      await run.stop();
    }
  });

  it('closing the terminal (SIGHUP) stops every trainer and the pool', async () => {
    const state = makeTempDir('tp-hup-');
    const port = await freePort();
    const marker = `hup-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const run = await startRun(state, port);
    await createJob(run.base, 'demo', 'hup_1', gatedJob(marker, path.join(state, 'never')));
    await waitJobState(run.base, 'demo', 'hup_1', 'RUNNING', 60_000, () => run.output().slice(-4000));
    await run.stop({ signal: 'SIGHUP', group: true });	// checks nothing is left under the state dir
    assert.deepEqual(pgrep(marker), [], 'no trainer left running');
  });

  it('an agent that drains takes no new replica and leaves once its replicas ended by themselves', async () => {
    const pg = await startPostgres();
    const server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
    const dir = makeTempDir('tp-drain-');
    const marker = `drain-${process.pid}-${Date.now()}`;
    const gate = path.join(dir, 'gate');
    markers.push(marker);
    let agent;
    try {
      agent = await startAgent(server, { node: 'drainer', drainOnExit: true, dir });
      const oneReplica = (id, script) => createJob(server.base, 'demo', id, {
        scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
        masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', `: ${marker}; ${script}`] } });
      await oneReplica('drain_1', `while [ ! -e ${gate} ]; do sleep 0.1; done; echo drained`);
      await waitJobState(server.base, 'demo', 'drain_1', 'RUNNING', 30_000, () => agent.stderr());
      agent.child.kill('SIGTERM');
      await waitFor(async () => (await getNode(server.base, 'drainer'))?.state === 'STOPPING', 15_000,
        'the draining node is STOPPING');
      // A new job waits: the node takes nothing new; the running one goes on.
      await oneReplica('drain_2', 'true');
      assert.ok(agent.alive(), 'the agent waits for its replica');
      assert.equal((await getJob(server.base, 'demo', 'drain_1')).state, 'RUNNING');
      fs.writeFileSync(gate, '');
      await waitJobState(server.base, 'demo', 'drain_1', 'SUCCEEDED', 30_000, () => agent.stderr());
      await agent.stop();	// exit 0 once drained
      assert.equal((await getJob(server.base, 'demo', 'drain_2')).state, 'QUEUED');
      assert.match(agent.stderr(), /draining node drainer/);
    } finally {
      agent?.cleanup();
      await server.stop();
      await pg.cleanup();
    }
  });
});
