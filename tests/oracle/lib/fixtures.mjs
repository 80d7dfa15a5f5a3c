// The fixture sessions under tests/fixtures/pi and pi 0.73.1's golden outputs for them
// (`oracle.mjs fixtures DIR`; the same bytes on every run, so a test can regenerate and compare).
//
//   long.v1.jsonl       format v1 (no ids): a long coding session without compaction; header with the old
//                       provider/modelId/thinkingLevel fields, usage without totalTokens, a model_change after an
//                       aborted first answer, a thinking_level_change in most turns, aborted assistants (empty
//                       content, text cut short, a tool call with partialJson), an error assistant with
//                       partialJson, large tool results, failing commands and edits.
//   compacted.v1.jsonl  format v1: header with the legacy branchedFrom field, two compactions whose
//                       firstKeptEntryIndex (the header is index 0) pi's own prepareCompaction chose at the time,
//                       model and thinking-level changes, user shell commands (bashExecution), aborted assistants
//                       (empty, partialJson), an error assistant; its last turn is too large to keep whole (a split
//                       turn at keepRecentTokens 20000).
//   *.v3.jsonl          the same files after pi's own migration (SessionManager.open), ids reproducible.
//   written.jsonl       written through pi's SessionManager API (written.mjs).
//   expected/*.json     inspect.mjs output (full context, estimate, preparation with the serialized
//                       conversation) for the cases the tests use; expected/*.omp-rules.json: omp_rules.mjs.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { assistant, bashExecution, sessionText, text, toolResult, usage } from "./builders.mjs";
import { inspect } from "./inspect.mjs";
import { o200kCounter, pruneToolOutputs, thresholdTable } from "./omp_rules.mjs";
import { makeDeterministic, RealDate } from "./pi.mjs";
import { camel, code, prose, Rng, sentence, source, testOutput } from "./text.mjs";
import { writeSession } from "./written.mjs";

const PACKAGES = ["coding-agent", "agent", "ai", "tui", "web-ui"];
const MODULES = ["session-manager", "agent-session", "compaction", "interactive-mode", "footer", "model-selector", "theme", "settings-manager", "bash-executor", "rpc-mode", "print-mode", "messages", "tool-runner", "renderer", "oauth"];
const SUBDIRS = ["src", "src/core", "src/modes/interactive", "src/modes/interactive/components", "src/utils", "test"];
const TS_ERRORS = ["error TS2339: Property '%N' does not exist on type 'AgentSession'.", "error TS2345: Argument of type 'string' is not assignable to parameter of type 'ThinkingLevel'.", "error TS2304: Cannot find name '%N'.", "error TS7006: Parameter '%N' implicitly has an 'any' type."];

// A v1 session under construction: entries without ids, one clock for entry and message timestamps.
class V1Session {
	constructor(rng, header, start, { absolutePaths, withTotalTokens, testLines = 30 }) {
		this.rng = rng;
		this.header = header;
		this.entries = [];
		this.clock = RealDate.parse(start);
		this.cwd = header.cwd;
		this.absolutePaths = absolutePaths;
		this.withTotalTokens = withTotalTokens;
		this.testLines = testLines;
		this.context = 4000; // rough prompt size behind the usage numbers
		this.model = { api: "anthropic-messages", provider: "anthropic", model: header.modelId };
		this.calls = 0;
		this.commands = 0;
	}

	tick(lo, hi) {
		this.clock += this.rng.int(lo, hi);
	}

	push(entry) {
		this.tick(5, 900);
		this.entries.push({ type: entry.type, timestamp: new RealDate(this.clock).toISOString(), ...entry });
	}

	message(m) {
		this.push({ type: "message", message: m });
		this.context += Math.ceil(JSON.stringify(m.content ?? m.output ?? "").length / 4);
	}

	usage(output) {
		const r = this.rng;
		const cacheWrite = r.int(100, 4000);
		const u = usage(r.int(0, 12), output, Math.max(0, this.context - cacheWrite), cacheWrite);
		if (!this.withTotalTokens) delete u.totalTokens;
		return u;
	}

