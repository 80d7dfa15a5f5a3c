#include "serve/proxy_strategy.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "serve/compact_plan.h"

namespace compactor::serve {
namespace {

using OrderedJson = nlohmann::ordered_json;

// The proxy's own summary message (compact_plan.cc's lead-in), which a
// Responses request carries once its compaction item was expanded: an
// earlier summary, not a prompt of the user's.
constexpr std::string_view kProxySummaryMark =
    "Earlier messages of this conversation were compacted into this summary";

bool IsUserPrompt(const ClientRequest& request, size_t i) {
  const ClientItem& item = request.items[i];
  return item.kind == ClientItemKind::kUser &&
         request.Text(item).find(kProxySummaryMark) == std::string_view::npos;
}

std::string Dump(const OrderedJson& j) {
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// The text of a user message as pi reads it (string content, or its text blocks).
std::string PromptText(const ProviderApi& api, const ClientRequest& request, size_t i) {
  std::string out;
  for (const std::string& m : api.ClientItemMessages(request, i)) {
    OrderedJson j = OrderedJson::parse(m, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;
    const OrderedJson& content = j["content"];
    if (content.is_string()) {
      out += content.get<std::string>();
    } else if (content.is_array()) {
      for (const OrderedJson& b : content) {
        if (b.is_object() && b.value("type", "") == "text" && b.contains("text") &&
            b["text"].is_string()) {
          if (!out.empty()) out += "\n";
          out += b["text"].get<std::string>();
        }
      }
    }
  }
  return out;
}

class NotesSummarizer final : public Summarizer {
 public:
  NotesSummarizer(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  std::string_view name() const override { return "notes"; }
  Result<std::string> Summarize(const SummaryRequest& /*request*/) const override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string notes, env_->ReadFile(path_));
    size_t b = notes.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) {
      return Status::FailedPrecondition("empty notes (the notes file " + path_ + " is empty)");
    }
    size_t e = notes.find_last_not_of(" \t\r\n");
    return notes.substr(b, e - b + 1);
  }

 private:
  Env* env_;
  std::string path_;
};

class NotesWithHistorySummarizer final : public Summarizer {
 public:
  NotesWithHistorySummarizer(Env* env, std::string path, const Summarizer* history)
      : notes_(env, std::move(path)), history_(history) {}
  std::string_view name() const override { return "notes"; }
  bool ReadsLaterMessages() const override { return history_->ReadsLaterMessages(); }
  Result<std::string> Summarize(const SummaryRequest& request) const override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string history, history_->Summarize(request));
    Result<std::string> notes = notes_.Summarize(request);
    if (!notes.ok()) return history;
    return "## Notes\n\n" + *notes + "\n\n" + history;
  }

 private:
  NotesSummarizer notes_;
  const Summarizer* history_;
};

// The name of every tool call, by call id, of the items before `end`.
std::map<std::string, std::string> CallNames(const ClientRequest& request, size_t end) {
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < end; ++i) {
    const ClientItem& item = request.items[i];
    for (size_t k = 0; k < item.call_ids.size() && k < item.call_names.size(); ++k) {
      names[item.call_ids[k]] = item.call_names[k];
    }
  }
  return names;
}

std::string Placeholder(std::string_view name, int64_t tokens) {
  return "[Masked output of " + std::string(name.empty() ? "a tool" : name) + ": " +
         std::to_string(tokens) + " tokens. Run the call again if you need it.]";
}

// Pi's estimate of a JSON value as text (a string's characters, else its JSON).
int64_t ValueTokens(const OrderedJson& v) {
  return EstimateTextTokens(v.is_string() ? v.get<std::string>() : Dump(v));
}

// The item with its tool output(s) replaced by placeholders; nullopt when
// it has none this API knows.
std::optional<std::string> MaskItem(std::string_view api, std::string_view raw,
                                    const std::map<std::string, std::string>& names) {
  OrderedJson j = OrderedJson::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto name_of = [&names](const OrderedJson& id) {
    auto it = id.is_string() ? names.find(id.get<std::string>()) : names.end();
    return it != names.end() ? it->second : std::string();
  };
  bool changed = false;
  if (api == "anthropic") {
    auto content = j.find("content");
    if (content == j.end() || !content->is_array()) return std::nullopt;
    for (OrderedJson& block : *content) {
      if (!block.is_object() || block.value("type", "") != "tool_result") continue;
      int64_t tokens = block.contains("content") ? ValueTokens(block["content"]) : 0;
      block["content"] = Placeholder(name_of(block.value("tool_use_id", OrderedJson())), tokens);
      changed = true;
    }
  } else if (api == "openai-responses") {
    if (!j.contains("output")) return std::nullopt;
    j["output"] = Placeholder(name_of(j.value("call_id", OrderedJson())), ValueTokens(j["output"]));
    changed = true;
  } else if (api == "openai-chat") {
    if (!j.contains("content")) return std::nullopt;
    j["content"] =
        Placeholder(name_of(j.value("tool_call_id", OrderedJson())), ValueTokens(j["content"]));
    changed = true;
  }
  if (!changed) return std::nullopt;
  return Dump(j);
}

