// clrprof ui: the table views (Summary, histograms, allocation by code, the
// Allocation Graph, lifetime/ages/survivors, two logs compared).
'use strict';
CP.views = {};

// ---- Summary: CLRProfiler's figures, each linking to its view.
CP.SUMMARY = [
  ['allocated_bytes', 'Allocated bytes', 'types', { kind: 'allocated' }],
  ['relocated_bytes', 'Relocated bytes', 'types', { kind: 'relocated' }],
  ['final_heap_bytes', 'Final heap bytes', 'types', { kind: 'final' }],
  ['objects_finalized', 'Objects finalized', 'types', { kind: 'finalized' }],
  ['critical_objects_finalized', 'Critical objects finalized', 'types', { kind: 'critical' }],
  ['gen0_collections', 'Gen 0 collections', 'timeline', {}],
  ['gen1_collections', 'Gen 1 collections', 'timeline', {}],
  ['gen2_collections', 'Gen 2 collections', 'timeline', {}],
  ['induced_collections', 'Induced collections', 'timeline', {}],
  ['gen0_heap_bytes', 'Gen 0 heap bytes', 'lifetime', { tab: 'lifetime' }],
  ['gen1_heap_bytes', 'Gen 1 heap bytes', 'lifetime', { tab: 'lifetime' }],
  ['gen2_heap_bytes', 'Gen 2 heap bytes', 'lifetime', { tab: 'lifetime' }],
  ['loh_bytes', 'Large object heap bytes', 'lifetime', { tab: 'lifetime' }],
  ['handles_created', 'Handles created', 'handles', { show: 'created' }],
  ['handles_destroyed', 'Handles destroyed', 'handles', { show: 'destroyed' }],
  ['handles_surviving', 'Handles surviving', 'handles', { show: 'surviving' }],
  ['heap_dumps', 'Heap dumps', 'dumps', {}],
  ['comments', 'Comments', 'timeline', {}],
];

CP.views.summary = async function (root) {
  const s = await CP.api(CP.logPath('summary'));
  const log = CP.state.logs[CP.logId()];
  root.append(CP.el('h2', {}, `Summary of ${log.name}`),
    CP.el('p', { class: 'note' }, `Loaded in ${log.seconds.toFixed(2)} s${log.from_cache ? ' from the model cache (the log is unchanged since it was last loaded)' : ''}. Each figure opens the view it comes from.`));
  const rows = CP.SUMMARY.map(([key, label, view, params]) => ({ key, label, view, params, value: s[key] }));
  const retainers = CP.el('div', { 'data-panel': 'retainers' });
  root.append(CP.el('div', { class: 'cols' }, CP.el('div', {}, CP.table('summary', [
    { key: 'label', label: 'Figure' },
    { key: 'value', label: 'Value', num: true, show: (r) => (r.view ? CP.link(CP.num(r.value), r.view, r.params) : CP.num(r.value)) },
  ], rows, (r) => r.key)), retainers));
  await CP.topRetainers(retainers, s);
};

// ---- Histograms by type (five kinds), size classes, ages.
CP.KINDS = [['allocated', 'Allocated'], ['relocated', 'Relocated'], ['final', 'Final heap'], ['finalized', 'Finalized'], ['critical', 'Critical finalized']];

