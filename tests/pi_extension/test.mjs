#!/usr/bin/env node
// End-to-end tests of integrations/pi (pi-compactor) with the real pi 0.73.1
// from npm against the fake model upstream of tests/clients, run by run.sh
// inside a network namespace with only loopback. Each scenario gets its own
// directory (workspace, HOME, pi agent dir, sessions, upstream log).
//
//   node test.mjs --pi PI_BIN --compactor BIN --oracle ORACLE_MJS --work DIR [--only a,b] [--timeout S]
//
// Prints one line per scenario (PASS/FAIL name: facts or problems); exits 1
// when any failed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const FAKE = join(root, "tests/clients/fake_upstream.mjs");
const EXTENSION = join(root, "integrations/pi");
const PROBE = join(here, "probe.mjs");
const PROMPT = "Work through the numbered workspace steps with your tools, one tool call at a time, until you can report the value stored in secret.txt.";

const opts = { only: null, timeout: 180 };
for (let i = 2; i < process.argv.length; i += 2) {
	const [key, value] = [process.argv[i].replace(/^--/, ""), process.argv[i + 1]];
	opts[key] = key === "timeout" ? Number(value) : value;
}
for (const key of ["pi", "compactor", "oracle", "work"]) {
	if (!opts[key]) {
		console.error(`pi_extension: --${key} is required`);
		process.exit(2);
	}
}

// ------------------------------------------------------------------ helpers

const started = [];
function stopAll() {
	for (const child of started) if (child.exitCode === null) child.kill("SIGTERM");
}
process.on("exit", stopAll);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A child process that prints "listening on URL" once it is ready (the fake
// upstream, compactor serve). stop() ends it and resolves once it has exited
// (so that all it wrote has been read); stderr() is what it wrote there.
async function startListener(what, cmd, args, env = process.env) {
	const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
	started.push(child);
	let out = "";
	let err = "";
	child.stdout.on("data", (d) => (out += d));
	child.stderr.on("data", (d) => (err += d));
	const closed = new Promise((r) => child.on("close", r));
	const stop = () => {
		if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
		return closed;
	};
	for (let i = 0; i < 400 && child.exitCode === null; i++) {
		const m = out.match(/listening on (http:\/\/\S+)/);
		if (m) return { url: m[1], stop, stderr: () => err };
		await sleep(50);
	}
	stop();
	throw new Error(`${what} did not start: ${err.slice(0, 300)}`);
}

function startFake(dir, args) {
	return startListener("the fake upstream", process.execPath, [FAKE, "--log", join(dir, "upstream.jsonl"), "--workspace", join(dir, "ws"), "--max-seconds", "600", ...args]);
}

// `compactor serve` of the build (the binary under test) on 127.0.0.1, port
// 0, with the fake as its upstream (serve refuses to start without one). Its
// request log (stderr) is saved as DIR/serve.log when it stops.
async function startServe(dir, upstream, args = []) {
	const serve = await startListener("compactor serve", opts.compactor, ["serve", "--listen", "127.0.0.1:0", "--upstream", upstream, "--store", join(dir, "serve-store"), ...args], { ...process.env, HOME: join(dir, "home") });
	return {
		...serve,
		stop: async () => {
			await serve.stop();
			writeFileSync(join(dir, "serve.log"), serve.stderr());
			return serve.stderr();
		},
	};
}

function writeAgentDir(dir, url, { contextWindow = 200000, keepRecentTokens = 3000, config = null } = {}) {
	const agent = join(dir, "agent");
	mkdirSync(agent, { recursive: true });
	const models = { providers: { local: { baseUrl: url, api: "anthropic-messages", apiKey: "dummy", models: [{ id: "fake-model", name: "Fake", contextWindow, maxTokens: 8192 }] } } };
	writeFileSync(join(agent, "models.json"), JSON.stringify(models));
	writeFileSync(join(agent, "settings.json"), JSON.stringify({ compaction: { keepRecentTokens } }));
	if (config) writeFileSync(join(agent, "compactor.json"), JSON.stringify(config));
}

function piEnv(dir, extra = {}) {
	const env = { ...process.env, HOME: join(dir, "home"), PI_CODING_AGENT_DIR: join(dir, "agent"), PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", COMPACTOR_BIN: opts.compactor, PI_COMPACTOR_PROBE_LOG: join(dir, "probe.jsonl") };
	delete env.COMPACTOR_PI_CONFIG;
	delete env.COMPACTOR_PI_STRATEGY;
	delete env.COMPACTOR_PI_SERVE;
	for (const [k, v] of Object.entries(extra)) {
		if (v === undefined) delete env[k];
		else env[k] = v;
	}
	return env;
}

function piArgs(dir, mode, { extension = true } = {}) {
	const args = mode === "print" ? ["-p"] : ["--mode", mode];
	args.push("--provider", "local", "--model", "fake-model", "--session-dir", join(dir, "sessions"), "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes");
	if (extension) args.push("-e", EXTENSION);
	args.push("-e", PROBE);
	return args;
}

function runPi(dir, args, env) {
	return new Promise((resolvePromise) => {
		const child = spawn(opts.pi, args, { cwd: join(dir, "ws"), env, stdio: ["ignore", "pipe", "pipe"] });
		started.push(child);
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (d) => (stdout += d));
		child.stderr.on("data", (d) => (stderr += d));
		const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeout * 1000);
		child.on("close", (code, signal) => {
			clearTimeout(timer);
			writeFileSync(join(dir, "pi.out"), stdout);
			writeFileSync(join(dir, "pi.err"), stderr);
			resolvePromise({ code: signal ? `signal ${signal}` : code, stdout, stderr });
		});
	});
}

