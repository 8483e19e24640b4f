// deploy/: the systemd units, the example configurations, the compose file
// and the Kubernetes manifests are checked against the programs they run:
// every key and TRAINPLANE_* variable they set is one the server or agent
// reads (the server's from `trainplane-server --help`, the agent's from
// agent/agent_config.c), every probe is a route the server serves
// (`--routes`), every Secret/ConfigMap key referenced exists, selectors
// match labels, `systemd-analyze verify` accepts the units with the built
// binaries, and yamllint passes. Images are not built or pulled (no registry
// here); the compose topology (PostgreSQL, two servers, two simulated agents)
// is run with the built binaries and the environment compose gives them,
// through the images' entrypoint script.

import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';

import {
  REPO_ROOT, SERVER_BIN, runServerSync, makeTempDir, removeTempDir, startPostgres, startServer, request,
  waitFor, trainingInput, jobId,
} from './harness.mjs';
import { startAgent, listNodes, createJob, waitJobState } from './agents.mjs';

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

  /** Copies of the units that name the built binaries (ExecStart, ExecReload). */
  function unitCopies(dir) {
    assert.ok(SERVER_BIN && AGENT_BIN, 'TRAINPLANE_SERVER_BIN and TRAINPLANE_AGENT_BIN must be set');
    const bins = { 'trainplane-server': path.resolve(SERVER_BIN), 'trainplane-agent': path.resolve(AGENT_BIN) };
    return units.map((u) => {
      const text = fs.readFileSync(path.join(DEPLOY, 'systemd', `${u}.service`), 'utf8');
      assert.match(text, new RegExp(`^ExecStart=/usr/local/bin/${u} `, 'm'));
      const file = path.join(dir, `${u}.service`);
      fs.writeFileSync(file, text.replaceAll(`/usr/local/bin/${u}`, bins[u]));
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
    // reload checks the files first, then signals: in that order
    const reloads = server.split('\n').filter((l) => l.startsWith('ExecReload='));
    assert.deepEqual(reloads, [
      'ExecReload=/usr/local/bin/trainplane-server --config /etc/trainplane/server.yaml --check-config',
      'ExecReload=/bin/kill -HUP $MAINPID',
    ]);
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

// --- secrets and transport ------------------------------------------------------------

describe('deploy/ secrets and transport', () => {
  /** Every agent token value deploy/ ships: env examples (commented or not) and the Secret example. */
  function shippedAgentTokens() {
    const out = [];
    for (const f of ['deploy/systemd/server.env.example', 'deploy/systemd/agent.env.example']) {
      for (const line of fs.readFileSync(path.join(REPO_ROOT, f), 'utf8').split('\n')) {
        const m = /^\s*#?\s*TRAINPLANE_AGENT_TOKEN=(\S+)/.exec(line);
        if (m && !m[1].startsWith('$')) out.push([f, m[1]]);
      }
    }
    const secret = YAML.parse(fs.readFileSync(path.join(DEPLOY, 'k8s/secret.example.yaml'), 'utf8'));
    out.push(['deploy/k8s/secret.example.yaml agent-token', secret.stringData['agent-token']]);
    return out;
  }

  it('no agent token deploy/ ships passes: tokens mode refuses each placeholder at start', () => {
    const shipped = shippedAgentTokens();
    assert.ok(shipped.length >= 2, JSON.stringify(shipped));
    const dir = makeTempDir('tp-deploy-');
    try {
      const tokens = path.join(dir, 'tokens.yaml');
      const sha = crypto.createHash('sha256').update('deploy-test-token').digest('hex');
      fs.writeFileSync(tokens, `tokens:\n  - name: ops\n    sha256: ${sha}\n    role: admin\n    projects: ["*"]\n`);
      for (const [where, value] of shipped) {
        const r = runServerSync(['--config', path.join(DEPLOY, 'systemd/server.yaml'), '--check-config'], {
          env: {
            TRAINPLANE_TOKENS_FILE: tokens,
            TRAINPLANE_CATALOG: path.join(DEPLOY, 'catalog.yaml'),
            TRAINPLANE_STATE_DIR: dir,
            TRAINPLANE_AGENT_TOKEN: value,
          },
        });
        assert.equal(r.status, 1, `${where}: ${value} passes --check-config in tokens mode`);
        assert.match(r.stderr, /agent_token \(TRAINPLANE_AGENT_TOKEN\) is too weak/, where);
      }
    } finally {
      removeTempDir(dir);
    }
  });

  it('agents that reach a server over plain HTTP off loopback opt in (allow_insecure_http), else use https', () => {
    const loopback = (host) => host === 'localhost' || /^127\./.test(host) || host === '[::1]';
    const check = (where, server, allow) => {
      const u = new URL(server);
      if (u.protocol === 'https:' || loopback(u.hostname)) return;
      assert.equal(u.protocol, 'http:', where);
      assert.equal(String(allow), 'true', `${where}: ${server} without allow_insecure_http: the agent would exit 2`);
    };
    const [compose] = lintYaml('deploy/compose.yaml');
    for (const [name, s] of Object.entries(compose.services)) {
      const env = s.environment ?? {};
      if (env.TRAINPLANE_AGENT_SERVER) check(`compose ${name}`, env.TRAINPLANE_AGENT_SERVER, env.TRAINPLANE_AGENT_ALLOW_INSECURE_HTTP);
    }
    for (const doc of lintYaml('deploy/k8s/agent.yaml')) {
      for (const c of doc.spec?.template?.spec?.containers ?? []) {
        const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
        if (env.TRAINPLANE_AGENT_SERVER) check(`k8s ${doc.metadata.name}`, env.TRAINPLANE_AGENT_SERVER, env.TRAINPLANE_AGENT_ALLOW_INSECURE_HTTP);
      }
    }
    const agentYaml = readYaml('deploy/systemd/agent.yaml');
    check('deploy/systemd/agent.yaml', agentYaml.server, agentYaml.allow_insecure_http);
  });
});

// --- containers and compose ------------------------------------------------------

/** Parses a YAML file as a linter would: any error or warning fails. */
function lintYaml(rel) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8'),
    { uniqueKeys: true, merge: true });
  const problems = docs.flatMap((d) => [...d.errors, ...d.warnings].map((e) => `${rel}: ${e.message}`));
  assert.deepEqual(problems, [], 'YAML problems');
  return docs.map((d) => d.toJS({ maxAliasCount: 100 })).filter((d) => d !== null);
}

function containerfile(name) {
  return fs.readFileSync(path.join(DEPLOY, 'container', name), 'utf8');
}

/** ENV lines of a Containerfile ("ENV A=1 \\\n B=2") as names. */
function containerfileEnv(text) {
  const joined = text.replace(/\\\n/g, ' ');
  return joined.split('\n').filter((l) => /^ENV\s/.test(l))
    .flatMap((l) => [...l.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1]));
}

