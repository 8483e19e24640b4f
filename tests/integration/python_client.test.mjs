// Python's googleapiclient (Debian's python3-googleapi 1.7.12, what `make
// deps` installs) against the server, through the discovery documents it
// builds itself from (server/discovery.c):
// - each document describes exactly the routes of its API (method, flat
//   path, operation id), every $ref names one of its schemas, and its
//   rootUrl is the address the client used;
// - /$discovery/rest takes its API from the host, as Google's does; a Host
//   that is not plain host[:port] is refused, so that nothing a client sends
//   reaches the document but a host and a port;
// - the server is an emulator (docs/emulator.md), so the jobs run;
// - the README's Python block runs as it is;
// - the Python block of docs/api.md ("Python (googleapiclient)") runs as it
//   is, followed by checks of what it did, in one python3 process (its
//   start and googleapiclient's import are half a second): create, get, list
//   page by page, patch with the etag, cancel, an error as HttpError with
//   Google's envelope, a Vertex CustomJob, its log through logging v2.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import {
  REPO_ROOT, client, makeTempDir, runServerSync, startPostgres, startServer, trainingInput,
} from './harness.mjs';

// Debian's interpreter: python3-googleapi installs into its dist-packages
// (a python3 of pyenv or a venv earlier on PATH would not have it).
const PYTHON = '/usr/bin/python3';
const APIS = [['ml', 'v1'], ['aiplatform', 'v1'], ['logging', 'v2']];
const SYSTEM_PARAMETERS = ['$.xgafv', 'access_token', 'alt', 'callback', 'fields', 'key', 'oauth_token',
  'prettyPrint', 'quotaUser', 'uploadType', 'upload_protocol'];

let pg;
let server;

before(async () => {
  pg = await startPostgres();
  // An emulator (docs/emulator.md): the jobs the snippets create run on its
  // simulated fleet, long enough (the doc's job sleeps 600 s) that the
  // cancel finds the job still running however slow the machine.
  server = await startServer({ pg, args: ['--emulator'], env: { TRAINPLANE_EMULATOR_REPLICA_DURATION: '600s', TRAINPLANE_EMULATOR_NODES_PER_TYPE: '2' } });
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

/** GET path with this Host header (fetch cannot set one). */
function getWithHost(urlPath, host) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path: urlPath, headers: { Host: host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, text, json });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every method of a document's resource tree: [{id, httpMethod, flatPath, ...}]. */
function methodsOf(node) {
  const out = Object.values(node.methods ?? {});
  for (const r of Object.values(node.resources ?? {})) out.push(...methodsOf(r));
  return out;
}

/** Every "$ref" value below v. */
function refsOf(v, out = []) {
  if (Array.isArray(v)) v.forEach((x) => refsOf(x, out));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref') out.push(x);
      else refsOf(x, out);
    }
  }
  return out;
}

