// Measures beyond single facts (docs/quality.md): status claims in
// aggregate, the summary's noise and duplicated items, paths / commands /
// numbers of the replaced part that survive, and the continuation score.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>

#include "compactor/eval.h"
#include "eval/rules.h"

namespace compactor {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// An item's words without its list marker, checkbox, markdown and status
// words, so that "- [x] Added X" and "**Added X**" compare equal.
std::string ItemKey(const std::string& text) {
  std::string norm = NormalizeForMatch(text);
  size_t a = norm.find_first_not_of(" -+>0123456789.)");
  norm = a == std::string::npos ? "" : norm.substr(a);
  for (std::string_view box : {"[x] ", "[ ] "})
    if (norm.starts_with(box)) norm = norm.substr(box.size());
  // A short lead-in label ("continue with: X", "goal: X") is not the item.
  size_t colon = norm.find(": ");
  if (colon <= 24 &&  // npos is larger
      std::count(norm.begin(), norm.begin() + static_cast<std::ptrdiff_t>(colon), ' ') <= 2)
    norm = norm.substr(colon + 2);
  while (!norm.empty() && (norm.back() == '.' || norm.back() == ' ')) norm.pop_back();
  return norm;
}

// Whether two item keys say the same thing: equal, or one a cut-off copy of
// the other ("X..." quoting the start of X; at least 40 characters, so that
// two short items that begin alike are not one).
bool SameItem(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string& shorter = a.size() < b.size() ? a : b;
  const std::string& longer = a.size() < b.size() ? b : a;
  return shorter.size() >= 40 && longer.starts_with(shorter);
}

// Path-like tokens: a slash and a file extension in the last segment, no URL.
void CollectPaths(std::string_view text, std::set<std::string>* out) {
  auto stop = [](char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '`' || c == '"' || c == '\'' || c == '(' ||
           c == ')' || c == ',' || c == ';' || c == '[' || c == ']' || c == '<' || c == '>' ||
           c == '{' || c == '}' || c == '=';
  };
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && stop(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !stop(text[j])) ++j;
    std::string t(text.substr(i, j - i));
    i = j;
    // "src/a.ts:41:7" and "src/a.ts." are the path src/a.ts.
    while (!t.empty() && (IsDigit(t.back()) || t.back() == ':' || t.back() == '.')) {
      size_t colon = t.rfind(':');
      if (t.back() == '.' || t.back() == ':') {
        t.pop_back();
      } else if (colon != std::string::npos &&
                 t.find_first_not_of("0123456789:", colon) == std::string::npos) {
        t.resize(colon);
      } else {
        break;
      }
    }
    if (t.size() < 4 || t.size() > 200 || t.find("://") != std::string::npos) continue;
    size_t slash = t.rfind('/');
    if (slash == std::string::npos || slash + 1 >= t.size()) continue;
    size_t dot = t.find('.', slash + 1);
    if (dot == std::string::npos || dot == slash + 1 || dot + 1 >= t.size()) continue;
    bool ext_ok = true;
    for (size_t k = dot + 1; k < t.size(); ++k) {
      const char c = t[k];
      ext_ok = ext_ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) ||
                          c == '.' || c == '_' || c == '-');
    }
    if (ext_ok) out->insert(t);
  }
}

