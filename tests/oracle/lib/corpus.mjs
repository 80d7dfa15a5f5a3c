// The conformance corpus: a reproducible set of pi session files plus manifest.json (`oracle.mjs corpus DIR`).
//
// Sessions in v3 format are written through pi's own SessionManager (in-memory, then serialized the way
// SessionManager._rewriteFile does: JSON.stringify per entry, "\n" after each line), so every line is exactly
// what pi would have written. Compaction cut points come from pi's prepareCompaction. Files pi cannot produce
// through its API (v1/v2, torn lines, CRLF, orphans, non-canonical JSON, invalid UTF-8) are written by hand.
//
// Reproducibility: pi's ids (crypto.randomUUID) and clock (new Date()) are seeded sequences (pi.mjs), so the
// same bytes come out on every run.
//
// manifest.json: {"files": [{"name", "description", "compareLeafId", "leaves": [{"id": string|null, "why"}],
//                            "plans": [{"keepRecentTokens", "reserveTokens"}]}]}
// A leaf id of null means "no --leaf" (the file's own leaf: last entry in file order).
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { makeDeterministic, RealDate } from "./pi.mjs";
import { buildQuirk, QUIRKS } from "./quirks.mjs";

// The generator runs top to bottom as one function (its body keeps the indentation it had as a script).
export function writeCorpus(pi, outDirArg) {
const outDir = resolve(outDirArg);
mkdirSync(outDir, { recursive: true });
makeDeterministic(0x2545f491, "2026-03-01T10:00:00.000Z");
const { SessionManager } = pi.session;
const C = pi.compaction;

const manifest = { generator: "tests/oracle/oracle.mjs corpus", files: [] };
const DEFAULT_PLANS = [
	{ keepRecentTokens: 20000, reserveTokens: 16384 },
	{ keepRecentTokens: 300, reserveTokens: 16384 },
];
function record(name, description, leaves, extra = {}) {
	manifest.files.push({ name, description, compareLeafId: true, leaves, plans: DEFAULT_PLANS, ...extra });
}

let sessionN = 0;
function newSession() {
	sessionN++;
	return SessionManager.inMemory(`/home/dev/corpus-${sessionN}`);
}
function sessionText(sm) {
	const header = { ...sm.getHeader(), id: `0195a000-0000-7000-8000-${String(sessionN).padStart(12, "0")}` };
	return [header, ...sm.getEntries()].map((e) => `${JSON.stringify(e)}\n`).join("");
}
function writeSession(name, sm) {
	const text = sessionText(sm);
	writeFileSync(join(outDir, name), text);
	return text;
}

// ---- message builders ------------------------------------------------------------------------------------
let msgClock = RealDate.parse("2026-03-01T09:00:00.000Z");
const mts = () => (msgClock += 1500);
const IMG = { type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", mimeType: "image/png" };
const usage = (input, output, cacheRead = 0, cacheWrite = 0) => ({
	input,
	output,
	cacheRead,
	cacheWrite,
	totalTokens: input + output + cacheRead + cacheWrite,
	cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6, total: input * 3e-6 + output * 15e-6 },
});
const ZERO_USAGE = usage(0, 0);
const userText = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: mts() });
const userString = (text) => ({ role: "user", content: text, timestamp: mts() });
let callN = 0;
const toolCall = (name, args) => ({ type: "toolCall", id: `toolu_c${String(++callN).padStart(4, "0")}`, name, arguments: args });
const assistant = (blocks, u = usage(1000, 50), extra = {}) => ({
	role: "assistant",
	content: blocks,
	api: "anthropic-messages",
	provider: "anthropic",
	model: "claude-sonnet-4-5",
	usage: u,
	stopReason: blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
	timestamp: mts(),
	...extra,
});
const text = (t) => ({ type: "text", text: t });
const toolResult = (call, content, extra = {}) => ({
	role: "toolResult",
	toolCallId: call.id,
	toolName: call.name,
	content: typeof content === "string" ? [text(content)] : content,
	isError: false,
	timestamp: mts(),
	...extra,
});
const bash = (command, output, extra = {}) => ({ role: "bashExecution", command, output, exitCode: 0, cancelled: false, truncated: false, timestamp: mts(), ...extra });
const lines = (prefix, n) => Array.from({ length: n }, (_, i) => `${String(i + 1).padStart(4)}  ${prefix} line ${i + 1}`).join("\n");

