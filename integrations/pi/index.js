// pi-compactor: Compactor inside pi (pi 0.73.1 extension API).
//
//   session_before_compact  Compactor's compaction (summary, notes, user-prompts)
//   session_before_tree     Compactor's branch summary on /tree
//   context                 old tool outputs masked / pruned in what is sent
//   agent_end               a Compactor trigger preset (optional)
//   /compactor              plan | stats | eval | handoff | status
//
// Any failure leaves the work to pi (its own compaction or summary) and tells
// the user. README.md describes the configuration.
import { findBinary } from "./lib/binary.js";
import { handoffMessage, report, SUBCOMMANDS } from "./lib/commands.js";
import { computeCompaction, usesService } from "./lib/compact.js";
import { loadConfig } from "./lib/config.js";
import { rewriteContext } from "./lib/context.js";
import { computeBranchSummary } from "./lib/tree.js";
import { shouldTrigger } from "./lib/trigger.js";

// pi's notifications are no-ops without a UI (-p, --mode json): the message
// then goes to stderr, so the user is told in every mode. The UI is taken from
// ctx before any await: pi may retire an extension context while a handler
// still runs (in -p mode it does so once the last answer is out, while the
// compaction is still being computed), and a retired ctx throws on access.
function notifier(ctx) {
	let ui = null;
	try {
		ui = ctx?.hasUI ? ctx.ui : null;
	} catch {
		ui = null;
	}
	return (message, level = "info") => {
		try {
			if (ui) return void ui.notify(message, level);
		} catch {
			// the UI went away with the context: stderr below
		}
		process.stderr.write(`pi-compactor: ${message}\n`);
	};
}

function tell(ctx, message, level = "info") {
	notifier(ctx)(message, level);
}

