// deploy/: the systemd units, the example configurations, the compose file
// and the Kubernetes manifests are checked against the programs they run:
// every key and TRAINPLANE_* variable they set is one the server or agent
// reads (the server's from `trainplane-server --help`, the agent's from
// agent/agent_config.c), every probe is a route the server serves
// (`--routes`), every Secret/ConfigMap key referenced exists, selectors
// match labels, and `systemd-analyze verify` accepts the units with the
// built binaries. Images are not built or pulled (no registry here).

import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';

import { REPO_ROOT, SERVER_BIN, runServerSync, makeTempDir, removeTempDir } from './harness.mjs';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
const AGENT_BIN = process.env.TRAINPLANE_AGENT_BIN;

let serverKeys; // Set of server config keys
let agentKeys; // Set of agent config keys
let getRoutes; // Set of GET paths without parameters (probes)

/** `trainplane-server --help`: "  key   default ..." lines after the header. */
function loadServerKeys() {
  const r = runServerSync(['--help']);
  const out = r.stdout + r.stderr;
  const keys = new Set();
  for (const m of out.matchAll(/^ {2}([a-z_][a-z0-9_]*)\s+default\b/gm)) keys.add(m[1]);
  assert.ok(keys.has('database_url') && keys.has('agent_token') && keys.has('listen'),
    `--help lists no config keys:\n${out}`);
  return keys;
}

