// deploy/grafana and deploy/prometheus are checked against the server they
// watch:
// - `promtool check rules` accepts the alerting rules, and `promtool test
//   rules` runs their unit tests (each alert fires in one case and stays
//   quiet in another); every alert has for:, a severity, a summary and a
//   description, and a section in docs/observability.md;
// - the dashboard is a Grafana dashboard of core panels only, every panel on
//   the ${DS_PROMETHEUS} data source variable, unique ids, each target a
//   PromQL expression that promtool parses (as a recording rule);
// - every metric name the dashboard, the rules and the rules' tests use is
//   one a real server exports: its scrape's # TYPE lines (a histogram's
//   _bucket, _sum and _count), every family written even before it has a
//   sample; rate() and increase() are only taken of counters and histograms.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

import { REPO_ROOT, makeTempDir, removeTempDir, request, startPostgres, startServer } from './harness.mjs';

const PROMTOOL = spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : null;
const NO_PROMTOOL = !PROMTOOL && 'promtool is not installed (Debian package prometheus)';
const RULES_DIR = path.join(REPO_ROOT, 'deploy/prometheus');
const RULES = path.join(RULES_DIR, 'trainplane-rules.yaml');
const RULE_TESTS = path.join(RULES_DIR, 'trainplane-rules.test.yaml');
const DASHBOARD = path.join(REPO_ROOT, 'deploy/grafana/trainplane.json');
// Grafana's own panel types: the dashboard needs no plugin.
const CORE_PANELS = new Set(['timeseries', 'stat', 'gauge', 'bargauge', 'table', 'text', 'row', 'heatmap',
  'piechart', 'state-timeline', 'status-history', 'barchart']);

const dashboard = () => JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));
const rules = () => YAML.parse(fs.readFileSync(RULES, 'utf8')).groups.flatMap((g) => g.rules);

/** Every panel, those inside collapsed rows included. */
function allPanels(d) {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** A dashboard expression with Grafana's variables replaced, for promtool. */
function withoutVariables(expr) {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '1m').replaceAll('$__range', '1h')
    .replace(/\$\{?job\}?/g, 'trainplane');
}

/** The trainplane_ metric names an expression (or series selector) uses; strings left out. */
function metricNames(expr) {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  return [...bare.matchAll(/\btrainplane_[a-zA-Z0-9_:]*/g)].map((m) => m[0]);
}

/** Names taken rate() or increase() of. */
function ratedNames(expr) {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...bare.matchAll(/\b(?:rate|irate|increase)\(\s*(trainplane_[a-zA-Z0-9_]+)/g)].map((m) => m[1]);
}

function promtool(args, opts = {}) {
  const r = spawnSync(PROMTOOL, args, { encoding: 'utf8', ...opts });
  assert.equal(r.error, undefined, `promtool: ${r.error}`);
  assert.equal(r.status, 0, `promtool ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

describe('deploy/prometheus/trainplane-rules.yaml', () => {
  it('promtool checks the rules and passes their unit tests', { skip: NO_PROMTOOL }, () => {
    assert.match(promtool(['check', 'rules', RULES]), /SUCCESS: \d+ rules found/);
    // (from the rules' folder: the tests name their rule file relative to it)
    assert.match(promtool(['test', 'rules', path.basename(RULE_TESTS)], { cwd: RULES_DIR }), /SUCCESS/);
  });

  it('yamllint passes on the rules and their tests', { skip: spawnSync('yamllint', ['--version']).status !== 0 && 'yamllint is not installed' }, () => {
    // deploy.test.mjs's settings for the manifests
    const config = '{extends: default, rules: {line-length: {max: 120}, document-start: disable, truthy: {check-keys: false}}}';
    const r = spawnSync('yamllint', ['-f', 'parsable', '-s', '-d', config, RULES, RULE_TESTS], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it('every alert has for:, a severity, a summary and a description, a firing test and a quiet one, and its docs', () => {
    const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs/observability.md'), 'utf8');
    const tests = YAML.parse(fs.readFileSync(RULE_TESTS, 'utf8')).tests.flatMap((t) => t.alert_rule_test ?? []);
    const list = rules();
    assert.ok(list.length >= 8, `${list.length} rules`);
    for (const r of list) {
      assert.ok(r.alert, `only alerting rules: ${JSON.stringify(r)}`);
      assert.match(r.for ?? '', /^\d+[smh]$/, `${r.alert}: for:`);
      assert.ok(['critical', 'warning', 'info'].includes(r.labels?.severity), `${r.alert}: severity ${r.labels?.severity}`);
      assert.ok(r.annotations?.summary && r.annotations?.description, `${r.alert}: summary and description`);
      const mine = tests.filter((t) => t.alertname === r.alert);
      assert.ok(mine.some((t) => t.exp_alerts?.length), `${r.alert}: no test where it fires`);
      assert.ok(mine.some((t) => !t.exp_alerts?.length), `${r.alert}: no test where it stays quiet`);
      assert.match(doc, new RegExp(`^### \`${r.alert}\``, 'm'), `${r.alert}: no section in docs/observability.md`);
    }
  });
});

