// Observation masking: old tool outputs of the context replaced by short
// placeholders (docs/strategies.md, "mask"). No summarizer is involved.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/prune.h"
#include "prune/common.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

struct CallInfo {
  std::string name;
  std::string arguments_json;
};

// Byte offsets of the code points of valid UTF-8 `s`, with their UTF-16 widths.
struct CodePoint {
  size_t offset;
  size_t units;
};
std::vector<CodePoint> CodePoints(const std::string& s) {
  std::vector<CodePoint> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    out.push_back({i, c >= 0xF0 ? 2u : 1u});
    i += len;
  }
  return out;
}

// `s` cut to at most `max_units` UTF-16 units at code point boundaries, the
// dropped part marked by "…": from the end, or from the middle when `middle`
// (a long path keeps its file name, a long command its start and end).
std::string Clip(const std::string& s, size_t max_units, bool middle) {
  if (static_cast<size_t>(Utf16Length(s)) <= max_units) return s;
  std::vector<CodePoint> cps = CodePoints(s);
  const size_t budget = max_units > 0 ? max_units - 1 : 0;  // room for "…"
  const size_t head_budget = middle ? budget / 3 : budget;
  size_t head = 0, units = 0;
  while (head < cps.size() && units + cps[head].units <= head_budget) units += cps[head++].units;
  size_t tail = cps.size();
  while (middle && tail > head && units + cps[tail - 1].units <= budget) units += cps[--tail].units;
  std::string out = s.substr(0, head < cps.size() ? cps[head].offset : s.size());
  out += "…";
  if (tail < cps.size()) out += s.substr(cps[tail].offset);
  return out;
}

// `path: "src/a.ts", limit: 40` from the call's arguments object. Strings are
// shown quoted, other values as JSON; the whole is clipped.
std::string ArgumentsSummary(const std::string& arguments_json, size_t max_chars) {
  if (arguments_json.empty()) return "";
  std::string out;
  // Deeper than any walk may go (dump recurses): shown as the text it is.
  if (internal::JsonNestingExceeds(arguments_json, internal::kMaxJsonNesting))
    return Clip(arguments_json, max_chars, /*middle=*/false);
  try {
    nlohmann::ordered_json args = nlohmann::ordered_json::parse(arguments_json);
    if (!args.is_object()) {
      out = args.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    } else {
      for (auto it = args.begin(); it != args.end(); ++it) {
        if (!out.empty()) out += ", ";
        out += it.key() + ": ";
        std::string value =
            it.value().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        // One long value (file contents of a write) must not crowd out the rest.
        out += Clip(value, std::max<size_t>(max_chars / 2, 16), /*middle=*/true);
        if (out.size() > 4 * max_chars) break;
      }
    }
  } catch (const nlohmann::json::exception&) {
    out = arguments_json;
  }
  return Clip(out, max_chars, /*middle=*/false);
}

int64_t CountLines(const Message& m) {
  std::string text = m.JoinedText();
  if (text.empty()) return 0;
  return static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) +
         (text.back() == '\n' ? 0 : 1);
}

std::string Placeholder(const internal::ToolOutput& t, const CallInfo* call,
                        const MaskOptions& options) {
  std::string tool = t.message.tool_name;
  if (tool.empty() && call) tool = call->name;
  if (tool.empty()) tool = "tool";
  std::string args =
      call ? ArgumentsSummary(call->arguments_json, options.max_arguments_chars) : "";
  size_t images = 0;
  for (const ContentBlock& b : t.message.content)
    if (b.kind == ContentBlock::Kind::kImage) images++;
  std::string size = fmt::format("{} tokens", t.tokens);
  int64_t lines = CountLines(t.message);
  if (lines > 1) size += fmt::format(", {} lines", lines);
  if (images > 0) size += fmt::format(", {} image{}", images, images == 1 ? "" : "s");
  return fmt::format("[Masked {}output of {}({}): {}. Run the call again if you need it.]",
                     t.message.is_error ? "error " : "", tool, args, size);
}

}  // namespace

