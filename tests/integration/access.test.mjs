// Access control (auth_mode: tokens), IAM on ml jobs, SIGHUP reload and
// graceful SIGTERM. Every served route (from `trainplane-server --routes`,
// so a new route is covered the day it lands) is tried with no token, the
// agents' cluster token, a node's own agent token and another node's,
// another project's token, a metrics token, a viewer, a developer and an
// admin; the status must be the one the role allows, and nothing may
// change where it must not. The agents' credentials: a weak cluster token
// stops tokens mode at start, a node's token opens only its node's routes.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { google } from './googleapis.mjs';

import {
  assertError, client, makeTempDir, removeTempDir, request, runServerSync, startPostgres, startServer,
  trainingInput, waitFor,
} from './harness.mjs';
import { startAgent, waitJobState } from './agents.mjs';

// The cluster token: tokens mode takes only a strong one (openssl rand -hex 32).
const AGENT_TOKEN = crypto.randomBytes(32).toString('hex');
const tok = (name) => `${name}-${crypto.randomBytes(16).toString('hex')}`;
const TOKENS = {
  viewer: tok('viewer'),
  developer: tok('developer'),
  admin: tok('admin'),
  other: tok('other'),
  root: tok('root'),
  late: tok('late'),
  node: tok('node'), // role agent, nodes: [no-such-node] (the node the route matrix names)
  nodeOther: tok('node-other'), // role agent, nodes: [gpu-z]
  metrics: tok('metrics'), // role metrics
};
const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');

function tokensYaml(extra = '') {
  return `# test tokens: hashes only
tokens:
  - name: viewer-a
    sha256: ${sha(TOKENS.viewer)}
    role: viewer
    projects: [proj-a]
  - name: developer-a
    sha256: ${sha(TOKENS.developer)}
    role: developer
    projects: [proj-a]
  - name: admin-a
    sha256: ${sha(TOKENS.admin)}
    role: admin
    projects: [proj-a]
  - name: dev-b
    member: user:bob@example.com
    sha256: ${sha(TOKENS.other)}
    role: developer
    projects: [proj-b]
  - name: root
    sha256: ${sha(TOKENS.root)}
    role: admin
    projects: ["*"]
  - name: agent-no-such-node
    sha256: ${sha(TOKENS.node)}
    role: agent
    nodes: [no-such-node]
  - name: agent-gpu-z
    sha256: ${sha(TOKENS.nodeOther)}
    role: agent
    nodes: [gpu-z]
  - name: prometheus
    sha256: ${sha(TOKENS.metrics)}
    role: metrics
${extra}`;
}

const bearer = (t) => ({ Authorization: `Bearer ${t}` });

let pg;
let dir;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
  dir = makeTempDir('tp-access-');
});
after(async () => {
  if (pg) await pg.cleanup();
  if (dir) removeTempDir(dir);
});

const newDatabase = () => pg.newDatabase('access');

function tokensFile(name, text) {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

async function tokensServer(env = {}) {
  const file = tokensFile(`tokens-${process.hrtime.bigint()}.yaml`, tokensYaml());
  const server = await startServer({
    pg: newDatabase(),
    env: { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: file, TRAINPLANE_AGENT_TOKEN: AGENT_TOKEN, ...env },
  });
  return { server, file };
}

// The least role each verb needs (auth.h); trainplane.* (nodes) is admin's.
// Cloud Storage's methods take its permissions: insert, uploads, compose,
// rewrite and copy are storage.objects.create; download is get.
const VIEWER_VERBS = new Set(['get', 'list', 'getConfig', 'wait', 'testIamPermissions', 'download',
  'getStorageLayout']);
const DEVELOPER_VERBS = new Set(['create', 'cancel', 'patch', 'delete', 'insert', 'upload', 'resumableInsert',
  'resumableUpload', 'compose', 'rewrite', 'copy']);
function needed(op) {
  if (op === 'metrics') return 'metrics'; // tokens mode: trainplane.metrics.get (admins, metrics tokens)
  if (!op.includes('.')) return 'public';
  if (op.startsWith('agent.')) return 'agent';
  // Of trainplane's own routes, users read who they are and their projects' replicas.
  if (op === 'trainplane.whoami.get' || op === 'trainplane.projects.replicas.list') return 'viewer';
  if (op.startsWith('trainplane.')) return 'admin';
  const verb = op.split('.').pop();
  if (VIEWER_VERBS.has(verb)) return 'viewer';
  if (DEVELOPER_VERBS.has(verb)) return 'developer';
  return 'admin';
}
const RANK = { viewer: 1, developer: 2, admin: 3 };

function servedRoutes() {
  const r = runServerSync(['--routes']);
  assert.equal(r.status, 0);
  return r.stdout.trim().split('\n').map((l) => {
    const [method, pattern, op] = l.trim().split(' ');
    return { method, pattern, op };
  });
}

/** A concrete request for a route against project p; bodies that reach the handler. */
function concrete(route, p, ids) {
  const values = {
    projectsId: p, locationsId: 'us-central1', jobsId: ids.job, customJobsId: ids.customJob ?? '1',
    operationsId: '1', nodesId: 'no-such-node', trainingPipelinesId: '1',
    // Cloud Storage: a bucket of project p (made in before()), any object.
    bucket: ids.bucket, sourceBucket: ids.bucket, destinationBucket: ids.bucket,
  };
  let url = route.pattern.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(values[k] ?? 'x'));
  // A new bucket and the list of buckets name their project in the query.
  if (route.op === 'storage.buckets.insert' || route.op === 'storage.buckets.list') url += `?project=${p}`;
  let body;
  if (route.op === 'logging.entries.list') body = { resourceNames: [`projects/${p}`] };
  else if (['POST', 'PATCH'].includes(route.method)) body = {};
  return { url, body };
}

