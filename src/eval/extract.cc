// Rule-based fact extraction from real sessions (docs/quality.md,
// "Extracted facts"). Only what a rule can find reliably: the goal (first user
// message), files, commands with outcomes and errors. Constraints, decisions
// and next steps need a human or an LLM and are not extracted.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "compactor/context.h"
#include "compactor/eval.h"
#include "eval/rules.h"
#include "util/json_scan.h"

namespace compactor {
namespace {

std::string FirstSentence(std::string_view text, size_t max_len) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text.remove_prefix(start);
  size_t end = text.size();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n' || ((c == '.' || c == '?' || c == '!') &&
                      (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n'))) {
      end = i;
      break;
    }
  }
  if (end > max_len) {
    // Cut at a space so the text still ends on a word boundary.
    size_t space = text.rfind(' ', max_len);
    end = space == std::string_view::npos || space == 0 ? max_len : space;
  }
  // Do not cut inside a UTF-8 sequence.
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;
  std::string out(text.substr(0, end));
  while (!out.empty() && (out.back() == ' ' || out.back() == ',')) out.pop_back();
  return out;
}

std::string ResultText(const Message& m) {
  if (m.content_is_string) return m.content_string;
  std::string out;
  for (const ContentBlock& b : m.content)
    if (b.kind == ContentBlock::Kind::kText) out += (out.empty() ? "" : "\n") + b.text;
  return out;
}

// pi's bash tool appends "Command exited with code N" to failing output.
std::optional<int> ExitCodeOf(std::string_view text) {
  static const std::regex re("(?:Command )?exited with code (\\d+)");
  std::match_results<std::string_view::const_iterator> m;
  std::optional<int> code;
  auto begin = text.begin();
  while (std::regex_search(begin, text.end(), m, re)) {
    code = std::stoi(m[1].str());
    begin = m[0].second;
  }
  return code;
}

// The most informative line of an error output: the first that names an
// error, else the first non-empty line that is not the exit-code line.
std::string ErrorLine(std::string_view text) {
  static const std::regex informative(
      "(error|Error|ERROR|failed|FAILED|cannot|Cannot|not found|No such file|Could not|"
      "Exception|denied|invalid|Invalid)");
  std::string first;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string_view::npos) continue;
    line.remove_prefix(a);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.starts_with("Command exited with code")) continue;
    if (first.empty()) first = std::string(line);
    if (std::regex_search(line.begin(), line.end(), informative)) return FirstSentence(line, 160);
  }
  return FirstSentence(first, 160);
}

std::string Relative(const std::string& path, const std::string& cwd) {
  if (cwd.empty() || path.size() <= cwd.size() + 1) return "";
  if (path.compare(0, cwd.size(), cwd) == 0 && path[cwd.size()] == '/')
    return path.substr(cwd.size() + 1);
  return "";
}

// pi's bash tool prints nothing about a zero exit, so a successful command
// needs only its text; a failing one needs its failure nearby.
std::vector<std::vector<std::string>> OutcomeWords(int code) {
  if (code == 0) return {};
  std::string c = std::to_string(code);
  return {{"exit " + c, "exit code " + c, "exited with code " + c, "failed", "fails", "failing",
           "failure", "error", "errors"}};
}

}  // namespace

namespace internal {

bool IsExplorationCommand(std::string_view command) {
  static const std::regex cd_prefix("^\\s*(cd\\s+[^&;]+(&&|;)\\s*)+");
  std::string c = std::regex_replace(std::string(command), cd_prefix, "");
  size_t a = c.find_first_not_of(" \t");
  if (a == std::string::npos) return true;
  c = c.substr(a);
  std::string first = c.substr(0, c.find_first_of(" \t|;&"));
  static const std::set<std::string> kReadOnly = {
      "ls",  "cat", "grep", "rg",    "find", "head", "tail", "wc",    "pwd",  "echo",
      "sed", "awk", "tree", "which", "file", "stat", "du",   "sleep", "less", "diff"};
  if (kReadOnly.count(first)) return true;
  if (first == "git") {
    std::string rest = c.substr(3);
    size_t b = rest.find_first_not_of(" \t");
    std::string sub =
        b == std::string::npos ? "" : rest.substr(b, rest.find_first_of(" \t", b) - b);
    static const std::set<std::string> kGitReadOnly = {"status", "log",  "diff",  "show",
                                                       "branch", "grep", "blame", "remote"};
    return kGitReadOnly.count(sub) > 0;
  }
  return false;
}

}  // namespace internal