// The tool results to mask: before the kept part, not the newest result,
// large enough, not a protected tool's.
std::vector<size_t> MaskCandidates(const ClientRequest& request, const MaskInput& input,
                                   const std::map<std::string, std::string>& names) {
  const size_t n = request.items.size();
  size_t kept_from = n;
  while (kept_from > 0 && request.ItemTokens(kept_from - 1, n) <= input.keep_recent_tokens) {
    --kept_from;
  }
  size_t newest = n;
  for (size_t i = n; i-- > 0;) {
    if (request.items[i].kind == ClientItemKind::kToolResult) {
      newest = i;
      break;
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < kept_from; ++i) {
    const ClientItem& item = request.items[i];
    if (item.kind != ClientItemKind::kToolResult || i == newest || item.opaque ||
        item.tokens < input.min_output_tokens) {
      continue;
    }
    bool is_protected = false;
    for (const std::string& id : item.result_ids) {
      auto it = names.find(id);
      if (it != names.end() && it->second == "skill") is_protected = true;
    }
    if (!is_protected) out.push_back(i);
  }
  return out;
}

}  // namespace

Result<ProxyStrategy> ProxyStrategyOf(std::string_view name, bool has_notes_file) {
  if (name == "summary") return ProxyStrategy::kSummary;
  if (name == "user-prompts") return ProxyStrategy::kUserPrompts;
  if (name == "mask") return ProxyStrategy::kMask;
  if (name == "notes") {
    if (has_notes_file) return ProxyStrategy::kNotes;
    return Status::InvalidArgument(
        "the notes strategy reads the agent's notes file: name it in the settings file "
        "(\"serve\": {\"notesFile\": PATH})");
  }
  if (name == "handoff") {
    return Status::InvalidArgument(
        "a handoff starts a new session, which a client's request cannot become; use summary");
  }
  if (name == "mask-summary") {
    // Its masking lives in a session file's compaction entry, which only the
    // library's context builder expands; a request has no such entry, and
    // masking then summarizing in one request is not built (docs/serve.md).
    return Status::InvalidArgument(
        "mask-summary is stored as a compaction entry of a session file, which a client's request "
        "does not have; use mask or summary");
  }
  return Status::InvalidArgument(
      "not applied by the proxy; use summary, user-prompts, notes "
      "or mask");
}

std::vector<size_t> KeptPrompts(const ClientRequest& request, size_t cut, int64_t budget) {
  cut = std::min(cut, request.items.size());
  const int64_t head_budget = budget / 10;
  std::vector<size_t> out;
  int64_t used = 0;
  size_t head_end = 0;  // the first index the head did not take
  for (size_t i = 0; i < cut; ++i, head_end = i) {
    if (!IsUserPrompt(request, i)) continue;
    if (used + request.items[i].tokens > head_budget) break;
    used += request.items[i].tokens;
    out.push_back(i);
  }
  const size_t head_count = out.size();
  used = 0;
  for (size_t i = cut; i-- > head_end;) {
    if (!IsUserPrompt(request, i)) continue;
    if (used + request.items[i].tokens > budget - head_budget) break;
    used += request.items[i].tokens;
    out.push_back(i);
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(head_count), out.end());
  return out;
}

std::string RecordedUserPromptsSummary(const ProviderApi& api, const ClientRequest& request,
                                       const std::vector<size_t>& kept, std::string_view summary) {
  if (kept.empty()) return std::string(summary);
  std::string out = "<user-messages>\n";
  for (size_t k = 0; k < kept.size(); ++k) {
    if (k > 0) out += "\n\n";
    out += PromptText(api, request, kept[k]);
  }
  out += "\n</user-messages>\n\n";
  out += summary;
  return out;
}

std::unique_ptr<Summarizer> NewNotesSummarizer(Env* env, std::string path) {
  return std::make_unique<NotesSummarizer>(env ? env : Env::Default(), std::move(path));
}

std::unique_ptr<Summarizer> NewNotesWithHistorySummarizer(Env* env, std::string path,
                                                          const Summarizer* history) {
  return std::make_unique<NotesWithHistorySummarizer>(env ? env : Env::Default(), std::move(path),
                                                      history);
}

std::optional<MaskedRequest> PlanMaskRequest(const ProviderApi& api, const ClientRequest& request,
                                             const MaskInput& input, std::string* why) {
  MaskedRequest m;
  m.tokens_before = EstimateRequestTokens(request);
  if (!input.force && m.tokens_before <= input.threshold) {
    *why = "under the threshold";
    return std::nullopt;
  }
  const std::map<std::string, std::string> names = CallNames(request, request.items.size());
  const std::vector<size_t> candidates = MaskCandidates(request, input, names);
  // The body with each masked item's bytes replaced, every other byte kept.
  size_t copied = 0;
  for (size_t i : candidates) {
    std::optional<std::string> masked = MaskItem(api.name(), request.Text(request.items[i]), names);
    if (!masked) continue;
    const ByteSpan& span = request.items[i].raw;
    m.body.append(request.body, copied, span.begin - copied);
    m.body += *masked;
    copied = span.end;
    ++m.masked;
  }
  if (m.masked == 0) {
    *why = "no tool result to mask before the kept part";
    return std::nullopt;
  }
  m.body.append(request.body, copied, std::string::npos);
  auto reread = api.ReadClientRequest(m.body);
  if (!reread.ok()) {
    *why = "the masked request does not read back: " + reread.status().ToString();
    return std::nullopt;
  }
  m.tokens_after = EstimateRequestTokens(*reread);
  if ((!input.force && m.tokens_after > input.threshold) || m.tokens_after >= m.tokens_before) {
    *why = "masking cannot bring the request under the threshold";
    return std::nullopt;
  }
  return m;
}

}  // namespace compactor::serve
