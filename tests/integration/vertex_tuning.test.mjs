// Hyperparameter tuning, Vertex (issue 26): hyperparameterTuningJobs run
// their trials for real on a real agent, each trial a CustomJob of its own
// (Trial.customJob) with the study's trialJobSpec, its values as flags and
// its own baseOutputDirectory/<trial>/; through Google's own Node clients
// (googleapis, and @google-cloud/aiplatform as Google's samples use it).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { google } from './googleapis.mjs';
import aiplatform from '@google-cloud/aiplatform';
import { OAuth2Client } from 'google-auth-library';

import { assertError, client, fieldViolations, startPostgres, startServer, waitFor } from './harness.mjs';
import { killMarked, pgrep, readJobLog, startAgent } from './agents.mjs';

const MARK = `vtuning-${process.pid}`;
const PARENT = 'projects/vx/locations/us-central1';
let pg, server, agent, api, c;
before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
  agent = await startAgent(server, { node: 'vtune-1', vcpus: 64, memoryMb: 262144 });
  api = google.aiplatform({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
  c = client(server.base);
});
after(async () => {
  try {
    await agent?.stop();
    await server?.stop();
  } finally {
    killMarked(MARK);
    agent?.cleanup();
    server?.kill();
    await pg?.cleanup();
  }
});

// The trainer: parses its --name=value flags, reports score = 10 - (x - 3)^2
// (+ 1 for opt=b, + 100*lr) through CLOUD_ML_HP_METRIC_FILE as
// cloudml-hypertune writes it (two reports, the file rewritten), and says
// what it got, AIP_MODEL_DIR included.
const TRAINER = `: ${MARK}; x=0; opt=a; lr=none; for a in "$@"; do case "$a" in ` +
  '--x=*) x=${a#--x=};; --opt=*) opt=${a#--opt=};; --lr=*) lr=${a#--lr=};; esac; done; ' +
  'l=$lr; [ "$l" = none ] && l=0; ' +
  'score=$(awk -v x="$x" -v o="$opt" -v l="$l" \'BEGIN { s = 10 - (x - 3) ^ 2 + 100 * l; if (o == "b") s += 1; printf "%.6f", s }\'); ' +
  'half=$(awk -v s="$score" \'BEGIN { printf "%.6f", s / 2 }\'); ' +
  'printf \'{"global_step": "1", "score": "%s", "timestamp": 1.5, "trial": "%s"}\\n{"global_step": "2", "score": "%s", "timestamp": 2.5, "trial": "%s"}\\n\' "$half" "$CLOUD_ML_TRIAL_ID" "$score" "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; ' +
  'echo "trial $CLOUD_ML_TRIAL_ID x=$x opt=$opt lr=$lr score=$score model=$AIP_MODEL_DIR tag=$CLOUD_ML_HP_METRIC_TAG"';

function tuningJob(studySpec, { command = ['sh', '-c', TRAINER, 'trainer'], ...rest } = {}) {
  return {
    displayName: 'tune',
    studySpec: { metrics: [{ metricId: 'score', goal: 'MAXIMIZE' }], ...studySpec },
    maxTrialCount: 4,
    parallelTrialCount: 2,
    trialJobSpec: {
      workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1',
                          containerSpec: { imageUri: 'x', command, args: [] } }],
      baseOutputDirectory: { outputUriPrefix: 'gs://bucket/out/' },
    },
    ...rest,
  };
}

const X = { parameterId: 'x', integerValueSpec: { minValue: '1', maxValue: '5' } };
const OPT = { parameterId: 'opt', categoricalValueSpec: { values: ['a', 'b'] } };

async function waitTuningJob(name, states, timeoutMs = 120_000) {
  let job;
  await waitFor(async () => {
    job = (await api.projects.locations.hyperparameterTuningJobs.get({ name })).data;
    return states.includes(job.state);
  }, timeoutMs, `${name} in ${states}: ${JSON.stringify(job)}\n${agent.stderr().slice(-2000)}`, 200);
  return job;
}

function trialLines(entries) {
  return entries.filter((e) => /^trial \d+ x=/.test(e.textPayload));
}