const readJsonl = (file) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);

function sessionFiles(dir) {
	const d = join(dir, "sessions");
	if (!existsSync(d)) return [];
	return readdirSync(d, { recursive: true })
		.filter((f) => String(f).endsWith(".jsonl"))
		.map((f) => join(d, String(f)))
		.sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
}

function secretOf(dir) {
	const f = join(dir, "ws", "secret.txt");
	return existsSync(f) ? readFileSync(f, "utf8").trim() : "(no secret.txt)";
}

// The answer: pi's stdout, or (pi prints nothing after compacting in -p mode)
// the last assistant text of its session file.
function answerOf(stdout, entries) {
	if (stdout.trim()) return stdout.trim();
	for (const e of [...entries].reverse()) {
		if (e.type !== "message" || e.message.role !== "assistant") continue;
		const text = (e.message.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
		if (text) return text;
	}
	return "";
}

// pi (the oracle: pi 0.73.1's buildSessionContext) and `compactor context`
// must build the same context from the file.
function compareContexts(file, problems, facts) {
	const oracle = spawnSync(process.execPath, [opts.oracle, "inspect", file, "--messages", "full"], { encoding: "utf8", maxBuffer: 1 << 28 });
	const ours = spawnSync(opts.compactor, ["context", file, "--json"], { encoding: "utf8", maxBuffer: 1 << 28 });
	if (oracle.status !== 0) return problems.push(`oracle failed: ${oracle.stderr.slice(0, 200)}`);
	if (ours.status !== 0) return problems.push(`compactor context failed: ${ours.stderr.slice(0, 200)}`);
	const a = JSON.parse(oracle.stdout).contextMessages;
	const b = JSON.parse(ours.stdout).messages;
	if (!isDeepStrictEqual(a, b)) return problems.push(`pi and compactor context differ (${a.length} vs ${b.length} messages)`);
	facts.push(`pi and compactor context agree (${a.length} messages)`);
}

function compactions(entries) {
	return entries.filter((e) => e.type === "compaction");
}

function checkCompactorCompaction(entries, strategy, problems, facts) {
	const list = compactions(entries);
	if (list.length === 0) return problems.push("no compaction entry in the session file");
	const c = list.at(-1);
	if (c.fromHook !== true) problems.push("the compaction entry is not fromHook (pi compacted by itself)");
	if (c.details?.compactor?.strategy !== strategy) problems.push(`details.compactor.strategy is ${c.details?.compactor?.strategy}, want ${strategy}`);
	if (!Array.isArray(c.details?.readFiles) || !Array.isArray(c.details?.modifiedFiles)) problems.push("details lack readFiles/modifiedFiles");
	facts.push(`Compactor's ${strategy} compaction stored by pi (fromHook, ${c.tokensBefore} tokens before, ${c.details?.compactor?.tokensAfter} after)`);
	return c;
}

function checkAnswer(dir, answer, problems, facts) {
	const secret = secretOf(dir);
	if (!answer.includes(secret)) problems.push(`wrong answer "${answer.slice(0, 100)}", want ${secret}`);
	else facts.push("answer ok");
}

function summaryRequests(dir) {
	return readJsonl(join(dir, "upstream.jsonl")).filter((r) => r.kind === "summary").length;
}

// pi falls back to its own compaction (no compaction of Compactor's) and the
// user is told why on stderr (`notice`).
function checkFallback(entries, stderr, notice, problems, facts, told = "the user was told why") {
	const list = compactions(entries);
	if (list.length === 0 || list.some((c) => c.fromHook)) problems.push("pi did not fall back to its own compaction");
	else facts.push("pi fell back to its own compaction");
	if (!notice.test(stderr)) problems.push(`no failure notice on stderr: ${stderr.slice(0, 300)}`);
	else facts.push(told);
}

const STEPS_8 = ["--steps", "8", "--pad", "6000"];

// The set-up every one-shot scenario shares: the fake upstream (`fake`: its
// arguments), the agent directory (`contextWindow`, the extension's
// `config`: an object, or a function of the fake's URL), with `serve` (serve's extra arguments) a `compactor serve` in
// front of the same fake, whose URL becomes the config's `serve`; then pi in
// `mode` with `args` before the prompt and `env` over piEnv(). A non-zero exit
// is a problem, and so is a missing session file unless `session: false`.
// Returns {run, file, entries, serveLog}.
async function runTask(dir, problems, { fake = STEPS_8, mode = "print", contextWindow, config = null, serve = null, args = [], env = {}, extension = true, session = true } = {}) {
	const upstream = await startFake(dir, fake);
	let service = null;
	let run;
	try {
		if (serve) service = await startServe(dir, upstream.url, serve);
		const own = typeof config === "function" ? config(upstream.url) : config;
		writeAgentDir(dir, upstream.url, { contextWindow, config: service ? { ...own, serve: service.url } : own });
		run = await runPi(dir, [...piArgs(dir, mode, { extension }), ...args, PROMPT], piEnv(dir, env));
	} finally {
		upstream.stop();
	}
	const serveLog = service ? await service.stop() : "";
	if (run.code !== 0) problems.push(`pi exited ${run.code}: ${run.stderr.slice(-300)}`);
	const file = sessionFiles(dir).at(-1) ?? null;
	if (session && !file) problems.push("no session file");
	return { run, file, entries: file ? readJsonl(file) : [], serveLog };
}

class Rpc {
	constructor(dir, args, env) {
		this.events = [];
		this.waiters = [];
		this.child = spawn(opts.pi, args, { cwd: join(dir, "ws"), env, stdio: ["pipe", "pipe", "pipe"] });
		started.push(this.child);
		this.log = [];
		let buf = "";
		this.stderr = "";
		this.child.stderr.on("data", (d) => (this.stderr += d));
		this.child.stdout.on("data", (d) => {
			buf += d;
			let nl;
			while ((nl = buf.indexOf("\n")) >= 0) {
				const line = buf.slice(0, nl).replace(/\r$/, "");
				buf = buf.slice(nl + 1);
				if (!line.trim()) continue;
				this.log.push(line);
				let ev;
				try {
					ev = JSON.parse(line);
				} catch {
					continue;
				}
				this.events.push(ev);
				this.waiters = this.waiters.filter((w) => !(w.pred(ev) && (w.resolve(ev), true)));
			}
		});
		writeFileSync(join(dir, "rpc.cmds"), "");
		this.dir = dir;
	}
	send(cmd) {
		writeFileSync(join(this.dir, "rpc.cmds"), JSON.stringify(cmd) + "\n", { flag: "a" });
		this.child.stdin.write(JSON.stringify(cmd) + "\n");
	}
	wait(pred, what, seconds = opts.timeout) {
		const seen = this.events.find(pred);
		if (seen) return Promise.resolve(seen);
		return new Promise((resolvePromise, reject) => {
			const timer = setTimeout(() => reject(new Error(`rpc: no ${what} within ${seconds} s`)), seconds * 1000);
			this.waiters.push({ pred, resolve: (ev) => (clearTimeout(timer), resolvePromise(ev)) });
		});
	}
	// Sends a command and waits for its response.
	async call(cmd, what) {
		const id = `c${this.events.length}-${Math.random().toString(36).slice(2)}`;
		this.send({ ...cmd, id });
		const response = await this.wait((ev) => ev.type === "response" && ev.id === id, what);
		if (!response.success) throw new Error(`${what}: ${response.error}`);
		return response;
	}
	// The events from now on (to wait for something that follows a command).
	mark() {
		return this.events.length;
	}
	waitAfter(mark, pred, what) {
		return this.wait((ev) => this.events.indexOf(ev) >= mark && pred(ev), what);
	}
	close() {
		writeFileSync(join(this.dir, "pi.out"), this.log.join("\n") + "\n");
		writeFileSync(join(this.dir, "pi.err"), this.stderr);
		this.child.stdin.end();
		this.child.kill("SIGTERM");
	}
}

const notifyMatching = (re) => (ev) => ev.type === "extension_ui_request" && ev.method === "notify" && re.test(ev.message ?? "");

// The same for the RPC scenarios: `body(rpc)` drives pi. Returns serve's log.
async function rpcTask(dir, { fake = STEPS_8, contextWindow, config = null, serve = null }, body) {
	const upstream = await startFake(dir, fake);
	const service = serve ? await startServe(dir, upstream.url, serve) : null;
	writeAgentDir(dir, upstream.url, { contextWindow, config: service ? { ...config, serve: service.url } : config });
	const rpc = new Rpc(dir, piArgs(dir, "rpc"), piEnv(dir));
	try {
		await body(rpc);
	} finally {
		rpc.close();
		upstream.stop();
	}
	return service ? await service.stop() : "";
}

// ---------------------------------------------------------------- scenarios

// pi -p crosses its threshold (26000 - 16384 reserve): Compactor's offline
// summary becomes pi's compaction entry; the model server sees no
// summarization request.
async function printThreshold(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000 });
	if (!file) return;
	checkCompactorCompaction(entries, "summary", problems, facts);
	if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
	if (!/pi-compactor: Compactor \(summary\) summarized/.test(run.stderr)) problems.push("no notice of Compactor's compaction on stderr");
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

