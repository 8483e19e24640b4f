// Shared helpers for the integration tests: a private PostgreSQL per test
// file, the server binary under test, and a small fetch wrapper.
//
// Everything runs as root on the CI machines, and initdb/postgres refuse
// root, so the database runs as the `postgres` system user, with its data
// directory owned by that user and its unix socket in a private temp dir.
//
// Every process started here is registered and killed (and every temp dir
// removed) on process exit too, so a failing test never leaves a postgres or
// a server behind.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { after as afterAll } from 'node:test';

export const SERVER_BIN = process.env.TRAINPLANE_SERVER_BIN;
export const SANITIZED = process.env.TRAINPLANE_SANITIZED === '1';
/** The repository root (tests/integration/../..). */
export const REPO_ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;

// --- clean-up on exit --------------------------------------------------------

const liveChildren = new Set();
const liveDatabases = new Set();
const liveDirs = new Set();

// The directories of PostgreSQL clusters: a thousand files and more each
// (three hundred more per database), which rm -rf's C loop removes for about
// a quarter of the CPU fs.rmSync takes. The others are small: fs.rmSync,
// without a process.
const clusterDirs = new Set();

/** Removes a directory tree (rm -rf for a cluster's, else or when rm fails fs.rmSync). */
function removeTree(dir) {
  if (clusterDirs.delete(dir) && spawnSync('rm', ['-rf', '--', dir]).status === 0 && !fs.existsSync(dir)) return;
  fs.rmSync(dir, { recursive: true, force: true });
}

function cleanupEverything() {
  for (const child of liveChildren) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  for (const db of liveDatabases) db.stopSync();
  for (const dir of liveDirs) removeTree(dir);
  liveChildren.clear();
  liveDatabases.clear();
  liveDirs.clear();
}
process.on('exit', cleanupEverything);
// The test runner stops a test file with a signal on timeout or Ctrl-C.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    cleanupEverything();
    process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
  });
}

// --- timings -------------------------------------------------------------------

// With TRAINPLANE_TEST_TIMES naming a file (make test sets it), each test
// file appends "<file> <seconds it ran>" to it as it exits; the summary
// lists the slowest (tools/test-summary.sh).
if (process.env.TRAINPLANE_TEST_TIMES) {
  process.on('exit', () => {
    const seconds = (Date.now() - performance.timeOrigin) / 1000;
    try {
      fs.appendFileSync(process.env.TRAINPLANE_TEST_TIMES,
        `${path.basename(process.argv[1] ?? '?')} ${seconds.toFixed(1)}\n`);
    } catch { /* the timing is not the test */ }
  });
}

// A test file's process ends when nothing keeps it alive: a timer, a child
// or a socket left behind holds the whole run up for as long as it lasts.
// Two seconds after the file's last test and its last clean-up (this hook
// is registered once the file's own top-level hooks are), this names what
// still holds it. (Only under node --test: tests/soak/ imports this too.)
if (process.env.NODE_TEST_CONTEXT) setImmediate(() => afterAll(() => {
  setTimeout(() => {
    const open = process._getActiveHandles().map((h) => {
      const kind = h.constructor?.name ?? typeof h;
      if (kind === 'ChildProcess') return `child ${h.spawnargs?.join(' ').slice(0, 120)}`;
      if (kind === 'Socket' && h.remotePort) return `socket to ${h.remoteAddress}:${h.remotePort}`;
      return null;
    }).filter(Boolean);
    const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    if (timers) open.push(`${timers} timer${timers > 1 ? 's' : ''}`);
    if (open.length) {
      process.stderr.write(`# ${path.basename(process.argv[1] ?? '?')}: still running 2 s after its tests ` +
        `ended; open: ${open.join('; ')}\n`);
    }
  }, 2000).unref();
}));

/** A fresh temp dir (in base), traversable by the postgres user, removed on exit. */
export function makeTempDir(prefix = 'tp-it-', base = os.tmpdir()) {
  const dir = fs.mkdtempSync(path.join(base, prefix));
  fs.chmodSync(dir, 0o755);
  liveDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  removeTree(dir);
  liveDirs.delete(dir);
}

// --- PostgreSQL ----------------------------------------------------------------

