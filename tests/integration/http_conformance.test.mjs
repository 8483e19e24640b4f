// HTTP/1.1 request parsing against RFC 9112, case by case, over raw
// sockets to a real server: a table per class of the grammar (the classes
// of llhttp's request tests: framing and Content-Length, Transfer-Encoding
// and chunked bodies, chunk extensions, trailers, Host, request targets,
// methods, versions, head lines, connections). Each case is sent with a
// pipelined follow-up request after it and ends when the server closes the
// connection:
//   - refused: exactly one response, the error in Google's envelope, with
//     Connection: close; the server closes and the follow-up is never
//     answered (nothing after a refused request is read as a request);
//   - served: the case's responses in order, then the follow-up's (the
//     connection stayed in step), unless the case itself closes the
//     connection (HTTP/1.0, Connection: close): then nothing after it.
// The cases already strict before the parser's conformance work are here
// too, so that the suite protects them. docs/http.md, "Conformance", says
// where trainplane is deliberately stricter than llhttp's strict mode.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { jobId, startPostgres, startServer, trainingInput } from './harness.mjs';

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

// The follow-up sent after every case; it closes the connection itself.
const FOLLOW_UP = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

/**
 * Sends bytes (and the follow-up) on a new connection and collects what
 * comes back until the server closes it. The deadline is only a safety
 * net: every case ends with the server's close.
 */
