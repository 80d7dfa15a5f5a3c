// /compactor plan | stats | eval | handoff | status: Compactor's reports on
// the current session, and the handoff into a new session.
import { runBinary, runJson } from "./binary.js";
import { withScratch } from "./session.js";

export const SUBCOMMANDS = ["plan", "stats", "eval", "handoff", "status"];

// The current session as the binary sees it: the whole tree, at pi's leaf.
function writeCurrent(scratch, sessionManager) {
	const file = scratch.writeSession("current.jsonl", sessionManager, sessionManager.getEntries());
	const leaf = sessionManager.getLeafId();
	return { file, leafArgs: leaf ? ["--leaf", leaf] : [] };
}

export async function report({ bin, config, sub, sessionManager }) {
	return withScratch(async (scratch) => {
		const { file, leafArgs } = writeCurrent(scratch, sessionManager);
		const settingsArgs = config.settings ? ["--settings", config.settings] : [];
		let args;
		if (sub === "plan") args = ["plan", file, ...leafArgs, ...settingsArgs];
		else if (sub === "stats") args = ["stats", file, ...leafArgs];
		else args = ["eval", file, "--strategy", "summary,user-prompts,mask", ...(config.summarizer !== "offline" ? ["--summarizer", config.summarizer] : [])];
		const { stdout } = await runBinary(bin, args, { timeoutMs: config.timeoutMs });
		// The report names the scratch copy; the user knows the session by its own file.
		return stdout.trimEnd().split(file).join(sessionManager.getSessionFile() ?? "(in-memory session)");
	});
}

// The handoff document of the current branch (Compactor's handoff strategy,
// computed without writing anything): the custom message the new session
// starts with.
export async function handoffMessage({ bin, config, sessionManager }) {
	return withScratch(async (scratch) => {
		const { file, leafArgs } = writeCurrent(scratch, sessionManager);
		const args = ["compact", file, "--strategy", "handoff", "--dry-run", "--json", "-q", "--handoff-dir", scratch.dir, ...leafArgs];
		if (config.settings) args.push("--settings", config.settings);
		const result = await runJson(bin, args, { timeoutMs: config.timeoutMs });
		const entry = result.entry;
		if (!result.compacted || !entry || entry.type !== "custom_message") throw new Error(`compactor: no handoff document (${result.skippedReason ?? "no entry"})`);
		return entry;
	});
}
