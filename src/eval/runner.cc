// The evaluation runner: compact in memory, rebuild, score, aggregate, report.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "compactor/strategy.h"
#include "compactor/summarizer.h"

namespace compactor {
namespace {

using Json = nlohmann::ordered_json;

// Milliseconds on `env`'s monotonic clock since `since_us`.
double Ms(Env* env, int64_t since_us) {
  return static_cast<double>(env->MonotonicMicros() - since_us) / 1000.0;
}

double Share(int part, int total) { return total == 0 ? 1.0 : static_cast<double>(part) / total; }

int64_t HeuristicSum(const std::vector<ContextMessage>& messages) {
  return EstimateContextTokens(messages).heuristic_sum;
}

std::string Percent(double v) { return fmt::format("{:.1f}%", 100.0 * v); }

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Result<SessionEval> EvaluateSession(const Session& session, const FactFile& facts,
                                    const EvalConfig& config) {
  Env* env = EnvOrDefault(config.compact.env);
  const int64_t start = env->MonotonicMicros();
  SessionEval ev;
  ev.session = session.path();
  ev.strategy = config.strategy ? std::string(config.strategy->name()) : "none";
  // notes and mask call no summarizer: naming one would mislabel their results.
  const bool summarizes = config.strategy && config.strategy->needs().summarizer;
  ev.summarizer = summarizes ? config.summarizer_name : "";

  ev.split = facts.split;
  ContextOptions context_options;
  context_options.expander = StrategyExpander();
  COMPACTOR_ASSIGN_OR_RETURN(SessionContext before, BuildSessionContext(session, context_options));
  ev.context_tokens_before = HeuristicSum(before.messages);
  const std::vector<ContextMessage> before_messages = before.messages;

  // The context to score and, when compacted, the first entry kept verbatim.
  std::unique_ptr<Session> rebuilt_session;
  SessionContext rebuilt;
  std::string first_kept;
  if (!config.strategy) {
    rebuilt = std::move(before);
  } else {
    CompactOptions o = config.compact;
    o.strategy = config.strategy;
    o.dry_run = true;
    o.only_if_needed = false;
    const int64_t compact_start = env->MonotonicMicros();
    auto computed = ComputeCompaction(session, o);
    ev.compact_ms = Ms(env, compact_start);
    if (!computed.ok()) {
      // Not scored: an unsupported strategy or a summarizer failure says
      // nothing about retention.
      ev.skipped_reason = computed.status().ToString();
      ev.total_ms = Ms(env, start);
      return ev;
    }
    const CompactionResult& r = computed->result;
    if (!r.compacted) {
      // Not scored either: the uncompacted context would count as this
      // strategy's retention (an empty notes file would score the ceiling).
      ev.skipped_reason = r.skipped_reason.empty() ? "not compacted" : r.skipped_reason;
      ev.context_tokens_after = ev.context_tokens_before;
      ev.total_ms = Ms(env, start);
      return ev;
    }
    ev.compacted = true;
    ev.summarized_tokens = r.summarized_tokens;
    ev.summary_tokens = r.summary.empty() ? 0 : EstimateTextTokens(r.summary);
    first_kept = r.first_kept_entry_id;
    COMPACTOR_ASSIGN_OR_RETURN(rebuilt_session, SessionAfterCompaction(session, *computed));
    COMPACTOR_ASSIGN_OR_RETURN(rebuilt, BuildSessionContext(*rebuilt_session, context_options));
  }
  ev.context_tokens_after = HeuristicSum(rebuilt.messages);
  const std::vector<RenderedBlock> blocks = RenderContext(rebuilt.messages);
  ev.outcomes = ScoreFacts(facts.facts, blocks);
  if (config.judge) {
    const std::string text = RenderedText(blocks);
    for (const ProbeQuestion& q : MakeProbeQuestions(facts)) {
      ProbeScore p;
      p.type = q.type;
      p.question = q.question;
      auto score = config.judge->Score(text, q);
      if (score.ok()) {
        p.score = *score;
      } else {
        p.error = score.status().ToString();
      }
      ev.probes.push_back(std::move(p));
    }
  }

  // Which facts were stated before the first kept entry (on the compacted path).
  std::map<std::string, size_t> position;
  if (auto leaf = session.Leaf()) {
    const std::vector<size_t> path = session.PathTo(*leaf);
    for (size_t i = 0; i < path.size(); ++i) position[std::string(session.entry(path[i]).id)] = i;
  }
  std::optional<size_t> kept_at;
  if (!first_kept.empty() && position.count(first_kept)) kept_at = position[first_kept];
  ev.status = ScoreStatus(facts.facts, ev.outcomes);
  ev.shape = MeasureSummaryShape(blocks);
  ev.continuation = ContinuationScore(facts.facts, ev.outcomes);
  {
    // The replaced part: what precedes the first kept entry (everything, for
    // a strategy that keeps no verbatim tail or summarizes nothing).
    std::vector<ContextMessage> replaced;
    for (const ContextMessage& m : before_messages) {
      if (kept_at) {
        auto it = position.find(std::string(session.entry(m.entry_index).id));
        if (it == position.end() || it->second >= *kept_at) continue;
      }
      replaced.push_back(m);
    }
    ev.artifacts = MeasureArtifacts(RenderContext(replaced), blocks);
  }
  for (size_t i = 0; i < facts.facts.size(); ++i) {
    FactOutcome& o = ev.outcomes[i];
    auto it = position.find(facts.facts[i].entry_id);
    // Strategies that keep no verbatim tail (handoff, user-prompts) replace
    // everything; one that summarizes nothing (mask) replaces nothing.
    if (ev.compacted && !kept_at && config.strategy->summarizes_history()) {
      o.in_summarized_part = true;
    } else if (kept_at && it != position.end()) {
      o.in_summarized_part = it->second < *kept_at;
    }
    KindScore& k = ev.kinds[static_cast<int>(o.kind)];
    if (o.stale) {
      ++ev.stale_total;
      if (o.stale_as_current) ++ev.stale_as_current;
      continue;
    }
    if (!o.status.empty()) continue;  // done steps, rejected options: not to be retained
    ++k.total;
    if (o.retained) ++k.retained;
    if (o.mentioned) ++k.mentioned;
    if (o.in_summarized_part) {
      ++k.summarized_total;
      if (o.retained) ++k.summarized_retained;
    }
  }
  ev.total_ms = Ms(env, start);
  return ev;
}

double EvalSummary::Retention() const { return Share(retained, total); }
double EvalSummary::KindRetention(FactKind kind) const {
  const KindScore& k = kinds[static_cast<int>(kind)];
  return Share(k.retained, k.total);
}
double EvalSummary::SummaryReduction() const {
  if (summarized_tokens <= 0) return 0;
  return 1.0 - static_cast<double>(summary_tokens) / static_cast<double>(summarized_tokens);
}
double EvalSummary::ContextReduction() const {
  if (context_tokens_before <= 0) return 0;
  return 1.0 -
         static_cast<double>(context_tokens_after) / static_cast<double>(context_tokens_before);
}

EvalSummary Summarize(const std::vector<SessionEval>& evals) {
  EvalSummary s;
  for (const SessionEval& e : evals) {
    if (s.strategy.empty()) {
      s.strategy = e.strategy;
      s.summarizer = e.summarizer;
    }
    ++s.sessions;
    // A strategy that could not run has no outcomes and counts only as a session.
    if (e.outcomes.empty() && !e.skipped_reason.empty()) continue;
    if (e.compacted) ++s.compacted;
    for (int i = 0; i < kFactKindCount; ++i) {
      KindScore& k = s.kinds[i];
      k.total += e.kinds[i].total;
      k.retained += e.kinds[i].retained;
      k.mentioned += e.kinds[i].mentioned;
      k.summarized_total += e.kinds[i].summarized_total;
      k.summarized_retained += e.kinds[i].summarized_retained;
      s.total += e.kinds[i].total;
      s.retained += e.kinds[i].retained;
      s.summarized_total += e.kinds[i].summarized_total;
      s.summarized_retained += e.kinds[i].summarized_retained;
    }
    s.stale_total += e.stale_total;
    s.stale_as_current += e.stale_as_current;
    s.summarized_tokens += e.summarized_tokens;
    s.summary_tokens += e.summary_tokens;
    s.context_tokens_before += e.context_tokens_before;
    s.context_tokens_after += e.context_tokens_after;
    s.compact_ms += e.compact_ms;
    s.total_ms += e.total_ms;
    s.status.Add(e.status);
    s.shape.Add(e.shape);
    s.artifacts.Add(e.artifacts);
    s.continuation_sum += e.continuation;
    ++s.continuation_sessions;
  }
  return s;
}

double EvalSummary::Continuation() const {
  return continuation_sessions == 0 ? 0.0 : continuation_sum / continuation_sessions;
}

std::vector<std::string> CheckTargets(const EvalSummary& s, const EvalTargets& t) {
  std::vector<std::string> misses;
  auto check = [&](const char* what, double value, double min) {
    if (value + 1e-9 < min)
      misses.push_back(fmt::format("{}: {} retained {} < target {}", s.strategy, what,
                                   Percent(value), Percent(min)));
  };
  if (s.compacted == 0 && s.strategy != "none")
    misses.push_back(s.strategy + ": no session was compacted");
  check("all facts", s.Retention(), t.overall);
  check("file_modified", s.KindRetention(FactKind::kFileModified), t.files_modified);
  check("constraint", s.KindRetention(FactKind::kConstraint), t.constraints);
  if (s.stale_as_current > t.stale_as_current)
    misses.push_back(fmt::format("{}: {} superseded facts presented as current (target {})",
                                 s.strategy, s.stale_as_current, t.stale_as_current));
  const CompactionStrategy* strategy = FindStrategy(s.strategy);
  if (strategy && strategy->summarizes_history() &&
      s.SummaryReduction() + 1e-9 < t.summary_reduction)
    misses.push_back(fmt::format("{}: summary reduction {} < target {}", s.strategy,
                                 Percent(s.SummaryReduction()), Percent(t.summary_reduction)));
  return misses;
}

std::vector<std::string> CheckPendingTargets(const EvalSummary& s, const PendingTargets& t) {
  std::vector<std::string> misses;
  auto check = [&](const char* what, int part, int total, double min) {
    if (total > 0 && Share(part, total) + 1e-9 < min)
      misses.push_back(fmt::format("{}: {} {} ({}/{}) < target {}", s.strategy, what,
                                   Percent(Share(part, total)), part, total, Percent(min)));
  };
  auto kind = [&](FactKind k) { return s.kinds[static_cast<int>(k)]; };
  auto count = [&](const char* what, int n, int total, int max) {
    if (n > max)
      misses.push_back(fmt::format("{}: {} {}/{} (target {})", s.strategy, what, n, total, max));
  };
  check("all facts", s.retained, s.total, t.overall);
  check("values from tool outputs", kind(FactKind::kValue).retained, kind(FactKind::kValue).total,
        t.values);
  check("file_modified", kind(FactKind::kFileModified).retained,
        kind(FactKind::kFileModified).total, t.files_modified);
  check("constraint", kind(FactKind::kConstraint).retained, kind(FactKind::kConstraint).total,
        t.constraints);
  check("error", kind(FactKind::kError).retained, kind(FactKind::kError).total, t.errors);
  check("decision", kind(FactKind::kDecision).retained, kind(FactKind::kDecision).total,
        t.decisions);
  count("superseded presented as current", s.status.stale_presented, s.status.stale,
        t.stale_presented);
  count("open errors shown as resolved", s.status.false_resolved, s.status.open_errors,
        t.false_resolved);
  count("goals and constraints under Done", s.status.under_done, s.status.standing, t.under_done);
  if (s.shape.items > 0 && Share(s.shape.noise, s.shape.items) > t.max_noise + 1e-9)
    misses.push_back(fmt::format("{}: noise {} ({}/{} summary items) > target {}", s.strategy,
                                 Percent(Share(s.shape.noise, s.shape.items)), s.shape.noise,
                                 s.shape.items, Percent(t.max_noise)));
  const CompactionStrategy* strategy = FindStrategy(s.strategy);
  if (strategy && strategy->summarizes_history() && s.summarized_tokens > 0 &&
      s.SummaryReduction() + 1e-9 < t.summary_reduction)
    misses.push_back(fmt::format("{}: summary reduction {} < target {}", s.strategy,
                                 Percent(s.SummaryReduction()), Percent(t.summary_reduction)));
  return misses;
}

std::string EvalTable(const std::vector<EvalSummary>& summaries) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"fact kind"};
  for (const EvalSummary& s : summaries)
    header.push_back(s.summarizer.empty() ? s.strategy : s.strategy + " (" + s.summarizer + ")");
  rows.push_back(header);
  auto cell = [](int part, int total) {
    return total == 0 ? std::string("-")
                      : fmt::format("{} ({}/{})", Percent(Share(part, total)), part, total);
  };
  for (int i = 0; i < kFactKindCount; ++i) {
    std::vector<std::string> row = {std::string(FactKindName(static_cast<FactKind>(i)))};
    for (const EvalSummary& s : summaries)
      row.push_back(cell(s.kinds[i].retained, s.kinds[i].total));
    rows.push_back(row);
  }
  auto add = [&](std::string label, auto f) {
    std::vector<std::string> row = {std::move(label)};
    for (const EvalSummary& s : summaries) row.push_back(f(s));
    rows.push_back(row);
  };
  add("all facts", [&](const EvalSummary& s) { return cell(s.retained, s.total); });
  add("facts in summarized part",
      [&](const EvalSummary& s) { return cell(s.summarized_retained, s.summarized_total); });
  add("stale shown as current",
      [](const EvalSummary& s) { return fmt::format("{}/{}", s.stale_as_current, s.stale_total); });
  add("summary reduction", [](const EvalSummary& s) {
    return s.summarized_tokens > 0 ? Percent(s.SummaryReduction()) : std::string("-");
  });
  add("context reduction", [](const EvalSummary& s) { return Percent(s.ContextReduction()); });
  add("tokens before -> after", [](const EvalSummary& s) {
    return fmt::format("{} -> {}", s.context_tokens_before, s.context_tokens_after);
  });
  add("sessions compacted",
      [](const EvalSummary& s) { return fmt::format("{}/{}", s.compacted, s.sessions); });
  add("compaction time",
      [](const EvalSummary& s) { return fmt::format("{:.0f} ms", s.compact_ms); });
  // What the summaries claim about each fact's status (docs/quality.md, "Status").
  auto ratio = [](int n, int of) {
    return of == 0 ? std::string("-") : fmt::format("{}/{}", n, of);
  };
  add("status right", [&](const EvalSummary& s) { return cell(s.status.right, s.status.facts); });
  add("superseded presented as current",
      [&](const EvalSummary& s) { return ratio(s.status.stale_presented, s.status.stale); });
  add("open errors shown resolved",
      [&](const EvalSummary& s) { return ratio(s.status.false_resolved, s.status.open_errors); });
  add("fixed errors shown as to fix",
      [&](const EvalSummary& s) { return ratio(s.status.fixed_as_open, s.status.fixed_errors); });
  add("goals/constraints under Done",
      [&](const EvalSummary& s) { return ratio(s.status.under_done, s.status.standing); });
  add("done steps shown as pending",
      [&](const EvalSummary& s) { return ratio(s.status.done_as_pending, s.status.done_steps); });
  add("rejected options shown decided",
      [&](const EvalSummary& s) { return ratio(s.status.rejected_as_decided, s.status.rejected); });
  add("noise items in summary",
      [&](const EvalSummary& s) { return cell(s.shape.noise, s.shape.items); });
  add("items repeated",
      [&](const EvalSummary& s) { return cell(s.shape.duplicated, s.shape.items); });
  add("paths kept",
      [&](const EvalSummary& s) { return cell(s.artifacts.paths_kept, s.artifacts.paths); });
  add("commands kept",
      [&](const EvalSummary& s) { return cell(s.artifacts.commands_kept, s.artifacts.commands); });
  add("numbers kept",
      [&](const EvalSummary& s) { return cell(s.artifacts.numbers_kept, s.artifacts.numbers); });
  add("continuation score (0-5)", [](const EvalSummary& s) {
    return s.continuation_sessions == 0 ? std::string("-")
                                        : fmt::format("{:.2f}", s.Continuation());
  });
  add("pending targets missed", [](const EvalSummary& s) {
    return s.strategy == "none" ? std::string("-") : std::to_string(CheckPendingTargets(s).size());
  });

  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      std::string v = rows[r][c];
      if (c == 0) {
        out += v + std::string(width[c] - v.size(), ' ');
      } else {
        out += "  " + std::string(width[c] - v.size(), ' ') + v;
      }
    }
    out += "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out += std::string(total - 2, '-') + "\n";
    }
  }
  return out;
}

