// Fact extraction for the offline summarizer (docs/summarizers.md lists the
// rules). Everything here is a deterministic function of the messages: no
// clocks, no hash-order iteration.
#include "summarize/extract.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <unordered_map>

#include "summarize/text_util.h"

namespace compactor::summarize {
namespace {

// Defined further down, next to the other text helpers.
std::vector<std::string> SplitSentences(std::string_view text);
std::string NormalizeCommand(std::string_view command);
// Mostly words: not a pasted log, JSON or code line.
bool LooksLikeProse(std::string_view text);

constexpr size_t kSentenceMax = 320;
constexpr size_t kRequestMax = 240;
constexpr size_t kGoalMax = 700;
constexpr size_t kCommandMax = 160;
constexpr size_t kErrorLineMax = 220;
constexpr size_t kScanWindow = 64 * 1024;  // bytes of a tool output scanned at each end

// ASCII lower-casing without the locale machinery of std::tolower (hot path).
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  }
  return out;
}

inline bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (static_cast<unsigned char>(c) >= 0x80);
}

// `phrase` occurs in `lower` with word boundaries at both ends (a boundary is
// implied where the phrase itself starts or ends with a non-word character).
size_t FindPhrase(std::string_view lower, std::string_view phrase, size_t from = 0) {
  while (true) {
    size_t p = lower.find(phrase, from);
    if (p == std::string_view::npos) return p;
    bool left = p == 0 || !IsWordChar(lower[p - 1]) || !IsWordChar(phrase.front());
    size_t e = p + phrase.size();
    bool right = e >= lower.size() || !IsWordChar(lower[e]) || !IsWordChar(phrase.back());
    if (left && right) return p;
    from = p + 1;
  }
}

template <size_t N>
bool StartsWithAny(std::string_view lower, const std::array<std::string_view, N>& prefixes) {
  for (std::string_view p : prefixes) {
    if (lower.substr(0, p.size()) == p) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Clips UTF-8 text to at most `max_bytes` without splitting a character.
std::string Clip(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes > 3 ? max_bytes - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  std::string out(Trim(s.substr(0, cut)));
  out += "...";
  return out;
}

constexpr std::array<std::string_view, 36> kConstraintCues = {
    "must",        "mustn't",    "must not",    "never",      "always",      "don't",
    "do not",      "dont",       "avoid",       "prefer",     "preferably",  "instead of",
    "rather than", "make sure",  "ensure",      "required",   "requirement", "should",
    "shouldn't",   "should not", "not allowed", "no longer",  "stick to",    "from now on",
    "remember to", "be sure to", "only use",    "use only",   "keep using",  "stop using",
    "can't use",   "cannot use", "constraint",  "important:", "do not use",  "never use"};

constexpr std::array<std::string_view, 16> kImperativeStarts = {
    "use ",        "please use ",   "keep ",        "please keep ", "let's use ", "lets use ",
    "let's keep ", "switch to ",    "no ",          "target ",      "stay ",      "only ",
    "please don",  "please do not", "please never", "please always"};

constexpr std::array<std::string_view, 22> kRevisionCues = {
    "actually",    "instead",     "change of plan", "changed my mind", "scratch that",
    "forget",      "no longer",   "anymore",        "from now on",     "switch to",
    "switch from", "rather than", "replace",        "update:",         "correction",
    "revise",      "revised",     "never mind",     "nevermind",       "on second thought",
    "not anymore", "we'll now"};

constexpr std::array<std::string_view, 14> kReplacedMarkers = {
    "instead of ",    "rather than ",  "switch from ", "switching from ", "stop using ",
    "no longer use ", "not use ",      "don't use ",   "do not use ",     "replace ",
    "drop ",          "forget about ", "no more ",     "move away from "};

constexpr std::array<std::string_view, 17> kStrongDecisionCues = {
    "decided",         "decision", "i'll go with",  "we'll go with", "going with",  "go with",
    "chose",           "chosen",   "opted",         "settled on",    "in favor of", "in favour of",
    "the approach is", "settled:", "design choice", "plan:",         "the plan is"};

constexpr std::array<std::string_view, 12> kWeakDecisionCues = {
    "i'll use",  "i will use",   "we'll use",  "we will use", "let's use", "lets use",
    "switch to", "switching to", "instead of", "rather than", "prefer",    "use "};

constexpr std::array<std::string_view, 10> kReasonConnectors = {
    " because ", " since ",   " so that ",  " so we ",      " due to ",
    " as it ",   " as this ", " to avoid ", " given that ", " which means "};

constexpr std::array<std::string_view, 24> kPlanCues = {
    "next step",  "next steps", "next,",      "next i",     "next we",    "next:",
    "then i'll",  "after that", "afterwards", "remaining",  "still need", "still to do",
    "todo",       "to do:",     "the plan",   "plan:",      "going to",   "will need to",
    "we need to", "i need to",  "next up",    "left to do", "follow-up",  "next, i"};

// For user messages: the request itself is not a plan; only what comes after.
constexpr std::array<std::string_view, 12> kUserPlanCues = {
    "next step", "next,",      "next:",     "after that", "afterwards", "then we",
    "todo",      "still need", "remaining", "later we",   "once that",  "next we"};

constexpr std::array<std::string_view, 6> kWeakPlanCues = {"i'll",  "i will", "let me",
                                                           "now i", "we'll",  "we will"};

constexpr std::array<std::string_view, 18> kAcknowledgements = {
    "ok",      "okay",  "yes",  "y",   "continue", "go on", "go ahead", "thanks", "thank you",
    "proceed", "do it", "sure", "yep", "lgtm",     "great", "nice",     "cool",   "k"};

constexpr std::array<std::string_view, 10> kGoalCues = {
    "the goal",    "my goal",          "our goal",    "goal:",     "i want to",
    "i'd like to", "we need to build", "the task is", "objective", "we are building"};

// All cue lists matched in one pass over a sentence's words: each cue is
// filed under its first word, so a sentence costs one hash lookup per word
// instead of one substring search per cue (the hot path on long sessions).
enum CueBit : uint32_t {
  kBitConstraint = 1,
  kBitRevision = 2,
  kBitStrongDecision = 4,
  kBitWeakDecision = 8,
  kBitPlan = 16,
  kBitWeakPlan = 32,
  kBitGoal = 64,
  kBitUserPlan = 128,
};

inline bool IsCueWordChar(char c) { return IsWordChar(c) || c == '\''; }

class CueMatcher {
 public:
  CueMatcher() {
    AddAll(kConstraintCues, kBitConstraint);
    AddAll(kRevisionCues, kBitRevision);
    AddAll(kStrongDecisionCues, kBitStrongDecision);
    AddAll(kWeakDecisionCues, kBitWeakDecision);
    AddAll(kPlanCues, kBitPlan);
    AddAll(kWeakPlanCues, kBitWeakPlan);
    AddAll(kGoalCues, kBitGoal);
    AddAll(kUserPlanCues, kBitUserPlan);
  }

  // Bits of every cue list with a phrase in `lower` (word boundaries as FindPhrase).
  uint32_t Match(std::string_view lower) const {
    uint32_t bits = 0;
    size_t i = 0;
    while (i < lower.size()) {
      if (!IsCueWordChar(lower[i])) {
        ++i;
        continue;
      }
      size_t b = i;
      while (i < lower.size() && IsCueWordChar(lower[i])) ++i;
      auto it = by_first_word_.find(lower.substr(b, i - b));
      if (it == by_first_word_.end()) continue;
      for (const Cue& cue : it->second) {
        if ((bits & cue.bit) != 0) continue;
        std::string_view phrase = cue.phrase;
        if (lower.compare(b, phrase.size(), phrase) != 0) continue;
        size_t e = b + phrase.size();
        if (e < lower.size() && IsWordChar(lower[e]) && IsWordChar(phrase.back())) continue;
        bits |= cue.bit;
      }
    }
    return bits;
  }

 private:
  struct Cue {
    std::string_view phrase;
    uint32_t bit;
  };
  template <size_t N>
  void AddAll(const std::array<std::string_view, N>& phrases, uint32_t bit) {
    for (std::string_view p : phrases) {
      size_t e = 0;
      while (e < p.size() && IsCueWordChar(p[e])) ++e;
      by_first_word_[p.substr(0, e)].push_back(Cue{p, bit});
    }
  }
  std::unordered_map<std::string_view, std::vector<Cue>> by_first_word_;
};

const CueMatcher& Cues() {
  static const CueMatcher matcher;
  return matcher;
}

const std::set<std::string>& StopWords() {
  static const std::set<std::string> words = {
      "the",     "and",    "for",      "with",    "that",     "this",    "from",   "into", "use",
      "using",   "used",   "should",   "must",    "always",   "never",   "don't",  "dont", "not",
      "please",  "also",   "all",      "any",     "are",      "was",     "were",   "will", "would",
      "can",     "could",  "our",      "your",    "you",      "its",     "it's",   "then", "than",
      "instead", "rather", "actually", "make",    "sure",     "keep",    "let's",  "lets", "just",
      "only",    "now",    "have",     "has",     "been",     "being",   "what",   "when", "where",
      "which",   "who",    "why",      "how",     "there",    "their",   "them",   "they", "these",
      "those",   "some",   "more",     "most",    "other",    "such",    "very",   "onto", "over",
      "under",   "about",  "after",    "before",  "again",    "like",    "want",   "need", "let",
      "via",     "per",    "each",     "every",   "prefer",   "avoid",   "does",   "did",  "done",
      "yes",     "okay",   "same",     "going",   "get",      "got",     "set",    "i'll", "we'll",
      "it'll",   "switch", "change",   "changed", "from now", "anymore", "longer", "stop", "ensure",
      "because", "since",  "so",       "to",      "of",       "in",      "on",     "it",   "is",
      "be",      "we",     "a",        "an",      "or",       "as",      "at",     "by",   "do",
      "no",      "i",      "me",       "my",      "us",       "if",      "up",     "go"};
  return words;
}

std::set<std::string> ContentWords(std::string_view lower) {
  std::set<std::string> out;
  const auto& stop = StopWords();
  size_t i = 0;
  while (i < lower.size()) {
    while (i < lower.size() && !(IsWordChar(lower[i]) || lower[i] == '\'' || lower[i] == '.' ||
                                 lower[i] == '/' || lower[i] == '-')) {
      ++i;
    }
    size_t b = i;
    while (i < lower.size() && (IsWordChar(lower[i]) || lower[i] == '\'' || lower[i] == '.' ||
                                lower[i] == '/' || lower[i] == '-')) {
      ++i;
    }
    std::string_view w = lower.substr(b, i - b);
    while (!w.empty() && (w.back() == '.' || w.back() == '\'' || w.back() == '-')) {
      w.remove_suffix(1);
    }
    while (!w.empty() && (w.front() == '.' || w.front() == '\'' || w.front() == '-')) {
      w.remove_prefix(1);
    }
    if (w.empty()) continue;
    bool numeric = std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(c) != 0; });
    if ((w.size() >= 3 || numeric) && !stop.count(std::string(w))) out.emplace(w);
  }
  return out;
}

