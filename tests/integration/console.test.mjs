// The web console (console/, docs/console.md) in a real browser: headless
// chromium on a server in tokens mode with a real agent. Every check waits
// for a condition in the page with a deadline, never for a fixed time; the
// times asserted (a page of the 10,000 jobs, a log of 1,000 lines, each
// under a second) are measured in the page with performance.now() by the
// console itself (window.trainplaneConsole.timings). Screenshots of each
// page go to build/console-screenshots/.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { makeTempDir, request, startPostgres, startServer, waitFor } from './harness.mjs';
import { startAgent, stopAll } from './agents.mjs';
import { assertAccessible, consolePage, launchBrowser, shot, timedRoute, until } from './browser.mjs';

const T4 = 'NVIDIA_TESLA_T4';
const AGENT_TOKEN = crypto.randomBytes(32).toString('hex');
const ADMIN = `admin-${crypto.randomBytes(16).toString('hex')}`;
const VIEWER = `viewer-${crypto.randomBytes(16).toString('hex')}`;
const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');
const dir = makeTempDir('tp-console-');
const auth = (t) => ({ Authorization: `Bearer ${t}` });

let pg, server, agent, browser, page;
const api = (method, p, body, token = ADMIN) => request(server.base, method, p, { body, headers: auth(token) });

before(async () => {
  const tokens = path.join(dir, 'tokens.yaml');
  fs.writeFileSync(tokens, `tokens:
  - name: ops
    sha256: ${sha(ADMIN)}
    role: admin
    projects: ["*"]
  - name: watcher
    sha256: ${sha(VIEWER)}
    role: viewer
    projects: [demo]
`);
  const quotas = path.join(dir, 'quotas.yaml');
  fs.writeFileSync(quotas, `projects:\n  demo:\n    limits: {${T4}: 8, cpus: 64}\n`);
  pg = await startPostgres();
  [server, browser] = await Promise.all([
    startServer({ pg, env: {
      TRAINPLANE_AUTH_MODE: 'tokens', TRAINPLANE_TOKENS_FILE: tokens, TRAINPLANE_AGENT_TOKEN: AGENT_TOKEN,
      TRAINPLANE_SCHEDULER_TICK_MS: '100', TRAINPLANE_QUOTAS_FILE: quotas,
    } }),
    launchBrowser(),
  ]);
  agent = await startAgent(server, { node: 'console-gpu', gpuType: T4, gpuCount: 4, dir, token: AGENT_TOKEN, ready: false });
  await waitFor(async () => (await api('GET', '/trainplane/v1/nodes')).json?.nodes?.[0]?.state === 'READY', 20_000,
    'the node READY');
  page = await consolePage(browser);
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    await stopAll({ agents: [agent], server, pg });
  }
});

/** An ml job of a master and one worker, one T4 each, running command. */
const mlJob = (jobId, command, extra = {}) => ({
  jobId,
  trainingInput: {
    scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4', workerType: 'n1-standard-4',
    workerCount: '1',
    masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', command], acceleratorConfig: { count: '1', type: T4 } },
    workerConfig: { acceleratorConfig: { count: '1', type: T4 } },
    ...extra,
  },
});

async function create(project, body) {
  const res = await api('POST', `/v1/projects/${project}/jobs`, body);
  assert.equal(res.status, 200, res.text);
  return res.json;
}

async function waitState(project, id, states, ms = 30_000) {
  let got;
  await waitFor(async () => {
    got = (await api('GET', `/v1/projects/${project}/jobs/${id}`)).json;
    return [].concat(states).includes(got?.state);
  }, ms, `${id} in ${states}`).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(got)}\n${agent.stderr().slice(-2000)}`); });
}

/** A gate file: a replica's command waits for it; open() lets it end. */
function gate(name) {
  const file = path.join(dir, `gate-${name}`);
  return { wait: `while [ ! -e ${file} ]; do sleep 0.1; done`, open: () => fs.writeFileSync(file, '') };
}

const jobHash = (project, id) => `#/jobs/ml/projects/${project}/jobs/${id}`;

/**
 * Presses Tab until the focused element matches the CSS selector sel, at
 * most max times; returns each focused element on the way ("#id",
 * "a:its text" or "tag.class"); fails with that path.
 */
