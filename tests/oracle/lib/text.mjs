// Seeded text for generated sessions: prose, source code, tool output. Everything comes from one Rng, so a
// generator that draws in the same order writes the same bytes on every run.

export class Rng {
	constructor(seed) {
		this.state = seed >>> 0;
	}
	// splitmix32: a uniform double in [0, 1).
	next() {
		this.state = (this.state + 0x9e3779b9) >>> 0;
		let z = this.state;
		z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
		z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
		return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
	}
	int(lo, hi) {
		return lo + Math.floor(this.next() * (hi - lo + 1));
	}
	pick(xs) {
		return xs[Math.floor(this.next() * xs.length)];
	}
	chance(p) {
		return this.next() < p;
	}
	hex(n) {
		let s = "";
		for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(0, 15)];
		return s;
	}
	base64(n) {
		const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		let s = "";
		for (let i = 0; i < n; i++) s += abc[this.int(0, 63)];
		return s;
	}
}

const WORDS = (
	"the a an to of and in is for that this with it be on as we are should could would function return value " +
	"error file test build config type const import export async await module path string number array object " +
	"update fix refactor handle parse render session message token context compaction summary branch entry " +
	"cache retry request response stream buffer index reader writer loop bound check assert fallback default " +
	"option setting window budget limit offset length count estimate usage provider model tool result call"
).split(" ");
// Some prose carries non-ASCII text, so UTF-16 lengths, byte counts and tokenizers all get exercised.
const FLAVOUR = ["naïve", "café", "façade", "Größe", "—", "…", "“quoted”", "→", "✓", "日本語", "中文", "한국어", "😀", "🚀", "𝒜"];

export function sentence(rng, words) {
	const w = [];
	for (let i = 0; i < words; i++) w.push(rng.chance(0.02) ? rng.pick(FLAVOUR) : rng.pick(WORDS));
	const s = w.join(" ");
	return `${s[0].toUpperCase()}${s.slice(1)}.`;
}

export function prose(rng, chars) {
	let s = "";
	while (s.length < chars) s += `${sentence(rng, rng.int(5, 16))} `;
	return s.slice(0, chars).trimEnd();
}

const DIRS = ["src", "src/core", "src/core/session", "src/modes/interactive", "src/utils", "test", "packages/ai/src", "packages/tui/src"];
const NAMES = ["session-store", "agent-loop", "compaction", "tokens", "messages", "settings", "footer", "editor", "renderer", "index", "tools", "shell", "reader", "patcher", "models"];

export const camel = (name) => name.replace(/-(.)/g, (_, c) => c.toUpperCase());

export function filePath(rng) {
	return `${rng.pick(DIRS)}/${rng.pick(NAMES)}.ts`;
}

const CODE = [
	"export function %N(input: string): number {",
	'\tconst parts = input.split("\\n").filter((line) => line.trim().length > 0);',
	"\tif (parts.length === 0) throw new Error(`empty %N: ${input}`);",
	"\treturn parts.length;",
	"}",
	'import { %N } from "./%F.js";',
	"// TODO: the %N case needs a test when the budget is exhausted",
	"\tfor (let i = 0; i < entries.length; i++) {",
	"\t\tconst entry = entries[i];",
	'\t\tif (entry.type !== "message") continue;',
	"\t}",
	"interface %NOptions { enabled: boolean; reserveTokens: number; keepRecentTokens: number }",
	"\tconst total = messages.reduce((sum, m) => sum + estimate(m), 0);",
	"\t\tawait this.%N.flush();",
	"export const DEFAULT_%U = 20000;",
];

// Source text of about `chars` characters, numbered like pi's read tool shows it.
export function code(rng, chars, firstLine = rng.int(1, 400)) {
	const lines = [];
	let n = 0;
	let ln = firstLine;
	while (n < chars) {
		const name = rng.pick(NAMES);
		const line = `${String(ln++).padStart(5)}\t${rng
			.pick(CODE)
			.replaceAll("%N", camel(name))
			.replaceAll("%F", name)
			.replaceAll("%U", name.toUpperCase().replace(/-/g, "_"))}`;
		lines.push(line);
		n += line.length + 1;
	}
	return lines.join("\n");
}

// Plain source (no line numbers), as tool arguments carry it.
export function source(rng, chars) {
	return code(rng, chars)
		.split("\n")
		.map((l) => l.replace(/^ *\d+\t/, ""))
		.join("\n");
}

export function testOutput(rng, tests, failing = 0) {
	const lines = [];
	for (let i = 0; i < tests; i++) {
		const file = `test/${rng.pick(NAMES)}.test.ts`;
		const bad = i < failing;
		lines.push(`${bad ? " ✗" : " ✓"} ${file} > ${sentence(rng, rng.int(3, 7)).toLowerCase()} (${rng.int(1, 90)} ms)`);
	}
	if (failing > 0) lines.push("", `Error: expected ${rng.int(0, 9)} to be ${rng.int(10, 20)} // Object.is equality`);
	lines.push("", `Tests  ${tests - failing} passed${failing ? ` | ${failing} failed` : ""} (${tests})`);
	return lines.join("\n");
}
