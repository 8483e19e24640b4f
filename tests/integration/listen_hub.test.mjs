// Each server listens for the database's notifications on one connection
// (store/listen_hub.c), for every channel: the job cache's (tp_job, tested
// in job_cache.test.mjs), the agents' wake-ups (tp_node) and the
// scheduler's (tp_sched). Two servers on one database, this test playing
// the agent, with scheduler passes that run only when something asks for one
// (a 60 s tick) and long polls of 12 s: a job placed within seconds was
// placed and announced through notifications alone. The listening
// connections are killed, and everything must be heard again after, with
// every parked long poll woken at once, since what was said meanwhile is
// lost.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { client, request, startPostgres, startServer, waitFor } from './harness.mjs';

const TOKEN = 'hub-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const WAIT_S = 12;
let pg, db, a, b;

before(async () => {
  pg = await startPostgres({ dbname: 'postgres' });
  db = pg.newDatabase('hub');
  const env = { TRAINPLANE_AGENT_TOKEN: TOKEN, TRAINPLANE_SCHEDULER_TICK_MS: '60000' };
  a = await startServer({ pg: db, env });
  await waitFor(async () => /^trainplane_scheduler_leader 1$/m.test((await request(a.base, 'GET', '/metrics')).text),
    10_000, 'server a leads');
  b = await startServer({ pg: db, env });
});

after(async () => {
  await a?.stop();
  await b?.stop();
  await pg?.cleanup();
});

/** This database's trainplane connections by application_name ({name: count}). */
function connections() {
  const out = {};
  const rows = db.psql("SELECT application_name, count(*) FROM pg_stat_activity " +
    "WHERE datname = current_database() AND application_name LIKE 'trainplane-server/%' GROUP BY 1");
  for (const line of rows.split('\n').filter(Boolean)) {
    const [name, n] = line.split('|');
    out[name] = Number(n);
  }
  return out;
}

// hub1 takes the jobs (us-west1); hub2 is there to be parked on server a.
const register = (c, name, region = 'us-west1', zone = 'us-west1-b') => c.post(`/agent/v1/nodes/${name}:register`, {
  incarnation: `${name}-1`, region, zone, vcpus: 16, memoryMb: 61440,
  address: '127.0.0.2', portRange: [26000, 26009], runtime: 'process',
}, { headers: AUTH });
const sync = (c, name, body) => c.post(`/agent/v1/nodes/${name}:sync`, { incarnation: `${name}-1`, replicas: [], ...body },
  { headers: AUTH, timeoutMs: (WAIT_S + 10) * 1000 });

async function createJob(c, id) {
  const res = await c.post('/v1/projects/hub/jobs', { jobId: id, trainingInput: {
    scaleTier: 'CUSTOM', region: 'us-west1', masterType: 'n1-standard-4',
    masterConfig: { imageUri: 'x', containerCommand: ['true'] },
  } });
  assert.equal(res.status, 200, res.text);
}

/** Parks a long poll of node on c; resolves to { ms, json } once answered. */
function park(c, name, version) {
  const t0 = Date.now();
  return sync(c, name, { waitSeconds: WAIT_S, desiredVersion: version }).then((r) => {
    assert.equal(r.status, 200, r.text);
    return { ms: Date.now() - t0, json: r.json };
  });
}

