// jobs.get from each server's job cache (store/job_cache.c): two servers on
// one database, changes made on one (or in plain SQL) are always seen by the
// next read on the other, with no pause in between; the cache is used (its
// figures in /metrics say so); a lost listening connection falls back to the
// database; job_cache_entries: 0 turns it off.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { client, request, startPostgres, startServer, trainingInput, jobId, waitFor } from './harness.mjs';

let pg;
before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  if (pg) await pg.cleanup();
});

const PROJECT = 'cache-it';
const jobPath = (id) => `/v1/projects/${PROJECT}/jobs/${id}`;

/** The job_cache figures of a server's /metrics: { hit, miss, fills, invalidations, fences }. */
async function cacheFigures(base) {
  const text = (await request(base, 'GET', '/metrics')).text;
  const value = (re) => {
    const m = re.exec(text);
    return m ? Number(m[1]) : null;
  };
  return {
    hit: value(/^trainplane_job_cache_lookups_total\{result="hit"\} (\S+)$/m),
    miss: value(/^trainplane_job_cache_lookups_total\{result="miss"\} (\S+)$/m),
    fills: value(/^trainplane_job_cache_fills_total (\S+)$/m),
    invalidations: value(/^trainplane_job_cache_invalidations_total (\S+)$/m),
    fences: value(/^trainplane_job_cache_fences_total (\S+)$/m),
  };
}

async function createJob(c, id, labels = {}) {
  const res = await c.post(`/v1/projects/${PROJECT}/jobs`, { jobId: id, labels, trainingInput: trainingInput() });
  assert.equal(res.status, 200, res.text);
  return res.json;
}

