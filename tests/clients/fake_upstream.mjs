#!/usr/bin/env node
// A fake model upstream on loopback that speaks the three model APIs the way
// the real services do (Anthropic Messages, OpenAI Responses, OpenAI Chat
// Completions; streamed as SSE with the real event sequences, usage and stop
// reasons, and not streamed), and plays a scripted multi-turn tool-using task.
// Real agent clients (Codex CLI, Claude Code, pi) and the official SDKs run
// against it directly or through `compactor serve` (tests/clients/run.sh).
//
// Why node (ESM, no framework) and not C++: the clients under test and the
// SDKs are node programs installed from npm anyway, so node is there whenever
// this harness can run at all; node's http module streams SSE with no extra
// dependency; and the fake must stay independent of the library it helps to
// test (a C++ fake would share cpp-httplib, the JSON code and the build with
// the proxy).
//
// The task is decided from the conversation each request carries, never from
// server-side state, so it works with and without a proxy in between and after
// anyone (the proxy, the client itself) compacted the history: every tool call
// carries a marker step-NN, and the next step is one past the highest marker
// found anywhere in the request (tool calls, results, summaries, compaction
// items). Steps: 1 creates secret.txt with a random value (printing nothing),
// 2..N-1 alternately write notes/step-NN.txt (padding, with the client's own
// file-writing tool where it has one) and cat it back (a large tool output),
// N runs `cat secret.txt`, then the answer is the value read from that newest
// tool result (or, once a compaction dropped it, from the newest text quoting
// it, such as the summary): "The secret value is XXXXXXXXXXXX."
//
//   node fake_upstream.mjs [--port P] [--log FILE] [--steps N] [--pad CHARS]
//       [--overflow-tokens T] [--overflow-mode http|stream]
//       [--remote-compaction] [--workspace DIR] [--max-seconds S]
//       [--prompt TEXT] [--find TEXT]
//
// Prints "listening on http://127.0.0.1:PORT" on stdout once ready. Every
// request is appended to --log as one JSON line (see recordRequest). Exits on
// SIGTERM/SIGINT, or on its own after --max-seconds (default 3600) so that a
// crashed runner never leaves it behind.

import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import {spawnSync} from 'node:child_process';

// ---------------------------------------------------------------- options

function parseArgs(argv) {
  const o = {
    port: 0, log: null, steps: 6, pad: 6000, overflowTokens: 0, overflowMode: 'http',
    remoteCompaction: false, maxSeconds: 3600, workspace: '.', prompt: null, find: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--port') o.port = Number(next());
    else if (a === '--log') o.log = next();
    else if (a === '--steps') o.steps = Math.max(2, Number(next()));
    else if (a === '--pad') o.pad = Math.max(100, Number(next()));
    else if (a === '--overflow-tokens') o.overflowTokens = Number(next());
    else if (a === '--overflow-mode') o.overflowMode = next();
    else if (a === '--remote-compaction') o.remoteCompaction = true;
    else if (a === '--max-seconds') o.maxSeconds = Number(next());
    else if (a === '--workspace') o.workspace = next();
    else if (a === '--prompt') o.prompt = next();
    else if (a === '--find') o.find = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!['http', 'stream'].includes(o.overflowMode)) throw new Error('--overflow-mode: http or stream');
  return o;
}

const opts = parseArgs(process.argv.slice(2));

// ------------------------------------------------------------- the script

const MARKER = /\bstep-(\d{2,})\b/g;
const SECRET = /\b[0-9a-f]{12}\b/;
const pad2 = (n) => String(n).padStart(2, '0');

