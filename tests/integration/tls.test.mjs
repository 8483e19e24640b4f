// HTTPS: the server with a certificate made at test time (its own CA), a
// real agent running the whole protocol over TLS against that CA, the CLI
// and the googleapis client verifying it, and the refusals: a client
// without the CA, plain HTTP on the TLS port, bad certificate settings, an
// agent sending its token over plain HTTP off loopback.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import path from 'node:path';

import {
  REPO_ROOT, makeTempDir, removeTempDir, runServerSync, startPostgres, startServer, trainingInput, waitFor,
} from './harness.mjs';
import { AGENT_BIN, startAgent } from './agents.mjs';

let dir;
let pg;
let server;
let ca;
let base;
const files = {};

function openssl(...args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A CA, and a certificate for 127.0.0.1/localhost signed by it. */
function makeCertificates() {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=trainplane test CA',
    '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr');
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'san.ext', '-out', 'server.pem');
  // An unrelated CA and key, for the refusals.
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=other CA',
    '-keyout', 'other.key', '-out', 'other.pem');
  fs.chmodSync(path.join(dir, 'server.key'), 0o600);
  for (const f of ['ca.pem', 'server.pem', 'server.key', 'other.pem', 'other.key']) files[f] = path.join(dir, f);
  ca = fs.readFileSync(files['ca.pem']);
}

/** One HTTPS request; rejects on a TLS failure. */
function req(method, urlPath, { body, caCert = ca, url = base } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(urlPath, url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const r = https.request(u, {
      method,
      ca: caCert,
      headers: payload ? { 'Content-Type': 'application/json' } : {},
      timeout: 10_000,
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, text, json });
      });
    });
    r.on('error', reject);
    r.on('timeout', () => r.destroy(new Error('timeout')));
    if (payload) r.write(payload);
    r.end();
  });
}

before(async () => {
  dir = makeTempDir('tp-tls-');
  makeCertificates();
  pg = await startPostgres();
  server = await startServer({
    pg,
    ready: false,
    env: {
      TRAINPLANE_TLS_CERT_FILE: files['server.pem'],
      TRAINPLANE_TLS_KEY_FILE: files['server.key'],
      TRAINPLANE_SCHEDULER_TICK_MS: '200',
      TRAINPLANE_SYNC_INTERVAL_SECONDS: '2',
    },
  });
  base = server.base;
  assert.match(base, /^https:\/\/127\.0\.0\.1:\d+$/);
  await waitFor(async () => (await req('GET', '/readyz').catch(() => ({}))).status === 200, 30_000, 'https /readyz');
});

after(async () => {
  if (server) await server.stop();
  if (pg) await pg.cleanup();
  if (dir) removeTempDir(dir);
});

