// Page tokens (server/paging.h, issue 12 item 8): opaque, tamper-evident,
// and good only for the list they were made for: the same method, project,
// location, filter and order. A token of another project, collection or
// filter, one altered in any bit, cut short, hand-made, or made by the
// servers of another database is 400 INVALID_ARGUMENT. The servers of one
// database share the key: a token from one works on the other.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertError, client, startPostgres, startServer, trainingInput } from './harness.mjs';

const ML_BAD = "Field: page_token Error: The page token is invalid or doesn't match arguments from the request.";
const VERTEX_BAD = "Invalid page token: it is malformed or doesn't match arguments from the request.";
const LOG_BAD = "Field: page_token Error: page_token doesn't match arguments from the request.";

let pg;
let db;
let a;
let b;
let other;
before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
  db = pg.newDatabase('tokens');
  const env = { TRAINPLANE_SCHEDULER: 'false' };
  a = await startServer({ pg: db, env });
  b = await startServer({ pg: db, env });
  // Another database: another key.
  other = await startServer({ pg: pg.newDatabase('elsewhere'), env });
  for (const s of [a, other]) {
    const c = client(s.base);
    for (const project of ['team-a', 'team-b']) {
      for (let i = 0; i < 3; i++) {
        const r = await c.post(`/v1/projects/${project}/jobs`, { jobId: `j${i}`, trainingInput: trainingInput() });
        assert.equal(r.status, 200, r.text);
      }
    }
  }
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await other?.stop();
  await pg?.cleanup();
});

const jobs = (project) => `/v1/projects/${project}/jobs`;
const ids = (page) => (page.json.jobs ?? []).map((j) => j.jobId);
const b64url = (bytes) => Buffer.from(bytes).toString('base64url');

/** The first page of team-a's jobs, one a page, and its token. */
async function firstPage(c = client(a.base), query = '') {
  const res = await c.get(`${jobs('team-a')}?pageSize=1${query}`);
  assert.equal(res.status, 200, res.text);
  assert.ok(res.json.nextPageToken, res.text);
  return res.json.nextPageToken;
}

