// Browser test of `clrprof ui --collector DIR` on a live session, end to
// end: a real .NET program (agent/testapps/phases.cs) runs under the
// agent, streaming to a real `clrprof collect`; the page lists the
// session, opens it, refreshes its figures as the log grows, and its
// buttons take a heap dump, add a comment and switch allocations off and
// on through the collector. Run by crates/cli/tests/ui_live.rs, which
// starts the collector and the server and passes:
//   CLRPROF_UI_URL         the page's address, with its token
//   CLRPROF_CLI            the clrprof binary, whose --json the page must match
//   CLRPROF_COLLECTOR_DIR  the collector's directory
//   CLRPROF_PROGRAM        {"cmd", "args", "cwd", "env"}: the program to run
//                          (`clrprof record --target ... -- dotnet phases.dll`)
//   CLRPROF_SCREENSHOTS    where to write the screenshots
//   CLRPROF_CHROMIUM       the browser (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { launch, rows as tableRows, startProgram } from './common.mjs';

const URL_ = process.env.CLRPROF_UI_URL;
const CLI = process.env.CLRPROF_CLI;
const DIR = process.env.CLRPROF_COLLECTOR_DIR;
const PROGRAM = JSON.parse(process.env.CLRPROF_PROGRAM || 'null');
const SHOTS = process.env.CLRPROF_SCREENSHOTS || 'ui-screenshots';
if (!URL_ || !CLI || !DIR || !PROGRAM) throw new Error('CLRPROF_UI_URL, CLRPROF_CLI, CLRPROF_COLLECTOR_DIR and CLRPROF_PROGRAM must be set');
const TOKEN = new URL(URL_).searchParams.get('token');
const ORIGIN = new URL(URL_).origin;
const scratch = mkdtempSync(join(tmpdir(), 'clrprof-live-'));

// The CLI's --json on the first `bytes` bytes of the session's log (the
// part the page had loaded).
function cliOnPrefix(session, bytes, args) {
  const prefix = join(scratch, `${session}-${bytes}.log`);
  writeFileSync(prefix, readFileSync(join(DIR, `${session}.log`)).subarray(0, bytes));
  const full = [args[0], prefix, ...args.slice(1)];
  let v = JSON.parse(execFileSync(CLI, [...full, '--quiet', '--json'], { maxBuffer: 1 << 28 }).toString());
  const keys = v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : [];
  if (keys.length === 2 && keys.includes(keys[0] + '_left_out')) v = v[keys[0]];
  return v;
}

let browser, page, pageErrors, program;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  ({ browser, page, errors: pageErrors } = await launch());
  program = startProgram(PROGRAM);
});
after(async () => {
  if (program.child && program.child.exitCode === null) program.child.kill('SIGKILL');
  await browser?.close();
});

const rows = (table) => tableRows(page, table);

// The page's state for the session's log: the generation (loads so far)
// and the bytes loaded, read together.
async function loaded() {
  const logs = await page.evaluate(async () => (await fetch('/api/logs', { headers: { 'x-clrprof-token': CP.token } })).json());
  return logs[0].session;
}

// The Summary as drawn, with the generation it was drawn from and the
// bytes of the log that generation had (retried if a refresh came between).
async function summaryShown(minGeneration = 0) {
  for (;;) {
    await page.waitForFunction((g) => {
      const v = document.querySelector('[data-view="summary"][data-ready]');
      return v && Number(v.dataset.generation) >= g;
    }, minGeneration, { timeout: 120000, polling: 200 });
    const g = Number(await page.getAttribute('[data-view="summary"][data-ready]', 'data-generation'));
    const figures = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value]));
    const s = await loaded();
    if (s.generation === g && Number(await page.getAttribute('[data-view="summary"][data-ready]', 'data-generation')) === g) {
      return { generation: g, bytes: s.loaded_bytes, figures };
    }
  }
}

let session;

