// Temporary pi session files for the compactor binary. pi keeps the session in
// memory and owns its file, so Compactor never touches that file: it reads a
// copy written from what pi hands the extension (the branch entries of an
// event, or the session manager's entries), which also works with
// --no-session, where there is no file at all.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function headerOf(sessionManager) {
	const header = sessionManager?.getHeader?.();
	if (header && header.type === "session") return { ...header, version: 3 };
	return {
		type: "session",
		version: 3,
		id: sessionManager?.getSessionId?.() ?? "00000000-0000-7000-8000-000000000000",
		timestamp: new Date().toISOString(),
		cwd: sessionManager?.getCwd?.() ?? process.cwd(),
	};
}

// A scratch directory removed by dispose(); `write` puts a session there.
export class Scratch {
	constructor() {
		this.dir = mkdtempSync(join(tmpdir(), "pi-compactor-"));
	}
	path(name) {
		return join(this.dir, name);
	}
	// Writes header + entries (pi's own entry objects, unchanged) as JSONL.
	writeSession(name, sessionManager, entries) {
		const lines = [JSON.stringify(headerOf(sessionManager))];
		for (const entry of entries) lines.push(JSON.stringify(entry));
		const file = this.path(name);
		writeFileSync(file, lines.join("\n") + "\n");
		return file;
	}
	// Writes context messages as a linear session, one message entry each, and
	// returns the ids in message order (used by the context passes).
	writeMessages(name, sessionManager, messages) {
		const ids = messages.map((_, i) => `m${i.toString(16).padStart(7, "0")}`);
		const now = Date.now();
		const entries = messages.map((message, i) => ({
			type: "message",
			id: ids[i],
			parentId: i === 0 ? null : ids[i - 1],
			timestamp: new Date(typeof message.timestamp === "number" ? message.timestamp : now).toISOString(),
			message,
		}));
		return { file: this.writeSession(name, sessionManager, entries), ids };
	}
	readEntries(file) {
		const entries = [];
		for (const line of readFileSync(file, "utf8").split("\n")) {
			if (!line.trim()) continue;
			const value = JSON.parse(line);
			if (value.type !== "session") entries.push(value);
		}
		return entries;
	}
	dispose() {
		rmSync(this.dir, { recursive: true, force: true });
	}
}

export async function withScratch(fn) {
	const scratch = new Scratch();
	try {
		return await fn(scratch);
	} finally {
		scratch.dispose();
	}
}
