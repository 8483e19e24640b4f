// An installed server: the binary copied away from the checkout and started
// from a directory with no deploy/ in it (/tmp), with no `catalog` key, finds
// its default catalog (compiled into the binary from deploy/catalog.yaml),
// creates jobs that the catalog admits and refuses those it does not. An
// explicit `catalog` path still wins, a missing one still stops the server
// (never a silent fall-back to the built-in one), and --check-config and
// SIGHUP work with the built-in catalog.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  REPO_ROOT, SERVER_BIN, makeTempDir, startPostgres, startServer, runServerSync, client, waitFor,
  trainingInput, jobId, fieldViolations,
} from './harness.mjs';

const CATALOG_FILE = path.join(REPO_ROOT, 'deploy/catalog.yaml');

let pg;
let installDir; // holds the copied binary: nothing of the checkout beside it
let elsewhere; // the working directory: no deploy/ in it

/** ml v1 job with workerCount workers of 4 T4s each: the catalog decides. */
function gpuJob(id, { workers = 2, gpus = 4 } = {}) {
  const acc = { acceleratorConfig: { count: String(gpus), type: 'NVIDIA_TESLA_T4' } };
  return {
    jobId: id,
    trainingInput: trainingInput({
      scaleTier: 'CUSTOM',
      masterType: 'n1-highcpu-16',
      masterConfig: { imageUri: 'gcr.io/test/trainer:latest', ...acc },
      workerType: 'n1-highcpu-16',
      workerCount: String(workers),
      workerConfig: acc,
    }),
  };
}

/** The server copied into installDir, run from `elsewhere`, no TRAINPLANE_CATALOG. */
function installedBin() {
  return path.join(installDir, 'trainplane-server');
}

function startInstalled(env = {}) {
  return startServer({ pg, cwd: elsewhere, env: { TRAINPLANE_CATALOG: undefined, ...env }, bin: installedBin() });
}

before(async () => {
  pg = await startPostgres();
  installDir = makeTempDir('tp-installed-bin-');
  elsewhere = makeTempDir('tp-installed-cwd-');
  fs.copyFileSync(SERVER_BIN, installedBin());
  fs.chmodSync(installedBin(), 0o755);
  assert.equal(fs.existsSync(path.join(elsewhere, 'deploy')), false);
});

after(async () => {
  await pg?.cleanup();
});

describe('installed server: the built-in catalog', () => {
  it('starts from another directory with no catalog key and creates a job', async () => {
    const server = await startInstalled();
    try {
      const c = client(server.base);
      const id = jobId('installed');
      const r = await c.post('/v1/projects/demo/jobs', gpuJob(id));
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json.jobId, id);
      assert.equal((await c.get(`/v1/projects/demo/jobs/${id}`)).status, 200);

      // The catalog's rules are in force: 3 T4s on n1-highcpu-16 are refused.
      const bad = await c.post('/v1/projects/demo/jobs', gpuJob(jobId('installed'), { gpus: 3 }));
      assert.equal(bad.status, 400, JSON.stringify(bad.json));
      assert.ok(fieldViolations(bad.json.error).some((v) => /accelerator_config\.count/.test(v.field)),
        JSON.stringify(bad.json));
      assert.match(server.stderr(), /catalog: built in/);

      // The same regions as the file it was built from.
      const fromFile = await startServer({ pg, env: { TRAINPLANE_CATALOG: CATALOG_FILE } });
      try {
        const a = await c.get('/v1/projects/demo/locations');
        const b = await client(fromFile.base).get('/v1/projects/demo/locations');
        assert.equal(a.status, 200);
        assert.ok(a.json.locations.length > 3, JSON.stringify(a.json));
        assert.deepEqual(a.json, b.json);
      } finally {
        await fromFile.stop();
      }

      // SIGHUP reloads (the built-in one again) and the server keeps serving.
      server.child.kill('SIGHUP');
      await waitFor(() => /SIGHUP: catalog .*reloaded/.test(server.stderr()), 10_000, 'SIGHUP reload logged');
      assert.equal((await c.get(`/v1/projects/demo/jobs/${id}`)).status, 200);
    } finally {
      await server.stop();
    }
  });

  it('--check-config passes from another directory with no catalog key', () => {
    const r = runServerSync(['--check-config'], { cwd: elsewhere, bin: installedBin(),
      env: { TRAINPLANE_STATE_DIR: elsewhere } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /configuration and catalog are valid/);
  });

  it('an explicit catalog path still wins over the built-in one', async () => {
    const own = path.join(elsewhere, 'own-catalog.yaml');
    const text = fs.readFileSync(CATALOG_FILE, 'utf8');
    assert.match(text, /^max_replica_count: \d+$/m);
    fs.writeFileSync(own, text.replace(/^max_replica_count: \d+$/m, 'max_replica_count: 1'));
    const server = await startInstalled({ TRAINPLANE_CATALOG: own });
    try {
      const c = client(server.base);
      const r = await c.post('/v1/projects/demo/jobs', gpuJob(jobId('own'), { workers: 2 }));
      assert.equal(r.status, 400, 'the own catalog allows one worker only');
      assert.equal((await c.post('/v1/projects/demo/jobs', gpuJob(jobId('own'), { workers: 1 }))).status, 200);
      assert.match(server.stderr(), new RegExp(`catalog: ${own.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    } finally {
      await server.stop();
    }
  });

  it('a catalog path that does not exist stops the server: no fall-back to the built-in one', () => {
    const missing = path.join(elsewhere, 'nope', 'catalog.yaml');
    const r = runServerSync(['--check-config'], { cwd: elsewhere, bin: installedBin(),
      env: { TRAINPLANE_CATALOG: missing, TRAINPLANE_STATE_DIR: elsewhere } });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /bad catalog: .*nope\/catalog\.yaml: cannot open/);
  });
});