// Deterministic padding for step n: numbered lines, about opts.pad chars.
function padText(n) {
  const lines = [];
  let size = 0;
  for (let i = 1; size < opts.pad; i++) {
    const line = `step-${pad2(n)} line ${i}: the quick brown fox jumps over the lazy dog ${(i * 7919 + n) % 10007}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n') + '\n';
}

// What step n does: {kind: 'shell', command, expect} or {kind: 'write', path, content}.
// `expect` is a string the step's tool output must contain (null: unchecked).
function stepPlan(n) {
  const tag = `step-${pad2(n)}`;
  if (n === 1) {
    return {kind: 'shell', expect: `${tag} ok`,
      command: `od -An -N6 -tx1 /dev/urandom | tr -d ' \\n' > secret.txt && mkdir -p notes && echo ${tag} ok`};
  }
  if (n === opts.steps) {
    return {kind: 'shell', expect: tag, command: `echo ${tag}; cat secret.txt; echo`};
  }
  if (n % 2 === 0) return {kind: 'write', path: `notes/${tag}.txt`, content: padText(n), expect: null};
  const prev = `step-${pad2(n - 1)}`;
  return {kind: 'shell', expect: padText(n - 1).split('\n')[0],
    command: `echo ${tag}; cat notes/${prev}.txt`};
}

// ----------------------------------------------------- normalized requests
//
// Each API's request becomes {system, tools: [{name, schema}], messages:
// [{role, parts: [{type: 'text', text} | {type: 'call', id, name, args, raw}
// | {type: 'result', id, text}]}], extras: [{type, ...}]}.

const textOf = (c) => {
  if (c == null) return '';
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map(textOf).join('\n');
  if (typeof c === 'object') {
    if (typeof c.text === 'string') return c.text;
    if (c.content !== undefined) return textOf(c.content);
    if (typeof c.output === 'string') return c.output;
  }
  return '';
};

function parseJsonMaybe(s) {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

function normalizeAnthropic(b) {
  const conv = {system: textOf(b.system), tools: [], messages: [], extras: []};
  for (const t of b.tools || []) conv.tools.push({name: t.name, schema: t.input_schema || {}});
  for (const m of b.messages || []) {
    const parts = [];
    const content = typeof m.content === 'string' ? [{type: 'text', text: m.content}] : m.content || [];
    for (const c of content) {
      if (c.type === 'text') parts.push({type: 'text', text: c.text});
      else if (c.type === 'tool_use') parts.push({type: 'call', id: c.id, name: c.name, args: c.input, raw: JSON.stringify(c.input)});
      else if (c.type === 'tool_result') parts.push({type: 'result', id: c.tool_use_id, text: textOf(c.content)});
      else parts.push({type: 'text', text: textOf(c)});
    }
    conv.messages.push({role: m.role, parts});
  }
  return conv;
}

function normalizeResponses(b) {
  const conv = {system: textOf(b.instructions), tools: [], messages: [], extras: []};
  for (const t of b.tools || []) {
    if (t.type === 'function') conv.tools.push({name: t.name, schema: t.parameters || {}});
    else conv.tools.push({name: t.name || t.type, schema: {}, type: t.type});
  }
  const input = typeof b.input === 'string' ? [{type: 'message', role: 'user', content: b.input}] : b.input || [];
  for (const it of input) {
    const type = it.type || (it.role ? 'message' : '');
    if (type === 'message') {
      if (it.role === 'system' || it.role === 'developer') {
        conv.system += '\n' + textOf(it.content);
        conv.messages.push({role: it.role, parts: [{type: 'text', text: textOf(it.content)}]});
      } else {
        conv.messages.push({role: it.role, parts: [{type: 'text', text: textOf(it.content)}]});
      }
    } else if (type === 'function_call') {
      conv.messages.push({role: 'assistant', parts: [{type: 'call', id: it.call_id, name: it.name, args: parseJsonMaybe(it.arguments), raw: it.arguments}]});
    } else if (type === 'function_call_output') {
      conv.messages.push({role: 'tool', parts: [{type: 'result', id: it.call_id, text: textOf(it.output)}]});
    } else if (type === 'custom_tool_call') {
      conv.messages.push({role: 'assistant', parts: [{type: 'call', id: it.call_id, name: it.name, args: it.input, raw: it.input}]});
    } else if (type === 'custom_tool_call_output') {
      conv.messages.push({role: 'tool', parts: [{type: 'result', id: it.call_id, text: textOf(it.output)}]});
    } else {
      conv.extras.push(it);
    }
  }
  return conv;
}

function normalizeChat(b) {
  const conv = {system: '', tools: [], messages: [], extras: []};
  for (const t of b.tools || []) conv.tools.push({name: t.function?.name, schema: t.function?.parameters || {}});
  for (const m of b.messages || []) {
    if (m.role === 'system' || m.role === 'developer') {
      conv.system += textOf(m.content) + '\n';
      continue;
    }
    const parts = [];
    if (m.role === 'tool') {
      parts.push({type: 'result', id: m.tool_call_id, text: textOf(m.content)});
    } else {
      const text = textOf(m.content);
      if (text) parts.push({type: 'text', text});
      for (const tc of m.tool_calls || []) {
        parts.push({type: 'call', id: tc.id, name: tc.function?.name, args: parseJsonMaybe(tc.function?.arguments), raw: tc.function?.arguments});
      }
    }
    conv.messages.push({role: m.role, parts});
  }
  return conv;
}

// -------------------------------------------------------- deciding a reply

// The state a compaction item carries (base64 of JSON; opaque to clients).
const COMPACTION_PREFIX = 'fake-compaction:';
function encodeCompaction(state) {
  return Buffer.from(COMPACTION_PREFIX + JSON.stringify(state)).toString('base64');
}
function decodeCompaction(s) {
  try {
    const text = Buffer.from(String(s), 'base64').toString('utf8');
    return text.startsWith(COMPACTION_PREFIX) ? JSON.parse(text.slice(COMPACTION_PREFIX.length)) : null;
  } catch {
    return null;
  }
}

function highestStep(text) {
  let max = 0;
  for (const m of text.matchAll(MARKER)) max = Math.max(max, Number(m[1]));
  return max;
}

// The highest step marker anywhere in the conversation, compaction items included.
function stepReached(conv) {
  let max = 0;
  for (const m of conv.messages) {
    for (const p of m.parts) max = Math.max(max, highestStep(p.text || p.raw || ''));
  }
  for (const x of conv.extras) {
    const st = decodeCompaction(x.encrypted_content);
    if (st) max = Math.max(max, st.step || 0);
    max = Math.max(max, highestStep(JSON.stringify(x)));
  }
  return max;
}

function lastUserText(conv) {
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const m = conv.messages[i];
    if (m.role !== 'user') continue;
    const texts = m.parts.filter((p) => p.type === 'text');
    return texts.length ? texts[texts.length - 1].text : '';
  }
  return '';
}

// A request asking for a summary of the conversation: the proxy's summarizer,
// pi's compaction, Claude Code's compaction, Codex's checkpoint compaction.
// The instruction is the request's last message: a user message earlier in
// the conversation that mentions a summary (a proxy's compaction summary
// followed by the kept tool calls and results) does not make it one.
function isSummaryRequest(conv) {
  const final = conv.messages[conv.messages.length - 1];
  const last = final && final.role === 'user' ? lastUserText(conv) : '';
  // compactor serve's summary message (its compaction, e.g. Codex's
  // compaction item expanded by the proxy) is context to go on from, not an
  // instruction to summarize, even when nothing follows it.
  if (/^Earlier messages of this conversation were compacted into this summary:/.test(last)) return false;
  if (/summar|context checkpoint|checkpoint compaction/i.test(last)) return true;
  return /summari[sz]/i.test(conv.system.slice(0, 400));
}

function newest(conv, type) {
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const parts = conv.messages[i].parts;
    for (let j = parts.length - 1; j >= 0; j--) if (parts[j].type === type) return parts[j];
  }
  return null;
}

function newestSecret(conv) {
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const parts = conv.messages[i].parts;
    for (let j = parts.length - 1; j >= 0; j--) {
      const m = SECRET.exec(parts[j].text || '');
      if (m) return m;
    }
  }
  return null;
}

function findTool(conv, names) {
  for (const name of names) {
    const t = conv.tools.find((x) => x.name === name);
    if (t) return t;
  }
  return null;
}

const props = (tool) => tool.schema?.properties || {};

// A tool call that runs `command` with the client's shell tool.
function shellCall(conv, command) {
  const t = findTool(conv, ['bash', 'Bash', 'shell', 'exec_command', 'shell_command', 'local_shell']);
  if (!t) return null;
  const p = props(t);
  if (p.cmd) return {name: t.name, args: {cmd: command}};
  if (p.command && p.command.type === 'array') return {name: t.name, args: {command: ['bash', '-lc', command]}};
  const args = {command};
  if (p.description) args.description = 'Run a workspace step';
  return {name: t.name, args};
}

// A tool call that writes a file with the client's own write tool, else a shell heredoc.
function writeCall(conv, path, content) {
  const t = findTool(conv, ['write', 'Write', 'write_file']);
  if (t) {
    const p = props(t);
    if (p.file_path) return {name: t.name, args: {file_path: `${opts.workspace}/${path}`, content}};
    return {name: t.name, args: {path, content}};
  }
  return shellCall(conv, `mkdir -p notes && cat > ${path} <<'FAKE_EOF'\n${content}FAKE_EOF\necho wrote ${path}`);
}

const emitted = new Map(); // call id -> {name, raw, step}

// The reply: {kind, text?, call?: {id, name, args, raw}, step?, compaction?}.
function decide(conv, api, body) {
  const input = Array.isArray(body.input) ? body.input : [];
  if (input.length && input[input.length - 1]?.type === 'compaction_trigger') {
    return {kind: 'compaction', step: stepReached(conv)};
  }
  if (isSummaryRequest(conv)) return {kind: 'summary', text: summaryText(stepReached(conv)), step: stepReached(conv)};
  if (!conv.tools.length) return {kind: 'aux', text: 'Workspace steps'};
  const reached = stepReached(conv);
  if (reached >= opts.steps) {
    // The newest tool result; when a compaction dropped it, the newest text
    // that still quotes the value (the summary), as a model would read it.
    const res = newest(conv, 'result');
    const m = (res && SECRET.exec(res.text)) || newestSecret(conv);
    return {kind: 'final', step: reached, text: m ? `The secret value is ${m[0]}.` : 'I could not read the secret value.'};
  }
  const n = reached + 1;
  const plan = stepPlan(n);
  const call = plan.kind === 'write' ? writeCall(conv, plan.path, plan.content) : shellCall(conv, plan.command);
  if (!call) return {kind: 'final', step: reached, text: 'I have no tool to run the workspace steps with.'};
  call.id = (api === 'anthropic' ? 'toolu_fake_' : 'call_fake_') + pad2(n);
  call.raw = JSON.stringify(call.args);
  emitted.set(call.id, {name: call.name, raw: call.raw, step: n, expect: plan.expect});
  return {kind: 'call', step: n, call, text: `Running step-${pad2(n)}.`};
}

function summaryText(step) {
  const done = [];
  for (let i = 1; i <= step; i++) done.push(`step-${pad2(i)}`);
  return [
    '## Goal',
    'Run the numbered workspace steps one by one, then report the value stored in secret.txt.',
    '',
    '## Progress',
    `### Done`,
    `- [x] ${done.length ? done.join(', ') : 'nothing yet'}`,
    '',
    '## Key Decisions',
    '- **secret.txt**: created at step-01, read only at the last step',
    '',
    '## Next Steps',
    `1. Continue with step-${pad2(step + 1)}`,
    '',
  ].join('\n');
}

