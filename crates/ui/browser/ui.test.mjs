// Browser tests of `clrprof ui` in headless Chromium (playwright-core).
// Run by crates/cli/tests/ui_browser.rs, which starts `clrprof ui` on the
// logs and passes:
//   CLRPROF_UI_URL       the page's address, with its token
//   CLRPROF_CLI          the clrprof binary, whose --json the page must match
//   CLRPROF_UI_LOGS      the served logs, as a JSON array, in id order
//   CLRPROF_UI_TRACE     the id of a sampled trace among them
//   CLRPROF_UI_LOSSY     the id of a trace that lost events
//   CLRPROF_UI_LEAKS     the id of a log with dumps of a leaking program
//   CLRPROF_SCREENSHOTS  where to write a screenshot of each view
//   CLRPROF_CHROMIUM     the browser (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, rows as tableRows, parseRgb, rgbDistance, deltaE2000 } from './common.mjs';

const URL_ = process.env.CLRPROF_UI_URL;
const CLI = process.env.CLRPROF_CLI;
const LOGS = JSON.parse(process.env.CLRPROF_UI_LOGS || '[]');
// A sampled trace among the logs (its id), checked on its own.
const TRACE = process.env.CLRPROF_UI_TRACE === undefined ? null : Number(process.env.CLRPROF_UI_TRACE);
// A trace that lost events (its id), checked on its own.
const LOSSY = process.env.CLRPROF_UI_LOSSY === undefined ? null : Number(process.env.CLRPROF_UI_LOSSY);
// A log with four dumps of a leaking program (its id), checked on its own.
const LEAKS = process.env.CLRPROF_UI_LEAKS === undefined ? null : Number(process.env.CLRPROF_UI_LEAKS);
const SHOTS = process.env.CLRPROF_SCREENSHOTS || 'ui-screenshots';
if (!URL_ || !CLI || LOGS.length === 0) throw new Error('CLRPROF_UI_URL, CLRPROF_CLI and CLRPROF_UI_LOGS must be set');
const page0 = new URL(URL_);
const ORIGIN = page0.origin;
const TOKEN = page0.searchParams.get('token');
const cache = new Map();

// The CLI's --json for a command on log `id`.
function cli(id, args) {
  const key = JSON.stringify([id, args]);
  if (!cache.has(key)) {
    // The log goes where '@' stands, or else right after the command.
    const full = args.includes('@') ? args.map((a) => (a === '@' ? LOGS[id] : a)) : [args[0], LOGS[id], ...args.slice(1)];
    const out = execFileSync(CLI, [...full, '--quiet', '--json'], { maxBuffer: 1 << 28 });
    let v = JSON.parse(out.toString());
    // A command whose answer is one list gives {"<list>": [...],
    // "<list>_left_out": n}: the list is what the page shows.
    // (`estimates`, which a sampled trace's answers carry, aside.)
    const keys = v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v).filter((k) => k !== 'estimates') : [];
    if (keys.length === 2 && keys.includes(keys[0] + '_left_out')) v = v[keys[0]];
    else if (keys.length === 2 && keys.includes(keys[1] + '_left_out')) v = v[keys[1]];
    cache.set(key, v);
  }
  return cache.get(key);
}

let browser, page, pageErrors;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  ({ browser, page, errors: pageErrors } = await launch());
  await page.goto(URL_);
  // The logs load in the background; the page polls their progress.
  await page.waitForFunction(async () => {
    const r = await fetch('/api/logs', { headers: { 'x-clrprof-token': CP.token } });
    return (await r.json()).every((l) => l.state === 'ready');
  }, null, { timeout: 120000, polling: 250 });
});
after(async () => { await browser?.close(); });

// Opens a view and waits until it has drawn.
async function open(hash, shot) {
  await page.goto(`${URL_}#${hash}`);
  await page.waitForSelector(`[data-route="#${hash}"][data-ready]`, { timeout: 60000 });
  assert.deepEqual(pageErrors, [], 'script errors in the page');
  const err = await page.$(`[data-route="#${hash}"] .error`);
  assert.equal(err ? await err.textContent() : null, null, `${hash} shows an error`);
  if (shot) await page.screenshot({ path: join(SHOTS, `${shot}.png`), fullPage: false });
}

// A table's rows as [{name, col: value}] (values as numbers where numeric).
const rows = (table) => tableRows(page, table);

function same(actual, expected, what) {
  assert.deepEqual(actual, expected, what);
}

const LOG_NAMES = ['gen-small', 'real'];

// Two neighbouring types must be at least this far apart in CIEDE2000
// (about 2 is just noticeable; the old colours, a hash of the name into a
// hue, put neighbours of the histogram of allocated bytes 0.0 apart on
// gen-small, 0.6 on the real log).
const MIN_DE = 10;

// Checks that neighbouring entries [name, rgb] of `what` are MIN_DE apart,
// except two types that both have the grey of "other types" (`shared`).
function neighboursDistinct(entries, shared, what) {
  for (let i = 1; i < entries.length; i++) {
    const [[n1, c1], [n2, c2]] = [entries[i - 1], entries[i]];
    if (n1 === n2 || (shared && String(c1) === shared && String(c2) === shared)) continue;
    const d = rgbDistance(c1, c2);
    assert.ok(d >= MIN_DE, `${what}: ${n1} rgb(${c1}) and ${n2} rgb(${c2}) are ${d.toFixed(1)} apart (CIEDE2000), under ${MIN_DE}`);
  }
}

// The swatches of a types table, in row order, as [name, [r, g, b]].
async function swatches(table) {
  return (await page.$$eval(`table[data-table="${table}"] tbody tr .swatch`, (ss) => ss.map((s) => [s.dataset.swatch, getComputedStyle(s).backgroundColor])))
    .map(([n, c]) => [n, parseRgb(c)]);
}
const SUMMARY_KEYS = ['allocated_bytes', 'relocated_bytes', 'final_heap_bytes', 'objects_finalized', 'critical_objects_finalized',
  'gen0_collections', 'gen1_collections', 'gen2_collections', 'induced_collections', 'gen0_heap_bytes', 'gen1_heap_bytes',
  'gen2_heap_bytes', 'loh_bytes', 'handles_created', 'handles_destroyed', 'handles_surviving', 'heap_dumps', 'comments'];