test('a running session is listed, opened, and shown as running', async () => {
  await program.waitLine('phase A done');
  await page.goto(URL_);
  // With no log given, the page starts on the collector's sessions.
  await page.waitForSelector('[data-view="sessions"][data-ready] table[data-table="sessions"]', { timeout: 60000 });
  const row = await page.waitForSelector('table[data-table="sessions"] tbody tr[data-name^="phases_"]', { timeout: 60000 });
  session = await row.getAttribute('data-name');
  assert.equal(await page.getAttribute(`tr[data-name="${session}"] td[data-col="state"]`, 'data-value'), 'live');
  const listed = JSON.parse(execFileSync(CLI, ['sessions', '--dir', DIR, '--json']).toString()).find((s) => s.session === session);
  assert.equal(listed.state, 'live', 'clrprof sessions agrees');
  await page.screenshot({ path: join(SHOTS, 'live-sessions.png') });
  await page.click(`[data-open-button="${session}"]`);
  await page.waitForSelector('[data-view="summary"][data-ready]', { timeout: 60000 });
  await page.waitForSelector('#live-bar[data-live="1"]');
  assert.match(await page.textContent('#live-bar [data-live-status]'), new RegExp(`running ${session}: refreshed at \\d\\d:\\d\\d:\\d\\d`));
  assert.deepEqual(pageErrors, []);
});

let afterA;
test('its figures are the CLI\'s on the part loaded; a heap dump taken from the page appears with the CLI\'s numbers', async () => {
  afterA = await summaryShown(1);
  const want = cliOnPrefix(session, afterA.bytes, ['summary']);
  for (const k of ['allocated_bytes', 'final_heap_bytes', 'heap_dumps', 'comments', 'gen0_collections']) assert.equal(afterA.figures[k], want[k], `${k} at generation ${afterA.generation}`);
  assert.equal(afterA.figures.heap_dumps, 0);
  await page.click('[data-ctl="dump"]');
  await page.waitForSelector('[data-ctl-result][data-ok="1"]', { timeout: 60000 });
  const reply = await page.textContent('[data-ctl-result]');
  const m = reply.match(/^heap dump: ok heap dump (\d+): (\d+) objects, (\d+) bytes, (\d+) roots/);
  assert.ok(m, `the agent's answer is shown: ${reply}`);
  // The page refreshes by itself until the dump is in.
  let s;
  for (;;) {
    s = await summaryShown(afterA.generation + 1);
    if (s.figures.heap_dumps === 1) break;
  }
  const dumps = cliOnPrefix(session, s.bytes, ['dumps', '--top', '0']);
  assert.equal(dumps.length, 1);
  assert.deepEqual([dumps[0].objects, dumps[0].bytes, dumps[0].roots], [Number(m[2]), Number(m[3]), Number(m[4])], 'the agent counted what the log holds');
  await page.click('tr[data-name="heap_dumps"] a');
  // The Heap dumps view opens on the dominator tree; its Types tab lists
  // the dump's types.
  await page.waitForSelector('[data-view="dumps"][data-ready] [data-tree="0"]', { timeout: 60000 });
  await page.click('[data-view="dumps"] button[data-tab="types"]');
  await page.waitForSelector('[data-view="dumps"][data-ready] table[data-table="dump-types"]', { timeout: 60000 });
  assert.deepEqual((await rows('dumps')).map((r) => [r.index, r.objects, r.bytes, r.roots]), dumps.map((d) => [d.index, d.objects, d.bytes, d.roots]), 'the dump list');
  const types = cliOnPrefix(session, s.bytes, ['dump', '0', '--top', '0']);
  const shown = (await rows('dump-types')).find((r) => r.name === 'PhaseA');
  assert.deepEqual([shown.objects, shown.bytes], (({ objects, bytes }) => [objects, bytes])(types.types.find((t) => t.name === 'PhaseA')));
  assert.equal(shown.objects, 1000, 'every PhaseA object is in the dump');
  await page.screenshot({ path: join(SHOTS, 'live-dump.png') });
});

test('a comment added from the page appears as a marker on the Time Line', async () => {
  await page.goto(`${URL_}#timeline?log=0`);
  await page.waitForSelector('[data-view="timeline"][data-ready]', { timeout: 60000 });
  await page.fill('#live-bar [data-input="comment"]', 'after phase A');
  await page.click('[data-ctl="comment"]');
  await page.waitForFunction(() => /comment "after phase A": ok/.test(document.querySelector('[data-ctl-result]').textContent), null, { timeout: 60000 });
  await page.waitForSelector('[data-view="timeline"][data-ready] [data-comment="after phase A"]', { timeout: 60000 });
  // The markers drawn are the CLI's for the part of the log loaded.
  for (;;) {
    const g = Number(await page.getAttribute('[data-view="timeline"][data-ready]', 'data-generation'));
    const shown = await page.$$eval('[data-comment]', (cs) => cs.map((c) => c.dataset.comment));
    const s = await loaded();
    if (s.generation !== g) { await page.waitForTimeout(200); continue; }
    const marks = cliOnPrefix(session, s.loaded_bytes, ['timeline', '--top', '0']);
    assert.deepEqual(shown, marks.comments.map((c) => c.text), 'comment markers');
    assert.ok(shown.includes('after phase A'));
    assert.match(await page.textContent('.tl-legend'), new RegExp(`${marks.gcs.length} GCs, ${marks.comments.length} comments in view`));
    break;
  }
  await page.mouse.move(0, 0);
  await page.screenshot({ path: join(SHOTS, 'live-timeline.png') });
});

