// Observability: GET /metrics (checked by promtool and by values after known
// actions, with a real agent for the run-time figures), request ids (header,
// error details, log lines) and JSON log lines.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import {
  makeTempDir, removeTempDir, request, runServerSync, startPostgres, startServer, trainingInput, waitFor,
} from './harness.mjs';
import { AGENT_BIN, createJob, freePort, killMarked, startAgent, waitJobState } from './agents.mjs';

const PROMTOOL = spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : null;
const PROMETHEUS = spawnSync('prometheus', ['--version']).status === 0 ? 'prometheus' : null;
const T4 = 'NVIDIA_TESLA_T4';
const ZONE = 'us-central1-a';

let pg;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
});
after(async () => {
  if (pg) await pg.cleanup();
});

const newDatabase = () => pg.newDatabase('metrics');

async function server(t, env = {}) {
  const s = await startServer({ pg: newDatabase(), env: { TRAINPLANE_SCHEDULER_TICK_MS: '200', ...env } });
  t.after(() => s.kill());
  return s;
}

async function scrape(base) {
  const res = await request(base, 'GET', '/metrics');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  return res.text;
}

/** Parses a label set {a="x",b="y"} with the format's escapes. */
function parseLabels(s) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
  let m;
  while ((m = re.exec(s))) labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  return labels;
}

