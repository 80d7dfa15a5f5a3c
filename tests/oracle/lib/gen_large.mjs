// A large, realistic v3 session of coding-agent traffic, written through pi's own SessionManager with
// reproducible ids and clock. Compactions take their cut point, tokensBefore and file lists from pi's
// prepareCompaction(); branch summaries take the abandoned entries from pi's
// collectEntriesForBranchSummary()/prepareBranchEntries(). Summary texts are generated (no model is called).
//
// options: {entries: 20000, compactEvery: 25 (turns; 0 = never), branchEvery: 400 (turns; 0 = never),
//           seed: 1}. About 2.3 KB per entry.
import { writeFileSync } from "node:fs";
import { assistant, bashExecution, sessionText, text, toolResult, usage, user } from "./builders.mjs";
import { advanceClock, makeDeterministic } from "./pi.mjs";
import { code, filePath, prose, Rng, source, testOutput } from "./text.mjs";

const SYSTEM_PROMPT_TOKENS = 6000;
const COMMANDS = ["npm run check", "npx vitest --run test/compaction.test.ts", "npm run build", "make -j2 test", "npx tsc --noEmit", "npm test -- --reporter dot"];

class LargeSession {
	constructor(pi, rng, sm) {
		this.C = pi.compaction;
		this.rng = rng;
		this.sm = sm;
		this.context = SYSTEM_PROMPT_TOKENS; // the running context size behind the usage numbers
		this.turn = 0;
		this.calls = 0;
	}

	append(message) {
		this.context += this.C.estimateTokens(message);
		return this.sm.appendMessage(message);
	}

	usageFor(output) {
		const r = this.rng;
		const cacheRead = Math.max(0, this.context - r.int(200, 3000));
		return usage(this.context - cacheRead, output, cacheRead, r.int(0, 3000));
	}

	toolCall() {
		const r = this.rng;
		const id = `toolu_01${r.base64(22).replace(/[+/]/g, "x")}`;
		this.calls++;
		switch (r.pick(["read", "read", "read", "bash", "bash", "edit", "edit", "write", "grep"])) {
			case "read":
				return { type: "toolCall", id, name: "read", arguments: r.chance(0.5) ? { path: filePath(r) } : { path: filePath(r), offset: r.int(1, 800), limit: 200 } };
			case "bash":
				return { type: "toolCall", id, name: "bash", arguments: { command: r.pick(COMMANDS) } };
			case "edit":
				return { type: "toolCall", id, name: "edit", arguments: { path: filePath(r), oldText: source(r, r.int(80, 400)), newText: source(r, r.int(80, 500)) } };
			case "write":
				return { type: "toolCall", id, name: "write", arguments: { path: filePath(r), content: source(r, r.int(800, 3000)) } };
			default:
				return { type: "toolCall", id, name: "grep", arguments: { pattern: r.pick(["findCutPoint", "estimateTokens", "TODO"]), path: "src" } };
		}
	}

	resultFor(call) {
		const r = this.rng;
		const now = Date.now();
		switch (call.name) {
			case "read":
				return toolResult(call, code(r, r.int(1500, 7000)), now);
			case "bash": {
				const failing = r.chance(0.1) ? r.int(1, 3) : 0;
				const out = testOutput(r, r.int(5, 40), failing);
				return toolResult(call, failing ? `${out}\n\nCommand exited with code 1` : out, now, { isError: failing > 0 });
			}
			case "edit":
				return toolResult(call, `Successfully replaced text in ${call.arguments.path}.`, now, { details: { diff: code(r, r.int(200, 1200)), firstChangedLine: r.int(1, 500) } });
			case "write":
				return toolResult(call, `Successfully wrote ${call.arguments.content.length} bytes to ${call.arguments.path}`, now);
			default:
				return toolResult(call, code(r, r.int(300, 2000)), now);
		}
	}

	step(withTools) {
		const r = this.rng;
		const blocks = [];
		if (r.chance(0.7)) blocks.push({ type: "thinking", thinking: prose(r, r.int(150, 1500)), thinkingSignature: r.base64(r.int(300, 1200)) });
		if (r.chance(0.6) || !withTools) blocks.push(text(prose(r, r.int(40, withTools ? 400 : 1500))));
		const calls = [];
		if (withTools) for (let i = r.chance(0.8) ? 1 : r.int(2, 3); i > 0; i--) calls.push(this.toolCall());
		blocks.push(...calls);
		advanceClock(r.int(2000, 30000));
		this.append(assistant(blocks, this.usageFor(r.int(30, 1200)), Date.now()));
		for (const c of calls) this.append(this.resultFor(c));
	}