describe('job cache', () => {
  let db;
  let a;
  let b;
  before(async () => {
    db = pg.newDatabase('cache');
    // No scheduler on either: jobs stay QUEUED, only the test changes them.
    const env = { TRAINPLANE_SCHEDULER: 'false' };
    a = await startServer({ pg: db, env });
    b = await startServer({ pg: db, env });
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('serves repeated gets from memory, byte for byte what the database gives', async () => {
    const ca = client(a.base);
    const id = jobId('cached');
    const created = await createJob(ca, id, { team: 'x' });
    const before = await cacheFigures(a.base);
    const first = await ca.get(jobPath(id));
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.json, created);
    for (let i = 0; i < 20; i++) {
      const again = await ca.get(jobPath(id));
      assert.equal(again.status, 200);
      assert.equal(again.text, first.text);
      assert.equal(again.headers.get('content-type'), 'application/json; charset=UTF-8');
    }
    const now = await cacheFigures(a.base);
    assert.equal(now.fills - before.fills, 1, 'one read of the table filled the cache');
    assert.equal(now.hit - before.hit, 20, 'the next 20 gets were hits');
    assert.ok(now.fences > before.fences, 'hits were fenced');
    // a job that does not exist is never cached: the 404 stays a 404
    for (let i = 0; i < 3; i++) {
      const res = await ca.get(jobPath(`${id}_absent`));
      assert.equal(res.status, 404);
      assert.equal(res.json.error.status, 'NOT_FOUND');
    }
  });

  it('never serves a job older than a change another server acknowledged', async () => {
    const ca = client(a.base);
    const cb = client(b.base);
    const id = jobId('crossed');
    let job = await createJob(cb, id);
    assert.equal((await ca.get(jobPath(id))).status, 200);	// cached on A
    const before = await cacheFigures(a.base);
    for (let i = 0; i < 100; i++) {
      const res = await cb.patch(`${jobPath(id)}?updateMask=labels`, { labels: { n: String(i) }, etag: job.etag });
      assert.equal(res.status, 200, res.text);
      job = res.json;
      // no pause: the answer on A must already be the patched job
      const seen = await ca.get(jobPath(id));
      assert.equal(seen.status, 200);
      assert.deepEqual(seen.json.labels, { n: String(i) }, `round ${i}`);
      assert.equal(seen.json.etag, job.etag, `round ${i}`);
      // and A's answer is cached again for the next round's first read
      assert.equal((await ca.get(jobPath(id))).text, seen.text);
    }
    const now = await cacheFigures(a.base);
    assert.ok(now.invalidations - before.invalidations >= 100, JSON.stringify({ before, now }));
    assert.ok(now.hit - before.hit >= 100, JSON.stringify({ before, now }));

    const cancelled = await cb.post(`${jobPath(id)}:cancel`, {});
    assert.equal(cancelled.status, 200, cancelled.text);
    const seen = await ca.get(jobPath(id));
    assert.equal(seen.json.state, 'CANCELLED');
    assert.ok(seen.json.endTime);
  });

  it('sees a change made in plain SQL, and a job deleted and created again', async () => {
    const ca = client(a.base);
    const id = jobId('bysql');
    await createJob(ca, id, { v: 'api' });
    assert.deepEqual((await ca.get(jobPath(id))).json.labels, { v: 'api' });
    assert.deepEqual((await ca.get(jobPath(id))).json.labels, { v: 'api' });
    db.psql(`UPDATE jobs SET labels = '{"v": "sql"}' WHERE job_id = '${id}'`);
    assert.deepEqual((await ca.get(jobPath(id))).json.labels, { v: 'sql' });
    db.psql(`DELETE FROM jobs WHERE job_id = '${id}'`);
    assert.equal((await ca.get(jobPath(id))).status, 404);
    const again = await createJob(client(b.base), id, { v: 'again' });
    assert.deepEqual((await ca.get(jobPath(id))).json, again);
    assert.deepEqual((await ca.get(jobPath(id))).json, again);
  });

  it('serves Vertex customJobs.get the same way, per location, and forgets a deleted job', async () => {
    const ca = client(a.base);
    const cb = client(b.base);
    const parent = `/v1/projects/${PROJECT}/locations/us-central1`;
    const created = await cb.post(`${parent}/customJobs`, {
      displayName: 'cached', labels: { v: '1' },
      jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1',
        containerSpec: { imageUri: 'gcr.io/test/trainer:latest' } }] },
    });
    assert.equal(created.status, 200, created.text);
    const name = `/v1/${created.json.name}`;
    const before = await cacheFigures(a.base);
    const first = await ca.get(name);
    assert.deepEqual(first.json, created.json);
    assert.equal((await ca.get(name)).text, first.text);
    assert.equal((await cacheFigures(a.base)).hit - before.hit, 1);
    // the same job asked for under another location is not found, cached or not
    const id = created.json.name.split('/').pop();
    for (let i = 0; i < 2; i++) {
      const res = await ca.get(`/v1/projects/${PROJECT}/locations/europe-west4/customJobs/${id}`);
      assert.equal(res.status, 404, res.text);
    }
    // cancelled on B, seen on A at once; then deleted on B: gone on A
    assert.equal((await cb.post(`${name}:cancel`, {})).status, 200);
    assert.equal((await ca.get(name)).json.state, 'JOB_STATE_CANCELLED');
    assert.equal((await ca.get(name)).json.state, 'JOB_STATE_CANCELLED');
    assert.equal((await cb.del(name)).status, 200);
    const gone = await ca.get(name);
    assert.equal(gone.status, 404, gone.text);
    assert.equal(gone.json.error.status, 'NOT_FOUND');
  });

  it('goes to the database while its listening connection is lost, and caches again after', async () => {
    const ca = client(a.base);
    const id = jobId('orphan');
    await createJob(ca, id, { v: '1' });
    await ca.get(jobPath(id));
    assert.deepEqual((await ca.get(jobPath(id))).json.labels, { v: '1' });
    // Kill both servers' listening connections (their LISTEN hubs), then
    // change the job while nobody listens.
    db.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity " +
      "WHERE application_name = 'trainplane-server/listen' AND datname = current_database()");
    db.psql(`UPDATE jobs SET labels = '{"v": "2"}' WHERE job_id = '${id}'`);
    for (let i = 0; i < 10; i++) {
      const res = await ca.get(jobPath(id));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.labels, { v: '2' }, `read ${i}`);
    }
    // back to hits once it listens again
    let hits = 0;
    for (let i = 0; i < 100 && hits === 0; i++) {
      const f0 = (await cacheFigures(a.base)).hit;
      await ca.get(jobPath(id));
      hits = (await cacheFigures(a.base)).hit - f0;
      if (!hits) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(hits > 0, 'the cache served again after reconnecting');
    assert.match(a.stderr(), /job cache: connection lost/);
    // Said as the cache is up again, perhaps just after a first hit: wait for it.
    await waitFor(() => /job cache: listening again/.test(a.stderr()), 10_000,
      `the job cache says it listens again:\n${a.stderr().slice(-2000)}`);
  });
});

describe('job cache off', () => {
  it('job_cache_entries: 0 reads the table every time and shows no cache figures', async () => {
    const s = await startServer({ pg: pg.newDatabase('nocache'), env: { TRAINPLANE_JOB_CACHE_ENTRIES: '0' } });
    try {
      const c = client(s.base);
      const id = jobId('uncached');
      const created = await createJob(c, id);
      for (let i = 0; i < 3; i++) assert.deepEqual((await c.get(jobPath(id))).json, created);
      const figures = await cacheFigures(s.base);
      assert.equal(figures.hit, null);
      assert.equal(figures.fences, null);
    } finally {
      await s.stop();
    }
  });
});
