// What pi 0.73.1 makes of one session file at one leaf: the context it rebuilds, its token estimate and the
// compaction it would prepare. Shared by `oracle.mjs inspect` (one file) and `oracle.mjs batch` (many).
//
// Result fields:
//   file, piVersion, headerVersionOnDisk (null: no valid header), entries, leafId (after --leaf),
//   fileLeafId (pi's leaf after loading: the last entry in file order), pathLength, thinkingLevel, model,
//   estimatedTokens {heuristicSum: Σ estimateTokens over the context, contextEstimate, usageTokens,
//                    trailingTokens, lastUsageIndex: estimateContextTokens()},
//   shouldCompact (only with contextWindow),
//   preparation: null when prepareCompaction() returns nothing, else {firstKeptEntryId,
//     firstKeptEntryIndexInPath, firstKeptEntryType, firstKeptEntryRole, turnStartIndexInPath,
//     messagesToSummarize, messagesToSummarizeEstTokens (Σ estimateTokens), turnPrefixMessages (counts),
//     isSplitTurn, tokensBefore, hasPreviousSummary, readFiles, modifiedFiles, settings,
//     and with serialize: serializedConversation, serializedTurnPrefix (the exact summarizer input)},
//   contextMessages: exactly buildSessionContext().messages ("full"), one line per message ("brief"), or
//     absent ("none").
import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

// The header's format version; null when the first line is not a session header.
function headerVersion(file) {
	const fd = openSync(file, "r");
	try {
		const buf = Buffer.alloc(8192);
		const n = readSync(fd, buf, 0, buf.length, 0);
		const header = JSON.parse(buf.toString("utf8", 0, n).split("\n")[0]);
		return header.type === "session" ? (header.version ?? 1) : null;
	} catch {
		return null;
	} finally {
		closeSync(fd);
	}
}

// SessionManager.open() rewrites a file that needs migration (or has no valid header). pi must never
// change a file under test, so such files are opened from a copy in a temp directory.
function withReadablePath(file, currentVersion, fn) {
	const version = headerVersion(file);
	if (version !== null && version >= currentVersion) return fn(file, version);
	const dir = mkdtempSync(join(tmpdir(), "compactor-oracle-"));
	try {
		const copy = join(dir, basename(file));
		copyFileSync(file, copy);
		return fn(copy, version);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

// pi's prepareCompaction() starts its cut-point search at the previous compaction's first kept entry
// (or right after that compaction when the entry is not on the path); the same start gives the turn
// start that the preparation does not report.
function boundaryStart(path) {
	for (let i = path.length - 1; i >= 0; i--) {
		if (path[i].type !== "compaction") continue;
		const kept = path.findIndex((e) => e.id === path[i].firstKeptEntryId);
		return kept >= 0 ? kept : i + 1;
	}
	return 0;
}

function briefMessage(C, m) {
	const out = { role: m.role, estTokens: C.estimateTokens(m) };
	if (m.role === "assistant") Object.assign(out, { stopReason: m.stopReason, blocks: m.content.map((b) => b.type) });
	if (m.role === "toolResult") Object.assign(out, { toolName: m.toolName, toolCallId: m.toolCallId });
	if (m.role === "custom") out.customType = m.customType;
	return out;
}

function describePreparation(pi, path, prep, settings, serialize) {
	const C = pi.compaction;
	const { readFiles, modifiedFiles } = C.computeFileLists(prep.fileOps);
	const cut = C.findCutPoint(path, boundaryStart(path), path.length, settings.keepRecentTokens);
	const kept = path.findIndex((e) => e.id === prep.firstKeptEntryId);
	const out = {
		firstKeptEntryId: prep.firstKeptEntryId,
		firstKeptEntryIndexInPath: kept,
		firstKeptEntryType: path[kept]?.type,
		firstKeptEntryRole: path[kept]?.message?.role,
		turnStartIndexInPath: cut.turnStartIndex,
		messagesToSummarize: prep.messagesToSummarize.length,
		messagesToSummarizeEstTokens: prep.messagesToSummarize.reduce((sum, m) => sum + C.estimateTokens(m), 0),
		turnPrefixMessages: prep.turnPrefixMessages.length,
		isSplitTurn: prep.isSplitTurn,
		tokensBefore: prep.tokensBefore,
		hasPreviousSummary: prep.previousSummary !== undefined,
		readFiles,
		modifiedFiles,
		settings: prep.settings,
	};
	if (serialize) {
		const text = (messages) => C.serializeConversation(pi.messages.convertToLlm(messages));
		out.serializedConversation = text(prep.messagesToSummarize);
		out.serializedTurnPrefix = text(prep.turnPrefixMessages);
	}
	return out;
}

// request: {file, leaf?, keepRecentTokens?, reserveTokens?, contextWindow?, messages?: "full"|"brief"|"none",
//           serialize?: boolean}
export function inspect(pi, request) {
	const C = pi.compaction;
	const { SessionManager, CURRENT_SESSION_VERSION } = pi.session;
	return withReadablePath(request.file, CURRENT_SESSION_VERSION, (path, version) => {
		const sm = SessionManager.open(path, dirname(path));
		const fileLeafId = sm.getLeafId();
		if (request.leaf !== undefined && request.leaf !== null) sm.branch(request.leaf);
		const ctx = sm.buildSessionContext();
		const branch = sm.getBranch();
		const settings = {
			enabled: true,
			reserveTokens: request.reserveTokens ?? C.DEFAULT_COMPACTION_SETTINGS.reserveTokens,
			keepRecentTokens: request.keepRecentTokens ?? C.DEFAULT_COMPACTION_SETTINGS.keepRecentTokens,
		};
		const prep = C.prepareCompaction(branch, settings);
		let heuristicSum = 0;
		for (const m of ctx.messages) heuristicSum += C.estimateTokens(m);
		const est = C.estimateContextTokens(ctx.messages);
		const result = {
			file: request.file,
			piVersion: pi.version,
			headerVersionOnDisk: version,
			entries: sm.getEntries().length,
			leafId: sm.getLeafId(),
			fileLeafId,
			pathLength: branch.length,
			thinkingLevel: ctx.thinkingLevel,
			model: ctx.model,
			estimatedTokens: {
				heuristicSum,
				contextEstimate: est.tokens,
				usageTokens: est.usageTokens,
				trailingTokens: est.trailingTokens,
				lastUsageIndex: est.lastUsageIndex,
			},
		};
		if (request.contextWindow !== undefined) {
			result.shouldCompact = C.shouldCompact(est.tokens, request.contextWindow, settings);
		}
		result.preparation = prep ? describePreparation(pi, branch, prep, settings, request.serialize) : null;
		const mode = request.messages ?? "full";
		if (mode === "full") result.contextMessages = ctx.messages;
		else if (mode === "brief") result.contextMessages = ctx.messages.map((m) => briefMessage(C, m));
		return result;
	});
}