CP.views.types = async function (root, params) {
  const kind = params.kind || 'allocated';
  const bar = CP.el('div', { class: 'controls' }, ...CP.KINDS.map(([k, label]) =>
    CP.el('button', { class: k === kind ? 'on' : '', 'data-kind': k, onclick: () => CP.go('types', { kind: k, at: params.at }) }, label)));
  if (kind === 'final') {
    const at = CP.el('input', { type: 'number', step: 'any', value: params.at || '', placeholder: 'end', size: 8, 'data-input': 'at' });
    at.addEventListener('change', () => CP.go('types', { kind, at: at.value }));
    bar.append(CP.el('label', {}, 'live at (ms) ', at));
  }
  bar.append(CP.link('Histogram by age', 'lifetime', { tab: 'ages' }));
  root.append(CP.el('h2', {}, 'Histogram by type'), bar);
  const relocated = kind === 'relocated';
  const q = Object.assign({ kind, at: kind === 'final' ? params.at : undefined }, relocated ? {} : CP.windowParams());
  const [r, typeColour] = await Promise.all([CP.api(CP.logPath('types'), q), CP.typeColours()]);
  const total = r.types.reduce((a, t) => a + t.bytes, 0);
  const count = r.types.reduce((a, t) => a + t.count, 0);
  root.append(CP.el('p', { class: 'note', 'data-total': total },
    `${CP.num(total)} bytes in ${CP.num(count)} objects of ${CP.num(r.types.length)} types` + (relocated && params.from ? ' (relocations are not filtered by window)' : '')));
  const max = r.types.length ? Math.max(...r.types.map((t) => t.bytes)) : 1;
  // A sampled trace's rows carry their samples and 95% ranges.
  const ranged = r.types.some((t) => t.samples !== undefined);
  const est = ranged ? ' est.' : '';
  const cols = CP.el('div', { class: 'cols' });
  cols.append(CP.el('div', {}, CP.el('h3', {}, 'By type'), CP.table('types', [
    { key: 'type', label: 'Type', show: (t) => CP.el('span', {}, CP.swatch(typeColour(t.type), t.type), t.type) },
    { key: 'bytes', label: 'Bytes' + est, num: true },
    { key: 'pct', label: '%', num: true, value: (t) => (total ? t.bytes * 100 / total : 0), show: (t) => CP.el('span', {}, CP.pct(t.bytes, total), CP.el('span', { class: 'bar', style: `width:${Math.round(80 * t.bytes / max)}px` })) },
    { key: 'count', label: 'Objects' + est, num: true },
    ...(ranged ? [CP.rangeColumn()] : []),
  ], r.types.slice(0, 500), (t) => t.type)));
  const bmax = r.buckets.length ? Math.max(...r.buckets.map((b) => b.bytes)) : 1;
  cols.append(CP.el('div', {}, CP.el('h3', {}, 'By size class (Histogram by Size)'), CP.table('buckets', [
    { key: 'min_size', label: 'Size from', num: true },
    { key: 'max_size', label: 'to', num: true },
    { key: 'bytes', label: 'Bytes', num: true, show: (b) => CP.el('span', {}, CP.num(b.bytes), CP.el('span', { class: 'bar', style: `width:${Math.round(120 * b.bytes / bmax)}px` })) },
    { key: 'count', label: 'Objects', num: true },
    { key: 'top', label: 'Largest types', value: (b) => b.types.slice(0, 3).map((t) => t.type).join(', ') },
  ], r.buckets, (b) => String(b.min_size))));
  root.append(cols);
};

// Type, bytes and objects columns of `types` rows; a sampled trace's rows
// (they carry `samples`) get " est." and their 95% range.
CP.typeColumns = function (types) {
  const ranged = types.some((t) => t.samples !== undefined);
  const est = ranged ? ' est.' : '';
  return [{ key: 'type', label: 'Type' }, { key: 'bytes', label: 'Bytes' + est, num: true }, { key: 'count', label: 'Objects' + est, num: true },
    ...(ranged ? [CP.rangeColumn()] : [])];
};

function hashName(s) {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return h || 1;
}
CP.hashName = hashName;

// ---- Allocation by code: functions, modules, classes; who allocated a type.
// A sampled trace's rows carry `inclusive_range` and `exclusive_range`
// (samples and 95% ranges): the figures are marked " est." and each group
// gets its range column.
CP.FIGURES = function (total, rows) {
  const ranged = (rows || []).some((r) => r.inclusive_range !== undefined);
  const est = ranged ? ' est.' : '';
  return [
    { key: 'name', label: 'Name' },
    { key: 'inclusive_bytes', label: 'Incl. bytes' + est, num: true, value: (r) => r.inclusive_bytes },
    { key: 'inclusive_pct', label: 'Incl. %', num: true, value: (r) => (total ? +(r.inclusive_bytes * 100 / total).toFixed(1) : 0), show: (r) => CP.pct(r.inclusive_bytes, total) },
    { key: 'inclusive_count', label: 'Incl. objects' + est, num: true, value: (r) => r.inclusive_count },
    ...(ranged ? [CP.rangeColumn((r) => r.inclusive_bytes, (r) => r.inclusive_range, 'inclusive_range', 'Incl. 95% range')] : []),
    { key: 'exclusive_bytes', label: 'Excl. bytes' + est, num: true, value: (r) => r.exclusive_bytes },
    { key: 'exclusive_pct', label: 'Excl. %', num: true, value: (r) => (total ? +(r.exclusive_bytes * 100 / total).toFixed(1) : 0), show: (r) => CP.pct(r.exclusive_bytes, total) },
    { key: 'exclusive_count', label: 'Excl. objects' + est, num: true, value: (r) => r.exclusive_count },
    ...(ranged ? [CP.rangeColumn((r) => r.exclusive_bytes, (r) => r.exclusive_range, 'exclusive_range', 'Excl. 95% range')] : []),
  ];
};