/** The newest /usr/lib/postgresql/<N>/bin that has initdb and pg_ctl. */
export function postgresBinDir() {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const bin = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin;
  }
  throw new Error('no PostgreSQL server in /usr/lib/postgresql/*/bin (apt-get install postgresql)');
}

let pgUser;
/** The postgres system user: { uid, gid, home } (asked once). */
function postgresIds() {
  if (!pgUser) {
    const r = spawnSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' });
    const f = r.status === 0 ? r.stdout.trim().split(':') : [];
    if (f.length < 6) throw new Error('running as root needs the postgres system user');
    pgUser = { uid: Number(f[2]), gid: Number(f[3]), home: f[5] };
  }
  return pgUser;
}

/**
 * Runs a PostgreSQL tool as the postgres user (when root: with its uid and
 * gid, no supplementary groups, and its HOME, USER and LOGNAME, as runuser
 * -u postgres would, without runuser's PAM session); throws on failure.
 */
function runAsPostgres(argv, { check = true, timeout = 60_000 } = {}) {
  let as = {};
  if (IS_ROOT) {
    const { uid, gid, home } = postgresIds();
    as = { uid, gid, env: { ...process.env, HOME: home, USER: 'postgres', LOGNAME: 'postgres' } };
  }
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', timeout, ...as });
  if (check && r.status !== 0) {
    throw new Error(`${argv.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  }
  return r;
}

/**
 * Where the clusters live: /dev/shm when there is one (a tmpfs: the tests'
 * databases never touch the disk, and a copy of the template is a copy in
 * memory), else the temp dir.
 */
export const PG_BASE = (() => {
  try {
    fs.accessSync('/dev/shm', fs.constants.W_OK | fs.constants.X_OK);
    return '/dev/shm';
  } catch {
    return os.tmpdir();
  }
})();

// WAL segments of 1 MB, not 16: the template is copied for every cluster,
// and its one empty segment was 16 of its 39 MB.
const INITDB_ARGS = ['-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C', '--wal-segsize=1'];

/**
 * Makes `data` (absent) a fresh data directory as `initdb INITDB_ARGS`
 * makes it, owned by the postgres user: a copy of a template that initdb
 * made once, kept in PG_BASE under a name that says the PostgreSQL build
 * and the arguments (initdb takes about a second of CPU, the copy a few
 * milliseconds). Test processes that start at once may each make one: the
 * first rename wins, the others throw theirs away.
 */
export function initPostgresData(data) {
  const bin = postgresBinDir();
  const initdb = path.join(bin, 'initdb');
  const key = crypto.createHash('sha256')
    .update(JSON.stringify([initdb, fs.statSync(initdb).mtimeMs, INITDB_ARGS, process.getuid?.()])).digest('hex').slice(0, 12);
  const template = path.join(PG_BASE, `trainplane-pg-template-${path.basename(path.dirname(bin))}-${key}`);
  if (!fs.existsSync(path.join(template, 'data', 'PG_VERSION'))) {
    const tmp = fs.mkdtempSync(`${template}.tmp-`);
    try {
      fs.chmodSync(tmp, 0o755);
      fs.mkdirSync(path.join(tmp, 'data'), { mode: 0o700 });
      if (IS_ROOT) {
        const { uid, gid } = postgresIds();
        fs.chownSync(tmp, uid, gid);
        fs.chownSync(path.join(tmp, 'data'), uid, gid);
      }
      runAsPostgres([initdb, '-D', path.join(tmp, 'data'), ...INITDB_ARGS]);
      try {
        fs.renameSync(tmp, template);
      } catch (e) {
        if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e;	// made meanwhile by another test
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  // -a keeps the owner (postgres) and the mode (0700) that postgres wants.
  const r = spawnSync('cp', ['-a', path.join(template, 'data'), data], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cp -a ${template}/data ${data} failed: ${r.stderr}`);
}

/**
 * Creates and starts a private PostgreSQL cluster in a temp dir (in
 * PG_BASE). Returns { dir, url, stop(), start(), running, cleanup() };
 * `url` is a libpq conninfo for the unix socket in `dir`.
 */
export async function startPostgres({ dbname = 'trainplane' } = {}) {
  const bin = postgresBinDir();
  const pgMajor = Number(path.basename(path.dirname(bin)));
  const dir = makeTempDir('tp-pg-', PG_BASE);
  clusterDirs.add(dir);
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  fs.writeFileSync(log, '');
  if (IS_ROOT) {
    const { uid, gid } = postgresIds();
    fs.chownSync(dir, uid, gid);
    fs.chownSync(log, uid, gid);
  }
  initPostgresData(data);

  // fsync off is safe while the machine stays up (the page cache survives a
  // postgres crash); synchronous_commit stays on so that a commit the server
  // acknowledged survives an immediate stop. Dynamic shared memory in files
  // of the data directory (PG_BASE is in memory where it can be), not
  // /dev/shm/PostgreSQL.*, which a crashed or immediately stopped cluster
  // leaves behind: the test's clean-up takes them with the directory.
  const opts = `-c listen_addresses='' -k ${dir} -c fsync=off -c full_page_writes=off ` +
    '-c max_connections=100 -c dynamic_shared_memory_type=mmap';
  const db = {
    dir,
    data,
    log,
    running: false,
    url: `host=${dir} dbname=${dbname} user=postgres connect_timeout=5`,
    /** Starts (or restarts) the cluster and waits until it accepts connections. */
    start() {
      runAsPostgres([path.join(bin, 'pg_ctl'), '-D', data, '-l', log, '-w', '-t', '60', '-o', opts, 'start']);
      db.running = true;
    },
    /** Stops the cluster: mode 'fast' (clients disconnected) or 'immediate' (a crash). */
    stop(mode = 'fast') {
      runAsPostgres([path.join(bin, 'pg_ctl'), '-D', data, '-w', '-t', '60', '-m', mode, 'stop']);
      db.running = false;
    },
    stopSync() {
      if (!db.running) return;
      runAsPostgres([path.join(bin, 'pg_ctl'), '-D', data, '-w', '-m', 'immediate', 'stop'], { check: false });
      db.running = false;
    },
    /** Runs SQL through psql on the socket; returns stdout (unaligned, tuples only). */
    psql(sql, database = dbname) {
      const r = runAsPostgres([path.join(bin, 'psql'), '-h', dir, '-U', 'postgres', '-d', database,
        '-v', 'ON_ERROR_STOP=1', '-X', '-A', '-t', '-c', sql]);
      return r.stdout.trim();
    },
    /**
     * A fresh, empty database on this cluster, named prefix_N: { url } for
     * startServer, and psql(sql) on it.
     */
    newDatabase(prefix = 'db') {
      db.databases = (db.databases ?? 0) + 1;
      const name = `${prefix}_${db.databases}`;
      // FILE_COPY copies template1's files; WAL_LOG, the default since
      // PostgreSQL 15, writes each of its pages to the WAL (more CPU).
      db.psql(`CREATE DATABASE ${name}${pgMajor >= 15 ? ' STRATEGY = FILE_COPY' : ''}`);
      return { url: db.url.replace(`dbname=${dbname}`, `dbname=${name}`), psql: (sql) => db.psql(sql, name) };
    },
    async cleanup() {
      db.stopSync();
      liveDatabases.delete(db);
      removeTempDir(dir);
    },
  };
  liveDatabases.add(db);
  db.start();
  if (dbname !== 'postgres') {
    runAsPostgres([path.join(bin, 'createdb'), '-h', dir, '-U', 'postgres', dbname]);
  }
  return db;
}

/** PIDs of postgres processes whose command line names dataDir (postmaster -D dataDir). */
export function postgresProcessesFor(dataDir) {
  const pids = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd;
    try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'); } catch { continue; }
    if (/postgres$/.test(cmd[0] ?? '') && cmd.includes(dataDir)) pids.push(Number(pid));
  }
  return pids;
}