// summary with a configured model: Compactor's summarizer calls the model
// named in its settings file (here the same fake server, Anthropic Messages);
// the summarization request comes from Compactor, not from pi.
async function printModelSummarizer(dir, problems, facts) {
	const settings = join(dir, "compactor-settings.json");
	const config = (url) => {
		writeFileSync(settings, JSON.stringify({ models: { fake: { provider: "anthropic", baseUrl: url, model: "fake-model", contextWindow: 200000, maxOutputTokens: 4096 } } }));
		return { summarizer: "fake", settings };
	};
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000, config });
	if (!file) return;
	const c = checkCompactorCompaction(entries, "summary", problems, facts);
	if (c && c.details?.compactor?.summarizer !== "fake") problems.push(`details.compactor.summarizer is ${c.details?.compactor?.summarizer}, want fake`);
	const summaries = summaryRequests(dir);
	if (summaries === 0) problems.push("Compactor's summarizer did not call the configured model");
	else facts.push(`Compactor's summarizer called the configured model (${summaries} request(s))`);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

// --no-session: no file at all; Compactor still compacts what the event
// carries (its notice on stderr, no summarization request at the server).
async function printNoSession(dir, problems, facts) {
	const { run } = await runTask(dir, problems, { contextWindow: 26000, args: ["--no-session"], session: false });
	if (sessionFiles(dir).length) problems.push("pi wrote a session file despite --no-session");
	if (!/pi-compactor: Compactor \(summary\) summarized/.test(run.stderr)) problems.push(`no notice of Compactor's compaction: ${run.stderr.slice(0, 300)}`);
	else facts.push("Compactor compacted the in-memory session");
	if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
	const final = readJsonl(join(dir, "upstream.jsonl")).filter((r) => r.kind === "final").at(-1);
	checkAnswer(dir, run.stdout.trim() || final?.answer || "", problems, facts);
}