CP.views.code = async function (root, params) {
  const by = params.by || 'functions';
  const sort = params.sort || 'inclusive';
  const top = params.top || '200';
  const bar = CP.el('div', { class: 'controls' },
    ...['functions', 'modules', 'classes', 'who'].map((k) => CP.el('button', { class: k === by ? 'on' : '', 'data-by': k, onclick: () => CP.go('code', { by: k, sort, type: params.type }) }, k === 'who' ? 'who allocated a type' : k)),
    CP.el('label', {}, 'sort '),
    ...['inclusive', 'exclusive'].map((k) => CP.el('button', { class: k === sort ? 'on' : '', 'data-sort': k, onclick: () => CP.go('code', { by, sort: k, type: params.type }) }, k)));
  root.append(CP.el('h2', {}, 'Allocation by code'), bar);
  if (by === 'who') {
    const input = CP.el('input', { value: params.type || '', placeholder: 'type name or part of it', size: 40, 'data-input': 'type' });
    const exact = CP.el('input', { type: 'checkbox', checked: params.exact === 'true' });
    const goWho = () => CP.go('code', { by, sort, type: input.value, exact: exact.checked ? 'true' : undefined });
    input.addEventListener('change', goWho);
    root.append(CP.el('div', { class: 'controls' }, CP.el('label', {}, 'type '), input, CP.el('label', {}, exact, ' exact'), CP.el('button', { onclick: goWho }, 'show')));
    if (!params.type) return;
    const w = await CP.api(CP.logPath('who'), Object.assign({ type: params.type, exact: params.exact, sort, top }, CP.windowParams()));
    CP.whoTables(root, w);
    return;
  }
  const all = await CP.api(CP.logPath(by), Object.assign({ sort, top: 0 }, CP.windowParams()));
  const rows = all.slice(0, +top);
  const total = all.reduce((a, r) => a + r.exclusive_bytes, 0);
  root.append(CP.el('p', { class: 'note', 'data-total': total }, `${CP.num(total)} bytes allocated; ${CP.num(all.length)} ${by}, the first ${rows.length} by ${sort} bytes shown. Click a column to sort.`));
  root.append(CP.table(by, CP.FIGURES(total, rows), rows, (r) => r.name));
};

CP.whoTables = function (root, w) {
  root.append(CP.el('p', { class: 'note', 'data-total': w.bytes }, `${CP.num(w.bytes)} bytes in ${CP.num(w.count)} objects`));
  const cols = CP.el('div', { class: 'cols' });
  // A sampled trace: samples and 95% ranges on every row.
  const ranged = w.samples !== undefined;
  const est = ranged ? ' est.' : '';
  cols.append(CP.el('div', {}, CP.el('h3', {}, 'Types'), CP.table('who-types', [
    { key: 'name', label: 'Type' }, { key: 'bytes', label: 'Bytes' + est, num: true }, { key: 'count', label: 'Objects' + est, num: true },
    ...(ranged ? [CP.rangeColumn()] : []),
  ], w.types, (t) => t.name)));
  cols.append(CP.el('div', {}, CP.el('h3', {}, 'Functions'), CP.table('who-functions', CP.FIGURES(w.bytes, w.functions), w.functions, (r) => r.name)));
  root.append(cols, CP.el('h3', {}, 'Stacks (outermost first)'), CP.table('who-stacks', [
    { key: 'bytes', label: 'Bytes' + est, num: true }, { key: 'count', label: 'Objects' + est, num: true },
    ...(ranged ? [CP.rangeColumn()] : []),
    { key: 'stack', label: 'Stack', value: (s) => s.frames.join(' → ') + ' → ' + s.type_name },
  ], w.stacks));
};