describe('auth_mode: tokens', () => {
  let server;
  let file;
  let c;
  const JOB = 'guarded_job';
  const BUCKET = 'guarded-bucket';

  before(async () => {
    ({ server, file } = await tokensServer());
    c = client(server.base);
    const r = await c.post('/v1/projects/proj-a/jobs', { jobId: JOB, trainingInput: trainingInput(), labels: { team: 'a' } },
      { headers: bearer(TOKENS.admin) });
    assert.equal(r.status, 200, r.text);
    const b = await c.post('/storage/v1/b?project=proj-a', { name: BUCKET }, { headers: bearer(TOKENS.admin) });
    assert.equal(b.status, 200, b.text);
  });
  after(async () => {
    if (server) await server.stop();
  });

  it('refuses a bad tokens file at start with file, line and column', () => {
    const bad = tokensFile('bad.yaml', 'tokens:\n  - name: x\n    sha256: abc\n    role: viewer\n    projects: [p]\n');
    const r = runServerSync(['--check-config'], { env: { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: bad } });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /bad tokens file: .*bad\.yaml:3:13: sha256 must be 64 hex digits/);
    const noFile = runServerSync(['--check-config'], { env: { TRAINPLANE_AUTH_MODE: 'tokens' } });
    assert.match(noFile.stderr, /auth_mode tokens needs tokens_file/);
    const role = tokensFile('role.yaml', `tokens:\n  - name: x\n    sha256: ${sha('x'.repeat(20))}\n    role: boss\n    projects: [p]\n`);
    assert.match(runServerSync(['--check-config'], { env: { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: role } }).stderr,
      /role\.yaml:4:11: role must be viewer, developer or admin, not "boss"/);
  });

  it('--hash-token prints the SHA-256 a tokens file holds', () => {
    const r = spawn(process.env.TRAINPLANE_SERVER_BIN, ['--hash-token']);
    return new Promise((resolve) => {
      let out = '';
      r.stdout.on('data', (d) => { out += d; });
      r.on('close', (code) => {	// stdout read to its end ('exit' may come first)
        assert.equal(code, 0);
        assert.equal(out.trim(), sha(TOKENS.viewer));
        resolve();
      });
      r.stdin.end(`${TOKENS.viewer}\n`);
    });
  });

  it('no credentials: 401 UNAUTHENTICATED in Google\'s words; a wrong token: 401 too', async () => {
    const e = assertError(await c.get(`/v1/projects/proj-a/jobs/${JOB}`), 401, 'UNAUTHENTICATED',
      /^Request is missing required authentication credential\./);
    assert.equal(e.details[0].reason, 'CREDENTIALS_MISSING');
    assertError(await c.get(`/v1/projects/proj-a/jobs/${JOB}`, { headers: bearer('nope-nope-nope-nope') }), 401,
      'UNAUTHENTICATED', /^Request had invalid authentication credentials\./);
    // ?key= is a credential too (what the Google clients send for an API key).
    assert.equal((await c.get(`/v1/projects/proj-a/jobs/${JOB}?key=${TOKENS.viewer}`)).status, 200);
  });

  it('another project: the same 403 whether the job exists or not', async () => {
    // One request id for both: the details (RequestInfo included) must not differ.
    const same = { ...bearer(TOKENS.other), 'X-Request-Id': 'same-id' };
    const there = assertError(await c.get(`/v1/projects/proj-a/jobs/${JOB}`, { headers: same }),
      403, 'PERMISSION_DENIED');
    const absent = assertError(await c.get('/v1/projects/proj-a/jobs/no_such_job', { headers: same }),
      403, 'PERMISSION_DENIED');
    assert.equal(there.message, `Permission 'ml.jobs.get' denied on resource 'projects/proj-a/jobs/${JOB}' (or it may not exist).`);
    assert.equal(absent.message, there.message.replace(JOB, 'no_such_job'));
    assert.deepEqual(absent.details, there.details);
    assert.equal(there.details[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
    assert.equal(there.details[0].reason, 'IAM_PERMISSION_DENIED');
    // Its own project works; listing the other one does not.
    assert.equal((await c.get('/v1/projects/proj-b/jobs', { headers: bearer(TOKENS.other) })).status, 200);
    assertError(await c.get('/v1/projects/proj-a/jobs', { headers: bearer(TOKENS.other) }), 403, 'PERMISSION_DENIED',
      "Permission 'ml.jobs.list' denied on resource 'projects/proj-a' (or it may not exist).");
    // Logs of another project: refused from the body's resourceNames.
    assertError(await c.post('/v2/entries:list', { resourceNames: ['projects/proj-a'] }, { headers: bearer(TOKENS.other) }),
      403, 'PERMISSION_DENIED', /logging\.logEntries\.list/);
  });

  it('every route: no token, agent token, other project, viewer, developer, admin', async () => {
    const routes = servedRoutes();
    assert.ok(routes.length >= 25);
    const cv = await c.post('/v1/projects/proj-a/locations/us-central1/customJobs', {
      displayName: 'guarded',
      jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1', containerSpec: { imageUri: 'x/y:z' } }] },
    }, { headers: bearer(TOKENS.developer) });
    assert.equal(cv.status, 200, cv.text);
    const ids = { job: JOB, customJob: cv.json.name.split('/').pop(), bucket: BUCKET };
    const before = (await c.get(`/v1/projects/proj-a/jobs/${JOB}`, { headers: bearer(TOKENS.root) })).json;

    const callers = [
      ['none', {}],
      ['agent', bearer(AGENT_TOKEN)],
      ['node', bearer(TOKENS.node)],
      ['node-other', bearer(TOKENS.nodeOther)],
      ['metrics', bearer(TOKENS.metrics)],
      ['other', bearer(TOKENS.other)],
      ['viewer', bearer(TOKENS.viewer)],
      ['developer', bearer(TOKENS.developer)],
      ['admin', bearer(TOKENS.admin)],
    ];
    const failures = [];
    for (const [who, headers] of callers) {
      for (const route of routes) {
        // The developer's and admin's calls change things: they run last,
        // and the delete of the custom job stays for the admin.
        const { url, body } = concrete(route, 'proj-a', ids);
        const need = needed(route.op);
        const res = await request(server.base, route.method, url, { body, headers });
        let want;
        if (need === 'public') want = (s) => s !== 401 && s !== 403;
        else if (need === 'agent') {
          // The cluster token and the node's own token pass; another node's token is
          // refused (403); every other credential is not an agent's (401).
          if (who === 'agent' || who === 'node') want = (s) => s !== 401 && s !== 403;
          else if (who === 'node-other') want = (s) => s === 403;
          else want = (s) => s === 401;
        } else if (who === 'none') want = (s) => s === 401;
        else if (need === 'metrics') want = who === 'metrics' || who === 'admin' ? (s) => s === 200 : (s) => s === 403;
        else if (['agent', 'node', 'node-other', 'metrics'].includes(who)) want = (s) => s === 403;
        else if (who === 'other' && route.op === 'trainplane.whoami.get') want = (s) => s === 200;
        else if (who === 'other' && route.op.endsWith('.testIamPermissions')) {
          // Anyone signed in may ask; another project's caller holds nothing there.
          want = (s) => s === 200 && JSON.stringify(res.json) === '{}';
        } else if (who === 'agent' || who === 'other') want = (s) => s === 403;
        else if (RANK[who] >= RANK[need]) want = (s) => s !== 401 && s !== 403;
        else want = (s) => s === 403;
        if (!want(res.status)) failures.push(`${who} ${route.method} ${url} (${route.op}, needs ${need}): ${res.status} ${res.text.slice(0, 200)}`);
        if (res.status === 401 || res.status === 403) {
          assert.ok(res.json?.error?.status, `envelope for ${who} ${route.op}`);
        }
      }
      if (who === 'viewer') {
        // Nobody below developer changed anything.
        const now = (await c.get(`/v1/projects/proj-a/jobs/${JOB}`, { headers: bearer(TOKENS.root) })).json;
        assert.deepEqual(now, before, 'the job is unchanged after the refused calls');
        const pol = await c.get(`/v1/projects/proj-a/jobs/${JOB}:getIamPolicy`, { headers: bearer(TOKENS.root) });
        assert.equal(pol.json.bindings, undefined, 'no policy was set');
        const cj = await c.get(`/v1/projects/proj-a/locations/us-central1/customJobs/${ids.customJob}`, { headers: bearer(TOKENS.root) });
        assert.equal(cj.status, 200, 'the custom job still exists');
      }
    }
    assert.deepEqual(failures, []);
  });

  it('a policy binding grants another project\'s member access to that job only', async () => {
    const job = 'shared_job';
    assert.equal((await c.post('/v1/projects/proj-a/jobs', { jobId: job, trainingInput: trainingInput() },
      { headers: bearer(TOKENS.developer) })).status, 200);
    const url = `/v1/projects/proj-a/jobs/${job}`;
    assertError(await c.get(url, { headers: bearer(TOKENS.other) }), 403, 'PERMISSION_DENIED');
    // A developer may not set policies; an admin may.
    assertError(await c.post(`${url}:setIamPolicy`, { policy: { bindings: [] } }, { headers: bearer(TOKENS.developer) }),
      403, 'PERMISSION_DENIED', /ml\.jobs\.setIamPolicy/);
    const empty = await c.get(`${url}:getIamPolicy`, { headers: bearer(TOKENS.admin) });
    assert.equal(empty.status, 200);
    assert.deepEqual(Object.keys(empty.json), ['etag']);
    const set = await c.post(`${url}:setIamPolicy`, {
      policy: { bindings: [{ role: 'roles/ml.viewer', members: ['user:bob@example.com'] }], etag: empty.json.etag },
    }, { headers: bearer(TOKENS.admin) });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.json.version, 1);
    assert.deepEqual(set.json.bindings, [{ role: 'roles/ml.viewer', members: ['user:bob@example.com'] }]);
    assert.notEqual(set.json.etag, empty.json.etag);

    assert.equal((await c.get(url, { headers: bearer(TOKENS.other) })).status, 200, 'bob reads the shared job');
    assertError(await c.post(`${url}:cancel`, {}, { headers: bearer(TOKENS.other) }), 403, 'PERMISSION_DENIED');
    assertError(await c.get(`/v1/projects/proj-a/jobs/${JOB}`, { headers: bearer(TOKENS.other) }), 403, 'PERMISSION_DENIED');
    const t = await c.post(`${url}:testIamPermissions`, { permissions: ['ml.jobs.get', 'ml.jobs.cancel', 'ml.jobs.setIamPolicy'] },
      { headers: bearer(TOKENS.other) });
    assert.deepEqual(t.json, { permissions: ['ml.jobs.get'] });
    // Another job of proj-a: nothing, the same as a job that does not exist.
    assert.deepEqual((await c.post(`/v1/projects/proj-a/jobs/${JOB}:testIamPermissions`, { permissions: ['ml.jobs.get'] },
      { headers: bearer(TOKENS.other) })).json, {});
    assert.deepEqual((await c.post('/v1/projects/proj-a/jobs/nope:testIamPermissions', { permissions: ['ml.jobs.get'] },
      { headers: bearer(TOKENS.other) })).json, {});

    // Upgrade bob to developer on the job: cancel works now.
    const up = await c.post(`${url}:setIamPolicy`, {
      policy: { bindings: [{ role: 'roles/ml.developer', members: ['user:bob@example.com'] }] },
    }, { headers: bearer(TOKENS.admin) });
    assert.equal(up.status, 200);
    assert.equal((await c.post(`${url}:cancel`, {}, { headers: bearer(TOKENS.other) })).status, 200);
    // A stale etag is refused as IAM does.
    assertError(await c.post(`${url}:setIamPolicy`, { policy: { bindings: [], etag: set.json.etag } },
      { headers: bearer(TOKENS.admin) }), 409, 'ABORTED', /concurrent policy changes/);
  });

  it('SIGHUP reloads the tokens file; a bad file keeps the old one', async () => {
    const url = `/v1/projects/proj-a/jobs/${JOB}`;
    assertError(await c.get(url, { headers: bearer(TOKENS.late) }), 401, 'UNAUTHENTICATED');
    fs.writeFileSync(file, tokensYaml(`  - name: late\n    sha256: ${sha(TOKENS.late)}\n    role: viewer\n    projects: [proj-a]\n`));
    server.child.kill('SIGHUP');
    await waitFor(async () => (await c.get(url, { headers: bearer(TOKENS.late) })).status === 200, 5000,
      'the new token works after SIGHUP');
    fs.writeFileSync(file, 'tokens: [ {name: broken\n');
    server.child.kill('SIGHUP');
    await waitFor(() => /tokens not reloaded, keeping the current ones: .*tokens-\d+\.yaml:\d+:\d+/.test(server.stderr()), 5000,
      'the bad file is reported');
    assert.equal((await c.get(url, { headers: bearer(TOKENS.late) })).status, 200, 'the old tokens stay');
    assert.equal((await c.get(url, { headers: bearer(TOKENS.viewer) })).status, 200);
    fs.writeFileSync(file, tokensYaml());
  });

  it('SIGHUP under load (wrk): no failed request', async () => {
    const url = `${server.base}/v1/projects/proj-a/jobs/${JOB}`;
    const wrk = spawn('wrk', ['-t2', '-c16', '-d4s', '-H', `Authorization: Bearer ${TOKENS.viewer}`, url]);
    let out = '';
    wrk.stdout.on('data', (d) => { out += d; });
    const done = new Promise((resolve) => wrk.on('close', resolve));	// its report read whole
    for (let i = 0; i < 15; i++) {
      await new Promise((r) => setTimeout(r, 200));
      fs.writeFileSync(file, tokensYaml(i % 2 ? `  - name: extra\n    sha256: ${sha(TOKENS.late)}\n    role: viewer\n    projects: [x]\n` : ''));
      server.child.kill('SIGHUP');
    }
    assert.equal(await done, 0, out);
    const m = /(\d+) requests in/.exec(out);
    assert.ok(m && Number(m[1]) > 100, `wrk ran: ${out}`);
    assert.doesNotMatch(out, /Non-2xx|Socket errors/, out);
    assert.match(server.stderr(), /SIGHUP: catalog .* reloaded/);
    fs.writeFileSync(file, tokensYaml());
  });

  it('the googleapis client passes its key and drives IAM', async () => {
    const ml = google.ml({ version: 'v1', rootUrl: `${server.base}/`, auth: TOKENS.admin });
    const name = `projects/proj-a/jobs/${JOB}`;
    const got = await ml.projects.jobs.getIamPolicy({ resource: name });
    const set = await ml.projects.jobs.setIamPolicy({
      resource: name,
      requestBody: { policy: { bindings: [{ role: 'roles/ml.admin', members: ['group:ops@example.com'] }], etag: got.data.etag } },
    });
    assert.deepEqual(set.data.bindings, [{ role: 'roles/ml.admin', members: ['group:ops@example.com'] }]);
    const test = await ml.projects.jobs.testIamPermissions({ resource: name, requestBody: { permissions: ['ml.jobs.get', 'ml.jobs.setIamPolicy'] } });
    assert.deepEqual(test.data.permissions, ['ml.jobs.get', 'ml.jobs.setIamPolicy']);
    const viewer = google.ml({ version: 'v1', rootUrl: `${server.base}/`, auth: TOKENS.viewer });
    await assert.rejects(viewer.projects.jobs.getIamPolicy({ resource: name }), (e) => e.code === 403);
  });
});

