// clrprof ui: the Time Line. Address (rows) x time (columns), each cell
// coloured by the type occupying it, drawn from the server's cell grid for
// the visible window only. Drag: zoom to a window (and list who allocated
// in it); wheel: pan; click: the live bytes by type at that moment.
'use strict';

CP.views.timeline = async function (root, params, current) {
  const log = CP.logId();
  const meta = await CP.api(CP.logPath('timeline'));
  // Room for the address labels: 64-bit heaps have longer ones.
  const wide = meta.bands.some((b) => b.high > 0xffffffff);
  const M = { left: wide ? 116 : 96, right: 10, top: 22, bottom: 26 };
  const width = Math.max(600, Math.min(root.clientWidth || 1200, 1600));
  const height = 520;
  const plotW = width - M.left - M.right, plotH = height - M.top - M.bottom;
  const from = params.from !== undefined ? +params.from : 0;
  const to = params.to !== undefined ? +params.to : meta.end_ms;
  const span = Math.max(to - from, 1e-6);
  // A log whose heap changes all happened at one tick: the columns follow
  // the changes in log order, as `clrprof timeline` draws it (the server
  // says so for the whole log; a time window keeps the time axis).
  const logOrder = meta.axis === 'log_order';
  const changes = Math.max(meta.changes, 1);

  const controls = CP.el('div', { class: 'controls' },
    CP.el('button', { onclick: () => CP.go('timeline', { from: undefined, to: undefined }) }, 'whole log'),
    CP.el('button', { onclick: () => zoomTo(from - span / 2, to + span / 2), disabled: logOrder }, 'zoom out'),
    logOrder
      ? CP.el('span', { class: 'note', 'data-window': `${from},${to}`, 'data-axis': 'log_order' }, `Every heap change of this log happened at one moment (${CP.ms(meta.changes_ms)}): time says nothing about its history, so the columns follow its ${CP.num(meta.changes)} heap changes in log order, as clrprof timeline draws it. Time windows, "who allocated" and "live at a moment" need a log with time ticks (i lines).`)
      : CP.el('span', { class: 'note', 'data-window': `${from},${to}`, 'data-axis': 'time' }, `showing ${CP.ms(from)} – ${CP.ms(to)} of ${CP.ms(meta.end_ms)}. Drag to zoom into a window, scroll to pan, click a moment for what was live.`));
  root.append(CP.el('h2', {}, 'Time Line'), controls);
  const canvas = CP.el('canvas', { width, height, 'data-plot': `${M.left},${M.top},${plotW},${plotH}` });
  const wrap = CP.el('div', { class: 'tl-wrap' }, canvas);
  const legend = CP.el('div', { class: 'tl-legend' });
  const commentList = CP.el('div', { class: 'tl-comments' });
  const below = CP.el('div', { class: 'cols halves' });
  const live = CP.el('div', { 'data-panel': 'live' });
  const who = CP.el('div', { 'data-panel': 'who' });
  below.append(live, who);
  root.append(wrap, legend, commentList, below);

  const win = logOrder ? {} : { from, to };
  const [marks, grid, typeColour] = await Promise.all([
    CP.api(CP.logPath('timeline'), win),
    CP.api(CP.logPath('timeline/grid'), Object.assign({ columns: plotW, rows: plotH }, win)),
    CP.typeColours(),
  ]);
  if (!current()) return;
  const names = new Map(grid.types.map((t) => [t.type_id, t.name]));
  const rgbs = new Map(grid.types.map((t) => [t.type_id, CP.rgb(typeColour(t.name))]));
  const colourOf = (id) => (id ? rgbs.get(id) || CP.rgb(CP.OTHER_TYPES) : [255, 255, 255]);

  // Cells -> an image of columns x rows, scaled onto the plot.
  const rows = grid.rows.length, cols = grid.columns;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  if (rows > 0) {
    const img = new ImageData(cols, rows);
    let k = 0;
    for (let i = 0; i < grid.runs.length; i += 2) {
      const [r, g, b] = colourOf(grid.runs[i]);
      for (let n = 0; n < grid.runs[i + 1]; n++, k++) {
        img.data[4 * k] = r; img.data[4 * k + 1] = g; img.data[4 * k + 2] = b; img.data[4 * k + 3] = 255;
      }
    }
    const off = CP.el('canvas', { width: cols, height: rows });
    off.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, M.left, M.top, plotW, plotH);
  }
  ctx.strokeStyle = '#9aa3b2';
  ctx.strokeRect(M.left - 0.5, M.top - 0.5, plotW + 1, plotH + 1);
  const xOf = (ms) => M.left + (ms - from) / span * plotW;
  const xOfChange = (k) => M.left + k / changes * plotW;
  const msOf = (x) => from + (x - M.left) / plotW * span;
  // Address labels: the first row of each band.
  ctx.fillStyle = '#333';
  ctx.font = '11px system-ui, sans-serif';
  const rowH = rows ? plotH / rows : plotH;
  let lastY = -100;
  grid.rows.forEach((r, i) => {
    if (i === 0 || grid.rows[i - 1].band !== r.band) {
      const y = M.top + i * rowH + 10;
      if (y - lastY > 14) { ctx.fillText(CP.hex(r.high), 4, y); lastY = y; }
      if (i > 0) { ctx.strokeStyle = '#555'; ctx.beginPath(); ctx.moveTo(M.left, M.top + i * rowH); ctx.lineTo(M.left + plotW, M.top + i * rowH); ctx.stroke(); }
    }
  });
  // The axis: time, or the heap changes in log order.
  const axisTicks = [];
  if (logOrder) {
    const step = Math.max(1, niceStep(changes / 8));
    for (let k = 0; k <= changes; k += step) axisTicks.push([xOfChange(k), CP.num(k)]);
  } else {
    const step = niceStep(span / 8);
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) axisTicks.push([xOf(t), CP.ms(t)]);
  }
  ctx.fillStyle = '#333';
  for (const [x, label] of axisTicks) {
    ctx.fillRect(x, M.top + plotH, 1, 4);
    // Centred under its tick, but kept inside the picture.
    const lw = ctx.measureText(label).width;
    ctx.fillText(label, Math.max(2, Math.min(x - lw / 2, width - lw - 2)), height - 8);
  }
  if (logOrder) ctx.fillText('heap changes', 4, height - 8);
  // GC markers (top strip, by generation) and comments (dashed lines).
  const genColour = ['#2e7dd7', '#e08a00', '#c62828', '#6a1b9a'];
  marks.gcs.forEach((g, i) => {
    const x = logOrder ? xOfChange(marks.gc_changes[i]) : xOf(g.ms);
    ctx.fillStyle = genColour[Math.min(g.generation, 3)] || '#333';
    ctx.beginPath(); ctx.moveTo(x - 4, M.top - 12); ctx.lineTo(x + 4, M.top - 12); ctx.lineTo(x, M.top - 3); ctx.fill();
  });
  ctx.setLineDash([4, 3]);
  marks.comments.forEach((c, i) => {
    const x = logOrder ? xOfChange(marks.comment_changes[i]) : xOf(c.ms);
    ctx.strokeStyle = '#111'; ctx.beginPath(); ctx.moveTo(x, M.top); ctx.lineTo(x, M.top + plotH); ctx.stroke();
    const label = c.text.length > 24 ? c.text.slice(0, 23) + '…' : c.text;
    const lw = ctx.measureText(label).width;
    // Near the right edge the label goes to the left of its line.
    const lx = x + 3 + lw > M.left + plotW ? x - 3 - lw : x + 3;
    ctx.fillStyle = 'rgba(255,255,255,.8)'; ctx.fillRect(lx - 1, M.top + 2, lw + 2, 13);
    ctx.fillStyle = '#111'; ctx.fillText(label, lx, M.top + 12);
  });
  ctx.setLineDash([]);
  const base = ctx.getImageData(0, 0, width, height);

  // The legend: the coloured types in view, largest first, then the grey
  // of every other type.
  const coloured = grid.types.filter((t) => typeColour.coloured.has(t.name));
  const others = grid.types.length - coloured.length;
  legend.replaceChildren(...coloured.map((t) => CP.el('span', { 'data-legend': t.name }, CP.swatch(typeColour(t.name), t.name), t.name)),
    others ? CP.el('span', { 'data-legend-other': others }, CP.swatch(CP.OTHER_TYPES), `${CP.num(others)} other types`) : null,
    CP.el('span', { class: 'note' }, `GC: `, ...['gen 0', 'gen 1', 'gen 2'].map((l, i) => CP.el('span', { style: `color:${genColour[i]}` }, ` ▼ ${l}`)), `; ${marks.gcs.length} GCs, ${marks.comments.length} comments in view`));

  commentList.replaceChildren(...marks.comments.map((c) => CP.el('span', { 'data-comment': c.text, 'data-ms': c.ms }, `${CP.ms(c.ms)}: ${c.text}`)));

  // Interactions.
  let drag = null;
  const inPlot = (x) => Math.max(M.left, Math.min(M.left + plotW, x));
  const local = (e) => { const r = canvas.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  function zoomTo(a, b) {
    a = Math.max(0, a); b = Math.min(meta.end_ms, b);
    if (b - a < 1e-3) return;
    CP.go('timeline', { from: a.toFixed(1), to: b.toFixed(1) });
  }
  canvas.addEventListener('mousedown', (e) => { if (logOrder) return; const [x] = local(e); drag = { x0: inPlot(x), x1: inPlot(x) }; });
  canvas.addEventListener('mousemove', (e) => {
    const [x, y] = local(e);
    if (drag) {
      drag.x1 = inPlot(x);
      ctx.putImageData(base, 0, 0);
      ctx.fillStyle = 'rgba(36,88,179,.25)';
      ctx.fillRect(Math.min(drag.x0, drag.x1), M.top, Math.abs(drag.x1 - drag.x0), plotH);
      return;
    }
    if (x < M.left || x > M.left + plotW || y < M.top || y > M.top + plotH || !rows) { CP.tooltip.hide(); return; }
    const r = Math.min(rows - 1, Math.floor((y - M.top) / rowH));
    const c = Math.min(cols - 1, Math.floor((x - M.left) / plotW * cols));
    const id = cellAt(grid, r, c);
    const when = logOrder ? `after ${CP.num(Math.round((x - M.left) / plotW * changes))} heap changes` : CP.ms(msOf(x));
    CP.tooltip.show(e.clientX, e.clientY, `${when}  ${CP.hex(grid.rows[r].low)}–${CP.hex(grid.rows[r].high)}  ${id ? names.get(id) : 'free'}`);
  });
  canvas.addEventListener('mouseleave', () => CP.tooltip.hide());
  window.addEventListener('mouseup', function up(e) {
    if (!drag) return;
    const d = drag; drag = null;
    if (!document.body.contains(canvas)) { window.removeEventListener('mouseup', up); return; }
    if (Math.abs(d.x1 - d.x0) >= 4) {
      zoomTo(msOf(Math.min(d.x0, d.x1)), msOf(Math.max(d.x0, d.x1)));
    } else {
      ctx.putImageData(base, 0, 0);
      const at = msOf(d.x0);
      ctx.strokeStyle = '#000'; ctx.beginPath(); ctx.moveTo(d.x0, M.top); ctx.lineTo(d.x0, M.top + plotH); ctx.stroke();
      showLive(+at.toFixed(1));
    }
  });
  let pan = 0, panTimer = null;
  canvas.addEventListener('wheel', (e) => {
    if (logOrder) return;
    e.preventDefault();
    pan += (Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY) / plotW * span * 0.5;
    clearTimeout(panTimer);
    panTimer = setTimeout(() => {
      let a = from + pan, b = to + pan;
      if (a < 0) { b -= a; a = 0; }
      if (b > meta.end_ms) { a -= b - meta.end_ms; b = meta.end_ms; }
      zoomTo(a, b);
    }, 200);
  }, { passive: false });

  async function showLive(at) {
    live.replaceChildren(CP.el('h3', {}, `Live at ${CP.ms(at)}`), CP.el('p', { class: 'note' }, 'loading…'));
    const r = await CP.api(CP.logPath('types'), { kind: 'final', at });
    const total = r.types.reduce((a, t) => a + t.bytes, 0);
    live.replaceChildren(CP.el('h3', { 'data-at': at }, `Live at ${CP.ms(at)}: ${CP.num(total)} bytes`),
      CP.table('live', CP.typeColumns(r.types), r.types.slice(0, 15), (t) => t.type));
  }

  if (params.from !== undefined) {
    who.append(CP.el('h3', {}, `Who allocated in ${CP.ms(from)} – ${CP.ms(to)}`), CP.el('p', { class: 'note' }, 'loading…'));
    const w = { from: from.toFixed(1), to: to.toFixed(1) };
    const [types, functions, surv] = await Promise.all([
      CP.api(CP.logPath('types'), Object.assign({ kind: 'allocated' }, w)),
      CP.api(CP.logPath('functions'), Object.assign({ sort: 'exclusive', top: 15 }, w)),
      CP.api(CP.logPath('survivors'), Object.assign({ top: 15 }, w)),
    ]);
    if (!current()) return;
    const total = types.types.reduce((a, t) => a + t.bytes, 0);
    who.replaceChildren(CP.el('h3', { 'data-who-window': `${w.from},${w.to}` }, `Who allocated in ${CP.ms(+w.from)} – ${CP.ms(+w.to)}: ${CP.num(total)} bytes`),
      CP.el('p', { class: 'note' }, 'By type'),
      CP.table('who-types', CP.typeColumns(types.types), types.types.slice(0, 15), (t) => t.type),
      CP.el('p', { class: 'note' }, 'By function (exclusive)'),
      CP.table('who-functions', CP.FIGURES(total, functions).filter((c) => !c.key.startsWith('inclusive')), functions, (r) => r.name),
      CP.el('p', { class: 'note' }, 'What of it survived (to the end)'));
    CP.survivorTables(who, surv);
  } else if (!logOrder) {
    who.append(CP.el('p', { class: 'note' }, 'Drag across the Time Line to see who allocated in a window and what of it survived.'));
  }
};

function cellAt(grid, r, c) {
  // Walk the runs to cell r * columns + c (the grid is drawn once; hover
  // lookups build an index on first use).
  if (!grid._starts) {
    grid._starts = [];
    let k = 0;
    for (let i = 0; i < grid.runs.length; i += 2) { grid._starts.push(k); k += grid.runs[i + 1]; }
  }
  const k = r * grid.columns + c;
  let lo = 0, hi = grid._starts.length - 1;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (grid._starts[mid] <= k) lo = mid; else hi = mid - 1; }
  return grid.runs[2 * lo];
}

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}
