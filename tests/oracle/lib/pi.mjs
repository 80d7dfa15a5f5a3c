// Loads pi 0.73.1 from the oracle home that install.sh fills, and makes its id and clock sources
// reproducible when a generator asks for it.
//
// pi's compaction functions are not reachable through the package's "exports" map, so its modules are
// imported by file path from dist/ (the same module instances the package root uses).
import crypto from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const PI_VERSION_PINNED = "0.73.1";

export function oracleHome() {
	return process.env.COMPACTOR_ORACLE_HOME || join(homedir(), ".cache", "compactor-oracle");
}

export function piDist() {
	const dist = join(oracleHome(), "node_modules", "@mariozechner", "pi-coding-agent", "dist");
	if (!existsSync(join(dist, "core", "session-manager.js"))) {
		throw new Error(`pi is not installed in ${oracleHome()} (run tests/oracle/install.sh)`);
	}
	return dist;
}

const load = (rel) => import(pathToFileURL(join(piDist(), rel)).href);

// { SessionManager, CURRENT_SESSION_VERSION, ... }, the compaction functions, convertToLlm, and the version.
export async function loadPi() {
	const [session, compaction, messages] = await Promise.all([
		load("core/session-manager.js"),
		load("core/compaction/index.js"),
		load("core/messages.js"),
	]);
	const version = JSON.parse(readFileSync(join(piDist(), "..", "package.json"), "utf8")).version;
	if (version !== PI_VERSION_PINNED) throw new Error(`expected pi ${PI_VERSION_PINNED}, found ${version}`);
	return { session, compaction, messages, version };
}

// Reproducible ids and clock. pi names entries randomUUID().slice(0, 8) and stamps them with new Date();
// both are replaced by seeded sequences, so a generator writes the same bytes on every run. Node's
// syncBuiltinESMExports() makes the replacement visible to modules that imported randomUUID by name.
const RealDate = globalThis.Date;
let idState = 0;
let clockMs = 0;
let clockStepMs = 1000;

function xorshift32() {
	idState ^= idState << 13;
	idState >>>= 0;
	idState ^= idState >>> 17;
	idState ^= idState << 5;
	idState >>>= 0;
	return idState.toString(16).padStart(8, "0");
}

class SteppingDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) {
			clockMs += clockStepMs;
			super(clockMs);
		} else {
			super(...args);
		}
	}
	static now() {
		return clockMs;
	}
}

// seed: any non-zero 32-bit integer; start: ISO time of the first tick.
export function makeDeterministic(seed, start = "2026-01-01T10:00:00.000Z", stepMs = 1000) {
	idState = seed >>> 0 || 1;
	clockMs = RealDate.parse(start);
	clockStepMs = stepMs;
	crypto.randomUUID = () => {
		const h = [xorshift32(), xorshift32(), xorshift32(), xorshift32()].join("");
		return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
	};
	syncBuiltinESMExports();
	globalThis.Date = SteppingDate;
}

// Moves the deterministic clock forward (e.g. to leave a gap between turns).
export function advanceClock(ms) {
	clockMs += ms;
}

export { RealDate };