for (let id = 0; id < LOGS.length; id++) {
  if (id === TRACE || id === LOSSY || id === LEAKS) continue;
  const tag = LOG_NAMES[id] || `log${id}`;

  test(`${tag}: Summary shows the CLI's figures, each linking to its view`, async () => {
    await open(`summary?log=${id}`, `${tag}-summary`);
    const shown = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value]));
    const want = cli(id, ['summary']);
    same(shown, Object.fromEntries(SUMMARY_KEYS.map((k) => [k, want[k]])), 'summary figures');
    await page.click('tr[data-name="final_heap_bytes"] a');
    await page.waitForSelector('[data-view="types"][data-ready]');
    assert.match(await page.evaluate(() => location.hash), /kind=final/);
    // Every figure links to the view it comes from (CLRProfiler's Summary
    // buttons).
    const views = { allocated_bytes: 'types', relocated_bytes: 'types', final_heap_bytes: 'types', objects_finalized: 'types',
      critical_objects_finalized: 'types', gen0_collections: 'timeline', gen1_collections: 'timeline', gen2_collections: 'timeline',
      induced_collections: 'timeline', gen0_heap_bytes: 'lifetime', gen1_heap_bytes: 'lifetime', gen2_heap_bytes: 'lifetime',
      loh_bytes: 'lifetime', handles_created: 'handles', handles_destroyed: 'handles', handles_surviving: 'handles', heap_dumps: 'dumps',
      comments: 'timeline' };
    for (const key of SUMMARY_KEYS) {
      await open(`summary?log=${id}`);
      const link = await page.$(`tr[data-name="${key}"] a[data-link]`);
      assert.ok(link, `${key} links to a view`);
      await link.click();
      await page.waitForSelector(`[data-view="${views[key]}"][data-ready]`, { timeout: 60000 });
      assert.equal(await page.$eval('main [data-view] .error', (e) => e.textContent).catch(() => null), null, `${key}'s view shows no error`);
    }
  });

  test(`${tag}: the handles view and the Summary's handle figures match clrprof handles`, async () => {
    const want = cli(id, ['handles', '--top', '0']);
    const summary = cli(id, ['summary']);
    assert.deepEqual([want.created, want.destroyed, want.surviving], [summary.handles_created, summary.handles_destroyed, summary.handles_surviving]);
    for (const show of ['created', 'destroyed', 'surviving']) {
      await open(`summary?log=${id}`);
      await page.click(`tr[data-name="handles_${show}"] a`);
      await page.waitForSelector(`[data-view="handles"][data-ready]`, { timeout: 60000 });
      assert.match(await page.evaluate(() => location.hash), new RegExp(`show=${show}`));
      const note = await page.$('[data-created]');
      assert.deepEqual(await note.evaluate((e) => [+e.dataset.created, +e.dataset.destroyed, +e.dataset.surviving]), [want.created, want.destroyed, want.surviving], 'totals');
      const groups = want.groups.map((g, i) => Object.assign({ i }, g)).filter((g) => g[show] > 0).sort((a, b) => b[show] - a[show] || a.i - b.i);
      const shown = await rows('handles');
      same(shown.map((r) => [r.name, r.created, r.destroyed, r.surviving]),
        groups.slice(0, 500).map((g) => [g.stack_id === null ? 'none' : String(g.stack_id), g.created, g.destroyed, g.surviving]), `stacks that ${show} handles`);
      if (groups.length && show === 'created') {
        const first = groups[0];
        const text = shown[0].stack;
        if (first.frames.length) assert.ok(text.startsWith(first.frames[0]), `the stack is shown leaf first: ${text}`);
        await page.screenshot({ path: join(SHOTS, `${tag}-handles.png`) });
      }
    }
  });

  for (const kind of ['allocated', 'relocated', 'final', 'finalized', 'critical']) {
    test(`${tag}: histogram by type (${kind}) and by size match clrprof types --kind ${kind} --buckets`, async () => {
      await open(`types?log=${id}&kind=${kind}`, kind === 'allocated' ? `${tag}-types` : null);
      const want = cli(id, ['types', '--kind', kind, '--buckets']);
      same((await rows('types')).map((r) => [r.name, r.bytes, r.count]), want.types.slice(0, 500).map((t) => [t.type, t.bytes, t.count]), 'types');
      same((await rows('buckets')).map((r) => [r.min_size, r.max_size, r.bytes, r.count]), want.buckets.map((b) => [b.min_size, b.max_size, b.bytes, b.count]), 'size classes');
      // Each size class names its largest types (the JSON's `type` key).
      same((await rows('buckets')).map((r) => (r.top === undefined || r.top === null ? '' : String(r.top))), want.buckets.map((b) => b.types.slice(0, 3).map((t) => t.type).join(', ')), 'size classes\' largest types');
    });
  }

  for (const by of ['functions', 'modules', 'classes']) {
    test(`${tag}: allocation by ${by} matches clrprof ${by} (inclusive and exclusive)`, async () => {
      for (const sort of ['inclusive', 'exclusive']) {
        await open(`code?log=${id}&by=${by}&sort=${sort}`, by === 'functions' && sort === 'inclusive' ? `${tag}-functions` : null);
        const want = cli(id, [by, '--sort', sort, '--top', '200']);
        same((await rows(by)).map((r) => [r.name, r.inclusive_bytes, r.inclusive_count, r.exclusive_bytes, r.exclusive_count]),
          want.map((r) => [r.name, r.inclusive_bytes, r.inclusive_count, r.exclusive_bytes, r.exclusive_count]), `${by} by ${sort}`);
      }
      // Sorting by a column in the page orders by that figure.
      await page.click(`table[data-table="${by}"] th[data-col="exclusive_count"]`);
      const counts = (await rows(by)).map((r) => r.exclusive_count);
      same(counts, counts.slice().sort((a, b) => b - a), 'sorted by exclusive objects');
    });
  }

  test(`${tag}: who allocated String matches clrprof who String`, async () => {
    await open(`code?log=${id}&by=who&sort=inclusive&type=String`);
    const want = cli(id, ['who', 'String', '@', '--top', '200']);
    same((await rows('who-types')).map((r) => [r.name, r.bytes, r.count]), want.types.map((t) => [t.name, t.bytes, t.count]), 'who types');
    same((await rows('who-functions')).map((r) => [r.name, r.inclusive_bytes, r.exclusive_bytes]), want.functions.map((f) => [f.name, f.inclusive_bytes, f.exclusive_bytes]), 'who functions');
  });

  test(`${tag}: the Allocation Graph matches clrprof graph --min-percent 1`, async () => {
    await open(`graph?log=${id}&min_percent=1`, `${tag}-graph`);
    const want = cli(id, ['graph', '--min-percent', '1']);
    same((await rows('graph-nodes')).map((r) => [r.name, r.kind, r.bytes, r.count, r.exclusive_bytes]),
      want.nodes.map((n) => [n.name, n.kind, n.bytes, n.count, n.exclusive_bytes]), 'graph nodes');
    assert.equal(await page.$$eval('svg.graph rect', (r) => r.length), want.nodes.length, 'one box per node');
    assert.equal(await page.$$eval('svg.graph path.edge', (r) => r.length), want.edges.length, 'one curve per edge');
  });

  test(`${tag}: the flame graph adds up to clrprof flame's stacks; click zooms, search sums`, async () => {
    const folded = cli(id, ['flame']);
    const total = folded.reduce((a, s) => a + s.bytes, 0);
    const byFirst = new Map();
    for (const s of folded) { const f = s.stack.split(';')[0]; byFirst.set(f, (byFirst.get(f) || 0) + s.bytes); }
    await open(`flame?log=${id}`, `${tag}-flame`);
    assert.equal(Number(await page.getAttribute('[data-total]', 'data-total')), total, 'total bytes');
    const firsts = await page.$$eval('#flame .fl', (ds) => ds.filter((d) => d.dataset.depth === '1').map((d) => [d.dataset.frame, Number(d.dataset.bytes)]));
    assert.ok(firsts.length > 0);
    for (const [f, b] of firsts) assert.equal(b, byFirst.get(f), `bytes under ${f}`);
    const [first] = firsts.sort((a, b) => b[1] - a[1]);
    await page.click(`#flame .fl[data-frame="${first[0]}"][data-depth="1"]`);
    // The view drawn for the zoomed route (the one before it, still on the
    // page for a moment, has a data-focus-bytes too: the whole's).
    await page.waitForFunction(() => document.querySelector('[data-view="flame"][data-ready][data-route*="focus="] [data-focus-bytes]'));
    assert.equal(Number(await page.getAttribute('[data-focus-bytes]', 'data-focus-bytes')), first[1], 'zoomed frame bytes');
    const term = 'String';
    const matched = folded.filter((s) => s.stack.split(';').some((f) => f.includes(term))).reduce((a, s) => a + s.bytes, 0);
    await open(`flame?log=${id}&search=${term}`);
    assert.equal(Number(await page.getAttribute('[data-matched]', 'data-matched')), matched, 'bytes under matching frames');
  });

  test(`${tag}: lifetime per type and generation matches clrprof lifetime`, async () => {
    await open(`lifetime?log=${id}`, `${tag}-lifetime`);
    const want = cli(id, ['lifetime', '--top', '200']);
    const cols = ['allocated', 'gen0', 'gen1', 'gen2', 'loh', 'alive_at_end'];
    same((await rows('lifetime')).map((r) => [r.name, ...cols.map((c) => r[c])]), [...want.rows, want.total].map((r) => [r.name, ...cols.map((c) => r[c].bytes)]), 'lifetime bytes');
  });

  test(`${tag}: ages match clrprof ages and clrprof ages --at`, async () => {
    await open(`lifetime?log=${id}&tab=ages`, `${tag}-ages`);
    const want = cli(id, ['ages']);
    same((await rows('ages-gcs')).map((r) => [r.gcs_survived, r.died_bytes, r.alive_bytes]), want.by_gcs.map((r) => [r.gcs_survived, r.died.bytes, r.alive_at_end.bytes]), 'ages by GCs');
    const end = cli(id, ['timeline', '--top', '0']).to_ms;
    const at = (end / 2).toFixed(1);
    await open(`lifetime?log=${id}&tab=ages&at=${at}`);
    const h = cli(id, ['ages', '--at', at, '--bars', '10']);
    same((await rows('age-bars')).map((r) => [r.objects, r.bytes]), h.bars.map((b) => [b.objects, b.bytes]), 'histogram by age');
  });

  test(`${tag}: survivors of a window match clrprof survivors`, async () => {
    const end = cli(id, ['timeline', '--top', '0']).to_ms;
    let [from, to] = [(end * 0.2).toFixed(1), (end * 0.4).toFixed(1)];
    let want = cli(id, ['survivors', '--from', from, '--to', to, '--top', '50']);
    if (want.by_type.length === 0) {
      // A log whose allocations all came at one tick (the real log) has
      // none in that window: the whole log, so the tables compared hold
      // something.
      [from, to] = ['0.0', end.toFixed(1)];
      want = cli(id, ['survivors', '--from', from, '--to', to, '--top', '50']);
    }
    assert.ok(want.by_type.length > 0, `allocations between ${from} and ${to} ms`);
    await open(`lifetime?log=${id}&tab=survivors&from=${from}&to=${to}`, `${tag}-survivors`);
    same((await rows('survivors')).map((r) => [r.name, r.surviving_bytes, r.surviving_objects, r.allocated_objects]),
      want.by_type.map((t) => [t.name, t.surviving.bytes, t.surviving.objects, t.allocated.objects]), 'survivors by type');
  });

  test(`${tag}: Time Line: its axis is clrprof timeline's; on a time axis a drag narrows the window and "who allocated" becomes the CLI's answer for it, a click lists what was live`, async () => {
    await open(`timeline?log=${id}`, `${tag}-timeline`);
    const whole = cli(id, ['timeline', '--top', '0']);
    assert.match(await page.textContent('.tl-legend'), new RegExp(`${whole.gcs.length} GCs, ${whole.comments.length} comments`));
    const [x, y, w, h] = (await page.getAttribute('canvas[data-plot]', 'data-plot')).split(',').map(Number);
    // The columns follow what `clrprof timeline` picks: time, or the heap
    // changes in log order for a log whose changes all came at one tick.
    const axis = await page.getAttribute('[data-window]', 'data-axis');
    const cells = cli(id, ['timeline', '--cells', '--width', '40', '--height', '10', '--top', '0']).grid;
    assert.equal(axis, cells.axis, 'the Time Line\'s axis');
    if (axis === 'log_order') {
      assert.match(await page.textContent('[data-window]'), new RegExp(`its ${cells.column_changes[cells.column_changes.length - 1].toLocaleString('en-US')} heap changes in log order`));
      // The picture is not the empty one a time axis gives: type colours
      // (those of the legend) in at least 90% of the plot's pixel columns.
      const inked = await page.$eval('canvas[data-plot]', (c, [x, y, w, h]) => {
        const d = c.getContext('2d').getImageData(x, y, w, h).data;
        const legend = new Set([...document.querySelectorAll('.tl-legend .swatch')].map((s) => getComputedStyle(s).backgroundColor.replace(/[^\d,]/g, '')));
        let n = 0;
        for (let col = 0; col < w; col++) {
          for (let row = 0; row < h; row++) {
            const k = 4 * (row * w + col);
            if (legend.has(`${d[k]},${d[k + 1]},${d[k + 2]}`)) { n++; break; }
          }
        }
        return n;
      }, [x, y, w, h]);
      assert.ok(inked >= 0.9 * w, `${inked} of ${w} pixel columns show the heap`);
      return;
    }
    const box = await page.$eval('canvas[data-plot]', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top]; });
    await page.mouse.move(box[0] + x + w * 0.30, box[1] + y + h / 2);
    await page.mouse.down();
    await page.mouse.move(box[0] + x + w * 0.45, box[1] + y + h / 2, { steps: 5 });
    await page.mouse.move(box[0] + x + w * 0.60, box[1] + y + h / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForSelector('[data-view="timeline"][data-ready] [data-who-window]', { timeout: 60000 });
    const [from, to] = (await page.getAttribute('[data-who-window]', 'data-who-window')).split(',');
    assert.ok(+from > 0 && +to < whole.to_ms && +from < +to, `window ${from}-${to} within 0-${whole.to_ms}`);
    const route = await page.evaluate(() => location.hash);
    assert.match(route, new RegExp(`from=${from}&to=${to}`));
    const types = cli(id, ['types', '--from', from, '--to', to]);
    const all = cli(id, ['types']);
    same((await rows('who-types')).map((r) => [r.name, r.bytes, r.count]), types.slice(0, 15).map((t) => [t.type, t.bytes, t.count]), 'who allocated in the window, by type');
    assert.notDeepEqual(types.slice(0, 15), all.slice(0, 15), 'the window changes the answer');
    const fns = cli(id, ['functions', '--from', from, '--to', to, '--sort', 'exclusive', '--top', '15']);
    same((await rows('who-functions')).map((r) => [r.name, r.exclusive_bytes, r.exclusive_count]), fns.map((f) => [f.name, f.exclusive_bytes, f.exclusive_count]), 'who allocated in the window, by function');
    const surv = cli(id, ['survivors', '--from', from, '--to', to, '--top', '15']);
    same((await rows('survivors')).map((r) => [r.name, r.surviving_bytes]), surv.by_type.map((t) => [t.name, t.surviving.bytes]), 'what of it survived');
    // A click (no drag) lists the live bytes by type at that moment.
    await page.mouse.click(box[0] + x + w * 0.5, box[1] + y + h / 2);
    await page.waitForSelector('[data-panel="live"] [data-at]');
    const at = await page.getAttribute('[data-panel="live"] [data-at]', 'data-at');
    const live = cli(id, ['types', '--kind', 'final', '--at', at]);
    same((await rows('live')).map((r) => [r.name, r.bytes, r.count]), live.slice(0, 15).map((t) => [t.type, t.bytes, t.count]), `live at ${at} ms`);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(SHOTS, `${tag}-timeline-window.png`), fullPage: true, clip: { x: 0, y: 0, width: 1400, height: 1250 } });
  });

  test(`${tag}: type colours: neighbouring types in the histograms, the Time Line (legend and pixels) and the flame graph are at least ${MIN_DE} apart in CIEDE2000, and a type has one colour in every view`, async () => {
    // The histogram of allocated bytes, as drawn (computed styles).
    await open(`types?log=${id}&kind=allocated`);
    const allocated = await swatches('types');
    const want = cli(id, ['types']);
    same(allocated.map(([n]) => n), want.slice(0, 500).map((t) => t.type), 'one swatch per row');
    const colour = new Map(allocated.map(([n, c]) => [n, String(c)]));
    // Only one colour may be shared by several types: the grey of "other
    // types"; the 9 types that allocated the most each have their own.
    const users = new Map();
    for (const [n, c] of colour) users.set(c, (users.get(c) || 0) + 1);
    const sharedColours = [...users].filter(([, k]) => k > 1).map(([c]) => c);
    assert.ok(sharedColours.length <= 1, `one colour for the other types, not ${sharedColours.length}`);
    const shared = sharedColours[0] || null;
    const own = want.slice(0, 9).map((t) => t.type);
    for (const n of own) assert.notEqual(colour.get(n), shared, `${n}, among the largest, has its own colour`);
    assert.ok(users.size >= Math.min(18, want.length), `${users.size} colours for ${want.length} types`);
    neighboursDistinct(allocated, shared, 'histogram of allocated bytes');
    // Another kind, another order: still distinct, the same colour per type.
    await open(`types?log=${id}&kind=final`);
    const final = await swatches('types');
    neighboursDistinct(final, shared, 'histogram of the final heap');
    for (const [n, c] of final) if (colour.has(n)) assert.equal(String(c), colour.get(n), `${n}'s colour in both histograms`);

    // The Time Line: its legend, and the pixels of the plot.
    await open(`timeline?log=${id}`);
    const legend = (await page.$$eval('.tl-legend .swatch', (ss) => ss.map((s) => [s.dataset.swatch || '(other types)', getComputedStyle(s).backgroundColor])))
      .map(([n, c]) => [n, parseRgb(c)]);
    assert.ok(legend.length > 0, 'the Time Line has a legend');
    neighboursDistinct(legend, null, 'the Time Line\'s legend');
    for (const [n, c] of legend) {
      if (n === '(other types)') { if (shared) assert.equal(String(c), shared, 'the legend\'s other types'); continue; }
      if (colour.has(n)) assert.equal(String(c), colour.get(n), `${n}'s colour in the histogram and on the Time Line`);
      assert.notEqual(String(c), shared, `${n} is in the legend with a colour of its own`);
    }
    const [x, y, w, h] = (await page.getAttribute('canvas[data-plot]', 'data-plot')).split(',').map(Number);
    const known = legend.map(([, c]) => String(c));
    const px = await page.$eval('canvas[data-plot]', (c, [x, y, w, h]) => Array.from(c.getContext('2d').getImageData(x, y, w, h).data), [x, y, w, h]);
    const at = (k) => `${px[4 * k]},${px[4 * k + 1]},${px[4 * k + 2]}`;
    // Every two touching pixels of two legend colours (not both grey):
    // each pair of colours met is measured once.
    const seen = new Set();
    let typed = 0, inked = 0;
    for (let r = 0; r < h; r++) {
      for (let q = 0; q < w; q++) {
        const k = r * w + q, a = at(k);
        if (a !== '255,255,255') inked++;
        if (!known.includes(a)) continue;
        typed++;
        for (const j of [q + 1 < w ? k + 1 : -1, r + 1 < h ? k + w : -1]) {
          const b = j < 0 ? null : at(j);
          if (!b || b === a || !known.includes(b) || (a === shared && b === shared) || seen.has(a + '/' + b)) continue;
          seen.add(a + '/' + b);
          const d = rgbDistance(a.split(',').map(Number), b.split(',').map(Number));
          assert.ok(d >= MIN_DE, `touching cells of the Time Line: rgb(${a}) and rgb(${b}) are ${d.toFixed(1)} apart`);
        }
      }
    }
    // The plot is drawn in the legend's colours (the rest: comment lines
    // and labels, band lines).
    assert.ok(inked > 0 && typed >= 0.95 * inked, `${typed} of ${inked} drawn pixels have a legend colour`);

    // The flame graph: frames touching at the same depth, and a frame and
    // its parent; a type's frames have its colour.
    await open(`flame?log=${id}`);
    const frames = (await page.$$eval('#flame .fl', (fs) => fs.map((f) => [f.dataset.frame, +f.dataset.depth, parseFloat(f.style.left), parseFloat(f.style.width), f.dataset.kind, getComputedStyle(f).backgroundColor])))
      .map(([n, depth, left, width, kind, c]) => ({ n, depth, left, right: left + width, kind, c: parseRgb(c) }));
    assert.ok(frames.length > 1, 'the flame graph has frames');
    const byDepth = new Map();
    for (const f of frames) { if (!byDepth.has(f.depth)) byDepth.set(f.depth, []); byDepth.get(f.depth).push(f); }
    let pairs = 0;
    for (const [depth, row] of byDepth) {
      row.sort((a, b) => a.left - b.left);
      for (let i = 1; i < row.length; i++) {
        if (row[i].left - row[i - 1].right >= 2) continue;
        pairs++;
        neighboursDistinct([[row[i - 1].n, row[i - 1].c], [row[i].n, row[i].c]], null, `flame graph frames side by side at depth ${depth}`);
      }
      for (const f of row) {
        const parent = (byDepth.get(depth - 1) || []).find((p) => p.left <= f.left + 0.5 && f.right <= p.right + 0.5);
        if (parent) neighboursDistinct([[parent.n, parent.c], [f.n, f.c]], null, 'a flame graph frame under its parent');
        if (f.kind === 'type' && colour.has(f.n) && colour.get(f.n) !== shared) assert.equal(String(f.c), colour.get(f.n), `${f.n}'s colour in the histogram and the flame graph`);
      }
    }
    assert.ok(pairs > 0, 'frames side by side were compared');
    await page.screenshot({ path: join(SHOTS, `${tag}-flame-colours.png`) });
  });

  test(`${tag}: the Summary shows what holds memory (the last heap dump's top retainers), one click from the dominator tree`, async () => {
    const list = cli(id, ['dumps', '--top', '0']);
    await open(`summary?log=${id}`);
    if (list.length === 0) {
      assert.equal(await page.$('table[data-table="top-retainers"]'), null, 'no retainers without a heap dump');
      return;
    }
    const n = list[list.length - 1].index;
    assert.equal(Number(await page.getAttribute('[data-retainers-dump]', 'data-retainers-dump')), n, 'the last dump');
    const ret = cli(id, ['dump', String(n), '--retained', '--top', '0']);
    same((await rows('retained-types')).map((r) => [r.name, r.retained, r.objects]), ret.types.slice(0, 8).map((t) => [t.name, t.retained, t.objects]), 'the types that retain the most');
    const tops = ret.top_objects.filter((o) => o.dominator === null);
    same((await rows('top-retainers')).map((r) => [Number(r.name), r.retained]), tops.slice(0, 10).map((o) => [o.address, o.retained]), 'the top retainers and their retained bytes');
    await page.screenshot({ path: join(SHOTS, `${tag}-summary-retainers.png`) });
    // One click: the whole dominator tree of that dump.
    await page.click(`[data-panel="retainers"] a[data-link="dumps"]:text("Open the dominator tree")`);
    await page.waitForSelector(`[data-view="dumps"][data-ready] [data-tree="${n}"]`, { timeout: 60000 });
    const shownRoots = await page.$$eval('[data-tree] > div > .kids > div > .node', (ns) => ns.map((e) => [Number(e.dataset.address), Number(e.dataset.retained)]));
    same(shownRoots, tops.slice(0, 50).map((o) => [o.address, o.retained]), 'the tree the link opens');
    // One click on a retainer: the tree with that object expanded.
    const parent = tops.slice(0, 10).find((o) => ret.top_objects.some((c) => c.dominator === o.address));
    if (parent) {
      await open(`summary?log=${id}`);
      await page.click(`table[data-table="top-retainers"] tr[data-name="${parent.address}"] a`);
      const node = `[data-view="dumps"][data-ready] [data-tree] .node.picked[data-address="${parent.address}"]`;
      await page.waitForSelector(node, { timeout: 60000 });
      await page.waitForFunction((sel) => document.querySelector(sel).nextElementSibling.children.length > 0, node);
      const kids = await page.$eval(node, (e) => [...e.nextElementSibling.querySelectorAll(':scope > div > .node')].map((k) => [Number(k.dataset.address), Number(k.dataset.retained)]));
      same(kids, ret.top_objects.filter((o) => o.dominator === parent.address).slice(0, 50).map((o) => [o.address, o.retained]), `what ${parent.address.toString(16)} retains`);
    }
    // The Heap dumps tab opens on the last dump's dominator tree.
    await open(`dumps?log=${id}`);
    assert.ok(await page.$(`[data-tree="${n}"]`), 'the Heap dumps view opens on the dominator tree of the last dump');
  });

  test(`${tag}: heap dumps, the dominator tree, paths to roots and the difference of two dumps match clrprof dump`, async () => {
    const list = cli(id, ['dumps', '--top', '0']);
    await open(`dumps?log=${id}`, list.length ? null : `${tag}-dumps`);
    if (list.length === 0) {
      assert.match(await page.textContent('main [data-view="dumps"]'), /no heap dumps/);
      return;
    }
    same((await rows('dumps')).map((r) => [r.index, r.objects, r.bytes, r.roots]), list.map((d) => [d.index, d.objects, d.bytes, d.roots]), 'dump list');
    const n = list[list.length - 1].index;
    await open(`dumps?log=${id}&dump=${n}&tab=types`, `${tag}-dump-types`);
    const types = cli(id, ['dump', String(n), '--top', '0']);
    same((await rows('dump-types')).map((r) => [r.name, r.objects, r.bytes]), types.types.slice(0, 500).map((t) => [t.name, t.objects, t.bytes]), 'dump types');
    // The dominator tree: the roots' children, then one expanded node's.
    const ret = cli(id, ['dump', String(n), '--retained', '--top', '0']);
    await open(`dumps?log=${id}&dump=${n}&tab=tree`);
    const shownRoots = await page.$$eval('[data-tree] > div > .kids > div > .node', (ns) => ns.map((e) => [Number(e.dataset.address), Number(e.dataset.retained)]));
    const wantRoots = ret.top_objects.filter((o) => o.dominator === null).slice(0, 50).map((o) => [o.address, o.retained]);
    same(shownRoots, wantRoots, 'children of the roots and their retained sizes');
    const parent = ret.top_objects.find((o) => o.dominator === null && ret.top_objects.some((c) => c.dominator === o.address));
    const node = `[data-tree] .node[data-address="${parent.address}"]`;
    await page.click(`${node} .toggle`);
    await page.waitForFunction((sel) => document.querySelector(sel).nextElementSibling.children.length > 0, node);
    const kids = await page.$eval(node, (e) => [...e.nextElementSibling.querySelectorAll(':scope > div > .node')].map((k) => [Number(k.dataset.address), Number(k.dataset.retained)]));
    same(kids, ret.top_objects.filter((o) => o.dominator === parent.address).slice(0, 50).map((o) => [o.address, o.retained]), `children of ${parent.address.toString(16)}`);
    await page.screenshot({ path: join(SHOTS, `${tag}-dominator-tree.png`) });
    await open(`dumps?log=${id}&dump=${n}&tab=paths&type=System.String`, `${tag}-paths`);
    const paths = cli(id, ['dump', String(n), '--path-to', 'System.String']);
    assert.equal(Number(await page.getAttribute('[data-reachable]', 'data-reachable')), paths.reachable, 'reachable objects');
    assert.equal(await page.$$eval('[data-path]', (p) => p.length), paths.paths.length, 'paths shown');
    if (list.length > 1) {
      const [a, b] = [list[0].index, n];
      await open(`dumps?log=${id}&dump=${n}&tab=diff&a=${a}&b=${b}`, `${tag}-dump-diff`);
      const d = cli(id, ['dump-diff', String(a), String(b)]);
      for (const k of ['new_objects', 'new_bytes', 'gone_objects', 'kept_objects']) {
        assert.equal(Number(await page.getAttribute(`[data-${k.replace('_', '-')}]`, `data-${k.replace('_', '-')}`)), d[k], k);
      }
    }
  });
}

