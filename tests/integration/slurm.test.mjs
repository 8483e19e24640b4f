// The Slurm backend (issue 29) against a real Slurm: Debian's munged,
// slurmctld, three slurmd on this host with fake GPU device files (so gres
// binding is real), slurmrestd with JWT, all private (tools/slurm-cluster.sh)
// and stopped by pid whatever happens. us-central1 is served by it; every
// job there is one Slurm job whose tasks run trainplane-agent --pilot, and
// the official clients see Google's API as anywhere else.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import aiplatform from '@google-cloud/aiplatform';
import { OAuth2Client } from 'google-auth-library';

import { google } from './googleapis.mjs';
import { REPO_ROOT, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { AGENT_BIN, getJob, pgrep, readJobLog, waitJobState, waitNoProcesses } from './agents.mjs';

const T4 = 'NVIDIA_TESLA_T4';
const root = process.getuid?.() === 0;
const CLUSTER = path.join(REPO_ROOT, 'tools/slurm-cluster.sh');
// The cluster lives in a fresh directory the Slurm user (tpslurm) can reach.
const dir = `/tmp/tp-slurm-it-${process.pid}`;
const MARK = `tpslurmit${process.pid}`;

function sh(args, opts = {}) {
  const r = spawnSync(CLUSTER, args, { encoding: 'utf8', timeout: 60_000, ...opts });
  assert.equal(r.status, 0, `slurm-cluster.sh ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const portFree = (port) => new Promise((resolve) => {
  const s = net.createServer().once('error', () => resolve(false))
    .once('listening', () => s.close(() => resolve(true))).listen(port, '127.0.0.1');
});

/** A port base whose ports (base+17, +20, +200..+204) are free now. */
async function portBase() {
  for (let i = 0; i < 50; i++) {
    const pb = 20000 + ((process.pid * 7 + i * 97) % 400) * 25;
    const ports = [pb + 17, pb + 20, pb + 200, pb + 201, pb + 202, pb + 203, pb + 204];
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return pb;
  }
  throw new Error('no free port base for the Slurm cluster');
}

const env = {};
let pg, server, ml, jobs, slurmFile, listen;

function writeSlurmFile() {
  // Three backends on the one cluster: us-central1 with the cluster's token,
  // us-east1 the same without requeue, europe-west4 with a token Slurm
  // refuses (a wrong token must show).
  fs.writeFileSync(path.join(dir, 'bad-token'), 'eyJhbGciOiJIUzI1NiJ9.e30.wrong\n', { mode: 0o600 });
  fs.writeFileSync(slurmFile, `backends:
  site:
    regions: [us-central1]
    url: http://127.0.0.1:${env.TP_SLURM_REST_PORT}
    user: tpslurm
    token_file: ${env.TP_SLURM_TOKEN_FILE}
    partition: tp
    gres: {${T4}: t4}
    agent: ${AGENT_BIN}
    server: http://${listen}/
    work_dir: ${dir}/work
    poll_ms: 200
  norequeue:
    regions: [us-east1]
    url: http://127.0.0.1:${env.TP_SLURM_REST_PORT}
    user: tpslurm
    token_file: ${env.TP_SLURM_TOKEN_FILE}
    partition: tp
    agent: ${AGENT_BIN}
    server: http://${listen}/
    work_dir: ${dir}/work
    poll_ms: 200
    requeue: false
  refused:
    regions: [europe-west4]
    url: http://127.0.0.1:${env.TP_SLURM_REST_PORT}
    user: tpslurm
    token_file: ${dir}/bad-token
    partition: tp
    agent: ${AGENT_BIN}
    server: http://${listen}/
    work_dir: ${dir}/work
    unavailable_fail_seconds: 2
`);
}

async function start() {
  server = await startServer({ pg, env: {
    TRAINPLANE_LISTEN: listen,
    TRAINPLANE_SLURM_FILE: slurmFile,
    TRAINPLANE_SCHEDULER_TICK_MS: '100',
  } });
  ml = google.ml({ version: 'v1', rootUrl: `${server.base}/`, auth: 'any-key' });
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: 'any-token', expiry_date: Date.now() + 3600_000 });
  jobs = new aiplatform.v1.JobServiceClient({ apiEndpoint: '127.0.0.1', port: server.port,
    protocol: 'http', fallback: true, authClient });
}

before(async () => {
  if (!root) return;
  sh(['install']);
  // 4 nodes of 16 (fake) CPUs: the scenarios below run side by side;
  // cred_expire 5 (its least): a requeued job starts again 6 s later.
  sh(['setup', dir, '4', '4', String(await portBase())], { env: { ...process.env, TP_SLURM_CPUS: '16',
    TP_SLURM_CRED_EXPIRE: '5' } });
  for (const line of fs.readFileSync(path.join(dir, 'cluster.env'), 'utf8').split('\n')) {
    const m = /^(\w+)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  sh(['start', dir]);
  slurmFile = path.join(dir, 'slurm.yaml');
  const probe = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => probe.once('listening', r));
  listen = `127.0.0.1:${probe.address().port}`;
  await new Promise((r) => probe.close(r));
  writeSlurmFile();
  pg = await startPostgres();
  await start();
});

after(async () => {
  if (!root) return;
  try {
    await server?.stop();
  } finally {
    server?.kill();
    spawnSync(CLUSTER, ['stop', dir], { encoding: 'utf8', timeout: 60_000 });
    for (const pid of pgrep(MARK)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    if (!process.env.TP_KEEP_SLURM_DIR) fs.rmSync(dir, { recursive: true, force: true });
    await pg?.cleanup();
  }
});

const slurmEnv = () => ({ ...process.env, SLURM_CONF: env.SLURM_CONF });
function squeue() {
  const r = spawnSync('squeue', ['-h', '-o', '%i %T %j %N'], { encoding: 'utf8', env: slurmEnv() });
  return r.stdout.trim().split('\n').filter(Boolean);
}
/** The Slurm jobs' output (the pilots' logs): all of it, or its end (full false). */
const slurmLog = (full = false) => {
  try {
    const all = fs.readdirSync(path.join(dir, 'work')).filter((f) => f.endsWith('.out'))
      .map((f) => fs.readFileSync(path.join(dir, 'work', f), 'utf8')).join('\n');
    return full ? all : all.slice(-4000);
  } catch { return ''; }
};
/** slurmctld's log without its noise (the refused token's lines). */
const slurmctldLines = () => {
  try {
    return fs.readFileSync(path.join(dir, 'log', 'slurmctld.log'), 'utf8').split('\n')
      .filter((l) => !/auth_p_verify|slurm_unpack_received_msg|slurm_receive_msg/.test(l)).slice(-60).join('\n');
  } catch { return ''; }
};
const context = () => `\nsqueue: ${squeue().join('; ')}\nserver:\n${server.stderr().slice(-3000)}\nslurm output:\n${slurmLog()}`;

const cmd = (s) => ['sh', '-c', `: ${MARK}; ${s}`];
const mlTask = (extra = {}) => ({ scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
  ...extra });
const gpu = (n = 1) => ({ acceleratorConfig: { type: T4, count: String(n) } });

async function mlCreate(jobId, trainingInput) {
  const res = await ml.projects.jobs.create({ parent: 'projects/slurm', requestBody: { jobId, trainingInput } });
  return res.data;
}

/** The job's row id, from its service lines ("... on node slurm-<id>-r0-..."). */
async function rowOf(jobId) {
  let id;
  await waitFor(async () => {
    const svc = (await readJobLog(server.base, 'slurm', jobId, '', { service: true })).map((e) => e.textPayload);
    id = svc.map((l) => /on node slurm-(\d+)-r/.exec(l)?.[1]).find(Boolean);
    return id;
  }, 60_000, `${jobId} placed on its pilots`).catch((e) => { throw new Error(`${e.message}${context()}`); });
  return id;
}

/**
 * Kills the slurmd of the node the job runs on (its slurmstepd, pilot and
 * replica live on) and marks the node down at once: Slurm would take ~28 s
 * to notice (SlurmdTimeout), and then does the same. Returns the node.
 */
async function killNodeOf(jobId) {
  const row = await rowOf(jobId);
  const line = squeue().find((l) => / RUNNING /.test(l) && l.includes(` tp-${row} `));
  assert.ok(line, `the Slurm job: ${squeue()}`);
  const node = line.split(' ')[3];
  process.kill(Number(fs.readFileSync(path.join(dir, 'run', `slurmd-${node}.fg.pid`), 'utf8')), 'SIGKILL');
  const r = spawnSync('scontrol', ['update', `nodename=${node}`, 'state=down', 'reason=trainplane-test'],
    { encoding: 'utf8', env: slurmEnv() });
  assert.equal(r.status, 0, r.stderr);
  return node;
}

const texts = async (jobId) => (await readJobLog(server.base, 'slurm', jobId)).map((e) =>
  `${e.resource.labels.task_name}: ${e.textPayload}`);

describe('the Slurm backend', { skip: !root && 'Slurm needs root here (its daemons run as root)' }, () => {
 describe('jobs side by side', { concurrency: true }, () => {
  it('runs an ml v1 job (master, 2 workers, ps on T4) as one Slurm job, with TF_CONFIG and Slurm\'s GPUs', async () => {
    const show = 'echo "$TASK_ROLE gpus=$CUDA_VISIBLE_DEVICES tf=$TF_CONFIG"';
    await mlCreate('gang', mlTask({
      masterConfig: { imageUri: 'x', containerCommand: cmd(`TASK_ROLE=master; ${show}; sleep 1`), ...gpu() },
      workerType: 'n1-standard-4', workerCount: '2',
      workerConfig: { imageUri: 'x', containerCommand: cmd(`TASK_ROLE=worker; ${show}`), ...gpu() },
      parameterServerType: 'n1-standard-4', parameterServerCount: '1',
      parameterServerConfig: { imageUri: 'x', containerCommand: cmd(`TASK_ROLE=ps; ${show}; sleep 60`) },
    }));
    await waitJobState(server.base, 'slurm', 'gang', 'SUCCEEDED', 60_000, context);
    const log = await texts('gang');
    const lines = log.filter((l) => / gpus=/.test(l));
    assert.equal(lines.length, 4, log.join('\n'));
    for (const role of ['master', 'worker', 'ps']) {
      const l = lines.find((x) => x.includes(`${role} gpus=`));
      const tf = JSON.parse(l.slice(l.indexOf('tf=') + 3));
      assert.equal(tf.task.type, role);
      assert.equal(tf.cluster.worker.length, 2);
      assert.equal(tf.cluster.ps.length, 1);
    }
    // Each GPU replica has one of Slurm's indices; the ps has none.
    assert.match(lines.find((l) => l.includes('ps gpus=')), /ps gpus= /);
    for (const l of lines.filter((x) => !x.includes('ps gpus=')))
      assert.match(l, /gpus=[0-3] /, l);
    // One Slurm job: master and workers one component (3 tasks), the ps another.
    const svc = (await readJobLog(server.base, 'slurm', 'gang', '', { service: true }))
      .map((e) => e.textPayload).join('\n');
    assert.match(svc, /on node slurm-\d+-r0-g0-t[0-2]/);
    assert.match(svc, /ps 0 is running on node slurm-\d+-r0-g1-t0/);
    // Replicas that shared a Slurm node never shared a GPU: the pilots say
    // which node and GPUs Slurm gave them.
    const row = await rowOf('gang');
    const pilots = [...slurmLog(true).matchAll(new RegExp(`pilot (slurm-${row}-r0-g0-t\\d): Slurm job \\d+, node (\\w+), GPUs (\\S+)`, 'g'))];
    assert.equal(pilots.length, 3, slurmLog());
    const seen = new Set();
    for (const [, , node, g] of pilots) {
      assert.ok(!seen.has(`${node}/${g}`), `two pilots on ${node} with GPU ${g}: ${slurmLog()}`);
      seen.add(`${node}/${g}`);
    }
  });

  it('runs a Vertex custom job with two pools through @google-cloud/aiplatform', async () => {
    const [job] = await jobs.createCustomJob({ parent: 'projects/slurm/locations/us-central1', customJob: {
      displayName: 'two-pools', jobSpec: { workerPoolSpecs: [
        { machineSpec: { machineType: 'n1-standard-4', acceleratorType: T4, acceleratorCount: 1 }, replicaCount: 1,
          containerSpec: { imageUri: 'x', command: cmd('echo "chief $CLUSTER_SPEC"') } },
        { machineSpec: { machineType: 'n1-standard-4' }, replicaCount: 2,
          containerSpec: { imageUri: 'x', command: cmd('echo worker') } }] } } });
    let got;
    await waitFor(async () => {
      [got] = await jobs.getCustomJob({ name: job.name });
      return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED'].includes(got.state);
    }, 60_000, 'the Vertex job to end').catch((e) => { throw new Error(`${e.message}${context()}`); });
    assert.equal(got.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(got.error) + context());
  });

  it('fails a job whose replica exits 3, in Google\'s words', async () => {
    await mlCreate('exit3', mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd('sleep 30') },
      workerType: 'n1-standard-4', workerCount: '1',
      workerConfig: { imageUri: 'x', containerCommand: cmd('exit 3') } }));
    const job = await waitJobState(server.base, 'slurm', 'exit3', 'FAILED', 60_000, context);
    assert.match(job.errorMessage, /The replica worker 0 exited with a non-zero status of 3/);
  });

  it('cancels a running job: Slurm cancels its job, and no replica process is left', async () => {
    await mlCreate('cancel', mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd('echo up; sleep 300') } }));
    await waitJobState(server.base, 'slurm', 'cancel', 'RUNNING', 60_000, context);
    await waitFor(async () => (await texts('cancel')).some((l) => /up/.test(l)), 20_000, 'the replica to start');
    await ml.projects.jobs.cancel({ name: 'projects/slurm/jobs/cancel' });
    await waitJobState(server.base, 'slurm', 'cancel', 'CANCELLED', 30_000, context);
    const row = await rowOf('cancel');
    await waitFor(() => !squeue().some((l) => l.includes(` tp-${row} `) && / RUNNING /.test(l)), 20_000,
      `Slurm to end the job: ${squeue()}`);
    await waitNoProcesses(`${MARK}; echo up`, 20_000);
  });

  it('ends a job past its maxRunningTime with the timeout message, and its Slurm job', async () => {
    await mlCreate('slow', mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd('sleep 300') },
      scheduling: { maxRunningTime: '2s' } }));
    const job = await waitJobState(server.base, 'slurm', 'slow', 'FAILED', 60_000, context);
    assert.match(job.errorMessage, /maximum running time \(scheduling\.max_running_time\) of 2s/);
    await waitNoProcesses(`${MARK}; sleep 300`, 20_000);
  });

  it('runs each trial of a tuning job as a Slurm job of its own, and reads their metrics', async () => {
    // score = 10 - (x - 3)^2, written where cloudml-hypertune writes it
    const trainer = 'x=0; for a in "$@"; do case "$a" in --x=*) x=${a#--x=};; esac; done; '
      + 'printf \'{"global_step": "1", "score": "%s", "trial": "%s"}\\n\' "$((10 - (x - 3) * (x - 3)))" '
      + '"$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"; echo "trial $CLOUD_ML_TRIAL_ID x=$x"';
    await mlCreate('study', mlTask({
      masterConfig: { imageUri: 'x', containerCommand: [...cmd(trainer), 'trainer'], ...gpu() },
      hyperparameters: { hyperparameterMetricTag: 'score', goal: 'MAXIMIZE', algorithm: 'GRID_SEARCH',
        maxTrials: 3, maxParallelTrials: 2,
        params: [{ parameterName: 'x', type: 'INTEGER', minValue: 2, maxValue: 4 }] } }));
    const done = await waitJobState(server.base, 'slurm', 'study', ['SUCCEEDED', 'FAILED'], 90_000, context);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done) + context());
    const trials = done.trainingOutput.trials;
    assert.equal(trials.length, 3);
    assert.deepEqual(trials[0].hyperparameters, { x: '3' });
    assert.equal(trials[0].finalMetric.objectiveValue, 10);
  });

  it('refuses at create a job no node of the partition can hold', async () => {
    // n1-standard-32: 32 vCPUs; the cluster's nodes have 16 CPUs.
    const res = await request(server.base, 'POST', '/v1/projects/slurm/jobs', { body: { jobId: 'huge',
      trainingInput: mlTask({ masterType: 'n1-standard-32', masterConfig: { imageUri: 'x' } }) } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.error.status, 'INVALID_ARGUMENT');
    assert.match(res.json.error.message, /not available in region us-central1: 32 CPUs/);
  });

  it('says UNAVAILABLE, not a silent QUEUED, when Slurm refuses trainplane\'s token', async () => {
    const res = await request(server.base, 'POST', '/v1/projects/slurm/jobs', { body: { jobId: 'refused',
      trainingInput: { ...mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd('true') } }),
        region: 'europe-west4' } } });
    assert.equal(res.status, 200, res.text);
    const job = await waitJobState(server.base, 'slurm', 'refused', 'FAILED', 30_000, context);
    assert.match(job.errorMessage, /UNAVAILABLE: .*europe-west4.*refused trainplane's ping/);
    // ... and /metrics says which backend is down.
    const m = (await request(server.base, 'GET', '/metrics')).text;
    assert.match(m, /^trainplane_slurm_backend_up\{backend="refused"\} 0$/m);
    assert.match(m, /^trainplane_slurm_backend_up\{backend="site"\} 1$/m);
    assert.match(m, /^trainplane_slurm_jobs_submitted_total\{backend="site"\} [1-9]/m);
  });

});

  it('a restarted server takes up its running Slurm job again', async () => {
    const gate = path.join(dir, 'work', `gate-${process.pid}`);
    await mlCreate('adopt', mlTask({ masterConfig: { imageUri: 'x',
      containerCommand: cmd(`echo waiting; while [ ! -e ${gate} ]; do sleep 0.1; done; echo done`) } }));
    await waitFor(async () => (await texts('adopt')).some((l) => /waiting/.test(l)), 60_000, 'the replica to start')
      .catch((e) => { throw new Error(`${e.message}${context()}`); });
    await server.stop();
    await start();
    fs.writeFileSync(gate, '');
    fs.chmodSync(gate, 0o644);
    await waitJobState(server.base, 'slurm', 'adopt', 'SUCCEEDED', 60_000, context);
    assert.ok((await texts('adopt')).some((l) => /done/.test(l)));
  });

  // One after the other: both lose the node their job runs on, and two
  // jobs may well share one.
  it('a slurmd killed under a job that may not be requeued: FAILED in words that say so, its replica stopped', async () => {
    await mlCreate('noreq', { ...mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd('echo up; sleep 300') } }),
      region: 'us-east1' });
    await waitFor(async () => (await texts('noreq')).some((l) => /up/.test(l)), 60_000, 'the replica to start')
      .catch((e) => { throw new Error(`${e.message}${context()}`); });
    const node = await killNodeOf('noreq');
    const job = await waitJobState(server.base, 'slurm', 'noreq', 'FAILED', 30_000, context);
    assert.match(job.errorMessage, new RegExp(`A node of the job failed in the Slurm cluster \\(Slurm job \\d+ on ${node}: NODE_FAIL\\) and the job was not requeued`));
    await waitNoProcesses(`${MARK}; echo up`, 20_000);
  });

  it('a slurmd killed under a running job: Slurm requeues it, it runs again, never two copies at once', async () => {
    // The replica holds a lock for its whole life: a second copy beside it
    // exits 7. The first copy would run a minute: its node's slurmd is
    // killed, so Slurm cannot stop it; trainplane must, before the new run's
    // copy starts.
    const lock = path.join(dir, 'work', `lock-${process.pid}`), first = `${lock}.first`;
    const script = `exec 9>>${lock}; flock -n 9 || { echo TWO COPIES; exit 7; }; `
      + `if [ -e ${first} ]; then echo again; n=20; else : > ${first}; echo first; n=600; fi; `
      + `i=0; while [ $i -lt $n ]; do sleep 0.1; i=$((i+1)); done`;
    await mlCreate('requeue', mlTask({ masterConfig: { imageUri: 'x', containerCommand: cmd(script) } }));
    await waitFor(async () => (await texts('requeue')).some((l) => /first/.test(l)), 60_000, 'the first run')
      .catch((e) => { throw new Error(`${e.message}${context()}`); });
    await killNodeOf('requeue');
    const job = await waitJobState(server.base, 'slurm', 'requeue', ['SUCCEEDED', 'FAILED'], 60_000, context);
    const log = await texts('requeue');
    assert.equal(job.state, 'SUCCEEDED', `${job.errorMessage}\n${log.join('\n')}${context()}`);
    assert.ok(!log.some((l) => /TWO COPIES/.test(l)), log.join('\n'));
    assert.ok(log.some((l) => /again/.test(l)), log.join('\n'));
    const svc = (await readJobLog(server.base, 'slurm', 'requeue', '', { service: true })).map((e) => e.textPayload);
    // Slurm may requeue it more than once: the first run's batch step, alive
    // on a node whose slurmd is gone, reports its end late (seen in CI:
    // restart 2 before any pilot of restart 1 registered). Each requeue seen
    // is a gang restart, counted: the run that succeeded is on the last
    // restart's pilots, at attempt (requeues seen + 1).
    const restarts = svc.map((l) => /requeued the job \(Slurm job \d+, restart (\d+)\)/.exec(l)?.[1])
      .filter(Boolean).map(Number);
    const why = `${svc.join('\n')}\nslurmctld:\n${slurmctldLines()}`;
    assert.ok(restarts.length >= 1, why);
    assert.ok(restarts.every((r, i) => r > (restarts[i - 1] ?? 0)), why);
    const ran = svc.map((l) => /is running on node slurm-\d+-r(\d+)-g0-t0 \(attempt (\d+)\)/.exec(l))
      .filter(Boolean).map((m) => [Number(m[1]), Number(m[2])]);
    assert.deepEqual(ran[0], [0, 1], why);
    assert.deepEqual(ran.at(-1), [restarts.at(-1), restarts.length + 1], why);
    // The first copy was stopped by trainplane (its pilot still reports), not left to run.
    await waitNoProcesses(`${MARK}; exec 9`, 20_000);
  });
});
