// compactor eval: compaction quality on sessions with probe facts
// (docs/quality.md). Compacts in memory; inputs are never written.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "commands.h"
#include "common.h"
#include "compactor/eval.h"
#include "compactor/providers.h"
#include "compactor/strategy.h"

namespace compactor::cli {
namespace {

// Exit code when --check finds a missed target (docs/quality.md).
constexpr int kExitTargetsMissed = 3;

struct EvalArgs {
  std::vector<std::string> sessions;
  SettingsArgs settings;
  std::vector<std::string> strategies;
  std::string summarizer = "offline";
  std::string judge;
  bool json = false;
  std::string html;
  std::string generate_dir;
  int generate_count = 4;
  uint64_t seed = 1;
  int64_t target_tokens = 160000;
  bool no_eval = false;
  bool no_agent_notes = false;
  bool check = false;
  bool quiet = false;
  bool print_facts = false;
  std::string facts_dir;
  std::string generator = "standard";
};

std::string Stem(const std::string& path) {
  std::string p = path;
  if (p.size() > 6 && p.ends_with(".jsonl")) p.resize(p.size() - 6);
  return p;
}

bool Exists(const std::string& path) { return Env::Default()->Stat(path).ok(); }

// Directories expand to their *.jsonl files (sorted).
std::vector<std::string> ExpandSessions(const std::vector<std::string>& inputs) {
  Env* env = Env::Default();
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    Result<FileInfo> info = env->Stat(in);
    if (!info.ok() || info->kind != FileKind::kDirectory) {
      out.push_back(in);
      continue;
    }
    Result<std::vector<std::string>> names = env->ListDir(in);
    if (!names.ok()) continue;
    const std::string dir = in.ends_with('/') ? in : in + "/";
    for (const std::string& name : *names) {  // sorted by ListDir
      if (name.size() <= 6 || !name.ends_with(".jsonl")) continue;
      Result<FileInfo> f = env->Stat(dir + name);
      if (f.ok() && f->kind == FileKind::kRegular) out.push_back(dir + name);
    }
  }
  return out;
}

int Run(const EvalArgs& a) {
  std::vector<std::string> sessions = a.sessions;
  if (!a.generate_dir.empty()) {
    auto written = WriteEvalCorpus(
        a.generate_dir, a.generate_count, a.seed, a.target_tokens, !a.no_agent_notes, nullptr,
        a.generator == "independent" ? GeneratorStyle::kIndependent : GeneratorStyle::kStandard);
    if (!written.ok()) return Fail(written.status());
    if (!a.quiet)
      fmt::print(stderr, "generated {} sessions in {}\n", written->size(), a.generate_dir);
    if (a.no_eval) {
      for (const std::string& p : *written) Print(p + "\n");
      return kExitOk;
    }
    sessions.insert(sessions.end(), written->begin(), written->end());
  }
  sessions = ExpandSessions(sessions);
  if (sessions.empty())
    return Fail(
        Status::InvalidArgument("no sessions given (pass files, directories or --generate DIR)"));

  auto settings = ResolveSettings(a.settings);
  if (!settings.ok()) return Fail(settings.status());
  auto summarizer =
      MakeSummarizer(a.summarizer, a.settings.settings_file, settings->reserve_tokens);
  if (!summarizer.ok()) return Fail(summarizer.status());
  std::unique_ptr<ProbeJudge> judge;
  if (!a.judge.empty()) {
    if (a.settings.settings_file.empty())
      return Fail(Status::InvalidArgument(
          "--judge names a model: give the settings file that defines it (--settings FILE)"));
    Result<std::string> text = Env::Default()->ReadFile(a.settings.settings_file);
    auto models = ParseModelConfigs(text.ok() ? *text : std::string());
    if (!models.ok()) return Fail(models.status());
    auto candidates = ResolveCandidates(*models, a.judge);
    if (!candidates.ok()) return Fail(Status::InvalidArgument(candidates.status().message()));
    judge = NewLlmProbeJudge(std::move(candidates).value());
  }

  // nullptr: "none", the ceiling.
  std::vector<const CompactionStrategy*> strategies;
  if (a.strategies.empty()) {
    strategies.push_back(nullptr);
    for (const CompactionStrategy* s : Strategies())
      if (s->evaluated_by_default()) strategies.push_back(s);
  }
  for (const std::string& n : a.strategies) {
    if (n == "none") {
      strategies.push_back(nullptr);
      continue;
    }
    auto s = ParseStrategy(n);
    if (!s.ok()) return Fail(s.status());
    strategies.push_back(*s);
  }

  std::map<std::string, std::vector<SessionEval>> by_strategy;
  std::vector<std::string> order;
  std::vector<SessionEval> all;
  const bool tty = isatty(STDERR_FILENO) && !a.quiet;
  for (size_t i = 0; i < sessions.size(); ++i) {
    const std::string& path = sessions[i];
    if (tty) fmt::print(stderr, "\r\033[K[{}/{}] {}", i + 1, sessions.size(), path);
    LoadOptions load;
    load.on_warning = [](const LoadWarning&) {};
    auto session = Session::Open(path, load);
    if (!session.ok()) return Fail(session.status());
    FactFile facts;
    std::string facts_path = Stem(path) + ".facts.json";
    if (!a.facts_dir.empty()) {
      const std::string base = facts_path.substr(facts_path.rfind('/') + 1);
      facts_path = (a.facts_dir.ends_with('/') ? a.facts_dir : a.facts_dir + "/") + base;
    }
    if (Exists(facts_path)) {
      auto f = ReadFactFile(facts_path);
      if (!f.ok()) return Fail(f.status());
      facts = std::move(*f);
    } else {
      facts = ExtractProbeFacts(**session);
    }
    if (a.print_facts) {
      Print(FactFileToJson(facts));
      continue;
    }
    for (const CompactionStrategy* strategy : strategies) {
      EvalConfig config;
      config.strategy = strategy;
      config.compact.settings = *settings;
      config.summarizer_name = a.summarizer;
      config.compact.summarizer = summarizer->get();
      config.judge = judge.get();
      const bool needs_notes = strategy && strategy->needs().notes_file;
      if (needs_notes) {
        const std::string notes = Stem(path) + ".notes.md";
        if (Exists(notes)) config.compact.notes_path = notes;
      }
      SessionEval ev;
      if (needs_notes && config.compact.notes_path.empty()) {
        ev.session = path;
        ev.strategy = std::string(strategy->name());
        ev.skipped_reason = "no notes file (" + Stem(path) + ".notes.md)";
      } else {
        auto r = EvaluateSession(**session, facts, config);
        if (!r.ok()) return Fail(r.status());
        ev = std::move(*r);
      }
      if (!by_strategy.count(ev.strategy)) order.push_back(ev.strategy);
      by_strategy[ev.strategy].push_back(ev);
      all.push_back(std::move(ev));
    }
  }
  if (tty) fmt::print(stderr, "\r\033[K");
  if (a.print_facts) return kExitOk;

  std::vector<EvalSummary> summaries;
  summaries.reserve(order.size());
  for (const std::string& s : order) summaries.push_back(Summarize(by_strategy[s]));
  if (a.json) {
    Print(EvalJson(summaries, all));
  } else {
    Print(EvalTable(summaries));
    // Both splits, when the facts name them (docs/quality.md, "Splits").
    for (std::string_view split : {"tuning", "held-out"}) {
      std::vector<EvalSummary> part = SummarizeByStrategy(all, split);
      if (part.empty()) continue;
      Print(fmt::format("\n{} split ({} sessions)\n", split, part[0].sessions));
      Print(EvalTable(part));
    }
    for (const SessionEval& e : all)
      if (!e.compacted && !e.skipped_reason.empty() && !a.quiet)
        fmt::print(stderr, "note: {} ({}): {}\n", e.session, e.strategy, e.skipped_reason);
  }
  if (!a.html.empty()) {
    // A report, not a session: readable by others as a plain write would leave it.
    Status written = Env::Default()->ReplaceFile(a.html, EvalHtml(summaries), {"", 0666});
    if (!written.ok()) return Fail(written);
  }
  if (a.check) {
    std::vector<std::string> misses;
    bool found = false;
    for (const EvalSummary& s : summaries) {
      if (s.strategy != "summary") continue;  // the quality targets are the summary strategy's
      found = true;
      misses = CheckTargets(s);
    }
    if (!found) misses.push_back("--check needs the summary strategy");
    for (const std::string& m : misses) fmt::print(stderr, "compactor: target missed: {}\n", m);
    if (!misses.empty()) return kExitTargetsMissed;
  }
  return kExitOk;
}

}  // namespace

