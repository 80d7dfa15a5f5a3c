// session_before_compact: Compactor computes the compaction of the branch pi
// hands over, pi stores it as its own `compaction` entry (fromHook: true).
import { readFileSync } from "node:fs";
import { runJson } from "./binary.js";
import { withScratch } from "./session.js";

// The strategy that produces the compaction entry. mask works on what is sent
// (the context event); when pi still reaches its threshold, the summary
// strategy compacts.
export function compactionStrategy(config) {
	return config.strategy === "mask" ? "summary" : config.strategy;
}

// Whether the compaction is asked from the configured `compactor serve`. Not
// for notes: the notes file is on this side, and the service API takes no
// notes (a remote serve could not read a local path anyway), so the binary
// compacts with it.
export function usesService(config) {
	return Boolean(config.serve) && compactionStrategy(config) !== "notes";
}

function compactArgs(file, config, preparation, customInstructions) {
	const args = ["compact", file, "--json", "--dry-run", "-q", "--strategy", compactionStrategy(config)];
	if (compactionStrategy(config) === "summary") args.push("--summarizer", config.summarizer);
	if (config.settings) args.push("--settings", config.settings);
	const settings = preparation?.settings;
	if (settings?.keepRecentTokens != null) args.push("--keep-recent-tokens", String(settings.keepRecentTokens));
	if (settings?.reserveTokens != null) args.push("--reserve-tokens", String(settings.reserveTokens));
	if (config.notes && compactionStrategy(config) === "notes") args.push("--notes", config.notes);
	if (customInstructions) args.push("--instructions", customInstructions);
	return args;
}

// POST /compactor/v1/compact of a `compactor serve` (stateless: the session in
// the body, the options as query parameters); answers {compaction, context}.
async function viaServe(config, body, preparation, customInstructions, signal) {
	const query = new URLSearchParams({ strategy: compactionStrategy(config), dryRun: "true" });
	if (compactionStrategy(config) === "summary") query.set("summarizer", config.summarizer);
	const settings = preparation?.settings;
	if (settings?.keepRecentTokens != null) query.set("keepRecentTokens", String(settings.keepRecentTokens));
	if (settings?.reserveTokens != null) query.set("reserveTokens", String(settings.reserveTokens));
	if (customInstructions) query.set("instructions", customInstructions);
	const headers = { "content-type": "application/x-ndjson" };
	if (process.env.COMPACTOR_SERVE_TOKEN) headers.authorization = `Bearer ${process.env.COMPACTOR_SERVE_TOKEN}`;
	const url = `${config.serve.replace(/\/+$/, "")}/compactor/v1/compact?${query}`;
	const timeout = AbortSignal.timeout(config.timeoutMs);
	let response;
	try {
		response = await fetch(url, { method: "POST", headers, body, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
	} catch (err) {
		throw new Error(`compactor serve at ${config.serve} unreachable: ${err.cause?.message ?? err.message}`);
	}
	const text = await response.text();
	let json;
	try {
		json = JSON.parse(text);
	} catch {
		throw new Error(`compactor serve ${url}: HTTP ${response.status}, not JSON: ${text.slice(0, 200)}`);
	}
	if (!response.ok) throw new Error(`compactor serve: HTTP ${response.status} ${json?.error?.code ?? ""}: ${json?.error?.message ?? text.slice(0, 200)}`);
	if (!json.compaction) throw new Error("compactor serve: the answer has no `compaction` object");
	return json.compaction;
}

// What pi can store from Compactor's result: pi's hook takes a summary and the
// first kept entry; everything else Compactor knows goes into `details`.
export function toPiCompaction(result, branchEntries, config) {
	if (!result.compacted) return { skipped: result.skippedReason || "nothing compacted" };
	const entry = result.entry;
	if (!entry || entry.type !== "compaction") return { skipped: `strategy ${result.strategy} appends no compaction entry` };
	// user-prompts keeps nothing before its entry (firstKeptEntryId names the
	// entry Compactor would have appended); pi then keeps nothing either, as
	// that id is on no path. Any other id must be on the branch pi compacts.
	const kept = entry.firstKeptEntryId;
	if (kept !== entry.id && !branchEntries.some((e) => e.id === kept)) {
		throw new Error(`Compactor kept from ${kept}, which is not on the branch`);
	}
	const figures = {
		strategy: result.strategy,
		summarizer: result.strategy === "summary" ? config.summarizer : null,
		messagesSummarized: result.messagesSummarized,
		turnPrefixMessages: result.turnPrefixMessages,
		isSplitTurn: result.isSplitTurn,
		tokensBefore: result.tokensBefore,
		tokensAfter: result.tokensAfter,
		summarizedTokens: result.summarizedTokens,
		durationMs: result.durationMs,
	};
	if (result.keptUserMessageCount != null) figures.keptUserMessageCount = result.keptUserMessageCount;
	if (usesService(config)) figures.serve = config.serve;
	return {
		compaction: {
			summary: entry.summary,
			firstKeptEntryId: kept,
			tokensBefore: Math.round(Number(entry.tokensBefore ?? result.tokensBefore)),
			// readFiles/modifiedFiles at the top, as pi's own compaction stores
			// them, so pi's cumulative file tracking goes on.
			details: { readFiles: result.readFiles ?? [], modifiedFiles: result.modifiedFiles ?? [], ...(entry.details ?? {}), compactor: figures },
		},
	};
}

// Returns {compaction} for pi, or {skipped: reason}; throws on failure.
export async function computeCompaction({ bin, config, event, sessionManager }) {
	const { preparation, branchEntries, customInstructions, signal } = event;
	return withScratch(async (scratch) => {
		const file = scratch.writeSession("branch.jsonl", sessionManager, branchEntries);
		let result;
		if (usesService(config)) {
			result = await viaServe(config, readFileSync(file), preparation, customInstructions, signal);
		} else {
			result = await runJson(bin, compactArgs(file, config, preparation, customInstructions), { timeoutMs: config.timeoutMs, signal });
		}
		return toPiCompaction(result, branchEntries, config);
	});
}
