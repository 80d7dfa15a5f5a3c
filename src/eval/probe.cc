// Probe questions and the judge prompt (docs/quality.md, "LLM judge").
#include <charconv>
#include <map>

#include "compactor/eval.h"

namespace compactor {
namespace {

std::string Bullets(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += "- " + i + "\n";
  return out;
}

}  // namespace

std::string_view ProbeTypeName(ProbeType type) {
  switch (type) {
    case ProbeType::kRecall:
      return "recall";
    case ProbeType::kArtifact:
      return "artifact";
    case ProbeType::kContinuation:
      return "continuation";
    case ProbeType::kDecision:
      return "decision";
  }
  return "recall";
}

std::vector<ProbeQuestion> MakeProbeQuestions(const FactFile& file) {
  std::map<std::string, const Fact*> by_id;
  for (const Fact& f : file.facts) by_id.emplace(f.id, &f);
  auto collect = [&](std::initializer_list<FactKind> kinds, ProbeQuestion& q,
                     std::vector<std::string>& lines, bool (*only)(const Fact&)) {
    for (const Fact& f : file.facts) {
      bool wanted = false;
      for (FactKind k : kinds) wanted = wanted || f.kind == k;
      if (!wanted || (only && !only(f))) continue;
      q.fact_ids.push_back(f.id);
      std::string line = f.text;
      if (!f.superseded_by.empty()) {
        auto it = by_id.find(f.superseded_by);
        line +=
            " (superseded by: " + (it != by_id.end() ? it->second->text : f.superseded_by) + ")";
      }
      if (f.kind == FactKind::kError && f.fixed) line += *f.fixed ? " (fixed)" : " (not fixed)";
      if (f.status == "done") line += " (already done)";
      if (f.status == "rejected") line += " (considered and rejected: not a decision)";
      if (f.kind == FactKind::kCommand && f.exit_code)
        line += " (last exit code " + std::to_string(*f.exit_code) + ")";
      lines.push_back(std::move(line));
    }
  };
  std::vector<ProbeQuestion> out;
  auto add = [&](ProbeType type, std::string question, std::initializer_list<FactKind> kinds,
                 bool (*only)(const Fact&) = nullptr) {
    ProbeQuestion q;
    q.type = type;
    q.question = std::move(question);
    std::vector<std::string> lines;
    collect(kinds, q, lines, only);
    if (lines.empty()) return;
    q.expected = Bullets(lines);
    out.push_back(std::move(q));
  };
  add(ProbeType::kRecall,
      "What is the user's goal, and which constraints or preferences did they state that still "
      "apply?",
      {FactKind::kGoal, FactKind::kConstraint});
  add(ProbeType::kRecall, "Which errors occurred during the session, and was each one fixed?",
      {FactKind::kError});
  add(ProbeType::kArtifact,
      "Which files were modified, which were only read, and which commands were run with what "
      "result?",
      {FactKind::kFileModified, FactKind::kFileRead, FactKind::kCommand});
  add(ProbeType::kContinuation, "What should be done next?", {FactKind::kNextStep});
  add(ProbeType::kDecision, "What was decided, and why? Name decisions that were later revised.",
      {FactKind::kDecision});
  // Status questions (docs/quality.md, "Status"): what is true now, not only
  // what was mentioned.
  add(ProbeType::kRecall,
      "Which errors are still open right now, and which were resolved? For each resolved one, "
      "what showed that it was fixed (the same command or test passing again)?",
      {FactKind::kError}, [](const Fact& f) { return f.fixed.has_value(); });
  add(ProbeType::kRecall,
      "Which values, limits and requirements are current now? For each that was revised, which "
      "value replaced it?",
      {FactKind::kConstraint, FactKind::kDecision, FactKind::kValue},
      [](const Fact& f) { return f.status.empty(); });
  add(ProbeType::kContinuation,
      "Which of the steps asked for along the way are already done, and which are still to do?",
      {FactKind::kNextStep});
  add(ProbeType::kDecision,
      "Which options were considered and rejected, and why were they not chosen?",
      {FactKind::kDecision}, [](const Fact& f) { return f.status == "rejected"; });
  add(ProbeType::kArtifact,
      "Which measured numbers, configuration values or exact error texts seen in command outputs "
      "does the remaining work depend on?",
      {FactKind::kValue});
  return out;
}

std::string RenderedText(const std::vector<RenderedBlock>& blocks) {
  std::string out;
  for (const RenderedBlock& b : blocks) {
    if (!out.empty()) out += "\n\n";
    out += b.text;
  }
  return out;
}

JudgePrompt BuildJudgePrompt(std::string_view context_text, const ProbeQuestion& q) {
  JudgePrompt p;
  p.system_prompt =
      "You grade how well an AI coding agent could continue its work from the context it has "
      "left after its history was compacted. Answer the question using only the context, then "
      "compare your answer with the reference answer. Reply with one first line \"SCORE: n\" "
      "where n is 0 (nothing of the reference can be recovered) to 5 (everything in the "
      "reference can be recovered, nothing contradicts it, and revised items are not presented "
      "as current), then a short justification.";
  p.user_text = "<context>\n";
  p.user_text += context_text;
  p.user_text += "\n</context>\n\n<question type=\"";
  p.user_text += ProbeTypeName(q.type);
  p.user_text += "\">\n" + q.question + "\n</question>\n\n<reference-answer>\n" + q.expected +
                 "</reference-answer>\n";
  return p;
}

Result<double> ParseJudgeScore(std::string_view reply) {
  size_t pos = reply.find("SCORE:");
  if (pos == std::string_view::npos)
    return Status::InvalidArgument("judge reply has no SCORE line");
  pos += 6;
  while (pos < reply.size() && reply[pos] == ' ') ++pos;
  size_t end = pos;
  while (end < reply.size() && ((reply[end] >= '0' && reply[end] <= '9') || reply[end] == '.'))
    ++end;
  double v = 0;
  auto [ptr, ec] = std::from_chars(reply.data() + pos, reply.data() + end, v);
  if (ec != std::errc() || ptr == reply.data() + pos)
    return Status::InvalidArgument("judge reply has no number after SCORE:");
  if (v < 0 || v > 5) return Status::InvalidArgument("judge score out of range 0-5");
  return v;
}

}  // namespace compactor
