// Builds small pi v3 session files in memory for preparation tests. Message
// shapes follow tests/oracle/lib/quirks.mjs so sizes match pi's estimate:
// U(n) = ceil(n / 4) tokens; A(n, tool) = ceil((n + 19) / 4) with a read tool call.
#ifndef COMPACTOR_TESTS_PREPARE_SESSION_BUILDER_H_
#define COMPACTOR_TESTS_PREPARE_SESSION_BUILDER_H_

#include <fmt/format.h>

#include <string>
#include <vector>

namespace compactor::testing_session {

class SessionBuilder {
 public:
  SessionBuilder() {
    lines_.push_back(R"({"type":"session","version":3,"id":"0190f000-0000-7000-8000-000000000001",)"
                     R"("timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/dev/project"})");
  }

  // Appends a raw entry (its JSON after the common fields); returns its id.
  std::string Add(const std::string& type, const std::string& fields) {
    std::string id = fmt::format("e{:07d}", next_++);
    std::string parent = last_.empty() ? "null" : "\"" + last_ + "\"";
    lines_.push_back(fmt::format(
        R"({{"type":"{}","id":"{}","parentId":{},"timestamp":"2026-01-01T00:{:02d}:{:02d}.000Z"{}}})",
        type, id, parent, (next_ / 60) % 60, next_ % 60, fields.empty() ? "" : "," + fields));
    last_ = id;
    return id;
  }
  // Continues the tree from `id` (a branch); the next entry becomes its child.
  void SetLeaf(const std::string& id) { last_ = id; }

  std::string U(int chars, char c = 'u') {
    return Add("message", fmt::format(R"("message":{{"role":"user","content":"{}","timestamp":1}})",
                                      std::string(chars, c)));
  }
  std::string A(int chars, bool tool = false, const std::string& tool_name = "read",
                const std::string& path = "x.ts") {
    std::string blocks = fmt::format(R"({{"type":"text","text":"{}"}})", std::string(chars, 'a'));
    if (tool) {
      blocks += fmt::format(
          R"(,{{"type":"toolCall","id":"t{}","name":"{}","arguments":{{"path":"{}"}}}})", next_,
          tool_name, path);
    }
    return Add(
        "message",
        fmt::format(
            R"("message":{{"role":"assistant","content":[{}],"api":"x","provider":"p","model":"m",)"
            R"("usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,)"
            R"("cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},)"
            R"("stopReason":"{}","timestamp":1}})",
            blocks, tool ? "toolUse" : "stop"));
  }
  std::string T(int chars) {
    return Add("message",
               fmt::format(R"("message":{{"role":"toolResult","toolCallId":"t","toolName":"read",)"
                           R"("content":[{{"type":"text","text":"{}"}}],"isError":false,)"
                           R"("timestamp":1}})",
                           std::string(chars, 'r')));
  }
  std::string Bash(int chars) {
    return Add("message",
               fmt::format(R"("message":{{"role":"bashExecution","command":"ls","output":"{}",)"
                           R"("exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}})",
                           std::string(chars, 'b')));
  }
  std::string Setting() { return Add("thinking_level_change", R"("thinkingLevel":"high")"); }
  std::string Label(const std::string& target) {
    return Add("label", fmt::format(R"("targetId":"{}","label":"here")", target));
  }
  std::string CustomMessage(int chars) {
    return Add("custom_message", fmt::format(R"("customType":"x","content":"{}","display":true)",
                                             std::string(chars, 'c')));
  }
  std::string BranchSummary(const std::string& summary, const std::string& from) {
    return Add("branch_summary", fmt::format(R"("fromId":"{}","summary":"{}")", from, summary));
  }
  std::string Compaction(const std::string& summary, const std::string& first_kept,
                         const std::string& details_json = "", bool from_hook = false) {
    std::string fields = fmt::format(
        R"("summary":"{}","firstKeptEntryId":"{}","tokensBefore":1000)", summary, first_kept);
    if (!details_json.empty()) fields += ",\"details\":" + details_json;
    if (from_hook) fields += ",\"fromHook\":true";
    return Add("compaction", fields);
  }

  std::string Jsonl() const {
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::vector<std::string> lines_;
  std::string last_;
  int next_ = 1;
};

}  // namespace compactor::testing_session

#endif  // COMPACTOR_TESTS_PREPARE_SESSION_BUILDER_H_