// The task went on after the (first) overflow the upstream injected to its
// final answer with the secret.
function checkWentOn(dir, problems, facts) {
	const recs = readJsonl(join(dir, "upstream.jsonl"));
	const overflowAt = recs.findIndex((r) => r.overflow_injected);
	if (overflowAt < 0) problems.push("the upstream never injected an overflow");
	const final = recs.filter((r) => r.kind === "final").at(-1);
	if (!final || recs.indexOf(final) < overflowAt) problems.push("the task did not go on to its final answer after the compaction");
	else if (!final.answer?.includes(secretOf(dir))) problems.push(`final answer "${final.answer}" lacks the secret`);
	else facts.push(`the task went on after the compaction and finished (step ${final.step_reached})`);
}

// --mode json, an overflow answered by the server mid-task: pi compacts
// through Compactor, retries, and the task goes on to its end.
async function jsonOverflow(dir, problems, facts) {
	const { file, entries } = await runTask(dir, problems, { mode: "json", fake: ["--steps", "10", "--pad", "6000", "--overflow-tokens", "12000"] });
	if (!file) return;
	checkCompactorCompaction(entries, "summary", problems, facts);
	checkWentOn(dir, problems, facts);
	if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
	compareContexts(file, problems, facts);
}

// The kept user prompts are rendered into the summary text pi stores.
function checkUserPrompts(c, problems) {
	if (c && !(c.summary.startsWith("<user-messages>") && c.summary.includes(PROMPT))) problems.push("the summary does not render the kept user prompt");
	if (c && !Array.isArray(c.details?.keptPrompts)) problems.push("details lack keptPrompts");
}

// user-prompts: the kept prompts are rendered into the summary text pi stores.
async function jsonUserPrompts(dir, problems, facts) {
	const { file, entries } = await runTask(dir, problems, { mode: "json", contextWindow: 26000, config: { strategy: "user-prompts" } });
	if (!file) return;
	checkUserPrompts(checkCompactorCompaction(entries, "user-prompts", problems, facts), problems);
	checkAnswer(dir, answerOf("", entries), problems, facts);
	compareContexts(file, problems, facts);
}

