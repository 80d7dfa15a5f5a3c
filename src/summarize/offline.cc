// The offline summarizer: a deterministic extractive summary in the same
// sections the LLM prompts ask for, built from the facts extract.cc finds, then
// cut to an output budget by dropping the least important items first.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "compactor/summarizer.h"
#include "summarize/extract.h"
#include "summarize/text_util.h"

namespace compactor {
namespace {

using summarize::Facts;
using summarize::OneLine;
using summarize::Statement;

enum Sec { kGoal, kConstraints, kDone, kInProgress, kBlocked, kDecisions, kNext, kCritical, kSecs };

// Priority 0 is never dropped; higher numbers go first when over budget.
struct Item {
  Sec sec = kCritical;
  std::string text;  // the whole line(s), without the trailing newline
  int priority = 0;
  int64_t order = 0;
  bool dropped = false;
  // Quotes text that may hold a revised statement (previous summary lines,
  // the last messages verbatim): checked by ScrubRetired.
  bool scrub = false;
};

std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('`');
  out.append(s);
  out.push_back('`');
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ---------------------------------------------------------------------------
// Previous summary (update) parsing
// ---------------------------------------------------------------------------

// NOLINTNEXTLINE(bugprone-reserved-identifier): clang-tidy 14 flags the implicit array copy
struct Parsed {
  std::vector<std::string> lines[kSecs];
  // The footer's <modified-files>: a summary whose entry kept no file lists
  // (pi's `details`) carries them only here.
  std::vector<std::string> footer_modified;
};

std::string_view TrimView(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Reads any summary written in the standard sections (ours or an LLM's);
// unknown headings land in Critical Context. The file footer is dropped (the
// caller appends a fresh one).
Parsed ParseSummary(std::string_view text) {
  Parsed p;
  Sec sec = kCritical;
  bool in_files = false, in_modified = false;
  std::string fence;  // a fenced block kept whole, newlines included
  size_t b = 0;
  while (b <= text.size()) {
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view raw = text.substr(b, e - b);
    b = e + 1;
    std::string_view line = TrimView(raw);
    if (line.substr(0, 3) == "```") {
      fence += raw;
      if (fence.size() > raw.size()) {  // closing fence: the block is one item
        p.lines[sec].push_back(std::move(fence));
        fence.clear();
      } else {
        fence += '\n';
      }
      continue;
    }
    if (!fence.empty()) {
      fence += raw;
      fence += '\n';
      continue;
    }
    if (line == "<read-files>" || line == "<modified-files>") {
      in_files = true;
      in_modified = line == "<modified-files>";
      continue;
    }
    if (line == "</read-files>" || line == "</modified-files>") {
      in_files = in_modified = false;
      continue;
    }
    if (in_modified && !line.empty()) p.footer_modified.emplace_back(line);
    if (in_files || line.empty() || line == "---" || line == "**Turn Context (split turn):**") {
      continue;
    }
    if (line[0] == '#' && line.find_first_not_of('#') != std::string_view::npos &&
        line[line.find_first_not_of('#')] == ' ') {
      std::string_view title = TrimView(line.substr(line.find_first_not_of('#')));
      if (line.substr(0, 2) != "##") continue;  // a document title
      std::string h = Lower(title);
      if (h.rfind("goal", 0) == 0) {
        sec = kGoal;
      } else if (h.rfind("constraint", 0) == 0 || h.find("preference") != std::string::npos ||
                 h.find("requirement") != std::string::npos) {
        sec = kConstraints;
      } else if (h == "progress" || h.rfind("done", 0) == 0 || h.rfind("early progress", 0) == 0) {
        sec = kDone;
      } else if (h.rfind("in progress", 0) == 0 || h.rfind("original request", 0) == 0) {
        sec = kInProgress;
      } else if (h.rfind("blocked", 0) == 0) {
        sec = kBlocked;
      } else if (h.rfind("key decision", 0) == 0) {
        sec = kDecisions;
      } else if (h.rfind("next step", 0) == 0 || h.rfind("pending", 0) == 0) {
        sec = kNext;
      } else {
        // A section of its own (an LLM's "Current Task", "Branch"): keep its
        // name so its lines stay meaningful under Critical Context.
        sec = kCritical;
        if (h != "critical context") p.lines[sec].push_back(std::string(title) + ":");
      }
      continue;
    }
    std::string_view body = line;
    for (std::string_view marker : {"- [x] ", "- [X] ", "- [ ] ", "- ", "* "}) {
      if (body.substr(0, marker.size()) == marker) {
        body.remove_prefix(marker.size());
        break;
      }
    }
    if (sec == kNext && body.size() > 2 && std::isdigit(static_cast<unsigned char>(body[0]))) {
      size_t dot = body.find(". ");
      if (dot < 4) body.remove_prefix(dot + 2);  // npos is never < 4
    }
    body = TrimView(body);
    if (body.empty() || body == "(none)") continue;
    // Our own sub-lists are indented under a "- Label:" line: keep them whole.
    bool nested = raw.size() > 1 && raw[0] == ' ' && !p.lines[sec].empty();
    if (nested) {
      p.lines[sec].back() += "; " + std::string(body);
    } else {
      p.lines[sec].emplace_back(body);
    }
  }
  if (!fence.empty()) p.lines[sec].push_back(std::move(fence));  // unclosed block
  return p;
}

// ---------------------------------------------------------------------------
// Building the items
// ---------------------------------------------------------------------------

// The sentences of the user's corrections ("use batches of 100 instead")
// that no constraint holds already: they retire what they revise, though they
// are not constraints themselves.
std::vector<Statement> CorrectionStatements(const Facts& facts) {
  std::set<std::string_view> stated;
  for (const Statement& s : facts.constraints) stated.insert(s.text);
  std::vector<Statement> out;
  for (const summarize::UserMessage& um : facts.user_messages) {
    if (um.kind != summarize::UserKind::kCorrection) continue;
    for (const std::string& sentence : um.sentences) {
      if (!stated.count(sentence)) out.push_back(Statement{um.order, sentence, "", false, 0, ""});
    }
  }
  return out;
}

// What the messages after the summarized ones tell (ReadLaterMessages).
struct LaterFacts {
  std::vector<Statement> statements;  // never stated; they retire what they revise
  std::set<std::string> files_read;
};

// An earlier summary's open step that only asks to look at files ("Check
// src/lexer.ts", "Review src/a.ts and src/b.ts"): done once every file it
// names was read after that summary. "" when `step` asks for more than that.
// `read`: the files read since, by their lowered path.
std::string InspectionStepDone(std::string_view step,
                               const std::map<std::string, std::string>& read) {
  static constexpr std::string_view kVerbs[] = {"check ", "review ",  "inspect ", "look at ",
                                                "read ",  "examine ", "verify ",  "look into "};
  std::string lower = Lower(step);
  if (lower.starts_with("[ ] ")) lower.erase(0, 4);
  size_t rest = std::string::npos;
  for (std::string_view v : kVerbs) {
    if (lower.starts_with(v)) rest = v.size();
  }
  if (rest == std::string::npos) return "";
  std::vector<std::string> paths;
  std::string_view words = std::string_view(lower).substr(rest);
  while (!words.empty()) {
    size_t sp = words.find(' ');
    std::string_view word = words.substr(0, sp);
    words = sp == std::string_view::npos ? std::string_view() : words.substr(sp + 1);
    while (!word.empty() && std::strchr("`'\".,:;()", word.back())) word.remove_suffix(1);
    while (!word.empty() && std::strchr("`'\"(", word.front())) word.remove_prefix(1);
    if (word == "and" || word == "," || word.empty()) continue;
    if (word.find('/') == std::string_view::npos && word.find('.') == std::string_view::npos)
      return "";  // more than files: "check that the tests pass"
    paths.emplace_back(word);
  }
  if (paths.empty()) return "";
  std::string list;
  for (const std::string& p : paths) {
    auto hit = read.find(p);
    if (hit == read.end()) return "";
    list += (list.empty() ? "`" : ", `") + hit->second + "`";
  }
  return list;
}

class Composer {
 public:
  // `later`: statements of the messages after the summarized ones
  // (SummaryRequest::later_messages), ordered after them. They are never
  // stated; they only retire what they revise.
  Composer(const SummaryRequest& request, Facts facts, LaterFacts later = {})
      : request_(request),
        facts_(std::move(facts)),
        later_(std::move(later.statements)),
        later_reads_(std::move(later.files_read)) {}

  std::vector<Item> Build() {
    if (!request_.previous_summary.empty()) previous_ = ParseSummary(request_.previous_summary);
    for (const std::string& s : facts_.prior_summaries) {
      Parsed extra = ParseSummary(s);
      for (int k = 0; k < kSecs; ++k) {
        for (std::string& l : extra.lines[k]) previous_.lines[k].push_back(std::move(l));
      }
      for (std::string& f : extra.footer_modified)
        previous_.footer_modified.push_back(std::move(f));
    }
    ResolveStatements();
    AddGoal();
    AddConstraints();
    AddProgress();
    AddDecisions();
    AddNextSteps();
    AddCritical();
    ScrubRetired();
    Dedupe();
    return std::move(items_);
  }

  const Facts& facts() const { return facts_; }

 private:
  void Add(Sec sec, std::string text, int priority, int64_t order, bool scrub = false) {
    items_.push_back(Item{sec, std::move(text), priority, order, false, scrub});
  }

  // Constraints and decisions from the previous summary join the timeline as
  // the oldest statements, so new revisions retire them too.
  void ResolveStatements() {
    int64_t order = -1000000;
    for (const std::string& l : previous_.lines[kConstraints]) {
      prev_constraints_.push_back(Statement{order++, l, "", false, 0, ""});
    }
    for (const std::string& l : previous_.lines[kDecisions]) {
      Statement d{order++, l, "", false, 1, ""};
      // "**decision** (rejected: option): reason", as AddDecisions writes it.
      if (l.rfind("**", 0) == 0) {
        size_t end = l.find("**", 2);
        if (end != std::string::npos) {
          d.text = l.substr(2, end - 2);
          constexpr std::string_view kRejected = " (rejected: ";
          if (l.compare(end + 2, kRejected.size(), kRejected) == 0) {
            size_t b = end + 2 + kRejected.size();
            size_t e = l.find("):", b);
            if (e == std::string::npos && l.back() == ')') e = l.size() - 1;
            if (e != std::string::npos) {
              d.rejected = l.substr(b, e - b);
              end = e;
            }
          }
          size_t colon = l.find(':', end);
          d.reason = colon == std::string::npos ? "" : std::string(TrimView(l.substr(colon + 1)));
        }
      }
      prev_decisions_.push_back(std::move(d));
    }
    for (const summarize::CommandRun& r : facts_.commands) {
      if (!r.ok || !r.status_known) continue;
      ok_commands_[r.command] = &r;
    }
    std::vector<Statement*> timeline;
    for (Statement& s : prev_constraints_) timeline.push_back(&s);
    for (Statement& s : prev_decisions_) timeline.push_back(&s);
    for (Statement& s : facts_.constraints) timeline.push_back(&s);
    for (Statement& s : facts_.decisions) timeline.push_back(&s);
    for (Statement& s : facts_.goal_statements) timeline.push_back(&s);
    // A request's sentences that state a value ("Insert rows in batches of
    // 500") are requirements too: a later revision of the value retires them
    // from the quoted request (the goal above all).
    std::set<std::string> stated;
    for (const Statement& s : facts_.constraints) stated.insert(s.text);
    for (const summarize::Request& r : facts_.requests) {
      for (const std::string& sentence : r.sentences) {
        if (stated.count(sentence) || !HasDigit(sentence)) continue;
        request_values_.push_back(Statement{r.order, sentence, "", false, 0, ""});
      }
    }
    for (Statement& s : CorrectionStatements(facts_)) request_values_.push_back(std::move(s));
    for (Statement& s : request_values_) timeline.push_back(&s);
    for (Statement& s : later_) timeline.push_back(&s);
    summarize::ApplySupersession(timeline);
    // A statement the later messages restate (every word of it in one later
    // statement: "Remember: never modify vendor/") is still current; only one
    // that changes something (another value, another option) retires it.
    std::vector<std::set<std::string>> later_words;
    for (const Statement& s : later_) later_words.push_back(Words(s.text));
    for (Statement* s : timeline) {
      if (!s->superseded || s->order >= LastOrder()) continue;
      const std::set<std::string> mine = Words(s->text);
      for (const std::set<std::string>& w : later_words) {
        if (std::includes(w.begin(), w.end(), mine.begin(), mine.end())) {
          s->superseded = false;
          break;
        }
      }
    }
    std::set<std::string> live;
    for (Statement* s : timeline) {
      if (!s->superseded) live.insert(s->text);
    }
    for (Statement* s : timeline) {
      if (s->superseded && !live.count(s->text)) retired_.insert(s->text);
    }
  }

  // A request's text without the sentences a later statement revised.
  std::string RequestText(const summarize::Request& r, size_t max_bytes, bool skip_constraints) {
    std::string out;
    std::vector<const std::string*> kept;
    for (const std::string& s : r.sentences) {
      if (retired_.count(s)) continue;
      if (skip_constraints && summarize::IsConstraintSentence(s)) continue;
      kept.push_back(&s);
    }
    // A lead-in such as "Requirements:" means nothing once its list is gone.
    while (skip_constraints && !kept.empty() && kept.back()->back() == ':') kept.pop_back();
    for (const std::string* s : kept) {
      if (!out.empty() && out.size() + s->size() + 1 > max_bytes) break;
      if (!out.empty()) out += ' ';
      out += *s;
    }
    if (out.empty() && !r.sentences.empty() && !retired_.count(r.sentences.front())) {
      out = r.sentences.front();
    }
    return OneLine(out, max_bytes);
  }

  static constexpr std::string_view kAllListed =
      "Apply the latest request (its requirements are under Constraints)";

  // The request under way without the sentences Constraints lists already
  // (a correction is both): each item once.
  std::string UnlistedRequestText(const summarize::Request& r) const {
    std::set<std::string_view> listed;
    for (const Statement& c : facts_.constraints) {
      if (!c.superseded) listed.insert(c.text);
    }
    std::string out;
    for (const std::string& s : r.sentences) {
      if (retired_.count(s) || listed.count(s)) continue;
      if (!out.empty() && out.size() + s.size() + 1 > 300) break;
      if (!out.empty()) out += ' ';
      out += s;
    }
    if (out.empty()) return std::string(kAllListed);
    return OneLine(out, 300);
  }

  // Share of words made of letters only (a trailing , . : ! ? allowed):
  // high for a sentence, low for a pasted command line or log.
  static double PlainWordShare(std::string_view s) {
    size_t words = 0, plain = 0;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ') ++i;
      size_t b = i;
      while (i < s.size() && s[i] != ' ') ++i;
      if (i == b) break;
      std::string_view w = s.substr(b, i - b);
      while (!w.empty() && std::strchr(",.:;!?)'\"", w.back()) != nullptr) w.remove_suffix(1);
      while (!w.empty() && (w.front() == '(' || w.front() == '"' || w.front() == '\'')) {
        w.remove_prefix(1);
      }
      ++words;
      bool letters = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\'' || c == '-';
      });
      plain += letters ? 1 : 0;
    }
    return words == 0 ? 0.0 : static_cast<double>(plain) / static_cast<double>(words);
  }

