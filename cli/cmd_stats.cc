#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/report.h"

namespace compactor::cli {
namespace {

struct StatsArgs {
  SessionArgs session;
  std::string leaf;
  bool json = false;
};

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
    if (args->json) {
      Print(StatsJson(s, *ctx) + "\n");
      return;
    }
    const SessionStats st = ComputeSessionStats(s, *ctx);
    const ContextEstimate& est = st.estimate;
    std::string out;
    out += fmt::format("file            {}\n", s.path());
    out += fmt::format("session         {} (format v{}{})\n", s.header().id, s.header().version,
                       s.migrated() ? ", migrated in memory" : "");
    if (s.Name()) out += fmt::format("name            {}\n", *s.Name());
    out += fmt::format("entries         {}\n", s.size());
    for (const auto& [t, n] : st.entries_by_type) out += fmt::format("  {:<22}{}\n", t, n);
    out += "messages by role\n";
    for (const auto& [r, n] : st.messages_by_role) out += fmt::format("  {:<22}{}\n", r, n);
    out += fmt::format("tree            {} root(s), {} branch point(s), {} leaves\n",
                       s.Roots().size(), st.branch_points, st.leaves);
    out += fmt::format("leaf            {} (path of {} entries)\n", ctx->leaf_id.value_or("(none)"),
                       ctx->path.size());
    out += fmt::format("compactions     {} ({} on the active path)\n", st.compactions,
                       st.compactions_on_path);
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
