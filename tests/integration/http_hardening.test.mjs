// The HTTP front against hostile clients, over raw sockets: request
// smuggling framings (RFC 9112 6.1, 6.3), bodies announced too large,
// unknown transfer codings, a raw NUL in the request line, the errors of
// the HTTP layer itself in Google's envelope, ids in the path, slowloris
// (a header deadline and per-client limits) while a normal client is
// served, idle keep-alive connections kept, pipelining.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { request, startPostgres, startServer, trainingInput, waitFor } from './harness.mjs';

let pg;
let server;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false' } });
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
 * Sends bytes on a new connection and collects what comes back until the
 * server closes it or timeoutMs passes. Returns { text, closed, ms }.
 */
async function exchange(bytes, { timeoutMs = 10_000, port = server.port, end = false } = {}) {
  const c = await connect(port);
  const t0 = Date.now();
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      c.destroy();
      resolve({ text, closed, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    c.on('end', () => finish(true));
    c.on('close', () => finish(true));
    c.on('error', () => finish(true));
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

/** Asserts one Google error envelope with status and the connection closed. */
function assertRefused(r, status, apiStatus, message) {
  const rs = responses(r.text);
  assert.equal(rs.length, 1, `exactly one response expected:\n${r.text}`);
  const [res] = rs;
  assert.equal(res.status, status, r.text);
  assert.match(res.head, /\r\nContent-Type: application\/json; charset=UTF-8/i, res.head);
  assert.match(res.head, /\r\nConnection: close/i, res.head);
  assert.ok(res.json?.error, `Google's envelope expected: ${res.body}`);
  assert.equal(res.json.error.code, status);
  assert.equal(res.json.error.status, apiStatus);
  if (message) assert.match(res.json.error.message, message);
  assert.ok(r.closed, 'the server closes the connection');
  return res;
}

const HIDDEN = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';

describe('request smuggling', () => {
  it('Content-Length with Transfer-Encoding: 400, closed, the hidden request never served', async () => {
    const body = `0\r\n\r\n${HIDDEN}`;
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${body}`);
    assertRefused(r, 400, 'INVALID_ARGUMENT', /both Content-Length and Transfer-Encoding/);
    assert.doesNotMatch(r.text, /"status":"ok"/, 'the smuggled /healthz was answered');
  });

  it('the reverse order of the two headers is refused the same way', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      `Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n${HIDDEN}`);
    assertRefused(r, 400, 'INVALID_ARGUMENT', /both Content-Length and Transfer-Encoding/);
    assert.doesNotMatch(r.text, /"status":"ok"/);
  });

  it('two different Content-Length values: 400 and closed', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      `Content-Length: 2\r\nContent-Length: ${2 + HIDDEN.length}\r\n\r\n{}${HIDDEN}`);
    assertRefused(r, 400, 'INVALID_ARGUMENT', /conflicting Content-Length/);
    assert.doesNotMatch(r.text, /"status":"ok"/);
    const r2 = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Content-Length: 2, 40\r\n\r\n{}');
    assertRefused(r2, 400, 'INVALID_ARGUMENT', /conflicting Content-Length/);
  });

  it('a malformed Content-Length or a Transfer-Encoding in HTTP/1.0 is refused', async () => {
    assertRefused(await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}'),
      400, 'INVALID_ARGUMENT', /Content-Length/);
    assertRefused(await exchange('POST /v1/projects/p/jobs HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'),
      400, 'INVALID_ARGUMENT', /HTTP\/1\.0/);
  });

  it('an unknown transfer coding is refused at once, not waited on', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Transfer-Encoding: gzip\r\n\r\nxxxx', { timeoutMs: 5000 });
    assertRefused(r, 400, 'INVALID_ARGUMENT', /transfer coding/);
    assert.ok(r.ms < 4000, `answered after ${r.ms} ms`);
    const r2 = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n');
    assertRefused(r2, 501, 'UNIMPLEMENTED', /transfer coding/);
    const r3 = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n');
    assertRefused(r3, 400, 'INVALID_ARGUMENT', /transfer coding/);
  });

  it('obs-fold, whitespace before a colon and bare LF are refused', async () => {
    assertRefused(await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n continued\r\n\r\n'),
      400, 'INVALID_ARGUMENT', /folded/);
    assertRefused(await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n'),
      400, 'INVALID_ARGUMENT', /colon/);
    assertRefused(await exchange('GET /healthz HTTP/1.1\nHost: x\n\n'), 400, 'INVALID_ARGUMENT', /bare LF/);
    assertRefused(await exchange('GET /healthz HTTP/1.1\r\nHost: x\rX: y\r\n\r\n'), 400, 'INVALID_ARGUMENT', /bare CR/);
  });

  it('a Transfer-Encoding that names no coding is one all the same: with Content-Length, 400', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      `Transfer-Encoding: ,\r\nContent-Length: ${2 + HIDDEN.length}\r\n\r\n{}${HIDDEN}`);
    assertRefused(r, 400, 'INVALID_ARGUMENT', /Transfer-Encoding/);
    assert.doesNotMatch(r.text, /"status":"ok"/);
  });

  it('a malformed chunked body is refused and nothing after it is read as a request', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}xx\r\n0\r\n\r\n${HIDDEN}`);
    assertRefused(r, 400, 'INVALID_ARGUMENT', /chunked/);
    assert.doesNotMatch(r.text, /"status":"ok"/);
  });
});

describe('sizes and expectations', () => {
  it('an announced oversized body gets 413 at once, before any of it is sent', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Content-Type: application/json\r\nContent-Length: 200000000\r\n\r\n', { timeoutMs: 5000 });
    assertRefused(r, 413, 'INVALID_ARGUMENT', /Request payload size exceeds the limit: 1048576 bytes\./);
    assert.ok(r.ms < 4000, `answered after ${r.ms} ms`);
  });

  it('Expect: 100-continue with an oversized body: 413, never 100 Continue', async () => {
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Content-Type: application/json\r\nContent-Length: 200000000\r\nExpect: 100-continue\r\n\r\n',
    { timeoutMs: 5000 });
    assert.doesNotMatch(r.text, /100 Continue/);
    assertRefused(r, 413, 'INVALID_ARGUMENT');
  });

  it('Expect: 100-continue with a body that fits: 100 Continue, then the answer', async () => {
    const c = await connect(server.port);
    let text = '';
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    const body = JSON.stringify({ jobId: `cont_${Date.now()}`, trainingInput: trainingInput() });
    c.write('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`);
    await waitFor(() => text.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 5000, `no 100 Continue: ${text}`);
    c.write(body);
    await waitFor(() => /HTTP\/1\.1 200 OK[\s\S]*\r\n\r\n\{/.test(text), 10_000, `no answer: ${text}`);
    c.destroy();
    const unknown = await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n');
    assertRefused(unknown, 417, 'INVALID_ARGUMENT', /Expect/);
  });

  it('a chunked body over the limit is 413 and closes the connection', async () => {
    const chunk = 'a'.repeat(65536);
    let bytes = 'POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n';
    for (let i = 0; i < 17; i++) bytes += `${(65536).toString(16)}\r\n${chunk}\r\n`;
    bytes += '0\r\n\r\n';
    assertRefused(await exchange(bytes), 413, 'INVALID_ARGUMENT', /exceeds the limit/);
    // A chunk size alone past the limit is refused before its data.
    assertRefused(await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\n' +
      'Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n'), 413, 'INVALID_ARGUMENT');
  });

  it('a head that fills the buffer with lines but no end is 431, and the worker is not held', async () => {
    // 32,770 bytes ending in CRLF: once spun a worker at 100 % for good.
    const head = 'GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ';
    const r = await exchange(`${head}${'a'.repeat(32770 - head.length - 2)}\r\n`, { timeoutMs: 5000 });
    assertRefused(r, 431, 'INVALID_ARGUMENT', /head is too large/);
    assert.ok(r.ms < 4000, `answered after ${r.ms} ms`);
    assert.equal((await request(server.base, 'GET', '/healthz', { timeoutMs: 3000 })).status, 200);
  });

  it('a request line or a head too large: 414 and 431 in the envelope', async () => {
    assertRefused(await exchange(`GET /${'a'.repeat(9000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
      414, 'INVALID_ARGUMENT', /request line is too long/);
    assertRefused(await exchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(40000)}\r\n\r\n`),
      431, 'INVALID_ARGUMENT', /head is too large/);
    let many = 'GET /healthz HTTP/1.1\r\nHost: x\r\n';
    for (let i = 0; i < 120; i++) many += `X-${i}: ${i}\r\n`;
    assertRefused(await exchange(`${many}\r\n`), 431, 'INVALID_ARGUMENT', /too many header fields/);
  });

  it('other HTTP versions and malformed request lines: 505 and 400 in the envelope', async () => {
    assertRefused(await exchange('GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n'), 505, 'UNIMPLEMENTED', /HTTP version/);
    assertRefused(await exchange('GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n'), 400, 'INVALID_ARGUMENT');
    assertRefused(await exchange('GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'INVALID_ARGUMENT');
    assertRefused(await exchange('GET /healthz\r\nHost: x\r\n\r\n'), 400, 'INVALID_ARGUMENT');
    assertRefused(await exchange('GET /healthz HTTP/1.1\r\n\r\n'), 400, 'INVALID_ARGUMENT', /Host/);
    assertRefused(await exchange('GET nopath HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'INVALID_ARGUMENT', /target/);
  });
});

describe('NUL and ids', () => {
  it('a raw NUL in the request line is 400, never a lookup of the truncated path', async () => {
    const created = await request(server.base, 'POST', '/v1/projects/p/jobs', {
      body: { jobId: 'nul_a', trainingInput: trainingInput() },
    });
    assert.equal(created.status, 200, created.text);
    const r = await exchange(Buffer.concat([Buffer.from('GET /v1/projects/p/jobs/nul_a'),
      Buffer.from([0]), Buffer.from('b HTTP/1.1\r\nHost: x\r\n\r\n')]));
    assertRefused(r, 400, 'INVALID_ARGUMENT', /request target/);
    assert.doesNotMatch(r.text, /"jobId":"nul_a"/);
    const h = await exchange(Buffer.concat([Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a'),
      Buffer.from([0]), Buffer.from('b\r\n\r\n')]));
    assertRefused(h, 400, 'INVALID_ARGUMENT', /control character/);
  });

  it('hostile project, location and job ids in the path are 400 INVALID_ARGUMENT naming the id', async () => {
    const cases = [
      ['/v1/projects/p%0A2026-01-01T00:00:00Z%20ERROR%20forged/jobs', 'projectsId'],
      ['/v1/projects/p%1B%5B2J/jobs', 'projectsId'],
      [`/v1/projects/${'a'.repeat(5000)}/jobs`, 'projectsId'],
      ['/v1/projects/UPPER/jobs', 'projectsId'],
      ['/v1/projects/p/locations/us%0Acentral1/customJobs', 'locationsId'],
      ['/v1/projects/p/locations/US-CENTRAL1/customJobs', 'locationsId'],
      ['/v1/projects/p/jobs/a%0Ab', 'jobsId'],
      [`/v1/projects/p/jobs/${'j'.repeat(200)}`, 'jobsId'],
      ['/v1/projects/p/locations/us-central1/customJobs/1%7F', 'customJobsId'],
    ];
    for (const [p, field] of cases) {
      const res = await request(server.base, 'GET', p);
      assert.equal(res.status, 400, `${p}: ${res.text}`);
      assert.equal(res.json.error.status, 'INVALID_ARGUMENT');
      const bad = res.json.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
      assert.equal(bad?.fieldViolations?.[0]?.field, field, res.text);
      assert.ok(res.json.error.message.length < 400, 'the message does not echo the value');
    }
    // Valid ids still pass: a project number, a domain-scoped project, a region.
    for (const p of ['/v1/projects/123456/jobs', '/v1/projects/example.com:my-proj/jobs',
      '/v1/projects/p/locations/europe-west4/customJobs']) {
      const res = await request(server.base, 'GET', p);
      assert.equal(res.status, 200, `${p}: ${res.text}`);
    }
    // Nothing of the hostile values reached the log raw.
    assert.doesNotMatch(server.stderr(), /\n2026-01-01T00:00:00Z ERROR forged/);
    assert.doesNotMatch(server.stderr(), /\x1b\[2J/);
  });
});

describe('connections', () => {
  it('pipelined requests are answered in order on one connection; HEAD gets no body', async () => {
    const r = await exchange(`${HIDDEN}GET /v1/projects/p/jobs/none HTTP/1.1\r\nHost: x\r\n\r\n` +
      'HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { end: false });
    const rs = responses(r.text);
    assert.equal(rs.length, 3, r.text);
    assert.equal(rs[0].status, 200);
    assert.equal(rs[1].status, 404);
    assert.equal(rs[2].status, 405);
    assert.equal(rs[2].body, '', 'HEAD has no body');
    assert.match(rs[2].head, /\r\nAllow: GET/);
    assert.ok(r.closed);
  });

  it('a chunked body with extensions and trailers is read', async () => {
    const body = JSON.stringify({ jobId: `chunk_${Date.now()}`, trainingInput: trainingInput() });
    const half = Math.floor(body.length / 2);
    const r = await exchange('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
      `${half.toString(16)};ext=1\r\n${body.slice(0, half)}\r\n` +
      `${(body.length - half).toString(16)}\r\n${body.slice(half)}\r\n0\r\nX-Trailer: t\r\n\r\n`);
    const rs = responses(r.text);
    assert.equal(rs.length, 1, r.text);
    assert.equal(rs[0].status, 200, r.text);
  });

  it('a head that does not arrive within the header deadline gets 408 and a closed connection', async (t) => {
    const s = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_HTTP_HEADER_TIMEOUT_SECONDS: '1' } });
    t.after(() => s.stop());
    const c = await connect(s.port);
    let text = '';
    let closed = false;
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    c.on('close', () => { closed = true; });
    c.on('error', () => { closed = true; });
    // A byte every 200 ms: each read is progress, the head never completes.
    const trickle = setInterval(() => { if (!closed) c.write('X'); }, 200);
    c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    try {
      await waitFor(() => closed, 5000, 'the slow connection was not closed');
    } finally {
      clearInterval(trickle);
    }
    const rs = responses(text);
    assert.equal(rs[0]?.status, 408, text);
    assert.equal(rs[0].json.error.status, 'DEADLINE_EXCEEDED');
  });

  it('a body that trickles in (slow POST) is closed once it falls behind the minimum rate', async (t) => {
    const s = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_HTTP_IO_TIMEOUT_SECONDS: '2' } });
    t.after(() => s.stop());
    const c = await connect(s.port);
    let text = '';
    let closed = false;
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    c.on('close', () => { closed = true; });
    c.on('error', () => { closed = true; });
    const t0 = Date.now();
    c.write('POST /v1/projects/p/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1000\r\n\r\n{');
    // A byte every 300 ms: each one is progress, the body never completes.
    const trickle = setInterval(() => { if (!closed) c.write(' '); }, 300);
    try {
      await waitFor(() => closed, 15_000, 'the trickling body was not closed');
    } finally {
      clearInterval(trickle);
    }
    assert.ok(Date.now() - t0 < 10_000, `closed after ${Date.now() - t0} ms`);
    assert.equal(responses(text)[0]?.status, 408, text);
  });

  it('a client that sends its request and its FIN together gets the answer and the connection closes', async () => {
    const r = await exchange(HIDDEN, { end: true, timeoutMs: 5000 });
    assert.equal(responses(r.text)[0]?.status, 200, r.text);
    assert.ok(r.closed && r.ms < 4000, `closed ${r.closed} after ${r.ms} ms`);
  });

  it('slowloris: one client holding 4,150 slow connections is limited, a normal client is served, the slow ones are closed', async (t) => {
    const s = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_HTTP_HEADER_TIMEOUT_SECONDS: '10' } });
    t.after(() => s.stop());
    const slow = [];
    let closedByServer = 0;
    let refused = 0;
    t.after(() => { for (const c of slow) c.destroy(); });
    const opened = await Promise.allSettled(Array.from({ length: 4150 }, () => connect(s.port, '127.0.0.2')));
    for (const o of opened) {
      if (o.status !== 'fulfilled') continue;
      const c = o.value;
      let text = '';
      c.setEncoding('latin1');
      c.on('data', (d) => { text += d; if (/^HTTP\/1\.1 429 /.test(text)) refused++; });
      c.on('close', () => { closedByServer++; });
      c.on('error', () => {});
      c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      slow.push(c);
    }
    // Over the per-client limit (2,500 by default) the rest are refused (429,
    // when the client reads it before the close) long before the deadline.
    await waitFor(() => closedByServer >= 4150 - 2500 - 10, 3000,
      `refused ${closedByServer} (${refused} read the 429)`);
    assert.ok(refused > 0, 'some refusals carry a 429 in the envelope');
    // A normal client from another address is served meanwhile: while the
    // held connections are all still open (their header deadline, 10 s, not
    // passed), not once they are gone. (A bound in milliseconds failed on a
    // machine at load 17: what matters is that it is not starved.)
    const held = closedByServer;
    for (let i = 0; i < 20; i++) {
      const res = await request(s.base, 'GET', '/healthz', { timeoutMs: 8000 });
      assert.equal(res.status, 200);
    }
    assert.ok(closedByServer - held <= 5, `the normal client was served only as the held connections went (${closedByServer - held} closed meanwhile)`);
    // The slow ones never complete their heads: closed after the header deadline.
    await waitFor(() => closedByServer >= slow.length - 5, 30_000, `closed ${closedByServer} of ${slow.length}`);
    assert.equal((await request(s.base, 'GET', '/healthz')).status, 200);
  });

  it('2,000 idle keep-alive connections stay open and usable', async (t) => {
    const conns = await Promise.all(Array.from({ length: 2000 }, () => connect(server.port)));
    t.after(() => { for (const c of conns) c.destroy(); });
    const ask = (c) => new Promise((resolve, reject) => {
      let text = '';
      const onData = (d) => {
        text += d;
        if (/\r\n\r\n\{"status":"ok"\}$/.test(text)) {
          c.off('data', onData);
          resolve(text);
        }
      };
      c.setEncoding('latin1');
      c.on('data', onData);
      c.once('close', () => reject(new Error('closed')));
      c.write(HIDDEN);
    });
    await Promise.all(conns.map(ask));
    // Idle for a while (well under the 120 s idle timeout), then each one works again.
    await new Promise((r) => setTimeout(r, 1500));
    const again = await Promise.allSettled(conns.map(ask));
    const failed = again.filter((x) => x.status !== 'fulfilled').length;
    assert.equal(failed, 0, `${failed} of 2000 kept-alive connections failed`);
  });

  it('at max_connections the longest-idle connection makes room for a new one', async (t) => {
    const s = await startServer({ pg, env: { TRAINPLANE_SCHEDULER: 'false', TRAINPLANE_HTTP_MAX_CONNECTIONS: '32', TRAINPLANE_HTTP_THREADS: '1' } });
    t.after(() => s.stop());
    const conns = await Promise.all(Array.from({ length: 32 }, () => connect(s.port)));
    t.after(() => { for (const c of conns) c.destroy(); });
    let closed = 0;
    for (const c of conns) {
      c.on('data', () => {});
      c.on('close', () => { closed++; });
      c.on('error', () => {});
      c.write(HIDDEN);
    }
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 5; i++) {
      const res = await request(s.base, 'GET', '/healthz', { timeoutMs: 5000 });
      assert.equal(res.status, 200);
    }
    assert.ok(closed >= 1, 'an idle connection was closed to make room');
  });
});
