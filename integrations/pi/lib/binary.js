// Finding and running the compactor binary.
import { execFile } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

export const INSTALL_HINT =
	"install Compactor and put its `compactor` binary on PATH, or name it: set COMPACTOR_BIN=/path/to/compactor " +
	'or "bin" in ~/.pi/agent/compactor.json (build it from the Compactor repository: ' +
	"cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target compactor_cli; the binary is build/compactor)";

function executable(path) {
	try {
		accessSync(path, constants.X_OK);
		return statSync(path).isFile();
	} catch {
		return false;
	}
}

// Returns {path} or {error}: the configured path (config.bin, which already
// holds $COMPACTOR_BIN when set) when it is executable, else the first
// `compactor` on PATH.
export function findBinary(config) {
	if (config.bin) {
		if (executable(config.bin)) return { path: config.bin };
		return { error: `the compactor binary ${config.bin} (COMPACTOR_BIN or "bin") is missing or not executable: ${INSTALL_HINT}` };
	}
	for (const dir of (process.env.PATH || "").split(delimiter)) {
		if (!dir || !isAbsolute(dir)) continue;
		const candidate = join(dir, "compactor");
		if (executable(candidate)) return { path: candidate };
	}
	return { error: `no compactor binary found (COMPACTOR_BIN unset, none on PATH): ${INSTALL_HINT}` };
}

// Runs the binary; resolves to {stdout, stderr}, rejects with an Error whose
// message is the binary's own one-line error (its stderr) and its exit code.
export function runBinary(bin, args, { timeoutMs, signal } = {}) {
	return new Promise((resolvePromise, reject) => {
		execFile(bin, args, { maxBuffer: 1 << 30, timeout: timeoutMs, signal, encoding: "utf8" }, (err, stdout, stderr) => {
			if (!err) return resolvePromise({ stdout, stderr });
			const lastLine = (stderr || "").trim().split("\n").filter(Boolean).at(-1)?.replace(/^compactor: /, "");
			const why = err.killed ? `stopped after ${timeoutMs} ms` : err.code === "ABORT_ERR" ? "aborted" : `exit ${err.code}`;
			reject(new Error(`compactor ${args[0]}: ${lastLine || err.message} (${why})`));
		});
	});
}

// Runs the binary with --json and parses its one JSON object.
export async function runJson(bin, args, options) {
	const { stdout } = await runBinary(bin, args, options);
	try {
		return JSON.parse(stdout);
	} catch {
		throw new Error(`compactor ${args[0]}: output is not JSON: ${stdout.slice(0, 200)}`);
	}
}
