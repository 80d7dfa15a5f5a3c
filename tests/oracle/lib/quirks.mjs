// Session shapes on which pi 0.73.1's cut point and preparation deviate from its own design (docs/compatibility.md
// lists them and what Compactor does instead). Each shape is a list of steps run on a SessionManager, with the
// keepRecentTokens values that show the quirk. `oracle.mjs quirks` prints pi's answer for each; the
// conformance corpus writes each shape as a session file.

const U = (n) => (s) => s.user("u".repeat(n));
const A = (n, tool = false) => (s) => s.assistant("a".repeat(n), tool);
const T = (n) => (s) => s.toolResult("r".repeat(n));
const repeat = (k, steps) => Array.from({ length: k }, () => steps).flat();

export const QUIRKS = [
	{
		name: "q1-settings-before-cut",
		description: "Q1: a thinking_level_change right before the user message at the cut (pi: a split turn whose prefix is the whole previous turn)",
		steps: [U(400), A(400), U(400), A(400, true), T(4000), A(400), (s) => s.sm.appendThinkingLevelChange("high"), U(400), A(400, true), T(4000), A(400)],
		keeps: [1300, 1200],
	},
	{
		name: "q2-custom-message-cut",
		description: "Q2: the cut lands on a custom_message (pi: a split turn with an empty prefix)",
		steps: [U(400), A(400, true), T(4000), A(400), (s) => s.sm.appendCustomMessageEntry("x", "c".repeat(400), true), A(400, true), T(4000), A(400)],
		keeps: [1200],
	},
	{
		name: "q3-everything-fits",
		description: "Q3: everything fits (pi still prepares a compaction that summarizes nothing)",
		steps: [U(40), A(40), U(40), A(40)],
		keeps: [20000],
	},
	{
		name: "q4-single-huge-turn",
		description: "Q4: one user turn with many large tool results (a split turn)",
		steps: [U(100), ...repeat(6, [A(100, true), T(8000)]), A(100)],
		keeps: [5000, 3000],
	},
	{
		name: "q5-big-custom-message",
		description: "Q5: a huge custom_message does not count toward the keep budget",
		steps: [U(400), A(400), (s) => s.sm.appendCustomMessageEntry("x", "c".repeat(40000), true), U(40), A(40)],
		keeps: [1000],
	},
	{
		name: "q6-kept-window-holds-compaction",
		description: "Q6: a second compaction whose kept window holds the first compaction entry",
		steps: [
			(s) => s.user(`q1 ${"x".repeat(4000)}`),
			A(2),
			(s) => s.user(`q2 ${"y".repeat(4000)}`),
			A(2),
			(s) => s.user(`q3 ${"z".repeat(400)}`),
			A(2),
			(s) => s.compact(1100, "SUMMARY-1"),
			(s) => s.user("q4"),
			A(2),
		],
		keeps: [1100],
	},
	{
		name: "q7-huge-trailing-tool-result",
		description: "Q7: the newest message is a tool result larger than keepRecentTokens (pi summarizes nothing)",
		steps: [U(4000), A(4000), U(4000), A(4000), U(400), A(100, true), T(200000)],
		keeps: [20000],
	},
	{
		name: "q7b-huge-tool-result-then-assistant",
		description: "Q7b: a huge tool result followed by a final assistant message",
		steps: [U(4000), A(4000), U(4000), A(4000), U(400), A(100, true), T(200000), A(100)],
		keeps: [20000],
	},
];

// Runs a shape on `sm` (a SessionManager); `at()` gives message timestamps.
export function buildQuirk(pi, sm, quirk, at) {
	const zero = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
	let call = 0;
	const s = {
		sm,
		user: (t) => sm.appendMessage({ role: "user", content: t, timestamp: at() }),
		assistant: (t, tool) => {
			const blocks = [{ type: "text", text: t }];
			if (tool) blocks.push({ type: "toolCall", id: `toolu_q${++call}`, name: "read", arguments: { path: "x.ts" } });
			return sm.appendMessage({ role: "assistant", content: blocks, api: "x", provider: "p", model: "m", usage: zero, stopReason: tool ? "toolUse" : "stop", timestamp: at() });
		},
		toolResult: (t) => sm.appendMessage({ role: "toolResult", toolCallId: `toolu_q${call}`, toolName: "read", content: [{ type: "text", text: t }], isError: false, timestamp: at() }),
		compact: (keep, summary) => {
			const prep = pi.compaction.prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
			sm.appendCompaction(summary, prep.firstKeptEntryId, prep.tokensBefore);
		},
	};
	for (const step of quirk.steps) step(s);
}

// pi's answer on every shape: {name, keepRecentTokens, cut: findCutPoint(...), firstKept: "type:role",
// messagesToSummarize, turnPrefixMessages, isSplitTurn}.
export function runQuirks(pi) {
	const out = [];
	for (const q of QUIRKS) {
		const sm = pi.session.SessionManager.inMemory("/home/dev/quirks");
		let t = 1767000000000;
		buildQuirk(pi, sm, q, () => (t += 1000));
		const path = sm.getBranch();
		for (const keep of q.keeps) {
			const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: keep };
			const prep = pi.compaction.prepareCompaction(path, settings);
			const kept = path.findIndex((e) => e.id === prep?.firstKeptEntryId);
			out.push({
				name: q.name,
				keepRecentTokens: keep,
				firstKeptIndex: kept,
				firstKept: kept >= 0 ? `${path[kept].type}:${path[kept].message?.role ?? ""}` : null,
				messagesToSummarize: prep?.messagesToSummarize.length ?? null,
				turnPrefixMessages: prep?.turnPrefixMessages.length ?? null,
				isSplitTurn: prep?.isSplitTurn ?? null,
				hasPreviousSummary: prep ? prep.previousSummary !== undefined : null,
			});
		}
	}
	return out;
}
