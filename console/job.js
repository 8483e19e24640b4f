// job.js - one job of either API: what it is, its states over time, its
// replicas (node, GPU indices, attempt, exit code), a tuning job's trials
// (a table and a plot of the objective), its log as it streams, and cancel
// (confirmed first; shown only to callers whose role may cancel).

import {
  ApiError, FINAL, KINDS, call, can, currentCaller, parseJobName, seg,
} from './api.js';
import {
  alertBanner, announce, confirmDialog, duration, fill, fmtTime, focusHeading, h, poll, recordTiming,
  s, stateBadge, timeEl,
} from './util.js';

const JOB_POLL_MS = 1000;
const LOG_POLL_MS = 1000;
const LOOKBACK_MS = 5000; // as the CLI's stream-logs: lines received late (cli/stream_logs.c)
const LOG_MAX = 20000;    // lines kept on the page

/** The state a service log line says the job moved to (schema's tp_service_line), or ''. */
function stateOfServiceLine(text) {
  const rules = [
    [/^Waiting for the training program to start/, 'PREPARING'], [/^The job is running/, 'RUNNING'],
    [/^Job completed successfully/, 'SUCCEEDED'], [/^Job failed/, 'FAILED'],
    [/^Job cancellation requested/, 'CANCELLING'], [/^Job cancelled/, 'CANCELLED'],
    [/^The job was preempted/, 'QUEUED'], [/^The job restarts/, 'RUNNING'], [/^The job is queued/, 'QUEUED'],
    [/^Job is ([A-Z_]+)\./, null],
  ];
  for (const [re, st] of rules) {
    const m = re.exec(text ?? '');
    if (m) return st ?? m[1];
  }
  return '';
}

/** A line of one of a study's trials (its replicas', or the service's about it). */
const isTrialLine = (e) => !!e.labels?.['ml.googleapis.com/trial_id'] || /^Trial \d+: /.test(e.textPayload ?? '');

const taskOf = (e) => e.resource?.labels?.task_name ?? e.labels?.task_name ?? e.labels?.['ml.googleapis.com/task_name'] ?? '';

/** The trials of a tuning job, either API: { number, state, params, value, stopped }. */
function trialsOf(kind, job) {
  if (kind === 'jobs') {
    return (job.trainingOutput?.trials ?? []).map((t) => ({
      number: Number(t.trialId), state: t.state ?? '', params: t.hyperparameters ?? {},
      value: t.finalMetric?.objectiveValue, step: t.finalMetric?.trainingStep, stopped: !!t.isTrialStoppedEarly,
      start: t.startTime, end: t.endTime,
    }));
  }
  return (job.trials ?? []).map((t) => ({
    number: Number(t.id), state: t.state ?? '',
    params: Object.fromEntries((t.parameters ?? []).map((p) => [p.parameterId, p.value])),
    value: t.finalMeasurement?.metrics?.[0]?.value, step: t.finalMeasurement?.stepCount, stopped: false,
    start: t.startTime, end: t.endTime,
  }));
}

function goalOf(kind, job) {
  if (kind === 'jobs') {
    const hp = job.trainingInput?.hyperparameters;
    return hp ? { goal: hp.goal ?? 'MAXIMIZE', metric: hp.hyperparameterMetricTag ?? 'objective' } : null;
  }
  const m = job.studySpec?.metrics?.[0];
  return m ? { goal: m.goal ?? 'MAXIMIZE', metric: m.metricId ?? 'objective' } : null;
}