// RPC: the task, /compactor stats and plan (pi notifications), /tree
// navigation with Compactor's branch summary, the run going on from the new
// position, and /compactor handoff into a new session.
async function rpcTree(dir, problems, facts) {
	await rpcTask(dir, { fake: ["--steps", "6", "--pad", "3000"] }, async (rpc) => {
		let mark = rpc.mark();
		await rpc.call({ type: "prompt", message: PROMPT }, "prompt");
		await rpc.waitAfter(mark, (ev) => ev.type === "agent_end", "agent_end of the task");
		const file = sessionFiles(dir).at(-1);
		if (!file) throw new Error("no session file after the task");

		// A manual compaction (/compact, RPC "compact") with instructions.
		const compacted = await rpc.call({ type: "compact", customInstructions: "Keep the secret's file name." }, "compact");
		const manual = compactions(readJsonl(file)).at(-1);
		if (!manual || manual.fromHook !== true || manual.details?.compactor?.strategy !== "summary") problems.push(`the manual compaction is not Compactor's: ${JSON.stringify(compacted).slice(0, 200)}`);
		else facts.push("a manual compact gave Compactor's compaction");
		compareContexts(file, problems, facts);

		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "/compactor stats" }, "/compactor stats");
		const stats = await rpc.waitAfter(mark, notifyMatching(/entries/i), "the stats notification");
		facts.push(`/compactor stats notified (${stats.message.split("\n")[0].slice(0, 60)})`);
		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "/compactor plan" }, "/compactor plan");
		await rpc.waitAfter(mark, notifyMatching(/token/i), "the plan notification");
		facts.push("/compactor plan notified");
		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "/compactor eval" }, "/compactor eval");
		await rpc.waitAfter(mark, notifyMatching(/fact kind/), "the eval notification");
		facts.push("/compactor eval notified");

		// Back to the first assistant message: the branch after it is left
		// behind and summarized.
		const before = readJsonl(file);
		const target = before.find((e) => e.type === "message" && e.message.role === "assistant");
		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: `/probe-nav ${target.id}` }, "/probe-nav");
		const nav = await rpc.waitAfter(mark, notifyMatching(/^probe-nav /), "the navigation result");
		if (/"cancelled":true/.test(nav.message)) problems.push(`navigation cancelled: ${nav.message}`);
		let entries = readJsonl(file);
		const summaries = entries.filter((e) => e.type === "branch_summary");
		const summary = summaries.at(-1);
		if (!summary) problems.push("no branch_summary entry after the navigation");
		else {
			if (summary.fromHook !== true) problems.push("the branch summary is not fromHook (pi summarized by itself)");
			if (!summary.details?.compactor) problems.push("the branch summary's details lack Compactor's figures");
			if (summary.parentId !== target.id) problems.push(`the branch summary hangs under ${summary.parentId}, want ${target.id}`);
			if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
			facts.push(`/tree navigation stored Compactor's branch summary (${summary.details?.compactor?.entriesSummarized} entries)`);
		}
		compareContexts(file, problems, facts);

		// The run goes on from the new position.
		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "Carry on from here and report the value stored in secret.txt." }, "second prompt");
		await rpc.waitAfter(mark, (ev) => ev.type === "agent_end", "agent_end of the second prompt");
		entries = readJsonl(file);
		const last = entries.at(-1);
		if (!(last?.type === "message" && last.message.role === "assistant")) problems.push("the second prompt got no answer in the session");
		else facts.push("the run went on from the new position");
		compareContexts(file, problems, facts);

		// Handoff: a new session whose first message is the handoff document.
		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "/compactor handoff" }, "/compactor handoff");
		let handoff = null;
		for (let i = 0; i < 100 && !handoff; i++) {
			const state = await rpc.call({ type: "get_state" }, "get_state");
			if (state.data?.sessionFile && state.data.sessionFile !== file) {
				const messages = (await rpc.call({ type: "get_messages" }, "get_messages")).data?.messages ?? [];
				handoff = messages[0] ?? null;
				if (!handoff) handoff = { none: true };
			} else await sleep(100);
		}
		if (!handoff) problems.push("/compactor handoff started no new session");
		else if (handoff.role !== "custom" || handoff.customType !== "handoff" || !String(JSON.stringify(handoff.content)).includes("<handoff-context>")) problems.push(`the new session does not start with the handoff document: ${JSON.stringify(handoff).slice(0, 200)}`);
		else facts.push("/compactor handoff started a new session with the handoff document");
	});
}

