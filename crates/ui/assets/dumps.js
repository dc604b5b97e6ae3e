// clrprof ui: heap dumps: the list, one dump's types, the dominator tree
// explorer (expand nodes, retained sizes), paths from roots to a type, and
// the difference of two dumps.
'use strict';

CP.views.dumps = async function (root, params) {
  root.append(CP.el('h2', {}, 'Heap dumps'));
  const list = await CP.api(CP.logPath('dumps'), { top: 0 });
  if (!list.length) { root.append(CP.el('p', { class: 'note' }, 'This log has no heap dumps.')); return; }
  const n = params.dump !== undefined ? +params.dump : list[list.length - 1].index;
  // What holds memory first: the dominator tree of the last dump.
  const tab = params.tab || 'tree';
  root.append(CP.table('dumps', [
    { key: 'index', label: 'Dump', num: true, show: (d) => CP.link(String(d.index), 'dumps', { dump: d.index, tab }) },
    { key: 'time_ms', label: 'Time (ms)', num: true },
    { key: 'objects', label: 'Objects', num: true }, { key: 'bytes', label: 'Bytes', num: true },
    { key: 'roots', label: 'Roots', num: true },
  ], list, (d) => String(d.index)));
  root.append(CP.el('div', { class: 'controls' }, CP.el('b', {}, `Dump ${n}:`),
    ...[['types', 'Types'], ['tree', 'Dominator tree'], ['paths', 'Paths to roots'], ['diff', 'Difference']].map(([k, label]) =>
      CP.el('button', { class: k === tab ? 'on' : '', 'data-tab': k, onclick: () => CP.go('dumps', { dump: n, tab: k }) }, label))));
  if (tab === 'types') {
    const t = await CP.api(CP.logPath(`dump/${n}/types`));
    root.append(CP.el('p', { class: 'note' }, `${CP.num(t.dump.objects)} objects, ${CP.num(t.dump.bytes)} bytes, ${CP.num(t.dump.references)} references, ${CP.num(t.dump.roots)} roots`));
    root.append(CP.table('dump-types', [
      { key: 'name', label: 'Type' }, { key: 'objects', label: 'Objects', num: true }, { key: 'bytes', label: 'Bytes', num: true },
      { key: 'pct', label: '% bytes', num: true, value: (r) => +(r.bytes * 100 / Math.max(1, t.dump.bytes)).toFixed(1), show: (r) => CP.pct(r.bytes, t.dump.bytes) },
      { key: 'paths', label: '', show: (r) => CP.link('paths', 'dumps', { dump: n, tab: 'paths', type: r.name }) },
    ], t.types.slice(0, 500), (r) => r.name));
  } else if (tab === 'tree') {
    root.append(CP.el('p', { class: 'note' }, 'Each object retains what it dominates: the bytes freed if it went away. Click ▸ to expand.'));
    const first = await CP.api(CP.logPath(`dump/${n}/tree`));
    const tree = CP.el('div', { class: 'tree', 'data-tree': n });
    tree.append(CP.el('div', { class: 'node head' }, CP.el('span', { class: 'num' }, 'retained bytes'),
      CP.el('span', { class: 'num' }, 'own bytes'), CP.el('span', { class: 'name' }, 'object (type, address)')));
    tree.append(treeNode(n, first.parent, first, true, 0));
    root.append(tree);
    // Opened from the Summary's top retainers: that object expanded.
    if (params.node !== undefined) {
      const row = tree.querySelector(`.node[data-node="${CSS.escape(params.node)}"]`);
      if (row) {
        row.scrollIntoView({ block: 'center' });
        row.classList.add('picked');
        await row.expand();
      }
    }
  } else if (tab === 'paths') {
    const input = CP.el('input', { value: params.type || '', placeholder: 'type name', size: 40, 'data-input': 'type' });
    input.addEventListener('change', () => CP.go('dumps', { dump: n, tab, type: input.value }));
    root.append(CP.el('div', { class: 'controls' }, CP.el('label', {}, 'paths from roots to '), input));
    if (!params.type) return;
    const r = await CP.api(CP.logPath(`dump/${n}/paths`), { type: params.type, max: 10 });
    root.append(CP.el('p', { class: 'note', 'data-reachable': r.reachable }, `${CP.num(r.reachable)} reachable objects of ${r.types.map((t) => t[1]).join(', ') || 'no such type'}; ${CP.num(r.unreachable)} unreachable`));
    r.paths.forEach((p, i) => {
      const root_ = p.root.function ? `${p.root.name} (${p.root.function})` : `${p.root.name} (id ${CP.hex(p.root.id)})`;
      root.append(CP.el('div', { class: 'tree', 'data-path': i }, CP.el('div', {}, CP.el('b', {}, `${i + 1}. `), root_),
        ...p.steps.map((s) => CP.el('div', { style: 'margin-left: 24px' }, `→ ${s.name} `, CP.el('span', { class: 'addr' }, CP.hex(s.address)), ` (${CP.num(s.size)} bytes)`))));
    });
  } else {
    const pick = (name, v) => {
      const s = CP.el('select', { 'data-input': name }, ...list.map((d) => CP.el('option', { value: d.index }, `dump ${d.index}`)));
      s.value = v;
      s.addEventListener('change', () => CP.go('dumps', Object.assign({ dump: n, tab, a, b }, { [name]: s.value })));
      return s;
    };
    const a = params.a !== undefined ? params.a : String(list[0].index);
    const b = params.b !== undefined ? params.b : String(n);
    root.append(CP.el('div', { class: 'controls' }, CP.el('label', {}, 'from '), pick('a', a), CP.el('label', {}, 'to '), pick('b', b)));
    const d = await CP.api(CP.logPath(`dump-diff/${a}/${b}`));
    root.append(CP.el('p', { class: 'note', 'data-new-objects': d.new_objects, 'data-new-bytes': d.new_bytes, 'data-gone-objects': d.gone_objects, 'data-kept-objects': d.kept_objects }, `${CP.num(d.new_objects)} new objects (${CP.num(d.new_bytes)} bytes), ${CP.num(d.gone_objects)} gone (${CP.num(d.gone_bytes)} bytes), ${CP.num(d.kept_objects)} kept`));
    const changed = d.types.filter((t) => t.bytes_a !== t.bytes_b || t.objects_a !== t.objects_b)
      .sort((x, y) => Math.abs(y.bytes_b - y.bytes_a) - Math.abs(x.bytes_b - x.bytes_a));
    root.append(CP.table('dump-diff', [
      { key: 'name', label: 'Type' },
      { key: 'objects_a', label: 'Objects A', num: true }, { key: 'objects_b', label: 'Objects B', num: true },
      { key: 'bytes_a', label: 'Bytes A', num: true }, { key: 'bytes_b', label: 'Bytes B', num: true },
      { key: 'delta', label: 'Bytes B−A', num: true, value: (t) => t.bytes_b - t.bytes_a, show: (t) => CP.signed(t.bytes_b - t.bytes_a) },
      { key: 'new_objects', label: 'New objects', num: true },
    ], changed.slice(0, 300), (t) => t.name));
  }
};

