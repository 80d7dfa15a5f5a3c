#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "compactor/context.h"
#include "compactor/estimate.h"

namespace compactor::cli {
namespace {

struct StatsArgs {
  SessionArgs session;
  std::string leaf;
  bool json = false;
};

nlohmann::ordered_json Number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return static_cast<int64_t>(v);
  return v;
}

}  // namespace

void RegisterStats(CLI::App& app) {
  auto args = std::make_shared<StatsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "stats", "Entries by type and role, branches, leaf, path, compactions and token estimates");
  AddSessionArgs(cmd, &args->session);
  cmd->add_option("--leaf", args->leaf,
                  "measure the context of this entry instead of the file's leaf");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] {
    args->session.estimate_messages = true;
    auto loaded = LoadWithContext(args->session, args->leaf);
    if (!loaded.ok()) {
      ExitCode() = Fail(loaded.status());
      return;
    }
    const Session& s = *loaded->session;
    const SessionContext* ctx = &loaded->context;
    std::map<std::string, int64_t> by_type, by_role;
    int64_t compactions = 0, branch_summaries = 0;
    for (const Entry& e : s.entries()) {
      by_type[std::string(e.type_name)]++;
      if (e.type == EntryType::kMessage) by_role[std::string(e.role_name)]++;
      if (e.type == EntryType::kCompaction) compactions++;
      if (e.type == EntryType::kBranchSummary) branch_summaries++;
    }
    auto children = s.Children();
    int64_t branch_points = 0, leaves = 0;
    for (const auto& c : children) {
      if (c.size() > 1) branch_points++;
      if (c.empty()) leaves++;
    }
    int64_t path_compactions = 0;
    for (size_t i : ctx->path)
      if (s.entry(i).type == EntryType::kCompaction) path_compactions++;
    ContextEstimate est = EstimateContextTokens(s, ctx->messages, TokenCounter());

    nlohmann::ordered_json j;
    j["file"] = s.path();
    j["sessionId"] = s.header().id;
    j["versionOnDisk"] = s.header().version;
    j["migrated"] = s.migrated();
    j["entries"] = s.size();
    j["entriesByType"] = by_type;
    j["messagesByRole"] = by_role;
    j["roots"] = s.Roots().size();
    j["branchPoints"] = branch_points;
    j["leaves"] = leaves;
    j["leafId"] =
        ctx->leaf_id ? nlohmann::ordered_json(*ctx->leaf_id) : nlohmann::ordered_json(nullptr);
    j["pathLength"] = ctx->path.size();
    j["compactions"] = compactions;
    j["compactionsOnPath"] = path_compactions;
    j["branchSummaries"] = branch_summaries;
    j["contextMessages"] = ctx->messages.size();
    j["thinkingLevel"] = ctx->thinking_level;
    j["model"] = ctx->model ? nlohmann::ordered_json{{"provider", ctx->model->provider},
                                                     {"modelId", ctx->model->model_id}}
                            : nlohmann::ordered_json(nullptr);
    j["name"] = s.Name() ? nlohmann::ordered_json(*s.Name()) : nlohmann::ordered_json(nullptr);
    j["estimatedTokens"] = {
        {"heuristicSum", est.heuristic_sum},
        {"contextEstimate", Number(est.tokens)},
        {"usageTokens", Number(est.usage_tokens)},
        {"trailingTokens", est.trailing_tokens},
        {"lastUsageIndex", est.last_usage_index ? nlohmann::ordered_json(*est.last_usage_index)
                                                : nlohmann::ordered_json(nullptr)}};
    j["warnings"] = s.warnings().size();
    if (args->json) {
      Print(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
      return;
    }
    std::string out;
    out += fmt::format("file            {}\n", s.path());
    out += fmt::format("session         {} (format v{}{})\n", s.header().id, s.header().version,
                       s.migrated() ? ", migrated in memory" : "");
    if (s.Name()) out += fmt::format("name            {}\n", *s.Name());
    out += fmt::format("entries         {}\n", s.size());
    for (const auto& [t, n] : by_type) out += fmt::format("  {:<22}{}\n", t, n);
    out += "messages by role\n";
    for (const auto& [r, n] : by_role) out += fmt::format("  {:<22}{}\n", r, n);
    out += fmt::format("tree            {} root(s), {} branch point(s), {} leaves\n",
                       s.Roots().size(), branch_points, leaves);
    out += fmt::format("leaf            {} (path of {} entries)\n", ctx->leaf_id.value_or("(none)"),
                       ctx->path.size());
    out +=
        fmt::format("compactions     {} ({} on the active path)\n", compactions, path_compactions);
    out += fmt::format("context         {} messages, thinking {}, model {}\n", ctx->messages.size(),
                       ctx->thinking_level,
                       ctx->model ? ctx->model->provider + "/" + ctx->model->model_id : "(none)");
    out += fmt::format("tokens          {} estimated (usage {} + trailing {}); chars/4 sum {}\n",
                       est.tokens, est.usage_tokens, est.trailing_tokens, est.heuristic_sum);
    if (!s.warnings().empty()) out += fmt::format("warnings        {}\n", s.warnings().size());
    Print(out);
  });
}

}  // namespace compactor::cli