// Units that make a number a required or measured value ("64 MiB", "720px",
// "2500ms", "20%"): two statements giving the same unit different numbers
// can be one value revised.
bool IsUnit(std::string_view u) {
  static const std::set<std::string_view> kUnits = {
      "b",       "kb",      "mb",    "gb",   "tb",  "kib",   "mib",   "gib", "tib",
      "k",       "m",       "g",     "ns",   "us",  "ms",    "s",     "sec", "secs",
      "min",     "mins",    "h",     "hr",   "hrs", "px",    "%",     "rps", "qps",
      "seconds", "minutes", "hours", "days", "x",   "ns/op", "req/s", "pt",  "em"};
  return kUnits.count(u) > 0;
}

// The quantities of a lower-cased text as (unit, number) pairs, and the
// words they are made of (so that a shared unit is not a shared subject).
void Quantities(std::string_view lower, std::vector<std::pair<std::string, std::string>>* out,
                std::set<std::string>* words) {
  size_t i = 0;
  while (i < lower.size()) {
    bool starts =
        std::isdigit(static_cast<unsigned char>(lower[i])) && (i == 0 || !IsWordChar(lower[i - 1]));
    if (!starts) {
      ++i;
      continue;
    }
    size_t b = i;
    while (i < lower.size() && (std::isdigit(static_cast<unsigned char>(lower[i])) ||
                                ((lower[i] == '.' || lower[i] == ',') && i + 1 < lower.size() &&
                                 std::isdigit(static_cast<unsigned char>(lower[i + 1]))))) {
      ++i;
    }
    std::string number(lower.substr(b, i - b));
    size_t u = i;
    if (u < lower.size() && lower[u] == ' ') ++u;
    size_t ue = u;
    while (ue < lower.size() &&
           ((lower[ue] >= 'a' && lower[ue] <= 'z') || lower[ue] == '%' || lower[ue] == '/')) {
      ++ue;
    }
    std::string unit(lower.substr(u, ue - u));
    if (!IsUnit(unit) || (ue < lower.size() && IsWordChar(lower[ue]))) continue;
    if (out != nullptr) out->emplace_back(unit, number);
    if (words != nullptr) {
      words->insert(number);
      words->insert(unit);
      words->insert(number + unit);
    }
    i = ue;
  }
}

bool HasQuantity(std::string_view lower) {
  std::vector<std::pair<std::string, std::string>> q;
  Quantities(lower, &q, nullptr);
  return !q.empty();
}

// The first content word of a phrase, in text order, unless it is an action
// (a gerund) or too generic to identify what was replaced.
std::string FirstSpecificWord(std::string_view phrase) {
  // Qualifiers are skipped ("the old npm scripts" -> npm); generic nouns end
  // the search empty-handed.
  static const std::set<std::string> kQualifiers = {
      "whole",    "entire", "current",  "old",    "new",    "default",
      "existing", "other",  "previous", "first",  "last",   "plain",
      "simple",   "manual", "separate", "single", "global", "local"};
  static const std::set<std::string> kGeneric = {
      "file",     "files",  "code",     "thing",    "things", "way",    "one",
      "approach", "method", "function", "data",     "value",  "values", "line",
      "lines",    "output", "input",    "version",  "tool",   "tools",  "step",
      "steps",    "option", "options",  "solution", "idea"};
  size_t i = 0;
  while (i < phrase.size()) {
    while (i < phrase.size() && std::isspace(static_cast<unsigned char>(phrase[i]))) ++i;
    size_t b = i;
    while (i < phrase.size() && !std::isspace(static_cast<unsigned char>(phrase[i]))) ++i;
    std::set<std::string> words = ContentWords(phrase.substr(b, i - b));
    if (words.empty()) continue;  // "the", "using"
    const std::string& w = *words.begin();
    if (kQualifiers.count(w)) continue;
    bool gerund = w.size() > 5 && w.compare(w.size() - 3, 3, "ing") == 0;
    if (gerund || kGeneric.count(w)) return "";
    return w;
  }
  return "";
}

// Words named as the thing being replaced ("instead of tabs" -> {tabs}).
std::set<std::string> ReplacedTerms(std::string_view lower) {
  std::set<std::string> out;
  for (std::string_view marker : kReplacedMarkers) {
    size_t p = FindPhrase(lower, Trim(marker));
    while (p != std::string_view::npos) {
      size_t start = p + Trim(marker).size();
      size_t end = start;
      int words = 0;
      bool in_word = false;
      while (end < lower.size()) {
        char c = lower[end];
        if (c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')' ||
            (c == '.' && (end + 1 >= lower.size() || lower[end + 1] == ' '))) {
          break;
        }
        bool wc = !std::isspace(static_cast<unsigned char>(c));
        if (wc && !in_word && ++words > 4) break;
        in_word = wc;
        ++end;
      }
      std::string_view phrase = lower.substr(start, end - start);
      // Stop at a conjunction: "instead of X and use Y".
      for (std::string_view stop : {" and ", " but ", " for ", " to ", " because ", " since "}) {
        size_t s = phrase.find(stop);
        if (s != std::string_view::npos) phrase = phrase.substr(0, s);
      }
      // The thing replaced is the phrase's first specific word ("instead of
      // the HashMap" -> hashmap); "instead of loading the whole file" names an
      // action, and generic nouns would retire unrelated statements.
      std::string term = FirstSpecificWord(phrase);
      if (!term.empty()) out.insert(std::move(term));
      p = FindPhrase(lower, Trim(marker), p + 1);
    }
  }
  return out;
}

// The earlier statement rejects `term` itself ("never use var"): then a later
// "use let instead of var" agrees with it and must not supersede it.
bool NegatesTerm(std::string_view lower, std::string_view term) {
  size_t p = FindPhrase(lower, term);
  if (p == std::string_view::npos) return false;
  std::string_view before = lower.substr(p >= 24 ? p - 24 : 0, p >= 24 ? 24 : p);
  for (std::string_view neg : {"never", "don't", "do not", "avoid", "no ", "not ", "stop",
                               "instead of", "rather than", "without"}) {
    if (before.find(neg) != std::string_view::npos) return true;
  }
  return false;
}

