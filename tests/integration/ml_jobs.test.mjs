// The ml v1 jobs API through raw HTTP: create, get, list (paging and
// filters), cancel, patch, getConfig, locations, and bad input of every
// kind. One private PostgreSQL and one server for the whole file.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertError, client, fieldViolations, isBase64, jobId, startPostgres, startServer, trainingInput,
} from './harness.mjs';

let pg;
let server;
let c;

before(async () => {
  pg = await startPostgres();
  server = await startServer({ pg });
  c = client(server.base);
});

after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    server?.kill();
    await pg?.cleanup();
  }
});

const jobsPath = (project = 'p') => `/v1/projects/${project}/jobs`;
const jobPath = (id, project = 'p') => `/v1/projects/${project}/jobs/${id}`;

async function create(body, project = 'p') {
  return c.post(jobsPath(project), body);
}

/** Creates a valid job and returns it (asserting 200). */
async function createOk(id = jobId(), extra = {}, project = 'p') {
  const res = await create({ jobId: id, trainingInput: trainingInput(), ...extra }, project);
  assert.equal(res.status, 200, res.text);
  return res.json;
}

function assertJsonReply(res) {
  assert.equal(res.headers.get('content-type'), 'application/json; charset=UTF-8');
}

function jobCount() {
  return Number(pg.psql('SELECT count(*) FROM jobs'));
}

/** Lists every job of a project with a filter, following nextPageToken. */
async function listAll(project, { filter, pageSize } = {}) {
  const out = [];
  let token = '';
  for (let i = 0; i < 200; i++) {
    const q = new URLSearchParams();
    if (filter !== undefined) q.set('filter', filter);
    if (pageSize !== undefined) q.set('pageSize', String(pageSize));
    if (token) q.set('pageToken', token);
    const res = await c.get(`${jobsPath(project)}?${q}`);
    assert.equal(res.status, 200, res.text);
    out.push(...(res.json.jobs ?? []));
    token = res.json.nextPageToken;
    if (!token) return out;
  }
  throw new Error('paging did not end');
}

const ids = (jobs) => jobs.map((j) => j.jobId);

// ---------------------------------------------------------------------------

describe('health', () => {
  it('/healthz and /readyz answer 200 JSON', async () => {
    for (const p of ['/healthz', '/readyz']) {
      const res = await c.get(p);
      assert.equal(res.status, 200, res.text);
      assertJsonReply(res);
      assert.equal(typeof res.json, 'object');
    }
  });
});

describe('projects.getConfig', () => {
  it('returns the service accounts, with the project number as an int64 string', async () => {
    const res = await c.get('/v1/projects/my-project:getConfig');
    assert.equal(res.status, 200, res.text);
    assertJsonReply(res);
    const { serviceAccount, serviceAccountProject, config } = res.json;
    assert.equal(typeof serviceAccountProject, 'string');
    assert.match(serviceAccountProject, /^\d+$/);
    assert.equal(serviceAccount, `service-${serviceAccountProject}@cloud-ml.google.com.iam.gserviceaccount.com`);
    assert.equal(typeof config.tpuServiceAccount, 'string');
    const again = await c.get('/v1/projects/my-project:getConfig');
    assert.deepEqual(again.json, res.json, 'stable for a project');
  });
});

describe('projects.locations', () => {
  it('lists every training location across pages, and get agrees with list', async () => {
    const all = [];
    let token = '';
    for (let i = 0; i < 50; i++) {
      const res = await c.get(`/v1/projects/p/locations?pageSize=3${token ? `&pageToken=${token}` : ''}`);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.json.locations.length <= 3);
      all.push(...res.json.locations);
      token = res.json.nextPageToken;
      if (!token) break;
    }
    const names = all.map((l) => l.name);
    assert.equal(new Set(names).size, names.length, 'no duplicates across pages');
    assert.ok(names.includes('projects/p/locations/us-central1'), names.join(','));
    for (const loc of all) {
      assert.match(loc.name, /^projects\/p\/locations\/[a-z0-9-]+$/);
      assert.ok(loc.capabilities.some((cap) => cap.type === 'TRAINING'), JSON.stringify(loc));
    }
    const whole = await c.get('/v1/projects/p/locations');
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.json.locations.map((l) => l.name), names, 'default page holds them all, same order');

    const one = await c.get('/v1/projects/p/locations/us-central1');
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.json, all.find((l) => l.name === 'projects/p/locations/us-central1'));
    const accs = one.json.capabilities.find((cap) => cap.type === 'TRAINING').availableAccelerators;
    assert.ok(accs.includes('NVIDIA_TESLA_V100'), JSON.stringify(accs));
  });

  it('an unknown location is 404 NOT_FOUND', async () => {
    const res = await c.get('/v1/projects/p/locations/mars-central1');
    assertError(res, 404, 'NOT_FOUND', /mars-central1/);
  });

  it('a negative pageSize or a bad pageToken is 400', async () => {
    assertError(await c.get('/v1/projects/p/locations?pageSize=-1'), 400, 'INVALID_ARGUMENT', /page_size/);
    assertError(await c.get('/v1/projects/p/locations?pageToken=bogus'), 400, 'INVALID_ARGUMENT', /page_token/);
  });
});