  static size_t WordCount(std::string_view s) {
    size_t n = 0;
    bool in_word = false;
    for (char c : s) {
      bool w = c != ' ';
      if (w && !in_word) ++n;
      in_word = w;
    }
    return n;
  }

  void AddGoal() {
    int64_t n = 0;
    std::string& goal = goal_text_;
    if (!previous_.lines[kGoal].empty()) {
      for (const std::string& l : previous_.lines[kGoal]) {
        if (retired_.count(l)) continue;
        Add(kGoal, n == 0 ? l : "- " + l, n == 0 ? 0 : 2, -1000 + n, true);
        ++n;
      }
    }
    if (n == 0 && !facts_.requests.empty()) {
      // With a previous summary the goal is already known; new requests are
      // progress, not a new goal. Otherwise the first request that says
      // something ("can leave it" or "yo" do not) states the goal.
      const summarize::Request* chosen = &facts_.requests.front();
      for (const summarize::Request& r : facts_.requests) {
        if (WordCount(r.full) >= 6 && !r.sentences.empty() &&
            PlainWordShare(r.sentences.front()) >= 0.6) {
          chosen = &r;
          break;
        }
      }
      const summarize::Request& first = *chosen;
      goal_order_ = first.order;
      goal = RequestText(first, 700, /*skip_constraints=*/true);
      if (!goal.empty()) {
        if (n == 0) {
          Add(kGoal, goal, 0, first.order);
        } else {
          Add(kGoal, "- " + goal, 1, first.order);
        }
        ++n;
      }
    }
    for (const Statement& s : facts_.goal_statements) {
      // A goal sentence of the quoted request is not said twice.
      if (s.superseded || goal.find(s.text) != std::string::npos) continue;
      Add(kGoal, "- " + s.text, 1, s.order);
    }
  }

