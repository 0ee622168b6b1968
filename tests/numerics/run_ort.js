// Runs two ONNX models on the same float32 inputs in ONNX Runtime (CPU) and
// compares their outputs: |a - b| <= atol + atol_scale * max|a| + rtol * |a|
// element by element (atol_scale optional, 0 when absent; max|a| over all of
// A's outputs, for deep models whose output scale is not known beforehand).
// Usage: node run_ort.js CASE.json
//   CASE.json: {"a": "A.onnx", "b": "B.onnx", "rtol": 1e-4, "atol": 1e-5,
//               "atol_scale": 1e-5,
//               "inputs": {"name": {"dims": [...], "data": "file.bin"}}}
//   (paths relative to CASE.json's directory)
// Prints {"max_abs_diff": ..., "max_abs": max|a|, "ok": true|false} and
// exits 0 when they match, 1 when they do not, 2 on errors.
// Or: node run_ort.js --lines: one such case per line on stdin, each with
// "dir" (what its paths are relative to), one result per line on stdout,
// {"error": "..."} for a case that fails to run; exits at the end of input.
// (One process for many comparisons: loading ONNX Runtime takes a while.)
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');

async function run(model, feeds) {
  // One thread, and the session released at once: idle ONNX Runtime pool
  // threads spin, and would slow whatever else runs meanwhile.
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1});
  const out = await session.run(feeds);
  const outputs = session.outputNames.map((name) => out[name]);
  await session.release();
  return outputs;
}

async function compare(spec, dir) {
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
  return {max_abs_diff: maxDiff, max_abs: maxAbs, ok};
}

async function lines() {
  for await (const line of readline.createInterface({input: process.stdin})) {
    if (!line.trim()) continue;
    let result;
    try {
      const spec = JSON.parse(line);
      result = await compare(spec, spec.dir || '.');
    } catch (e) {
      result = {error: String(e)};
    }
    process.stdout.write(JSON.stringify(result) + '\n');
  }
}

async function main() {
  if (process.argv[2] === '--lines') return lines();
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const result = await compare(spec, path.dirname(process.argv[2]));
  console.log(JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}

main().catch((e) => {
  console.error(String(e));
  process.exit(2);
});
