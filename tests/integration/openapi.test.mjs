// openapi.yaml must describe exactly the routes the server serves: the
// (method, path, operationId) set of the file is compared with
// `trainplane-server --routes`, both ways. The server is not started.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

import { REPO_ROOT, runServerSync } from './harness.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function specRoutes() {
  const doc = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'openapi.yaml'), 'utf8'));
  const out = [];
  for (const [p, item] of Object.entries(doc.paths ?? {})) {
    for (const m of METHODS) {
      if (item[m]) out.push(`${m.toUpperCase()} ${p} ${item[m].operationId ?? '(no operationId)'}`);
    }
  }
  return { doc, routes: out.sort() };
}

function serverRoutes() {
  const r = runServerSync(['--routes']);
  assert.equal(r.status, 0, `--routes failed: ${r.stderr}`);
  const lines = r.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
  for (const l of lines) assert.match(l, /^[A-Z]+ \/\S* \S+$/, `--routes line: ${l}`);
  return lines.sort();
}

describe('openapi.yaml', () => {
  it('lists exactly the routes the server serves (method, path, operationId)', () => {
    const served = serverRoutes();
    const { routes: described } = specRoutes();
    assert.ok(served.length > 0);
    const missing = served.filter((r) => !described.includes(r));
    const extra = described.filter((r) => !served.includes(r));
    assert.deepEqual({ servedButNotInOpenapi: missing, inOpenapiButNotServed: extra },
      { servedButNotInOpenapi: [], inOpenapiButNotServed: [] });
  });

  it('is OpenAPI 3.0.3; operationIds are unique; every path parameter is declared', () => {
    const { doc } = specRoutes();
    assert.equal(doc.openapi, '3.0.3');
    const seen = new Set();
    for (const [p, item] of Object.entries(doc.paths)) {
      const names = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const m of METHODS) {
        if (!item[m]) continue;
        const op = item[m];
        assert.ok(!seen.has(op.operationId), `duplicate operationId ${op.operationId}`);
        seen.add(op.operationId);
        const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x) => {
          if (!x.$ref) return x;
          return doc.components.parameters[x.$ref.split('/').pop()];
        });
        const declared = params.filter((x) => x.in === 'path').map((x) => x.name).sort();
        assert.deepEqual(declared, [...names].sort(), `${m.toUpperCase()} ${p}: path parameters`);
      }
    }
  });
});
