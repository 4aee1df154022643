#!/usr/bin/env node
// Runs fixture models in onnxruntime-node and reports relative L2 error and
// argmax agreement against the stored reference outputs.
//
//   NODE_PATH=/tmp/ort/node_modules node tools/ort_check.js tests/fixtures/manifest.json
//   NODE_PATH=/tmp/ort/node_modules node tools/ort_check.js model.onnx input.npy expected.npy
//
// onnxruntime-node is not a project dependency; install it outside the tree:
//   mkdir -p /tmp/ort && cd /tmp/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node
// Exit status is 1 when any case misses its manifest tolerance.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt32BE(0) !== 0x934e554d || buf.toString('latin1', 4, 6) !== 'PY') {
    throw new Error(`${file}: not an .npy file`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran order unsupported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const body = buf.subarray(start + headerLen);
  const count = shape.reduce((a, b) => a * b, 1);
  const copy = new Uint8Array(body).buffer;
  let data;
  if (descr === '<f4') data = new Float32Array(copy, 0, count);
  else if (descr === '<f8') data = Float64Array.from(new Float64Array(copy, 0, count));
  else if (descr === '<f2') {
    const bits = new Uint16Array(copy, 0, count);
    return { shape, data: halfBitsToFloat(bits), bits };
  } else throw new Error(`${file}: dtype ${descr} unsupported`);
  return { shape, data };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function floatToHalfBits(value) {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1))) half += 1;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half += 1;
  return sign | half;
}

function halfBitsToFloat(bits) {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i];
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) out[i] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) out[i] = mant ? NaN : sign * Infinity;
    else out[i] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return out;
}

function toFloatArray(tensor) {
  if (tensor.type === 'float32') return tensor.data;
  if (tensor.type === 'float16') {
    const d = tensor.data;
    return d instanceof Uint16Array ? halfBitsToFloat(d) : Float32Array.from(d);
  }
  throw new Error(`output type ${tensor.type} unsupported`);
}

function compare(got, want, shape, axis, minMargin) {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    const d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  const outer = shape.slice(0, axis).reduce((a, b) => a * b, 1);
  const classes = shape[axis];
  const inner = shape.slice(axis + 1).reduce((a, b) => a * b, 1);
  let agree = 0;
  let decisive = 0;
  let decisiveAgree = 0;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < inner; j++) {
      let bg = 0;
      let bw = 0;
      for (let c = 1; c < classes; c++) {
        const k = (o * classes + c) * inner + j;
        if (got[k] > got[(o * classes + bg) * inner + j]) bg = c;
        if (want[k] > want[(o * classes + bw) * inner + j]) bw = c;
      }
      let second = -Infinity;
      for (let c = 0; c < classes; c++) {
        const v = want[(o * classes + c) * inner + j];
        if (c !== bw && v > second) second = v;
      }
      const isDecisive = want[(o * classes + bw) * inner + j] - second >= minMargin;
      if (bg === bw) agree++;
      if (isDecisive) {
        decisive++;
        if (bg === bw) decisiveAgree++;
      }
    }
  }
  return {
    relL2: Math.sqrt(num / den),
    argmaxAll: agree / (outer * inner),
    argmax: decisive ? decisiveAgree / decisive : 1,
  };
}

async function runCase(modelPath, session, inputFile, expectedFile, tolerance, minMargin) {
  const input = readNpy(inputFile);
  const expected = readNpy(expectedFile);
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const inType = meta && meta.type ? meta.type : 'float32';
  let feed;
  if (inType === 'float16' && input.bits) {
    feed = new ort.Tensor('float16', input.bits, input.shape);
  } else if (inType === 'float16') {
    const bits = new Uint16Array(input.data.length);
    for (let i = 0; i < bits.length; i++) bits[i] = floatToHalfBits(input.data[i]);
    feed = new ort.Tensor('float16', bits, input.shape);
  } else {
    feed = new ort.Tensor('float32', Float32Array.from(input.data), input.shape);
  }
  const result = await session.run({ [session.inputNames[0]]: feed });
  const out = result[session.outputNames[0]];
  const got = toFloatArray(out);
  if (out.dims.join(',') !== expected.shape.join(',')) {
    throw new Error(`${modelPath}: output shape ${out.dims} != expected ${expected.shape}`);
  }
  const axis = tolerance && tolerance.argmax_axis !== undefined ? tolerance.argmax_axis : 1;
  const r = compare(got, expected.data, expected.shape, axis, minMargin);
  let ok = true;
  if (tolerance) {
    ok = r.relL2 <= tolerance.rel_l2 && r.argmax >= tolerance.argmax_agreement &&
      r.argmaxAll >= tolerance.argmax_agreement_all;
  }
  return { ...r, inType, outType: out.type, ok };
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { executionProviders: ['cpu'], graphOptimizationLevel: 'all' };
  let failures = 0;
  if (args.length === 1 && args[0].endsWith('.json')) {
    const dir = path.dirname(args[0]);
    const manifest = JSON.parse(fs.readFileSync(args[0], 'utf8'));
    for (const m of manifest.models) {
      const modelPath = path.join(dir, m.file);
      const session = await ort.InferenceSession.create(modelPath, opts);
      for (const c of m.cases) {
        const input = m.inputs[0].dtype === 'float16' ? c.input_fp16 : c.input;
        const r = await runCase(modelPath, session, path.join(dir, input), path.join(dir, c.expected), m.tolerance,
          c.argmax_min_margin);
        if (!r.ok) failures++;
        console.log(
          `${r.ok ? 'ok  ' : 'FAIL'} ${m.file.padEnd(34)} batch ${c.batch} in ${r.inType.padEnd(7)} ` +
            `rel_l2 ${r.relL2.toExponential(2)} argmax decisive ${r.argmax.toFixed(5)} all ${r.argmaxAll.toFixed(5)}`,
        );
      }
    }
  } else if (args.length === 3) {
    const session = await ort.InferenceSession.create(args[0], opts);
    const r = await runCase(args[0], session, args[1], args[2], null, 0);
    console.log(`${args[0]} in ${r.inType} out ${r.outType} rel_l2 ${r.relL2.toExponential(3)} argmax ${r.argmaxAll.toFixed(5)}`);
  } else {
    console.error('usage: ort_check.js manifest.json | ort_check.js model.onnx input.npy expected.npy');
    process.exit(2);
  }
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