/** Runs deploy/container/entrypoint.sh with env, printing the environment. */
function runEntrypoint(env) {
  return spawnSync(path.join(DEPLOY, 'container/entrypoint.sh'), ['env'],
    { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
}

describe('deploy/container', () => {
  for (const [file, program, target] of [
    ['Containerfile.server', 'server', 'build/trainplane-server'],
    ['Containerfile.agent', 'agent', 'build/trainplane-agent'],
  ]) {
    it(`${file}: builds with make on debian:bookworm-slim, runs the binary through the entrypoint`, () => {
      const text = containerfile(file);
      const froms = [...text.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gm)];
      assert.equal(froms.length, 2, 'a build stage and a run stage');
      for (const f of froms) assert.match(f[1], /(^|\/)debian:bookworm-slim$/);
      assert.equal(froms[0][2], 'build');
      assert.match(text, new RegExp(`^RUN make clean && make -j"\\$\\(nproc\\)" ${target}\\b`, 'm'));
      assert.match(text, new RegExp(`^COPY --from=build /src/${target} /usr/local/bin/`, 'm'));
      // Every file copied from the context exists in the repository.
      for (const m of text.matchAll(/^COPY (?!--from)(\S+) (\S+)$/gm)) {
        if (m[1] === '.') continue;
        assert.ok(fs.existsSync(path.join(REPO_ROOT, m[1])), `${file}: COPY ${m[1]}: no such file`);
      }
      assertEnvKeys(program, containerfileEnv(text), file);
      assert.match(text, /^USER 10001$/m, 'runs as a non-root user');
      assert.match(text, new RegExp(
        `^ENTRYPOINT \\["/usr/local/bin/trainplane-entrypoint", "/usr/local/bin/trainplane-${program}"\\]$`, 'm'));
    });
  }

  it('entrypoint.sh turns TRAINPLANE_<KEY>_FILE into TRAINPLANE_<KEY>; an unreadable file stops it', () => {
    const dir = makeTempDir('tp-deploy-');
    try {
      const secret = path.join(dir, 'database_url');
      fs.writeFileSync(secret, 'postgresql://u:p%40ss@db:5432/tp\n');
      const r = runEntrypoint({ TRAINPLANE_DATABASE_URL_FILE: secret, TRAINPLANE_LOG_FORMAT: 'json' });
      assert.equal(r.status, 0, r.stderr);
      const env = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      assert.equal(env.TRAINPLANE_DATABASE_URL, 'postgresql://u:p%40ss@db:5432/tp');
      assert.equal(env.TRAINPLANE_DATABASE_URL_FILE, undefined);
      assert.equal(env.TRAINPLANE_LOG_FORMAT, 'json');
      const b = runEntrypoint({ TRAINPLANE_AGENT_TOKEN_FILE: path.join(dir, 'missing') });
      assert.equal(b.status, 2);
      assert.match(b.stderr, /TRAINPLANE_AGENT_TOKEN_FILE: cannot read .*missing/);
    } finally {
      removeTempDir(dir);
    }
  });
});

describe('deploy/compose.yaml', () => {
  let compose;
  before(() => { [compose] = lintYaml('deploy/compose.yaml'); });

  function servicesBuilding(file) {
    return Object.entries(compose.services).filter(([, s]) => s.build?.dockerfile === `deploy/container/${file}`);
  }

  it('PostgreSQL, two servers on it, two simulated agents; images built from the Containerfiles', () => {
    const servers = servicesBuilding('Containerfile.server');
    const agents = servicesBuilding('Containerfile.agent');
    assert.equal(servers.length, 2);
    assert.equal(agents.length, 2);
    assert.match(compose.services.postgres.image, /postgres:/);
    for (const [, s] of [...servers, ...agents]) {
      assert.equal(s.build.context, '..');
      assert.ok(fs.existsSync(path.join(DEPLOY, s.build.context, s.build.dockerfile)));
    }
    for (const [name, s] of servers) {
      assert.equal(s.depends_on.postgres.condition, 'service_healthy', name);
      assert.equal(s.environment.TRAINPLANE_SCHEDULER, 'true', `${name}: both servers may lead`);
    }
    for (const [name, s] of agents) {
      assert.equal(s.environment.TRAINPLANE_AGENT_RUNTIME, 'simulate', `${name}: needs no GPU`);
      const host = new URL(s.environment.TRAINPLANE_AGENT_SERVER).hostname;
      assert.ok(servers.some(([n]) => n === host), `${name}: server ${host} is not a server service`);
      assert.equal(s.depends_on[host].condition, 'service_healthy');
    }
    const nodes = agents.map(([, s]) => s.environment.TRAINPLANE_AGENT_NODE);
    assert.equal(new Set(nodes).size, 2, 'distinct node names');
  });

  it('every TRAINPLANE_* variable is a key of the program; secrets come from declared secret files', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      const program = s.build?.dockerfile?.endsWith('.server') ? 'server'
        : s.build?.dockerfile?.endsWith('.agent') ? 'agent' : null;
      const env = s.environment ?? {};
      if (!program) {
        assert.deepEqual(Object.keys(env).filter((k) => k.startsWith('TRAINPLANE_')), [], name);
        continue;
      }
      assertEnvKeys(program, Object.keys(env), `compose ${name}`);
      for (const [k, v] of Object.entries(env)) {
        if (!k.endsWith('_FILE')) continue;
        const m = String(v).match(/^\/run\/secrets\/(\w+)$/);
        assert.ok(m, `${name}: ${k}=${v} is not a compose secret`);
        assert.ok(s.secrets.includes(m[1]), `${name}: ${k} names secret ${m[1]} the service lacks`);
        assert.ok(compose.secrets[m[1]], `${name}: secret ${m[1]} is not declared`);
      }
      // Secrets, not literals.
      for (const secret of ['TRAINPLANE_DATABASE_URL', 'TRAINPLANE_AGENT_TOKEN']) {
        assert.equal(env[secret], undefined, `${name}: ${secret} as a literal`);
      }
    }
    assert.ok(compose.services['server-1'].environment.TRAINPLANE_DATABASE_URL_FILE);
    assert.ok(compose.services['agent-1'].environment.TRAINPLANE_AGENT_TOKEN_FILE);
    assert.equal(compose.services.postgres.environment.POSTGRES_PASSWORD_FILE, '/run/secrets/postgres_password');
  });

  it('server healthchecks ask /readyz, a route the server serves; the stop grace covers the drain', () => {
    for (const [name, s] of servicesBuilding('Containerfile.server')) {
      const url = s.healthcheck.test.find((w) => /^https?:\/\//.test(w));
      assert.ok(url, `${name}: healthcheck without a URL`);
      const u = new URL(url);
      assert.equal(u.pathname, '/readyz');
      assert.ok(getRoutes.has(u.pathname));
      assert.ok(parseInt(s.stop_grace_period, 10) > 10, `${name}: stop_grace_period`);
    }
  });
});