describe('one listening connection per server', () => {
  it('is the only one: no connection of its own for the job cache or the agents', async () => {
    await waitFor(() => connections()['trainplane-server/listen'] === 2, 10_000,
      `a listening connection per server: ${JSON.stringify(connections())}`);
    const names = connections();
    assert.equal(names['trainplane-server/scheduler'], 2, JSON.stringify(names));
    for (const gone of ['trainplane-server/job-cache', 'trainplane-server/listener']) {
      assert.equal(names[gone], undefined, JSON.stringify(names));
    }
  });

  it('carries wake-ups across servers: a job created on the standby is placed by the leader and its node woken', async () => {
    const cb = client(b.base);
    assert.equal((await register(cb, 'hub1')).status, 200);
    const v = (await sync(cb, 'hub1', { waitSeconds: 0 })).json.desiredVersion;
    let held = park(cb, 'hub1', v);
    await new Promise((r) => setTimeout(r, 200));
    // b forwards its wake-up to a (tp_sched), a places the job, the commit
    // notifies b (tp_node), b answers the parked poll. A poll may be
    // answered early with nothing new (agent/PROTOCOL.md: "after at most
    // waitSeconds"; a notice for hub1 heard late by b's hub under load, as
    // its register's, wakes it): the agent then parks again with the version
    // it got, and so does this test, within the same 5 s.
    const t0 = Date.now();
    await createJob(cb, 'hub_first');
    let woke = await held;
    while (woke.json.replicas.length === 0 && Date.now() - t0 < 5000) {
      held = park(cb, 'hub1', woke.json.desiredVersion);
      woke = await held;
    }
    assert.ok(Date.now() - t0 < 5000, `answered after ${Date.now() - t0} ms`);
    assert.equal(woke.json.replicas.length, 1, JSON.stringify(woke.json));
    // Both hubs heard it: a the forwarded wake-up, b the placement.
    for (const s of [a, b]) {
      const m = /^trainplane_listen_notifications_total (\d+)$/m.exec((await request(s.base, 'GET', '/metrics')).text);
      assert.ok(m && Number(m[1]) >= 1, `notifications counted: ${m?.[0]}`);
    }
  });

  it('when its connection is lost, wakes every parked poll at once and hears every channel again', async () => {
    const cb = client(b.base);
    const ca = client(a.base);
    assert.equal((await register(ca, 'hub2', 'us-central1', 'us-central1-a')).status, 200);
    const vb = (await sync(cb, 'hub1', { waitSeconds: 0 })).json.desiredVersion;
    const va = (await sync(ca, 'hub2', { waitSeconds: 0 })).json.desiredVersion;
    const heldB = park(cb, 'hub1', vb);
    const heldA = park(ca, 'hub2', va);
    await new Promise((r) => setTimeout(r, 300));
    db.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity " +
      "WHERE application_name = 'trainplane-server/listen' AND datname = current_database()");
    // Nothing changed for either node, but a change may have gone unheard:
    // both polls are answered when the hubs listen again, long before their wait.
    for (const [held, s] of [[heldB, b], [heldA, a]]) {
      const r = await held;
      assert.ok(r.ms < 5000, `a parked poll on server ${s === a ? 'a' : 'b'} answered after ${r.ms} ms`);
    }
    await waitFor(() => /listen hub: connection lost/.test(a.stderr()), 10_000, 'server a says its hub lost the connection');
    for (const s of [a, b]) {
      const m = /^trainplane_listen_reconnects_total (\d+)$/m.exec((await request(s.base, 'GET', '/metrics')).text);
      assert.ok(m && Number(m[1]) >= 1, `the loss is counted: ${m?.[0]}`);
    }
    // Every channel is heard again: the same trip as before.
    const v = (await sync(cb, 'hub1', { waitSeconds: 0 })).json.desiredVersion;
    const held = park(cb, 'hub1', v);
    await new Promise((r) => setTimeout(r, 200));
    await createJob(cb, 'hub_second');
    const woke = await held;
    assert.ok(woke.ms < 5000, `answered after ${woke.ms} ms`);
    assert.equal(woke.json.replicas.length, 2, JSON.stringify(woke.json));
    await waitFor(() => connections()['trainplane-server/listen'] === 2, 10_000, 'both hubs back');
  });

  it('a standby forwards a wake-up once: it does not act on (and forward again) what it hears itself', async (t) => {
    const cb = client(b.base);
    await createJob(cb, 'hub_echo');
    await new Promise((r) => setTimeout(r, 500));
    // Every forward is a transaction: count them while nothing happens (a
    // standby that acted on its own forwards makes about 30,000 a second).
    const commits = () => Number(db.psql('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()'));
    const before = commits();
    await new Promise((r) => setTimeout(r, 3000));
    const during = commits() - before;
    t.diagnostic(`${during} transactions in 3 s of quiet`);
    assert.ok(during < 200, `${during} transactions in 3 s of quiet`);
  });
});
