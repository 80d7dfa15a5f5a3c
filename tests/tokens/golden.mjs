// Golden token ids from tiktoken 1.0.22 (OpenAI's Rust core compiled to WASM),
// encode_ordinary, for tests/tokens/golden_test.cc.
//
//   node golden.mjs NODE_DEPS_DIR ENCODING IN OUT
//
// IN: documents as [uint32 LE byte length][bytes]...; each is decoded as
// UTF-8 the way Node reads a file (WHATWG: a U+FFFD per maximal invalid
// subpart). OUT: per document [uint32 LE count][uint32 LE ids]...
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [depsDir, encoding, inPath, outPath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { get_encoding } = require('tiktoken');
const version = JSON.parse(
    fs.readFileSync(path.join(depsDir, 'node_modules/tiktoken/package.json'), 'utf8')).version;
if (version !== '1.0.22') {
  console.error(`expected tiktoken 1.0.22, found ${version}`);
  process.exit(3);
}
const enc = get_encoding(encoding);
const input = fs.readFileSync(inPath);
// ignoreBOM keeps a leading U+FEFF, as fs.readFileSync(path, 'utf8') does.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const chunks = [];
for (let off = 0; off < input.length;) {
  const len = input.readUInt32LE(off);
  off += 4;
  const text = decoder.decode(input.subarray(off, off + len));
  off += len;
  const ids = enc.encode_ordinary(text);
  const buf = Buffer.alloc(4 + 4 * ids.length);
  buf.writeUInt32LE(ids.length, 0);
  for (let i = 0; i < ids.length; i++) buf.writeUInt32LE(ids[i], 4 + 4 * i);
  chunks.push(buf);
}
enc.free();
fs.writeFileSync(outPath, Buffer.concat(chunks));
