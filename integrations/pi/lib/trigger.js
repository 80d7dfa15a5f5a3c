// A Compactor trigger preset (pi, omp, kimi, codex, opencode, nexus, nominal)
// in place of pi's own threshold: after each agent run the binary decides on a
// copy of the branch (`compact --if-needed --dry-run`, which applies the
// preset and writes nothing); when it fires, pi is asked to compact, which
// comes back to session_before_compact.
import { writeFileSync } from "node:fs";
import { runJson } from "./binary.js";
import { withScratch } from "./session.js";

export async function shouldTrigger({ bin, config, ctx }) {
	const window = config.contextWindow ?? ctx.model?.contextWindow;
	if (!window) return { fire: false, reason: "no context window known" };
	return withScratch(async (scratch) => {
		const sm = ctx.sessionManager;
		const file = scratch.writeSession("branch.jsonl", sm, sm.getBranch());
		const settings = scratch.path("settings.json");
		writeFileSync(settings, JSON.stringify({ trigger: config.trigger }));
		// The offline summarizer: deciding must not call a model.
		const args = ["compact", file, "--if-needed", "--dry-run", "--json", "-q", "--settings", settings, "--context-window", String(window), "--summarizer", "offline"];
		const result = await runJson(bin, args, { timeoutMs: config.timeoutMs });
		// Only the trigger decides: what is summarized is pi's preparation
		// (its keepRecentTokens), which may find something where Compactor's
		// defaults find nothing.
		const reason = result.skippedReason ?? "";
		if (reason.startsWith("below threshold") || reason === "disabled" || reason === "already compacted") return { fire: false, reason };
		return { fire: true, reason: `~${Math.round(result.tokensBefore)} tokens of a ${window}-token window` };
	});
}
