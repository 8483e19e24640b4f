// openapi.yaml must describe exactly the routes the server serves: the
// (method, path, operationId) set of the file is compared with
// `trainplane-server --routes`, both ways. And exactly the messages it
// parses and renders: each component schema that names its proto message
// (`x-proto-type`) is compared with the server's descriptors
// (`trainplane-server --schemas`): fields, JSON types, enum values,
// output-only as readOnly, both ways. Every JSON route references Google's
// system parameters (components/parameters). And the discovery documents
// (`trainplane-server --discovery`) give each method the query parameters,
// request and response openapi.yaml gives it. The server is not started.

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

function serverSchemas() {
  const r = runServerSync(['--schemas']);
  assert.equal(r.status, 0, `--schemas failed: ${r.stderr}`);
  return JSON.parse(r.stdout).messages;
}

/** What one descriptor field of `kind` must look like in a schema; '' when it does. */
function kindMismatch(field, schema, resolve) {
  const s = schema.$ref ? resolve(schema.$ref) : schema;
  const want = {
    string: ['string', undefined], bytes: ['string', 'byte'], bool: ['boolean', undefined],
    int32: ['integer', 'int32'], int64: ['string', 'int64'], double: ['number', 'double'],
    enum: ['string', undefined], duration: ['string', 'google-duration'],
    timestamp: ['string', 'date-time'],
  }[field.kind];
  if (field.kind === 'message') {
    return s?.['x-proto-type'] === field.message ? ''
      : `a $ref to the component of ${field.message}, not ${JSON.stringify(schema)}`;
  }
  if (field.kind === 'value') {
    // google.protobuf.Value/Struct: any JSON; described as an object (or left open).
    return !s || s['x-proto-type'] || (s.type && s.type !== 'object')
      ? `any JSON (type: object), not ${JSON.stringify(schema)}` : '';
  }
  if (!s || s.type !== want[0] || s.format !== want[1]) {
    return `type ${want[0]}${want[1] ? ` format ${want[1]}` : ''}, not ${JSON.stringify(schema)}`;
  }
  if (field.kind === 'enum' && JSON.stringify(s.enum) !== JSON.stringify(field.enum)) {
    return `enum ${JSON.stringify(field.enum)}, not ${JSON.stringify(s.enum)}`;
  }
  if (field.kind !== 'enum' && s.enum) return `no enum, not ${JSON.stringify(s.enum)}`;
  return '';
}

/** Differences between a descriptor message and its component schema, as sentences. */
function messageMismatches(msg, name, schema, resolve) {
  const out = [];
  const props = schema.properties ?? {};
  const names = msg.fields.map((f) => f.name);
  for (const p of Object.keys(props)) {
    if (!names.includes(p)) out.push(`${name}.${p}: in openapi.yaml, not in the server's ${msg.type}`);
  }
  for (const f of msg.fields) {
    const prop = props[f.name];
    if (!prop) {
      out.push(`${name}.${f.name}: the server's ${msg.type} has it, openapi.yaml does not`);
      continue;
    }
    const p = prop.$ref ? resolve(prop.$ref) : prop;
    if (Boolean(p.readOnly) !== f.outputOnly) {
      out.push(`${name}.${f.name}: readOnly must be ${f.outputOnly} (output only on the server)`);
    }
    let why;
    if (f.map) {
      why = p.type !== 'object' || !p.additionalProperties ? `a map: type object with additionalProperties`
        : kindMismatch(f, p.additionalProperties, resolve);
    } else if (f.repeated) {
      why = p.type !== 'array' || !p.items ? 'a list: type array with items' : kindMismatch(f, p.items, resolve);
    } else {
      why = kindMismatch(f, prop, resolve);
    }
    if (why) out.push(`${name}.${f.name}: ${why}`);
  }
  return out;
}