// -------------------------------------------------------------- recording

const estTokens = (bytes) => Math.ceil(bytes / 4);
let seq = 0;

// What the newest tool call/result look like against what this fake emitted.
function checkNewest(conv) {
  const call = newest(conv, 'call');
  const result = newest(conv, 'result');
  const out = {call: null, result: null, missing_calls: 0, present_calls: 0};
  if (call) {
    const mine = emitted.get(call.id);
    out.call = {id: call.id, name: call.name, step: mine?.step ?? null,
      unchanged: mine ? mine.name === call.name && sameArgs(mine.raw, call.raw) : null};
  }
  if (result) {
    const mine = emitted.get(result.id);
    const expect = mine?.step === opts.steps ? SECRET : mine?.expect;
    out.result = {id: result.id, bytes: Buffer.byteLength(result.text || ''), step: mine?.step ?? null,
      ok: !mine ? null : expect == null ? true : expect instanceof RegExp ? expect.test(result.text) : result.text.includes(expect)};
  }
  // Calls this fake emitted before the newest one, and how many of them the
  // request still carries: fewer means someone cut the history.
  const ids = new Set();
  for (const m of conv.messages) for (const p of m.parts) if (p.type === 'call') ids.add(p.id);
  const newestStep = out.call?.step ?? 0;
  for (const [id, e] of emitted) {
    if (e.step >= newestStep) continue;
    if (ids.has(id)) out.present_calls++;
    else out.missing_calls++;
  }
  return out;
}

