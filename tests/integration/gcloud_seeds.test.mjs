// The seed documents' commands, run with Google's own gcloud (Cloud SDK 528,
// /usr/bin/gcloud) end to end: a server with its Cloud Storage tree in a temp
// dir, one real agent (process runtime, 4 x NVIDIA_TESLA_T4 declared) whose
// storage_root is that same tree, and a private gcloud configuration that
// points ml, logging, aiplatform and storage at the server (docs/api.md,
// "gcloud and the Google client libraries"). gcloud builds the trainer
// package the test writes, stages it in the bucket through trainplane's
// storage API, and the agent installs it in the replica's venv and runs the
// module (agent/python_pkg.c).
//
// Each test is its own job(s) and its own package folder (gcloud writes a
// setup.py next to the package while it builds), so they run side by side
// on the one agent. gcloud's stream-logs polls every ml_engine/polling_interval
// (60 s by default: set to 1 here) and asks whether the job has ended every
// 10 s (fixed), so a stream-logs takes at least 10 s, and submit
// --stream-logs's at least 20 (its trainer waits until gcloud has shown its
// line, which gcloud shows 5 s old): the two tests that stream start first,
// and the others once those two have created their jobs, so that the CPU
// (a gcloud run is a second of it, a replica's pip install as much again)
// goes first to the longest chains, and the rest runs while they wait.
//
// Without gcloud every test is reported skipped, with the reason.
//
// make test runs five of the seven (the gcloud storage cp into a folder and
// ls of it are the Vertex case's upload of its sdist); make test-gcloud-format
// (TRAINPLANE_GCLOUD_FORMAT_FULL=1) runs all. The two it leaves out take
// paths make test takes elsewhere: a package job whose module is missing is
// packages.test's (the same errorMessage and log line), gcloud's
// stream-logs is seed 002's and submit --stream-logs's; a replica's
// non-zero exit status is the same process exit for a package job as for
// any other (scheduler_e2e, service_log), gcloud's submit the other cases'.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { GCLOUD, writeGcloudConfig } from './gcloud.mjs';
import { SERVER_BIN, makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, killMarked, pgrep, readJobLog, startAgent, waitJobState, waitLogLine, waitNoProcesses,
} from './agents.mjs';

const PROJECT = 'demo';
const REGION = 'us-central1';
const PYTHON = '/usr/bin/python3';
const MARK = `tpmark_${process.pid}_seeds_${Date.now().toString(36)}`;

const skip = (!GCLOUD && 'gcloud (the Google Cloud SDK) is not installed: no gcloud on the PATH or at /usr/bin/gcloud') ||
  (!SERVER_BIN && 'TRAINPLANE_SERVER_BIN is not set') ||
  (!AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set') ||
  (!fs.existsSync(PYTHON) && `${PYTHON} is missing (the agent's process runtime installs packages with it)`);
const FULL = process.env.TRAINPLANE_GCLOUD_FORMAT_FULL === '1';
const fullOnly = skip || (!FULL && 'make test-gcloud-format (TRAINPLANE_GCLOUD_FORMAT_FULL=1) runs it');

// The trainer: prints its args (JSON) and where it runs, then, as its args
// say, waits for its worker (the chief, until worker 0 has written its file
// in the --rendezvous folder: the job ends when the chief does, and a worker
// still installing then is stopped), waits for a gate file, sleeps, or
// exits with a status.
const TASK_PY = `import json, os, sys, time
args = sys.argv[1:]
task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
print("TRAINER_ARGS " + json.dumps(args), flush=True)
print("TRAINER_TASK %s %s gpus=%s" % (task.get("type"), task.get("index"), os.environ.get("CUDA_VISIBLE_DEVICES")), flush=True)
def opt(name):
    return args[args.index(name) + 1] if name in args else None
if opt("--rendezvous"):
    with open(os.path.join(opt("--rendezvous"), "%s-%s" % (task.get("type"), task.get("index"))), "w"):
        pass
    deadline = time.time() + 300
    while task.get("type") == "chief" and time.time() < deadline:
        if os.path.exists(os.path.join(opt("--rendezvous"), "worker-0")):
            break
        time.sleep(0.05)
if opt("--gate"):
    deadline = time.time() + 300
    while not os.path.exists(opt("--gate")) and time.time() < deadline:
        time.sleep(0.05)
    print("TRAINER_GATE_OPEN", flush=True)
if "--sleep" in args:
    time.sleep(3600)
if opt("--exit"):
    sys.exit(int(opt("--exit")))
`;

let pg;
let server;
let agent;
let dir;
let root;
let gcloudConfig;
const STAGING = 'seeds-staging';
const liveGcloud = new Set();

/** A promise and its resolve. */
function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}
// Resolved once seed 002 and submit --stream-logs have created their jobs
// (or failed to): the other tests start then.
const seed002Created = deferred();
const streamCreated = deferred();
const longestCreated = () => Promise.all([seed002Created.promise, streamCreated.promise]);

