// Issue 27: the emulator's clock (docs/emulator.md, "The clock"). A test of
// a 2-hour maxRunningTime takes a moment: advance the clock and the
// scheduler judges the timer at once. Simulated replicas run on the clock
// too (speed), timestamps stay in order across an advance, and a server
// that is no emulator refuses every clock control.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { IMAGE, startEmulatorPair } from './emulator.mjs';
import { assertError, client, waitFor } from './harness.mjs';

let pair;
let emu;
let plain;
let c;

before(async () => {
  pair = await startEmulatorPair({ nodesPerType: 2 });
  ({ emu, plain, c } = pair);
});
after(async () => {
  if (pair) await pair.stop();
});

async function state(path) {
  return (await c.get(path)).json;
}

async function until(fn, ms, what) {
  let v;
  await waitFor(async () => (v = await fn()), ms, what);
  return v;
}

const image = IMAGE;

describe('the emulator\'s clock', () => {
  it('a 2-hour maxRunningTime is exceeded as soon as the clock is 2 hours on', async () => {
    const body = {
      jobId: 'two_hours', labels: { 'trainplane-simulate': 'run-100000s-exit-0' },
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image,
        scheduling: { maxRunningTime: '7200s' } },
    };
    assert.equal((await c.post('/v1/projects/clock/jobs', body)).status, 200);
    await until(async () => (await state('/v1/projects/clock/jobs/two_hours')).state === 'RUNNING', 20_000, 'RUNNING');
    const before = (await c.get('/trainplane/v1/emulator/clock')).json;
    assert.equal(before.speed, 1);
    const t0 = Date.now();
    const adv = await c.post('/trainplane/v1/emulator:advanceClock', { duration: '7201s' });
    assert.equal(adv.status, 200, adv.text);
    assert.ok(Date.parse(adv.json.time) - Date.parse(before.time) >= 7201_000);
    assert.match(adv.json.offset, /^720[12](\.\d+)?s$/);
    const job = await until(async () => {
      const j = await state('/v1/projects/clock/jobs/two_hours');
      return j.state === 'FAILED' ? j : null;
    }, 20_000, 'FAILED by maxRunningTime');
    const wall = Date.now() - t0;
    assert.match(job.errorMessage, /maximum running time \(scheduling.max_running_time\) of 7200s/);
    // 2 hours of emulated running; the wall clock saw a moment (reported,
    // not asserted: timing belongs to make bench).
    assert.ok(Date.parse(job.endTime) - Date.parse(job.startTime) >= 7200_000, JSON.stringify(job));
    assert.ok(Date.parse(job.createTime) <= Date.parse(job.startTime));
    console.log(`# maxRunningTime 7200s exceeded ${wall} ms of wall time after the advance`);
    // The log's timestamps never go back across the advance.
    const entries = (await c.post('/v2/entries:list', { resourceNames: ['projects/clock'],
      filter: 'resource.labels.job_id="two_hours"', pageSize: 1000 })).json.entries;
    const times = entries.map((e) => Date.parse(e.timestamp));
    assert.ok(times.length >= 3);
    for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], JSON.stringify(entries.map((e) => [e.timestamp, e.textPayload])));
    assert.ok(entries.some((e) => /max_running_time/.test(e.textPayload)));
  });

  it('Vertex scheduling.timeout likewise', async () => {
    const res = await c.post('/v1/projects/clock/locations/us-central1/customJobs', {
      displayName: 'timeout', labels: { 'trainplane-simulate': 'run-100000s-exit-0' },
      jobSpec: { scheduling: { timeout: '3600s' }, workerPoolSpecs: [{
        machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: image }] },
    });
    assert.equal(res.status, 200, res.text);
    const name = res.json.name;
    await until(async () => (await state(`/v1/${name}`)).state === 'JOB_STATE_RUNNING', 20_000, 'RUNNING');
    assert.equal((await c.post('/trainplane/v1/emulator:advanceClock', { duration: '3601s' })).status, 200);
    const job = await until(async () => {
      const j = await state(`/v1/${name}`);
      return j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 20_000, 'FAILED by its timeout');
    assert.match(job.error.message, /timeout/);
  });

  it('simulated replicas run on the clock: at 1000 times real speed an hour passes in seconds', async () => {
    const res = await c.post('/v1/projects/clock/jobs', {
      jobId: 'an_hour', labels: { 'trainplane-simulate': 'run-3600s-exit-0' },
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image },
    });
    assert.equal(res.status, 200);
    await until(async () => (await state('/v1/projects/clock/jobs/an_hour')).state === 'RUNNING', 20_000, 'RUNNING');
    const sp = await c.post('/trainplane/v1/emulator:setClockSpeed', { speed: 1000 });
    assert.equal(sp.status, 200, sp.text);
    assert.equal(sp.json.speed, 1000);
    const job = await until(async () => {
      const j = await state('/v1/projects/clock/jobs/an_hour');
      return j.state === 'SUCCEEDED' ? j : null;
    }, 30_000, 'SUCCEEDED after an emulated hour');
    assert.ok(Date.parse(job.endTime) - Date.parse(job.startTime) >= 3600_000, JSON.stringify(job));
    assert.equal((await c.post('/trainplane/v1/emulator:setClockSpeed', { speed: 1 })).status, 200);
    // No jump when the speed changes back.
    const a = (await c.get('/trainplane/v1/emulator/clock')).json;
    const b = (await c.get('/trainplane/v1/emulator/clock')).json;
    assert.ok(Date.parse(b.time) >= Date.parse(a.time) && Date.parse(b.time) - Date.parse(a.time) < 60_000);
  });

  it('a FLEX_START job that gets no resources fails after its maxWaitDuration, through the clock', async () => {
    // (a rule holds it QUEUED, as a full cluster would)
    assert.equal((await c.post('/trainplane/v1/emulator:setRules', { rules: [
      { match: { displayName: 'flex-*' }, outcome: 'queue' }] })).status, 200);
    const res = await c.post('/v1/projects/clock/locations/us-central1/customJobs', {
      displayName: 'flex-wait', jobSpec: { scheduling: { strategy: 'FLEX_START', maxWaitDuration: '1800s' },
        workerPoolSpecs: [{ machineSpec: { machineType: 'a2-highgpu-1g', acceleratorType: 'NVIDIA_TESLA_A100',
          acceleratorCount: 1 }, replicaCount: '1', containerSpec: image }] } });
    assert.equal(res.status, 200, res.text);
    const name = res.json.name;
    assert.equal((await c.post('/trainplane/v1/emulator:advanceClock', { duration: '1700s' })).status, 200);
    assert.equal((await state(`/v1/${name}`)).state, 'JOB_STATE_QUEUED', 'not yet');
    assert.equal((await c.post('/trainplane/v1/emulator:advanceClock', { duration: '101s' })).status, 200);
    const job = await until(async () => {
      const j = await state(`/v1/${name}`);
      return j.state === 'JOB_STATE_FAILED' ? j : null;
    }, 20_000, 'FAILED after its maxWaitDuration');
    assert.match(job.error.message, /maximum wait duration \(scheduling.max_wait_duration\) of 1800s/);
    assert.equal((await c.post('/trainplane/v1/emulator:setRules', { rules: [] })).status, 200);
  });

  it('bad requests are 400 INVALID_ARGUMENT; time never goes back', async () => {
    for (const body of [{}, { duration: 7200 }, { duration: 'abc' }, { duration: '-5s' }, { duration: '0s' },
      { duration: '40000000s' }]) {
      assertError(await c.post('/trainplane/v1/emulator:advanceClock', body), 400, 'INVALID_ARGUMENT', /duration/);
    }
    for (const body of [{}, { speed: 0 }, { speed: -1 }, { speed: 'x' }, { speed: 2e6 }]) {
      assertError(await c.post('/trainplane/v1/emulator:setClockSpeed', body), 400, 'INVALID_ARGUMENT', /speed/);
    }
  });

  it('a server that is no emulator refuses every clock control', async () => {
    const p = client(plain.base);
    assert.deepEqual((await p.get('/trainplane/v1/emulator')).json, { enabled: false });
    assertError(await p.get('/trainplane/v1/emulator/clock'), 400, 'FAILED_PRECONDITION', /not an emulator/);
    assertError(await p.post('/trainplane/v1/emulator:advanceClock', { duration: '60s' }), 400,
      'FAILED_PRECONDITION', /not an emulator/);
    assertError(await p.post('/trainplane/v1/emulator:setClockSpeed', { speed: 2 }), 400,
      'FAILED_PRECONDITION', /not an emulator/);
    assert.deepEqual((await c.get('/trainplane/v1/emulator')).json, { enabled: true });
  });
});

