// clrprof ui: the runtime counters `clrprof watch --json` writes
// (`clrprof ui --watch FILE`): a chart per process and counter, the rules'
// firings marked on them, redrawn every 2 s while the file grows.
'use strict';

CP.live.watch = false;

// The counters charted, in `clrprof watch`'s order, with their titles.
const COUNTERS = [
  ['gc-heap-size', 'GC heap size'], ['gen-0-size', 'Gen 0 size'], ['gen-1-size', 'Gen 1 size'],
  ['gen-2-size', 'Gen 2 size'], ['loh-size', 'LOH size'], ['alloc-rate', 'Allocation rate (per interval)'],
  ['gen-0-gc-count', 'Gen 0 GCs (per interval)'], ['gen-1-gc-count', 'Gen 1 GCs (per interval)'],
  ['gen-2-gc-count', 'Gen 2 GCs (per interval)'], ['time-in-gc', 'Time in GC (%)'], ['working-set', 'Working set'],
];

function counterValue(v, unit) {
  if (unit === 'bytes') return CP.size(Math.round(v));
  if (unit === 'percent') return v.toFixed(1) + '%';
  return CP.num(v);
}

// One chart: the series as a line over its time, firings as red lines.
function counterChart(title, s, fired) {
  const W = 360, H = 120, P = 4;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  svg.setAttribute('data-counter', s.counter);
  const pts = s.points;
  const t0 = pts.length ? pts[0][0] : 0, t1 = pts.length ? pts[pts.length - 1][0] : 1;
  const vmax = Math.max(1e-9, ...pts.map((p) => p[1]));
  const x = (t) => P + (W - 2 * P) * (t1 > t0 ? (t - t0) / (t1 - t0) : 0);
  const y = (v) => H - P - (H - 2 * P) * (v / vmax);
  for (const f of fired) {
    if (f.at < t0 || f.at > t1) continue;
    const l = document.createElementNS(ns, 'line');
    for (const [k, v] of [['x1', x(f.at)], ['x2', x(f.at)], ['y1', 0], ['y2', H], ['stroke', '#c33'], ['data-firing', f.firing]]) l.setAttribute(k, v);
    const tip = document.createElementNS(ns, 'title');
    tip.textContent = `firing ${f.firing}: ${f.why} (${f.rule})`;
    l.append(tip);
    svg.append(l);
  }
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' '));
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', '#36c');
  svg.append(line);
  const last = pts.length ? counterValue(pts[pts.length - 1][1], s.unit) : '-';
  return CP.el('figure', { class: 'counter' }, CP.el('figcaption', {}, `${title}: ${last} (max ${counterValue(vmax, s.unit)})`), svg);
}

CP.views.counters = async function (root, params, current) {
  root.append(CP.el('h2', {}, 'Runtime counters (clrprof watch)'));
  const note = CP.el('p', { class: 'note' });
  const holder = CP.el('div');
  root.append(note, holder);
  async function fill() {
    const w = await CP.api('/api/watch');
    const pids = [...new Set(w.series.map((s) => s.pid))];
    note.replaceChildren(`${pids.length} processes, ${w.fired.length} firings; redrawn every 2 s.`);
    const blocks = [];
    for (const pid of pids) {
      const fired = w.fired.filter((f) => f.pid === pid);
      const charts = [];
      for (const [name, title] of COUNTERS) {
        const s = w.series.find((x) => x.pid === pid && x.counter === name);
        if (s) charts.push(counterChart(title, s, fired));
      }
      blocks.push(CP.el('section', { 'data-pid': pid }, CP.el('h3', {}, `process ${pid}`), CP.el('div', { class: 'counters' }, ...charts)));
    }
    holder.replaceChildren(...blocks);
  }
  await fill();
  const again = async () => {
    if (!current()) return;
    try { await fill(); } catch (e) { /* the next round tries again */ }
    setTimeout(again, 2000);
  };
  setTimeout(again, 2000);
};
