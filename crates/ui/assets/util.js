// clrprof ui: shared helpers (requests, numbers, elements, tables, colours).
'use strict';
const CP = {};

CP.token = document.querySelector('meta[name="clrprof-token"]').content;

// GET an /api route with the token in a header; rejects with the server's
// message on an error status.
CP.api = async function (path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const url = path + (q.toString() ? '?' + q : '');
  const r = await fetch(url, { headers: { 'x-clrprof-token': CP.token } });
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
};

CP.num = function (n) {
  if (n === null || n === undefined) return 'Unknown';
  return Math.round(n).toLocaleString('en-US');
};
CP.signed = function (n) { return (n > 0 ? '+' : '') + CP.num(n); };
CP.pct = function (part, total) { return total ? (part * 100 / total).toFixed(1) + '%' : '-'; };
CP.ms = function (v) { return (Math.round(v * 10) / 10).toLocaleString('en-US') + ' ms'; };
CP.size = function (b) {
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let u = 0, v = b;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? b + ' bytes' : v.toFixed(v < 10 ? 1 : 0) + ' ' + units[u];
};
CP.hex = function (a) { return a === null || a === undefined ? '' : '0x' + a.toString(16); };

// el('div', {class: 'x', onclick: f}, child, 'text', ...)
CP.el = function (tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
};

CP.error = function (e) { return CP.el('p', { class: 'error' }, String(e.message || e)); };

// A table of rows. columns: [{key, label, num: bool, value: row => number|string,
// show: row => Node|string}]. Each cell carries data-col and data-value (the
// raw figure), each row data-name (rowName(row)), so that tests read figures,
// not formatted text. Headers sort client-side.
// The column of an estimated row's 95% range (a sampled trace's rows carry
// `samples`, `bytes_range` and `count_range`): "±6.4%", or "-64% +457%"
// when lopsided; the bytes' range and the samples in its title.
// `bytesOf` gives the estimated bytes the range is of (a row's `bytes` by
// default).
// `uncertaintyOf` gives the object that carries `samples` and
// `bytes_range` (the row itself by default; for instance a row's
// `inclusive_range`), `key` and `label` the column's (for a view with
// several ranges).
CP.rangeColumn = function (bytesOf, uncertaintyOf, key, label) {
  const of = bytesOf || ((r) => r.bytes);
  const u = uncertaintyOf || ((r) => r);
  const parts = (r) => {
    const b = of(r), x = u(r);
    if (!x || !x.bytes_range || !b) return null;
    const down = (1 - x.bytes_range[0] / b) * 100, up = (x.bytes_range[1] / b - 1) * 100;
    const d = (v) => (v < 10 ? v.toFixed(1) : v.toFixed(0));
    return Math.abs(up - down) <= 0.1 * Math.max(up, down) ? `±${d(Math.max(up, down))}%` : `-${d(down)}% +${d(up)}%`;
  };
  return {
    key: key || 'range', label: label || '95% range', num: true,
    value: (r) => (u(r) && u(r).samples ? 1 / Math.sqrt(u(r).samples) : 0),
    show: (r) => {
      const x = u(r) || {};
      return CP.el('span', {
        class: 'range', 'data-samples': x.samples,
        title: x.bytes_range ? `${CP.num(x.bytes_range[0])} to ${CP.num(x.bytes_range[1])} bytes, from ${CP.num(x.samples)} samples` : '',
      }, parts(r) || '');
    },
  };
};

