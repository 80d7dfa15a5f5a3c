// The context event: old tool outputs masked or pruned in the copy of the
// messages pi is about to send. pi's session file is never touched; the
// binary rewrites a scratch session built from the messages, and the rewritten
// tool results are put back in place.
import { runJson } from "./binary.js";
import { withScratch } from "./session.js";

function pruneArgs(file, out, prune) {
	const args = ["prune", file, "-o", out, "--json", "-q"];
	if (typeof prune === "object" && prune) {
		if (prune.protectTokens != null) args.push("--protect-tokens", String(prune.protectTokens));
		if (prune.minimumSavings != null) args.push("--minimum-savings", String(prune.minimumSavings));
		if (prune.minPruneTokens != null) args.push("--min-prune-tokens", String(prune.minPruneTokens));
	}
	return args;
}

// Returns the new message array, or undefined when nothing changed.
export async function rewriteContext({ bin, config, messages, sessionManager, signal }) {
	const wantMask = config.mask || config.strategy === "mask";
	if (!wantMask && !config.prune) return undefined;
	if (!messages.some((m) => m.role === "toolResult")) return undefined;
	return withScratch(async (scratch) => {
		let { file, ids } = scratch.writeMessages("context.jsonl", sessionManager, messages);
		let changed = 0;
		if (config.prune) {
			const out = scratch.path("pruned.jsonl");
			const report = await runJson(bin, pruneArgs(file, out, config.prune), { timeoutMs: config.timeoutMs, signal });
			if (report.written) {
				file = out;
				changed += report.pruned;
			}
		}
		if (wantMask) {
			const report = await runJson(bin, ["compact", file, "--strategy", "mask", "--json", "-q", "--grace-ms", "0"], { timeoutMs: config.timeoutMs, signal });
			if (report.written) changed += report.maskedOutputs ?? 0;
		}
		if (changed === 0) return undefined;
		const byId = new Map(scratch.readEntries(file).map((e) => [e.id, e]));
		return messages.map((message, i) => {
			if (message.role !== "toolResult") return message;
			return byId.get(ids[i])?.message ?? message;
		});
	});
}
