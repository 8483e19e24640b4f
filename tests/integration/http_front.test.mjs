// Regressions of the HTTP front, over raw sockets, one test per defect:
// pipelined requests followed by the client's half-close (RFC 9112 9.6),
// routing on the raw path (%2F stays inside its segment), the connection
// cap held against slow heads fairly across client addresses, heads that
// cannot be HTTP (TLS, the HTTP/2 preface, garbage) refused at once, and a
// parked long-poll whose client half-closes or goes away.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { request, startPostgres, startServer, trainingInput, waitFor } from './harness.mjs';

const AGENT_TOKEN = 'front-test-token';
const AGENT_AUTH = `Authorization: Bearer ${AGENT_TOKEN}\r\n`;

let pg;
let server;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_AGENT_TOKEN: AGENT_TOKEN } });
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

/** Connects (optionally from another loopback address). */
function connect(port, localAddress) {
  return new Promise((resolve, reject) => {
    const c = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) },
      () => resolve(c));
    c.once('error', reject);
  });
}

/**
 * Sends bytes on a new connection (then a FIN with `end`) and collects what
 * comes back until the server closes it or timeoutMs passes. Returns
 * { text, closed, reset, ms }.
 */
async function exchange(bytes, { timeoutMs = 10_000, port = server.port, end = false, noDelay,
  localAddress } = {}) {
  let c;
  try {
    c = await connect(port, localAddress);
  } catch (e) {
    return { text: '', closed: true, reset: true, refused: e.code, ms: 0 };
  }
  if (noDelay !== undefined) c.setNoDelay(noDelay);
  const t0 = Date.now();
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    let reset = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      c.destroy();
      resolve({ text, closed, reset, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    c.on('end', () => finish(true));
    c.on('close', () => finish(true));
    c.on('error', () => { reset = true; finish(true); });
    c.write(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1'));
    if (end) c.end();
  });
}

/** The HTTP responses in a byte stream, split by Content-Length. */
function responses(text) {
  const out = [];
  let rest = text;
  while (rest.length) {
    const endHead = rest.indexOf('\r\n\r\n');
    if (endHead < 0) break;
    const head = rest.slice(0, endHead);
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]);
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const body = rest.slice(endHead + 4, endHead + 4 + len);
    let json = null;
    try { json = JSON.parse(body); } catch { /* not JSON */ }
    out.push({ status, head, body, json });
    rest = rest.slice(endHead + 4 + len);
  }
  return out;
}

