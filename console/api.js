// api.js - the console's one door to the server: the public REST API, as any
// client uses it. In `tokens` mode the token (kept in sessionStorage, this
// tab only) goes in Authorization: Bearer. Errors are Google's envelope.

const TOKEN_KEY = 'trainplane.token';

export function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage off: this page's memory only */ }
}

export class ApiError extends Error {
  constructor(status, body, fallback) {
    const e = body?.error;
    super(e?.message || fallback);
    this.status = status;
    this.code = e?.status || '';
    this.details = e?.details || [];
  }
}

let onUnauthenticated = () => {};
/** What to do on a 401 (ask for a token). */
export function whenUnauthenticated(fn) { onUnauthenticated = fn; }

/** One call: JSON in and out; throws ApiError on an error reply. */
export async function call(method, path, body, { signal } = {}) {
  const headers = { Accept: 'application/json' };
  const t = getToken();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, null, `The server cannot be reached (${e.message}).`);
  }
  let json = null;
  const text = await res.text();
  try { json = text ? JSON.parse(text) : {}; } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new ApiError(res.status, json, `${method} ${path}: HTTP ${res.status}`);
    if (res.status === 401) onUnauthenticated(err);
    throw err;
  }
  return json ?? {};
}

/** The caller (GET /trainplane/v1/whoami), once per token. */
let me = null;
export async function whoami(force = false) {
  if (!me || force) me = await call('GET', '/trainplane/v1/whoami');
  return me;
}
export function forgetWhoami() { me = null; }
export function currentCaller() { return me; }

/** Whether the caller's role grants permission in project (the server still checks). */
export function can(permission, project) {
  if (!me) return false;
  if (!(me.permissions ?? []).includes(permission)) return false;
  if (me.authMode !== 'tokens' || !project) return true;
  const ps = me.projects ?? [];
  return ps.includes('*') || ps.includes(project);
}

/** A path segment, escaped. */
export const seg = (s) => encodeURIComponent(s);

/**
 * The kinds of job the console lists: their collection under a parent, the
 * field naming their state, the states, and the permission their cancel needs.
 */
export const KINDS = {
  jobs: {
    api: 'ml', label: 'ml v1 jobs', listKey: 'jobs', cancel: 'ml.jobs.cancel',
    states: ['QUEUED', 'PREPARING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLING', 'CANCELLED'],
  },
  customJobs: {
    api: 'vertex', label: 'Vertex custom jobs', listKey: 'customJobs', cancel: 'aiplatform.customJobs.cancel',
    states: ['JOB_STATE_QUEUED', 'JOB_STATE_PENDING', 'JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED',
      'JOB_STATE_FAILED', 'JOB_STATE_CANCELLING', 'JOB_STATE_CANCELLED'],
  },
  hyperparameterTuningJobs: {
    api: 'vertex', label: 'Vertex tuning jobs', listKey: 'hyperparameterTuningJobs',
    cancel: 'aiplatform.hyperparameterTuningJobs.cancel',
    states: ['JOB_STATE_QUEUED', 'JOB_STATE_PENDING', 'JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED',
      'JOB_STATE_FAILED', 'JOB_STATE_CANCELLING', 'JOB_STATE_CANCELLED'],
  },
  trainingPipelines: {
    api: 'vertex', label: 'Vertex training pipelines', listKey: 'trainingPipelines',
    cancel: 'aiplatform.trainingPipelines.cancel',
    states: ['PIPELINE_STATE_QUEUED', 'PIPELINE_STATE_PENDING', 'PIPELINE_STATE_RUNNING',
      'PIPELINE_STATE_SUCCEEDED', 'PIPELINE_STATE_FAILED', 'PIPELINE_STATE_CANCELLING',
      'PIPELINE_STATE_CANCELLED'],
  },
};

export const FINAL = /SUCCEEDED|FAILED|CANCELLED|EXPIRED$/;

/**
 * A job's resource name split: { kind, project, location, id, name }, or
 * null. "projects/p/jobs/j", "projects/p/locations/l/customJobs/1", ...
 */
export function parseJobName(name) {
  let m = /^projects\/([^/]+)\/jobs\/([^/]+)$/.exec(name);
  if (m) return { kind: 'jobs', project: m[1], location: '', id: m[2], name };
  m = /^projects\/([^/]+)\/locations\/([^/]+)\/(customJobs|hyperparameterTuningJobs|trainingPipelines)\/([^/]+)$/.exec(name);
  if (m) return { kind: m[3], project: m[1], location: m[2], id: m[4], name };
  return null;
}

/** The resource name of a job object as a list returns it. */
export function jobName(kind, project, location, job) {
  if (kind === 'jobs') return `projects/${project}/jobs/${job.jobId}`;
  return job.name;
}