test('allocations off and on from the page; the figures grow as the program goes on, then the session ends', async () => {
  await page.goto(`${URL_}#summary?log=0`);
  const before_ = await summaryShown(1);
  await page.click('[data-ctl="allocations off"]');
  await page.waitForFunction(() => /^allocations off: ok \(was on\)/.test(document.querySelector('[data-ctl-result]').textContent), null, { timeout: 60000 });
  program.go();
  await program.waitLine('phase B done');
  await page.click('[data-ctl="allocations on"]');
  await page.waitForFunction(() => /^allocations on: ok \(was off\)/.test(document.querySelector('[data-ctl-result]').textContent), null, { timeout: 60000 });
  program.go();
  // The page redraws the Summary by itself as the log grows.
  let grown;
  for (;;) {
    grown = await summaryShown(before_.generation + 1);
    if (grown.figures.allocated_bytes > before_.figures.allocated_bytes) break;
  }
  assert.ok(grown.generation > before_.generation);
  const { code, err } = await program.exited;
  assert.equal(code, 0, `the program failed: ${err}`);
  await page.waitForSelector('#live-bar[data-live="0"]', { timeout: 60000 });
  assert.match(await page.textContent('#live-bar [data-live-status]'), /ended/);
  assert.equal(await page.$eval('[data-ctl="dump"]', (b) => b.disabled), true, 'no commands to an ended session');
  const end = await summaryShown(grown.generation);
  const s = await loaded();
  assert.equal(s.loaded_bytes, readFileSync(join(DIR, `${session}.log`)).length, 'the whole log is loaded');
  const want = cliOnPrefix(session, s.loaded_bytes, ['summary']);
  for (const k of ['allocated_bytes', 'final_heap_bytes', 'heap_dumps', 'comments']) assert.equal(end.figures[k], want[k], k);
  // Phase B ran with allocations off: none of its objects.
  await page.goto(`${URL_}#types?log=0&kind=allocated`);
  await page.waitForSelector('[data-view="types"][data-ready]', { timeout: 60000 });
  const counts = Object.fromEntries((await rows('types')).map((r) => [r.name, r.count]));
  assert.deepEqual([counts.PhaseA, counts.PhaseB, counts.PhaseC], [1000, undefined, 3000]);
  await page.goto(`${URL_}#sessions`);
  await page.waitForSelector(`[data-view="sessions"][data-ready] tr[data-name="${session}"] td[data-col="state"][data-value="ended"]`, { timeout: 60000 });
});

test('a command the collector refuses (the session ended) shows its reason in the page', async () => {
  await page.goto(`${URL_}#summary?log=0`);
  await page.waitForSelector('#live-bar[data-live="0"]');
  // As if the button had been clicked just before the page learnt that
  // the session ended.
  await page.$eval('[data-ctl="dump"]', (b) => { b.disabled = false; });
  await page.click('[data-ctl="dump"]');
  await page.waitForSelector('[data-ctl-result][data-ok="0"]', { timeout: 60000 });
  assert.match(await page.textContent('[data-ctl-result]'), new RegExp(`heap dump: ${session}: dump: session "${session}" is not live`));
  // Requests without the token are refused; no file of the directory but
  // sessions can be reached.
  assert.equal((await fetch(`${ORIGIN}/api/sessions`)).status, 403);
  assert.equal((await fetch(`${ORIGIN}/api/session/${session}/ctl`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"command":"dump"}' })).status, 403);
  for (const name of ['collector.token', 'collector', 'collector.sock', '..%2Fcollector.token', `${session}.log`]) {
    const r = await fetch(`${ORIGIN}/api/session/${name}/open`, { method: 'POST', headers: { 'x-clrprof-token': TOKEN } });
    assert.equal(r.status, 404, name);
  }
  assert.deepEqual(pageErrors, [], 'script errors in the page');
});
