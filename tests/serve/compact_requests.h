// Agent requests of the three APIs for the proxy compaction tests: `turns`
// turns of user text, a tool call and its result (the last pair is the
// newest), `words` words per text.
#ifndef COMPACTOR_TESTS_SERVE_COMPACT_REQUESTS_H_
#define COMPACTOR_TESTS_SERVE_COMPACT_REQUESTS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace compactor::testing {

using Json = nlohmann::json;

inline std::string Filler(int turn, int words) {
  std::string s = "turn " + std::to_string(turn) + ":";
  for (int i = 0; i < words; ++i) s += " word" + std::to_string((turn * 7 + i) % 97);
  return s;
}

// An Anthropic agent request: `turns` turns of user text, a tool call and its
// result, then a final tool call and result (the newest pair).
inline Json AnthropicRequest(int turns, int words) {
  Json messages = Json::array();
  for (int t = 0; t < turns; ++t) {
    std::string id = "toolu_" + std::to_string(t);
    messages.push_back({{"role", "user"}, {"content", Filler(t, words)}});
    messages.push_back(
        {{"role", "assistant"},
         {"content", Json::array({{{"type", "text"}, {"text", "reading"}},
                                  {{"type", "tool_use"},
                                   {"id", id},
                                   {"name", "read"},
                                   {"input", {{"path", "f" + std::to_string(t)}}}}})}});
    messages.push_back({{"role", "user"},
                        {"content", Json::array({{{"type", "tool_result"},
                                                  {"tool_use_id", id},
                                                  {"content", Filler(t + 1000, words)}}})}});
  }
  return {{"model", "claude-sonnet-4-5"},
          {"max_tokens", 64},
          {"system", "You are a coding agent."},
          {"tools", Json::array({{{"name", "read"},
                                  {"description", "read a file"},
                                  {"input_schema", {{"type", "object"}}}}})},
          {"messages", messages}};
}

inline Json ChatRequest(int turns, int words) {
  Json messages = Json::array({{{"role", "system"}, {"content", "You are a coding agent."}}});
  for (int t = 0; t < turns; ++t) {
    std::string id = "call_" + std::to_string(t);
    messages.push_back({{"role", "user"}, {"content", Filler(t, words)}});
    messages.push_back(
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls", Json::array({{{"id", id},
                                      {"type", "function"},
                                      {"function", {{"name", "read"}, {"arguments", "{}"}}}}})}});
    messages.push_back(
        {{"role", "tool"}, {"tool_call_id", id}, {"content", Filler(t + 1000, words)}});
  }
  return {
      {"model", "gpt-4o"},
      {"messages", messages},
      {"tools", Json::array({{{"type", "function"},
                              {"function", {{"name", "read"}, {"parameters", Json::object()}}}}})}};
}

inline Json ResponsesRequest(int turns, int words) {
  Json input = Json::array();
  for (int t = 0; t < turns; ++t) {
    std::string id = "call_" + std::to_string(t);
    input.push_back({{"type", "message"}, {"role", "user"}, {"content", Filler(t, words)}});
    input.push_back(
        {{"type", "function_call"}, {"call_id", id}, {"name", "read"}, {"arguments", "{}"}});
    input.push_back(
        {{"type", "function_call_output"}, {"call_id", id}, {"output", Filler(t + 1000, words)}});
  }
  return {
      {"model", "gpt-5"},
      {"instructions", "You are a coding agent."},
      {"store", false},
      {"input", input},
      {"tools",
       Json::array({{{"type", "function"}, {"name", "read"}, {"parameters", Json::object()}}})}};
}

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SERVE_COMPACT_REQUESTS_H_
