#!/usr/bin/env node
// The checks of tests/clients/run.sh, on one run's directory: the fake
// upstream's request log (upstream.jsonl, one JSON object per request, written
// by fake_upstream.mjs), the client's answer and exit status, the workspace.
//
//   node check.mjs verdict --dir DIR --scenario NAME --mode direct|proxy
//       --expect success|overflow-failure --status N --steps N
//       [--strategy summary|user-prompts|notes|mask]
//     prints "PASS summary" or "FAIL first problem", then one line per
//     further problem; always exits 0 (the verdict is the output)
//   node check.mjs pi-answer SESSION_DIR
//     prints the text of the last assistant message in the newest pi session
//     file under SESSION_DIR (pi -p prints nothing after it compacted)

import fs from 'node:fs';
import path from 'node:path';

function readLines(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

const read = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

function piAnswer(dir) {
  const files = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, {withFileTypes: true})) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.jsonl')) files.push(p);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  files.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!files.length) return '';
  let answer = '';
  for (const e of readLines(files[0])) {
    const m = e.type === 'message' ? e.message : null;
    if (m?.role !== 'assistant') continue;
    const text = (m.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
    if (text) answer = text;
  }
  return answer;
}

function option(args, name, fallback) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
}

const AGENTS = new Set(['codex', 'codex-overflow', 'codex-overflow-stream', 'codex-remote', 'claude', 'claude-overflow', 'pi-anthropic', 'pi-overflow', 'pi-responses', 'pi-chat']);
const tail = (s, n = 2) => s.trim().split('\n').slice(-n).join(' | ').slice(0, 400);

// Answers to compare: [{where, answer, secret}]. The SDK scripts run the task
// once per API, each in its own workspace subdirectory, printing
// "ANSWER <subdir> <text>" lines; the agents run it once in ws/.
function answers(dir, scenario) {
  const ws = path.join(dir, 'ws');
  if (!scenario.startsWith('sdk-')) {
    return [{where: 'ws', answer: read(path.join(dir, 'answer.txt')).trim(), secret: read(path.join(ws, 'secret.txt')).trim()}];
  }
  const out = [];
  for (const line of read(path.join(dir, 'client.out')).split('\n')) {
    const m = /^ANSWER (\S+) (.*)$/.exec(line);
    if (m) out.push({where: m[1], answer: m[2], secret: read(path.join(ws, m[1], 'secret.txt')).trim()});
  }
  return out;
}