// Whitespace runs become one space; stops once `limit` bytes are produced
// (callers clip anyway, and texts can be megabytes).
std::string CollapseSpaces(std::string_view text, size_t limit = std::string::npos) {
  std::string out;
  out.reserve(std::min(text.size(), limit == std::string::npos ? text.size() : limit + 8));
  bool space = false;
  for (char c : text) {
    if (out.size() > limit) break;
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool IsExitLine(std::string_view lower_line) {
  return lower_line.find("exited with code") != std::string_view::npos;
}

constexpr std::array<std::string_view, 14> kErrorWords = {
    "error",     "fail",      "exception", "traceback",    "panic",    "fatal",  "cannot",
    "not found", "undefined", "denied",    "no such file", "expected", "assert", "segmentation"};

// A heading with nothing after it ("failures:", "Errors:"): it announces the
// failure without naming it.
bool IsBareHeading(std::string_view lower_line) {
  if (lower_line.empty() || lower_line.back() != ':') return false;
  return lower_line.find(' ') == std::string_view::npos;
}

// A line where a test runner names the unit that failed, in the forms the
// common runners print: Rust's libtest ("test a::b ... FAILED", "thread 'a::b'
// panicked at"), Go ("--- FAIL: TestX"), pytest ("FAILED tests/x.py::test_y"),
// Jest and Mocha ("● Suite › case"), Vitest ("FAIL  a.test.ts > suite > case",
// "× suite > case"), TAP ("not ok 3 - case"). The runner's
// closing line ("error: test failed, to rerun ...", "test result: FAILED.")
// names no unit: the failing test is what the next run must be checked for.
bool NamesFailingUnit(std::string_view line, std::string_view lower) {
  auto starts = [&](std::string_view p) { return lower.substr(0, p.size()) == p; };
  if (lower.find("panicked at") != std::string_view::npos) return true;
  if (starts("--- fail:") || starts("not ok ") || starts("\xe2\x97\x8f ")) return true;
  if (starts("failed ") &&
      (lower.find("::") != std::string_view::npos || lower.find('/') != std::string_view::npos))
    return true;
  if (starts("test ") && lower.size() > 12 && lower.ends_with(" ... failed")) return true;
  // Vitest names a test by its path of suites joined with " > " (Jest's bare
  // "FAIL file" line names only the file: the "●" line names the test).
  if ((starts("fail ") || starts("\xc3\x97 ")) && lower.find(" > ") != std::string_view::npos)
    return true;
  return starts("---- ") && line.ends_with(" ----") &&
         lower.find(" stdout ") != std::string_view::npos;
}

// The first non-empty line of the head of `text` (kScanWindow bytes) for
// which `pick(line, lowered line)` holds, as one line ("" when none does).
template <typename Pick>
std::string FirstHeadLine(std::string_view text, Pick pick) {
  std::string lower;  // reused: one allocation, not one per line (hot path)
  size_t b = 0;
  while (b < text.size() && b < kScanWindow) {
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = Trim(text.substr(b, e - b));
    b = e + 1;
    if (line.empty() || line.size() > 2000) continue;
    lower.assign(line);
    for (char& c : lower) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    }
    if (pick(line, std::string_view(lower))) return OneLine(line, kErrorLineMax);
  }
  return "";
}

// The first line of `text` that names the failing unit ("" when none does).
std::string FailingUnitLine(std::string_view text) { return FirstHeadLine(text, NamesFailingUnit); }

// The first line of the output that names an error: where the failure began
// (the failing test), which the summary line of a runner does not name.
std::string FirstErrorLine(std::string_view text) {
  return FirstHeadLine(text, [](std::string_view, std::string_view lower) {
    if (IsExitLine(lower) || IsBareHeading(lower)) return false;
    return std::any_of(kErrorWords.begin(), kErrorWords.end(),
                       [&](std::string_view w) { return lower.find(w) != std::string_view::npos; });
  });
}

std::string ErrorLine(std::string_view text, bool fallback = true) {
  // Search the lowered head and tail of the output; report the first line
  // holding the most telling word.
  std::string scanned;
  if (text.size() <= 2 * kScanWindow) {
    scanned = Lower(text);
  } else {
    scanned = Lower(text.substr(0, kScanWindow));
    scanned += '\n';
    scanned += Lower(text.substr(text.size() - kScanWindow));
  }
  std::string_view original =
      text.size() <= 2 * kScanWindow ? text : std::string_view();  // mapped below when split
  std::string original_split;
  if (original.empty() && !text.empty()) {
    original_split.assign(text.substr(0, kScanWindow));
    original_split += '\n';
    original_split.append(text.substr(text.size() - kScanWindow));
    original = original_split;
  }
  auto line_at = [&](size_t pos, size_t* begin, size_t* end) {
    size_t b = scanned.rfind('\n', pos);
    *begin = b == std::string::npos ? 0 : b + 1;
    size_t e = scanned.find('\n', pos);
    *end = e == std::string::npos ? scanned.size() : e;
  };
  for (std::string_view word : kErrorWords) {
    size_t pos = 0;
    while ((pos = scanned.find(word, pos)) != std::string::npos) {
      size_t b, e;
      line_at(pos, &b, &e);
      std::string_view lower_line(scanned.data() + b, e - b);
      if (!IsExitLine(lower_line) && e - b <= 2000) {
        return OneLine(Trim(original.substr(b, e - b)), kErrorLineMax);
      }
      pos = e;
    }
  }
  if (!fallback) return "";
  size_t e = scanned.size();
  while (e > 0) {
    size_t b = scanned.rfind('\n', e - 1);
    b = b == std::string::npos ? 0 : b + 1;
    std::string_view line = Trim(std::string_view(scanned.data() + b, e - b));
    if (!line.empty() && !IsExitLine(line))
      return OneLine(Trim(original.substr(b, e - b)), kErrorLineMax);
    if (b == 0) break;
    e = b - 1;
  }
  return "";
}

// A banner or separator ("=====", "FAIL", "----"): no content of its own.
inline bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsBannerLine(std::string_view t) {
  size_t letters = 0;
  for (char c : t) letters += IsAsciiAlnum(c) ? 1 : 0;
  return letters == 0 || t == "FAIL" || t == "FAILED" || t == "ERROR";
}

// The error line and the lines that explain it: the failing test's name is
// often on one line and what failed on the next ("--- FAIL: TestX" then
// "x_test.go:41: backoff 30s exceeds cap 10s").
std::string ErrorContext(std::string_view output, const std::string& error_line) {
  if (error_line.empty()) return error_line;
  std::string probe = error_line.substr(0, std::min<size_t>(error_line.size(), 60));
  if (probe.size() > 3 && probe.compare(probe.size() - 3, 3, "...") == 0)
    probe.resize(probe.size() - 3);
  // Boyer-Moore-Horspool: a plain find re-compares at every occurrence of the
  // probe's first letter, which dominated long sessions' summaries.
  std::string out = error_line;
  std::string first = FailingUnitLine(output);
  if (first.empty()) first = FirstErrorLine(output);
  if (!first.empty() && first != error_line && out.find(first) == std::string::npos) {
    out = first + " / " + out;
  }
  auto hit = std::search(output.begin(), output.end(),
                         std::boyer_moore_horspool_searcher(probe.begin(), probe.end()));
  if (hit == output.end()) return OneLine(out, 2 * kErrorLineMax);
  size_t b = output.find('\n', static_cast<size_t>(hit - output.begin()));
  for (int added = 0, seen = 0; b != std::string_view::npos && added < 2 && seen < 6; ++seen) {
    size_t e = output.find('\n', b + 1);
    std::string_view line =
        Trim(output.substr(b + 1, (e == std::string_view::npos ? output.size() : e) - b - 1));
    b = e;
    if (line.empty() || IsBannerLine(line) || IsExitLine(Lower(line))) continue;
    out += " / " + OneLine(line, 160);
    ++added;
  }
  return OneLine(out, 2 * kErrorLineMax);
}

// A shell pipeline (`a | b`, not `a || b`) outside quotes.
bool IsPipeline(std::string_view command) {
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '|' && (i + 1 >= command.size() || command[i + 1] != '|') &&
               (i == 0 || command[i - 1] != '|')) {
      return true;
    }
  }
  return false;
}

