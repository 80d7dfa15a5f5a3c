// Fact extraction for the offline summarizer: one linear pass over the
// messages collects the user's requests and constraints, decisions, file
// operations, commands with their outcomes, errors and the latest plan.
// Rendering and budgeting live in offline.cc.
#ifndef COMPACTOR_SRC_SUMMARIZE_EXTRACT_H_
#define COMPACTOR_SRC_SUMMARIZE_EXTRACT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/message.h"
#include "compactor/status.h"

namespace compactor::summarize {

// A statement the user (or the assistant, for decisions) made, in order.
struct Statement {
  int64_t order = 0;   // message index (previous-summary items are negative)
  std::string text;    // one line, clipped
  std::string reason;  // decisions: the rationale ("" when none was stated)
  bool superseded = false;
  // What it is (0 constraint, 1 decision, 2 goal): similarity only retires
  // statements of the same kind; an explicit "instead of" crosses kinds.
  int kind = 0;
  // Decisions: the option turned down in the same sentence ("X over Y", "X,
  // not Y"); shown marked as rejected, never as the decision.
  std::string rejected;
};

// What a user message is, by its form and its place in the conversation: a
// correction revises an earlier statement, a question asks, chatter is an
// acknowledgement, a constraint states a rule or a required value, a task
// asks for work. Never "done": a summary cannot establish that a request was
// fulfilled, so requests are quoted in order, not ticked off.
enum class UserKind { kTask, kConstraint, kCorrection, kQuestion, kChatter };

struct UserMessage {
  int64_t order = 0;
  UserKind kind = UserKind::kTask;
  std::vector<std::string> sentences;  // one line each, clipped
};

struct Request {
  int64_t order = 0;
  std::string text;                    // first sentences, one line, clipped
  std::string full;                    // whole text, one line, clipped longer (the goal)
  std::vector<std::string> sentences;  // first sentences, one line each (to drop revised ones)
  // Work done while this request was the latest one.
  std::vector<std::string> modified;  // unique, in order
  std::vector<std::string> commands;  // normalized, unique, in order
};

struct CommandRun {
  int64_t order = 0;
  std::string command;  // normalized, clipped
  std::string family;   // program + subcommand, for resolution
  bool ok = false;
  bool inspection = false;  // grep, ls, cat, git status...: read-only look-ups
  std::string outcome;      // "exit 0", "exit 2", "cancelled", "timed out", "failed"
  std::string detail;       // error line of a failure, or a result line of a test/build
  // False when the exit status says nothing about the command: a pipeline
  // (`cmd | tail` exits with tail's status). Such a run resolves no error.
  bool status_known = true;
  // Lines of the output that carry values (measured numbers, config values,
  // error texts): the output without its repetitive lines, clipped.
  std::vector<std::string> values;
};

struct ErrorRecord {
  int64_t order = 0;
  std::string where;  // "`npm test`" or "edit src/a.ts"
  std::string key;    // resolution key (command or tool+path)
  std::string family;
  std::string message;  // the error line
  std::string outcome;  // commands: "exit 2", "timed out", ...
  bool is_command = false;
  bool inspection = false;
  int count = 1;
  std::optional<int64_t> resolved_at;  // order of the success that resolved it
  std::string resolved_by;
};

struct FileActivity {
  std::string path;
  int edits = 0, writes = 0, reads = 0;
  int64_t last_order = 0;
};

struct Facts {
  int64_t input_chars = 0;  // size of the summarized text (for the output budget)
  std::vector<Request> requests;
  std::vector<UserMessage> user_messages;  // every user message but slash commands, in order
  std::vector<Statement> constraints;
  std::vector<Statement> decisions;
  std::vector<Statement> goal_statements;     // explicit goal sentences after the first request
  std::vector<std::string> notes;             // custom (extension) messages, latest last
  std::vector<std::string> branch_notes;      // summaries of abandoned branches seen in the span
  std::vector<std::string> prior_summaries;   // compaction summaries inside the span
  std::map<std::string, FileActivity> files;  // by path
  std::vector<std::string> modified_order;    // paths in first-modification order
  std::vector<std::string> read_order;        // paths in first-read order
  std::vector<CommandRun> commands;
  std::vector<ErrorRecord> errors;
  std::vector<std::string> plan;  // the latest stated plan, one item per line
  int64_t plan_order = -1;
  std::string last_assistant_text;   // clipped
  std::string pending_user_message;  // the span ends with this unanswered user message
  std::string last_assistant_error;  // stop reason "error" on the last assistant
};

// Collects from the messages to summarize what the offline summary states
// (goals, constraints, decisions, files, commands, errors, plan). Not the
// eval's probe facts (ExtractProbeFacts in compactor/eval.h), which come from a
// whole session. `is_cancelled` is polled every few hundred messages;
// `wait_for_messages(n)`, when set, is called before messages[n - 1] is read.
Result<Facts> ExtractSummaryFacts(std::span<const Message> messages,
                                  const std::function<bool()>& is_cancelled,
                                  const std::function<void(size_t)>& wait_for_messages = nullptr);

// Revised statements: marks earlier statements superseded by later ones (the
// later one wins). Applied within and across the constraint and decision lists.
void ApplySupersession(std::vector<Statement*>& timeline);
// The same rules applied to every pair in the look-back window, one by one:
// the reference ApplySupersession (which only visits pairs that share a word)
// must agree with, for tests.
void ApplySupersessionPairwise(std::vector<Statement*>& timeline);

// Text helpers exposed for tests.
std::string OneLine(std::string_view text, size_t max_bytes);
std::string CommandFamily(std::string_view normalized);
bool IsConstraintSentence(std::string_view sentence);
// Same, with the sentence already lower-cased and its cue bits matched.
bool IsConstraintSentence(std::string_view sentence, std::string_view lower, uint32_t cues);

}  // namespace compactor::summarize

#endif  // COMPACTOR_SRC_SUMMARIZE_EXTRACT_H_
