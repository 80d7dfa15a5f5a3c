// Turns the JSON lines of tokenizer_bench and tokenizer_peers.mjs into the
// markdown tables of docs/benchmarks.md ("Tokenizers").
//   node bench/tokenizer_report.mjs RESULTS.jsonl
import fs from 'node:fs';

const rows = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const find = (impl, enc, corpus, mode, threads = 1) =>
  rows.find((r) => r.impl.startsWith(impl) && r.encoding === enc && r.corpus === corpus &&
                   r.mode === mode && r.threads === threads);
// CPU-time throughput is the primary figure: on a shared machine wall time
// mostly measures the scheduler. Wall-time ratios are shown alongside.
const f = (x) => (x === undefined ? 'n/a' : x.cpu_mb_per_s.toFixed(1));
const fw = (x) => (x === undefined ? 'n/a' : x.mb_per_s.toFixed(1));
const ratio = (a, b) => (a && b ? `${(a.cpu_mb_per_s / b.cpu_mb_per_s).toFixed(1)}x` : 'n/a');
const ratioWall = (a, b) => (a && b ? `${(a.mb_per_s / b.mb_per_s).toFixed(1)}x` : 'n/a');

const out = [];
out.push('Count-only throughput, one thread, in MB (10^6 bytes of UTF-8 input) per CPU-second; ' +
         'the last two ratio columns use wall-clock time instead:');
out.push('');
out.push('| encoding | corpus | MB | compactor cold | compactor warm | gpt-tokenizer cold | ' +
         'gpt-tokenizer warm | tiktoken WASM warm | vs gpt-tokenizer warm | vs tiktoken WASM | ' +
         'same, wall clock | same count |');
out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|');
for (const enc of ['o200k_base', 'cl100k_base']) {
  for (const corpus of ['mixed', 'cjk', 'code']) {
    const cc = find('compactor', enc, corpus, 'count-cold');
    const cw = find('compactor', enc, corpus, 'count-warm');
    const gc = find('gpt-tokenizer', enc, corpus, 'count-cold');
    const gw = find('gpt-tokenizer', enc, corpus, 'count-warm');
    const tw = find('tiktoken', enc, corpus, 'count-warm');
    const counts = [cw, gw, tw].filter(Boolean).map((r) => r.tokens);
    const same = counts.length === 3 && counts.every((c) => c === counts[0]) ?
        `yes (${counts[0]})` : `NO (${counts.join(' / ')})`;
    out.push(`| ${enc} | ${corpus} | ${cw ? (cw.bytes / 1e6).toFixed(1) : '?'} | ${f(cc)} | ${f(cw)} | ` +
             `${f(gc)} | ${f(gw)} | ${f(tw)} | ${ratio(cw, gw)} | ${ratio(cw, tw)} | ` +
             `${ratioWall(cw, gw)} / ${ratioWall(cw, tw)} | ${same} |`);
  }
}
out.push('');
out.push('Other compactor figures (warm, MB per CPU-second): Encode (ids); the pre-tokenizers ' +
         'alone (the hand-written scanner, then PCRE2 JIT on the upstream pattern). Then Count over ' +
         '~16 KB chunks (split at newlines, like independent messages) on 1 and 2 threads, in MB per ' +
         'wall-clock second, since scaling is about elapsed time:');
out.push('');
out.push('| encoding | corpus | Encode | scanner only | PCRE2 split only | chunked, 1 thread | ' +
         'chunked, 2 threads | wall-clock scaling | CPU time, 2 threads / 1 thread |');
out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const enc of ['o200k_base', 'cl100k_base']) {
  for (const corpus of ['mixed', 'cjk', 'code']) {
    const e = find('compactor', enc, corpus, 'encode-warm');
    const s = find('fast-split-only', enc, corpus, 'split');
    const p = find('pcre2-split-only', enc, corpus, 'split');
    const t1 = find('compactor', enc, corpus, 'count-chunked-warm', 1);
    const t2 = find('compactor', enc, corpus, 'count-chunked-warm', 2);
    out.push(`| ${enc} | ${corpus} | ${f(e)} | ${f(s)} | ${f(p)} | ${fw(t1)} | ${fw(t2)} | ` +
             `${ratioWall(t2, t1)} | ` +
             `${t1 && t2 ? (t2.cpu_seconds / t1.cpu_seconds).toFixed(2) : 'n/a'} |`);
  }
}
const loads = rows.filter((r) => r.mode === 'load');
if (loads.length) {
  out.push('');
  out.push('Vocabulary load (read, sha256, parse, build tables): ' +
           loads.map((r) => `${r.encoding} ${(r.seconds * 1000).toFixed(0)} ms`).join(', ') + '.');
}
console.log(out.join('\n'));