// One node of the dominator tree; children fetched on expansion. The
// figures stay in their columns; the name is indented by depth.
function treeNode(dump, node, expansion, open, depth) {
  const row = CP.el('div', { class: 'node', 'data-node': node.node, 'data-address': node.address === null ? 'root' : node.address, 'data-retained': node.retained });
  const toggle = CP.el('span', { class: 'toggle' }, node.children ? (open ? '▾' : '▸') : '');
  const kids = CP.el('div', { class: 'kids' });
  row.append(CP.el('span', { class: 'num' }, CP.num(node.retained)), CP.el('span', { class: 'num' }, CP.num(node.size)),
    CP.el('span', { class: 'name', style: `padding-left:${depth * 18}px` }, toggle, node.name, ' ',
      CP.el('span', { class: 'addr' }, node.address === null ? `${CP.num(node.children)} objects held directly` : CP.hex(node.address))));
  const box = CP.el('div', {}, row, kids);
  let loaded = false;
  function fill(e) {
    kids.replaceChildren(...e.children.map((c) => treeNode(dump, c, null, false, depth + 1)));
    if (e.more) kids.append(CP.el('div', { class: 'note', style: `padding-left:${240 + (depth + 1) * 18}px` }, `… ${CP.num(e.more)} more retaining ${CP.num(e.more_retained)} bytes`));
    loaded = true;
  }
  if (open && expansion) fill(expansion);
  toggle.addEventListener('click', async () => {
    if (!node.children) return;
    if (loaded) { kids.hidden = !kids.hidden; toggle.textContent = kids.hidden ? '▸' : '▾'; return; }
    await row.expand();
  });
  row.expand = async function () {
    if (!node.children || loaded) return;
    toggle.textContent = '…';
    try { fill(await CP.api(CP.logPath(`dump/${dump}/tree`), { node: node.node })); toggle.textContent = '▾'; } catch (err) { kids.append(CP.error(err)); }
  };
  return box;
}