void RegisterEval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Measure compaction quality: compact each session in memory and report which probe facts "
      "the rebuilt context still holds (docs/quality.md)");
  cmd->add_option("SESSIONS", args->sessions,
                  "session files or directories; facts from <name>.facts.json beside each, else "
                  "extracted by rule");
  AddSettingsArgs(cmd, &args->settings);
  std::string by_default = "none";
  for (const CompactionStrategy* s : Strategies())
    if (s->evaluated_by_default()) by_default += " " + std::string(s->name());
  cmd->add_option("--strategy", args->strategies,
                  "none (no compaction: the ceiling), " + StrategyNames() +
                      "; repeatable (default: " + by_default + ")")
      ->delimiter(',');
  cmd->add_option(
      "--summarizer", args->summarizer,
      "offline (default: embedded, no network) or a model from the settings file's \"models\"");
  cmd->add_option(
      "--judge", args->judge,
      "score probe questions with this model from the settings file's \"models\" (LLM judge)");
  cmd->add_flag("--json", args->json, "print the results as JSON (per strategy and per session)");
  cmd->add_option("--html", args->html, "also write an HTML report with a bar chart per strategy");
  cmd->add_option("--generate", args->generate_dir,
                  "first write a generated corpus into this directory and evaluate it");
  cmd->add_option("--sessions", args->generate_count, "sessions to generate (default 4)");
  cmd->add_option("--seed", args->seed, "seed of the first generated session (default 1)");
  cmd->add_option("--target-tokens", args->target_tokens,
                  "approximate size of each generated session (default 160000)");
  cmd->add_option("--generator", args->generator,
                  "with --generate: standard (default; eval-NNNN) or independent (ind-NNNN: other "
                  "domains and phrasing, false fixes, piped commands, rejected options, values "
                  "only in tool outputs)")
      ->check(CLI::IsMember({"standard", "independent"}));
  cmd->add_flag("--no-eval", args->no_eval, "with --generate: only write the corpus");
  cmd->add_flag("--no-agent-notes", args->no_agent_notes,
                "with --generate: the simulated agent has no notes tool (no write_notes calls, no "
                "<name>.notes.md)");
  cmd->add_flag("--check", args->check,
                "exit 3 when the summary strategy misses a quality target (docs/quality.md)");
  cmd->add_flag("--print-facts", args->print_facts,
                "print each session's facts (its .facts.json, or those extracted by rule) and "
                "evaluate nothing");
  cmd->add_option("--facts-dir", args->facts_dir,
                  "read each session's <name>.facts.json from this directory instead of beside "
                  "the session (the hand-labelled set: tests/eval/labelled)");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress or notes on stderr");
  cmd->callback([args] { ExitCode() = Run(*args); });
}

}  // namespace compactor::cli