async function exchange(bytes, deadlineMs = 20_000) {
  const c = await new Promise((resolve, reject) => {
    const s = net.connect({ port: server.port, host: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      c.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    c.setEncoding('latin1');
    c.on('data', (d) => { text += d; });
    c.on('end', () => finish(true));
    c.on('close', () => finish(true));
    c.on('error', () => finish(true));
    c.write(Buffer.from(bytes + FOLLOW_UP, 'latin1'));
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
    const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(head)?.[1]);
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const body = rest.slice(endHead + 4, endHead + 4 + len);
    let json = null;
    try { json = JSON.parse(body); } catch { /* not JSON */ }
    out.push({ status, head, body, json });
    rest = rest.slice(endHead + 4 + len);
  }
  return out;
}

const API_STATUS = { 400: 'INVALID_ARGUMENT', 413: 'INVALID_ARGUMENT', 414: 'INVALID_ARGUMENT',
  417: 'INVALID_ARGUMENT', 431: 'INVALID_ARGUMENT', 501: 'UNIMPLEMENTED', 505: 'UNIMPLEMENTED' };

/** Refused with status (and a message matching re), the connection closed after it. */
const refused = (status, re) => ({ refused: status, re });
/** Served: the responses' statuses; closes: the case ends the connection itself. */
const served = (statuses, { closes = false, check } = {}) => ({ served: statuses, closes, check });

async function run({ send, expect }) {
  const r = await exchange(typeof send === 'function' ? send() : send);
  const rs = responses(r.text);
  assert.ok(r.closed, `the server did not close the connection; it sent:\n${r.text}`);
  if (expect.refused) {
    assert.equal(rs.length, 1, `exactly one response expected (the follow-up is never answered):\n${r.text}`);
    const [res] = rs;
    assert.equal(res.status, expect.refused, r.text);
    assert.match(res.head, /\r\nContent-Type: application\/json; charset=UTF-8/i, res.head);
    assert.match(res.head, /\r\nConnection: close/i, res.head);
    assert.ok(res.json?.error, `Google's envelope expected: ${res.body}`);
    assert.equal(res.json.error.code, expect.refused);
    assert.equal(res.json.error.status, API_STATUS[expect.refused]);
    if (expect.re) assert.match(res.json.error.message, expect.re);
    return;
  }
  const want = expect.closes ? expect.served : [...expect.served, 200];
  assert.deepEqual(rs.map((x) => x.status), want, `responses:\n${r.text}`);
  if (!expect.closes) assert.equal(rs.at(-1).body, '{"status":"ok"}', 'the follow-up was answered');
  if (expect.check) expect.check(rs);
}

/** One `it` per case of a class. */
function cases(table) {
  for (const [name, send, expect] of table) {
    it(name, () => run({ send, expect }));
  }
}

const H = 'Host: x\r\n';
/** A GET of /healthz with extra header lines and a body (framed by those lines). */
const get = (extra = '', body = '') => `GET /healthz HTTP/1.1\r\n${H}${extra}\r\n${body}`;
/** A GET of /healthz with a chunked body. */
const chunked = (body, extra = '') => get(`Transfer-Encoding: chunked\r\n${extra}`, body);
/** A request line with the default head. */
const line = (l, extra = H) => `${l}\r\n${extra}\r\n`;

/** A job create whose body the decoder must deliver intact: answered 200 with its jobId. */
function createJob(frame) {
  return () => {
    const id = jobId('conf');
    const body = JSON.stringify({ jobId: id, trainingInput: trainingInput() });
    return `POST /v1/projects/demo/jobs HTTP/1.1\r\n${H}Content-Type: application/json\r\n${frame(body, id)}`;
  };
}
const jobCreated = served([200], {
  check: (rs) => assert.match(rs[0].json?.jobId ?? '', /^conf_/, rs[0].body),
});

describe('framing: Content-Length (RFC 9112 6.2, 6.3)', () => {
  cases([
    ['a body of Content-Length bytes is read, then the next request', get('Content-Length: 5\r\n', 'hello'), served([200])],
    ['a job created with a Content-Length body', createJob((b) => `Content-Length: ${b.length}\r\n\r\n${b}`), jobCreated],
    ['Content-Length: 0', get('Content-Length: 0\r\n'), served([200])],
    ['leading zeros are read by value', get('Content-Length: 0005\r\n', 'hello'), served([200])],
    ['whitespace around the value', get('Content-Length: \t5 \t\r\n', 'hello'), served([200])],
    ['the same value twice (one value: RFC 9110 8.6)', get('Content-Length: 5\r\ncontent-length: 5\r\n', 'hello'), served([200])],
    ['the same value listed twice', get('Content-Length: 5, 5\r\n', 'hello'), served([200])],
    ['two different values', get('Content-Length: 5\r\nContent-Length: 6\r\n', 'hello!'), refused(400, /conflicting Content-Length/)],
    ['two different values in a list', get('Content-Length: 5, 6\r\n', 'hello!'), refused(400, /conflicting Content-Length/)],
    ['a sign', get('Content-Length: +5\r\n', 'hello'), refused(400, /Content-Length header is malformed/)],
    ['a negative value', get('Content-Length: -5\r\n', 'hello'), refused(400, /Content-Length header is malformed/)],
    ['hex', get('Content-Length: 0x5\r\n', 'hello'), refused(400, /Content-Length header is malformed/)],
    ['a space inside the number', get('Content-Length: 1 2\r\n', 'hello world!'), refused(400, /Content-Length header is malformed/)],
    ['an empty value', get('Content-Length:\r\n'), refused(400, /Content-Length header is malformed/)],
    ['whitespace before the colon', get('Content-Length : 5\r\n', 'hello'), refused(400, /colon/)],
    ['a value over the body limit: 413 before the body', get('Content-Length: 200000000\r\n'), refused(413, /exceeds the limit/)],
    ['a value past 64 bits: 413', get('Content-Length: 99999999999999999999999\r\n'), refused(413, /exceeds the limit/)],
    ['Content-Length with Transfer-Encoding', get('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'), refused(400, /both Content-Length and Transfer-Encoding/)],
    ['Transfer-Encoding with Content-Length', get('Transfer-Encoding: chunked\r\nContent-Length: 5\r\n', '0\r\n\r\n'), refused(400, /both Content-Length and Transfer-Encoding/)],
  ]);
});

describe('Transfer-Encoding and chunked bodies (RFC 9112 6.1, 7.1)', () => {
  cases([
    ['a job created from three chunks, sizes in both cases of hex', createJob((b) => {
      const a = b.slice(0, 10); const m = b.slice(10, 26); const z = b.slice(26);
      return `Transfer-Encoding: chunked\r\n\r\na\r\n${a}\r\n10\r\n${m}\r\n${z.length.toString(16).toUpperCase()}\r\n${z}\r\n0\r\n\r\n`;
    }), jobCreated],
    ['"Chunked" in another case', get('Transfer-Encoding: Chunked\r\n', '5\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['an empty list element before chunked', get('Transfer-Encoding: , chunked\r\n', '5\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['a size with leading zeros is read by value', chunked('000000000000000000005\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['a last chunk of zeros', chunked('5\r\nhello\r\n000\r\n\r\n'), served([200])],
    ['an unknown coding', get('Transfer-Encoding: gzip\r\n', 'xx'), refused(400, /transfer coding is not supported/)],
    ['chunked after another coding: 501', get('Transfer-Encoding: gzip, chunked\r\n', '0\r\n\r\n'), refused(501, /not implemented/)],
    ['chunked, then another coding', get('Transfer-Encoding: chunked, gzip\r\n', '0\r\n\r\n'), refused(400, /transfer coding/)],
    ['chunked twice in one field', get('Transfer-Encoding: chunked, chunked\r\n', '0\r\n\r\n'), refused(400, /transfer coding/)],
    ['chunked twice in two fields', get('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'), refused(400, /transfer coding/)],
    ['chunked, then an empty list element', get('Transfer-Encoding: chunked,\r\n', '0\r\n\r\n'), refused(400, /trailing comma/)],
    ['a Transfer-Encoding naming no coding', get('Transfer-Encoding: ,\r\n', '0\r\n\r\n'), refused(400, /names no coding/)],
    ['"chunkedchunked"', get('Transfer-Encoding: chunkedchunked\r\n', '0\r\n\r\n'), refused(400, /transfer coding/)],
    ['a folded Transfer-Encoding', get('Transfer-Encoding: chunked\r\n  , gzip\r\n', '0\r\n\r\n'), refused(400, /folded/)],
    ['Transfer-Encoding in HTTP/1.0', 'GET /healthz HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', refused(400, /HTTP\/1\.0/)],
    ['a chunk longer than its size', chunked('2\r\nhello\r\n0\r\n\r\n'), refused(400, /longer than its size/)],
    ['a chunk size that is not hex', chunked('x\r\nhello\r\n0\r\n\r\n'), refused(400, /chunk size/)],
    ['a chunk size in C hex', chunked('0x5\r\nhello\r\n0\r\n\r\n'), refused(400, /chunk size/)],
    ['no last chunk', chunked('5\r\nhello\r\n\r\n'), refused(400, /chunk size/)],
    ['a bare LF after the size', chunked('5\nhello\r\n0\r\n\r\n'), refused(400, /chunk size/)],
    ['a CR not followed by LF after the size', chunked('5\r\rhello\r\n0\r\n\r\n'), refused(400, /bare CR/)],
    ['a chunk not ended by CRLF', chunked('5\r\nhello0\r\n\r\n'), refused(400, /longer than its size/)],
    ['whitespace after the size and nothing else', chunked('5 \r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['text after the size without a semicolon', chunked('5 junk\r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['a chunk size over the body limit: 413 before its data', chunked('fffffffffffffffff\r\n'), refused(413, /exceeds the limit/)],
    ['17 significant hex digits after leading zeros: 413', chunked('00010000000000000000\r\n'), refused(413, /exceeds the limit/)],
  ]);
});

describe('chunk extensions (RFC 9112 7.1.1)', () => {
  cases([
    ['a name and a token value', chunked('5;a=b\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['whitespace around ";" and "=" (BWS) and a quoted value', chunked('5 ; a = "x y"\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['several, with and without values', chunked('5;a;b=c\r\nhello\r\n0;last=1\r\n\r\n'), served([200])],
    ['a quoted value with quoted-pairs and ";"', chunked('5;a="q\\"\\\\;x";b\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['an empty quoted value', chunked('5;a=""\r\nhello\r\n0\r\n\r\n'), served([200])],
    ['a job created through chunks with extensions', createJob((b) => `Transfer-Encoding: chunked\r\n\r\n${b.length.toString(16)};ext="1";x\r\n${b}\r\n0\r\n\r\n`), jobCreated],
    ['no name: "5;="', chunked('5;=\r\nhello\r\n0\r\n\r\n'), refused(400, /has no name/)],
    ['a semicolon and nothing', chunked('2;\r\nhi\r\n0\r\n\r\n'), refused(400, /has no name/)],
    ['an empty element: "5;;a"', chunked('5;;a\r\nhello\r\n0\r\n\r\n'), refused(400, /has no name/)],
    ['a quoted value never closed', chunked('5;a="b\r\nhello\r\n0\r\n\r\n'), refused(400, /not closed/)],
    ['a value of two words', chunked('5;a=b c\r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['"=" and no value', chunked('5;a=\r\nhello\r\n0\r\n\r\n'), refused(400, /no value/)],
    ['whitespace at the end of the line', chunked('5;a=b \r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['a name that is not a token', chunked('5;a@b\r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['text after a quoted value', chunked('5;a="b"c\r\nhello\r\n0\r\n\r\n'), refused(400, /only extensions may follow/)],
    ['a control character in a quoted value', chunked('5;a="b\x01"\r\nhello\r\n0\r\n\r\n'), refused(400, /control character/)],
    ['extensions past 4 KiB', chunked(`5;a=${'b'.repeat(5000)}\r\nhello\r\n0\r\n\r\n`), refused(400, /too long/)],
  ]);
});

describe('trailers (RFC 9112 7.1.2)', () => {
  cases([
    ['field lines, read and discarded', chunked('5\r\nhello\r\n0\r\nX-A: 1\r\nx-b:\r\nX-C:\t\xff v\t\r\n\r\n'), served([200])],
    ['a line that is not a field', chunked('5\r\nhello\r\n0\r\nnot a field\r\n\r\n'), refused(400, /trailer field/)],
    ['a folded line', chunked('5\r\nhello\r\n0\r\nX-A: 1\r\n folded\r\n\r\n'), refused(400, /folded trailer/)],
    ['no name', chunked('5\r\nhello\r\n0\r\n: v\r\n\r\n'), refused(400, /trailer field/)],
    ['whitespace before the colon', chunked('5\r\nhello\r\n0\r\nX-A : v\r\n\r\n'), refused(400, /trailer field/)],
    ['a control character in a value', chunked('5\r\nhello\r\n0\r\nX-A: a\x01b\r\n\r\n'), refused(400, /control character/)],
    ['a bare LF', chunked('5\r\nhello\r\n0\r\nX-A: 1\n\r\n'), refused(400, /control character/)],
    ['trailers past 8 KiB: 431', chunked(`5\r\nhello\r\n0\r\nX-A: ${'a'.repeat(9000)}\r\n\r\n`), refused(431, /trailer fields are too large/)],
  ]);
});

describe('Host (RFC 9112 3.2)', () => {
  cases([
    ['a name', line('GET /healthz HTTP/1.1', 'Host: example.com\r\n'), served([200])],
    ['an IPv4 address and a port', line('GET /healthz HTTP/1.1', 'Host: 127.0.0.1:8080\r\n'), served([200])],
    ['an IPv6 address and a port', line('GET /healthz HTTP/1.1', 'Host: [::1]:8080\r\n'), served([200])],
    ['a name and an empty port', line('GET /healthz HTTP/1.1', 'Host: example.com:\r\n'), served([200])],
    ['a reg-name with sub-delims and %HH', line('GET /healthz HTTP/1.1', "Host: a_b-c~d!$&'()*+,;=%41\r\n"), served([200])],
    ['none in HTTP/1.0', 'GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', served([200])],
    ['none in HTTP/1.1', line('GET /healthz HTTP/1.1', ''), refused(400, /needs a Host header/)],
    ['two, even the same', line('GET /healthz HTTP/1.1', 'Host: x\r\nhost: x\r\n'), refused(400, /more than one Host/)],
    ['two in HTTP/1.0', line('GET /healthz HTTP/1.0', 'Host: x\r\nHost: y\r\n'), refused(400, /more than one Host/)],
    ['an empty value', line('GET /healthz HTTP/1.1', 'Host:\r\n'), refused(400, /names no host/)],
    ['a port only', line('GET /healthz HTTP/1.1', 'Host: :8080\r\n'), refused(400, /names no host/)],
    ['a space', line('GET /healthz HTTP/1.1', 'Host: a b\r\n'), refused(400, /Host header is malformed/)],
    ['a list', line('GET /healthz HTTP/1.1', 'Host: a, b\r\n'), refused(400, /Host header is malformed/)],
    ['a path', line('GET /healthz HTTP/1.1', 'Host: a/b\r\n'), refused(400, /Host header is malformed/)],
    ['userinfo', line('GET /healthz HTTP/1.1', 'Host: u@a\r\n'), refused(400, /userinfo/)],
    ['a port that is not a number', line('GET /healthz HTTP/1.1', 'Host: a:http\r\n'), refused(400, /Host header is malformed/)],
    ['an unclosed bracket', line('GET /healthz HTTP/1.1', 'Host: [::1\r\n'), refused(400, /Host header is malformed/)],
    ['a bracketed name', line('GET /healthz HTTP/1.1', 'Host: [example.com]\r\n'), refused(400, /Host header is malformed/)],
    ['a malformed one in HTTP/1.0', line('GET /healthz HTTP/1.0', 'Host: a b\r\n'), refused(400, /Host header is malformed/)],
  ]);
});

describe('request targets (RFC 9112 3.2)', () => {
  cases([
    ['origin-form with a query', line('GET /v1/projects/demo/jobs?pageSize=1 HTTP/1.1'), served([200])],
    ['origin-form with "?" in the query', line('GET /healthz?a=1?b HTTP/1.1'), served([200])],
    ['absolute-form', line('GET http://example.com:8080/v1/projects/demo/jobs HTTP/1.1'), served([200])],
    ['absolute-form without a path', line('GET HTTPS://example.com HTTP/1.1'), served([404])],
    ['asterisk-form with OPTIONS (not refused by the parser; no resource "*")', line('OPTIONS * HTTP/1.1'), served([404])],
    ['asterisk-form with GET', line('GET * HTTP/1.1'), refused(400, /allowed only with OPTIONS/)],
    ['a fragment', line('GET /healthz#top HTTP/1.1'), refused(400, /fragment/)],
    ['a fragment after a query', line('GET /healthz?a=1#top HTTP/1.1'), refused(400, /fragment/)],
    ['absolute-form with userinfo', line('GET http://u:p@example.com/healthz HTTP/1.1'), refused(400, /userinfo/)],
    ['absolute-form with no host', line('GET http:///healthz HTTP/1.1'), refused(400, /names no host/)],
    ['absolute-form with a bad port', line('GET http://example.com:x/healthz HTTP/1.1'), refused(400, /malformed host or port/)],
    ['another scheme', line('GET ftp://example.com/healthz HTTP/1.1'), refused(400, /neither a path nor an absolute/)],
    ['no leading slash', line('GET healthz HTTP/1.1'), refused(400, /neither a path nor an absolute/)],
    ['authority-form (CONNECT, for proxies)', line('CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443\r\n'), refused(400, /neither a path nor an absolute/)],
    ['a space in the target', line('GET /health z HTTP/1.1'), refused(400, /HTTP version/)],
    ['a tab in the target', line('GET /health\tz HTTP/1.1'), refused(400, /not allowed/)],
    ['a byte that is not ASCII', line('GET /h\xe9 HTTP/1.1'), refused(400, /not allowed/)],
    ['a NUL', line('GET /health\x00z HTTP/1.1'), refused(400, /not allowed/)],
    ['a request line over 8 KiB: 414', line(`GET /${'a'.repeat(9000)} HTTP/1.1`), refused(414, /too long/)],
  ]);
});

describe('methods (RFC 9110 9, RFC 9112 3.1)', () => {
  cases([
    ['GET, POST, DELETE pipelined, answered in order (DELETE: 405 from the router)', line('GET /v1/projects/demo/jobs HTTP/1.1') +
      get('Content-Length: 2\r\n', '{}').replace('GET /healthz', 'POST /v1/projects/demo/jobs') +
      line('DELETE /v1/projects/demo/jobs/none HTTP/1.1'), served([200, 400, 405])],
    ['an unknown method is a token: the router answers 405', line('FOO /healthz HTTP/1.1'), served([405])],
    ['methods are case-sensitive: "get" is not GET', line('get /healthz HTTP/1.1'), served([405])],
    ['a character that is not a token', line('G(T /healthz HTTP/1.1'), refused(400, /method/)],
    ['a method over 32 characters', line(`${'A'.repeat(33)} /healthz HTTP/1.1`), refused(400, /method/)],
    ['a tab after the method', line('GET\t/healthz HTTP/1.1'), refused(400, /method/)],
    ['two spaces after the method', line('GET  /healthz HTTP/1.1'), refused(400, /request target/)],
    ['a leading space', line(' GET /healthz HTTP/1.1'), refused(400, /method/)],
  ]);
});

describe('versions (RFC 9112 2.3)', () => {
  cases([
    ['HTTP/1.0 is answered, then the connection closes', line('GET /healthz HTTP/1.0', ''), served([200], { closes: true })],
    ['HTTP/1.0 with keep-alive keeps the connection', line('GET /healthz HTTP/1.0', 'Connection: keep-alive\r\n'), served([200])],
    ['a later HTTP/1.x minor version is served as 1.1', line('GET /healthz HTTP/1.2'), served([200])],
    ['HTTP/2.0: 505', line('GET /healthz HTTP/2.0'), refused(505, /HTTP version is not supported/)],
    ['the HTTP/2 preface: 505', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', refused(505, /HTTP version is not supported/)],
    ['HTTP/3.0: 505', line('GET /healthz HTTP/3.0'), refused(505, /HTTP version is not supported/)],
    ['no version (HTTP/0.9)', line('GET /healthz', H), refused(400, /no HTTP version/)],
    ['a NUL after the version', line('GET /healthz HTTP/1.1\x00junk'), refused(400, /HTTP version/)],
    ['"http" in lower case', line('GET /healthz http/1.1'), refused(400, /HTTP version/)],
    ['a two-digit minor version', line('GET /healthz HTTP/1.10'), refused(400, /HTTP version/)],
    ['no minor version', line('GET /healthz HTTP/1'), refused(400, /HTTP version/)],
    ['no dot', line('GET /healthz HTTP/11'), refused(400, /HTTP version/)],
    ['a space after the version', line('GET /healthz HTTP/1.1 '), refused(400, /HTTP version/)],
    ['another protocol', line('GET /healthz RTSP/1.0'), refused(400, /HTTP version/)],
  ]);
});

describe('head lines and fields (RFC 9112 2.2, 5)', () => {
  cases([
    ['obs-text in a value, whitespace around it', get('X-A: \t caf\xe9 \t\r\n'), served([200])],
    ['a bare LF ending a line', 'GET /healthz HTTP/1.1\nHost: x\r\n\r\n', refused(400, /bare LF/)],
    ['a bare CR inside a line', get('X-A: 1\rX-B: 2\r\n'), refused(400, /bare CR/)],
    ['a folded line (obs-fold)', get('X-A: 1\r\n 2\r\n'), refused(400, /folded/)],
    ['whitespace before the first field', 'GET /healthz HTTP/1.1\r\n Host: x\r\n\r\n', refused(400, /folded/)],
    ['a field name that is not a token', get('X@A: 1\r\n'), refused(400, /header field/)],
    ['an empty field name', get(': 1\r\n'), refused(400, /header field/)],
    ['a line without a colon', get('not a field\r\n'), refused(400, /header field/)],
    ['a control character in a value', get('X-A: a\x01b\r\n'), refused(400, /control character/)],
    ['DEL in a value', get('X-A: a\x7fb\r\n'), refused(400, /control character/)],
    ['an unknown expectation: 417', get('Expect: something\r\n'), refused(417, /Expect/)],
    ['more than 100 fields: 431', get(Array.from({ length: 101 }, (_, i) => `X-${i}: ${i}\r\n`).join('')), refused(431, /too many header fields/)],
    ['a head over 32 KiB: 431', get(`X-A: ${'a'.repeat(33000)}\r\n`), refused(431, /head is too large/)],
  ]);
});

describe('connections and keep-alive (RFC 9112 9)', () => {
  cases([
    ['HTTP/1.1 keeps the connection: three pipelined requests answered in order',
      line('GET /healthz HTTP/1.1') + line('GET /v1/projects/demo/jobs/none HTTP/1.1') + line('GET /healthz HTTP/1.1'),
      served([200, 404, 200])],
    ['empty lines between requests are skipped', `\r\n\r\n${line('GET /healthz HTTP/1.1')}\r\n`, served([200])],
    ['a body-less POST does not swallow the next request', line('POST /v1/projects/demo/jobs HTTP/1.1', `${H}Content-Length: 0\r\n`), served([400])],
    ['Connection: close answers, then closes', line('GET /healthz HTTP/1.1', `${H}Connection: close\r\n`), served([200], { closes: true })],
    ['close anywhere in a list closes', line('GET /healthz HTTP/1.1', `${H}Connection: keep-alive, Close\r\n`), served([200], { closes: true })],
    ['Upgrade is ignored: served as HTTP/1.1', line('GET /healthz HTTP/1.1', `${H}Connection: Upgrade\r\nUpgrade: websocket\r\n`), served([200])],
    ['a refused request in a pipeline: the ones before it answered, nothing after',
      `${line('GET /healthz HTTP/1.1')}GET * HTTP/1.1\r\n${H}\r\n`,
      served([200, 400], { closes: true, check: (rs) => assert.match(rs[1].json.error.message, /allowed only with OPTIONS/) })],
  ]);
});
