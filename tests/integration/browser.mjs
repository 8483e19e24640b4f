// A real browser for the console's tests: Debian's chromium, headless,
// driven through puppeteer-core (no browser download). Screenshots go to
// build/console-screenshots/ (build/san/... under SANITIZE=1 is not needed:
// they show the page, not the server).

import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import puppeteer from 'puppeteer-core';

import { REPO_ROOT } from './harness.mjs';

export const CHROMIUM = process.env.TRAINPLANE_CHROMIUM || '/usr/bin/chromium';
export const SHOTS = path.join(REPO_ROOT, 'build', 'console-screenshots');
export const AXE = path.join(REPO_ROOT, 'node_modules', 'axe-core', 'axe.min.js');

/** Launches headless chromium; fails with the package to install when it is missing. */
export async function launchBrowser() {
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (make test's DEB_TEST has it)`);
  fs.mkdirSync(SHOTS, { recursive: true });
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-extensions', '--disable-background-networking'],
  });
}

/**
 * A page that records what goes wrong in it (uncaught errors, console
 * errors, failed requests other than the API's own 4xx), for asserting none.
 */
export async function consolePage(context, { width = 1280, height = 900 } = {}) {
  const page = await context.newPage();
  await page.setViewport({ width, height });
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (401|403|404)/.test(m.text())) page.problems.push(`console: ${m.text()}`);
  });
  page.on('requestfailed', (r) => {
    if (!/ERR_ABORTED/.test(r.failure()?.errorText ?? '')) page.problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('request', (r) => {
    if (!/^(http:\/\/127\.0\.0\.1|data:|about:)/.test(r.url())) page.problems.push(`request outside the server: ${r.url()}`);
  });
  return page;
}

/** A screenshot of the page, build/console-screenshots/<name>.png. */
export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Runs axe-core's WCAG 2 A and AA rules (package.json's axe-core) on the page
 * as it shows now, dialogs included; fails with each violation: its rule,
 * impact, what it asks and the first few elements (CSS selectors). axe is
 * put into the page once per document, by the DevTools protocol rather
 * than a <script>: the console's Content-Security-Policy refuses inline
 * scripts (and should), so page.addScriptTag's would not run. Returns what
 * axe passed and the ms it took, for the test's diagnostics.
 */
export async function assertAccessible(page, what) {
  if (!(await page.evaluate(() => typeof window.axe?.run === 'function'))) {
    axeSource ??= fs.readFileSync(AXE, 'utf8');
    await page.evaluate(axeSource);
  }
  const got = await page.evaluate(async () => {
    const t0 = performance.now();
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] }, resultTypes: ['violations'] });
    return {
      ms: performance.now() - t0,
      passes: r.passes.length,
      violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
        nodes: v.nodes.slice(0, 4).map((n) => `${n.target.join(' >>> ')}${n.any?.[0]?.message ? `: ${n.any[0].message}` : ''}`) })),
    };
  });
  const list = got.violations.map((v) => `- ${v.id} (${v.impact}, ${v.count} element${v.count === 1 ? '' : 's'}): ${v.help}\n`
    + v.nodes.map((n) => `    ${n}`).join('\n')).join('\n');
  assert.equal(got.violations.length, 0, `${what}: ${got.violations.length} WCAG 2 A/AA violation(s) (axe-core):\n${list}`);
  return got;
}
let axeSource;

/** Waits for fn in the page (polled every animation frame) within ms; the message says what. */
export async function until(page, fn, arg, ms, what) {
  try {
    return await page.waitForFunction(fn, { timeout: ms, polling: 'raf' }, arg);
  } catch (e) {
    const text = await page.evaluate(() => [...document.querySelectorAll('#alert, .summary')].map((e) => e.textContent).join('\n')
      + '\n' + (document.querySelector('main')?.innerText ?? '')).catch(() => '');
    throw new Error(`${what}: ${e.message}\n--- the page (${page.url()}) shows:\n${text.slice(0, 3000)}\n`
      + `--- its problems:\n${(page.problems ?? []).join('\n')}`);
  }
}

/**
 * Navigates within the console (its hash router) and waits until the page
 * recorded that it showed its data (window.trainplaneConsole.timings);
 * returns that time in ms, measured in the page with performance.now().
 */
export async function timedRoute(page, hash, name, ms = 10_000) {
  await page.evaluate((h) => {
    window.trainplaneConsole.timings.length = 0;
    window.location.hash = h;
  }, hash);
  const t = await until(page, (n) => window.trainplaneConsole.timings.find((x) => x.name === n)?.ms, name, ms,
    `the console did not show ${hash}`);
  return t.jsonValue();
}