const GET = (p, extra = '') => `GET ${p} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;

describe('pipelining', () => {
  it('ten pipelined requests and the FIN in one go: all ten answered in order, then closed', async () => {
    // RFC 9112 9.6: a client's half-close ends what it sends, not what it
    // reads; the requests before it are answered, only the last response
    // may say Connection: close.
    const failures = [];
    const answered = {};
    const ROUNDS = 100;
    for (const noDelay of [false, true]) {
      for (let round = 0; round < ROUNDS; round++) {
        const tag = `pipe-${noDelay ? 'nd' : 'd'}-${round}`;
        let bytes = '';
        for (let i = 0; i < 10; i++) bytes += GET('/v1/projects/demo/jobs', `X-Request-Id: ${tag}-${i}\r\n`);
        const r = await exchange(bytes, { end: true, noDelay, timeoutMs: 15_000 });
        const rs = responses(r.text);
        answered[rs.length] = (answered[rs.length] ?? 0) + 1;
        const bad = [];
        if (rs.length !== 10) bad.push(`${rs.length} of 10 answered`);
        rs.forEach((res, i) => {
          if (res.status !== 200) bad.push(`#${i} status ${res.status}`);
          const id = /\r\nX-Request-Id: ([^\r]*)/i.exec(res.head)?.[1];
          if (id !== `${tag}-${i}`) bad.push(`#${i} is the answer to ${id}`);
          if (i < 9 && /\r\nConnection: close/i.test(res.head)) bad.push(`#${i} says Connection: close`);
        });
        if (!r.closed) bad.push('not closed after the last response');
        if (bad.length) failures.push(`noDelay=${noDelay} round ${round}: ${bad.join(', ')}`);
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${2 * ROUNDS} rounds failed ` +
      `(responses per round: ${JSON.stringify(answered)})`);
  });
});

describe('routing', () => {
  it('routes on the raw path: %2F stays inside its segment, other escapes are decoded per segment', async () => {
    const id = `front_raw_${Date.now()}`;
    const created = await request(server.base, 'POST', '/v1/projects/demo/jobs', {
      body: { jobId: id, trainingInput: trainingInput() },
    });
    assert.equal(created.status, 200, created.text);
    const get = async (p) => {
      const r = await exchange(GET(p, 'Connection: close\r\n'));
      const [res] = responses(r.text);
      return res ?? { status: 0, head: '', body: r.text, json: null };
    };
    const escaped = await get('/v1/projects/d%65mo/jobs');
    const slashes = await get('/v1/projects%2Fdemo%2Fjobs');
    const slashInId = await get('/v1/projects/demo%2Fx/jobs');
    const violation = (res) => res.json?.error?.details
      ?.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest')?.fieldViolations?.[0]?.field;
    assert.deepEqual({
      'd%65mo': [escaped.status, escaped.body.includes(id)],
      'projects%2Fdemo%2Fjobs': [slashes.status, slashes.json?.error?.status, slashes.body.includes(id)],
      'demo%2Fx': [slashInId.status, slashInId.json?.error?.status, violation(slashInId)],
    }, {
      // an escaped ordinary character: the demo project, its job listed
      'd%65mo': [200, true],
      // no route has that shape: not the demo project's list
      'projects%2Fdemo%2Fjobs': [404, 'NOT_FOUND', false],
      // a project id cannot hold a '/'
      'demo%2Fx': [400, 'INVALID_ARGUMENT', 'projectsId'],
    });
  });
});

describe('connection cap', () => {
  it('at the cap, slow heads from five addresses make way: a normal client is always served', async (t) => {
    const s = await startServer({ pg, env: {
      TRAINPLANE_SCHEDULER: 'false',
      TRAINPLANE_HTTP_MAX_CONNECTIONS: '300',
      TRAINPLANE_HTTP_MAX_CONNECTIONS_PER_CLIENT: '100',
      // the deadline is not what frees slots here
      TRAINPLANE_HTTP_HEADER_TIMEOUT_SECONDS: '30',
    } });
    const live = new Set();
    let stopping = false;
    let closedByServer = 0;
    let trickle = null;
    t.after(async () => {
      stopping = true;
      clearInterval(trickle);
      for (const c of live) c.destroy();
      await s.stop();
    });
    // Five addresses, 80 slowloris connections each (400 > 300), each sending
    // a partial head and reopened as soon as the server closes it.
    const openSlow = (addr) => {
      const c = net.connect({ port: s.port, host: '127.0.0.1', localAddress: addr });
      live.add(c);
      c.on('connect', () => c.write('GET / HTTP/1.1\r\nHost: x\r\nX-a: '));
      c.on('data', () => {});
      c.on('error', () => {});
      c.on('close', () => {
        live.delete(c);
        if (stopping) return;
        closedByServer++;
        // paced a little, so that the churn of the excess stays cheap
        setTimeout(() => { if (!stopping) openSlow(addr); }, 100);
      });
    };
    for (let a = 2; a <= 6; a++) for (let i = 0; i < 80; i++) openSlow(`127.0.0.${a}`);
    // a byte now and then: each is progress, the head never completes
    trickle = setInterval(() => { for (const c of live) if (c.writable && !c.connecting) c.write('a'); }, 1000);
    // The cap is full once the server has closed (or refused) the excess.
    await waitFor(() => closedByServer >= 100, 20_000, `the cap never filled: ${closedByServer} closed`);

    // Meanwhile a normal client from 127.0.0.1, a new connection each time:
    // 20 requests, each answered within its 5 s (a count, not a time: on a
    // loaded 2-core machine the churn above makes each slower, and 3 s once
    // held only 2 of them).
    const seen = {};
    let n = 0;
    const t0 = Date.now();
    while (n < 20 && Date.now() - t0 < 60_000) {
      const r = await exchange(GET('/healthz', 'Connection: close\r\n'), { port: s.port, timeoutMs: 5000,
        localAddress: '127.0.0.1' });
      const status = responses(r.text)[0]?.status ??
        (r.refused ?? (r.reset ? 'reset' : r.closed ? 'closed' : 'timeout'));
      seen[status] = (seen[status] ?? 0) + 1;
      n++;
    }
    assert.ok(s.alive(), `the server died at the cap: ${JSON.stringify(s.child.signalCode ?? s.child.exitCode)}\n` +
      `${s.stderr().split('\n').filter((l) => !/ (INFO|WARN) /.test(l)).join('\n').slice(-3000)}`);
    assert.equal(n, 20, `only ${n} requests made in 60 s`);
    assert.deepEqual(seen, { 200: n }, `of ${n} requests (slow connections closed meanwhile: ${closedByServer})`);
  });
});

/** A TLS ClientHello (SNI localhost, ALPN h2 and http/1.1), fixed bytes with no CR or LF in them. */
function clientHello() {
  const u16 = (n) => [(n >> 8) & 0xff, n & 0xff];
  const host = [...Buffer.from('localhost')];
  const sni = [0x00, 0x00, ...u16(host.length + 5), ...u16(host.length + 3), 0x00, ...u16(host.length), ...host];
  const versions = [0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04];
  const protos = [0x02, ...Buffer.from('h2'), 0x08, ...Buffer.from('http/1.1')];
  const alpn = [0x00, 0x10, ...u16(protos.length + 2), ...u16(protos.length), ...protos];
  const exts = [...sni, ...versions, ...alpn];
  const body = [0x03, 0x03, ...Array(32).fill(0x42), 0x20, ...Array(32).fill(0x24),
    ...u16(6), 0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0x01, 0x00, ...u16(exts.length), ...exts];
  const hs = [0x01, 0x00, ...u16(body.length), ...body];
  const bytes = Buffer.from([0x16, 0x03, 0x01, ...u16(hs.length), ...hs]);
  assert.ok(!bytes.includes(0x0a) && !bytes.includes(0x0d), 'the ClientHello has a CR or LF');
  return bytes;
}

describe('heads that cannot be HTTP', () => {
  it('TLS, the HTTP/2 preface and garbage are refused at once; the preface logs no ERROR', async () => {
    const opts = { timeoutMs: 6000 };
    const marker = `front_marker_${Date.now()}`;
    const logFrom = server.stderr().length;
    const [tls, h2, nul, spaces, nulLine] = await Promise.all([
      exchange(clientHello(), opts),
      exchange('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', opts),
      exchange(Buffer.from([0, 1, 2]), opts),
      exchange('  GET / HTTP/1.1', opts),
      exchange(Buffer.from('\x00\x01\x02\r\n\r\n', 'latin1'), opts),
    ]);
    // What the server logged for these is in its stderr before the line of
    // a request made after their answers came.
    const created = await request(server.base, 'POST', '/v1/projects/demo/jobs', {
      body: { jobId: marker, trainingInput: trainingInput() },
    });
    assert.equal(created.status, 200, created.text);
    await waitFor(() => server.stderr().includes(`jobs/${marker} created`), 10_000, 'the marker line');
    const log = server.stderr().slice(logFrom, server.stderr().indexOf(`jobs/${marker} created`));

    // Each one: its error in the envelope, the connection closed, at once
    // (the header deadline, 10 s, is not what ends it).
    const outcome = (r) => {
      const rs = responses(r.text);
      return {
        status: rs.length === 1 ? rs[0].status : `${rs.length} responses`,
        envelope: rs[0]?.json?.error?.status ?? null,
        connectionClose: /\r\nConnection: close(\r\n|$)/i.test(rs[0]?.head ?? ''),
        closed: r.closed,
        atOnce: r.ms < 3000,
      };
    };
    const refused = (status, envelope) => ({ status, envelope, connectionClose: true, closed: true, atOnce: true });
    assert.deepEqual({
      'a TLS ClientHello': outcome(tls),
      'the HTTP/2 preface': outcome(h2),
      'the HTTP/2 preface logged at ERROR': /^\S+ ERROR /m.test(log),
      'bytes 00 01 02': outcome(nul),
      "'  GET / HTTP/1.1'": outcome(spaces),
      'a line of 00 01 02': outcome(nulLine),
    }, {
      'a TLS ClientHello': refused(400, 'INVALID_ARGUMENT'),
      'the HTTP/2 preface': refused(505, 'UNIMPLEMENTED'),
      'the HTTP/2 preface logged at ERROR': false,
      'bytes 00 01 02': refused(400, 'INVALID_ARGUMENT'),
      "'  GET / HTTP/1.1'": refused(400, 'INVALID_ARGUMENT'),
      'a line of 00 01 02': refused(400, 'INVALID_ARGUMENT'),
    }, `answered after ${JSON.stringify([tls, h2, nul, spaces, nulLine].map((r) => r.ms))} ms; logged:\n${log}`);
  });
});

describe('long-poll', () => {
  it('a parked sync whose client half-closes is answered; one whose client leaves harms nothing', async () => {
    const node = 'front-n1';
    const inc = 'inc-front';
    const reg = await request(server.base, 'POST', `/agent/v1/nodes/${node}:register`, {
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
      body: { incarnation: inc, region: 'us-west1', zone: 'us-west1-b', vcpus: 16, memoryMb: 61440,
        address: '127.0.0.2', portRange: [25000, 25009], runtime: 'process' },
    });
    assert.equal(reg.status, 200, reg.text);
    const syncNow = async () => {
      const r = await request(server.base, 'POST', `/agent/v1/nodes/${node}:sync`, {
        headers: { authorization: `Bearer ${AGENT_TOKEN}` }, body: { incarnation: inc, waitSeconds: 0, replicas: [] },
      });
      assert.equal(r.status, 200, r.text);
      return r.json.desiredVersion;
    };
    const lastSync = async () => {
      const r = await request(server.base, 'GET', '/trainplane/v1/nodes');
      return r.json.nodes.find((n) => n.name === node).lastSyncTime;
    };
    /** A sync that parks (nothing changed): its connection, once the server has run it. */
    const parkedSync = async (waitSeconds) => {
      const version = await syncNow();
      const before = await lastSync();
      const body = JSON.stringify({ incarnation: inc, waitSeconds, desiredVersion: version, replicas: [] });
      const c = await connect(server.port);
      const got = { text: '', closed: false };
      c.setEncoding('latin1');
      c.on('data', (d) => { got.text += d; });
      c.on('end', () => { got.closed = true; });
      c.on('close', () => { got.closed = true; });
      c.on('error', () => { got.closed = true; });
      c.write(`POST /agent/v1/nodes/${node}:sync HTTP/1.1\r\nHost: x\r\n${AGENT_AUTH}` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      // The handler ran (the lease renewed) and parked the request.
      await waitFor(async () => (await lastSync()) !== before || got.closed, 10_000, 'the sync never ran');
      assert.equal(got.text, '', 'the sync was answered at once rather than parked');
      return { c, got };
    };

    // A client that goes away while parked: the server carries on.
    const gone = await parkedSync(2);
    gone.c.destroy();
    assert.equal((await request(server.base, 'GET', '/healthz', { timeoutMs: 5000 })).status, 200);
    await syncNow();

    // A client that half-closes while parked still reads: it gets its answer.
    const half = await parkedSync(2);
    half.c.end();
    try {
      await waitFor(() => half.got.closed || responses(half.got.text).length > 0, 12_000, 'no answer, no close');
      await waitFor(() => half.got.closed, 12_000, `answered but not closed: ${half.got.text}`);
    } finally {
      half.c.destroy();
    }
    const [res] = responses(half.got.text);
    assert.equal(res?.status, 200, `the half-closed long-poll was dropped unanswered: '${half.got.text}'`);
    assert.equal(typeof res.json?.desiredVersion, 'string', res.body);
    // The set, or nothing when it did not change since the poll's desiredVersion
    // (agent/PROTOCOL.md: a quiet poll's end is answered without a read).
    assert.ok(Array.isArray(res.json.replicas) || res.json.replicas === undefined, res.body);

    // And the server is healthy after both.
    assert.equal((await request(server.base, 'GET', '/healthz', { timeoutMs: 5000 })).status, 200);
    await syncNow();
  });
});
