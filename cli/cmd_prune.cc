#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "compactor/prune.h"
#include "compactor/tokenizer.h"

namespace compactor::cli {
namespace {

struct PruneArgs {
  SessionArgs session;
  int64_t grace_ms = 300;
  std::string leaf;
  std::string out;
  bool dry_run = false;
  bool json = false;
  int64_t protect_tokens = 40000;
  int64_t minimum_savings = 20000;
  int64_t min_prune_tokens = 0;
  bool only_in_context = false;
  std::string tokenizer = "estimate";
  std::string vocab_dir;
};

nlohmann::ordered_json Report(const RewritePlan& plan, bool written, const WriteRewrittenResult& w,
                              bool dry_run, std::string_view tokenizer) {
  nlohmann::ordered_json j;
  j["pruned"] = plan.outputs.size();
  j["tokensSaved"] = plan.tokens_saved;
  j["entries"] = nlohmann::ordered_json::array();
  for (const ReplacedOutput& r : plan.outputs) {
    j["entries"].push_back({{"id", r.entry_id},
                            {"index", r.path_index},
                            {"toolName", r.tool_name},
                            {"tokens", r.tokens},
                            {"tokensSaved", r.tokens_saved},
                            {"notice", r.replacement}});
  }
  j["written"] = written;
  j["backup"] = w.backup_path ? nlohmann::ordered_json(*w.backup_path) : nullptr;
  j["output"] = written ? nlohmann::ordered_json(w.output_path) : nullptr;
  j["dryRun"] = dry_run;
  j["scanned"] = plan.scanned;
  j["protected"] = plan.kept;
  j["alreadyPruned"] = plan.already_pruned;
  j["candidates"] = plan.candidate_count;
  j["candidateSavings"] = plan.candidate_savings;
  j["tokenizer"] = tokenizer;
  j["skippedReason"] =
      plan.skipped_reason.empty() ? nullptr : nlohmann::ordered_json(plan.skipped_reason);
  return j;
}

}  // namespace

void RegisterPrune(CLI::App& app) {
  auto args = std::make_shared<PruneArgs>();
  CLI::App* cmd = app.add_subcommand("prune",
                                     "Replace old tool outputs with oh-my-pi's truncation notice "
                                     "(rewrites FILE, keeping FILE.bak)");
  AddSessionArgs(cmd, &args->session);
  cmd->add_flag("--dry-run", args->dry_run, "report what would be pruned; write nothing");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--protect-tokens", args->protect_tokens,
                  "newest tool-output tokens never pruned (default 40000)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--minimum-savings", args->minimum_savings,
                  "prune only when at least this many tokens are saved (default 20000)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-prune-tokens", args->min_prune_tokens,
                  "leave outputs smaller than this alone (default 0, as oh-my-pi 15.7.2)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--only-context", args->only_in_context,
                "skip outputs an earlier compaction already summarized");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "token counts: estimate (pi's chars/4, default) or o200k (oh-my-pi's numbers; "
                  "needs the vocabulary, docs/tokenizers.md)");
  cmd->add_option("--vocab-dir", args->vocab_dir, "directory holding o200k_base.tiktoken");
  cmd->add_option("--leaf", args->leaf, "prune the branch ending at this entry");
  cmd->add_option("-o,--output", args->out,
                  "write the pruned session here instead of over FILE (no backup)");
  AddRewriteArgs(cmd, &args->grace_ms);
  cmd->callback([args] {
    auto loaded = LoadSession(args->session);
    if (!loaded.ok()) {
      ExitCode() = Fail(loaded.status());
      return;
    }
    const Session& s = **loaded;
    std::optional<size_t> leaf;
    if (!args->leaf.empty()) {
      leaf = s.Find(args->leaf);
      if (!leaf) {
        ExitCode() = Fail(Status::InvalidArgument(
            fmt::format("{}: no entry with id \"{}\" (--leaf)", s.path(), args->leaf)));
        return;
      }
    }
    PruneOptions options;
    std::unique_ptr<Tokenizer> tokenizer;
    std::string tokenizer_name = "estimate";
    if (args->tokenizer != "estimate") {
      auto encoding = ParseEncoding(args->tokenizer);
      if (!encoding.ok()) {
        ExitCode() = Fail(encoding.status());
        return;
      }
      VocabOptions vo;
      vo.dir = args->vocab_dir;
      auto loaded_tokenizer = Tokenizer::Load(*encoding, vo);
      if (!loaded_tokenizer.ok()) {
        ExitCode() = Fail(loaded_tokenizer.status());
        return;
      }
      tokenizer = std::move(*loaded_tokenizer);
      tokenizer_name = std::string(EncodingName(*encoding));
      options.count_tokens = TokenizerCounter([t = tokenizer.get()](std::string_view text) {
        return static_cast<int64_t>(t->Count(text));
      });
    }
    options.protect_tokens = args->protect_tokens;
    options.minimum_savings = args->minimum_savings;
    options.min_prune_tokens = args->min_prune_tokens;
    options.only_in_context = args->only_in_context;
    auto plan = PlanPrune(s, leaf, options);
    if (!plan.ok()) {
      ExitCode() = Fail(plan.status());
      return;
    }
    WriteRewrittenResult written;
    const bool write = !args->dry_run && !plan->outputs.empty();
    if (write) {
      WriteRewrittenOptions wo;
      wo.output_path = args->out;
      wo.grace_ms = args->grace_ms;
      auto w = WriteRewrittenSession(s, args->session.file, *plan, wo);
      if (!w.ok()) {
        ExitCode() = Fail(w.status());
        return;
      }
      written = std::move(*w);
    }
    if (args->json) {
      Print(Report(*plan, write, written, args->dry_run, tokenizer_name)
                .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
            "\n");
      return;
    }
    std::string out;
    if (plan->outputs.empty()) {
      out = fmt::format("nothing to prune ({}; {} tool outputs, {} already pruned)\n",
                        plan->skipped_reason, plan->scanned, plan->already_pruned);
    } else if (args->dry_run) {
      out = fmt::format("would prune {} tool outputs, saving {} tokens ({}):\n",
                        plan->outputs.size(), plan->tokens_saved, tokenizer_name);
      for (const ReplacedOutput& r : plan->outputs)
        out += fmt::format("  {:<10} #{:<6} {:<12} {} tokens\n", r.entry_id, r.path_index,
                           r.tool_name, r.tokens);
    } else {
      out =
          fmt::format("pruned {} tool outputs, saving {} tokens ({}); wrote {}{}\n",
                      plan->outputs.size(), plan->tokens_saved, tokenizer_name, written.output_path,
                      written.backup_path ? ", original kept as " + *written.backup_path : "");
    }
    Print(out);
  });
}

}  // namespace compactor::cli
