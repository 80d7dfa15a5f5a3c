// The npm peers of bench/tokenizer_bench.cc on the same corpus files, for
// scripts/bench_tokenizer.sh. Prints one JSON line per result.
//
//   node bench/tokenizer_peers.mjs NODE_DEPS_DIR CORPUS_DIR [REPEAT]
//
// gpt-tokenizer 4.0.0: countTokens (its count-only path); cold = the first
// call in the process, warm = best of REPEAT more. tiktoken 1.0.22 (WASM):
// encode_ordinary (it has no count-only path), same protocol.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [depsDir, corpusDir, repeatArg] = process.argv.slice(2);
const repeat = Number(repeatArg || 3);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const corpora = ['mixed', 'cjk', 'code'];
const texts = Object.fromEntries(
    corpora.map((c) => [c, fs.readFileSync(path.join(corpusDir, `${c}.txt`), 'utf8')]));
const bytes = Object.fromEntries(
    corpora.map((c) => [c, fs.statSync(path.join(corpusDir, `${c}.txt`)).size]));

function emit(impl, encoding, corpus, mode, tokens, t) {
  const b = bytes[corpus];
  console.log(JSON.stringify({
    impl, encoding, corpus, mode, threads: 1, bytes: b, tokens, seconds: t.wall,
    cpu_seconds: t.cpu, mb_per_s: Number((b / t.wall / 1e6).toFixed(2)),
    cpu_mb_per_s: Number((b / t.cpu / 1e6).toFixed(2)),
  }));
}

// Best wall time and best CPU time (process.cpuUsage: all of Node's threads,
// JIT and GC included) over `runs` calls.
function best(runs, fn) {
  const t = { wall: Infinity, cpu: Infinity };
  let r;
  for (let i = 0; i < runs; i++) {
    const w0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    r = fn();
    const c = process.cpuUsage(c0);
    t.wall = Math.min(t.wall, Number(process.hrtime.bigint() - w0) / 1e9);
    t.cpu = Math.min(t.cpu, (c.user + c.system) / 1e6);
  }
  return [r, t];
}

function run(impl, encoding, countFn) {
  for (const corpus of corpora) {
    const text = texts[corpus];
    let [n, t] = best(1, () => countFn(text));
    emit(impl, encoding, corpus, 'count-cold', n, t);
    [n, t] = best(repeat, () => countFn(text));
    emit(impl, encoding, corpus, 'count-warm', n, t);
  }
}

for (const [encoding, mod] of [['o200k_base', 'gpt-tokenizer/encoding/o200k_base'],
                               ['cl100k_base', 'gpt-tokenizer/encoding/cl100k_base']]) {
  const { countTokens } = require(mod);
  run('gpt-tokenizer@4.0.0', encoding, (t) => countTokens(t));
}
const { get_encoding } = require('tiktoken');
for (const encoding of ['o200k_base', 'cl100k_base']) {
  const enc = get_encoding(encoding);
  run('tiktoken@1.0.22-wasm', encoding, (t) => enc.encode_ordinary(t).length);
  enc.free();
}