describe('page tokens', () => {
  it('page through as before, on either server of the database', async () => {
    const ca = client(a.base);
    const cb = client(b.base);
    const token = await firstPage(ca);
    const onA = await ca.get(`${jobs('team-a')}?pageSize=1&pageToken=${token}`);
    const onB = await cb.get(`${jobs('team-a')}?pageSize=1&pageToken=${token}`);
    assert.equal(onA.status, 200, onA.text);
    assert.equal(onB.status, 200, onB.text);
    assert.deepEqual(ids(onA), ['j1']);
    assert.deepEqual(onB.json, onA.json, 'the same next page, with the same next token');
    const last = await cb.get(`${jobs('team-a')}?pageSize=1&pageToken=${onB.json.nextPageToken}`);
    assert.deepEqual(ids(last), ['j0']);
    assert.equal(last.json.nextPageToken, undefined);
  });

  it('a token of project A does not list project B', async () => {
    const c = client(a.base);
    const token = await firstPage(c);
    assertError(await c.get(`${jobs('team-b')}?pageSize=1&pageToken=${token}`), 400, 'INVALID_ARGUMENT', ML_BAD);
  });

  it('a token made by the servers of another database is refused', async () => {
    const token = await firstPage(client(other.base));
    assertError(await client(a.base).get(`${jobs('team-a')}?pageSize=1&pageToken=${token}`), 400, 'INVALID_ARGUMENT', ML_BAD);
  });

  it('a token with any one bit flipped, cut short or lengthened is refused', async () => {
    const c = client(a.base);
    const token = await firstPage(c);
    const raw = Buffer.from(token, 'base64url');
    assert.equal(b64url(raw), token, 'base64url without padding');
    const bad = [];
    for (let i = 0; i < raw.length * 8; i++) {
      const flipped = Buffer.from(raw);
      flipped[i >> 3] ^= 1 << (i & 7);
      bad.push(b64url(flipped));
    }
    bad.push(token.slice(0, -1), token.slice(0, token.length >> 1), `${token}A`, b64url(Buffer.concat([raw, raw])));
    const answers = [];
    for (const t of bad) answers.push([t, await c.get(`${jobs('team-a')}?pageSize=1&pageToken=${t}`)]);
    assert.deepEqual(answers.filter(([, res]) => res.status !== 400).map(([t, res]) => `${t}: ${res.status}`), [],
      'every altered token is refused');
    for (const [, res] of answers) assertError(res, 400, 'INVALID_ARGUMENT', ML_BAD);
  });

  it('hand-made tokens of the old format are refused', async () => {
    const c = client(a.base);
    // "tp1.<row id>.<FNV-1a of the filter>": 811c9dc5 is the hash of no filter.
    for (const text of ['tp1.999999.811c9dc5', 'tp1.2.811c9dc5', 'tp1.0.811c9dc5']) {
      assertError(await c.get(`${jobs('team-a')}?pageSize=1&pageToken=${b64url(text)}`), 400, 'INVALID_ARGUMENT', ML_BAD);
    }
  });

  it('a token shows no row id', async () => {
    const c = client(a.base);
    const token = await firstPage(c);
    // The row after which the next page starts: team-a's j2 on this database.
    const id = BigInt(db.psql("SELECT id FROM jobs WHERE project = 'team-a' AND job_id = 'j2'"));
    const raw = Buffer.from(token, 'base64url');
    const be = Buffer.alloc(8);
    be.writeBigInt64BE(id);
    const le = Buffer.alloc(8);
    le.writeBigInt64LE(id);
    assert.ok(!raw.includes(be) && !raw.includes(le) && !raw.includes(Buffer.from(`.${id}.`)),
      `token ${token} carries row id ${id}`);
    assert.ok(!/^tp1\./.test(raw.toString('latin1')));
  });

  it('a token is bound to its filter', async () => {
    const c = client(a.base);
    const filter = encodeURIComponent('state:QUEUED');
    const token = await firstPage(c, `&filter=${filter}`);
    assert.equal((await c.get(`${jobs('team-a')}?pageSize=1&filter=${filter}&pageToken=${token}`)).status, 200);
    assertError(await c.get(`${jobs('team-a')}?pageSize=1&pageToken=${token}`), 400, 'INVALID_ARGUMENT', ML_BAD);
    assertError(await c.get(`${jobs('team-a')}?pageSize=1&filter=${encodeURIComponent('state:FAILED')}&pageToken=${token}`),
      400, 'INVALID_ARGUMENT', ML_BAD);
  });

  it('Vertex: a customJobs token does not list trainingPipelines, operations or another location', async () => {
    const c = client(a.base);
    const loc = '/v1/projects/team-a/locations/us-central1';
    const spec = { replicaCount: '1', machineSpec: { machineType: 'n1-standard-4' },
      containerSpec: { imageUri: 'localhost/trainer:test', command: ['true'] } };
    for (let i = 0; i < 2; i++) {
      const r = await c.post(`${loc}/customJobs`, { displayName: `v${i}`, jobSpec: { workerPoolSpecs: [spec] } });
      assert.equal(r.status, 200, r.text);
    }
    const first = await c.get(`${loc}/customJobs?pageSize=1`);
    const token = first.json.nextPageToken;
    assert.ok(token, first.text);
    const next = await c.get(`${loc}/customJobs?pageSize=1&pageToken=${token}`);
    assert.equal(next.status, 200, next.text);
    assert.equal(next.json.customJobs.length, 1);
    assertError(await c.get(`${loc}/trainingPipelines?pageSize=1&pageToken=${token}`), 400, 'INVALID_ARGUMENT', VERTEX_BAD);
    assertError(await c.get('/v1/projects/team-a/locations/europe-west4/customJobs?pageSize=1'
      + `&pageToken=${token}`), 400, 'INVALID_ARGUMENT', VERTEX_BAD);
    assertError(await c.get(`/v1/projects/team-b/locations/us-central1/customJobs?pageSize=1&pageToken=${token}`),
      400, 'INVALID_ARGUMENT', VERTEX_BAD);
    assertError(await c.get(`${loc}/operations?pageSize=1&pageToken=${token}`), 400, 'INVALID_ARGUMENT', 'Invalid page token.');
    // Nor does an ml jobs token list customJobs.
    assertError(await c.get(`${loc}/customJobs?pageSize=1&pageToken=${await firstPage(c)}`), 400, 'INVALID_ARGUMENT', VERTEX_BAD);
  });

  describe('entries:list', () => {
    const list = (c, body) => c.post('/v2/entries:list', body);
    before(() => {
      // Five lines in each project's job j0, as agents would have shipped them.
      db.psql("INSERT INTO log_entries (job, task, attempt, stream, time, text) "
        + "SELECT j.id, 'master-replica-0', 1, 'stdout', now() + g * interval '1 ms', 'line ' || g "
        + "FROM jobs j, generate_series(1, 5) g WHERE j.job_id = 'j0'");
    });

    it('pages as before, on either server', async () => {
      const body = { resourceNames: ['projects/team-a'], pageSize: 2 };
      const texts = [];
      let token;
      let i = 0;
      do {
        const res = await list(client(i++ % 2 ? b.base : a.base), { ...body, ...(token ? { pageToken: token } : {}) });
        assert.equal(res.status, 200, res.text);
        texts.push(...res.json.entries.map((e) => e.textPayload));
        token = res.json.nextPageToken;
      } while (token);
      assert.deepEqual(texts, ['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);
    });

    it('an overflowing, hand-made, foreign or altered token is 400', async () => {
      const c = client(a.base);
      const body = { resourceNames: ['projects/team-a'], pageSize: 2, orderBy: 'timestamp desc',
        filter: 'resource.labels.job_id="j0"' };
      const first = await list(c, body);
      assert.equal(first.status, 200, first.text);
      const token = first.json.nextPageToken;
      assert.ok(token);
      assert.equal((await list(c, { ...body, pageToken: token })).status, 200);
      const flipped = Buffer.from(token, 'base64url');
      flipped[flipped.length - 1] ^= 1;
      for (const bad of [
        { ...body, pageToken: b64url('log1.99999999999999999999.1') },	// overflows int64
        { ...body, pageToken: b64url('log1.9223372036854775807.9223372036854775807') },
        { ...body, pageToken: b64url('log1.0.1') },
        { ...body, pageToken: b64url(flipped) },
        { ...body, pageToken: token.slice(0, -2) },
        { ...body, resourceNames: ['projects/team-b'], pageToken: token },
        { ...body, orderBy: 'timestamp asc', pageToken: token },
        { ...body, filter: 'resource.labels.job_id="j1"', pageToken: token },
        { ...body, pageToken: await firstPage(c) },
      ]) {
        assertError(await list(c, bad), 400, 'INVALID_ARGUMENT', LOG_BAD);
      }
    });
  });
});