test('a sampled trace: every view says its figures are estimates, and shows the CLI\'s estimates', async (t) => {
  if (TRACE === null) return t.skip('no trace served');
  await open(`summary?log=${TRACE}`, 'trace-summary');
  const banner = await page.$eval(`[data-route="#summary?log=${TRACE}"] .estimates`, (e) => e.textContent);
  assert.match(banner, /Estimates/);
  assert.match(banner, /GC\/AllocationTick/);
  const shown = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value]));
  const summary = cli(TRACE, ['summary']);
  same(shown, Object.fromEntries(SUMMARY_KEYS.map((k) => [k, summary[k]])), 'the trace\'s summary figures');
  await open(`types?log=${TRACE}&kind=allocated`, 'trace-types');
  assert.ok(await page.$(`[data-route="#types?log=${TRACE}&kind=allocated"] .estimates`), 'the types view says estimates');
  const types = (await rows('types')).map((r) => [r.name, r.bytes, r.count]);
  const want = cli(TRACE, ['types', '--kind', 'allocated', '--buckets']);
  same(types, want.types.slice(0, 500).map((t) => [t.type, t.bytes, t.count]), 'the trace\'s types');
  // Each estimated row shows its 95% range, from the samples the CLI gives,
  // and the columns say they are estimates.
  const route = `[data-route="#types?log=${TRACE}&kind=allocated"]`;
  assert.ok(await page.$(`${route} table[data-table="types"] th[data-col="range"]`), 'the range column');
  assert.match(await page.$eval(`${route} table[data-table="types"] th[data-col="bytes"]`, (e) => e.textContent), /est\./);
  const samples = await page.$$eval(`${route} table[data-table="types"] .range`, (s) => s.map((e) => Number(e.dataset.samples)));
  same(samples, want.types.slice(0, 500).map((t) => t.samples), 'the samples of each row');
  const cells = await page.$$eval(`${route} table[data-table="types"] .range`, (s) => s.map((e) => e.textContent));
  assert.ok(cells.every((c) => /^(±[0-9.]+%|-[0-9.]+% \+[0-9.]+%)$/.test(c)), cells.join(', '));
  // The other views of estimates: each range column gives the samples the
  // CLI gives, and the figures' headers say " est.".
  const ranges = async (view, table, col, want, what) => {
    const r = `[data-route="#${view}"]`;
    assert.ok(await page.$(`${r} table[data-table="${table}"] th[data-col="${col}"]`), `${what}: the range column`);
    const got = await page.$$eval(`${r} table[data-table="${table}"] td[data-col="${col}"] .range`, (s) => s.map((e) => Number(e.dataset.samples) || 0));
    same(got, want, `${what}: the samples of each row`);
    const heads = await page.$$eval(`${r} table[data-table="${table}"] th`, (s) => s.map((e) => e.textContent));
    assert.ok(heads.some((h) => / est\.$/.test(h)), `${what}: " est." in ${heads.join(', ')}`);
  };
  await open(`code?log=${TRACE}&by=functions&sort=inclusive`, 'trace-functions');
  const fns = cli(TRACE, ['functions', '--top', '200']);
  await ranges(`code?log=${TRACE}&by=functions&sort=inclusive`, 'functions', 'inclusive_range', fns.map((f) => f.inclusive_range.samples), 'functions');
  await open(`lifetime?log=${TRACE}`, 'trace-lifetime');
  const lt = cli(TRACE, ['lifetime', '--top', '200']);
  await ranges(`lifetime?log=${TRACE}`, 'lifetime', 'range', [...lt.rows, lt.total].map((r) => r.ranges.allocated.samples), 'lifetime');
  await unknownColumns(TRACE, 'trace');
  await open(`lifetime?log=${TRACE}&tab=ages`);
  const ag = cli(TRACE, ['ages']);
  await ranges(`lifetime?log=${TRACE}&tab=ages`, 'ages-gcs', 'died_range', ag.by_gcs.map((r) => (r.ranges && r.ranges.died ? r.ranges.died.samples : 0)), 'ages');
  // The flame graph: the bytes are estimates, each frame with the samples
  // under it (as many as clrprof flame's stacks through it) and its range.
  await open(`flame?log=${TRACE}`, 'trace-flame');
  assert.equal(await page.getAttribute(`[data-route="#flame?log=${TRACE}"] [data-focus-bytes]`, 'data-estimated'), 'yes', 'the flame graph says estimates');
  const stacks = cli(TRACE, ['flame', '--top', '0']);
  const samplesUnder = new Map();
  for (const s of stacks) { const f = s.stack.split(';')[0]; samplesUnder.set(f, (samplesUnder.get(f) || 0) + s.samples); }
  const frames = await page.$$eval(`[data-route="#flame?log=${TRACE}"] #flame .fl`, (ds) => ds.filter((d) => d.dataset.depth === '1').map((d) => [d.dataset.frame, Number(d.dataset.bytes), Number(d.dataset.samples), d.dataset.range]));
  assert.ok(frames.length > 0, 'frames drawn');
  for (const [f, b, k, range] of frames) {
    assert.equal(k, samplesUnder.get(f), `samples under ${f}`);
    const [lo, hi] = (range || '').split(',').map(Number);
    assert.ok(lo <= b && b <= hi && lo < hi, `${f}: ${b} bytes in its range ${range}`);
  }
  // A log of every allocation says nothing of estimates.
  await open('flame?log=0');
  assert.equal(await page.$('[data-route="#flame?log=0"] #flame .fl[data-range]'), null, 'no range on a log\'s frames');
  await open('summary?log=0');
  assert.equal(await page.$('[data-route="#summary?log=0"] .estimates'), null);
});