// --- the server ------------------------------------------------------------------

const SANITIZER_REPORT = /(ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|WARNING: ThreadSanitizer|SUMMARY: \w+Sanitizer|runtime error: )/;

/** The sanitizer report in a server's stderr, or null. */
export function sanitizerReport(text) {
  const m = SANITIZER_REPORT.exec(text);
  return m ? text.slice(Math.max(0, m.index - 200), m.index + 4000) : null;
}

/** The sanitizers' settings for a server built with SANITIZE=1 (ASan + UBSan). */
export function sanitizerEnv() {
  return {
    ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0',
    UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
    LSAN_OPTIONS: 'exitcode=23',
  };
}

/**
 * Runs the server binary to completion (for --routes, bad config...).
 * Returns { status, signal, stdout, stderr }.
 */
export function runServerSync(args, { env = {}, timeout = 30_000, cwd = REPO_ROOT, bin = SERVER_BIN } = {}) {
  assert.ok(bin, 'TRAINPLANE_SERVER_BIN must name the server binary');
  const r = spawnSync(bin, args, {
    cwd,
    encoding: 'utf8',
    timeout,
    env: { ...baseEnv(), ...sanitizerEnv(), ...env },
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** The environment for a server: this one minus any TRAINPLANE_* setting. */
function baseEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('TRAINPLANE_')) env[k] = v;
  }
  return env;
}