Result<RewritePlan> PlanMask(const Session& session, std::optional<size_t> leaf,
                             const MaskOptions& options) {
  COMPACTOR_ASSIGN_OR_RETURN(std::optional<size_t> resolved, internal::ResolveLeaf(session, leaf));
  RewritePlan plan;
  if (!resolved) {
    plan.skipped_reason = "empty session";
    return plan;
  }
  ContextOptions co;
  co.leaf_id = session.entry(*resolved).id;
  COMPACTOR_ASSIGN_OR_RETURN(SessionContext ctx, BuildSessionContext(session, co));

  // Only stored messages of the context can be rewritten; their path
  // positions come from the context's path.
  std::unordered_map<size_t, size_t> path_pos;
  for (size_t k = 0; k < ctx.path.size(); ++k) path_pos[ctx.path[k]] = k;
  std::vector<size_t> entries, positions;
  std::unordered_map<std::string, CallInfo> calls;
  for (const ContextMessage& m : ctx.messages) {
    if (!m.owned.empty()) continue;
    if (m.role == Role::kAssistant) {
      auto parsed = ParseMessage(m.json());
      if (!parsed.ok()) continue;
      for (const ContentBlock& b : parsed->content)
        if (b.kind == ContentBlock::Kind::kToolCall)
          calls[b.tool_call_id] = CallInfo{b.tool_name, b.arguments_json};
    } else if (m.role == Role::kToolResult &&
               session.entry(m.entry_index).type == EntryType::kMessage) {
      entries.push_back(m.entry_index);
      positions.push_back(path_pos.count(m.entry_index) ? path_pos[m.entry_index] : 0);
    }
  }
  const MessageTokenCounter count = internal::CounterOrDefault(options.count_tokens);
  std::vector<internal::ToolOutput> outputs =
      internal::CollectToolOutputs(session, entries, positions, count);

  int64_t accumulated = 0;
  int64_t seen = 0;
  std::vector<ReplacedOutput> masked;
  for (internal::ToolOutput& t : outputs) {
    plan.scanned++;
    const int64_t tokens_before = accumulated;
    const int64_t index_from_newest = seen;
    accumulated += t.tokens;
    seen++;
    if (t.already_pruned) {
      plan.already_pruned++;
      continue;
    }
    const bool recent =
        index_from_newest < options.keep_recent_outputs ||
        (options.keep_recent_tokens > 0 && tokens_before < options.keep_recent_tokens);
    if (recent || t.tokens < options.min_output_tokens ||
        internal::IsProtectedTool(options.protected_tools, t.message.tool_name)) {
      plan.kept++;
      continue;
    }
    auto call = calls.find(t.message.tool_call_id);
    std::string text = Placeholder(t, call == calls.end() ? nullptr : &call->second, options);
    const int64_t cost = internal::QuarterCharTokens(text);
    if (cost >= t.tokens) {
      plan.kept++;
      continue;
    }
    ReplacedOutput r = internal::Replace(session, t, std::move(text));
    plan.tokens_saved += r.tokens_saved;
    masked.push_back(std::move(r));
  }
  plan.candidate_count = masked.size();
  plan.candidate_savings = plan.tokens_saved;
  if (masked.empty()) plan.skipped_reason = "no tool outputs old and large enough to mask";
  std::reverse(masked.begin(), masked.end());
  plan.outputs = std::move(masked);
  return plan;
}

Result<MaskResult> MaskObservations(const Session& session, std::optional<size_t> leaf,
                                    const MaskOptions& options, const ApplyOptions& apply) {
  MaskResult r;
  COMPACTOR_ASSIGN_OR_RETURN(r.plan, PlanMask(session, leaf, options));
  COMPACTOR_ASSIGN_OR_RETURN(r.rewritten, ApplyRewrite(session, r.plan, apply));
  return r;
}

}  // namespace compactor
