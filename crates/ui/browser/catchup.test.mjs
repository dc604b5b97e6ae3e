// Browser test of `clrprof ui --collector DIR` through a collector
// restart: a real .NET program (agent/testapps/phases.cs) streams to a
// `clrprof collect` that this test starts, SIGKILLs after phase A and
// starts again on the same port after phase B; the agent catches the new
// collector up from its spool. The page, open on the session all along,
// must show it running again, then ended, with the whole log loaded and
// the CLI's figures, and the session's record saying the stored log is
// whole. Run by crates/cli/tests/ui_live.rs, which starts the UI server
// and passes:
//   CLRPROF_UI_URL         the page's address, with its token
//   CLRPROF_CLI            the clrprof binary (collector, and --json to match)
//   CLRPROF_COLLECTOR_DIR  the collector's directory
//   CLRPROF_PROGRAM        {"cmd", "args", "cwd", "env"}: the program to run,
//                          "{TARGET}" in its arguments standing for the
//                          collector's address
//   CLRPROF_SCREENSHOTS    where to write the screenshots
//   CLRPROF_CHROMIUM       the browser (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launch, rows as tableRows, startProgram } from './common.mjs';

const URL_ = process.env.CLRPROF_UI_URL;
const CLI = process.env.CLRPROF_CLI;
const DIR = process.env.CLRPROF_COLLECTOR_DIR;
const PROGRAM = JSON.parse(process.env.CLRPROF_PROGRAM || 'null');
const SHOTS = process.env.CLRPROF_SCREENSHOTS || 'ui-screenshots';
if (!URL_ || !CLI || !DIR || !PROGRAM) throw new Error('CLRPROF_UI_URL, CLRPROF_CLI, CLRPROF_COLLECTOR_DIR and CLRPROF_PROGRAM must be set');

// The collector: started with `--listen`, its address read from the first
// line it prints.
let collector = null;
function startCollector(listen) {
  const child = spawn(CLI, ['collect', '--listen', listen, '--dir', DIR], { stdio: ['ignore', 'pipe', 'ignore'] });
  collector = { child, exited: new Promise((resolve) => child.on('exit', resolve)) };
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (l) => { if (l.startsWith('CLRPROF_TARGET=')) resolve(l.slice('CLRPROF_TARGET='.length).trim()); });
    child.on('exit', (code) => reject(new Error(`the collector exited (${code}) before printing its address`)));
  });
}
async function killCollector() {
  collector.child.kill('SIGKILL');
  await collector.exited;
}

// The collector's record of the session, as `clrprof sessions` gives it.
function record(session) {
  return JSON.parse(execFileSync(CLI, ['sessions', '--dir', DIR, '--json']).toString()).find((s) => s.session === session);
}
async function eventually(what, f, ms = 120000) {
  const start = Date.now();
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let browser, page, pageErrors, program;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  ({ browser, page, errors: pageErrors } = await launch());
});
after(async () => {
  if (program && program.child.exitCode === null) program.child.kill('SIGKILL');
  if (collector && collector.child.exitCode === null) collector.child.kill('SIGKILL');
  await browser?.close();
});

const rows = (table) => tableRows(page, table);

// The session as the server has it loaded.
async function loaded() {
  const logs = await page.evaluate(async () => (await fetch('/api/logs', { headers: { 'x-clrprof-token': CP.token } })).json());
  return logs[0].session;
}

