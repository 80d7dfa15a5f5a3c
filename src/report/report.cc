#include "compactor/report.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>
#include <vector>

#include "compactor/js_json.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json Number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return static_cast<int64_t>(v);
  return v;
}

Json StringOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

void AppendStringArray(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    AppendJsString(out, v[i]);
  }
  out += ']';
}

// The compaction in effect for the active path and the entries it summarizes.
struct InEffect {
  std::optional<size_t> entry;
  std::unordered_set<size_t> summarized;
};

InEffect CompactionInEffect(const Session& s, const SessionContext& ctx) {
  InEffect out;
  if (!ctx.compaction_path_index) return out;
  out.entry = ctx.path[*ctx.compaction_path_index];
  std::string_view kept = s.entry(*out.entry).first_kept_entry_id;
  std::vector<size_t> before;
  for (size_t k = 0; k < *ctx.compaction_path_index; ++k) {
    if (s.entry(ctx.path[k]).id == kept) {
      // Only a kept entry that is found bounds the summarized ones.
      out.summarized.insert(before.begin(), before.end());
      break;
    }
    before.push_back(ctx.path[k]);
  }
  return out;
}

void AppendTreeEntry(std::string& out, const Session& s, size_t i, std::string_view parent_id,
                     bool has_parent, bool active, const InEffect& effect) {
  const Entry& e = s.entry(i);
  out += i == 0 ? "{\"id\":" : ",{\"id\":";
  AppendJsString(out, e.id);
  out += ",\"parentId\":";
  if (!has_parent) {
    out += "null";
  } else {
    AppendJsString(out, parent_id);
  }
  out += ",\"type\":";
  AppendJsString(out, e.type_name);
  if (e.type == EntryType::kMessage) {
    out += ",\"role\":";
    AppendJsString(out, e.role_name);
  }
  if (auto l = s.LabelOf(e.id)) {
    out += ",\"label\":";
    AppendJsString(out, *l);
  }
  out += active ? ",\"active\":true" : ",\"active\":false";
  if (effect.summarized.count(i) > 0) out += ",\"summarized\":true";
  if (e.type == EntryType::kCompaction) {
    out += ",\"compaction\":{\"firstKeptEntryId\":";
    AppendJsString(out, e.first_kept_entry_id);
    out += ",\"tokensBefore\":";
    AppendJsNumber(out, e.tokens_before);
    out += effect.entry == i ? ",\"inEffect\":true}" : ",\"inEffect\":false}";
  }
  out += '}';
}

}  // namespace

SessionStats ComputeSessionStats(const Session& s, const SessionContext& ctx) {
  SessionStats st;
  for (const Entry& e : s.entries()) {
    st.entries_by_type[std::string(e.type_name)]++;
    if (e.type == EntryType::kMessage) st.messages_by_role[std::string(e.role_name)]++;
    if (e.type == EntryType::kCompaction) st.compactions++;
    if (e.type == EntryType::kBranchSummary) st.branch_summaries++;
  }
  for (const auto& c : s.Children()) {
    if (c.size() > 1) st.branch_points++;
    if (c.empty()) st.leaves++;
  }
  for (size_t i : ctx.path)
    if (s.entry(i).type == EntryType::kCompaction) st.compactions_on_path++;
  st.estimate = EstimateContextTokens(s, ctx.messages, TokenCounter());
  return st;
}

std::string StatsJson(const Session& s, const SessionContext& ctx) {
  const SessionStats st = ComputeSessionStats(s, ctx);
  const ContextEstimate& est = st.estimate;
  Json j;
  j["file"] = s.path();
  j["sessionId"] = s.header().id;
  j["versionOnDisk"] = s.header().version;
  j["migrated"] = s.migrated();
  j["entries"] = s.size();
  j["entriesByType"] = st.entries_by_type;
  j["messagesByRole"] = st.messages_by_role;
  j["roots"] = s.Roots().size();
  j["branchPoints"] = st.branch_points;
  j["leaves"] = st.leaves;
  j["leafId"] = ctx.leaf_id ? Json(*ctx.leaf_id) : Json(nullptr);
  j["pathLength"] = ctx.path.size();
  j["compactions"] = st.compactions;
  j["compactionsOnPath"] = st.compactions_on_path;
  j["branchSummaries"] = st.branch_summaries;
  j["contextMessages"] = ctx.messages.size();
  j["thinkingLevel"] = ctx.thinking_level;
  j["model"] = ctx.model ? Json{{"provider", ctx.model->provider}, {"modelId", ctx.model->model_id}}
                         : Json(nullptr);
  j["name"] = s.Name() ? Json(*s.Name()) : Json(nullptr);
  j["estimatedTokens"] = {
      {"heuristicSum", est.heuristic_sum},
      {"contextEstimate", Number(est.tokens)},
      {"usageTokens", Number(est.usage_tokens)},
      {"trailingTokens", est.trailing_tokens},
      {"lastUsageIndex", est.last_usage_index ? Json(*est.last_usage_index) : Json(nullptr)}};
  j["warnings"] = s.warnings().size();
  return Dump(j);
}