/** Every sample of the scrape: [{ name, labels, value }]. */
function samples(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    out.push({ name: m[1], labels: parseLabels(m[2] ?? ''), value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample with exactly these labels, or undefined. */
function value(text, name, labels = {}) {
  const hit = samples(text).find((s) => s.name === name &&
    Object.keys(s.labels).length === Object.keys(labels).length &&
    Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hit?.value;
}

function assertDenied(res, status) {
  assert.equal(res.status, status, res.text);
  assert.ok(res.json?.error?.status, 'Google\'s envelope');
  assert.ok(!/trainplane_/.test(res.text), 'nothing of the scrape leaks');
}

function promtoolCheck(text) {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(r.status, 0, `promtool check metrics:\n${r.stdout}${r.stderr}\n--- scrape:\n${text}`);
  assert.equal((r.stdout + r.stderr).trim(), '', 'promtool reports no problem');
}

describe('GET /metrics', () => {
  it('passes promtool and counts jobs by API and state, and requests by route and code', { skip: !PROMTOOL && 'promtool is not installed (Debian package prometheus)' }, async (t) => {
    const s = await server(t);
    const first = await scrape(s.base);
    promtoolCheck(first);
    assert.equal(value(first, 'trainplane_jobs', { api: 'ml', state: 'QUEUED' }), 0);
    assert.equal(value(first, 'trainplane_database_up'), 1);
    assert.equal(value(first, 'trainplane_db_pool_connections'), 4);
    // The scheduler campaigns for leadership in the background: it wins soon after start.
    await waitFor(async () => value(await scrape(s.base), 'trainplane_scheduler_leader') === 1,
      10_000, 'trainplane_scheduler_leader did not become 1');
    assert.equal(value(await scrape(s.base), 'trainplane_scheduler_leader_acquired_total'), 1);

    // Three ml jobs stay QUEUED: there is no node to run them.
    for (let i = 0; i < 3; i++) {
      const res = await request(s.base, 'POST', '/v1/projects/p1/jobs', {
        body: { jobId: `q${i}_${Date.now()}`, trainingInput: trainingInput() },
      });
      assert.equal(res.status, 200, res.text);
    }
    const route = { route: 'ml.projects.jobs.get', code: '404' };
    const unmatched = { route: 'unmatched', code: '404' };
    const before404 = value(first, 'trainplane_http_requests_total', route) ?? 0;
    assert.equal((await request(s.base, 'GET', '/v1/projects/p1/jobs/nope')).status, 404);
    assert.equal((await request(s.base, 'GET', '/no/such/path')).status, 404);
    assert.equal((await request(s.base, 'GET', '/no/such/path2')).status, 404);

    let text;
    await waitFor(async () => {
      text = await scrape(s.base);
      return value(text, 'trainplane_jobs', { api: 'ml', state: 'QUEUED' }) === 3;
    }, 5000, 'trainplane_jobs{api="ml",state="QUEUED"} did not become 3');
    promtoolCheck(text);
    assert.equal(value(text, 'trainplane_jobs', { api: 'vertex', state: 'QUEUED' }), 0);
    assert.equal(value(text, 'trainplane_http_requests_total', route), before404 + 1);
    assert.equal(value(text, 'trainplane_http_requests_total', unmatched), 2,
      'unknown paths count under route="unmatched", never the raw path');
    assert.equal(value(text, 'trainplane_http_requests_total', { route: 'ml.projects.jobs.create', code: '200' }), 3);
    assert.ok(!/no\/such/.test(text), 'no raw path in the scrape');
    // The latency histogram of the route: cumulative buckets, +Inf = count.
    const lat = { route: 'ml.projects.jobs.create' };
    assert.equal(value(text, 'trainplane_http_request_duration_seconds_count', lat), 3);
    assert.equal(value(text, 'trainplane_http_request_duration_seconds_bucket', { ...lat, le: '+Inf' }), 3);
    assert.ok(value(text, 'trainplane_http_request_duration_seconds_sum', lat) > 0);
    const buckets = samples(text).filter((x) => x.name === 'trainplane_http_request_duration_seconds_bucket' &&
      x.labels.route === lat.route).map((x) => x.value);
    assert.deepEqual(buckets, [...buckets].sort((a, b) => a - b), 'buckets are cumulative');
    // The three creates and the get went down the pipelined connection: at
    // most one batch each (concurrent ones share), none resent.
    const commands = value(text, 'trainplane_db_pipe_commands_total');
    const batches = value(text, 'trainplane_db_pipe_batches_total');
    assert.ok(commands >= 4, `pipe commands ${commands}`);
    assert.ok(batches >= 1 && batches <= commands, `pipe batches ${batches} for ${commands} commands`);
    assert.equal(value(text, 'trainplane_db_pipe_resent_total'), 0);
    assert.equal(value(text, 'trainplane_db_pipe_reconnects_total'), 0);
    // The 404 get looked in the job cache and found nothing to keep.
    assert.equal(value(text, 'trainplane_job_cache_lookups_total', { result: 'miss' }), 1);
    assert.equal(value(text, 'trainplane_job_cache_entries'), 0);
    assert.equal(value(text, 'trainplane_nodes', { state: 'READY' }), 0);
    assert.ok(value(text, 'trainplane_scheduler_pass_duration_seconds_count') > 0, 'the leader ran passes');
    assert.equal(value(text, 'trainplane_queue_wait_seconds_count'), 0, 'nothing was placed');
    // The LISTEN hub: fences went round (the 404 get's, and the hub's checks), none lost.
    assert.ok(value(text, 'trainplane_listen_fence_seconds_count') > 0, 'fences on the listening connection');
    assert.equal(value(text, 'trainplane_listen_reconnects_total'), 0);
    // Every family the scrape writes is in docs/observability.md's table.
    const documented = new Set(fs.readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8')
      .split('\n').filter((l) => l.startsWith('| `trainplane_'))
      .flatMap((l) => [...l.split('|')[1].matchAll(/`(trainplane_[a-z_]+)`/g)].map((m) => m[1])));
    const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    assert.ok(families.length > 20, families.join(' '));
    assert.deepEqual(families.filter((f) => !documented.has(f)), [], 'families missing from docs/observability.md');
  });

  it('counts leader changes: the standby that takes over counts one, the old leader none more', async (t) => {
    const db = newDatabase();
    const start = async () => {
      const x = await startServer({ pg: db, env: { TRAINPLANE_SCHEDULER_TICK_MS: '200' } });
      t.after(() => x.kill());
      return x;
    };
    const a = await start();
    await waitFor(async () => value(await scrape(a.base), 'trainplane_scheduler_leader') === 1,
      10_000, 'the first server did not lead');
    const b = await start();
    const standby = await scrape(b.base);
    assert.equal(value(standby, 'trainplane_scheduler_leader'), 0);
    assert.equal(value(standby, 'trainplane_scheduler_leader_acquired_total'), 0);
    assert.equal(value(await scrape(a.base), 'trainplane_scheduler_leader_acquired_total'), 1);
    await a.stop(); // hands the lock over
    let text;
    await waitFor(async () => value(text = await scrape(b.base), 'trainplane_scheduler_leader') === 1,
      15_000, 'the standby did not take over');
    assert.equal(value(text, 'trainplane_scheduler_leader_acquired_total'), 1);
    await b.stop();
  });

  it('counts a node given up as LOST in trainplane_nodes_lost_total, and trainplane_nodes shows it', { skip: !AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set' }, async (t) => {
    const s = await server(t, { TRAINPLANE_SYNC_INTERVAL_SECONDS: '1', TRAINPLANE_LEASE_SECONDS: '5' });
    const agent = await startAgent(s, { node: 'gone-1', zone: ZONE });
    t.after(() => agent.cleanup());
    await waitFor(async () => value(await scrape(s.base), 'trainplane_scheduler_leader') === 1,
      10_000, 'no leader');
    assert.equal(value(await scrape(s.base), 'trainplane_nodes_lost_total'), 0);
    await agent.kill(); // no orderly stop: the lease (5 s), the grace (1 s) and 2 s pass
    let text;
    await waitFor(async () => value(text = await scrape(s.base), 'trainplane_nodes', { state: 'LOST' }) === 1,
      30_000, 'the node did not become LOST');
    assert.equal(value(text, 'trainplane_nodes_lost_total'), 1);
    assert.equal(value(text, 'trainplane_nodes', { state: 'READY' }), 0);
    await s.stop();
  });

  it('tokens mode: a metrics token or an admin scrapes (401 without a token, 403 for others); health stays public', async (t) => {
    const dir = makeTempDir('tp-metrics-tokens-');
    t.after(() => removeTempDir(dir));
    const file = path.join(dir, 'tokens.yaml');
    const tokens = Object.fromEntries(['viewer', 'admin', 'metrics', 'node'].map((k) => [k, crypto.randomBytes(32).toString('hex')]));
    const sha = (x) => crypto.createHash('sha256').update(x).digest('hex');
    fs.writeFileSync(file, 'tokens:\n' +
      `  - {name: v, sha256: ${sha(tokens.viewer)}, role: viewer, projects: ["*"]}\n` +
      `  - {name: a, sha256: ${sha(tokens.admin)}, role: admin, projects: [p1]}\n` +
      `  - {name: prometheus, sha256: ${sha(tokens.metrics)}, role: metrics}\n` +
      `  - {name: gpu-1, sha256: ${sha(tokens.node)}, role: agent, nodes: [gpu-1]}\n`);
    const cluster = crypto.randomBytes(32).toString('hex');
    const s = await server(t, { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: file, TRAINPLANE_AGENT_TOKEN: cluster });
    const bearer = (x) => ({ Authorization: `Bearer ${x}` });

    // No token: 401 in Google's envelope, with the request id.
    const anonymous = await request(s.base, 'GET', '/metrics', { headers: { 'X-Request-Id': 'scrape-0' } });
    assert.equal(anonymous.status, 401, anonymous.text);
    assert.equal(anonymous.json.error.status, 'UNAUTHENTICATED');
    assert.ok(!/trainplane_/.test(anonymous.text), 'nothing of the scrape leaks');
    assert.ok(anonymous.json.error.details.some((d) => d.requestId === 'scrape-0'));
    // Tokens without the permission: 403, the same for users, agents and the cluster token.
    for (const [who, token] of [['viewer on every project', tokens.viewer], ['a node', tokens.node], ['the cluster token', cluster]]) {
      const r = await request(s.base, 'GET', '/metrics', { headers: bearer(token) });
      assert.equal(r.status, 403, `${who}: ${r.status} ${r.text.slice(0, 200)}`);
      assert.equal(r.json.error.status, 'PERMISSION_DENIED', who);
      assert.ok(!/trainplane_nodes/.test(r.text), who);
    }
    assertDenied(await request(s.base, 'GET', '/metrics', { headers: bearer('not-a-token-at-all') }), 401);
    // The scraper's token (Authorization: Bearer, as Prometheus sends it) and an admin's.
    const res = await request(s.base, 'GET', '/metrics', { headers: { ...bearer(tokens.metrics), 'X-Request-Id': 'scrape-1' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('x-request-id'), 'scrape-1');
    assert.match(res.text, /^trainplane_jobs\{api="ml",state="QUEUED"\} 0$/m);
    assert.equal((await request(s.base, 'GET', '/metrics', { headers: bearer(tokens.admin) })).status, 200);
    // A metrics token reaches nothing else.
    assert.equal((await request(s.base, 'GET', '/v1/projects/p1/jobs', { headers: bearer(tokens.metrics) })).status, 403);
    assert.equal((await request(s.base, 'GET', '/trainplane/v1/nodes', { headers: bearer(tokens.metrics) })).status, 403);
    // Health stays public for load balancers and probes.
    assert.equal((await request(s.base, 'GET', '/healthz')).status, 200);
    assert.equal((await request(s.base, 'GET', '/readyz')).status, 200);
    // The API next to it needs a token too: the 401 carries the request id.
    const denied = await request(s.base, 'GET', '/v1/projects/p1/jobs', { headers: { 'X-Request-Id': 'no-token' } });
    assert.equal(denied.status, 401);
    assert.ok(denied.json.error.details.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.RequestInfo' &&
      d.requestId === 'no-token'));
    const again = await request(s.base, 'GET', '/metrics', { headers: bearer(tokens.metrics) });
    assert.ok(value(again.text, 'trainplane_http_requests_total', { route: 'ml.projects.jobs.list', code: '401' }) >= 1);
    assert.ok(value(again.text, 'trainplane_http_requests_total', { route: 'metrics', code: '403' }) >= 3);
  });

  it('tokens mode: a real Prometheus scrapes with credentials_file; without it the target is down with 401',
    { skip: !PROMETHEUS && 'prometheus is not installed (Debian package prometheus)' }, async (t) => {
      const dir = makeTempDir('tp-metrics-prom-');
      const file = path.join(dir, 'tokens.yaml');
      const token = crypto.randomBytes(32).toString('hex');
      fs.writeFileSync(file, `tokens:\n  - name: prometheus\n    sha256: ${crypto.createHash('sha256').update(token).digest('hex')}\n` +
        '    role: metrics\n');
      const s = await server(t, { TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: file });
      const target = new URL(s.base).host;
      const credentials = path.join(dir, 'prometheus-token');
      fs.writeFileSync(credentials, `${token}\n`, { mode: 0o600 });
      fs.writeFileSync(path.join(dir, 'prometheus.yml'), `global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: trainplane
    authorization:
      type: Bearer
      credentials_file: ${credentials}
    static_configs:
      - targets: ['${target}']
  - job_name: anonymous
    static_configs:
      - targets: ['${target}']
`);
      const port = await freePort();
      const prom = spawn(PROMETHEUS, [`--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ['ignore', 'ignore', 'pipe'] });
      let promLog = '';
      prom.stderr.on('data', (d) => { promLog += d; });
      t.after(() => { prom.kill('SIGKILL'); removeTempDir(dir); });
      const promBase = `http://127.0.0.1:${port}`;
      let targets = [];
      await waitFor(async () => {
        const r = await request(promBase, 'GET', '/api/v1/targets').catch(() => null);
        targets = r?.json?.data?.activeTargets ?? [];
        return targets.length === 2 && targets.every((x) => x.health !== 'unknown');
      }, 30_000, `prometheus did not scrape both targets:\n${promLog.slice(-3000)}`);
      const byJob = Object.fromEntries(targets.map((x) => [x.labels.job, x]));
      assert.equal(byJob.trainplane.health, 'up', JSON.stringify(byJob.trainplane));
      assert.equal(byJob.anonymous.health, 'down', JSON.stringify(byJob.anonymous));
      assert.match(byJob.anonymous.lastError, /401/);
      // What it stored is the server's scrape.
      let result = [];
      await waitFor(async () => {
        const q = await request(promBase, 'GET', '/api/v1/query?query=' +
          encodeURIComponent('trainplane_jobs{job="trainplane",api="ml",state="QUEUED"}'));
        result = q.json?.data?.result ?? [];
        return result.length === 1;
      }, 10_000, 'the series is not in Prometheus');
      assert.equal(result[0].value[1], '0');
    });

  it('shows a job run on a real agent: queue wait, submit-to-running, replicas, nodes, accelerators', { skip: (!AGENT_BIN && 'TRAINPLANE_AGENT_BIN is not set') || (!PROMTOOL && 'promtool is not installed') }, async (t) => {
    const s = await server(t, { TRAINPLANE_SYNC_INTERVAL_SECONDS: '2' });
    const dir = makeTempDir('tp-metrics-');
    const agent = await startAgent(s, { node: 'gpu-m', gpuType: T4, gpuCount: 2, zone: ZONE, dir });
    const mark = `tpmark_${process.pid}_metrics_${Date.now().toString(36)}`;
    t.after(() => { agent.cleanup(); killMarked(mark); });
    const base0 = await scrape(s.base);
    assert.equal(value(base0, 'trainplane_nodes', { state: 'READY' }), 1);
    assert.equal(value(base0, 'trainplane_accelerators', { type: T4, zone: ZONE }), 2);
    assert.equal(value(base0, 'trainplane_accelerators_free', { type: T4, zone: ZONE }), 2);
    const age = value(base0, 'trainplane_node_last_sync_age_seconds', { node: 'gpu-m' });
    assert.ok(age >= 0 && age < 30, `sync age ${age}`);
    const runningBefore = value(base0, 'trainplane_submit_to_running_seconds_count');

    const id = `run_${Date.now()}`;
    await createJob(s.base, 'p1', id, {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
      masterConfig: { imageUri: 'localhost/trainer:test', containerCommand: ['sh', '-c', `sleep 4; : ${mark}`],
        acceleratorConfig: { count: '1', type: T4 } },
    });
    await waitJobState(s.base, 'p1', id, 'RUNNING', 20_000, () => agent.log.slice(-2000));
    let text;
    await waitFor(async () => {
      text = await scrape(s.base);
      return value(text, 'trainplane_jobs', { api: 'ml', state: 'RUNNING' }) === 1;
    }, 5000, 'trainplane_jobs{api="ml",state="RUNNING"} did not become 1');
    promtoolCheck(text);
    assert.equal(value(text, 'trainplane_submit_to_running_seconds_count'), runningBefore + 1);
    assert.equal(value(text, 'trainplane_submit_to_running_seconds_bucket', { le: '+Inf' }), runningBefore + 1);
    assert.ok(value(text, 'trainplane_submit_to_running_seconds_sum') > 0);
    assert.equal(value(text, 'trainplane_queue_wait_seconds_count'), 1);
    assert.equal(value(text, 'trainplane_replicas', { state: 'RUNNING' }), 1);
    assert.equal(value(text, 'trainplane_replicas', { state: 'PENDING' }), 0);
    assert.equal(value(text, 'trainplane_accelerators', { type: T4, zone: ZONE }), 2);
    assert.equal(value(text, 'trainplane_accelerators_free', { type: T4, zone: ZONE }), 1);
    assert.ok(value(text, 'trainplane_http_requests_total', { route: 'agent.nodes.sync', code: '200' }) > 0);

    await waitJobState(s.base, 'p1', id, 'SUCCEEDED', 20_000, () => agent.log.slice(-2000));
    await waitFor(async () => {
      text = await scrape(s.base);
      return value(text, 'trainplane_jobs', { api: 'ml', state: 'SUCCEEDED' }) === 1 &&
        value(text, 'trainplane_accelerators_free', { type: T4, zone: ZONE }) === 2;
    }, 5000, `the job's end did not show:\n${text}`);
    assert.equal(value(text, 'trainplane_replicas', { state: 'EXITED' }), 1);
    assert.equal(value(text, 'trainplane_replicas', { state: 'RUNNING' }), 0);
    assert.equal(value(text, 'trainplane_submit_to_running_seconds_count'), runningBefore + 1, 'counted once');
    await agent.stop();
    await s.stop();
  });
});

describe('request ids', () => {
  it('echoes a valid X-Request-Id, makes one when absent or bad, and puts it in error details and logs', async (t) => {
    const s = await server(t, { TRAINPLANE_LOG_LEVEL: 'debug' });
    const given = 'client-id_1.2:3';
    const ok = await request(s.base, 'GET', '/healthz', { headers: { 'X-Request-Id': given } });
    assert.equal(ok.headers.get('x-request-id'), given);

    const made = await request(s.base, 'GET', '/healthz');
    assert.match(made.headers.get('x-request-id'), /^[0-9a-f]{32}$/);
    const made2 = await request(s.base, 'GET', '/healthz');
    assert.notEqual(made2.headers.get('x-request-id'), made.headers.get('x-request-id'));

    for (const bad of ['has space', 'x'.repeat(129), 'tab\there']) {
      const res = await request(s.base, 'GET', '/healthz', { headers: { 'X-Request-Id': bad } });
      assert.match(res.headers.get('x-request-id'), /^[0-9a-f]{32}$/, `bad id ${JSON.stringify(bad)} replaced`);
    }
    const longest = 'y'.repeat(128);
    assert.equal((await request(s.base, 'GET', '/healthz', { headers: { 'X-Request-Id': longest } }))
      .headers.get('x-request-id'), longest);

    // Every error envelope carries a RequestInfo detail with the id.
    const nf = await request(s.base, 'GET', '/v1/projects/p/jobs/missing', { headers: { 'X-Request-Id': 'err-404' } });
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get('x-request-id'), 'err-404');
    assert.deepEqual(nf.json.error.details, [{ '@type': 'type.googleapis.com/google.rpc.RequestInfo', requestId: 'err-404' }]);
    const bad = await request(s.base, 'POST', '/v1/projects/p/jobs', { body: { jobId: 'x', trainingInput: { bogus: 1 } } });
    assert.equal(bad.status, 400);
    const info = bad.json.error.details.filter((d) => d['@type'] === 'type.googleapis.com/google.rpc.RequestInfo');
    assert.deepEqual(info, [{ '@type': 'type.googleapis.com/google.rpc.RequestInfo', requestId: bad.headers.get('x-request-id') }]);
    assert.ok(bad.json.error.details.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest'),
      'the BadRequest detail stays');

    // The request's log lines carry its id: the error line and the access line.
    await waitFor(() => /access: GET \/v1\/projects\/p\/jobs\/missing route=ml\.projects\.jobs\.get status=404/.test(s.stderr()),
      3000, 'no access log line');
    const lines = s.stderr().split('\n').filter((l) => l.includes('[req err-404]'));
    assert.ok(lines.some((l) => / DEBUG \[req err-404\] GET \/v1\/projects\/p\/jobs\/missing -> 404 NOT_FOUND/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /access: GET .* route=ml\.projects\.jobs\.get status=404 duration=[0-9.]+ms/.test(l)), lines.join('\n'));
  });
});

describe('log_format', () => {
  it('json: every line is a JSON object with time, level, msg and the request id where known', async (t) => {
    const s = await server(t, { TRAINPLANE_LOG_FORMAT: 'json', TRAINPLANE_LOG_LEVEL: 'debug' });
    // A path with a quote, a backslash and a byte that is not UTF-8 (logged
    // as sent: percent-encoded), and a request id with a quote and a
    // backslash, must still log as JSON.
    await request(s.base, 'GET', '/v1/projects/p/jobs/a%22b%5Cc%FF', { headers: { 'X-Request-Id': 'json-1' } });
    await request(s.base, 'GET', '/v1/projects/p/jobs/q"b\\c', { headers: { 'X-Request-Id': 'json"3\\' } });
    await request(s.base, 'GET', '/v1/projects/p/jobs/missing', { headers: { 'X-Request-Id': 'json-2' } });
    await waitFor(() => s.stderr().includes('"request_id":"json-2"') && /route=ml.projects.jobs.get status=404/.test(s.stderr()),
      3000, 'no JSON access line');
    await s.stop();
    const lines = s.stderr().split('\n').filter((l) => l.length);
    assert.ok(lines.length > 3);
    const parsed = lines.map((l) => {
      try { return JSON.parse(l); } catch (e) { assert.fail(`not a JSON line: ${l} (${e.message})`); }
      return null;
    });
    for (const p of parsed) {
      assert.match(p.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(p.level), p.level);
      assert.equal(typeof p.msg, 'string');
    }
    assert.ok(parsed.some((p) => p.level === 'info' && /listening on http/.test(p.msg)));
    const reqLines = parsed.filter((p) => p.request_id === 'json-1');
    assert.ok(reqLines.some((p) => p.msg.includes('a%22b%5Cc%FF')), JSON.stringify(reqLines));
    assert.ok(parsed.some((p) => p.request_id === 'json"3\\' && p.msg.includes('/jobs/q')),
      'a quote and a backslash in a request id');
    assert.ok(parsed.some((p) => p.request_id === 'json-2' && /^access: GET \/v1\/projects\/p\/jobs\/missing route=ml\.projects\.jobs\.get status=404/.test(p.msg)));
    assert.ok(parsed.filter((p) => /listening on/.test(p.msg)).every((p) => !('request_id' in p)), 'no request id outside requests');
  });

  it('rejects a format other than text or json', () => {
    const r = runServerSync(['--check-config'], { env: { TRAINPLANE_LOG_FORMAT: 'xml' } });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /TRAINPLANE_LOG_FORMAT: must be text or json/);
  });
});
