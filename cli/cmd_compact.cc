#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "compactor/compact.h"
#include "compactor/model_input.h"
#include "compactor/provider_api.h"
#include "compactor/report.h"
#include "compactor/strategy.h"

namespace compactor::cli {
namespace {

struct CompactArgs {
  SessionArgs session;
  int64_t grace_ms = 300;
  SettingsArgs settings;
  std::string strategy;
  std::string summarizer = "offline";
  std::string remote_compaction;
  std::string instructions;
  std::string leaf;
  std::string notes;
  std::string handoff_dir;
  bool if_needed = false;
  bool dry_run = false;
  bool json = false;
};

// "summary (default), user-prompts, notes, handoff, mask, mask-summary": the registered names.
std::string StrategyHelp() {
  std::string out;
  for (const CompactionStrategy* s : Strategies()) {
    if (!out.empty()) out += ", ";
    out += s->name();
    if (s == &DefaultStrategy()) out += " (default)";
  }
  return out;
}

}  // namespace

void RegisterCompact(CLI::App& app) {
  auto args = std::make_shared<CompactArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compact",
      "Compact the session: summarize old history, keep recent messages, record it in the file");
  AddSessionArgs(cmd, &args->session);
  AddSettingsArgs(cmd, &args->settings);
  cmd->add_option("--strategy", args->strategy, StrategyHelp());
  cmd->add_option("--summarizer", args->summarizer,
                  "offline (default: embedded, no network) or a model name from the settings "
                  "file's \"models\"");
  cmd->add_option("--remote-compaction", args->remote_compaction,
                  "also store OpenAI's native compaction (/responses/compact) from this "
                  "openai-responses model of the settings file");
  cmd->add_option("--instructions", args->instructions, "extra focus for the summary");
  cmd->add_option("--leaf", args->leaf, "compact the branch ending at this entry id");
  cmd->add_option("--notes", args->notes,
                  "notes file whose content is the summary (--strategy notes)");
  cmd->add_option("--handoff-dir", args->handoff_dir,
                  "directory of the new session (--strategy handoff; default: next to FILE)");
  cmd->add_flag("--if-needed", args->if_needed,
                "only compact when the trigger policy fires (needs --context-window or settings)");
  cmd->add_flag("--dry-run", args->dry_run, "compute and print everything, write nothing");
  cmd->add_flag("--json", args->json, "print the result as one JSON object");
  AddRewriteArgs(cmd, &args->grace_ms);
  cmd->callback([args] {
    auto settings = ResolveSettings(args->settings);
    if (!settings.ok()) {
      ExitCode() = Fail(settings.status());
      return;
    }
    CompactOptions o;
    o.settings = *settings;
    if (!args->strategy.empty()) {
      auto s = ParseStrategy(args->strategy);
      if (!s.ok()) {
        ExitCode() = Fail(s.status());
        return;
      }
      o.strategy = *s;  // a registered strategy: static lifetime
    }
    auto summarizer =
        MakeSummarizer(args->summarizer, args->settings.settings_file, o.settings.reserve_tokens);
    if (!summarizer.ok()) {
      ExitCode() = Fail(summarizer.status());
      return;
    }
    o.summarizer = summarizer->get();
    CompactionHooks hooks;
    if (!args->remote_compaction.empty()) {
      auto models = LoadModels(args->settings.settings_file,
                               "--remote-compaction " + args->remote_compaction);
      auto model = models.ok() ? FindModel(*models, args->remote_compaction)
                               : Result<ModelConfig>(models.status());
      const ProviderApi* api = model.ok() ? FindProviderApi(model->api) : nullptr;
      if (model.ok() && (api == nullptr || !api->native_compaction())) {
        model = Status::InvalidArgument("--remote-compaction " + args->remote_compaction +
                                        ": the model's provider must be openai-responses");
      }
      if (!model.ok()) {
        ExitCode() = Fail(model.status());
        return;
      }
      RemoteCompactionOptions rc;
      rc.model = *model;
      rc.on_error = [](const Status& s) {
        fmt::print(stderr, "compactor: warning: native compaction failed, local summary kept: {}\n",
                   s.message());
      };
      hooks.OnCompacting(RemoteCompactionHook(std::move(rc)));
      o.hooks = &hooks;
    }
    o.instructions = args->instructions;
    if (!args->leaf.empty()) o.leaf_id = args->leaf;
    o.notes_path = args->notes;
    o.handoff_dir = args->handoff_dir;
    o.only_if_needed = args->if_needed;
    o.dry_run = args->dry_run;
    o.rewrite_grace_ms = args->grace_ms;
    LoadOptions load;
    load.strict = args->session.strict;
    load.max_stream_bytes = static_cast<size_t>(args->session.input_limit_mib) << 20;
    // Capped like every command's (the file may be read twice: once more under its lock).
    WarningPrinter warnings(args->session.quiet);
    load.on_warning = warnings.Callback();
    auto r = CompactFile(args->session.file, o, load);
    warnings.Finish();
    if (!r.ok()) {
      ExitCode() = Fail(r.status());
      return;
    }
    if (args->json) {
      Print(CompactionResultJson(*r, args->dry_run) + "\n");
      return;
    }
    std::string out;
    if (!r->compacted) {
      out = fmt::format("Nothing done ({}): {}; context {} tokens.\n", r->strategy,
                        r->skipped_reason, r->tokens_before);
      Print(out);
      return;
    }
    const double before = r->tokens_before, after = static_cast<double>(r->tokens_after);
    out += fmt::format(
        "{} compaction ({}){}\n", r->strategy,
        args->dry_run ? "dry run, nothing written" : "written",
        r->output == CompactionOutput::kNewSession ? ": new session " + r->output_path : "");
    out += fmt::format("tokens: {:.0f} before -> {:.0f} after ({:.1f}% smaller)\n", before, after,
                       before > 0 ? 100.0 * (before - after) / before : 0.0);
    out += fmt::format("summarized {} messages (~{} tokens){}; kept from entry {}\n",
                       r->messages_summarized, r->summarized_tokens,
                       r->split_turn ? ", split turn" : "",
                       r->first_kept_entry_id.empty() ? "-" : r->first_kept_entry_id);
    if (r->ineffective)
      out += "warning: still over the threshold after compacting; not compacting again\n";
    for (const std::string& e : r->hook_errors) out += "hook error: " + e + "\n";
    out += "\n" + r->summary + "\n";
    Print(out);
  });
}

}  // namespace compactor::cli
