// `compactor export`: one session of a store (a directory or a PostgreSQL
// URI, docs/store.md) as a pi session file.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "compactor/store.h"
#include "compactor/writer.h"

namespace compactor::cli {
namespace {

struct ExportArgs {
  std::string store;
  std::string id;
  std::string out;
  bool json = false;
};

// The --store value, else serve's default directory.
Result<std::string> StoreOf(const ExportArgs& a) {
  if (!a.store.empty()) return a.store;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0')
    return Status::InvalidArgument("HOME is not set: give the store (--store DIR|URL)");
  return std::string(home) + "/.local/share/compactor/sessions";
}

int Run(const ExportArgs& a) {
  auto where = StoreOf(a);
  if (!where.ok()) return Fail(where.status());
  StoreSpec spec;
  spec.store = *where;
  auto store = OpenStore(spec);
  if (!store.ok()) return Fail(store.status());
  auto text = (*store)->Export(a.id);
  if (!text.ok()) return Fail(text.status());
  if (!a.out.empty()) {
    RewriteOptions ro;
    ro.keep_backup = false;
    if (Status s = WriteFileAtomic(a.out, *text, ro); !s.ok()) return Fail(s);
  }
  if (a.json) {
    nlohmann::ordered_json report;
    report["id"] = a.id;
    report["entries"] = static_cast<size_t>(std::count(text->begin(), text->end(), '\n')) - 1;
    report["bytes"] = text->size();
    report["path"] =
        a.out.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a.out);
    Print(report.dump() + "\n");
  } else if (a.out.empty()) {
    Print(*text);
  } else {
    Print(fmt::format("wrote {} ({} bytes)\n", a.out, text->size()));
  }
  return 0;
}

}  // namespace

void RegisterExport(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write one stored session (a directory or a postgres:// store) as a pi session file");
  cmd->add_option("--store", args->store,
                  "the store: a directory of session files (default "
                  "~/.local/share/compactor/sessions) or a postgres://... URI (docs/store.md)");
  cmd->add_option("id", args->id, "the session's id (its header's id)")->required();
  cmd->add_option("-o,--output", args->out, "write the file here (atomically) instead of stdout");
  cmd->add_flag("--json", args->json,
                "print {\"id\",\"entries\",\"bytes\",\"path\"} instead of the file (path: null "
                "without -o)");
  cmd->footer(
      "Exit codes: 0 exported, 1 unknown session, unreachable store or failed write, 2 usage "
      "error. Details: docs/store.md.");
  cmd->callback([args] { ExitCode() = Run(*args); });
}

}  // namespace compactor::cli
