// The statement deadline (db_statement_timeout, issue 28): a primary that
// lost its only synchronous standby stops acknowledging commits, and
// PostgreSQL's statement_timeout does not bound a commit's wait for the
// standby. A request that writes must then get 503 UNAVAILABLE within the
// deadline, not hang: on the pipe (jobs.create) and on a pooled connection
// (db_pipeline: false; jobs.cancel, a transaction). Reads go on, and once
// the standby requirement is lifted writes succeed again.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertError, client, startPostgres, startServer, trainingInput, waitFor } from './harness.mjs';

const DEADLINE_MS = 2000;
// Room for a loaded 2-core machine around the deadline; far below a hang.
const ANSWER_WITHIN_MS = DEADLINE_MS + 6000;

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) {
    try { await fn(); } catch { /* best effort */ }
  }
});

async function timed(fn) {
  const t0 = Date.now();
  const res = await fn();
  return { res, ms: Date.now() - t0 };
}

describe('a commit that waits for a synchronous standby that is gone', () => {
  it('is 503 UNAVAILABLE within db_statement_timeout (pipe and pool), reads go on, writes heal', async () => {
    const pg = await startPostgres();
    cleanups.push(() => pg.cleanup());
    const env = { TRAINPLANE_DB_STATEMENT_TIMEOUT: `${DEADLINE_MS / 1000}s`, TRAINPLANE_SCHEDULER: 'false' };
    const piped = await startServer({ pg, env });
    cleanups.push(() => piped.kill());
    const pooled = await startServer({ pg, env: { ...env, TRAINPLANE_DB_PIPELINE: 'false' } });
    cleanups.push(() => pooled.kill());
    const a = client(piped.base);
    const b = client(pooled.base);

    const made = await a.post('/v1/projects/sync/jobs', { jobId: 'before', trainingInput: trainingInput() });
    assert.equal(made.status, 200, made.text);
    assert.equal((await b.get('/v1/projects/sync/jobs/before')).status, 200);

    // Every commit now waits for a standby that never comes.
    pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'nonexistent'");
    pg.psql('SELECT pg_reload_conf()');
    await waitFor(() => pg.psql('SHOW synchronous_standby_names') === 'nonexistent', 10_000,
      'the reload did not take');

    const viaPipe = await timed(() => a.post('/v1/projects/sync/jobs',
      { jobId: 'during_pipe', trainingInput: trainingInput() }, { timeoutMs: 30_000 }));
    assertError(viaPipe.res, 503, 'UNAVAILABLE');
    assert.ok(viaPipe.ms >= DEADLINE_MS - 100 && viaPipe.ms < ANSWER_WITHIN_MS,
      `the pipe's create answered after ${viaPipe.ms} ms`);

    const viaPool = await timed(() => b.post('/v1/projects/sync/jobs',
      { jobId: 'during_pool', trainingInput: trainingInput() }, { timeoutMs: 30_000 }));
    assertError(viaPool.res, 503, 'UNAVAILABLE');
    assert.ok(viaPool.ms >= DEADLINE_MS - 100 && viaPool.ms < ANSWER_WITHIN_MS,
      `the pool's create answered after ${viaPool.ms} ms`);

    const cancel = await timed(() => b.post('/v1/projects/sync/jobs/before:cancel', {}, { timeoutMs: 30_000 }));
    assertError(cancel.res, 503, 'UNAVAILABLE');
    assert.ok(cancel.ms < ANSWER_WITHIN_MS, `the cancel answered after ${cancel.ms} ms`);

    // Reads need no commit: both servers still answer them.
    assert.equal((await a.get('/v1/projects/sync/jobs/before')).status, 200);
    assert.equal((await b.get('/v1/projects/sync/jobs')).status, 200);
    for (const s of [piped, pooled]) {
      assert.match(s.stderr(), /had no answer within 2 s \(db_statement_timeout\)/);
      const m = await client(s.base).get('/metrics');
      assert.match(m.text, /^trainplane_db_statement_deadlines_total [1-9]/m);
    }

    // The standby requirement lifted: writes succeed again on new connections.
    pg.psql('ALTER SYSTEM RESET synchronous_standby_names');
    pg.psql('SELECT pg_reload_conf()');
    await waitFor(() => pg.psql('SHOW synchronous_standby_names') === '', 10_000, 'the reset did not take');
    for (const [c, id] of [[a, 'after_pipe'], [b, 'after_pool']]) {
      const res = await c.post('/v1/projects/sync/jobs', { jobId: id, trainingInput: trainingInput() });
      assert.equal(res.status, 200, res.text);
    }
    assert.ok(piped.alive() && pooled.alive());
    await piped.stop();
    await pooled.stop();
  });
});