function verdict(args) {
  const dir = option(args, 'dir');
  const scenario = option(args, 'scenario');
  // Passthrough (through compactor serve with nothing to compact
  // proactively) must look exactly like direct to every check, with one
  // exception: a request the upstream refused as too long is serve's to
  // recover (it compacts and retries), so the retry that follows an injected
  // overflow may carry a cut history. Everything else must reach the
  // upstream as the client sent it: serve's own log (--json) says which
  // requests it rewrote, and only such retries may be among them.
  const given = option(args, 'mode');
  const mode = given === 'passthrough' ? 'direct' : given;
  const expect = option(args, 'expect', 'success');
  const status = Number(option(args, 'status', '0'));
  const steps = Number(option(args, 'steps', '0'));
  const strategy = option(args, 'strategy', 'summary');
  const recs = readLines(path.join(dir, 'upstream.jsonl'));
  const clientErr = read(path.join(dir, 'client.err')) + read(path.join(dir, 'client.out'));
  const task = recs.filter((r) => r.kind === 'call' || r.kind === 'final');
  const problems = [];
  const facts = [];

  if (expect === 'success') {
    if (status !== 0) problems.push(`client exit status ${status}${status === 124 ? ' (timed out)' : ''}: ${tail(clientErr)}`);
    const list = answers(dir, scenario);
    if (!list.length) problems.push('no answer from the client');
    // pi 0.73.1 prints nothing in -p mode after it compacted by itself, and
    // after an overflow it does not even record the answer in its session
    // file (the messages after the compaction entry are missing): then the
    // evidence is the final reply the upstream gave pi, which the upstream
    // could only write from the `cat secret.txt` result pi sent it.
    const quiet = scenario.startsWith('pi-') && read(path.join(dir, 'notes.txt')).includes('pi printed nothing');
    const finalReply = [...task].reverse().find((r) => r.kind === 'final')?.answer || '';
    for (const a of list) {
      if (!a.secret) problems.push(`${a.where}/secret.txt missing: step-01 never ran`);
      else if (a.answer.includes(a.secret)) continue;
      else if (quiet && finalReply.includes(a.secret)) facts.push('pi printed nothing and its session file ends at the compaction: answer taken from the upstream\'s final reply');
      else problems.push(`wrong answer in ${a.where}: "${a.answer.slice(0, 120)}", want ${a.secret}`);
    }
    if (AGENTS.has(scenario) && !task.some((r) => r.kind === 'final' && r.step_reached >= steps)) {
      problems.push(`the upstream never saw step-${String(steps).padStart(2, '0')}'s result (highest step ${Math.max(0, ...task.map((r) => r.step_reached))})`);
    }
    if (!problems.length) facts.push(`answer ok (${list.map((a) => a.secret).join(', ')})`);
  } else if (expect === 'overflow-failure') {
    if (status === 0) problems.push('the client succeeded although the upstream refused its request as too long');
    if (!recs.some((r) => r.overflow_injected)) problems.push('no overflow was injected: the task never grew past the limit');
    if (!/context window|context_length_exceeded|too long/i.test(clientErr)) problems.push(`the client did not report the overflow: ${tail(clientErr)}`);
    if (!problems.length) facts.push(`failed as expected on the overflow (exit ${status})`);
  }

  for (const r of task) {
    if (r.newest_call?.unchanged === false) problems.push(`request ${r.seq}: the newest tool call (${r.newest_call.id}) reached the upstream changed`);
    if (r.newest_result?.ok === false) problems.push(`request ${r.seq}: the newest tool result (${r.newest_result.id}) lacks what step-${String(r.newest_result.step).padStart(2, '0')} printed`);
  }
  const unpaired = recs.filter((r) => r.kind === 'unpaired');
  if (unpaired.length) problems.push(`request ${unpaired[0].seq}: tool calls and results not paired (${unpaired[0].unpaired}); the upstream refused it`);
  const serverErrors = recs.filter((r) => r.status >= 500);
  if (serverErrors.length) problems.push(`${serverErrors.length} request(s) the fake upstream could not handle (see upstream.err)`);

  // History: direct, the client sends its whole history every time (nothing
  // missing); through the proxy, an agent's later requests must be smaller
  // than its full history: calls cut and the request smaller than before.
  const bytes = task.map((r) => r.bytes);
  const maxBytes = Math.max(0, ...bytes);
  if (task.length) facts.push(`${recs.length} requests (${task.length} task), upstream max ${maxBytes} B, last ${bytes[bytes.length - 1]} B`);
  // A client that compacted by itself (a summary or compaction request came
  // first) legitimately sends less afterwards.
  const selfCompacted = (r) => recs.some((x) => x.seq < r.seq && (x.kind === 'summary' || x.kind === 'compaction'));
  const cut = task.filter((r) => r.missing_calls > 0);
  // Passthrough: a retry of a request refused as too long (the request
  // before it, in the upstream's order and leaving out serve's own summary
  // requests, is that refusal) is serve's recovery.
  const clientOrder = recs.filter((r) => r.kind !== 'proxy-summary');
  const before = (r) => clientOrder[clientOrder.indexOf(r) - 1];
  const recovery = (r) => given === 'passthrough' && !!before(r)?.overflow_injected;
  const unexplained = cut.filter((r) => !selfCompacted(r) && !recovery(r));
  if (mode === 'direct' && unexplained.length && expect === 'success') {
    problems.push(`request ${unexplained[0].seq}: ${unexplained[0].missing_calls} earlier tool call(s) missing although nothing compacted (the client dropped history?)`);
  }
  if (mode === 'proxy' && AGENTS.has(scenario) && expect === 'success' && strategy === 'mask') {
    checkMask(dir, scenario, recs, task, selfCompacted, problems, facts);
  } else if (mode === 'proxy' && AGENTS.has(scenario) && expect === 'success') {
    let shrank = null;
    for (let i = 1; i < task.length; i++) {
      const before = Math.max(...bytes.slice(0, i));
      // Codex-remote compacts by itself (through the proxy's compaction
      // item); elsewhere a cut the client made itself does not count.
      const byProxy = scenario === 'codex-remote' || !selfCompacted(task[i]);
      if (task[i].missing_calls > 0 && bytes[i] < before && byProxy) {
        shrank = {seq: task[i].seq, bytes: bytes[i], before, missing: task[i].missing_calls, floor: task[i].history_floor};
        break;
      }
    }
    if (!shrank) problems.push(`the upstream never saw a request smaller than the client's history (max ${maxBytes} B, ${cut.length} requests with calls cut): nothing was compacted`);
    else facts.push(`compacted: request ${shrank.seq} ${shrank.bytes} B < ${shrank.before} B before, ${shrank.missing} call(s) cut`);
    if (shrank && strategy !== 'summary') checkCutStrategy(strategy, scenario, recs, task, selfCompacted, problems, facts);
  }
  if (mode === 'proxy' && AGENTS.has(scenario) && expect === 'success') {
    if (scenario.includes('-overflow')) {
      // With a window of 1M the proxy never compacts proactively: what it
      // compacted, it compacted to recover from the injected overflow.
      const n = recs.filter((r) => r.overflow_injected).length;
      facts.push(`${n} overflow(s) injected and recovered`);
    }
  }
  if (scenario === 'codex-remote') {
    // Codex compacted by itself: a compaction_trigger request. Direct, the
    // fake answered it; through the proxy the proxy must have (the fake
    // refuses the trigger there), so the upstream may never see one.
    const triggers = recs.filter((r) => r.kind === 'compaction');
    if (mode === 'direct' && !triggers.some((r) => r.status === 200)) problems.push('Codex never sent a compaction_trigger (remote compaction) request');
    const refused = triggers.filter((r) => r.status !== 200);
    if (mode === 'proxy' && refused.length) problems.push(`the proxy forwarded ${refused.length} compaction_trigger request(s) to an upstream without remote compaction instead of answering them`);
    const foreign = recs.filter((r) => r.kind === 'foreign-compaction');
    if (foreign.length) problems.push(`request ${foreign[0].seq}: a compaction item the upstream did not issue reached it (the proxy must expand its own)`);
    facts.push(`${triggers.length} compaction_trigger request(s) upstream`);
  }
  if (given === 'passthrough') checkPassthrough(dir, scenario, clientOrder, recovery, problems, facts);
  if ((scenario === 'pi-overflow' || scenario === 'claude-overflow') && given === 'direct' && expect === 'success') {
    if (!recs.some((r) => r.overflow_injected)) problems.push('no overflow was injected: the task never grew past the limit');
    if (!recs.some((r) => r.kind === 'summary')) problems.push('the client did not compact after the overflow (no summary request)');
  }
  const self = recs.filter((r) => r.kind === 'summary').length;
  if (self) facts.push(`${self} summary request(s)`);
  const byServe = recs.filter((r) => r.kind === 'proxy-summary').length;
  if (byServe) facts.push(`${byServe} summary request(s) by serve`);

  if (problems.length) {
    console.log(`FAIL ${problems[0]}`);
    for (const p of problems.slice(1)) console.log(p);
    console.log(`(${facts.join('; ')}; files in ${dir})`);
  } else {
    console.log(`PASS ${facts.join('; ')}`);
  }
}

