// make soak: the crash-safety figure. Clients create jobs without pause
// while the server is SIGKILLed and restarted over and over (and its
// PostgreSQL crashes and restarts once, midway); then every job that was
// acknowledged (200) must be there, with exactly the spec, labels and
// createTime its acknowledgement carried. Prints the figures; exits 1 on
// any lost job, any answer other than 200 / 503 UNAVAILABLE / no answer,
// or a sanitizer report.
//
//   SOAK_SECONDS (180)    how long the clients create
//   SOAK_CLIENTS (8)      concurrent clients
//   SOAK_KILL_MS (1500-4000)  the server lives a random time in this range
//   SOAK_DB_CRASHES (1)   PostgreSQL stop -m immediate + start, spread evenly
//
// Outside `make test`: it runs minutes. The pieces (createClients,
// verifyAcknowledged, serverOnPort) are exported for other soaks.

import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';

import { request, sanitizerReport, startPostgres, startServer, trainingInput } from '../integration/harness.mjs';
import { freePort } from '../integration/agents.mjs';

const REQUEST_LIMIT_MS = 15_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `n` clients creating jobs in `project` on `base` until stop(). Each job
 * has its own spec (args) and labels. Returns { acked: Map id -> reply,
 * outcomes: counts by status, unanswered: ids without an answer, stop() }.
 */