describe('canonical rendering (issue 17)', () => {
  // A job given in another order than the protos', int64 as numbers and
  // doubles as a JSON encoder writes them (1.0, 0.1).
  const body = (id) => ({
    labels: { zeta: 'z', alpha: 'a' },
    trainingInput: {
      region: 'us-central1',
      masterConfig: { imageUri: 'gcr.io/test/trainer:latest' },
      hyperparameters: {
        params: [
          { type: 'INTEGER', parameterName: 'layers', maxValue: 10, minValue: 1.0 },
          { parameterName: 'lr', type: 'DOUBLE', minValue: 0.1, maxValue: 0.30000000000000004 },
        ],
        goal: 'MAXIMIZE',
        maxTrials: 2,
      },
      scheduling: { priority: 5, maxRunningTime: '7200s' },
      workerCount: 2,
      workerType: 'n1-standard-4',
      masterType: 'n1-standard-4',
      scaleTier: 'CUSTOM',
    },
    jobId: id,
  });

  it('create, get and list give the same bytes for a job', async () => {
    // Compact (prettyPrint=false): the bytes each fast path renders.
    const id = jobId('canon');
    // A job, not a study: a study's trials start at once, and its state and
    // output move with them (tuning.test.mjs); its spec's rendering is the
    // next test's.
    const job = body(id);
    delete job.trainingInput.hyperparameters;
    const res = await c.post(`${jobsPath('canon')}?prettyPrint=false`, job);
    assert.equal(res.status, 200, res.text);
    const got = await c.get(`${jobPath(id, 'canon')}?prettyPrint=false`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.text, res.text, 'get: the bytes create answered');
    const again = await c.get(`${jobPath(id, 'canon')}?prettyPrint=false`);
    assert.equal(again.text, res.text, 'a second get (the job cache): the same bytes');
    const list = await c.get(`${jobsPath('canon')}?prettyPrint=false`);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.text, `{"jobs":[${res.text}]}`, 'list: the same bytes');
    // By default the same, laid out as Google's pretty print.
    const pretty = (t) => `${JSON.stringify(JSON.parse(t), null, 2)}\n`;
    assert.equal((await c.get(jobPath(id, 'canon'))).text, pretty(res.text), 'get, pretty');
    assert.equal((await c.get(jobsPath('canon'))).text, pretty(list.text), 'list, pretty');
  });

  it('renders fields in proto field order, int64 as strings, doubles in their shortest form', async () => {
    const id = jobId('canonorder');
    const res = await create(body(id), 'canon');
    assert.equal(res.status, 200, res.text);
    const text = (await c.get(`${jobPath(id, 'canon')}?prettyPrint=false`)).text;
    const job = JSON.parse(text);
    assert.deepEqual(Object.keys(job),
      ['jobId', 'trainingInput', 'createTime', 'state', 'trainingOutput', 'labels', 'etag']);
    assert.deepEqual(Object.keys(job.trainingInput),
      ['scaleTier', 'masterType', 'workerType', 'workerCount', 'hyperparameters', 'region',
        'masterConfig', 'scheduling']);
    assert.deepEqual(Object.keys(job.trainingInput.hyperparameters), ['goal', 'params', 'maxTrials']);
    assert.deepEqual(Object.keys(job.trainingInput.hyperparameters.params[0]),
      ['parameterName', 'minValue', 'maxValue', 'type']);
    assert.deepEqual(Object.keys(job.labels), ['alpha', 'zeta']);
    assert.ok(text.includes('"workerCount":"2"'), text);
    assert.ok(text.includes('{"parameterName":"layers","minValue":1,"maxValue":10,"type":"INTEGER"}'), text);
    assert.ok(text.includes('{"parameterName":"lr","minValue":0.1,"maxValue":0.30000000000000004,"type":"DOUBLE"}'),
      text);
    assert.ok(text.includes('"scheduling":{"maxRunningTime":"7200s","priority":5}'), text);
    assert.ok(!/: /.test(text), `no space after a colon: ${text}`);
  });
});

