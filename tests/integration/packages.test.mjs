// Issue 24, part 2: trainer packages run. An ml v1 job with packageUris +
// pythonModule (what `gcloud ai-platform jobs submit training --package-path
// trainer --module-name trainer.task` sends) and a Vertex custom job with
// pythonPackageSpec: the agent (process runtime, the host's /usr/bin/python3)
// installs the sdists from the storage root into the replica's own venv,
// offline, and runs the module with its args and --job-dir. What goes wrong
// before the module runs (pip, no such module, a package URI outside the
// storage root, not gs://, missing) fails the replica to start with the
// reason in the job's log and errorMessage; the system's site-packages are
// never written. With podman, the busybox test image (no python3) is refused
// cleanly.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import {
  AGENT_BIN, PODMAN_EXTRA, PODMAN_IMAGE, PODMAN_WRAPPER, createJob, killMarked, podmanUnusable,
  readJobLog, startAgent, waitJobState,
} from './agents.mjs';

const PROJECT = 'pkgs';
const PYTHON = '/usr/bin/python3';
const MARK = `tpmark_${process.pid}_pkgs_${Date.now().toString(36)}`;
const noPython = !fs.existsSync(PYTHON) && `${PYTHON} is missing`;

let pg;
let server;
let agent;
let root;

/** Writes a minimal sdist (NAME-VERSION/setup.py and the package's files) with Python's tarfile. */
function sdist(file, name, version, files) {
  const script = 'import io, json, sys, tarfile\n' +
    'out, top, files = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])\n' +
    'with tarfile.open(out, "w:gz") as t:\n' +
    '    for name, text in files.items():\n' +
    '        data = text.encode()\n' +
    '        info = tarfile.TarInfo(top + "/" + name)\n' +
    '        info.size = len(data)\n' +
    '        t.addfile(info, io.BytesIO(data))\n';
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const r = spawnSync(PYTHON, ['-c', script, file, `${name}-${version}`, JSON.stringify(files)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

function setupPy(name, requires) {
  return `from setuptools import setup\nsetup(name=${JSON.stringify(name)}, version="0.1", packages=[${JSON.stringify(name)}],` +
    ` install_requires=${JSON.stringify(requires)})\n`;
}

/** The names in every site-packages of the system's Python (and its user site). */
function systemSitePackages() {
  const r = spawnSync(PYTHON, ['-c', 'import json, os, site\n' +
    'dirs = site.getsitepackages() + [site.getusersitepackages()]\n' +
    'print(json.dumps({d: sorted(os.listdir(d)) if os.path.isdir(d) else None for d in dirs}))'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function systemFinds(module) {
  const r = spawnSync(PYTHON, ['-c', `import importlib.util; print(importlib.util.find_spec(${JSON.stringify(module)}) is not None)`],
    { encoding: 'utf8', cwd: '/' });
  return r.stdout.trim() === 'True';
}

const lines = (entries) => entries.map((e) => e.textPayload ?? '');

/** ml v1 trainingInput for a package job. */
function mlInput(extra) {
  return { scaleTier: 'BASIC', region: 'us-central1', runtimeVersion: '2.11', pythonVersion: '3.7', ...extra };
}

async function finished(jobId, state) {
  return waitJobState(server.base, PROJECT, jobId, state, 60_000, () => agent.stderr().slice(-3000));
}

const skipLocal = (!AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set') || noPython;
let beforeSite;

before(async () => {
  if (skipLocal) return;
  beforeSite = systemSitePackages();
  pg = await startPostgres({ dbname: 'postgres' });
  server = await startServer({
    pg: pg.newDatabase('pkgs'),
    env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' },
  });
  const dir = makeTempDir('tp-pkgs-');
  root = path.join(dir, 'gcs');
  const pkgs = path.join(root, 'bucket', 'pkgs');
  // trainer: its dependency (setuptools) is the system's: satisfied in the
  // venv that sees the system site-packages, as --target would not.
  sdist(path.join(pkgs, 'trainer-0.1.tar.gz'), 'trainer', '0.1', {
    'setup.py': setupPy('trainer', ['setuptools']),
    'trainer/__init__.py': '',
    'trainer/task.py': 'import json, sys, trainer\n' +
      'print("TRAINER_ARGS=" + json.dumps(sys.argv[1:]))\n' +
      'print("TRAINER_FROM=" + trainer.__file__)\n' +
      'print("TRAINER_PREFIX=" + sys.prefix)\n',
  });
  sdist(path.join(pkgs, 'needsdep-0.1.tar.gz'), 'needsdep', '0.1', {
    'setup.py': setupPy('needsdep', ['trainplane-no-such-dependency>=1.0']),
    'needsdep/__init__.py': '',
    'needsdep/task.py': 'print("must not run")\n',
  });
  fs.writeFileSync(path.join(dir, 'secret.tar.gz'), 'outside the root');
  fs.symlinkSync(path.join(dir, 'secret.tar.gz'), path.join(pkgs, 'escape.tar.gz'));
  agent = await startAgent(server, { node: 'pkg-a', dir, vcpus: 64, memoryMb: 262144, config: { storage_root: root } });
});

after(async () => {
  agent?.cleanup();
  killMarked(MARK);
  server?.kill();
  await pg?.cleanup();
});

// Each job is its own: they run side by side on the one agent.
describe('trainer packages', { skip: skipLocal, concurrency: 8 }, () => {
  it('an ml v1 job installs its sdist and runs the module with its args and --job-dir', async () => {
    const id = `pkg_ok_${Date.now()}`;
    await createJob(server.base, PROJECT, id, mlInput({
      packageUris: ['gs://bucket/pkgs/trainer-0.1.tar.gz'],
      pythonModule: 'trainer.task',
      args: ['--epochs', '2', '--data', 'gs://bucket/data', `--mark=${MARK}`],
      jobDir: 'gs://bucket/out',
    }));
    const job = await finished(id, 'SUCCEEDED');
    assert.equal(job.errorMessage, undefined);
    let log = [];
    await waitFor(async () => {
      log = lines(await readJobLog(server.base, PROJECT, id));
      return log.some((l) => l.startsWith('TRAINER_PREFIX='));
    }, 10_000, 'the trainer printed', 100);
    const printed = (key) => log.find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1);
    assert.deepEqual(JSON.parse(printed('TRAINER_ARGS')),
      ['--epochs', '2', '--data', `${root}/bucket/data`, `--mark=${MARK}`, '--job-dir', `${root}/bucket/out`]);
    // From the replica's own venv under the agent's work dir, not the system's.
    assert.match(printed('TRAINER_PREFIX'), new RegExp(`^${agent.workDir}/replicas/[^/]+/venv$`));
    assert.ok(printed('TRAINER_FROM').startsWith(`${printed('TRAINER_PREFIX')}/lib/`), printed('TRAINER_FROM'));
    assert.ok(log.some((l) => /Successfully installed trainer-0\.1/.test(l)), log.join('\n'));
    assert.ok(log.includes('[trainplane] started: python -m trainer.task'), log.join('\n'));
  });

  it('a Vertex custom job with pythonPackageSpec succeeds', async () => {
    const res = await request(server.base, 'POST', `/v1/projects/${PROJECT}/locations/us-central1/customJobs`, {
      body: {
        displayName: 'pkg-vertex',
        jobSpec: {
          workerPoolSpecs: [{
            machineSpec: { machineType: 'n1-standard-4' },
            replicaCount: '1',
            pythonPackageSpec: {
              executorImageUri: 'us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11:latest',
              packageUris: ['gs://bucket/pkgs/trainer-0.1.tar.gz'],
              pythonModule: 'trainer.task',
              args: ['--vertex', `--mark=${MARK}`],
            },
          }],
          baseOutputDirectory: { outputUriPrefix: 'gs://bucket/vertex-out' },
        },
      },
    });
    assert.equal(res.status, 200, res.text);
    const id = res.json.name.split('/').pop();
    let job;
    await waitFor(async () => {
      job = (await request(server.base, 'GET', `/v1/${res.json.name}`)).json;
      return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'].includes(job.state);
    }, 60_000, 'the Vertex job ended', 100);
    assert.equal(job.state, 'JOB_STATE_SUCCEEDED', JSON.stringify(job));
    let log = [];
    await waitFor(async () => {
      log = lines(await readJobLog(server.base, PROJECT, id));
      return log.some((l) => l.startsWith('TRAINER_ARGS='));
    }, 10_000, 'the trainer printed', 100);
    // Vertex passes no --job-dir (AIP_MODEL_DIR and the rest are in the env).
    assert.deepEqual(JSON.parse(log.find((l) => l.startsWith('TRAINER_ARGS=')).slice(13)), ['--vertex', `--mark=${MARK}`]);
  });

  it('a module the package lacks fails with Python\'s words in the log and errorMessage', async () => {
    const id = `pkg_nomod_${Date.now()}`;
    await createJob(server.base, PROJECT, id, mlInput({
      packageUris: ['gs://bucket/pkgs/trainer-0.1.tar.gz'],
      pythonModule: 'trainer.nope',
      args: [`--mark=${MARK}`],
    }));
    const job = await finished(id, 'FAILED');
    assert.match(job.errorMessage, /^The replica master 0 could not be started: \/.*\/venv\/bin\/python: No module named trainer\.nope$/);
    const log = lines(await readJobLog(server.base, PROJECT, id));
    assert.ok(log.some((l) => /\/venv\/bin\/python: No module named trainer\.nope$/.test(l)), log.join('\n'));
  });

  it('a dependency missing from the runtime fails with pip\'s message', async () => {
    const id = `pkg_nodep_${Date.now()}`;
    await createJob(server.base, PROJECT, id, mlInput({
      packageUris: ['gs://bucket/pkgs/needsdep-0.1.tar.gz'],
      pythonModule: 'needsdep.task',
      args: [`--mark=${MARK}`],
    }));
    const job = await finished(id, 'FAILED');
    assert.match(job.errorMessage, /^The replica master 0 could not be started: installing the packages failed \(pip exit status 1\): .*No matching distribution found for trainplane-no-such-dependency/);
    const log = lines(await readJobLog(server.base, PROJECT, id));
    assert.ok(log.some((l) => /^ERROR: No matching distribution found for trainplane-no-such-dependency/.test(l)), log.join('\n'));
    assert.ok(!log.includes('must not run'));
  });

  const badUris = [
    ['outside the root', 'gs://bucket/../../../etc/passwd', 'package URI "gs://bucket/../../../etc/passwd" has a \'.\' or \'..\' segment'],
    ['a symbolic link out of the root', 'gs://bucket/pkgs/escape.tar.gz', 'package gs://bucket/pkgs/escape.tar.gz resolves outside the storage root (a symbolic link out of it)'],
    ['not gs://', '/etc/passwd', 'package URI "/etc/passwd" is not a gs:// URI'],
    ['missing', 'gs://bucket/pkgs/absent-0.1.tar.gz', 'package gs://bucket/pkgs/absent-0.1.tar.gz cannot be read: no such object in the storage root'],
  ];
  for (const [what, uri, why] of badUris) {
    it(`a package URI ${what} fails the replica to start`, async () => {
      const id = `pkg_uri_${what.replace(/[^a-z]+/g, '_')}_${Date.now()}`;
      await createJob(server.base, PROJECT, id, mlInput({ packageUris: [uri], pythonModule: 'trainer.task' }));
      const job = await finished(id, 'FAILED');
      assert.equal(job.errorMessage, `The replica master 0 could not be started: ${why}`);
    });
  }

  it('an unknown runtimeVersion is refused at create in Google\'s words', async () => {
    const res = await request(server.base, 'POST', `/v1/projects/${PROJECT}/jobs`, {
      body: { jobId: `pkg_rv_${Date.now()}`, trainingInput: mlInput({ runtimeVersion: '3.0', pythonVersion: undefined, packageUris: ['gs://bucket/pkgs/trainer-0.1.tar.gz'], pythonModule: 'trainer.task' }) },
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.error.message, 'Field: runtime_version Error: The specified runtime version \'3.0\' with the Python ' +
      'version \'\' is not supported or is deprecated.  Please specify a different runtime version. See ' +
      'https://cloud.google.com/ml-engine/docs/runtime-version-list for a list of supported versions');
  });

});

// After every job above has installed its packages (describes run in turn).
describe('the system Python', { skip: skipLocal }, () => {
  it('keeps its site-packages as they were', () => {
    assert.deepEqual(systemSitePackages(), beforeSite);
    assert.equal(systemFinds('trainer'), false);
    assert.equal(systemFinds('needsdep'), false);
  });
});

describe('trainer packages on podman', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set' }, () => {
  it('an executor image without python3 (busybox) fails to start, saying so', async (t) => {
    const why = podmanUnusable();
    if (why) {
      t.skip(why);
      return;
    }
    const pg2 = await startPostgres({ dbname: 'postgres' });
    const srv = await startServer({
      pg: pg2.newDatabase('pkgs_podman'),
      env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' },
    });
    const dir = makeTempDir('tp-pkgs-podman-');
    const gcs = path.join(dir, 'gcs');
    sdist(path.join(gcs, 'bucket', 'pkgs', 'trainer-0.1.tar.gz'), 'trainer', '0.1', {
      'setup.py': setupPy('trainer', []), 'trainer/__init__.py': '', 'trainer/task.py': 'print("hi")\n',
    });
    const a = await startAgent(srv, {
      node: 'pkg-podman', dir, runtime: 'podman',
      config: { container_wrapper: PODMAN_WRAPPER, container_extra_args: PODMAN_EXTRA, storage_root: gcs },
    });
    t.after(async () => {
      a.cleanup();
      srv.kill();
      await pg2.cleanup();
    });
    const res = await request(srv.base, 'POST', `/v1/projects/${PROJECT}/locations/us-central1/customJobs`, {
      body: {
        displayName: 'pkg-busybox',
        jobSpec: {
          workerPoolSpecs: [{
            machineSpec: { machineType: 'n1-standard-4' },
            replicaCount: '1',
            pythonPackageSpec: {
              executorImageUri: PODMAN_IMAGE,
              packageUris: ['gs://bucket/pkgs/trainer-0.1.tar.gz'],
              pythonModule: 'trainer.task',
            },
          }],
        },
      },
    });
    assert.equal(res.status, 200, res.text);
    let job;
    await waitFor(async () => {
      job = (await request(srv.base, 'GET', `/v1/${res.json.name}`)).json;
      return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'].includes(job.state);
    }, 60_000, 'the podman job ended', 100);
    assert.equal(job.state, 'JOB_STATE_FAILED', JSON.stringify(job));
    assert.match(job.error.message, /^The replica workerpool0-0 could not be started: podman run failed \(start\): .*python3.*/);
  });
});