  void AddConstraints() {
    for (const Statement& s : prev_constraints_) {
      if (!s.superseded) Add(kConstraints, "- " + s.text, 0, s.order);
    }
    // A turn prefix shows its request and constraints under one heading: a
    // constraint the quoted request holds is not said twice.
    const bool one_heading = request_.kind == SummaryKind::kTurnPrefix;
    std::set<std::string> seen;
    for (const Statement& s : facts_.constraints) {
      if (s.superseded || !seen.insert(s.text).second) continue;
      if (one_heading && goal_text_.find(s.text) != std::string::npos) continue;
      Add(kConstraints, "- " + s.text, 0, s.order);
    }
  }

  std::string FileList(const std::vector<std::string>& files, size_t max) {
    std::string out;
    for (size_t i = 0; i < files.size() && i < max; ++i) {
      if (i > 0) out += ", ";
      out += Quote(files[i]);
    }
    if (files.size() > max) out += " and " + std::to_string(files.size() - max) + " more";
    return out;
  }

  // Files read in the summarized messages or after them, by their lowered
  // path (built once: each of an earlier summary's open steps looks here).
  const std::map<std::string, std::string>& FilesReadSince() {
    if (!reads_since_) {
      std::set<std::string> read = later_reads_;
      for (const auto& [path, activity] : facts_.files) {
        if (activity.reads > 0) read.insert(path);
      }
      reads_since_.emplace();
      for (const std::string& path : read) reads_since_->emplace(Lower(path), path);
    }
    return *reads_since_;
  }

  // An earlier summary's open step that the messages since have done: filed
  // under Done, saying why. False when it is still open.
  bool AddDoneSince(const std::string& step, int64_t order) {
    std::string files = InspectionStepDone(step, FilesReadSince());
    if (files.empty()) return false;
    Add(kDone, "- [x] " + step + " (done since: read " + files + ")", 2, order, true);
    return true;
  }