describe('deploy/grafana/trainplane.json', () => {
  it('is a dashboard of core panels on the data source variable, unique ids, each target an expression', () => {
    const d = dashboard();
    assert.ok(d.schemaVersion >= 36, `schemaVersion ${d.schemaVersion}`);
    assert.ok(d.uid && d.title, 'uid and title');
    const vars = d.templating?.list ?? [];
    const ds = vars.find((v) => v.name === 'DS_PROMETHEUS');
    assert.deepEqual([ds?.type, ds?.query], ['datasource', 'prometheus'], 'a Prometheus data source variable');
    for (const v of vars.filter((x) => x.type === 'query')) {
      assert.equal(v.datasource?.uid, '${DS_PROMETHEUS}', `variable ${v.name}: data source`);
    }
    assert.deepEqual(d.__requires?.filter((r) => r.type === 'panel' && !CORE_PANELS.has(r.id)) ?? [], []);
    const panels = allPanels(d);
    assert.ok(panels.length >= 15, `${panels.length} panels`);
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `panel ids not unique: ${ids}`);
    const titles = [];
    for (const p of panels) {
      const where = `panel ${p.id} "${p.title}"`;
      assert.ok(CORE_PANELS.has(p.type), `${where}: type ${p.type} needs a plugin`);
      if (p.type === 'row' || p.type === 'text') continue;
      titles.push(p.title);
      assert.deepEqual(p.datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' }, `${where}: data source`);
      const g = p.gridPos;
      assert.ok(g && g.w > 0 && g.h > 0 && g.x >= 0 && g.x + g.w <= 24, `${where}: gridPos ${JSON.stringify(g)}`);
      assert.ok(p.targets?.length, `${where}: no target`);
      const refs = p.targets.map((t) => t.refId);
      assert.equal(new Set(refs).size, refs.length, `${where}: refIds`);
      for (const t of p.targets) {
        assert.ok(typeof t.expr === 'string' && t.expr.trim(), `${where}: target ${t.refId} without expr`);
        assert.equal(t.datasource?.uid ?? '${DS_PROMETHEUS}', '${DS_PROMETHEUS}', `${where}: target ${t.refId}'s data source`);
        assert.ok(metricNames(t.expr).length, `${where}: ${t.expr} reads no trainplane metric`);
        assert.match(t.expr, /job="\$job"/, `${where}: ${t.expr} not filtered by $job`);
      }
    }
    assert.equal(new Set(titles).size, titles.length, 'titles unique');
  });

  it('promtool parses every expression (as a recording rule)', { skip: NO_PROMTOOL }, (t) => {
    const dir = makeTempDir('tp-obs-');
    t.after(() => removeTempDir(dir));
    const recorded = allPanels(dashboard()).flatMap((p) => (p.targets ?? [])
      .map((x) => ({ record: `dashboard:panel_${p.id}_${x.refId}`, expr: withoutVariables(x.expr) })));
    const file = path.join(dir, 'dashboard-rules.yaml');
    fs.writeFileSync(file, YAML.stringify({ groups: [{ name: 'dashboard', rules: recorded }] }));
    assert.match(promtool(['check', 'rules', file]), new RegExp(`SUCCESS: ${recorded.length} rules found`));
  });
});

