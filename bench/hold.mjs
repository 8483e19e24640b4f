// Connections held by trainplane-server, and what each costs it: memory
// (VmRSS growth) and CPU (utime + stime) from /proc/PID of the server.
//
//   node bench/hold.mjs idle BASE_URL PID N HOLD_S PATH
//     N keep-alive connections, each sends one GET of PATH (200) and stays
//     open and idle for HOLD_S seconds; then every 100th sends another GET
//     (200) and the others must still be open.
//   node bench/hold.mjs park BASE_URL PID N HOLD_S WAIT_S WAKE_CMD
//     N nodes hold-0000.. registered, one connection each: a first sync
//     (answered at once, with the node's desiredVersion), then a sync with
//     that version and waitSeconds WAIT_S, which parks. Held HOLD_S seconds;
//     then WAKE_CMD (a shell command) changes the even-numbered nodes'
//     desired sets: their polls must be answered at once with the new
//     version, the others at their deadline (WAIT_S after they were sent)
//     with the old one.
//
// The connections come from 127.0.0.2, .3, ... (BENCH_HOLD_PER_ADDRESS each,
// 1,250 by default): the server allows 2,500 per client address. Prints one
// line per phase in make bench's style and, on stderr, the details; exits 1
// when a check fails.
import net from 'node:net';
import fs from 'node:fs';
import { execSync } from 'node:child_process';

const [mode, base, pidArg, nArg, holdArg, ...rest] = process.argv.slice(2);
const url = new URL(base);
const pid = Number(pidArg), N = Number(nArg), HOLD = Number(holdArg);
const BASE = Number(process.env.BENCH_HOLD_BASE_SECONDS || Math.max(1, Math.round(HOLD / 2)));
const perAddress = Number(process.env.BENCH_HOLD_PER_ADDRESS || 1250);
const token = process.env.TRAINPLANE_AGENT_TOKEN || 'trainplane-dev-token';
const HZ = Number(execSync('getconf CLK_TCK').toString());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failures = 0;
const fail = (msg) => { failures++; console.error(`hold: ${msg}`); };

// --- the server, seen from /proc ---------------------------------------------
function rssKiB() {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}
function cpuTicks() {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');	// f[0] is field 3 (state)
  return Number(f[11]) + Number(f[12]);			// fields 14, 15: utime, stime
}
const fds = () => fs.readdirSync(`/proc/${pid}/fd`).length;
const sample = () => ({ rss: rssKiB(), ticks: cpuTicks(), fds: fds(), t: performance.now() });

// --- one HTTP/1.1 connection, requests one at a time ---------------------------
class Conn {
  constructor(i) {
    this.i = i;
    this.local = `127.0.0.${2 + Math.floor(i / perAddress)}`;
    this.buf = Buffer.alloc(0);
    this.waiter = null;
    this.closed = false;
  }
  open() {
    return new Promise((resolve, reject) => {
      this.sock = net.connect({ host: url.hostname, port: Number(url.port), localAddress: this.local });
      this.sock.setNoDelay(true);
      this.sock.once('connect', resolve);
      this.sock.on('error', (e) => { this.error = e; reject(e); });	// no-op once connected
      this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.parse(); });
      this.sock.on('close', () => {
        this.closed = true;
        if (this.waiter) { const w = this.waiter; this.waiter = null; w.reject(new Error('closed')); }
      });
    });
  }
  parse() {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buf.subarray(0, end).toString('latin1');
    const len = Number((/\r\ncontent-length:\s*(\d+)/i.exec(head) || [0, 0])[1]);
    if (this.buf.length < end + 4 + len) return;
    const body = this.buf.subarray(end + 4, end + 4 + len).toString();
    this.buf = this.buf.subarray(end + 4 + len);
    const status = Number(head.split(' ')[1]);
    if (!this.waiter) { this.unasked = (this.unasked || 0) + 1; return; }
    const w = this.waiter; this.waiter = null;
    w.resolve({ status, body, at: performance.now() });
  }
  request(method, path, body) {
    if (this.closed) return Promise.reject(new Error('closed'));
    const data = body === undefined ? '' : JSON.stringify(body);
    const head = `${method} ${path} HTTP/1.1\r\nHost: ${url.host}\r\n` +
      (method === 'POST' ? `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(data)}\r\n` : '') + '\r\n';
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.sock.write(head + data);
    });
  }
}

// Runs f(0..n-1) with at most `width` at once; returns the results.
async function pool(n, width, f) {
  const out = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, n) }, async () => {
    while (next < n) { const i = next++; out[i] = await f(i).catch((e) => ({ error: e })); }
  }));
  return out;
}