namespace {

struct Call {
  std::string tool, key, entry_id;
};

// Walks the messages of the current context once, then turns what it saw
// into facts. Fact ids are numbered in the order facts are found.
class ProbeFactCollector {
 public:
  ProbeFactCollector(const Session& session, FactFile* out) : session_(session), out_(*out) {}

  void Add(const ContextMessage& cm) {
    const Entry& e = session_.entry(cm.entry_index);
    auto parsed = ParseMessage(cm.json());
    if (!parsed.ok()) return;
    const Message& m = *parsed;
    if (m.role == Role::kUser && !have_goal_) {
      AddGoal(m, e);
    } else if (m.role == Role::kAssistant) {
      for (const ContentBlock& b : m.content) {
        if (b.kind == ContentBlock::Kind::kToolCall) AddToolCall(b, e);
      }
    } else if (m.role == Role::kToolResult) {
      AddToolResult(m);
    } else if (m.role == Role::kBashExecution && !m.exclude_from_context) {
      int code = m.exit_code ? static_cast<int>(*m.exit_code) : 0;
      NoteCommand(m.command, code, std::string(e.id));
    }
  }

  // The file, command and error facts, after every message was added.
  void Finish(const std::string& cwd) {
    for (const std::string& p : modified_)
      AddFileFact(FactKind::kFileModified, "modified-", p, cwd);
    for (const std::string& p : read_) {
      if (std::find(modified_.begin(), modified_.end(), p) != modified_.end()) continue;
      AddFileFact(FactKind::kFileRead, "read-", p, cwd);
    }
    for (const std::string& c : command_order_) {
      const CommandState& s = commands_[c];
      Fact f;
      f.id = Id("command-");
      f.kind = FactKind::kCommand;
      f.text = c;
      f.exit_code = s.exit;
      f.qualifiers = OutcomeWords(s.exit);
      f.entry_id = s.entry_id;
      out_.facts.push_back(std::move(f));
    }
    // The same error line twice is one fact (fixed if its last occurrence was).
    std::map<std::string, size_t> seen;
    for (ErrorState& e : errors_) {
      auto it = seen.find(NormalizeForMatch(e.fact.text));
      if (it != seen.end()) {
        out_.facts[it->second].fixed = e.fact.fixed;
        continue;
      }
      seen.emplace(NormalizeForMatch(e.fact.text), out_.facts.size());
      out_.facts.push_back(std::move(e.fact));
    }
  }

 private:
  struct CommandState {
    int exit = 0;
    std::string entry_id;
  };
  struct ErrorState {
    Fact fact;
    std::string tool, key;
  };

  std::string Id(const char* prefix) { return std::string(prefix) + std::to_string(++n_); }

  void AddGoal(const Message& m, const Entry& e) {
    std::string goal = FirstSentence(ResultText(m), 200);
    if (goal.empty()) return;
    Fact f;
    f.id = Id("goal-");
    f.kind = FactKind::kGoal;
    f.text = goal;
    f.entry_id = e.id;
    f.note = "first sentence of the first user message";
    out_.facts.push_back(std::move(f));
    have_goal_ = true;
  }

