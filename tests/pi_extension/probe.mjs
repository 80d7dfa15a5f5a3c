// A helper extension for the pi-compactor tests (never shipped): records what
// each provider request carries, and offers /probe-nav ID, which navigates
// pi's tree with a summary (what /tree does interactively), so that RPC mode
// can drive session_before_tree.
import { appendFileSync } from "node:fs";

export default function probe(pi) {
	pi.on("before_provider_request", (event) => {
		const log = process.env.PI_COMPACTOR_PROBE_LOG;
		if (!log) return undefined;
		const text = JSON.stringify(event.payload);
		const count = (re) => (text.match(re) || []).length;
		appendFileSync(log, JSON.stringify({ bytes: text.length, masked: count(/\[Masked output of /g), pruned: count(/\[Output truncated - \d+ tokens\]/g) }) + "\n");
		return undefined;
	});
	pi.registerCommand("probe-nav", {
		description: "test helper: navigate to an entry with a branch summary",
		handler: async (args, ctx) => {
			const result = await ctx.navigateTree(args.trim(), { summarize: true });
			ctx.ui.notify(`probe-nav ${JSON.stringify(result ?? null)}`, "info");
		},
	});
}