// A line a reader cannot use: terminal drawing and control sequences.
bool IsTerminalNoise(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == 0x1b || c == '\r' || (c < 0x20 && c != '\t')) return true;
    // U+2500-U+28FF (box drawing, block elements, braille spinners): E2 94..A3 xx.
    if (c == 0xE2 && i + 1 < line.size()) {
      unsigned char c1 = static_cast<unsigned char>(line[i + 1]);
      if (c1 >= 0x94 && c1 <= 0xA3) return true;
    }
  }
  return line.find("====>") != std::string_view::npos ||
         line.find("#####") != std::string_view::npos;
}

// The shape of a line: letters, digits and spaces collapsed to one mark
// each, punctuation kept. Lines of one shape repeated are a listing (padding
// keys, per-test PASS lines, search hits); what stands out carries values.
std::string LineShape(std::string_view line) {
  std::string out;
  char last = 0;
  for (char c : line) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    char m = letter || static_cast<unsigned char>(c) >= 0x80 ? 'a'
             : c >= '0' && c <= '9'                          ? '#'
             : c == ' ' || c == '\t'                         ? ' '
                                                             : c;
    if ((m == 'a' || m == '#' || m == ' ') && m == last) continue;
    out += m;
    last = m;
  }
  return out;
}

// The lines of a command's output that carry values (a number, a `key: value`
// or `key = value`): its non-repetitive lines, at most a few, in order.
std::vector<std::string> OutputValues(std::string_view output) {
  constexpr size_t kMaxLines = 8, kMaxScan = 400;
  std::vector<std::string_view> lines;
  size_t b = 0;
  while (b < output.size() && lines.size() < kMaxScan) {
    size_t e = output.find('\n', b);
    if (e == std::string_view::npos) e = output.size();
    std::string_view line = Trim(output.substr(b, e - b));
    b = e + 1;
    if (line.empty() || line.size() > 240) continue;
    // The cheap test first: most lines of a long output carry no value.
    bool value = line.find(':') != std::string_view::npos ||
                 line.find('=') != std::string_view::npos ||
                 std::any_of(line.begin(), line.end(),
                             [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!value || IsTerminalNoise(line) || IsBannerLine(line)) continue;
    if (IsExitLine(Lower(line))) continue;
    lines.push_back(line);
  }
  std::unordered_map<std::string, int> shapes;
  std::vector<std::string> keys;
  keys.reserve(lines.size());
  for (std::string_view l : lines) {
    keys.push_back(LineShape(l));
    ++shapes[keys.back()];
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size() && out.size() < kMaxLines; ++i) {
    if (shapes[keys[i]] >= 3) continue;
    out.push_back(OneLine(lines[i], 160));
  }
  return out;
}

// Read-only look-ups: their failures (grep finding nothing) block nothing and
// their successes carry no state worth keeping.
bool IsInspection(std::string_view family) {
  static constexpr std::array<std::string_view, 30> kPrograms = {
      "grep", "rg",   "ag",  "find", "ls",     "cat",  "head", "tail",     "wc",    "which",
      "echo", "awk",  "pwd", "file", "stat",   "tree", "du",   "df",       "sleep", "true",
      "ps",   "diff", "cmp", "less", "sed -n", "type", "env",  "printenv", "date",  "whoami"};
  std::string_view program = family.substr(0, family.find(' '));
  for (std::string_view p : kPrograms) {
    if (program == p || family == p) return true;
  }
  if (program == "sed") return family.find("-i") == std::string_view::npos;
  if (program == "git") {
    for (std::string_view sub : {"git status", "git log", "git diff", "git show", "git branch",
                                 "git blame", "git grep", "git ls-files"}) {
      if (family.rfind(sub, 0) == 0) return true;
    }
  }
  return false;
}

bool LooksLikeTestOrBuild(std::string_view lower_cmd) {
  static constexpr std::array<std::string_view, 18> kWords = {
      "test", "pytest", "jest",  "vitest", "mocha", "ctest",  "check", "build", "make",
      "tsc",  "lint",   "cargo", "go ",    "mvn",   "gradle", "cmake", "ninja", "tox"};
  for (std::string_view w : kWords) {
    if (lower_cmd.find(w) != std::string_view::npos) return true;
  }
  return false;
}

// The last line of a test/build output that reports a result.
// "12 passed", "1 failed", "3 failing": a number right before an outcome word.
bool HasCountedOutcome(std::string_view lower) {
  for (std::string_view w : {"passed", "failed", "passing", "failing"}) {
    for (size_t p = lower.find(w); p != std::string_view::npos; p = lower.find(w, p + 1)) {
      if (p >= 2 && lower[p - 1] == ' ' && std::isdigit(static_cast<unsigned char>(lower[p - 2])))
        return true;
    }
  }
  return false;
}

std::string ResultLine(std::string_view text) {
  static constexpr std::array<std::string_view, 14> kResultWords = {
      "passed", "failed", "passing", "failing", "tests:",    "test result", "ok ",
      "pass ",  "fail ",  "error",   "warning", "succeeded", "finished",    "built target"};
  std::string_view tail = text.size() > 8192 ? text.substr(text.size() - 8192) : text;
  std::vector<std::string_view> lines;
  size_t b = 0;
  while (b <= tail.size()) {
    size_t e = tail.find('\n', b);
    if (e == std::string_view::npos) e = tail.size();
    lines.push_back(tail.substr(b, e - b));
    b = e + 1;
  }
  // The line that counts ("6 passed; 1 failed") says more than the runner's
  // closing remark ("error: test failed, to rerun pass --lib") below it.
  std::string first_worded;
  int checked = 0;
  for (auto it = lines.rbegin(); it != lines.rend() && checked < 40; ++it) {
    std::string_view t = Trim(*it);
    if (t.empty()) continue;
    ++checked;
    std::string lower = Lower(t);
    if (IsExitLine(lower)) continue;
    if (HasCountedOutcome(lower)) return OneLine(t, 140);
    if (!first_worded.empty()) continue;
    for (std::string_view w : kResultWords) {
      if (lower.find(w) != std::string::npos) {
        first_worded = OneLine(t, 140);
        break;
      }
    }
  }
  return first_worded;
}

std::optional<int64_t> ParseExitCode(std::string_view text) {
  std::string_view tail = text.size() > 600 ? text.substr(text.size() - 600) : text;
  std::string lower = Lower(tail);
  for (std::string_view marker :
       {"exited with code ", "exit code: ", "exit code ", "exit status "}) {
    size_t p = lower.rfind(marker);
    if (p == std::string::npos) continue;
    size_t i = p + marker.size();
    bool neg = i < lower.size() && lower[i] == '-';
    if (neg) ++i;
    int64_t v = 0;
    size_t digits = 0;
    while (i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i])) && digits < 9) {
      v = v * 10 + (lower[i] - '0');
      ++i;
      ++digits;
    }
    if (digits > 0) return neg ? -v : v;
  }
  return std::nullopt;
}

std::string JoinTextBlocks(const Message& m, std::string_view sep) {
  if (m.content_is_string) return m.content_string;
  std::string out;
  bool first = true;
  for (const ContentBlock& b : m.content) {
    if (b.kind != ContentBlock::Kind::kText) continue;
    if (!first) out += sep;
    first = false;
    out += b.text;
  }
  return out;
}

// The text of a message without copying in the common single-block case.
std::string_view TextView(const Message& m, std::string_view sep, std::string& storage) {
  if (m.content_is_string) return m.content_string;
  const ContentBlock* only = nullptr;
  int count = 0;
  for (const ContentBlock& b : m.content) {
    if (b.kind != ContentBlock::Kind::kText) continue;
    only = &b;
    ++count;
  }
  if (count == 0) return {};
  if (count == 1) return only->text;
  storage = JoinTextBlocks(m, sep);
  return storage;
}

struct PendingCall {
  std::string tool;
  std::string command;  // bash
  std::string path;     // read/write/edit and others with a path
  int64_t order = 0;
};

class Extractor {
 public:
  Result<Facts> Run(std::span<const Message> messages, const std::function<bool()>& is_cancelled,
                    const std::function<void(size_t)>& wait_for_messages) {
    for (size_t i = 0; i < messages.size(); ++i) {
      if ((i & 255) == 0 && is_cancelled && is_cancelled()) {
        return Status::Cancelled("summarization cancelled");
      }
      if (wait_for_messages) wait_for_messages(i + 1);
      const Message& m = messages[i];
      int64_t order = static_cast<int64_t>(i);
      switch (m.role) {
        case Role::kUser:
          OnUser(m, order);
          break;
        case Role::kAssistant:
          OnAssistant(m, order);
          break;
        case Role::kToolResult:
          OnToolResult(m, order);
          break;
        case Role::kBashExecution:
          OnBash(m, order);
          break;
        case Role::kCustom:
          OnCustom(m);
          break;
        case Role::kBranchSummary:
          facts_.branch_notes.push_back(m.summary);
          facts_.input_chars += static_cast<int64_t>(m.summary.size());
          break;
        case Role::kCompactionSummary:
          facts_.prior_summaries.push_back(m.summary);
          facts_.input_chars += static_cast<int64_t>(m.summary.size());
          break;
        default:
          break;
      }
    }
    ResolveErrors();
    return std::move(facts_);
  }