test('a log with periodic dumps: the Leaks view gives clrprof leaks\' verdict, roots named, with the allocation stacks', async (t) => {
  if (LEAKS === null) return t.skip('no log with dumps of a leak served');
  // `leaks` exits 1 for a leak: its JSON is on standard output all the same.
  let out;
  try {
    out = execFileSync(CLI, ['leaks', LOGS[LEAKS], '--trace', LOGS[LEAKS], '--quiet', '--json'], { maxBuffer: 1 << 28 });
  } catch (e) {
    assert.equal(e.status, 1, `clrprof leaks: ${e.stderr}`);
    out = e.stdout;
  }
  const want = JSON.parse(out.toString());
  assert.equal(want.verdict, 'leak');
  await open(`leaks?log=${LEAKS}`, 'leaks');
  const view = `[data-route="#leaks?log=${LEAKS}"]`;
  assert.equal(await page.getAttribute(`${view} [data-verdict]`, 'data-verdict'), want.verdict);
  assert.equal(await page.isVisible('#tabs a[data-view="leaks"]'), true, 'the Leaks tab is shown for a log with 3+ dumps');
  same((await rows('leak-dumps')).map((r) => [r.objects, r.bytes]), want.dumps.map((d) => [d.objects, d.bytes]), 'the dumps');
  const shown = await page.$$eval(`${view} [data-leak]`, (ls) => ls.map((l) => ({
    name: l.dataset.leak,
    perMinute: Number(l.querySelector('[data-objects-per-minute]').dataset.objectsPerMinute),
    container: l.querySelector('[data-container]')?.dataset.container,
    root: l.querySelector('[data-root]')?.dataset.root,
    path: l.querySelector('[data-root]')?.textContent,
    stacks: [...l.querySelectorAll('[data-stack]')].map((s) => s.textContent),
  })));
  same(shown.map((l) => l.name), want.leaks.map((l) => l.name), 'the leaking types, in order');
  want.leaks.forEach((l, i) => {
    assert.equal(shown[i].perMinute, Math.round(l.objects_per_minute), `${l.name}: objects per minute`);
    assert.equal(shown[i].container, l.holder.kind, `${l.name}: the container's kind`);
    assert.ok(l.holder.root.static_field, `${l.name}: the CLI names a static root`);
    assert.equal(shown[i].root, `[static ${l.holder.root.static_field}]`, `${l.name}: the root`);
    for (const step of l.holder.path) assert.ok(shown[i].path.includes(step.name), `${l.name}: ${step.name} on the path ${shown[i].path}`);
    const stacks = want.allocation_stacks.find((s) => s.type === l.name).stacks;
    assert.equal(shown[i].stacks.length, stacks.length, `${l.name}: stacks shown`);
    stacks.forEach(([bytes, objects], k) => assert.ok(shown[i].stacks[k].startsWith(`${bytes.toLocaleString('en-US')} bytes, ${objects.toLocaleString('en-US')} objects`), `${l.name}: stack ${k}: ${shown[i].stacks[k]}`));
  });
  assert.deepEqual(shown.map((l) => l.root), ['[static Leaky.Orders.All]', '[static Leaky.Bus.Instance]']);
  await page.screenshot({ path: join(SHOTS, 'leaks-full.png'), fullPage: true });
  // A log with fewer dumps has no Leaks tab.
  await open('summary?log=0');
  assert.equal(await page.isVisible('#tabs a[data-view="leaks"]'), cli(0, ['dumps', '--top', '0']).length >= 3);
});

