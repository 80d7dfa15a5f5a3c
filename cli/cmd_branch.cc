#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "compactor/branch.h"
#include "compactor/report.h"

namespace compactor::cli {
namespace {

struct BranchArgs {
  SessionArgs session;
  std::string to;
  std::string from;
  bool summarize = false;
  std::string instructions;
  bool replace_instructions = false;
  std::string label;
  int64_t context_window = 128000;
  int64_t reserve_tokens = 16384;
  std::string summarizer = "offline";
  std::string settings_file;
  bool dry_run = false;
  bool json = false;
};

}  // namespace

void RegisterBranch(CLI::App& app) {
  auto args = std::make_shared<BranchArgs>();
  CLI::App* cmd = app.add_subcommand("branch",
                                     "Move to another entry of the tree (pi's /tree), optionally "
                                     "summarizing the branch left behind");
  AddSessionArgs(cmd, &args->session);
  cmd->add_option("--to", args->to, "the entry to move to")->required();
  cmd->add_option("--from", args->from, "the branch being left (default: the file's leaf)");
  cmd->add_flag("--summarize", args->summarize, "append a summary of the abandoned branch");
  cmd->add_option("--instructions", args->instructions, "extra focus for the summary");
  cmd->add_flag("--replace-instructions", args->replace_instructions,
                "use --instructions instead of the default branch prompt");
  cmd->add_option("--label", args->label, "label the new position");
  cmd->add_option("--context-window", args->context_window,
                  "the summarizer's window; the branch must fit window - reserve (default 128000)");
  cmd->add_option("--reserve-tokens", args->reserve_tokens, "default 16384");
  cmd->add_option("--summarizer", args->summarizer,
                  "offline (default) or a model name from the settings file's \"models\"");
  cmd->add_option("--settings", args->settings_file,
                  "settings file defining the models (docs/providers.md)");
  cmd->add_flag("--dry-run", args->dry_run, "compute and print, write nothing");
  cmd->add_flag("--json", args->json, "print the result as one JSON object");
  cmd->callback([args] {
    auto summarizer = MakeSummarizer(args->summarizer, args->settings_file, args->reserve_tokens);
    if (!summarizer.ok()) {
      ExitCode() = Fail(summarizer.status());
      return;
    }
    BranchOptions o;
    o.summarizer = summarizer->get();
    o.target_id = args->to;
    if (!args->from.empty()) o.from_leaf = args->from;
    o.summarize = args->summarize;
    o.instructions = args->instructions;
    o.replace_instructions = args->replace_instructions;
    o.label = args->label;
    o.context_window = args->context_window;
    o.reserve_tokens = args->reserve_tokens;
    o.dry_run = args->dry_run;
    auto r = BranchFile(args->session.file, o);
    if (!r.ok()) {
      ExitCode() = Fail(r.status());
      return;
    }
    if (args->json) {
      Print(BranchResultJson(*r, args->dry_run) + "\n");
      return;
    }
    if (r->noop) {
      Print(fmt::format("{} already is the leaf; nothing to do\n", r->target_id));
      return;
    }
    std::string out = fmt::format(
        "{} {} -> {} (new leaf {}{})\n", args->dry_run ? "would move" : "moved", r->old_leaf_id,
        r->target_id, r->new_leaf_id,
        r->common_ancestor_id.empty() ? "" : ", common ancestor " + r->common_ancestor_id);
    if (!r->editor_text.empty())
      out += "the target is a prompt; its text for re-editing:\n" + r->editor_text + "\n";
    if (!r->summary.empty()) {
      out += fmt::format("summary of {} abandoned entries:\n\n{}\n", r->entries_summarized.size(),
                         r->summary);
    }
    Print(out);
  });
}

}  // namespace compactor::cli
