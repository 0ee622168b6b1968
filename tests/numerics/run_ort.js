// Runs two ONNX models on the same float32 inputs in ONNX Runtime (CPU) and
// compares their outputs: |a - b| <= atol + atol_scale * max|a| + rtol * |a|
// element by element (atol_scale optional, 0 when absent; max|a| over all of
// A's outputs, for deep models whose output scale is not known beforehand).
// Usage: node run_ort.js CASE.json
//   CASE.json: {"a": "A.onnx", "b": "B.onnx", "rtol": 1e-4, "atol": 1e-5,
//               "atol_scale": 1e-5,
//               "inputs": {"name": {"dims": [...], "data": "file.bin"}}}
// Prints {"max_abs_diff": ..., "max_abs": max|a|, "ok": true|false} and
// exits 0 when they match, 1 when they do not, 2 on errors.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

async function run(model, feeds) {
  const session = await ort.InferenceSession.create(model);
  const out = await session.run(feeds);
  return session.outputNames.map((name) => out[name]);
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const dir = path.dirname(process.argv[2]);
  const feeds = {};
  for (const [name, input] of Object.entries(spec.inputs)) {
    const bytes = fs.readFileSync(path.join(dir, input.data));
    const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    feeds[name] = new ort.Tensor('float32', Float32Array.from(data), input.dims);
  }
  const a = await run(path.join(dir, spec.a), feeds);
  const b = await run(path.join(dir, spec.b), feeds);
  let ok = a.length === b.length;
  let maxDiff = 0;
  let maxAbs = 0;
  for (const t of a) {
    for (const v of t.data) maxAbs = Math.max(maxAbs, Math.abs(v));
  }
  const atol = spec.atol + (spec.atol_scale || 0) * maxAbs;
  for (let i = 0; ok && i < a.length; ++i) {
    if (a[i].data.length !== b[i].data.length || a[i].dims.join() !== b[i].dims.join()) {
      ok = false;
      break;
    }
    for (let j = 0; j < a[i].data.length; ++j) {
      const d = Math.abs(a[i].data[j] - b[i].data[j]);
      maxDiff = Math.max(maxDiff, d);
      if (!(d <= atol + spec.rtol * Math.abs(a[i].data[j]))) ok = false;
    }
  }
  console.log(JSON.stringify({max_abs_diff: maxDiff, max_abs: maxAbs, ok}));
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error(String(e));
  process.exit(2);
});