/** A fresh package root with trainer/__init__.py and trainer/task.py (and setup.py when asked). */
function packageRoot(name, { setupPy = false } = {}) {
  const at = path.join(dir, 'src', name);
  fs.mkdirSync(path.join(at, 'trainer'), { recursive: true });
  fs.writeFileSync(path.join(at, 'trainer', '__init__.py'), '');
  fs.writeFileSync(path.join(at, 'trainer', 'task.py'), TASK_PY);
  if (setupPy) {
    fs.writeFileSync(path.join(at, 'setup.py'), 'from setuptools import setup, find_packages\n' +
      "setup(name='trainer', version='0.0.0', packages=find_packages())\n");
  }
  return at;
}

/** The environment of a command of the test: no CLOUDSDK_* of the caller's, the private configuration. */
function commandEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('CLOUDSDK_') && !k.startsWith('TRAINPLANE_')) env[k] = v;
  }
  return {
    ...env,
    CLOUDSDK_CONFIG: gcloudConfig,
    CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
    PYTHONUNBUFFERED: '1',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  };
}

/**
 * Runs a command to its end: { code, signal, stdout, stderr, out (both) }.
 * onOutput(stdout and stderr so far) is called as they grow. Killed after timeoutMs.
 */
function run(cmd, args, { cwd = dir, timeoutMs = 120_000, onOutput } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: commandEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    liveGcloud.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      stdout += d;
      onOutput?.(stdout + stderr);
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      onOutput?.(stdout + stderr);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      liveGcloud.delete(child);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      liveGcloud.delete(child);
      resolve({ code, signal, stdout, stderr, out: `${stdout}${stderr}` });
    });
  });
}

/** gcloud ARGS; asserts exit status 0 unless ok: false. */
async function gcloud(args, opts = {}) {
  const r = await run(GCLOUD, args, opts);
  if (opts.ok !== false) {
    assert.equal(r.code, 0, `gcloud ${args.join(' ')} exited ${r.code ?? r.signal}:\n${r.out}` +
      `\n--- server ---\n${server.stderr().slice(-2000)}`);
  }
  return r;
}

/** The seed's submit: gcloud ai-platform jobs submit training JOB --package-path trainer ... (flags) -- userArgs. */
function submitTraining(job, cwd, flags, userArgs, opts = {}) {
  return gcloud(['ai-platform', 'jobs', 'submit', 'training', job,
    '--package-path', 'trainer', '--module-name', 'trainer.task',
    '--staging-bucket', `gs://${STAGING}`, '--region', REGION,
    '--runtime-version', '2.11', '--python-version', '3.7',
    ...flags, '--', ...userArgs], { cwd, ...opts });
}

const context = () => `--- agent ---\n${agent.stderr().slice(-3000)}`;

async function finished(job, state) {
  return waitJobState(server.base, PROJECT, job, state, 90_000, context);
}

/** What a job's replicas printed: [{ task, text }] from the logging API. */
async function printed(job) {
  return (await readJobLog(server.base, PROJECT, job)).map((e) => ({
    task: e.resource?.labels?.task_name, text: e.textPayload ?? '',
  }));
}

/** The message of each line gcloud's stream-logs printed for a replica (SEVERITY\tTIME\tTASK\t\tMESSAGE). */
function streamed(out, task = 'master-replica-0') {
  const lines = [];
  for (const line of out.split('\n')) {
    const f = line.split('\t');
    if (f.length >= 5 && f[2] === task) lines.push(f.slice(4).join('\t'));
  }
  return lines;
}