// The Summary's answer to "what holds memory": in the last heap dump, the
// types that retain the most (`clrprof dump N --retained`), then the
// objects that do (the dominator tree's first level: what each alone keeps
// alive), each opening the tree at that object.
CP.topRetainers = async function (box, summary) {
  if (!summary.heap_dumps) return;
  const list = await CP.api(CP.logPath('dumps'), { top: 0 });
  if (!list.length) return;
  const d = list[list.length - 1];
  const [byType, t] = await Promise.all([CP.api(CP.logPath(`dump/${d.index}/retained`), { top: 8 }), CP.api(CP.logPath(`dump/${d.index}/tree`), { limit: 10 })]);
  // Bars on one scale: the whole dump is 100 px.
  const share = (v) => CP.el('span', {}, CP.pct(v, d.bytes), CP.el('span', { class: 'bar', style: `width:${Math.max(1, Math.round(100 * v / Math.max(1, d.bytes)))}px` }));
  const pct = (v) => +(v * 100 / Math.max(1, d.bytes)).toFixed(1);
  box.append(CP.el('h3', { 'data-retainers-dump': d.index }, `What holds memory: heap dump ${d.index}`),
    CP.el('p', { class: 'note' }, `The last of ${CP.num(list.length)} heap dump${list.length === 1 ? '' : 's'}, at ${CP.ms(d.time_ms)}: ${CP.num(d.bytes)} bytes in ${CP.num(d.objects)} objects. ` +
      'Retained bytes: what would be freed if the objects went away.'),
    CP.el('p', { class: 'note' }, 'Types that retain the most (what all their instances keep alive)'),
    CP.table('retained-types', [
      { key: 'retained', label: 'Retained bytes', num: true },
      { key: 'pct', label: '% of dump', num: true, value: (r) => pct(r.retained), show: (r) => share(r.retained) },
      { key: 'objects', label: 'Objects', num: true },
      { key: 'name', label: 'Type', show: (r) => CP.el('span', { title: 'paths from roots to this type' }, CP.link(r.name, 'dumps', { dump: d.index, tab: 'paths', type: r.name })) },
    ], byType.types, (r) => r.name),
    CP.el('p', { class: 'note' }, 'Objects that retain the most (the dominator tree\'s first level)'),
    CP.table('top-retainers', [
      { key: 'retained', label: 'Retained bytes', num: true },
      { key: 'pct', label: '% of dump', num: true, value: (o) => pct(o.retained), show: (o) => share(o.retained) },
      { key: 'object', label: 'Object', value: (o) => o.name, show: (o) => CP.el('span', {}, CP.link(o.name, 'dumps', { dump: d.index, tab: 'tree', node: o.node }), ' ', CP.el('span', { class: 'addr' }, CP.hex(o.address))) },
    ], t.children, (o) => String(o.address)),
    t.more ? CP.el('p', { class: 'note' }, `… ${CP.num(t.more)} more retaining ${CP.num(t.more_retained)} bytes`) : null,
    CP.el('p', {}, CP.link(`Open the dominator tree of dump ${d.index}`, 'dumps', { dump: d.index, tab: 'tree' }), ' · ', CP.link('its types', 'dumps', { dump: d.index, tab: 'types' })));
};
