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
