// clrprof ui: the flame graph as an icicle (root on top), allocated bytes by
// stack with the allocated type as the last frame. Click a frame to zoom
// into it; search highlights frames and sums their bytes.
'use strict';

CP.views.flame = async function (root, params) {
  const focus = params.focus ? params.focus.split(';') : [];
  const search = params.search || '';
  const input = CP.el('input', { value: search, placeholder: 'search frames', size: 30, 'data-input': 'search' });
  input.addEventListener('change', () => CP.go('flame', { focus: params.focus, search: input.value }));
  root.append(CP.el('h2', {}, 'Flame graph of allocated bytes'), CP.el('div', { class: 'controls' }, input,
    CP.el('button', { onclick: () => CP.go('flame', { focus: params.focus, search: input.value }) }, 'search'),
    search ? CP.el('button', { onclick: () => CP.go('flame', { focus: params.focus }) }, 'clear') : null));
  const [v, typeColour] = await Promise.all([CP.api(CP.logPath('flame'), Object.assign({ focus: params.focus, search }, CP.windowParams())), CP.typeColours()]);
  const crumbs = CP.el('div', { class: 'crumbs note' }, CP.el('a', { onclick: () => CP.go('flame', { search }) }, 'all'));
  focus.forEach((f, i) => crumbs.append(' › ', CP.el('a', { onclick: () => CP.go('flame', { focus: focus.slice(0, i + 1).join(';'), search }) }, f)));
  // A trace's bytes are estimates: each frame with its 95% range.
  const range = (n) => n.bytes_range ? ` (95% range ${CP.num(n.bytes_range[0])} to ${CP.num(n.bytes_range[1])}, ${CP.num(n.samples)} samples)` : '';
  const est = v.estimated ? ' est.' : '';
  root.append(crumbs, CP.el('p', { class: 'note', 'data-total': v.total, 'data-focus-bytes': v.tree.bytes, 'data-matched': v.matched === null ? undefined : v.matched, 'data-estimated': v.estimated ? 'yes' : undefined, 'data-focus-range': v.tree.bytes_range ? v.tree.bytes_range.join(',') : undefined }, `${CP.num(v.total)} bytes${est} in ${CP.num(v.stacks)} stacks; this frame: ${CP.num(v.tree.bytes)} bytes${est}${range(v.tree)} (${CP.pct(v.tree.bytes, v.total)})` +
    (v.matched !== null ? `; frames matching “${search}”: ${CP.num(v.matched)} bytes${est} (${CP.pct(v.matched, v.total)})` : '')));
  const box = CP.el('div', { id: 'flame' });
  root.append(box);
  const width = Math.max(600, box.clientWidth || 1200);
  const rowH = 18;
  let maxDepth = 0;
  const nodes = [];
  // Colours: a type (the last frame) has its colour of every view; a
  // function one of three light tints. A frame never has the colour of the
  // frame touching it on its left or of its parent: "other types" beside
  // another takes the lighter grey, a function the next tint.
  const lastAt = [];
  (function layout(n, x, w, depth, path, parent) {
    const isType = n.children.length === 0 && n.hidden === 0 && depth > 0;
    const left = lastAt[depth] && x - lastAt[depth].end < 2 ? lastAt[depth].colour : null;
    let colour;
    if (isType) {
      colour = typeColour(n.name);
      if (colour === CP.OTHER_TYPES && left === CP.OTHER_TYPES) colour = CP.OTHER_TYPES_2;
    } else {
      const first = (CP.hashName(n.name) >>> 0) % CP.FRAME_TINTS.length;
      for (let k = 0; k < CP.FRAME_TINTS.length; k++) {
        colour = CP.FRAME_TINTS[(first + k) % CP.FRAME_TINTS.length];
        if (colour !== left && colour !== parent) break;
      }
    }
    nodes.push({ n, x, w, depth, path, colour, isType });
    lastAt[depth] = { end: x + w, colour };
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    for (const c of n.children) {
      const cw = n.bytes ? w * c.bytes / n.bytes : 0;
      if (cw >= 1) layout(c, cx, cw, depth + 1, path.concat([c.name]), colour);
      cx += cw;
    }
  })(v.tree, 0, width, 0, focus, null);
  box.style.height = ((maxDepth + 1) * rowH + 4) + 'px';
  const needle = search.toLowerCase();
  for (const { n, x, w, depth, path, colour, isType } of nodes) {
    const d = CP.el('div', {
      class: 'fl' + (needle && n.name.toLowerCase().includes(needle) ? ' match' : '') + (needle && !n.name.toLowerCase().includes(needle) ? ' dim' : ''),
      style: `left:${x}px;top:${depth * rowH}px;width:${Math.max(1, w)}px;background:${colour};color:${CP.textOn(colour)}`,
      'data-frame': n.name, 'data-bytes': n.bytes, 'data-depth': depth, 'data-kind': isType ? 'type' : 'function',
      'data-range': n.bytes_range ? n.bytes_range.join(',') : undefined, 'data-samples': n.bytes_range ? n.samples : undefined,
    }, w > 24 ? n.name : '');
    d.addEventListener('click', () => CP.go('flame', { focus: path.join(';') || undefined, search }));
    d.addEventListener('mousemove', (e) => CP.tooltip.show(e.clientX, e.clientY, `${n.name}\n${CP.num(n.bytes)} bytes${est} (${CP.pct(n.bytes, v.total)} of all, ${CP.pct(n.bytes, v.tree.bytes)} of this frame)` + (n.bytes_range ? `\n95% range ${CP.num(n.bytes_range[0])} to ${CP.num(n.bytes_range[1])} bytes, from ${CP.num(n.samples)} samples` : '')));
    d.addEventListener('mouseleave', () => CP.tooltip.hide());
    box.append(d);
  }
};
