// The server's log under hostile input and under a flood: a project id
// carrying a newline and a forged ERROR line, terminal escapes, invalid
// UTF-8 or 5,000 characters never makes a line of its own (whether the API
// takes the id or refuses it, every line of stderr is a log line); and a
// database outage under load writes a bounded number of lines, with counts of
// what was suppressed.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { request, startPostgres, startServer, trainingInput, waitFor } from './harness.mjs';

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) {
    try { await fn(); } catch { /* best effort */ }
  }
});

// The prefix every line of the text log starts with (lib/log.h).
const LOG_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) /;

function badLines(text) {
  return text.split('\n').slice(0, -1).filter((l) => !LOG_LINE.test(l));
}

describe('server log', () => {
  it('hostile project and job ids never forge a line or reach the terminal raw', async () => {
    const pg = await startPostgres();
    cleanups.push(() => pg.cleanup());
    // debug: the access line logs every request's path, refused ones too.
    const server = await startServer({ pg, env: { TRAINPLANE_LOG_LEVEL: 'debug' } });
    cleanups.push(() => server.kill());

    const forged = '%0A2026-11-22T10:00:00.000Z%20ERROR%20forged%20line';
    const projects = [
      `demo${forged}`,
      `demo%0D${forged}`,
      'demo%1B%5B2J%1B%5D0%3Btitle%07',      // ESC [2J, ESC ]0;title BEL
      'demo%C2%9B31m%E2%80%A8%E2%80%AE',      // C1 CSI, U+2028, U+202E
      'demo%FF%FE%C3',                        // invalid UTF-8
      'demo%7F%00x',                          // DEL, NUL
      `demo${'A'.repeat(5000)}`,
    ];
    const statuses = [];
    for (const p of projects) {
      const res = await request(server.base, 'POST', `/v1/projects/${p}/jobs`, {
        body: { jobId: `j_${statuses.length}`, trainingInput: trainingInput() },
      });
      statuses.push(res.status);
      assert.ok(res.status < 500, `${p.slice(0, 60)}: ${res.status} ${res.text.slice(0, 300)}`);
      // A job id of the same kind in the path.
      const got = await request(server.base, 'GET', `/v1/projects/demo/jobs/x${forged}%1B%5B2J`);
      assert.ok(got.status < 500, got.text);
    }
    // Whatever the API answered (400: ids are checked), the log saw them, as
    // sent: the path is logged percent-encoded, as the client wrote it, so
    // that no decoded byte of it reaches the log.
    await waitFor(() => (server.stderr().match(/forged%20line/g) ?? []).length >= 2, 10_000,
      'the hostile ids reach the log');
    await server.stop();

    const err = server.stderr();
    assert.deepEqual(badLines(err), [], `statuses ${statuses}: every line of stderr is a log line`);
    assert.ok(!err.includes('\x1b'), 'no ESC reaches stderr');
    assert.ok(!err.includes('\x9b') && !err.includes('\u2028') && !err.includes('\u202e'),
      'no C1 control, line separator or bidi override reaches stderr');
    assert.ok(!err.includes('\r'), 'no carriage return reaches stderr');
    assert.ok(!err.includes('\ufffd'), 'no invalid UTF-8 reaches stderr');
    assert.match(err, /%0A2026-11-22T10:00:00\.000Z%20ERROR%20forged%20line/, 'the newline stays encoded');
    assert.match(err, /%1B%5B2J/, 'ESC stays encoded');
    for (const line of err.split('\n')) assert.ok(line.length < 6000, `a line of ${line.length} bytes`);
  });

  it('a database outage under load writes a bounded number of lines, with suppressed counts', async () => {
    const pg = await startPostgres();
    cleanups.push(() => pg.cleanup());
    const server = await startServer({ pg });
    cleanups.push(() => server.kill());

    // 8 clients creating and getting jobs as fast as the server answers.
    let running = true;
    let requests = 0;
    const loops = Array.from({ length: 8 }, async (_, k) => {
      for (let i = 0; running; i++) {
        try {
          const path = i % 2 ? `/v1/projects/flood/jobs/c${k}_${i - 1}` : '/v1/projects/flood/jobs';
          await request(server.base, i % 2 ? 'GET' : 'POST', path, {
            body: i % 2 ? undefined : { jobId: `c${k}_${i}`, trainingInput: trainingInput() },
            timeoutMs: 10_000,
          });
        } catch { /* counted all the same */ }
        requests++;
      }
    });
    await waitFor(() => requests > 50, 10_000, 'load started');

    pg.stop('immediate');
    const downFrom = server.stderr().length;
    const requestsAtStop = requests;
    // Four seconds of outage: long enough for every failing site to speak
    // again after its burst, with the count of what it held back; and more
    // than 100 requests in it, however slow a loaded machine makes them (up
    // to 10 s: after their bursts the sites write about two lines a second,
    // well within the bound below).
    const t0 = Date.now();
    await waitFor(() => Date.now() - t0 >= 4000 && requests - requestsAtStop > 100, 10_000, 'outage')
      .catch(() => { /* the assertion below says how many went */ });
    const outage = server.stderr().slice(downFrom);
    const outageRequests = requests - requestsAtStop;
    const outageSeconds = (Date.now() - t0) / 1000;
    pg.start();
    await waitFor(async () => (await request(server.base, 'GET', '/readyz')).status === 200, 30_000,
      '/readyz after the restart');
    running = false;
    await Promise.all(loops);
    await server.stop();

    const lines = outage.split('\n').slice(0, -1);
    const warnOrError = lines.filter((l) => / (WARN |ERROR) /.test(l));
    const sites = new Set(warnOrError.map((l) => l.replace(LOG_LINE, '').replace(/\d+/g, 'N')
      .replace(/ \(N similar lines? suppressed\)$/, '')));
    if (process.env.LOG_TEST_DUMP) console.log(lines.join("\n"));
    console.log(`outage: ${outageRequests} requests in ${outageSeconds.toFixed(1)} s wrote ` +
      `${lines.length} lines (${warnOrError.length} WARN/ERROR) from ${sites.size} kinds of line`);
    assert.ok(outageRequests > 100, `the load went on during the outage (${outageRequests} requests)`);
    // libpq prints PostgreSQL's notices itself on the connections that set no
    // notice processor (store_pipe.c and job_cache.c today): those lines come
    // from the database, not from a client, and are the only others allowed.
    assert.deepEqual(badLines(outage).filter((l) => !/^(WARNING|NOTICE|FATAL):  [a-z]/.test(l)), []);
    // Bounded: each call site its burst of 10 and about one a second, not one per request.
    assert.ok(warnOrError.length <= 60, `${warnOrError.length} WARN/ERROR lines in the outage:\n` +
      `${warnOrError.slice(0, 40).join('\n')}`);
    const counts = [...outage.matchAll(/\((\d+) similar lines? suppressed/g)].map((m) => Number(m[1]));
    assert.ok(counts.length > 0, `suppressed counts reported:\n${warnOrError.slice(0, 40).join('\n')}`);
    assert.ok(counts.reduce((a, b) => a + b, 0) > warnOrError.length,
      'more lines were suppressed than written');
  });
});
