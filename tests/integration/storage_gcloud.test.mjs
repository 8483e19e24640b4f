// Google's own gcloud against the server's Cloud Storage API and the AI
// Platform Training API: `gcloud storage` (buckets create, cp up (a simple
// upload, and a 40 MiB file, which gcloud sends as a resumable session) and
// down, cat, ls, ls -l, rm, rm -r, buckets list, buckets delete) and the seed
// command form `gcloud ai-platform jobs submit training --package-path ...
// --staging-bucket gs://...`, which builds the trainer's sdist, uploads it
// to the staging bucket and creates the job with packageUris naming it.
//
// Each case is its own bucket(s), made (and filled) through the API
// beforehand where gcloud is not what makes them, so that every case is one
// gcloud run (two where they take different paths: ls and ls -l) and all run
// side by side: a gcloud run is a second of CPU, almost all of it Python
// importing gcloud (its byte code is compiled already; -S, the update check,
// usage reporting and file logging change nothing measurable), so on a
// loaded machine what the file takes is its longest chain of gcloud runs
// one after another: one.
//
// make test leaves two cases out (make test-gcloud-format,
// TRAINPLANE_GCLOUD_FORMAT_FULL=1, runs them): cat, which sends what cp
// down sends (objects.get, then the media download of that generation);
// and the submit: gcloud_seeds.test's seed 002 runs the same command and
// checks the same of the sdist it uploads (the object under the storage
// root, its size and MD5, the trainer in it) and of the job it creates,
// then runs it.
//
// gcloud runs with a private configuration (CLOUDSDK_CONFIG in a temp dir,
// gcloud.mjs) whose endpoints are this server's, credentials off; it
// reaches nothing else. Without /usr/bin/gcloud (TRAINPLANE_GCLOUD names
// another) the file is skipped, and says so.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { writeGcloudConfig } from './gcloud.mjs';
import { PG_BASE, client, makeTempDir, startPostgres, startServer } from './harness.mjs';

const GCLOUD = process.env.TRAINPLANE_GCLOUD || '/usr/bin/gcloud';
const SKIP = fs.existsSync(GCLOUD) ? false
  : `gcloud is not installed (${GCLOUD}; apt-get install google-cloud-cli): this file tests the server with Google's own client`;
const PROJECT = 'demo';
const FULL = process.env.TRAINPLANE_GCLOUD_FORMAT_FULL === '1';
// The buckets, one or more a case: gcloud makes CREATED; the API the others.
const CREATED = 'gcloud-bkt';
const UP = 'gcloud-up';
const LS = 'gcloud-ls';
const RM = 'gcloud-rm';
const RMR = 'gcloud-rmr';
const DELETED = 'gcloud-del';
const BIG_UP = 'gcloud-big';
const BIG_DOWN = 'gcloud-big-down';
const STAGING = 'gcloud-staging';
const ALL = [CREATED, UP, LS, RM, RMR, DELETED, BIG_UP, BIG_DOWN, STAGING];

