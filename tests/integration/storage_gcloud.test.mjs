// Google's own gcloud against the server's Cloud Storage API and the AI
// Platform Training API: `gcloud storage` (buckets create, cp up (a simple
// upload, and a 40 MiB file, which gcloud sends as a resumable session) and
// down, cat, ls, ls -l, rm, buckets list, buckets delete) and the seed
// command form `gcloud ai-platform jobs submit training --package-path ...
// --staging-bucket gs://...`, which builds the trainer's sdist, uploads it
// to the staging bucket and creates the job with packageUris naming it.
//
// make test leaves the submit out (make test-gcloud-format,
// TRAINPLANE_GCLOUD_FORMAT_FULL=1, runs it): gcloud_seeds.test's seed 002
// runs the same command and checks the same of the sdist it uploads (the
// object under the storage root, its size and MD5, the trainer in it) and
// of the job it creates, then runs it.
//
// gcloud runs with a private configuration (CLOUDSDK_CONFIG in a temp dir)
// whose endpoints are this server's, credentials off; it reaches nothing
// else. Without /usr/bin/gcloud (TRAINPLANE_GCLOUD names another) the file
// is skipped, and says so. Each gcloud command takes a second or more to
// start: the commands here are few.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { PG_BASE, client, makeTempDir, startPostgres, startServer } from './harness.mjs';

const GCLOUD = process.env.TRAINPLANE_GCLOUD || '/usr/bin/gcloud';
const SKIP = fs.existsSync(GCLOUD) ? false
  : `gcloud is not installed (${GCLOUD}; apt-get install google-cloud-cli): this file tests the server with Google's own client`;
const PROJECT = 'demo';
const BUCKET = 'gcloud-bkt';
const RMR_BUCKET = 'gcloud-rmr';
const BIG_BUCKET = 'gcloud-big';
const STAGING_BUCKET = 'gcloud-staging';
const FULL = process.env.TRAINPLANE_GCLOUD_FORMAT_FULL === '1';

