// session_before_tree: the summary of the branch being left, from
// `compactor branch --summarize --dry-run` on a copy of the whole tree.
import { runJson } from "./binary.js";
import { withScratch } from "./session.js";

// Returns {summary: {summary, details}} for pi, or undefined when pi asked for
// no summary (a plain move needs nothing from Compactor).
export async function computeBranchSummary({ bin, config, event, sessionManager }) {
	const { preparation, signal } = event;
	if (!preparation.userWantsSummary || preparation.entriesToSummarize.length === 0) return undefined;
	return withScratch(async (scratch) => {
		const file = scratch.writeSession("tree.jsonl", sessionManager, sessionManager.getEntries());
		const args = ["branch", file, "--to", preparation.targetId, "--summarize", "--dry-run", "--json", "-q", "--summarizer", config.summarizer];
		if (preparation.oldLeafId) args.push("--from", preparation.oldLeafId);
		if (config.settings) args.push("--settings", config.settings);
		if (preparation.customInstructions) args.push("--instructions", preparation.customInstructions);
		if (preparation.replaceInstructions) args.push("--replace-instructions");
		const result = await runJson(bin, args, { timeoutMs: config.timeoutMs, signal });
		if (!result.summary) return undefined;
		return {
			summary: {
				summary: result.summary,
				details: {
					readFiles: result.readFiles ?? [],
					modifiedFiles: result.modifiedFiles ?? [],
					compactor: { summarizer: config.summarizer, entriesSummarized: Array.isArray(result.entriesSummarized) ? result.entriesSummarized.length : result.entriesSummarized, commonAncestorId: result.commonAncestorId },
				},
			},
		};
	});
}