// Strings that JSON.stringify escapes, and text whose UTF-16 length differs from its byte / code point count.
const ESCAPES = 'quote " backslash \\ slash / tab\tnewline\ncr\rformfeed\fbackspace\bctrl\u0001\u001f del\u007f nul\u0000 ls\u2028 ps\u2029 </script>';
const CJK = "日本語のテキスト、中文文本，한국어 텍스트。全角ＡＢＣ";
const ASTRAL = "emoji 😀 family 👩‍👩‍👧 flag 🇩🇪 cjk-ext-b 𠀀𠀁 math 𝒜 U+1F600 \u{1F600}";
const TRICKY_ARGS = {
	path: "src/数据/😀.ts",
	10: "ten",
	2: "two",
	"-1": "negative key stays in order",
	"01": "leading zero key stays in order",
	4294967295: "not an array index but integer-like",
	nested: { z: 1, a: [1, 2.5, { 3: "x", y: null, b: false }], "": "empty key" },
	big: 1e21,
	bigger: 1.7976931348623157e308,
	small: 1e-7,
	tiny: 5e-324,
	sum: 0.1 + 0.2,
	third: 1 / 3,
	negZero: -0,
	int: 12345678901234567890,
	neg: -42,
	esc: ESCAPES,
	unicode: `${CJK} ${ASTRAL}`,
	empty: {},
	emptyArr: [],
};

// =========================================================================================================
// 1. api-all-types: every entry type and message role through pi's SessionManager
{
	const sm = newSession();
	const L = {};
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("medium");
	L.u1 = sm.appendMessage(userText(`Read the file and fix it. ${ESCAPES}`));
	let c = toolCall("read", TRICKY_ARGS);
	sm.appendMessage(assistant([{ type: "thinking", thinking: `Let me think. ${CJK}`, thinkingSignature: "sig-abc" }, c], usage(3000, 80)));
	sm.appendMessage(toolResult(c, [text(lines("src/app.ts", 40)), IMG, text(ASTRAL)]));
	c = toolCall("edit", { path: "src/app.ts", oldText: "i <= n", newText: "i < n" });
	sm.appendMessage(assistant([text("Found it."), c], usage(6500, 120)));
	L.tr = sm.appendMessage(toolResult(c, "Successfully replaced text in src/app.ts.", { details: { diff: "-a\n+b", firstChangedLine: 12 } }));
	sm.appendMessage(assistant([{ ...text(`Fixed. ${ASTRAL}`), textSignature: "ts-1" }], usage(6700, 40)));
	// user-run shell commands (! and !!)
	sm.appendMessage(bash("npm test", "PASS 12 tests\n"));
	sm.appendMessage(bash("false", "", { exitCode: 1 }));
	sm.appendMessage(bash("sleep 100", "partial output", { exitCode: undefined, cancelled: true }));
	sm.appendMessage(bash("cat big.log", lines("log", 30), { truncated: true, fullOutputPath: "/tmp/pi-bash-0001.log" }));
	sm.appendMessage(bash("git status", "On branch main\n", { excludeFromContext: true }));
	L.bashNoExit = sm.appendMessage({ role: "bashExecution", command: "echo no exit code", output: "no exit code\n", cancelled: false, truncated: false, timestamp: mts() });
	// extension messages and state
	sm.appendCustomMessageEntry("todo-extension", "Reminder: keep tests green.", true, { source: "todo" });
	L.customBlocks = sm.appendCustomMessageEntry("screenshot", [text(`Screenshot attached ${CJK}`), IMG], false);
	sm.appendCustomMessageEntry("empty-ext", "", true);
	sm.appendCustomEntry("todo-extension", { items: ["fix loop", "add test"], n: 1e21 });
	sm.appendCustomEntry("no-data");
	// turn 2: user string content with an image turn, tool error, image results
	L.u2 = sm.appendMessage({ role: "user", content: [text("What does this screenshot show?"), IMG, text("")], timestamp: mts() });
	c = toolCall("screenshot", { "0": 0, "1": [1e-7, 1e21, -0.0, 0.30000000000000004] });
	sm.appendMessage(assistant([c], usage(7000, 900)));
	sm.appendMessage(toolResult(c, [IMG, IMG], { isError: true }));
	sm.appendMessage(assistant([{ type: "thinking", thinking: "", thinkingSignature: "" }, { type: "thinking", thinking: "hidden", redacted: true }, text(`It shows ${CJK}`)], usage(8000, 60)));
	sm.appendSessionInfo("All entry types 😀");
	L.labelSet = sm.appendLabelChange(L.u2, "screenshot-turn");
	sm.appendLabelChange(L.u1, "first");
	L.labelCleared = sm.appendLabelChange(L.u1, undefined);
	sm.appendThinkingLevelChange("high");
	// turn 3: model switches; last assistant overrides the model_change
	L.u3 = sm.appendMessage(userString(`Plain string content. ${ASTRAL} ${ESCAPES}`));
	sm.appendModelChange("openai", "gpt-5");
	L.afterModelChange = sm.appendMessage(assistant([text("Answer from another model")], usage(9000, 30), { api: "openai-responses", provider: "openai", model: "gpt-5" }));
	// usage without totalTokens, and totalTokens 0 (pi falls back to the sum of the four fields)
	const noTotal = usage(9100, 30, 500, 20);
	delete noTotal.totalTokens;
	L.noTotal = sm.appendMessage(assistant([text("Usage without totalTokens")], noTotal));
	sm.appendMessage(userText("and again"));
	L.zeroTotal = sm.appendMessage(assistant([text("Usage with totalTokens 0")], { ...usage(9300, 30, 100, 0), totalTokens: 0 }));
	// aborted and error assistants: no valid usage, so the estimate anchors on the previous one
	sm.appendMessage(userText("write the big file"));
	const partial = { ...toolCall("write", {}), partialJson: '{"path":"src/a.ts","content":"expo' };
	L.aborted = sm.appendMessage(assistant([partial], ZERO_USAGE, { stopReason: "aborted" }));
	sm.appendMessage(assistant([], ZERO_USAGE, { stopReason: "aborted" }));
	L.error = sm.appendMessage(assistant([], usage(0, 0), { stopReason: "error", errorMessage: "prompt is too long: 213462 tokens > 200000 maximum" }));
	sm.appendThinkingLevelChange("off");
	L.last = sm.appendSessionInfo("");
	writeSession("api-all-types.jsonl", sm);
	record("api-all-types.jsonl", "every entry type and message role, escapes, CJK/astral text, images, tricky tool arguments, usage variants", [
		{ id: null, why: "file leaf (session_info with empty name)" },
		{ id: L.u1, why: "first user message" },
		{ id: L.tr, why: "tool result with details" },
		{ id: L.bashNoExit, why: "bashExecution without exitCode" },
		{ id: L.customBlocks, why: "custom_message with text+image blocks" },
		{ id: L.labelSet, why: "label entry as leaf" },
		{ id: L.labelCleared, why: "label cleared" },
		{ id: L.afterModelChange, why: "assistant after model_change" },
		{ id: L.noTotal, why: "usage without totalTokens" },
		{ id: L.zeroTotal, why: "usage with totalTokens 0" },
		{ id: L.aborted, why: "aborted assistant with partialJson" },
		{ id: L.error, why: "error assistant" },
	]);
}

