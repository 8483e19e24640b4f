// A person's first look (issue 30): `make run` (tools/run.sh) prints the
// console's address; it opens on the jobs page, and the job of the README's
// curl line appears there, and succeeds, without a reload.

import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT, makeTempDir } from './harness.mjs';
import { freePort } from './agents.mjs';
import { startRun } from './make_run.mjs';
import { consolePage, launchBrowser, shot, until } from './browser.mjs';

/** The README's first job: its `B=` line and the curl line that submits the job. */
function readmeSubmit() {
  const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const block = /## Your first job[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  const submit = block.slice(0, block.indexOf('\ncurl -s $B/v1/projects/demo/jobs/first_job'));
  assert.match(submit, /^B=http:\/\/127\.0\.0\.1:8080\ncurl -s -X POST \$B\/v1\/projects\/demo\/jobs .*"jobId": "first_job"/s,
    'the README\'s first block sets B and submits first_job');
  return submit;
}

let browser;
after(async () => { await browser?.close(); });

describe('make run, then the console', () => {
  it('make run prints the console\'s address; the README\'s job appears there without a reload', async () => {
    const submit = readmeSubmit();
    const [run, b] = await Promise.all([startRun(makeTempDir('tp-first-look-'), await freePort()), launchBrowser()]);
    browser = b;
    try {
      const url = /^\s*Console: (http:\/\/\S+)$/m.exec(run.output())?.[1];
      assert.equal(url, `${run.base}/console/`, `make run's output names the console:\n${run.output().slice(-3000)}`);
      const page = await consolePage(browser);
      await page.goto(url);
      await until(page, () => /^#\/jobs\/ml\/projects\/demo$/.test(window.location.hash)
        && /^0 jobs/.test(document.getElementById('jobs-summary')?.textContent ?? ''), null, 15_000, 'the jobs page of demo');
      const res = spawnSync('bash', ['-c', submit.replace(/^B=.*$/m, `B=${run.base}`)], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(res.status, 0, res.stderr);
      assert.match(res.stdout, /"jobId": "first_job"/);
      const row = '#jobs-table tr[data-name="projects/demo/jobs/first_job"]';
      await until(page, (sel) => document.querySelector(sel), row, 15_000, 'the README\'s job on the page');
      await until(page, (sel) => document.querySelector(sel)?.dataset.state === 'SUCCEEDED', row, 60_000, 'first_job SUCCEEDED');
      await shot(page, 'first-look');
      assert.deepEqual(page.problems, []);
    } finally {
      await run.stop();
    }
  });
});
