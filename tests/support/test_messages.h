// Builders for messages constructed in code (summarizer tests).
#ifndef COMPACTOR_TESTS_SUPPORT_TEST_MESSAGES_H_
#define COMPACTOR_TESTS_SUPPORT_TEST_MESSAGES_H_

#include <optional>
#include <string>
#include <vector>

#include "compactor/message.h"

namespace compactor::summarize_test {

inline ContentBlock Text(const std::string& t) {
  ContentBlock b;
  b.kind = ContentBlock::Kind::kText;
  b.type = "text";
  b.text = t;
  return b;
}

inline ContentBlock Thinking(const std::string& t) {
  ContentBlock b;
  b.kind = ContentBlock::Kind::kThinking;
  b.type = "thinking";
  b.text = t;
  return b;
}

// `args` is the canonical JSON of the arguments object.
inline ContentBlock Call(const std::string& id, const std::string& name, const std::string& args) {
  ContentBlock b;
  b.kind = ContentBlock::Kind::kToolCall;
  b.type = "toolCall";
  b.tool_call_id = id;
  b.tool_name = name;
  b.arguments_json = args;
  return b;
}

inline Message User(const std::string& text) {
  Message m;
  m.role = Role::kUser;
  m.role_name = "user";
  m.content_is_string = true;
  m.content_string = text;
  return m;
}

inline Message Assistant(std::vector<ContentBlock> blocks) {
  Message m;
  m.role = Role::kAssistant;
  m.role_name = "assistant";
  m.content = std::move(blocks);
  m.stop_reason = "toolUse";
  return m;
}

inline Message ToolResult(const std::string& id, const std::string& tool, const std::string& text,
                          bool is_error = false) {
  Message m;
  m.role = Role::kToolResult;
  m.role_name = "toolResult";
  m.tool_call_id = id;
  m.tool_name = tool;
  m.is_error = is_error;
  m.content = {Text(text)};
  return m;
}

inline Message Bash(const std::string& command, const std::string& output,
                    std::optional<double> exit_code) {
  Message m;
  m.role = Role::kBashExecution;
  m.role_name = "bashExecution";
  m.command = command;
  m.output = output;
  m.exit_code = exit_code;
  return m;
}

}  // namespace compactor::summarize_test

#endif  // COMPACTOR_TESTS_SUPPORT_TEST_MESSAGES_H_