// =========================================================================================================
// 2. api-compactions: several compactions computed by pi; a later one keeps an older one in its window;
//    compactions whose firstKeptEntryId is not on the path
{
	const sm = newSession();
	const L = {};
	const settings = (keep) => ({ enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
	const compact = (keep, label, details = true) => {
		const prep = C.prepareCompaction(sm.getBranch(), settings(keep));
		if (!prep) throw new Error(`no preparation for ${label}`);
		const { readFiles, modifiedFiles } = C.computeFileLists(prep.fileOps);
		const summary = `## Goal\n${label}: ${CJK}\n\n## Progress\n- [x] done ${ASTRAL}${C.formatFileOperations(readFiles, modifiedFiles)}`;
		const id = sm.appendCompaction(summary, prep.firstKeptEntryId, prep.tokensBefore, details ? { readFiles, modifiedFiles } : undefined, false);
		return { id, firstKept: prep.firstKeptEntryId };
	};
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	const turn = (n, big) => {
		const u = sm.appendMessage(userText(`q${n} ${"x".repeat(big)}`));
		const c = toolCall("read", { path: `src/f${n}.ts` });
		sm.appendMessage(assistant([c], usage(1000 * n, 40)));
		sm.appendMessage(toolResult(c, lines(`f${n}`, 30)));
		const e = toolCall("edit", { path: `src/f${n}.ts`, oldText: "a", newText: "b" });
		sm.appendMessage(assistant([text(`r${n}`), e], usage(1000 * n + 500, 40)));
		sm.appendMessage(toolResult(e, "ok"));
		const a = sm.appendMessage(assistant([text(`done ${n}`)], usage(1000 * n + 800, 20)));
		return { u, a };
	};
	L.t1 = turn(1, 4000);
	L.t2 = turn(2, 4000);
	L.t3 = turn(3, 400);
	L.beforeC1 = sm.getLeafId();
	const c1 = compact(1100, "first compaction");
	L.c1 = c1.id;
	L.t4 = turn(4, 10);
	const c2 = compact(1100, "second compaction");
	L.c2 = c2.id;
	const path = sm.getBranch();
	const kIdx = path.findIndex((e) => e.id === c2.firstKept);
	const c1Idx = path.findIndex((e) => e.id === c1.id);
	if (!(kIdx >= 0 && kIdx < c1Idx)) console.error(`warning: second compaction does not keep the first one (kept ${kIdx}, c1 ${c1Idx})`);
	sm.appendThinkingLevelChange("low");
	L.t5 = turn(5, 100);
	L.afterC2 = sm.getLeafId();
	// third compaction, empty summary, no details, fromHook, pointing at an entry of the abandoned part below
	sm.branch(L.t4.u);
	L.t6 = turn(6, 50);
	L.c3 = sm.appendCompaction("", L.t5.u, 777, { custom: true, nested: [1, 2] }, true);
	L.t7 = turn(7, 20);
	// a compaction whose firstKeptEntryId does not exist at all, on a branch from c1
	sm.branch(L.c1);
	L.c4 = sm.appendCompaction("summary with unknown first kept", "ffffffff", 123.5);
	L.t8 = turn(8, 30);
	// a compaction as the very last entry
	sm.branch(L.t8.a);
	L.c5 = compact(200, "final compaction");
	writeSession("api-compactions.jsonl", sm);
	record("api-compactions.jsonl", "five compactions: chained, one keeping an older compaction in its window, one pointing off-path, one to an unknown id, one as the file leaf", [
		{ id: null, why: "file leaf = compaction entry" },
		{ id: L.beforeC1, why: "before any compaction" },
		{ id: L.c1, why: "leaf = first compaction" },
		{ id: L.t4.a, why: "after first compaction" },
		{ id: L.c2, why: "second compaction (older one inside kept window)" },
		{ id: L.afterC2, why: "after second compaction" },
		{ id: L.c3, why: "compaction with firstKeptEntryId on another branch, empty summary" },
		{ id: L.t7.a, why: "after off-path compaction" },
		{ id: L.t8.u, why: "after compaction to unknown id" },
	]);
}

// =========================================================================================================
// 3. api-branches: navigate + append, branch summaries (incl. empty and from root), several roots
{
	const sm = newSession();
	const L = {};
	sm.appendThinkingLevelChange("minimal");
	L.u1 = sm.appendMessage(userText("root 1 question"));
	L.a1 = sm.appendMessage(assistant([text("root 1 answer")], usage(100, 10)));
	L.u2 = sm.appendMessage(userText("second question"));
	L.a2 = sm.appendMessage(assistant([text("second answer")], usage(200, 10)));
	L.u3 = sm.appendMessage(userText("third question"));
	L.a3 = sm.appendMessage(assistant([text("third answer")], usage(300, 10)));
	// plain navigation + append (no summary): a sibling of u2
	sm.branch(L.a1);
	L.u2b = sm.appendMessage(userText("alternative second question"));
	L.a2b = sm.appendMessage(assistant([text("alternative answer")], usage(250, 10), { provider: "google", model: "gemini-2.5-pro", api: "google-generative-ai" }));
	// branch with summary
	L.bs1 = sm.branchWithSummary(L.a2, `The user explored a different branch.\n${CJK}`, { readFiles: ["a.ts"], modifiedFiles: [] }, false);
	L.u4 = sm.appendMessage(userText("after branch summary"));
	L.a4 = sm.appendMessage(assistant([text("ok")], usage(400, 10)));
	// empty branch summary: not emitted
	L.bsEmpty = sm.branchWithSummary(L.a1, "");
	L.u5 = sm.appendMessage(userText("after empty branch summary"));
	L.a5 = sm.appendMessage(assistant([text("ok 5")], usage(150, 10)));
	// branch summary from root (fromId "root", a new root)
	L.bsRoot = sm.branchWithSummary(null, "Summary of everything before; starting over from the root.", undefined, true);
	L.u6 = sm.appendMessage(userText("fresh start"));
	L.a6 = sm.appendMessage(assistant([text("fresh answer")], usage(50, 10)));
	// resetLeaf: more roots
	sm.resetLeaf();
	L.r2 = sm.appendMessage(userText("re-edited first message (root 2)"));
	L.r2a = sm.appendMessage(assistant([text("root 2 answer")], usage(60, 10)));
	sm.resetLeaf();
	L.r3 = sm.appendModelChange("openai", "gpt-5-mini");
	L.r3u = sm.appendMessage(userText("root 3"));
	// compaction above a branch point applies to both children
	sm.branch(L.a3);
	L.c = sm.appendCompaction("compacted main line", L.u3, 999);
	L.kidA = sm.appendMessage(userText("child A"));
	sm.branch(L.c);
	L.kidB = sm.appendMessage(userText("child B"));
	L.kidBa = sm.appendMessage(assistant([text("child B answer")], usage(500, 10)));
	sm.appendLabelChange(L.u2b, "alt");
	writeSession("api-branches.jsonl", sm);
	record("api-branches.jsonl", "navigate+append, branchWithSummary (text, empty, from root), resetLeaf roots, compaction above a branch point", [
		{ id: null, why: "file leaf = label after child B" },
		{ id: L.a3, why: "abandoned original tip" },
		{ id: L.a2b, why: "navigated sibling tip" },
		{ id: L.bs1, why: "leaf = branch_summary" },
		{ id: L.a4, why: "after branch summary" },
		{ id: L.bsEmpty, why: "leaf = empty branch_summary" },
		{ id: L.a5, why: "after empty branch summary" },
		{ id: L.a6, why: "branch summary from root" },
		{ id: L.r2a, why: "second root" },
		{ id: L.r3u, why: "third root starting with model_change" },
		{ id: L.kidA, why: "compaction above branch point, child A" },
		{ id: L.kidBa, why: "compaction above branch point, child B" },
	]);
}

// =========================================================================================================
// 3b. Sessions for pi's compaction quirks (quirks.mjs, docs/compatibility.md), each with the keepRecentTokens
//     values that show the quirk
for (const q of QUIRKS) {
	const sm = newSession();
	buildQuirk(pi, sm, q, mts);
	const name = `quirk-${q.name}.jsonl`;
	writeSession(name, sm);
	record(name, q.description, [{ id: null, why: "file leaf" }], {
		plans: q.keeps.map((k) => ({ keepRecentTokens: k, reserveTokens: 16384 })),
	});
}

// =========================================================================================================
// 4. Hand-written and mutated files
const J = (o) => JSON.stringify(o);
const hw = (name, description, textOrBuf, leaves, extra = {}) => {
	writeFileSync(join(outDir, name), textOrBuf);
	record(name, description, leaves, extra);
};
const ts = (i) => new RealDate(RealDate.parse("2026-04-01T08:00:00.000Z") + i * 1000).toISOString();

// v1: no ids, firstKeptEntryIndex (header = index 0), legacy header fields, hookMessage
{
	const header = { type: "session", id: "v1-session-0001", timestamp: ts(0), cwd: "/home/dev/v1", provider: "anthropic", modelId: "claude-3-5-sonnet", thinkingLevel: "off", branchedFrom: "/tmp/old.jsonl" };
	const es = [
		{ type: "message", timestamp: ts(1), message: userText("v1 first question") },
		{ type: "message", timestamp: ts(2), message: assistant([text("v1 first answer")], { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 }) },
		{ type: "thinking_level_change", timestamp: ts(3), thinkingLevel: "high" },
		{ type: "message", timestamp: ts(4), message: userText(`v1 second ${CJK}`) },
		{ type: "message", timestamp: ts(5), message: assistant([text("v1 second answer")], usage(300, 20)) },
		{ type: "message", timestamp: ts(6), message: bash("ls", "a\nb\n", { exitCode: undefined }) },
		{ type: "compaction", timestamp: ts(7), summary: "v1 summary one", firstKeptEntryIndex: 4, tokensBefore: 320 },
		{ type: "model_change", timestamp: ts(8), provider: "openai", modelId: "gpt-4o" },
		{ type: "message", timestamp: ts(9), message: { role: "hookMessage", customType: "legacy-hook", content: "hook says hi", display: true, timestamp: mts() } },
		{ type: "message", timestamp: ts(10), message: userText("v1 third") },
		{ type: "message", timestamp: ts(11), message: assistant([], ZERO_USAGE, { stopReason: "aborted" }) },
	];
	hw("v1-linear.jsonl", "format v1: no ids, compaction with firstKeptEntryIndex, legacy header fields, hookMessage, usage without totalTokens/cost", [header, ...es].map((e) => `${J(e)}\n`).join(""), [{ id: null, why: "file leaf" }], {
		compareLeafId: false,
	});
	const es2 = [
		{ type: "message", timestamp: ts(1), message: userText("q1") },
		{ type: "message", timestamp: ts(2), message: assistant([text("a1")], usage(100, 5)) },
		{ type: "compaction", timestamp: ts(3), summary: "index points at the header", firstKeptEntryIndex: 0, tokensBefore: 105 },
		{ type: "message", timestamp: ts(4), message: userText("q2") },
		{ type: "compaction", timestamp: ts(5), summary: "index out of range", firstKeptEntryIndex: 999, tokensBefore: 200 },
		{ type: "message", timestamp: ts(6), message: assistant([text("a2")], usage(200, 5)) },
	];
	hw("v1-compaction-edges.jsonl", "format v1: compactions whose firstKeptEntryIndex is the header or out of range (no kept messages)", [{ type: "session", id: "v1-session-0002", timestamp: ts(0), cwd: "/home/dev/v1" }, ...es2].map((e) => `${J(e)}\n`).join(""), [{ id: null, why: "file leaf" }], {
		compareLeafId: false,
	});
}

// v2: ids present, hookMessage role renamed on load
{
	const header = { type: "session", version: 2, id: "v2-session-0001", timestamp: ts(0), cwd: "/home/dev/v2" };
	const es = [
		{ type: "message", id: "v2000001", parentId: null, timestamp: ts(1), message: userText("v2 question") },
		{ type: "message", id: "v2000002", parentId: "v2000001", timestamp: ts(2), message: { role: "hookMessage", customType: "hook", content: [text("hook block"), IMG], display: false, details: { k: 1 }, timestamp: mts() } },
		{ type: "message", id: "v2000003", parentId: "v2000002", timestamp: ts(3), message: assistant([text("v2 answer")], usage(100, 10)) },
		{ type: "message", id: "v2000004", parentId: "v2000001", timestamp: ts(4), message: { role: "hookMessage", customType: "hook", content: "string hook content", display: true, timestamp: mts() } },
		{ type: "message", id: "v2000005", parentId: "v2000004", timestamp: ts(5), message: userText("v2 branch") },
	];
	hw("v2-hookmessage.jsonl", "format v2: tree with ids, hookMessage role (renamed to custom on load)", [header, ...es].map((e) => `${J(e)}\n`).join(""), [
		{ id: null, why: "file leaf" },
		{ id: "v2000003", why: "first branch" },
	]);
}

// v3 odd shapes, built from a small pi-written session text
{
	const sm = newSession();
	const L = {};
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	L.u1 = sm.appendMessage(userText(`odd 1 ${ASTRAL}`));
	L.a1 = sm.appendMessage(assistant([text("odd answer 1")], usage(100, 10)));
	L.u2 = sm.appendMessage(userText(`odd 2 ${ESCAPES}`));
	L.a2 = sm.appendMessage(assistant([toolCall("read", TRICKY_ARGS)], usage(200, 10)));
	L.u3 = sm.appendMessage(userText("odd 3"));
	L.a3 = sm.appendMessage(assistant([text("odd answer 3")], usage(300, 10)));
	const base = sessionText(sm);
	const baseLines = base.split("\n").filter((l) => l.length > 0);
	const leaves = (extra = []) => [{ id: null, why: "file leaf" }, { id: L.a1, why: "inner leaf" }, ...extra];

	hw("v3-crlf.jsonl", "every line ends with CRLF", `${baseLines.join("\r\n")}\r\n`, leaves());
	hw("v3-blank-lines.jsonl", "blank and whitespace-only lines before, between and after entries", `\n\n${baseLines.slice(0, 3).join("\n\n   \n")}\n\t\n${baseLines.slice(3).join("\n")}\n\n\n`, leaves());
	hw("v3-torn-last-line.jsonl", "last line torn by a crash (no newline, invalid JSON)", `${base}${baseLines[baseLines.length - 1].slice(0, 57)}`, leaves([{ id: L.a3, why: "last complete entry" }]));
	hw("v3-no-final-newline.jsonl", "valid last line without a trailing newline", base.slice(0, -1), leaves());
	hw("v3-bad-line.jsonl", "a malformed line in the middle (pi drops it silently)", `${baseLines.slice(0, 3).join("\n")}\nthis is not json {\n{"type":"message","id":"trunc\n${baseLines.slice(3).join("\n")}\n`, leaves());
	// orphans: parent missing; parentId "" counts as a root
	const orphan = [
		J({ type: "message", id: "orph0001", parentId: "missing0", timestamp: ts(50), message: userText("orphan whose parent is missing") }),
		J({ type: "message", id: "orph0002", parentId: "orph0001", timestamp: ts(51), message: assistant([text("orphan answer")], usage(10, 5)) }),
		J({ type: "message", id: "empt0001", parentId: "", timestamp: ts(52), message: userText("parentId is the empty string") }),
	];
	hw("v3-orphan.jsonl", "entries whose parent is missing, and parentId \"\" (both roots)", `${[...baseLines, ...orphan, J({ type: "label", id: "lab00001", parentId: L.a3, timestamp: ts(53), targetId: "orph0001", label: "orphan" })].join("\n")}\n`, [
		{ id: null, why: "file leaf (label on main chain)" },
		{ id: "orph0002", why: "orphan chain tip" },
		{ id: "orph0001", why: "orphan itself" },
		{ id: "empt0001", why: "parentId empty string" },
	]);
	// non-canonical JSON as another tool might write it: whitespace, \u escapes, unordered integer keys, duplicate keys
	const nc = [
		baseLines[0],
		`{ "type" : "message", "id" : "nc000001", "parentId" : null, "timestamp" : "${ts(60)}", "message" : { "role" : "user", "content" : [ { "type" : "text", "text" : "caf\\u00e9 \\ud83d\\ude00 \\u65e5\\u672c \\/slash" } ], "timestamp" : 1767000000000 } }`,
		`{"type":"message","id":"nc000002","parentId":"nc000001","timestamp":"${ts(61)}","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"edit","arguments":{"10":"ten","2":"two","b":1.0,"a":1E3,"c":2.50,"d":-0.0,"e":1e-7,"u":"\\u00e9\\u0041","k":"first","k":"second"}}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3.0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1767000001000}}`,
		`{"type":"message","id":"nc000003","parentId":"nc000002","timestamp":"${ts(62)}","message":{"role":"toolResult","toolCallId":"t1","toolName":"edit","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":1767000002000,"extraField":{"z":[1,2,3]}}}`,
		`{"message":{"role":"user","content":"keys in unusual order","timestamp":1767000003000},"timestamp":"${ts(63)}","parentId":"nc000003","id":"nc000004","type":"message"}`,
	];
	hw("v3-noncanonical.jsonl", "JSON not written by JSON.stringify: whitespace, \\u escapes, 1.0/1E3 numbers, unordered integer keys, duplicate keys, unknown fields, unusual key order", `${nc.join("\n")}\n`, [
		{ id: null, why: "file leaf" },
		{ id: "nc000002", why: "assistant with non-canonical arguments" },
	]);
	// unknown entry types and message roles pass through / are ignored as pi does
	const unk = [
		...baseLines,
		J({ type: "mystery_entry", id: "unk00001", parentId: L.a3, timestamp: ts(70), payload: { a: 1 } }),
		J({ type: "message", id: "unk00002", parentId: "unk00001", timestamp: ts(71), message: { role: "annotation", content: "an unknown role is passed through", timestamp: 1767000004000 } }),
		J({ type: "message", id: "unk00003", parentId: "unk00002", timestamp: ts(72), message: userText("after unknown things") }),
	];
	hw("v3-unknown-types.jsonl", "an unknown entry type and an unknown message role on the path", `${unk.join("\n")}\n`, [{ id: null, why: "file leaf" }, { id: "unk00001", why: "leaf = unknown entry" }]);
	// invalid UTF-8 bytes inside a string (Node decodes them as U+FFFD)
	const badUtf8 = Buffer.concat([
		Buffer.from(`${baseLines.join("\n")}\n`),
		Buffer.from(`{"type":"message","id":"utf80001","parentId":"${L.a3}","timestamp":"${ts(80)}","message":{"role":"user","content":"bad bytes: `),
		Buffer.from([0xff, 0x20, 0xc3, 0x28, 0x20, 0xe2, 0x82, 0x20, 0xf0, 0x9f, 0x98]),
		Buffer.from(` end","timestamp":1767000005000}}\n`),
	]);
	hw("v3-invalid-utf8.jsonl", "invalid UTF-8 sequences inside a text (Node reads them as U+FFFD)", badUtf8, [{ id: null, why: "file leaf" }]);
	hw("v3-header-only.jsonl", "a header and no entries", `${baseLines[0]}\n`, [{ id: null, why: "empty session" }]);
	// A UTF-8 byte order mark: JavaScript's trim() removes U+FEFF, so pi reads the file normally.
	hw("v3-bom.jsonl", "file starts with a UTF-8 byte order mark", `\uFEFF${base}`, leaves());
	// Optional fields left out, as older pi versions and extensions write them: synthesized messages then lack
	// the key (JSON.stringify drops undefined).
	const H = (o) => J(o);
	const fe = [
		baseLines[0],
		H({ type: "message", id: "fe000001", timestamp: ts(90), message: userText("parentId key absent (root)") }),
		H({ type: "compaction", id: "fe000002", parentId: "fe000001", timestamp: ts(91), summary: "compaction without tokensBefore", firstKeptEntryId: "fe000001" }),
		H({ type: "branch_summary", id: "fe000003", parentId: "fe000002", timestamp: ts(92), summary: "branch summary without fromId" }),
		H({ type: "custom_message", customType: "bare", content: "custom message without display or details", id: "fe000004", parentId: "fe000003", timestamp: ts(93) }),
		H({ type: "model_change", id: "fe000005", parentId: "fe000004", timestamp: ts(94), provider: "openrouter" }),
		H({
			type: "message",
			id: "fe000006",
			parentId: "fe000005",
			timestamp: ts(95),
			message: {
				role: "assistant",
				content: [{ type: "text", text: "" }, { type: "toolCall", id: "s1", name: "bash", arguments: "ls -la" }, { type: "server_tool_use", name: "web", input: { q: "x" } }, { type: "image", data: "AAAA", mimeType: "image/png" }],
				api: "x",
				provider: "p",
				model: "m",
				usage: usage(10, 1),
				timestamp: mts(),
			},
		}),
		`${H({ type: "message", id: "fe000007", parentId: "fe000006", timestamp: ts(96), message: { role: "toolResult", toolCallId: "s1", toolName: "bash", content: [{ type: "text" }, { type: "text", text: "" }, IMG], isError: false, timestamp: mts() } })}   \t`,
		H({ type: "message", id: "fe000008", parentId: "fe000007", timestamp: ts(97), message: { role: "custom", customType: "stored-custom", content: [IMG, text("stored custom role")], display: true, timestamp: mts() } }),
	];
	hw("v3-missing-fields.jsonl", "optional fields absent: parentId key, tokensBefore, fromId, display/details, modelId; text blocks without text (tool result), string tool arguments, unknown block types, trailing whitespace after a line, a stored custom-role message", `${fe.join("\n")}\n`, [
		{ id: null, why: "file leaf" },
		{ id: "fe000002", why: "compaction without tokensBefore" },
		{ id: "fe000003", why: "branch summary without fromId" },
		{ id: "fe000004", why: "custom message without display/details" },
		{ id: "fe000006", why: "assistant with odd blocks" },
	]);
	// Entry timestamps in other ISO forms (synthesized messages carry Date.parse of them; unparsable -> null)
	const tsForms = [
		["2026-04-01T10:00:00+02:00", "offset +02:00"],
		["2026-04-01T08:00:00.5Z", "one fractional digit"],
		["2026-04-01T08:00:00Z", "no milliseconds"],
		["2026-04-01", "date only (UTC)"],
		["1999-12-31T23:59:59.999-05:30", "negative offset with minutes"],
		["not a date", "unparsable"],
		[1767000000000, "a number of ms instead of a string (new Date(number) in pi)"],
	];
	const tl = [baseLines[0]];
	let prev = null;
	const tsLeaves = [{ id: null, why: "file leaf" }];
	tsForms.forEach(([t, why], i) => {
		const id = `ts00000${i}`;
		const e = i % 2 === 0 ? { type: "custom_message", customType: "ts", content: `timestamp ${t}`, display: true, id, parentId: prev, timestamp: t } : { type: "branch_summary", id, parentId: prev, timestamp: t, fromId: prev, summary: `timestamp ${t}` };
		tl.push(J(e));
		tsLeaves.push({ id, why });
		prev = id;
	});
	tl.push(J({ type: "compaction", id: "ts000099", parentId: prev, timestamp: "2026-04-01T08:00:00.000+00:00", summary: "compaction with +00:00 timestamp", firstKeptEntryId: "ts000000", tokensBefore: 1 }));
	hw("v3-timestamps.jsonl", "entry timestamps in other ISO-8601 forms, an unparsable one (null in pi's output) and a number", `${tl.join("\n")}\n`, tsLeaves);
}

writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
return { outDir, files: manifest.files.length, leaves: manifest.files.reduce((s, f) => s + f.leaves.length, 0) };
}
