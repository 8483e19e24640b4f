// jobs.js - the jobs of a project, either API: newest first (as the lists
// return them), a state filter, a search by id (ml) or display name (Vertex)
// prefix, or Vertex id, and by label; pages of up to 100; kept current by
// polling the page shown, without a reload.

import { ApiError, KINDS, call, seg } from './api.js';
import {
  alertBanner, announce, duration, fill, focusHeading, h, poll, recordTiming, stateBadge, timeEl,
} from './util.js';

const POLL_MS = 1500;

/** A filter value, quoted for AIP-160. */
const quote = (v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`;

/** The list filter of the form's choices; '' when none. */
export function listFilter(kind, { state, q, label }) {
  const parts = [];
  if (state) parts.push(`state=${state}`);
  if (q) parts.push(kind === 'jobs' ? `jobId:${quote(`${q}*`)}` : `display_name:${quote(`${q}*`)}`);
  if (label) {
    const m = /^\s*([A-Za-z0-9_.-]+)\s*(?:[=:]\s*(.*))?$/.exec(label);
    if (m) parts.push(m[2] === undefined || m[2] === '' ? `labels.${m[1]}:*` : `labels.${m[1]}=${quote(m[2].trim())}`);
  }
  return parts.join(' AND ');
}

function collectionPath(kind, project, location) {
  return kind === 'jobs' ? `/v1/projects/${seg(project)}/jobs`
    : `/v1/projects/${seg(project)}/locations/${seg(location)}/${kind}`;
}

function hashOf(kind, project, location, params) {
  const base = kind === 'jobs' ? `#/jobs/ml/projects/${seg(project)}`
    : `#/jobs/vertex/projects/${seg(project)}/locations/${seg(location)}/${kind}`;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const qs = q.toString();
  return qs ? `${base}?${qs}` : base;
}