// A Compactor trigger preset instead of pi's threshold: codex fires at 90% of
// the configured 12000-token window, far below pi's own threshold (200000 -
// 16384), and pi compacts through Compactor once the agent is done.
async function rpcTrigger(dir, problems, facts) {
	await rpcTask(dir, { config: { trigger: "codex", contextWindow: 12000 } }, async (rpc) => {
		const mark = rpc.mark();
		await rpc.call({ type: "prompt", message: PROMPT }, "prompt");
		await rpc.waitAfter(mark, (ev) => ev.type === "agent_end", "agent_end of the task");
		const fired = await rpc.waitAfter(mark, notifyMatching(/codex trigger fired/), "the trigger notification");
		facts.push(fired.message.replace(/^Compactor's /, ""));
		const end = await rpc.waitAfter(mark, (ev) => ev.type === "compaction_end", "compaction_end");
		if (!end.result) problems.push(`the compaction did not happen: ${JSON.stringify(end).slice(0, 200)}`);
		const file = sessionFiles(dir).at(-1);
		const entries = readJsonl(file);
		checkCompactorCompaction(entries, "summary", problems, facts);
		if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
		compareContexts(file, problems, facts);
	});
}

// Without the extension pi behaves as before: its own compaction, with its
// own summarization request to the model.
async function printDisabled(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000, extension: false });
	if (!file) return;
	const list = compactions(entries);
	if (list.length === 0) problems.push("pi did not compact");
	else if (list.some((c) => c.fromHook || c.details?.compactor)) problems.push("a compaction came from Compactor with the extension off");
	else facts.push("pi compacted by itself");
	if (summaryRequests(dir) === 0) problems.push("pi's own summarization request did not reach the model server");
	if (/pi-compactor/.test(run.stderr)) problems.push("pi-compactor spoke although it was not loaded");
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

// The binary missing: pi's own compaction, and the user is told what to install.
async function printMissingBinary(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000, env: { COMPACTOR_BIN: join(dir, "no-such-compactor") } });
	if (!file) return;
	checkFallback(entries, run.stderr, /pi-compactor: .*no-such-compactor.*missing or not executable.*COMPACTOR_BIN/, problems, facts, "the user was told what to install");
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
}

// Old tool outputs replaced in what is sent (the probe counts `count` in each
// request), never in the session file (which must not contain `marker`), and
// never the newest result.
function checkRewrittenInFlight(dir, file, count, marker, what, problems, facts) {
	const most = Math.max(0, ...readJsonl(join(dir, "probe.jsonl")).map((p) => p[count]));
	if (most === 0) problems.push(`no request carried ${what} tool outputs`);
	else facts.push(`requests carried up to ${most} ${what} tool outputs`);
	if (readFileSync(file, "utf8").includes(marker)) problems.push(`the session file was changed (it holds a ${what} output)`);
	if (readJsonl(join(dir, "upstream.jsonl")).some((r) => r.newest_result && r.newest_result.ok === false)) problems.push("a newest tool result reached the model changed");
}

// mask: old tool outputs masked in what is sent, the session file untouched.
async function printMask(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { fake: ["--steps", "30", "--pad", "2000"], config: { strategy: "mask" } });
	if (!file) return;
	checkRewrittenInFlight(dir, file, "masked", "[Masked output of", "masked", problems, facts);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
}

// oh-my-pi's tool-output pruning, the same way: the notice replaces old
// outputs in what is sent, the session file keeps them.
async function printPrune(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { fake: ["--steps", "16", "--pad", "4000"], config: { prune: { protectTokens: 3000, minimumSavings: 1000 } } });
	if (!file) return;
	checkRewrittenInFlight(dir, file, "pruned", "[Output truncated", "pruned", problems, facts);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
}

// Compactor failing (here: the configured notes file does not exist): pi
// compacts by itself and the user is told why.
async function printFailure(dir, problems, facts) {
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000, config: { strategy: "notes", notes: "no-such-notes.md" } });
	if (!file) return;
	checkFallback(entries, run.stderr, /pi-compactor: Compactor failed, pi compacts by itself: compactor compact: .*no-such-notes.md: no such file/, problems, facts);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
}

// A configured `compactor serve` that does not answer: pi compacts by itself
// and says why.
async function printServeDown(dir, problems, facts) {
	// A loopback port nobody listens on: taken, then given back.
	const port = await new Promise((resolvePort) => {
		const server = createServer().listen(0, "127.0.0.1", () => {
			const { port: p } = server.address();
			server.close(() => resolvePort(p));
		});
	});
	const { run, file, entries } = await runTask(dir, problems, { contextWindow: 26000, config: { serve: `http://127.0.0.1:${port}`, timeoutMs: 5000 } });
	if (!file) return;
	checkFallback(entries, run.stderr, /pi-compactor: Compactor failed, pi compacts by itself: compactor serve at http:\/\/127\.0\.0\.1:\d+ unreachable: .*ECONNREFUSED/, problems, facts);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
}

// ------------------------------------------------- through `compactor serve`

// The parameters docs/api.md documents for POST .../compact (the stateless
// compact takes the same): the backquoted names of its "Parameters:"
// sentence, parenthesized remarks left out.
function documentedCompactParameters() {
	const doc = readFileSync(join(root, "docs/api.md"), "utf8");
	const section = doc.split("\n### ").find((s) => s.startsWith("`POST /compactor/v1/sessions/{id}/compact`")) ?? "";
	const sentence = (section.match(/Parameters:([\s\S]*?)\.\s/) ?? ["", ""])[1].replace(/\([^)]*\)/g, "");
	return new Set([...sentence.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]));
}

