// Expected values for Compactor's oh-my-pi modes (trigger preset "omp" and tool-output pruning), derived
// from oh-my-pi 15.7.2's documented rules rather than produced by oh-my-pi itself: that version is not on
// the npm registry, and the versions that are (13.x, 14.x, 17.x, 18.x) ship TypeScript for Bun, not code
// node can run. The rules, as docs/compatibility.md states them:
//
//   effectiveReserve(W, s) = max(floor(0.15 W), s.reserveTokens)
//   threshold(W, s)        = min(W - 1, max(1, s.thresholdTokens))   if thresholdTokens > 0
//                          = W - effectiveReserve(W, s)               else if thresholdPercent unset or <= 0
//                          = floor(W * clamp(thresholdPercent, 1, 99) / 100)
//   shouldCompact          = W > 0 && lastUsage > threshold, lastUsage = calculateContextTokens() of the last
//                            assistant on the path whose usage is valid (not aborted, not an error)
//
//   pruneToolOutputs: walk the path's tool results newest to oldest adding each one's o200k token count t
//   to a running sum; a result is a candidate when the sum before it is >= protectTokens (40000), it is not
//   already pruned and its tool is not protected ("skill", "read"). savings = Σ max(0, t - ceil(len(notice)/4)),
//   notice = "[Output truncated - t tokens]"; all or nothing: nothing changes when savings < 20000.
//   t counts the text of the result (string content, or each text block) plus 1200 per image.
//
// Token counts come from tiktoken 1.0.22 (OpenAI's Rust core as WASM), o200k_base, as oh-my-pi counts them.
import { createRequire } from "node:module";
import { join } from "node:path";
import { oracleHome } from "./pi.mjs";

export const PRUNE_CONFIG = { protectTokens: 40000, minimumSavings: 20000, protectedTools: ["skill", "read"] };
const IMAGE_TOKENS = 1200;
const WINDOWS = [8000, 100000, 128000, 200000, 272000, 1000000];
const VARIANTS = [
	["default", {}],
	["reserve30k", { reserveTokens: 30000 }],
	["pct80", { thresholdPercent: 80 }],
	["pct0.5(clamp->1)", { thresholdPercent: 0.5 }],
	["pct150(clamp->99)", { thresholdPercent: 150 }],
	["tokens150k", { thresholdTokens: 150000 }],
	["tokens150k+pct50", { thresholdTokens: 150000, thresholdPercent: 50 }],
];

function threshold(window, s) {
	const reserve = Math.max(Math.floor(window * 0.15), s.reserveTokens);
	let value;
	if (Number.isFinite(s.thresholdTokens) && s.thresholdTokens > 0) value = Math.min(window - 1, Math.max(1, s.thresholdTokens));
	else if (!Number.isFinite(s.thresholdPercent) || s.thresholdPercent <= 0) value = window - reserve;
	else value = Math.floor((window * Math.min(99, Math.max(1, s.thresholdPercent))) / 100);
	return { effectiveReserve: reserve, threshold: value };
}

function lastValidUsage(path) {
	for (let i = path.length - 1; i >= 0; i--) {
		const m = path[i].type === "message" ? path[i].message : undefined;
		if (m?.role === "assistant" && m.usage && m.stopReason !== "aborted" && m.stopReason !== "error") return m.usage;
	}
	return undefined;
}

export function thresholdTable(path) {
	const u = lastValidUsage(path);
	const lastUsage = { ...u };
	delete lastUsage.cost;
	lastUsage.calculateContextTokens = u.totalTokens || u.input + u.output + u.cacheRead + u.cacheWrite;
	lastUsage.calculatePromptTokens = u.input + u.cacheRead + u.cacheWrite || lastUsage.calculateContextTokens;
	const thresholds = [];
	for (const window of WINDOWS) {
		for (const [name, v] of VARIANTS) {
			const t = threshold(window, { reserveTokens: 16384, ...v });
			thresholds.push({ contextWindow: window, settings: name, ...t, shouldCompactAtLastUsage: window > 0 && lastUsage.calculateContextTokens > t.threshold });
		}
	}
	return { lastUsage, thresholds };
}

export function o200kCounter() {
	const require = createRequire(join(oracleHome(), "package.json"));
	const { get_encoding } = require("tiktoken");
	const enc = get_encoding("o200k_base");
	return (text) => enc.encode_ordinary(text).length;
}

function resultTokens(message, count) {
	if (typeof message.content === "string") return count(message.content);
	let n = 0;
	for (const b of message.content ?? []) {
		if (b.type === "text") n += count(b.text ?? "");
		else if (b.type === "image") n += IMAGE_TOKENS;
	}
	return n;
}

export function pruneToolOutputs(path, count, config = PRUNE_CONFIG) {
	const notice = (t) => `[Output truncated - ${t} tokens]`;
	let seen = 0;
	let savings = 0;
	const candidates = [];
	for (let i = path.length - 1; i >= 0; i--) {
		const e = path[i];
		if (e.type !== "message" || e.message.role !== "toolResult") continue;
		const t = resultTokens(e.message, count);
		const before = seen;
		seen += t;
		if (e.message.prunedAt !== undefined) continue;
		if (before < config.protectTokens || config.protectedTools.includes(e.message.toolName)) continue;
		savings += Math.max(0, t - Math.ceil(notice(t).length / 4));
		candidates.push({ index: i, id: e.id, toolName: e.message.toolName, notice: notice(t) });
	}
	const pruned = candidates.length > 0 && savings >= config.minimumSavings ? candidates.reverse() : [];
	return { config, prunedCount: pruned.length, tokensSaved: pruned.length ? savings : 0, prunedEntries: pruned };
}