// Objects of unknown fate (a trace's samples that a GC condemned without
// reporting survivors) have columns of their own in lifetime and
// survivors, and a line in ages, with the CLI's figures; none where the
// CLI has none.
async function unknownColumns(id, tag) {
  await open(`lifetime?log=${id}`, `${tag}-lifetime`);
  const lt = cli(id, ['lifetime', '--top', '200']);
  const ltShown = !!(await page.$(`[data-route="#lifetime?log=${id}"] table[data-table="lifetime"] th[data-col="unknown"]`));
  assert.equal(ltShown, lt.total.unknown.objects > 0, `lifetime's unknown column (the CLI's total: ${lt.total.unknown.objects})`);
  if (ltShown) {
    same((await rows('lifetime')).map((r) => [r.name, r.unknown]), [...lt.rows, lt.total].map((r) => [r.name, r.unknown.bytes]), 'lifetime unknown');
  }
  await open(`lifetime?log=${id}&tab=ages`, `${tag}-ages`);
  const ag = cli(id, ['ages']);
  const agUnknown = await page.$(`[data-route="#lifetime?log=${id}&tab=ages"] [data-unknown]`);
  assert.equal(agUnknown ? Number(await agUnknown.getAttribute('data-unknown')) : 0, ag.unknown.objects, 'ages\' unknown objects');
  const sv = cli(id, ['survivors', '--top', '50']);
  await open(`lifetime?log=${id}&tab=survivors`, `${tag}-survivors`);
  const svShown = !!(await page.$(`[data-route="#lifetime?log=${id}&tab=survivors"] table[data-table="survivors"] th[data-col="unknown_objects"]`));
  assert.equal(svShown, sv.unknown.objects > 0, `survivors' unknown column (the CLI's: ${sv.unknown.objects})`);
  if (svShown) {
    same((await rows('survivors')).map((r) => [r.name, r.unknown_objects]), sv.by_type.map((t) => [t.name, t.unknown.objects]), 'survivors unknown');
  }
  return lt.total.unknown.objects;
}

