// The docs are kept in step with the programs, as deploy.test.mjs keeps the
// manifests:
// - docs/configuration.md's table lists exactly the keys `trainplane-server
//   --help` lists, each with the default --help prints;
// - agent/README.md's table lists exactly the keys of agent/agent_config.c's
//   table, each with its default (the agent's --help names no keys);
// - every relative link in README.md, docs/ and agent/*.md reaches a file,
//   and every #anchor a heading of it;
// - README.md opens with `make run` and `make test` and stays one screen;
// - every `trainplane ...` command of those pages (fenced blocks and inline
//   code) is one `build/trainplane CMD --help` knows, and every --flag it
//   uses is in that --help (the CLI's flags have no table in the docs: each
//   command's --help is its reference).
//
// A default cell matches when it is the program's default (backticks
// aside), that default followed by a parenthesised note (`0 (from the
// host)`), or, for a key with no default, starts with "unset". A row naming
// several keys gives one default for all of them, or one per key separated
// by ", ".

import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT, runServerSync } from './harness.mjs';

const read = (rel) => fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8');

/** `trainplane-server --help`: Map key -> default (null when unset). */
function serverHelpKeys() {
  const r = runServerSync(['--help']);
  assert.equal(r.status, 0, r.stderr);
  const keys = new Map();
  for (const m of r.stdout.matchAll(/^ {2}([a-z_][a-z0-9_]*)\s+default (.*)$/gm)) {
    keys.set(m[1], /^\(unset\b/.test(m[2]) ? null : m[2].trim());
  }
  assert.ok(keys.size >= 20 && keys.has('listen') && keys.has('catalog'), `--help lists no keys:\n${r.stdout}`);
  return keys;
}

/** agent/agent_config.c's key table: K("name", CONFIG_X, field, "default" | NULL, ...). */
function agentSourceKeys() {
  const src = read('agent/agent_config.c');
  const keys = new Map();
  for (const m of src.matchAll(/\bK\("([a-z_][a-z0-9_]*)",\s*CONFIG_\w+,\s*\w+,\s*(?:"((?:[^"\\]|\\.)*)"|NULL)\s*,/g)) {
    keys.set(m[1], m[2] ?? null);
  }
  assert.ok(keys.size >= 20 && keys.has('server') && keys.has('runtime'), 'agent_config.c: key table not found');
  return keys;
}

/**
 * The `| key | default | meaning |` table of a markdown file (the first one
 * after `heading`): Map key -> default cell (backticks removed), with the
 * line number of each row for messages.
 */
function docTable(rel, heading) {
  const lines = read(rel).split('\n');
  let i = lines.findIndex((l) => l.trim() === heading);
  assert.ok(i >= 0, `${rel}: no "${heading}"`);
  while (i < lines.length && !/^\|\s*key\s*\|\s*default\s*\|/.test(lines[i])) i++;
  assert.ok(i < lines.length, `${rel}: no "| key | default | meaning |" table after "${heading}"`);
  const rows = new Map();
  for (i += 2; i < lines.length && lines[i].startsWith('|'); i++) {
    const cells = lines[i].split('|').slice(1, -1).map((c) => c.trim());
    assert.ok(cells.length >= 3, `${rel}:${i + 1}: a row with ${cells.length} cells`);
    const names = [...cells[0].matchAll(/`([a-z_][a-z0-9_]*)`/g)].map((m) => m[1]);
    assert.ok(names.length > 0, `${rel}:${i + 1}: no key in "${cells[0]}"`);
    const def = cells[1].replaceAll('`', '');
    const parts = names.length > 1 && def.split(', ').length === names.length ? def.split(', ') : names.map(() => def);
    names.forEach((n, k) => {
      assert.ok(!rows.has(n), `${rel}:${i + 1}: ${n} listed twice`);
      rows.set(n, { def: parts[k].trim(), line: i + 1 });
    });
  }
  return rows;
}

/** Whether a table's default cell states the program's default `want` (null: unset). */
function defaultMatches(cell, want) {
  if (want === null) return /^unset\b/.test(cell);
  return cell === want || cell.startsWith(`${want} (`);
}

/** Keys missing from the table, keys the program does not have, and defaults that differ. */
function compare(program, table) {
  const problems = [];
  for (const [k, want] of program) {
    const row = table.get(k);
    if (!row) problems.push(`${k}: not in the table`);
    else if (!defaultMatches(row.def, want)) {
      problems.push(`${k} (line ${row.line}): the table says "${row.def}", the program ${want === null ? 'leaves it unset' : `"${want}"`}`);
    }
  }
  for (const [k, row] of table) if (!program.has(k)) problems.push(`${k} (line ${row.line}): no such key`);
  return problems;
}

describe('configuration tables', () => {
  it('docs/configuration.md lists every key of trainplane-server --help, with its default, and no other', () => {
    assert.deepEqual(compare(serverHelpKeys(), docTable('docs/configuration.md', '# Configuration')), []);
  });

  it('agent/README.md lists every key of agent_config.c, with its default, and no other', () => {
    assert.deepEqual(compare(agentSourceKeys(), docTable('agent/README.md', '## Configuration')), []);
  });

  it('the comparison does fail: a key added to the program, a key dropped, a default changed', () => {
    const program = new Map([['listen', '127.0.0.1:8080'], ['catalog', null], ['db_pool_size', '16']]);
    const table = new Map([['listen', { def: '127.0.0.1:8080', line: 1 }], ['catalog', { def: 'unset (the built-in catalog)', line: 2 }],
      ['db_pool_size', { def: '16', line: 3 }]]);
    assert.deepEqual(compare(program, table), []);
    assert.match(compare(new Map([...program, ['new_key', '1']]), table).join(), /new_key: not in the table/);
    assert.match(compare(new Map([...program].slice(1)), table).join(), /listen \(line 1\): no such key/);
    assert.match(compare(new Map([...program, ['db_pool_size', '32']]), table).join(), /db_pool_size .*"16".*"32"/);
    assert.match(compare(new Map([...program, ['catalog', 'deploy/catalog.yaml']]), table).join(), /catalog/);
    assert.equal(defaultMatches('0 (from the host)', '0'), true);
    assert.equal(defaultMatches('01', '0'), false);
    assert.equal(defaultMatches('16', null), false);
  });
});

// --- links -------------------------------------------------------------------------

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading) {
  return heading.trim().toLowerCase().replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

function anchorsOf(rel) {
  const seen = new Map();
  const out = new Set();
  let fenced = false;
  for (const line of read(rel).split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

function markdownFiles() {
  return ['README.md',
    ...fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
    ...fs.readdirSync(path.join(REPO_ROOT, 'agent')).filter((f) => f.endsWith('.md')).map((f) => `agent/${f}`)];
}

describe('links', () => {
  it('every relative link of README.md, docs/ and agent/*.md reaches a file and, with #anchor, a heading of it', () => {
    const broken = [];
    let checked = 0;
    for (const rel of markdownFiles()) {
      let fenced = false;
      read(rel).split('\n').forEach((line, i) => {
        if (line.startsWith('```')) fenced = !fenced;
        if (fenced) return;
        for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = m[1];
          if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
          const [file, anchor] = target.split('#');
          const dest = file ? path.normalize(path.join(path.dirname(rel), file)) : rel;
          checked++;
          if (!fs.existsSync(path.join(REPO_ROOT, dest))) broken.push(`${rel}:${i + 1}: ${target}: no ${dest}`);
          else if (anchor && dest.endsWith('.md') && !anchorsOf(dest).has(anchor)) {
            broken.push(`${rel}:${i + 1}: ${target}: no heading #${anchor} in ${dest}`);
          }
        }
      });
    }
    assert.ok(checked > 30, `only ${checked} links found`);
    assert.deepEqual(broken, []);
  });

  it('the anchor rule is GitHub\'s', () => {
    assert.equal(slug('Why jobs.get is served from memory, and why it is never stale'),
      'why-jobsget-is-served-from-memory-and-why-it-is-never-stale');
    assert.equal(slug('Running jobs: scheduler and agents'), 'running-jobs-scheduler-and-agents');
    assert.equal(slug('`make run`: the state_dir'), 'make-run-the-state_dir');
    assert.equal(slug('Set-up'), 'set-up');
  });
});

describe('README.md', () => {
  it('opens with make run and make test, and fits on one screen', () => {
    const text = read('README.md');
    const lines = text.split('\n');
    assert.match(lines[0], /^# trainplane\b/);
    const body = lines.slice(1).filter((l) => l.trim() !== '');
    assert.equal(body[0], '```sh');
    assert.match(body[1], /^make run\b/);
    assert.match(body[2], /^make test\b/);
    assert.ok(lines.length <= 80, `README.md has ${lines.length} lines: move reference material to docs/`);
    for (const page of fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md'))) {
      assert.ok(text.includes(`(docs/${page})`), `README.md does not link docs/${page}`);
    }
  });
});

// --- CLI commands in the pages ------------------------------------------------------

const CLI_BIN = process.env.TRAINPLANE_CLI_BIN || path.join(REPO_ROOT, 'build/trainplane');

/** Shell words of a command line: quotes removed, a word starting with # ends the line. */
function shellWords(line) {
  const words = [];
  for (const m of line.matchAll(/(?:[^\s'"]+|'[^']*'|"(?:[^"\\]|\\.)*")+/g)) {
    if (m[0].startsWith('#')) break;
    words.push(m[0].replace(/'([^']*)'|"((?:[^"\\]|\\.)*)"/g, '$1$2'));
  }
  return words;
}

/**
 * The `trainplane ...` / `build/trainplane ...` commands of a page: each line
 * of a fenced block (continuation lines joined; `a && b`, `a | b`, `a; b`
 * split) and each inline code span (which may wrap) that starts with one.
 * Returns [{ where: 'page:line', argv }] with argv the words after the
 * program name.
 */
function cliCommandsOf(rel, text) {
  const out = [];
  const add = (cmd, line) => {
    for (const part of cmd.split(/&&|\|\||[;|]/)) {
      const m = /^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\$\s+)?(?:\.\/)?(?:build\/)?trainplane\s+(.*)$/.exec(part);
      if (m) out.push({ where: `${rel}:${line}`, argv: shellWords(m[1]) });
    }
  };
  const lines = text.split('\n');
  let fenced = false;
  let prose = [];
  const flushProse = () => {
    const chunk = prose.map((p) => p.text).join('\n');
    for (const m of chunk.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
      const line = prose[0].line + chunk.slice(0, m.index).split('\n').length - 1;
      add(m[1].replace(/\s*\n\s*/g, ' '), line);
    }
    prose = [];
  };
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*```/.test(lines[i])) {
      flushProse();
      fenced = !fenced;
      continue;
    }
    if (!fenced) {
      if (lines[i].trim() === '') flushProse();
      else prose.push({ text: lines[i], line: i + 1 });
      continue;
    }
    const start = i;
    let cmd = lines[i];
    while (/\\\s*$/.test(cmd) && i + 1 < lines.length) cmd = cmd.replace(/\\\s*$/, ' ') + lines[++i];
    add(cmd, start + 1);
  }
  flushProse();
  return out;
}

/** `trainplane ARGS --help`, memoised: { status, text }. */
const helpCache = new Map();
function cliHelp(words) {
  const key = words.join(' ');
  if (!helpCache.has(key)) {
    const r = spawnSync(CLI_BIN, [...words, '--help'], { encoding: 'utf8', timeout: 10_000 });
    helpCache.set(key, { status: r.status, text: `${r.stdout}${r.stderr}` });
  }
  return helpCache.get(key);
}

const GLOBAL_WITH_VALUE = new Set(['--endpoint', '--project', '--ca-file']);

/**
 * The problems of one command: its words, found by asking `--help` one word
 * at a time until the CLI answers with that command's own usage line; a
 * word it refuses, or a usage that names other words, is a problem. Then
 * every --flag before a bare `--` must appear in that usage (or the global
 * usage).
 */
function checkCommand({ where, argv }) {
  const words = [];
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (GLOBAL_WITH_VALUE.has(a) && words.length === 0) { rest.push(a); i++; continue; }
    if (a.startsWith('-') || rest.length > 0 && words.length === 0) { rest.push(...argv.slice(i)); break; }
    words.push(a);
  }
  const shown = `trainplane ${argv.join(' ')}`;
  let command = null;
  let help = null;
  for (let k = 1; k <= words.length && !command; k++) {
    help = cliHelp(words.slice(0, k));
    if (help.status !== 0) {
      return [`${where}: \`${shown}\`: \`trainplane ${words.slice(0, k).join(' ')} --help\` exits ${help.status}: ${help.text.trim().split('\n')[0]}`];
    }
    // A command's page names it as gcloud's do (NAME, then "trainplane
    // WORDS - summary"); a group answers with a usage line.
    const usage = /^NAME\n\s+trainplane ((?:[a-z][a-z0-9-]* )+)- /m.exec(help.text) ??
      /^Usage: trainplane ((?:[a-z][a-z0-9-]*(?: |$))+)/m.exec(help.text);
    if (usage) {
      command = usage[1].trim().split(' ');
      const named = words.slice(0, command.length);
      if (named.join(' ') !== command.join(' ')) {
        return [`${where}: \`${shown}\`: the CLI's command is \`trainplane ${command.join(' ')}\`, not \`trainplane ${named.join(' ')}\``];
      }
      if (command.length > k) help = cliHelp(command); // `submit --help` names `submit training`
    }
  }
  // A group alone (`trainplane nodes`) names no command: nothing more to check.
  const leafHelp = command ? help.text : '';
  const allowed = `${leafHelp}\n${cliHelp([]).text}`;
  const problems = [];
  const all = [...words.slice(command ? command.length : words.length), ...rest];
  for (const a of all) {
    if (a === '--') break;
    const flag = /^(--[a-z][a-z0-9-]*)/.exec(a)?.[1];
    if (!flag || flag === '--help') continue;
    const re = new RegExp(`(^|[^a-z0-9-])${flag.replace(/-/g, '\\-')}(?![a-z0-9-])`, 'm');
    if (!re.test(allowed)) {
      problems.push(`${where}: \`${shown}\`: ${flag} is not in \`trainplane ${(command ?? words).join(' ')} --help\``);
    }
  }
  return problems;
}

describe('trainplane commands in the pages', { skip: fs.existsSync(CLI_BIN) ? false : `no ${CLI_BIN}: make all` }, () => {
  it('every `trainplane ...` command of README.md, docs/*.md and agent/README.md is one the CLI knows, with flags its --help lists', () => {
    const commands = markdownFiles().flatMap((rel) => cliCommandsOf(rel, read(rel)));
    assert.ok(commands.length >= 15, `only ${commands.length} trainplane commands found in the pages`);
    assert.deepEqual(commands.flatMap(checkCommand), []);
  });

  it('the check does fail: an unknown group, an unknown command, a misspelt sub-command, an unknown flag', () => {
    const page = [
      'Run `trainplane ai-platform jobs',
      'describe census_1` or:',
      '',
      '```sh',
      'trainplane ai-platform jobs list --limit 3 && trainplane nodes drain gpu-1',
      'trainplane ai custom-jobs describe 1 --region us-central1 --format json   # --no-such-flag in a comment',
      'build/trainplane ai-platform jobs submit training j --region us-central1 -- --user_arg 1',
      'trainplane frobnicate all',
      'trainplane ai-platform jobs frobnicate census_1',
      'trainplane ai-platform jobs submit trainin j',
      'trainplane ai-platform jobs list \\',
      '    --no-such-flag 1',
      '```',
    ].join('\n');
    const commands = cliCommandsOf('page.md', page);
    assert.deepEqual(commands.map((c) => c.where),
      ['page.md:1', 'page.md:5', 'page.md:5', 'page.md:6', 'page.md:7', 'page.md:8', 'page.md:9', 'page.md:10', 'page.md:11']);
    const problems = commands.flatMap(checkCommand);
    assert.equal(problems.length, 4, problems.join('\n'));
    assert.match(problems[0], /^page\.md:8: .*trainplane frobnicate --help` exits 2: .*'frobnicate'/);
    assert.match(problems[1], /^page\.md:9: .*exits 2: .*'frobnicate'/);
    assert.match(problems[2], /^page\.md:10: .*`trainplane ai-platform jobs submit training`, not `trainplane ai-platform jobs submit trainin`/);
    assert.match(problems[3], /^page\.md:11: .*--no-such-flag is not in `trainplane ai-platform jobs list --help`/);
  });
});
