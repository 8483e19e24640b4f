// Hyperparameter tuning, ml v1 (issue 26): a study's trials run for real
// on a real agent, each the job's gang with its values as flags; the
// trainer reports through CLOUD_ML_HP_METRIC_FILE as cloudml-hypertune
// does; the job's output lists the trials best first.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { startPostgres, startServer, waitFor } from './harness.mjs';
import {
  cancelJob, createJob, getJob, killMarked, pgrep, readJobLog, startAgent, waitJobState,
} from './agents.mjs';

const MARK = `tuning-${process.pid}`;
let pg, server, agent;
before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
  agent = await startAgent(server, { node: 'tune-1', vcpus: 64, memoryMb: 262144 });
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

// The trainer: reads its --name=value flags, writes its score (with the
// library's keys and its trial) to the metric file, twice, as
// cloudml-hypertune rewrites the file; score = 10 - (x - 3)^2 (+ 1 for opt=b,
// + 100*lr when given). EXIT=n makes it exit n instead.
const TRAINER = `: ${MARK}; x=0; opt=a; lr=0; for a in "$@"; do case "$a" in ` +
  '--x=*) x=${a#--x=};; --opt=*) opt=${a#--opt=};; --lr=*) lr=${a#--lr=};; esac; done; ' +
  '[ -n "$EXIT" ] && exit "$EXIT"; ' +
  'score=$(awk -v x="$x" -v o="$opt" -v l="$lr" \'BEGIN { s = 10 - (x - 3) ^ 2 + 100 * l; if (o == "b") s += 1; printf "%.6f", s }\'); ' +
  'half=$(awk -v s="$score" \'BEGIN { printf "%.6f", s / 2 }\'); ' +
  'printf \'{"global_step": "1", "score": "%s", "timestamp": 1.5, "trial": "%s"}\\n\' "$half" "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; ' +
  'printf \'{"global_step": "1", "score": "%s", "timestamp": 1.5, "trial": "%s"}\\n{"global_step": "2", "score": "%s", "timestamp": 2.5, "trial": "%s"}\\n\' "$half" "$CLOUD_ML_TRIAL_ID" "$score" "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; ' +
  'echo "trial $CLOUD_ML_TRIAL_ID x=$x opt=$opt lr=$lr score=$score"';

function study(hyperparameters, { env = [], workers = 0 } = {}) {
  return {
    scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', TRAINER, 'trainer'],
                    ...(env.length ? {} : {}) },
    ...(workers ? { workerType: 'n1-standard-4', workerCount: String(workers) } : {}),
    hyperparameters: { hyperparameterMetricTag: 'score', goal: 'MAXIMIZE', ...hyperparameters },
  };
}

const X = { parameterName: 'x', type: 'INTEGER', minValue: 1, maxValue: 5 };
const OPT = { parameterName: 'opt', type: 'CATEGORICAL', categoricalValues: ['a', 'b'] };