export default function piCompactor(pi) {
	let state = null; // {config, error, bin, binError}, per session start

	function setup(ctx) {
		const { config, error } = loadConfig(ctx?.cwd ?? process.cwd());
		// The binary is looked for even with a service configured: branch
		// summaries, masking, pruning and the commands always run it.
		const found = findBinary(config);
		state = { config, error, bin: found.path, binError: found.error ?? null };
		return state;
	}
	function current(ctx) {
		return state ?? setup(ctx);
	}
	// The binary, or null after telling the user why pi does the work.
	function binaryOr(ctx, what) {
		const s = current(ctx);
		if (s.error) {
			tell(ctx, `configuration error, ${what}: ${s.error}`, "error");
			return null;
		}
		if (s.binError) {
			tell(ctx, `${what}: ${s.binError}`, "error");
			return null;
		}
		return s.bin;
	}

	pi.on("session_start", async (_event, ctx) => {
		const s = setup(ctx);
		if (s.error) tell(ctx, `configuration error (using pi's own compaction until fixed): ${s.error}`, "error");
		else if (s.binError && s.config.serve) tell(ctx, `${s.binError}; compaction goes to ${s.config.serve}, branch summaries, masking, pruning and /compactor are off`, "warning");
		else if (s.binError) tell(ctx, `${s.binError}; pi's own compaction stays in use`, "warning");
	});

	pi.on("session_before_compact", async (event, ctx) => {
		const { config, error } = current(ctx);
		// With a service configured the compaction needs no binary (except
		// for notes, see usesService).
		const viaService = usesService(config) && !error;
		const bin = viaService ? null : binaryOr(ctx, "pi compacts by itself");
		if (!viaService && bin === null) return undefined;
		const say = notifier(ctx);
		const sessionManager = ctx.sessionManager;
		try {
			const result = await computeCompaction({ bin, config, event, sessionManager });
			if (result.skipped) {
				say(`Compactor did not compact (${result.skipped}); pi compacts by itself`, "warning");
				return undefined;
			}
			const figures = result.compaction.details.compactor;
			const prefix = figures.turnPrefixMessages ? ` (+${figures.turnPrefixMessages} of the split turn)` : "";
			say(`Compactor (${figures.strategy}) summarized ${figures.messagesSummarized} messages${prefix}: ~${Math.round(figures.tokensBefore)} -> ~${figures.tokensAfter} tokens`);
			return result;
		} catch (err) {
			if (event.signal?.aborted) return undefined;
			if (config.fallbackNotice) say(`Compactor failed, pi compacts by itself: ${err.message}`, "error");
			return undefined;
		}
	});

	pi.on("session_before_tree", async (event, ctx) => {
		const s = current(ctx);
		if (!s.config.branchSummary || !event.preparation.userWantsSummary) return undefined;
		const bin = binaryOr(ctx, "pi summarizes the branch by itself");
		if (bin === null) return undefined;
		const say = notifier(ctx);
		try {
			return await computeBranchSummary({ bin, config: s.config, event, sessionManager: ctx.sessionManager });
		} catch (err) {
			say(`Compactor's branch summary failed, pi summarizes by itself: ${err.message}`, "error");
			return undefined;
		}
	});

	pi.on("context", async (event, ctx) => {
		const s = current(ctx);
		if (s.error || s.binError || !s.bin) return undefined;
		if (!(s.config.mask || s.config.prune || s.config.strategy === "mask")) return undefined;
		const say = notifier(ctx);
		try {
			const messages = await rewriteContext({ bin: s.bin, config: s.config, messages: event.messages, sessionManager: ctx.sessionManager, signal: ctx.signal });
			return messages ? { messages } : undefined;
		} catch (err) {
			say(`Compactor could not mask/prune tool outputs (sent unchanged): ${err.message}`, "warning");
			return undefined;
		}
	});

	pi.on("agent_end", async (_event, ctx) => {
		const s = current(ctx);
		if (!s.config.trigger || s.error || s.binError || !s.bin) return;
		const say = notifier(ctx);
		try {
			const decision = await shouldTrigger({ bin: s.bin, config: s.config, ctx });
			if (decision.fire) {
				say(`Compactor's ${s.config.trigger} trigger fired: ${decision.reason}`);
				ctx.compact({ onError: (err) => say(`compaction failed: ${err.message}`, "error") });
			}
		} catch (err) {
			say(`Compactor's trigger check failed: ${err.message}`, "warning");
		}
	});

	pi.registerCommand("compactor", {
		description: "Compactor: plan | stats | eval | handoff | status",
		getArgumentCompletions: (prefix) => {
			const items = SUBCOMMANDS.filter((c) => c.startsWith(prefix.trim())).map((c) => ({ value: c, label: c }));
			return items.length ? items : null;
		},
		handler: async (args, ctx) => {
			const sub = (args || "").trim().split(/\s+/)[0] || "status";
			if (!SUBCOMMANDS.includes(sub)) {
				tell(ctx, `unknown subcommand "${sub}": /compactor ${SUBCOMMANDS.join(" | ")}`, "error");
				return;
			}
			const s = setup(ctx);
			if (sub === "status") {
				const where = `${s.bin ? `binary ${s.bin}` : s.binError}${s.config.serve ? `, compaction by the service ${s.config.serve}` : ""}`;
				const text = `strategy ${s.config.strategy}, summarizer ${s.config.summarizer}, ${where}${s.config.trigger ? `, trigger ${s.config.trigger}` : ""}${s.config.mask ? ", mask" : ""}${s.config.prune ? ", prune" : ""}${s.error ? `; configuration error: ${s.error}` : ""}`;
				return show(ctx, text);
			}
			const bin = binaryOr(ctx, `/compactor ${sub}`);
			if (!bin) return;
			await ctx.waitForIdle();
			try {
				if (sub === "handoff") return await handoff(bin, s.config, ctx);
				show(ctx, await report({ bin, config: s.config, sub, sessionManager: ctx.sessionManager }));
			} catch (err) {
				tell(ctx, `/compactor ${sub} failed: ${err.message}`, "error");
			}
		},
	});

	function show(ctx, text) {
		if (ctx.hasUI) ctx.ui.notify(text, "info");
		else process.stdout.write(`${text}\n`);
	}

	async function handoff(bin, config, ctx) {
		const entry = await handoffMessage({ bin, config, sessionManager: ctx.sessionManager });
		const parentSession = ctx.sessionManager.getSessionFile();
		const result = await ctx.newSession({
			parentSession,
			setup: async (sm) => {
				sm.appendCustomMessageEntry(entry.customType ?? "handoff", entry.content, entry.display ?? true, entry.details);
			},
		});
		if (result?.cancelled) tell(ctx, "the handoff session was cancelled by another extension", "warning");
	}
}