// Measured numbers: a decimal, a number with a unit or percent sign, a number
// followed by a count word, or one of three or more digits.
void CollectNumbers(std::string_view text, std::set<std::string>* out) {
  static const std::set<std::string, std::less<>> kUnits = {
      "ms", "s", "sec", "m", "h", "%", "kb", "mb", "gb", "k", "x", "rps", "req/s", "us", "ns"};
  static const std::set<std::string, std::less<>> kCountWords = {
      "passed",   "failed", "tests",   "errors",  "warnings",   "rows",
      "requests", "files",  "skipped", "ms",      "seconds",    "bytes",
      "records",  "items",  "retries", "workers", "connections"};
  size_t i = 0;
  while (i < text.size()) {
    if (!IsDigit(text[i]) ||
        (i > 0 && (IsDigit(text[i - 1]) || text[i - 1] == '.' ||
                   std::isalpha(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_' ||
                   text[i - 1] == '/' || text[i - 1] == '-' || text[i - 1] == ':'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && IsDigit(text[j])) ++j;
    bool decimal = false;
    if (j + 1 < text.size() && text[j] == '.' && IsDigit(text[j + 1])) {
      decimal = true;
      ++j;
      while (j < text.size() && IsDigit(text[j])) ++j;
    }
    if (j + 1 < text.size() && text[j] == '.' && IsDigit(text[j + 1])) {
      // A version or an address ("1.2.3", "10.0.0.1"), not a measurement.
      while (j < text.size() && (IsDigit(text[j]) || text[j] == '.')) ++j;
      i = j;
      continue;
    }
    std::string number(text.substr(i, j - i));
    size_t u = j;
    while (u < text.size() &&
           (std::isalpha(static_cast<unsigned char>(text[u])) || text[u] == '%' || text[u] == '/'))
      ++u;
    std::string unit(text.substr(j, u - j));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string next_word;
    if (unit.empty() && j < text.size() && text[j] == ' ') {
      size_t w = j + 1;
      while (w < text.size() && std::isalpha(static_cast<unsigned char>(text[w]))) ++w;
      next_word = std::string(text.substr(j + 1, w - j - 1));
      for (char& c : next_word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    const bool unit_ok = !unit.empty() && kUnits.count(unit);
    const bool word_ok = kCountWords.count(next_word) > 0;
    // An identifier ("abc123x"), a hex id or a word glued to digits is no number.
    const bool glued = !unit.empty() && !unit_ok;
    if (!glued && (decimal || unit_ok || word_ok || number.size() >= 3)) out->insert(number);
    i = u;
  }
}

bool NumberOccurs(std::string_view hay, std::string_view number) {
  size_t pos = 0;
  while ((pos = hay.find(number, pos)) != std::string_view::npos) {
    const size_t end = pos + number.size();
    const bool left = pos == 0 || (!IsDigit(hay[pos - 1]) && hay[pos - 1] != '.');
    const bool right =
        end >= hay.size() ||
        (!IsDigit(hay[end]) && !(hay[end] == '.' && end + 1 < hay.size() && IsDigit(hay[end + 1])));
    if (left && right) return true;
    ++pos;
  }
  return false;
}

// The output part of an exchange ("[tool result]" / "[tool error]" and after),
// for bash calls and ! executions only: where measured numbers come from.
std::string_view CommandOutput(const RenderedBlock& b) {
  std::string_view t = b.text;
  if (t.starts_with("[bash] ")) {
    size_t nl = t.find('\n');
    return nl == std::string_view::npos ? std::string_view() : t.substr(nl + 1);
  }
  if (!t.starts_with("[tool call] bash\n")) return {};
  size_t r = t.find("\n[tool result]\n");
  if (r == std::string_view::npos) r = t.find("\n[tool error]\n");
  return r == std::string_view::npos ? std::string_view() : t.substr(r + 1);
}

// The command of a bash exchange or ! execution (its first line).
std::string CommandOf(const RenderedBlock& b) {
  std::string_view t = b.text;
  std::string_view cmd;
  if (t.starts_with("[bash] ")) {
    cmd = t.substr(7);
  } else if (t.starts_with("[tool call] bash\n")) {
    size_t c = t.find("\ncommand: ");
    if (c == std::string_view::npos) return "";
    cmd = t.substr(c + 10);
  } else {
    return "";
  }
  cmd = cmd.substr(0, cmd.find('\n'));
  return std::string(cmd);
}

double Share(int part, int total) { return total == 0 ? 1.0 : static_cast<double>(part) / total; }

}  // namespace

void StatusScore::Add(const StatusScore& o) {
  open_errors += o.open_errors;
  false_resolved += o.false_resolved;
  fixed_errors += o.fixed_errors;
  fixed_as_open += o.fixed_as_open;
  stale += o.stale;
  stale_presented += o.stale_presented;
  standing += o.standing;
  under_done += o.under_done;
  done_steps += o.done_steps;
  done_as_pending += o.done_as_pending;
  rejected += o.rejected;
  rejected_as_decided += o.rejected_as_decided;
  facts += o.facts;
  right += o.right;
}

constexpr size_t kMaxExamples = 8;

void SummaryShape::Add(const SummaryShape& o) {
  items += o.items;
  noise += o.noise;
  duplicated += o.duplicated;
  for (const std::string& e : o.noise_examples)
    if (noise_examples.size() < kMaxExamples) noise_examples.push_back(e);
  for (const std::string& e : o.duplicated_examples)
    if (duplicated_examples.size() < kMaxExamples) duplicated_examples.push_back(e);
}

void ArtifactScore::Add(const ArtifactScore& o) {
  paths += o.paths;
  paths_kept += o.paths_kept;
  commands += o.commands;
  commands_kept += o.commands_kept;
  numbers += o.numbers;
  numbers_kept += o.numbers_kept;
}

StatusScore ScoreStatus(const std::vector<Fact>& facts, const std::vector<FactOutcome>& outcomes) {
  StatusScore s;
  for (size_t i = 0; i < facts.size() && i < outcomes.size(); ++i) {
    const Fact& f = facts[i];
    const FactOutcome& o = outcomes[i];
    const std::string& e = o.status_error;
    ++s.facts;
    if (o.status_right) ++s.right;
    if (!f.superseded_by.empty()) {
      ++s.stale;
      s.stale_presented += e == "stale-as-current";
    } else if (f.status == "done") {
      ++s.done_steps;
      s.done_as_pending += e == "done-as-pending";
    } else if (f.status == "rejected") {
      ++s.rejected;
      s.rejected_as_decided += e == "rejected-as-decided";
    } else if (f.kind == FactKind::kError && f.fixed) {
      if (*f.fixed) {
        ++s.fixed_errors;
        s.fixed_as_open += e == "fixed-as-open";
      } else {
        ++s.open_errors;
        s.false_resolved += e == "false-resolved";
      }
    } else if (f.kind == FactKind::kGoal || f.kind == FactKind::kConstraint) {
      ++s.standing;
      s.under_done += e == "under-done";
    }
  }
  return s;
}

SummaryShape MeasureSummaryShape(const std::vector<RenderedBlock>& blocks) {
  SummaryShape shape;
  for (const RenderedBlock& b : blocks) {
    if (!b.summary || b.role == Role::kBranchSummary) continue;  // as for status claims
    // The keys of the items so far: an item said again, in any section or
    // the same one, in full or cut off, is a repeat.
    std::vector<std::string> seen;
    for (const SummaryItem& item : ParseSummaryItems(b.text)) {
      ++shape.items;
      if (item.noise) {
        ++shape.noise;
        if (shape.noise_examples.size() < kMaxExamples)
          shape.noise_examples.push_back(item.text.substr(0, 160));
        continue;
      }
      // The file-list tags pi appends (<read-files>, <modified-files>) are
      // data, not prose items: a path there and in a sentence is no repeat.
      if (item.section == SummarySection::kFiles) continue;
      std::string key = ItemKey(item.text);
      if (key.ends_with("...")) key.resize(key.size() - 3);
      if (key.size() < 16) continue;  // "done", "(none)", a bare path: not an item to repeat
      if (std::any_of(seen.begin(), seen.end(),
                      [&](const std::string& k) { return SameItem(k, key); })) {
        ++shape.duplicated;
        if (shape.duplicated_examples.size() < kMaxExamples)
          shape.duplicated_examples.push_back(item.text.substr(0, 160));
      }
      seen.push_back(std::move(key));
    }
  }
  return shape;
}

ArtifactScore MeasureArtifacts(const std::vector<RenderedBlock>& replaced,
                               const std::vector<RenderedBlock>& after) {
  std::set<std::string> paths, numbers, commands;
  for (const RenderedBlock& b : replaced) {
    CollectPaths(b.text, &paths);
    std::string cmd = CommandOf(b);
    if (!cmd.empty() && !internal::IsExplorationCommand(cmd)) commands.insert(cmd);
    std::string_view output = CommandOutput(b);
    if (!output.empty()) CollectNumbers(output, &numbers);
  }
  std::string raw, norm;
  for (const RenderedBlock& b : after) {
    raw += b.text;
    raw += "\n\x1e\n";
  }
  norm = NormalizeForMatch(raw);
  ArtifactScore a;
  a.paths = static_cast<int>(paths.size());
  for (const std::string& p : paths) a.paths_kept += raw.find(p) != std::string::npos;
  a.commands = static_cast<int>(commands.size());
  for (const std::string& c : commands)
    a.commands_kept += norm.find(NormalizeForMatch(c)) != std::string::npos;
  a.numbers = static_cast<int>(numbers.size());
  for (const std::string& n : numbers) a.numbers_kept += NumberOccurs(raw, n);
  return a;
}

double ContinuationScore(const std::vector<Fact>& facts, const std::vector<FactOutcome>& outcomes) {
  // Each component: (points, possible).
  struct Part {
    int got = 0, of = 0;
    void Count(bool ok) {
      ++of;
      got += ok;
    }
  };
  Part goal, constraints, open_work, files, decisions;
  for (size_t i = 0; i < facts.size() && i < outcomes.size(); ++i) {
    const Fact& f = facts[i];
    const FactOutcome& o = outcomes[i];
    const bool ok = o.status_right;
    if (!f.superseded_by.empty()) {
      (f.kind == FactKind::kConstraint ? constraints : decisions).Count(ok);
      continue;
    }
    switch (f.kind) {
      case FactKind::kGoal:
        goal.Count(ok);
        break;
      case FactKind::kConstraint:
        constraints.Count(ok);
        break;
      case FactKind::kFileModified:
        files.Count(ok);
        break;
      case FactKind::kNextStep:
        open_work.Count(ok);
        break;
      case FactKind::kError:
        if (f.fixed && !*f.fixed) open_work.Count(ok);
        break;
      case FactKind::kDecision:
      case FactKind::kValue:
        decisions.Count(ok);
        break;
      default:
        break;
    }
  }
  double sum = 0;
  int n = 0;
  for (const Part* p : {&goal, &constraints, &open_work, &files, &decisions}) {
    if (p->of == 0) continue;
    sum += Share(p->got, p->of);
    ++n;
  }
  return n == 0 ? 0.0 : 5.0 * sum / n;
}

}  // namespace compactor