namespace {
Json StatusJson(const StatusScore& s) {
  Json j;
  j["facts"] = s.facts;
  j["right"] = s.right;
  j["stale"] = s.stale;
  j["stalePresentedAsCurrent"] = s.stale_presented;
  j["openErrors"] = s.open_errors;
  j["falseResolved"] = s.false_resolved;
  j["fixedErrors"] = s.fixed_errors;
  j["fixedShownAsOpen"] = s.fixed_as_open;
  j["goalsAndConstraints"] = s.standing;
  j["underDone"] = s.under_done;
  j["doneSteps"] = s.done_steps;
  j["doneShownAsPending"] = s.done_as_pending;
  j["rejectedOptions"] = s.rejected;
  j["rejectedShownAsDecided"] = s.rejected_as_decided;
  return j;
}

Json ArtifactsJson(const ArtifactScore& a) {
  Json j;
  j["paths"] = a.paths;
  j["pathsKept"] = a.paths_kept;
  j["commands"] = a.commands;
  j["commandsKept"] = a.commands_kept;
  j["numbers"] = a.numbers;
  j["numbersKept"] = a.numbers_kept;
  return j;
}

Json KindJson(const KindScore& k) {
  Json j;
  j["total"] = k.total;
  j["retained"] = k.retained;
  j["mentioned"] = k.mentioned;
  j["share"] = Share(k.retained, k.total);
  j["summarizedTotal"] = k.summarized_total;
  j["summarizedRetained"] = k.summarized_retained;
  return j;
}
}  // namespace

