#!/usr/bin/env node
// The official `openai` npm client against the fake upstream, directly or
// through compactor serve (tests/clients/run.sh sdk-openai): GET /v1/models;
// the scripted tool-using task over the Responses API and over Chat
// Completions, alternating streamed and non-streamed turns; the context-overflow
// error of both APIs as an HTTP error and in the stream, as the SDK surfaces
// them. Prints "ANSWER <workspace> <text>" per task and "ok/not ok" per check.
import {TOOLS, args, check, done, loadSdk, runTool, workspace, MAX_TURNS} from './sdk_common.mjs';

const {OpenAI, APIError} = loadSdk('openai');
const {base, prompt} = args();
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: 'dummy', maxRetries: 0, timeout: 60000});

async function responsesTask() {
  const cwd = workspace('responses');
  const tools = TOOLS.map((t) => ({type: 'function', name: t.name, description: t.description, parameters: t.schema, strict: false}));
  const input = [{role: 'user', content: prompt}];
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const stream = turn % 2 === 0;
    let response;
    if (stream) {
      const events = [];
      for await (const ev of await client.responses.create({model: 'fake-model', input, tools, stream: true})) events.push(ev);
      const types = events.map((e) => e.type);
      if (turn === 0) check(types[0] === 'response.created' && types.at(-1) === 'response.completed', 'responses stream: created ... completed');
      response = events.at(-1).response;
    } else {
      response = await client.responses.create({model: 'fake-model', input, tools});
    }
    const calls = response.output.filter((o) => o.type === 'function_call');
    if (!calls.length) {
      // output_text is a convenience of non-streamed results only; read the items.
      return response.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text ?? '').join('');
    }
    for (const c of calls) {
      input.push({type: 'function_call', call_id: c.call_id, name: c.name, arguments: c.arguments});
      input.push({type: 'function_call_output', call_id: c.call_id, output: runTool(cwd, c.name, JSON.parse(c.arguments))});
    }
  }
  return 'too many turns';
}

async function chatTask() {
  const cwd = workspace('chat');
  const tools = TOOLS.map((t) => ({type: 'function', function: {name: t.name, description: t.description, parameters: t.schema}}));
  const messages = [{role: 'system', content: 'You are a test agent.'}, {role: 'user', content: prompt}];
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    let message;
    if (turn % 2 === 0) {
      const stream = await client.chat.completions.create({model: 'fake-model', messages, tools, stream: true, stream_options: {include_usage: true}});
      message = {role: 'assistant', content: '', tool_calls: []};
      let usage = null;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const d = chunk.choices[0]?.delta;
        if (!d) continue;
        if (d.content) message.content += d.content;
        for (const tc of d.tool_calls || []) {
          const slot = (message.tool_calls[tc.index] ||= {id: '', type: 'function', function: {name: '', arguments: ''}});
          if (tc.id) slot.id = tc.id;
          if (tc.function?.name) slot.function.name += tc.function.name;
          if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
        }
      }
      if (turn === 0) check(usage && usage.prompt_tokens > 0, 'chat stream: usage chunk');
      if (!message.tool_calls.length) delete message.tool_calls;
    } else {
      const completion = await client.chat.completions.create({model: 'fake-model', messages, tools});
      message = completion.choices[0].message;
    }
    messages.push(message);
    if (!message.tool_calls?.length) return message.content;
    for (const tc of message.tool_calls) {
      messages.push({role: 'tool', tool_call_id: tc.id, content: runTool(cwd, tc.function.name, JSON.parse(tc.function.arguments))});
    }
  }
  return 'too many turns';
}

const OVERFLOW = /context window|maximum context length|context_length_exceeded/i;

async function errors() {
  const input = [{role: 'user', content: 'hello'}];
  const tools = [{type: 'function', name: 'bash', parameters: TOOLS[0].schema, strict: false}];
  try {
    await client.responses.create({model: 'fake-overflow-http', input, tools});
    check(false, 'responses: overflow as HTTP 400');
  } catch (e) {
    check(e instanceof APIError && e.status === 400 && e.code === 'context_length_exceeded' && OVERFLOW.test(e.message), `responses: overflow as HTTP 400 (${e.status} ${e.code})`);
  }
  const failed = [];
  for await (const ev of await client.responses.create({model: 'fake-overflow-stream', input, tools, stream: true})) {
    if (ev.type === 'response.failed') failed.push(ev);
  }
  check(failed.length === 1 && failed[0].response.error?.code === 'context_length_exceeded', 'responses: overflow as response.failed in the stream');
  const messages = [{role: 'user', content: 'hello'}];
  try {
    await client.chat.completions.create({model: 'fake-overflow-http', messages});
    check(false, 'chat: overflow as HTTP 400');
  } catch (e) {
    check(e instanceof APIError && e.status === 400 && OVERFLOW.test(e.message), `chat: overflow as HTTP 400 (${e.status})`);
  }
  try {
    for await (const chunk of await client.chat.completions.create({model: 'fake-overflow-stream', messages, stream: true})) void chunk;
    check(false, 'chat: overflow as an error in the stream');
  } catch (e) {
    check(e instanceof APIError && OVERFLOW.test(e.message), 'chat: overflow as an error in the stream');
  }
}

const models = await client.models.list();
check(models.data.some((m) => m.id === 'fake-model'), 'GET /v1/models lists fake-model');
console.log(`ANSWER responses ${await responsesTask()}`);
console.log(`ANSWER chat ${await chatTask()}`);
await errors();
done();
