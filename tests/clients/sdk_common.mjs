// Shared by sdk_openai.mjs and sdk_anthropic.mjs: loading the SDKs from the
// clients' install (tests/clients/install.sh), the two tools the scripts offer
// the model (bash, write) and running them, and small assertion helpers.
import {createRequire} from 'node:module';
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// ESM ignores NODE_PATH, so the SDKs are loaded (as CommonJS) from the sdk prefix.
export function loadSdk(name) {
  const home = process.env.COMPACTOR_CLIENTS_HOME;
  if (!home) throw new Error('COMPACTOR_CLIENTS_HOME is not set (run through tests/clients/run.sh)');
  return createRequire(path.join(home, 'sdk', 'node_modules', 'x.js'))(name);
}

export function args() {
  const a = process.argv.slice(2);
  const get = (name) => {
    const i = a.indexOf(`--${name}`);
    if (i < 0 || i + 1 >= a.length) throw new Error(`--${name} is required`);
    return a[i + 1];
  };
  return {base: get('base'), prompt: get('prompt')};
}

export const TOOLS = [
  {name: 'bash', description: 'Run a bash command in the workspace; returns its output.',
    schema: {type: 'object', properties: {command: {type: 'string'}}, required: ['command']}},
  {name: 'write', description: 'Write a file in the workspace.',
    schema: {type: 'object', properties: {path: {type: 'string'}, content: {type: 'string'}}, required: ['path', 'content']}},
];

// Runs one tool call in `cwd`; returns its output text.
export function runTool(cwd, name, input) {
  if (name === 'bash') {
    try {
      return execFileSync('bash', ['-c', input.command], {cwd, encoding: 'utf8', timeout: 30000, maxBuffer: 16 << 20});
    } catch (e) {
      return `${e.stdout || ''}${e.stderr || ''}exit status ${e.status}`;
    }
  }
  if (name === 'write') {
    const file = path.join(cwd, input.path);
    fs.mkdirSync(path.dirname(file), {recursive: true});
    fs.writeFileSync(file, input.content);
    return `wrote ${input.content.length} characters to ${input.path}`;
  }
  return `unknown tool ${name}`;
}

export function workspace(sub) {
  const dir = path.resolve(sub);
  fs.mkdirSync(dir, {recursive: true});
  return dir;
}

// The task loop is bounded: the fake's task has at most a few dozen steps.
export const MAX_TURNS = 60;

let failures = 0;
export function check(cond, what) {
  if (cond) {
    console.log(`ok ${what}`);
  } else {
    failures++;
    console.log(`not ok ${what}`);
  }
}
export function done() {
  if (failures) {
    console.error(`${failures} check(s) failed`);
    process.exit(1);
  }
}
