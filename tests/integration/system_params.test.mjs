// Google's system parameters (docs/api.md, "System parameters"): prettyPrint
// (pretty by default, errors always), fields (partial responses), alt,
// $.xgafv, callback refused, the rest accepted; on each API family, as curl
// sends them, and through the official Node client.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { google } from './googleapis.mjs';

import {
  REPO_ROOT, assertError, client, fieldViolations, jobId, request, startPostgres, startServer, trainingInput,
} from './harness.mjs';

let pg;
let server;
let c;

const PROJECT = 'sysparams';
const JOBS = `/v1/projects/${PROJECT}/jobs`;
const VERTEX = `/v1/projects/${PROJECT}/locations/us-central1/customJobs`;
const BUCKET = 'sysparams-bucket';

/** Google's pretty form: two spaces, "key": value, a newline at the end. */
const pretty = (v) => `${JSON.stringify(v, null, 2)}\n`;
const compact = (v) => JSON.stringify(v);

function assertPretty(res) {
  assert.ok(res.json, `JSON expected: ${res.text}`);
  assert.equal(res.text, pretty(res.json));
  assert.match(res.headers.get('content-type'), /^application\/json; charset=UTF-8$/);
}

function assertCompact(res) {
  assert.ok(res.json, `JSON expected: ${res.text}`);
  assert.equal(res.text, compact(res.json));
}

function vertexJob(displayName) {
  const job = JSON.parse(fs.readFileSync(
    path.join(REPO_ROOT, 'tests/unit/fixtures/seed001_vertex_multi_worker.json'), 'utf8'));
  job.displayName = displayName;
  return job;
}

let jobs = [];
let vertexName;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg });
  c = client(server.base);
  for (let i = 0; i < 3; i++) {
    const res = await c.post(`${JOBS}?prettyPrint=false`, {
      jobId: jobId('sp'), trainingInput: trainingInput(), labels: { owner: 'alice', n: String(i) },
    });
    assert.equal(res.status, 200, res.text);
    jobs.push(res.json);
  }
  const v = await c.post(VERTEX, vertexJob('sysparams'));
  assert.equal(v.status, 200, v.text);
  vertexName = v.json.name;
  const b = await c.post(`/storage/v1/b?project=${PROJECT}`, { name: BUCKET });
  assert.equal(b.status, 200, b.text);
  const o = await c.post(`/upload/storage/v1/b/${BUCKET}/o?uploadType=media&name=a.txt`, 'hello\n', {
    headers: { 'Content-Type': 'text/plain' },
  });
  assert.equal(o.status, 200, o.text);
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