describe('ml v1 tuning jobs', () => {
  it('GRID_SEARCH: every point of the grid once, 3 at a time, then the job ends; best first', async () => {
    await createJob(server.base, 'demo', 'grid_1', study({ algorithm: 'GRID_SEARCH', maxTrials: 25,
      maxParallelTrials: 3, params: [X, OPT] }));
    const done = await waitJobState(server.base, 'demo', 'grid_1', ['SUCCEEDED', 'FAILED'], 120_000,
      () => agent.stderr().slice(-3000));
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const out = done.trainingOutput;
    assert.equal(out.isHyperparameterTuningJob, true);
    assert.equal(out.hyperparameterMetricTag, 'score');
    assert.equal(out.completedTrialCount, '10');
    assert.equal(out.trials.length, 10, 'the grid has 10 points; maxTrials 25 is not reached');
    const points = out.trials.map((t) => `${t.hyperparameters.x}/${t.hyperparameters.opt}`);
    assert.equal(new Set(points).size, 10, `no point twice: ${points}`);
    assert.deepEqual(out.trials[0].hyperparameters, { x: '3', opt: 'b' });
    assert.deepEqual(out.trials[0].finalMetric, { trainingStep: '2', objectiveValue: 11 });
    const values = out.trials.map((t) => t.finalMetric.objectiveValue);
    assert.deepEqual(values, [...values].sort((a, b) => b - a), 'best first');
    assert.equal(new Set(out.trials.map((t) => t.trialId)).size, 10);
    for (const t of out.trials) {
      assert.equal(t.state, 'SUCCEEDED');
      assert.ok(t.startTime && t.endTime, JSON.stringify(t));
    }
    // Every trial's lines are in the study's log, told apart by their trial id.
    let lines = [];
    await waitFor(async () => {
      lines = (await readJobLog(server.base, 'demo', 'grid_1')).filter((e) => /^trial \d+ x=/.test(e.textPayload));
      return lines.length === 10;
    }, 20_000, "the ten trials' lines in the study's log");
    for (const e of lines)
      assert.equal(e.labels['ml.googleapis.com/trial_id'], /^trial (\d+)/.exec(e.textPayload)[1], JSON.stringify(e));
  });

  it('RANDOM_SEARCH on a log scale, and the default (Bayesian), run maxTrials trials', async () => {
    const LR = { parameterName: 'lr', type: 'DOUBLE', minValue: 0.0001, maxValue: 0.1, scaleType: 'UNIT_LOG_SCALE' };
    await createJob(server.base, 'demo', 'random_1', study({ algorithm: 'RANDOM_SEARCH', maxTrials: 4,
      maxParallelTrials: 2, params: [LR] }));
    await createJob(server.base, 'demo', 'bayes_1', study({ maxTrials: 6, maxParallelTrials: 2,
      params: [X, LR] }));
    for (const id of ['random_1', 'bayes_1']) {
      const done = await waitJobState(server.base, 'demo', id, ['SUCCEEDED', 'FAILED'], 120_000,
        () => agent.stderr().slice(-3000));
      assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
      const trials = done.trainingOutput.trials;
      assert.equal(trials.length, id === 'random_1' ? 4 : 6);
      for (const t of trials) {
        const lr = Number(t.hyperparameters.lr);
        assert.ok(lr >= 0.0001 && lr <= 0.1, `lr ${t.hyperparameters.lr} in range`);
        // A DOUBLE at full precision, as Google writes it: 15 significant
        // digits when they read back exactly, else 17 ("0.072136064767837529").
        // (%.17g drops trailing zeros: 0.08808815904380933 is 17 digits' worth.)
        const g = (p) => lr.toPrecision(p).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
        assert.ok(t.hyperparameters.lr === (Number(g(15)) === lr ? g(15) : g(17)),
          `${t.hyperparameters.lr}: full precision (${g(15)}, ${g(17)})`);
      }
      const values = trials.map((t) => t.finalMetric.objectiveValue);
      assert.deepEqual(values, [...values].sort((a, b) => b - a), 'best first');
    }
  });

  it('failing trials: the job fails at maxFailedTrials, naming the trial and its replica\'s failure', async () => {
    const spec = study({ algorithm: 'GRID_SEARCH', maxTrials: 10, maxParallelTrials: 1, maxFailedTrials: 2,
      params: [X] });
    spec.masterConfig.containerCommand = ['sh', '-c', `: ${MARK}; exit 1`];
    await createJob(server.base, 'demo', 'fail_1', spec);
    const done = await waitJobState(server.base, 'demo', 'fail_1', ['SUCCEEDED', 'FAILED'], 120_000);
    assert.equal(done.state, 'FAILED');
    assert.equal(done.errorMessage, 'Trial 1 failed: The replica master 0 exited with a non-zero status of 1.');
    assert.equal(done.trainingOutput.trials.length, 2, 'no trial after the second failure');
  });

  it('cancel stops every running trial; the job ends CANCELLED', async () => {
    const spec = study({ algorithm: 'GRID_SEARCH', maxTrials: 4, maxParallelTrials: 2, params: [X] });
    spec.masterConfig.containerCommand = ['sh', '-c', `: ${MARK}-cancel; sleep 600`];
    await createJob(server.base, 'demo', 'cancel_1', spec);
    await waitFor(() => pgrep(`${MARK}-cancel`).length >= 2, 60_000, 'two trials running');
    await cancelJob(server.base, 'demo', 'cancel_1');
    await waitJobState(server.base, 'demo', 'cancel_1', 'CANCELLED', 60_000);
    await waitFor(() => pgrep(`${MARK}-cancel`).length === 0, 30_000, 'every trial stopped');
    const j = await getJob(server.base, 'demo', 'cancel_1');
    assert.equal(j.trainingOutput.trials.length, 2);
  });

  it('enableTrialEarlyStopping: a trial worse than the median at its step is stopped, and counted done', async () => {
    // Trials 1-3 report 10 at steps 1 and 2 and end; trial 4 (x=4) reports 1
    // at step 1, then runs until it is stopped.
    const script = `: ${MARK}-early; x=0; for a in "$@"; do case "$a" in --x=*) x=\${a#--x=};; esac; done; ` +
      'f="$CLOUD_ML_HP_METRIC_FILE"; t="$CLOUD_ML_TRIAL_ID"; ' +
      'if [ "$x" = 4 ]; then printf \'{"global_step": "1", "score": "1", "trial": "%s"}\\n\' "$t" > "$f"; ' +
      'while :; do sleep 0.2; done; fi; ' +
      'printf \'{"global_step": "1", "score": "10", "trial": "%s"}\\n{"global_step": "2", "score": "10", "trial": "%s"}\\n\' "$t" "$t" > "$f"';
    const spec = study({ algorithm: 'GRID_SEARCH', maxTrials: 4, maxParallelTrials: 1,
      enableTrialEarlyStopping: true, params: [{ parameterName: 'x', type: 'INTEGER', minValue: 1, maxValue: 4 }] });
    spec.masterConfig.containerCommand = ['sh', '-c', script, 'trainer'];
    await createJob(server.base, 'demo', 'early_1', spec);
    const done = await waitJobState(server.base, 'demo', 'early_1', ['SUCCEEDED', 'FAILED'], 120_000,
      () => agent.stderr().slice(-3000));
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const t4 = done.trainingOutput.trials.find((t) => t.trialId === '4');
    assert.equal(t4.isTrialStoppedEarly, true, JSON.stringify(done.trainingOutput));
    assert.deepEqual(t4.finalMetric, { trainingStep: '1', objectiveValue: 1 });
    assert.equal(done.trainingOutput.trials.at(-1).trialId, '4', 'the worst, last');
    assert.equal(done.trainingOutput.completedTrialCount, '4');
    await waitFor(() => pgrep(`${MARK}-early`).length === 0, 30_000, 'the stopped trial is gone');
  });

  it('resumePreviousJobId: the earlier study\'s trials count and are listed; the new ones go on after them', async () => {
    const LR = { parameterName: 'lr', type: 'DOUBLE', minValue: 0.0001, maxValue: 0.1, scaleType: 'UNIT_LOG_SCALE' };
    await createJob(server.base, 'demo', 'resume_1', study({ algorithm: 'RANDOM_SEARCH', maxTrials: 2,
      maxParallelTrials: 2, resumePreviousJobId: 'random_1', params: [LR] }));
    const done = await waitJobState(server.base, 'demo', 'resume_1', ['SUCCEEDED', 'FAILED'], 120_000);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const earlier = (await getJob(server.base, 'demo', 'random_1')).trainingOutput.trials;
    const ids = done.trainingOutput.trials.map((t) => t.trialId).sort((a, b) => a - b);
    assert.deepEqual(ids, ['1', '2', '3', '4', '5', '6']);
    for (const t of earlier)
      assert.deepEqual(done.trainingOutput.trials.find((x) => x.trialId === t.trialId).hyperparameters, t.hyperparameters);
  });

  it('a study\'s trials are not jobs of the list', async () => {
    const res = await fetch(`${server.base}/v1/projects/demo/jobs?pageSize=100&prettyPrint=false`);
    const ids = (await res.json()).jobs.map((j) => j.jobId).sort();
    assert.deepEqual(ids, ['bayes_1', 'cancel_1', 'early_1', 'fail_1', 'grid_1', 'random_1', 'resume_1']);
  });
});
