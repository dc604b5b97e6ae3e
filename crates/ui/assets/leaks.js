// clrprof ui: leaks: the verdict of `clrprof leaks` on the log's own heap
// dumps (three or more of one process): each leaking type with its growth
// per minute, the container that grows, the path from its root, the
// allocation stacks when the log has them, and what grew but is not a leak.
'use strict';

CP.views.leaks = async function (root) {
  root.append(CP.el('h2', {}, 'Leaks'));
  const r = await CP.api(CP.logPath('leaks'));
  const perMin = (v) => (v < 0 ? '−' : '+') + CP.num(Math.round(Math.abs(v)));
  const t0 = r.dumps.length ? r.dumps[0].at_ms : 0;
  // Seconds for a short series, minutes for a long one.
  const span = (ms) => (Math.abs(ms) < 120000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60000).toFixed(1)} min`);
  const verdict = r.verdict === 'leak' ? `${r.leaks.length} leak${r.leaks.length === 1 ? '' : 's'}`
    : r.verdict === 'none' ? 'no leak: no type grows in every interval up to the last dump' : 'cannot tell';
  root.append(CP.el('p', { class: `verdict ${r.verdict}`, 'data-verdict': r.verdict },
    CP.el('strong', {}, verdict), ` — ${r.dumps.length} heap dumps over ${span(r.dumps.length ? r.dumps[r.dumps.length - 1].at_ms - t0 : 0)}`));
  for (const why of r.undecided) root.append(CP.el('p', { class: 'note', 'data-undecided': '' }, why));
  root.append(CP.table('leak-dumps', [
    { key: 'k', label: 'Dump', num: true, value: (d) => r.dumps.indexOf(d), show: (d) => CP.link(String(r.dumps.indexOf(d)), 'dumps', { dump: r.dumps.indexOf(d), tab: 'types' }) },
    { key: 'at', label: 'Taken at', num: true, value: (d) => d.at_ms - t0, show: (d) => span(d.at_ms - t0) },
    { key: 'objects', label: 'Objects', num: true }, { key: 'bytes', label: 'Bytes', num: true },
  ], r.dumps, (d) => String(r.dumps.indexOf(d))));
  r.leaks.forEach((l, i) => {
    const box = CP.el('div', { class: 'leak', 'data-leak': l.name });
    box.append(CP.el('h3', {}, `${i + 1}. ${l.name}`));
    box.append(CP.el('div', { class: 'growth', 'data-objects-per-minute': Math.round(l.objects_per_minute) },
      CP.el('b', {}, `${perMin(l.objects_per_minute)} objects/min`), `, ${perMin(l.bytes_per_minute)} bytes/min, retaining ${perMin(l.retained_per_minute)} bytes/min`));
    box.append(CP.el('div', { class: 'note' }, 'objects per dump: ' + l.objects.map(CP.num).join(' → ')));
    const h = l.holder;
    if (h) {
      box.append(CP.el('div', { 'data-container': h.kind }, 'held by ', CP.el('b', {}, h.container.name), ` (${h.kind.replace('_', ' ')}), holding ${CP.num(h.holds)} of them`));
      const label = r.root_labels[i] || 'no strong root';
      box.append(CP.el('div', { class: 'path', 'data-root': label }, 'path: ', CP.el('b', { class: 'root' }, label),
        ...h.path.map((s) => CP.el('span', {}, ' → ', s.name, ' ', CP.el('span', { class: 'addr' }, CP.hex(s.address))))));
    } else {
      box.append(CP.el('div', {}, 'held by: no single object holds most of them (they hang from many roots)'));
    }
    if (l.with.length) box.append(CP.el('div', { class: 'note' }, 'growing with it: ' + l.with.map((t) => `${t.name} (${perMin(t.objects_per_minute)} objects/min)`).join(', ')));
    const stacks = r.stacks[i] || [];
    if (stacks.length) {
      box.append(CP.el('div', {}, 'allocated by:'));
      for (const [bytes, objects, frames] of stacks) {
        box.append(CP.el('div', { class: 'stack', 'data-stack': '' }, `${CP.num(bytes)} bytes, ${CP.num(objects)} objects: `,
          CP.el('span', { class: 'frames' }, frames.slice(0, 6).join(' ← ') + (frames.length > 6 ? ' ← …' : ''))));
      }
    } else if (r.stacks_unknown) {
      box.append(CP.el('div', { class: 'note' }, `allocation stacks unknown: ${r.stacks_unknown}`));
    }
    root.append(box);
  });
  if (r.quiet.length) {
    root.append(CP.el('h3', {}, 'Grew, but not a leak by the rule (growth stopped or too small)'));
    root.append(CP.table('leak-quiet', [
      { key: 'name', label: 'Type' },
      { key: 'first', label: 'First dump', num: true, value: (t) => t.objects[0] },
      { key: 'last', label: 'Last dump', num: true, value: (t) => t.objects[t.objects.length - 1] },
      { key: 'objects_per_minute', label: 'Objects/min', num: true, value: (t) => Math.round(t.objects_per_minute) },
    ], r.quiet, (t) => t.name));
  }
};