/**
 * Starts the server with `env` (TRAINPLANE_DATABASE_URL from `pg` when
 * given), listening on an ephemeral port; waits for the "listening on" log
 * line and, unless `ready: false`, for /readyz to answer 200.
 *
 * Returns { port, base, child, stderr(), stdout(), stop() }. stop() sends
 * SIGTERM and asserts a clean exit (status 0, no sanitizer report). `bin`
 * runs another copy of the server binary (an installed one).
 */
export async function startServer({ pg, env = {}, args = [], ready = true, cwd = REPO_ROOT,
  startTimeoutMs = 60_000, bin = SERVER_BIN } = {}) {
  assert.ok(bin, 'TRAINPLANE_SERVER_BIN must name the server binary');
  const fullEnv = {
    ...baseEnv(),
    ...(SANITIZED ? sanitizerEnv() : {}),
    TRAINPLANE_LISTEN: '127.0.0.1:0',
    TRAINPLANE_LOG_LEVEL: 'info',
    TRAINPLANE_CATALOG: path.join(REPO_ROOT, 'deploy/catalog.yaml'),
    TRAINPLANE_DB_POOL_SIZE: '4',
    TRAINPLANE_HTTP_THREADS: '4',
    ...(pg ? { TRAINPLANE_DATABASE_URL: pg.url } : {}),
    // A state directory of its own (the storage root, gcs/, is in it): the
    // default, the checkout's ./var, is make run's, and buckets a test made
    // there were left in it (replica_identity_fresh checks it is left alone).
    TRAINPLANE_STATE_DIR: makeTempDir('tp-state-'),
    ...env,
  };
  const child = spawn(bin, args, { cwd, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      liveChildren.delete(child);
      resolve({ code, signal });
    });
  });

  const { scheme, port } = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`server did not start within ${startTimeoutMs} ms:\n${err}${out}`));
    }, startTimeoutMs);
    const look = () => {
      const m = /listening on (https?):\/\/[^\s]*:(\d+)\//.exec(err + out);
      if (m) {
        cleanup();
        resolve({ scheme: m[1], port: Number(m[2]) });
      }
    };
    const onExit = ({ code, signal }) => {
      cleanup();
      reject(new Error(`server exited during start-up (${code ?? signal}):\n${err}${out}`));
    };
    function cleanup() {
      clearTimeout(timer);
      child.stderr.off('data', look);
      child.stdout.off('data', look);
    }
    child.stderr.on('data', look);
    child.stdout.on('data', look);
    exited.then((r) => { if (!/listening on http/.test(err + out)) onExit(r); });
  });

  const server = {
    port,
    base: `${scheme}://127.0.0.1:${port}`,
    child,
    exited,
    stderr: () => err,
    stdout: () => out,
    /** True while the process runs. */
    alive: () => child.exitCode === null && child.signalCode === null,
    /** SIGTERM; asserts exit status 0 within 20 s and no sanitizer report. */
    async stop() {
      if (server.alive()) child.kill('SIGTERM');
      const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 20_000).unref());
      const r = await Promise.race([exited, timeout]);
      if (!r) {
        child.kill('SIGKILL');
        await exited;
        assert.fail(`server did not exit within 20 s of SIGTERM:\n${err.slice(-4000)}`);
      }
      const report = sanitizerReport(err);
      assert.equal(report, null, `sanitizer report in the server's stderr:\n${report}`);
      assert.deepEqual(r, { code: 0, signal: null },
        `server exit after SIGTERM: ${JSON.stringify(r)}\n${err.slice(-4000)}`);
    },
    /** Kills without checks (for clean-up after a failure). */
    kill() {
      if (server.alive()) child.kill('SIGKILL');
    },
  };
  if (ready) {
    try {
      await waitFor(async () => (await request(server.base, 'GET', '/readyz')).status === 200,
        startTimeoutMs, 'server /readyz did not become 200');
    } catch (e) {
      server.kill();
      throw new Error(`${e.message}\n${err}`);
    }
  }
  return server;
}