	path() {
		const r = this.rng;
		const p = `packages/${r.pick(PACKAGES)}/${r.pick(SUBDIRS)}/${r.pick(MODULES)}.ts`;
		return this.absolutePaths ? `${this.cwd}/${p}` : p;
	}

	command() {
		const r = this.rng;
		const mod = r.pick(MODULES);
		const pkg = r.pick(PACKAGES);
		this.commands++;
		return r.pick([
			() => `npx vitest --run test/${mod}.test.ts -t "${sentence(r, 4).slice(0, -1).toLowerCase()}"`,
			() => `npm run build -w packages/${pkg} -- --filter ${r.pick(MODULES)}`,
			() => `npx tsc --noEmit -p packages/${pkg} --incremental ${r.int(0, 1) ? "true" : "false"}`,
			() => `cd packages/${pkg} && npx vitest --run -t "${sentence(r, 3).slice(0, -1).toLowerCase()}"`,
			() => `node scripts/check-${mod}.mjs --strict --max ${r.int(1, 500)}`,
			() => `git commit -am "${sentence(r, 5).slice(0, -1)}"`,
			() => `npm run check -- --filter ${pkg} --grep ${camel(r.pick(MODULES))}`,
			() => `rg -n "${camel(mod)}" packages/${pkg}/src`,
			() => "git status",
		])();
	}

	toolCall(name) {
		const r = this.rng;
		const id = `toolu_01${r.base64(22).replace(/[+/]/g, "x")}`;
		this.calls++;
		switch (name) {
			case "read":
				return { type: "toolCall", id, name, arguments: r.chance(0.7) ? { path: this.path() } : { path: this.path(), offset: r.int(1, 900), limit: r.pick([100, 200, 400]) } };
			case "edit":
				return { type: "toolCall", id, name, arguments: { path: this.path(), oldText: source(r, r.int(40, 300)), newText: source(r, r.int(40, 400)) } };
			case "write":
				return { type: "toolCall", id, name, arguments: { path: this.path(), content: source(r, r.int(300, 1500)) } };
			default:
				return { type: "toolCall", id, name: "bash", arguments: { command: this.command() } };
		}
	}

	result(call, large) {
		const r = this.rng;
		const at = this.clock;
		const a = call.arguments;
		switch (call.name) {
			case "read":
				if (r.chance(0.04)) return toolResult(call, `ENOENT: no such file or directory, open '${a.path}'`, at, { isError: true });
				return toolResult(call, code(r, large ? r.int(5000, 9000) : r.int(300, 2400), a.offset ?? 1), at);
			case "edit":
				if (r.chance(0.08)) {
					return toolResult(call, `Could not find the exact text in ${a.path}. The old text must match exactly including all whitespace and newlines.`, at, { isError: true });
				}
				return toolResult(call, `Successfully replaced text in ${a.path}.`, at, { details: { diff: code(r, r.int(120, 900)) } });
			case "write":
				return toolResult(call, `Successfully wrote ${a.content.length} bytes to ${a.path}`, at);
			default: {
				if (r.chance(0.15)) {
					const line = r.pick(TS_ERRORS).replace("%N", camel(r.pick(MODULES)));
					const where = `${this.path().replace(`${this.cwd}/`, "")}(${r.int(1, 900)},${r.int(1, 40)})`;
					return toolResult(call, `${where}: ${line}\n${code(r, r.int(100, 600))}\n\nCommand exited with code ${r.pick([1, 2])}`, at, { isError: true });
				}
				const out = a.command.startsWith("git commit") ? `[main ${r.hex(7)}] ${a.command.slice(15, -1)}\n ${r.int(1, 9)} files changed` : testOutput(r, r.int(3, large ? 200 : this.testLines));
				return toolResult(call, out, at);
			}
		}
	}

	// One assistant step with tool calls and their results.
	step(large) {
		const r = this.rng;
		const blocks = [];
		if (r.chance(0.5)) blocks.push({ type: "thinking", thinking: prose(r, r.int(60, 700)), thinkingSignature: r.base64(r.int(80, 300)) });
		if (r.chance(0.55)) blocks.push(text(prose(r, r.int(30, 250))));
		const calls = [];
		const kinds = large ? ["read", "read", "bash"] : ["read", "read", "edit", "edit", "bash", "bash", "bash", "bash", "write"];
		for (let k = r.chance(0.8) ? 1 : r.int(2, 3); k > 0; k--) calls.push(this.toolCall(r.pick(kinds)));
		this.tick(1500, 20000);
		this.message(assistant([...blocks, ...calls], this.usage(r.int(40, 900)), this.clock, this.model));
		for (const c of calls) this.message(this.result(c, large));
	}