describe('trainplane emulator (the CLI)', () => {
  const CLI = process.env.TRAINPLANE_CLI_BIN;
  const run = (server, args) => new Promise((resolve) => {
    execFile(CLI, args, { env: { ...process.env, TRAINPLANE_ENDPOINT: `${server.base}/`, TRAINPLANE_PROJECT: 'cli' } },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });

  it('advance-clock, set-clock-speed, clock, rules set and reset against the emulator', async () => {
    const before = Date.parse((await c.get('/trainplane/v1/emulator/clock')).json.time);
    let r = await run(emu, ['emulator', 'advance-clock', '1h30m', '--format', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.parse(JSON.parse(r.stdout).time) - before >= 5400_000);
    r = await run(emu, ['emulator', 'set-clock-speed', '1', '--format', 'value(speed)']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '1.0');
    r = await run(emu, ['emulator', 'clock']);
    assert.match(r.stdout, /^offset: /m);
    const file = path.join(os.tmpdir(), `tp-rules-${process.pid}.yaml`);
    fs.writeFileSync(file, 'rules:\n  - match: {project: cli}\n    outcome: fail\n    exitCode: 9\n');
    r = await run(emu, ['emulator', 'rules', 'set', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await c.get('/trainplane/v1/emulator/rules')).json.rules[0].exitCode, 9);
    fs.writeFileSync(file, 'rules:\n  - outcome: explode\n');
    r = await run(emu, ['emulator', 'rules', 'set', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /rules\[0\]\.outcome/);
    r = await run(emu, ['emulator', 'rules', 'set', file.replace('.yaml', '.none')]);
    assert.equal(r.code, 1);
    fs.rmSync(file);
    assert.equal((await c.post('/trainplane/v1/emulator:setRules', { rules: [] })).status, 200);
    assert.equal((await c.post('/v1/projects/cli/jobs', { jobId: 'one',
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: image } })).status, 200);
    r = await run(emu, ['emulator', 'reset']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Deleted 1 job\(s\) of project cli\./);
    r = await run(emu, ['emulator', 'advance-clock', '-5s']);
    assert.equal(r.code, 2);
  });

  it('a server that is no emulator: the error, exit 1', async () => {
    const r = await run(plain, ['emulator', 'advance-clock', '60s']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^ERROR: \(trainplane\.emulator\.advance-clock\) FAILED_PRECONDITION: .*not an emulator/m);
  });
});
