// Connection churn against the sanitized server (ASan + UBSan; make test-tsan
// runs it under ThreadSanitizer): 64 loops at once open connections, send
// requests the server suspends (job-cache gets waiting on their fence, piped
// reads and creates, agent syncs parked as long-polls), big replies and
// pipelines, and leave at random points: a reset, a close, a half-close with
// or without requests behind it, a head or a body cut short, a TLS handshake
// left half done. Over plain HTTP and TLS (two servers on one database),
// each with few HTTP workers, so that the events of many connections share
// one epoll batch. The test fails on any sanitizer report in a server's
// output, on a server's exit, or when a health check (/readyz and a cached
// get, on each server) goes unanswered past a generous deadline.
//
// CHURN_SECONDS (default 12) sets how long the churn lasts, CHURN_LOOPS
// (64) how many loops, CHURN_SEED the seed (printed, for a replay).
// TRAINPLANE_SAN_SERVER_BIN names the sanitized server (make test builds
// build/san/trainplane-server); TRAINPLANE_SAN_KIND says which sanitizer it
// has (asan, the default, or tsan).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';

import {
  REPO_ROOT, makeTempDir, request, sanitizerEnv, sanitizerReport, startPostgres, startServer, trainingInput, waitFor,
} from './harness.mjs';
import { AGENT_TOKEN } from './agents.mjs';
import { churn } from './churn.mjs';

const SAN_BIN = process.env.TRAINPLANE_SAN_SERVER_BIN;
const SAN_KIND = process.env.TRAINPLANE_SAN_KIND || 'asan';
const SECONDS = Number(process.env.CHURN_SECONDS || 12);
const LOOPS = Number(process.env.CHURN_LOOPS || 64);
const SEED = process.env.CHURN_SEED ? Number(process.env.CHURN_SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
// A health check unanswered this long means the server stopped answering
// (a loaded 2-core machine and a sanitized server are slow, never this slow).
const HEALTH_DEADLINE_MS = 30_000;
const SETUP_TIMEOUT_MS = 60_000;

const PROJECT = 'churn';
const BIG_PROJECT = 'churnbig';

let pg;
let dir;
const servers = [];
const reported = new Set();

function openssl(...args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A CA and a certificate for 127.0.0.1/localhost signed by it (as tls.test.mjs makes them). */
function makeCertificates() {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=churn test CA',
    '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr');
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'san.ext', '-out', 'server.pem');
  fs.chmodSync(path.join(dir, 'server.key'), 0o600);
  return { ca: fs.readFileSync(path.join(dir, 'ca.pem')), cert: path.join(dir, 'server.pem'), key: path.join(dir, 'server.key') };
}

/** The environment of a sanitized server of this kind. */
function sanEnv() {
  if (SAN_KIND === 'tsan') {
    const supp = path.join(REPO_ROOT, 'tests', 'tsan.supp');
    return {
      TSAN_OPTIONS: `halt_on_error=0:second_deadlock_stack=1:history_size=4${fs.existsSync(supp) ? `:suppressions=${supp}` : ''}`,
    };
  }
  return sanitizerEnv();
}

/**
 * One keep-alive client per server for the health checks: GET `p`, 200
 * expected; a failed attempt (a reset kept-alive connection, a client-side
 * error) is tried again until HEALTH_DEADLINE_MS has passed.
 */
function healthClient(s) {
  const agent = s.ca ? new https.Agent({ keepAlive: true, ca: s.ca, maxSockets: 2 })
    : new http.Agent({ keepAlive: true, maxSockets: 2 });
  const once = (p) => new Promise((resolve, reject) => {
    const mod = s.ca ? https : http;
    const r = mod.request({ host: '127.0.0.1', port: s.server.port, path: p, agent, servername: 'localhost', timeout: HEALTH_DEADLINE_MS },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
        res.on('error', reject);
      });
    r.on('timeout', () => r.destroy(new Error('timeout')));
    r.on('error', reject);
    r.end();
  });
  return {
    agent,
    async check(p) {
      const t0 = Date.now();
      let last;
      while (Date.now() - t0 < HEALTH_DEADLINE_MS) {
        if (!s.server.alive()) throw new Error(`${s.name}: the server exited`);
        try {
          last = await once(p);
          if (last === 200) return Date.now() - t0;
        } catch (e) {
          last = e.code ?? e.message;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`${s.name}: GET ${p} not answered 200 within ${HEALTH_DEADLINE_MS} ms (last: ${last})`);
    },
  };
}

