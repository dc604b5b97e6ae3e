// What the browser tests share: the headless Chromium they drive, a
// table read back as the page drew it, and a program stepped through its
// phases (agent/testapps/phases.cs) over its standard input and output,
// and the perceptual distance of two colours (CIEDE2000).
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

// A CSS colour as the page computes it ("rgb(r, g, b)" or "rgba(...)")
// as [r, g, b].
export function parseRgb(css) {
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
  if (!m) throw new Error(`not an rgb() colour: ${css}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

// sRGB (0-255) to CIE L*a*b* under D65.
export function srgbToLab([r, g, b]) {
  const lin = (c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  const [R, G, B] = [lin(r), lin(g), lin(b)];
  const x = (0.4124564 * R + 0.3575761 * G + 0.1804375 * B) / 0.95047;
  const y = 0.2126729 * R + 0.7151522 * G + 0.0721750 * B;
  const z = (0.0193339 * R + 0.1191920 * G + 0.9503041 * B) / 1.08883;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

// The CIEDE2000 colour difference of two L*a*b* colours (Sharma, Wu and
// Dalal, 2005; kL = kC = kH = 1). About 2 is just noticeable; 10 and more
// reads as another colour at a glance.
export function deltaE2000([L1, a1, b1], [L2, a2, b2]) {
  const rad = Math.PI / 180;
  const c7 = (c) => Math.pow(c, 7) / (Math.pow(c, 7) + Math.pow(25, 7));
  const g = 0.5 * (1 - Math.sqrt(c7((Math.hypot(a1, b1) + Math.hypot(a2, b2)) / 2)));
  const [ap1, ap2] = [(1 + g) * a1, (1 + g) * a2];
  const [cp1, cp2] = [Math.hypot(ap1, b1), Math.hypot(ap2, b2)];
  const hue = (a, b) => (a === 0 && b === 0 ? 0 : (Math.atan2(b, a) / rad + 360) % 360);
  const [hp1, hp2] = [hue(ap1, b1), hue(ap2, b2)];
  let dh = 0;
  if (cp1 * cp2 !== 0) dh = hp2 - hp1 > 180 ? hp2 - hp1 - 360 : hp2 - hp1 < -180 ? hp2 - hp1 + 360 : hp2 - hp1;
  const dL = L2 - L1, dC = cp2 - cp1, dH = 2 * Math.sqrt(cp1 * cp2) * Math.sin(dh * rad / 2);
  const lm = (L1 + L2) / 2, cm = (cp1 + cp2) / 2;
  let hm = hp1 + hp2;
  if (cp1 * cp2 !== 0) hm = Math.abs(hp1 - hp2) > 180 ? (hm < 360 ? hm + 360 : hm - 360) / 2 : hm / 2;
  const t = 1 - 0.17 * Math.cos((hm - 30) * rad) + 0.24 * Math.cos(2 * hm * rad) + 0.32 * Math.cos((3 * hm + 6) * rad) - 0.20 * Math.cos((4 * hm - 63) * rad);
  const sl = 1 + 0.015 * Math.pow(lm - 50, 2) / Math.sqrt(20 + Math.pow(lm - 50, 2));
  const sc = 1 + 0.045 * cm, sh = 1 + 0.015 * cm * t;
  const rt = -Math.sin(2 * 30 * Math.exp(-Math.pow((hm - 275) / 25, 2)) * rad) * 2 * Math.sqrt(c7(cm));
  return Math.sqrt(Math.pow(dL / sl, 2) + Math.pow(dC / sc, 2) + Math.pow(dH / sh, 2) + rt * (dC / sc) * (dH / sh));
}

// The CIEDE2000 difference of two sRGB colours.
export function rgbDistance(x, y) { return deltaE2000(srgbToLab(x), srgbToLab(y)); }
