// The structure of a summary as a reader sees it (docs/quality.md, "Status"):
// which section each item sits in and what it claims. Written for any
// summarizer's layout, not one generator's headings: markdown headings, bold
// labels, "Label:" lines, checkboxes, inline "Next: ..." labels and free
// prose all count.
#include <string>
#include <vector>

#include "compactor/eval.h"

namespace compactor {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool IsWordByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         (static_cast<unsigned char>(c) & 0x80) != 0;
}

// `phrase` occurs in `hay` (both lowercase) at word boundaries where the
// phrase itself starts/ends with a word character.
bool HasPhrase(std::string_view hay, std::string_view phrase) {
  size_t pos = 0;
  while ((pos = hay.find(phrase, pos)) != std::string_view::npos) {
    const size_t end = pos + phrase.size();
    const bool left = pos == 0 || !IsWordByte(phrase.front()) || !IsWordByte(hay[pos - 1]);
    const bool right = end >= hay.size() || !IsWordByte(phrase.back()) || !IsWordByte(hay[end]);
    if (left && right) return true;
    ++pos;
  }
  return false;
}

template <size_t N>
bool HasAny(std::string_view hay, const std::string_view (&phrases)[N]) {
  for (std::string_view p : phrases)
    if (HasPhrase(hay, p)) return true;
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Heading words, most specific first: "Next Steps" is not "Steps done",
// "Early Progress" and "Progress" are context (their children say more).
struct HeadingRule {
  SummarySection section;
  std::vector<std::string_view> phrases;
};
const std::vector<HeadingRule> kHeadingRules = {
    {SummarySection::kNextSteps,
     {"next", "todo", "to do", "to-do", "remaining", "pending", "follow-up", "follow up",
      "what's left", "left to do", "plan", "open tasks"}},
    {SummarySection::kInProgress,
     {"in progress", "in-progress", "ongoing", "current work", "working on", "current task",
      "underway", "wip"}},
    {SummarySection::kBlocked,
     {"blocked", "blocker", "blockers", "open issue", "open issues", "unresolved", "known issue",
      "known issues", "still failing", "outstanding", "open problems", "open errors"}},
    {SummarySection::kDone,
     {"done", "completed", "complete", "finished", "accomplished", "changes made", "what was done",
      "fixed", "resolved", "achievements", "shipped", "landed"}},
    {SummarySection::kConstraints,
     {"constraint", "constraints", "preference", "preferences", "requirement", "requirements",
      "rules", "guidelines", "must", "conventions", "ground rules", "limits"}},
    {SummarySection::kDecisions,
     {"decision", "decisions", "decided", "choices", "design", "approach", "trade-offs",
      "tradeoffs"}},
    {SummarySection::kErrors,
     {"error", "errors", "failure", "failures", "problem", "problems", "issue", "issues", "bugs"}},
    {SummarySection::kGoal,
     {"goal", "goals", "objective", "task", "request", "original request", "purpose", "aim",
      "mission"}},
    {SummarySection::kFiles, {"file", "files", "modified-files", "read-files", "artifacts"}},
    {SummarySection::kContext,
     {"context", "notes", "state", "summary", "progress", "background", "history", "status",
      "details"}},
};

// Status cues inside an item. Negated forms are open cues, checked before the
// done cues they contain ("not fixed" is not "fixed").
constexpr std::string_view kOpenCues[] = {
    "not fixed",    "not yet fixed",  "not resolved", "unresolved",   "unfixed",
    "still fails",  "still failing",  "still broken", "still open",   "still red",
    "still errors", "remains open",   "still needs",  "not yet",      "(open)",
    "open:",        "todo",           "to fix",       "needs fixing", "needs a fix",
    "blocked",      "outstanding",    "pending",      "not passing",  "keeps failing",
    "fails again",  "to investigate", "not working",  "doesn't work", "does not work",
    "open)"};
constexpr std::string_view kDoneCues[] = {
    "fixed",    "resolved",    "done",        "completed", "now passes",     "passes now",
    "now pass", "works now",   "now works",   "succeeded", "green again",    "no longer fails",
    "solved",   "finished",    "implemented", "addressed", "all tests pass", "now green",
    "exit 0",   "exit code 0", "exited 0",    "-> ok"};
// Imperative starts: the item names something still to do.
constexpr std::string_view kOpenStarts[] = {"fix ",     "investigate ", "debug ",
                                            "resolve ", "look into ",   "re-run ",
                                            "rerun ",   "retry ",       "find out "};

// Terminal noise a reader cannot use (docs/quality.md, "Noise").
bool IsNoiseLine(std::string_view raw, SummarySection section) {
  for (size_t i = 0; i + 2 < raw.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(raw[i]);
    const auto b1 = static_cast<unsigned char>(raw[i + 1]);
    if (b0 == 0xE2 && b1 >= 0xA0 && b1 <= 0xA3) return true;    // braille spinners U+2800-28FF
    if (b0 == 0xE2 && (b1 == 0x94 || b1 == 0x95)) return true;  // box drawing U+2500-257F
    if (b0 == 0xE2 && b1 == 0x96 && static_cast<unsigned char>(raw[i + 2]) <= 0x9F)
      return true;  // block elements U+2580-259F (progress bars)
  }
  if (raw.find('\x1b') != std::string_view::npos) return true;  // ANSI escapes
  const std::string low = Lower(raw);
  // Progress bars: "[=====>   ]", "#######   45%" (a banner such as pytest's
  // "=== FAILURES ===" quoted in an error line is not one).
  for (std::string_view bar : {"=====>", "[======", "######", "=====]"})
    if (low.find(bar) != std::string::npos) return true;
  // Shell dumps of edits: "Ran `cd x && sed -i ...`" tells less than the
  // modified-files list and crowds out what matters.
  std::string body = low;
  size_t a = body.find_first_not_of(" -*+>0123456789.)[]x");
  body = a == std::string::npos ? "" : body.substr(a);
  std::string cmd;
  for (char c : body)
    if (c != '`' && c != '"' && c != '\'') cmd.push_back(c);
  if (cmd.starts_with("ran ") &&
      (cmd.starts_with("ran cd ") || HasPhrase(cmd, "sed -i") || HasPhrase(cmd, "perl -pi")))
    return true;
  // Pasted API error bodies filed as rules.
  if (section == SummarySection::kConstraints &&
      (low.find("{\"") != std::string::npos || HasPhrase(low, "api error") ||
       HasPhrase(low, "status code")))
    return true;
  return false;
}

// A line that is a heading: "## X", "**X**", "**X:**", "X:" (short), "<x-y>".
bool HeadingOf(std::string_view line, std::string* heading) {
  std::string_view t = Trim(line);
  if (t.empty()) return false;
  if (t.front() == '#') {
    while (!t.empty() && t.front() == '#') t.remove_prefix(1);
    *heading = std::string(Trim(t));
    return true;
  }
  if (t.front() == '<' && t.back() == '>' && t.find(' ') == std::string_view::npos) {
    *heading = std::string(t.substr(1, t.size() - 2));
    return true;
  }
  std::string_view u = t;
  if (u.starts_with("- ") || u.starts_with("* ")) u.remove_prefix(2);
  if (u.starts_with("**") && u.size() > 4) {
    std::string_view inner = u.substr(2);
    size_t close = inner.find("**");
    if (close == std::string_view::npos) return false;
    std::string_view after = Trim(inner.substr(close + 2));
    if (!after.empty() && after != ":") return false;
    inner = Trim(inner.substr(0, close));
    if (!inner.empty() && inner.back() == ':') inner.remove_suffix(1);
    *heading = std::string(inner);
    return true;
  }
  if (u.back() == ':' && u.size() <= 60) {
    int words = 1;
    for (char c : u) words += c == ' ';
    if (words <= 6 && u.find('`') == std::string_view::npos) {
      *heading = std::string(Trim(u.substr(0, u.size() - 1)));
      return true;
    }
  }
  return false;
}

// "Next: run X", "**Decision**: Y", "Still failing: Z": a short label that
// names a section for this line only.
SummarySection InlineLabel(std::string_view line) {
  std::string_view t = Trim(line);
  if (t.starts_with("- ") || t.starts_with("* ")) t.remove_prefix(2);
  std::string label;
  if (t.starts_with("**")) {
    size_t close = t.find("**", 2);
    if (close == std::string_view::npos) return SummarySection::kOther;
    label = std::string(t.substr(2, close - 2));
  } else {
    size_t colon = t.find(':');
    if (colon > 30) return SummarySection::kOther;  // npos included
    label = std::string(t.substr(0, colon));
  }
  int words = 1;
  for (char c : label) words += c == ' ';
  if (words > 3) return SummarySection::kOther;
  return ClassifyHeading(label);
}

// A label names the section of its line, except that a weak label (errors,
// files, context) does not take an item out of a status section: "- Error:
// X" under Blocked is still blocked.
SummarySection WithLabel(SummarySection outer, SummarySection label) {
  if (label == SummarySection::kOther) return outer;
  if (outer == SummarySection::kOther || outer == SummarySection::kContext) return label;
  const bool weak = label == SummarySection::kErrors || label == SummarySection::kFiles ||
                    label == SummarySection::kContext;
  return weak ? outer : label;
}

// "instead" that is not "instead of": the clause adopts what it names in
// place of something said before it.
bool HasBareInstead(std::string_view lower) {
  constexpr std::string_view kInstead = "instead";
  for (size_t p = lower.find(kInstead); p != std::string_view::npos;
       p = lower.find(kInstead, p + 1)) {
    if (!lower.substr(p + kInstead.size()).starts_with(" of")) return true;
  }
  return false;
}

// A prose line is split into sentences (and clauses at ';'): a claim belongs
// to its sentence.
std::vector<std::string_view> Sentences(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i + 2 < line.size(); ++i) {
    const char c = line[i];
    if ((c == '.' || c == '!' || c == '?' || c == ';') && line[i + 1] == ' ' &&
        ((line[i + 2] >= 'A' && line[i + 2] <= 'Z') || c == ';')) {
      out.push_back(line.substr(start, i + 1 - start));
      start = i + 2;
    }
  }
  out.push_back(line.substr(start));
  return out;
}