 private:
  void OnUser(const Message& m, int64_t order) {
    std::string storage;
    std::string_view text = TextView(m, "", storage);
    facts_.input_chars += static_cast<int64_t>(text.size());
    std::string_view t = Trim(text);
    if (t.empty()) return;
    std::string lower = Lower(t.substr(0, 64));
    std::string_view lt = Trim(lower);
    while (!lt.empty() && (lt.back() == '.' || lt.back() == '!')) lt.remove_suffix(1);
    bool ack = t.size() <= 20 && std::find(kAcknowledgements.begin(), kAcknowledgements.end(),
                                           lt) != kAcknowledgements.end();
    // "/model", "/compact focus on X": commands to the agent, not requests.
    bool slash_command = t[0] == '/' && t.find('\n') == std::string_view::npos &&
                         t.find('/', 1) == std::string_view::npos;
    if (slash_command) return;
    answered_ = false;
    facts_.pending_user_message = OneLine(t, 500);
    if (ack) return;

    std::vector<std::string> sentences = SplitSentences(t);
    Request r;
    r.order = order;
    std::string first;
    for (const std::string& s : sentences) {
      if (!first.empty() && first.size() + s.size() > kRequestMax) break;
      if (!first.empty()) first += ' ';
      first += s;
      if (first.size() >= 60) break;
    }
    r.text = OneLine(first.empty() ? std::string(t) : first, kRequestMax);
    r.full = OneLine(t, kGoalMax);
    bool is_first = facts_.requests.empty();
    for (const std::string& s : sentences) {
      if (r.sentences.size() >= (is_first ? 16u : 6u)) break;
      r.sentences.push_back(OneLine(s, kSentenceMax));
    }
    facts_.requests.push_back(std::move(r));

    UserMessage um;
    um.order = order;
    size_t constraint_sentences = 0;
    bool revises = false;
    for (const std::string& s : sentences) {
      std::string ls = Lower(s);
      uint32_t cues = Cues().Match(ls);
      revises = revises || ((cues & kBitRevision) != 0 && s.back() != '?');
      if (um.sentences.size() < 24) um.sentences.push_back(OneLine(s, kSentenceMax));
      // A rule, or a required value ("thumbnails are 512px on the long edge"):
      // both bind the work until revised.
      if (IsConstraintSentence(s, ls, cues) ||
          (s.back() != '?' && LooksLikeProse(s) && HasQuantity(ls))) {
        facts_.constraints.push_back(Statement{order, OneLine(s, kSentenceMax), "", false, 0, ""});
        ++constraint_sentences;
      }
      if (!is_first && (cues & kBitGoal) && s.back() != '?') {
        facts_.goal_statements.push_back(
            Statement{order, OneLine(s, kSentenceMax), "", false, 2, ""});
      }
      MaybeDecision(s, ls, cues, order, nullptr);
      if ((cues & kBitUserPlan) && s.back() != '?') {
        user_plan_.push_back(OneLine(s, kSentenceMax));
      }
    }
    if (t.back() == '?') {
      um.kind = UserKind::kQuestion;
    } else if (revises) {
      um.kind = UserKind::kCorrection;
    } else if (constraint_sentences * 2 >= um.sentences.size() && constraint_sentences > 0) {
      um.kind = UserKind::kConstraint;
    }
    facts_.user_messages.push_back(std::move(um));
    if (!user_plan_.empty()) {
      facts_.plan = std::move(user_plan_);
      facts_.plan_order = order;
      user_plan_.clear();
    }
  }

  void MaybeDecision(const std::string& s, const std::string& ls, uint32_t cues, int64_t order,
                     const std::string* next_sentence) {
    if (s.empty() || s.back() == '?') return;
    bool strong = (cues & kBitStrongDecision) != 0;
    bool weak = (cues & kBitWeakDecision) != 0;
    // A choice between two named options: "X over Y", "X, not Y", "X instead
    // of Y", "X rather than Y". The second is the option turned down.
    size_t choice_at = std::string::npos, choice_len = 0;
    for (std::string_view c : {" over ", ", not ", " instead of ", " rather than "}) {
      size_t p = ls.find(c);
      if (p != std::string::npos && p > 8 && p < choice_at) {
        choice_at = p;
        choice_len = c.size();
      }
    }
    if (!strong && !weak && choice_at == std::string::npos) return;
    size_t reason_at = std::string::npos;
    for (std::string_view c : kReasonConnectors) {
      size_t p = ls.find(c);
      if (p != std::string::npos && p < reason_at) reason_at = p;
    }
    std::string rejected;
    if (choice_at != std::string::npos &&
        (reason_at == std::string::npos || choice_at < reason_at)) {
      size_t b = choice_at + choice_len;
      size_t e = b;
      while (e < s.size() && s[e] != ':' && s[e] != ',' && s[e] != ';' &&
             !(s[e] == '.' && (e + 1 == s.size() || s[e + 1] == ' ')) &&
             (reason_at == std::string::npos || e < reason_at)) {
        ++e;
      }
      rejected = OneLine(Trim(std::string_view(s).substr(b, e - b)), 120);
      // "X over Y: because ..." / "X over Y: it is ..." - the reason follows the colon.
      if (e < s.size() && s[e] == ':' && reason_at == std::string::npos) reason_at = e;
      if (rejected.empty()) choice_at = std::string::npos;
    }
    if (!strong && reason_at == std::string::npos) return;
    if (!strong && !weak && rejected.empty()) return;
    Statement d;
    d.order = order;
    d.kind = 1;
    if (!rejected.empty() && choice_at > 8) {
      d.text = OneLine(std::string_view(s).substr(0, choice_at), 200);
      d.rejected = std::move(rejected);
      if (reason_at != std::string::npos) {
        std::string_view r = Trim(std::string_view(s).substr(reason_at + 1));
        d.reason = OneLine(r, 240);
      }
    } else if (reason_at != std::string::npos && reason_at > 8) {
      d.text = OneLine(std::string_view(s).substr(0, reason_at), 200);
      d.reason = OneLine(std::string_view(s).substr(reason_at + 1), 240);
    } else {
      d.text = OneLine(s, 240);
      if (next_sentence != nullptr) {
        std::string ln = Lower(next_sentence->substr(0, 16));
        if (ln.rfind("this ", 0) == 0 || ln.rfind("that ", 0) == 0 || ln.rfind("it ", 0) == 0 ||
            ln.rfind("because", 0) == 0 || ln.rfind("since", 0) == 0 ||
            ln.rfind("the reason", 0) == 0 || ln.rfind("reason:", 0) == 0) {
          d.reason = OneLine(*next_sentence, 240);
        }
      }
    }
    while (!d.text.empty() &&
           (d.text.back() == ',' || d.text.back() == '.' || d.text.back() == ' ')) {
      d.text.pop_back();
    }
    facts_.decisions.push_back(std::move(d));
  }