test('a session stays on the page through a collector restart, catches up from the spool and ends whole', async () => {
  const target = await startCollector('127.0.0.1:0');
  program = startProgram(PROGRAM, PROGRAM.args.map((a) => (a === '{TARGET}' ? target : a)));
  await program.waitLine('phase A done');
  await page.goto(URL_);
  const row = await page.waitForSelector('table[data-table="sessions"] tbody tr[data-name^="phases_"]', { timeout: 60000 });
  const session = await row.getAttribute('data-name');
  await page.click(`[data-open-button="${session}"]`);
  await page.waitForSelector('[data-view="summary"][data-ready]', { timeout: 60000 });
  await page.waitForSelector('#live-bar[data-live="1"]', { timeout: 60000 });

  const atKill = await loaded();
  const allocatedA = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value])).allocated_bytes;
  // The collector goes away; the program runs phase B into its spool.
  await killCollector();
  program.go();
  await program.waitLine('phase B done');
  // The collector comes back on the same address: it marks the session
  // cut, then the agent catches it up and the session is live again.
  await startCollector(target);
  const again = await eventually('the session live again', () => {
    const r = record(session);
    return r && r.state === 'live' && /sending the rest from its spool/.test(r.reason || '') ? r : null;
  });
  assert.ok(again.bytes >= 0);
  await page.goto(`${URL_}#sessions`);
  await page.waitForSelector(`[data-view="sessions"][data-ready] tr[data-name="${session}"] td[data-col="state"][data-value="live"]`, { timeout: 60000 });
  // The page follows the catch-up: phase B's objects, sent from the
  // spool, appear while the session runs.
  const start = Date.now();
  for (;;) {
    const s = await loaded();
    if (s.live && s.loaded_bytes > atKill.loaded_bytes) break;
    if (Date.now() - start > 120000) throw new Error(`the page never loaded more than ${atKill.loaded_bytes} bytes: ${JSON.stringify(s)}`);
    await page.waitForTimeout(200);
  }
  await page.goto(`${URL_}#summary?log=0`);
  await page.waitForSelector('#live-bar[data-live="1"]', { timeout: 60000 });
  await page.waitForSelector('[data-view="summary"][data-ready]', { timeout: 60000 });
  const caught = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value]));
  assert.ok(caught.allocated_bytes > allocatedA, `phase B's bytes shown: ${caught.allocated_bytes} > ${allocatedA}`);
  assert.match(await page.textContent('#live-bar [data-live-status]'), new RegExp(`running ${session}`));
  await page.screenshot({ path: join(SHOTS, 'live-catchup.png') });

  program.go();
  const { code, err } = await program.exited;
  assert.equal(code, 0, `the program failed: ${err}`);
  assert.match(err, /caught up from the spool/, 'clrprof record says the collector caught up');
  const done = await eventually('the session ended', () => {
    const r = record(session);
    return r && r.state !== 'live' ? r : null;
  });
  assert.equal(done.state, 'ended', JSON.stringify(done));
  assert.match(done.reason, /the stored log is whole/);
  assert.equal(done.spool, null, 'a whole log names no spool');

  // The page: ended, the whole log loaded, the CLI's figures on it, and
  // every phase's objects (phase B's came through the spool).
  await page.waitForSelector('#live-bar[data-live="0"]', { timeout: 60000 });
  assert.match(await page.textContent('#live-bar [data-live-status]'), /ended/);
  const whole = readFileSync(join(DIR, `${session}.log`)).length;
  for (;;) {
    const s = await loaded();
    if (s.loaded_bytes === whole) break;
    await page.waitForTimeout(200);
  }
  await page.goto(`${URL_}#types?log=0&kind=allocated`);
  await page.waitForSelector('[data-view="types"][data-ready]', { timeout: 60000 });
  const counts = Object.fromEntries((await rows('types')).map((r) => [r.name, r.count]));
  assert.deepEqual([counts.PhaseA, counts.PhaseB, counts.PhaseC], [1000, 2000, 3000]);
  await page.goto(`${URL_}#summary?log=0`);
  await page.waitForSelector('[data-view="summary"][data-ready]', { timeout: 60000 });
  const figures = Object.fromEntries((await rows('summary')).map((r) => [r.name, r.value]));
  const want = JSON.parse(execFileSync(CLI, ['summary', join(DIR, `${session}.log`), '--quiet', '--json']).toString());
  for (const k of ['allocated_bytes', 'final_heap_bytes', 'gen0_collections', 'comments']) assert.equal(figures[k], want[k], k);
  await page.goto(`${URL_}#sessions`);
  const how = await page.waitForSelector(`[data-view="sessions"][data-ready] tr[data-name="${session}"] td[data-col="reason"]`, { timeout: 60000 });
  assert.match(await how.getAttribute('data-value'), /the agent sent the rest from its spool .*: the stored log is whole/);
  assert.deepEqual(pageErrors, [], 'script errors in the page');
});