/** An SVG plot of the objective per trial, with the best so far as a step line. */
export function trialsPlot(trials, goal) {
  const pts = trials.filter((t) => typeof t.value === 'number' && Number.isFinite(t.value))
    .sort((a, b) => a.number - b.number);
  const W = 640; const H = 260; const L = 56; const R = 16; const T = 16; const B = 40;
  const title = `Objective (${goal.metric}, ${goal.goal === 'MINIMIZE' ? 'lower' : 'higher'} is better) per trial`;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img', 'aria-labelledby': 'plot-title plot-desc', preserveAspectRatio: 'xMidYMid meet' },
    s('title', { id: 'plot-title' }, title));
  if (!pts.length) {
    svg.append(s('desc', { id: 'plot-desc' }, 'No trial has reported its objective yet.'),
      s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'axis-label' }, 'No objective reported yet'));
    return svg;
  }
  const xs = pts.map((p) => p.number); const ys = pts.map((p) => p.value);
  const x0 = Math.min(...xs); const x1 = Math.max(...xs);
  let y0 = Math.min(...ys); let y1 = Math.max(...ys);
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const px = (x) => L + (x1 === x0 ? (W - L - R) / 2 : ((x - x0) / (x1 - x0)) * (W - L - R));
  const py = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const better = (a, b) => (goal.goal === 'MINIMIZE' ? a < b : a > b);
  let best = null;
  let path = '';
  for (const p of pts) {
    if (best === null || better(p.value, best)) best = p.value;
    path += `${path ? 'L' : 'M'}${px(p.number).toFixed(1)},${py(best).toFixed(1)} `;
  }
  const fmt = (v) => (Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toExponential(2) : String(Number(v.toPrecision(4))));
  const bestPt = pts.reduce((a, b) => (better(b.value, a.value) ? b : a));
  svg.append(s('desc', { id: 'plot-desc' }, `${pts.length} trials with an objective; the best is trial ${bestPt.number} with ${fmt(bestPt.value)}.`));
  // axes and ticks
  svg.append(s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }),
    s('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }));
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    svg.append(s('line', { x1: L, x2: W - R, y1: py(v), y2: py(v), class: 'grid' }),
      s('text', { x: L - 6, y: py(v) + 4, 'text-anchor': 'end', class: 'tick' }, fmt(v)));
  }
  const step = Math.max(1, Math.ceil((x1 - x0) / 10));
  for (let x = x0; x <= x1; x += step) {
    svg.append(s('text', { x: px(x), y: H - B + 16, 'text-anchor': 'middle', class: 'tick' }, String(x)));
  }
  svg.append(s('text', { x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', class: 'axis-label' }, 'trial'),
    s('path', { d: path, class: 'best' }));
  for (const p of pts) {
    svg.append(s('circle', { cx: px(p.number), cy: py(p.value), r: 4, class: p === bestPt ? 'pt top' : 'pt' },
      s('title', {}, `trial ${p.number}: ${fmt(p.value)}`)));
  }
  return svg;
}

function section(id, title, ...kids) {
  return h('section', { 'aria-labelledby': `${id}-h`, id }, h('h2', { id: `${id}-h` }, title), ...kids);
}

export function renderJob(main, r, ctx) {
  const ref = parseJobName(r.name);
  if (!ref) {
    fill(main, h('h1', {}, 'Not found'), h('p', {}, 'This is not the name of a job.'));
    return () => {};
  }
  const { kind, project, location: loc, id } = ref;
  const k = KINDS[kind];
  const listHref = kind === 'jobs' ? `#/jobs/ml/projects/${seg(project)}`
    : `#/jobs/vertex/projects/${seg(project)}/locations/${seg(loc)}/${kind}`;
  const jobPath = `/v1/${r.name.split('/').map(seg).join('/')}`;
  const stops = [];

  const heading = h('h1', {}, id);
  const badge = h('span', { id: 'job-state', 'aria-live': 'polite' });
  const cancelBtn = h('button', { type: 'button', class: 'danger', id: 'cancel', hidden: true }, 'Cancel job');
  const facts = h('dl', { class: 'facts' });
  const history = h('tbody', {});
  const replicas = h('tbody', {});
  const replicaNote = h('p', { class: 'muted' });
  const trialsWrap = h('div', {});
  const spec = h('pre', { class: 'spec', tabindex: 0 });
  const taskSel = h('select', { id: 'log-task' }, h('option', { value: '' }, 'every task'));
  const follow = h('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const logList = h('div', { class: 'log', id: 'log', role: 'log', 'aria-label': 'Log lines', tabindex: 0 });
  const logCount = h('span', { class: 'muted', id: 'log-count' });

  fill(main,
    h('p', { class: 'crumbs' }, h('a', { href: listHref }, `${k.label} · ${project}${loc ? ` · ${loc}` : ''}`)),
    h('div', { class: 'title-row' }, heading, badge, cancelBtn),
    facts,
    section('history', 'State history', h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Time'), h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col' }, 'What happened'))),
      history))),
    section('replicas', 'Replicas', replicaNote, h('div', { class: 'table-wrap' }, h('table', { id: 'replicas-table' },
      h('thead', {}, h('tr', {},
        ['Task', 'Trial', 'State', 'Node', 'GPUs', 'Attempt', 'Exit code', 'Started', 'Ended', 'Message'].map((c) => h('th', { scope: 'col' }, c)))),
      replicas))),
    trialsWrap,
    section('logs', 'Log', h('div', { class: 'log-tools' },
      h('label', { for: 'log-task' }, 'Task '), taskSel,
      h('label', { class: 'check' }, follow, ' Follow new lines'), logCount),
    logList),
    section('spec', 'Specification', h('details', {}, h('summary', {}, 'The job as the API returns it (JSON)'), spec)));
  focusHeading(main);

  let job = null;
  let finalSeen = 0;
  let iamCancel = null;

  // --- the job -----------------------------------------------------------------
  const row = (label, value) => (value === '' || value === undefined || value === null ? []
    : [h('dt', {}, label), h('dd', {}, value)]);
  async function refreshJob() {
    try {
      job = await call('GET', jobPath);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      if (e.status === 404) fill(facts, h('dt', {}, 'Not found'), h('dd', {}, e.message));
      else alertBanner(e.message);
      return;
    }
    alertBanner('');
    const before = badge.textContent;
    fill(badge, stateBadge(job.state));
    if (before && before !== badge.textContent) announce(`Job ${id} is ${badge.textContent}.`);
    const err = job.errorMessage || job.error?.message || '';
    const input = job.trainingInput ?? {};
    fill(facts,
      row('Name', kind === 'jobs' ? `projects/${project}/jobs/${job.jobId}` : job.name),
      row('Display name', job.displayName),
      row('Region', input.region || loc),
      row('Created', timeEl(job.createTime)),
      row('Started', timeEl(job.startTime)),
      row('Ended', timeEl(job.endTime)),
      row('Ran for', duration(job.startTime, job.endTime)),
      row('Error', err ? h('span', { class: 'error-text' }, err) : ''),
      row('Labels', Object.keys(job.labels ?? {}).length
        ? Object.entries(job.labels).map(([a, b]) => h('span', { class: 'chip' }, `${a}=${b}`)) : ''));
    spec.textContent = JSON.stringify(job, null, 2);
    const final = FINAL.test(job.state ?? '');
    // Cancel: the caller's role (whoami), or for an ml job its IAM policy.
    let may = can(k.cancel, project);
    if (!may && kind === 'jobs' && currentCaller()?.authMode === 'tokens') {
      if (iamCancel === null) {
        try {
          const res = await call('POST', `${jobPath}:testIamPermissions`, { permissions: ['ml.jobs.cancel'] });
          iamCancel = (res.permissions ?? []).includes('ml.jobs.cancel');
        } catch { iamCancel = false; }
      }
      may = iamCancel;
    }
    hideCancel(!may || final || /CANCELLING/.test(job.state ?? ''));
    renderTrials();
    if (final) finalSeen++;
  }

  // Hiding the focused Cancel button would drop focus to the page's body:
  // it goes to the job's heading instead (beside it, its state).
  function hideCancel(hide) {
    const had = document.activeElement === cancelBtn;
    cancelBtn.hidden = hide;
    if (hide && had) heading.focus();
  }

  cancelBtn.addEventListener('click', async () => {
    const yes = await confirmDialog(`Cancel ${id}?`,
      `The job ${id} stops: its replicas are told to stop, and it ends CANCELLED. This cannot be undone.`, 'Cancel job');
    if (!yes) { cancelBtn.focus(); return; }
    try {
      await call('POST', `${jobPath}:cancel`, {});
      announce(`Cancel of ${id} requested.`);
      hideCancel(true);
      refreshJob();
    } catch (e) {
      alertBanner(`Cancel refused: ${e.message}`);
    }
  });

  // --- trials (tuning jobs) ---------------------------------------------------------
  let trialsSig = '';
  function renderTrials() {
    const goal = goalOf(kind, job);
    if (!goal) return;
    const trials = trialsOf(kind, job);
    const sig = JSON.stringify(trials);
    if (sig === trialsSig) return;
    trialsSig = sig;
    const names = [...new Set(trials.flatMap((t) => Object.keys(t.params)))];
    fill(trialsWrap, section('trials', `Trials (${trials.length})`,
      trialsPlot(trials, goal),
      h('div', { class: 'table-wrap' }, h('table', { id: 'trials-table' },
        h('caption', { class: 'visually-hidden' }, `Trials, objective ${goal.metric}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Trial'), h('th', { scope: 'col' }, 'State'),
          names.map((n) => h('th', { scope: 'col' }, n)), h('th', { scope: 'col' }, goal.metric),
          h('th', { scope: 'col' }, 'Step'), h('th', { scope: 'col' }, 'Ran'))),
        h('tbody', {}, trials.slice().sort((a, b) => a.number - b.number).map((t) => h('tr', {},
          h('th', { scope: 'row' }, String(t.number)), h('td', {}, stateBadge(t.state), t.stopped ? ' stopped early' : ''),
          names.map((n) => h('td', {}, t.params[n] === undefined ? '' : String(t.params[n]))),
          h('td', { class: 'num' }, t.value === undefined ? '' : String(t.value)),
          h('td', { class: 'num' }, t.step ?? ''), h('td', {}, duration(t.start, t.end)))))))));
  }

  // --- replicas -------------------------------------------------------------------
  let replicasSig = '';
  async function refreshReplicas() {
    let res;
    try {
      res = await call('GET', `/trainplane/v1/projects/${seg(project)}/replicas?job=${encodeURIComponent(r.name)}`);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      replicaNote.textContent = e.status === 403 ? 'You may not see this job\'s replicas.' : e.message;
      return;
    }
    const list = res.replicas ?? [];
    const sig = JSON.stringify(list);
    if (sig === replicasSig) return;
    replicasSig = sig;
    replicaNote.textContent = list.length ? '' : 'No replica yet: the job has not been placed.';
    fill(replicas, list.map((p) => h('tr', { 'data-task': p.task },
      h('th', { scope: 'row' }, p.task), h('td', {}, p.trial ?? ''), h('td', {}, stateBadge(p.state)),
      h('td', {}, p.node ? h('a', { href: '#/nodes' }, p.node) : ''),
      h('td', { class: 'gpus' }, (p.gpus ?? []).join(', ')), h('td', { class: 'num' }, p.attempt),
      h('td', { class: 'num' }, p.exitCode ?? ''), h('td', {}, timeEl(p.startTime)), h('td', {}, timeEl(p.endTime)),
      h('td', {}, p.message ?? ''))));
    const tasks = [...new Set(list.map((p) => p.task))];
    for (const t of tasks) {
      if (![...taskSel.options].some((o) => o.value === t)) taskSel.append(h('option', { value: t }, t));
    }
    if (![...taskSel.options].some((o) => o.value === 'service')) taskSel.append(h('option', { value: 'service' }, 'service'));
  }

  // --- the log -----------------------------------------------------------------------
  const logJobId = id; // resource.labels.job_id: the ml job id, or the numeric Vertex id
  const seen = new Map(); // insertId -> receive time (ms)
  const lines = [];       // entries, by timestamp
  let newest = 0;
  let firstLog = true;
  const historyRows = [{ time: null, state: 'QUEUED', text: 'Created.' }];

  function lineEl(e) {
    const sev = e.severity ?? 'DEFAULT';
    return h('div', { class: `line sev-${sev.toLowerCase()}`, 'data-task': taskOf(e) },
      h('span', { class: 'ts' }, fmtTime(e.timestamp, true)), ' ',
      h('span', { class: 'task' }, taskOf(e)), ' ',
      sev === 'DEFAULT' || sev === 'INFO' ? '' : h('span', { class: 'sev' }, `${sev} `),
      h('span', { class: 'msg' }, e.textPayload ?? e.jsonPayload?.message ?? ''));
  }

  function renderHistory() {
    const rows = [{ time: job?.createTime, state: 'QUEUED', text: 'Created.' },
      ...lines.filter((e) => taskOf(e) === 'service' && !isTrialLine(e))
        .map((e) => ({ time: e.timestamp, state: stateOfServiceLine(e.textPayload), text: e.textPayload }))];
    if (rows.length === historyRows.length && rows[0].time === historyRows[0].time) return;
    historyRows.splice(0, historyRows.length, ...rows);
    fill(history, rows.map((x) => h('tr', {}, h('td', {}, timeEl(x.time, true)), h('td', {}, x.state ? stateBadge(x.state) : ''), h('td', {}, x.text ?? ''))));
  }

  function applyTaskFilter() {
    const t = taskSel.value;
    logList.classList.toggle('filtered', !!t);
    for (const el of logList.children) el.hidden = !!t && el.dataset.task !== t;
  }
  taskSel.addEventListener('change', applyTaskFilter);

  async function refreshLog() {
    const from = newest ? new Date(newest - LOOKBACK_MS).toISOString() : '';
    let filter = `resource.labels.job_id=${JSON.stringify(logJobId)}`;
    if (from) filter += ` AND receiveTimestamp>=${JSON.stringify(from)}`;
    const fresh = [];
    let token = '';
    do {
      const body = { resourceNames: [`projects/${project}`], filter, orderBy: 'timestamp asc', pageSize: 1000 };
      if (token) body.pageToken = token;
      let page;
      try {
        page = await call('POST', '/v2/entries:list', body);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        logCount.textContent = e.status === 403 ? 'You may not read this job\'s log.' : e.message;
        return;
      }
      for (const e of page.entries ?? []) {
        if (!e.insertId || seen.has(e.insertId)) continue;
        const got = Date.parse(e.receiveTimestamp ?? e.timestamp);
        seen.set(e.insertId, got);
        if (got > newest) newest = got;
        fresh.push(e);
      }
      token = page.nextPageToken ?? '';
    } while (token);
    for (const [key, at] of seen) if (at < newest - LOOKBACK_MS) seen.delete(key);
    if (fresh.length) {
      const last = lines.length ? lines[lines.length - 1].timestamp : '';
      const inOrder = fresh.every((e, i) => (i ? fresh[i - 1].timestamp : last) <= e.timestamp);
      lines.push(...fresh);
      if (!inOrder) lines.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
      const drop = Math.max(0, lines.length - LOG_MAX);
      if (drop) lines.splice(0, drop);
      const frag = document.createDocumentFragment();
      if (inOrder && !drop) {
        for (const e of fresh) frag.append(lineEl(e));
        logList.append(frag);
      } else {
        for (const e of lines) frag.append(lineEl(e));
        logList.replaceChildren(frag);
      }
      if (taskSel.value) applyTaskFilter();
      if (follow.checked) logList.scrollTop = logList.scrollHeight;
      for (const e of fresh) {
        const t = taskOf(e);
        if (t && ![...taskSel.options].some((o) => o.value === t)) taskSel.append(h('option', { value: t }, t));
      }
      renderHistory();
    }
    logCount.textContent = `${lines.length} line${lines.length === 1 ? '' : 's'}`;
    logList.dataset.lines = String(lines.length);
    if (firstLog) {
      firstLog = false;
      recordTiming('job', performance.now() - ctx.started);
      logList.dataset.renderedMs = String(Math.round(performance.now() - ctx.started));
    }
  }

  // The job first (its state decides what else polls), then the rest beside it.
  stops.push(poll(async () => {
    if (finalSeen > 2) return;
    await refreshJob();
    renderHistory();
  }, JOB_POLL_MS));
  stops.push(poll(async () => { if (finalSeen <= 3) await refreshLog(); }, LOG_POLL_MS));
  stops.push(poll(async () => { if (finalSeen <= 2) await refreshReplicas(); }, 2 * JOB_POLL_MS));
  return () => stops.forEach((f) => f());
}