  void AddProgress() {
    const auto& reqs = facts_.requests;
    bool new_requests = !reqs.empty();
    // Previous Done stays done; previous In Progress is done once the user
    // moved on to something new, otherwise still under way.
    int64_t n = -900000;
    std::vector<std::string> carried_modified = previous_.footer_modified;
    for (const std::string& l : previous_.lines[kDone]) {
      if (l.rfind("Files modified:", 0) == 0) {
        for (std::string& f : BacktickedPaths(l)) {
          if (std::find(carried_modified.begin(), carried_modified.end(), f) ==
              carried_modified.end())
            carried_modified.push_back(std::move(f));
        }
        continue;
      }
      Add(kDone, "- [x] " + l, 3, n++, true);
    }
    for (const std::string& l : previous_.lines[kInProgress]) {
      if (AddDoneSince(l, n)) {
        ++n;
      } else if (new_requests) {
        // Whether it was finished since cannot be established: quoted, not
        // ticked off.
        Add(kCritical, "- The earlier summary had this under way (status now unknown): " + l, 2,
            n++, true);
      } else {
        Add(kInProgress, "- [ ] " + l, 0, n++, true);
      }
    }
    AddUserMessages();
    // Every modified file, with what happened to it (the artifact trail).
    std::vector<std::string> modified;
    for (std::string& f : carried_modified) {
      if (std::find(modified.begin(), modified.end(), f) == modified.end())
        modified.push_back(std::move(f));
    }
    for (const std::string& f : facts_.modified_order) {
      if (std::find(modified.begin(), modified.end(), f) == modified.end()) modified.push_back(f);
    }
    // The cumulative lists describe the whole session; a turn prefix reports
    // only its own part (the footer carries the rest).
    std::span<const std::string> known_modified = request_.modified_files;
    if (request_.kind == SummaryKind::kTurnPrefix) known_modified = {};
    for (const std::string& f : known_modified) {
      if (!facts_.files.count(f) || facts_.files.at(f).edits + facts_.files.at(f).writes == 0) {
        if (std::find(modified.begin(), modified.end(), f) == modified.end()) modified.push_back(f);
      }
    }
    if (!modified.empty()) {
      std::string line = "- [x] Files modified: ";
      for (size_t i = 0; i < modified.size(); ++i) {
        if (i > 0) line += ", ";
        line += Quote(modified[i]);
        auto it = facts_.files.find(modified[i]);
        if (it == facts_.files.end()) continue;
        const summarize::FileActivity& fa = it->second;
        std::string what;
        if (fa.writes > 0)
          what = fa.writes == 1 ? "written" : "written x" + std::to_string(fa.writes);
        if (fa.edits > 0) {
          if (!what.empty()) what += ", ";
          what += fa.edits == 1 ? "1 edit" : std::to_string(fa.edits) + " edits";
        }
        if (!what.empty()) line += " (" + what + ")";
      }
      Add(kDone, line, 0, 1LL << 40);
    }
    // The request under way, unless it is the goal stated above (a turn
    // prefix's only request): each item once.
    if (!reqs.empty() &&
        (request_.kind != SummaryKind::kTurnPrefix || reqs.back().order != goal_order_)) {
      const summarize::Request& last = reqs.back();
      std::string line = "- [ ] " + UnlistedRequestText(last);
      if (!last.modified.empty()) line += " (changed so far: " + FileList(last.modified, 8) + ")";
      Add(kInProgress, line, 0, last.order);
    }
    // Blocked: what still fails.
    for (const std::string& l : previous_.lines[kBlocked]) {
      if (StillBlocked(l)) {
        Add(kBlocked, "- " + l, 0, n++, true);
      } else {
        AddResolvedBlocker(l, n++);
      }
    }
    for (const summarize::ErrorRecord& e : facts_.errors) {
      if (!ShownAsBlocked(e)) continue;
      std::string line = "- " + e.where + " fails";
      if (!e.outcome.empty()) line += " (" + e.outcome + ")";
      if (e.count > 1) line += " (" + std::to_string(e.count) + " times)";
      line += ": " + e.message;
      Add(kBlocked, line, e.is_command ? 0 : 1, e.order);
    }
    if (!facts_.last_assistant_error.empty()) {
      Add(kBlocked, "- The last model call failed: " + facts_.last_assistant_error, 1, LastOrder());
    }
  }

  // The user's messages after the goal, in order with their turn number,
  // without what the summary states elsewhere (constraints, revised
  // sentences, the request under way). Requests are never ticked off: whether
  // one was fulfilled is not something a summary can establish.
  void AddUserMessages() {
    std::set<std::string> constraints;
    for (const Statement& c : facts_.constraints) constraints.insert(c.text);
    const int64_t in_progress = facts_.requests.empty() ? -1 : facts_.requests.back().order;
    const size_t count = facts_.user_messages.size();
    // The same message sent again (a retried prompt, a loop) is quoted once,
    // at its latest turn, with every turn it was sent in.
    std::map<std::string, std::vector<size_t>> turns_of;
    std::vector<std::string> texts(count);
    for (size_t turn = 0; turn < count; ++turn) {
      const summarize::UserMessage& um = facts_.user_messages[turn];
      if (um.order == goal_order_ || um.order == in_progress) continue;
      for (const std::string& s : um.sentences) {
        if (retired_.count(s) || constraints.count(s)) continue;
        if (!texts[turn].empty()) texts[turn] += ' ';
        texts[turn] += s;
      }
      if (!texts[turn].empty()) turns_of[texts[turn]].push_back(turn);
    }
    for (size_t turn = 0; turn < count; ++turn) {
      if (texts[turn].empty()) continue;
      const std::vector<size_t>& turns = turns_of[texts[turn]];
      if (turns.back() != turn) continue;
      const summarize::UserMessage& um = facts_.user_messages[turn];
      const char* kind = um.kind == summarize::UserKind::kQuestion ? "question" : "request";
      Add(kCritical, "- User, " + TurnList(turns) + " (" + kind + "): " + OneLine(texts[turn], 300),
          turn + 12 >= count ? 2 : 3, um.order, true);
    }
  }