// The strategies that cut like summary (the check above found the cut) leave
// their own evidence in the requests that follow it. user-prompts: the
// user's prompt kept verbatim ahead of serve's summary message; notes: the
// notes file's text in the request, and no summary request by serve (the
// notes are the summary: no model call).
function checkCutStrategy(strategy, scenario, recs, task, selfCompacted, problems, facts) {
  // Codex-remote compacts through the proxy's compaction item (as above).
  const byProxy = task.filter((r) => r.missing_calls > 0 && (scenario === 'codex-remote' || !selfCompacted(r)));
  if (strategy === 'user-prompts') {
    const summarized = byProxy.filter((r) => r.prompt_before_summary !== null && r.prompt_before_summary !== undefined);
    const kept = summarized.filter((r) => r.prompt_before_summary === true);
    if (!summarized.length) problems.push('no compacted request carried serve\'s summary message');
    else if (!kept.length) problems.push(`request ${summarized[0].seq}: the user's prompt is not ahead of serve's summary message (user-prompts keeps it verbatim)`);
    else facts.push(`user-prompts: the prompt ahead of the summary in ${kept.length} of ${summarized.length} compacted request(s)`);
  } else if (strategy === 'notes') {
    const withNotes = byProxy.filter((r) => r.found_text === true);
    if (!withNotes.length) problems.push(`none of the ${byProxy.length} compacted request(s) carried the notes file's text`);
    else facts.push(`notes: the notes file's text in ${withNotes.length} of ${byProxy.length} compacted request(s)`);
    const summaries = recs.filter((r) => r.kind === 'proxy-summary').length;
    if (summaries) problems.push(`serve sent ${summaries} summary request(s) although the notes file is the summary`);
  }
}

