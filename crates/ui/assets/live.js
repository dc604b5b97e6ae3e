// clrprof ui: the collector's sessions (`clrprof ui --collector DIR`): the
// list, opening one as a log (every view then works on it), the live bar
// (is it still running, when its figures were last refreshed) and the
// control buttons of a running session (heap dump now, a comment,
// allocations on/off), which go through the collector as `clrprof ctl`.
'use strict';

CP.live = { collector: false };

CP.time = function (ms) {
  if (!ms) return 'not yet';
  const d = new Date(ms);
  return d.toLocaleTimeString('en-GB', { hour12: false });
};

// POST to an /api route with a JSON body; rejects with the server's message.
CP.post = async function (path, body) {
  const r = await fetch(path, { method: 'POST', headers: { 'x-clrprof-token': CP.token, 'content-type': 'application/json' }, body: JSON.stringify(body || {}) });
  const answer = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(answer.error || r.statusText);
  return answer;
};

CP.openSession = async function (name) {
  const o = await CP.post(`/api/session/${encodeURIComponent(name)}/open`);
  await CP.pollNow();
  CP.go('summary', { log: String(o.log), from: undefined, to: undefined });
};

const STATE_TEXT = { live: 'running', ended: 'ended', cut: 'cut' };

CP.views.sessions = async function (root, params, current) {
  root.append(CP.el('h2', {}, 'Sessions of the collector'));
  const note = CP.el('p', { class: 'note' });
  const holder = CP.el('div');
  root.append(note, holder);
  async function fill() {
    const s = await CP.api('/api/sessions');
    note.replaceChildren(`${s.sessions.length} sessions in ${s.dir} (running ones first appear as the program connects; the list refreshes every 2 s). Open one to see it with every view.`);
    const rows = s.sessions.slice().reverse();
    holder.replaceChildren(rows.length === 0 ? CP.el('p', { class: 'note' }, 'No session yet: start a program with CLRPROF_TARGET and CLRPROF_TOKEN of the collector, or `clrprof record --target`.') : CP.table('sessions', [
      { key: 'session', label: 'Session', show: (r) => CP.el('a', { class: 'link', 'data-open': r.session, onclick: () => CP.openSession(r.session).catch((e) => holder.prepend(CP.error(e))) }, r.session) },
      { key: 'state', label: 'State', show: (r) => CP.el('span', { class: `state ${r.state}` }, STATE_TEXT[r.state] || r.state) },
      { key: 'program', label: 'Program' },
      { key: 'pid', label: 'pid', num: true, show: (r) => String(r.pid) },
      { key: 'runtime', label: 'Runtime' },
      { key: 'bytes', label: 'Bytes', num: true },
      { key: 'start', label: 'Started' },
      { key: 'end', label: 'Ended', value: (r) => r.end || '' },
      { key: 'reason', label: 'How it ended', value: (r) => (r.reason || '') + (r.spool ? ` [spool ${r.spool} from byte ${r.spool_from}]` : '') },
      { key: 'log_id', label: '', value: (r) => (r.log_id === null ? '' : r.log_id), show: (r) => (r.log_id === null ? CP.el('button', { 'data-open-button': r.session, onclick: () => CP.openSession(r.session) }, 'open') : CP.link('opened', 'summary', { log: String(r.log_id) })) },
    ], rows, (r) => r.session));
    root.setAttribute('data-sessions', s.sessions.map((r) => `${r.session}:${r.state}`).join(' '));
  }
  await fill();
  const again = async () => {
    if (!current() || !document.body.contains(root)) return;
    try { await fill(); } catch (e) { note.replaceChildren(CP.error(e)); }
    setTimeout(again, 2000);
  };
  setTimeout(again, 2000);
};

// The bar over a session's views: running or not, last refresh, controls.
// Built once per log shown; its figures are updated at each poll.
CP.liveBar = function () {
  const bar = document.getElementById('live-bar');
  const log = CP.state.logs[CP.logId()];
  if (!log || !log.session) { bar.hidden = true; bar.replaceChildren(); bar.dataset.log = ''; return; }
  bar.hidden = false;
  if (bar.dataset.log !== String(log.id)) buildBar(bar, log);
  const s = log.session;
  bar.dataset.live = s.live ? '1' : '0';
  bar.dataset.generation = String(s.generation);
  bar.dataset.refreshed = String(s.refreshed_ms);
  const status = bar.querySelector('[data-live-status]');
  const state = s.live ? 'running' : (STATE_TEXT[s.record_state] || 'loading');
  status.replaceChildren(CP.el('span', { class: `state ${s.live ? 'live' : s.record_state || ''}` }, s.live ? '● running' : state),
    ` ${s.name}: ` + (s.live ? `refreshed at ${CP.time(s.refreshed_ms)}, ${CP.size(s.loaded_bytes)} loaded (update ${s.generation})` :
      `${CP.size(s.loaded_bytes)}, the whole log loaded`));
  for (const b of bar.querySelectorAll('button, input')) b.disabled = !s.live;
};

function buildBar(bar, log) {
  bar.dataset.log = String(log.id);
  const name = log.session.name;
  const result = CP.el('span', { class: 'ctl-result', 'data-ctl-result': '' });
  async function send(command, label) {
    result.className = 'ctl-result';
    result.textContent = `${label}…`;
    result.dataset.ok = '';
    try {
      const r = await CP.post(`/api/session/${encodeURIComponent(name)}/ctl`, { command });
      result.textContent = `${label}: ${r.reply}`;
      result.dataset.ok = '1';
    } catch (e) {
      result.className = 'ctl-result error';
      result.textContent = `${label}: ${e.message}`;
      result.dataset.ok = '0';
    }
    result.dataset.command = command;
    CP.pollNow();
  }
  const comment = CP.el('input', { placeholder: 'comment text', size: 22, 'data-input': 'comment' });
  const addComment = () => { if (comment.value.trim()) { send(`comment ${comment.value.trim()}`, `comment "${comment.value.trim()}"`); comment.value = ''; } };
  comment.addEventListener('keydown', (e) => { if (e.key === 'Enter') addComment(); });
  bar.replaceChildren(CP.el('span', { 'data-live-status': '' }),
    CP.el('span', { class: 'controls' },
      CP.el('button', { 'data-ctl': 'dump', onclick: () => send('dump', 'heap dump') }, 'heap dump now'),
      comment, CP.el('button', { 'data-ctl': 'comment', onclick: addComment }, 'add comment'),
      CP.el('button', { 'data-ctl': 'allocations off', onclick: () => send('allocations off', 'allocations off') }, 'allocations off'),
      CP.el('button', { 'data-ctl': 'allocations on', onclick: () => send('allocations on', 'allocations on') }, 'allocations on')),
    result);
}
