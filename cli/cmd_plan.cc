// `compactor plan FILE`: what a compaction would summarize and keep, without
// calling a model. The --json form is a tested contract (docs/cli.md):
// {"estimatedTokens": {"heuristicSum","contextEstimate","usageTokens","trailingTokens"},
//  "preparation": null | {"firstKeptEntryId","isSplitTurn","messagesToSummarize",
//                         "turnPrefixMessages","tokensBefore","readFiles","modifiedFiles",
//                         "hasPreviousSummary"}}
#include <fmt/format.h>

#include <optional>
#include <string>

#include "commands.h"
#include "common.h"
#include "compactor/js_json.h"
#include "compactor/prepare.h"
#include "compactor/report.h"
#include "compactor/settings.h"

namespace compactor::cli {
namespace {

struct PlanArgs {
  SessionArgs session;
  std::string leaf;
  SettingsArgs settings;
  bool json = false;
  bool pi_quirks = false;
};

std::string N(double v) { return JsNumber(v); }

std::string Messages(size_t n) { return fmt::format("{} message{}", n, n == 1 ? "" : "s"); }

// A short description of the entry at `path_index` ("entry 3158027b (assistant)").
std::string Describe(const Session& s, const SessionContext& ctx, size_t path_index) {
  const Entry& e = s.entry(ctx.path[path_index]);
  std::string what(e.type == EntryType::kMessage ? e.role_name : e.type_name);
  return fmt::format("entry {} ({}, #{} on the path)", e.id, what, path_index);
}

std::string PlanWords(const Session& s, const PrepareResult& r) {
  const SessionContext& ctx = r.context;
  const ContextEstimate& est = r.estimate;
  std::string out;
  out += fmt::format("Leaf {}: {} entries on the path, {} messages in the context.\n",
                     ctx.leaf_id.value_or("(none)"), ctx.path.size(), ctx.messages.size());
  if (est.last_usage_index) {
    out += fmt::format(
        "Context size: {} tokens (last reported usage {} + {} estimated for the {} after it); "
        "the chars/4 estimate of all messages is {}.\n",
        N(est.tokens), N(est.usage_tokens), est.trailing_tokens,
        Messages(ctx.messages.size() - *est.last_usage_index - 1), est.heuristic_sum);
  } else {
    out += fmt::format(
        "Context size: {} tokens (chars/4 estimate; no assistant message reports usage).\n",
        N(est.tokens));
  }
  if (!r.preparation) {
    switch (r.skip) {
      case PrepareSkip::kAlreadyCompacted:
        out += "Nothing to do: the leaf is a compaction entry (already compacted).\n";
        break;
      case PrepareSkip::kEmptySession:
        out += "Nothing to do: the session has no entries.\n";
        break;
      default:
        out +=
            "Nothing to compact: everything since the last compaction fits what the keep "
            "policy keeps, so a compaction would summarize nothing.\n";
        break;
    }
    return out;
  }
  const CompactionPreparation& p = *r.preparation;
  std::string policy;
  switch (p.keep_policy) {
    case KeepPolicy::kRecentTokens:
      policy = fmt::format("keep about {} recent tokens", p.settings.keep_recent_tokens);
      break;
    case KeepPolicy::kLastTurns:
      policy = fmt::format("keep the last {} turns", p.settings.keep_turns);
      break;
    case KeepPolicy::kLastMessages:
      policy = fmt::format("keep the last {} messages", p.settings.keep_messages);
      break;
    case KeepPolicy::kOpencode:
      policy = "keep the last 2 user turns within OpenCode's tail budget";
      break;
  }
  out += fmt::format("Policy: {}.\n", policy);
  if (p.previous_summary) {
    out += fmt::format(
        "A previous compaction exists; its summary is folded into the new one, and summarizing "
        "resumes at what it kept ({}).\n",
        Describe(s, ctx, p.boundary_start_path_index));
  }
  out += fmt::format("Would summarize: {} (~{} estimated tokens)",
                     Messages(p.messages_to_summarize.size()), p.messages_to_summarize_tokens);
  if (!p.messages_to_summarize.empty()) {
    out += fmt::format(", from entry {} to entry {}",
                       s.entry(p.messages_to_summarize.front().entry_index).id,
                       s.entry(p.messages_to_summarize.back().entry_index).id);
  }
  out += ".\n";
  if (p.is_split_turn) {
    out += fmt::format(
        "Split turn: the turn starting at {} is too large to keep whole; its first {} messages "
        "(~{} estimated tokens) get their own turn-prefix summary.\n",
        Describe(s, ctx, *p.turn_start_path_index), p.turn_prefix_messages.size(),
        p.turn_prefix_tokens);
  }
  out += fmt::format("Would keep verbatim: {} (~{} estimated tokens) from {} on.\n",
                     Messages(p.kept_messages), p.kept_tokens,
                     Describe(s, ctx, p.first_kept_path_index));
  out += fmt::format("Tokens before: {}. Files: {} read, {} modified.\n", N(p.tokens_before),
                     p.file_lists.read_files.size(), p.file_lists.modified_files.size());
  auto list = [&out](std::string_view title, const std::vector<std::string>& files) {
    if (files.empty()) return;
    out += fmt::format("  {}:\n", title);
    for (const std::string& f : files) out += "    " + f + "\n";
  };
  list("read", p.file_lists.read_files);
  list("modified", p.file_lists.modified_files);
  return out;
}

}  // namespace

void RegisterPlan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Show what a compaction would summarize and keep (pi's prepareCompaction), "
      "without calling a model");
  AddSessionArgs(cmd, &args->session);
  cmd->add_flag("--json", args->json,
                "print {\"estimatedTokens\": {...}, \"preparation\": null | {...}}");
  cmd->add_option("--leaf", args->leaf, "plan for this entry id instead of the file's last entry");
  AddSettingsArgs(cmd, &args->settings);
  cmd->add_flag("--pi-quirks", args->pi_quirks,
                "reproduce pi 0.73.1 exactly, including the bugs Compactor fixes "
                "(docs/compatibility.md)");
  cmd->callback([args] {
    PrepareOptions options;
    auto settings = ResolveSettings(args->settings);
    if (!settings.ok()) {
      ExitCode() = Fail(settings.status());
      return;
    }
    options.settings = *settings;
    if (!args->leaf.empty()) options.leaf_id = args->leaf;
    options.pi_quirks = args->pi_quirks;
    args->session.estimate_messages = !options.settings.tokenizer;
    auto session = LoadSession(args->session);
    if (!session.ok()) {
      ExitCode() = Fail(session.status());
      return;
    }
    auto result = PrepareCompaction(**session, options);
    if (!result.ok()) {
      ExitCode() = Fail(result.status());
      return;
    }
    Print(args->json ? PlanJson(*result) + "\n" : PlanWords(**session, *result));
  });
}

}  // namespace compactor::cli