describe('prettyPrint', () => {
  const job = () => `${JOBS}/${jobs[0].jobId}`;

  it('is on by default, on every API family, and prettyPrint=false is compact', async () => {
    const routes = [
      ['GET', job()],
      ['GET', `${JOBS}?pageSize=2`],
      ['GET', `/v1/projects/${PROJECT}:getConfig`],
      ['GET', `/v1/${vertexName}`],
      ['GET', VERTEX],
      ['POST', '/v2/entries:list', { resourceNames: [`projects/${PROJECT}`] }],
      ['GET', `/storage/v1/b?project=${PROJECT}`],
      ['GET', `/storage/v1/b/${BUCKET}/o`],
      ['GET', `/storage/v1/b/${BUCKET}/o/a.txt`],
    ];
    for (const [method, p, body] of routes) {
      const sep = p.includes('?') ? '&' : '?';
      const def = await request(server.base, method, p, { body });
      assert.equal(def.status, 200, `${method} ${p}: ${def.text}`);
      assertPretty(def);
      const off = await request(server.base, method, `${p}${sep}prettyPrint=false`, { body });
      assert.equal(off.status, 200, off.text);
      assertCompact(off);
      assert.deepEqual(off.json.etag ? { ...off.json } : off.json, def.json, `${method} ${p}: the same data`);
      const on = await request(server.base, method, `${p}${sep}prettyPrint=true`, { body });
      assertPretty(on);
    }
  });

  it('trainplane\'s own routes (health, nodes, agents) stay compact unless prettyPrint=true', async () => {
    for (const p of ['/healthz', '/readyz', '/trainplane/v1/nodes']) {
      assertCompact(await c.get(p));
      assertCompact(await c.get(`${p}?prettyPrint=false`));
      assertPretty(await c.get(`${p}?prettyPrint=true`));
      assertPretty(await c.get(`${p}?fields=*&prettyPrint=1`));
    }
    const drain = await c.post('/trainplane/v1/nodes/absent:drain');
    assertError(drain, 404, 'NOT_FOUND');
    assertCompact(drain);
    const reg = await c.post('/agent/v1/nodes/n1:register', {}, { headers: { Authorization: 'Bearer wrong' } });
    assert.ok(reg.status >= 400, reg.text);
    assertCompact(reg);
  });

  it('takes true and false in any case, 1 and 0 (gcloud sends 0), $prettyPrint and pp', async () => {
    for (const v of ['false', 'FALSE', 'False', '0']) assertCompact(await c.get(`${job()}?prettyPrint=${v}`));
    for (const v of ['true', 'TRUE', '1']) assertPretty(await c.get(`${job()}?prettyPrint=${v}`));
    assertCompact(await c.get(`${job()}?%24prettyPrint=false`));
    assertCompact(await c.get(`${job()}?pp=0`));
    // The first repeat counts.
    assertCompact(await c.get(`${job()}?prettyPrint=false&prettyPrint=true`));
  });

  it('refuses another value with the transcoder\'s sentence, pretty', async () => {
    for (const v of ['maybe', '', 'yes', '2']) {
      const res = await c.get(`${job()}?prettyPrint=${v}`);
      const e = assertError(res, 400, 'INVALID_ARGUMENT', `Invalid value at 'pretty_print' (TYPE_BOOL), "${v}"`);
      assert.equal(fieldViolations(e)[0].field, 'pretty_print');
      assert.match(fieldViolations(e)[0].description, /true or false/);
      assertPretty(res);
    }
    const res = await c.get(`${job()}?pp=x`);
    assertError(res, 400, 'INVALID_ARGUMENT', 'Invalid value at \'pp\' (TYPE_BOOL), "x"');
  });

  it('errors are pretty whatever it says, as Google\'s', async () => {
    for (const q of ['', '?prettyPrint=false', '?prettyPrint=true']) {
      const res = await c.get(`${JOBS}/nope${q}`);
      assertError(res, 404, 'NOT_FOUND');
      assertPretty(res);
    }
    const unrouted = await c.get('/v1/nowhere?prettyPrint=false');
    assertError(unrouted, 404, 'NOT_FOUND');
    assertPretty(unrouted);
    const storage = await c.get(`/storage/v1/b/${BUCKET}/o/absent?prettyPrint=false`);
    assertError(storage, 404, 'NOT_FOUND');
    assertPretty(storage);
    assert.equal(storage.json.error.errors[0].reason, 'notFound');
  });

  it('a media download is the object\'s bytes, untouched', async () => {
    for (const q of ['alt=media', 'alt=media&prettyPrint=true', 'alt=media&fields=name']) {
      const res = await c.get(`/storage/v1/b/${BUCKET}/o/a.txt?${q}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.text, 'hello\n');
      assert.equal(res.headers.get('content-type'), 'text/plain');
    }
    const dl = await c.get(`/download/storage/v1/b/${BUCKET}/o/a.txt?alt=media`);
    assert.equal(dl.text, 'hello\n');
  });
});

describe('fields', () => {
  const job = () => jobs[0];
  const get = (q) => c.get(`${JOBS}/${job().jobId}?${q}`);

  it('keeps the top-level fields named', async () => {
    const res = await get('fields=jobId,state');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { jobId: job().jobId, state: job().state });
    assert.deepEqual(Object.keys(res.json), ['jobId', 'state'], 'the reply\'s order, not the mask\'s');
    assertPretty(res);
    assertCompact(await get('fields=state,jobId&prettyPrint=false'));
  });

  it('descends with / or . and sub-selects with parentheses', async () => {
    const want = { trainingInput: { region: 'us-central1' } };
    assert.deepEqual((await get('fields=trainingInput/region')).json, want);
    assert.deepEqual((await get('fields=trainingInput.region')).json, want);
    assert.deepEqual((await get('fields=trainingInput(region,masterConfig)')).json,
      { trainingInput: { region: 'us-central1', masterConfig: job().trainingInput.masterConfig } });
    assert.deepEqual((await get('fields=labels/owner,jobId')).json, { jobId: job().jobId, labels: { owner: 'alice' } });
    assert.deepEqual((await get('fields=trainingInput/masterConfig/imageUri')).json,
      { trainingInput: { masterConfig: { imageUri: 'gcr.io/test/trainer:latest' } } });
  });

  it('* selects a whole level; a name no field has selects nothing', async () => {
    const full = (await get('')).json;
    assert.deepEqual((await get('fields=*')).json, full);
    assert.deepEqual((await get('fields=')).json, full, 'an empty mask is every field');
    assert.deepEqual((await get('fields=labels/*')).json, { labels: job().labels });
    assert.deepEqual((await get('fields=*,trainingInput(region)')).json, full, 'a union, as a field mask');
    assert.deepEqual((await get('fields=noSuchField')).json, {});
    assert.deepEqual((await get('fields=jobId,')).json, { jobId: job().jobId }, 'a trailing comma');
    assert.deepEqual((await get('%24fields=jobId')).json, { jobId: job().jobId });
    const hdr = await c.get(`${JOBS}/${job().jobId}`, { headers: { 'X-Goog-FieldMask': 'state' } });
    assert.deepEqual(hdr.json, { state: job().state });
  });

  it('applies to each element of a list: jobs(jobId,state),nextPageToken', async () => {
    const res = await c.get(`${JOBS}?pageSize=2&fields=jobs(jobId,state),nextPageToken`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.json), ['jobs', 'nextPageToken']);
    assert.equal(res.json.jobs.length, 2);
    for (const j of res.json.jobs) assert.deepEqual(Object.keys(j), ['jobId', 'state']);
    assertPretty(res);
    const ids = await c.get(`${JOBS}?fields=jobs/jobId&prettyPrint=false`);
    assert.deepEqual(ids.json.jobs.map((j) => Object.keys(j)), jobs.map(() => ['jobId']));
    assertCompact(ids);
    const v = await c.get(`${VERTEX}?fields=customJobs(displayName,state)`);
    assert.deepEqual(v.json, { customJobs: [{ displayName: 'sysparams', state: v.json.customJobs[0].state }] });
    const o = await c.get(`/storage/v1/b/${BUCKET}/o?fields=items(name,size),kind`);
    assert.deepEqual(o.json, { kind: 'storage#objects', items: [{ name: 'a.txt', size: '6' }] });
  });

  it('a syntax error is 400 INVALID_ARGUMENT naming the place', async () => {
    const bad = ['jobs(', 'jobs(jobId', 'a)', 'a,,b', ',a', 'a//b', 'a/', 'a()', 'a b', 'a*', '*a', 'a(b)c',
      'a"b', 'a\\b', '(a)', `${'a('.repeat(33)}b${')'.repeat(33)}`];
    for (const m of bad) {
      const res = await c.get(`${JOBS}/${job().jobId}?fields=${encodeURIComponent(m)}`);
      const e = assertError(res, 400, 'INVALID_ARGUMENT', /^Error expanding 'fields' parameter '.*': .*(character \d+|the end)/);
      assert.equal(fieldViolations(e)[0].field, 'fields', m);
      assertPretty(res);
    }
    const e = assertError(await c.get(`${JOBS}/${job().jobId}?fields=jobs(`), 400, 'INVALID_ARGUMENT');
    assert.equal(e.message, "Error expanding 'fields' parameter 'jobs(': expected a field name at the end.");
  });

  it('a bad mask is refused before the method runs; an error reply is never filtered', async () => {
    const id = jobId('nocreate');
    const res = await c.post(`${JOBS}?fields=(`, { jobId: id, trainingInput: trainingInput() });
    assertError(res, 400, 'INVALID_ARGUMENT');
    assertError(await c.get(`${JOBS}/${id}`), 404, 'NOT_FOUND');
    const nf = await c.get(`${JOBS}/nope?fields=jobId`);
    const err = assertError(nf, 404, 'NOT_FOUND');
    assert.ok(err.message && err.details, 'the whole envelope');
  });

  it('a 100-job list with fields and pretty output', async () => {
    const p = `/v1/projects/${PROJECT}-list/jobs`;
    for (let i = 0; i < 100; i++) {
      const r = await c.post(`${p}?prettyPrint=false&fields=jobId`, { jobId: `l${i}`, trainingInput: trainingInput() });
      assert.deepEqual(r.json, { jobId: `l${i}` });
    }
    const full = await c.get(`${p}?pageSize=100`);
    assertPretty(full);
    assert.equal(full.json.jobs.length, 100);
    const ids = await c.get(`${p}?pageSize=100&fields=jobs/jobId`);
    assert.deepEqual(ids.json.jobs, full.json.jobs.map((j) => ({ jobId: j.jobId })));
  });
});

describe('with curl itself', () => {
  it("a curl user reading Google's docs gets pretty JSON, and fields cuts it down", () => {
    const id = jobs[0].jobId;
    const run = (url) => {
      const r = spawnSync('curl', ['-sS', '--max-time', '10', `${server.base}${url}`], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    const whole = run(`${JOBS}/${id}`);
    assert.equal(whole, pretty(JSON.parse(whole)));
    assert.match(whole, /^{\n  "jobId": /);
    const cut = run(`${JOBS}/${id}?fields=jobId,trainingInput/region`);
    assert.equal(cut, pretty({ jobId: id, trainingInput: { region: jobs[0].trainingInput.region } }));
    const oneLine = run(`${JOBS}/${id}?fields=state&prettyPrint=false`);
    assert.equal(oneLine, compact({ state: JSON.parse(whole).state }));
  });
});

describe('alt, $.xgafv, callback and the rest', () => {
  const job = () => `${JOBS}/${jobs[0].jobId}`;

  it('alt=json is the default; google-gax\'s $alt=json;enum-encoding=int is taken', async () => {
    const def = (await c.get(job())).json;
    for (const q of ['alt=json', 'alt=JSON', 'alt=', '%24alt=json', `%24alt=${encodeURIComponent('json;enum-encoding=int')}`]) {
      const res = await c.get(`${job()}?${q}`);
      assert.equal(res.status, 200, `${q}: ${res.text}`);
      assert.deepEqual(res.json, def);
    }
  });

  it('alt=proto, sse, media where no bytes are served, or anything else is 400', async () => {
    assertError(await c.get(`${job()}?alt=proto`), 400, 'INVALID_ARGUMENT',
      'Unsupported alt type "proto": trainplane answers JSON only (alt=json).');
    assertError(await c.get(`${job()}?alt=sse`), 400, 'INVALID_ARGUMENT', /^Unsupported alt type "sse"/);
    assertError(await c.get(`${job()}?alt=media`), 400, 'INVALID_ARGUMENT',
      'Unsupported alt type "media" for non byte stream request.');
    assertError(await c.get(`/storage/v1/b/${BUCKET}/o?alt=media`), 400, 'INVALID_ARGUMENT',
      'Unsupported alt type "media" for non byte stream request.');
    const e = assertError(await c.get(`${job()}?alt=xml`), 400, 'INVALID_ARGUMENT',
      'Invalid value "xml" for query parameter \'alt\'.');
    assert.equal(fieldViolations(e)[0].field, 'alt');
    assertError(await c.get(`${job()}?alt=${encodeURIComponent('json;x=y')}`), 400, 'INVALID_ARGUMENT');
  });

  it('$.xgafv: 2 is the envelope; 1 adds errors[]; another value is 400', async () => {
    const two = await c.get(`${JOBS}/nope?%24.xgafv=2`);
    const e2 = assertError(two, 404, 'NOT_FOUND');
    assert.equal(e2.errors, undefined);
    assert.deepEqual(Object.keys(e2), ['code', 'message', 'status', 'details']);
    const one = await c.get(`${JOBS}/nope?%24.xgafv=1`);
    const e1 = assertError(one, 404, 'NOT_FOUND');
    assert.deepEqual(Object.keys(e1), ['code', 'message', 'errors', 'status', 'details']);
    assert.deepEqual(e1.errors, [{ message: e1.message, domain: 'global', reason: 'notFound' }]);
    assertPretty(one);
    const bad = await c.get(`${job()}?%24.xgafv=0`);
    assertError(bad, 400, 'INVALID_ARGUMENT',
      "Invalid query parameters. Invalid value '0' for system query parameter : $.xgafv");
    // The last repeat counts, as Google's front end reads it.
    assert.equal((await c.get(`${job()}?%24.xgafv=9&%24.xgafv=2`)).status, 200);
    assert.equal((await c.get(`${job()}?%24.xgafv=1`)).status, 200, 'a success is the same in both');
  });

  it('callback (JSONP) is refused; the other system parameters are accepted', async () => {
    const e = assertError(await c.get(`${job()}?callback=cb`), 400, 'INVALID_ARGUMENT', /JSONP is not supported/);
    assert.equal(fieldViolations(e)[0].field, 'callback');
    assert.equal((await c.get(`${job()}?callback=`)).status, 200, 'an empty callback is none');
    const q = 'key=k&quotaUser=q&userProject=p&userIp=1.2.3.4&access_token=t&oauth_token=o&upload_protocol=raw'
      + '&%24key=k&%24quotaUser=q&trace=token';
    const res = await c.get(`${job()}?${q}`);
    assert.equal(res.status, 200, res.text);
    assertPretty(res);
  });
});

describe('the official Node client (googleapis)', () => {
  it('its requests, and its results the same pretty or compact', async () => {
    // A recording proxy in front of the server: what the client sends.
    const seen = [];
    const proxy = http.createServer((req, res) => {
      seen.push(req.url);
      const up = http.request({ host: '127.0.0.1', port: server.port, path: req.url, method: req.method, headers: req.headers },
        (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
      req.pipe(up);
    });
    await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const rootUrl = `http://127.0.0.1:${proxy.address().port}/`;
      const name = `projects/${PROJECT}/jobs/${jobs[1].jobId}`;
      const plain = google.ml({ version: 'v1', rootUrl, auth: 'any-key' });
      const { data: got } = await plain.projects.jobs.get({ name });
      const { data: listed } = await plain.projects.jobs.list({ parent: `projects/${PROJECT}` });
      // googleapis 178 sends no prettyPrint of its own (its key as ?key=): it gets pretty JSON.
      assert.ok(seen.every((u) => !/prettyPrint/.test(u)), seen.join(' '));
      assert.ok(seen.every((u) => /[?&]key=any-key/.test(u)), seen.join(' '));
      assert.deepEqual(got, jobs[1]);
      seen.length = 0;
      // Told to (as Google's Go clients do on every request), it sends prettyPrint=false.
      const terse = google.ml({ version: 'v1', rootUrl, auth: 'any-key', params: { prettyPrint: false } });
      const { data: got2 } = await terse.projects.jobs.get({ name });
      const { data: listed2 } = await terse.projects.jobs.list({ parent: `projects/${PROJECT}` });
      assert.equal(seen.length, 2);
      assert.ok(seen.every((u) => /[?&]prettyPrint=false/.test(u)), seen.join(' '));
      assert.deepEqual(got2, got);
      assert.deepEqual(listed2, listed);
      const raw = await c.get(`/v1/${name}?prettyPrint=false`);
      assertCompact(raw);
      assert.deepEqual(raw.json, got);
      // fields through the client: the partial response, parsed.
      const { data: part } = await terse.projects.jobs.list({ parent: `projects/${PROJECT}`, fields: 'jobs(jobId)' });
      assert.deepEqual(part.jobs.map((j) => j.jobId).sort(), jobs.map((j) => j.jobId).sort());
      assert.deepEqual(Object.keys(part), ['jobs']);
      // An error through the client: parsed from the pretty envelope as before.
      await assert.rejects(terse.projects.jobs.get({ name: `projects/${PROJECT}/jobs/nope` }), (err) => {
        assert.equal(err.response.status, 404);
        assert.equal(err.response.data.error.status, 'NOT_FOUND');
        return true;
      });
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });
});