// ---- The Allocation Graph: roots -> functions -> types, boxes and edges
// sized by bytes, in columns by distance from the root.
CP.views.graph = async function (root, params) {
  const minPct = params.min_percent || '1';
  const input = CP.el('input', { type: 'number', step: 'any', min: 0, max: 100, value: minPct, size: 5, 'data-input': 'min_percent' });
  input.addEventListener('change', () => CP.go('graph', { min_percent: input.value }));
  root.append(CP.el('h2', {}, 'Allocation Graph'), CP.el('div', { class: 'controls' }, CP.el('label', {}, 'hide nodes under (% of bytes) '), input));
  const g = await CP.api(CP.logPath('graph'), Object.assign({ min_percent: minPct }, CP.windowParams()));
  root.append(CP.el('p', { class: 'note', 'data-total': g.total_bytes }, `${CP.num(g.total_bytes)} bytes in ${CP.num(g.total_count)} objects; ${g.nodes.length} nodes, ${g.edges.length} edges`));
  root.append(CP.graphSvg(g));
  // A sampled trace: samples and 95% ranges on every node.
  const est = g.samples !== undefined ? ' est.' : '';
  root.append(CP.el('h3', {}, 'Nodes'), CP.table('graph-nodes', [
    { key: 'name', label: 'Node' }, { key: 'kind', label: 'Kind' },
    { key: 'bytes', label: 'Bytes' + est, num: true }, { key: 'count', label: 'Objects' + est, num: true },
    { key: 'exclusive_bytes', label: 'Allocated here' + est, num: true },
    ...(est ? [CP.rangeColumn()] : []),
  ], g.nodes, (n) => n.name));
};

CP.graphSvg = function (g) {
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const out = new Map();
  for (const e of g.edges) { if (!out.has(e.from)) out.set(e.from, []); out.get(e.from).push(e); }
  const depth = new Map();
  const rootsFirst = g.nodes.filter((n) => n.kind === 'root');
  const queue = rootsFirst.map((n) => n.id);
  for (const id of queue) depth.set(id, 0);
  while (queue.length) {
    const v = queue.shift();
    for (const e of out.get(v) || []) if (!depth.has(e.to)) { depth.set(e.to, depth.get(v) + 1); queue.push(e.to); }
  }
  let maxDepth = 0;
  for (const n of g.nodes) { if (!depth.has(n.id)) depth.set(n.id, 1); maxDepth = Math.max(maxDepth, depth.get(n.id)); }
  // Types go to the last column, as CLRProfiler draws them.
  for (const n of g.nodes) if (n.kind === 'type') depth.set(n.id, maxDepth);
  const columns = [];
  for (const n of g.nodes) { const d = depth.get(n.id); (columns[d] = columns[d] || []).push(n); }
  const colW = 230, boxW = 170, gap = 6, total = Math.max(1, g.total_bytes);
  const scale = 520;
  const pos = new Map();
  let height = 0;
  columns.forEach((col, d) => {
    col.sort((a, b) => b.bytes - a.bytes);
    let y = 10;
    for (const n of col) {
      const h = Math.max(16, scale * n.bytes / total);
      pos.set(n.id, { x: 10 + d * colW, y, h, inY: y, outY: y });
      y += h + gap;
    }
    height = Math.max(height, y);
  });
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('class', 'graph');
  svg.setAttribute('width', 20 + columns.length * colW);
  svg.setAttribute('height', height + 10);
  const mk = (tag, attrs) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; };
  for (const e of g.edges.slice().sort((a, b) => b.bytes - a.bytes)) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const w = Math.max(1, scale * e.bytes / total);
    const y1 = a.outY + w / 2, y2 = b.inY + w / 2;
    a.outY += w; b.inY += w;
    const x1 = a.x + boxW, x2 = b.x;
    const mid = (x1 + x2) / 2;
    const path = mk('path', { class: 'edge', d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, 'stroke-width': w });
    const t = mk('title', {}); t.textContent = `${byId.get(e.from).name} → ${byId.get(e.to).name}: ${CP.num(e.bytes)} bytes`;
    path.append(t);
    svg.append(path);
  }
  for (const n of g.nodes) {
    const p = pos.get(n.id);
    const r = mk('rect', { class: n.kind, x: p.x, y: p.y, width: boxW, height: p.h, rx: 3 });
    const t = mk('title', {}); t.textContent = `${n.name}\n${CP.num(n.bytes)} bytes (${CP.pct(n.bytes, total)})`;
    r.append(t);
    svg.append(r);
    const label = mk('text', { x: p.x + 4, y: p.y + 12 });
    // Class::Method without the namespace, as CLRProfiler labels boxes.
    const k = n.name.indexOf('::');
    const bare = k > 0 ? n.name.slice(n.name.lastIndexOf('.', k) + 1) : n.name;
    const short = bare.length > 26 ? bare.slice(0, 25) + '…' : bare;
    label.textContent = `${short} ${CP.pct(n.bytes, total)}`;
    svg.append(label);
  }
  return CP.el('div', { style: 'overflow:auto; max-height: 620px; border: 1px solid var(--line)' }, svg);
};