bool IsListItem(std::string_view t) {
  if (t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") || t.starts_with("["))
    return true;
  size_t i = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  return i > 0 && i + 1 < t.size() && (t[i] == '.' || t[i] == ')') && t[i + 1] == ' ';
}

SummaryItem MakeItem(std::string_view text, SummarySection section, bool noise) {
  SummaryItem item;
  item.section = section;
  item.text = std::string(Trim(text));
  item.noise = noise;
  const std::string low = Lower(item.text);
  item.checked = low.find("[x]") != std::string::npos ||
                 low.find("\xe2\x9c\x93") != std::string::npos ||
                 low.find("\xe2\x9c\x94") != std::string::npos ||
                 low.find("\xe2\x9c\x85") != std::string::npos ||
                 low.find("\xe2\x98\x91") != std::string::npos;
  item.unchecked =
      low.find("[ ]") != std::string::npos || low.find("\xe2\x98\x90") != std::string::npos;
  item.open_cue = HasAny(low, kOpenCues);
  std::string body = low;
  size_t a = body.find_first_not_of(" -*+>0123456789.)[]x\t");
  body = a == std::string::npos ? "" : body.substr(a);
  for (std::string_view s : kOpenStarts) item.open_cue = item.open_cue || body.starts_with(s);
  item.done_cue = HasAny(low, kDoneCues);
  return item;
}

}  // namespace

std::string_view SummarySectionName(SummarySection section) {
  switch (section) {
    case SummarySection::kGoal:
      return "goal";
    case SummarySection::kConstraints:
      return "constraints";
    case SummarySection::kDone:
      return "done";
    case SummarySection::kInProgress:
      return "in-progress";
    case SummarySection::kBlocked:
      return "blocked";
    case SummarySection::kNextSteps:
      return "next-steps";
    case SummarySection::kDecisions:
      return "decisions";
    case SummarySection::kErrors:
      return "errors";
    case SummarySection::kFiles:
      return "files";
    case SummarySection::kContext:
      return "context";
    case SummarySection::kOther:
      break;
  }
  return "other";
}

SummarySection ClassifyHeading(std::string_view heading) {
  std::string low = Lower(heading);
  for (char& c : low)
    if (c == '&' || c == '/' || c == '(' || c == ')' || c == ',' || c == '*' || c == '_') c = ' ';
  for (const HeadingRule& rule : kHeadingRules)
    for (std::string_view p : rule.phrases)
      if (!p.empty() && HasPhrase(low, p)) return rule.section;
  return SummarySection::kOther;
}

std::vector<SummaryItem> ParseSummaryItems(std::string_view summary) {
  std::vector<SummaryItem> out;
  SummarySection section = SummarySection::kOther;
  bool fenced = false;
  size_t pos = 0;
  while (pos <= summary.size()) {
    size_t nl = summary.find('\n', pos);
    std::string_view line =
        summary.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? summary.size() + 1 : nl + 1;
    std::string_view t = Trim(line);
    if (t.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (t.empty()) continue;
    if (!fenced && (t == "---" || t == "***" || t == "___")) {
      section = SummarySection::kOther;
      continue;
    }
    std::string heading;
    if (!fenced && HeadingOf(t, &heading)) {
      // A closing tag ends its section.
      section = heading.starts_with("/") ? SummarySection::kOther : ClassifyHeading(heading);
      continue;
    }
    const SummarySection here = fenced ? section : WithLabel(section, InlineLabel(t));
    const bool noise = IsNoiseLine(t, here);
    if (fenced || IsListItem(t) || noise) {
      out.push_back(MakeItem(t, here, noise));
      continue;
    }
    const std::vector<std::string_view> sentences = Sentences(t);
    for (size_t i = 0; i < sentences.size(); ++i) {
      std::string_view sentence = sentences[i];
      if (Trim(sentence).empty()) continue;
      out.push_back(MakeItem(sentence, WithLabel(here, InlineLabel(sentence)), false));
      out.back().replaced_by_next = sentence.ends_with(";") && i + 1 < sentences.size() &&
                                    HasBareInstead(Lower(sentences[i + 1]));
    }
  }
  return out;
}

bool ItemClaimsOpen(const SummaryItem& item) {
  if (item.unchecked || item.open_cue) return true;
  if (item.checked || item.done_cue) return false;
  return item.section == SummarySection::kInProgress || item.section == SummarySection::kBlocked ||
         item.section == SummarySection::kNextSteps;
}

bool ItemClaimsDone(const SummaryItem& item) {
  if (ItemClaimsOpen(item)) return false;
  return item.checked || item.done_cue || item.section == SummarySection::kDone;
}

}  // namespace compactor
