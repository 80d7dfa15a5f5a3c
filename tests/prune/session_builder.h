// Hand-built pi sessions for the prune and mask tests: a linear chain of
// user / assistant tool call / tool result entries whose sizes are chosen
// exactly (a text of 4*n ASCII characters is n estimated tokens).
#ifndef COMPACTOR_TESTS_PRUNE_SESSION_BUILDER_H_
#define COMPACTOR_TESTS_PRUNE_SESSION_BUILDER_H_

#include <string>

#include "compactor/entries.h"
#include "compactor/js_json.h"

namespace compactor::testing_prune {

class SessionBuilder {
 public:
  SessionBuilder() {
    text_ =
        R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})";
    text_ += "\n";
  }

  // Text of exactly `tokens` estimated tokens (4 ASCII characters each), one
  // line per 10 tokens.
  static std::string TextOfTokens(int tokens) {
    std::string s;
    for (int i = 0; i < tokens; ++i) s += (i % 10 == 9) ? "abc\n" : "abcd";
    return s;
  }

  std::string User(const std::string& text) {
    std::string m = R"({"role":"user","content":)";
    AppendJsString(m, text);
    m += R"(,"timestamp":1})";
    return Add(m);
  }

  // An assistant message calling `tool` with `args_json`, then its result of
  // `tokens` estimated tokens. Returns the result's entry id.
  std::string ToolPair(const std::string& tool, const std::string& args_json, int tokens,
                       bool already_pruned = false, bool is_error = false) {
    std::string call_id = "call" + std::to_string(++calls_);
    std::string a =
        R"({"role":"assistant","content":[{"type":"toolCall","id":")" + call_id + R"(","name":)";
    AppendJsString(a, tool);
    a +=
        R"(,"arguments":)" + args_json +
        R"(}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2},"stopReason":"toolUse","timestamp":2})";
    Add(a);
    std::string r = R"({"role":"toolResult","toolCallId":")" + call_id + R"(","toolName":)";
    AppendJsString(r, tool);
    r += R"(,"content":[{"type":"text","text":)";
    AppendJsString(r, TextOfTokens(tokens));
    r += R"(}],"details":{"k":1},"isError":)";
    r += is_error ? "true" : "false";
    r += R"(,"timestamp":3)";
    if (already_pruned) r += R"(,"prunedAt":123)";
    r += "}";
    return Add(r);
  }

  // Appends a raw message entry; returns its id.
  std::string Add(const std::string& message_json) {
    std::string id = "e" + std::to_string(++n_);
    text_ += MakeMessageEntry({id, last_, "2026-01-01T00:00:01.000Z"}, message_json);
    text_ += "\n";
    last_ = id;
    return id;
  }
  // Appends a raw line (any entry); `id` becomes the parent of the next entry.
  void AddLine(const std::string& line, const std::string& id) {
    text_ += line + "\n";
    last_ = id;
  }
  void SetParent(const std::string& id) { last_ = id; }
  const std::string& last() const { return last_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string last_;
  int n_ = 0;
  int calls_ = 0;
};

}  // namespace compactor::testing_prune

#endif  // COMPACTOR_TESTS_PRUNE_SESSION_BUILDER_H_