// ---- Lifetime per type and generation; ages; survivors of a window.
CP.views.lifetime = async function (root, params) {
  const tab = params.tab || 'lifetime';
  root.append(CP.el('h2', {}, 'Lifetime'), CP.el('div', { class: 'controls' },
    ...[['lifetime', 'By generation'], ['ages', 'Ages'], ['survivors', 'Survivors of the window']].map(([k, label]) =>
      CP.el('button', { class: k === tab ? 'on' : '', 'data-tab': k, onclick: () => CP.go('lifetime', { tab: k }) }, label))));
  const w = CP.windowParams();
  if (tab === 'lifetime') {
    const l = await CP.api(CP.logPath('lifetime'), Object.assign({ top: 200 }, w));
    const objects = params.unit === 'objects';
    root.append(CP.el('div', { class: 'controls' }, CP.el('button', { class: objects ? '' : 'on', onclick: () => CP.go('lifetime', { tab, unit: 'bytes' }) }, 'bytes'),
      CP.el('button', { class: objects ? 'on' : '', onclick: () => CP.go('lifetime', { tab, unit: 'objects' }) }, 'objects')));
    root.append(CP.el('p', { class: 'note' }, `${w.from !== undefined ? 'Objects allocated in the window' : 'Every object'}, by the generation whose collection reclaimed them.`));
    const f = objects ? 'objects' : 'bytes';
    const cols = ['allocated', 'gen0', 'gen1', 'gen2', 'loh', 'alive_at_end'];
    // A trace's sampled objects of unknown fate: a column of their own
    // (neither reclaimed nor alive).
    if (l.total.unknown && l.total.unknown.objects > 0) cols.push('unknown');
    // A sampled trace: every column's samples and 95% range (the
    // allocated one's shown).
    const ranged = l.total.ranges !== undefined;
    const est = ranged ? ' est.' : '';
    const labels = { allocated: 'Allocated', gen0: 'Gen 0', gen1: 'Gen 1', gen2: 'Gen 2', loh: 'LOH', alive_at_end: 'Alive at end', unknown: 'Unknown' };
    root.append(CP.table('lifetime', [{ key: 'name', label: 'Type' }, ...cols.map((c) => ({ key: c, label: labels[c] + est, num: true, value: (r) => r[c][f] })),
      ...(ranged ? [CP.rangeColumn((r) => r.allocated.bytes, (r) => r.ranges && r.ranges.allocated, 'range', 'Allocated 95% range')] : [])],
      [...l.rows, l.total], (r) => r.name));
  } else if (tab === 'ages') {
    const at = CP.el('input', { type: 'number', step: 'any', value: params.at || '', placeholder: 'time (ms)', size: 9, 'data-input': 'at' });
    at.addEventListener('change', () => CP.go('lifetime', { tab, at: at.value }));
    root.append(CP.el('div', { class: 'controls' }, CP.el('label', {}, 'live objects at (ms) '), at, CP.el('span', { class: 'note' }, 'empty: ages of every object')));
    if (params.at) {
      const h = await CP.api(CP.logPath('ages'), Object.assign({ at: params.at, bars: 10 }, w));
      root.append(CP.el('p', { class: 'note' }, `Live at ${CP.ms(h.time_ms)}: ${CP.num(h.live.objects)} objects, ${CP.num(h.live.bytes)} bytes`));
      const max = Math.max(1, ...h.bars.map((b) => b.bytes));
      root.append(CP.table('age-bars', [
        { key: 'min_age_s', label: 'Age from (s)', num: true, show: (b) => b.min_age_s.toFixed(3) },
        { key: 'max_age_s', label: 'to (s)', num: true, show: (b) => b.max_age_s.toFixed(3) },
        { key: 'objects', label: 'Objects', num: true },
        { key: 'bytes', label: 'Bytes', num: true, show: (b) => CP.el('span', {}, CP.num(b.bytes), CP.el('span', { class: 'bar', style: `width:${Math.round(160 * b.bytes / max)}px` })) },
        { key: 'top', label: 'Largest types', value: (b) => b.types.slice(0, 3).map((t) => t.type).join(', ') },
      ], h.bars, (b) => String(b.min_age_s)));
    } else {
      const a = await CP.api(CP.logPath('ages'), w);
      root.append(CP.el('p', { class: 'note' }, `Reclaimed by GCs: ${CP.num(a.died.objects)} objects, ${CP.num(a.died.bytes)} bytes; alive at the end: ${CP.num(a.alive_at_end.objects)} objects, ${CP.num(a.alive_at_end.bytes)} bytes`));
      // A trace's sampled objects of unknown fate are in no histogram.
      if (a.unknown && a.unknown.objects > 0) {
        root.append(CP.el('p', { class: 'unknown', 'data-unknown': a.unknown.objects },
          `Unknown (the GCs' reports do not say what became of them; in no histogram): ${CP.num(a.unknown.objects)} objects, ${CP.num(a.unknown.bytes)} bytes`));
      }
      // A sampled trace: each bin's figures with their samples and range.
      const ranged = a.ranges !== undefined;
      const est = ranged ? ' est.' : '';
      const range = (k, label) => (ranged ? [CP.rangeColumn((r) => r[k].bytes, (r) => r.ranges && r.ranges[k], k + '_range', label)] : []);
      root.append(CP.el('h3', {}, 'By GCs survived'), CP.table('ages-gcs', [
        { key: 'gcs_survived', label: 'GCs survived', num: true },
        { key: 'died_objects', label: 'Died objects' + est, num: true, value: (r) => r.died.objects },
        { key: 'died_bytes', label: 'Died bytes' + est, num: true, value: (r) => r.died.bytes },
        ...range('died', 'Died 95% range'),
        { key: 'alive_objects', label: 'Alive objects' + est, num: true, value: (r) => r.alive_at_end.objects },
        { key: 'alive_bytes', label: 'Alive bytes' + est, num: true, value: (r) => r.alive_at_end.bytes },
        ...range('alive_at_end', 'Alive 95% range'),
      ], a.by_gcs, (r) => String(r.gcs_survived)));
      root.append(CP.el('h3', {}, 'By age (ms)'), CP.table('ages-ms', [
        { key: 'age_ms_min', label: 'Age from (ms)', num: true },
        { key: 'age_ms_max_exclusive', label: 'below (ms)', num: true },
        { key: 'died_bytes', label: 'Died bytes' + est, num: true, value: (r) => r.died.bytes },
        ...range('died', 'Died 95% range'),
        { key: 'alive_bytes', label: 'Alive bytes' + est, num: true, value: (r) => r.alive_at_end.bytes },
        ...range('alive_at_end', 'Alive 95% range'),
      ], a.by_ms, (r) => String(r.age_ms_min)));
    }
  } else {
    const alive = CP.el('input', { type: 'number', step: 'any', value: params.alive_at || '', placeholder: 'end', size: 9 });
    alive.addEventListener('change', () => CP.go('lifetime', { tab, alive_at: alive.value }));
    root.append(CP.el('div', { class: 'controls' }, CP.el('label', {}, 'still alive at (ms) '), alive,
      w.from === undefined ? CP.el('span', { class: 'note' }, 'Select a window on the Time Line (drag) to narrow this.') : null));
    const s = await CP.api(CP.logPath('survivors'), Object.assign({ alive_at: params.alive_at, top: 50 }, w));
    CP.survivorTables(root, s);
  }
};