// The ids of tool calls without a result and results without a call, or ''.
function unpaired(conv) {
  const calls = new Set();
  const results = new Set();
  for (const m of conv.messages) {
    for (const p of m.parts) {
      if (p.type === 'call') calls.add(p.id);
      else if (p.type === 'result') results.add(p.id);
    }
  }
  const bad = [...calls].filter((id) => !results.has(id)).concat([...results].filter((id) => !calls.has(id)));
  return bad.join(', ');
}

// Arguments are unchanged when byte-identical, or (Anthropic sends objects,
// which a client may re-serialize with another key order) structurally equal.
function sameArgs(a, b) {
  if (a === b) return true;
  const x = parseJsonMaybe(a);
  const y = parseJsonMaybe(b);
  return x !== null && y !== null && canonical(x) === canonical(y);
}
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

// The least the client's full history must weigh (bytes): the arguments of
// every call this fake emitted up to the newest one.
function historyFloor(newestStep) {
  let sum = 0;
  for (const e of emitted.values()) if (e.step <= newestStep) sum += Buffer.byteLength(e.raw);
  return sum;
}

// The evidence of the proxy's strategies other than summary (check.mjs):
// masked_results, the tool results whose content is serve's mask placeholder
// (--strategy mask); prompt_before_summary, whether the user's prompt
// (--prompt) is in a user message ahead of serve's summary message (null: no
// summary message; --strategy user-prompts); found_text, whether the request
// holds the text given with --find anywhere (the notes file of --strategy
// notes).
const MASKED = /^\[Masked output of .+: \d+ tokens\. Run the call again if you need it\.\]$/;
const PROXY_SUMMARY_MARK = 'Earlier messages of this conversation were compacted into this summary';
function strategyEvidence(conv, raw) {
  let masked = 0;
  let promptSeen = false;
  let before = null;
  for (const m of conv.messages) {
    for (const p of m.parts) {
      if (p.type === 'result' && MASKED.test((p.text || '').trim())) masked++;
      if (p.type !== 'text' || m.role !== 'user' || before !== null) continue;
      if (p.text.includes(PROXY_SUMMARY_MARK)) before = promptSeen;
      else if (opts.prompt && p.text.includes(opts.prompt)) promptSeen = true;
    }
  }
  const out = {masked_results: masked, prompt_before_summary: opts.prompt ? before : undefined};
  if (opts.find) out.found_text = raw.includes(opts.find);
  return out;
}

function recordRequest(rec) {
  if (!opts.log) return;
  fs.appendFileSync(opts.log, JSON.stringify(rec) + '\n');
}

// ------------------------------------------------------------ HTTP basics