	summaryText(readFiles, modifiedFiles, extra = "") {
		const r = this.rng;
		let s = `## Goal\n${prose(r, r.int(200, 500))}\n\n## Constraints & Preferences\n- ${prose(r, r.int(100, 300))}\n\n## Progress\n### Done\n`;
		for (let i = r.int(5, 15); i > 0; i--) s += `- [x] ${prose(r, r.int(40, 160))}\n`;
		s += `\n### In Progress\n- [ ] ${prose(r, r.int(60, 200))}\n\n### Blocked\n- (none)\n\n## Key Decisions\n`;
		for (let i = r.int(2, 6); i > 0; i--) s += `- **${prose(r, 20)}**: ${prose(r, r.int(60, 200))}\n`;
		s += `\n## Next Steps\n1. ${prose(r, r.int(60, 200))}\n\n## Critical Context\n- ${prose(r, r.int(100, 600))}${extra}`;
		return s + this.C.formatFileOperations(readFiles, modifiedFiles);
	}

	compact() {
		const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };
		const path = this.sm.getBranch();
		const prep = this.C.prepareCompaction(path, settings);
		if (!prep) return;
		const { readFiles, modifiedFiles } = this.C.computeFileLists(prep.fileOps);
		const split = prep.isSplitTurn && prep.turnPrefixMessages.length > 0;
		const summary = this.summaryText(readFiles, modifiedFiles, split ? `\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\n${prose(this.rng, 200)}` : "");
		advanceClock(this.rng.int(10000, 60000));
		this.sm.appendCompaction(summary, prep.firstKeptEntryId, prep.tokensBefore, { readFiles, modifiedFiles }, false);
		const kept = path.findIndex((e) => e.id === prep.firstKeptEntryId);
		this.context = SYSTEM_PROMPT_TOKENS + Math.ceil(summary.length / 4);
		for (const e of path.slice(kept)) if (e.type === "message") this.context += this.C.estimateTokens(e.message);
	}

	// Back to the user message three turns ago, the abandoned part summarized (pi's /tree with a summary).
	branch() {
		const path = this.sm.getBranch();
		const users = path.filter((e) => e.type === "message" && e.message.role === "user");
		if (users.length < 4) return;
		const target = users[users.length - 3];
		const { entries } = this.C.collectEntriesForBranchSummary(this.sm, this.sm.getLeafId(), target.id);
		const prepared = this.C.prepareBranchEntries(entries, 200000 - 16384);
		const { readFiles, modifiedFiles } = this.C.computeFileLists(prepared.fileOps);
		const summary = `The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n${this.summaryText(readFiles, modifiedFiles)}`;
		advanceClock(this.rng.int(5000, 20000));
		this.sm.branchWithSummary(target.parentId, summary, { readFiles, modifiedFiles }, false);
		this.context = Math.max(SYSTEM_PROMPT_TOKENS, this.context - prepared.totalTokens);
	}

	oneTurn(options) {
		const r = this.rng;
		const sm = this.sm;
		this.turn++;
		advanceClock(r.int(20000, 300000));
		this.append(user(prose(r, r.int(60, 700)), Date.now()));
		for (let s = r.int(1, 7); s > 0; s--) this.step(true);
		this.step(false);
		const t = this.turn;
		if (t % 37 === 0) sm.appendThinkingLevelChange(r.pick(["low", "medium", "high"]));
		if (t % 41 === 0) this.append(bashExecution(r.pick(COMMANDS), testOutput(r, 8), Date.now()));
		if (t % 53 === 0) sm.appendCustomEntry("todo-state", { open: r.int(0, 9), done: r.int(0, 30) });
		if (t % 71 === 0) sm.appendLabelChange(sm.getBranch().at(-3).id, `checkpoint-${t}`);
		if (t % 97 === 0) sm.appendCustomMessageEntry("reminder", prose(r, 200), true);
		if (t === 5) sm.appendSessionInfo("Big generated refactoring session");
		if (options.compactEvery > 0 && t % options.compactEvery === 0) this.compact();
		if (options.branchEvery > 0 && t % options.branchEvery === 0) this.branch();
	}
}

export function generateLarge(pi, out, options) {
	const o = { entries: 20000, compactEvery: 25, branchEvery: 400, seed: 1, ...options };
	makeDeterministic(0x5eed0000 + o.seed, "2026-02-01T09:00:00.000Z", 250);
	const sm = pi.session.SessionManager.inMemory("/home/dev/big-project");
	sm.newSession({ id: `0194f000-0000-7000-8000-${String(o.seed).padStart(12, "0")}` });
	const g = new LargeSession(pi, new Rng(o.seed), sm);
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("medium");
	while (sm.getEntries().length < o.entries) g.oneTurn(o);
	const body = sessionText(sm.getHeader(), sm.getEntries());
	writeFileSync(out, body);
	return { out, entries: sm.getEntries().length, turns: g.turn, bytes: Buffer.byteLength(body), leafId: sm.getLeafId(), pathLength: sm.getBranch().length };
}