function summarize(what, results) {
  const errs = {};
  for (const r of results)
    if (!r || r.error || r.status !== 200) {
      const k = r?.error ? r.error.code || r.error.message : `HTTP ${r?.status}`;
      errs[k] = (errs[k] || 0) + 1;
    }
  const bad = Object.values(errs).reduce((a, b) => a + b, 0);
  if (bad) fail(`${what}: ${bad} of ${results.length} failed: ${JSON.stringify(errs)}`);
  return results.length - bad;
}

const fmt = (x, d = 1) => x.toFixed(d);
// The server's own CPU with no connection open, as a share of a core (its
// workers' deadline sweeps and the park timer tick whatever it holds).
async function baseline() {
  const a = sample();
  await sleep(BASE * 1000);
  const b = sample();
  return cpuSec(a, b) / ((b.t - a.t) / 1000);
}
// CPU over [a, b] beyond the baseline, per connection, in µs per second held.
function cpuEach(a, b, base, n) {
  const held = (b.t - a.t) / 1000;
  return { held, all: cpuSec(a, b) / held, each: (cpuSec(a, b) / held - base) * 1e6 / n };
}
function cpuText(c, base) {
  return `CPU ${fmt(c.each, 2)} µs/s each (${fmt(c.all * 100, 2)}% of a core for all; ` +
    `${fmt(base * 100, 2)}% with none)`;
}
const perConnKiB = (a, b, n) => (b.rss - a.rss) / n;
const cpuSec = (a, b) => (b.ticks - a.ticks) / HZ;

// --- idle keep-alive connections ------------------------------------------------
async function idle(path) {
  const conns = Array.from({ length: N }, (_, i) => new Conn(i));
  await sleep(500);
  const base = await baseline();
  const s0 = sample();
  const first = await pool(N, 200, async (i) => { await conns[i].open(); return conns[i].request('GET', path); });
  const ok1 = summarize(`first GET of ${path}`, first);
  const s1 = sample();
  await sleep(1000);	// the last replies' buffers settle
  const s2 = sample();
  await sleep(HOLD * 1000);
  const s3 = sample();
  const dropped = conns.filter((c) => c.closed).length;
  if (dropped) fail(`${dropped} connections were closed while idle`);
  const probe = conns.filter((c) => c.i % 100 === 99);
  const again = await Promise.all(probe.map((c) => c.request('GET', path).catch((e) => ({ error: e }))));
  const ok2 = summarize('second GET on every 100th connection', again);
  for (const c of conns) c.sock?.destroy();
  await sleep(1000);
  const s4 = sample();
  console.error(`hold idle: opened ${ok1}/${N} in ${fmt((s1.t - s0.t) / 1000)} s (server CPU ${fmt(cpuSec(s0, s1), 2)} s); ` +
    `server fds ${s0.fds} -> ${s2.fds}; VmRSS ${s0.rss} -> ${s2.rss} -> ${s3.rss} KiB (after ${HOLD} s) -> ${s4.rss} KiB (closed); ` +
    `CPU while idle ${fmt(cpuSec(s2, s3), 2)} s over ${fmt((s3.t - s2.t) / 1000)} s; second GET ${ok2}/${probe.length}`);
  const c = cpuEach(s2, s3, base, N);
  console.log(`  idle connections: ${N} keep-alive held ${fmt(c.held, 0)} s, ${ok1} answered, ${N - dropped} still open, ` +
    `${ok2}/${probe.length} answer again: ${fmt(perConnKiB(s0, s2, N), 2)} KiB RSS each, ${cpuText(c, base)}, ` +
    `${fmt(cpuSec(s0, s1) * 1e6 / N, 0)} µs CPU to accept and answer each`);
}