void WriteTreeJson(const Session& s, const SessionContext& ctx, const JsonSink& sink) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  const std::vector<std::vector<size_t>> children = s.Children();
  std::vector<size_t> parent(s.size(), kNone);
  for (size_t i = 0; i < children.size(); ++i)
    for (size_t c : children[i]) parent[c] = i;
  const std::unordered_set<size_t> active(ctx.path.begin(), ctx.path.end());
  const InEffect effect = CompactionInEffect(s, ctx);
  // Pieces of about 1 MiB: a document as large as the session would cost
  // memory for nothing.
  std::string out = "{\"version\":2,\"leafId\":";
  if (ctx.leaf_id) {
    AppendJsString(out, *ctx.leaf_id);
  } else {
    out += "null";
  }
  out += ",\"entries\":[";
  for (size_t i = 0; i < s.size(); ++i) {
    bool has_parent = parent[i] != kNone;
    AppendTreeEntry(out, s, i, has_parent ? s.entry(parent[i]).id : std::string_view(), has_parent,
                    active.count(i) > 0, effect);
    if (out.size() > (1 << 20)) {
      sink(out);
      out.clear();
    }
  }
  out += "]}";
  sink(out);
}

std::string TreeJson(const Session& s, const SessionContext& ctx) {
  std::string out;
  WriteTreeJson(s, ctx, [&out](std::string_view piece) { out += piece; });
  return out;
}

std::string PlanJson(const PrepareResult& r) {
  std::string out = "{\"estimatedTokens\":{\"heuristicSum\":";
  AppendJsNumber(out, static_cast<double>(r.estimate.heuristic_sum));
  out += ",\"contextEstimate\":";
  AppendJsNumber(out, r.estimate.tokens);
  out += ",\"usageTokens\":";
  AppendJsNumber(out, r.estimate.usage_tokens);
  out += ",\"trailingTokens\":";
  AppendJsNumber(out, static_cast<double>(r.estimate.trailing_tokens));
  out += "},\"preparation\":";
  if (!r.preparation) {
    out += "null}";
    return out;
  }
  const CompactionPreparation& p = *r.preparation;
  out += "{\"firstKeptEntryId\":";
  AppendJsString(out, p.first_kept_entry_id);
  out += ",\"isSplitTurn\":";
  out += p.is_split_turn ? "true" : "false";
  out += ",\"messagesToSummarize\":";
  AppendJsNumber(out, static_cast<double>(p.messages_to_summarize.size()));
  out += ",\"turnPrefixMessages\":";
  AppendJsNumber(out, static_cast<double>(p.turn_prefix_messages.size()));
  out += ",\"tokensBefore\":";
  AppendJsNumber(out, p.tokens_before);
  out += ",\"readFiles\":";
  AppendStringArray(out, p.file_lists.read_files);
  out += ",\"modifiedFiles\":";
  AppendStringArray(out, p.file_lists.modified_files);
  out += ",\"hasPreviousSummary\":";
  out += p.previous_summary ? "true" : "false";
  out += "}}";
  return out;
}

std::string CompactionResultJson(const CompactionResult& r, bool dry_run) {
  Json j;
  j["strategy"] = r.strategy;
  j["compacted"] = r.compacted;
  j["written"] = r.compacted && !dry_run;
  j["skippedReason"] = StringOrNull(r.skipped_reason);
  j["entryId"] = StringOrNull(r.entry_id);
  j["firstKeptEntryId"] = StringOrNull(r.first_kept_entry_id);
  j["messagesSummarized"] = r.messages_summarized;
  j["turnPrefixMessages"] = r.turn_prefix_messages;
  j["isSplitTurn"] = r.split_turn;
  j["tokensBefore"] = r.tokens_before;
  j["tokensAfter"] = r.tokens_after;
  j["summarizedTokens"] = r.summarized_tokens;
  j["ineffective"] = r.ineffective;
  j["fromHook"] = r.from_hook;
  if (r.kept_user_messages) j["keptUserMessageCount"] = *r.kept_user_messages;
  if (r.masked_outputs) j["maskedOutputs"] = *r.masked_outputs;
  j["outputPath"] = StringOrNull(r.output_path);
  j["readFiles"] = r.read_files;
  j["modifiedFiles"] = r.modified_files;
  j["summary"] = r.summary;
  j["entry"] = r.entry_json.empty() ? Json(nullptr) : Json::parse(r.entry_json, nullptr, false);
  j["hookErrors"] = r.hook_errors;
  j["durationMs"] = r.duration_ms;
  return Dump(j);
}

std::string BranchResultJson(const BranchResult& r, bool dry_run) {
  Json j;
  j["noop"] = r.noop;
  j["written"] = !r.noop && !dry_run;
  j["oldLeafId"] = r.old_leaf_id;
  j["targetId"] = r.target_id;
  j["newLeafId"] = r.new_leaf_id;
  j["commonAncestorId"] = StringOrNull(r.common_ancestor_id);
  j["entriesSummarized"] = r.entries_summarized;
  j["summary"] = StringOrNull(r.summary);
  j["editorText"] = StringOrNull(r.editor_text);
  j["readFiles"] = r.read_files;
  j["modifiedFiles"] = r.modified_files;
  j["appended"] = Json::array();
  for (const std::string& line : r.appended)
    j["appended"].push_back(Json::parse(line, nullptr, false));
  return Dump(j);
}

}  // namespace compactor