std::vector<EvalSummary> SummarizeByStrategy(const std::vector<SessionEval>& sessions,
                                             std::string_view split) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<SessionEval>> by;
  for (const SessionEval& e : sessions) {
    if (!split.empty() && e.split != split) continue;
    if (!by.count(e.strategy)) order.push_back(e.strategy);
    by[e.strategy].push_back(e);
  }
  std::vector<EvalSummary> out;
  out.reserve(order.size());
  for (const std::string& s : order) out.push_back(Summarize(by[s]));
  return out;
}

namespace {

Json SummaryJson(const EvalSummary& s) {
  Json j;
  j["strategy"] = s.strategy;
  j["summarizer"] = s.summarizer.empty() ? Json(nullptr) : Json(s.summarizer);
  j["sessions"] = s.sessions;
  j["compacted"] = s.compacted;
  j["retention"] = s.Retention();
  j["retained"] = s.retained;
  j["total"] = s.total;
  j["summarizedRetention"] = Share(s.summarized_retained, s.summarized_total);
  Json kinds;
  for (int i = 0; i < kFactKindCount; ++i)
    kinds[std::string(FactKindName(static_cast<FactKind>(i)))] = KindJson(s.kinds[i]);
  j["kinds"] = kinds;
  j["staleTotal"] = s.stale_total;
  j["staleAsCurrent"] = s.stale_as_current;
  j["summarizedTokens"] = s.summarized_tokens;
  j["summaryTokens"] = s.summary_tokens;
  j["summaryReduction"] = s.SummaryReduction();
  j["contextTokensBefore"] = s.context_tokens_before;
  j["contextTokensAfter"] = s.context_tokens_after;
  j["contextReduction"] = s.ContextReduction();
  j["compactMs"] = s.compact_ms;
  j["totalMs"] = s.total_ms;
  j["targetMisses"] = CheckTargets(s);
  j["pendingTargetMisses"] = CheckPendingTargets(s);
  j["status"] = StatusJson(s.status);
  j["summaryShape"] = {
      {"items", s.shape.items}, {"noise", s.shape.noise}, {"duplicated", s.shape.duplicated}};
  j["artifacts"] = ArtifactsJson(s.artifacts);
  j["continuation"] = s.Continuation();
  return j;
}

}  // namespace