	user(t) {
		this.tick(20000, 400000);
		this.message({ role: "user", content: [text(t)], timestamp: this.clock });
	}

	answer() {
		this.tick(1500, 20000);
		this.message(assistant([text(prose(this.rng, this.rng.int(80, 900)))], this.usage(this.rng.int(40, 1200)), this.clock, this.model));
	}

	turn(steps, large = false) {
		const r = this.rng;
		this.user(`${sentence(r, r.int(4, 10))} Look at ${this.path()} and ${prose(r, r.int(20, 500))}`);
		for (let s = 0; s < steps; s++) this.step(large);
		this.answer();
	}

	// Interrupted answers, as pi stores them.
	aborted(kind) {
		const r = this.rng;
		this.tick(500, 9000);
		const base = { ...this.model, usage: usage(0, 0), timestamp: this.clock };
		if (!this.withTotalTokens) delete base.usage.totalTokens;
		if (kind === "empty") {
			this.message({ role: "assistant", content: [], ...base, stopReason: "aborted", errorMessage: "Request was aborted" });
		} else if (kind === "text") {
			this.message({ role: "assistant", content: [text(prose(r, r.int(40, 200)))], ...base, usage: this.usage(r.int(1, 40)), stopReason: "aborted", errorMessage: "Request was aborted" });
		} else {
			// A tool call cut off while streaming: partialJson holds the raw text, arguments what parsed so far.
			const call = this.toolCall(kind === "error-partial" ? "edit" : r.pick(["bash", "edit", "read"]));
			const raw = JSON.stringify(call.arguments);
			const partialJson = raw.slice(0, Math.max(8, Math.floor(raw.length / 3)));
			const cut = { ...call, arguments: Object.fromEntries(Object.entries(call.arguments).slice(0, 1)), partialJson };
			const blocks = [text(prose(r, r.int(30, 120))), cut];
			if (kind === "error-partial") this.message({ role: "assistant", content: blocks, ...base, usage: this.usage(r.int(1, 40)), stopReason: "error", errorMessage: "terminated" });
			else this.message({ role: "assistant", content: blocks, ...base, stopReason: "aborted", errorMessage: "Request was aborted" });
		}
	}

	text() {
		return sessionText(this.header, this.entries);
	}
}

// pi's cut point for a v1 session as it stands: the file is migrated in memory (pi's migrateSessionEntries) and
// prepareCompaction() runs on it, as pi did when it compacted v1 sessions.
function v1Compaction(pi, s, summaryTitle) {
	const migrated = JSON.parse(JSON.stringify([s.header, ...s.entries]));
	pi.session.migrateSessionEntries(migrated);
	const path = migrated.slice(1);
	const prep = pi.compaction.prepareCompaction(path, { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 });
	const { readFiles, modifiedFiles } = pi.compaction.computeFileLists(prep.fileOps);
	const r = s.rng;
	const summary =
		`# ${summaryTitle}\n\n## Goal\n${prose(r, r.int(200, 400))}\n\n## Progress\n### Done\n${Array.from({ length: r.int(4, 9) }, () => `- [x] ${prose(r, r.int(40, 140))}`).join("\n")}\n\n` +
		`### In Progress\n- [ ] ${prose(r, 120)}\n\n## Key Decisions\n- **${prose(r, 24)}**: ${prose(r, 160)}\n\n## Next Steps\n1. ${prose(r, 140)}` +
		pi.compaction.formatFileOperations(readFiles, modifiedFiles);
	s.tick(20000, 90000);
	s.push({ type: "compaction", summary, firstKeptEntryIndex: path.findIndex((e) => e.id === prep.firstKeptEntryId) + 1, tokensBefore: prep.tokensBefore });
	s.context = 4000 + Math.ceil(summary.length / 4) + 20000;
}

