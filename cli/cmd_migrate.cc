#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "compactor/writer.h"

namespace compactor::cli {
namespace {

struct MigrateArgs {
  SessionArgs session;
  int64_t grace_ms = 300;
  std::string out;
  bool in_place = false;
  bool json = false;
};

// The in-place migration under the write protocol: the file is read again
// under the lock and entries appended meanwhile are carried over as written.
Status MigrateInPlace(const std::string& path, int64_t grace_ms) {
  SessionRewriteOptions o;
  o.grace_ms = grace_ms;
  auto rebuild = [&path](std::string_view bytes) -> Result<std::string> {
    COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> now,
                               Session::FromString(std::string(bytes), path));
    return now->ToV3Jsonl();
  };
  return RewriteSessionFile(path, rebuild, o).status();
}

}  // namespace

void RegisterMigrate(CLI::App& app) {
  auto args = std::make_shared<MigrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "migrate",
      "Write a v1/v2 session as format v3 (to stdout, -o OUT, or --in-place with a .bak)");
  AddSessionArgs(cmd, &args->session);
  auto* out_opt = cmd->add_option("-o,--output", args->out, "write the v3 file here (atomically)");
  cmd->add_flag("--in-place", args->in_place,
                "replace FILE atomically, keeping the original as FILE.bak")
      ->excludes(out_opt);
  cmd->add_flag("--json", args->json, "print a JSON report instead of the file or a sentence");
  AddRewriteArgs(cmd, &args->grace_ms);
  cmd->callback([args] {
    auto loaded = LoadSession(args->session);
    if (!loaded.ok()) {
      ExitCode() = Fail(loaded.status());
      return;
    }
    const Session& s = **loaded;
    std::string v3 = s.ToV3Jsonl();
    std::string target = args->in_place ? args->session.file : args->out;
    nlohmann::ordered_json report;
    report["file"] = args->session.file;
    report["versionOnDisk"] = s.header().version;
    report["migrated"] = s.migrated();
    report["entries"] = s.size();
    report["skippedLines"] = s.warnings().size();
    if (target.empty()) {
      if (args->json) {
        report["output"] = nullptr;
        Print(report.dump() + "\n");
      } else {
        Print(v3);
      }
      return;
    }
    if (args->in_place && !s.migrated() && s.warnings().empty()) {
      report["output"] = target;
      report["written"] = false;
      if (args->json)
        Print(report.dump() + "\n");
      else
        Print(fmt::format("{} is already format v3; nothing to do\n", target));
      return;
    }
    Status st = args->in_place ? MigrateInPlace(target, args->grace_ms)
                               : WriteFileAtomic(target, v3, RewriteOptions{false, ".bak"});
    if (!st.ok()) {
      ExitCode() = Fail(st);
      return;
    }
    report["output"] = target;
    report["written"] = true;
    if (args->in_place) report["backup"] = target + ".bak";
    if (args->json) {
      Print(report.dump() + "\n");
    } else {
      Print(fmt::format("wrote {} (format v3, {} entries{})\n", target, s.size(),
                        args->in_place ? ", original kept as " + target + ".bak" : ""));
    }
  });
}

}  // namespace compactor::cli