describe('the agents\' credentials in tokens mode', () => {
  const openssl = (...args) => execFileSync('openssl', args, { encoding: 'utf8' }).trim();
  const tokensEnv = (env = {}) => ({
    TRAINPLANE_AUTH_MODE: 'tokens',
    TRAINPLANE_TOKENS_FILE: tokensFile(`tokens-cred-${process.hrtime.bigint()}.yaml`, tokensYaml()),
    ...env,
  });
  const checkConfig = (env) => runServerSync(['--check-config'], { env: tokensEnv(env) });
  const register = (base, node, token) => request(base, 'POST', `/agent/v1/nodes/${node}:register`,
    { body: {}, headers: token ? bearer(token) : {} });

  it('a known default, a placeholder, a short or a degenerate agent_token stops the server and --check-config, saying why', () => {
    const weak = {
      'the public default': 'trainplane-dev-token',
      'the placeholder of deploy/systemd/server.env.example': 'CHANGE-ME-openssl-rand-hex-32',
      'a placeholder around random bytes': `change-me-${crypto.randomBytes(32).toString('hex')}`,
      '31 random bytes in hex (248 bits)': crypto.randomBytes(31).toString('hex'),
      '32 random bytes as decimal digits (77 digits: 255.8 bits)': BigInt(`0x${crypto.randomBytes(32).toString('hex')}`)
        .toString().padStart(77, '1').slice(0, 77),
      'one character repeated': 'a'.repeat(64),
      'a repeated block': '0123456789abcdef'.repeat(4),
      'a run of the alphabet': 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
      'a space inside': `${crypto.randomBytes(20).toString('hex')} ${crypto.randomBytes(20).toString('hex')}`,
      'the public default padded out': `trainplane-dev-token-${'x'.repeat(50)}`,
      'a lowercase phrase of 53 characters (not base64url: 254 bits)': 'correct-horse-battery-staple-and-some-more-words-here',
    };
    for (const [what, token] of Object.entries(weak)) {
      const r = checkConfig({ TRAINPLANE_AGENT_TOKEN: token });
      assert.equal(r.status, 1, `${what}: --check-config accepted it:\n${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /agent_token \(TRAINPLANE_AGENT_TOKEN\) is too weak for auth_mode tokens: /, what);
      assert.match(r.stderr, /openssl rand -hex 32/, what);
      assert.ok(!r.stderr.includes(token), `${what}: the token itself is never printed`);
    }
    assert.match(checkConfig({ TRAINPLANE_AGENT_TOKEN: 'trainplane-dev-token' }).stderr, /the public default/);
    assert.match(checkConfig({ TRAINPLANE_AGENT_TOKEN: crypto.randomBytes(31).toString('hex') }).stderr,
      /62 characters from an alphabet of 16: 248 bits, 256 needed/);
    // Started, not only checked: it stops before it opens the database or a port.
    const dir = makeTempDir('tp-access-weak-');
    try {
      const r = runServerSync([], {
        timeout: 20_000,
        env: tokensEnv({ TRAINPLANE_AGENT_TOKEN: 'trainplane-dev-token', TRAINPLANE_DATABASE_URL: newDatabase().url,
          TRAINPLANE_STATE_DIR: dir, TRAINPLANE_LISTEN: '127.0.0.1:0' }),
      });
      assert.equal(r.status, 1, `the server ran with the default agent token:\n${r.stderr}`);
      assert.doesNotMatch(r.stderr, /listening on/);
      assert.match(r.stderr, /agent_token \(TRAINPLANE_AGENT_TOKEN\) is too weak/);
    } finally {
      removeTempDir(dir);
    }
  });

  it('openssl rand -hex 32 and -base64 32 pass; left unset, no cluster token opens the agent routes', async () => {
    for (let i = 0; i < 10; i++) {
      for (const enc of ['-hex', '-base64']) {
        const token = openssl('rand', enc, '32');
        const r = checkConfig({ TRAINPLANE_AGENT_TOKEN: token });
        assert.equal(r.status, 0, `openssl rand ${enc} 32 refused: ${r.stderr}`);
      }
    }
    // Open mode keeps the development default for make run and the emulator.
    assert.equal(runServerSync(['--check-config'], { env: { TRAINPLANE_AGENT_TOKEN: 'trainplane-dev-token' } }).status, 0);

    const strong = openssl('rand', '-base64', '32');
    const withToken = await startServer({ pg: newDatabase(), env: tokensEnv({ TRAINPLANE_AGENT_TOKEN: strong }) });
    const unset = await startServer({ pg: newDatabase(), env: tokensEnv() });
    try {
      const ok = await register(withToken.base, 'any-node', strong);
      assert.ok(![401, 403].includes(ok.status), `the cluster token: ${ok.status} ${ok.text}`);
      assertError(await register(withToken.base, 'any-node', 'trainplane-dev-token'), 401, 'UNAUTHENTICATED');
      // agent_token unset: the default does not open anything, nor any other guess.
      for (const guess of ['trainplane-dev-token', '', strong]) {
        assertError(await register(unset.base, 'any-node', guess), 401, 'UNAUTHENTICATED');
      }
      assert.match(unset.stderr(), /agent routes: no cluster token \(agent_token unset\); 2 per-node agent tokens/);
    } finally {
      await withToken.stop();
      await unset.stop();
    }
  });

  it('a node\'s token opens its own node\'s agent routes only: a real agent runs a job with it; other nodes and user routes stay shut', async (t) => {
    const A = crypto.randomBytes(32).toString('hex');
    const B = crypto.randomBytes(32).toString('hex');
    const agents = (withA = true) => `${withA ? `  - name: node-gpu-a\n    sha256: ${sha(A)}\n    role: agent\n    nodes: [gpu-a]\n` +
      '    inventory: {vcpus: 16, memoryMb: 61440}\n' : ''}` +
      `  - name: node-gpu-b\n    sha256: ${sha(B)}\n    role: agent\n    nodes: [gpu-b, gpu-c]\n    inventory: any\n`;
    const file = tokensFile(`tokens-nodes-${process.hrtime.bigint()}.yaml`, tokensYaml(agents()));
    const server = await startServer({
      pg: newDatabase(),
      env: { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: file, TRAINPLANE_SCHEDULER_TICK_MS: '200' },
    });
    const agentDir = makeTempDir('tp-access-nodes-');
    const started = [];
    t.after(() => {
      for (const a of started) a.cleanup();
      server.kill();
      removeTempDir(agentDir);
    });
    const c = client(server.base);
    const nodes = async () => {
      const r = await c.get('/trainplane/v1/nodes', { headers: bearer(TOKENS.root) });
      assert.equal(r.status, 200, r.text);
      return r.json.nodes ?? [];
    };
    const a = await startAgent(server, { node: 'gpu-a', dir: agentDir, token: A, runtime: 'simulate', ready: false });
    started.push(a);
    await waitFor(async () => (await nodes()).some((n) => n.name === 'gpu-a' && n.state === 'READY'), 20_000,
      `gpu-a did not become READY with its own token:\n${a.log.slice(-2000)}`);
    // An agent that calls itself gpu-b with gpu-a's token is refused, and keeps being refused.
    const impostor = await startAgent(server, { node: 'gpu-b', dir: agentDir, token: A, runtime: 'simulate', ready: false });
    started.push(impostor);
    await waitFor(() => /register answered 403/.test(impostor.log), 20_000, `the impostor was not refused:\n${impostor.log}`);
    assert.ok(!(await nodes()).some((n) => n.name === 'gpu-b'), 'gpu-b never registered');

    // The routes one by one.
    const e = assertError(await register(server.base, 'gpu-b', A), 403, 'PERMISSION_DENIED',
      /this agent token is not bound to node gpu-b/);
    assert.ok(!JSON.stringify(e).includes('gpu-a'), 'the refusal does not list the token\'s nodes');
    assertError(await request(server.base, 'POST', '/agent/v1/nodes/gpu-b:sync', { body: {}, headers: bearer(A) }),
      403, 'PERMISSION_DENIED');
    assertError(await register(server.base, 'gpu-a', B), 403, 'PERMISSION_DENIED');
    assert.ok(![401, 403].includes((await register(server.base, 'gpu-c', B)).status), 'a token may name several nodes');
    for (const [method, url] of [['GET', '/v1/projects/proj-a/jobs'], ['POST', '/v1/projects/proj-a/jobs'],
      ['GET', '/trainplane/v1/nodes'], ['GET', '/metrics'], ['POST', '/v2/entries:list']]) {
      const r = await request(server.base, method, url, { body: method === 'POST' ? {} : undefined, headers: bearer(A) });
      assertError(r, 403, 'PERMISSION_DENIED');
    }
    for (const user of [TOKENS.root, TOKENS.admin, TOKENS.metrics]) {
      assertError(await request(server.base, 'POST', '/agent/v1/nodes/gpu-a:sync', { body: {}, headers: bearer(user) }),
        401, 'UNAUTHENTICATED');
    }

    // The whole protocol runs on the node's token: a job placed on gpu-a succeeds.
    const job = `per_node_${Date.now()}`;
    const created = await c.post('/v1/projects/proj-a/jobs', { jobId: job, trainingInput: trainingInput() },
      { headers: bearer(TOKENS.developer) });
    assert.equal(created.status, 200, created.text);
    await waitFor(async () => (await c.get(`/v1/projects/proj-a/jobs/${job}`, { headers: bearer(TOKENS.viewer) })).json.state === 'SUCCEEDED',
      30_000, `the job did not succeed on gpu-a:\n${a.log.slice(-2000)}`);

    // Revoked: without its entry (SIGHUP) gpu-a's token opens nothing.
    fs.writeFileSync(file, tokensYaml(agents(false)));
    server.child.kill('SIGHUP');
    await waitFor(async () => (await register(server.base, 'gpu-a', A)).status === 401, 5000, 'the revoked token still works');
  });
});

describe('what a node\'s token lets its node declare', () => {
  it('the tokens file bounds the inventory: more is 403 naming what exceeds; no inventory registers nothing; "any" and the cluster token are unbounded', async (t) => {
    const T = Object.fromEntries(['bounded', 'bare', 'any'].map((k) => [k, crypto.randomBytes(32).toString('hex')]));
    const file = tokensFile(`tokens-inventory-${process.hrtime.bigint()}.yaml`, tokensYaml(
      `  - name: node-bounded\n    sha256: ${sha(T.bounded)}\n    role: agent\n    nodes: [inv-1, inv-tpu]\n` +
      '    inventory:\n      gpus: {NVIDIA_TESLA_T4: 2}\n      tpu: {TPU_V2: 8}\n      vcpus: 16\n      memoryMb: 65536\n' +
      '      zones: [us-central1-a]\n' +
      `  - name: node-bare\n    sha256: ${sha(T.bare)}\n    role: agent\n    nodes: [inv-2]\n` +
      `  - name: node-any\n    sha256: ${sha(T.any)}\n    role: agent\n    nodes: [inv-3]\n    inventory: any\n`));
    const server = await startServer({
      pg: newDatabase(),
      env: { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: file, TRAINPLANE_AGENT_TOKEN: AGENT_TOKEN },
    });
    const agentDir = makeTempDir('tp-access-inventory-');
    let agent;
    t.after(() => {
      agent?.cleanup();
      server.kill();
      removeTempDir(agentDir);
    });
    const body = (extra = {}) => ({
      incarnation: crypto.randomBytes(8).toString('hex'), region: 'us-central1', zone: 'us-central1-a',
      address: '127.0.0.1', runtime: 'simulate', vcpus: 16, memoryMb: 61440, portRange: [31000, 31999], ...extra,
    });
    const reg = (node, token, extra) => request(server.base, 'POST', `/agent/v1/nodes/${node}:register`,
      { body: body(extra), headers: bearer(token) });
    const nodes = async () => {
      const r = await request(server.base, 'GET', '/trainplane/v1/nodes', { headers: bearer(TOKENS.root) });
      assert.equal(r.status, 200, r.text);
      return r.json.nodes ?? [];
    };

    // Within the bounds: registered.
    const t4 = (count) => ({ accelerators: { type: 'NVIDIA_TESLA_T4', count } });
    assert.equal((await reg('inv-1', T.bounded, t4(2))).status, 200);
    assert.equal((await reg('inv-tpu', T.bounded, { tpu: { type: 'TPU_V2', cores: 8 } })).status, 200);
    // Beyond them: 403, naming what and the bound; the node keeps what it had.
    assertError(await reg('inv-1', T.bounded, t4(4)), 403, 'PERMISSION_DENIED',
      /register node inv-1 with this inventory: it declares 4 GPUs of type NVIDIA_TESLA_T4, and its agent token \(node-bounded\) allows at most 2\./);
    assertError(await reg('inv-1', T.bounded, { accelerators: { type: 'NVIDIA_TESLA_A100', count: 1 } }), 403,
      'PERMISSION_DENIED', /1 GPUs of type NVIDIA_TESLA_A100, and its agent token \(node-bounded\) allows 0\./);
    assertError(await reg('inv-1', T.bounded, { accelerators: { type: 'x"\n<y>', count: 1 } }), 403,
      'PERMISSION_DENIED', /of type \(not a catalog name\)/);
    assertError(await reg('inv-1', T.bounded, { vcpus: 96 }), 403, 'PERMISSION_DENIED', /96 vCPUs, .* at most 16/);
    assertError(await reg('inv-1', T.bounded, { memoryMb: 1 << 20 }), 403, 'PERMISSION_DENIED', /MB of memory, .* at most 65536/);
    assertError(await reg('inv-tpu', T.bounded, { tpu: { type: 'TPU_V3', cores: 8 } }), 403, 'PERMISSION_DENIED',
      /8 TPU cores of type TPU_V3/);
    // A zone it does not list: a node cannot draw another region's tenants.
    assertError(await reg('inv-1', T.bounded, { region: 'europe-west4', zone: 'europe-west4-b' }), 403,
      'PERMISSION_DENIED', /declares zone europe-west4-b, and its agent token \(node-bounded\) allows only us-central1-a\./);
    // A token without inventory registers nothing, not even a CPU node.
    assertError(await reg('inv-2', T.bare), 403, 'PERMISSION_DENIED', /gives its agent token \(node-bare\) no inventory/);
    // inventory: any, and the cluster token (the operator's own): no bound.
    assert.equal((await reg('inv-3', T.any, { ...t4(8), vcpus: 96 })).status, 200);
    assert.equal((await reg('inv-4', AGENT_TOKEN, t4(8))).status, 200);
    const seen = new Map((await nodes()).map((n) => [n.name, n]));
    assert.ok(!seen.has('inv-2'), 'inv-2 never registered');
    assert.ok(seen.has('inv-1') && seen.has('inv-3') && seen.has('inv-4'));
    assert.ok(!JSON.stringify(seen.get('inv-1')).includes('A100'), JSON.stringify(seen.get('inv-1')));
    assert.match(server.stderr(), /node inv-1: register refused: it declares 4 GPUs/);

    // A real agent that claims more GPUs than its token allows never becomes a node.
    agent = await startAgent(server, { node: 'inv-tpu', dir: agentDir, token: T.bounded, runtime: 'simulate',
      gpuType: 'NVIDIA_TESLA_T4', gpuCount: 8, ready: false });
    await waitFor(() => /register answered 403/.test(agent.log), 20_000, `the agent was not refused:\n${agent.log}`);
    assert.match(agent.log, /8 GPUs of type NVIDIA_TESLA_T4/);
  });
});

describe('IAM in open mode', () => {
  let server;
  let c;
  before(async () => {
    server = await startServer({ pg: newDatabase() });
    c = client(server.base);
    assert.equal((await c.post('/v1/projects/p/jobs', { jobId: 'j1', trainingInput: trainingInput() })).status, 200);
  });
  after(async () => {
    if (server) await server.stop();
  });

  it('validates policies: roles, members, conditions, versions, masks', async () => {
    const url = '/v1/projects/p/jobs/j1:setIamPolicy';
    assertError(await c.post(url, { policy: { bindings: [{ role: 'roles/storage.admin', members: ['user:a@b.c'] }] } }),
      400, 'INVALID_ARGUMENT', /Role roles\/storage\.admin is not supported for this resource/);
    assertError(await c.post(url, { policy: { bindings: [{ role: 'roles/ml.viewer', members: ['alice'] }] } }),
      400, 'INVALID_ARGUMENT', /Invalid member "alice"/);
    assertError(await c.post(url, { policy: { bindings: [{ role: 'roles/ml.viewer', members: ['user:a@b.c'], condition: { expression: 'true' } }] } }),
      400, 'INVALID_ARGUMENT', /Conditions are not supported/);
    assertError(await c.post(url, { policy: { version: 2 } }), 400, 'INVALID_ARGUMENT', /Invalid policy version 2/);
    assertError(await c.post(url, { policy: {}, updateMask: 'owners' }), 400, 'INVALID_ARGUMENT', /update_mask/);
    assertError(await c.post(url, { policy: { bindingz: [] } }), 400, 'INVALID_ARGUMENT', /Unknown name "bindingz"/);
    assertError(await c.post(url, {}), 400, 'INVALID_ARGUMENT', /A policy is required/);
    assertError(await c.post('/v1/projects/p/jobs/nope:setIamPolicy', { policy: {} }), 404, 'NOT_FOUND');
    assertError(await c.get('/v1/projects/p/jobs/nope:getIamPolicy'), 404, 'NOT_FOUND');
    assertError(await c.get('/v1/projects/p/jobs/j1:getIamPolicy?options.requestedPolicyVersion=2'), 400, 'INVALID_ARGUMENT');
    assertError(await c.post('/v1/projects/p/jobs/j1:testIamPermissions', { permissions: ['ml.jobs.*'] }), 400,
      'INVALID_ARGUMENT', /Permission ml\.jobs\.\* is not valid/);
  });

  it('get/set round trip keeps auditConfigs only under the mask; test returns what is asked', async () => {
    const set = await c.post('/v1/projects/p/jobs/j1:setIamPolicy', {
      policy: {
        bindings: [{ role: 'roles/ml.developer', members: ['user:a@example.com', 'serviceAccount:sa@p.iam.gserviceaccount.com'] },
          { role: 'roles/ml.viewer', members: [] }],
        auditConfigs: [{ service: 'allServices', auditLogConfigs: [{ logType: 'DATA_READ' }] }],
      },
      updateMask: 'bindings,auditConfigs',
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.json.bindings.length, 1, 'a binding without members is dropped');
    assert.deepEqual(set.json.auditConfigs, [{ service: 'allServices', auditLogConfigs: [{ logType: 'DATA_READ' }] }]);
    const got = await c.get('/v1/projects/p/jobs/j1:getIamPolicy');
    assert.deepEqual(got.json, set.json);
    const again = await c.post('/v1/projects/p/jobs/j1:setIamPolicy', { policy: { bindings: [] } });
    assert.deepEqual(again.json.auditConfigs, set.json.auditConfigs, 'the default mask leaves auditConfigs alone');
    assert.equal(again.json.bindings, undefined);
    const t = await c.post('/v1/projects/p/jobs/j1:testIamPermissions', { permissions: ['ml.jobs.get', 'ml.jobs.cancel', 'storage.objects.get'] });
    assert.deepEqual(t.json, { permissions: ['ml.jobs.get', 'ml.jobs.cancel'] });
    assert.deepEqual((await c.post('/v1/projects/p/jobs/none:testIamPermissions', { permissions: ['ml.jobs.get'] })).json, {});
  });
});

describe('graceful SIGTERM', () => {
  it('the leader stops under load: the standby schedules within 2 s and no acknowledged job is lost', async (t) => {
    const db = newDatabase();
    const env = { TRAINPLANE_SCHEDULER_TICK_MS: '200', TRAINPLANE_SYNC_INTERVAL_SECONDS: '1', TRAINPLANE_LEASE_SECONDS: '5' };
    const s1 = await startServer({ pg: db, env });
    await waitFor(() => /this server is the leader/.test(s1.stderr()), 10_000, 'first server leads');
    const s2 = await startServer({ pg: db, env });
    const agentDir = makeTempDir('tp-access-agent-');
    const agent = await startAgent(s2, { node: 'standby-node', dir: agentDir, runtime: 'simulate', vcpus: 64 });
    t.after(async () => {
      s1.kill();
      s2.kill();
      agent.kill?.('SIGKILL');
      removeTempDir(agentDir);
    });
    // Load: clients create jobs on both servers until told to stop.
    const acked = [];
    let stop = false;
    let n = 0;
    const loop = async (s) => {
      while (!stop) {
        const id = `load_${n++}`;
        try {
          // Another region (no nodes there): the load queues without taking the node.
          const r = await request(s.base, 'POST', '/v1/projects/ha/jobs',
            { body: { jobId: id, trainingInput: trainingInput({ region: 'europe-west1' }) }, timeoutMs: 5000 });
          if (r.status === 200) acked.push(id);
          else if (s === s2) assert.fail(`standby answered ${r.status}: ${r.text}`);
        } catch (e) {
          if (s === s2) throw e;
          await new Promise((r) => setTimeout(r, 20)); // the stopped server refuses connections
        }
      }
    };
    const loops = [loop(s1), loop(s1), loop(s2), loop(s2)];
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    s1.child.kill('SIGTERM');
    await waitFor(() => /this server is the leader/.test(s2.stderr()), 2000, `the standby did not take over within 2 s:\n${s2.stderr().slice(-1500)}`);
    const probe = `after_${Date.now()}`;
    assert.equal((await request(s2.base, 'POST', '/v1/projects/ha/jobs', { body: { jobId: probe, trainingInput: trainingInput() } })).status, 200);
    await waitJobState(s2.base, 'ha', probe, ['RUNNING', 'SUCCEEDED'], 3000);
    assert.ok(Date.now() - t0 < 3000, `the probe ran ${Date.now() - t0} ms after the SIGTERM`);
    stop = true;
    await Promise.all(loops);
    const r = await s1.exited;
    assert.deepEqual(r, { code: 0, signal: null }, s1.stderr().slice(-2000));
    assert.match(s1.stderr(), /shutting down: no new connections, finishing the requests in flight/);
    // Every acknowledged create is there.
    const have = new Set();
    let token = '';
    do {
      const page = await request(s2.base, 'GET', `/v1/projects/ha/jobs?pageSize=100${token ? `&pageToken=${token}` : ''}`);
      for (const j of page.json.jobs ?? []) have.add(j.jobId);
      token = page.json.nextPageToken ?? '';
    } while (token);
    const lost = acked.filter((id) => !have.has(id));
    assert.ok(acked.length > 10, `load ran (${acked.length} creates)`);
    assert.deepEqual(lost, []);
    await agent.stop();
    await s2.stop();
  });

  it('finishes what began before SIGTERM and refuses, with 503 and a closed connection, what came after', async () => {
    const s = await startServer({ pg: newDatabase(), env: { TRAINPLANE_SCHEDULER: 'false' } });
    const net = await import('node:net');
    const connect = () => new Promise((resolve, reject) => {
      const c = net.connect(s.port, '127.0.0.1', () => resolve(c));
      c.on('error', reject);
    });
    const readAll = (c) => new Promise((resolve) => {
      let text = '';
      c.setEncoding('utf8');
      c.on('data', (d) => { text += d; });
      c.on('end', () => resolve(text));
      c.on('close', () => resolve(text));
    });
    const body = JSON.stringify({ jobId: `slow_${Date.now()}`, trainingInput: trainingInput() });
    try {
      // Before SIGTERM: a create whose body is still arriving (in flight), and
      // an idle kept-alive connection.
      const slow = await connect();
      const slowReply = readAll(slow);
      slow.write(`POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
      const idle = await connect();
      const idleReply = readAll(idle);
      await new Promise((r) => setTimeout(r, 200));
      s.child.kill('SIGTERM');
      await waitFor(() => /shutting down/.test(s.stderr()), 5000, 'the server did not begin to stop');
      // After SIGTERM, on the open connection: refused, and the connection closes.
      idle.write('GET /v1/projects/p/jobs/nope HTTP/1.1\r\nHost: x\r\n\r\n');
      const late = await idleReply;
      assert.match(late, /^HTTP\/1\.1 503 /, late);
      assert.match(late, /\r\nConnection: close\r\n/i, late);
      const lateError = JSON.parse(late.slice(late.indexOf('\r\n\r\n') + 4)).error;
      assert.equal(lateError.status, 'UNAVAILABLE');
      assert.equal(lateError.message, 'The server is shutting down. Retry the request.');
      // The create that began before is finished and answered normally.
      slow.write(body.slice(10));
      const reply = await Promise.race([slowReply,
        new Promise((r) => setTimeout(() => r('(no reply within 10 s)'), 10_000).unref())]);
      assert.match(reply, /^HTTP\/1\.1 200 /, reply);
      const r = await s.exited;
      assert.deepEqual(r, { code: 0, signal: null }, s.stderr().slice(-2000));
    } finally {
      s.kill();
    }
  });
});