// Mask never cuts: the evidence is serve's log line of a request it masked
// (maskedOutputs, fewer tokens after than before) and the same request at
// the upstream with tool results replaced by serve's placeholder and fewer
// bytes than the client sent (the first masked request in both logs), and no
// request with earlier calls missing unless the client compacted by itself
// (pairing and the newest result are checked for every strategy above).
// Codex-remote compacts by itself (serve answers its compaction_trigger with
// a summary, whatever the strategy) before serve's threshold, so a cut after
// that answer is Codex's and masking is not required there.
function checkMask(dir, scenario, recs, task, selfCompacted, problems, facts) {
  const log = read(path.join(dir, 'serve.err')).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const triggers = log.filter((l) => l.compactionTrigger);
  const answered = (r) => scenario === 'codex-remote' && recs.some((x) => x.seq < r.seq && x.kind === 'proxy-summary');
  const cut = task.filter((r) => r.missing_calls > 0 && !selfCompacted(r) && !answered(r));
  if (cut.length) problems.push(`request ${cut[0].seq}: ${cut[0].missing_calls} earlier tool call(s) missing: mask never cuts calls`);
  const line = log.find((l) => l.maskedOutputs > 0 && l.compacted);
  const first = task.find((r) => r.masked_results > 0);
  const masked = task.filter((r) => r.masked_results > 0).length;
  if (scenario === 'codex-remote' && !line && !first) {
    if (!triggers.length) problems.push('serve neither masked nor answered a compaction_trigger');
    else facts.push(`mask: Codex compacted by itself (${triggers.length} compaction_trigger(s) answered by serve) before serve's threshold; nothing masked`);
    return;
  }
  if (!line) problems.push('serve logged no request with masked outputs (maskedOutputs): nothing was masked');
  if (!first) problems.push('no request reached the upstream with a tool result replaced by the mask placeholder');
  if (!line || !first) return;
  if (!(line.tokensAfter < line.tokensBefore)) problems.push(`serve masked ${line.maskedOutputs} output(s) but the request did not shrink (${line.tokensBefore} -> ${line.tokensAfter} tokens)`);
  if (!(first.bytes < line.bytesIn)) problems.push(`request ${first.seq}: ${first.bytes} B reached the upstream, not fewer than the ${line.bytesIn} B the client sent`);
  facts.push(`masked: request ${first.seq} ${first.bytes} B < ${line.bytesIn} B from the client (${line.tokensBefore} -> ${line.tokensAfter} tokens), ${first.masked_results} result(s) masked; ${masked} request(s) with masked results`);
}

// Passthrough: serve's request log (serve.err, one JSON object per line with
// --json) must show no rewritten request except the retries of overflows the
// upstream injected, and through serve an overflow scenario must have been
// recovered (at least one overflow injected, every one answered by a retry).
function checkPassthrough(dir, scenario, recs, recovery, problems, facts) {
  const log = read(path.join(dir, 'serve.err')).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const model = log.filter((l) => l.api);
  if (!model.length) problems.push('serve logged no model request (is serve running with --json?)');
  const rewritten = model.filter((l) => l.compacted);
  const proactive = rewritten.filter((l) => !(l.attempts > 1));
  if (proactive.length) problems.push(`serve rewrote ${proactive.length} request(s) on their first attempt in passthrough (${proactive[0].path}): nothing may be compacted proactively`);
  if (!scenario.includes('-overflow') && rewritten.length) problems.push(`serve rewrote ${rewritten.length} request(s) although the upstream refused none`);
  const injected = recs.filter((r) => r.overflow_injected);
  if (scenario.includes('-overflow')) {
    if (!injected.length) problems.push('no overflow was injected: the task never grew past the limit');
    const unanswered = injected.filter((r) => !retryOf(recs, r));
    if (unanswered.length) problems.push(`request ${unanswered[0].seq}: the overflow the upstream injected was not retried by serve`);
    const retries = recs.filter((r) => recovery(r)).length;
    facts.push(`passthrough: ${injected.length} overflow(s) injected, ${retries} retried by serve, ${rewritten.length} request(s) rewritten`);
  } else {
    facts.push(`passthrough: ${model.length} model request(s) passed unchanged`);
  }
}

// The request the upstream received right after `r` (serve's summary
// requests left out), when it is a retry of the same request (the same step
// of the same task, so not the client's next turn).
function retryOf(recs, r) {
  const next = recs[recs.indexOf(r) + 1];
  return next && next.reply_step === r.reply_step && next.kind === r.kind ? next : null;
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === 'verdict') verdict(rest);
else if (cmd === 'pi-answer') process.stdout.write(piAnswer(rest[0]) + '\n');
else {
  console.error('usage: check.mjs verdict ... | pi-answer SESSION_DIR');
  process.exit(2);
}
