// gcloud (Cloud SDK 528) against one server: where gcloud is and a private
// gcloud configuration pointing at the server (every file that runs
// gcloud), and for the files that compare the trainplane CLI with it
// (cli_gcloud_format, cli_hp_tuning) the environment both run in, one run
// of either and the same-stdout check.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** gcloud on the PATH, else /usr/bin/gcloud (where the build machines have it); null when absent. */
export const GCLOUD = (() => {
  const r = spawnSync('sh', ['-c', 'command -v gcloud'], { encoding: 'utf8' });
  const found = r.status === 0 ? r.stdout.trim() : '/usr/bin/gcloud';
  return fs.existsSync(found) ? found : null;
})();

/**
 * A gcloud configuration of its own under dir: ml, aiplatform and logging
 * at the server (base), with storage (its storage/v1/) when asked, no
 * credentials, project set, no prompts for updates or surveys, and what
 * gcloud caches on its first run (gce: not on Google's cloud, so that no run
 * asks DNS for a metadata server). sections adds properties: { ml_engine:
 * { polling_interval: 1 } }. The file `gcloud config set` would write,
 * written at once: a gcloud run costs a second of CPU. Returns its path
 * (CLOUDSDK_CONFIG).
 */
export function writeGcloudConfig(dir, base, project, { storage = false, sections = {} } = {}) {
  const config = path.join(dir, 'gcloud');
  fs.mkdirSync(path.join(config, 'configurations'), { recursive: true });
  fs.writeFileSync(path.join(config, 'active_config'), 'default');
  fs.writeFileSync(path.join(config, 'gce'), 'False');
  const endpoint = `${base}/`;
  const all = {
    api_endpoint_overrides: { ml: endpoint, aiplatform: endpoint, logging: endpoint,
      ...(storage ? { storage: `${endpoint}storage/v1/` } : {}) },
    auth: { disable_credentials: 'true' },
    core: { project, disable_usage_reporting: 'true' },
    component_manager: { disable_update_check: 'true' },
    survey: { disable_prompts: 'true' },
  };
  for (const [name, props] of Object.entries(sections)) all[name] = { ...all[name], ...props };
  fs.writeFileSync(path.join(config, 'configurations', 'config_default'), Object.entries(all)
    .map(([name, props]) => [`[${name}]`, ...Object.entries(props).map(([k, v]) => `${k} = ${v}`), ''].join('\n')).join('\n'));
  return config;
}

/**
 * The environment of both: the caller's without its CLOUDSDK_* and
 * TRAINPLANE_*, gcloud's configuration (config) and trainplane's endpoint
 * and project, in UTC.
 */
export function sideBySideEnv(config, base, project) {
  const e = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('CLOUDSDK_') && !k.startsWith('TRAINPLANE_')) e[k] = v;
  }
  return { ...e, CLOUDSDK_CONFIG: config, CLOUDSDK_CORE_DISABLE_PROMPTS: '1', TZ: 'UTC',
    TRAINPLANE_ENDPOINT: `${base}/`, TRAINPLANE_PROJECT: project, NO_PROXY: '127.0.0.1', no_proxy: '127.0.0.1' };
}

/** Runs bin args in env (and cwd) to its end: { code, stdout, stderr }; killed after 120 s. */
export function runTo(bin, args, env, cwd = undefined) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`timeout: ${args.join(' ')}`)); }, 120_000);
    // 'close', not 'exit': stdout may still hold data when the process has exited.
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/**
 * Runs args with gcloud and with the CLI (cli) in env; both must exit 0 and
 * print the same bytes on stdout. Returns both runs: { g, t }.
 */
export async function sameAsGcloud(cli, args, env) {
  const [g, t] = await Promise.all([runTo(GCLOUD, args, env), runTo(cli, args, env)]);
  assert.equal(g.code, 0, `gcloud ${args.join(' ')}:\n${g.stderr}`);
  assert.equal(t.code, 0, `trainplane ${args.join(' ')}:\n${t.stderr}`);
  assert.equal(t.stdout, g.stdout, `trainplane ${args.join(' ')} differs from gcloud`);
  return { g, t };
}
