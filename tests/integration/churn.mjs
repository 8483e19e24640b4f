// Connection churn against a running server (http_churn.test.mjs): many
// loops at once, each opening connections one after another, sending
// requests the server suspends (fenced job-cache gets, piped reads and
// creates, parked long-polls), big replies and pipelines, and leaving at a
// random point in a random way: a reset, a close, a half-close, a head or a
// body cut short, in the middle of a TLS handshake.
//
// Everything random comes from one seeded PRNG per loop (seed + loop
// number), so a failing seed replays the same mix (the timings differ).
// Nothing here fails a test by itself: the test watches the server (its
// exit, its sanitizer reports, its answers to a health check); a client
// error here (a refused or reset connection) is counted, not thrown.

import net from 'node:net';
import tls from 'node:tls';

/** mulberry32: a small, fast, seeded PRNG; returns floats in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (rnd, xs) => xs[Math.floor(rnd() * xs.length)];
const int = (rnd, lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));

/** Picks a key of `weights` ({ name: weight }) at random. */
function weighted(rnd, weights) {
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  let x = rnd() * total;
  for (const [k, w] of Object.entries(weights)) {
    x -= w;
    if (x < 0) return k;
  }
  return Object.keys(weights)[0];
}

// --- requests -------------------------------------------------------------------