  static bool HasDigit(std::string_view text) {
    return std::any_of(text.begin(), text.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  }

  // The lower-cased words of a statement (letters and digits).
  static std::set<std::string> Words(std::string_view text) {
    std::set<std::string> out;
    std::string w;
    for (size_t i = 0; i <= text.size(); ++i) {
      const char c = i < text.size() ? text[i] : ' ';
      if (std::isalnum(static_cast<unsigned char>(c))) {
        w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!w.empty()) {
        out.insert(std::move(w));
        w.clear();
      }
    }
    return out;
  }

  // "turn 4"; "turns 2, 5"; "turns 3, 4, ... 426 (424 times)" (1-based).
  static std::string TurnList(const std::vector<size_t>& turns) {
    if (turns.size() == 1) return "turn " + std::to_string(turns[0] + 1);
    std::string out = "turns ";
    const bool elide = turns.size() > 4;
    for (size_t i = 0; i < turns.size(); ++i) {
      if (elide && i == 2) {
        out += ", ...";
        i = turns.size() - 1;
      }
      if (i > 0) out += elide && i == turns.size() - 1 ? " " : ", ";
      out += std::to_string(turns[i] + 1);
    }
    if (elide) out += " (" + std::to_string(turns.size()) + " times)";
    return out;
  }

  // An open failure of the work (not a look-up, not an old tool hiccup):
  // listed once, under Blocked.
  bool ShownAsBlocked(const summarize::ErrorRecord& e) const {
    if (e.resolved_at || e.inspection) return false;
    return e.is_command || e.order + 8 >= LastOrder();
  }

  int64_t LastOrder() const { return static_cast<int64_t>(request_.messages.size()); }

  // A previous Blocked line stays unless a command it names now succeeds.
  bool StillBlocked(const std::string& line) const {
    size_t a = line.find('`');
    size_t b = a == std::string::npos ? a : line.find('`', a + 1);
    if (b == std::string::npos) return true;
    std::string cmd = line.substr(a + 1, b - a - 1);
    return LaterSuccess(cmd) == nullptr;
  }

  // A previous Blocked line ("`cmd` fails (exit N): lines") whose command
  // now succeeds: the error stays on record as resolved, as if it had been
  // seen in these messages.
  void AddResolvedBlocker(const std::string& line, int64_t order) {
    size_t end = line.find('`', 1);
    if (line.rfind('`', 0) != 0 || end == std::string::npos) return;
    std::string cmd = line.substr(1, end - 1);
    const summarize::CommandRun* r = LaterSuccess(cmd);
    if (r == nullptr) return;
    std::string rest = line.substr(end + 1);
    constexpr std::string_view kFails = " fails";
    if (rest.compare(0, kFails.size(), kFails) == 0) rest.erase(0, kFails.size());
    Add(kCritical,
        "- Error in `" + cmd + "`" + rest + " -> resolved (later `" + r->command + "` " +
            r->outcome + ")",
        2, order, true);
  }

  void AddDecisions() {
    auto add = [&](const Statement& d, int priority) {
      std::string line = "- **" + d.text + "**";
      if (!d.rejected.empty()) line += " (rejected: " + d.rejected + ")";
      line += ": ";
      line += d.reason.empty() ? "(no reason stated)" : d.reason;
      Add(kDecisions, line, priority, d.order);
    };
    for (const Statement& d : prev_decisions_) {
      if (!d.superseded) add(d, 2);
    }
    std::set<std::string> seen;
    size_t live = 0;
    for (const Statement& d : facts_.decisions) live += d.superseded ? 0 : 1;
    size_t index = 0;
    for (const Statement& d : facts_.decisions) {
      if (d.superseded || !seen.insert(d.text).second) continue;
      // The latest decisions and every one with a stated reason rank higher.
      bool recent = index++ + 10 >= live;
      add(d, !d.reason.empty() && recent ? 1 : 2);
    }
  }

  void AddNextSteps() {
    int64_t n = 0;
    if (!facts_.pending_user_message.empty()) {
      Add(kNext, "Answer the user's latest message: \"" + facts_.pending_user_message + "\"", 0,
          n++, true);
    }
    std::set<std::string> seen;
    for (const std::string& p : facts_.plan) {
      if (retired_.count(p) || !seen.insert(p).second) continue;
      Add(kNext, p, 0, n++);
    }
    int fixes = 0;
    for (auto it = facts_.errors.rbegin(); it != facts_.errors.rend() && fixes < 3; ++it) {
      const summarize::ErrorRecord& e = *it;
      if (e.resolved_at || !e.is_command || e.inspection) continue;
      Add(kNext, "Fix the failure of " + e.where + " (under Blocked)", 1, n++);
      ++fixes;
    }
    if (n == 0 && !previous_.lines[kNext].empty()) {
      for (const std::string& l : previous_.lines[kNext]) {
        if (!AddDoneSince(l, -800000 + n)) Add(kNext, l, 1, n++, true);
      }
    }
    // The request under way, unless a turn prefix quotes it as its Original
    // Request already.
    if (n == 0 && !facts_.requests.empty() &&
        (request_.kind != SummaryKind::kTurnPrefix ||
         facts_.requests.back().order != goal_order_)) {
      const std::string text = UnlistedRequestText(facts_.requests.back());
      Add(kNext,
          text.starts_with(kAllListed) ? "Continue the work under In Progress"
                                       : "Continue with: " + OneLine(text, 240),
          0, n++);
    }
  }

  void AddCritical() {
    // Commands: one line per distinct command, with its latest outcome.
    struct Agg {
      const summarize::CommandRun* last = nullptr;
      int runs = 0;
      int failures = 0;
      std::string first_failure;
    };
    std::map<std::string, Agg> by_command;
    std::vector<std::string> order;
    for (const summarize::CommandRun& r : facts_.commands) {
      auto [it, inserted] = by_command.try_emplace(r.command);
      if (inserted) order.push_back(r.command);
      Agg& a = it->second;
      a.last = &r;
      a.runs++;
      if (!r.ok) {
        a.failures++;
        if (a.first_failure.empty()) a.first_failure = r.outcome;
      }
    }
    for (const std::string& cmd : order) {
      const Agg& a = by_command[cmd];
      // A look-up that worked keeps only the values it printed.
      if (a.last->inspection && a.last->ok && a.last->values.empty()) continue;
      if (!a.last->ok && a.last->outcome != "cancelled") continue;  // its error line says it all
      std::string line = "- Ran " + Quote(cmd);
      if (a.runs > 1) line += " (" + std::to_string(a.runs) + " times)";
      line += " -> " + a.last->outcome;
      if (!a.last->detail.empty()) line += ": " + a.last->detail;
      if (!a.last->values.empty()) {
        // What it printed that a later step may rely on (a measured number,
        // a config value, an exact error text), not the whole output.
        line += "; printed: ";
        for (size_t i = 0; i < a.last->values.size(); ++i) {
          if (i > 0) line += " | ";
          line += a.last->values[i];
        }
      }
      if (a.last->ok && a.failures > 0) line += " (failed earlier: " + a.first_failure + ")";
      bool test_like = !a.last->detail.empty() && a.last->ok;
      Add(kCritical, line, a.last->ok ? (test_like ? 2 : 3) : 1, a.last->order);
    }
    for (const summarize::ErrorRecord& e : facts_.errors) {
      if (ShownAsBlocked(e)) continue;
      std::string line = "- Error in " + e.where;
      if (!e.outcome.empty()) line += " (" + e.outcome + ")";
      if (e.count > 1) line += " (" + std::to_string(e.count) + " times)";
      line += ": " + e.message;
      if (e.resolved_at) {
        line += " -> resolved (later " + e.resolved_by + ")";
      } else {
        line += " -> NOT resolved";
      }
      int priority = e.inspection ? 4 : e.is_command ? 1 : (e.resolved_at ? 4 : 2);
      Add(kCritical, line, priority, e.order);
    }
    // Files only read (modified ones are listed under Done).
    std::vector<std::string> read;
    for (const std::string& l : previous_.lines[kCritical]) {
      if (l.rfind("Files read:", 0) == 0) {
        for (std::string& f : BacktickedPaths(l)) read.push_back(std::move(f));
      }
    }
    std::set<std::string> modified(facts_.modified_order.begin(), facts_.modified_order.end());
    for (const std::string& l : previous_.lines[kDone]) {
      if (l.rfind("Files modified:", 0) == 0) {
        for (std::string& f : BacktickedPaths(l)) modified.insert(std::move(f));
      }
    }
    read.erase(std::remove_if(read.begin(), read.end(),
                              [&](const std::string& f) { return modified.count(f) > 0; }),
               read.end());
    if (request_.kind != SummaryKind::kTurnPrefix) {
      modified.insert(request_.modified_files.begin(), request_.modified_files.end());
    }
    std::set<std::string> listed(read.begin(), read.end());
    for (const std::string& f : facts_.read_order) {
      if (!modified.count(f) && listed.insert(f).second) read.push_back(f);
    }
    if (request_.kind != SummaryKind::kTurnPrefix) {
      for (const std::string& f : request_.read_files) {
        if (!modified.count(f) && listed.insert(f).second) read.push_back(f);
      }
    }
    if (!read.empty()) {
      Add(kCritical, "- Files read: " + FileList(read, 40), 3, 1LL << 40);
    }
    for (const std::string& b : facts_.branch_notes) {
      Parsed p = ParseSummary(b);
      std::string what = p.lines[kGoal].empty() ? OneLine(b, 240) : OneLine(p.lines[kGoal][0], 240);
      Add(kCritical, "- An abandoned branch explored: " + what, 2, 0);
    }
    size_t notes = facts_.notes.size();
    for (size_t i = notes > 3 ? notes - 3 : 0; i < notes; ++i) {
      Add(kCritical, "- Note (" + facts_.notes[i] + ")", 3, static_cast<int64_t>(i));
    }
    // "Last assistant message" is true only of a summary nothing follows: with
    // later messages (a split turn, the kept tail) it would name one that is
    // not the last, and the context holds the later ones anyway.
    const bool nothing_follows = LaterMessageCount(request_) == 0;
    int64_t n = -800000;
    for (const std::string& l : previous_.lines[kCritical]) {
      if (SupersededCommandLine(l) || l.rfind("Files read:", 0) == 0) continue;
      if (l.rfind("Last assistant message:", 0) == 0 &&
          (!facts_.last_assistant_text.empty() || !nothing_follows))
        continue;
      bool is_error = l.rfind("Error in `", 0) == 0;
      // A fenced block (a tree, a snippet) stays verbatim, without a bullet.
      Add(kCritical, l.rfind("```", 0) == 0 ? l : "- " + Rejudge(l), is_error ? 2 : 3, n++, true);
    }
    if (nothing_follows && !facts_.last_assistant_text.empty()) {
      Add(kCritical, "- Last assistant message: \"" + facts_.last_assistant_text + "\"", 2,
          LastOrder(), true);
    }
  }

  // Revised statements never appear as current, wherever they were quoted
  // (a request line, a previous summary's Done list).
  void ScrubRetired() {
    for (Item& it : items_) {
      if (!it.scrub) continue;
      for (const std::string& r : retired_) {
        if (r.size() < 12) continue;
        size_t p;
        while ((p = it.text.find(r)) != std::string::npos) it.text.erase(p, r.size());
      }
    }
    items_.erase(std::remove_if(items_.begin(), items_.end(),
                                [](const Item& it) {
                                  if (!it.scrub) return false;
                                  std::string_view t = it.text;
                                  for (std::string_view m : {"- [x] ", "- [ ] ", "- "}) {
                                    if (t.rfind(m, 0) == 0) {
                                      t.remove_prefix(m.size());
                                      break;
                                    }
                                  }
                                  t = TrimView(t);
                                  // Nothing left but a parenthetical file note.
                                  return t.empty() || t.front() == '(';
                                }),
                 items_.end());
  }

  // The same line twice (a request repeated, carried from the previous
  // summary and seen again) is kept once, at its latest position.
  void Dedupe() {
    std::map<std::pair<int, std::string>, size_t> last;
    for (size_t i = 0; i < items_.size(); ++i) last[{items_[i].sec, items_[i].text}] = i;
    std::vector<Item> kept;
    kept.reserve(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      if (last[{items_[i].sec, items_[i].text}] == i) kept.push_back(std::move(items_[i]));
    }
    items_ = std::move(kept);
  }

  // Paths in backticks ("`a`, `b`") of one of our own list lines.
  static std::vector<std::string> BacktickedPaths(std::string_view line) {
    std::vector<std::string> out;
    size_t p = 0;
    while ((p = line.find('`', p)) != std::string_view::npos) {
      size_t e = line.find('`', p + 1);
      if (e == std::string_view::npos) break;
      out.emplace_back(line.substr(p + 1, e - p - 1));
      p = e + 1;
    }
    return out;
  }

  // A previous "Error in `cmd` ... -> NOT resolved" line, re-judged with the
  // new runs.
  std::string Rejudge(const std::string& line) const {
    constexpr std::string_view kOpen = " -> NOT resolved";
    if (line.rfind("Error in `", 0) != 0) return line;
    size_t tail = line.rfind(kOpen);
    if (tail == std::string::npos || tail + kOpen.size() != line.size()) return line;
    size_t end = line.find('`', 10);
    if (end == std::string::npos) return line;
    const summarize::CommandRun* r = LaterSuccess(line.substr(10, end - 10));
    if (r == nullptr) return line;
    return line.substr(0, tail) + " -> resolved (later `" + r->command + "` " + r->outcome + ")";
  }

  // A successful run of the same command in the new messages.
  const summarize::CommandRun* LaterSuccess(const std::string& cmd) const {
    auto it = ok_commands_.find(cmd);
    return it == ok_commands_.end() ? nullptr : it->second;
  }

  // A previous "Ran `cmd` ..." line is replaced by a newer run of that command.
  bool SupersededCommandLine(const std::string& line) const {
    if (line.rfind("Ran `", 0) != 0) return false;
    size_t end = line.find('`', 5);
    if (end == std::string::npos) return false;
    if (ran_commands_.empty()) {
      for (const summarize::CommandRun& r : facts_.commands) ran_commands_.insert(r.command);
    }
    return ran_commands_.count(line.substr(5, end - 5)) > 0;
  }

  const SummaryRequest& request_;
  Facts facts_;
  Parsed previous_;
  std::vector<Statement> prev_constraints_;
  std::vector<Statement> prev_decisions_;
  int64_t goal_order_ = -1;
  std::vector<Statement> later_;
  std::set<std::string> later_reads_;  // files read in the later messages
  std::optional<std::map<std::string, std::string>> reads_since_;  // FilesReadSince()
  std::string goal_text_;  // the request quoted as the goal (AddGoal)
  std::vector<Statement> request_values_;
  std::set<std::string> retired_;
  std::vector<Item> items_;
  std::map<std::string, const summarize::CommandRun*> ok_commands_;
  mutable std::set<std::string> ran_commands_;
};

// ---------------------------------------------------------------------------
// Rendering and budget
// ---------------------------------------------------------------------------

struct Layout {
  struct Section {
    std::string heading;  // "## Goal"; "### Done" for subsections
    std::vector<Sec> sources;
    bool numbered = false;
    bool none_if_empty = true;
  };
  std::vector<Section> sections;
};

Layout LayoutFor(SummaryKind kind) {
  Layout l;
  auto sec = [&l](std::string heading, std::vector<Sec> sources, bool numbered = false,
                  bool none = true) {
    l.sections.push_back({std::move(heading), std::move(sources), numbered, none});
  };
  switch (kind) {
    case SummaryKind::kTurnPrefix:
      sec("## Original Request", {kGoal, kConstraints});
      sec("## Early Progress", {kDone, kInProgress, kDecisions, kBlocked});
      sec("## Context for Suffix", {kNext, kCritical});
      break;
    case SummaryKind::kBranch:
      sec("## Goal", {kGoal});
      sec("## Constraints & Preferences", {kConstraints});
      sec("## Progress", {}, false, false);
      sec("### Done", {kDone, kCritical});
      sec("### In Progress", {kInProgress});
      sec("### Blocked", {kBlocked});
      sec("## Key Decisions", {kDecisions});
      sec("## Next Steps", {kNext}, true);
      break;
    case SummaryKind::kHandoff:
      sec("## Goal", {kGoal});
      sec("## Constraints & Preferences", {kConstraints});
      sec("## Progress", {}, false, false);
      sec("### Done", {kDone});
      sec("### In Progress", {kInProgress});
      sec("### Pending", {kBlocked});
      sec("## Key Decisions", {kDecisions});
      sec("## Critical Context", {kCritical});
      sec("## Next Steps", {kNext}, true);
      break;
    default:
      sec("## Goal", {kGoal});
      sec("## Constraints & Preferences", {kConstraints});
      sec("## Progress", {}, false, false);
      sec("### Done", {kDone});
      sec("### In Progress", {kInProgress});
      sec("### Blocked", {kBlocked});
      sec("## Key Decisions", {kDecisions});
      sec("## Next Steps", {kNext}, true);
      sec("## Critical Context", {kCritical});
      break;
  }
  return l;
}

std::string Render(const Layout& layout, const std::vector<Item>& items) {
  std::string out;
  for (const Layout::Section& s : layout.sections) {
    if (!out.empty()) out += s.heading.rfind("###", 0) == 0 ? "\n" : "\n\n";
    out += s.heading;
    out += '\n';
    if (s.sources.empty()) continue;
    int number = 0;
    bool any = false;
    for (Sec src : s.sources) {
      // Items of a section keep insertion order: extraction order is meaningful.
      for (const Item& it : items) {
        if (it.dropped || it.sec != src) continue;
        any = true;
        if (s.numbered) {
          std::string_view t = it.text;
          if (t.rfind("- ", 0) == 0) t.remove_prefix(2);
          out += std::to_string(++number) + ". ";
          out += t;
        } else if (src == kGoal || it.text.rfind("- ", 0) == 0 || it.text.rfind("```", 0) == 0) {
          out += it.text;
        } else {
          out += "- " + it.text;
        }
        out += '\n';
      }
    }
    if (!any && s.none_if_empty) out += "(none)\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Drops items, least important and oldest first, until the text fits.
void FitToBudget(std::vector<Item>& items, const Layout& layout, size_t budget_bytes) {
  size_t total = Render(layout, items).size();
  if (total <= budget_bytes) return;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].priority > 0) candidates.push_back(i);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    if (items[a].priority != items[b].priority) return items[a].priority > items[b].priority;
    return items[a].order < items[b].order;
  });
  for (size_t idx : candidates) {
    if (total <= budget_bytes) break;
    items[idx].dropped = true;
    total = total > items[idx].text.size() + 1 ? total - items[idx].text.size() - 1 : 0;
  }
}

