// The CLI's side of hyperparameter tuning (issue 26), against a real server
// and a real agent (process runtime) whose trainer parses its --name=value
// flags and writes the metric file named by CLOUD_ML_HP_METRIC_FILE as
// cloudml-hypertune does:
// - ml v1: `ai-platform jobs submit training --config` with Google's
//   trainingInput.hyperparameters block; `describe` of the ended study
//   prints its trainingOutput.trials, byte for byte as gcloud 528 does;
// - Vertex: `ai hp-tuning-jobs create|describe|list|cancel|stream-logs`,
//   the create also through gcloud (the two jobs the server stored are the
//   same), the describe of an ended job byte for byte as gcloud's.
// Each gcloud run costs a second or two of CPU (half a minute under make
// test's load): make test runs three (ml describe, Vertex create, Vertex
// describe), side by side at the end; TRAINPLANE_GCLOUD_FORMAT_FULL=1 (make
// test-gcloud-format) the other three too. Without gcloud they are skipped.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, getJob, killMarked, pgrep, startAgent, waitJobState } from './agents.mjs';
import { GCLOUD, runTo, sameAsGcloud, sideBySideEnv, writeGcloudConfig } from './gcloud.mjs';

const CLI = process.env.TRAINPLANE_CLI_BIN;
const PROJECT = 'hpcli';
const REGION = 'us-central1';
const MARK = `tpmark_${process.pid}_hpcli`;
const FULL = process.env.TRAINPLANE_GCLOUD_FORMAT_FULL === '1';
const skip = (!CLI && 'TRAINPLANE_CLI_BIN is not set') || (!AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set');
const noGcloud = skip || (!GCLOUD && 'gcloud is not installed: no gcloud on the PATH or at /usr/bin/gcloud');
const gcloudFull = noGcloud || (!FULL && 'one of the gcloud runs of make test-gcloud-format (TRAINPLANE_GCLOUD_FORMAT_FULL=1)');

// The trainer: reads --x=N and --opt=a|b, reports accuracy = 10 - (x - 3)^2
// (+ 1 for opt=b) at step 1 through the metric file, and says so.
const TRAINER = `: ${MARK}; x=0; opt=a; for a in "$@"; do case "$a" in ` +
  '--x=*) x=${a#--x=};; --opt=*) opt=${a#--opt=};; esac; done; ' +
  'acc=$(awk -v x="$x" -v o="$opt" \'BEGIN { s = 10 - (x - 3) ^ 2; if (o == "b") s += 1; printf "%.6f", s }\'); ' +
  'printf \'{"accuracy": "%s", "global_step": "1", "trial": "%s", "timestamp": 1.0}\\n\' "$acc" "$CLOUD_ML_TRIAL_ID" ' +
  '> "$CLOUD_ML_HP_METRIC_FILE"; echo "trial $CLOUD_ML_TRIAL_ID x=$x opt=$opt accuracy=$acc"';
// YAML takes a JSON string as a double-quoted scalar.
const COMMAND = JSON.stringify(['sh', '-c', TRAINER, 'trainer']);

// Google's config file shape (cloud.google.com/ml-engine/docs/using-hyperparameter-tuning):
// the whole grid of 2 x 2 x 2 points, 2 trials at a time.
const ML_CONFIG = `trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  masterConfig:
    imageUri: localhost/trainer:test
    containerCommand: ${COMMAND}
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: accuracy
    maxTrials: 8
    maxParallelTrials: 2
    enableTrialEarlyStopping: False
    algorithm: GRID_SEARCH
    params:
    - parameterName: x
      type: INTEGER
      minValue: 2
      maxValue: 3
      scaleType: UNIT_LINEAR_SCALE
    - parameterName: layers
      type: DISCRETE
      discreteValues:
      - 1
      - 2
    - parameterName: opt
      type: CATEGORICAL
      categoricalValues:
      - a
      - b
`;

// gcloud ai hp-tuning-jobs create's --config: a HyperparameterTuningJob.
// --algorithm grid-search and the counts come from the command line.
const VERTEX_CONFIG = (command) => `displayName: from-the-file
studySpec:
  metrics:
  - metricId: accuracy
    goal: MAXIMIZE
  parameters:
  - parameterId: x
    integerValueSpec:
      minValue: 2
      maxValue: 3
  - parameterId: opt
    categoricalValueSpec:
      values: [a, b]
  algorithm: RANDOM_SEARCH
trialJobSpec:
  workerPoolSpecs:
  - machineSpec:
      machineType: n1-standard-4
    replicaCount: 1
    containerSpec:
      imageUri: localhost/trainer:test
      command: ${command}
`;

let pg;
let server;
let agent;
let dir;
let gcloudConfig;
let mlConfig;
let vertexConfig;
let name;	// the Vertex job trainplane created, and its id
let id;
// The flags of both creates (trainplane's, gcloud's).
const FLAGS = ['--region', REGION, '--max-trial-count', '4', '--parallel-trial-count', '2',
  '--algorithm', 'grid-search', '--labels', 'team=ml'];

const env = () => sideBySideEnv(gcloudConfig, server.base, PROJECT);
const tp = (args) => runTo(CLI, args, env(), dir);
const gcloud = (args) => runTo(GCLOUD, args, env(), dir);

/** trainplane ARGS, which must exit 0. */
async function ok(args) {
  const r = await tp(args);
  assert.equal(r.code, 0, `trainplane ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

function write(name, text) {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

const vertexPath = (name) => `/v1/${name}`;

async function getVertex(name) {
  const r = await request(server.base, 'GET', vertexPath(name));
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function waitVertex(name, states, timeoutMs = 90_000) {
  let job;
  await waitFor(async () => {
    job = await getVertex(name);
    return states.includes(job.state);
  }, timeoutMs, `${name} not ${states}: ${JSON.stringify(job)}\n${agent.stderr().slice(-2000)}`, 200);
  return job;
}

/** The job's name from create's message: "Hyperparameter tuning job [ID] submitted successfully." */
function createdName(stderr) {
  const id = /^Hyperparameter tuning job \[(\d+)\] submitted successfully\.$/m.exec(stderr)?.[1];
  assert.ok(id, stderr);
  return `projects/${PROJECT}/locations/${REGION}/hyperparameterTuningJobs/${id}`;
}

describe('the CLI and hyperparameter tuning', { skip }, () => {
  before(async () => {
    dir = makeTempDir('tp-cli-hp-');
    pg = await startPostgres();
    server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '100' } });
    agent = await startAgent(server, { node: 'hpcli-1', dir, region: REGION, vcpus: 64, memoryMb: 262144 });
    gcloudConfig = writeGcloudConfig(dir, server.base, PROJECT);
  });
  after(async () => {
    try {
      await agent?.stop();
      await server?.stop();
    } finally {
      killMarked(MARK);
      agent?.cleanup?.();
      await pg?.cleanup();
    }
  });

  describe('ml v1: submit training with trainingInput.hyperparameters', () => {
    before(() => { mlConfig = write('hp_ml.yaml', ML_CONFIG); });

    it('sends the hyperparameters block; the study runs its trials; describe prints them', async () => {
      const r = await ok(['ai-platform', 'jobs', 'submit', 'training', 'hp_cli', '--config', mlConfig,
        '--region', REGION]);
      assert.match(r.stderr, /^Job \[hp_cli\] submitted successfully\.$/m);
      const submitted = await getJob(server.base, PROJECT, 'hp_cli');
      assert.deepEqual(submitted.trainingInput.hyperparameters, {
        goal: 'MAXIMIZE', hyperparameterMetricTag: 'accuracy', maxTrials: 8, maxParallelTrials: 2,
        algorithm: 'GRID_SEARCH',
        params: [
          { parameterName: 'x', type: 'INTEGER', minValue: 2, maxValue: 3, scaleType: 'UNIT_LINEAR_SCALE' },
          { parameterName: 'layers', type: 'DISCRETE', discreteValues: [1, 2] },
          { parameterName: 'opt', type: 'CATEGORICAL', categoricalValues: ['a', 'b'] },
        ],
      });
      const done = await waitJobState(server.base, PROJECT, 'hp_cli', ['SUCCEEDED'], 90_000,
        () => agent.stderr().slice(-2000));
      assert.equal(done.trainingOutput.trials.length, 8);

      const d = await ok(['ai-platform', 'jobs', 'describe', 'hp_cli']);
      // The whole resource as YAML, the trials best first with their values as strings.
      assert.match(d.stdout, /^trainingOutput:\n {2}completedTrialCount: '8'\n/m);
      assert.match(d.stdout, /^ {2}isHyperparameterTuningJob: true$/m);
      assert.match(d.stdout, /^ {2}trials:\n {2}- endTime: '[^']+'\n {4}finalMetric:\n {6}objectiveValue: 11\.0\n {6}trainingStep: '1'\n {4}hyperparameters:\n {6}layers: '[12]'\n {6}opt: b\n {6}x: '3'\n/m);
      const j = JSON.parse((await ok(['ai-platform', 'jobs', 'describe', 'hp_cli', '--format', 'json'])).stdout);
      const values = j.trainingOutput.trials.map((t) => t.finalMetric.objectiveValue);
      assert.deepEqual(values, [...values].sort((a, b) => b - a), 'best first');
      const table = await ok(['ai-platform', 'jobs', 'describe', 'hp_cli', '--format',
        'table(trainingOutput.trials[0].trialId, trainingOutput.trials[0].hyperparameters.x)']);
      assert.match(table.stdout, /^TRIAL_ID +X\n\d+ +3\n$/);
    });

  });

  describe('Vertex: ai hp-tuning-jobs', () => {
    before(() => { vertexConfig = write('hp_vertex.yaml', VERTEX_CONFIG(COMMAND)); });

    it('create: the --config job with the flags over it; gcloud\'s message; the study ends', async () => {
      const r = await ok(['ai', 'hp-tuning-jobs', 'create', '--display-name', 'cli-tune', '--config', vertexConfig,
        ...FLAGS]);
      name = createdName(r.stderr);
      id = name.split('/').pop();
      assert.equal(r.stdout, '');
      assert.match(r.stderr, new RegExp(`^Hyperparameter tuning job \\[${id}\\] submitted successfully\\.\\n\\n` +
        'Your job is still active\\. You may view the status of your job with the command\\n\\n' +
        `  \\$ trainplane ai hp-tuning-jobs describe ${id} --region=${REGION}\\n\\n` +
        'Job State: JOB_STATE_(QUEUED|PENDING)\\n$'));
      const job = await getVertex(name);
      assert.equal(job.displayName, 'cli-tune');
      assert.equal(job.maxTrialCount, 4);
      assert.equal(job.parallelTrialCount, 2);
      assert.equal(job.studySpec.algorithm, 'GRID_SEARCH');
      assert.deepEqual(job.labels, { team: 'ml' });
      assert.deepEqual(job.trialJobSpec.workerPoolSpecs[0].containerSpec.command, JSON.parse(COMMAND));
      const done = await waitVertex(name, ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED']);
      assert.equal(done.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(done));
      assert.equal(done.trials.length, 4);
    });

    it('describe prints the trials; --format picks from them', async () => {
      const d = await ok(['ai', 'hp-tuning-jobs', 'describe', id, '--region', REGION]);
      assert.match(d.stdout, new RegExp(`^name: ${name}$`, 'm'));
      assert.match(d.stdout, /^state: JOB_STATE_SUCCEEDED$/m);
      assert.match(d.stdout, /^trials:\n- customJob: projects\/\S+\/customJobs\/\d+\n {2}endTime: /m);
      // a double as gcloud reads it through the message: 11.0
      assert.match(d.stdout, /^ {2}finalMeasurement:\n {4}metrics:\n {4}- metricId: accuracy\n {6}value: \d+\.\d+\n {4}stepCount: '1'\n/m);
      const j = JSON.parse((await ok(['ai', 'hp-tuning-jobs', 'describe', name, '--format', 'json'])).stdout);
      assert.equal(j.trials.length, 4);
      for (const t of j.trials) {
        assert.equal(t.state, 'SUCCEEDED');
        assert.equal(t.finalMeasurement.metrics[0].metricId, 'accuracy');
        const x = t.parameters.find((p) => p.parameterId === 'x').value;
        const opt = t.parameters.find((p) => p.parameterId === 'opt').value;
        assert.equal(t.finalMeasurement.metrics[0].value, 10 - (x - 3) ** 2 + (opt === 'b' ? 1 : 0), JSON.stringify(t));
      }
      const v = await ok(['ai', 'hp-tuning-jobs', 'describe', id, '--region', REGION, '--format',
        'value(trials.len(), state, studySpec.algorithm)']);
      assert.equal(v.stdout, '4\tJOB_STATE_SUCCEEDED\tGRID_SEARCH\n');
    });

    it('list: the default table, --filter, --format, --uri', async () => {
      const l = await ok(['ai', 'hp-tuning-jobs', 'list', '--region', REGION]);
      assert.match(l.stdout, /^HP_TUNING_JOB_ID +DISPLAY_NAME +STATE +CREATED\n/);
      assert.match(l.stdout, new RegExp(`^${id} +cli-tune +JOB_STATE_SUCCEEDED +\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`, 'm'));
      const f = await ok(['ai', 'hp-tuning-jobs', 'list', '--region', REGION, '--filter', 'displayName=cli-tune',
        '--format', 'value(name.basename(), labels.team, trials.len())']);
      assert.equal(f.stdout, `${id}\tml\t4\n`);
      const u = await ok(['ai', 'hp-tuning-jobs', 'list', '--region', REGION, '--filter', 'displayName:cli-*', '--uri']);
      assert.equal(u.stdout, `${server.base}/v1/${name}\n`);
      const none = await ok(['ai', 'hp-tuning-jobs', 'list', '--region', 'europe-west4']);
      assert.equal(none.stdout, '');
      assert.equal(none.stderr, 'Listed 0 items.\n');
    });

    it('stream-logs prints every trial\'s lines and exits 0 for the succeeded job', async () => {
      const s = await ok(['ai', 'hp-tuning-jobs', 'stream-logs', name, '--polling-interval', '0.3']);
      const trials = s.stdout.split('\n').filter((l) => /\ttrial \d+ x=\d opt=[ab] accuracy=/.test(l));
      assert.equal(trials.length, 4, s.stdout);
    });

    it('cancel: a running job ends JOB_STATE_CANCELLED, its trials stopped; stream-logs then exits 1', async () => {
      const block = JSON.stringify(['sh', '-c', `: ${MARK}-cancel; sleep 600`]);
      const c = write('hp_cancel.yaml', VERTEX_CONFIG(block));
      const r = await ok(['ai', 'hp-tuning-jobs', 'create', '--display-name', 'cli-cancel', '--config', c,
        '--region', REGION, '--max-trial-count', '3', '--parallel-trial-count', '2']);
      const cname = createdName(r.stderr);
      const cid = cname.split('/').pop();
      await waitFor(() => pgrep(`${MARK}-cancel`).length >= 2, 60_000, 'two trials running');
      const x = await ok(['ai', 'hp-tuning-jobs', 'cancel', cid, '--region', REGION]);
      assert.equal(x.stderr, `Request to cancel hyperparameter tuning job [${cid}] has been sent.\n\n` +
        'You may view the status of your job with the command\n\n' +
        `  $ trainplane ai hp-tuning-jobs describe ${cid} --region=${REGION}\n`);
      const done = await waitVertex(cname, ['JOB_STATE_CANCELLED']);
      assert.equal(done.error?.code, 1, JSON.stringify(done));
      await waitFor(() => pgrep(`${MARK}-cancel`).length === 0, 30_000, 'every trial stopped');
      const s = await tp(['ai', 'hp-tuning-jobs', 'stream-logs', cname, '--polling-interval', '0.3']);
      assert.equal(s.code, 1, s.stdout + s.stderr);
    });

    it('bad input exits 2 and sends nothing; a missing job exits 1 with gcloud\'s message', async () => {
      const bad = write('hp_bad.yaml', 'studySpec:\n  metrics:\n  - metricId: a\n    goal: BIGGER\n');
      const cases = [
        [['ai', 'hp-tuning-jobs', 'create', '--region', REGION, '--config', vertexConfig], /argument --display-name: Must be specified\./],
        [['ai', 'hp-tuning-jobs', 'create', '--region', REGION, '--display-name', 'x'], /argument --config: Must be specified\./],
        [['ai', 'hp-tuning-jobs', 'create', '--display-name', 'x', '--config', vertexConfig], /argument --region: Must be specified\./],
        [['ai', 'hp-tuning-jobs', 'create', '--region', REGION, '--display-name', 'x', '--config', bad],
          /hp_bad\.yaml:4:11: goal must be one of \[GOAL_TYPE_UNSPECIFIED, MAXIMIZE, MINIMIZE\], not \[BIGGER\]/],
        [['ai', 'hp-tuning-jobs', 'create', '--region', REGION, '--display-name', 'x', '--config', vertexConfig,
          '--algorithm', 'bayes'], /argument --algorithm: Invalid choice: 'bayes'\. Valid choices are \[algorithm-unspecified, grid-search, random-search\]\./],
        [['ai', 'hp-tuning-jobs', 'create', '--region', REGION, '--display-name', 'x', '--config', vertexConfig,
          '--parallel-trial-count', '0'], /argument --parallel-trial-count: Value must be an integer from 1 to 2147483647; received: 0/],
        [['ai', 'hp-tuning-jobs', 'describe', '12'], /Failed to find attribute \[region\]/],
        [['ai', 'hp-tuning-jobs', 'cancel', 'projects/p/locations/l/customJobs/1'], /Invalid HyperparameterTuningJob name/],
        [['ai', 'hp-tuning-jobs', 'frobnicate'], /Invalid choice: 'frobnicate'/],
      ];
      const before = (await ok(['ai', 'hp-tuning-jobs', 'list', '--region', REGION, '--format', 'value(name)'])).stdout;
      for (const [args, re] of cases) {
        const r = await tp(args);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^ERROR: \(trainplane\.ai\.hp-tuning-jobs(\.\w+)?\) /);
        assert.match(r.stderr, re);
      }
      const afterList = (await ok(['ai', 'hp-tuning-jobs', 'list', '--region', REGION, '--format', 'value(name)'])).stdout;
      assert.equal(afterList, before, 'nothing was created');
      const nf = await tp(['ai', 'hp-tuning-jobs', 'describe', '987654321', '--region', REGION]);
      assert.equal(nf.code, 1);
      assert.match(nf.stderr, /^ERROR: \(trainplane\.ai\.hp-tuning-jobs\.describe\) NOT_FOUND: The HyperparameterTuningJob "projects\/\S+\/hyperparameterTuningJobs\/987654321" does not exist\.\n/);
    });

  });

  // Each gcloud run costs a second or two of CPU, and many more seconds under
  // make test's load: they run side by side, once both studies have ended.
  describe('against gcloud 528', { skip: noGcloud, concurrency: 6 }, () => {
    it('describe of the ended study prints what gcloud prints', async () => {
      await sameAsGcloud(CLI, ['ai-platform', 'jobs', 'describe', 'hp_cli'], env());
    });

    it('gcloud submits the same file: the server stores the same trainingInput', { skip: gcloudFull }, async () => {
      const g = await gcloud(['ai-platform', 'jobs', 'submit', 'training', 'hp_gcloud', '--config', mlConfig,
        '--region', REGION]);
      assert.equal(g.code, 0, g.stderr);
      const ours = await getJob(server.base, PROJECT, 'hp_cli');
      const theirs = await getJob(server.base, PROJECT, 'hp_gcloud');
      assert.deepEqual(theirs.trainingInput, ours.trainingInput);
      await ok(['ai-platform', 'jobs', 'cancel', 'hp_gcloud']);
    });

    it('describe of the ended job prints what gcloud prints', async () => {
      await sameAsGcloud(CLI, ['ai', 'hp-tuning-jobs', 'describe', id, '--region', REGION], env());
    });

    it('gcloud creates the same job from the same file and flags', async () => {
      const g = await gcloud(['ai', 'hp-tuning-jobs', 'create', '--display-name', 'gcloud-tune', '--config', vertexConfig,
        ...FLAGS]);
      assert.equal(g.code, 0, g.stderr);
      const gname = createdName(g.stderr);
      const gid = gname.split('/').pop();
      // gcloud's message is trainplane's, with gcloud for trainplane.
      assert.match(g.stderr, new RegExp(`^Hyperparameter tuning job \\[${gid}\\] submitted successfully\\.\\n\\n` +
        'Your job is still active\\. You may view the status of your job with the command\\n\\n' +
        `  \\$ gcloud ai hp-tuning-jobs describe ${gid} --region=${REGION}\\n\\n` +
        'Job State: JOB_STATE_(QUEUED|PENDING)\\n$', 'm'));
      const theirs = await getVertex(gname);
      const ours = await getVertex(name);
      for (const k of ['studySpec', 'maxTrialCount', 'parallelTrialCount', 'maxFailedTrialCount', 'trialJobSpec', 'labels']) {
        assert.deepEqual(theirs[k], ours[k], k);
      }
      assert.equal(theirs.displayName, 'gcloud-tune');
    });

    it('gcloud\'s error for a missing job is the same', { skip: gcloudFull }, async () => {
      const args = ['ai', 'hp-tuning-jobs', 'describe', '987654321', '--region', REGION];
      const [g, t] = await Promise.all([gcloud(args), tp(args)]);
      assert.equal(t.code, g.code);
      // but for what gcloud adds because its configuration sends no credentials
      const first = (s) => s.split('\n').find((l) => l.startsWith('ERROR:')).replace(/\(gcloud\./, '(trainplane.')
        .replace(' This command is unauthenticated because the [auth/disable_credentials] property is True.', '');
      assert.equal(first(t.stderr), first(g.stderr));
    });

    it('list --format yaml prints what gcloud prints', { skip: gcloudFull }, async () => {
      await sameAsGcloud(CLI, ['ai', 'hp-tuning-jobs', 'list', '--region', REGION, '--format', 'yaml',
        '--filter', 'displayName=cli-tune'], env());
    });
  });
});