CP.survivorTables = function (root, s) {
  root.append(CP.el('p', { class: 'note', 'data-total': s.surviving.bytes }, `Allocated in the window: ${CP.num(s.allocated.objects)} objects, ${CP.num(s.allocated.bytes)} bytes; alive at ${CP.ms(s.alive_at_ms)}: ${CP.num(s.surviving.objects)} objects, ${CP.num(s.surviving.bytes)} bytes`));
  // A sampled trace's rows carry the surviving samples and 95% ranges.
  const ranged = s.by_type.some((t) => t.samples !== undefined);
  const est = ranged ? ' est.' : '';
  root.append(CP.table('survivors', [
    { key: 'name', label: 'Type' },
    { key: 'surviving_bytes', label: 'Surviving bytes' + est, num: true, value: (t) => t.surviving.bytes },
    { key: 'surviving_objects', label: 'Surviving objects' + est, num: true, value: (t) => t.surviving.objects },
    { key: 'allocated_objects', label: 'Allocated objects' + est, num: true, value: (t) => t.allocated.objects },
    // A trace's sampled objects of unknown fate: neither dead nor alive.
    ...(s.unknown && s.unknown.objects > 0 ? [{ key: 'unknown_objects', label: 'Unknown objects' + est, num: true, value: (t) => (t.unknown ? t.unknown.objects : 0) }] : []),
    ...(ranged ? [CP.rangeColumn((t) => t.surviving.bytes)] : []),
  ], s.by_type, (t) => t.name));
};