before(async () => {
  if (skip) return;
  pg = await startPostgres({ dbname: 'postgres' });
  dir = makeTempDir('tp-seeds-');
  root = path.join(dir, 'gcs');
  fs.mkdirSync(root);
  server = await startServer({
    pg: pg.newDatabase('seeds'),
    env: {
      TRAINPLANE_SCHEDULER_TICK_MS: '200',
      TRAINPLANE_SYNC_INTERVAL_SECONDS: '2',
      TRAINPLANE_STORAGE_ROOT: root,
    },
  });
  agent = await startAgent(server, {
    node: 'seeds-t4', dir, region: REGION, gpuType: 'NVIDIA_TESLA_T4', gpuCount: 4,
    vcpus: 64, memoryMb: 262144, config: { storage_root: root },
  });
  gcloudConfig = writeGcloudConfig(dir, `http://127.0.0.1:${server.port}`, PROJECT,
    { storage: true, sections: { ml_engine: { polling_interval: 1 } } });
  // The staging bucket of every test but the first (which makes its own with gcloud).
  const res = await request(server.base, 'POST', `/storage/v1/b?project=${PROJECT}`, { body: { name: STAGING } });
  assert.equal(res.status, 200, res.text);
});

after(async () => {
  for (const child of liveGcloud) child.kill('SIGKILL');
  agent?.cleanup();
  // Every replica's python is <agent work dir>/replicas/.../venv/bin/python: its command line names the work dir.
  if (agent) killMarked(agent.workDir);
  killMarked(MARK);
  server?.kill();
  await pg?.cleanup();
});

