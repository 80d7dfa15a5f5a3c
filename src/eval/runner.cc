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

  ContextOptions context_options;
  context_options.expander = StrategyExpander();
  COMPACTOR_ASSIGN_OR_RETURN(SessionContext before, BuildSessionContext(session, context_options));
  ev.context_tokens_before = HeuristicSum(before.messages);

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
  }
  return s;
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

std::string EvalJson(const std::vector<EvalSummary>& summaries,
                     const std::vector<SessionEval>& sessions) {
  Json root;
  Json strategies = Json::array();
  for (const EvalSummary& s : summaries) {
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
    strategies.push_back(std::move(j));
  }
  root["strategies"] = std::move(strategies);
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
    Json facts = Json::array();
    for (const FactOutcome& o : e.outcomes) {
      Json f;
      f["id"] = o.id;
      f["kind"] = std::string(FactKindName(o.kind));
      f["retained"] = o.retained;
      f["mentioned"] = o.mentioned;
      if (o.stale) f["staleAsCurrent"] = o.stale_as_current;
      f["inSummarizedPart"] = o.in_summarized_part;
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
