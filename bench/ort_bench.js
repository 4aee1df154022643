#!/usr/bin/env node
// Times one model in onnxruntime-node (CPU provider, all graph optimizations) on random input of
// the model's own input type, and prints one JSON line: median and min ms, every run's ms, peak RSS.
//
//   NODE_PATH=bench/node_modules node bench/ort_bench.js model.onnx --shape 1x1x96x96x96 \
//       --threads 1 --runs 5 --warmup 1
'use strict';

const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = { shape: null, threads: 1, runs: 5, warmup: 1, dtype: null };
  const rest = [];
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--shape') args.shape = argv[++i].split('x').map(Number);
    else if (a === '--threads') args.threads = Number(argv[++i]);
    else if (a === '--runs') args.runs = Number(argv[++i]);
    else if (a === '--warmup') args.warmup = Number(argv[++i]);
    else if (a === '--dtype') args.dtype = argv[++i];
    else rest.push(a);
  }
  if (rest.length !== 1 || !args.shape || args.shape.some((d) => !Number.isInteger(d) || d <= 0)) {
    throw new Error('usage: ort_bench.js model.onnx --shape 1x1x96x96x96 [--threads N --runs N --warmup N --dtype float32|float16]');
  }
  args.model = rest[0];
  return args;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

// Round-to-nearest-even float32 to IEEE half bits, for values in [-1, 1) (no overflow, and
// subnormal results flush to zero, which random inputs of this range never produce).
function halfBits(value) {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const e = ((x >>> 23) & 0xff) - 127 + 15;
  if (e <= 0) return sign;
  const mant = x & 0x7fffff;
  let h = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;
  return h;
}

// A small seeded generator, so every round feeds the same input.
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 4294967296 * 2 - 1;
  };
}

function makeInput(dtype, shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  const next = random(1);
  if (dtype === 'float16') {
    const bits = new Uint16Array(n);
    for (let i = 0; i < n; ++i) bits[i] = halfBits(next());
    return new ort.Tensor('float16', bits, shape);
  }
  if (dtype !== 'float32') throw new Error(`input type ${dtype} is not float32 or float16`);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = next();
  return new ort.Tensor('float32', data, shape);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const created = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
  });
  const meta = session.inputMetadata && session.inputMetadata[0];
  const dtype = args.dtype || (meta && meta.type) || 'float32';
  const feeds = { [session.inputNames[0]]: makeInput(dtype, args.shape) };
  const createMs = Number(process.hrtime.bigint() - created) / 1e6;
  // The first run timed apart, as a cold start (the first warm-up run, else the first timed one).
  let firstMs = -1;
  for (let i = 0; i < args.warmup; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    if (i === 0) firstMs = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  const times = [];
  for (let i = 0; i < args.runs; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(JSON.stringify({
    model: args.model,
    dtype,
    threads: args.threads,
    median_ms: sorted[Math.floor(sorted.length / 2)],
    min_ms: sorted[0],
    times_ms: times,
    create_ms: createMs,
    first_run_ms: firstMs >= 0 ? firstMs : times[0],
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
  }));
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message || e}`);
  process.exit(1);
});