// --- parked long-polls ----------------------------------------------------------
async function park(waitS, wakeCmd) {
  const name = (i) => `hold-${String(i).padStart(4, '0')}`;
  const conns = Array.from({ length: N }, (_, i) => new Conn(i));
  await pool(N, 50, async (i) => {
    const c = new Conn(i);
    await c.open();
    const r = await c.request('POST', `/agent/v1/nodes/${name(i)}:register`, {
      incarnation: 'hold', region: 'us-west1', zone: 'us-west1-a', vcpus: 8, memoryMb: 30720,
      address: '127.0.0.1', portRange: [30000, 30100], runtime: 'simulate' });
    c.sock.destroy();
    return r;
  }).then((rs) => summarize('register', rs));
  await sleep(1000);
  const base = await baseline();
  const s0 = sample();
  const version = new Array(N);
  const first = await pool(N, 200, async (i) => {
    await conns[i].open();
    const r = await conns[i].request('POST', `/agent/v1/nodes/${name(i)}:sync`,
                                     { incarnation: 'hold', waitSeconds: waitS, replicas: [] });
    if (r.status === 200) version[i] = JSON.parse(r.body).desiredVersion;
    return r;
  });
  summarize('first sync', first);
  await sleep(1000);
  const s1 = sample();	// N idle connections
  const sent = new Array(N);
  const polls = conns.map((c, i) => {
    sent[i] = performance.now();
    return c.request('POST', `/agent/v1/nodes/${name(i)}:sync`,
                     { incarnation: 'hold', waitSeconds: waitS, desiredVersion: version[i], replicas: [] })
      .catch((e) => ({ error: e }));
  });
  let early = 0;
  polls.forEach((p) => p.then(() => { early++; }));
  await sleep(1000);
  const s2 = sample();	// N parked
  const parkedEarly = early;
  await sleep(HOLD * 1000);
  const s3 = sample();
  const answeredEarly = early;
  if (answeredEarly) fail(`${answeredEarly} polls were answered before they were woken or due (${parkedEarly} within 1 s)`);
  const tw = performance.now();
  execSync(wakeCmd, { stdio: ['ignore', 'ignore', 'inherit'] });
  const res = await Promise.all(polls);
  const s4 = sample();
  const woken = [], due = [];
  res.forEach((r, i) => {
    if (!r || r.error || r.status !== 200) return;
    const v = JSON.parse(r.body).desiredVersion;
    if (i % 2 === 0) {
      if (v === version[i]) fail(`${name(i)}: woken but its version is still ${v}`);
      woken.push(r.at - tw);
    } else {
      if (v !== version[i]) fail(`${name(i)}: not woken but its version moved to ${v}`);
      due.push((r.at - sent[i]) / 1000 - waitS);
    }
  });
  const ok = summarize('parked syncs', res);
  woken.sort((a, b) => a - b);
  due.sort((a, b) => a - b);
  const pct = (a, q) => a.length ? a[Math.min(a.length - 1, Math.floor(a.length * q))] : NaN;
  if (due.length && (due[0] < -0.05 || due[due.length - 1] > 2))
    fail(`deadline answers ${fmt(due[0], 2)} to ${fmt(due[due.length - 1], 2)} s from their deadline`);
  const wokenAll = woken.length ? woken[woken.length - 1] : NaN;
  for (const c of conns) c.sock?.destroy();
  await sleep(1000);
  const s5 = sample();
  console.error(`hold park: server fds ${s0.fds} -> ${s1.fds} -> ${s2.fds}; VmRSS ${s0.rss} -> ${s1.rss} (idle) -> ` +
    `${s2.rss} (parked) -> ${s3.rss} (after ${HOLD} s) -> ${s4.rss} (answered) -> ${s5.rss} KiB (closed); ` +
    `CPU parked ${fmt(cpuSec(s2, s3), 2)} s over ${fmt((s3.t - s2.t) / 1000)} s; answered ${ok}/${N}: ` +
    `woken ${woken.length} (p50 ${fmt(pct(woken, 0.5), 0)} ms, all ${fmt(wokenAll, 0)} ms after the change), ` +
    `due ${due.length} (${fmt(pct(due, 0), 2)} to ${fmt(pct(due, 1), 2)} s past the deadline)`);
  const c = cpuEach(s2, s3, base, N);
  console.log(`  parked long-polls: ${N} agent syncs (one node each) held ${fmt(c.held, 0)} s: ` +
    `${fmt(perConnKiB(s0, s2, N), 2)} KiB RSS each with its connection (${fmt(perConnKiB(s1, s2, N), 2)} for the park), ` +
    `${cpuText(c, base)}; ` +
    `${woken.length} woken answered within ${fmt(wokenAll, 0)} ms, ${due.length} at their ${waitS} s deadline ` +
    `(+${fmt(pct(due, 0.5) * 1000, 0)} ms median), ${ok}/${N} answered 200`);
}

if (mode === 'idle') await idle(rest[0] || '/healthz');
else if (mode === 'park') await park(Number(rest[0]), rest[1]);
else { console.error('usage: see the head of bench/hold.mjs'); process.exit(2); }
process.exit(failures ? 1 : 0);