/** What went wrong with a server: its sanitizer report, its exit, or null. */
function trouble(s) {
  const report = sanitizerReport(s.server.stderr());
  if (report) return `${s.name}: sanitizer report in the server's stderr:\n${report}`;
  if (!s.server.alive()) {
    return `${s.name}: the server exited (${s.server.child.exitCode ?? s.server.child.signalCode}):\n` +
      `${s.server.stderr().slice(-4000)}`;
  }
  return null;
}

/** Why there is no sanitized server to run, or null. A failure, never a skip. */
function missingServer() {
  if (!SAN_BIN) {
    return 'TRAINPLANE_SAN_SERVER_BIN must name the sanitized server (make test builds ' +
      'build/san/trainplane-server and sets it); this test runs only against a sanitized build';
  }
  if (!fs.existsSync(SAN_BIN)) {
    return `the sanitized server ${SAN_BIN} is missing: build it with ` +
      '`make SANITIZE=1 build/san/trainplane-server` (make test does)';
  }
  return null;
}

before(async () => {
  if (missingServer()) return;	// the test fails, saying so
  process.stderr.write(`# http_churn: seed ${SEED} (replay: CHURN_SEED=${SEED}), ${LOOPS} loops for ${SECONDS} s, ${SAN_KIND}\n`);
  dir = makeTempDir('tp-churn-');
  const certs = makeCertificates();
  pg = await startPostgres();
  const env = {
    ...sanEnv(),
    TRAINPLANE_SCHEDULER: 'false',
  };
  // Few workers: the events of many connections come in one epoll batch.
  const plain = await startServer({ pg, bin: SAN_BIN, env: { ...env, TRAINPLANE_HTTP_THREADS: '1' } });
  servers.push({ name: 'plain', server: plain, base: plain.base });
  const secure = await startServer({
    pg, bin: SAN_BIN, ready: false,
    env: { ...env, TRAINPLANE_HTTP_THREADS: '2', TRAINPLANE_TLS_CERT_FILE: certs.cert, TRAINPLANE_TLS_KEY_FILE: certs.key },
  });
  servers.push({ name: 'tls', server: secure, base: secure.base, ca: certs.ca });
  for (const s of servers) s.health = healthClient(s);
  await servers[1].health.check('/readyz');
});

after(async () => {
  for (const s of servers) s.health?.agent.destroy();
  try {
    // stop() asserts a clean exit (status 0, no report: leaks too); a server
    // the test found in trouble was reported already.
    for (const s of servers) {
      if (!reported.has(s)) await s.server.stop();
    }
  } finally {
    for (const s of servers) s.server.kill();
    await pg?.cleanup();
  }
});

/** The jobs, nodes and caches the loops use; made through the plain server. */
async function makeWorld() {
  const base = servers[0].base;
  const ok = async (res) => {
    const r = await res;
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  const cached = [];
  for (let i = 0; i < 16; i++) {
    const id = `cached_${i}`;
    await ok(request(base, 'POST', `/v1/projects/${PROJECT}/jobs`,
      { body: { jobId: id, trainingInput: trainingInput() }, timeoutMs: SETUP_TIMEOUT_MS }));
    cached.push(id);
  }
  const vertexCached = [];
  for (let i = 0; i < 4; i++) {
    const j = await ok(request(base, 'POST', `/v1/projects/${PROJECT}/locations/us-central1/customJobs`, {
      body: {
        displayName: `churn ${i}`,
        jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4' }, replicaCount: '1',
          containerSpec: { imageUri: 'gcr.io/test/trainer:latest' } }] },
      },
      timeoutMs: SETUP_TIMEOUT_MS,
    }));
    vertexCached.push(j.name);
  }
  // A list reply of about a megabyte: 100 jobs of 64 long labels each.
  const labels = {};
  for (let l = 0; l < 64; l++) labels[`label_${l}_${'k'.repeat(50)}`] = 'v'.repeat(63);
  for (let i = 0; i < 100; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, k) => ok(request(base, 'POST', `/v1/projects/${BIG_PROJECT}/jobs`,
      { body: { jobId: `big_${i + k}`, labels, trainingInput: trainingInput() }, timeoutMs: SETUP_TIMEOUT_MS }))));
  }
  // A node whose syncs park: the version it already has, nothing changes.
  const auth = { authorization: `Bearer ${AGENT_TOKEN}` };
  await ok(request(base, 'POST', '/agent/v1/nodes/churn-node:register', {
    headers: auth, timeoutMs: SETUP_TIMEOUT_MS,
    body: { incarnation: 'churn-inc', region: 'us-west1', zone: 'us-west1-b', vcpus: 16, memoryMb: 61440,
      address: '127.0.0.2', portRange: [25000, 25009], runtime: 'process' },
  }));
  const first = await ok(request(base, 'POST', '/agent/v1/nodes/churn-node:sync', {
    headers: auth, timeoutMs: SETUP_TIMEOUT_MS, body: { incarnation: 'churn-inc', waitSeconds: 0, replicas: [] },
  }));
  // Filled on each server: their gets are fenced hits from here on.
  for (const s of servers) {
    for (let round = 0; round < 2; round++) {
      for (const id of cached) await s.health.check(`/v1/projects/${PROJECT}/jobs/${id}`);
      for (const name of vertexCached) await s.health.check(`/v1/${name}`);
    }
  }
  return {
    project: PROJECT, bigProject: BIG_PROJECT, cached, vertexCached,
    node: { name: 'churn-node', incarnation: 'churn-inc', version: first.desiredVersion, token: AGENT_TOKEN },
  };
}

