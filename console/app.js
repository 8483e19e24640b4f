// app.js - the console's shell: the hash router (shareable URLs: docs/console.md),
// the token dialog, the caller's name and the navigation.

import { forgetWhoami, getToken, setToken, whenUnauthenticated, whoami } from './api.js';
import { defaults, remember } from './prefs.js';
import { alertBanner, announce, fill, h } from './util.js';
import { renderJobs } from './jobs.js';
import { renderJob } from './job.js';
import { renderNodes } from './nodes.js';
import { renderQuotas } from './quotas.js';

const main = document.getElementById('main');
let stopPage = () => {};
let tokenAsked = false;

function route(hash) {
  const [path] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '');
  const d = defaults();
  if (!parts.length || (parts[0] === 'jobs' && parts.length === 1)) {
    return { redirect: `#/jobs/ml/projects/${encodeURIComponent(d.project)}` };
  }
  if (parts[0] === 'jobs' && parts[2] === 'projects') {
    const name = parts.slice(2).join('/');
    // A collection: projects/p (ml) or projects/p/locations/l/<kind> (Vertex).
    if (parts[1] === 'ml' && parts.length === 4) return { page: 'jobs', kind: 'jobs', project: parts[3], location: '', query };
    if (parts[1] === 'vertex' && parts.length === 7 && parts[4] === 'locations') {
      return { page: 'jobs', kind: parts[6], project: parts[3], location: parts[5], query };
    }
    return { page: 'job', name, query };
  }
  if (parts[0] === 'nodes') return { page: 'nodes' };
  if (parts[0] === 'quotas') {
    if (parts[1] === 'projects' && parts[2]) return { page: 'quotas', project: parts[2] };
    return { redirect: `#/quotas/projects/${encodeURIComponent(d.project)}` };
  }
  return { page: 'missing' };
}

function markNav(section) {
  for (const a of document.querySelectorAll('nav a[data-section]')) {
    if (a.dataset.section === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function show() {
  stopPage();
  stopPage = () => {};
  alertBanner('');
  const r = route(location.hash);
  if (r.redirect) {
    location.replace(r.redirect);
    return;
  }
  const started = performance.now();
  const ctx = { started };
  if (r.page === 'jobs') {
    markNav('jobs');
    remember(r.project, r.location);
    stopPage = renderJobs(main, r, ctx);
  } else if (r.page === 'job') {
    markNav('jobs');
    stopPage = renderJob(main, r, ctx);
  } else if (r.page === 'nodes') {
    markNav('nodes');
    stopPage = renderNodes(main, ctx);
  } else if (r.page === 'quotas') {
    markNav('quotas');
    remember(r.project);
    stopPage = renderQuotas(main, r, ctx);
  } else {
    markNav('');
    fill(main, h('h1', {}, 'Not found'), h('p', {}, 'This console has no such page. ', h('a', { href: '#/' }, 'Jobs')));
  }
  // Each page its own title (what a screen reader says first, and the tab's name).
  const h1 = main.querySelector('h1');
  document.title = h1 ? `${h1.textContent} – trainplane console` : 'trainplane console';
}

// The skip link: its "#main" is no route (the router would show Not found and
// lose the page's address), so it moves focus itself, to the page's heading.
document.getElementById('skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  const target = main.querySelector('h1') ?? main;
  target.tabIndex = -1;
  target.focus();
});

// --- the caller ---------------------------------------------------------------

async function loadCaller() {
  try {
    const me = await whoami(true);
    (window.trainplaneConsole ??= { timings: [] }).me = me;
    const who = document.getElementById('who');
    if (me.authMode === 'tokens') {
      who.textContent = `${me.name} (${me.role})`;
      document.getElementById('token-button').textContent = 'Change token';
    } else {
      who.textContent = 'open mode';
      document.getElementById('token-button').hidden = true;
    }
    return me;
  } catch (e) {
    if (e.status !== 401) alertBanner(e.message);
    return null;
  }
}

const dialog = document.getElementById('token-dialog');
const input = document.getElementById('token-input');
const tokenError = document.getElementById('token-error');

function askToken(message) {
  if (dialog.open) return;
  tokenError.textContent = message || '';
  input.value = '';
  dialog.showModal();
  input.focus();
}

document.getElementById('token-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const t = input.value.trim();
  if (!t) return;
  setToken(t);
  forgetWhoami();
  const me = await loadCaller();
  if (!me) {
    setToken('');
    tokenError.textContent = 'The server does not take this token (401). Check it and try again.';
    input.focus();
    return;
  }
  dialog.close();
  tokenAsked = false;
  alertBanner('');
  announce(`Signed in as ${me.name}, ${me.role}.`);
  show();
});
document.getElementById('token-forget').addEventListener('click', () => {
  setToken('');
  forgetWhoami();
  tokenError.textContent = 'Token forgotten.';
  document.getElementById('who').textContent = '';
  input.focus();
});
document.getElementById('token-button').addEventListener('click', () => askToken(''));
// A 401 opens the dialog once; dismissed (Escape), it stays shut and a banner
// says why nothing shows, rather than reopening at every poll.
whenUnauthenticated(() => {
  if (dialog.open) return;
  if (tokenAsked) {
    alertBanner('This server needs a token: choose Token at the top right.');
    return;
  }
  tokenAsked = true;
  askToken(getToken() ? 'The server refused the token (401).' : '');
});

window.addEventListener('hashchange', () => { show().then(() => {}); });

(async () => {
  await loadCaller();
  await show();
})();
