#!/usr/bin/env node
// Batch driver for the pi oracle: loads pi 0.73.1 once and answers many (file, leaf, settings) jobs, printing
// one JSON object per line in job order. Each object has the same fields (and meanings) as
// shared/tools/pi-oracle/harness.mjs with `--messages full`: leafId, fileLeafId, thinkingLevel, model,
// estimatedTokens, preparation, contextMessages (exactly buildSessionContext().messages), plus `job` (the input
// job) and, when pi throws, `error`.
//
// Usage: PI_DIST=<pi-coding-agent>/dist node oracle_batch.mjs JOBS.json > RESULTS.jsonl
//   JOBS.json: [{"file": path, "leaf": id|null, "keepRecentTokens": 20000, "reserveTokens": 16384}, ...]
//
// Files with header version < 3 (or no valid header) are opened from a temp copy, because SessionManager.open()
// rewrites such files in place.
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = process.env.PI_DIST ?? join(homedir(), ".cache/pi-oracle/node_modules/@mariozechner/pi-coding-agent/dist");
const C = await import(pathToFileURL(join(dist, "core/compaction/index.js")).href);
const { SessionManager, CURRENT_SESSION_VERSION } = await import(pathToFileURL(join(dist, "core/session-manager.js")).href);
const PI_VERSION = JSON.parse(readFileSync(join(dist, "../package.json"), "utf8")).version;

function headerVersion(file) {
	const fd = openSync(file, "r");
	const buf = Buffer.alloc(4096);
	const n = readSync(fd, buf, 0, buf.length, 0);
	closeSync(fd);
	try {
		const h = JSON.parse(buf.toString("utf8", 0, n).split("\n")[0]);
		return h.type === "session" ? (h.version ?? 1) : null;
	} catch {
		return null;
	}
}

function runJob(job) {
	const v = headerVersion(job.file);
	let path = job.file;
	let tmp = null;
	if (v === null || v < CURRENT_SESSION_VERSION) {
		tmp = mkdtempSync(join(tmpdir(), "pi-oracle-batch-"));
		path = join(tmp, basename(job.file));
		copyFileSync(job.file, path);
	}
	try {
		const sm = SessionManager.open(path, dirname(path));
		const fileLeafId = sm.getLeafId();
		if (job.leaf !== null && job.leaf !== undefined) sm.branch(job.leaf);
		const ctx = sm.buildSessionContext();
		const branch = sm.getBranch();
		const settings = { enabled: true, reserveTokens: job.reserveTokens ?? 16384, keepRecentTokens: job.keepRecentTokens ?? 20000 };
		const prep = C.prepareCompaction(branch, settings);
		let heuristicSum = 0;
		for (const m of ctx.messages) heuristicSum += C.estimateTokens(m);
		const est = C.estimateContextTokens(ctx.messages);
		let preparation = null;
		if (prep) {
			const { readFiles, modifiedFiles } = C.computeFileLists(prep.fileOps);
			preparation = {
				firstKeptEntryId: prep.firstKeptEntryId,
				messagesToSummarize: prep.messagesToSummarize.length,
				turnPrefixMessages: prep.turnPrefixMessages.length,
				isSplitTurn: prep.isSplitTurn,
				tokensBefore: prep.tokensBefore,
				hasPreviousSummary: prep.previousSummary !== undefined,
				readFiles,
				modifiedFiles,
			};
		}
		return {
			job,
			piVersion: PI_VERSION,
			headerVersionOnDisk: v,
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
			preparation,
			contextMessages: ctx.messages,
		};
	} catch (e) {
		return { job, error: String(e?.message ?? e) };
	} finally {
		if (tmp) rmSync(tmp, { recursive: true, force: true });
	}
}

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const job of jobs) out.push(JSON.stringify(runJob(job)));
process.stdout.write(`${out.join("\n")}\n`);
