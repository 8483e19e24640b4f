// Regressions of the HTTP front, over raw sockets, one test per defect:
// pipelined requests followed by the client's half-close (RFC 9112 9.6),
// and routing on the raw path (%2F stays inside its segment).

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
