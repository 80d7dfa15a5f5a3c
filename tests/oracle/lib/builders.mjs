// Message builders in pi's shapes (AgentMessage as pi's agent stores it), shared by the generators.

export function usage(input, output, cacheRead = 0, cacheWrite = 0) {
	const cost = {
		input: input * 3e-6,
		output: output * 15e-6,
		cacheRead: cacheRead * 3e-7,
		cacheWrite: cacheWrite * 3.75e-6,
	};
	cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
	return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}

export const ZERO_USAGE = usage(0, 0);

export const MODEL = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };

export const text = (t) => ({ type: "text", text: t });

export function user(t, timestamp) {
	return { role: "user", content: [text(t)], timestamp };
}

export function assistant(blocks, u, timestamp, extra = {}) {
	return {
		role: "assistant",
		content: blocks,
		...MODEL,
		usage: u,
		stopReason: blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
		timestamp,
		...extra,
	};
}

export function toolResult(call, content, timestamp, extra = {}) {
	return {
		role: "toolResult",
		toolCallId: call.id,
		toolName: call.name,
		content: typeof content === "string" ? [text(content)] : content,
		isError: false,
		timestamp,
		...extra,
	};
}

export function bashExecution(command, output, timestamp, extra = {}) {
	return { role: "bashExecution", command, output, exitCode: 0, cancelled: false, truncated: false, timestamp, ...extra };
}

// The file text exactly as SessionManager writes it: one JSON.stringify per line, "\n" after each.
export function sessionText(header, entries) {
	return [header, ...entries].map((e) => `${JSON.stringify(e)}\n`).join("");
}
