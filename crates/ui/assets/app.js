// clrprof ui: the shell: logs and their load progress, the tabs, the
// address (#view?log=N&from=..&to=..) and the time window shared by views.
'use strict';

CP.state = { logs: [], route: { view: 'summary', params: {} }, generation: 0 };

CP.parseHash = function () {
  const h = location.hash.replace(/^#\/?/, '');
  const [view, query] = h.split('?');
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  // With no log given at start, the collector's sessions come first.
  const first = CP.live.collector && CP.state.logs.length === 0 ? 'sessions' : CP.live.watch && CP.state.logs.length === 0 ? 'counters' : 'summary';
  return { view: view || first, params };
};

// Goes to a view; `params` replace the current ones, except the log and
// the window, which carry over unless given.
CP.go = function (view, params) {
  const cur = CP.state.route.params;
  const p = Object.assign({ log: cur.log || '0' }, cur.from !== undefined ? { from: cur.from, to: cur.to } : {}, params || {});
  for (const k of Object.keys(p)) if (p[k] === undefined || p[k] === null || p[k] === '') delete p[k];
  location.hash = '#' + view + '?' + new URLSearchParams(p);
};

CP.link = function (text, view, params) {
  return CP.el('a', { class: 'link', 'data-link': view, onclick: () => CP.go(view, params) }, text);
};

// The window of the route, as query parameters for the API.
CP.windowParams = function () {
  const p = CP.state.route.params;
  return p.from !== undefined ? { from: p.from, to: p.to } : {};
};

CP.logId = function () { return Number(CP.state.route.params.log || 0); };
CP.logPath = function (rest) { return `/api/log/${CP.logId()}/${rest}`; };

function showWindow() {
  const p = CP.state.route.params;
  const box = document.getElementById('window-box');
  box.hidden = p.from === undefined;
  if (!box.hidden) document.getElementById('window-text').textContent = `${CP.ms(+p.from)} – ${CP.ms(+p.to)}`;
}

async function render() {
  CP.tooltip.hide();
  CP.state.route = CP.parseHash();
  const { view } = CP.state.route;
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('active', a.dataset.view === view);
  document.getElementById('log-select').value = String(CP.logId());
  showWindow();
  const gen = ++CP.state.generation;
  const root = document.getElementById('view');
  const log = CP.state.logs[CP.logId()];
  const needsLog = view !== 'sessions' && view !== 'counters';
  // Leaks: a verdict needs three or more dumps of one process.
  document.querySelector('#tabs a[data-view="leaks"]').hidden = !(log && log.dumps >= 3);
  CP.liveBar();
  CP.state.shownGeneration = log && log.session ? log.session.generation : null;
  if (needsLog && !log) { root.replaceChildren(CP.el('p', {}, CP.live.collector ? 'No log opened yet: open a session from the Sessions tab.' : 'No such log.')); return; }
  if (needsLog && log.state !== 'ready' && view !== 'compare') {
    root.replaceChildren(CP.el('p', { class: 'note' }, log.state === 'failed' ? `${log.name} failed to load: ${log.error}` : `${log.name} is loading…`));
    return;
  }
  const fn = CP.views[view];
  if (!fn) { root.replaceChildren(CP.el('p', {}, `No view ${view}.`)); return; }
  // A session's views say which load of its log they were drawn from.
  const box = CP.el('div', { 'data-view': view, 'data-route': location.hash, 'data-generation': log && log.session ? log.session.generation : undefined });
  root.replaceChildren(box);
  // A sampled trace: every view says its figures are estimates, and how.
  if (needsLog && log && log.estimates) {
    box.append(CP.el('p', { class: 'estimates', 'data-estimates': log.estimates.method },
      CP.el('strong', {}, 'Estimates. '), `${log.format || 'A trace'}: ${log.estimates.note}.`));
  }
  // A trace whose runtime dropped events: every view says what is missing.
  if (needsLog && log && log.incomplete) {
    box.append(CP.el('p', { class: 'incomplete', 'data-lost-events': String(log.incomplete.lost_events) },
      CP.el('strong', {}, 'Incomplete. '), `${log.format || 'A trace'}: ${log.incomplete.note}.`));
  }
  // A file without allocation events: its allocation figures are unknown.
  if (needsLog && log && log.allocations_unknown) {
    box.append(CP.el('p', { class: 'unknown', 'data-allocations-unknown': '' },
      CP.el('strong', {}, 'Allocations unknown. '), `${log.format || 'The log'}: ${log.allocations_unknown}; allocation figures are unknown, not 0.`));
  }
  try {
    await fn(box, CP.state.route.params, () => gen === CP.state.generation);
  } catch (e) {
    if (gen === CP.state.generation) box.append(CP.error(e));
  }
  if (gen === CP.state.generation) box.setAttribute('data-ready', '1');
}

// Polls the logs' progress while any is loading (every 250 ms) and, with
// a collector, the opened sessions (every second): a running session's
// view is drawn again when its log was loaded again. The page is usable
// (other logs, other tabs) meanwhile.
let pollTimer = null;
async function poll() {
  clearTimeout(pollTimer);
  pollTimer = null;
  let logs;
  try { logs = await CP.api('/api/logs'); } catch (e) { pollTimer = setTimeout(poll, 1000); return; }
  const before = CP.state.logs.map((l) => l.state).join();
  CP.state.logs = logs;
  const sel = document.getElementById('log-select');
  if (sel.options.length !== logs.length) {
    sel.replaceChildren(...logs.map((l) => CP.el('option', { value: l.id }, l.name)));
    sel.value = String(CP.logId());
  }
  CP.liveBar();
  const loading = logs.filter((l) => l.state === 'loading');
  const panel = document.getElementById('loading');
  panel.hidden = loading.length === 0;
  panel.replaceChildren(...loading.map((l) => CP.el('div', { 'data-loading': l.name },
    `loading ${l.name} `, CP.el('span', { class: 'progress' }, CP.el('div', { style: `width:${l.total ? (100 * l.done / l.total).toFixed(1) : 0}%` })),
    ` ${CP.size(l.done)} of ${CP.size(l.total)}`)));
  const cur = logs[CP.logId()];
  const grown = cur && cur.session && CP.state.route.view !== 'sessions' && CP.state.shownGeneration !== null &&
    cur.session.generation !== CP.state.shownGeneration;
  if (!CP.state.drawn || before !== logs.map((l) => l.state).join() || grown) { CP.state.drawn = true; render(); }
  if (loading.length) pollTimer = setTimeout(poll, 250);
  else if (CP.live.collector) pollTimer = setTimeout(poll, 1000);
}
CP.pollNow = poll;

document.getElementById('log-select').addEventListener('change', (e) => CP.go(CP.state.route.view, { log: e.target.value, from: undefined, to: undefined }));
document.getElementById('window-clear').addEventListener('click', () => {
  const p = Object.assign({}, CP.state.route.params);
  delete p.from; delete p.to;
  location.hash = '#' + CP.state.route.view + '?' + new URLSearchParams(p);
});
for (const a of document.querySelectorAll('#tabs a')) a.addEventListener('click', () => CP.go(a.dataset.view));
window.addEventListener('hashchange', render);
// Whether the server shows a collector's sessions.
CP.api('/api/sessions').then(() => { CP.live.collector = true; }, () => { CP.live.collector = false; }).then(() =>
  // Whether it shows `clrprof watch`'s counters.
  CP.api('/api/watch').then(() => { CP.live.watch = true; }, () => { CP.live.watch = false; })).then(() => {
  document.querySelector('#tabs a[data-view="sessions"]').hidden = !CP.live.collector;
  document.querySelector('#tabs a[data-view="counters"]').hidden = !CP.live.watch;
  CP.state.route = CP.parseHash();
  poll();
});