describe('Vertex hyperparameterTuningJobs', () => {
  it('GRID_SEARCH through googleapis: every grid point once, each trial a CustomJob of its own', async () => {
    const body = tuningJob({ algorithm: 'GRID_SEARCH', parameters: [X, OPT] },
      { maxTrialCount: 20, parallelTrialCount: 3, labels: { team: 'a' } });
    const { data: created } = await api.projects.locations.hyperparameterTuningJobs.create({
      parent: PARENT, requestBody: body });
    assert.match(created.name, /^projects\/vx\/locations\/us-central1\/hyperparameterTuningJobs\/\d+$/);
    assert.equal(created.state, 'JOB_STATE_QUEUED');
    assert.deepEqual(created.studySpec.parameters[0], X, 'int64 bounds as strings');
    assert.equal(created.maxTrialCount, 20);
    const id = created.name.split('/').pop();

    const done = await waitTuningJob(created.name, ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED']);
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    assert.ok(done.startTime && done.endTime);
    assert.equal(done.trials.length, 10, 'the grid has 10 points: maxTrialCount 20 is not reached');
    assert.deepEqual(done.trials.map((t) => t.id), ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'],
      'trials in trial order');
    const points = new Set();
    for (const t of done.trials) {
      assert.equal(t.state, 'SUCCEEDED', JSON.stringify(t));
      assert.deepEqual(t.parameters.map((p) => p.parameterId), ['x', 'opt']);
      const [x, opt] = t.parameters.map((p) => p.value);
      assert.equal(typeof x, 'number', 'an INTEGER value is a number');
      assert.equal(typeof opt, 'string', 'a CATEGORICAL value is a string');
      points.add(`${x}/${opt}`);
      const want = 10 - (x - 3) ** 2 + (opt === 'b' ? 1 : 0);
      assert.deepEqual(t.finalMeasurement, { stepCount: '2', metrics: [{ metricId: 'score', value: want }] });
      assert.ok(t.startTime && t.endTime, JSON.stringify(t));
      assert.match(t.customJob, /^projects\/vx\/locations\/us-central1\/customJobs\/\d+$/);
    }
    assert.equal(points.size, 10, 'no point twice');

    // The trial's CustomJob: gettable, the trialJobSpec with its own output directory.
    const t3 = done.trials[2];
    const { data: cj } = await api.projects.locations.customJobs.get({ name: t3.customJob });
    assert.equal(cj.state, 'JOB_STATE_SUCCEEDED');
    assert.equal(cj.displayName, 'tune trial 3');
    assert.equal(cj.jobSpec.baseOutputDirectory.outputUriPrefix, 'gs://bucket/out/3');
    assert.deepEqual(cj.labels, { team: 'a' });
    assert.equal(cj._trial, undefined, 'the trial record is not shown');
    // It is the tuning job's to cancel or delete.
    const cjId = t3.customJob.split('/').pop();
    assertError(await c.del(`/v1/${PARENT}/customJobs/${cjId}`), 400, 'FAILED_PRECONDITION',
      new RegExp(`runs trial 3 of the HyperparameterTuningJob "${created.name}"`));
    // Neither the tuning job nor its trials are CustomJobs of the list; the tuning job is in its own.
    const { data: cjs } = await api.projects.locations.customJobs.list({ parent: PARENT });
    assert.deepEqual(cjs.customJobs ?? [], []);
    const { data: tjs } = await api.projects.locations.hyperparameterTuningJobs.list({
      parent: PARENT, filter: 'labels.team="a" AND state="JOB_STATE_SUCCEEDED"' });
    assert.deepEqual(tjs.hyperparameterTuningJobs.map((j) => j.name), [created.name]);
    // A tuning job is no CustomJob, nor the other way round.
    assertError(await c.get(`/v1/${PARENT}/customJobs/${id}`), 404, 'NOT_FOUND');
    assertError(await c.get(`/v1/${PARENT}/hyperparameterTuningJobs/${cjId}`), 404, 'NOT_FOUND');

    // Every trial's lines in the tuning job's log, with its trial id, its
    // output directory and the metric's tag.
    let lines = [];
    await waitFor(async () => {
      lines = trialLines(await readJobLog(server.base, 'vx', id));
      return lines.length === 10;
    }, 20_000, "the ten trials' lines in the tuning job's log");
    for (const e of lines) {
      const n = /^trial (\d+)/.exec(e.textPayload)[1];
      assert.equal(e.labels['ml.googleapis.com/trial_id'], n, JSON.stringify(e));
      assert.match(e.textPayload, new RegExp(` model=gs://bucket/out/${n}/model/ tag=score$`));
    }

    // The trials' own transitions too, in the tuning job's log.
    const service = await readJobLog(server.base, 'vx', id, 'resource.labels.task_name="service"', { service: true });
    const done3 = service.find((e) => e.textPayload === 'Trial 3: Job completed successfully.');
    assert.ok(done3, JSON.stringify(service.map((e) => e.textPayload)));
    assert.equal(done3.labels['ml.googleapis.com/trial_id'], '3');

    // Deleted: a long-running operation, and its trials go with it.
    const { data: op } = await api.projects.locations.hyperparameterTuningJobs.delete({ name: created.name });
    assert.equal(op.done, true);
    assertError(await c.get(`/v1/${t3.customJob}`), 404, 'NOT_FOUND');
  });

  it('conditional parameters: a child parameter is passed only when its parent has its value', async () => {
    const LR = { parameterId: 'lr', doubleValueSpec: { minValue: 0.0001, maxValue: 0.1 }, scaleType: 'UNIT_LOG_SCALE' };
    const body = tuningJob({ algorithm: 'RANDOM_SEARCH', parameters: [
      { ...OPT, conditionalParameterSpecs: [{ parentCategoricalValues: { values: ['b'] }, parameterSpec: LR }] },
    ] }, { maxTrialCount: 8, parallelTrialCount: 4 });
    const res = await c.post(`/v1/${PARENT}/hyperparameterTuningJobs`, body);
    assert.equal(res.status, 200, res.text);
    const done = await waitTuningJob(res.json.name, ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED']);
    assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
    assert.equal(done.trials.length, 8);
    const lines = trialLines(await readJobLog(server.base, 'vx', res.json.name.split('/').pop()));
    for (const t of done.trials) {
      const p = Object.fromEntries(t.parameters.map((q) => [q.parameterId, q.value]));
      const line = lines.find((e) => e.labels['ml.googleapis.com/trial_id'] === t.id)?.textPayload ?? '';
      if (p.opt === 'a') {
        assert.deepEqual(Object.keys(p), ['opt'], JSON.stringify(t));
        assert.match(line, / lr=none /, 'no --lr flag when opt is a');
      } else {
        assert.ok(p.lr >= 0.0001 && p.lr <= 0.1, JSON.stringify(t));
        assert.match(line, / lr=0\.\d+| lr=\de-\d+/, line);
      }
    }
  });

  it('a failing trial fails the job at maxFailedTrialCount; cancel stops running trials', async () => {
    const failing = tuningJob({ algorithm: 'GRID_SEARCH', parameters: [X] },
      { maxTrialCount: 5, parallelTrialCount: 1, maxFailedTrialCount: 2, command: ['sh', '-c', `: ${MARK}; exit 3`] });
    const f = await c.post(`/v1/${PARENT}/hyperparameterTuningJobs`, failing);
    assert.equal(f.status, 200, f.text);
    const failed = await waitTuningJob(f.json.name, ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED']);
    assert.equal(failed.state, 'JOB_STATE_FAILED');
    assert.equal(failed.error.code, 3);
    assert.equal(failed.error.message, 'Trial 1 failed: The replica workerpool0-0 exited with a non-zero status of 3.');
    assert.equal(failed.trials.length, 2);
    for (const t of failed.trials) {
      assert.equal(t.state, 'INFEASIBLE');
      assert.match(t.infeasibleReason, /exited with a non-zero status of 3/);
    }

    // Trials that take their stop grace (they ignore SIGTERM): the job is
    // CANCELLING until they are gone, and only then CANCELLED.
    const sleeping = tuningJob({ algorithm: 'GRID_SEARCH', parameters: [X] },
      { maxTrialCount: 5, parallelTrialCount: 2,
        command: ['sh', '-c', `: ${MARK}-cancel; trap '' TERM; while :; do sleep 0.2; done`] });
    const s = await c.post(`/v1/${PARENT}/hyperparameterTuningJobs`, sleeping);
    await waitFor(() => pgrep(`${MARK}-cancel`).length >= 2, 60_000, 'two trials running');
    const running = await waitTuningJob(s.json.name, ['JOB_STATE_RUNNING']);
    assert.deepEqual(running.trials.map((t) => t.state), ['ACTIVE', 'ACTIVE']);
    const cancel = await c.post(`/v1/${s.json.name}:cancel`, {});
    assert.equal(cancel.status, 200, cancel.text);
    const cancelling = (await api.projects.locations.hyperparameterTuningJobs.get({ name: s.json.name })).data;
    assert.equal(cancelling.state, 'JOB_STATE_CANCELLING', 'its trials are still in their stop grace');
    const cancelled = await waitTuningJob(s.json.name, ['JOB_STATE_CANCELLED'], 60_000);
    assert.deepEqual(cancelled.error, { code: 1, message: 'CANCELED' });
    assert.deepEqual(pgrep(`${MARK}-cancel`), [], 'no trial runs once the job is CANCELLED');
    assert.deepEqual(cancelled.trials.map((t) => t.state), ['INFEASIBLE', 'INFEASIBLE']);
  });

  it('a bad tuning job gets every problem at once, in Vertex\'s wording', async () => {
    const body = tuningJob({
      metrics: [],
      algorithm: 'GRID_SEARCH',
      parameters: [
        { parameterId: 'lr', doubleValueSpec: { minValue: 0.1, maxValue: 0.01 } },
        { parameterId: 'n', integerValueSpec: { minValue: '0', maxValue: '8' }, scaleType: 'UNIT_LOG_SCALE' },
        { parameterId: 'k', discreteValueSpec: { values: [2, 1] } },
        { parameterId: 'c', categoricalValueSpec: { values: ['a'] },
          conditionalParameterSpecs: [{ parentIntValues: { values: ['1'] }, parameterSpec: { parameterId: 'd', discreteValueSpec: { values: [1] } } }] },
      ],
    }, { maxTrialCount: 2, maxFailedTrialCount: 3 });
    body.trialJobSpec.workerPoolSpecs[0].machineSpec.machineType = 'n1-nonsense-4';
    const res = await c.post(`/v1/${PARENT}/hyperparameterTuningJobs`, body);
    const e = assertError(res, 400, 'INVALID_ARGUMENT', /^List of found errors:\t1\.Field: /);
    const fields = fieldViolations(e).map((v) => v.field);
    const HT = 'hyperparameter_tuning_job';
    for (const f of [
      `${HT}.trial_job_spec.worker_pool_specs[0].machine_spec.machine_type`,
      `${HT}.max_failed_trial_count`,
      `${HT}.study_spec.metrics`,
      `${HT}.study_spec.parameters[0].double_value_spec`,
      `${HT}.study_spec.parameters[0].double_value_spec.max_value`,
      `${HT}.study_spec.parameters[1].integer_value_spec.min_value`,
      `${HT}.study_spec.parameters[2].discrete_value_spec.values`,
      `${HT}.study_spec.parameters[3].conditional_parameter_specs[0]`,
    ]) assert.ok(fields.includes(f), `${f} in ${JSON.stringify(fields)}`);
    // The structural pass: unknown fields and enum names as Google's front end words them.
    assertError(await c.post(`/v1/${PARENT}/hyperparameterTuningJobs`, { ...tuningJob({ parameters: [X] }), maxTrials: 3 }),
      400, 'INVALID_ARGUMENT', /Unknown name "maxTrials" at 'hyperparameter_tuning_job': Cannot find field\./);
  });

  it("@google-cloud/aiplatform, as Google's tuning-job samples call it: create, get, list, cancel, delete", async () => {
    const authClient = new OAuth2Client();
    authClient.setCredentials({ access_token: 'any-token', expiry_date: Date.now() + 3600_000 });
    const jobs = new aiplatform.v1.JobServiceClient({ apiEndpoint: '127.0.0.1', port: server.port,
      protocol: 'http', fallback: true, authClient });
    // create-hyperparameter-tuning-job.js (nodejs-docs-samples ai-platform/snippets), its body
    // as written; the T4 it asks for is on no node here, so the job waits QUEUED.
    const [job] = await jobs.createHyperparameterTuningJob({
      parent: PARENT,
      hyperparameterTuningJob: {
        displayName: 'sample-tuning',
        maxTrialCount: 2,
        parallelTrialCount: 1,
        maxFailedTrialCount: 1,
        studySpec: {
          metrics: [{ metricId: 'accuracy', goal: 'MAXIMIZE' }],
          parameters: [{ parameterId: 'lr', doubleValueSpec: { minValue: 0.001, maxValue: 0.1 } }],
        },
        trialJobSpec: {
          workerPoolSpecs: [{
            machineSpec: { machineType: 'n1-standard-4', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1 },
            replicaCount: 1,
            containerSpec: { imageUri: 'gcr.io/ucaip-test/ucaip-training-test:latest', command: [], args: [] },
          }],
        },
      },
    });
    assert.match(job.name, /^projects\/vx\/locations\/us-central1\/hyperparameterTuningJobs\/\d+$/);
    assert.equal(job.state, 'JOB_STATE_QUEUED');
    assert.equal(job.studySpec.metrics[0].goal, 'MAXIMIZE');
    const [got] = await jobs.getHyperparameterTuningJob({ name: job.name });
    assert.equal(got.displayName, 'sample-tuning');
    const [list] = await jobs.listHyperparameterTuningJobs({ parent: PARENT, filter: 'display_name="sample-tuning"' });
    assert.deepEqual(list.map((j) => j.name), [job.name]);
    await jobs.cancelHyperparameterTuningJob({ name: job.name });
    const [cancelled] = await jobs.getHyperparameterTuningJob({ name: job.name });
    assert.equal(cancelled.state, 'JOB_STATE_CANCELLED');
    const [op] = await jobs.deleteHyperparameterTuningJob({ name: job.name });
    await op.promise();
    await assert.rejects(jobs.getHyperparameterTuningJob({ name: job.name }),
      (e) => e.code === 5 && /HyperparameterTuningJob .* does not exist/.test(e.message));
  });
});