  void AddToolCall(const ContentBlock& b, const Entry& e) {
    auto parsed = internal::ParseJsonWithinLimit<nlohmann::json>(b.arguments_json);
    Call c{b.tool_name, "", std::string(e.id)};
    if (parsed.ok() && parsed->is_object()) {
      const nlohmann::json& args = *parsed;
      const char* k = b.tool_name == "bash" ? "command" : "path";
      if (args.contains(k) && args[k].is_string()) c.key = args[k].get<std::string>();
    }
    if ((b.tool_name == "edit" || b.tool_name == "write") && !c.key.empty()) {
      if (std::find(modified_.begin(), modified_.end(), c.key) == modified_.end()) {
        modified_.push_back(c.key);
        file_entry_[c.key] = e.id;
      }
    } else if (b.tool_name == "read" && !c.key.empty()) {
      if (std::find(read_.begin(), read_.end(), c.key) == read_.end()) {
        read_.push_back(c.key);
        if (!file_entry_.count(c.key)) file_entry_[c.key] = e.id;
      }
    }
    calls_[b.tool_call_id] = c;
  }

  void AddToolResult(const Message& m) {
    auto it = calls_.find(m.tool_call_id);
    if (it == calls_.end()) return;
    const Call& c = it->second;
    std::string text = ResultText(m);
    if (c.tool == "bash" && !c.key.empty()) {
      int code = ExitCodeOf(text).value_or(m.is_error ? 1 : 0);
      NoteCommand(c.key, code, c.entry_id);
    }
    if (!m.is_error) {
      // A later successful call to the same tool with the same path/command fixes earlier errors.
      for (ErrorState& e : errors_)
        if (e.tool == c.tool && e.key == c.key) e.fact.fixed = true;
      return;
    }
    std::string line = ErrorLine(text);
    if (line.empty()) return;
    ErrorState s;
    s.fact.id = Id("error-");
    s.fact.kind = FactKind::kError;
    s.fact.text = line;
    s.fact.fixed = false;
    s.fact.entry_id = c.entry_id;
    s.fact.note = c.tool + (c.key.empty() ? "" : " " + c.key.substr(0, 80));
    s.tool = c.tool;
    s.key = c.key;
    errors_.push_back(std::move(s));
  }

  void NoteCommand(const std::string& command, int code, const std::string& entry_id) {
    size_t nl = command.find('\n');
    size_t len = nl == std::string::npos ? command.size() : nl;
    // Cut long commands at a space so the text still ends on a word boundary.
    if (len > 120) {
      size_t space = command.rfind(' ', 120);
      len = space == std::string::npos || space == 0 ? 120 : space;
    }
    std::string text = command.substr(0, len);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (text.empty() || internal::IsExplorationCommand(command)) return;
    if (!commands_.count(text)) command_order_.push_back(text);
    commands_[text] = {code, entry_id};
  }

  void AddFileFact(FactKind kind, const char* prefix, const std::string& path,
                   const std::string& cwd) {
    Fact f;
    f.id = Id(prefix);
    f.kind = kind;
    f.text = path;
    if (std::string rel = Relative(path, cwd); !rel.empty()) f.variants.push_back(rel);
    f.entry_id = file_entry_[path];
    out_.facts.push_back(std::move(f));
  }

  const Session& session_;
  FactFile& out_;
  std::vector<std::string> modified_, read_;
  std::map<std::string, std::string> file_entry_;
  std::vector<std::string> command_order_;
  std::map<std::string, CommandState> commands_;
  std::vector<ErrorState> errors_;
  std::map<std::string, Call> calls_;  // toolCallId -> call
  bool have_goal_ = false;
  int n_ = 0;
};

}  // namespace

FactFile ExtractProbeFacts(const Session& session) {
  FactFile out;
  out.session = session.path();
  out.source = "extracted";
  // Facts are what the model sees now: the current context (after any earlier
  // compaction), not entries an earlier compaction already replaced.
  auto context = BuildSessionContext(session);
  if (!context.ok()) return out;
  ProbeFactCollector collector(session, &out);
  for (const ContextMessage& cm : context->messages) collector.Add(cm);
  collector.Finish(session.header().cwd);
  return out;
}

}  // namespace compactor