// serve's request log lines of the stateless compact: "POST
// /compactor/v1/compact?QUERY STATUS ...". Returns [{params, status}].
function serveCompactRequests(serveLog) {
	return serveLog
		.split("\n")
		.map((line) => line.match(/^POST \/compactor\/v1\/compact\?(\S*) (\d{3}) /))
		.filter(Boolean)
		.map((m) => ({ params: new URLSearchParams(m[1]), status: Number(m[2]) }));
}

// Every parameter the extension sent is one docs/api.md documents, and the
// ones that decide the result have the values wanted.
function checkServeParameters(request, want, problems, facts) {
	const documented = documentedCompactParameters();
	if (documented.size < 5) return problems.push(`could not read the documented parameters from docs/api.md (${[...documented]})`);
	const sent = [...request.params.keys()];
	const unknown = sent.filter((k) => !documented.has(k));
	if (unknown.length) problems.push(`the extension sent parameters docs/api.md does not document: ${unknown.join(", ")}`);
	for (const [key, value] of Object.entries(want)) {
		// serve's log redacts the values of token-like names (keepRecentTokens=REDACTED).
		if (!request.params.has(key)) problems.push(`the extension did not send ${key}`);
		else if (value !== null && request.params.get(key) !== value) problems.push(`the extension sent ${key}=${request.params.get(key)}, want ${value}`);
	}
	facts.push(`the extension sent only documented parameters (${sent.join(", ")})`);
}

// serve honoured pi's keepRecentTokens (3000): the compaction keeps from where
// `compactor plan` cuts the same branch with 3000, and serve's own default
// (20000) would cut elsewhere.
function checkKeepHonoured(file, c, problems, facts) {
	const cut = (keep) => {
		const r = spawnSync(opts.compactor, ["plan", file, "--leaf", c.parentId, "--keep-recent-tokens", String(keep), "--json"], { encoding: "utf8", maxBuffer: 1 << 28 });
		if (r.status !== 0) throw new Error(`compactor plan failed: ${r.stderr.slice(0, 200)}`);
		return JSON.parse(r.stdout).preparation?.firstKeptEntryId ?? null;
	};
	const [wanted, otherwise] = [cut(3000), cut(20000)];
	if (c.firstKeptEntryId !== wanted) problems.push(`serve kept from ${c.firstKeptEntryId}, keepRecentTokens 3000 keeps from ${wanted}`);
	else if (wanted === otherwise) problems.push("keepRecentTokens 3000 and 20000 cut at the same entry: the check proves nothing");
	else facts.push(`serve honoured keepRecentTokens (kept from ${wanted}; serve's default would ${otherwise ? `keep from ${otherwise}` : "not compact"})`);
}

