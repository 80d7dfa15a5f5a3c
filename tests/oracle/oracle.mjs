#!/usr/bin/env node
// Compactor's test oracle: pi 0.73.1 itself (npm @mariozechner/pi-coding-agent, installed by install.sh into
// $COMPACTOR_ORACLE_HOME, default ~/.cache/compactor-oracle), run on session files. docs/conformance.md
// describes how the tests use it. Commands (tests/oracle/run.sh installs first, then runs this):
//
//   inspect FILE [--leaf ID] [--keep N] [--reserve N] [--messages full|brief|none] [--serialize]
//                [--context-window N]
//       one JSON object: the context pi rebuilds, its estimate and prepareCompaction() (lib/inspect.mjs).
//       FILE is never modified (older formats are migrated on a copy). Defaults: keep 20000, reserve 16384.
//   batch JOBS.json
//       one JSON line per job, in order; a job is {file, leaf?, keepRecentTokens?, reserveTokens?,
//       messages?, serialize?}; the answer is inspect's plus `job`, or {job, error} when pi throws.
//   write-session OUT.jsonl [--seed N]
//       a session written through pi's SessionManager with every entry type (lib/written.mjs); prints
//       {file, ids, compaction, leafId}.
//   gen-large OUT.jsonl [--entries 20000] [--compact-every 25] [--branch-every 400] [--seed 1]
//       a large realistic session (lib/gen_large.mjs).
//   migrate IN OUT [--seed N]
//       pi migrates a copy of IN (format v1/v2) to v3 in OUT; with --seed its new ids are reproducible.
//   quirks
//       pi's preparation on the session shapes where it deviates from its design (lib/quirks.mjs).
//   corpus DIR
//       the conformance corpus and its manifest.json (lib/corpus.mjs).
//   fixtures DIR
//       tests/fixtures/pi: the fixture sessions and their golden outputs (lib/fixtures.mjs).
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { writeCorpus } from "./lib/corpus.mjs";
import { migrateFile, writeFixtures } from "./lib/fixtures.mjs";
import { generateLarge } from "./lib/gen_large.mjs";
import { inspect } from "./lib/inspect.mjs";
import { loadPi } from "./lib/pi.mjs";
import { runQuirks } from "./lib/quirks.mjs";
import { writeSession } from "./lib/written.mjs";

function parse(argv, numeric = []) {
	const positional = [];
	const options = {};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (!a.startsWith("--")) {
			positional.push(a);
			continue;
		}
		const key = a.slice(2).replace(/-(.)/g, (_, c) => c.toUpperCase());
		if (key === "serialize") {
			options.serialize = true;
			continue;
		}
		if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
		options[key] = numeric.includes(key) ? Number(argv[++i]) : argv[++i];
		if (Number.isNaN(options[key])) throw new Error(`${a} needs a number`);
	}
	return { positional, options };
}

const print = (value, pretty = false) => process.stdout.write(`${JSON.stringify(value, null, pretty ? 2 : 0)}\n`);

const COMMANDS = {
	inspect(pi, argv) {
		const { positional, options } = parse(argv, ["keep", "reserve", "contextWindow"]);
		if (positional.length !== 1) throw new Error("usage: inspect FILE [options]");
		const { keep, reserve, ...rest } = options;
		const r = inspect(pi, { file: positional[0], keepRecentTokens: keep, reserveTokens: reserve, ...rest });
		print(r, options.messages !== undefined && options.messages !== "full");
	},
	batch(pi, argv) {
		const jobs = JSON.parse(readFileSync(argv[0], "utf8"));
		const lines = jobs.map((job) => {
			try {
				return JSON.stringify({ job, ...inspect(pi, job) });
			} catch (e) {
				return JSON.stringify({ job, error: String(e?.message ?? e) });
			}
		});
		process.stdout.write(`${lines.join("\n")}\n`);
	},
	"write-session"(pi, argv) {
		const { positional, options } = parse(argv, ["seed"]);
		const w = writeSession(pi, options.seed ?? 1);
		const file = resolve(positional[0]);
		writeFileSync(file, w.text);
		print({ file, ids: w.ids, compaction: w.compaction, branchSummarized: w.branchSummarized, leafId: w.leafId }, true);
	},
	"gen-large"(pi, argv) {
		const { positional, options } = parse(argv, ["entries", "compactEvery", "branchEvery", "seed"]);
		print(generateLarge(pi, positional[0], options));
	},
	migrate(pi, argv) {
		const { positional, options } = parse(argv, ["seed"]);
		print(migrateFile(pi, positional[0], positional[1], options.seed));
	},
	quirks(pi) {
		for (const q of runQuirks(pi)) print(q);
	},
	corpus(pi, argv) {
		print(writeCorpus(pi, argv[0] ?? "conformance-corpus"));
	},
	fixtures(pi, argv) {
		print(writeFixtures(pi, resolve(argv[0] ?? "tests/fixtures/pi")));
	},
};

const [command, ...argv] = process.argv.slice(2);
if (!COMMANDS[command]) {
	console.error(`usage: oracle.mjs ${Object.keys(COMMANDS).join("|")} ... (see the comment at the top of oracle.mjs)`);
	process.exit(2);
}
try {
	COMMANDS[command](await loadPi(), argv);
} catch (e) {
	console.error(`oracle.mjs ${command}: ${e?.stack ?? e}`);
	process.exit(1);
}
