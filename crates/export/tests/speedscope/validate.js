// Validates a speedscope file against the JSON schema the `speedscope`
// package publishes (dist/release/file-format-schema.json), with Ajv, and
// prints what the file's profiles add up to, as one JSON line:
//   {"valid": true, "errors": [], "profiles": [{"name", "samples", "weightSum", "endValue"}], "frames": N}
// Usage: node validate.js FILE.speedscope.json
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const schemaPath = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/file-format-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const valid = validate(file);
const frames = (file.shared && file.shared.frames) || [];
const errors = (validate.errors || []).slice(0, 20).map((e) => `${e.instancePath} ${e.message}`);
const profiles = (file.profiles || []).map((p) => {
  let weightSum = 0n;
  for (const w of p.weights || []) weightSum += BigInt(w);
  for (const s of p.samples || []) {
    for (const f of s) {
      if (!Number.isInteger(f) || f < 0 || f >= frames.length) errors.push(`${p.name}: frame index ${f} out of range`);
    }
  }
  if ((p.samples || []).length !== (p.weights || []).length) errors.push(`${p.name}: samples and weights differ in length`);
  return { name: p.name, samples: (p.samples || []).length, weightSum: weightSum.toString(), endValue: p.endValue };
});
process.stdout.write(JSON.stringify({ valid, errors, profiles, frames: frames.length }) + '\n');
