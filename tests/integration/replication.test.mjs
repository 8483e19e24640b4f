// trainplane on a replicated PostgreSQL: a primary and a synchronous
// streaming standby started here (loopback TCP), two servers on a multi-host
// URL with target_session_attrs=read-write, a real agent, and clients
// creating and reading jobs without pause. The primary is lost (every one of
// its processes SIGKILLed, as when its machine dies; or, in a switchover,
// made read-only while it stays up), the standby is promoted (pg_ctl
// promote), and the servers must answer 503 UNAVAILABLE meanwhile (never
// 500, never a hang), move every connection to the new primary on their
// own, lose no acknowledged job, serve nothing stale, elect one scheduler
// leader on it, and finish the agent's jobs. Figures (503s, time to full
// service, to a leader) go to the test's diagnostics; docs/replicated-postgresql.md
// quotes them.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import {
  PG_BASE, assertError, initPostgresData, postgresBinDir, request, startServer, trainingInput, waitFor,
} from './harness.mjs';
import { createJob, freePort, killMarked, startAgent, waitJobState, waitLogLine } from './agents.mjs';

const PROJECT = 'rep';
const REQUEST_LIMIT_MS = 10_000;	// no request may take longer, outage or not
const IS_ROOT = process.getuid?.() === 0;

// --- a primary and its synchronous standby -------------------------------------

const liveClusters = new Set();
process.on('exit', () => {
  for (const c of liveClusters) c.stopSync();
});