test('objects of unknown fate: lifetime, ages and survivors show them apart, as the CLI counts them', async (t) => {
  if (LOSSY === null) return t.skip('no lossy trace served');
  // The trace that lost events lost survival reports: some samples'
  // fates are unknown.
  const unknown = await unknownColumns(LOSSY, 'lossy');
  assert.ok(unknown > 0, 'the lossy trace has objects of unknown fate');
  // A log of every allocation has no unknown column.
  assert.equal(await unknownColumns(0, 'log0'), 0);
});

test('a trace that lost events: every view says it is incomplete, with the CLI\'s count', async (t) => {
  if (LOSSY === null) return t.skip('no lossy trace served');
  const lost = cli(LOSSY, ['summary']).incomplete.lost_events;
  assert.ok(lost > 0, 'the CLI says events were lost');
  for (const view of [`summary?log=${LOSSY}`, `types?log=${LOSSY}&kind=allocated`, `code?log=${LOSSY}&by=functions&sort=inclusive`]) {
    await open(view, view === `summary?log=${LOSSY}` ? 'lossy-summary' : undefined);
    const banner = await page.$(`[data-route="#${view}"] .incomplete`);
    assert.ok(banner, `${view} says incomplete`);
    assert.equal(Number(await banner.getAttribute('data-lost-events')), lost, view);
    assert.match(await banner.textContent(), new RegExp(`Incomplete\\..*incomplete: ${lost} events lost`));
  }
  // A trace without losses says nothing of the kind.
  if (TRACE !== null) {
    await open(`summary?log=${TRACE}`);
    assert.equal(await page.$(`[data-route="#summary?log=${TRACE}"] .incomplete`), null);
  }
});