const LEVELS = ["off", "minimal", "low", "medium", "high"];

export function longSession() {
	const rng = new Rng(0x10e6);
	const header = { type: "session", id: "5c1d2b0e-7f4a-4c3e-9a1b-2d3e4f5a6b7c", timestamp: "2026-01-20T09:12:44.391Z", cwd: "/home/dev/pi-mono", provider: "anthropic", modelId: "claude-sonnet-4-5", thinkingLevel: "off" };
	const s = new V1Session(rng, header, "2026-01-20T09:12:01.000Z", { absolutePaths: false, withTotalTokens: false });
	s.user("/mode");
	s.model = { api: "openai-responses", provider: "openai", model: "gpt-5.1-codex" };
	s.aborted("empty");
	s.model = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
	s.push({ type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" });
	const specials = { 6: "error-partial", 19: "partial", 31: "partial" };
	for (let t = 0; t < 40; t++) {
		s.push({ type: "thinking_level_change", thinkingLevel: rng.pick(LEVELS) });
		if (rng.chance(0.6)) s.push({ type: "thinking_level_change", thinkingLevel: rng.pick(LEVELS) });
		if (specials[t]) {
			s.user(prose(rng, rng.int(40, 300)));
			s.step(false);
			s.aborted(specials[t]);
			continue;
		}
		if (t % 5 === 3) {
			s.user(prose(rng, rng.int(20, 200)));
			s.aborted(rng.chance(0.7) ? "empty" : "text");
			continue;
		}
		s.turn(rng.int(1, 5), t % 9 === 4);
	}
	return s;
}

export function compactedSession(pi) {
	const rng = new Rng(0xc0c0);
	const cwd = "/home/dev/pi-mono";
	const header = {
		type: "session",
		id: "9e8d7c6b-5a49-4382-b1c0-d9e8f7a6b5c4",
		timestamp: "2026-02-03T14:05:10.118Z",
		cwd,
		provider: "anthropic",
		modelId: "claude-opus-4-5",
		thinkingLevel: "off",
		branchedFrom: "/home/dev/.pi/agent/sessions/--home-dev-pi-mono--/2026-02-03T14-04-31-002Z_1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b.jsonl",
	};
	const s = new V1Session(rng, header, "2026-02-03T11:40:00.000Z", { absolutePaths: true, withTotalTokens: true, testLines: 70 });
	const models = [["anthropic", "claude-3-opus-20240229"], ["anthropic", "claude-opus-4-5"], ["anthropic", "claude-sonnet-4-5"], ["anthropic", "claude-opus-4-5"], ["openai", "gpt-5.1"]];
	const events = {
		2: () => s.push({ type: "thinking_level_change", thinkingLevel: "minimal" }),
		9: () => s.message(bashExecution("ls", "AGENTS.md\nREADME.md\npackage.json\npackages\nscripts\ntsconfig.json\n", s.clock)),
		13: () => s.push({ type: "thinking_level_change", thinkingLevel: "high" }),
		22: () => s.message(bashExecution("npm run check", `${testOutput(rng, 12, 1)}\n`, s.clock, { exitCode: 1 })),
		27: () => s.push({ type: "thinking_level_change", thinkingLevel: "medium" }),
		36: () => s.message(bashExecution("git status", "On branch refactor\nChanges not staged for commit:\n  modified:   packages/coding-agent/src/core/agent-session.ts\n", s.clock)),
		41: () => s.push({ type: "thinking_level_change", thinkingLevel: "low" }),
		45: () => s.push({ type: "thinking_level_change", thinkingLevel: "high" }),
	};
	let m = 0;
	for (let t = 0; t < 50; t++) {
		events[t]?.();
		if (t % 10 === 7) {
			const [provider, modelId] = models[m++ % models.length];
			s.push({ type: "model_change", provider, modelId });
			s.model = { api: provider === "openai" ? "openai-responses" : "anthropic-messages", provider, model: modelId };
		}
		if (t === 16) v1Compaction(pi, s, "Context Checkpoint: session refactoring");
		if (t === 30) v1Compaction(pi, s, "Context Checkpoint: session refactoring, part 2");
		if (t === 47) {
			s.user(prose(rng, 120));
			s.step(false);
			s.tick(500, 3000);
			s.message({ role: "assistant", content: [], ...s.model, usage: usage(0, 0), stopReason: "error", timestamp: s.clock, errorMessage: `400 {"type":"error","error":{"type":"invalid_request_error","message":"messages.${rng.int(100, 300)}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after"}}` });
			continue;
		}
		if (t % 6 === 5) {
			s.user(prose(rng, rng.int(20, 200)));
			if (t % 18 === 11) s.step(false);
			s.aborted(t % 18 === 11 ? "partial" : "empty");
			continue;
		}
		s.turn(t === 49 ? 10 : rng.int(1, 6), t === 49);
	}
	return s;
}

// Migrates a copy of `v1Text` with pi (SessionManager.open rewrites it) and returns the v3 text.
function migrate(pi, v1Text, seed) {
	const dir = mkdtempSync(join(tmpdir(), "compactor-oracle-migrate-"));
	try {
		const file = join(dir, "session.jsonl");
		writeFileSync(file, v1Text);
		makeDeterministic(seed);
		pi.session.SessionManager.open(file, dir);
		return readFileSync(file, "utf8");
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

// Migrates IN (any version) into OUT with pi; `seed` makes the new ids reproducible.
export function migrateFile(pi, input, output, seed) {
	copyFileSync(input, output);
	if (seed !== undefined) makeDeterministic(seed);
	const sm = pi.session.SessionManager.open(output, dirname(output));
	return { out: output, version: sm.getHeader().version, entries: sm.getEntries().length, leafId: sm.getLeafId() };
}

function golden(pi, dir, name, file, leaf, keep) {
	const result = inspect(pi, { file: join(dir, file), leaf, keepRecentTokens: keep, reserveTokens: 16384, messages: "full", serialize: true });
	result.file = `tests/fixtures/pi/${file}`;
	writeFileSync(join(dir, "expected", name), `${JSON.stringify(result)}\n`);
}

function ompRules(pi, dir, name, file) {
	const sm = pi.session.SessionManager.open(join(dir, file), dir);
	const path = sm.getBranch();
	const out = {
		source: `tests/fixtures/pi/${file}, file leaf`,
		derivedFrom: "oh-my-pi 15.7.2's documented threshold and pruneToolOutputs rules (tests/oracle/lib/omp_rules.mjs); o200k_base counts by tiktoken 1.0.22",
		...thresholdTable(path),
		pruneToolOutputs: pruneToolOutputs(path, o200kCounter()),
	};
	writeFileSync(join(dir, "expected", name), `${JSON.stringify(out, null, 1)}\n`);
}

export function writeFixtures(pi, dir) {
	mkdirSync(join(dir, "expected"), { recursive: true });
	const files = [];
	const put = (name, body) => {
		writeFileSync(join(dir, name), body);
		files.push(name);
	};
	makeDeterministic(0x0f1c0001);
	const long = longSession().text();
	put("long.v1.jsonl", long);
	put("long.v3.jsonl", migrate(pi, long, 0x0f1c0002));
	makeDeterministic(0x0f1c0003);
	const compacted = compactedSession(pi).text();
	put("compacted.v1.jsonl", compacted);
	put("compacted.v3.jsonl", migrate(pi, compacted, 0x0f1c0004));
	const written = writeSession(pi, 1);
	put("written.jsonl", written.text);

	golden(pi, dir, "written.k20000.json", "written.jsonl", null, 20000);
	golden(pi, dir, "written.k2000.json", "written.jsonl", null, 2000);
	golden(pi, dir, "written.before-compaction.k2000.json", "written.jsonl", written.ids.beforeCompaction, 2000);
	golden(pi, dir, "compacted.k20000.json", "compacted.v3.jsonl", null, 20000);
	golden(pi, dir, "long.k20000.json", "long.v3.jsonl", null, 20000);
	ompRules(pi, dir, "compacted.omp-rules.json", "compacted.v3.jsonl");
	ompRules(pi, dir, "long.omp-rules.json", "long.v3.jsonl");
	return { dir, files, ids: written.ids };
}
