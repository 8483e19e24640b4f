// quotas.js - a project's quotas and usage (GET .../quotas) and its queue:
// each QUEUED job with the reason it waits (GET .../queue).

import { ApiError, call, parseJobName, seg } from './api.js';
import { duration, fill, focusHeading, h, poll, recordTiming, timeEl } from './util.js';

const REASONS = {
  capacity: 'waits for free capacity', never_fits: 'no node could ever hold it', quota: 'over its project\'s quota',
  reserved: 'its region is reserved for a job waiting longer', preempting: 'lower-priority jobs stop for it',
  unknown: 'not looked at yet, or no node in its region',
};

function quotaRows(entries) {
  return (entries ?? []).map((q) => {
    const limit = q.limit === undefined ? null : Number(q.limit);
    const used = Number(q.usage ?? 0);
    const pct = limit ? Math.min(100, Math.round((used / limit) * 100)) : null;
    const bar = h('span', { class: 'bar', role: 'presentation' }, h('span', { class: 'fill' }));
    if (pct !== null) bar.firstChild.style.width = `${pct}%`;
    return h('tr', {}, h('th', { scope: 'row' }, q.resource),
      h('td', { class: 'num' }, String(used)), h('td', { class: 'num' }, limit === null ? 'no limit' : String(limit)),
      h('td', {}, pct === null ? '' : [bar, ` ${pct}%`]),
      h('td', { class: 'num' }, q.preemptibleUsage ?? ''), h('td', { class: 'num' }, q.preemptibleLimit ?? ''));
  });
}

function quotaTable(caption, entries) {
  return h('div', { class: 'table-wrap' }, h('table', {}, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ['Resource', 'In use', 'Limit', 'Share of the limit', 'Preemptible in use', 'Preemptible limit'].map(
      (c, i) => h('th', { scope: 'col' }, i === 3 ? h('span', { class: 'visually-hidden' }, c) : c)))),
    h('tbody', {}, quotaRows(entries))));
}

export function renderQuotas(main, r, ctx) {
  const { project } = r;
  const projectIn = h('input', { id: 'q-project', value: project, required: true, autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'filters', 'aria-label': 'Which project' },
    h('div', { class: 'field' }, h('label', { for: 'q-project' }, 'Project'), projectIn),
    h('div', { class: 'field' }, h('button', { type: 'submit' }, 'Show')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    window.location.hash = `#/quotas/projects/${seg(projectIn.value.trim())}`;
  });
  const quotas = h('div', { id: 'quotas' }, h('p', { class: 'muted' }, 'Loading…'));
  const queueNote = h('p', { class: 'summary', id: 'queue-summary' });
  const queue = h('tbody', {});
  fill(main, h('h1', {}, 'Quotas and queue', h('span', { class: 'muted' }, ` · ${project}`)), form,
    h('section', { 'aria-labelledby': 'quotas-h' }, h('h2', { id: 'quotas-h' }, 'Quotas and usage'), quotas),
    h('section', { 'aria-labelledby': 'queue-h' }, h('h2', { id: 'queue-h' }, 'Queue'), queueNote,
      h('div', { class: 'table-wrap' }, h('table', { id: 'queue-table', 'aria-describedby': 'queue-summary' },
        h('thead', {}, h('tr', {}, ['Job', 'Region', 'Priority', 'Waiting', 'Reason', 'Message'].map((c) => h('th', { scope: 'col' }, c)))),
        queue))));
  focusHeading(main);
  let first = true;
  let qsig = '';
  let jsig = '';

  async function refresh() {
    const base = `/trainplane/v1/projects/${seg(project)}`;
    const [q, j] = await Promise.allSettled([call('GET', `${base}/quotas`), call('GET', `${base}/queue`)]);
    if (q.status === 'fulfilled') {
      const sig = JSON.stringify(q.value);
      if (sig !== qsig) {
        qsig = sig;
        const v = q.value;
        fill(quotas,
          v.configured ? '' : h('p', { class: 'muted' }, 'The server has no quotas file: no limits; usage is shown.'),
          (v.limits ?? []).length ? quotaTable('Every region', v.limits) : '',
          (v.regions ?? []).map((x) => quotaTable(`Region ${x.region}`, x.quotas)),
          Object.keys(v.queuedJobs ?? {}).length ? h('p', {}, 'Queued jobs by reason: ',
            Object.entries(v.queuedJobs).map(([k, n]) => `${k} ${n}`).join(', '), '.') : '');
      }
    } else if (q.reason instanceof ApiError) {
      fill(quotas, h('p', {}, q.reason.status === 403 ? 'Only admins see quotas (trainplane.quotas.get).' : q.reason.message));
    }
    if (j.status === 'fulfilled') {
      const jobs = j.value.jobs ?? [];
      queueNote.textContent = `${jobs.length} queued job${jobs.length === 1 ? '' : 's'}. Updated ${new Date().toLocaleTimeString()}.`;
      const sig = JSON.stringify(jobs);
      if (sig !== jsig) {
        jsig = sig;
        fill(queue, jobs.length ? jobs.map((x) => {
          const ref = parseJobName(x.name ?? '');
          const href = ref ? `#/jobs/${ref.kind === 'jobs' ? 'ml' : 'vertex'}/${x.name.split('/').map(seg).join('/')}` : null;
          return h('tr', { 'data-name': x.name },
            h('th', { scope: 'row' }, href ? h('a', { href }, x.jobId) : x.jobId),
            h('td', {}, x.region ?? ''), h('td', { class: 'num' }, String(x.priority ?? '')),
            h('td', {}, timeEl(x.createTime), ' ', h('span', { class: 'waited', 'data-since': x.createTime ?? '' },
              `(${duration(x.createTime)})`)),
            h('td', {}, h('span', { class: 'badge wait', title: REASONS[x.reason] ?? '' }, x.reason), ' ', h('span', { class: 'muted' }, REASONS[x.reason] ?? '')),
            h('td', {}, x.message ?? ''));
        }) : h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'Nothing waits.')));
      }
      for (const el of queue.querySelectorAll('.waited')) el.textContent = `(${duration(el.dataset.since)})`;
    } else if (j.reason instanceof ApiError) {
      queueNote.textContent = j.reason.status === 403 ? 'Only admins see the queue (trainplane.queue.list).' : j.reason.message;
    }
    if (first) {
      first = false;
      recordTiming('quotas', performance.now() - ctx.started);
    }
  }
  return poll(refresh, 2000);
}