// The four parts below run side by side, each in its own buckets (the
// steps within a part one after another): a gcloud command is mostly CPU,
// and a loaded machine shares it by process, so a part's gcloud runs one
// after another are what the file takes (the 40 MiB copies are a part of
// their own for that).
describe('gcloud against the server', { skip: SKIP, concurrency: 4 }, () => {
  let pg;
  let server;
  let api;
  let dir;
  let root;
  let config;

  before(async () => {
    pg = await startPostgres();
    dir = makeTempDir('tp-gcloud-');
    root = makeTempDir('tp-gcloud-gcs-', PG_BASE);
    server = await startServer({
      pg,
      env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_STORAGE_ROOT: root, TRAINPLANE_LOG_LEVEL: 'debug' },
    });
    api = client(server.base);
    // What `gcloud config set` writes (api_endpoint_overrides/storage, ml and
    // logging, auth/disable_credentials, core/project), written at once: a
    // gcloud command costs a second or two of a loaded machine.
    config = path.join(dir, 'config');
    fs.mkdirSync(path.join(config, 'configurations'), { recursive: true });
    fs.writeFileSync(path.join(config, 'active_config'), 'default');
    fs.writeFileSync(path.join(config, 'gce'), 'False'); // not on Google's cloud: no metadata server to ask
    fs.writeFileSync(path.join(config, 'configurations', 'config_default'), `[api_endpoint_overrides]
storage = ${server.base}/storage/v1/
ml = ${server.base}/
logging = ${server.base}/

[auth]
disable_credentials = true

[core]
project = ${PROJECT}
disable_usage_reporting = true

[component_manager]
disable_update_check = true

[survey]
disable_prompts = true
`);
  });

  after(async () => {
    try {
      if (server) await server.stop();
    } finally {
      server?.kill();
      await pg?.cleanup();
    }
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

  const small = 'hello from gcloud\n';
  const big = crypto.randomBytes(40 * 2 ** 20);

  describe('gcloud storage', { concurrency: 1 }, () => {
    it('buckets create: the bucket, in the configured project', async () => {
      await gcloud(['storage', 'buckets', 'create', `gs://${BUCKET}`]);
      const b = await api.get(`/storage/v1/b/${BUCKET}`);
      assert.equal(b.status, 200, b.text);
      const mine = await api.get(`/storage/v1/b?project=${PROJECT}&prefix=${BUCKET}`);
      assert.deepEqual(mine.json.items.map((x) => x.name), [BUCKET]);
    });

    it('cp up (a simple upload), cat, ls and ls -l', async () => {
      fs.writeFileSync(path.join(dir, 'small.txt'), small);
      await gcloud(['storage', 'cp', 'small.txt', `gs://${BUCKET}/dir/small.txt`]);
      assert.equal(fs.readFileSync(path.join(root, BUCKET, 'dir', 'small.txt'), 'utf8'), small);
      const [cat, ls, lsl] = await Promise.all([
        gcloud(['storage', 'cat', `gs://${BUCKET}/dir/small.txt`]),
        gcloud(['storage', 'ls', `gs://${BUCKET}/`]),
        gcloud(['storage', 'ls', '-l', `gs://${BUCKET}/**`]),
      ]);
      assert.equal(cat.stdout, small);
      assert.deepEqual(ls.stdout.trim().split('\n'), [`gs://${BUCKET}/dir/`]);
      assert.match(lsl.stdout, new RegExp(`^\\s*${small.length}\\s+\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z\\s+gs://${BUCKET}/dir/small\\.txt$`, 'm'),
        lsl.stdout);
      assert.match(lsl.stdout, /TOTAL: 1 objects, 18 bytes/);
    });

    it('rm (two objects), buckets list, buckets delete', async () => {
      const second = await api.request('POST', `/upload/storage/v1/b/${BUCKET}/o?uploadType=media&name=second.bin`,
        { body: 'second' });
      assert.equal(second.status, 200, second.text);
      const [, list] = await Promise.all([
        gcloud(['storage', 'rm', `gs://${BUCKET}/dir/small.txt`, `gs://${BUCKET}/second.bin`]),
        gcloud(['storage', 'buckets', 'list', '--format=value(name)']),
      ]);
      const left = await api.get(`/storage/v1/b/${BUCKET}/o`);
      assert.equal(left.json.items, undefined, left.text);
      // this file's buckets (the other parts' come and go)
      const names = list.stdout.trim().split('\n');
      assert.ok(names.includes(BUCKET), list.stdout);
      assert.deepEqual(names.filter((n) => ![BUCKET, RMR_BUCKET, STAGING_BUCKET, BIG_BUCKET].includes(n)), [], list.stdout);
      await gcloud(['storage', 'buckets', 'delete', `gs://${BUCKET}`]);
      assert.equal((await api.get(`/storage/v1/b/${BUCKET}`)).status, 404);
      assert.ok(!fs.existsSync(path.join(root, BUCKET)));
    });
  });

  describe('gcloud storage, a 40 MiB file', () => {
    it('cp a 40 MiB file up (a resumable session) and back down: the same bytes', async () => {
      const b = await api.post(`/storage/v1/b?project=${PROJECT}`, { name: BIG_BUCKET });
      assert.equal(b.status, 200, b.text);
      fs.writeFileSync(path.join(dir, 'big.bin'), big);
      await gcloud(['storage', 'cp', 'big.bin', `gs://${BIG_BUCKET}/big.bin`]);
      assert.match(server.stderr(), /PUT \/resumable\/upload\/storage\/v1\/b\/gcloud-big\/o route=storage\.objects\.resumableUpload status=200/,
        'gcloud sent it as a resumable upload');
      const onDisk = fs.readFileSync(path.join(root, BIG_BUCKET, 'big.bin'));
      assert.ok(onDisk.equals(big), 'the object under the storage root is the file');
      await gcloud(['storage', 'cp', `gs://${BIG_BUCKET}/big.bin`, 'big.down']);
      const down = fs.readFileSync(path.join(dir, 'big.down'));
      assert.equal(down.length, big.length);
      assert.ok(down.equals(big), 'downloaded as uploaded');
      const meta = await api.get(`/storage/v1/b/${BIG_BUCKET}/o/big.bin`);
      assert.equal(meta.json.md5Hash, crypto.createHash('md5').update(big).digest('base64'));
    });
  });

  // gcloud storage rm -r asks for the bucket's storage layout first (GET
  // /storage/v1/b/B/storageLayout, for hierarchical namespaces).
  describe('gcloud storage rm -r', () => {
    it('removes a folder\'s objects and exits 0', async () => {
      const b = await api.post(`/storage/v1/b?project=${PROJECT}`, { name: RMR_BUCKET });
      assert.equal(b.status, 200, b.text);
      for (const n of ['x/1', 'x/2']) {
        const r = await api.request('POST', `/upload/storage/v1/b/${RMR_BUCKET}/o?uploadType=media&name=${encodeURIComponent(n)}`,
          { body: n });
        assert.equal(r.status, 200, r.text);
      }
      const rm = await gcloud(['storage', 'rm', '-r', `gs://${RMR_BUCKET}/x`], { check: false });
      const left = await api.get(`/storage/v1/b/${RMR_BUCKET}/o`);
      assert.equal(left.json.items, undefined, left.text);
      assert.equal(rm.status, 0, `gcloud storage rm -r: exit ${rm.status}\n${rm.stderr}`);
    });
  });

  describe('gcloud ai-platform jobs submit training --package-path --staging-bucket', () => {
    it('uploads the trainer\'s sdist to the staging bucket and creates the job with packageUris naming it',
      { skip: !FULL && 'make test-gcloud-format (TRAINPLANE_GCLOUD_FORMAT_FULL=1) runs it' }, async () => {
      const staging = STAGING_BUCKET;
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
