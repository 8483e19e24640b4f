// nodes.js - the cluster's nodes (GET /trainplane/v1/nodes): state, zone,
// machine, each GPU with the replica bound to it, last sync; drain and
// undrain for those whose role may (trainplane.nodes.drain).

import { ApiError, call, can, parseJobName, seg } from './api.js';
import {
  alertBanner, announce, duration, fill, focusHeading, h, poll, recordTiming, stateBadge, timeEl,
} from './util.js';

function jobLink(name) {
  const ref = parseJobName(name ?? '');
  if (!ref) return name ?? '';
  return h('a', { href: `#/jobs/${ref.kind === 'jobs' ? 'ml' : 'vertex'}/${name.split('/').map(seg).join('/')}` },
    ref.kind === 'jobs' ? ref.id : `${ref.kind.replace(/s$/, '')} ${ref.id}`);
}

function gpuList(node) {
  const acc = node.accelerators?.[0];
  if (!acc) return h('span', { class: 'muted' }, 'none');
  const bound = new Map((node.boundGpus ?? []).map((g) => [g.index, g]));
  if (!/^NVIDIA|GPU/.test(acc.type) || bound.size === 0 && acc.total > 64) {
    return `${acc.type} × ${acc.total} (${acc.free} free)`;
  }
  const items = [];
  for (let i = 0; i < acc.total; i++) {
    const g = bound.get(i);
    items.push(h('li', { class: g ? 'busy' : 'free', 'data-gpu': i },
      h('span', { class: 'gpu-index' }, `GPU ${i}`), ' ',
      g ? [jobLink(g.job), ` ${g.task}${g.trial ? ` (trial ${g.trial})` : ''}${g.attempt > 1 ? `, attempt ${g.attempt}` : ''}`]
        : h('span', { class: 'muted' }, 'free')));
  }
  return [h('div', { class: 'muted' }, `${acc.type} × ${acc.total}, ${acc.free} free`), h('ul', { class: 'gpus' }, items)];
}

export function renderNodes(main, ctx) {
  const summary = h('p', { class: 'summary', id: 'nodes-summary' }, 'Loading…');
  const tbody = h('tbody', {});
  fill(main, h('h1', {}, 'Nodes'), summary,
    h('div', { class: 'table-wrap' }, h('table', { id: 'nodes-table', 'aria-describedby': 'nodes-summary' },
      h('thead', {}, h('tr', {}, ['Node', 'State', 'Zone', 'Machine', 'GPUs and their replicas', 'Replicas', 'Last sync'].map(
        (c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Action')))),
      tbody)));
  focusHeading(main);
  let first = true;
  let sig = '';
  const states = new Map();

  async function action(node, verb) {
    try {
      await call('POST', `/trainplane/v1/nodes/${seg(node)}:${verb}`, {});
      announce(`Node ${node} ${verb === 'drain' ? 'drains' : 'takes replicas again'}.`);
      sig = '';
      await refresh();
      document.querySelector(`#nodes-table tr[data-node="${CSS.escape(node)}"] button`)?.focus();
    } catch (e) {
      alertBanner(`${verb} refused: ${e.message}`);
    }
  }

  async function refresh() {
    let res;
    try {
      res = await call('GET', '/trainplane/v1/nodes');
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      summary.textContent = e.status === 403 ? 'Only admins see the nodes (trainplane.nodes.list).' : e.message;
      return;
    }
    const nodes = res.nodes ?? [];
    const mayDrain = can('trainplane.nodes.drain');
    const now = JSON.stringify(nodes.map((n) => ({ ...n, lastSyncTime: undefined }))) + mayDrain;
    summary.textContent = `${nodes.length} node${nodes.length === 1 ? '' : 's'}; ${nodes.filter((n) => n.state === 'READY').length} ready. Updated ${new Date().toLocaleTimeString()}.`;
    if (now !== sig) {
      sig = now;
      const focused = document.activeElement?.closest?.('tr')?.dataset.node;
      fill(tbody, nodes.map((n) => {
        const draining = n.state === 'DRAINING';
        return h('tr', { 'data-node': n.name, 'data-state': n.state },
          h('th', { scope: 'row' }, n.name),
          h('td', {}, stateBadge(n.state)),
          h('td', {}, n.zone ?? ''),
          h('td', {}, [n.machineType ?? '', h('div', { class: 'muted' }, `${n.vcpus} vCPU, ${Math.round(Number(n.memoryMb) / 1024)} GiB, ${n.runtime}`)]),
          h('td', {}, gpuList(n)),
          h('td', { class: 'num' }, String(n.replicas ?? 0)),
          h('td', { class: 'sync' }, timeEl(n.lastSyncTime), h('div', { class: 'muted ago' }, n.lastSyncTime ? `${duration(n.lastSyncTime)} ago` : '')),
          h('td', {}, mayDrain && (n.state === 'READY' || draining)
            ? h('button', { type: 'button', class: 'secondary', onclick: () => action(n.name, draining ? 'undrain' : 'drain'),
              'aria-label': `${draining ? 'Undrain' : 'Drain'} node ${n.name}` }, draining ? 'Undrain' : 'Drain') : ''));
      }));
      for (const n of nodes) {
        if (states.has(n.name) && states.get(n.name) !== n.state) announce(`Node ${n.name} is ${n.state}.`);
        states.set(n.name, n.state);
      }
      if (focused) tbody.querySelector(`tr[data-node="${CSS.escape(focused)}"] button`)?.focus();
    } else {
      for (const n of nodes) {
        const cell = tbody.querySelector(`tr[data-node="${CSS.escape(n.name)}"] td.sync`);
        if (cell) fill(cell, timeEl(n.lastSyncTime), h('div', { class: 'muted ago' }, n.lastSyncTime ? `${duration(n.lastSyncTime)} ago` : ''));
      }
    }
    if (first) {
      first = false;
      recordTiming('nodes', performance.now() - ctx.started);
    }
  }
  return poll(refresh, 2000);
}
