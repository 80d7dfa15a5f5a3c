// The extension's configuration: a JSON file, merged from the user's pi agent
// directory and the project, with environment overrides. Every key has a
// default, so no configuration at all means: summary with Compactor's embedded
// offline summarizer (no key, no network).
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const STRATEGIES = ["summary", "user-prompts", "notes", "mask"];

export const DEFAULTS = Object.freeze({
	bin: null, // path of the compactor binary; else $COMPACTOR_BIN, else PATH
	strategy: "summary", // what session_before_compact returns (mask: see README)
	summarizer: "offline", // or a model named in the compactor settings file
	settings: null, // compactor settings file (models, keep policy, trigger)
	notes: null, // notes file for strategy "notes"
	serve: null, // URL of a `compactor serve` to use instead of the binary
	trigger: null, // a Compactor trigger preset checked after each agent run
	contextWindow: null, // window for the trigger check (default: the model's)
	mask: false, // mask old tool outputs in what is sent (context event)
	prune: false, // or {protectTokens, minimumSavings}: oh-my-pi pruning, same way
	branchSummary: true, // answer session_before_tree with Compactor's summary
	timeoutMs: 120000, // per binary run or service request
	fallbackNotice: true, // tell the user when pi's own compaction takes over
});

function agentDir() {
	return process.env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
}

function readJson(path) {
	const text = readFileSync(path, "utf8");
	try {
		return JSON.parse(text);
	} catch (err) {
		throw new Error(`${path}: not valid JSON (${err.message})`);
	}
}

// Files read, later ones winning: $COMPACTOR_PI_CONFIG alone when set, else
// AGENT_DIR/compactor.json then CWD/.pi/compactor.json. Relative paths in the
// user file are taken from the agent directory, in the project file from the
// project directory (the parent of .pi/).
export function configFiles(cwd) {
	if (process.env.COMPACTOR_PI_CONFIG) return [resolve(cwd, process.env.COMPACTOR_PI_CONFIG)];
	return [join(agentDir(), "compactor.json"), join(cwd, ".pi", "compactor.json")];
}

function checked(config, source) {
	if (!STRATEGIES.includes(config.strategy)) {
		throw new Error(`${source}: strategy must be one of ${STRATEGIES.join(", ")} (handoff is the /compactor handoff command), got ${JSON.stringify(config.strategy)}`);
	}
	if (config.strategy === "notes" && !config.notes) throw new Error(`${source}: strategy "notes" needs "notes" (the notes file)`);
	if (!(config.timeoutMs > 0)) throw new Error(`${source}: timeoutMs must be a positive number`);
	return config;
}

// Returns {config, sources, error}: on an unreadable or invalid file the
// defaults are used and `error` says why (the extension reports it).
export function loadConfig(cwd) {
	let config = { ...DEFAULTS };
	const sources = [];
	try {
		for (const file of configFiles(cwd)) {
			if (!existsSync(file)) continue;
			const base = resolve(file, "..", file.endsWith(join(".pi", "compactor.json")) ? ".." : ".");
			const loaded = readJson(file);
			if (typeof loaded !== "object" || loaded === null || Array.isArray(loaded)) throw new Error(`${file}: expected a JSON object`);
			for (const key of Object.keys(loaded)) {
				if (!(key in DEFAULTS)) throw new Error(`${file}: unknown key ${JSON.stringify(key)}`);
			}
			for (const key of ["bin", "settings", "notes"]) {
				if (typeof loaded[key] !== "string") continue;
				const value = loaded[key].startsWith("~/") ? join(homedir(), loaded[key].slice(2)) : loaded[key];
				loaded[key] = resolve(base, value);
			}
			config = { ...config, ...loaded };
			sources.push(file);
		}
		if (process.env.COMPACTOR_BIN) config.bin = process.env.COMPACTOR_BIN;
		if (process.env.COMPACTOR_PI_STRATEGY) config.strategy = process.env.COMPACTOR_PI_STRATEGY;
		if (process.env.COMPACTOR_PI_SERVE) config.serve = process.env.COMPACTOR_PI_SERVE;
		return { config: checked(config, sources.at(-1) ?? "environment"), sources, error: null };
	} catch (err) {
		return { config: { ...DEFAULTS }, sources, error: err.message };
	}
}
