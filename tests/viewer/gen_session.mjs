// Writes a pi session (JSONL v3) of N entries for the viewer's browser test:
// a main line of user / assistant / tool-result turns with a side branch
// every 400 entries (the first one near the top), a compaction every 4,000
// entries, a branch summary and labels. Deterministic: same N, same bytes.
//   node gen_session.mjs N OUT ID
import {writeFileSync} from 'node:fs';

const [n, out, sessionId] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const lines = [];
const t0 = Date.UTC(2026, 0, 2, 9, 0, 0);
let seq = 0;
const nextId = () => (0x10000000 + seq++).toString(16);
const ts = (k) => new Date(t0 + k * 1000).toISOString();
let count = 0;
const add = (e) => { lines.push(JSON.stringify(e)); count++; return e.id; };

lines.push(JSON.stringify({type: 'session', version: 3, id: sessionId, timestamp: ts(0), cwd: '/home/dev/big'}));
let parent = add({type: 'model_change', id: nextId(), parentId: null, timestamp: ts(1),
  provider: 'anthropic', modelId: 'claude-sonnet-4-5'});

const user = (p, k, text) => add({type: 'message', id: nextId(), parentId: p, timestamp: ts(k),
  message: {role: 'user', content: [{type: 'text', text}], timestamp: t0 + k * 1000}});
const assistant = (p, k, text) => add({type: 'message', id: nextId(), parentId: p, timestamp: ts(k),
  message: {role: 'assistant', content: [{type: 'text', text}], api: 'anthropic-messages',
    provider: 'anthropic', model: 'claude-sonnet-4-5',
    usage: {input: 1000 + k, output: 40, cacheRead: 0, cacheWrite: 0, totalTokens: 1040 + k,
      cost: {input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0}},
    stopReason: 'stop', timestamp: t0 + k * 1000}});

let k = 2;
let lastCompactionKept = null;
const mainIds = [];
while (count < n) {
  const step = count;
  if (step > 0 && step % 4000 === 0 && mainIds.length > 10) {
    const kept = mainIds[mainIds.length - 6];
    parent = add({type: 'compaction', id: nextId(), parentId: parent, timestamp: ts(k++),
      summary: `## Goal\nGenerated compaction at entry ${step}.\n\n## Progress\n- turns up to ${step} summarized`,
      firstKeptEntryId: kept, tokensBefore: 50000 + step,
      details: {readFiles: [`src/part${step}.ts`], modifiedFiles: [`src/out${step}.ts`]}, fromHook: false});
    lastCompactionKept = kept;
    continue;
  }
  if ((step === 10 || step % 400 === 0) && step > 0) {
    // A side branch of five entries under the current leaf, then a branch
    // summary on the main line: `parent` becomes a branch point.
    let side = parent;
    for (let j = 0; j < 5 && count < n; j++) side = (j % 2 ? assistant : user)(side, k++, `side branch ${step}.${j}: try another approach`);
    if (count >= n) break;
    parent = add({type: 'branch_summary', id: nextId(), parentId: parent, timestamp: ts(k++), fromId: side,
      summary: `The user explored a side branch at ${step} and came back.`});
    continue;
  }
  if (step % 997 === 0 && step > 0) {
    parent = add({type: 'label', id: nextId(), parentId: parent, timestamp: ts(k++),
      targetId: mainIds[mainIds.length - 1], label: `milestone-${step}`});
    continue;
  }
  const turn = step % 2 === 0 ? user : assistant;
  parent = turn(parent, k++, `${turn === user ? 'Please handle' : 'Handled'} task ${step}: ` +
    'update the parser and run the tests again');
  mainIds.push(parent);
}
void lastCompactionKept;
writeFileSync(out, lines.join('\n') + '\n');
console.log(`${count} entries`);