function runAsPostgres(argv, { check = true, timeout = 60_000 } = {}) {
  const [cmd, args] = IS_ROOT ? ['runuser', ['-u', 'postgres', '--', ...argv]] : [argv[0], argv.slice(1)];
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout });
  if (check && r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

function chownToPostgres(...paths) {
  if (!IS_ROOT) return;
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  for (const p of paths) fs.chownSync(p, uid, gid);
}

/** Children of pid (from /proc/N/stat's ppid field). */
function childrenOf(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}

/**
 * One PostgreSQL cluster in its own directory, listening on 127.0.0.1:port
 * and on a unix socket in its directory (for psql and pg_basebackup).
 */
function cluster(name, port) {
  const bin = postgresBinDir();
  const dir = fs.mkdtempSync(path.join(PG_BASE, `tp-rep-${name}-`));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  fs.writeFileSync(log, '');
  chownToPostgres(dir, log);
  const c = {
    name,
    port,
    dir,
    data,
    log,
    running: false,
    start(extra = '') {
      // fsync off is safe while the machine stays up (the test kills
      // processes, not the kernel); synchronous_commit stays on.
      const opts = `-c listen_addresses=127.0.0.1 -c port=${port} -k ${dir} -c fsync=off ` +
        `-c full_page_writes=off -c max_connections=100 -c wal_level=replica -c max_wal_senders=4 ` +
        `-c dynamic_shared_memory_type=mmap ${extra}`;	// as harness.mjs: nothing left in /dev/shm
      runAsPostgres([path.join(bin, 'pg_ctl'), '-D', data, '-l', log, '-w', '-t', '60', '-o', opts, 'start']);
      c.running = true;
    },
    postmasterPid() {
      return Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    },
    /** The machine dies: the postmaster and every backend, walsender, ... SIGKILLed at once. */
    killAll() {
      const pm = c.postmasterPid();
      process.kill(pm, 'SIGSTOP');	// no new backends while we collect them
      const kids = childrenOf(pm);
      process.kill(pm, 'SIGKILL');
      for (const k of kids) {
        try { process.kill(k, 'SIGKILL'); } catch { /* gone */ }
      }
      c.running = false;
    },
    psql(sql, db = 'trainplane') {
      const r = runAsPostgres([path.join(bin, 'psql'), '-h', dir, '-p', String(port), '-U', 'postgres', '-d', db,
        '-v', 'ON_ERROR_STOP=1', '-X', '-A', '-t', '-c', sql]);
      return r.stdout.trim();
    },
    stopSync() {
      if (c.running) {
        runAsPostgres([path.join(bin, 'pg_ctl'), '-D', data, '-w', '-m', 'immediate', 'stop'], { check: false });
        c.running = false;
      }
    },
    cleanup() {
      c.stopSync();
      liveClusters.delete(c);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  liveClusters.add(c);
  return c;
}

/**
 * A primary with synchronous_standby_names naming a standby made by
 * pg_basebackup -R and streaming from it. Returns { primary, standby, url }:
 * url is the multi-host URL the servers use.
 */
async function startReplicatedPostgres() {
  const bin = postgresBinDir();
  const primary = cluster('primary', await freePort());
  const standby = cluster('standby', await freePort());
  initPostgresData(primary.data);
  primary.start();
  primary.psql('CREATE DATABASE trainplane', 'postgres');
  runAsPostgres([path.join(bin, 'pg_basebackup'), '-h', primary.dir, '-p', String(primary.port), '-U', 'postgres',
    '-D', standby.data, '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
  // cluster_name is the walreceiver's application_name, which
  // synchronous_standby_names names.
  standby.start('-c hot_standby=on -c cluster_name=standby1');
  primary.psql("ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (standby1)'", 'postgres');
  primary.psql('SELECT pg_reload_conf()', 'postgres');
  await waitFor(() => primary.psql("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'",
    'postgres') === 'sync', 30_000, 'the standby did not become synchronous');
  assert.equal(primary.psql('SHOW synchronous_commit', 'postgres'), 'on');
  const url = `postgresql://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/trainplane` +
    '?target_session_attrs=read-write&connect_timeout=5';
  return { primary, standby, url };
}

// --- load ------------------------------------------------------------------------

/** One request, never throwing: { status ('timeout'/'network' on failure), json, text, ms, at }. */
async function attempt(base, method, p, body) {
  const t0 = Date.now();
  try {
    const res = await request(base, method, p, { body, timeoutMs: REQUEST_LIMIT_MS });
    return { status: res.status, json: res.json, text: res.text, headers: res.headers, ms: Date.now() - t0, at: t0 };
  } catch (e) {
    return { status: e.name === 'TimeoutError' ? 'timeout' : 'network', text: String(e), ms: Date.now() - t0, at: t0 };
  }
}

/**
 * `n` clients, each creating jobs in a loop on `writer` and reading every
 * acknowledged one back from `reader` at once. The reader's pipe carries
 * only reads: nothing but its own checks can tell it that its server was
 * left behind (a write would be refused, and tell it). Load jobs go to a
 * region without nodes: they stay QUEUED.
 */
function clientLoad(writer, reader, n) {
  let running = true;
  const creates = [];
  const reads = [];
  const loops = Array.from({ length: n }, async (_, k) => {
    for (let i = 0; running; i++) {
      const id = `load_c${k}_${i}`;
      const spec = trainingInput({ region: 'europe-west1', args: [`--client=${k}`, `--seq=${i}`] });
      const o = await attempt(writer.base, 'POST', `/v1/projects/${PROJECT}/jobs`, { jobId: id, trainingInput: spec });
      creates.push({ id, spec, ...o });
      if (o.status === 200) {
        reads.push({ id, ...(await attempt(reader.base, 'GET', `/v1/projects/${PROJECT}/jobs/${id}`)) });
      } else {
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  });
  return {
    creates,
    reads,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function metric(text, name) {
  const m = new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

async function leaders(servers) {
  return Promise.all(servers.map(async (s) => metric((await request(s.base, 'GET', '/metrics')).text,
    'trainplane_scheduler_leader')));
}

/** A CUSTOM job that runs `command` on the agent's node as a host process. */
function hostJob(command) {
  return {
    scaleTier: 'CUSTOM',
    region: 'us-central1',
    masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'localhost/trainer:test', containerCommand: ['sh', '-c', command] },
  };
}

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) {
    try { await fn(); } catch { /* best effort */ }
  }
});

/** pg_stat_activity on `c`: trainplane's connections by application_name ({name: count}). */
function connectionsOn(c) {
  const out = {};
  const rows = c.psql("SELECT application_name, count(*) FROM pg_stat_activity " +
    "WHERE application_name LIKE 'trainplane-server%' GROUP BY 1");
  for (const line of rows.split('\n').filter(Boolean)) {
    const [name, n] = line.split('|');
    out[name] = Number(n);
  }
  return out;
}

// Every connection a server holds besides its pool, by application_name:
// the one that listens for every channel (job cache, agents' wake-ups,
// scheduler), the pipe, the scheduler's.
const DEDICATED = ['trainplane-server/listen', 'trainplane-server/pipe', 'trainplane-server/scheduler'];

/**
 * The scenario both tests share: two servers and an agent on the pair, a
 * job running, clients creating and reading; loseThePrimary(primary) takes
 * the primary away; 2 s later the standby is promoted. Everything after is
 * checked here. Returns the figures.
 */
async function failover(t, loseThePrimary, checkOldPrimary = () => {}) {
  const { primary, standby, url } = await startReplicatedPostgres();
  cleanups.push(() => primary.cleanup(), () => standby.cleanup());
  const env = {
    TRAINPLANE_DATABASE_URL: url,
    TRAINPLANE_SCHEDULER_TICK_MS: '200',
    // Long polls of 20 s: an agent hears of its replicas before its poll
    // ends only through its server's notification listener.
    TRAINPLANE_SYNC_INTERVAL_SECONDS: '20',
    TRAINPLANE_LEASE_SECONDS: '60',
  };
  const a = await startServer({ env });
  cleanups.push(() => a.kill());
  await waitFor(async () => (await leaders([a]))[0] === 1, 10_000, 'server a leads');
  const b = await startServer({ env });
  cleanups.push(() => b.kill());
  const servers = [a, b];
  let agent;
  const logs = () => servers.map((s, i) => `== server ${'ab'[i]}\n${s.stderr().slice(-3000)}`).join('\n') +
    `\n== agent\n${agent?.stderr().slice(-2000)}`;

  const mark = `tpmark_${process.pid}_rep_${Date.now().toString(36)}`;
  cleanups.push(() => killMarked(mark));
  agent = await startAgent(a, { node: 'rep-node', vcpus: 16 });
  cleanups.push(() => agent.cleanup());

  // A job that runs through the whole failover.
  const through = await createJob(b.base, PROJECT, 'through', hostJob(`echo begin; sleep 8; echo end; : ${mark}`));
  await waitJobState(a.base, PROJECT, 'through', 'RUNNING', 20_000, logs);

  const load = clientLoad(a, b, 4);
  cleanups.push(() => load.stop());
  await waitFor(() => load.creates.filter((o) => o.status === 200).length >= 50, 60_000, 'load started');
  // The pipe connects at its first command.
  await waitFor(() => DEDICATED.every((n) => connectionsOn(primary)[n] === 2), 10_000,
    `each server's dedicated connections on the primary: ${JSON.stringify(connectionsOn(primary))}`);

  const lostAt = Date.now();
  loseThePrimary(primary);
  // Meanwhile (failure detection, a person or a cluster manager deciding):
  // every server answers, and answers 503 UNAVAILABLE for what needs the
  // database; /healthz stays 200.
  await waitFor(() => load.creates.some((o) => o.at > lostAt && o.status === 503), REQUEST_LIMIT_MS,
    `no create met the outage:\n${logs()}`);
  for (const s of servers) {
    const writes = s === a ? [['POST', `/v1/projects/${PROJECT}/jobs`, { jobId: 'during', trainingInput: trainingInput() }],
      ['POST', `/v1/projects/${PROJECT}/jobs/through:cancel`, {}]] : [];	// b only reads (see clientLoad)
    for (const [method, p, body] of [['GET', '/readyz'], ['GET', `/v1/projects/${PROJECT}/jobs`], ...writes]) {
      const res = await attempt(s.base, method, p, body);
      assert.ok(res.ms < REQUEST_LIMIT_MS, `${method} ${p} took ${res.ms} ms`);
      assertError(res, 503, 'UNAVAILABLE');
    }
    const got = await attempt(s.base, 'GET', `/v1/projects/${PROJECT}/jobs/through`);
    assert.ok(got.status === 503 || got.status === 200, `get during the outage: ${got.status} ${got.text}`);
    assert.equal((await attempt(s.base, 'GET', '/healthz')).status, 200);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, lostAt + 2000 - Date.now())));

  const promotedAt = Date.now();
  runAsPostgres([path.join(postgresBinDir(), 'pg_ctl'), '-D', standby.data, '-w', '-t', '60', 'promote']);
  const promoteTook = Date.now() - promotedAt;
  assert.equal(standby.psql('SELECT pg_is_in_recovery()'), 'f');

  // Full service: every server ready and creating again; b reads a's new
  // job before it writes anything itself (a 404 is a read from the past).
  const full = {};
  const stale = [];
  const ready = async (s) => (await attempt(s.base, 'GET', '/readyz')).status === 200;
  const create = async (s, id) => (await attempt(s.base, 'POST', `/v1/projects/${PROJECT}/jobs`,
    { jobId: id, trainingInput: trainingInput({ region: 'europe-west1' }) })).status === 200;
  await waitFor(async () => {
    if (!full.a && await ready(a) && await create(a, 'after_a')) full.a = Date.now();
    if (full.a && !full.b) {
      const seen = await attempt(b.base, 'GET', `/v1/projects/${PROJECT}/jobs/after_a`);
      if (seen.status !== 200 && seen.status !== 503) stale.push(`${seen.status} ${seen.text}`);
      if (seen.status === 200 && await ready(b) && await create(b, 'after_b')) full.b = Date.now();
    }
    return (full.a && full.b) || stale.length;
  }, 30_000, `the servers did not serve again within 30 s of the promotion:\n${logs()}`);
  assert.deepEqual(stale, [], `server b read job after_a, acknowledged by a:\n${logs()}`);
  const fullAt = Math.max(full.a, full.b);
  // One scheduler leader again, on the new primary (locks are not
  // replicated: whoever reconnects first takes it).
  await waitFor(async () => (await leaders(servers)).reduce((x, y) => x + y, 0) === 1 &&
    standby.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") === '1', 10_000,
    `no single leader after the failover:\n${logs()}`);
  const leaderAt = Date.now();
  const acksAfter = () => load.creates.filter((o) => o.at > fullAt && o.status === 200).length;
  await waitFor(() => acksAfter() >= 50, 60_000, 'creates did not resume');
  await load.stop();

  // Every create and read answered in time: 200, or 503 UNAVAILABLE.
  const all = [...load.creates, ...load.reads];
  const bad = all.filter((o) => o.status !== 200 && o.status !== 503);
  assert.deepEqual(bad.map((o) => `${o.id}: ${o.status} ${o.text}`), [],
    `only 200 and 503 (no 500, 404, hang or reset):\n${logs()}`);
  for (const o of all.filter((x) => x.status === 503)) {
    assert.equal(o.json?.error?.status, 'UNAVAILABLE', o.text);
  }
  const slow = all.filter((o) => o.ms >= REQUEST_LIMIT_MS);
  assert.deepEqual(slow.map((o) => o.id), [], `no request takes ${REQUEST_LIMIT_MS} ms`);

  // 0 acknowledged jobs lost: each is on the new primary with its spec.
  const acked = load.creates.filter((o) => o.status === 200);
  const lost = [];
  for (const [i, o] of acked.entries()) {
    const got = await request(servers[i % 2].base, 'GET', `/v1/projects/${PROJECT}/jobs/${o.id}`);
    if (got.status !== 200 || got.json.createTime !== o.json.createTime ||
      !isDeepStrictEqual(got.json.trainingInput, o.json.trainingInput)) {
      lost.push(`${o.id}: ${got.status} ${got.text} (acknowledged: ${o.text})`);
    }
    assert.deepEqual(o.json.trainingInput.args, o.spec.args);
  }
  assert.deepEqual(lost, [], 'acknowledged jobs missing after the failover');
  const stored = Number(standby.psql(`SELECT count(*) FROM jobs WHERE project = '${PROJECT}' AND job_id LIKE 'load\\_%'`));
  assert.ok(stored >= acked.length, `${stored} load jobs stored, ${acked.length} acknowledged`);

  // Still one leader, on the new primary; it schedules: the job that ran
  // through the failover finishes, and a new one runs.
  assert.deepEqual((await leaders(servers)).sort(), [0, 1], 'one leader');
  assert.equal(standby.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"), '1',
    'the leader holds its lock on the new primary');
  const done = await waitJobState(b.base, PROJECT, 'through', 'SUCCEEDED', 30_000, logs);
  assert.equal(done.createTime, through.createTime);
  await waitLogLine(a.base, PROJECT, 'through', /^end$/);
  const nextAt = Date.now();
  await createJob(b.base, PROJECT, 'next', hostJob(`echo next; : ${mark}`));
  await waitJobState(a.base, PROJECT, 'next', ['RUNNING', 'SUCCEEDED'], 30_000, logs);
  // Placed, and the agent parked on server a heard of it at once: a's
  // notification listener is back (else it waits out its 20 s poll).
  const toRunning = Date.now() - nextAt;
  assert.ok(toRunning < 10_000, `the agent started the new job after ${toRunning} ms`);
  await waitJobState(a.base, PROJECT, 'next', 'SUCCEEDED', 30_000, logs);

  // Each server's job cache listens on the new primary: a change made
  // through one server is seen by the very next get on the other.
  for (let i = 0; i < 20; i++) {
    const [w, r] = i % 2 ? [a, b] : [b, a];
    const id = acked[i].id;
    assert.equal((await request(r.base, 'GET', `/v1/projects/${PROJECT}/jobs/${id}`)).status, 200);
    const p = await request(w.base, 'PATCH', `/v1/projects/${PROJECT}/jobs/${id}?updateMask=labels`,
      { body: { labels: { round: String(i) } } });
    assert.equal(p.status, 200, p.text);
    const g = await request(r.base, 'GET', `/v1/projects/${PROJECT}/jobs/${id}`);
    assert.deepEqual(g.json.labels, { round: String(i) }, `get on the other server after the patch ${i}`);
  }
  // ... and serves hits again (a cache that does not listen keeps nothing).
  for (const [i, s] of servers.entries()) {
    const hits = async () => metric((await request(s.base, 'GET', '/metrics')).text,
      'trainplane_job_cache_lookups_total{result="hit"}');
    const before = await hits();
    for (let k = 0; k < 3; k++) assert.equal((await request(s.base, 'GET', `/v1/projects/${PROJECT}/jobs/${acked[i].id}`)).status, 200);
    assert.ok(await hits() >= before + 2, `server ${'ab'[i]}'s job cache serves again`);
  }
  // Every dedicated connection of both servers is on the new primary.
  await waitFor(() => DEDICATED.every((n) => connectionsOn(standby)[n] === 2), 10_000,
    `each server's dedicated connections on the new primary: ${JSON.stringify(connectionsOn(standby))}`);

  const n503 = all.filter((o) => o.status === 503).length;
  const firstAfter = load.creates.find((o) => o.at > promotedAt && o.status === 200);
  const figures = {
    creates: load.creates.length, acknowledged: acked.length, lost: lost.length, reads: load.reads.length,
    unavailable: n503, longestMs: Math.max(...all.map((o) => o.ms)), promoteMs: promoteTook,
    firstAckAfterPromoteMs: firstAfter ? firstAfter.at + firstAfter.ms - promotedAt : null,
    fullServiceAfterPromoteMs: fullAt - promotedAt, fullServiceAfterLossMs: fullAt - lostAt, toRunningMs: toRunning,
    leaderAfterPromoteMs: leaderAt - promotedAt,
  };
  t.diagnostic(`creates: ${figures.creates} (${figures.acknowledged} acknowledged, ${figures.lost} lost), ` +
    `reads: ${figures.reads}, 503 UNAVAILABLE: ${figures.unavailable} (longest request ${figures.longestMs} ms)`);
  t.diagnostic(`pg_ctl promote took ${promoteTook} ms; first create acknowledged ${figures.firstAckAfterPromoteMs} ms ` +
    `after the promotion; both servers ready and creating ${figures.fullServiceAfterPromoteMs} ms after it ` +
    `(${figures.fullServiceAfterLossMs} ms after losing the primary, 2,000 ms of it waiting to promote); ` +
    `a leader on the new primary ${figures.leaderAfterPromoteMs} ms after it; a new job RUNNING in ${toRunning} ms`);

  await checkOldPrimary(primary);
  await agent.stop();
  for (const s of servers) await s.stop();
  return figures;
}

describe('replicated PostgreSQL: the primary is lost and the standby promoted', () => {
  it('kill -9 of the primary: 503 meanwhile, full service after, 0 acknowledged jobs lost, one leader on the new primary',
    async (t) => {
      await failover(t, (primary) => primary.killAll());
    });

  it('a primary fenced read-only for a switchover: every connection leaves it for the promoted standby', async (t) => {
    // A switchover that keeps the old primary up: it is made read-only
    // (what an operator does before promoting, or what a managed database
    // does when its disk fills), then the standby is promoted. Connections
    // on the old primary stay open: each must notice and move.
    await failover(t, (p) => {
      p.psql('ALTER SYSTEM SET default_transaction_read_only = on', 'postgres');
      p.psql('SELECT pg_reload_conf()', 'postgres');
    }, (old) => {
      // Pooled connections idle since the switchover may stay until
      // their next use, which moves them; nothing else is left behind.
      const left = connectionsOn(old);
      delete left['trainplane-server'];
      assert.deepEqual(left, {}, 'no dedicated connection left on the old primary');
      assert.equal(old.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"), '0',
        'no scheduler lock left on the old primary');
    });
  });
});