function decodeBody(buf, encoding) {
  const enc = (encoding || '').toLowerCase().trim();
  if (!enc || enc === 'identity') return buf;
  if (enc === 'gzip' || enc === 'x-gzip') return zlib.gunzipSync(buf);
  if (enc === 'deflate') return zlib.inflateSync(buf);
  if (enc === 'br') return zlib.brotliDecompressSync(buf);
  if (enc === 'zstd') {
    // node 20 has no zstd; the zstd command line tool does (Debian: zstd).
    const r = spawnSync('zstd', ['-dc'], {input: buf, maxBuffer: 256 << 20});
    if (r.status === 0) return r.stdout;
    throw new Error('zstd request body and no zstd tool to decode it');
  }
  throw new Error(`unsupported content-encoding ${enc}`);
}

function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers});
  res.end(body);
}

function startSse(res, headers = {}) {
  res.writeHead(200, {'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers});
}

const sse = (res, event, data) => res.write((event ? `event: ${event}\n` : '') + `data: ${JSON.stringify(data)}\n\n`);

// Text in a few deltas, the way the services stream it.
function chunks(s, n = 3) {
  if (!s) return [''];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const rid = (prefix) => prefix + crypto.randomBytes(12).toString('hex');

// --------------------------------------------------------------- Anthropic

function anthropicOverflowMessage(ctx) {
  return `prompt is too long: ${ctx.tokens} tokens > ${ctx.limit} maximum`;
}

function anthropicContent(reply) {
  const content = [];
  if (reply.text) content.push({type: 'text', text: reply.text});
  if (reply.call) content.push({type: 'tool_use', id: reply.call.id, name: reply.call.name, input: reply.call.args});
  return content;
}

function serveAnthropic(req, res, body, ctx) {
  const reply = ctx.reply;
  const model = body.model || 'fake-model';
  const inTok = ctx.tokens;
  const outTok = estTokens(JSON.stringify(anthropicContent(reply)).length);
  const stop = reply.call ? 'tool_use' : 'end_turn';
  const headers = {'request-id': rid('req_'), 'anthropic-organization-id': 'fake-org'};
  if (ctx.overflow && ctx.overflowMode === 'http') {
    return sendJson(res, 400, {type: 'error', error: {type: 'invalid_request_error', message: anthropicOverflowMessage(ctx)}, request_id: headers['request-id']}, headers);
  }
  const usage = {input_tokens: inTok, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outTok};
  const id = rid('msg_');
  if (!body.stream) {
    return sendJson(res, 200, {id, type: 'message', role: 'assistant', model, content: anthropicContent(reply),
      stop_reason: stop, stop_sequence: null, usage}, headers);
  }
  startSse(res, headers);
  sse(res, 'message_start', {type: 'message_start', message: {id, type: 'message', role: 'assistant', model, content: [],
    stop_reason: null, stop_sequence: null, usage: {...usage, output_tokens: 1}}});
  if (ctx.overflow) {
    sse(res, 'error', {type: 'error', error: {type: 'invalid_request_error', message: anthropicOverflowMessage(ctx)}});
    return res.end();
  }
  sse(res, 'ping', {type: 'ping'});
  let index = 0;
  if (reply.text) {
    sse(res, 'content_block_start', {type: 'content_block_start', index, content_block: {type: 'text', text: ''}});
    for (const c of chunks(reply.text)) sse(res, 'content_block_delta', {type: 'content_block_delta', index, delta: {type: 'text_delta', text: c}});
    sse(res, 'content_block_stop', {type: 'content_block_stop', index});
    index++;
  }
  if (reply.call) {
    sse(res, 'content_block_start', {type: 'content_block_start', index, content_block: {type: 'tool_use', id: reply.call.id, name: reply.call.name, input: {}}});
    for (const c of chunks(reply.call.raw, 4)) sse(res, 'content_block_delta', {type: 'content_block_delta', index, delta: {type: 'input_json_delta', partial_json: c}});
    sse(res, 'content_block_stop', {type: 'content_block_stop', index});
  }
  sse(res, 'message_delta', {type: 'message_delta', delta: {stop_reason: stop, stop_sequence: null}, usage: {output_tokens: outTok}});
  sse(res, 'message_stop', {type: 'message_stop'});
  res.end();
}

// ----------------------------------------------------------- OpenAI shared

function openaiError(message, code, param) {
  return {error: {message, type: 'invalid_request_error', param: param ?? null, code: code ?? null}};
}

// ---------------------------------------------------------------- Responses

function responsesOutput(reply) {
  const out = [];
  if (reply.kind === 'compaction') {
    out.push({id: rid('cmp_'), type: 'compaction',
      encrypted_content: encodeCompaction({step: reply.step, summary: summaryText(reply.step)})});
    return out;
  }
  if (reply.text) {
    out.push({id: rid('msg_'), type: 'message', status: 'completed', role: 'assistant',
      content: [{type: 'output_text', text: reply.text, annotations: []}]});
  }
  if (reply.call) {
    out.push({id: rid('fc_'), type: 'function_call', status: 'completed', call_id: reply.call.id,
      name: reply.call.name, arguments: reply.call.raw});
  }
  return out;
}

function responseObject(body, id, status, output, usage, error = null) {
  return {id, object: 'response', created_at: Math.floor(Date.now() / 1000), status, error, incomplete_details: null,
    instructions: body.instructions ?? null, max_output_tokens: body.max_output_tokens ?? null, model: body.model || 'fake-model',
    output, parallel_tool_calls: body.parallel_tool_calls ?? true, previous_response_id: null,
    reasoning: body.reasoning ?? null, store: body.store ?? false, temperature: 1, text: {format: {type: 'text'}},
    tool_choice: body.tool_choice ?? 'auto', tools: [], top_p: 1, truncation: 'disabled', usage, metadata: {}};
}

function responsesUsage(inTok, outTok) {
  return {input_tokens: inTok, input_tokens_details: {cached_tokens: 0}, output_tokens: outTok,
    output_tokens_details: {reasoning_tokens: 0}, total_tokens: inTok + outTok};
}

const RESPONSES_OVERFLOW = 'Your input exceeds the context window of this model. Please adjust your input and try again.';

function serveResponses(req, res, body, ctx) {
  const reply = ctx.reply;
  const headers = {'x-request-id': rid('req_'), 'openai-processing-ms': '1'};
  if (ctx.overflow && ctx.overflowMode === 'http') {
    return sendJson(res, 400, openaiError(RESPONSES_OVERFLOW, 'context_length_exceeded', 'input'), headers);
  }
  const output = responsesOutput(reply);
  const usage = responsesUsage(ctx.tokens, estTokens(JSON.stringify(output).length));
  const id = rid('resp_');
  if (!body.stream) return sendJson(res, 200, responseObject(body, id, 'completed', output, usage), headers);
  startSse(res, headers);
  let n = 0;
  const ev = (type, data) => sse(res, type, {type, sequence_number: n++, ...data});
  ev('response.created', {response: responseObject(body, id, 'in_progress', [], null)});
  ev('response.in_progress', {response: responseObject(body, id, 'in_progress', [], null)});
  if (ctx.overflow) {
    ev('response.failed', {response: responseObject(body, id, 'failed', [], null,
      {code: 'context_length_exceeded', message: RESPONSES_OVERFLOW})});
    return res.end();
  }
  output.forEach((item, output_index) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      ev('response.output_item.added', {output_index, item: {...item, status: 'in_progress', content: []}});
      ev('response.content_part.added', {item_id: item.id, output_index, content_index: 0, part: {type: 'output_text', text: '', annotations: []}});
      for (const c of chunks(text)) ev('response.output_text.delta', {item_id: item.id, output_index, content_index: 0, delta: c, logprobs: []});
      ev('response.output_text.done', {item_id: item.id, output_index, content_index: 0, text, logprobs: []});
      ev('response.content_part.done', {item_id: item.id, output_index, content_index: 0, part: {type: 'output_text', text, annotations: []}});
    } else if (item.type === 'function_call') {
      ev('response.output_item.added', {output_index, item: {...item, status: 'in_progress', arguments: ''}});
      for (const c of chunks(item.arguments, 4)) ev('response.function_call_arguments.delta', {item_id: item.id, output_index, delta: c});
      ev('response.function_call_arguments.done', {item_id: item.id, output_index, arguments: item.arguments});
    } else {
      ev('response.output_item.added', {output_index, item});
    }
    ev('response.output_item.done', {output_index, item});
  });
  ev('response.completed', {response: responseObject(body, id, 'completed', output, usage)});
  res.end();
}

// POST /v1/responses/compact: the input, compacted: the user messages kept
// and one compaction item standing for the rest (what the service returns).
function serveResponsesCompact(req, res, body, ctx) {
  if (!opts.remoteCompaction) return sendJson(res, 404, openaiError('Invalid URL (POST /v1/responses/compact)', null, null));
  const step = stepReached(ctx.conv);
  const input = Array.isArray(body.input) ? body.input : [];
  const kept = input.filter((it) => (it.type || 'message') === 'message' && it.role === 'user');
  const output = [...kept, {id: rid('cmp_'), type: 'compaction', encrypted_content: encodeCompaction({step, summary: summaryText(step)})}];
  sendJson(res, 200, {id: rid('resp_'), object: 'response.compaction', created_at: Math.floor(Date.now() / 1000), output,
    usage: responsesUsage(ctx.tokens, 100)});
}

// -------------------------------------------------------- Chat Completions

function chatOverflowMessage(ctx) {
  return `This model's maximum context length is ${ctx.limit} tokens. However, your messages resulted in ${ctx.tokens} tokens. Please reduce the length of the messages.`;
}

function serveChat(req, res, body, ctx) {
  const reply = ctx.reply;
  const model = body.model || 'fake-model';
  const headers = {'x-request-id': rid('req_')};
  if (ctx.overflow && ctx.overflowMode === 'http') {
    return sendJson(res, 400, openaiError(chatOverflowMessage(ctx), 'context_length_exceeded', 'messages'), headers);
  }
  const id = rid('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const finish = reply.call ? 'tool_calls' : 'stop';
  const toolCalls = reply.call ? [{id: reply.call.id, type: 'function', function: {name: reply.call.name, arguments: reply.call.raw}}] : undefined;
  const outTok = estTokens((reply.text || '').length + (reply.call?.raw.length || 0));
  const usage = {prompt_tokens: ctx.tokens, completion_tokens: outTok, total_tokens: ctx.tokens + outTok};
  if (!body.stream) {
    const message = {role: 'assistant', content: reply.text ?? null, refusal: null};
    if (toolCalls) message.tool_calls = toolCalls;
    return sendJson(res, 200, {id, object: 'chat.completion', created, model, choices: [{index: 0, message, logprobs: null, finish_reason: finish}],
      usage, system_fingerprint: 'fp_fake'}, headers);
  }
  startSse(res, headers);
  const chunk = (choices, extra = {}) => sse(res, null, {id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices, ...extra});
  chunk([{index: 0, delta: {role: 'assistant', content: ''}, logprobs: null, finish_reason: null}]);
  if (ctx.overflow) {
    // Chat Completions has no error event; OpenAI-compatible servers put an
    // error object on the data line and end the stream.
    sse(res, null, openaiError(chatOverflowMessage(ctx), 'context_length_exceeded', 'messages'));
    return res.end();
  }
  for (const c of chunks(reply.text || '')) if (c) chunk([{index: 0, delta: {content: c}, logprobs: null, finish_reason: null}]);
  if (reply.call) {
    chunk([{index: 0, delta: {tool_calls: [{index: 0, id: reply.call.id, type: 'function', function: {name: reply.call.name, arguments: ''}}]}, logprobs: null, finish_reason: null}]);
    for (const c of chunks(reply.call.raw, 4)) chunk([{index: 0, delta: {tool_calls: [{index: 0, function: {arguments: c}}]}, logprobs: null, finish_reason: null}]);
  }
  chunk([{index: 0, delta: {}, logprobs: null, finish_reason: finish}]);
  if (body.stream_options?.include_usage) chunk([], {usage});
  res.write('data: [DONE]\n\n');
  res.end();
}

// ------------------------------------------------------------------ router

const MODELS = ['fake-model', 'claude-sonnet-4-5', 'gpt-5'];

function route(method, path) {
  if ((method === 'HEAD' || method === 'GET') && path === '/') return 'root';
  if (method === 'GET' && path === '/v1/models') return 'models';
  if (method !== 'POST') return null;
  if (path === '/v1/messages') return 'anthropic';
  if (path === '/v1/messages/count_tokens') return 'count_tokens';
  if (path === '/v1/responses') return 'responses';
  if (path === '/v1/responses/compact') return 'responses_compact';
  if (path === '/v1/chat/completions') return 'chat';
  return null;
}

function notFound(res, api, method, path) {
  if (api === 'anthropic') return sendJson(res, 404, {type: 'error', error: {type: 'not_found_error', message: `${method} ${path} not found`}});
  return sendJson(res, 404, openaiError(`Invalid URL (${method} ${path})`, null, null));
}

function handle(req, res, raw) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const path = url.pathname;
  const kind = route(req.method, path);
  const rec = {seq: ++seq, t: Date.now(), method: req.method, path: req.url, api: kind, status: 200,
    session: req.headers['x-claude-code-session-id'] || req.headers['session-id'] || null};
  if (kind === 'root') {
    res.writeHead(200, {'content-type': 'text/plain', 'content-length': 2});
    res.end(req.method === 'HEAD' ? undefined : 'ok');
    return recordRequest(rec);
  }
  if (kind === 'models') {
    sendJson(res, 200, {object: 'list', data: MODELS.map((id) => ({id, object: 'model', created: 1700000000, owned_by: 'fake'})),
      // Anthropic's list shape too, so either SDK can page through it.
      has_more: false, first_id: MODELS[0], last_id: MODELS[MODELS.length - 1]});
    return recordRequest(rec);
  }
  if (!kind) {
    rec.status = 404;
    notFound(res, req.headers['anthropic-version'] ? 'anthropic' : 'openai', req.method, path);
    return recordRequest(rec);
  }
  let body;
  try {
    body = JSON.parse(decodeBody(raw, req.headers['content-encoding']).toString('utf8'));
  } catch (e) {
    rec.status = 400;
    const msg = `could not parse the JSON body of the request: ${e.message}`;
    if (kind === 'anthropic' || kind === 'count_tokens') sendJson(res, 400, {type: 'error', error: {type: 'invalid_request_error', message: msg}});
    else sendJson(res, 400, openaiError(msg, null, null));
    return recordRequest(rec);
  }
  const api = kind === 'anthropic' || kind === 'count_tokens' ? 'anthropic' : kind === 'chat' ? 'chat' : 'responses';
  const conv = api === 'anthropic' ? normalizeAnthropic(body) : api === 'chat' ? normalizeChat(body) : normalizeResponses(body);
  const bytes = raw.length;
  const tokens = estTokens(Buffer.byteLength(JSON.stringify(body)));
  Object.assign(rec, {stream: !!body.stream, model: body.model || null, bytes, est_tokens: tokens,
    messages: conv.messages.length, tools: conv.tools.length});
  if (kind === 'count_tokens') {
    rec.kind = 'count_tokens';
    sendJson(res, 200, {input_tokens: tokens});
    return recordRequest(rec);
  }
  if (kind === 'responses_compact') {
    rec.kind = 'compact';
    serveResponsesCompact(req, res, body, {conv, tokens});
    rec.status = res.statusCode;
    return recordRequest(rec);
  }
  const hasTrigger = Array.isArray(body.input) && body.input.some((it) => it?.type === 'compaction_trigger');
  if (hasTrigger && !opts.remoteCompaction) {
    rec.status = 400;
    rec.kind = 'compaction';
    sendJson(res, 400, openaiError("Invalid value: 'compaction_trigger'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning'.", 'invalid_value', 'input'));
    return recordRequest(rec);
  }
  // A compaction item this fake did not issue cannot be decrypted: the real
  // service refuses it (a proxy must expand its own items before forwarding).
  const foreign = conv.extras.find((x) => x.type === 'compaction' && !decodeCompaction(x.encrypted_content));
  if (foreign) {
    rec.status = 400;
    rec.kind = 'foreign-compaction';
    sendJson(res, 400, openaiError('The encrypted content of a compaction item could not be verified.', 'invalid_encrypted_content', 'input'));
    return recordRequest(rec);
  }
  // Every tool call needs its result and every result its call, or the
  // real services refuse the request (a proxy must never cut between them).
  const broken = unpaired(conv);
  if (broken) {
    rec.status = 400;
    rec.kind = 'unpaired';
    rec.unpaired = broken;
    const msg = api === 'anthropic' ? `messages: \`tool_use\` ids were found without \`tool_result\` blocks (or the reverse): ${broken}`
      : api === 'chat' ? `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (unpaired: ${broken})`
      : `No tool output found for function call (unpaired: ${broken})`;
    if (api === 'anthropic') sendJson(res, 400, {type: 'error', error: {type: 'invalid_request_error', message: msg}});
    else sendJson(res, 400, openaiError(msg, null, api === 'chat' ? 'messages' : 'input'));
    return recordRequest(rec);
  }
  const check = checkNewest(conv);
  const reply = decide(conv, api, body);
  // compactor serve's own summary requests (x-compactor-request: summary)
  // are told apart from a client that compacts by itself.
  if (reply.kind === 'summary' && req.headers['x-compactor-request'] === 'summary') reply.kind = 'proxy-summary';
  // A model named fake-overflow-http / fake-overflow-stream always overflows
  // (the SDK tests' error cases); otherwise --overflow-tokens decides, never
  // for summary requests (they would overflow the same way the task does).
  const forced = /overflow-(http|stream)/.exec(body.model || '');
  const overflowMode = forced ? forced[1] : opts.overflowMode;
  const overflow = !!forced || (opts.overflowTokens > 0 && tokens > opts.overflowTokens && !['summary', 'proxy-summary', 'compaction'].includes(reply.kind));
  Object.assign(rec, {kind: reply.kind, step_reached: stepReached(conv), reply_step: reply.step ?? null,
    newest_call: check.call, newest_result: check.result, present_calls: check.present_calls, missing_calls: check.missing_calls,
    history_floor: historyFloor(check.call?.step ?? 0), overflow_injected: overflow,
    answer: reply.kind === 'final' ? reply.text : undefined, ...strategyEvidence(conv, JSON.stringify(body))});
  if (overflow) rec.status = overflowMode === 'http' ? 400 : 200;
  const ctx = {reply, tokens, overflow, overflowMode, conv, limit: opts.overflowTokens || tokens - 1};
  if (api === 'anthropic') serveAnthropic(req, res, body, ctx);
  else if (api === 'chat') serveChat(req, res, body, ctx);
  else serveResponses(req, res, body, ctx);
  recordRequest(rec);
}

const server = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    try {
      handle(req, res, Buffer.concat(parts));
    } catch (e) {
      process.stderr.write(`fake_upstream: ${e.stack}\n`);
      if (!res.headersSent) sendJson(res, 500, openaiError(`fake upstream error: ${e.message}`, 'server_error', null));
      else res.end();
    }
  });
});
server.keepAliveTimeout = 5000;
server.listen(opts.port, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 2000).unref();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(() => {
  process.stderr.write(`fake_upstream: --max-seconds ${opts.maxSeconds} elapsed, exiting\n`);
  process.exit(0);
}, opts.maxSeconds * 1000).unref();
