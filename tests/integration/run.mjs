// Runs the integration files as `node --test --test-concurrency=N FILES`
// does (a child process per file, N at once, TAP on stdout, exit status 1
// when a test failed), but starts them in the order given: `node --test`
// sorts its files by name, so the Makefile's longest-first order
// (IT_SLOW_NAMES) was lost and a long file whose name sorts late (storage_*,
// vertex_*) started last and held up the end of make test.
//
//   node tests/integration/run.mjs [--concurrency=N] FILE...

import { run } from 'node:test';
import { tap } from 'node:test/reporters';

let concurrency = 1;
const files = [];
for (const arg of process.argv.slice(2)) {
  const m = /^--(?:test-)?concurrency=(\d+)$/.exec(arg);
  if (m) concurrency = Number(m[1]);
  else if (arg.startsWith('-')) {
    process.stderr.write(`run.mjs: unknown option ${arg}\nusage: node run.mjs [--concurrency=N] FILE...\n`);
    process.exit(2);
  } else files.push(arg);
}
if (!files.length) {
  process.stderr.write('usage: node run.mjs [--concurrency=N] FILE...\n');
  process.exit(2);
}

const stream = run({ files, concurrency });
// What node --test counts as a failure: any failed test that is not a todo.
stream.on('test:fail', (data) => {
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