describe('projects.jobs.create', () => {
  it('returns the created job: QUEUED, createTime, base64 etag, trainingOutput {}, input echoed', async () => {
    const id = jobId('create');
    const before = Date.now();
    const res = await create({ jobId: id, trainingInput: trainingInput(), labels: { owner: 'alice' } });
    assert.equal(res.status, 200, res.text);
    assertJsonReply(res);
    const job = res.json;
    assert.equal(job.jobId, id);
    assert.equal(job.state, 'QUEUED');
    assert.match(job.createTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const t = Date.parse(job.createTime);
    assert.ok(t >= before - 5000 && t <= Date.now() + 5000, `createTime ${job.createTime} is now`);
    assert.ok(isBase64(job.etag), `etag ${job.etag} is base64`);
    assert.equal(Buffer.from(job.etag, 'base64').length, 8);
    assert.deepEqual(job.trainingOutput, {});
    assert.deepEqual(job.labels, { owner: 'alice' });
    assert.equal(job.startTime, undefined);
    assert.equal(job.endTime, undefined);
    assert.equal(job.errorMessage, undefined);
    // scaleTier BASIC is the enum's default: proto3 JSON leaves it out.
    assert.deepEqual(job.trainingInput, { region: 'us-central1', masterConfig: { imageUri: 'gcr.io/test/trainer:latest' } });

    const got = await c.get(jobPath(id));
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, job, 'get returns what create returned');
  });

  it('normalises the input: snake_case accepted, camelCase out, proto3 defaults left out', async () => {
    const id = jobId('snake');
    const res = await create({
      job_id: id,
      training_input: {
        scale_tier: 'BASIC',
        region: 'us-central1',
        master_config: { image_uri: 'gcr.io/test/img:1' },
        args: [],
        use_chief_in_tf_config: false,
        job_dir: '',
        scheduling: { max_running_time: '7200s', priority: 0 },
      },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.trainingInput, {
      region: 'us-central1',
      masterConfig: { imageUri: 'gcr.io/test/img:1' },
      scheduling: { maxRunningTime: '7200s' },
    });
  });

  it('accepts int64 fields as JSON numbers or strings and emits strings; int32 stay numbers', async () => {
    const custom = (count, accCount, priority) => ({
      scaleTier: 'CUSTOM',
      region: 'us-central1',
      masterType: 'n1-standard-4',
      masterConfig: {
        imageUri: 'gcr.io/test/trainer:latest',
        acceleratorConfig: { type: 'NVIDIA_TESLA_V100', count: accCount },
      },
      workerType: 'n1-standard-4',
      workerCount: count,
      scheduling: { priority },
    });
    const a = await create({ jobId: jobId('int64num'), trainingInput: custom(2, 1, 5) });
    assert.equal(a.status, 200, a.text);
    const b = await create({ jobId: jobId('int64str'), trainingInput: custom('2', '1', '5') });
    assert.equal(b.status, 200, b.text);
    for (const job of [a.json, b.json]) {
      assert.equal(job.trainingInput.workerCount, '2');
      assert.equal(job.trainingInput.masterConfig.acceleratorConfig.count, '1');
      assert.equal(job.trainingInput.scheduling.priority, 5);
    }
    assert.deepEqual(a.json.trainingInput, b.json.trainingInput);
    const got = await c.get(jobPath(a.json.jobId));
    assert.equal(got.json.trainingInput.workerCount, '2');
  });

  it('ignores output-only fields in the request', async () => {
    const id = jobId('outonly');
    const res = await create({
      jobId: id, trainingInput: trainingInput(), state: 'SUCCEEDED', createTime: '2001-01-01T00:00:00Z',
      errorMessage: 'x', trainingOutput: { consumedMLUnits: 3 },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.state, 'QUEUED');
    assert.notEqual(res.json.createTime, '2001-01-01T00:00:00Z');
    assert.equal(res.json.errorMessage, undefined);
    assert.deepEqual(res.json.trainingOutput, {});
  });

  it('a duplicate jobId is 409 ALREADY_EXISTS with a job.job_id violation', async () => {
    const id = jobId('dup');
    await createOk(id);
    const res = await create({ jobId: id, trainingInput: trainingInput() });
    const e = assertError(res, 409, 'ALREADY_EXISTS', 'Field: job.job_id Error: A job with this id already exists.');
    assert.deepEqual(fieldViolations(e), [{ field: 'job.job_id', description: 'A job with this id already exists.' }]);
    // The same id in another project is another job.
    const other = await create({ jobId: id, trainingInput: trainingInput() }, 'other-project');
    assert.equal(other.status, 200, other.text);
  });

  it('the jobId is required and checked (letter first, [A-Za-z0-9_], at most 128)', async () => {
    let e = assertError(await create({ trainingInput: trainingInput() }), 400, 'INVALID_ARGUMENT', /^Field: job\.job_id Error: /);
    assert.equal(fieldViolations(e)[0].field, 'job.job_id');
    for (const bad of ['1abc', '_abc', 'a-b', 'a b', 'a.b', 'a'.repeat(129), '', 'été', "x'; DROP TABLE jobs; --"]) {
      e = assertError(await create({ jobId: bad, trainingInput: trainingInput() }), 400, 'INVALID_ARGUMENT',
        /^Field: job\.job_id Error: /);
      assert.equal(fieldViolations(e)[0].field, 'job.job_id', `jobId ${JSON.stringify(bad)}`);
    }
    const long = `A${'b_9'.repeat(43)}`.slice(0, 128);
    assert.equal(long.length, 128);
    assert.equal((await create({ jobId: long, trainingInput: trainingInput() })).status, 200);
  });

  it('a job needs a trainingInput; predictionInput is refused as UNIMPLEMENTED', async () => {
    let e = assertError(await create({ jobId: jobId('noinput') }), 400, 'INVALID_ARGUMENT',
      /^Field: job\.training_input Error: /);
    assert.equal(fieldViolations(e)[0].field, 'job.training_input');
    assertError(await create({ jobId: jobId('pred'), predictionInput: { region: 'us-central1' } }), 501, 'UNIMPLEMENTED');
    e = assertError(await create({ jobId: jobId('both'), trainingInput: trainingInput(), predictionInput: { region: 'us-central1' } }),
      400, 'INVALID_ARGUMENT');
    assert.ok(fieldViolations(e).some((v) => v.field === 'job'));
  });

  it('the region is required and must be known (training_input.region)', async () => {
    const noRegion = trainingInput();
    delete noRegion.region;
    let e = assertError(await create({ jobId: jobId('noregion'), trainingInput: noRegion }), 400, 'INVALID_ARGUMENT',
      /Field: training_input\.region Error: /);
    assert.ok(fieldViolations(e).some((v) => v.field === 'training_input.region'), JSON.stringify(e));
    e = assertError(await create({ jobId: jobId('mars'), trainingInput: trainingInput({ region: 'mars-central1' }) }),
      400, 'INVALID_ARGUMENT', /Field: training_input\.region Error: /);
    assert.ok(fieldViolations(e).some((v) => v.field === 'training_input.region'), JSON.stringify(e));
  });
});

describe('semantic validation through HTTP (catalog rules)', () => {
  const img = { imageUri: 'gcr.io/test/trainer:latest' };
  const cases = [
    ['CUSTOM without masterType', { scaleTier: 'CUSTOM', region: 'us-central1', masterConfig: img },
      ['training_input.master_type']],
    ['workerCount outside CUSTOM', { scaleTier: 'BASIC', region: 'us-central1', masterConfig: img, workerCount: 2 },
      ['training_input.worker_count']],
    ['neither packages nor an image', { scaleTier: 'BASIC', region: 'us-central1' },
      ['training_input.package_uris', 'training_input.python_module']],
    ['an image and a runtimeVersion', { scaleTier: 'BASIC', region: 'us-central1', masterConfig: img, runtimeVersion: '2.4' },
      ['training_input.runtime_version']],
    ['a GPU the region does not offer', {
      scaleTier: 'CUSTOM', region: 'europe-west3', masterType: 'n1-standard-4',
      masterConfig: { ...img, acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: '1' } },
    }, ['training_input.region']],
    ['a GPU count the machine type does not take', {
      scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n1-standard-4',
      masterConfig: { ...img, acceleratorConfig: { type: 'NVIDIA_TESLA_T4', count: 3 } },
    }, ['training_input.master_config.accelerator_config.count']],
    ['an unknown machine type', { scaleTier: 'CUSTOM', region: 'us-central1', masterType: 'n9-huge', masterConfig: img },
      ['training_input.master_type']],
    ['maxWaitTime under 1800s', { scaleTier: 'BASIC', region: 'us-central1', masterConfig: img, scheduling: { maxWaitTime: '60s' } },
      ['training_input.scheduling.max_wait_time']],
    ['several problems at once, all reported', { scaleTier: 'CUSTOM', region: 'mars', masterConfig: img, workerCount: 2 },
      ['training_input.master_type', 'training_input.worker_type', 'training_input.region']],
  ];
  for (const [name, ti, fields] of cases) {
    it(name, async () => {
      const e = assertError(await create({ jobId: jobId('sem'), trainingInput: ti }), 400, 'INVALID_ARGUMENT');
      const got = fieldViolations(e).map((v) => v.field);
      assert.deepEqual([...got].sort(), [...fields].sort());
      const lines = e.message.split('\n');
      assert.equal(lines.length, got.length, 'one message line per violation');
      for (const f of fields) assert.ok(lines.some((l) => l.startsWith(`Field: ${f} Error: `)), `${f} in ${e.message}`);
    });
  }

  it('a package job with a runtime and python version is valid', async () => {
    const res = await create({
      jobId: jobId('pkg'),
      trainingInput: {
        scaleTier: 'BASIC', region: 'us-central1', packageUris: ['gs://b/trainer-0.1.tar.gz'],
        pythonModule: 'trainer.task', runtimeVersion: '2.4', pythonVersion: '3.7',
      },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.trainingInput.packageUris, ['gs://b/trainer-0.1.tar.gz']);
  });
});

describe('bad input', () => {
  it('malformed JSON is 400 INVALID_ARGUMENT "Invalid JSON payload received."', async () => {
    for (const text of ['{bad', '{"jobId": "a",}', '{"jobId": "a"', '"just a string"', '[1,2]', 'null', '{"a":1}{"b":2}']) {
      const res = await c.post(jobsPath(), text, { headers: { 'Content-Type': 'application/json' } });
      assertError(res, 400, 'INVALID_ARGUMENT', /^Invalid JSON payload received\. /);
    }
    const invalidUtf8 = Buffer.from('{"jobId":"\xff"}', 'latin1');
    assertError(await c.post(jobsPath(), invalidUtf8, { headers: { 'Content-Type': 'application/json' } }),
      400, 'INVALID_ARGUMENT', /^Invalid JSON payload received\. /);
  });

  it('wrong JSON types name the field and its type', async () => {
    let e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ workerCount: 'abc' }) }),
      400, 'INVALID_ARGUMENT', 'Invalid value at \'job.training_input.worker_count\' (TYPE_INT64), "abc"');
    assert.equal(fieldViolations(e)[0].field, 'job.training_input.worker_count');

    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ workerCount: 1.5 }) }),
      400, 'INVALID_ARGUMENT', 'Invalid value at \'job.training_input.worker_count\' (TYPE_INT64), 1.5');
    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ workerCount: '9223372036854775808' }) }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.training_input\.worker_count' \(TYPE_INT64\)/);

    e = assertError(await create({ jobId: 5, trainingInput: trainingInput() }), 400, 'INVALID_ARGUMENT',
      'Invalid value at \'job.job_id\' (TYPE_STRING), 5');
    assert.equal(fieldViolations(e)[0].field, 'job.job_id');

    e = assertError(await create({ jobId: jobId('t'), trainingInput: 'x' }), 400, 'INVALID_ARGUMENT',
      /^Invalid value at 'job\.training_input' /);
    assert.equal(fieldViolations(e)[0].field, 'job.training_input');

    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ scaleTier: 'HUGE' }) }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.training_input\.scale_tier' .*"HUGE"$/);
    assert.equal(fieldViolations(e)[0].field, 'job.training_input.scale_tier');

    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ args: 'not-a-list' }) }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.training_input\.args' /);

    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput(), labels: ['a'] }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.labels' /);
    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput(), labels: { a: 1 } }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.labels\[a\]' \(TYPE_STRING\), 1$/);

    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ scheduling: { maxRunningTime: '2 hours' } }) }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.training_input\.scheduling\.max_running_time' /);
    e = assertError(await create({ jobId: jobId('t'), trainingInput: trainingInput({ useChiefInTfConfig: 'yes' }) }),
      400, 'INVALID_ARGUMENT', /^Invalid value at 'job\.training_input\.use_chief_in_tf_config' \(TYPE_BOOL\)/);
  });

  it('unknown fields are refused with their path', async () => {
    let e = assertError(await create({ jobId: jobId('u'), trainingInput: trainingInput({ masterTypo: 'n1-standard-4' }) }),
      400, 'INVALID_ARGUMENT',
      'Invalid JSON payload received. Unknown name "masterTypo" at \'job.training_input\': Cannot find field.');
    assert.deepEqual(fieldViolations(e).map((v) => v.field), ['job.training_input']);

    e = assertError(await create({ jobId: jobId('u'), trainingInput: trainingInput(), foo: 1 }), 400, 'INVALID_ARGUMENT',
      'Invalid JSON payload received. Unknown name "foo" at \'job\': Cannot find field.');
    assert.deepEqual(fieldViolations(e).map((v) => v.field), ['job']);

    e = assertError(await create({
      jobId: jobId('u'),
      trainingInput: trainingInput({ masterConfig: { imageUri: 'x', acceleratorConfig: { kind: 'GPU' } } }),
    }), 400, 'INVALID_ARGUMENT', /Unknown name "kind" at 'job\.training_input\.master_config\.accelerator_config'/);
    assert.equal(fieldViolations(e)[0].field, 'job.training_input.master_config.accelerator_config');
  });

  it('a body over the limit is 413 INVALID_ARGUMENT, with or without Content-Length', async () => {
    const big = JSON.stringify({ jobId: jobId('big'), trainingInput: trainingInput({ args: ['x'.repeat(1_100_000)] }) });
    assertError(await c.post(jobsPath(), big, { headers: { 'Content-Type': 'application/json' } }),
      413, 'INVALID_ARGUMENT', 'Request payload size exceeds the limit: 1048576 bytes.');

    // Chunked: the server only finds out while reading.
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const stream = new ReadableStream({
      pull(ctrl) {
        if (sent === 0) ctrl.enqueue(Buffer.from('{"jobId":"chunked","x":"'));
        if (sent >= 1_200_000) {
          ctrl.enqueue(Buffer.from('"}'));
          ctrl.close();
          return;
        }
        ctrl.enqueue(chunk);
        sent += chunk.length;
      },
    });
    const res = await fetch(server.base + jobsPath(), {
      method: 'POST', body: stream, duplex: 'half', headers: { 'Content-Type': 'application/json' },
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    assertError({ status: res.status, headers: res.headers, text, json: JSON.parse(text) },
      413, 'INVALID_ARGUMENT', 'Request payload size exceeds the limit: 1048576 bytes.');

    // Just under the limit is read and parsed (here: an unknown field).
    const under = JSON.stringify({ jobId: 'under', pad: 'y'.repeat(1_000_000) });
    assertError(await c.post(jobsPath(), under, { headers: { 'Content-Type': 'application/json' } }),
      400, 'INVALID_ARGUMENT', /Unknown name "pad"/);
    assert.equal((await c.get('/healthz')).status, 200);
  });

  it('a known path with the wrong method is 405 UNIMPLEMENTED with an Allow header', async () => {
    const cases = [
      ['DELETE', jobPath('x'), ['GET', 'PATCH']],
      ['PUT', jobsPath(), ['GET', 'POST']],
      ['GET', `${jobPath('x')}:cancel`, ['POST']],
      ['POST', '/v1/projects/p:getConfig', ['GET']],
      ['POST', '/healthz', ['GET']],
      ['DELETE', '/v1/projects/p/locations/us-central1', ['GET']],
    ];
    for (const [method, p, allow] of cases) {
      const res = await c.request(method, p);
      assertError(res, 405, 'UNIMPLEMENTED');
      const got = (res.headers.get('allow') ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort();
      assert.deepEqual(got, allow, `${method} ${p}: Allow`);
    }
  });

  it('an unknown path or custom verb is 404 NOT_FOUND', async () => {
    for (const p of ['/v1/nope', '/', '/v2/projects/p/jobs', '/v1/projects/p/models', `${jobPath('x')}:frobnicate`,
      '/v1/projects/p/jobs/x/y', '/v1/projects/p:getConfigX']) {
      const res = await c.get(p);
      assertError(res, 404, 'NOT_FOUND');
      assert.ok(res.json.error.message.length > 0);
    }
    assertError(await c.get('/v1/nope'), 404, 'NOT_FOUND', 'The requested URL /v1/nope was not found on this server.');
  });

  it('Content-Type: JSON with a charset or none at all is read; anything else is 415', async () => {
    const body = (id) => JSON.stringify({ jobId: id, trainingInput: trainingInput() });
    let res = await c.post(jobsPath(), body(jobId('ct')), { headers: { 'Content-Type': 'application/json; charset=UTF-8' } });
    assert.equal(res.status, 200, res.text);
    res = await c.post(jobsPath(), body(jobId('ct')), { headers: { 'Content-Type': 'APPLICATION/JSON' } });
    assert.equal(res.status, 200, res.text);
    res = await c.post(jobsPath(), Buffer.from(body(jobId('ct')))); // fetch sends no Content-Type for a Buffer
    assert.equal(res.status, 200, res.text);
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'multipart/form-data; boundary=x']) {
      res = await c.post(jobsPath(), body(jobId('ct')), { headers: { 'Content-Type': ct } });
      assertError(res, 415, 'INVALID_ARGUMENT', /Content-Type/);
    }
  });

  it('the standard query parameters are accepted (system_params.test.mjs tests what each does)', async () => {
    const job = await createOk(jobId('std'));
    const std = 'key=any-key&alt=json&prettyPrint=false&%24.xgafv=2&quotaUser=q&access_token=t'
      + '&oauth_token=o&upload_protocol=raw&uploadType=media';
    const got = await c.get(`${jobPath(job.jobId)}?${std}`);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, job);
    const some = await c.get(`${jobPath(job.jobId)}?${std}&fields=jobId`);
    assert.deepEqual(some.json, { jobId: job.jobId });
    const list = await c.get(`${jobsPath()}?${std}&pageSize=1`);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.jobs.length, 1);
    const created = await c.post(`${jobsPath()}?${std}`, { jobId: jobId('std'), trainingInput: trainingInput() });
    assert.equal(created.status, 200, created.text);
    assert.equal((await c.get(`/v1/projects/p:getConfig?${std}`)).status, 200);
  });

  it('SQL metacharacters in ids, labels and filters are data, never SQL', async () => {
    const evil = "'; DROP TABLE jobs; --";
    const enc = encodeURIComponent(evil);
    const before = jobCount();
    assert.ok(before > 0);

    // Ids in the path are checked as Google's syntax has them (issue 12):
    // such a job id or project id never reaches the database.
    let res = await c.get(jobPath(enc));
    assertError(res, 400, 'INVALID_ARGUMENT', /^Invalid jobsId in the request URL/);
    assertError(await c.post(`${jobPath(enc)}:cancel`), 400, 'INVALID_ARGUMENT');
    assertError(await c.patch(`${jobPath(enc)}?updateMask=labels`, { labels: {} }), 400, 'INVALID_ARGUMENT');
    res = await c.get(`${jobsPath(enc)}`);
    assertError(res, 400, 'INVALID_ARGUMENT', /^Invalid projectsId in the request URL/);
    res = await c.get(`${jobsPath()}?filter=${encodeURIComponent(`labels.owner="${evil}"`)}`);
    assert.equal(res.status, 200, res.text);
    res = await c.get(`${jobsPath()}?filter=${encodeURIComponent(`jobId:"x' OR '1'='1"`)}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {});
    res = await c.get(`${jobsPath()}?filter=${encodeURIComponent(`labels.x'y=1`)}`);
    assert.ok([200, 400].includes(res.status), res.text);

    // A label value with metacharacters: stored as given, or refused by the label rules.
    const id = jobId('evil');
    res = await create({ jobId: id, trainingInput: trainingInput(), labels: { owner: evil } });
    assert.ok(res.status === 200 || res.status === 400, res.text);
    if (res.status === 400) {
      assertError(res, 400, 'INVALID_ARGUMENT', /^Field: job\.labels/);
    } else {
      assert.deepEqual(res.json.labels, { owner: evil });
      const list = await c.get(`${jobsPath()}?filter=${encodeURIComponent(`labels.owner="${evil.replace(/"/g, '\\"')}"`)}`);
      assert.deepEqual(ids(list.json.jobs ?? []), [id]);
    }
    assert.equal(pg.psql("SELECT to_regclass('jobs') IS NOT NULL"), 't', 'the jobs table is still there');
    assert.equal(jobCount(), before + (res.status === 200 ? 1 : 0));
  });

  it('unicode in path ids and labels: 404/400 or stored exactly, never 500', async () => {
    // Not job ids or project ids in Google's syntax (issue 12): 400, never 500.
    for (const p of ['été', '日本語', 'emoji😀', 'ǅ']) {
      assertError(await c.get(jobPath(encodeURIComponent(p))), 400, 'INVALID_ARGUMENT', /^Invalid jobsId in the request URL/);
    }
    const res = await c.get(jobsPath(encodeURIComponent('проект')));
    assertError(res, 400, 'INVALID_ARGUMENT', /^Invalid projectsId in the request URL/);
    const id = jobId('uni');
    const labels = { 'ключ': 'значение', owner: 'zoë', team: '日本' };
    const made = await create({ jobId: id, trainingInput: trainingInput(), labels });
    assert.ok(made.status === 200 || made.status === 400, made.text);
    if (made.status === 200) {
      assert.deepEqual(made.json.labels, labels);
      assert.deepEqual((await c.get(jobPath(id))).json.labels, labels);
      const list = await c.get(`${jobsPath()}?filter=${encodeURIComponent('labels.ключ=значение')}`);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(ids(list.json.jobs), [id]);
    } else {
      assertError(made, 400, 'INVALID_ARGUMENT', /^Field: job\.labels/);
    }
  });

  it('invalid UTF-8 in the path or the filter is a 4xx with a message, never 500', async () => {
    // PostgreSQL refuses such bytes and jansson refuses them in messages: the
    // server must check the URL before either sees it.
    const cases = [
      jobPath('a%FFb'),
      '/v1/projects/p%FF/jobs',
      '/v1/projects/p%FF/jobs/x',
      `${jobsPath()}?filter=labels.a%3D%FF`,
      `${jobsPath()}?filter=labels.a%FF%3D1`,
      `${jobsPath()}?filter=fo%FFo%3D1`,
      '/v1/zz%FF',
    ];
    const failures = [];
    for (const p of cases) {
      const res = await c.get(p);
      const e = res.json?.error;
      if (!(res.status === 400 || res.status === 404) || !e || typeof e.message !== 'string' || !e.message) {
        failures.push(`GET ${p} -> ${res.status} ${res.text}`);
      }
    }
    assert.deepEqual(failures, []);
    assert.equal((await c.get('/healthz')).status, 200);
  });
});

describe('NUL bytes', () => {
  it('a %00 in a path id is not cut off: the URL names no job', async () => {
    // Decoded, %00 would cut the C string and GET /jobs/<id>%00x read <id>.
    const job = await createOk(jobId('nul'));
    const res = await c.get(jobPath(`${job.jobId}%00suffix`));
    assert.ok(res.status === 404 || res.status === 400, `GET ${job.jobId}%00suffix -> ${res.status} ${res.text}`);
    assert.ok(res.json?.error, res.text);
  });
});

describe('projects.jobs.get', () => {
  it('an unknown job is 404 NOT_FOUND naming it', async () => {
    assertError(await c.get(jobPath('no_such_job')), 404, 'NOT_FOUND', 'Job projects/p/jobs/no_such_job was not found.');
  });

  it('a job of another project is not visible', async () => {
    const job = await createOk(jobId('proj'));
    assertError(await c.get(jobPath(job.jobId, 'not-p')), 404, 'NOT_FOUND', `Job projects/not-p/jobs/${job.jobId} was not found.`);
  });
});

describe('projects.jobs.list', () => {
  it('an empty list is {}', async () => {
    const res = await c.get(jobsPath('empty-project'));
    assert.equal(res.status, 200, res.text);
    assertJsonReply(res);
    assert.deepEqual(res.json, {});
  });

  it('pages newest first with no duplicates or omissions; the token is keyset-stable', async () => {
    const project = 'paging';
    const made = [];
    for (let i = 0; i < 25; i++) made.push((await createOk(jobId(`pg${i}`), {}, project)).jobId);
    const newestFirst = [...made].reverse();

    const page1 = await c.get(`${jobsPath(project)}?pageSize=10`);
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(ids(page1.json.jobs), newestFirst.slice(0, 10));
    assert.equal(typeof page1.json.nextPageToken, 'string');
    assert.ok(page1.json.nextPageToken.length > 0);

    // Jobs created between pages do not shift the pages that follow.
    const late = [];
    for (let i = 0; i < 3; i++) late.push((await createOk(jobId('late'), {}, project)).jobId);

    const page2 = await c.get(`${jobsPath(project)}?pageSize=10&pageToken=${page1.json.nextPageToken}`);
    assert.equal(page2.status, 200, page2.text);
    assert.deepEqual(ids(page2.json.jobs), newestFirst.slice(10, 20));
    const page3 = await c.get(`${jobsPath(project)}?pageSize=10&pageToken=${page2.json.nextPageToken}`);
    assert.equal(page3.status, 200, page3.text);
    assert.deepEqual(ids(page3.json.jobs), newestFirst.slice(20));
    assert.equal(page3.json.nextPageToken, undefined, 'no token after the last page');

    const all = await listAll(project, { pageSize: 7 });
    assert.deepEqual(ids(all), [...late.reverse(), ...newestFirst]);
    const times = all.map((j) => Date.parse(j.createTime));
    for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] >= times[i], 'createTime descending');

    // Exactly one page's worth: no token.
    const exact = await c.get(`${jobsPath(project)}?pageSize=${all.length}`);
    assert.equal(exact.json.jobs.length, all.length);
    assert.equal(exact.json.nextPageToken, undefined);
  });

  it('pageSize: default 20, 0 means default, over 100 is clamped to 100, negative or junk is 400', async () => {
    const project = 'bigpage';
    const todo = Array.from({ length: 105 }, (_, i) => jobId(`bp${i}`));
    for (let i = 0; i < todo.length; i += 5) {
      await Promise.all(todo.slice(i, i + 5).map((id) => createOk(id, {}, project)));
    }
    let res = await c.get(jobsPath(project));
    assert.equal(res.json.jobs.length, 20);
    assert.ok(res.json.nextPageToken);
    res = await c.get(`${jobsPath(project)}?pageSize=0`);
    assert.equal(res.json.jobs.length, 20);
    res = await c.get(`${jobsPath(project)}?pageSize=1000`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.jobs.length, 100);
    const rest = await c.get(`${jobsPath(project)}?pageSize=1000&pageToken=${res.json.nextPageToken}`);
    assert.equal(rest.json.jobs.length, 5);
    assert.equal(rest.json.nextPageToken, undefined);
    const seen = new Set([...ids(res.json.jobs), ...ids(rest.json.jobs)]);
    assert.deepEqual([...seen].sort(), [...todo].sort());

    for (const bad of ['-1', 'abc', '1.5']) {
      assertError(await c.get(`${jobsPath(project)}?pageSize=${bad}`), 400, 'INVALID_ARGUMENT', /^Field: page_size Error: /);
    }
  });

  it('a page token is opaque and bound to its filter', async () => {
    const project = 'paging';
    const first = await c.get(`${jobsPath(project)}?pageSize=2&filter=${encodeURIComponent('state:QUEUED')}`);
    assert.equal(first.status, 200, first.text);
    const token = first.json.nextPageToken;
    assert.ok(token);
    const same = await c.get(`${jobsPath(project)}?pageSize=2&filter=${encodeURIComponent('state:QUEUED')}&pageToken=${token}`);
    assert.equal(same.status, 200, same.text);
    assertError(await c.get(`${jobsPath(project)}?pageSize=2&filter=${encodeURIComponent('state:CANCELLED')}&pageToken=${token}`),
      400, 'INVALID_ARGUMENT', /^Field: page_token Error: /);
    assertError(await c.get(`${jobsPath(project)}?pageSize=2&pageToken=${token}`), 400, 'INVALID_ARGUMENT', /^Field: page_token Error: /);
    for (const junk of ['garbage', 'AAAA', encodeURIComponent("'; DROP TABLE jobs; --")]) {
      assertError(await c.get(`${jobsPath(project)}?pageToken=${junk}`), 400, 'INVALID_ARGUMENT', /^Field: page_token Error: /);
    }
  });

  describe('filters', () => {
    const project = 'filters';
    const J = {};
    let t2;

    before(async () => {
      J.censusA = (await createOk('census_a', { labels: { owner: 'alice', team: 'ml' } }, project)).jobId;
      const b = await createOk('census_b', { labels: { owner: 'bob' } }, project);
      J.censusB = b.jobId;
      t2 = b.createTime;
      J.rnnA = (await createOk('rnn_a', { labels: { owner: 'alice' } }, project)).jobId;
      J.other = (await createOk('other_x', {}, project)).jobId;
      const res = await c.post(`${jobPath(J.rnnA, project)}:cancel`, {});
      assert.equal(res.status, 200, res.text);
    });

    const cases = [
      ['state:CANCELLED', ['rnn_a']],
      ['state=QUEUED', ['other_x', 'census_b', 'census_a']],
      ['state:FAILED', []],
      ['jobId:census*', ['census_b', 'census_a']],
      ['jobId:rnn* AND state:CANCELLED', ['rnn_a']],
      ['jobId:rnn* AND state:QUEUED', []],
      ['jobId="census_a"', ['census_a']],
      ['labels.owner=alice', ['rnn_a', 'census_a']],
      ['labels.owner:alice', ['rnn_a', 'census_a']],
      ['labels.owner="alice"', ['rnn_a', 'census_a']],
      ['labels.team:*', ['census_a']],
      ['NOT labels.team:*', ['other_x', 'rnn_a', 'census_b']],
      ['labels.owner!=alice', ['other_x', 'census_b']],
      ['labels.owner=alice OR labels.owner=bob', ['rnn_a', 'census_b', 'census_a']],
      ['(labels.owner=alice OR labels.owner=bob) AND NOT state:CANCELLED', ['census_b', 'census_a']],
      ['NOT state:QUEUED', ['rnn_a']],
      ['-state:QUEUED', ['rnn_a']],
      ['labels.owner=alice   AND\tstate:QUEUED', ['census_a']],
      ['state:QUEUED labels.owner=alice', ['census_a']],
      ['trainingInput.region=us-central1 AND jobId:other*', ['other_x']],
      ['createTime<"2000-01-01T00:00:00Z"', []],
      ['createTime>"2000-01-01T00:00:00Z" AND jobId:census*', ['census_b', 'census_a']],
      // LIKE metacharacters are literal: '_' is not a wildcard, '%' matches nothing.
      ['jobId:cens_s*', []],
      ['jobId:%*', []],
      ['jobId:census_*', ['census_b', 'census_a']],
    ];
    for (const [filter, want] of cases) {
      it(`filter ${filter}`, async () => {
        const res = await c.get(`${jobsPath(project)}?filter=${encodeURIComponent(filter)}`);
        assert.equal(res.status, 200, res.text);
        if (!want.length) assert.deepEqual(res.json, {}, 'an empty list is {}');
        assert.deepEqual(ids(res.json.jobs ?? []), want);
      });
    }

    it('filter NOT labels.owner=alice includes jobs without an owner label', async () => {
      // A comparison on an absent label is NULL in SQL; NOT of it must still
      // include the job, as `!=` does.
      const res = await c.get(`${jobsPath(project)}?filter=${encodeURIComponent('NOT labels.owner=alice')}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res.json.jobs ?? []), ['other_x', 'census_b']);
    });

    it('filter createTime>"<a job\'s createTime>" is strictly after it', async () => {
      const res = await c.get(`${jobsPath(project)}?filter=${encodeURIComponent(`createTime>"${t2}"`)}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res.json.jobs), ['other_x', 'rnn_a']);
    });

    it('a form-encoded filter (+ for spaces) is read like %20', async () => {
      const res = await c.get(`${jobsPath(project)}?filter=jobId:census*+AND+labels.owner%3Dbob`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res.json.jobs), ['census_b']);
    });

    it('filter paging follows the filter across pages', async () => {
      const all = await listAll(project, { filter: 'labels.owner:*', pageSize: 1 });
      assert.deepEqual(ids(all), ['rnn_a', 'census_b', 'census_a']);
    });

    it('an unknown field or bad syntax is 400 "Field: filter Error: Invalid filter: ..."', async () => {
      assertError(await c.get(`${jobsPath(project)}?filter=${encodeURIComponent('foo:1')}`), 400, 'INVALID_ARGUMENT',
        "Field: filter Error: Invalid filter: unknown field 'foo'");
      for (const bad of ['(state:QUEUED', 'state', 'state:', 'AND', 'state:QUEUED OR', 'createTime>"yesterday"',
        'labels.a="unterminated', ')', 'state:QUEUED)']) {
        assertError(await c.get(`${jobsPath(project)}?filter=${encodeURIComponent(bad)}`), 400, 'INVALID_ARGUMENT',
          /^Field: filter Error: Invalid filter: /, `filter ${bad}`);
      }
    });
  });
});

describe('projects.jobs.cancel', () => {
  it('cancels a QUEUED job at once (no body): CANCELLED, errorMessage, endTime, new etag', async () => {
    const job = await createOk(jobId('cancel'));
    const res = await c.post(`${jobPath(job.jobId)}:cancel`);
    assert.equal(res.status, 200, res.text);
    assertJsonReply(res);
    assert.deepEqual(res.json, {});
    const got = (await c.get(jobPath(job.jobId))).json;
    assert.equal(got.state, 'CANCELLED');
    assert.equal(typeof got.errorMessage, 'string');
    assert.ok(got.errorMessage.length > 0);
    assert.ok(Date.parse(got.endTime) >= Date.parse(got.createTime), `${got.endTime} >= ${got.createTime}`);
    assert.notEqual(got.etag, job.etag);
    assert.ok(isBase64(got.etag));
    assert.equal(got.createTime, job.createTime);
    assert.deepEqual(got.trainingInput, job.trainingInput);
  });

  it('accepts {} as the body, and a percent-encoded colon', async () => {
    const a = await createOk(jobId('cancel'));
    let res = await c.post(`${jobPath(a.jobId)}:cancel`, {});
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {});
    const b = await createOk(jobId('cancel'));
    res = await c.post(`${jobPath(b.jobId)}%3Acancel`, {});
    assert.equal(res.status, 200, res.text);
    assert.equal((await c.get(jobPath(b.jobId))).json.state, 'CANCELLED');
  });

  it('cancelling a finished job is a 200 {} no-op that changes nothing', async () => {
    const job = await createOk(jobId('cancel2'));
    await c.post(`${jobPath(job.jobId)}:cancel`);
    const once = (await c.get(jobPath(job.jobId))).json;
    const res = await c.post(`${jobPath(job.jobId)}:cancel`, {});
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {});
    assert.deepEqual((await c.get(jobPath(job.jobId))).json, once, 'unchanged, etag included');
  });

  it('cancelling an unknown job is 404 NOT_FOUND', async () => {
    assertError(await c.post(`${jobPath('nope')}:cancel`, {}), 404, 'NOT_FOUND', 'Job projects/p/jobs/nope was not found.');
  });

  it('a malformed body on cancel is 400', async () => {
    const job = await createOk(jobId('cancel3'));
    assertError(await c.post(`${jobPath(job.jobId)}:cancel`, '{nope', { headers: { 'Content-Type': 'application/json' } }),
      400, 'INVALID_ARGUMENT', /^Invalid JSON payload received\./);
    assert.equal((await c.get(jobPath(job.jobId))).json.state, 'QUEUED');
  });
});

describe('projects.jobs.patch', () => {
  it('replaces the labels wholesale and changes the etag each time', async () => {
    const job = await createOk(jobId('patch'), { labels: { a: '1', b: '2' } });
    let res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: { c: '3' } });
    assert.equal(res.status, 200, res.text);
    assertJsonReply(res);
    assert.deepEqual(res.json.labels, { c: '3' });
    assert.notEqual(res.json.etag, job.etag);
    assert.ok(isBase64(res.json.etag));
    const e1 = res.json.etag;
    assert.deepEqual((await c.get(jobPath(job.jobId))).json, res.json, 'get agrees with the patch reply');

    // Only labels change.
    assert.equal(res.json.state, 'QUEUED');
    assert.equal(res.json.createTime, job.createTime);
    assert.deepEqual(res.json.trainingInput, job.trainingInput);

    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.labels, undefined, 'an empty map is left out');
    assert.notEqual(res.json.etag, e1);
    const e2 = res.json.etag;

    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: { d: '4' } });
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.labels, undefined, 'absent labels clear them');
    assert.notEqual(res.json.etag, e2);

    // Other fields in the body are not applied.
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: { e: '5' }, jobId: 'renamed', trainingInput: trainingInput({ region: 'us-east1' }) });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.jobId, job.jobId);
    assert.deepEqual(res.json.trainingInput, job.trainingInput);
    assert.deepEqual(res.json.labels, { e: '5' });
  });

  it('updateMask=labels,etag with the current etag succeeds; a stale etag is 400 FAILED_PRECONDITION', async () => {
    const job = await createOk(jobId('etag'));
    let res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels,etag`, { labels: { v: '1' }, etag: job.etag });
    assert.equal(res.status, 200, res.text);
    const fresh = res.json.etag;
    assert.notEqual(fresh, job.etag);

    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels,etag`, { labels: { v: '2' }, etag: job.etag });
    const e = assertError(res, 400, 'FAILED_PRECONDITION', /^Field: job\.etag Error: /);
    const pf = e.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.PreconditionFailure');
    assert.ok(pf, JSON.stringify(e));
    assert.equal(pf.violations[0].type, 'ETAG');
    assert.equal(pf.violations[0].subject, `projects/p/jobs/${job.jobId}`);
    assert.deepEqual((await c.get(jobPath(job.jobId))).json.labels, { v: '1' }, 'nothing changed');

    // An etag in the body is checked with a labels-only mask too.
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: { v: '3' }, etag: job.etag });
    assertError(res, 400, 'FAILED_PRECONDITION');
    // A base64 etag this server never issued is stale as well.
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels,etag`, { labels: { v: '3' }, etag: 'BwWWja0YfJA' });
    assertError(res, 400, 'FAILED_PRECONDITION');
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=labels,etag`, { labels: { v: '3' }, etag: fresh });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.labels, { v: '3' });
  });

  it('updateMask=etag alone checks the etag and changes nothing', async () => {
    const job = await createOk(jobId('etagonly'), { labels: { k: 'v' } });
    let res = await c.patch(`${jobPath(job.jobId)}?updateMask=etag`, { etag: job.etag, labels: { k: 'other' } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, job);
    await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: {} });
    res = await c.patch(`${jobPath(job.jobId)}?updateMask=etag`, { etag: job.etag });
    assertError(res, 400, 'FAILED_PRECONDITION');
  });

  it('the updateMask is required and limited to labels and etag', async () => {
    const job = await createOk(jobId('mask'));
    assertError(await c.patch(jobPath(job.jobId), { labels: { a: 'b' } }), 400, 'INVALID_ARGUMENT', /^Field: update_mask Error: /);
    assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=`, { labels: { a: 'b' } }), 400, 'INVALID_ARGUMENT', /^Field: update_mask Error: /);
    for (const mask of ['state', 'labels,trainingInput', 'jobId', 'labels.a']) {
      const e = assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=${encodeURIComponent(mask)}`, { labels: { a: 'b' } }),
        400, 'INVALID_ARGUMENT', /^Field: update_mask Error: /);
      assert.equal(fieldViolations(e)[0].field, 'update_mask');
    }
    // The snake_case spelling of the parameter works too.
    const res = await c.patch(`${jobPath(job.jobId)}?update_mask=labels`, { labels: { a: 'b' } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((await c.get(jobPath(job.jobId))).json.labels, { a: 'b' });
  });

  it('bad bodies and unknown jobs', async () => {
    const job = await createOk(jobId('patchbad'));
    assertError(await c.patch(`${jobPath('nope')}?updateMask=labels`, { labels: {} }), 404, 'NOT_FOUND', 'Job projects/p/jobs/nope was not found.');
    assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labels: { a: 1 } }), 400, 'INVALID_ARGUMENT',
      /^Invalid value at 'job\.labels\[a\]'/);
    assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, { labelz: {} }), 400, 'INVALID_ARGUMENT',
      /Unknown name "labelz" at 'job'/);
    assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=labels`, '{', { headers: { 'Content-Type': 'application/json' } }),
      400, 'INVALID_ARGUMENT', /^Invalid JSON payload received\./);
    assertError(await c.patch(`${jobPath(job.jobId)}?updateMask=labels,etag`, { etag: 'not base64!' }), 400, 'INVALID_ARGUMENT',
      /job\.etag/);
    assert.deepEqual((await c.get(jobPath(job.jobId))).json, job, 'unchanged');
  });
});