/** The row of one job (its name as key, a signature of what it shows). */
function jobRow(kind, project, job) {
  const name = kind === 'jobs' ? `projects/${project}/jobs/${job.jobId}` : job.name;
  const id = kind === 'jobs' ? job.jobId : name.split('/').pop();
  const href = `#/jobs/${kind === 'jobs' ? 'ml' : 'vertex'}/${name.split('/').map(seg).join('/')}`;
  const labels = Object.entries(job.labels ?? {});
  const sig = [job.state, job.startTime, job.endTime, JSON.stringify(job.labels ?? {}), job.displayName].join('|');
  const tr = h('tr', { 'data-name': name, 'data-state': job.state },
    h('th', { scope: 'row' }, h('a', { href }, id)),
    h('td', { class: 'hide-narrow' }, job.displayName ?? ''),
    h('td', {}, stateBadge(job.state)),
    h('td', {}, timeEl(job.createTime)),
    h('td', { class: 'hide-narrow ran', 'data-start': job.startTime ?? '', 'data-end': job.endTime ?? '' },
      duration(job.startTime, job.endTime)),
    h('td', { class: 'hide-narrow' }, labels.map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`))));
  return { name, sig, tr, state: job.state, id };
}

export function renderJobs(main, r, ctx) {
  const { kind, project, location: loc, query } = r;
  const k = KINDS[kind];
  if (!k) {
    fill(main, h('h1', {}, 'Not found'), h('p', {}, `No list of ${kind}.`));
    return () => {};
  }
  const want = { state: query.get('state') || '', q: query.get('q') || '', label: query.get('label') || '' };
  const size = Math.min(100, Math.max(1, Number(query.get('size')) || 50));

  // --- the form --------------------------------------------------------------
  const kindSel = h('select', { id: 'f-kind', name: 'kind' },
    Object.entries(KINDS).map(([key, v]) => h('option', { value: key, selected: key === kind }, v.label)));
  const projectIn = h('input', { id: 'f-project', name: 'project', value: project, required: true, autocomplete: 'off', spellcheck: 'false' });
  const locationIn = h('input', { id: 'f-location', name: 'location', value: loc || 'us-central1', autocomplete: 'off', spellcheck: 'false' });
  const stateSel = h('select', { id: 'f-state', name: 'state' },
    h('option', { value: '' }, 'any'), k.states.map((st) => h('option', { value: st, selected: st === want.state }, st.replace(/^(JOB|PIPELINE)_STATE_/, ''))));
  const qIn = h('input', { id: 'f-q', name: 'q', type: 'search', value: want.q, autocomplete: 'off', spellcheck: 'false',
    placeholder: kind === 'jobs' ? 'job id prefix' : 'display name prefix, or id' });
  const labelIn = h('input', { id: 'f-label', name: 'label', value: want.label, autocomplete: 'off', spellcheck: 'false', placeholder: 'key=value or key' });
  const sizeSel = h('select', { id: 'f-size', name: 'size' }, [25, 50, 100].map((n) => h('option', { value: n, selected: n === size }, String(n))));
  const locWrap = h('div', { class: 'field', hidden: kind === 'jobs' }, h('label', { for: 'f-location' }, 'Location'), locationIn);
  kindSel.addEventListener('change', () => { locWrap.hidden = kindSel.value === 'jobs'; });
  const form = h('form', { class: 'filters', 'aria-label': 'Which jobs' },
    h('div', { class: 'field' }, h('label', { for: 'f-kind' }, 'API'), kindSel),
    h('div', { class: 'field' }, h('label', { for: 'f-project' }, 'Project'), projectIn),
    locWrap,
    h('div', { class: 'field' }, h('label', { for: 'f-state' }, 'State'), stateSel),
    h('div', { class: 'field grow' }, h('label', { for: 'f-q' }, kind === 'jobs' ? 'Job id' : 'Display name or id'), qIn),
    h('div', { class: 'field' }, h('label', { for: 'f-label' }, 'Label'), labelIn),
    h('div', { class: 'field' }, h('label', { for: 'f-size' }, 'Per page'), sizeSel),
    h('div', { class: 'field' }, h('button', { type: 'submit' }, 'Show')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const nk = kindSel.value;
    // The state names differ by API: a state kept across APIs is mapped by its end.
    const st = stateSel.value ? KINDS[nk].states.find((x) => x.endsWith(stateSel.value.replace(/^(JOB|PIPELINE)_STATE_/, ''))) : '';
    window.location.hash = hashOf(nk, projectIn.value.trim(), locationIn.value.trim(), {
      state: nk === kind ? stateSel.value : st, q: qIn.value.trim(), label: labelIn.value.trim(), size: sizeSel.value === '50' ? '' : sizeSel.value,
    });
  });

  const summary = h('p', { class: 'summary', id: 'jobs-summary' }, 'Loading…');
  const tbody = h('tbody', {});
  const table = h('table', { class: 'jobs', id: 'jobs-table', 'aria-describedby': 'jobs-summary' },
    h('caption', { class: 'visually-hidden' }, `${k.label} of project ${project}, newest first`),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Job'), h('th', { scope: 'col', class: 'hide-narrow' }, 'Display name'),
      h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col' }, 'Created'),
      h('th', { scope: 'col', class: 'hide-narrow' }, 'Ran'), h('th', { scope: 'col', class: 'hide-narrow' }, 'Labels'))),
    tbody);
  const prev = h('button', { type: 'button', class: 'secondary', disabled: true }, '← Newer');
  const next = h('button', { type: 'button', class: 'secondary', disabled: true }, 'Older →');
  const pageNo = h('span', { class: 'page-no' }, 'Page 1');
  fill(main,
    h('h1', {}, k.label, h('span', { class: 'muted' }, ` · ${project}${kind === 'jobs' ? '' : ` · ${loc}`}`)),
    form, summary, h('div', { class: 'table-wrap' }, table),
    h('nav', { class: 'pager', 'aria-label': 'Pages of jobs' }, prev, pageNo, next));

  // --- the data --------------------------------------------------------------
  const tokens = [''];
  let page = 0;
  let rows = new Map();
  let order = [];
  let first = true;
  let nextToken = '';
  let paged = false;
  const filter = listFilter(kind, want);
  const byId = kind !== 'jobs' && /^\d+$/.test(want.q);

  async function fetchPage() {
    if (byId) {
      try {
        const one = await call('GET', `${collectionPath(kind, project, loc)}/${want.q}`);
        return { list: [one], next: '' };
      } catch (e) {
        if (e.status === 404) return { list: [], next: '' };
        throw e;
      }
    }
    const q = new URLSearchParams({ pageSize: String(size) });
    if (filter) q.set('filter', filter);
    if (tokens[page]) q.set('pageToken', tokens[page]);
    const res = await call('GET', `${collectionPath(kind, project, loc)}?${q}`);
    return { list: res[k.listKey] ?? [], next: res.nextPageToken ?? '' };
  }

  async function refresh() {
    let got;
    try {
      got = await fetchPage();
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      summary.textContent = e.status === 403 ? `You may not list these jobs: ${e.message}` : e.message;
      if (e.status !== 401 && e.status !== 403) alertBanner(e.message);
      return;
    }
    alertBanner('');
    nextToken = got.next;
    const made = got.list.map((j) => jobRow(kind, project, j));
    const changed = [];
    const names = made.map((m) => m.name);
    const sameOrder = names.length === order.length && names.every((n, i) => n === order[i]);
    const nrows = new Map();
    for (const m of made) {
      const old = rows.get(m.name);
      if (old && old.sig === m.sig) {
        nrows.set(m.name, old);
        continue;
      }
      if (old && old.state !== m.state) changed.push(`${m.id} is ${m.state.replace(/^(JOB|PIPELINE)_STATE_/, '')}`);
      if (old && sameOrder) old.tr.replaceWith(m.tr);
      nrows.set(m.name, m);
    }
    if (!sameOrder) {
      const added = first ? 0 : names.filter((n) => !rows.has(n)).length;
      tbody.replaceChildren(...made.map((m) => nrows.get(m.name).tr));
      if (added) changed.unshift(`${added} new job${added > 1 ? 's' : ''}`);
    }
    rows = nrows;
    order = names;
    // What a running job has run so far, without rebuilding its row.
    for (const td of tbody.querySelectorAll('td.ran[data-start]:not([data-start=""])[data-end=""]')) {
      td.textContent = duration(td.dataset.start, '');
    }
    if (!made.length) {
      tbody.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'muted' },
        filter || want.q ? 'No job matches.' : 'No jobs in this project yet.')));
      order = [];
    }
    const now = new Date();
    summary.textContent = `${made.length} job${made.length === 1 ? '' : 's'} on page ${page + 1}${nextToken ? ', more on the next pages' : ''}${filter ? ` (filter: ${filter})` : ''}. Updated ${now.toLocaleTimeString()}.`;
    // A pager button that goes disabled while focused (the last page, the
    // first) would drop focus to the body: it goes to the other one.
    const had = document.activeElement;
    prev.disabled = page === 0;
    next.disabled = !nextToken;
    if (had === next && next.disabled && !prev.disabled) prev.focus();
    if (had === prev && prev.disabled && !next.disabled) next.focus();
    pageNo.textContent = `Page ${page + 1}`;
    if (first && paged) announce(`Page ${page + 1}: ${made.length} job${made.length === 1 ? '' : 's'}.`);
    else if (changed.length) announce(changed.slice(0, 5).join('. '));
    if (first) {
      first = false;
      recordTiming('jobs', performance.now() - ctx.started);
      table.dataset.renderedMs = String(Math.round(performance.now() - ctx.started));
    }
  }

  let stop = poll(refresh, POLL_MS);
  const goto = (p) => {
    stop();
    page = p;
    order = [];
    rows = new Map();
    first = true;
    ctx.started = performance.now();
    paged = true;
    stop = poll(refresh, POLL_MS);
  };
  next.addEventListener('click', () => { if (nextToken) { tokens[page + 1] = nextToken; goto(page + 1); } });
  prev.addEventListener('click', () => { if (page > 0) goto(page - 1); });
  if (ctx.focus !== false) focusHeading(main);
  return () => stop();
}