  void OnAssistant(const Message& m, int64_t order) {
    if (m.content_is_string) return;
    std::string text;
    for (const ContentBlock& b : m.content) {
      if (b.kind == ContentBlock::Kind::kText) {
        if (!text.empty()) text += '\n';
        text += b.text;
        facts_.input_chars += static_cast<int64_t>(b.text.size());
      } else if (b.kind == ContentBlock::Kind::kThinking) {
        facts_.input_chars += static_cast<int64_t>(b.text.size());
      } else if (b.kind == ContentBlock::Kind::kToolCall) {
        facts_.input_chars += static_cast<int64_t>(b.arguments_json.size() + b.tool_name.size());
        OnToolCall(b, order);
      }
    }
    if (m.stop_reason == "error" && !m.error_message.empty()) {
      facts_.last_assistant_error = OneLine(m.error_message, 240);
    } else if (!m.content.empty()) {
      facts_.last_assistant_error.clear();
    }
    if (!m.content.empty()) {
      // Any work on it (text or tool calls) means the message was taken up.
      answered_ = true;
      facts_.pending_user_message.clear();
    }
    std::string_view t = Trim(text);
    if (t.empty()) return;
    facts_.last_assistant_text = OneLine(t, 400);
    last_text_order_ = order;

    std::vector<std::string> sentences = SplitSentences(t);
    std::vector<std::string> plan;
    std::vector<std::string> weak_plan;
    for (size_t k = 0; k < sentences.size(); ++k) {
      const std::string& s = sentences[k];
      std::string ls = Lower(s);
      uint32_t cues = Cues().Match(ls);
      MaybeDecision(s, ls, cues, order, k + 1 < sentences.size() ? &sentences[k + 1] : nullptr);
      if (s.back() == '?') continue;
      if (cues & kBitPlan) {
        plan.push_back(OneLine(s, kSentenceMax));
      } else if (cues & kBitWeakPlan) {
        weak_plan.push_back(OneLine(s, kSentenceMax));
      }
    }
    // A list right after a "next steps" / "plan" line belongs to the plan.
    AppendListAfterPlanHeading(t, plan);
    if (!plan.empty()) {
      if (plan.size() > 8) plan.resize(8);
      facts_.plan = std::move(plan);
      facts_.plan_order = order;
    } else if (!weak_plan.empty()) {
      // Only the latest words count for weak cues ("I'll run the tests").
      if (weak_plan.size() > 3) weak_plan.erase(weak_plan.begin(), weak_plan.end() - 3);
      last_weak_plan_ = std::move(weak_plan);
      last_weak_plan_order_ = order;
    }
  }

  static void AppendListAfterPlanHeading(std::string_view text, std::vector<std::string>& plan) {
    size_t b = 0;
    bool in_list = false;
    int taken = 0;
    while (b < text.size() && taken < 8) {
      size_t e = text.find('\n', b);
      if (e == std::string_view::npos) e = text.size();
      std::string_view line = Trim(text.substr(b, e - b));
      b = e + 1;
      std::string lower = Lower(line);
      bool item = !line.empty() && (line[0] == '-' || line[0] == '*' ||
                                    (std::isdigit(static_cast<unsigned char>(line[0])) &&
                                     line.size() > 1 && (line[1] == '.' || line[1] == ')')));
      if (!item) {
        in_list =
            (lower.find("next") != std::string::npos || lower.find("plan") != std::string::npos ||
             lower.find("todo") != std::string::npos ||
             lower.find("remaining") != std::string::npos ||
             lower.find("steps") != std::string::npos) &&
            line.size() < 120;
        continue;
      }
      if (!in_list) continue;
      std::string_view body = line;
      while (!body.empty() &&
             (body[0] == '-' || body[0] == '*' || body[0] == '.' || body[0] == ')' ||
              body[0] == ' ' || std::isdigit(static_cast<unsigned char>(body[0])))) {
        body.remove_prefix(1);
      }
      if (body.empty()) continue;
      std::string item_text = OneLine(body, kSentenceMax);
      if (std::find(plan.begin(), plan.end(), item_text) == plan.end()) {
        plan.push_back(std::move(item_text));
        ++taken;
      }
    }
  }

  void OnToolCall(const ContentBlock& b, int64_t order) {
    PendingCall call;
    call.tool = b.tool_name;
    call.order = order;
    std::string file_path;
    // One scan of the arguments (they can hold a whole file) for both fields.
    ForEachJsonEntry(b.arguments_json, [&](std::string_view key, std::string_view value) {
      std::string* field = nullptr;
      if (key == "path") {
        field = &call.path;
      } else if (key == "file_path") {
        field = &file_path;
      } else if (key == "command" && b.tool_name == "bash") {
        field = &call.command;
      }
      if (field == nullptr) return;
      // A later duplicate that is not a string leaves the earlier value.
      if (std::optional<std::string> text = JsonStringValue(value)) *field = std::move(*text);
    });
    if (call.path.empty()) call.path = std::move(file_path);
    if (!call.path.empty() &&
        (b.tool_name == "read" || b.tool_name == "write" || b.tool_name == "edit")) {
      auto [it, inserted] = facts_.files.try_emplace(call.path);
      FileActivity& fa = it->second;
      fa.path = call.path;
      fa.last_order = order;
      if (b.tool_name == "read") {
        if (fa.reads++ == 0) facts_.read_order.push_back(call.path);
      } else {
        if (fa.edits + fa.writes == 0) facts_.modified_order.push_back(call.path);
        (b.tool_name == "edit" ? fa.edits : fa.writes)++;
        if (!facts_.requests.empty()) AddUnique(facts_.requests.back().modified, call.path);
      }
    }
    if (!b.tool_call_id.empty()) calls_[b.tool_call_id] = std::move(call);
  }

  // Per-request lists are only shown in part: capping them keeps the
  // uniqueness check constant-time on sessions with one very long request.
  static void AddUnique(std::vector<std::string>& v, const std::string& s) {
    if (v.size() >= 16) return;
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  }

  void RecordCommand(const std::string& raw_command, bool is_error, std::string_view output,
                     std::optional<int64_t> exit_code, bool cancelled, int64_t order) {
    CommandRun run;
    run.order = order;
    run.command = NormalizeCommand(raw_command);
    if (run.command.empty()) return;
    run.family = CommandFamily(run.command);
    run.inspection = IsInspection(run.family);
    const bool piped = IsPipeline(raw_command);
    if (cancelled) {
      run.outcome = "cancelled";
    } else if (exit_code) {
      run.outcome = "exit " + std::to_string(*exit_code);
      run.ok = *exit_code == 0;
      // grep & co. exit 1 for "nothing found": an answer, not a failure.
      if (*exit_code == 1 && run.inspection) {
        run.ok = true;
        run.outcome = "exit 1 (no match)";
      }
    } else if (is_error) {
      std::string tail = Lower(output.size() > 400 ? output.substr(output.size() - 400) : output);
      run.outcome = tail.find("timed out") != std::string::npos ? "timed out"
                    : (tail.find("aborted") != std::string::npos ||
                       tail.find("cancelled") != std::string::npos)
                        ? "cancelled"
                        : "failed";
    } else {
      run.outcome = "exit 0";
      run.ok = true;
    }
    // `cmd | tail` exits with tail's status: a success proves nothing, and
    // failure lines in its output are an error that is still open.
    if (piped && run.ok && !run.inspection && !cancelled) {
      run.status_known = false;
      run.outcome += " (a pipeline: the status is the last command's)";
      std::string failure = ErrorLine(output, /*fallback=*/false);
      if (!failure.empty()) {
        run.ok = false;
        run.detail = ErrorContext(output, failure);
        ErrorRecord err;
        err.order = order;
        err.where = "`" + run.command + "`";
        err.key = run.command;
        err.family = run.family;
        err.message = run.detail;
        err.is_command = true;
        err.outcome = "output shows a failure; exit status of a pipeline";
        AddError(std::move(err));
      }
    }
    if (!run.inspection || run.ok) run.values = OutputValues(output);
    if (!run.status_known) {
      // Already judged above.
    } else if (!run.ok) {
      run.detail = ErrorLine(output);
      run.detail = ErrorContext(output, run.detail);
      if (LooksLikeTestOrBuild(Lower(run.command))) {
        // "12 passed; 2 failed" says more than the first failing test alone.
        std::string result = ResultLine(output);
        if (!result.empty() && run.detail.find(result) == std::string::npos)
          run.detail += " | " + result;
      }
      if (run.outcome != "cancelled") {
        ErrorRecord err;
        err.order = order;
        err.where = "`" + run.command + "`";
        err.key = run.command;
        err.family = run.family;
        err.message = run.detail.empty() ? run.outcome : run.detail;
        err.is_command = true;
        err.inspection = run.inspection;
        err.outcome = run.outcome;
        AddError(std::move(err));
      }
    } else if (LooksLikeTestOrBuild(Lower(run.command))) {
      run.detail = ResultLine(output);
    }
    if (!facts_.requests.empty()) AddUnique(facts_.requests.back().commands, run.command);
    facts_.commands.push_back(std::move(run));
  }

  void AddError(ErrorRecord err) {
    // The same failure repeated (same place, same line) is one record.
    auto [it, inserted] =
        error_index_.try_emplace(err.key + '\n' + err.message, facts_.errors.size());
    if (!inserted) {
      ErrorRecord& same = facts_.errors[it->second];
      same.count++;
      same.order = err.order;
      return;
    }
    facts_.errors.push_back(std::move(err));
  }