export function createClients(base, n, project, { prefix = 'soak' } = {}) {
  let running = true;
  const acked = new Map();
  const outcomes = {};
  const unanswered = [];
  const unexpected = [];
  const loops = Array.from({ length: n }, async (_, k) => {
    for (let i = 0; running; i++) {
      const id = `${prefix}_${k}_${i}`;
      const body = {
        jobId: id,
        trainingInput: trainingInput({ args: [`--client=${k}`, `--seq=${i}`, `--nonce=${Math.random().toString(36).slice(2)}`] }),
        labels: { client: String(k), seq: String(i) },
      };
      let status;
      try {
        const res = await request(base, 'POST', `/v1/projects/${project}/jobs`, { body, timeoutMs: REQUEST_LIMIT_MS });
        status = res.status;
        if (status === 200) {
          acked.set(id, { sent: body, reply: res.json });
        } else if (status === 503 && res.json?.error?.status === 'UNAVAILABLE') {
          unanswered.push(id);
        } else {
          unexpected.push(`${id}: ${status} ${res.text.slice(0, 300)}`);
        }
      } catch (e) {
        status = e.name === 'TimeoutError' ? 'timeout' : 'no answer';
        if (status === 'timeout') unexpected.push(`${id}: no answer within ${REQUEST_LIMIT_MS} ms`);
        unanswered.push(id);
      }
      outcomes[status] = (outcomes[status] ?? 0) + 1;
      if (status !== 200) await sleep(20);
    }
  });
  return {
    acked,
    outcomes,
    unanswered,
    unexpected,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * Lists every job of `project` through the API and checks each
 * acknowledged one: present, same trainingInput, labels and createTime as
 * its acknowledgement. Returns { listed, lost: [...], changed: [...] }.
 */
export async function verifyAcknowledged(base, project, acked) {
  const listed = new Map();
  let token = '';
  do {
    const res = await request(base, 'GET', `/v1/projects/${project}/jobs?pageSize=100${token ? `&pageToken=${token}` : ''}`,
      { timeoutMs: 60_000 });
    assert.equal(res.status, 200, res.text);
    for (const j of res.json.jobs ?? []) {
      assert.ok(!listed.has(j.jobId), `${j.jobId} listed twice`);
      listed.set(j.jobId, j);
    }
    token = res.json.nextPageToken;
  } while (token);
  const lost = [];
  const changed = [];
  for (const [id, { sent, reply }] of acked) {
    const j = listed.get(id);
    if (!j) {
      lost.push(id);
    } else if (!isDeepStrictEqual(j.trainingInput, reply.trainingInput) ||
      !isDeepStrictEqual(j.trainingInput.args, sent.trainingInput.args) ||
      !isDeepStrictEqual(j.labels, sent.labels) || j.createTime !== reply.createTime) {
      changed.push(`${id}: acknowledged ${JSON.stringify(reply)}, stored ${JSON.stringify(j)}`);
    }
  }
  return { listed: listed.size, lost, changed };
}

/**
 * A server that can be SIGKILLed and started again on the same port:
 * { base, current(), killAndRestart(), stop() }. Sanitizer reports of
 * every life are collected in `reports`.
 */
export async function serverOnPort(pg, env = {}) {
  const port = await freePort();
  const fullEnv = { TRAINPLANE_LISTEN: `127.0.0.1:${port}`, TRAINPLANE_DB_POOL_SIZE: '8', TRAINPLANE_HTTP_THREADS: '8', ...env };
  let server = await startServer({ pg, env: fullEnv });
  const reports = [];
  const check = () => {
    const r = sanitizerReport(server.stderr());
    if (r) reports.push(r);
  };
  return {
    base: `http://127.0.0.1:${port}`,
    reports,
    current: () => server,
    async killAndRestart() {
      server.child.kill('SIGKILL');
      await server.exited;
      check();
      server = await startServer({ pg, env: fullEnv });
    },
    async stop() {
      await server.stop();
      check();
    },
  };
}

async function main() {
  const seconds = Number(process.env.SOAK_SECONDS ?? 180);
  const clients = Number(process.env.SOAK_CLIENTS ?? 8);
  const [killMin, killMax] = (process.env.SOAK_KILL_MS ?? '1500-4000').split('-').map(Number);
  const dbCrashes = Number(process.env.SOAK_DB_CRASHES ?? 1);
  const project = 'soak';

  const pg = await startPostgres();
  const srv = await serverOnPort(pg);
  const load = createClients(srv.base, clients, project);
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  const crashAt = Array.from({ length: dbCrashes }, (_, i) => t0 + ((i + 1) * seconds * 1000) / (dbCrashes + 1));
  let kills = 0;
  let crashes = 0;
  let downMs = 0;
  let last = Date.now();
  try {
    while (Date.now() < end) {
      await sleep(killMin + Math.random() * (killMax - killMin));
      if (crashes < dbCrashes && Date.now() >= crashAt[crashes]) {
        // PostgreSQL crashes (every backend killed, recovery at start) under
        // the same load; the server stays up and answers 503 meanwhile.
        pg.stop('immediate');
        await sleep(1000);
        pg.start();
        crashes++;
        continue;
      }
      const k0 = Date.now();
      await srv.killAndRestart();
      downMs += Date.now() - k0;
      kills++;
      if (Date.now() - last > 15_000) {
        last = Date.now();
        console.error(`soak: ${Math.round((Date.now() - t0) / 1000)} s, ${load.acked.size} acknowledged, ` +
          `${kills} kills, ${crashes} database crashes`);
      }
    }
  } finally {
    await load.stop();
  }
  const ran = (Date.now() - t0) / 1000;
  const { listed, lost, changed } = await verifyAcknowledged(srv.base, project, load.acked);
  await srv.stop();
  await pg.cleanup();

  const figures = {
    seconds: Math.round(ran),
    clients,
    creates: Object.values(load.outcomes).reduce((a, b) => a + b, 0),
    acknowledged: load.acked.size,
    lost: lost.length,
    changed: changed.length,
    stored: listed,
    unanswered: load.unanswered.length,
    outcomes: load.outcomes,
    serverKills: kills,
    databaseCrashes: crashes,
    meanRestartMs: kills ? Math.round(downMs / kills) : 0,
    unexpected: load.unexpected.length,
    sanitizerReports: srv.reports.length,
  };
  console.log(`soak: ${figures.creates} creates in ${figures.seconds} s from ${clients} clients; ` +
    `${figures.acknowledged} acknowledged, ${figures.lost} lost, ${figures.changed} changed; ` +
    `${figures.serverKills} server kill -9 + restarts (mean ${figures.meanRestartMs} ms to ready), ` +
    `${figures.databaseCrashes} PostgreSQL crash + restart; ${figures.unanswered} creates unanswered ` +
    `(503 or connection lost; ${listed - figures.acknowledged} of them committed anyway: never ` +
    'acknowledged, a retry with the same id gets 409), ' +
    `${figures.unexpected} unexpected answers`);
  console.log(JSON.stringify(figures));
  let failed = false;
  for (const [what, list] of [['lost', lost], ['changed', changed], ['unexpected', load.unexpected], ['sanitizer', srv.reports]]) {
    if (list.length) {
      failed = true;
      console.error(`soak: ${list.length} ${what}:\n${list.slice(0, 20).join('\n')}`);
    }
  }
  if (!kills || !load.acked.size) {
    failed = true;
    console.error('soak: nothing was exercised (no kill or no acknowledged create)');
  }
  process.exit(failed ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