/** The README's ```python block. */
function readmeSnippet() {
  const m = /\n```python\n([\s\S]*?)\n```\n/.exec(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8'));
  assert.ok(m, 'README.md has no ```python block');
  return m[1];
}

/** The ```python block under docs/api.md's "### Python (googleapiclient)". */
function docSnippet() {
  const md = fs.readFileSync(path.join(REPO_ROOT, 'docs/api.md'), 'utf8');
  const at = md.indexOf('\n### Python (googleapiclient)\n');
  assert.ok(at >= 0, 'docs/api.md has no "### Python (googleapiclient)" section');
  const m = /\n```python\n([\s\S]*?)\n```\n/.exec(md.slice(at));
  assert.ok(m, 'no ```python block in "Python (googleapiclient)"');
  return m[1];
}

// What the test checks after the snippet, in the same process: it uses the
// snippet's names (jobs, parent, job, error, custom, found, DISCOVERY).
const CHECKS = String.raw`

# --- python_client.test.mjs: what the block above did ---
from google.auth.credentials import AnonymousCredentials

pages, listed = 0, []
request = jobs.list(parent=parent, pageSize=2)
while request is not None:
    page = request.execute()
    pages += 1
    listed += [j['jobId'] for j in page.get('jobs', [])]
    request = jobs.list_next(request, page)

try:
    jobs.create(parent=parent, body={'jobId': 'bad_job', 'trainingInput': {'masterTypo': 'x'}}).execute()
    invalid = None
except HttpError as e:
    invalid = {'status': e.resp.status, 'content': json.loads(e.content)}

# googleapiclient's V2_DISCOVERY_URI form names no API on a bare address.
try:
    build('ml', 'v1', discoveryServiceUrl=ROOT + '$discovery/rest?version={apiVersion}',
          cache_discovery=False, developerKey='k')
    v2 = None
except HttpError as e:
    v2 = {'status': e.resp.status, 'content': json.loads(e.content)}

anonymous = build('ml', 'v1', discoveryServiceUrl=DISCOVERY, cache_discovery=False,
                  credentials=AnonymousCredentials())
config = anonymous.projects().getConfig(name=parent).execute()
vertex_page = custom_jobs.list(parent='projects/demo/locations/us-central1', pageSize=1).execute()

print('CHECKS ' + json.dumps({
    'job': job, 'pages': pages, 'listed': listed, 'error': error, 'invalid': invalid,
    'custom': custom, 'entries': found.get('entries', []), 'v2': v2, 'config': config,
    'vertex_page': vertex_page,
}))
`;

/** Runs script in Debian's python3 against the server; { code, stdout, stderr }. */
function runPython(script) {
  const dir = makeTempDir('tp-py-');
  const file = path.join(dir, 'snippet.py');
  fs.writeFileSync(file, script);
  const env = { PATH: process.env.PATH, HOME: dir, TRAINPLANE_URL: `${server.base}/`, PYTHONDONTWRITEBYTECODE: '1' };
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}

describe('discovery documents', () => {
  it('describe exactly the routes of ml v1, aiplatform v1 and logging v2; every $ref is a schema', async () => {
    const routes = runServerSync(['--routes']).stdout.trim().split('\n').map((l) => l.trim().split(' '));
    const c = client(server.base);
    for (const [api, version] of APIS) {
      const r = await c.get(`/discovery/v1/apis/${api}/${version}/rest`);
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get('content-type'), /^application\/json/);
      const d = r.json;
      assert.equal(d.kind, 'discovery#restDescription');
      assert.equal(d.discoveryVersion, 'v1');
      assert.equal(d.id, `${api}:${version}`);
      assert.deepEqual([d.name, d.version, d.protocol, d.servicePath], [api, version, 'rest', '']);
      assert.equal(d.rootUrl, `${server.base}/`);
      assert.equal(d.baseUrl, `${server.base}/`);
      assert.deepEqual(Object.keys(d.parameters).sort(), [...SYSTEM_PARAMETERS].sort());
      assert.ok(d.auth.oauth2.scopes['https://www.googleapis.com/auth/cloud-platform']);

      const want = routes.filter(([, , op]) => op.startsWith(`${api}.`))
        .map(([method, pattern, op]) => `${method} ${pattern.slice(1)} ${op}`).sort();
      const methods = methodsOf(d);
      assert.deepEqual(methods.map((m) => `${m.httpMethod} ${m.flatPath} ${m.id}`).sort(), want);
      for (const m of methods) {
        // googleapiclient expands path with parameters; each variable is one
        // declared path parameter whose pattern its flat path matches.
        const vars = [...m.path.matchAll(/\{\+(\w+)\}/g)].map((x) => x[1]);
        assert.deepEqual(vars, m.parameterOrder, m.id);
        assert.ok(vars.length <= 1, m.id);
        for (const v of vars) {
          const p = m.parameters[v];
          assert.deepEqual([p.location, p.required, p.type], ['path', true, 'string'], `${m.id} ${v}`);
          const prefix = m.path.slice(0, m.path.indexOf('{'));
          const suffix = m.path.slice(m.path.indexOf('}') + 1);
          assert.ok(m.flatPath.startsWith(prefix) && m.flatPath.endsWith(suffix), `${m.id}: ${m.path} ${m.flatPath}`);
          const value = m.flatPath.slice(prefix.length, m.flatPath.length - suffix.length).replace(/\{\w+\}/g, 'x');
          assert.match(value, new RegExp(p.pattern), `${m.id}: ${value} against ${p.pattern}`);
        }
        assert.ok(m.response?.$ref, `${m.id} has a response`);
      }
      const refs = [...new Set(refsOf(d))];
      assert.deepEqual(refs.filter((x) => !d.schemas[x]), [], `${api}: every $ref names a schema`);
      for (const [name, s] of Object.entries(d.schemas)) assert.equal(s.id, name);
    }
    // The list replies page: googleapiclient makes list_next() of a
    // nextPageToken in the reply and a pageToken in the request.
    const ml = (await c.get('/discovery/v1/apis/ml/v1/rest')).json;
    const list = ml.resources.projects.resources.jobs.methods.list;
    assert.ok(list.parameters.pageToken);
    assert.ok(ml.schemas[list.response.$ref].properties.nextPageToken);
    assert.deepEqual(ml.schemas.GoogleCloudMlV1TrainingInput.properties.workerCount, { type: 'string', format: 'int64' });
    assert.equal(list.path, 'v1/{+parent}/jobs');
    assert.equal(ml.resources.projects.resources.jobs.methods.getIamPolicy.path, 'v1/{+resource}:getIamPolicy');
  });

  it('rootUrl is the Host the client used; /$discovery/rest takes its API from it; other Hosts are refused', async () => {
    const port = server.port;
    const byHost = await getWithHost('/$discovery/rest?version=v1', `ml.example.com:${port}`);
    assert.equal(byHost.status, 200, byHost.text);
    assert.deepEqual([byHost.json.id, byHost.json.rootUrl], ['ml:v1', `http://ml.example.com:${port}/`]);
    const regional = await getWithHost('/%24discovery/rest?version=v1', 'us-central1-aiplatform.example.com');
    assert.deepEqual([regional.json.id, regional.json.baseUrl], ['aiplatform:v1', 'http://us-central1-aiplatform.example.com/']);
    const v6 = await getWithHost('/discovery/v1/apis/logging/v2/rest?fields=rootUrl', `[::1]:${port}`);
    assert.deepEqual(v6.json, { rootUrl: `http://[::1]:${port}/` });

    const bare = await getWithHost('/$discovery/rest?version=v1', `127.0.0.1:${port}`);
    assert.equal(bare.status, 400);
    assert.match(bare.json.error.message, /\/discovery\/v1\/apis\/\{api\}\/\{version\}\/rest/);
    assert.equal((await getWithHost('/$discovery/rest', `ml.example.com:${port}`)).status, 400, 'no version');
    const unknown = await getWithHost('/discovery/v1/apis/ml/v9/rest', `127.0.0.1:${port}`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.status, 'NOT_FOUND');

    // The transport takes these as Host values (RFC 3986 reg-names, any
    // port digits); the document takes none of them.
    for (const host of ['ex_ample.com', 'a!b.com', "ml.a'b.com", 'a(b).com', 'a;b=c.com', '%41.com',
      `ml.example.com:`, 'ml.example.com:99999', 'ml.example.com:0', '[v1.x]']) {
      for (const p of ['/discovery/v1/apis/ml/v1/rest', '/$discovery/rest?version=v1']) {
        const r = await getWithHost(p, host);
        assert.equal(r.status, 400, `${host} ${p}: ${r.text.slice(0, 300)}`);
        assert.equal(r.json.error.status, 'INVALID_ARGUMENT');
        assert.match(r.json.error.message, /Host header, which must be host\[:port\]/);
      }
    }
  });
});

