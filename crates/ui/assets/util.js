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

// A colour per type id, stable across windows and views.
CP.typeColour = function (id) {
  if (!id) return null;
  let h = (id * 2654435761) >>> 0;
  const hue = h % 360;
  const sat = 55 + ((h >>> 9) % 30);
  const light = 45 + ((h >>> 17) % 20);
  return `hsl(${hue},${sat}%,${light}%)`;
};
CP.typeRgb = (function () {
  const cache = new Map();
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  return function (id) {
    if (!id) return [255, 255, 255];
    let c = cache.get(id);
    if (!c) {
      ctx.fillStyle = CP.typeColour(id);
      ctx.fillRect(0, 0, 1, 1);
      const d = ctx.getImageData(0, 0, 1, 1).data;
      c = [d[0], d[1], d[2]];
      cache.set(id, c);
    }
    return c;
  };
})();

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
