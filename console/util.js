// util.js - small DOM and formatting helpers shared by the pages.

/**
 * An element: h('a', { href: '#/x', class: 'y', onclick: f }, 'text', child).
 * Attribute values false/null/undefined are left out; 'text' sets textContent.
 */
export function h(tag, attrs = {}, ...kids) {
  const el = tag.includes(':') || tag === 'svg'
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.replace(/^svg:/, ''))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

/** An SVG element (attributes as h()). */
export function s(tag, attrs = {}, ...kids) {
  return h(`svg:${tag}`, attrs, ...kids);
}

function append(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else el.append(k instanceof Node ? k : String(k));
  }
}

/** Replaces el's children. */
export function fill(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

const pad = (n) => String(n).padStart(2, '0');

/** An RFC 3339 time as local "YYYY-MM-DD HH:MM:SS" (ms: ".mmm" too), '' when absent. */
export function fmtTime(iso, ms = false) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    (ms ? `.${String(d.getMilliseconds()).padStart(3, '0')}` : '');
}

/** A <time> element for an RFC 3339 time. */
export function timeEl(iso, ms = false) {
  return iso ? h('time', { datetime: iso, title: iso }, fmtTime(iso, ms)) : '';
}

/** "1 h 2 min", "3 min 4 s", "5 s" between two times (the second: now when absent). */
export function duration(from, to) {
  if (!from) return '';
  const ms = (to ? new Date(to) : new Date()) - new Date(from);
  if (!(ms >= 0)) return '';
  const sec = Math.round(ms / 1000);
  if (sec < 60) return `${sec} s`;
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${sec % 60} s`;
  return `${Math.floor(sec / 3600)} h ${Math.floor((sec % 3600) / 60)} min`;
}

/** Says msg to screen readers (the page's polite live region). */
export function announce(msg) {
  const el = document.getElementById('status');
  if (el) el.textContent = msg;
}

/** Shows an error banner (role=alert); empty msg hides it. */
export function alertBanner(msg) {
  const el = document.getElementById('alert');
  if (!el) return;
  el.textContent = msg || '';
  el.hidden = !msg;
}

/** Asks a yes/no question in the confirmation dialog; resolves true on yes. */
export function confirmDialog(title, text, yesLabel) {
  const dlg = document.getElementById('confirm-dialog');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-yes').textContent = yesLabel;
  return new Promise((resolve) => {
    const done = (answer) => {
      dlg.removeEventListener('close', onClose);
      resolve(answer);
    };
    const onClose = () => done(dlg.returnValue === 'yes');
    dlg.addEventListener('close', onClose);
    dlg.returnValue = 'no';
    dlg.showModal();
  });
}

/** A state badge: its text, a class by kind (ok, bad, run, wait). */
export function stateBadge(state) {
  const st = String(state ?? 'UNKNOWN');
  const kind = /SUCCEEDED|READY/.test(st) ? 'ok'
    : /FAILED|LOST|EXPIRED/.test(st) ? 'bad'
      : /CANCEL|DRAIN|STOPPING|PAUS/.test(st) ? 'off'
        : /RUNNING|PREPARING|PENDING|STARTING/.test(st) ? 'run' : 'wait';
  return h('span', { class: `badge ${kind}` }, st.replace(/^(JOB|PIPELINE)_STATE_/, ''));
}

/**
 * Runs fn now and then every ms while the page stays; a run waits for the
 * previous one. Returns stop(). Slower while the tab is hidden.
 */
export function poll(fn, ms) {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    if (stopped) return;
    try { await fn(); } catch (e) { if (!stopped) console.warn(e); }
    if (!stopped) timer = setTimeout(tick, document.hidden ? ms * 5 : ms);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

/** The query of a hash route ("#/x?a=1") as URLSearchParams. */
export function hashQuery(hash) {
  const i = hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : hash.slice(i + 1));
}

/** Records how long a page took to show its data (performance.now, ms). */
export function recordTiming(name, ms) {
  const t = (window.trainplaneConsole ??= { timings: [] }).timings;
  t.push({ name, ms });
  if (t.length > 100) t.shift();
}

/** Focus goes to the page's heading (after a navigation), for keyboard and screen reader users. */
export function focusHeading(root) {
  const h1 = root.querySelector('h1');
  if (h1) {
    h1.tabIndex = -1;
    h1.focus({ preventScroll: true });
  }
}