// pi with the extension configured to use a real `compactor serve`, and no
// binary at all: the compaction pi stores can only have come from serve's
// POST /compactor/v1/compact (its request log has it). pi and `compactor
// context` build the same context afterwards, and the task's answer is there.
async function printServe(dir, problems, facts) {
	const env = { COMPACTOR_BIN: join(dir, "no-such-compactor") };
	const { run, file, entries, serveLog } = await runTask(dir, problems, { contextWindow: 26000, serve: [], env });
	if (!file) return;
	if (!/pi-compactor: .*no-such-compactor.*compaction goes to http:\/\/127\.0\.0\.1:\d+/.test(run.stderr)) problems.push(`no notice that only the service compacts: ${run.stderr.slice(0, 300)}`);
	const c = checkCompactorCompaction(entries, "summary", problems, facts);
	if (c && !/^http:\/\/127\.0\.0\.1:\d+$/.test(c.details?.compactor?.serve ?? "")) problems.push(`details.compactor.serve is ${c.details?.compactor?.serve}`);
	const requests = serveCompactRequests(serveLog);
	if (requests.length === 0 || requests.some((r) => r.status !== 200)) problems.push(`serve's log does not show the compaction answered (${requests.map((r) => r.status)}): ${serveLog.slice(0, 300)}`);
	else facts.push(`serve answered ${requests.length} POST /compactor/v1/compact`);
	if (requests.length) checkServeParameters(requests.at(-1), { strategy: "summary", summarizer: "offline", dryRun: "true", keepRecentTokens: null, reserveTokens: null }, problems, facts);
	if (c) checkKeepHonoured(file, c, problems, facts);
	if (summaryRequests(dir) !== 0) problems.push("the model server got a summarization request");
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

// RPC, user-prompts through serve: the task crosses pi's threshold and pi
// compacts after it; serve honours the strategy (the prompts rendered into
// the summary), and the run goes on with the next prompt after the compaction.
async function rpcServeUserPrompts(dir, problems, facts) {
	const serveLog = await rpcTask(dir, { contextWindow: 26000, serve: [], config: { strategy: "user-prompts" } }, async (rpc) => {
		let mark = rpc.mark();
		await rpc.call({ type: "prompt", message: PROMPT }, "prompt");
		const end = await rpc.waitAfter(mark, (ev) => ev.type === "compaction_end", "compaction_end");
		if (!end.result) problems.push(`the compaction did not happen: ${JSON.stringify(end).slice(0, 200)}`);
		const file = sessionFiles(dir).at(-1);
		if (!file) throw new Error("no session file after the task");
		const c = checkCompactorCompaction(readJsonl(file), "user-prompts", problems, facts);
		checkUserPrompts(c, problems);
		if (c && !c.details?.compactor?.serve) problems.push("the compaction does not name the service");
		compareContexts(file, problems, facts);

		mark = rpc.mark();
		await rpc.call({ type: "prompt", message: "Carry on from here and report the value stored in secret.txt." }, "second prompt");
		await rpc.waitAfter(mark, (ev) => ev.type === "agent_end", "agent_end of the second prompt");
		const entries = readJsonl(file);
		const at = entries.findIndex((e) => e.id === c?.id);
		if (at < 0 || !entries.slice(at + 1).some((e) => e.type === "message" && e.message.role === "assistant")) problems.push("no answer after the compaction");
		else checkAnswer(dir, answerOf("", entries), problems, facts);
		compareContexts(file, problems, facts);
	});
	const requests = serveCompactRequests(serveLog);
	if (!requests.some((r) => r.status === 200 && r.params.get("strategy") === "user-prompts")) problems.push(`serve's log has no answered user-prompts compaction: ${serveLog.slice(0, 300)}`);
	else checkServeParameters(requests.at(-1), { strategy: "user-prompts", dryRun: "true", keepRecentTokens: null }, problems, facts);
}

// serve answers with an error (a summarizer model it does not know): pi
// compacts by itself and the user is told serve's reason.
async function printServeError(dir, problems, facts) {
	const { run, file, entries, serveLog } = await runTask(dir, problems, { contextWindow: 26000, serve: [], config: { summarizer: "no-such-model" } });
	if (!file) return;
	const requests = serveCompactRequests(serveLog);
	if (!requests.some((r) => r.status === 400)) problems.push(`serve's log has no refused compaction: ${serveLog.slice(0, 300)}`);
	checkFallback(entries, run.stderr, /pi-compactor: Compactor failed, pi compacts by itself: compactor serve: HTTP 400 invalid_argument: summarizer: no model named "no-such-model"/, problems, facts);
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

// strategy notes with a service configured: the notes file is on pi's side
// and serve's API takes none, so the binary compacts; serve is not asked.
async function printServeNotes(dir, problems, facts) {
	writeFileSync(join(dir, "notes.md"), "# Notes\n\nThe secret is in secret.txt; the steps write notes/step-NN.txt.\n");
	const { run, file, entries, serveLog } = await runTask(dir, problems, { contextWindow: 26000, serve: [], config: { strategy: "notes", notes: join(dir, "notes.md") } });
	if (!file) return;
	const c = checkCompactorCompaction(entries, "notes", problems, facts);
	if (c && !c.summary.includes("The secret is in secret.txt")) problems.push("the summary is not the notes file");
	if (serveCompactRequests(serveLog).length) problems.push("the notes compaction went to serve, which has no notes");
	checkAnswer(dir, answerOf(run.stdout, entries), problems, facts);
	compareContexts(file, problems, facts);
}

const scenarios = { "print-threshold": printThreshold, "print-no-session": printNoSession, "print-model-summarizer": printModelSummarizer, "json-overflow": jsonOverflow, "json-user-prompts": jsonUserPrompts, "rpc-tree": rpcTree, "rpc-trigger": rpcTrigger, "print-disabled": printDisabled, "print-missing-binary": printMissingBinary, "print-mask": printMask, "print-prune": printPrune, "print-failure": printFailure, "print-serve-down": printServeDown, "print-serve": printServe, "rpc-serve-user-prompts": rpcServeUserPrompts, "print-serve-error": printServeError, "print-serve-notes": printServeNotes };

let failed = 0;
const wanted = opts.only ? opts.only.split(",") : Object.keys(scenarios);
for (const name of wanted) {
	if (!scenarios[name]) {
		console.error(`pi_extension: unknown scenario ${name} (${Object.keys(scenarios).join(", ")})`);
		process.exit(2);
	}
	const dir = join(opts.work, name);
	mkdirSync(join(dir, "ws"), { recursive: true });
	mkdirSync(join(dir, "home"), { recursive: true });
	const problems = [];
	const facts = [];
	const t0 = Date.now();
	try {
		await scenarios[name](dir, problems, facts);
	} catch (err) {
		problems.push(err.message);
	}
	stopAll();
	const secs = ((Date.now() - t0) / 1000).toFixed(1);
	if (problems.length) {
		failed++;
		console.log(`pi_extension: FAIL ${name} (${secs}s): ${problems.join("; ")} [files: ${dir}]`);
	} else console.log(`pi_extension: PASS ${name} (${secs}s): ${facts.join("; ")}`);
}
process.exit(failed ? 1 : 0);
