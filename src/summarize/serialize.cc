// convertToLlm + serializeConversation, byte for byte as pi 0.73.1 produces
// them for its summarizer (docs/summarizers.md). Goldens:
// tests/fixtures/pi/expected/*.json (serializedConversation, from the pi oracle).
#include <cmath>
#include <cstdio>
#include <string>

#include "compactor/summarizer.h"
#include "summarize/text_util.h"
#include "util/utf8.h"

namespace compactor {
namespace {

// Our own lead-in sentences (pi's wording is not reused); the <summary> tags
// are what models and tools key on.
constexpr std::string_view kBranchLeadIn =
    "The conversation came back from another branch. What happened on that branch:\n\n"
    "<summary>\n";
constexpr std::string_view kCompactionLeadIn =
    "Earlier messages of this conversation were compacted into this summary:\n\n<summary>\n";

// JavaScript's `${number}` for the numbers a bash exit code can hold.
std::string JsNumberText(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == std::floor(v) && std::fabs(v) < 1e21) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    std::string s = buf;
    return s == "-0" ? "0" : s;
  }
  // Shortest round-trip representation, as JavaScript prints non-integers.
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Text blocks joined with "" (pi's user / toolResult rule), or the string content.
std::string JoinTextBlocks(const Message& m) {
  if (m.content_is_string) return m.content_string;
  std::string out;
  for (const ContentBlock& b : m.content) {
    if (b.kind == ContentBlock::Kind::kText) out += b.text;
  }
  return out;
}

void AppendToolCall(std::string& out, const ContentBlock& b) {
  out += b.tool_name;
  out += '(';
  bool first = true;
  summarize::ForEachJsonEntry(b.arguments_json, [&](std::string_view k, std::string_view v) {
    if (!first) out += ", ";
    first = false;
    out += k;
    out += '=';
    out += v;  // canonical JSON text == JSON.stringify(value)
  });
  out += ')';
}

// Emits the parts of one (converted) message. `fn(text)` per part.
template <typename Fn>
void SerializeLlmMessage(const Message& m, Fn&& fn) {
  switch (m.role) {
    case Role::kUser: {
      std::string content = JoinTextBlocks(m);
      if (!content.empty()) fn("[User]: " + content);
      break;
    }
    case Role::kAssistant: {
      if (m.content_is_string) break;  // pi iterates the string's characters: no blocks
      bool any_thinking = false, any_text = false, any_call = false;
      std::string thinking, text, calls;
      for (const ContentBlock& b : m.content) {
        if (b.kind == ContentBlock::Kind::kText) {
          if (any_text) text += '\n';
          text += b.text;
          any_text = true;
        } else if (b.kind == ContentBlock::Kind::kThinking) {
          if (any_thinking) thinking += '\n';
          thinking += b.text;
          any_thinking = true;
        } else if (b.kind == ContentBlock::Kind::kToolCall) {
          if (any_call) calls += "; ";
          AppendToolCall(calls, b);
          any_call = true;
        }
      }
      if (any_thinking) fn("[Assistant thinking]: " + thinking);
      if (any_text) fn("[Assistant]: " + text);
      if (any_call) fn("[Assistant tool calls]: " + calls);
      break;
    }
    case Role::kToolResult: {
      std::string content = JoinTextBlocks(m);
      if (!content.empty())
        fn("[Tool result]: " + TruncateForSummary(content, kToolResultMaxChars));
      break;
    }
    default:
      break;
  }
}

// convertToLlm for one message; nullopt when dropped. Only the fields the
// serializer reads are filled for converted messages.
std::optional<Message> ConvertOne(const Message& m) {
  auto user_text = [&](std::string text) {
    Message u;
    u.role = Role::kUser;
    u.role_name = "user";
    u.timestamp = m.timestamp;
    ContentBlock b;
    b.kind = ContentBlock::Kind::kText;
    b.type = "text";
    b.text = std::move(text);
    u.content.push_back(std::move(b));
    return u;
  };
  switch (m.role) {
    case Role::kUser:
    case Role::kAssistant:
    case Role::kToolResult:
      return m;
    case Role::kBashExecution:
      if (m.exclude_from_context) return std::nullopt;
      return user_text(BashExecutionText(m));
    case Role::kCustom: {
      if (m.content_is_string) return user_text(m.content_string);
      Message u;
      u.role = Role::kUser;
      u.role_name = "user";
      u.timestamp = m.timestamp;
      u.content = m.content;
      return u;
    }
    case Role::kBranchSummary:
      return user_text(std::string(kBranchLeadIn) + m.summary + "</summary>");
    case Role::kCompactionSummary:
      return user_text(std::string(kCompactionLeadIn) + m.summary + "\n</summary>");
    default:
      return std::nullopt;
  }
}

// Serializes one agent message (converting on the fly, without copies for the
// roles convertToLlm passes through).
template <typename Fn>
void SerializeAgentMessage(const Message& m, Fn&& fn) {
  switch (m.role) {
    case Role::kUser:
    case Role::kAssistant:
    case Role::kToolResult:
      SerializeLlmMessage(m, fn);
      break;
    default: {
      std::optional<Message> converted = ConvertOne(m);
      if (converted) SerializeLlmMessage(*converted, fn);
      break;
    }
  }
}

}  // namespace

std::string BashExecutionText(const Message& m) {
  std::string text = "Ran `" + m.command + "`\n";
  if (!m.output.empty()) {
    text += "```\n" + m.output + "\n```";
  } else {
    text += "(no output)";
  }
  if (m.cancelled) {
    text += "\n\n(command cancelled)";
  } else if (m.exit_code && *m.exit_code != 0) {
    text += "\n\nCommand exited with code " + JsNumberText(*m.exit_code);
  }
  if (m.truncated && !m.full_output_path.empty()) {
    text += "\n\n[Output truncated. Full output: " + m.full_output_path + "]";
  }
  return text;
}

std::vector<Message> ConvertToLlm(std::span<const Message> messages) {
  std::vector<Message> out;
  out.reserve(messages.size());
  for (const Message& m : messages) {
    std::optional<Message> c = ConvertOne(m);
    if (c) out.push_back(std::move(*c));
  }
  return out;
}

std::string TruncateForSummary(std::string_view text, int64_t max_units) {
  // Cheap bound first: UTF-8 bytes >= UTF-16 units.
  if (static_cast<int64_t>(text.size()) <= max_units) return std::string(text);
  int64_t total = internal::Utf16Length(text);
  if (total <= max_units) return std::string(text);
  int64_t kept = 0;
  size_t cut = summarize::Utf8PrefixForUnits(text, max_units, &kept);
  std::string out(text.substr(0, cut));
  out += "\n\n[... ";
  out += std::to_string(total - kept);
  out += " more characters truncated]";
  return out;
}

std::string SerializeConversation(std::span<const Message> llm_messages) {
  std::string out;
  bool first = true;
  for (const Message& m : llm_messages) {
    SerializeLlmMessage(m, [&](const std::string& part) {
      if (!first) out += "\n\n";
      first = false;
      out += part;
    });
  }
  return out;
}

std::string SerializeForSummary(std::span<const Message> messages) {
  std::string out;
  bool first = true;
  for (const Message& m : messages) {
    SerializeAgentMessage(m, [&](const std::string& part) {
      if (!first) out += "\n\n";
      first = false;
      out += part;
    });
  }
  return out;
}

std::vector<SerializedPart> SerializeForSummaryParts(std::span<const Message> messages) {
  std::vector<SerializedPart> parts;
  for (size_t i = 0; i < messages.size(); ++i) {
    SerializeAgentMessage(messages[i], [&](std::string part) {
      parts.push_back(SerializedPart{i, std::move(part)});
    });
  }
  return parts;
}

}  // namespace compactor