// ---- Two logs compared (B minus A).
CP.views.compare = async function (root, params) {
  const logs = CP.state.logs;
  const a = params.a || '0', b = params.b || String(Math.min(1, logs.length - 1));
  const pick = (name, v) => {
    const s = CP.el('select', { 'data-input': name }, ...logs.map((l) => CP.el('option', { value: l.id }, l.name)));
    s.value = v;
    s.addEventListener('change', () => CP.go('compare', Object.assign({ a, b }, { [name]: s.value })));
    return s;
  };
  root.append(CP.el('h2', {}, 'Two logs compared'), CP.el('div', { class: 'controls' }, CP.el('label', {}, 'A '), pick('a', a), CP.el('label', {}, 'B '), pick('b', b),
    CP.el('span', { class: 'note' }, 'figures are B minus A')));
  if (logs.length < 2) root.append(CP.el('p', { class: 'note' }, 'Give two logs to `clrprof ui` to compare them; with one, A and B are the same log.'));
  const d = await CP.api(`/api/compare/${a}/${b}`, { top: 50 });
  // A log without allocations (a heap snapshot, a trace of GCs only): its
  // allocations are unknown, not 0, and are not compared.
  const unknown = d.allocations_unknown || {};
  for (const [side, why] of Object.entries(unknown)) {
    root.append(CP.el('p', { class: 'unknown', 'data-unknown': side }, CP.el('strong', {}, `Allocations unknown in ${side.toUpperCase()}. `), `${why}.`));
  }
  // The last heap dumps of both, per type.
  if (d.dump_by_type) {
    const c = d.dump_by_type;
    root.append(CP.el('h3', {}, 'Last heap dump by type'),
      CP.el('p', { class: 'note', 'data-dump-objects': `${c.a.objects} ${c.b.objects}` },
        `A: ${CP.num(c.a.objects)} objects, ${CP.num(c.a.bytes)} bytes; B: ${CP.num(c.b.objects)} objects, ${CP.num(c.b.bytes)} bytes (objects cannot be matched across files)`),
      c.types.length === 0 ? CP.el('p', { class: 'note' }, 'no difference: the same objects and bytes per type') : CP.table('compare-dump-by-type', [
        { key: 'name', label: 'Type' },
        { key: 'diff_bytes', label: 'Bytes B−A', num: true, value: (r) => r.bytes_b - r.bytes_a, show: (r) => CP.signed(r.bytes_b - r.bytes_a) },
        { key: 'bytes_a', label: 'Bytes A', num: true }, { key: 'bytes_b', label: 'Bytes B', num: true },
        { key: 'diff_objects', label: 'Objects B−A', num: true, value: (r) => r.objects_b - r.objects_a, show: (r) => CP.signed(r.objects_b - r.objects_a) },
      ], c.types, (r) => r.name));
  }
  for (const [key, title] of [['allocated_by_type', 'Allocated by type'], ['final_heap_by_type', 'Final heap by type'], ['functions_exclusive', 'Allocated by function, exclusive'], ['functions_inclusive', 'Allocated by function, inclusive']]) {
    if (Object.keys(unknown).length > 0) {
      root.append(CP.el('h3', {}, title), CP.el('p', { class: 'note' }, 'not compared: allocations unknown (above)'));
      continue;
    }
    root.append(CP.el('h3', {}, title), d[key].length === 0 ? CP.el('p', { class: 'note' }, 'no difference') : CP.table('compare-' + key, [
      { key: 'name', label: 'Name' },
      { key: 'diff_bytes', label: 'Bytes B−A', num: true, show: (r) => CP.signed(r.diff_bytes) },
      { key: 'a_bytes', label: 'Bytes A', num: true }, { key: 'b_bytes', label: 'Bytes B', num: true },
      { key: 'diff_count', label: 'Objects B−A', num: true, show: (r) => CP.signed(r.diff_count) },
    ], d[key], (r) => r.name));
  }
};