CP.table = function (name, columns, rows, rowName) {
  const table = CP.el('table', { class: 'grid', 'data-table': name });
  const thead = CP.el('thead');
  const tbody = CP.el('tbody');
  let sortKey = null, desc = true;
  const value = (c, r) => (c.value ? c.value(r) : r[c.key]);
  const head = CP.el('tr');
  for (const c of columns) {
    const th = CP.el('th', { class: c.num ? '' : 'text', 'data-col': c.key }, c.label);
    th.addEventListener('click', () => {
      desc = sortKey === c.key ? !desc : true;
      sortKey = c.key;
      const sorted = rows.slice().sort((a, b) => {
        const x = value(c, a), y = value(c, b);
        const d = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
        return desc ? -d : d;
      });
      for (const h of head.children) h.classList.remove('sorted-asc', 'sorted-desc');
      th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
      fill(sorted);
    });
    head.append(th);
  }
  thead.append(head);
  function fill(list) {
    tbody.replaceChildren();
    for (const r of list) {
      const tr = CP.el('tr', { 'data-name': rowName ? rowName(r) : undefined });
      for (const c of columns) {
        const v = value(c, r);
        const shown = c.show ? c.show(r) : (c.num ? CP.num(v) : v);
        tr.append(CP.el('td', { class: c.num ? '' : 'text', 'data-col': c.key, 'data-value': v === null || v === undefined ? 'null' : String(v) }, shown));
      }
      tbody.append(tr);
    }
  }
  fill(rows);
  table.append(thead, tbody);
  return table;
};

// Type colours. Kelly's colours of maximum contrast (1965), in his order,
// without white, black, grey and greenish yellow (too near his yellow):
// 18 colours, every two at least 10 apart in CIEDE2000. They go, in that
// order, to the types that matter most in the log (CP.typeColours); every
// other type is grey, "other types". A type keeps its colour in every view
// and window of a log.
CP.PALETTE = ['#f3c300', '#875692', '#f38400', '#a1caf1', '#be0032', '#c2b280', '#008856', '#e68fac', '#0067a5',
  '#f99379', '#604e97', '#f6a600', '#b3446c', '#882d17', '#8db600', '#654522', '#e25822', '#2b3d26'];
CP.OTHER_TYPES = '#a9a9a9';
// A lighter grey for an "other types" frame of the flame graph beside
// another one, and the light tints of the flame graph's function frames:
// each at least 12 from the others and from the palette.
CP.OTHER_TYPES_2 = '#d9d9d9';
CP.FRAME_TINTS = ['#fcd9bd', '#fdf3b0', '#f3d0d8'];

CP.rgb = function (hex) { return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)); };
// Dark text on light colours, white on dark ones (relative luminance).
CP.textOn = function (hex) {
  const [r, g, b] = CP.rgb(hex).map((c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.2 ? '#222' : '#fff';
};

// The colour of each type of the current log: a function name -> colour.
// The palette goes to the types ranked alternately by the bytes allocated
// (the histogram, the flame graph) and by the space held over the whole
// Time Line, so that both views colour their largest types; the ranking is
// of the whole log, whatever the window or view. Fetched once per log (per
// load of a running session's log).
CP.typeColours = (function () {
  const cache = new Map();
  return function () {
    const id = CP.logId();
    const log = CP.state.logs[id];
    const key = `${id}:${log && log.session ? log.session.generation : ''}`;
    if (!cache.has(key)) {
      const p = Promise.all([
        CP.api(`/api/log/${id}/types`, { kind: 'allocated' }).then((r) => r.types.map((t) => t.type)),
        CP.api(`/api/log/${id}/timeline/grid`, { columns: 400, rows: 200 }).then((g) => g.types.map((t) => t.name), () => []),
      ]).then(([allocated, held]) => {
        const colours = new Map();
        for (let i = 0; colours.size < CP.PALETTE.length && (i < allocated.length || i < held.length); i++) {
          for (const name of [allocated[i], held[i]]) {
            if (name !== undefined && !colours.has(name) && colours.size < CP.PALETTE.length) colours.set(name, CP.PALETTE[colours.size]);
          }
        }
        const of = (name) => colours.get(name) || CP.OTHER_TYPES;
        of.coloured = colours;
        return of;
      });
      p.catch(() => cache.delete(key));
      cache.set(key, p);
    }
    return cache.get(key);
  };
})();

CP.swatch = function (colour, name) {
  return CP.el('span', { class: 'swatch', style: `background:${colour}`, 'data-swatch': name });
};

CP.tooltip = {
  show(x, y, text) {
    const t = document.getElementById('tooltip');
    t.textContent = text;
    t.hidden = false;
    t.style.left = Math.min(x + 14, window.innerWidth - t.offsetWidth - 8) + 'px';
    t.style.top = (y + 14) + 'px';
  },
  hide() { document.getElementById('tooltip').hidden = true; },
};