describe('openapi.yaml', () => {
  it('describes every message as the server parses and renders it (fields, types, enums)', () => {
    const { doc } = specRoutes();
    const components = doc.components.schemas;
    const resolve = (ref) => components[ref.split('/').pop()];
    const byType = new Map();
    for (const [name, schema] of Object.entries(components)) {
      const t = schema['x-proto-type'];
      if (!t) continue;
      assert.ok(!byType.has(t), `two components describe ${t}`);
      byType.set(t, [name, schema]);
    }
    const messages = serverSchemas();
    assert.ok(messages.length >= 20, `${messages.length} messages`);
    const problems = [];
    for (const msg of messages) {
      if (!byType.has(msg.type)) {
        problems.push(`${msg.type}: no component schema with x-proto-type ${msg.type}`);
        continue;
      }
      const [name, schema] = byType.get(msg.type);
      problems.push(...messageMismatches(msg, name, schema, resolve));
    }
    const served = new Set(messages.map((m) => m.type));
    for (const [t, [name]] of byType) {
      if (!served.has(t)) problems.push(`${name}: x-proto-type ${t} is no message of the server`);
    }
    assert.deepEqual(problems, []);
  });


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

  it('agrees with the discovery documents (--discovery): query parameters, request and response messages', () => {
    const { doc } = specRoutes();
    const components = doc.components.schemas;
    // A component's name in a discovery document: its proto type in PascalCase.
    const discoveryName = (ref) => {
      const t = components[ref.split('/').pop()]?.['x-proto-type'];
      return t ? t.split('.').map((w) => w[0].toUpperCase() + w.slice(1)).join('') : `(${ref}: no x-proto-type)`;
    };
    const ops = new Map();
    for (const item of Object.values(doc.paths)) {
      for (const m of METHODS) if (item[m]) ops.set(item[m].operationId, { item, op: item[m] });
    }
    const problems = [];
    for (const [api, version] of [['ml', 'v1'], ['aiplatform', 'v1'], ['logging', 'v2']]) {
      const r = runServerSync(['--discovery', api, version]);
      assert.equal(r.status, 0, r.stderr);
      const d = JSON.parse(r.stdout);
      const methods = [];
      const walk = (node) => {
        methods.push(...Object.values(node.methods ?? {}));
        Object.values(node.resources ?? {}).forEach(walk);
      };
      walk(d);
      assert.ok(methods.length > 0, api);
      for (const m of methods) {
        const { item, op } = ops.get(m.id) ?? {};
        if (!op) {
          problems.push(`${m.id}: not in openapi.yaml`);
          continue;
        }
        const described = [...(item.parameters ?? []), ...(op.parameters ?? [])]
          .filter((x) => !x.$ref && x.in === 'query')
          .map((x) => `${x.name} ${x.schema?.type} ${x.schema?.format ?? ''}`).sort();
        const listed = Object.entries(m.parameters).filter(([, p]) => p.location === 'query')
          .map(([n, p]) => `${n} ${p.type} ${p.format ?? ''}`).sort();
        if (JSON.stringify(described) !== JSON.stringify(listed)) {
          problems.push(`${m.id}: query parameters ${JSON.stringify(listed)} in the discovery document, ${JSON.stringify(described)} in openapi.yaml`);
        }
        const body = op.requestBody?.content?.['application/json']?.schema;
        if (!body ? m.request : body.$ref && discoveryName(body.$ref) !== m.request?.$ref) {
          problems.push(`${m.id}: request ${m.request?.$ref} in the discovery document, ${JSON.stringify(body)} in openapi.yaml`);
        }
        const reply = op.responses?.['200']?.content?.['application/json']?.schema;
        if (!reply?.$ref || discoveryName(reply.$ref) !== m.response.$ref) {
          problems.push(`${m.id}: response ${m.response.$ref} in the discovery document, ${JSON.stringify(reply)} in openapi.yaml`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it('every JSON route takes Google\'s system parameters, described once (server/sysparams.c)', () => {
    const { doc } = specRoutes();
    const system = ['prettyPrint', 'fields', 'alt', '$.xgafv', 'callback', 'quotaUser'];
    for (const name of system) {
      assert.ok(Object.values(doc.components.parameters).some((x) => x.name === name && x.in === 'query'),
        `components/parameters describes ${name}`);
    }
    for (const [p, item] of Object.entries(doc.paths)) {
      if (p === '/metrics' || p.startsWith('/console')) continue; // text and the console's files, not JSON
      for (const m of METHODS) {
        if (!item[m]) continue;
        const refs = [...(item.parameters ?? []), ...(item[m].parameters ?? [])]
          .filter((x) => x.$ref).map((x) => doc.components.parameters[x.$ref.split('/').pop()].name);
        for (const name of system) assert.ok(refs.includes(name), `${m.toUpperCase()} ${p} references ${name}`);
      }
    }
  });
});