describe('metric names against a real server', () => {
  let pg;
  let exported; // Map name -> type, a histogram's series names each mapped to 'histogram'

  before(async () => {
    pg = await startPostgres({ dbname: 'postgres' });
    // A Slurm backend (one nobody answers at) makes its figures show too.
    const tmp = makeTempDir('tp-obs-slurm-');
    fs.writeFileSync(path.join(tmp, 'token'), 'none\n', { mode: 0o600 });
    fs.writeFileSync(path.join(tmp, 'slurm.yaml'), `backends:\n  lab:\n    regions: [us-west1]\n`
      + `    url: http://127.0.0.1:9\n    user: tpslurm\n    token_file: ${tmp}/token\n`
      + '    server: http://127.0.0.1:8080/\n');
    const s = await startServer({ pg: pg.newDatabase('obs'),
      env: { TRAINPLANE_SLURM_FILE: path.join(tmp, 'slurm.yaml') } });
    try {
      const res = await request(s.base, 'GET', '/metrics');
      assert.equal(res.status, 200, res.text);
      exported = new Map();
      for (const [, name, type] of res.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        exported.set(name, type);
        if (type === 'histogram') for (const sfx of ['_bucket', '_sum', '_count']) exported.set(name + sfx, 'histogram');
      }
      assert.ok(exported.get('trainplane_jobs') === 'gauge' && exported.size > 40, res.text);
    } finally {
      removeTempDir(tmp);
      await s.stop();
    }
  });
  after(async () => {
    if (pg) await pg.cleanup();
  });

  /** Every place an expression is used: [where, expr]. */
  function uses() {
    const out = [];
    for (const p of allPanels(dashboard())) {
      for (const x of p.targets ?? []) out.push([`dashboard panel ${p.id} "${p.title}" ${x.refId}`, x.expr]);
    }
    for (const r of rules()) out.push([`alert ${r.alert}`, r.expr]);
    for (const group of YAML.parse(fs.readFileSync(RULE_TESTS, 'utf8')).tests) {
      for (const s of group.input_series ?? []) out.push([`rule test "${group.name}" series`, s.series]);
    }
    return out;
  }

  it('the dashboard, the rules and their tests use only exported names', () => {
    const unknown = [];
    const used = new Set();
    for (const [where, expr] of uses()) {
      for (const name of metricNames(expr)) {
        used.add(name);
        if (!exported.has(name)) unknown.push(`${where}: ${name}`);
      }
    }
    assert.deepEqual(unknown, [], 'names the server does not export');
    // What the dashboard was made to show is there.
    for (const name of ['trainplane_jobs', 'trainplane_queued_jobs', 'trainplane_queue_wait_seconds_bucket',
      'trainplane_submit_to_running_seconds_bucket', 'trainplane_scheduler_pass_duration_seconds_bucket',
      'trainplane_nodes', 'trainplane_accelerators_free', 'trainplane_http_requests_total', 'trainplane_project_usage',
      'trainplane_nodes_lost_total', 'trainplane_scheduler_leader', 'trainplane_scheduler_leader_acquired_total',
      'trainplane_database_up']) {
      assert.ok(used.has(name), `${name} is used nowhere`);
    }
  });

  it('rate() and increase() are taken of counters and histograms only', () => {
    const wrong = [];
    for (const [where, expr] of uses()) {
      for (const name of ratedNames(expr)) {
        if (!['counter', 'histogram'].includes(exported.get(name))) wrong.push(`${where}: ${name} (${exported.get(name)})`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