// --- YAML lint ---------------------------------------------------------------------

describe('deploy YAML', () => {
  it('yamllint passes on the compose file, the Kubernetes manifests and the example configs', () => {
    const files = ['deploy/compose.yaml',
      ...fs.readdirSync(path.join(DEPLOY, 'k8s')).filter((f) => f.endsWith('.yaml')).map((f) => `deploy/k8s/${f}`),
      ...fs.readdirSync(path.join(DEPLOY, 'systemd')).filter((f) => f.endsWith('.yaml')).map((f) => `deploy/systemd/${f}`)];
    const config = '{extends: default, rules: {line-length: {max: 120}, document-start: disable, truthy: {check-keys: false}}}';
    const r = spawnSync('yamllint', ['-f', 'parsable', '-s', '-d', config, ...files], { cwd: REPO_ROOT, encoding: 'utf8' });
    assert.equal(r.error, undefined, `yamllint: ${r.error}`);
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});

// --- Kubernetes ------------------------------------------------------------------

describe('deploy/k8s', () => {
  const files = () => fs.readdirSync(path.join(DEPLOY, 'k8s')).filter((f) => f.endsWith('.yaml'));
  let objects; // [{file, doc}]
  const find = (kind, name) => objects.find((o) => o.doc.kind === kind && o.doc.metadata.name === name)?.doc;

  before(() => {
    objects = [];
    for (const f of files()) {
      if (f === 'kustomization.yaml') continue;
      for (const doc of lintYaml(`deploy/k8s/${f}`)) objects.push({ file: f, doc });
    }
  });

  /** Pod template → { kind, name, spec, labels }. */
  function workloads() {
    return objects.filter((o) => ['Deployment', 'DaemonSet'].includes(o.doc.kind)).map((o) => o.doc);
  }
  const programOf = (container) => (/trainplane-server/.test(container.image) ? 'server' : 'agent');
  const subset = (sel, labels) => Object.entries(sel).every(([k, v]) => labels?.[k] === v);

  it('every manifest parses, has apiVersion/kind/name, lives in the trainplane namespace; kustomization lists them', () => {
    assert.ok(objects.length >= 7);
    for (const { file, doc } of objects) {
      assert.ok(doc.apiVersion && doc.kind && doc.metadata?.name, `${file}: not a Kubernetes object`);
      if (doc.kind !== 'Namespace') assert.equal(doc.metadata.namespace, 'trainplane', `${file} ${doc.kind}`);
    }
    assert.ok(find('Namespace', 'trainplane'));
    const [kust] = lintYaml('deploy/k8s/kustomization.yaml');
    const expected = files().filter((f) => f !== 'kustomization.yaml' && !f.includes('.example.')).sort();
    assert.deepEqual([...kust.resources].sort(), expected);
  });

  it('every TRAINPLANE_* variable is a key of the program; every Secret/ConfigMap key referenced exists', () => {
    const keysOf = (kind, name) => {
      const doc = find(kind, name);
      assert.ok(doc, `${kind} ${name} is not defined`);
      return new Set(Object.keys({ ...doc.data, ...doc.stringData }));
    };
    for (const w of workloads()) {
      const spec = w.spec.template.spec;
      for (const c of spec.containers) {
        const names = (c.env ?? []).map((e) => e.name);
        assert.ok(assertEnvKeys(programOf(c), names, `${w.kind} ${w.metadata.name}`).length > 0);
        for (const e of c.env ?? []) {
          const s = e.valueFrom?.secretKeyRef;
          if (s) assert.ok(keysOf('Secret', s.name).has(s.key), `${e.name}: Secret ${s.name} has no ${s.key}`);
          const m = e.valueFrom?.configMapKeyRef;
          if (m) assert.ok(keysOf('ConfigMap', m.name).has(m.key), `${e.name}: ConfigMap ${m.name} has no ${m.key}`);
        }
        for (const vm of c.volumeMounts ?? []) {
          assert.ok((spec.volumes ?? []).some((v) => v.name === vm.name), `mount ${vm.name}: no such volume`);
        }
      }
      for (const v of spec.volumes ?? []) {
        const [kind, name, items] = v.configMap ? ['ConfigMap', v.configMap.name, v.configMap.items]
          : v.secret ? ['Secret', v.secret.secretName, v.secret.items] : [];
        if (!kind) continue;
        const keys = keysOf(kind, name);
        for (const it of items ?? []) assert.ok(keys.has(it.key), `volume ${v.name}: ${kind} ${name} has no ${it.key}`);
      }
    }
    // The database URL and the agent token come from the Secret.
    const server = find('Deployment', 'trainplane-server').spec.template.spec.containers[0];
    for (const n of ['TRAINPLANE_DATABASE_URL', 'TRAINPLANE_AGENT_TOKEN']) {
      assert.ok(server.env.find((e) => e.name === n)?.valueFrom?.secretKeyRef, n);
    }
    const agent = find('DaemonSet', 'trainplane-agent').spec.template.spec.containers[0];
    assert.ok(agent.env.find((e) => e.name === 'TRAINPLANE_AGENT_TOKEN')?.valueFrom?.secretKeyRef);
  });

  it('selectors match labels: workloads, the Service and the PodDisruptionBudget reach the server pods', () => {
    for (const w of workloads()) {
      assert.ok(subset(w.spec.selector.matchLabels, w.spec.template.metadata.labels),
        `${w.kind} ${w.metadata.name}: selector does not match its pods`);
    }
    const deploy = find('Deployment', 'trainplane-server');
    const podLabels = deploy.spec.template.metadata.labels;
    const svc = find('Service', 'trainplane-server');
    assert.ok(subset(svc.spec.selector, podLabels), 'Service selects no server pod');
    assert.ok(!subset(svc.spec.selector, find('DaemonSet', 'trainplane-agent').spec.template.metadata.labels),
      'Service also selects the agents');
    const ports = deploy.spec.template.spec.containers[0].ports;
    for (const p of svc.spec.ports) {
      assert.ok(ports.some((cp) => cp.name === p.targetPort || cp.containerPort === p.targetPort),
        `Service targetPort ${p.targetPort}`);
    }
    const pdb = find('PodDisruptionBudget', 'trainplane-server');
    assert.ok(subset(pdb.spec.selector.matchLabels, podLabels));
    // The agents reach the server through the Service.
    const agent = find('DaemonSet', 'trainplane-agent').spec.template.spec.containers[0];
    const url = new URL(agent.env.find((e) => e.name === 'TRAINPLANE_AGENT_SERVER').value);
    assert.equal(url.hostname, `${svc.metadata.name}.${svc.metadata.namespace}.svc`);
    assert.equal(Number(url.port), svc.spec.ports[0].port);
  });

  it('server Deployment: 2 replicas, readiness /readyz, liveness /healthz, grace covers preStop + 10 s drain', () => {
    const deploy = find('Deployment', 'trainplane-server');
    assert.equal(deploy.spec.replicas, 2);
    const spec = deploy.spec.template.spec;
    const c = spec.containers[0];
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe].filter(Boolean)) {
      assert.ok(getRoutes.has(probe.httpGet.path), `probe ${probe.httpGet.path} is not a route`);
      assert.ok(c.ports.some((p) => p.name === probe.httpGet.port || p.containerPort === probe.httpGet.port));
    }
    const pre = c.lifecycle.preStop.exec.command;
    assert.equal(pre[0], 'sleep');
    assert.ok(spec.terminationGracePeriodSeconds >= Number(pre[1]) + 10,
      `terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds} < preStop ${pre[1]} + 10 s drain`);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(spec.securityContext.runAsNonRoot, true);
  });

  it('agent DaemonSet: requests nvidia.com/gpu, only on GPU nodes', () => {
    const ds = find('DaemonSet', 'trainplane-agent');
    const spec = ds.spec.template.spec;
    assert.ok(Object.keys(spec.nodeSelector ?? {}).some((k) => k.startsWith('nvidia.com/')), 'nodeSelector for GPU nodes');
    const gpus = spec.containers[0].resources.limits['nvidia.com/gpu'];
    assert.ok(Number.isInteger(gpus) && gpus > 0, `nvidia.com/gpu: ${gpus}`);
    const env = Object.fromEntries(spec.containers[0].env.map((e) => [e.name, e]));
    assert.equal(env.TRAINPLANE_AGENT_NODE.valueFrom.fieldRef.fieldPath, 'spec.nodeName');
    assert.equal(env.TRAINPLANE_AGENT_RUNTIME.value, 'process');
  });

  it('the ConfigMap server.yaml, catalog and Secret tokens.yaml pass --check-config at the paths the pod mounts', () => {
    const cm = find('ConfigMap', 'trainplane-config');
    const secret = find('Secret', 'trainplane-secrets');
    const serverConf = YAML.parse(cm.data['server.yaml']);
    assertConfigKeys('server', serverConf, 'ConfigMap server.yaml');
    // The paths the config names are files the pod mounts from these objects.
    const spec = find('Deployment', 'trainplane-server').spec.template.spec;
    const c = spec.containers[0];
    const mounted = (file) => {
      const vm = c.volumeMounts.find((m) => path.dirname(file) === m.mountPath);
      assert.ok(vm, `${file}: no volume mounted at ${path.dirname(file)}`);
      const v = spec.volumes.find((x) => x.name === vm.name);
      const items = (v.configMap ?? v.secret).items;
      const item = items.find((i) => i.path === path.basename(file));
      assert.ok(item, `${file}: not in volume ${v.name}`);
      return v.configMap ? cm.data[item.key] : secret.stringData[item.key];
    };
    const configPath = c.env.find((e) => e.name === 'TRAINPLANE_CONFIG').value;
    assert.equal(mounted(configPath), cm.data['server.yaml']);
    const dir = makeTempDir('tp-deploy-');
    try {
      const write = (name, text) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
      const r = runServerSync(['--config', write('server.yaml', cm.data['server.yaml']), '--check-config'], {
        env: {
          TRAINPLANE_CATALOG: write('catalog.yaml', mounted(serverConf.catalog)),
          TRAINPLANE_TOKENS_FILE: write('tokens.yaml', mounted(serverConf.tokens_file)),
          TRAINPLANE_STATE_DIR: dir,
        },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout + r.stderr, /valid/);
    } finally {
      removeTempDir(dir);
    }
  });
});

// --- the compose topology, run with the built binaries -----------------------------

describe('deploy/compose.yaml topology with the built binaries', () => {
  it('PostgreSQL + both servers + both agents as compose configures them: one leader, nodes READY, a job runs', async () => {
    const [compose] = lintYaml('deploy/compose.yaml');
    const pg = await startPostgres();
    const dir = makeTempDir('tp-deploy-');
    const servers = {};
    const agents = [];
    try {
      // The secrets compose mounts under /run/secrets, as files here.
      const secretFiles = {
        database_url: pg.url,
        agent_token: crypto.randomBytes(32).toString('hex'),
      };
      for (const [name, value] of Object.entries(secretFiles)) fs.writeFileSync(path.join(dir, name), `${value}\n`);
      /** The service's environment after the image entrypoint (deploy/container/entrypoint.sh). */
      const envAfterEntrypoint = (service) => {
        const env = {};
        for (const [k, v] of Object.entries(service.environment)) {
          env[k] = String(v).replace(/^\/run\/secrets\//, `${dir}/`);
        }
        const r = runEntrypoint(env);
        assert.equal(r.status, 0, r.stderr);
        return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])
          .filter(([k]) => k.startsWith('TRAINPLANE_')));
      };
      for (const [name, s] of Object.entries(compose.services)) {
        if (!s.build?.dockerfile?.endsWith('.server')) continue;
        const env = envAfterEntrypoint(s);
        assert.equal(env.TRAINPLANE_DATABASE_URL, pg.url);
        servers[name] = await startServer({ env });
      }
      assert.equal(Object.keys(servers).length, 2);
      for (const [name, s] of Object.entries(compose.services)) {
        if (!s.build?.dockerfile?.endsWith('.agent')) continue;
        const env = envAfterEntrypoint(s);
        const host = new URL(env.TRAINPLANE_AGENT_SERVER).hostname;
        env.TRAINPLANE_AGENT_SERVER = `${servers[host].base}/`;
        env.TRAINPLANE_AGENT_ADDRESS = '127.0.0.1';
        agents.push(await startAgent(servers[host], { node: env.TRAINPLANE_AGENT_NODE, env }));
      }
      assert.equal(agents.length, 2);
      // Either server sees both nodes with the GPUs compose declares.
      for (const server of Object.values(servers)) {
        const nodes = (await listNodes(server.base)).filter((n) => agents.some((a) => a.node === n.name));
        assert.equal(nodes.length, 2, JSON.stringify(nodes));
        for (const n of nodes) assert.equal(n.state, 'READY');
      }
      // One of the pair leads the scheduler.
      let leaders = [];
      await waitFor(async () => {
        leaders = await Promise.all(Object.values(servers).map(async (s) => {
          const m = (await request(s.base, 'GET', '/metrics')).text.match(/^trainplane_scheduler_leader (\d+)/m);
          return m ? Number(m[1]) : -1;
        }));
        return leaders.reduce((a, b) => a + b, 0) === 1;
      }, 10_000, 'exactly one server leads');
      assert.deepEqual([...leaders].sort(), [0, 1]);
      // A job given to one server runs on a simulated GPU node and is seen by the other.
      const [s1, s2] = Object.values(servers);
      const id = jobId('compose');
      await createJob(s2.base, 'deploy-test', id, trainingInput({
        scaleTier: 'CUSTOM', masterType: 'n1-standard-8',
        masterConfig: { imageUri: 'gcr.io/test/trainer:latest', acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: 1 } },
      }));
      await waitJobState(s1.base, 'deploy-test', id, 'SUCCEEDED', 60_000,
        () => Object.values(servers).map((s) => s.stderr().slice(-2000)).join('\n'));
      for (const a of agents) await a.stop();
      for (const s of Object.values(servers)) await s.stop();
    } finally {
      for (const a of agents) a.cleanup();
      for (const s of Object.values(servers)) s.kill();
      await pg.stop();
      removeTempDir(dir);
    }
  });
});