describe('gcloud against the server', { skip: SKIP, concurrency: true }, () => {
  let pg;
  let server;
  let api;
  let dir;
  let root;
  let config;

  const small = 'hello from gcloud\n';
  const big = crypto.randomBytes(40 * 2 ** 20);

  /** Uploads body as bucket/name through the API (a simple media upload). */
  async function put(bucket, name, body) {
    const r = await api.request('POST', `/upload/storage/v1/b/${bucket}/o?uploadType=media&name=${encodeURIComponent(name)}`,
      { body });
    assert.equal(r.status, 200, r.text);
  }

  before(async () => {
    pg = await startPostgres();
    dir = makeTempDir('tp-gcloud-');
    root = makeTempDir('tp-gcloud-gcs-', PG_BASE);
    server = await startServer({
      pg,
      env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_STORAGE_ROOT: root, TRAINPLANE_LOG_LEVEL: 'debug' },
    });
    api = client(server.base);
    config = writeGcloudConfig(dir, server.base, PROJECT, { storage: true });
    for (const name of [UP, LS, RM, RMR, DELETED, BIG_UP, BIG_DOWN]) {
      const b = await api.post(`/storage/v1/b?project=${PROJECT}`, { name });
      assert.equal(b.status, 200, b.text);
    }
    await Promise.all([
      put(LS, 'dir/small.txt', small),
      put(RM, 'dir/small.txt', small),
      put(RM, 'second.bin', 'second'),
      put(RMR, 'x/1', 'x/1'),
      put(RMR, 'x/2', 'x/2'),
      put(BIG_DOWN, 'big.bin', big),
    ]);
    fs.writeFileSync(path.join(dir, 'small.txt'), small);
    fs.writeFileSync(path.join(dir, 'big.bin'), big);
  });

  /** Runs gcloud with the private configuration; asserts exit 0 unless { check: false }. */
  function gcloud(args, { cwd = dir, check = true, timeoutMs = 90_000 } = {}) {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (!/^(CLOUDSDK_|GOOGLE_|TRAINPLANE_|BOTO_)/.test(k)) env[k] = v;
    }
    Object.assign(env, { CLOUDSDK_CONFIG: config, CLOUDSDK_CORE_DISABLE_PROMPTS: '1', HOME: dir });
    return new Promise((resolve, reject) => {
      const child = spawn(GCLOUD, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8');
      child.stderr.setEncoding('utf8');
      child.stdout.on('data', (d) => { stdout += d; });
      child.stderr.on('data', (d) => { stderr += d; });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (e) => { clearTimeout(timer); reject(e); });
      child.on('close', (status, signal) => {
        clearTimeout(timer);
        const r = { status, signal, stdout, stderr };
        if (check && status !== 0) {
          reject(new Error(`gcloud ${args.join(' ')}: ${signal ? `killed (${signal}, after ${timeoutMs} ms)` : `exit ${status}`}\n` +
            `${stdout}\n${stderr}\n--- server:\n${server.stderr().slice(-3000)}`));
        } else {
          resolve(r);
        }
      });
    });
  }

  after(async () => {
    try {
      if (server) await server.stop();
    } finally {
      server?.kill();
      await pg?.cleanup();
    }
  });

  it('buckets create: the bucket, in the configured project', async () => {
    await gcloud(['storage', 'buckets', 'create', `gs://${CREATED}`]);
    const b = await api.get(`/storage/v1/b/${CREATED}`);
    assert.equal(b.status, 200, b.text);
    const mine = await api.get(`/storage/v1/b?project=${PROJECT}&prefix=${CREATED}`);
    assert.deepEqual(mine.json.items.map((x) => x.name), [CREATED]);
  });

  it('cp up (a simple upload): the object under the storage root', async () => {
    await gcloud(['storage', 'cp', 'small.txt', `gs://${UP}/dir/small.txt`]);
    assert.equal(fs.readFileSync(path.join(root, UP, 'dir', 'small.txt'), 'utf8'), small);
    const meta = await api.get(`/storage/v1/b/${UP}/o/${encodeURIComponent('dir/small.txt')}`);
    assert.equal(meta.json.size, String(small.length), meta.text);
  });

  it('ls (a folder) and ls -l (every object, its size and time, the total)', async () => {
    const [ls, lsl] = await Promise.all([
      gcloud(['storage', 'ls', `gs://${LS}/`]),
      gcloud(['storage', 'ls', '-l', `gs://${LS}/**`]),
    ]);
    assert.deepEqual(ls.stdout.trim().split('\n'), [`gs://${LS}/dir/`]);
    assert.match(lsl.stdout, new RegExp(`^\\s*${small.length}\\s+\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z\\s+gs://${LS}/dir/small\\.txt$`, 'm'),
      lsl.stdout);
    assert.match(lsl.stdout, /TOTAL: 1 objects, 18 bytes/);
  });

  it('cat', { skip: !FULL && 'make test-gcloud-format (TRAINPLANE_GCLOUD_FORMAT_FULL=1) runs it: cp down sends the same' },
    async () => {
      const cat = await gcloud(['storage', 'cat', `gs://${LS}/dir/small.txt`]);
      assert.equal(cat.stdout, small);
    });

  it('rm (two objects)', async () => {
    await gcloud(['storage', 'rm', `gs://${RM}/dir/small.txt`, `gs://${RM}/second.bin`]);
    const left = await api.get(`/storage/v1/b/${RM}/o`);
    assert.equal(left.json.items, undefined, left.text);
  });

  // gcloud storage rm -r asks for the bucket's storage layout first (GET
  // /storage/v1/b/B/storageLayout, for hierarchical namespaces).
  it('rm -r removes a folder\'s objects and exits 0', async () => {
    const rm = await gcloud(['storage', 'rm', '-r', `gs://${RMR}/x`], { check: false });
    const left = await api.get(`/storage/v1/b/${RMR}/o`);
    assert.equal(left.json.items, undefined, left.text);
    assert.equal(rm.status, 0, `gcloud storage rm -r: exit ${rm.status}\n${rm.stderr}`);
  });

  it('buckets list: the project\'s buckets', async () => {
    const list = await gcloud(['storage', 'buckets', 'list', '--format=value(name)']);
    // this file's buckets (the other cases' come and go: these stay)
    const names = list.stdout.trim().split('\n');
    for (const b of [UP, LS, RM, RMR, BIG_DOWN]) assert.ok(names.includes(b), `${b}: ${list.stdout}`);
    assert.deepEqual(names.filter((n) => !ALL.includes(n)), [], list.stdout);
  });

  it('buckets delete: gone, and its folder under the storage root', async () => {
    assert.ok(fs.existsSync(path.join(root, DELETED)));
    await gcloud(['storage', 'buckets', 'delete', `gs://${DELETED}`]);
    assert.equal((await api.get(`/storage/v1/b/${DELETED}`)).status, 404);
    assert.ok(!fs.existsSync(path.join(root, DELETED)));
  });

  it('cp a 40 MiB file up (a resumable session): the object is the file', async () => {
    await gcloud(['storage', 'cp', 'big.bin', `gs://${BIG_UP}/big.bin`]);
    assert.match(server.stderr(), new RegExp(`PUT /resumable/upload/storage/v1/b/${BIG_UP}/o route=storage\\.objects\\.resumableUpload status=200`),
      'gcloud sent it as a resumable upload');
    const onDisk = fs.readFileSync(path.join(root, BIG_UP, 'big.bin'));
    assert.ok(onDisk.equals(big), 'the object under the storage root is the file');
    const meta = await api.get(`/storage/v1/b/${BIG_UP}/o/big.bin`);
    assert.equal(meta.json.md5Hash, crypto.createHash('md5').update(big).digest('base64'));
  });

  it('cp a 40 MiB object down: the same bytes (gcloud checks them against the object\'s hashes)', async () => {
    await gcloud(['storage', 'cp', `gs://${BIG_DOWN}/big.bin`, 'big.down']);
    const down = fs.readFileSync(path.join(dir, 'big.down'));
    assert.equal(down.length, big.length);
    assert.ok(down.equals(big), 'downloaded as uploaded');
  });

  describe('gcloud ai-platform jobs submit training --package-path --staging-bucket', () => {
    it('uploads the trainer\'s sdist to the staging bucket and creates the job with packageUris naming it',
      { skip: !FULL && 'make test-gcloud-format (TRAINPLANE_GCLOUD_FORMAT_FULL=1) runs it' }, async () => {
      const staging = STAGING;
      const b = await api.post(`/storage/v1/b?project=${PROJECT}`, { name: staging });
      assert.equal(b.status, 200, b.text);
      const work = path.join(dir, 'work');
      fs.mkdirSync(path.join(work, 'trainer'), { recursive: true });
      fs.writeFileSync(path.join(work, 'trainer', '__init__.py'), '');
      fs.writeFileSync(path.join(work, 'trainer', 'task.py'),
        'import sys\nprint("trainer args:", sys.argv[1:])\n');
      fs.writeFileSync(path.join(work, 'setup.py'),
        "from setuptools import find_packages, setup\nsetup(name='trainer', version='0.1', packages=find_packages())\n");
      const job = `gcloud_seed_${process.pid}`;
      const r = await gcloud(['ai-platform', 'jobs', 'submit', 'training', job, '--package-path', 'trainer',
        '--module-name', 'trainer.task', '--staging-bucket', `gs://${staging}`, '--region', 'us-central1',
        '--runtime-version', '2.11', '--python-version', '3.7', '--scale-tier', 'BASIC', '--', '--user_arg', 'value'],
      { cwd: work });
      assert.match(`${r.stdout}${r.stderr}`, new RegExp(`Job \\[${job}\\] submitted successfully`));

      const got = await api.get(`/v1/projects/${PROJECT}/jobs/${job}`);
      assert.equal(got.status, 200, got.text);
      const ti = got.json.trainingInput;
      assert.equal(ti.pythonModule, 'trainer.task');
      assert.deepEqual(ti.args, ['--user_arg', 'value']);
      assert.equal(ti.region, 'us-central1');
      assert.equal(ti.runtimeVersion, '2.11');
      assert.equal(ti.pythonVersion, '3.7');
      assert.equal(ti.scaleTier ?? 'BASIC', 'BASIC'); // sent; BASIC is the enum's zero value, which proto3 JSON leaves out
      assert.ok(['QUEUED', 'PREPARING'].includes(got.json.state), got.json.state);
      assert.equal(ti.packageUris?.length, 1, JSON.stringify(ti));
      const m = new RegExp(`^gs://${staging}/(${job}/.+/trainer-0\\.1\\.tar\\.gz)$`).exec(ti.packageUris[0]);
      assert.ok(m, ti.packageUris[0]);

      // The package is an object of the staging bucket, a file under the storage root.
      const file = path.join(root, staging, ...m[1].split('/'));
      assert.ok(fs.existsSync(file), `${file} under the storage root`);
      const tar = zlib.gunzipSync(fs.readFileSync(file)).toString('latin1');
      assert.match(tar, /trainer-0\.1\/trainer\/task\.py/, 'the sdist holds the trainer');
      assert.match(tar, /trainer args:/);
      const o = await api.get(`/storage/v1/b/${staging}/o/${encodeURIComponent(m[1])}`);
      assert.equal(o.status, 200, o.text);
      assert.equal(o.json.size, String(fs.statSync(file).size));
      assert.equal(o.json.md5Hash, crypto.createHash('md5').update(fs.readFileSync(file)).digest('base64'));
    });
  });
});
