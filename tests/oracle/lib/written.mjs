// A small session written through pi's SessionManager API with every entry type: model and thinking-level
// changes, tool calls with results (one with details), a user shell command, an extension message and
// extension state, a session name, a label, a compaction computed by pi (keepRecentTokens 2000: a split
// turn), an abandoned branch, a branch summary and the new branch. No model is called: summaries are fixed
// texts, everything else (cut point, firstKeptEntryId, tokensBefore, file lists, branch mechanics) comes
// from pi's own functions, as AgentSession.compact() and navigateTree() use them.
import { assistant, bashExecution, sessionText, text, toolResult, usage, user } from "./builders.mjs";
import { makeDeterministic } from "./pi.mjs";

const numbered = (name, lines) =>
	Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}  ${name}: statement ${i + 1} of the module, with a comment about it`).join("\n");

// Returns {text (the file), ids: {name: entry id}, compaction: {...}, leafId}.
export function writeSession(pi, seed = 1) {
	const C = pi.compaction;
	makeDeterministic(0x77000000 + seed, "2026-01-01T10:00:00.000Z");
	const sm = pi.session.SessionManager.inMemory("/home/dev/project");
	sm.newSession({ id: `01a20357-ad88-7559-a493-${String(seed).padStart(12, "0")}` });
	const now = () => Date.now();
	let callN = 0;
	const call = (name, args) => ({ type: "toolCall", id: `toolu_${String(++callN).padStart(4, "0")}`, name, arguments: args });
	const ids = {};

	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("medium");

	// Turn 1: read, edit (result with details), answer.
	ids.u1 = sm.appendMessage(user("Please read src/tokenize.ts and fix the off-by-one in the scanner loop.", now()));
	let c = call("read", { path: "src/tokenize.ts" });
	sm.appendMessage(assistant([{ type: "thinking", thinking: "Read the scanner first.", thinkingSignature: "sig-001" }, c], usage(3100, 70), now()));
	sm.appendMessage(toolResult(c, numbered("src/tokenize.ts", 110), now()));
	c = call("edit", { path: "src/tokenize.ts", oldText: "pos <= end", newText: "pos < end" });
	sm.appendMessage(assistant([text("The loop reads one past the end."), c], usage(6300, 110), now()));
	sm.appendMessage(toolResult(c, "Successfully replaced text in src/tokenize.ts.", now(), { details: { diff: "-  41 while (pos <= end)\n+  41 while (pos < end)", firstChangedLine: 41 } }));
	sm.appendMessage(assistant([text("Fixed the loop bound in src/tokenize.ts (line 41).")], usage(6500, 35), now()));

	// A user shell command (!), an extension message and extension state.
	sm.appendMessage(bashExecution("npm test", "PASS 14 tests\n", now()));
	sm.appendCustomMessageEntry("todo-extension", "Reminder: keep the suite green.", true, { source: "todo" });
	sm.appendCustomEntry("todo-extension", { items: ["fix scanner", "add test"] });

	// Turn 2: write, bash with a long output.
	ids.u2 = sm.appendMessage(user("Now add a regression test and run the whole suite.", now()));
	c = call("write", { path: "test/tokenize.test.ts", content: numbered("test/tokenize.test.ts", 35) });
	sm.appendMessage(assistant([c], usage(6900, 850), now()));
	sm.appendMessage(toolResult(c, "Successfully wrote 2275 bytes to test/tokenize.test.ts", now()));
	c = call("bash", { command: "npm test -- --verbose" });
	sm.appendMessage(assistant([text("Running the suite."), c], usage(7900, 55), now()));
	sm.appendMessage(toolResult(c, Array.from({ length: 140 }, (_, i) => `  ✓ tokenize case ${i + 1} passes (${i % 5} ms)`).join("\n"), now()));
	sm.appendMessage(assistant([text("All 140 tests pass.")], usage(11300, 28), now()));
	sm.appendSessionInfo("Fix off-by-one in the scanner");
	sm.appendLabelChange(ids.u2, "tests-added");

	// Turn 3: one more read; then the compaction (keepRecentTokens 2000 cuts inside turn 2: a split turn).
	ids.u3 = sm.appendMessage(user("Also check src/lexer.ts: does it have the same bug?", now()));
	c = call("read", { path: "src/lexer.ts" });
	sm.appendMessage(assistant([c], usage(11600, 45), now()));
	sm.appendMessage(toolResult(c, numbered("src/lexer.ts", 90), now()));
	ids.beforeCompaction = sm.appendMessage(assistant([text("No, src/lexer.ts compares with `<` already.")], usage(13900, 30), now()));

	const prep = C.prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens: 2000 });
	if (!prep?.isSplitTurn) throw new Error("the written session's compaction must split a turn");
	const files = C.computeFileLists(prep.fileOps);
	const summary =
		"## Goal\nFix the off-by-one in src/tokenize.ts and cover it with a test.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- [x] Fixed the scanner loop bound\n- [x] Added test/tokenize.test.ts\n\n### In Progress\n- [ ] Check src/lexer.ts\n\n### Blocked\n- (none)\n\n## Key Decisions\n- **Use `<`**: end is exclusive\n\n## Next Steps\n1. Review src/lexer.ts\n\n## Critical Context\n- (none)" +
		C.formatFileOperations(files.readFiles, files.modifiedFiles);
	ids.compaction = sm.appendCompaction(summary, prep.firstKeptEntryId, prep.tokensBefore, files, false);

	// Turn 4 after the compaction, abandoned below.
	ids.u4 = sm.appendMessage(user("Good. Rewrite the loop in src/lexer.ts as a for-of loop.", now()));
	c = call("edit", { path: "src/lexer.ts", oldText: "for (let i = 0; i < chars.length; i++)", newText: "for (const ch of chars)" });
	sm.appendMessage(assistant([c], usage(5100, 85), now()));
	sm.appendMessage(toolResult(c, "Successfully replaced text in src/lexer.ts.", now()));
	ids.abandonedLeaf = sm.appendMessage(assistant([text("Rewritten.")], usage(5300, 18), now()));

	// Back to turn 4's user message with a summary of the abandoned part (navigateTree(u4, {summarize})):
	// the new leaf is the user message's parent.
	const { entries, commonAncestorId } = C.collectEntriesForBranchSummary(sm, sm.getLeafId(), ids.u4);
	const branchFiles = C.computeFileLists(C.prepareBranchEntries(entries, 200000 - 16384).fileOps);
	const branchSummary =
		"The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nRewrite the lexer loop as for-of.\n\n## Progress\n### Done\n- [x] Rewrote the loop in src/lexer.ts" +
		C.formatFileOperations(branchFiles.readFiles, branchFiles.modifiedFiles);
	ids.branchSummary = sm.branchWithSummary(sm.getEntry(ids.u4).parentId, branchSummary, branchFiles, false);

	// The new branch.
	ids.u5 = sm.appendMessage(user("Actually keep the index loop and add a bounds assertion instead.", now()));
	c = call("edit", { path: "src/lexer.ts", oldText: "const ch = chars[i];", newText: "assert(i < chars.length);\nconst ch = chars[i];" });
	sm.appendMessage(assistant([c], usage(5500, 75), now()));
	sm.appendMessage(toolResult(c, "Successfully replaced text in src/lexer.ts.", now()));
	ids.leaf = sm.appendMessage(assistant([text("Added the assertion.")], usage(5700, 22), now()));

	return {
		text: sessionText(sm.getHeader(), sm.getEntries()),
		ids,
		compaction: { firstKeptEntryId: prep.firstKeptEntryId, isSplitTurn: prep.isSplitTurn, tokensBefore: prep.tokensBefore },
		branchSummarized: entries.map((e) => e.id),
		commonAncestorId,
		leafId: sm.getLeafId(),
	};
}
