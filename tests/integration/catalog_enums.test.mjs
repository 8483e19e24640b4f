// The catalog, openapi.yaml's AcceleratorType enums and the table of
// Google's sources (tests/unit/catalog_sources.tsv, whose job rows
// tests/unit/test_catalog_sources.c runs through the validator) say the same:
// each API's enum in openapi.yaml (itself tied to the server's descriptors by
// openapi.test.mjs) is exactly the table's enum rows for that API; every
// accelerator deploy/catalog.yaml gives an API is a value of that API's enum,
// and every enum value is known to the catalog. No server is started.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

import { REPO_ROOT } from './harness.mjs';

const read = (p) => fs.readFileSync(path.join(REPO_ROOT, p), 'utf8');

function openapiEnums() {
  const s = YAML.parse(read('openapi.yaml')).components.schemas;
  const drop = (e) => e.filter((v) => v !== 'ACCELERATOR_TYPE_UNSPECIFIED');
  return {
    ml: drop(s.AcceleratorConfig.properties.type.enum),
    vertex: drop(s.MachineSpec.properties.acceleratorType.enum),
  };
}

function tableEnums() {
  const out = { ml: new Map(), vertex: new Map() };
  for (const line of read('tests/unit/catalog_sources.tsv').split('\n')) {
    const c = line.split('\t');
    if (c[0] !== 'enum') continue;
    assert.ok(out[c[1]], `enum row for an unknown api: ${line}`);
    out[c[1]].set(c[2], { verdict: c[3], reason: c[4] });
  }
  return out;
}

function catalogAccelerators() {
  const cat = YAML.parse(read('deploy/catalog.yaml'));
  return cat.accelerators.map((a) => ({ name: a.name, apis: a.apis ?? ['ml', 'vertex'] }));
}

describe('accelerator enums: openapi.yaml, the catalog and the table of sources', () => {
  const api = openapiEnums();
  const table = tableEnums();
  const cat = catalogAccelerators();

  for (const which of ['ml', 'vertex']) {
    it(`${which}: openapi.yaml's enum is the table's enum rows, and every value is the catalog's`, () => {
      assert.deepEqual([...api[which]].sort(), [...table[which].keys()].sort());
      const known = new Set(cat.map((a) => a.name));
      for (const v of api[which]) assert.ok(known.has(v), `${which} enum value ${v} is not in deploy/catalog.yaml`);
      for (const [v, row] of table[which]) {
        if (row.verdict === 'refused') assert.ok(row.reason.length > 20, `${which} ${v}: refused without a reason`);
        else assert.equal(row.verdict, 'accepted', `${which} ${v}: verdict ${row.verdict}`);
      }
    });

    it(`${which}: every accelerator the catalog gives it is a value of its enum`, () => {
      for (const a of cat) {
        if (a.apis.includes(which)) assert.ok(api[which].includes(a.name), `catalog gives ${which} ${a.name}, not in openapi.yaml's enum`);
      }
    });
  }

  it('the enums are those of the sources: ml v1 11 values, Vertex 18 (UNSPECIFIED aside)', () => {
    assert.equal(api.ml.length, 11);
    assert.equal(api.vertex.length, 18);
    for (const v of ['NVIDIA_H100_MEGA_80GB', 'NVIDIA_H200_141GB', 'NVIDIA_B200', 'NVIDIA_GB200',
      'NVIDIA_RTX_PRO_6000', 'TPU_V4_POD', 'TPU_V5_LITEPOD']) assert.ok(api.vertex.includes(v), v);
  });

  it('docs/validation.md names every enum value refused everywhere', () => {
    const doc = read('docs/validation.md');
    for (const which of ['ml', 'vertex']) {
      for (const [v, row] of table[which]) {
        if (row.verdict === 'refused') assert.ok(doc.includes(v), `docs/validation.md does not name ${v}`);
      }
    }
  });
});