  void OnToolResult(const Message& m, int64_t order) {
    std::string storage;
    std::string_view text = TextView(m, "\n", storage);
    facts_.input_chars += static_cast<int64_t>(text.size());
    auto it = calls_.find(m.tool_call_id);
    PendingCall call;
    if (it != calls_.end()) {
      call = std::move(it->second);
      calls_.erase(it);  // one result per call; keeps the table small
    } else {
      call.tool = m.tool_name;
    }
    if (call.tool == "bash" || (!call.command.empty())) {
      std::optional<int64_t> code = ParseExitCode(text);
      if (!m.is_error && code && *code != 0) code.reset();  // an exit line inside normal output
      RecordCommand(call.command, m.is_error, text, code, false, order);
      return;
    }
    std::string key = call.tool + ":" + call.path;
    if (m.is_error) {
      ErrorRecord err;
      err.order = order;
      err.where = call.path.empty() ? call.tool : call.tool + " " + call.path;
      err.key = key;
      err.family = call.path.empty() ? call.tool : "file:" + call.path;
      std::string_view t = Trim(text);
      size_t nl = t.find('\n');
      err.message = OneLine(nl == std::string_view::npos ? t : t.substr(0, nl), kErrorLineMax);
      if (err.message.empty()) err.message = "failed";
      AddError(std::move(err));
    } else {
      successes_.push_back({order, key, call.path.empty() ? call.tool : "file:" + call.path, ""});
    }
  }

  void OnBash(const Message& m, int64_t order) {
    facts_.input_chars += static_cast<int64_t>(m.command.size() + m.output.size());
    std::optional<int64_t> code;
    if (m.exit_code) code = static_cast<int64_t>(*m.exit_code);
    RecordCommand(m.command, code && *code != 0, m.output, code, m.cancelled, order);
  }

  void OnCustom(const Message& m) {
    std::string storage;
    std::string_view text = TextView(m, "\n", storage);
    facts_.input_chars += static_cast<int64_t>(text.size());
    std::string_view t = Trim(text);
    if (t.empty()) return;
    std::string note =
        m.custom_type.empty() ? OneLine(t, 240) : m.custom_type + ": " + OneLine(t, 240);
    facts_.notes.push_back(std::move(note));
  }

  void ResolveErrors() {
    for (const CommandRun& run : facts_.commands) {
      // Only a run whose status means something can show a fix.
      if (run.ok && run.status_known) {
        successes_.push_back({run.order, run.command, run.family, run.command});
      }
    }
    std::stable_sort(successes_.begin(), successes_.end(),
                     [](const Success& a, const Success& b) { return a.order < b.order; });
    // Orders of the successes per key, ascending: an error is resolved only
    // by a later success of the same command (or the same tool on the same
    // path). Another command of the same program passing (other tests, other
    // packages) says nothing about this failure.
    std::unordered_map<std::string, std::vector<size_t>> by_key;
    for (size_t i = 0; i < successes_.size(); ++i) by_key[successes_[i].key].push_back(i);
    auto first_after = [&](const std::unordered_map<std::string, std::vector<size_t>>& index,
                           const std::string& k, int64_t order) -> std::optional<size_t> {
      auto it = index.find(k);
      if (it == index.end()) return std::nullopt;
      const std::vector<size_t>& v = it->second;
      auto pos = std::upper_bound(v.begin(), v.end(), order,
                                  [&](int64_t o, size_t idx) { return o < successes_[idx].order; });
      if (pos == v.end()) return std::nullopt;
      return *pos;
    };
    for (ErrorRecord& err : facts_.errors) {
      std::optional<size_t> best = first_after(by_key, err.key, err.order);
      if (!best) continue;
      const Success& s = successes_[*best];
      err.resolved_at = s.order;
      err.resolved_by =
          s.command.empty() ? "a later successful " + err.where : "`" + s.command + "` exit 0";
    }
    if (!last_weak_plan_.empty() && last_weak_plan_order_ > facts_.plan_order &&
        last_weak_plan_order_ == last_text_order_) {
      // No explicit plan since: the assistant's latest intentions are the plan.
      facts_.plan = std::move(last_weak_plan_);
      facts_.plan_order = last_weak_plan_order_;
    }
    if (answered_) facts_.pending_user_message.clear();
    // A plan stated before the latest request belongs to an earlier task.
    if (!facts_.requests.empty() && facts_.plan_order < facts_.requests.back().order) {
      facts_.plan.clear();
      facts_.plan_order = -1;
    }
  }

  struct Success {
    int64_t order;
    std::string key;
    std::string family;
    std::string command;
  };

  Facts facts_;
  std::unordered_map<std::string, PendingCall> calls_;
  std::unordered_map<std::string, size_t> error_index_;
  std::vector<Success> successes_;
  std::vector<std::string> user_plan_;
  std::vector<std::string> last_weak_plan_;
  int64_t last_weak_plan_order_ = -1;
  int64_t last_text_order_ = -1;
  bool answered_ = true;
};

}  // namespace

std::string OneLine(std::string_view text, size_t max_bytes) {
  return Clip(CollapseSpaces(text, max_bytes + 4), max_bytes);
}

namespace {
std::vector<std::string> SplitSentences(std::string_view text) {
  std::vector<std::string> out;
  bool in_fence = false;
  size_t b = 0;
  while (b <= text.size()) {
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = Trim(text.substr(b, e - b));
    b = e + 1;
    if (line.substr(0, 3) == "```") {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence || line.empty()) continue;
    // Bullets and quote marks are list syntax, not content.
    while (!line.empty() &&
           (line[0] == '-' || line[0] == '*' || line[0] == '>' || line[0] == '#')) {
      line.remove_prefix(1);
      line = Trim(line);
    }
    if (line.size() > 2 && std::isdigit(static_cast<unsigned char>(line[0])) &&
        (line[1] == '.' || line[1] == ')') && line[2] == ' ') {
      line = Trim(line.substr(2));
    }
    size_t start = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (c != '.' && c != '!' && c != '?') continue;
      if (i + 1 < line.size() && line[i + 1] != ' ') continue;
      size_t next = i + 1;
      while (next < line.size() && line[next] == ' ') ++next;
      if (next < line.size() && std::islower(static_cast<unsigned char>(line[next]))) continue;
      std::string_view s = Trim(line.substr(start, i + 1 - start));
      if (!s.empty()) out.emplace_back(Clip(s, 600));
      start = i + 1;
    }
    std::string_view rest = Trim(line.substr(std::min(start, line.size())));
    if (!rest.empty()) out.emplace_back(Clip(rest, 600));
  }
  return out;
}
}  // namespace

namespace {
// Pasted logs, JSON and code are not statements of the user.
bool LooksLikeProse(std::string_view t) {
  if (t.find("\\n") != std::string_view::npos || t.find("\":") != std::string_view::npos ||
      t.find("{\"") != std::string_view::npos) {
    return false;
  }
  size_t letters = 0, other = 0;
  for (char c : t) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || static_cast<unsigned char>(c) >= 0x80) {
      ++letters;
    } else if (c != ' ') {
      ++other;
    }
  }
  return letters >= 2 * other;
}
}  // namespace

bool IsConstraintSentence(std::string_view sentence, std::string_view lower, uint32_t cues) {
  std::string_view t = Trim(sentence);
  if (t.size() < 8 || t.back() == '?' || !LooksLikeProse(t)) return false;
  return (cues & kBitConstraint) != 0 || StartsWithAny(Trim(lower), kImperativeStarts);
}

bool IsConstraintSentence(std::string_view sentence) {
  std::string lower = Lower(Trim(sentence));
  return IsConstraintSentence(sentence, lower, Cues().Match(lower));
}

namespace {
std::string NormalizeCommand(std::string_view command) {
  // Heredocs can make a command megabytes long; only its head is shown.
  std::string c = CollapseSpaces(command, 4 * kCommandMax);
  // "cd dir && cmd" runs cmd; the directory is noise for matching.
  while (c.rfind("cd ", 0) == 0) {
    size_t amp = c.find(" && ");
    if (amp == std::string::npos) break;
    c = c.substr(amp + 4);
  }
  for (std::string_view tail : {" 2>&1", " | tail", " | head", " | grep", " | less", " | cat"}) {
    size_t p = c.find(tail);
    if (p != std::string::npos && p > 0) c = c.substr(0, p);
  }
  return Clip(c, kCommandMax);
}
}  // namespace