std::string HardCap(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  constexpr std::string_view kMarker = "\n[... summary cut to its output limit]";
  size_t cut = max_bytes > kMarker.size() ? max_bytes - kMarker.size() : 0;
  size_t nl = text.rfind('\n', cut);
  if (nl != std::string::npos && nl > cut / 2) cut = nl;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  text += kMarker;
  return text;
}

std::string ShortSummary(const Facts& f) {
  std::string out;
  if (!f.modified_order.empty()) {
    out += "I changed ";
    size_t n = std::min<size_t>(f.modified_order.size(), 5);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) out += i + 1 == n ? " and " : ", ";
      out += Quote(f.modified_order[i]);
    }
    if (f.modified_order.size() > n) {
      out += " (and " + std::to_string(f.modified_order.size() - n) + " more files)";
    }
    if (!f.requests.empty()) out += " while working on: " + f.requests.back().text;
    out += '.';
  } else if (!f.requests.empty()) {
    out += "I worked on: " + f.requests.back().text;
    if (out.back() != '.') out += '.';
  }
  size_t open = 0;
  std::string first_open;
  for (const summarize::ErrorRecord& e : f.errors) {
    if (!e.resolved_at && e.is_command) {
      if (open++ == 0) first_open = e.where + ": " + e.message;
    }
  }
  if (open > 0) {
    out += " Still failing: " + first_open + ".";
  } else if (!f.plan.empty()) {
    out += " Next: " + f.plan.front();
  }
  return OneLine(out, 1200);
}

