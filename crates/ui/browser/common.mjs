// What the browser tests share: the headless Chromium they drive, a
// table read back as the page drew it, and a program stepped through its
// phases (agent/testapps/phases.cs) over its standard input and output.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

// Headless Chromium (CLRPROF_CHROMIUM, default /usr/bin/chromium) and a
// 1400x900 page; script errors in the page are collected in `errors`.
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CLRPROF_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  return { browser, page, errors };
}

// The rows of a table the page drew (`data-table`), each cell's
// `data-value` under its `data-col` (numbers as numbers), and the row's
// `data-name` as `name`.
export async function rows(page, table) {
  return page.$$eval(`table[data-table="${table}"] tbody tr`, (trs) => trs.map((tr) => {
    const o = { name: tr.dataset.name };
    for (const td of tr.querySelectorAll('td')) {
      const v = td.dataset.value;
      o[td.dataset.col] = v === 'null' ? null : (v !== '' && !isNaN(Number(v)) ? Number(v) : v);
    }
    return o;
  }));
}

// A program started from a spec {"cmd", "args", "cwd", "env"}, its output
// lines collected; `waitLine` waits for one, `go` sends the line that
// starts its next phase, `exited` gives its exit code and standard error.
export function startProgram(spec, args = spec.args) {
  const child = spawn(spec.cmd, args, { cwd: spec.cwd, env: Object.assign({}, process.env, spec.env), stdio: ['pipe', 'pipe', 'pipe'] });
  const program = { child, lines: [], waiters: [] };
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  program.exited = new Promise((resolve) => child.on('exit', (code) => resolve({ code, err })));
  createInterface({ input: child.stdout }).on('line', (l) => {
    program.lines.push(l.trim());
    for (const w of program.waiters.splice(0)) w();
  });
  program.waitLine = async (text, ms = 120000) => {
    const start = Date.now();
    while (!program.lines.includes(text)) {
      if (Date.now() - start > ms) throw new Error(`the program did not print ${JSON.stringify(text)}; it printed ${JSON.stringify(program.lines)}`);
      await new Promise((r) => { program.waiters.push(r); setTimeout(r, 500); });
    }
  };
  program.go = () => child.stdin.write('go\n');
  return program;
}
