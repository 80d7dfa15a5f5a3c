// Writes the JavaScript expectations for tests/util/utf8_js_test.cc: for each
// byte string, what Node's TextDecoder (the WHATWG UTF-8 decoder, which pi's
// file reads go through) makes of it: the string's length (UTF-16 code units)
// and its UTF-8 encoding after the repair.
//
//   node scripts/gen_utf8_js_cases.mjs > tests/util/utf8_js_cases.txt
//
// The test reads the committed file: it does not need node.
//
// One case per line: `INPUT_HEX LENGTH REPAIRED_HEX` ("-" for empty). The cases
// are edge cases by hand, then random byte strings from a fixed seed, biased to
// bytes that start, continue or break UTF-8 sequences.
const hand = [
  '', '41', 'c3a9', 'e282ac', 'f09f9880', 'c3', 'e282', 'e2', 'f09f98', 'f09f', 'f0',
  '80', 'bf', '8080', 'c0af', 'c1bf', 'e080af', 'e09f80', 'e0a080', 'eda080', 'ed9fbf',
  'edbfbf', 'eeb080', 'f08f8080', 'f0908080', 'f48fbfbf', 'f4908080', 'f5808080', 'f8', 'fe', 'ff',
  'e1800041', 'e180e180', 'f09f98e282ac', 'c3c3a9', '61ff62', 'c2', 'c280', 'dfbf',
  'efbfbd', 'efbbbf41', 'f09f9880f09f98', '7f', '00', 'ed', 'eda0', 'f4', 'f490',
];
let seed = 0x2545f491;
function rand() {
  // xorshift32: deterministic across Node versions.
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed;
}
const pool = [0x41, 0x7a, 0x20, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe1,
  0xed, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff];
const random = [];
for (let i = 0; i < 400; i++) {
  const n = 1 + (rand() % 12);
  const bytes = [];
  for (let k = 0; k < n; k++) {
    bytes.push(rand() % 4 === 0 ? rand() % 256 : pool[rand() % pool.length]);
  }
  random.push(Buffer.from(bytes).toString('hex'));
}
// ignoreBOM keeps a leading U+FEFF as Buffer#toString does (pi reads files with
// readFileSync(path, 'utf8')); both must agree on every case.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
for (const hex of [...hand, ...random]) {
  const bytes = Buffer.from(hex, 'hex');
  const s = decoder.decode(bytes);
  if (s !== bytes.toString('utf8')) throw new Error(`TextDecoder and Buffer disagree on ${hex}`);
  const input = hex;
  const repaired = Buffer.from(s, 'utf8').toString('hex');
  console.log(`${input || '-'} ${s.length} ${repaired || '-'}`);
}