async function tabUntil(p, sel, max, what) {
  const path = [];
  for (let i = 0; i < max; i++) {
    await p.keyboard.press('Tab');
    const [done, at] = await p.evaluate((selector) => {
      const el = document.activeElement;
      const name = el.id ? `#${el.id}` : el.tagName === 'A' ? `a:${el.textContent.trim()}`
        : `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(' ')[0]}` : ''}`;
      return [el.matches(selector), name];
    }, sel);
    path.push(at);
    if (done) return path;
  }
  throw new Error(`${max} Tabs did not reach ${what}: ${path.join(' → ')}`);
}

/** axe-core's WCAG 2 A/AA check of the page as the test left it; its time adds up for a diagnostic. */
const axeRuns = [];
async function accessible(p, what) {
  const got = await assertAccessible(p, what);
  axeRuns.push({ what, ms: got.ms });
}

describe('the web console', () => {
  it('serves its compiled-in files only, GET and HEAD, with type, ETag, no-cache and a same-origin policy', async () => {
    const get = (p, headers = {}) => fetch(server.base + p, { headers, redirect: 'manual' });
    const index = await get('/console/');
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.match(index.headers.get('content-security-policy'), /default-src 'self'/);
    const etag = index.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{16}"$/);
    const html = await index.text();
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'nothing from elsewhere');
    assert.equal((await get('/console')).status, 200, '/console too');
    assert.equal((await get('/console/', { 'If-None-Match': etag })).status, 304);
    const js = await get('/console/app.js');
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal((await get('/console/style.css')).headers.get('content-type'), 'text/css; charset=utf-8');
    const head = await fetch(`${server.base}/console/app.js`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), js.headers.get('content-length'));
    assert.equal(await head.text(), '');
    for (const p of ['/console/nope.js', '/console/..%2F..%2Fetc%2Fpasswd', '/console/%2E%2E%2Fopenapi.yaml', '/console/.htaccess']) {
      const r = await get(p);
      assert.equal(r.status, 404, p);
      assert.equal((await r.json()).error.status, 'NOT_FOUND');
    }
    assert.equal((await get('/console/../openapi.yaml')).status, 404, 'a dot segment (fetch resolves it) names no file');
    const post = await request(server.base, 'POST', '/console/app.js', { body: {} });
    assert.equal(post.status, 405);
    assert.equal(post.json.error.status, 'UNIMPLEMENTED');
  });

  it('asks for a token; a job submitted through the API appears and reaches SUCCEEDED without a reload', async () => {
    await page.goto(`${server.base}/console/`);
    await until(page, () => document.getElementById('token-dialog').open, null, 10_000, 'the token dialog');
    await shot(page, 'sign-in');
    await accessible(page, 'the sign-in dialog');
    await page.type('#token-input', ADMIN);
    await page.keyboard.press('Enter');
    await until(page, () => /ops \(admin\)/.test(document.getElementById('who').textContent), null, 10_000, 'signed in');
    await until(page, () => document.querySelector('#jobs-summary')?.textContent.startsWith('0 jobs')
      || document.querySelector('#jobs-table tbody td'), null, 10_000, 'the jobs page of demo');
    assert.match(await page.evaluate(() => window.location.hash), /^#\/jobs\/ml\/projects\/demo$/);

    const g = gate('first');
    await create('demo', mlJob('console_first', `echo hello-console; echo GPUs=$CUDA_VISIBLE_DEVICES; ${g.wait}`));
    const row = 'tr[data-name="projects/demo/jobs/console_first"]';
    await until(page, (sel) => document.querySelector(`#jobs-table ${sel}`), row, 10_000, 'the new job on the jobs page');
    await until(page, (sel) => document.querySelector(`#jobs-table ${sel}`)?.dataset.state === 'RUNNING', row, 20_000, 'RUNNING');
    await shot(page, 'jobs');
    await accessible(page, 'the jobs page');
    g.open();
    await until(page, (sel) => document.querySelector(`#jobs-table ${sel}`)?.dataset.state === 'SUCCEEDED', row, 20_000, 'SUCCEEDED');
    assert.deepEqual(page.problems, []);
  });

  it('a job\'s page shows its log lines, states and replicas with node and GPU indices', async () => {
    await page.click('#jobs-table tr[data-name="projects/demo/jobs/console_first"] a');
    await until(page, () => /hello-console/.test(document.getElementById('log')?.textContent ?? ''), null, 10_000, 'the log line');
    await until(page, () => document.querySelectorAll('#replicas-table tbody tr').length === 2, null, 10_000, 'two replicas');
    const replicas = await page.$$eval('#replicas-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    for (const r of replicas) {
      assert.equal(r[3], 'console-gpu', `node of ${r[0]}`);
      assert.match(r[4], /^[0-3]$/, `one GPU index for ${r[0]}`);
      assert.equal(r[5], '1', 'attempt');
      // The worker may still be in its gate's 0.1 s sleep when the master's
      // success ends the job: then it is stopped (SIGTERM, 143).
      assert.ok(r[6] === '0' || (/^worker/.test(r[0]) && r[6] === '143'), `exit code of ${r[0]}: ${r[6]}`);
    }
    assert.notEqual(replicas[0][4], replicas[1][4], 'two different GPUs');
    const gpusLine = await page.$eval('#log', (el) => el.textContent.match(/GPUs=(\d)/)?.[1]);
    assert.ok(replicas.some((r) => r[4] === gpusLine), `the log's CUDA_VISIBLE_DEVICES (${gpusLine}) is a replica's GPU`);
    const states = await page.$$eval('#history tbody .badge', (bs) => bs.map((b) => b.textContent));
    assert.deepEqual(states, ['QUEUED', 'PREPARING', 'RUNNING', 'SUCCEEDED']);
    assert.equal(await page.$eval('#cancel', (b) => b.hidden), true, 'no cancel on a finished job');
    await shot(page, 'job');
    await accessible(page, 'a job\'s page with its log');
  });

  const cancelGate = gate('cancel');
  it('works by keyboard alone: Tab reaches the filters and a job, Enter opens it; its Cancel asks, Escape keeps it', async (t) => {
    await create('demo', mlJob('console_cancel', cancelGate.wait));
    await waitState('demo', 'console_cancel', 'RUNNING');
    await page.evaluate(() => { window.location.hash = '#/jobs/ml/projects/demo'; });
    const link = '#jobs-table tr[data-name="projects/demo/jobs/console_cancel"] a';
    await until(page, (sel) => document.querySelector(sel), link, 10_000, 'console_cancel on the jobs page');
    // From the top of the page: the skip link first, shown when focused.
    await page.focus('#skip');
    assert.ok(await page.$eval('#skip', (a) => a.getBoundingClientRect().left >= 0), 'the skip link shows when focused');
    const path = await tabUntil(page, link, 40, 'the job\'s link');
    for (const id of ['#f-state', '#f-q']) assert.ok(path.includes(id), `Tab passes ${id}: ${path.join(' → ')}`);
    assert.ok(path.indexOf('#f-state') < path.indexOf('#f-q'), `the state before the search: ${path.join(' → ')}`);
    t.diagnostic(`Tab from the top: ${path.join(' → ')}`);
    await page.keyboard.press('Enter');
    await until(page, (h) => window.location.hash === h && document.querySelector('main h1')?.textContent === 'console_cancel',
      jobHash('demo', 'console_cancel'), 10_000, 'Enter on the link opens the job');
    assert.match(await page.title(), /^console_cancel – trainplane console$/, 'the page\'s title names the job');
    await until(page, () => !document.getElementById('cancel')?.hidden, null, 10_000, 'the cancel button');
    // The skip link on a job's page: focus into the page's content, the address kept.
    await page.focus('#skip');
    await page.keyboard.press('Enter');
    await until(page, () => document.getElementById('main').contains(document.activeElement), null, 5000, 'focus in the content');
    assert.equal(await page.evaluate(() => window.location.hash), jobHash('demo', 'console_cancel'), 'the skip link keeps the address');
    await tabUntil(page, '#cancel', 10, 'the Cancel button');
    await page.keyboard.press('Enter');
    await until(page, () => document.getElementById('confirm-dialog').open && document.activeElement.id === 'confirm-no', null, 5000,
      'the confirmation, its safe choice focused');
    await page.keyboard.press('Escape');
    await until(page, () => !document.getElementById('confirm-dialog').open && document.activeElement.id === 'cancel', null, 5000,
      'the confirmation closed, focus back on Cancel');
    await shot(page, 'keyboard-cancel-focused');
    assert.equal((await api('GET', '/v1/projects/demo/jobs/console_cancel')).json.state, 'RUNNING', 'Escape cancels nothing');
    assert.deepEqual(page.problems, []);
  });

  it('cancels a running job after a confirmation', async () => {
    const g = cancelGate;
    await page.evaluate((h) => { window.location.hash = h; }, jobHash('demo', 'console_cancel'));
    await until(page, () => !document.getElementById('cancel')?.hidden, null, 10_000, 'the cancel button');
    await page.click('#cancel');
    await until(page, () => document.getElementById('confirm-dialog').open, null, 5000, 'the confirmation');
    await shot(page, 'cancel-confirm');
    await accessible(page, 'the cancel confirmation');
    // "Keep it" first: nothing happens.
    await page.click('#confirm-no');
    assert.equal((await api('GET', '/v1/projects/demo/jobs/console_cancel')).json.state, 'RUNNING');
    await page.click('#cancel');
    await until(page, () => document.getElementById('confirm-dialog').open, null, 5000, 'the confirmation again');
    await page.click('#confirm-yes');
    await until(page, () => /CANCELLED/.test(document.getElementById('job-state').textContent), null, 20_000, 'CANCELLED');
    assert.equal((await api('GET', '/v1/projects/demo/jobs/console_cancel')).json.state, 'CANCELLED');
    await until(page, () => document.activeElement === document.querySelector('main h1'), null, 5000,
      'focus on the heading once Cancel is gone');
    g.open();
  });

  it('drains and undrains a node; the nodes page shows each GPU with its replica', async () => {
    const g = gate('nodes');
    await create('demo', mlJob('console_nodes', g.wait));
    await waitState('demo', 'console_nodes', 'RUNNING');
    await page.evaluate(() => { window.location.hash = '#/nodes'; });
    const row = '#nodes-table tr[data-node="console-gpu"]';
    await until(page, (sel) => document.querySelectorAll(`${sel} li.busy`).length === 2, row, 10_000, 'two busy GPUs');
    assert.match(await page.$eval(`${row} li.busy`, (li) => li.textContent), /console_nodes (master|worker)-replica-0/);
    await page.click(`${row} button`);
    await until(page, (sel) => document.querySelector(sel)?.dataset.state === 'DRAINING', row, 10_000, 'DRAINING');
    assert.equal((await api('GET', '/trainplane/v1/nodes')).json.nodes[0].state, 'DRAINING');
    await shot(page, 'nodes-draining');
    await accessible(page, 'the nodes page');
    await page.click(`${row} button`);
    await until(page, (sel) => document.querySelector(sel)?.dataset.state === 'READY', row, 10_000, 'READY again');
    g.open();
    await waitState('demo', 'console_nodes', 'SUCCEEDED');
  });

  it('shows quotas and the queue with each queued job\'s reason', async () => {
    // No node in europe-west4: the job waits, with a reason.
    await create('demo', { jobId: 'console_waits', trainingInput: { scaleTier: 'BASIC', region: 'europe-west4', masterConfig: { imageUri: 'x' } } });
    await page.evaluate(() => { window.location.hash = '#/quotas/projects/demo'; });
    await until(page, () => document.querySelector('#queue-table tr[data-name="projects/demo/jobs/console_waits"]'), null, 10_000, 'the queued job');
    await until(page, () => /NVIDIA_TESLA_T4\s*\d+\s*8/.test(document.getElementById('quotas').innerText), null, 10_000, 'the T4 limit and use');
    await shot(page, 'quotas');
    await accessible(page, 'the quotas page');
    assert.equal((await api('POST', '/v1/projects/demo/jobs/console_waits:cancel', {})).status, 200);
  });

  it('a viewer sees no cancel or drain button, and the API refuses the viewer\'s cancel', async () => {
    const g = gate('viewer');
    await create('demo', mlJob('console_viewer', g.wait));
    await waitState('demo', 'console_viewer', 'RUNNING');
    const ctx = await browser.createBrowserContext();
    try {
      const vp = await consolePage(ctx);
      await vp.evaluateOnNewDocument((t) => sessionStorage.setItem('trainplane.token', t), VIEWER);
      await vp.goto(`${server.base}/console/${jobHash('demo', 'console_viewer')}`);
      await until(vp, () => /watcher \(viewer\)/.test(document.getElementById('who').textContent), null, 10_000, 'the viewer');
      await until(vp, () => /RUNNING/.test(document.getElementById('job-state')?.textContent)
        && document.querySelectorAll('#replicas-table tbody tr').length === 2, null, 10_000, 'the job and its replicas');
      assert.equal(await vp.$eval('#cancel', (b) => b.hidden), true, 'no cancel button for a viewer');
      await shot(vp, 'viewer-job');
      const refused = await api('POST', '/v1/projects/demo/jobs/console_viewer:cancel', {}, VIEWER);
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.json.error.status, 'PERMISSION_DENIED');
      await vp.evaluate(() => { window.location.hash = '#/nodes'; });
      await until(vp, () => /Only admins/.test(document.getElementById('nodes-summary')?.textContent), null, 10_000, 'nodes refused');
      assert.equal(await vp.$$eval('#nodes-table button', (b) => b.length), 0, 'no drain button');
      assert.deepEqual(vp.problems, []);
    } finally {
      await ctx.close();
    }
    g.open();
    await waitState('demo', 'console_viewer', 'SUCCEEDED');
  });

  it('a Vertex custom job: listed by display name, its page shows its log and its replica\'s GPU', async () => {
    const res = await api('POST', '/v1/projects/demo/locations/us-central1/customJobs', { displayName: 'console-vertex',
      jobSpec: { workerPoolSpecs: [{ machineSpec: { machineType: 'n1-standard-4', acceleratorType: T4, acceleratorCount: 1 },
        replicaCount: 1, containerSpec: { imageUri: 'x', command: ['sh', '-c', 'echo vertex-hello'] } }] } });
    assert.equal(res.status, 200, res.text);
    const name = res.json.name;
    await page.evaluate(() => { window.location.hash = '#/jobs/vertex/projects/demo/locations/us-central1/customJobs?q=console-v'; });
    const row = `#jobs-table tr[data-name="${name}"]`;
    await until(page, (sel) => document.querySelector(sel)?.dataset.state === 'JOB_STATE_SUCCEEDED', row, 20_000, 'the Vertex job SUCCEEDED');
    await page.click(`${row} a`);
    await until(page, () => /vertex-hello/.test(document.getElementById('log')?.textContent ?? '')
      && /^workerpool0-0/.test(document.querySelector('#replicas-table tbody tr')?.textContent ?? ''), null, 10_000, 'its log and replica');
    assert.match(await page.$eval('#replicas-table tbody tr td.gpus', (td) => td.textContent), /^[0-3]$/);
    await shot(page, 'vertex-job');
    await accessible(page, 'a Vertex job\'s page');
  });

  it('a tuning job: its trials as a table and a plot of the objective', async () => {
    // score = 10 - (x - 3)^2, through the metric file as cloudml-hypertune writes it.
    const trainer = 'x=0; for a in "$@"; do case "$a" in --x=*) x=${a#--x=};; esac; done; '
      + 's=$((10 - (x - 3) * (x - 3))); '
      + 'printf \'{"global_step": "1", "score": "%s", "trial": "%s"}\\n\' "$s" "$CLOUD_ML_TRIAL_ID" > "$CLOUD_ML_HP_METRIC_FILE"';
    await create('demo', { jobId: 'console_study', trainingInput: {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
      masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', trainer, 'trainer'] },
      hyperparameters: { hyperparameterMetricTag: 'score', goal: 'MAXIMIZE', algorithm: 'GRID_SEARCH', maxTrials: 5,
        maxParallelTrials: 3, params: [{ parameterName: 'x', type: 'INTEGER', minValue: 1, maxValue: 5 }] } } });
    await page.evaluate((h) => { window.location.hash = h; }, jobHash('demo', 'console_study'));
    await until(page, () => document.querySelectorAll('#trials-table tbody tr').length === 5
      && document.querySelectorAll('svg.plot circle').length === 5, null, 60_000, 'five trials, plotted');
    const trials = await page.$$eval('#trials-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    assert.deepEqual(trials.map((r) => [r[0], r[2], r[3]]), [['1', '1', '6'], ['2', '2', '9'], ['3', '3', '10'], ['4', '4', '9'], ['5', '5', '6']]);
    assert.match(await page.$eval('svg.plot desc', (d) => d.textContent), /the best is trial 3 with 10/);
    await until(page, () => document.querySelectorAll('#replicas-table tbody tr').length === 5, null, 10_000, 'a replica a trial');
    await shot(page, 'tuning-job');
    await accessible(page, 'a tuning job\'s page');
  });

  it('a page of 10,000 jobs shows in under a second, and pages on', async (t) => {
    // One job made through the API, copied 9,999 times in SQL (as a big
    // project's history would be), then all cancelled: the scheduler has
    // nothing of them to place.
    await create('big', { jobId: 'big_0', trainingInput: { scaleTier: 'BASIC', region: 'europe-west4', masterConfig: { imageUri: 'x' } }, labels: { team: 'a' } });
    const cols = pg.psql("SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) FROM information_schema.columns "
      + "WHERE table_name = 'jobs' AND column_name NOT IN ('id', 'job_id') AND is_generated = 'NEVER'");
    pg.psql(`INSERT INTO jobs (job_id, ${cols}) SELECT 'big_' || g, ${cols} FROM jobs, generate_series(1, 9999) g `
      + "WHERE project = 'big' AND job_id = 'big_0'");
    pg.psql("UPDATE jobs SET state = 'CANCELLED' WHERE project = 'big'");
    const ms = await timedRoute(page, '#/jobs/ml/projects/big?size=100', 'jobs');
    assert.equal(await page.$$eval('#jobs-table tbody tr[data-name]', (r) => r.length), 100);
    assert.equal(await page.$eval('#jobs-table tbody tr', (r) => r.dataset.name), 'projects/big/jobs/big_9999', 'newest first');
    assert.ok(ms < 1000, `the first page of 10,000 jobs showed in ${ms} ms`);
    await shot(page, 'jobs-10000');
    // The next page, and a search by id prefix and label.
    await page.evaluate(() => { window.trainplaneConsole.timings.length = 0; });
    await page.click('.pager button:last-child');
    await until(page, () => document.querySelector('#jobs-table tbody tr')?.dataset.name === 'projects/big/jobs/big_9899', null, 10_000, 'page 2');
    const next = await page.evaluate(() => window.trainplaneConsole.timings.find((t) => t.name === 'jobs').ms);
    assert.ok(next < 1000, `page 2 showed in ${next} ms`);
    const found = await timedRoute(page, '#/jobs/ml/projects/big?q=big_777&label=team%3Da', 'jobs');
    const names = await page.$$eval('#jobs-table tbody tr[data-name]', (r) => r.map((x) => x.dataset.name.split('/').pop()));
    assert.deepEqual(names.sort(), ['big_777', 'big_7770', 'big_7771', 'big_7772', 'big_7773', 'big_7774', 'big_7775', 'big_7776', 'big_7777', 'big_7778', 'big_7779']);
    assert.ok(found < 1000, `the search showed in ${found} ms`);
    t.diagnostic(`10,000 jobs: page 1 in ${ms.toFixed(0)} ms, page 2 in ${next.toFixed(0)} ms, a search in ${found.toFixed(0)} ms`);
  });

  it('a job\'s 1,000 log lines show in under a second', async (t) => {
    await create('demo', { jobId: 'console_log', trainingInput: { scaleTier: 'BASIC', region: 'us-central1',
      masterConfig: { imageUri: 'x', containerCommand: ['sh', '-c', 'seq 1 1000 | sed s/^/log-line-/'] } } });
    await waitState('demo', 'console_log', 'SUCCEEDED');
    await waitFor(async () => {
      const res = await api('POST', '/v2/entries:list', { resourceNames: ['projects/demo'], pageSize: 1000,
        filter: 'resource.labels.job_id="console_log" AND textPayload:"log-line-*"' });
      return (res.json.entries ?? []).length === 1000;
    }, 20_000, 'the 1,000 lines in the log');
    const ms = await timedRoute(page, jobHash('demo', 'console_log'), 'job');
    const lines = await page.$eval('#log', (el) => [...el.querySelectorAll('.line .msg')].filter((m) => /^log-line-/.test(m.textContent)).length);
    assert.equal(lines, 1000, 'the 1,000 lines shown');
    assert.ok(ms < 1000, `the job page with its 1,000 log lines showed in ${ms} ms`);
    t.diagnostic(`the job page with its 1,000 log lines (and the service's) in ${ms.toFixed(0)} ms`);
    assert.match(await page.$eval('#log', (el) => el.lastElementChild.previousElementSibling ? el.textContent : ''), /log-line-1000/);
    await shot(page, 'job-log-1000');
  });

  it('folds on a narrow window', async (t) => {
    await page.setViewport({ width: 390, height: 800 });
    await page.evaluate(() => { window.location.hash = '#/jobs/ml/projects/demo'; });
    await until(page, () => document.querySelector('#jobs-table tbody tr[data-name]'), null, 10_000, 'the jobs');
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `the page is ${wide} px wide in a 390 px window`);
    await shot(page, 'jobs-narrow');
    await accessible(page, 'the jobs page in a narrow window');
    assert.deepEqual(page.problems, []);
    t.diagnostic(`axe-core (WCAG 2 A/AA) on ${axeRuns.length} pages and dialogs, no violation, in `
      + `${axeRuns.reduce((a, r) => a + r.ms, 0).toFixed(0)} ms in all (the slowest: ${Math.max(...axeRuns.map((r) => r.ms)).toFixed(0)} ms)`);
  });
});