const get = (p, extra = '') => `GET ${p} HTTP/1.1\r\nHost: churn\r\n${extra}\r\n`;
function post(p, body, extra = '') {
  return `POST ${p} HTTP/1.1\r\nHost: churn\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

/**
 * What the loops ask for, made by the test once the world exists:
 *   cached: job ids of the cache project whose gets are fenced hits
 *   project, bigProject: where creates go; whose list is a big reply
 *   node: { name, incarnation, version, auth } for parked long-polls
 */
function requestOf(kind, rnd, world, tag) {
  switch (kind) {
  case 'cached':
    return get(`/v1/projects/${world.project}/jobs/${pick(rnd, world.cached)}`);
  case 'vertexCached':
    return world.vertexCached.length ?
      get(`/v1/${pick(rnd, world.vertexCached)}`) : get('/healthz');
  case 'absent':
    return get(`/v1/projects/${world.project}/jobs/absent_${int(rnd, 0, 99)}`);
  case 'create':
    return post(`/v1/projects/${world.project}/jobs`, JSON.stringify({
      jobId: `churn_${tag}`,
      trainingInput: { scaleTier: 'BASIC', region: 'us-central1', masterConfig: { imageUri: 'gcr.io/t/c:1' } },
    }));
  case 'longPoll':
    return post(`/agent/v1/nodes/${world.node.name}:sync`, JSON.stringify({
      incarnation: world.node.incarnation, desiredVersion: world.node.version,
      waitSeconds: int(rnd, 1, 2), replicas: [],
    }), `Authorization: Bearer ${world.node.token}\r\n`);
  case 'bigList':
    return get(`/v1/projects/${world.bigProject}/jobs?pageSize=100`);
  case 'list':
    return get(`/v1/projects/${world.project}/jobs?pageSize=${int(rnd, 1, 20)}`);
  case 'healthz':
    return get('/healthz');
  case 'closing':
    return get(`/v1/projects/${world.project}/jobs/${pick(rnd, world.cached)}`, 'Connection: close\r\n');
  default:
    throw new Error(`unknown request kind ${kind}`);
  }
}

// What a connection's requests are made of. Suspended requests dominate:
// the crash this hunts is a connection freed while its request's resume
// and its client's leaving arrive in one batch of epoll events.
const REQUEST_WEIGHTS = {
  cached: 40, vertexCached: 6, absent: 8, create: 12, longPoll: 8, bigList: 1, list: 3, healthz: 3, closing: 2,
};

/**
 * A plan for one round on a connection: the bytes to send (whole requests,
 * perhaps a cut one at the end) and how many whole requests they hold.
 */
function makeRound(rnd, world, tag) {
  const shape = weighted(rnd, {
    one: 30, pipeline: 30, bigPipeline: 1, midHead: 6, midBody: 6, silent: 2,
  });
  if (shape === 'silent') return { bytes: '', requests: 0, shape };	// connects, sends nothing
  // bigPipeline: 5 to 7 lists of 0.8 MB, past what the server's socket
  // buffer takes (4 MB at most on loopback): a reply is left half written.
  const n = shape === 'one' ? 1 : shape === 'bigPipeline' ? int(rnd, 5, 7) : int(rnd, 2, 8);
  const parts = [];
  for (let i = 0; i < n; i++) {
    const kind = shape === 'bigPipeline' ? 'bigList' : weighted(rnd, REQUEST_WEIGHTS);
    parts.push(requestOf(kind, rnd, world, `${tag}_${i}`));
    if (kind === 'closing') break;	// nothing after it would be read
  }
  let bytes = parts.join('');
  if (shape === 'midHead') {
    const head = `GET /v1/projects/${world.project}/jobs/${pick(rnd, world.cached)} HTTP/1.1\r\nHost: churn\r\nX-Pad: abc\r\n\r\n`;
    bytes += head.slice(0, int(rnd, 1, head.length - 2));
  } else if (shape === 'midBody') {
    const body = JSON.stringify({ jobId: `cut_${tag}`, trainingInput: { scaleTier: 'BASIC', region: 'us-central1' } });
    bytes += `POST /v1/projects/${world.project}/jobs HTTP/1.1\r\nHost: churn\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length + int(rnd, 1, 500)}\r\n\r\n${body.slice(0, int(rnd, 0, body.length))}`;
  }
  return { bytes, requests: parts.length, shape };
}

// --- one connection ---------------------------------------------------------------

/** How many status lines (responses, near enough) `text` holds. */
function countResponses(text) {
  let n = 0;
  for (let i = text.indexOf('HTTP/1.1 '); i >= 0; i = text.indexOf('HTTP/1.1 ', i + 9)) n++;
  return n;
}

/**
 * One connection: up to a few rounds, the earlier ones answered in full on
 * the kept-alive connection, the last one left in a random way at a random
 * moment. Resolves when the connection is gone (never rejects).
 */
async function oneConnection(target, rnd, world, stats, tag, live) {
  const raw = new net.Socket();
  let sock = raw;
  let received = 0;	// bytes
  let responses = 0;	// status lines seen
  let tail = '';	// the last 8 characters: a status line split across reads
  let closed = false;
  let failed = null;
  let wake = null;
  const changed = () => { if (wake) wake(); };
  const until = (cond, ms) => new Promise((resolve) => {
    if (cond() || closed) { resolve(cond()); return; }
    const timer = setTimeout(() => { wake = null; resolve(false); }, ms);
    wake = () => {
      if (cond() || closed) {
        clearTimeout(timer);
        wake = null;
        resolve(cond());
      }
    };
  });
  live.add(raw);
  raw.on('error', (e) => { failed ??= e.code ?? e.message; });
  raw.on('close', () => { closed = true; changed(); });
  try {
    await new Promise((resolve) => {
      raw.once('connect', resolve);
      raw.once('close', resolve);
      raw.connect({ host: '127.0.0.1', port: target.port, localAddress: target.localAddress() });
    });
    if (closed) {
      stats.connectFailed++;
      return;
    }
    if (target.ca) {
      sock = tls.connect({ socket: raw, ca: target.ca, servername: 'localhost' });
      sock.on('error', (e) => { failed ??= e.code ?? e.message; });
      sock.on('close', () => { closed = true; changed(); });
      let secure = false;
      sock.once('secureConnect', () => { secure = true; changed(); });
      if (rnd() < 0.03) {	// gone in the middle of the handshake
        stats.leftInHandshake++;
        await leave(rnd() < 0.5 ? 'rst' : 'close');
        return;
      }
      if (!(await until(() => secure, 30_000))) return;
    }
    sock.setEncoding('latin1');
    sock.on('data', (d) => {
      received += d.length;
      responses += countResponses(tail + d);
      tail = (tail + d).slice(-8);
      changed();
    });
    const rounds = int(rnd, 1, 3);
    for (let r = 0; r < rounds && !closed; r++) {
      const round = makeRound(rnd, world, `${tag}_${r}`);
      const last = r === rounds - 1 || round.shape === 'midHead' || round.shape === 'midBody';
      const seen = responses;
      if (round.bytes) sock.write(round.bytes);
      stats.requests += round.requests;
      if (!last) {
        // Answered in full before the next round (a long-poll takes its seconds).
        const ok = await until(() => responses >= seen + round.requests, 30_000);
        if (!ok) break;
        continue;
      }
      await leaveAtRandom(round, seen, received);
      return;
    }
    await leave('close');
  } finally {
    if (!closed) raw.destroy();
    live.delete(raw);
    if (failed) stats.clientErrors++;
  }

  // When to leave, then how.
  async function leaveAtRandom(round, seen, bytesBefore) {
    const when = weighted(rnd, { now: 20, tick: 10, delay: 30, firstByte: 15, someAnswered: 10, allAnswered: 15 });
    stats.when[when] = (stats.when[when] ?? 0) + 1;
    if (when === 'tick') {
      await new Promise((resolve) => setImmediate(resolve));
    } else if (when === 'delay') {
      // A random moment, not a wait for anything: where the server is then is the point.
      const ms = rnd() * pick(rnd, [1, 3, 10, 40]);
      await new Promise((resolve) => setTimeout(resolve, ms));
    } else if (when === 'firstByte') {
      await until(() => received > bytesBefore, 10_000);
    } else if (when === 'someAnswered' && round.requests > 1) {
      const k = int(rnd, 1, round.requests - 1);
      await until(() => responses >= seen + k, 10_000);
    } else if (when === 'allAnswered' || when === 'someAnswered') {
      await until(() => responses >= seen + round.requests, 10_000);
    }
    await leave(weighted(rnd, { rst: 45, close: 25, halfClose: 20, halfCloseThenClose: 10 }));
  }

  async function leave(how) {
    stats.how[how] = (stats.how[how] ?? 0) + 1;
    if (closed) return;
    if (how === 'rst') {
      // A reset, unless our side was ended already (by end(), or by node
      // when the server's FIN came): node 20 then spins at exit on the
      // shutdown request that never completes. A close with unread bytes
      // is a reset all the same.
      if (raw.writableEnded || sock.writableEnded) sock.destroy();
      else raw.resetAndDestroy();
    } else if (how === 'close') {
      sock.destroy();
    } else {
      // Half-close: what was sent is answered (or refused), then the server
      // closes. (A close, not a reset, after end(): see above.)
      sock.end();
      if (how === 'halfCloseThenClose') {
        await new Promise((resolve) => setTimeout(resolve, rnd() * 5));
        if (!closed) sock.destroy();
      } else if (!(await until(() => false, 20_000)) && !closed) {
        stats.halfCloseNotClosed++;
      }
    }
    await until(() => false, 5000);
  }
}

/**
 * Runs `loops` connection loops against `target` ({ port, ca?, name,
 * localAddress() }) until `endAt` (Date.now() ms) or stop(). Returns
 * { done: Promise<stats>, stop() }.
 */
export function churn(target, { loops, seed, world, endAt }) {
  const stats = {
    connections: 0, requests: 0, connectFailed: 0, clientErrors: 0, leftInHandshake: 0,
    halfCloseNotClosed: 0, when: {}, how: {},
  };
  const live = new Set();
  let stopped = false;
  const loop = async (i) => {
    const rnd = prng((seed + i * 0x9E3779B1) >>> 0);
    for (let k = 0; !stopped && Date.now() < endAt; k++) {
      stats.connections++;
      await oneConnection(target, rnd, world, stats, `${target.name}_${seed}_${i}_${k}`, live);
    }
  };
  const done = Promise.all(Array.from({ length: loops }, (_, i) => loop(i))).then(() => stats);
  return {
    done,
    stats,
    stop() {
      stopped = true;
      for (const s of live) s.destroy();
    },
  };
}