/** agent/agent_config.c's key table: K("name", CONFIG_..., ...). */
function loadAgentKeys() {
  const src = fs.readFileSync(path.join(REPO_ROOT, 'agent/agent_config.c'), 'utf8');
  const keys = new Set([...src.matchAll(/\bK\("([a-z_][a-z0-9_]*)",\s*CONFIG_/g)].map((m) => m[1]));
  assert.ok(keys.has('server') && keys.has('token') && keys.has('runtime'),
    'agent_config.c: key table not found');
  return keys;
}

function loadRoutes() {
  const r = runServerSync(['--routes']);
  assert.equal(r.status, 0, `--routes failed: ${r.stderr}`);
  const set = new Set();
  for (const line of r.stdout.split('\n')) {
    const [method, p] = line.trim().split(/\s+/);
    if (method === 'GET' && p && !p.includes('{')) set.add(p);
  }
  assert.ok(set.has('/readyz') && set.has('/healthz'), `--routes: ${r.stdout}`);
  return set;
}

/**
 * The config key a TRAINPLANE_* variable sets for `program` ('server' or
 * 'agent'), or null when it sets none. TRAINPLANE_CONFIG and
 * TRAINPLANE_AGENT_CONFIG name the config file; a *_FILE suffix is the
 * container entrypoint's "read the value from this file" convention.
 */
function envKey(program, name) {
  let n = name.replace(/_FILE$/, '');
  if (program === 'server') {
    if (n === 'TRAINPLANE_CONFIG') return 'config';
    if (!n.startsWith('TRAINPLANE_')) return null;
    n = n.slice('TRAINPLANE_'.length).toLowerCase();
    return serverKeys.has(n) ? n : null;
  }
  if (n === 'TRAINPLANE_AGENT_CONFIG') return 'config';
  if (!n.startsWith('TRAINPLANE_AGENT_')) return null;
  n = n.slice('TRAINPLANE_AGENT_'.length).toLowerCase();
  return agentKeys.has(n) ? n : null;
}

function assertEnvKeys(program, names, where) {
  const trainplane = names.filter((n) => n.startsWith('TRAINPLANE_'));
  const bad = trainplane.filter((n) => envKey(program, n) === null);
  assert.deepEqual(bad, [], `${where}: TRAINPLANE_* variables the ${program} does not read`);
  return trainplane;
}

function assertConfigKeys(program, doc, where) {
  const keys = program === 'server' ? serverKeys : agentKeys;
  assert.equal(typeof doc, 'object', `${where}: not a mapping`);
  const bad = Object.keys(doc).filter((k) => !keys.has(k));
  assert.deepEqual(bad, [], `${where}: keys the ${program} does not know`);
}

function readYaml(rel) {
  return YAML.parse(fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8'));
}

function envFileNames(rel) {
  return fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8').split('\n')
    .map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split('=')[0]);
}

before(() => {
  serverKeys = loadServerKeys();
  agentKeys = loadAgentKeys();
  getRoutes = loadRoutes();
});

describe('deploy/systemd', () => {
  const units = ['trainplane-server', 'trainplane-agent'];

  /** Copies of the units whose ExecStart names the built binaries. */
  function unitCopies(dir) {
    assert.ok(SERVER_BIN && AGENT_BIN, 'TRAINPLANE_SERVER_BIN and TRAINPLANE_AGENT_BIN must be set');
    const bins = { 'trainplane-server': path.resolve(SERVER_BIN), 'trainplane-agent': path.resolve(AGENT_BIN) };
    return units.map((u) => {
      const text = fs.readFileSync(path.join(DEPLOY, 'systemd', `${u}.service`), 'utf8');
      assert.match(text, new RegExp(`^ExecStart=/usr/local/bin/${u} `, 'm'));
      const file = path.join(dir, `${u}.service`);
      fs.writeFileSync(file, text.replace(`/usr/local/bin/${u}`, bins[u]));
      return file;
    });
  }

  it('systemd-analyze verify accepts both units with the built binaries, without a warning', () => {
    const dir = makeTempDir('tp-deploy-');
    try {
      const files = unitCopies(dir);
      const r = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' });
      assert.equal(r.error, undefined, `systemd-analyze: ${r.error}`);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr.trim(), '', 'systemd-analyze verify warnings');
      // It does fail: a unit whose binary is missing is refused.
      const broken = path.join(dir, 'broken.service');
      fs.writeFileSync(broken, fs.readFileSync(files[0], 'utf8')
        .replace(/^ExecStart=\S+/m, `ExecStart=${path.join(dir, 'no-such-binary')}`));
      const b = spawnSync('systemd-analyze', ['verify', broken], { encoding: 'utf8' });
      assert.notEqual(b.status, 0, 'verify accepted a missing ExecStart binary');
    } finally {
      removeTempDir(dir);
    }
  });

  it('are sandboxed: exposure (systemd-analyze security) server <= 2.5, agent <= 7.0', () => {
    const dir = makeTempDir('tp-deploy-');
    try {
      const files = unitCopies(dir);
      const limits = [2.5, 7.0];
      files.forEach((f, i) => {
        const r = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', f],
          { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
        const m = r.stdout.match(/Overall exposure level for \S+: ([0-9.]+)/);
        assert.ok(m, r.stdout);
        assert.ok(Number(m[1]) <= limits[i], `${units[i]} exposure ${m[1]} > ${limits[i]}`);
      });
    } finally {
      removeTempDir(dir);
    }
  });

  it('restart on failure, reload with SIGHUP (server), stop gracefully within the drain', () => {
    const server = fs.readFileSync(path.join(DEPLOY, 'systemd/trainplane-server.service'), 'utf8');
    const agent = fs.readFileSync(path.join(DEPLOY, 'systemd/trainplane-agent.service'), 'utf8');
    for (const text of [server, agent]) {
      assert.match(text, /^Restart=on-failure$/m);
      for (const opt of ['ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes',
        'SystemCallFilter=@system-service']) {
        assert.match(text, new RegExp(`^${opt}`, 'm'), opt);
      }
      // The server drains for up to 10 s after SIGTERM.
      const stop = Number(text.match(/^TimeoutStopSec=(\d+)$/m)?.[1]);
      assert.ok(stop > 10, `TimeoutStopSec ${stop} leaves no time for the 10 s drain`);
    }
    assert.match(server, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    assert.match(server, /^NoNewPrivileges=yes$/m);
    assert.match(server, /^CapabilityBoundingSet=$/m);
    // Replicas survive an agent restart.
    assert.match(agent, /^KillMode=process$/m);
  });

  it('example configurations hold only keys the programs read; the server accepts its own', () => {
    const serverYaml = readYaml('deploy/systemd/server.yaml');
    assertConfigKeys('server', serverYaml, 'server.yaml');
    assertConfigKeys('agent', readYaml('deploy/systemd/agent.yaml'), 'agent.yaml');
    assertEnvKeys('server', envFileNames('deploy/systemd/server.env.example'), 'server.env.example');
    assertEnvKeys('agent', envFileNames('deploy/systemd/agent.env.example'), 'agent.env.example');
    assert.ok(envFileNames('deploy/systemd/agent.env.example').includes('TRAINPLANE_AGENT_TOKEN'));

    // --check-config on server.yaml, with the paths it names moved here.
    const dir = makeTempDir('tp-deploy-');
    try {
      const tokens = path.join(dir, 'tokens.yaml');
      const sha = crypto.createHash('sha256').update('deploy-test-token').digest('hex');
      fs.writeFileSync(tokens, `tokens:\n  - name: ops\n    sha256: ${sha}\n    role: admin\n    projects: ["*"]\n`);
      const r = runServerSync(['--config', path.join(DEPLOY, 'systemd/server.yaml'), '--check-config'], {
        env: {
          TRAINPLANE_TOKENS_FILE: tokens,
          TRAINPLANE_CATALOG: path.join(DEPLOY, 'catalog.yaml'),
          TRAINPLANE_STATE_DIR: dir,
        },
      });
      assert.equal(r.status, 0, r.stderr);
      // And it does refuse: a key it does not know.
      const bad = path.join(dir, 'bad.yaml');
      fs.writeFileSync(bad, 'listen: 0.0.0.0:8080\nno_such_key: 1\n');
      const b = runServerSync(['--config', bad, '--check-config'],
        { env: { TRAINPLANE_CATALOG: path.join(DEPLOY, 'catalog.yaml') } });
      assert.notEqual(b.status, 0);
      assert.match(b.stderr, /no_such_key/);
    } finally {
      removeTempDir(dir);
    }
  });
});