std::string CommandFamily(std::string_view normalized) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < normalized.size() && words.size() < 4) {
    size_t e = normalized.find(' ', i);
    if (e == std::string_view::npos) e = normalized.size();
    words.push_back(normalized.substr(i, e - i));
    i = e + 1;
  }
  if (words.empty()) return "";
  std::string family(words[0]);
  size_t want = 1;
  for (size_t k = 1; k < words.size() && want > 0; ++k) {
    if (words[k].empty() || words[k][0] == '-') {
      if (words[k] == "-m") {  // python -m pytest
        family += " -m";
        ++want;
      }
      continue;
    }
    family += ' ';
    family += words[k];
    --want;
    if (words[k] == "run" || words[k] == "exec" || words[k] == "x") ++want;  // npm run build
  }
  return family;
}

namespace {

uint64_t HashWord(std::string_view w) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : w) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<uint64_t> HashedWords(const std::set<std::string>& words) {
  std::vector<uint64_t> out;
  out.reserve(words.size());
  for (const std::string& w : words) out.push_back(HashWord(w));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

namespace {

// Revisions refer to recent statements; bound the look-back so the pass stays
// linear on sessions with thousands of distinct statements.
constexpr size_t kLookBack = 400;

// What the supersession rules read of one statement, computed once.
struct StatementInfo {
  std::string lower;
  std::vector<uint64_t> words;  // hashed content words, sorted, unique
  std::vector<std::string> replaced;
  std::vector<uint64_t> replaced_hashes;
  bool revision = false;
  std::vector<std::pair<std::string, std::string>> quantities;  // (unit, number)
  std::vector<uint64_t> plain_words;  // content words that are not part of a quantity
};

// Sorts the timeline, retires word-for-word repeats (the latest copy stays)
// and returns the remaining statements in order with their infos.
std::vector<Statement*> UniqueStatements(std::vector<Statement*>& timeline,
                                         std::vector<StatementInfo>* info) {
  std::stable_sort(timeline.begin(), timeline.end(),
                   [](const Statement* a, const Statement* b) { return a->order < b->order; });
  // A statement repeated word for word keeps only its latest copy; this also
  // keeps the pairwise pass small on long sessions.
  std::map<std::pair<int, std::string_view>, size_t> latest;
  for (size_t i = 0; i < timeline.size(); ++i) latest[{timeline[i]->kind, timeline[i]->text}] = i;
  std::vector<Statement*> unique;
  for (size_t i = 0; i < timeline.size(); ++i) {
    if (latest[{timeline[i]->kind, timeline[i]->text}] != i) {
      timeline[i]->superseded = true;
    } else {
      unique.push_back(timeline[i]);
    }
  }
  info->assign(unique.size(), {});
  for (size_t i = 0; i < unique.size(); ++i) {
    StatementInfo& in = (*info)[i];
    in.lower = Lower(unique[i]->text + " " + unique[i]->reason);
    in.words = HashedWords(ContentWords(Lower(unique[i]->text)));
    std::set<std::string> replaced = ReplacedTerms(in.lower);
    // A decision's rejected option ("X instead of Y" stored as X, rejected Y)
    // is what it replaces, though its text no longer holds the marker.
    if (!unique[i]->rejected.empty()) {
      std::string term = FirstSpecificWord(Lower(unique[i]->rejected));
      if (!term.empty()) replaced.insert(std::move(term));
    }
    in.replaced.assign(replaced.begin(), replaced.end());
    in.replaced_hashes = HashedWords(replaced);
    in.revision = (Cues().Match(in.lower) & kBitRevision) != 0;
    std::string text_lower = Lower(unique[i]->text);
    std::set<std::string> qwords;
    Quantities(text_lower, &in.quantities, &qwords);
    std::set<std::string> plain = ContentWords(text_lower);
    for (const std::string& w : qwords) plain.erase(w);
    in.plain_words = HashedWords(plain);
  }
  return unique;
}

size_t CommonCount(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

// The same value given again with another number: a quantity of the same
// unit and a different number, about the same thing (a shared word besides
// the quantities). "cap the spool at 256 MiB" -> "cap it at 64 MiB".
bool RevisesValue(const StatementInfo& ai, const StatementInfo& bi) {
  if (ai.quantities.empty() || bi.quantities.empty()) return false;
  bool changed = false, repeated = false;
  for (const auto& [unit, number] : bi.quantities) {
    for (const auto& [unit_a, number_a] : ai.quantities) {
      if (unit != unit_a) continue;
      (number == number_a ? repeated : changed) = true;
    }
  }
  // The value itself repeated is a restatement, unless a revision names the
  // old value beside the new one ("batches of 500 lock the table; use
  // batches of 100 instead").
  // Naming the old value is what ties the two together then.
  if (repeated) return bi.revision && changed;
  return changed && CommonCount(ai.plain_words, bi.plain_words) >= 1;
}

// Whether the later statement `b` retires the earlier `a`, given how many
// content words they share.
bool Supersedes(const Statement& a, const StatementInfo& ai, const Statement& b,
                const StatementInfo& bi, size_t common) {
  // "use X instead of Y" retires what said Y (unless it rejected Y too).
  for (const std::string& term : bi.replaced) {
    uint64_t h = HashWord(term);
    if (std::binary_search(ai.words.begin(), ai.words.end(), h) &&
        !std::binary_search(ai.replaced_hashes.begin(), ai.replaced_hashes.end(), h) &&
        !NegatesTerm(ai.lower, term)) {
      return true;
    }
  }
  if (a.kind != b.kind) return false;
  if (RevisesValue(ai, bi)) return true;
  size_t small = std::min(ai.words.size(), bi.words.size());
  size_t large = std::max(ai.words.size(), bi.words.size());
  if (bi.revision && common >= 2 && common * 2 >= small) return true;
  return common >= 3 && common * 4 >= large * 3;  // the same statement with a changed detail
}

size_t CommonCount(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t i = 0, j = 0, n = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ++n;
      ++i;
      ++j;
    }
  }
  return n;
}

}  // namespace

void ApplySupersession(std::vector<Statement*>& timeline) {
  std::vector<StatementInfo> info;
  std::vector<Statement*> unique = UniqueStatements(timeline, &info);
  // Only earlier statements that share a content word with the later one (or
  // hold one of the terms it replaces) can be superseded by it: find them
  // through an index from word to statements, in ascending order, instead of
  // comparing every pair in the look-back window (ApplySupersessionPairwise).
  std::unordered_map<uint64_t, std::vector<uint32_t>> postings;
  std::vector<uint32_t> common_count(unique.size(), 0);
  std::vector<size_t> round(unique.size(), SIZE_MAX);  // the later statement that found it
  std::vector<uint32_t> candidates;
  auto visit = [&](uint64_t h, size_t later, size_t from, uint32_t add) {
    auto it = postings.find(h);
    if (it == postings.end()) return;
    const std::vector<uint32_t>& list = it->second;
    for (auto p = std::lower_bound(list.begin(), list.end(), static_cast<uint32_t>(from));
         p != list.end(); ++p) {
      if (round[*p] != later) {
        round[*p] = later;
        common_count[*p] = 0;
        candidates.push_back(*p);
      }
      common_count[*p] += add;
    }
  };
  for (size_t later = 0; later < unique.size(); ++later) {
    const size_t from = later > kLookBack ? later - kLookBack : 0;
    const Statement* b = unique[later];
    candidates.clear();
    for (uint64_t h : info[later].words) visit(h, later, from, 1);
    for (uint64_t h : info[later].replaced_hashes) visit(h, later, from, 0);
    std::sort(candidates.begin(), candidates.end());
    for (uint32_t earlier : candidates) {
      Statement* a = unique[earlier];
      if (a->superseded || a->order == b->order) continue;
      a->superseded = Supersedes(*a, info[earlier], *b, info[later], common_count[earlier]);
    }
    for (uint64_t h : info[later].words) postings[h].push_back(static_cast<uint32_t>(later));
  }
}

void ApplySupersessionPairwise(std::vector<Statement*>& timeline) {
  std::vector<StatementInfo> info;
  std::vector<Statement*> unique = UniqueStatements(timeline, &info);
  for (size_t later = 0; later < unique.size(); ++later) {
    const size_t from = later > kLookBack ? later - kLookBack : 0;
    for (size_t earlier = from; earlier < later; ++earlier) {
      Statement* a = unique[earlier];
      const Statement* b = unique[later];
      if (a->superseded || a->order == b->order) continue;
      a->superseded = Supersedes(*a, info[earlier], *b, info[later],
                                 CommonCount(info[earlier].words, info[later].words));
    }
  }
}

Result<Facts> ExtractSummaryFacts(std::span<const Message> messages,
                                  const std::function<bool()>& is_cancelled,
                                  const std::function<void(size_t)>& wait_for_messages) {
  Extractor extractor;
  return extractor.Run(messages, is_cancelled, wait_for_messages);
}

}  // namespace compactor::summarize