test('the colour distance of these tests is CIEDE2000 (Sharma, Wu and Dalal\'s test pairs)', () => {
  for (const [a, b, want] of [[[50, 2.6772, -79.7751], [50, 0, -82.7485], 2.0425], [[50, 0, 0], [50, -1, 2], 2.3669],
    [[50, 2.5, 0], [56, -27, -3], 31.9030], [[60.2574, -34.0099, 36.2677], [60.4626, -34.1751, 39.4387], 1.2644],
    [[22.7233, 20.0904, -46.6940], [23.0331, 14.9730, -42.5619], 2.0373], [[90.8027, -2.0831, 1.4410], [91.1528, -1.6435, 0.0447], 1.4441]]) {
    assert.ok(Math.abs(deltaE2000(a, b) - want) < 1e-4, `${a} / ${b}: ${deltaE2000(a, b)}, want ${want}`);
  }
  // sRGB to Lab: white to itself, black to white.
  assert.ok(rgbDistance([255, 255, 255], [255, 255, 255]) === 0);
  assert.ok(Math.abs(rgbDistance([0, 0, 0], [255, 255, 255]) - 100) < 1e-3, 'black to white is 100');
});

test('two logs compared match clrprof diff', async () => {
  const [a, b] = [0, Math.min(1, LOGS.length - 1)];
  await open(`compare?log=0&a=${a}&b=${b}`, 'compare');
  const want = JSON.parse(execFileSync(CLI, ['diff', LOGS[a], LOGS[b], '--top', '50', '--quiet', '--json']).toString());
  for (const key of ['allocated_by_type', 'final_heap_by_type', 'functions_exclusive', 'functions_inclusive']) {
    const shown = want[key].length ? (await rows(`compare-${key}`)).map((r) => [r.name, r.diff_bytes, r.a_bytes, r.b_bytes, r.diff_count]) : [];
    same(shown, want[key].map((r) => [r.name, r.diff_bytes, r.a_bytes, r.b_bytes, r.diff_count]), key);
  }
});