void BoostFocus(std::vector<Item>& items, std::string_view instructions) {
  if (instructions.empty()) return;
  std::string lower = Lower(instructions);
  std::vector<std::string> words;
  size_t i = 0;
  while (i < lower.size()) {
    while (i < lower.size() && !std::isalnum(static_cast<unsigned char>(lower[i]))) ++i;
    size_t b = i;
    while (i < lower.size() && (std::isalnum(static_cast<unsigned char>(lower[i])) ||
                                lower[i] == '_' || lower[i] == '.' || lower[i] == '/')) {
      ++i;
    }
    if (i - b >= 4) words.emplace_back(lower.substr(b, i - b));
  }
  for (Item& it : items) {
    if (it.priority <= 1) continue;
    std::string t = Lower(it.text);
    for (const std::string& w : words) {
      if (t.find(w) != std::string::npos) {
        it.priority = 1;
        break;
      }
    }
  }
}

// What the messages after the summarized ones establish
// (SummaryRequest::later_messages): their constraints, decisions and goal
// statements, ordered after every summarized message, to retire what they
// revise; and an error of `facts` that a later run of the same command fixed
// is resolved (a pipeline's exit status proves nothing, as in the facts).
Result<LaterFacts> ReadLaterMessages(const SummaryRequest& request, Facts* facts) {
  LaterFacts result;
  std::vector<Statement>& out = result.statements;
  if (request.later_messages.empty()) return result;
  AwaitMessages(request, request.messages.size() + LaterMessageCount(request));
  auto order = static_cast<int64_t>(request.messages.size());
  std::map<std::string, std::string> fixed;  // command -> how it was fixed
  for (std::span<const Message> part : request.later_messages) {
    COMPACTOR_ASSIGN_OR_RETURN(Facts later,
                               summarize::ExtractSummaryFacts(part, request.is_cancelled));
    std::vector<Statement> corrections = CorrectionStatements(later);
    for (std::vector<Statement>* list :
         {&later.constraints, &later.decisions, &later.goal_statements, &corrections}) {
      for (Statement& st : *list) {
        st.order += order;
        out.push_back(std::move(st));
      }
    }
    for (const summarize::CommandRun& r : later.commands) {
      if (r.ok && r.status_known) fixed.try_emplace(r.command, "`" + r.command + "` exit 0");
    }
    for (const auto& [path, activity] : later.files) {
      if (activity.reads > 0) result.files_read.insert(path);
    }
    order += static_cast<int64_t>(part.size());
  }
  for (summarize::ErrorRecord& e : facts->errors) {
    if (e.resolved_at || !e.is_command) continue;
    auto it = fixed.find(e.key);
    if (it == fixed.end()) continue;
    e.resolved_at = order;
    e.resolved_by = it->second;
  }
  return result;
}

