// The trainplane CLI (build/trainplane) against a real server and a real
// agent (process runtime): submit with a config.yaml and `--` args, follow
// the log to the job's end (exit 0 / non-zero), describe, list, update
// labels, cancel, nodes, and the client-side refusals (exit 2, nothing sent);
// `ai custom-jobs` (Vertex): a two-pool job from --worker-pool-spec flags
// and one from a --config CustomJobSpec, stream-logs to their end (exit 0 /
// non-zero), describe, list (--filter, --sort-by, --limit), cancel.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, getJob, startAgent, waitJobState } from './agents.mjs';

const CLI = process.env.TRAINPLANE_CLI_BIN;
const PROJECT = 'clitest';

function run(args, { env = {}, timeoutMs = 60_000, onStdout = null } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI, args, {
      env: { ...process.env, TRAINPLANE_PROJECT: PROJECT, TRAINPLANE_ENDPOINT: server.base + '/', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; onStdout?.(stdout); });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`timeout: ${args.join(' ')}\n${stdout}\n${stderr}`)); }, timeoutMs);
    // 'close', not 'exit': stdout may still hold data when the process has exited.
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

let pg;
let server;
let agent;
let dir;

function writeConfig(name, text) {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

function processJobYaml(script) {
  return [
    'trainingInput:',
    '  scaleTier: BASIC',
    '  masterConfig:',
    '    imageUri: localhost/trainer:test',
    `    containerCommand: [sh, -c, '${script}']`,
    '',
  ].join('\n');
}

describe('trainplane CLI', { skip: !CLI || !AGENT_BIN ? 'TRAINPLANE_CLI_BIN / TRAINPLANE_AGENT_BIN not set' : false }, () => {
  before(async () => {
    dir = makeTempDir('tp-cli-');
    pg = await startPostgres();
    server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' } });
    agent = await startAgent(server, { node: 'cli-node-1', dir, gpuType: 'NVIDIA_TESLA_T4', gpuCount: 2 });
  });
  after(async () => {
    if (agent) await agent.stop();
    if (server) await server.stop();
    if (pg) await pg.cleanup();
  });

  it('submits, streams the log of a succeeding job to its end and exits 0', async () => {
    const cfg = writeConfig('ok.yaml', processJobYaml('echo hello-from-cli; echo line-two'));
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_ok', '--config', cfg,
      '--region', 'us-central1', '--labels', 'team=a,env=dev', '--stream-logs', '--polling-interval', '0.3']);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /Job \[cli_ok\] submitted successfully\./);
    assert.match(r.stdout, /^INFO\t\S+\tmaster-replica-0\t\thello-from-cli\n.*line-two/m);
    assert.equal(r.stdout.match(/hello-from-cli/g).length, 1);
    assert.match(r.stdout, /state: SUCCEEDED/);
    const j = await getJob(server.base, PROJECT, 'cli_ok');
    assert.deepEqual(j.labels, { team: 'a', env: 'dev' });
    // an ended job's log, one task's or another's
    const s = await run(['ai-platform', 'jobs', 'stream-logs', 'cli_ok', '--task-name', 'master-replica-0']);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /hello-from-cli/);
    const none = await run(['ai-platform', 'jobs', 'stream-logs', 'cli_ok', '--task-name', 'worker-replica-7']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '');
  });

  it('sends the arguments after `--` as trainingInput.args, flags over the config', async () => {
    const cfg = writeConfig('args.yaml', 'trainingInput:\n  scaleTier: BASIC\n  region: europe-west1\n'
      + '  args: [--from-config]\n  masterConfig:\n    imageUri: localhost/old:1\n');
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_args', '--config', cfg, '--async',
      '--region', 'us-central1', '--master-image-uri', 'localhost/new:2', '--', 'arg1', 'two words']);
    assert.equal(r.code, 0, r.stderr);
    const j = await getJob(server.base, PROJECT, 'cli_args');
    assert.deepEqual(j.trainingInput.args, ['arg1', 'two words']);
    assert.equal(j.trainingInput.region, 'us-central1');
    assert.equal(j.trainingInput.masterConfig.imageUri, 'localhost/new:2');
    await run(['ai-platform', 'jobs', 'cancel', 'cli_args']);
  });

  it('a --config file takes every field the server takes: scheduling.strategy (issue 17)', async () => {
    // The CLI reads --config through the server's descriptors; it used to
    // refuse scheduling.strategy as an unknown field the server accepts.
    const cfg = writeConfig('strategy.yaml', 'trainingInput:\n  scaleTier: BASIC\n  region: us-central1\n'
      + '  masterConfig:\n    imageUri: localhost/trainer:test\n  scheduling:\n    strategy: LOW_COST\n');
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_strategy', '--config', cfg, '--async']);
    assert.equal(r.code, 0, r.stderr);
    const j = await getJob(server.base, PROJECT, 'cli_strategy');
    assert.deepEqual(j.trainingInput.scheduling, { strategy: 'LOW_COST' });
    await run(['ai-platform', 'jobs', 'cancel', 'cli_strategy']);
    const bad = writeConfig('badenum.yaml', 'trainingInput:\n  scheduling:\n    strategy: CHEAPEST\n');
    const b = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_badenum', '--config', bad, '--async']);
    assert.equal(b.code, 2, b.stderr);
    assert.match(b.stderr, /badenum\.yaml:3:15: strategy must be one of \[STRATEGY_UNSPECIFIED, ON_DEMAND, LOW_COST\], not \[CHEAPEST\]/);
  });

  it('stream-logs exits non-zero for a failing job', async () => {
    const cfg = writeConfig('fail.yaml', processJobYaml('echo about-to-fail; exit 3'));
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_fail', '--config', cfg,
      '--region', 'us-central1', '--async']);
    assert.equal(r.code, 0, r.stderr);
    const s = await run(['ai-platform', 'jobs', 'stream-logs', 'cli_fail', '--polling-interval', '0.3']);
    assert.notEqual(s.code, 0, s.stdout + s.stderr);
    assert.match(s.stdout, /about-to-fail/);
    assert.match(s.stdout, /Job failed\. The replica master 0 exited with a non-zero status of 3\./);
  });

  it('stream-logs shows a line that reached the server after later ones (an agent shipping late)', async () => {
    const marker = path.join(dir, 'late-go');
    const cfg = writeConfig('late.yaml', processJobYaml(`echo started; while [ ! -e ${marker} ]; do sleep 0.1; done; echo finished`));
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_late', '--config', cfg,
      '--region', 'us-central1', '--async']);
    assert.equal(r.code, 0, r.stderr);
    let out = '';
    const streaming = run(['ai-platform', 'jobs', 'stream-logs', 'cli_late', '--polling-interval', '0.2'],
      { onStdout: (s) => { out = s; } });
    await waitFor(() => /\tstarted$/m.test(out), 30_000, 'stream-logs printed the first line');
    // A line written before everything streamed so far reaches the server
    // only now, as an agent that was cut off ships it at its next sync.
    pg.psql("INSERT INTO log_entries (job, task, attempt, stream, time, text) SELECT id, " +
      "'master-replica-0', 1, 'stdout', create_time, 'shipped-late' FROM jobs WHERE job_id = 'cli_late'");
    fs.writeFileSync(marker, '');
    const s = await streaming;
    assert.equal(s.code, 0, s.stdout + s.stderr);
    assert.match(s.stdout, /\tshipped-late$/m, 'the late line is shown');
    assert.match(s.stdout, /\tfinished$/m);
    assert.equal(s.stdout.match(/\tstarted$/mg).length, 1, 'no line twice');
  });

  it('describes, lists and filters', async () => {
    const d = await run(['ai-platform', 'jobs', 'describe', 'cli_ok']);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, /^jobId: cli_ok$/m);
    assert.match(d.stdout, /^state: SUCCEEDED$/m);
    assert.match(d.stdout, /^  region: us-central1$/m);
    // gcloud's trailer on stderr, pointing at the server instead of the Cloud Console.
    assert.equal(d.stderr, `\nView job at:\n${server.base}/v1/projects/${PROJECT}/jobs/cli_ok\n\n` +
      'View logs with:\n  $ trainplane ai-platform jobs stream-logs cli_ok\n');
    const dj = await run(['ai-platform', 'jobs', 'describe', 'cli_ok', '--format', 'json']);
    assert.equal(JSON.parse(dj.stdout).jobId, 'cli_ok');
    const l = await run(['ai-platform', 'jobs', 'list']);
    assert.equal(l.code, 0, l.stderr);
    assert.match(l.stdout, /^JOB_ID\s+STATUS\s+CREATED/);
    assert.match(l.stdout, /cli_ok\s+SUCCEEDED/);
    assert.match(l.stdout, /cli_fail\s+FAILED/);
    const f = await run(['ai-platform', 'jobs', 'list', '--filter', 'state=FAILED', '--format', 'json']);
    assert.equal(f.code, 0, f.stderr);
    const failed = JSON.parse(f.stdout);
    assert.ok(failed.some((j) => j.jobId === 'cli_fail'), f.stdout);
    assert.ok(failed.every((j) => j.state === 'FAILED'), f.stdout);
    const lim = await run(['ai-platform', 'jobs', 'list', '--limit', '1', '--format', 'json']);
    assert.equal(JSON.parse(lim.stdout).length, 1);
  });

  it('updates labels (GET then PATCH updateMask=labels)', async () => {
    const r = await run(['ai-platform', 'jobs', 'update', 'cli_ok', '--update-labels', 'owner=bob,team=b',
      '--remove-labels', 'env']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Updated ml engine job \[cli_ok\]\./);
    const res = await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs/cli_ok`);
    assert.deepEqual(res.json.labels, { team: 'b', owner: 'bob' });
  });

  it('cancels a running job', async () => {
    const cfg = writeConfig('long.yaml', processJobYaml('sleep 60'));
    const r = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_long', '--config', cfg,
      '--region', 'us-central1']);
    assert.equal(r.code, 0, r.stderr);
    const c = await run(['ai-platform', 'jobs', 'cancel', 'cli_long']);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(c.stdout, '');
    await waitJobState(server.base, PROJECT, 'cli_long', ['CANCELLED'], 30_000);
  });

  it('renders server errors like gcloud and exits 1', async () => {
    const nf = await run(['ai-platform', 'jobs', 'describe', 'no_such_job']);
    assert.equal(nf.code, 1);
    assert.match(nf.stderr, /^ERROR: \(trainplane\.ai-platform\.jobs\.describe\) Job instance \[no_such_job\] not found: /);
    const cfg = writeConfig('ok2.yaml', processJobYaml('true'));
    const dup = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_ok', '--config', cfg, '--region', 'us-central1']);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /^ERROR: \(trainplane\.ai-platform\.jobs\.submit\.training\) Resource in projects \[clitest\] is the subject of a conflict: /);
    const bad = await run(['ai-platform', 'jobs', 'submit', 'training', 'cli_bad_region', '--config', cfg, '--region', 'mars-central1']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /INVALID_ARGUMENT: /);
  });

  it('refuses bad input with exit 2 and sends nothing', async () => {
    const before = (await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs?pageSize=100`)).json.jobs.length;
    const bad = writeConfig('bad.yaml', 'trainingInput:\n  scaleTier: [CUSTOM\n');
    const unknown = writeConfig('unknown.yaml', 'trainingInput:\n  scaleTeir: CUSTOM\n');
    const cases = [
      [['ai-platform', 'jobs', 'submit', 'training', 'x1', '--bogus'], /unrecognized arguments: --bogus/],
      [['ai-platform', 'jobs', 'submit', 'training', 'x2', '--master-image-uri', 'i', '--region', 'us-central1',
        '--master-accelerator', 'count=4'], /--master-accelerator: Key \[type\] required/],
      [['ai-platform', 'jobs', 'submit', 'training', 'x3', '--config', bad], /bad\.yaml:3:1: invalid YAML/],
      [['ai-platform', 'jobs', 'submit', 'training', 'x4', '--config', unknown], /unknown\.yaml:2:3: unknown field \[scaleTeir\]/],
      [['ai-platform', 'jobs', 'frobnicate'], /Invalid choice: 'frobnicate'/],
    ];
    for (const [args, re] of cases) {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
    const after = (await request(server.base, 'GET', `/v1/projects/${PROJECT}/jobs?pageSize=100`)).json.jobs.length;
    assert.equal(after, before);
    for (const args of [['--help'], ['ai-platform', 'jobs', 'submit', 'training', '--help'],
      ['ai-platform', 'jobs', 'list', '--help'], ['nodes', 'drain', '--help']]) {
      const h = await run(args);
      assert.equal(h.code, 0, args.join(' '));
      if (args.length === 1) {
        assert.match(h.stdout, /Usage: trainplane/);
      } else {
        // gcloud's help page: NAME, SYNOPSIS, DESCRIPTION, FLAGS (each with its line), EXAMPLES
        assert.match(h.stdout, /^NAME\n {4}trainplane \S.* - .+\n\nSYNOPSIS\n {4}trainplane /);
        assert.match(h.stdout, /\nDESCRIPTION\n {4}\S/);
        assert.match(h.stdout, /\nGLOBAL FLAGS\n {4}--endpoint=URL\n {8}\S/);
        assert.match(h.stdout, /\nEXAMPLES\n[^]*\$ trainplane /);
      }
    }
  });

  it('lists, drains and undrains nodes', async () => {
    const l = await run(['nodes', 'list']);
    assert.equal(l.code, 0, l.stderr);
    assert.match(l.stdout, /^NAME\s+ZONE\s+STATE\s+VCPUS\s+MEMORY\s+ACCELERATORS\s+RUNTIME\s+REPLICAS\n/);
    // VCPUS and MEMORY are free/total, as ACCELERATORS.
    assert.match(l.stdout, /cli-node-1\s+us-central1-a\s+READY\s+\d+\/16\s+\d+(\.\d)? GiB\/60 GiB\s+NVIDIA_TESLA_T4 \d\/2\s+process/);
    const d = await run(['nodes', 'drain', 'cli-node-1']);
    assert.equal(d.code, 0, d.stderr);
    const j = await run(['nodes', 'list', '--format', 'json']);
    assert.equal(JSON.parse(j.stdout).find((n) => n.name === 'cli-node-1').state, 'DRAINING');
    const u = await run(['nodes', 'undrain', 'cli-node-1']);
    assert.equal(u.code, 0, u.stderr);
    const nf = await run(['nodes', 'drain', 'no-such-node']);
    assert.equal(nf.code, 1);
    assert.match(nf.stderr, /Node instance \[no-such-node\] not found/);
  });
  // --- ai custom-jobs -------------------------------------------------------

  const REGION = 'us-central1';
  const NAME_RE = /^CustomJob \[(projects\/clitest\/locations\/us-central1\/customJobs\/(\d+))\] is submitted successfully\.$/m;
  const vertexJobs = {};

  async function countCustomJobs() {
    const res = await request(server.base, 'GET', `/v1/projects/${PROJECT}/locations/${REGION}/customJobs?pageSize=1000`);
    return (res.json.customJobs ?? []).length;
  }

  it('ai custom-jobs create: two pools from --worker-pool-spec, stream-logs to success, exit 0', async () => {
    const r = await run(['ai', 'custom-jobs', 'create', '--region', REGION, '--display-name', 'cli-two-pools',
      '--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,accelerator-type=NVIDIA_TESLA_T4,'
        + 'container-image-uri=localhost/trainer:test',
      '--worker-pool-spec=machine-type=n1-standard-4,replica-count=2,container-image-uri=localhost/trainer:test',
      '--command=sh,-c,echo vertex-hello-$CLOUD_ML_JOB_ID; echo second-line',
      '--labels=team=ml']);
    assert.equal(r.code, 0, r.stderr);
    const m = r.stderr.match(NAME_RE);
    assert.ok(m, r.stderr);
    const [, name, id] = m;
    assert.match(r.stderr, new RegExp(`\\$ trainplane ai custom-jobs describe ${name}\\n`));
    assert.match(r.stderr, new RegExp(`\\$ trainplane ai custom-jobs stream-logs ${name}\\n`));
    assert.equal(r.stdout, '');
    vertexJobs.ok = { name, id };
    // the body gcloud sends: int64 replicaCount as strings, --command on every pool
    const j = (await request(server.base, 'GET', `/v1/${name}`)).json;
    assert.equal(j.displayName, 'cli-two-pools');
    assert.deepEqual(j.labels, { team: 'ml' });
    assert.deepEqual(j.jobSpec.workerPoolSpecs.map((p) => [p.machineSpec, p.replicaCount]), [
      [{ machineType: 'n1-standard-4', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1 }, '1'],
      [{ machineType: 'n1-standard-4' }, '2']]);
    for (const p of j.jobSpec.workerPoolSpecs) {
      assert.deepEqual(p.containerSpec, { imageUri: 'localhost/trainer:test',
        command: ['sh', '-c', 'echo vertex-hello-$CLOUD_ML_JOB_ID; echo second-line'] });
    }

    const s = await run(['ai', 'custom-jobs', 'stream-logs', name, '--polling-interval', '0.3']);
    assert.equal(s.code, 0, s.stdout + s.stderr);
    for (const task of ['workerpool0-0', 'workerpool1-0', 'workerpool1-1']) {
      assert.match(s.stdout, new RegExp(`^INFO\\t\\S+\\t${task}\\t\\tvertex-hello-`, 'm'), s.stdout);
    }
    assert.equal(s.stdout.match(/second-line/g).length, 3, s.stdout);

    const d = await run(['ai', 'custom-jobs', 'describe', id, '--region', REGION]);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, new RegExp(`^name: ${name}$`, 'm'));
    assert.match(d.stdout, /^state: JOB_STATE_SUCCEEDED$/m);
    assert.match(d.stdout, /^displayName: cli-two-pools$/m);
    assert.match(d.stdout, /^    replicaCount: '2'$/m);
    const dj = await run(['ai', 'custom-jobs', 'describe', name, '--format', 'json']);
    assert.equal(dj.code, 0, dj.stderr);
    assert.equal(JSON.parse(dj.stdout).state, 'JOB_STATE_SUCCEEDED');
  });

  it('ai custom-jobs create --config: a CustomJobSpec file, flags over it; stream-logs exits non-zero on failure', async () => {
    const cfg = writeConfig('spec.yaml', [
      'workerPoolSpecs:',
      '  - machineSpec: {machineType: n1-standard-4}',
      '    replicaCount: 1',
      '    containerSpec:',
      '      imageUri: localhost/trainer:test',
      "      command: [sh, -c, 'echo about-to-fail-$FOO; exit 3']",
      '      args: [--from-file]',
      '      env: [{name: FOO, value: bar}]',
      '  -',
      '  - machineSpec: {machineType: n1-standard-4}',
      '    replicaCount: 1',
      '    containerSpec:',
      '      imageUri: localhost/trainer:test',
      "      command: [sh, -c, 'echo pool2-ran']",
      'scheduling: {timeout: 600s}',
      '',
    ].join('\n'));
    const r = await run(['ai', 'custom-jobs', 'create', '--region', REGION, '--display-name', 'cli-failing',
      '--config', cfg, '--args=--from-flag']);
    assert.equal(r.code, 0, r.stderr);
    const [, name, id] = r.stderr.match(NAME_RE);
    vertexJobs.fail = { name, id };
    const j = (await request(server.base, 'GET', `/v1/${name}`)).json;
    assert.equal(j.jobSpec.workerPoolSpecs.length, 3);
    assert.deepEqual(j.jobSpec.workerPoolSpecs[1], {});
    assert.deepEqual(j.jobSpec.workerPoolSpecs[0].containerSpec.args, ['--from-flag']);
    assert.deepEqual(j.jobSpec.workerPoolSpecs[0].containerSpec.env, [{ name: 'FOO', value: 'bar' }]);
    assert.equal(j.jobSpec.scheduling.timeout, '600s');

    const s = await run(['ai', 'custom-jobs', 'stream-logs', id, '--region', REGION, '--polling-interval', '0.3']);
    assert.notEqual(s.code, 0, s.stdout + s.stderr);
    assert.match(s.stdout, /^\S+\t\S+\tworkerpool0-0\t\tabout-to-fail-bar$/m);
    const d = await run(['ai', 'custom-jobs', 'describe', name, '--format', 'json']);
    assert.equal(JSON.parse(d.stdout).state, 'JOB_STATE_FAILED');
  });

  it('ai custom-jobs list: table, --filter, --sort-by, --limit', async () => {
    const l = await run(['ai', 'custom-jobs', 'list', '--region', REGION]);
    assert.equal(l.code, 0, l.stderr);
    assert.match(l.stdout, /^CUSTOM_JOB_ID\s+DISPLAY_NAME\s+STATE\s+CREATED$/m);
    assert.match(l.stdout, new RegExp(`^${vertexJobs.ok.id}\\s+cli-two-pools\\s+JOB_STATE_SUCCEEDED\\s+\\S+$`, 'm'));
    assert.match(l.stdout, new RegExp(`^${vertexJobs.fail.id}\\s+cli-failing\\s+JOB_STATE_FAILED\\s+\\S+$`, 'm'));
    const f = await run(['ai', 'custom-jobs', 'list', '--region', REGION, '--filter', 'state=JOB_STATE_FAILED',
      '--format', 'json']);
    assert.equal(f.code, 0, f.stderr);
    assert.deepEqual(JSON.parse(f.stdout).map((j) => j.name), [vertexJobs.fail.name]);
    const byName = await run(['ai', 'custom-jobs', 'list', '--region', REGION, '--sort-by', 'displayName',
      '--format', 'json']);
    assert.deepEqual(JSON.parse(byName.stdout).map((j) => j.displayName), ['cli-failing', 'cli-two-pools']);
    const rev = await run(['ai', 'custom-jobs', 'list', '--region', REGION, '--sort-by=~displayName',
      '--format', 'json']);
    assert.deepEqual(JSON.parse(rev.stdout).map((j) => j.displayName), ['cli-two-pools', 'cli-failing']);
    // sort before limit: the oldest one, although the server lists newest first
    const oldest = await run(['ai', 'custom-jobs', 'list', '--region', REGION, '--sort-by', 'createTime',
      '--limit', '1', '--format', 'json']);
    assert.deepEqual(JSON.parse(oldest.stdout).map((j) => j.name), [vertexJobs.ok.name]);
    const none = await run(['ai', 'custom-jobs', 'list', '--region', 'europe-west4']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /Listed 0 items\./);
    // and the other list commands sort too
    const jobs = await run(['ai-platform', 'jobs', 'list', '--sort-by', '~jobId', '--format', 'json']);
    const jobIds = JSON.parse(jobs.stdout).map((j) => j.jobId);
    assert.deepEqual(jobIds, [...jobIds].sort().reverse());
    assert.ok(jobIds.length >= 3);
  });

  it('ai custom-jobs cancel: a running job ends JOB_STATE_CANCELLED; its stream-logs exits non-zero', async () => {
    const r = await run(['ai', 'custom-jobs', 'create', '--region', REGION, '--display-name', 'cli-long',
      '--worker-pool-spec=machine-type=n1-standard-4,container-image-uri=localhost/trainer:test',
      '--command=sh,-c,echo started; sleep 60']);
    assert.equal(r.code, 0, r.stderr);
    const [, name, id] = r.stderr.match(NAME_RE);
    await waitFor(async () => (await request(server.base, 'GET', `/v1/${name}`)).json.state === 'JOB_STATE_RUNNING',
      30_000, `${name} did not start`);
    const c = await run(['ai', 'custom-jobs', 'cancel', id, '--region', REGION]);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(c.stdout, '');
    assert.match(c.stderr, new RegExp(`^Request to cancel CustomJob \\[${name}\\] has been sent\\.\\n`));
    const s = await run(['ai', 'custom-jobs', 'stream-logs', name, '--polling-interval', '0.3']);
    assert.notEqual(s.code, 0, s.stdout + s.stderr);
    const j = (await request(server.base, 'GET', `/v1/${name}`)).json;
    assert.equal(j.state, 'JOB_STATE_CANCELLED');
    const again = await run(['ai', 'custom-jobs', 'cancel', name]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^ERROR: \(trainplane\.ai\.custom-jobs\.cancel\) /);
  });

  it('ai custom-jobs: server errors exit 1, bad input exits 2 and sends nothing, --help', async () => {
    const nf = await run(['ai', 'custom-jobs', 'describe', '987654321', '--region', REGION]);
    assert.equal(nf.code, 1);
    // as gcloud's `ai` commands print a Vertex error: its status and message
    assert.match(nf.stderr, /^ERROR: \(trainplane\.ai\.custom-jobs\.describe\) NOT_FOUND: The CustomJob "projects\/\S+\/customJobs\/987654321" does not exist\./);
    const badRegion = await run(['ai', 'custom-jobs', 'create', '--region', 'mars-central1', '--display-name', 'x',
      '--worker-pool-spec=machine-type=n1-standard-4,container-image-uri=i']);
    assert.equal(badRegion.code, 1);
    assert.match(badRegion.stderr, /^ERROR: \(trainplane\.ai\.custom-jobs\.create\) INVALID_ARGUMENT: /);

    const before = await countCustomJobs();
    const badYaml = writeConfig('badspec.yaml', 'workerPoolSpecs:\n  - machineSpec: {machineType: [n1\n');
    const unknown = writeConfig('unknownspec.yaml', 'workerPoolSpecs:\n  - machineSpec: {machineType: n1}\n    replica_count: 1\n');
    const ok = '--worker-pool-spec=machine-type=n1-standard-4,container-image-uri=i';
    const create = ['ai', 'custom-jobs', 'create', '--region', REGION, '--display-name', 'never-sent'];
    const cases = [
      [[...create, '--worker-pool-spec=machine-type'], /argument --worker-pool-spec: Bad syntax for dict arg: \[machine-type\]/],
      [[...create, '--worker-pool-spec=machine-type=n1-standard-4,gpus=2,container-image-uri=i'],
        /argument --worker-pool-spec: valid keys are \[accelerator-count, .*\]; received: gpus/],
      [[...create, '--worker-pool-spec=', ok], /Empty value is not allowed for the first `--worker-pool-spec` flag\./],
      [[...create, '--worker-pool-spec=machine-type=n1-standard-4,container-image-uri=i,replica-count=many'],
        /replica-count: Value must be an integer/],
      [[...create, '--config', badYaml], /badspec\.yaml:3:1: invalid YAML/],
      [[...create, '--config', unknown], /unknownspec\.yaml:3:5: unknown field \[replica_count\] in workerPoolSpecs/],
      [[...create], /Either --worker-pool-spec or --config must be specified/],
      [['ai', 'custom-jobs', 'create', '--display-name', 'x', ok], /argument --region: Must be specified/],
      [['ai', 'custom-jobs', 'create', '--region', REGION, ok], /argument --display-name: Must be specified/],
      [['ai', 'custom-jobs', 'describe', '123'], /Failed to find attribute \[region\]/],
      [['ai', 'custom-jobs', 'describe', 'projects/p/customJobs/1'], /Invalid CustomJob name/],
      [['ai', 'custom-jobs', 'list'], /argument --region: Must be specified/],
      [['ai', 'custom-jobs', 'list', '--region', REGION, '--sort-by', '~'], /argument --sort-by: Invalid field \[~\]/],
      [['ai', 'custom-jobs', 'frobnicate'], /Invalid choice: 'frobnicate'/],
    ];
    for (const [args, re] of cases) {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^ERROR: \(trainplane\.ai\.custom-jobs(\.\w+)?\) /);
      assert.match(r.stderr, re);
    }
    assert.equal(await countCustomJobs(), before);
    for (const verb of ['create', 'describe', 'list', 'cancel', 'stream-logs']) {
      const h = await run(['ai', 'custom-jobs', verb, '--help']);
      assert.equal(h.code, 0, verb);
      assert.match(h.stdout, new RegExp(`^NAME\n {4}trainplane ai custom-jobs ${verb} - [^]*SYNOPSIS\n {4}trainplane ai custom-jobs ${verb} [^]*\nFLAGS\n {4}--region=REGION\n {8}\\S[^]*\nEXAMPLES\n`));
    }
    const top = await run(['--help']);
    assert.match(top.stdout, /ai custom-jobs create/);
  });
});