describe('Python googleapiclient', () => {
  it('runs the docs/api.md block: ml jobs create, get, list by pages, patch, cancel, errors; Vertex; logs', async () => {
    // Two jobs of before, so that pages of 2 take two requests.
    const c = client(server.base);
    for (const id of ['py_before_1', 'py_before_2']) {
      assert.equal((await c.post('/v1/projects/demo/jobs', { jobId: id, trainingInput: trainingInput() })).status, 200);
    }
    // The block reads its job, lists, then patches with the etag it read: a
    // job placed meanwhile would have a new etag. An emulator rule keeps the
    // block's job QUEUED (its Vertex job runs).
    assert.equal((await c.post('/trainplane/v1/emulator:setRules', { rules: [
      { match: { jobId: 'census_py_*' }, outcome: 'queue' }] })).status, 200);
    const r = await runPython(`${docSnippet()}\n${CHECKS}`);
    assert.equal(r.code, 0, `python3 exited ${r.code ?? r.signal}:\n${r.stderr}\n${r.stdout}`);
    const out = r.stdout;
    const line = out.split('\n').find((l) => l.startsWith('CHECKS '));
    assert.ok(line, out);
    const got = JSON.parse(line.slice('CHECKS '.length));

    // The block's own output.
    // (on an emulator the job may be placed by the time it is read)
    const created = /^created (census_py_\d{8}_\d{6}) (QUEUED|PREPARING|RUNNING)$/m.exec(out);
    assert.ok(created, out);
    const id = created[1];
    assert.deepEqual([...out.matchAll(/^listed (\S+) /gm)].map((m) => m[1]).sort(), [id, 'py_before_1', 'py_before_2'].sort());
    assert.match(out, /^labels \{'owner': 'bob'\}$/m);
    assert.match(out, /^cancelled CANCELLED$/m);
    assert.match(out, /^error 404 NOT_FOUND /m);
    assert.match(out, /^custom job projects\/demo\/locations\/us-central1\/customJobs\/\d+ JOB_STATE_(QUEUED|PENDING|RUNNING)$/m);
    assert.match(out, /^log WARNING warning: workerPoolSpecs\[0\] has 1 GPU\(s\) per machine and workerPoolSpecs\[1\] has 2/m);

    // What the checks saw.
    assert.equal(got.pages, 2);
    assert.equal(got.listed.length, 3);
    assert.deepEqual(got.job.labels, { owner: 'bob' });
    assert.match(got.job.etag, /^[A-Za-z0-9+/]+=*$/);
    assert.equal(got.error.code, 404);
    assert.equal(got.error.status, 'NOT_FOUND');
    assert.equal(got.error.details[0]['@type'], 'type.googleapis.com/google.rpc.RequestInfo');
    assert.equal(got.invalid.status, 400);
    assert.equal(got.invalid.content.error.status, 'INVALID_ARGUMENT');
    assert.match(got.invalid.content.error.message, /masterTypo/);
    assert.equal(got.v2.status, 400, 'the $discovery form on 127.0.0.1: 400, not a 404 that sends googleapiclient to googleapis.com');
    assert.equal(got.config.serviceAccountProject, String(Number(got.config.serviceAccountProject)));
    assert.equal(got.vertex_page.customJobs.length, 1);
    assert.equal(got.custom.jobSpec.workerPoolSpecs[1].machineSpec.acceleratorCount, 2);
    assert.ok(got.entries.every((e) => e.resource.type === 'ml_job'), JSON.stringify(got.entries));

    // And the server agrees.
    const job = (await c.get(`/v1/projects/demo/jobs/${id}`)).json;
    assert.deepEqual([job.state, job.labels], ['CANCELLED', { owner: 'bob' }]);
  });
  it('runs the README block: the README\'s first job, read back (after the block above, whose list it would join)', async () => {
    const c = client(server.base);
    assert.equal((await c.post('/v1/projects/demo/jobs', { jobId: 'first_job', trainingInput: trainingInput() })).status, 200);
    const r = await runPython(readmeSnippet());
    assert.equal(r.code, 0, `python3 exited ${r.code ?? r.signal}:\n${r.stderr}\n${r.stdout}`);
    assert.match(r.stdout, /^(QUEUED|PREPARING|RUNNING)$/m);
  });
});