class OfflineSummarizer : public Summarizer {
 public:
  explicit OfflineSummarizer(const OfflineSummarizerOptions& options) : options_(options) {}

  std::string_view name() const override { return "offline"; }
  bool ReadsMessagesInOrder() const override { return true; }
  bool ReadsLaterMessages() const override { return true; }

  Result<std::string> Summarize(const SummaryRequest& request) const override {
    COMPACTOR_RETURN_IF_ERROR(CheckSummarizable(request));
    SummaryKind kind = EffectiveKind(request);
    // Reads the messages in order: the facts come from one pass, so it can
    // start while the caller is still parsing later messages.
    std::function<void(size_t)> wait;
    if (request.wait_for_messages) wait = [&request](size_t n) { AwaitMessages(request, n); };
    COMPACTOR_ASSIGN_OR_RETURN(
        Facts facts, summarize::ExtractSummaryFacts(request.messages, request.is_cancelled, wait));
    if (request.is_cancelled && request.is_cancelled()) {
      return Status::Cancelled("summarization cancelled");
    }
    if (kind == SummaryKind::kShort) {
      std::string s = ShortSummary(facts);
      if (s.empty()) return Status::FailedPrecondition("nothing to summarize for a short summary");
      return s;
    }
    // A previous summary is already dense: carry it at about half its size
    // on top of the ratio of the new material, so chained updates level off.
    int64_t input_tokens = facts.input_chars / 4;
    int64_t max_out =
        request.max_output_tokens > 0 ? request.max_output_tokens : DefaultMaxOutputTokens(kind);
    int64_t budget =
        static_cast<int64_t>(options_.target_ratio * static_cast<double>(input_tokens)) +
        static_cast<int64_t>(request.previous_summary.size()) / 8;
    budget = std::max(budget, options_.min_budget_tokens);
    budget = std::min(budget, max_out);

    COMPACTOR_ASSIGN_OR_RETURN(LaterFacts later, ReadLaterMessages(request, &facts));
    Composer composer(request, std::move(facts), std::move(later));
    std::vector<Item> items = composer.Build();
    BoostFocus(items, request.custom_instructions);
    Layout layout = LayoutFor(kind);
    FitToBudget(items, layout, static_cast<size_t>(budget) * 4);
    std::string text = HardCap(Render(layout, items), static_cast<size_t>(max_out) * 4);
    return text;
  }

 private:
  OfflineSummarizerOptions options_;
};

}  // namespace

std::unique_ptr<Summarizer> NewOfflineSummarizer(const OfflineSummarizerOptions& options) {
  return std::make_unique<OfflineSummarizer>(options);
}

}  // namespace compactor