test('a request without the token is refused', async () => {
  for (const path of ['/', '/api/logs', '/assets/app.js', '/api/log/0/summary']) {
    assert.equal((await fetch(ORIGIN + path)).status, 403, path);
    const wrong = (TOKEN[0] === '0' ? '1' : '0') + TOKEN.slice(1);
    assert.equal((await fetch(ORIGIN + path + '?token=' + wrong)).status, 403, `${path} with a wrong token`);
    assert.equal((await fetch(ORIGIN + path, { headers: { 'x-clrprof-token': wrong } })).status, 403, `${path} with a wrong token header`);
  }
  assert.equal((await fetch(`${ORIGIN}/api/logs?token=${TOKEN}`)).status, 200, 'with the token');
});

test('no path outside the served logs can be reached', async () => {
  const h = { 'x-clrprof-token': TOKEN };
  for (const path of ['/etc/passwd', '/assets/..%2F..%2F..%2F..%2Fetc%2Fpasswd', '/assets/../../Cargo.toml', '/assets/%2Fetc%2Fpasswd',
    '/api/log/..%2F..%2Fetc%2Fpasswd/summary', `/api/log/${encodeURIComponent(LOGS[0])}/summary`, '/api/log/99/summary', '/api/log/-1/summary',
    '/api/log/0/dump/99/types', '/api/compare/0/99', '/' + LOGS[0]]) {
    const r = await fetch(ORIGIN + path, { headers: h });
    const body = await r.text();
    assert.ok(r.status === 404 || r.status === 400, `${path}: status ${r.status}`);
    assert.ok(!body.includes('root:') && !body.includes('[workspace]') && !body.includes('\n! '), `${path} leaked a file`);
  }
});
