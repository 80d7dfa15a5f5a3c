#!/usr/bin/env node
// The official `@anthropic-ai/sdk` npm client against the fake upstream,
// directly or through compactor serve (tests/clients/run.sh sdk-anthropic):
// models, count_tokens, the scripted tool-using task over the Messages API
// (alternating streamed and non-streamed turns), and the context-overflow
// error as an HTTP error and as an in-stream error event. Prints
// "ANSWER <workspace> <text>" and "ok/not ok" per check.
import {TOOLS, args, check, done, loadSdk, runTool, workspace, MAX_TURNS} from './sdk_common.mjs';

const {Anthropic, APIError} = loadSdk('@anthropic-ai/sdk');
const {base, prompt} = args();
const client = new Anthropic({baseURL: base, apiKey: 'dummy', maxRetries: 0, timeout: 60000});
const tools = TOOLS.map((t) => ({name: t.name, description: t.description, input_schema: t.schema}));
const model = 'fake-model';

async function task() {
  const cwd = workspace('messages');
  const messages = [{role: 'user', content: prompt}];
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    let message;
    if (turn % 2 === 0) {
      const stream = client.messages.stream({model, max_tokens: 4096, system: 'You are a test agent.', messages, tools});
      const types = [];
      stream.on('streamEvent', (ev) => types.push(ev.type));
      message = await stream.finalMessage();
      if (turn === 0) check(types[0] === 'message_start' && types.at(-1) === 'message_stop', 'messages stream: message_start ... message_stop');
    } else {
      message = await client.messages.create({model, max_tokens: 4096, system: 'You are a test agent.', messages, tools});
    }
    messages.push({role: 'assistant', content: message.content});
    const uses = message.content.filter((c) => c.type === 'tool_use');
    if (message.stop_reason !== 'tool_use' || !uses.length) return message.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
    messages.push({role: 'user', content: uses.map((u) => ({type: 'tool_result', tool_use_id: u.id, content: runTool(cwd, u.name, u.input)}))});
  }
  return 'too many turns';
}

const OVERFLOW = /prompt is too long/i;

async function errors() {
  const messages = [{role: 'user', content: 'hello'}];
  try {
    await client.messages.create({model: 'fake-overflow-http', max_tokens: 100, messages, tools});
    check(false, 'messages: overflow as HTTP 400');
  } catch (e) {
    check(e instanceof APIError && e.status === 400 && e.error?.error?.type === 'invalid_request_error' && OVERFLOW.test(e.message), `messages: overflow as HTTP 400 (${e.status})`);
  }
  try {
    await client.messages.stream({model: 'fake-overflow-stream', max_tokens: 100, messages, tools}).finalMessage();
    check(false, 'messages: overflow as an error event in the stream');
  } catch (e) {
    check(e instanceof APIError && OVERFLOW.test(e.message), 'messages: overflow as an error event in the stream');
  }
}

const models = await client.models.list();
check(models.data.some((m) => m.id === 'fake-model'), 'GET /v1/models lists fake-model');
const counted = await client.messages.countTokens({model, messages: [{role: 'user', content: 'hello there'}]});
check(counted.input_tokens > 0, `count_tokens: ${counted.input_tokens}`);
console.log(`ANSWER messages ${await task()}`);
await errors();
done();