describe('HTTPS server', () => {
  it('answers over TLS to a client that trusts its CA, and to no other', async () => {
    const r = await req('GET', '/readyz');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { status: 'ready' });
    await assert.rejects(req('GET', '/readyz', { caCert: fs.readFileSync(files['other.pem']) }),
      (e) => /self[- ]signed|unable to verify|UNABLE_TO_GET_ISSUER|SELF_SIGNED/i.test(`${e.code} ${e.message}`));
  });

  it('the discovery documents name the server by https:// (googleapiclient calls their rootUrl)', async () => {
    const r = await req('GET', '/discovery/v1/apis/ml/v1/rest?fields=rootUrl,baseUrl');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { rootUrl: `${base}/`, baseUrl: `${base}/` });
  });

  it('plain HTTP on the TLS port fails cleanly; the server stays up', async () => {
    const port = new URL(base).port;
    const outcome = await new Promise((resolve) => {
      const r = http.get({ host: '127.0.0.1', port, path: '/readyz', timeout: 5000 }, (res) => {
        let t = '';
        res.on('data', (d) => { t += d; });
        res.on('end', () => resolve({ status: res.statusCode, t }));
      });
      r.on('error', (e) => resolve({ error: e.code ?? e.message }));
      r.on('timeout', () => { r.destroy(); resolve({ error: 'timeout' }); });
    });
    assert.ok(outcome.error || outcome.status >= 400, `plain HTTP must not get an answer: ${JSON.stringify(outcome)}`);
    assert.equal((await req('GET', '/readyz')).status, 200);
    assert.ok(server.alive());
  });

  it('a real agent registers, syncs and runs a job to SUCCEEDED over TLS', async (t) => {
    const agentDir = makeTempDir('tp-tls-agent-');
    const agent = await startAgent(base, {
      node: 'tls-node', dir: agentDir, ready: false, config: { server_ca_file: files['ca.pem'] },
    });
    t.after(async () => {
      if (agent.alive()) await agent.stop();
      removeTempDir(agentDir);
    });
    await waitFor(async () => {
      const n = await req('GET', '/trainplane/v1/nodes');
      return (n.json?.nodes ?? []).some((x) => x.name.endsWith('tls-node') && x.state === 'READY');
    }, 20_000, `agent READY over TLS:\n${agent.stderr().slice(-2000)}`);
    const ti = trainingInput({ masterConfig: { imageUri: 'localhost/x:y', containerCommand: ['sh', '-c', 'echo over-tls'] } });
    const c = await req('POST', '/v1/projects/tls/jobs', { body: { jobId: 'tls_job', trainingInput: ti } });
    assert.equal(c.status, 200, c.text);
    await waitFor(async () => (await req('GET', '/v1/projects/tls/jobs/tls_job')).json?.state === 'SUCCEEDED', 30_000,
      `job SUCCEEDED over TLS:\n${agent.stderr().slice(-2000)}`);
    const logs = await req('POST', '/v2/entries:list', {
      body: { resourceNames: ['projects/tls'], filter: 'resource.type="ml_job" AND resource.labels.job_id="tls_job"' },
    });
    assert.ok((logs.json?.entries ?? []).some((e) => /over-tls/.test(e.textPayload ?? '')), logs.text);
  });

  it('an agent without the CA cannot sync: verification is never skipped', async (t) => {
    const agentDir = makeTempDir('tp-tls-agent2-');
    const agent = await startAgent(base, { node: 'untrusting', dir: agentDir, ready: false });
    t.after(async () => {
      if (agent.alive()) await agent.stop();
      removeTempDir(agentDir);
    });
    await waitFor(() => /certificate|SSL|TLS/i.test(agent.stderr()), 15_000, `agent reports the TLS failure:\n${agent.stderr()}`);
    const n = await req('GET', '/trainplane/v1/nodes');
    assert.ok(!(n.json?.nodes ?? []).some((x) => x.name.endsWith('untrusting')), 'it never registered');
  });

  it('an agent with server_ca_file and a plain http:// server refuses to start', () => {
    const cfg = path.join(dir, 'agent-http.yaml');
    fs.writeFileSync(cfg, `server: http://127.0.0.1:1/\nserver_ca_file: ${files['ca.pem']}\nnode: plain\n`);
    const r = spawnSync(AGENT_BIN, ['--config', cfg], { encoding: 'utf8', timeout: 10_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /server_ca_file'?: set, but 'server' http:\/\/127\.0\.0\.1:1\/ is not an https:\/\/ URL/);
  });

  it('the CLI verifies the server with --ca-file, over TRAINPLANE_CA_FILE', () => {
    const cli = process.env.TRAINPLANE_CLI_BIN;
    const env = { ...process.env, TRAINPLANE_ENDPOINT: `${base}/`, TRAINPLANE_PROJECT: 'tls' };
    delete env.TRAINPLANE_CA_FILE;
    const run = (args, extra = {}) => spawnSync(cli, args, { env: { ...env, ...extra }, encoding: 'utf8', timeout: 20_000 });
    let r = run(['--ca-file', files['ca.pem'], 'ai-platform', 'jobs', 'describe', 'tls_job']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /jobId: tls_job/);
    r = run(['ai-platform', 'jobs', 'describe', 'tls_job', `--ca-file=${files['ca.pem']}`]);
    assert.equal(r.status, 0, r.stderr);
    // The flag wins over the environment: a wrong CA in either is refused.
    r = run(['--ca-file', files['other.pem'], 'ai-platform', 'jobs', 'describe', 'tls_job'], { TRAINPLANE_CA_FILE: files['ca.pem'] });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /Could not reach .*(certificate|SSL)/i);
    r = run(['--ca-file', files['ca.pem'], 'ai-platform', 'jobs', 'describe', 'tls_job'], { TRAINPLANE_CA_FILE: files['other.pem'] });
    assert.equal(r.status, 0, r.stderr);
  });

  it('an agent refuses plain http:// to a server off loopback (exit 2) unless allow_insecure_http; allowed, it warns', async () => {
    const cfg = path.join(dir, 'agent-remote.yaml');
    const keys = `server: http://10.255.255.1:8080/\nnode: plain-remote\nwork_dir: ${path.join(dir, 'work-remote')}\n`;
    fs.writeFileSync(cfg, keys);
    const r = spawnSync(AGENT_BIN, ['--config', cfg], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.status, 2, `the agent ran: ${r.stderr}`);
    assert.match(r.stderr, /bad configuration: key 'server': http:\/\/10\.255\.255\.1:8080\/ is plain HTTP to 10\.255\.255\.1, which is not \(or does not resolve only to\) a loopback address/);
    assert.match(r.stderr, /Use https:\/\/ \(and server_ca_file\), or set allow_insecure_http: true/);
    // The name of a host is resolved: one that resolves to nothing is no loopback either.
    fs.writeFileSync(cfg, keys.replace('10.255.255.1', 'trainplane.example.invalid'));
    assert.equal(spawnSync(AGENT_BIN, ['--config', cfg], { encoding: 'utf8', timeout: 10_000 }).status, 2);
    // Said explicitly, it runs, and says what it risks.
    fs.writeFileSync(cfg, `${keys}allow_insecure_http: true\n`);
    const child = spawn(AGENT_BIN, ['--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      await waitFor(() => /WARN .*server http:\/\/10\.255\.255\.1:8080\/: plain HTTP off loopback \(allow_insecure_http\)/.test(err),
        10_000, `no warning:\n${err}`);
    } finally {
      child.kill('SIGTERM');
    }
    assert.deepEqual(await exited, { code: 0, signal: null }, err);
  });

  it('a server on a non-loopback address without TLS warns; the TLS one does not', async () => {
    const plain = await startServer({ pg, ready: false, env: { TRAINPLANE_LISTEN: '0.0.0.0:0' } });
    try {
      await waitFor(() => /WARN .*listening on 0\.0\.0\.0:0 without TLS/.test(plain.stderr()), 5_000,
        `no warning:\n${plain.stderr()}`);
    } finally {
      await plain.stop();
    }
    assert.doesNotMatch(server.stderr(), /without TLS/);
  });

  it('the CLI verifies the server with TRAINPLANE_CA_FILE', async () => {
    const cli = process.env.TRAINPLANE_CLI_BIN;
    assert.ok(cli);
    const env = { ...process.env, TRAINPLANE_ENDPOINT: `${base}/`, TRAINPLANE_PROJECT: 'tls' };
    const ok = spawnSync(cli, ['ai-platform', 'jobs', 'describe', 'tls_job'], { env: { ...env, TRAINPLANE_CA_FILE: files['ca.pem'] }, encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /jobId: tls_job/);
    const bad = spawnSync(cli, ['ai-platform', 'jobs', 'describe', 'tls_job'], { env, encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /certificate|SSL/i);
  });

  it('the googleapis client works over https with the CA', () => {
    const script = `
      import { google } from './googleapis.mjs';
      const ml = google.ml({ version: 'v1', rootUrl: process.argv[2] + '/', auth: 'k' });
      const c = await ml.projects.jobs.create({ parent: 'projects/tls', requestBody: { jobId: 'via_client', trainingInput: ${JSON.stringify(trainingInput({ region: 'europe-west1' }))} } });
      const g = await ml.projects.jobs.get({ name: 'projects/tls/jobs/via_client' });
      console.log(JSON.stringify({ created: c.data.jobId, got: g.data.jobId, state: g.data.state }));`;
    const f = path.join(REPO_ROOT, 'tests', 'integration', `.tls-client-${process.pid}.mjs`);
    fs.writeFileSync(f, script);
    try {
      const r = spawnSync(process.execPath, [f, base], {
        // A deadline, not a budget: a node that loads googleapis on a loaded machine takes long.
        env: { ...process.env, NODE_EXTRA_CA_CERTS: files['ca.pem'] }, encoding: 'utf8', timeout: 120_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout.trim()), { created: 'via_client', got: 'via_client', state: 'QUEUED' });
    } finally {
      fs.rmSync(f, { force: true });
    }
  });

  it('refuses bad TLS settings at start with the file and the reason', () => {
    const run = (env) => runServerSync(['--check-config'], { env });
    let r = run({ TRAINPLANE_TLS_CERT_FILE: files['server.pem'] });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /bad TLS configuration: tls_cert_file and tls_key_file go together/);
    r = run({ TRAINPLANE_TLS_CERT_FILE: files['server.pem'], TRAINPLANE_TLS_KEY_FILE: files['other.key'] });
    assert.match(r.stderr, /other\.key: the key does not match the certificate .*server\.pem/);
    r = run({ TRAINPLANE_TLS_CERT_FILE: files['server.key'], TRAINPLANE_TLS_KEY_FILE: files['server.key'] });
    assert.match(r.stderr, /server\.key: not a PEM certificate/);
    r = run({ TRAINPLANE_TLS_CERT_FILE: path.join(dir, 'missing.pem'), TRAINPLANE_TLS_KEY_FILE: files['server.key'] });
    assert.match(r.stderr, /missing\.pem: cannot open/);
  });
});