// --- HTTP ---------------------------------------------------------------------------

/**
 * One request: `body` is JSON-encoded (content type application/json) unless
 * it is a string or Buffer (sent as is; pass the content type in headers).
 * Returns { status, headers, text, json } (json = null when not JSON).
 */
export async function request(base, method, urlPath, { body, headers = {}, timeoutMs = 15_000 } = {}) {
  const h = { ...headers };
  let payload;
  if (body !== undefined) {
    if (typeof body === 'string' || Buffer.isBuffer(body)) {
      payload = body;
    } else {
      payload = JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
    }
  }
  const res = await fetch(base + urlPath, {
    method,
    headers: h,
    body: payload,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

/** A client bound to a server: c.get(path), c.post(path, body), ... */
export function client(base) {
  return {
    request: (method, p, opts) => request(base, method, p, opts),
    get: (p, opts) => request(base, 'GET', p, opts),
    post: (p, body, opts = {}) => request(base, 'POST', p, { ...opts, body }),
    patch: (p, body, opts = {}) => request(base, 'PATCH', p, { ...opts, body }),
    del: (p, opts) => request(base, 'DELETE', p, opts),
  };
}

/** Polls fn() until it returns truthy; throws `message` after timeoutMs. */
export async function waitFor(fn, timeoutMs, message, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let lastErr;
  for (;;) {
    try {
      if (await fn()) return;
    } catch (e) { lastErr = e; }
    if (Date.now() > deadline) throw new Error(`${message}${lastErr ? `: ${lastErr.message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

// --- assertions on Google's error envelope -----------------------------------------

/**
 * Asserts a Google error reply: HTTP `status`, error.code == status,
 * error.status == `code`, JSON content type, and (optionally) the message
 * matching `message` (string = exact, RegExp = match).
 * Returns the error object.
 */
export function assertError(res, status, code, message) {
  assert.equal(res.status, status, `HTTP status (body: ${res.text})`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json; charset=UTF-8$/i);
  assert.ok(res.json && typeof res.json.error === 'object', `error envelope expected: ${res.text}`);
  const e = res.json.error;
  assert.equal(e.code, status, 'error.code is the HTTP status');
  assert.equal(e.status, code, `error.status (message: ${e.message})`);
  assert.equal(typeof e.message, 'string');
  if (typeof message === 'string') assert.equal(e.message, message);
  else if (message instanceof RegExp) assert.match(e.message, message);
  for (const d of e.details ?? []) assert.equal(typeof d['@type'], 'string', 'every detail has an @type');
  return e;
}

/** The fieldViolations of the google.rpc.BadRequest detail of an error (asserted present). */
export function fieldViolations(err) {
  const d = (err.details ?? []).find((x) => x['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
  assert.ok(d, `a google.rpc.BadRequest detail expected: ${JSON.stringify(err)}`);
  assert.ok(Array.isArray(d.fieldViolations) && d.fieldViolations.length > 0);
  return d.fieldViolations;
}

/** True for a string that is valid standard base64 (with padding). */
export function isBase64(s) {
  return typeof s === 'string' && s.length > 0 && s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s) &&
    Buffer.from(s, 'base64').toString('base64') === s;
}

/** A valid training input (custom container, BASIC tier). */
export function trainingInput(extra = {}) {
  return {
    scaleTier: 'BASIC',
    region: 'us-central1',
    masterConfig: { imageUri: 'gcr.io/test/trainer:latest' },
    ...extra,
  };
}

let seq = 0;
/** A unique, valid job id with a prefix. */
export function jobId(prefix = 'job') {
  seq += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${seq}`;
}
