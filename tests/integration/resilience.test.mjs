// Resilience: PostgreSQL restarts under load (503 UNAVAILABLE while it is
// down, nothing acknowledged lost), the embedded PostgreSQL (initdb on first
// start, reuse on the second, stopped on exit), and start-up failures on a
// bad configuration or catalog.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  SANITIZED, assertError, client, makeTempDir, postgresProcessesFor, removeTempDir, request, runServerSync,
  sanitizerReport, startPostgres, startServer, trainingInput, waitFor,
} from './harness.mjs';

const REQUEST_LIMIT_MS = 10_000;

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) {
    try { await fn(); } catch { /* best effort */ }
  }
});

/**
 * `n` clients creating jobs in a loop until stop(); every outcome recorded
 * as { id, status, body, ms } (status 'timeout'/'network' on a failure).
 */
function createLoad(base, n, prefix) {
  let running = true;
  const outcomes = [];
  const loops = Array.from({ length: n }, async (_, k) => {
    for (let i = 0; running; i++) {
      const id = `${prefix}_c${k}_${i}`;
      const t0 = Date.now();
      let status;
      let body;
      try {
        const res = await request(base, 'POST', '/v1/projects/resilience/jobs', {
          body: { jobId: id, trainingInput: trainingInput() },
          timeoutMs: REQUEST_LIMIT_MS,
        });
        status = res.status;
        body = res.json ?? res.text;
      } catch (e) {
        status = e.name === 'TimeoutError' ? 'timeout' : 'network';
        body = String(e);
      }
      outcomes.push({ id, status, body, ms: Date.now() - t0 });
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function assertUnavailable(res) {
  const e = assertError(res, 503, 'UNAVAILABLE');
  assert.ok(e.message.length > 0);
}

describe('PostgreSQL restart during requests', () => {
  for (const mode of ['fast', 'immediate']) {
    it(`stop -m ${mode}: 503 UNAVAILABLE while down, server stays up, nothing acknowledged lost`, async () => {
      const pg = await startPostgres();
      cleanups.push(() => pg.cleanup());
      const server = await startServer({ pg });
      cleanups.push(() => server.kill());
      const c = client(server.base);

      // A job from before the outage, read back afterwards.
      const early = await c.post('/v1/projects/resilience/jobs', { jobId: `early_${mode}`, trainingInput: trainingInput() });
      assert.equal(early.status, 200, early.text);

      const load = createLoad(server.base, 4, mode);
      await new Promise((r) => setTimeout(r, 400));

      pg.stop(mode);
      const downAt = load.outcomes.length;
      await new Promise((r) => setTimeout(r, 300));
      // While it is down: /readyz and database-backed calls are 503, /healthz 200.
      let t0 = Date.now();
      const ready = await c.get('/readyz', { timeoutMs: REQUEST_LIMIT_MS });
      assertUnavailable(ready);
      assert.ok(Date.now() - t0 < REQUEST_LIMIT_MS);
      assertUnavailable(await c.get(`/v1/projects/resilience/jobs/early_${mode}`, { timeoutMs: REQUEST_LIMIT_MS }));
      assertUnavailable(await c.get('/v1/projects/resilience/jobs', { timeoutMs: REQUEST_LIMIT_MS }));
      assertUnavailable(await c.post(`/v1/projects/resilience/jobs/early_${mode}:cancel`, {}, { timeoutMs: REQUEST_LIMIT_MS }));
      const live = await c.get('/healthz');
      assert.equal(live.status, 200, live.text);
      // getConfig and locations need no database.
      assert.equal((await c.get('/v1/projects/resilience:getConfig')).status, 200);
      await new Promise((r) => setTimeout(r, 700));
      assert.ok(server.alive(), 'the server is still running');
      const duringDown = load.outcomes.length - downAt;

      pg.start();
      t0 = Date.now();
      await waitFor(async () => (await c.get('/readyz')).status === 200, REQUEST_LIMIT_MS, '/readyz did not become 200 after the restart');
      const upAt = load.outcomes.length;
      await new Promise((r) => setTimeout(r, 500));
      await load.stop();

      const { outcomes } = load;
      const bad = outcomes.filter((o) => o.status !== 200 && o.status !== 503);
      assert.deepEqual(bad, [], 'every create is 200 or 503 (no 500, no hang, no dropped connection)');
      const slow = outcomes.filter((o) => o.ms >= REQUEST_LIMIT_MS);
      assert.deepEqual(slow, [], `no request takes ${REQUEST_LIMIT_MS} ms`);
      for (const o of outcomes.filter((x) => x.status === 503)) {
        assert.equal(o.body?.error?.status, 'UNAVAILABLE', JSON.stringify(o.body));
        assert.equal(o.body?.error?.code, 503);
      }
      assert.ok(duringDown > 0, 'clients kept sending while the database was down');
      assert.ok(outcomes.some((o) => o.status === 503), 'some creates met the outage');
      assert.ok(outcomes.slice(upAt).some((o) => o.status === 200), 'creates succeed again after the restart');
      assert.ok(outcomes.slice(0, downAt).some((o) => o.status === 200), 'creates succeeded before the outage');

      // Nothing acknowledged is lost.
      const acked = outcomes.filter((o) => o.status === 200);
      const lost = [];
      for (const o of [...acked, { id: `early_${mode}`, body: early.json }]) {
        const got = await c.get(`/v1/projects/resilience/jobs/${o.id}`);
        if (got.status !== 200 || got.json.jobId !== o.id || got.json.createTime !== o.body.createTime) {
          lost.push(`${o.id}: ${got.status} ${got.text}`);
        }
      }
      assert.deepEqual(lost, []);
      // And the list agrees.
      const listed = new Set();
      let token = '';
      do {
        const res = await c.get(`/v1/projects/resilience/jobs?pageSize=100${token ? `&pageToken=${token}` : ''}`);
        assert.equal(res.status, 200, res.text);
        for (const j of res.json.jobs ?? []) listed.add(j.jobId);
        token = res.json.nextPageToken;
      } while (token);
      for (const o of acked) assert.ok(listed.has(o.id), `${o.id} listed`);

      assert.ok(server.alive());
      await server.stop();
      await pg.cleanup();
    });
  }

  it('the server waits for a database that is not up yet at start', async () => {
    const pg = await startPostgres();
    cleanups.push(() => pg.cleanup());
    pg.stop('fast');
    const starting = startServer({ pg, env: { TRAINPLANE_DB_WAIT_SECONDS: '20' } });
    await new Promise((r) => setTimeout(r, 1000));
    pg.start();
    const server = await starting;
    cleanups.push(() => server.kill());
    const res = await client(server.base).post('/v1/projects/p/jobs', { jobId: 'late_db', trainingInput: trainingInput() });
    assert.equal(res.status, 200, res.text);
    await server.stop();
    await pg.cleanup();
  });
});

describe('embedded PostgreSQL (no database URL)', () => {
  it('initdb on first start (a template kept), reuse on the second, stopped on exit; a fresh one copies the template', async () => {
    const state = makeTempDir('tp-emb-');
    const cache = makeTempDir('tp-cache-');
    cleanups.push(() => removeTempDir(state), () => removeTempDir(cache));
    const dataDir = path.join(state, 'postgres');
    const env = { TRAINPLANE_STATE_DIR: state, XDG_CACHE_HOME: cache };

    const first = await startServer({ env, startTimeoutMs: 90_000 });
    cleanups.push(() => first.kill());
    assert.match(first.stderr(), /initialising the embedded database/);
    assert.match(first.stderr(), /kept a template of the fresh database in /);
    assert.ok(fs.existsSync(path.join(dataDir, 'PG_VERSION')), 'a cluster under the state dir');
    assert.ok(postgresProcessesFor(dataDir).length > 0, 'its postgres runs');
    const made = await client(first.base).post('/v1/projects/emb/jobs', {
      jobId: 'survivor', trainingInput: trainingInput(), labels: { keep: 'me' },
    });
    assert.equal(made.status, 200, made.text);
    await first.stop();
    assert.deepEqual(postgresProcessesFor(dataDir), [], 'no postgres left for the data dir after exit');
    assert.ok(!fs.existsSync(path.join(dataDir, 'postmaster.pid')), 'postmaster.pid removed');

    const second = await startServer({ env, startTimeoutMs: 90_000 });
    cleanups.push(() => second.kill());
    assert.doesNotMatch(second.stderr(), /initialising the embedded database|a copy of/, 'the second start reuses the data');
    // A second server on the same state directory while this one runs is
    // refused at once: it must not adopt this one's database and, failing
    // later (here on its port), stop it under this one.
    const port = new URL(second.base).port;
    const dup = runServerSync([], { env: { ...env, TRAINPLANE_LISTEN: `127.0.0.1:${port}` } });
    assert.notEqual(dup.status, 0, dup.stderr);
    assert.match(dup.stderr, /another trainplane-server \(pid \d+\) runs on the state directory/);
    assert.ok(postgresProcessesFor(dataDir).length > 0, 'the running server keeps its postgres');
    assert.equal((await client(second.base).get('/readyz')).status, 200, 'and answers');
    const got = await client(second.base).get('/v1/projects/emb/jobs/survivor');
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, made.json, 'the job survived the restart');
    await second.stop();
    assert.deepEqual(postgresProcessesFor(dataDir), [], 'no postgres left after the second exit');
    removeTempDir(state);

    // A fresh state directory: a copy of the template, no initdb.
    const fresh = makeTempDir('tp-emb-');
    cleanups.push(() => removeTempDir(fresh));
    const third = await startServer({ env: { TRAINPLANE_STATE_DIR: fresh, XDG_CACHE_HOME: cache }, startTimeoutMs: 90_000 });
    cleanups.push(() => third.kill());
    assert.match(third.stderr(), /the embedded database in .*: a copy of /);
    assert.doesNotMatch(third.stderr(), /initialising the embedded database/);
    assert.equal((await client(third.base).get('/v1/projects/emb/jobs/survivor')).status, 404, 'a database of its own');
    await third.stop();
    assert.deepEqual(postgresProcessesFor(path.join(fresh, 'postgres')), []);
  });
});

describe('start-up failures', () => {
  // No database is ever reached: these must fail before connecting.
  const noDb = { TRAINPLANE_DATABASE_URL: 'host=/nonexistent-trainplane dbname=x', TRAINPLANE_DB_WAIT_SECONDS: '0' };

  function assertCleanFailure(r) {
    assert.notEqual(r.signal, 'SIGTERM', 'it exited by itself (did not hang until the timeout)');
    assert.equal(r.signal, null, `exit by signal ${r.signal}: ${r.stderr}`);
    assert.notEqual(r.status, 0, r.stderr);
    if (SANITIZED) assert.equal(sanitizerReport(r.stderr), null, r.stderr);
  }

  it('a config file with an unknown key: non-zero exit naming file, line and key', () => {
    const dir = makeTempDir('tp-cfg-');
    const file = path.join(dir, 'server.yaml');
    fs.writeFileSync(file, 'listen: 127.0.0.1:0\nbogus_key: 1\nlog_level: info\n');
    const r = runServerSync(['--config', file], { env: noDb });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(`${file}:2`), `names file and line 2: ${r.stderr}`);
    assert.match(r.stderr, /bogus_key/);
    assert.match(r.stderr, /unknown key/);
    removeTempDir(dir);
  });

  it('a config file with a bad value or bad YAML: non-zero exit naming file, line and key', () => {
    const dir = makeTempDir('tp-cfg-');
    const file = path.join(dir, 'server.yaml');
    fs.writeFileSync(file, 'listen: 127.0.0.1:0\n\ndb_pool_size: lots\n');
    let r = runServerSync(['--config', file], { env: noDb });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(`${file}:3`), r.stderr);
    assert.match(r.stderr, /db_pool_size/);

    fs.writeFileSync(file, 'listen: [unclosed\n');
    r = runServerSync(['--config', file], { env: noDb });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(file), r.stderr);

    r = runServerSync(['--config', path.join(dir, 'missing.yaml')], { env: noDb });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(path.join(dir, 'missing.yaml')), r.stderr);

    r = runServerSync([], { env: { ...noDb, TRAINPLANE_LOG_LEVEL: 'chatty' } });
    assertCleanFailure(r);
    assert.match(r.stderr, /LOG_LEVEL|log_level/);
    removeTempDir(dir);
  });

  it('a missing or broken catalog: non-zero exit with a clear message', () => {
    const dir = makeTempDir('tp-cat-');
    const missing = path.join(dir, 'nope', 'catalog.yaml');
    let r = runServerSync([], { env: { ...noDb, TRAINPLANE_CATALOG: missing } });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(missing), `names the catalog path: ${r.stderr}`);
    assert.match(r.stderr, /catalog/i);

    const broken = path.join(dir, 'catalog.yaml');
    fs.writeFileSync(broken, 'version: 1\nregions: [\n');
    r = runServerSync([], { env: { ...noDb, TRAINPLANE_CATALOG: broken } });
    assertCleanFailure(r);
    assert.ok(r.stderr.includes(broken), r.stderr);
    assert.match(r.stderr, /catalog/i);

    fs.writeFileSync(broken, 'version: 1\nno_such_section: {}\n');
    r = runServerSync([], { env: { ...noDb, TRAINPLANE_CATALOG: broken } });
    assertCleanFailure(r);
    assert.match(r.stderr, /no_such_section/);
    removeTempDir(dir);
  });
});