describe('the seeds\' gcloud commands, end to end', { concurrency: 8 }, () => {
  it('seed 002: buckets create, submit training --package-path --scale-tier BASIC -- --user_arg value: ' +
    'SUCCEEDED, and stream-logs shows the args', { skip }, async () => {
    const cwd = packageRoot('seed002');
    const job = 'seed002_basic';
    try {
      await gcloud(['storage', 'buckets', 'create', 'gs://seed002-staging'], { cwd });
      await gcloud(['ai-platform', 'jobs', 'submit', 'training', job,
        '--package-path', 'trainer', '--module-name', 'trainer.task',
        '--staging-bucket', 'gs://seed002-staging', '--region', REGION,
        '--runtime-version', '2.11', '--python-version', '3.7', '--scale-tier', 'BASIC',
        '--', '--user_arg', 'value'], { cwd });
    } finally {
      seed002Created.resolve();
    }
    const done = await finished(job, 'SUCCEEDED');
    const ti = done.trainingInput;
    assert.equal(ti.pythonModule, 'trainer.task');
    assert.deepEqual(ti.args, ['--user_arg', 'value']);
    assert.equal(ti.region, REGION);
    assert.equal(ti.runtimeVersion, '2.11');
    assert.equal(ti.pythonVersion, '3.7');
    assert.equal(ti.scaleTier ?? 'BASIC', 'BASIC'); // sent; BASIC is the enum's zero value, which proto3 JSON leaves out
    assert.equal(ti.packageUris?.length, 1, JSON.stringify(ti));
    const m = new RegExp(`^gs://seed002-staging/(${job}/[0-9a-f]+/trainer-0\\.0\\.0\\.tar\\.gz)$`).exec(ti.packageUris[0]);
    assert.ok(m, ti.packageUris[0]);
    // The sdist gcloud built and uploaded: an object of the staging bucket,
    // a file under the storage root, its size and MD5 in its metadata.
    const sdist = fs.readFileSync(path.join(root, 'seed002-staging', ...m[1].split('/')));
    const tar = zlib.gunzipSync(sdist).toString('latin1');
    assert.match(tar, /trainer-0\.0\.0\/trainer\/task\.py/, 'the sdist holds the trainer');
    assert.match(tar, /TRAINER_ARGS/);
    const o = await request(server.base, 'GET', `/storage/v1/b/seed002-staging/o/${encodeURIComponent(m[1])}`);
    assert.equal(o.status, 200, o.text);
    assert.equal(o.json.size, String(sdist.length));
    assert.equal(o.json.md5Hash, crypto.createHash('md5').update(sdist).digest('base64'));
    // Every line in the log first: stream-logs reads from the start and
    // stops at its first look after the end (gcloud asks every 10 s).
    await waitLogLine(server.base, PROJECT, job, /^TRAINER_ARGS /, 10_000);
    const logs = await gcloud(['ai-platform', 'jobs', 'stream-logs', job], { cwd });
    const lines = streamed(logs.stdout);
    assert.ok(lines.includes('TRAINER_ARGS ["--user_arg", "value"]'), logs.out);
    assert.ok(lines.includes('Successfully installed trainer-0.0.0'), logs.out);
  });

  // The job the flags make is the file's (the same trainingInput, but for
  // its args and package): it is cancelled once made, and only the file's
  // runs (two replicas' pip installs, not four, where the cancel comes
  // first). Its trainer waits for a gate that never opens, so that it ends
  // CANCELLED however late the cancel comes.
  it('seed 000: --config config.yaml (CUSTOM, a T4 master and a T4 worker) SUCCEEDED, and the seed\'s flags ' +
    'instead of the file the same job', { skip }, async () => {
    await longestCreated();
    const fromFile = packageRoot('seed000_config');
    fs.writeFileSync(path.join(fromFile, 'config.yaml'), [
      'trainingInput:',
      '  scaleTier: CUSTOM',
      '  masterType: n1-standard-4',
      '  masterConfig:',
      '    acceleratorConfig:',
      '      count: 1',
      '      type: NVIDIA_TESLA_T4',
      '  workerType: n1-standard-4',
      '  workerCount: 1',
      '  workerConfig:',
      '    acceleratorConfig:',
      '      count: 1',
      '      type: NVIDIA_TESLA_T4',
      '',
    ].join('\n'));
    const fromFlags = packageRoot('seed000_flags');
    const rendezvous = path.join(dir, 'rendezvous-config');
    fs.mkdirSync(rendezvous);
    const argsOf = {
      seed000_config: ['--from', 'config', '--rendezvous', rendezvous],
      seed000_flags: ['--from', 'flags', '--gate', path.join(dir, 'seed000_flags.never')],
    };
    await Promise.all([
      submitTraining('seed000_config', fromFile, ['--config', 'config.yaml'], argsOf.seed000_config),
      submitTraining('seed000_flags', fromFlags, ['--scale-tier', 'custom',
        '--master-machine-type', 'n1-standard-4', '--master-accelerator', 'count=1,type=nvidia-tesla-t4',
        '--worker-machine-type', 'n1-standard-4', '--worker-count', '1',
        '--worker-accelerator', 'count=1,type=nvidia-tesla-t4'], argsOf.seed000_flags).then(async () => {
        const c = await request(server.base, 'POST', `/v1/projects/${PROJECT}/jobs/seed000_flags:cancel`, { body: {} });
        assert.equal(c.status, 200, c.text);
      }),
    ]);
    const inputs = [];
    for (const job of ['seed000_config', 'seed000_flags']) {
      const done = await finished(job, job === 'seed000_config' ? 'SUCCEEDED' : 'CANCELLED');
      const { packageUris, args, ...input } = done.trainingInput;
      assert.deepEqual(args, argsOf[job]);
      assert.equal(packageUris?.length, 1, JSON.stringify(done.trainingInput));
      inputs.push(input);
      if (job !== 'seed000_config') continue;
      // The master and the worker each ran the module, each with one of the node's GPUs.
      let lines = [];
      await waitFor(async () => {
        lines = (await printed(job)).filter((l) => l.text.startsWith('TRAINER_TASK '));
        return lines.length === 2;
      }, 10_000, `${job}: both replicas printed`).catch((e) => assert.fail(`${e.message}: ${JSON.stringify(lines)}`));
      const byTask = Object.fromEntries(lines.map((l) => [l.task, l.text]));
      assert.match(byTask['master-replica-0'] ?? '', /^TRAINER_TASK chief 0 gpus=\d$/, JSON.stringify(lines));
      assert.match(byTask['worker-replica-0'] ?? '', /^TRAINER_TASK worker 0 gpus=\d$/, JSON.stringify(lines));
      assert.notEqual(byTask['master-replica-0'].split('=')[1], byTask['worker-replica-0'].split('=')[1]);
    }
    // The file and the flags say the same job.
    assert.deepEqual(inputs[1], inputs[0]);
    assert.deepEqual(inputs[0].masterConfig, { acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } });
    assert.deepEqual(inputs[0].workerConfig, { acceleratorConfig: { count: '1', type: 'NVIDIA_TESLA_T4' } });
    assert.equal(inputs[0].scaleTier, 'CUSTOM');
  });

  it('submit --stream-logs returns when the job ends, with the trainer\'s lines in its output', { skip }, async () => {
    const cwd = packageRoot('stream');
    const gate = path.join(dir, 'stream.gate');
    // The trainer waits until gcloud has shown its line, so the job ends
    // while gcloud streams (gcloud reads only entries 5 s old or more).
    // With --stream-logs the entries go to stderr, the job at the end to stdout.
    const r = await submitTraining('stream_logs', cwd, ['--scale-tier', 'BASIC', '--stream-logs'],
      ['--gate', gate], {
        onOutput: (out) => {
          if (/Job \[stream_logs\] submitted successfully/.test(out)) streamCreated.resolve();
          if (/\tTRAINER_ARGS /.test(out) && !fs.existsSync(gate)) fs.writeFileSync(gate, '');
        },
      }).finally(() => streamCreated.resolve());
    assert.ok(fs.existsSync(gate), `gcloud never showed the trainer's line:\n${r.out}`);
    const lines = streamed(r.stderr);
    assert.ok(lines.includes(`TRAINER_ARGS ["--gate", "${gate}"]`), r.out);
    assert.ok(lines.includes('TRAINER_TASK chief 0 gpus='), r.out);
    // (What the trainer prints after the gate opens may be missing: gcloud
    // stops at its first look after the end, and shows only entries 5 s old.)
    // After the logs gcloud prints the job as it ended.
    assert.match(r.stdout, /^state: SUCCEEDED$/m, r.out);
    assert.equal((await finished('stream_logs', 'SUCCEEDED')).state, 'SUCCEEDED');
  });

  it('cancel of a running package job: CANCELLED, and the trainer process is gone', { skip }, async () => {
    await longestCreated();
    const cwd = packageRoot('cancel');
    const job = 'cancel_running';
    const mark = `${MARK}_cancel`;
    await submitTraining(job, cwd, ['--scale-tier', 'BASIC'], ['--sleep', `--mark=${mark}`]);
    await waitLogLine(server.base, PROJECT, job, /^TRAINER_ARGS /, 90_000);
    assert.ok(pgrep(mark).length > 0, 'the trainer runs');
    assert.equal((await finished(job, 'RUNNING')).state, 'RUNNING');
    await gcloud(['ai-platform', 'jobs', 'cancel', job], { cwd });
    const done = await finished(job, 'CANCELLED');
    assert.equal(done.errorMessage, 'Job was cancelled at the user\'s request.');
    await waitNoProcesses(mark, 30_000);
  });

  // The sdist goes up as docs/api.md's commands would have it: gcloud
  // storage cp into a folder (gcloud first GETs the object named "folder/":
  // Google answers 404 for an object that is not there), and docs/api.md's
  // `gcloud storage ls gs://demo-staging/census_1/` lists it, while the job
  // that installs it runs.
  it('a Vertex custom job from an sdist that gcloud storage cp FILE gs://B/folder/ uploaded (and gcloud storage ls ' +
    'gs://B/folder/ lists): JOB_STATE_SUCCEEDED, its args in the log', { skip }, async () => {
    await longestCreated();
    const src = packageRoot('vertex', { setupPy: true });
    const sdist = await run(PYTHON, ['setup.py', '-q', 'sdist', '-d', 'dist'], { cwd: src });
    assert.equal(sdist.code, 0, sdist.out);
    await gcloud(['storage', 'cp', 'dist/trainer-0.0.0.tar.gz', `gs://${STAGING}/folder/`], { cwd: src });
    assert.ok(fs.readFileSync(path.join(root, STAGING, 'folder', 'trainer-0.0.0.tar.gz'))
      .equals(fs.readFileSync(path.join(src, 'dist', 'trainer-0.0.0.tar.gz'))), 'the object under the storage root is the file');
    const uri = `gs://${STAGING}/folder/trainer-0.0.0.tar.gz`;
    const [ls, created] = await Promise.all([
      gcloud(['storage', 'ls', `gs://${STAGING}/folder/`], { cwd: src }),
      gcloud(['ai', 'custom-jobs', 'create', '--region', REGION, '--display-name', 'd',
        '--python-package-uris', uri,
        '--worker-pool-spec', 'machine-type=n1-standard-4,replica-count=1,' +
          'executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11.py310:latest,python-module=trainer.task',
        '--args=--a=1', '--format=value(name)'], { cwd: src }),
    ]);
    assert.equal(ls.stdout.trim(), uri);
    const name = created.stdout.trim();
    assert.match(name, new RegExp(`^projects/${PROJECT}/locations/${REGION}/customJobs/\\d+$`), created.out);
    let job;
    await waitFor(async () => {
      job = (await request(server.base, 'GET', `/v1/${name}`)).json;
      return /^JOB_STATE_(SUCCEEDED|FAILED|CANCELLED)$/.test(job?.state ?? '');
    }, 90_000, `${name} ended`, 100).catch((e) => assert.fail(`${e.message}: ${JSON.stringify(job)}\n${context()}`));
    assert.equal(job.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(job));
    assert.deepEqual(job.jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris, [uri]);
    const log = await waitLogLine(server.base, PROJECT, name.split('/').pop(), /^TRAINER_ARGS /, 10_000);
    assert.ok(log.some((e) => e.textPayload === 'TRAINER_ARGS ["--a=1"]'), log.map((e) => e.textPayload).join('\n'));
  });

  it('a module the package lacks (--module-name trainer.nope): FAILED, Python\'s words in stream-logs and ' +
    'describe\'s errorMessage', { skip: fullOnly }, async () => {
    await longestCreated();
    const cwd = packageRoot('nomodule');
    const job = 'no_module';
    await gcloud(['ai-platform', 'jobs', 'submit', 'training', job,
      '--package-path', 'trainer', '--module-name', 'trainer.nope',
      '--staging-bucket', `gs://${STAGING}`, '--region', REGION,
      '--runtime-version', '2.11', '--python-version', '3.7', '--scale-tier', 'BASIC'], { cwd });
    await finished(job, 'FAILED');
    await waitLogLine(server.base, PROJECT, job, /No module named trainer\.nope$/, 10_000);
    const [logs, described] = await Promise.all([
      gcloud(['ai-platform', 'jobs', 'stream-logs', job], { cwd }),
      gcloud(['ai-platform', 'jobs', 'describe', job, '--format=json'], { cwd }),
    ]);
    assert.ok(streamed(logs.stdout).some((l) => /\/venv\/bin\/python: No module named trainer\.nope$/.test(l)), logs.out);
    // The service says why, where people look: its own lines, ERROR.
    assert.ok(logs.stdout.split('\n').some((l) => /^ERROR\t[^\t]*\tservice\t\tJob failed\. The replica master 0 could not be started: .*No module named trainer\.nope$/.test(l)),
      logs.out);
    const d = JSON.parse(described.stdout);
    assert.equal(d.state, 'FAILED');
    assert.match(d.errorMessage, /^The replica master 0 could not be started: \/.*\/venv\/bin\/python: No module named trainer\.nope$/);
  });

  it('a trainer that exits 3: FAILED, the status in errorMessage', { skip: fullOnly }, async () => {
    await longestCreated();
    const cwd = packageRoot('exit3');
    const job = 'exit_3';
    await submitTraining(job, cwd, ['--scale-tier', 'BASIC'], ['--exit', '3']);
    const done = await finished(job, 'FAILED');
    assert.equal(done.errorMessage, 'The replica master 0 exited with a non-zero status of 3.');
    assert.ok((await printed(job)).some((l) => l.text === 'TRAINER_ARGS ["--exit", "3"]'));
  });
});