describe('connection churn', () => {
  it(`survives ${LOOPS} loops of clients leaving at random points for ${SECONDS} s, plain and TLS`, async () => {
    const missing = missingServer();
    if (missing) assert.fail(missing);
    const world = await makeWorld();
    const endAt = Date.now() + SECONDS * 1000;
    // Loopback source addresses spread the client ports (none run out in
    // TIME_WAIT). Three loops in four on the plain server (one worker), the
    // rest on the TLS one (two).
    let next = 0;
    const localAddress = () => {
      next = (next + 1) % 1000;
      return `127.9.${Math.floor(next / 250)}.${1 + (next % 250)}`;
    };
    const plainLoops = Math.max(1, Math.round(LOOPS * 0.75));
    const runs = [
      { s: servers[0], run: churn({ port: servers[0].server.port, name: 'p', localAddress },
        { loops: plainLoops, seed: SEED, world, endAt }) },
      { s: servers[1], run: churn({ port: servers[1].server.port, name: 't', ca: servers[1].ca, localAddress },
        { loops: LOOPS - plainLoops, seed: (SEED ^ 0x5bd1e995) >>> 0, world, endAt }) },
    ];
    // The watch: each server answers its health checks and stays up, with
    // no sanitizer report, all along. The first trouble stops the churn.
    let problem = null;
    const watch = async (s) => {
      while (!problem && Date.now() < endAt) {
        try {
          await s.health.check('/readyz');
          await s.health.check(`/v1/projects/${PROJECT}/jobs/${world.cached[0]}`);
        } catch (e) {
          problem ??= trouble(s) ?? e.message;
        }
        problem ??= trouble(s);
        // The next check in a second, or at once when the end comes.
        for (let i = 0; i < 20 && !problem && Date.now() < endAt; i++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    const watching = Promise.all(servers.map(watch));
    const exits = servers.map((s) => s.server.exited.then(() => { problem ??= trouble(s); }));
    await Promise.race([watching, ...exits]);
    const churned = ((Date.now() - endAt) / 1000 + SECONDS).toFixed(1);
    for (const r of runs) r.run.stop();
    if (problem) {
      // A sanitizer writes its report, then (ASan) exits: read it whole,
      // once the server has exited or its stderr has stopped growing.
      const quiet = (s) => {
        let last = -1;
        let still = 0;
        return () => {
          const n = s.server.stderr().length;
          still = n === last ? still + 1 : 0;
          last = n;
          return !s.server.alive() || still >= 10;
        };
      };
      await Promise.all(servers.map((s) => waitFor(quiet(s), 15_000, 'quiet', 100).catch(() => {})));
      problem = servers.map(trouble).find(Boolean) ?? problem;
      for (const s of servers) if (trouble(s)) reported.add(s);
    }
    const stats = await Promise.all(runs.map((r) => r.run.done));
    for (const [i, st] of stats.entries()) {
      process.stderr.write(`# http_churn ${servers[i].name}: ${st.connections} connections, ${st.requests} requests, ` +
        `${st.connectFailed} refused, ${st.clientErrors} client errors; when ${JSON.stringify(st.when)}; how ${JSON.stringify(st.how)}\n`);
    }
    assert.equal(problem, null, `seed ${SEED} (replay: CHURN_SEED=${SEED}), after ${churned} s of churn: ${problem}`);
    // Still answering after it, every way: health, a cached get, a create.
    for (const s of servers) {
      await s.health.check('/readyz');
      await s.health.check(`/v1/projects/${PROJECT}/jobs/${world.cached[1]}`);
      assert.equal(trouble(s), null, `seed ${SEED}: ${trouble(s)}`);
    }
    const created = await request(servers[0].base, 'POST', `/v1/projects/${PROJECT}/jobs`,
      { body: { jobId: `after_${SEED}`, trainingInput: trainingInput() }, timeoutMs: HEALTH_DEADLINE_MS });
    assert.equal(created.status, 200, created.text);
    for (const s of servers) assert.equal(trouble(s), null, `seed ${SEED}: ${trouble(s)}`);
  });
});