std::string EvalJson(const std::vector<EvalSummary>& summaries,
                     const std::vector<SessionEval>& sessions) {
  Json root;
  Json strategies = Json::array();
  for (const EvalSummary& s : summaries) strategies.push_back(SummaryJson(s));
  root["strategies"] = std::move(strategies);
  // Both splits side by side (docs/quality.md, "Splits"), when the facts name them.
  Json splits = Json::object();
  for (std::string_view split : {"tuning", "held-out"}) {
    Json list = Json::array();
    for (const EvalSummary& s : SummarizeByStrategy(sessions, split))
      list.push_back(SummaryJson(s));
    if (!list.empty()) splits[std::string(split)] = std::move(list);
  }
  if (!splits.empty()) root["splits"] = std::move(splits);
  Json list = Json::array();
  for (const SessionEval& e : sessions) {
    Json j;
    j["session"] = e.session;
    j["strategy"] = e.strategy;
    j["compacted"] = e.compacted;
    j["skippedReason"] = e.skipped_reason.empty() ? Json(nullptr) : Json(e.skipped_reason);
    j["summarizedTokens"] = e.summarized_tokens;
    j["summaryTokens"] = e.summary_tokens;
    j["contextTokensBefore"] = e.context_tokens_before;
    j["contextTokensAfter"] = e.context_tokens_after;
    j["compactMs"] = e.compact_ms;
    j["split"] = e.split.empty() ? Json(nullptr) : Json(e.split);
    j["noiseItems"] = e.shape.noise_examples;
    j["repeatedItems"] = e.shape.duplicated_examples;
    j["continuation"] = e.continuation;
    Json facts = Json::array();
    for (const FactOutcome& o : e.outcomes) {
      Json f;
      f["id"] = o.id;
      f["kind"] = std::string(FactKindName(o.kind));
      f["retained"] = o.retained;
      f["mentioned"] = o.mentioned;
      if (o.stale) f["staleAsCurrent"] = o.stale_as_current;
      if (!o.status.empty()) f["status"] = o.status;
      f["inSummarizedPart"] = o.in_summarized_part;
      f["inSummary"] = o.in_summary;
      f["statusRight"] = o.status_right;
      if (!o.status_error.empty()) f["statusError"] = o.status_error;
      facts.push_back(std::move(f));
    }
    j["facts"] = std::move(facts);
    if (!e.probes.empty()) {
      Json probes = Json::array();
      for (const ProbeScore& p : e.probes) {
        Json o;
        o["type"] = std::string(ProbeTypeName(p.type));
        o["question"] = p.question;
        o["score"] = p.error.empty() ? Json(p.score) : Json(nullptr);
        if (!p.error.empty()) o["error"] = p.error;
        probes.push_back(std::move(o));
      }
      j["probes"] = std::move(probes);
    }
    list.push_back(std::move(j));
  }
  root["sessions"] = std::move(list);
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string EvalHtml(const std::vector<EvalSummary>& summaries) {
  std::string out =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Compactor eval</title>\n"
      "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
      ".row{display:flex;align-items:center;margin:2px 0}.label{width:14em}"
      ".bar{background:#4a7fd6;height:1em}.track{background:#eee;width:24em;margin-right:.5em}"
      ".miss{color:#b00}table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right}"
      "</style></head><body>\n<h1>Compaction quality</h1>\n";
  out += "<pre>" + HtmlEscape(EvalTable(summaries)) + "</pre>\n";
  for (const EvalSummary& s : summaries) {
    out += "<h2>" + HtmlEscape(s.strategy) +
           (s.summarizer.empty() ? "" : " (" + HtmlEscape(s.summarizer) + ")") + "</h2>\n";
    auto bar = [&](std::string_view label, double share, std::string_view detail) {
      out += fmt::format(
          "<div class=\"row\"><span class=\"label\">{}</span><span class=\"track\"><div "
          "class=\"bar\" style=\"width:{:.1f}%\"></div></span>{}</div>\n",
          HtmlEscape(label), 100.0 * share, HtmlEscape(detail));
    };
    for (int i = 0; i < kFactKindCount; ++i) {
      const KindScore& k = s.kinds[i];
      if (k.total == 0) continue;
      bar(FactKindName(static_cast<FactKind>(i)), Share(k.retained, k.total),
          fmt::format("{} ({}/{})", Percent(Share(k.retained, k.total)), k.retained, k.total));
    }
    bar("all facts", s.Retention(), Percent(s.Retention()));
    if (s.summarized_tokens > 0)
      bar("summary reduction", std::max(0.0, s.SummaryReduction()), Percent(s.SummaryReduction()));
    bar("context reduction", std::max(0.0, s.ContextReduction()), Percent(s.ContextReduction()));
    out += fmt::format("<p>stale facts shown as current: {}/{}</p>\n", s.stale_as_current,
                       s.stale_total);
    for (const std::string& m : CheckTargets(s))
      out += "<p class=\"miss\">" + HtmlEscape(m) + "</p>\n";
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace compactor