// ---- GC handles by the stack that created them (`clrprof handles`):
// CLRProfiler's Summary buttons for handles created, destroyed and
// surviving open this view sorted by that figure.
CP.views.handles = async function (root, params) {
  const show = ['created', 'destroyed', 'surviving'].includes(params.show) ? params.show : 'created';
  const depth = Number(params.depth || 6);
  const r = await CP.api(CP.logPath('handles'), Object.assign({ top: 0 }, CP.windowParams()));
  root.append(CP.el('h2', {}, 'GC handles by creating stack'),
    CP.el('div', { class: 'controls' }, CP.el('label', {}, 'show stacks that '),
      ...[['created', 'created handles'], ['destroyed', 'destroyed handles'], ['surviving', 'have handles surviving']].map(([k, label]) =>
        CP.el('button', { class: k === show ? 'on' : '', 'data-show': k, onclick: () => CP.go('handles', { show: k }) }, label))),
    CP.el('p', { class: 'note', 'data-created': r.created, 'data-destroyed': r.destroyed, 'data-surviving': r.surviving },
      `${CP.num(r.created)} handles created, ${CP.num(r.destroyed)} destroyed, ${CP.num(r.surviving)} surviving` +
      (CP.windowParams().from !== undefined ? ' in the window' : '') + `; ${CP.num(r.groups.length)} groups. Stacks leaf (innermost) first.`));
  const rows = r.groups.map((g, i) => Object.assign({ order: i }, g))
    .filter((g) => g[show] > 0)
    .sort((a, b) => b[show] - a[show] || a.order - b.order);
  const stackText = (g) => {
    if (g.stack_id === null) return '(j records naming no live handle)';
    if (!g.stack_defined) return `(stack ${g.stack_id} not defined)`;
    if (!g.frames.length) return `(stack ${g.stack_id}: no frames)`;
    const shown = g.frames.slice(0, depth).join(' ← ');
    return g.frames.length > depth ? `${shown} ← … (${g.frames.length - depth} more)` : shown;
  };
  const types = (g) => {
    if (!g.object_types.length) return g.null_objects === g.created && g.created > 0 ? '(null)' : '-';
    return g.object_types.slice(0, 3).map((t) => `${t.type} ×${CP.num(t.count)}`).join(', ') + (g.object_types.length > 3 ? ` +${g.object_types.length - 3}` : '');
  };
  const max = Math.max(1, ...rows.map((g) => g[show]));
  if (!rows.length) { root.append(CP.el('p', { class: 'note' }, `No stack ${show === 'surviving' ? 'has handles surviving' : show + ' handles'}.`)); return; }
  root.append(CP.table('handles', [
    { key: 'created', label: 'Created', num: true, show: (g) => show === 'created' ? CP.el('span', {}, CP.num(g.created), CP.el('span', { class: 'bar', style: `width:${Math.round(80 * g.created / max)}px` })) : CP.num(g.created) },
    { key: 'destroyed', label: 'Destroyed', num: true, show: (g) => show === 'destroyed' ? CP.el('span', {}, CP.num(g.destroyed), CP.el('span', { class: 'bar', style: `width:${Math.round(80 * g.destroyed / max)}px` })) : CP.num(g.destroyed) },
    { key: 'surviving', label: 'Surviving', num: true, show: (g) => show === 'surviving' ? CP.el('span', {}, CP.num(g.surviving), CP.el('span', { class: 'bar', style: `width:${Math.round(80 * g.surviving / max)}px` })) : CP.num(g.surviving) },
    { key: 'object_types', label: 'Object types', value: types },
    { key: 'stack', label: 'Creating stack (leaf first)', value: stackText, show: (g) => CP.el('span', { title: g.frames.join('\n') }, stackText(g)) },
  ], rows.slice(0, 500), (g) => (g.stack_id === null ? 'none' : String(g.stack_id))));
};
