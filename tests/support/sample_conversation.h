// A realistic coding conversation with planted facts, built in code: the
// offline summarizer's tests and its benchmark (bench/summarize_bench.cc)
// share it.
#ifndef COMPACTOR_TESTS_SUPPORT_SAMPLE_CONVERSATION_H_
#define COMPACTOR_TESTS_SUPPORT_SAMPLE_CONVERSATION_H_

#include <string>
#include <utility>
#include <vector>

#include "compactor/message.h"
#include "support/test_messages.h"

namespace compactor::summarize_test {

// A file body of realistic size (what read tools return).
inline std::string SourceFile(const std::string& name, int lines) {
  std::string out;
  for (int i = 1; i <= lines; ++i) {
    out += std::to_string(i) + "\tlet value_" + std::to_string(i) + " = compute(&" + name +
           "_state, " + std::to_string(i * 7) + "); // keep the parser streaming\n";
  }
  return out;
}

inline std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

class Convo {
 public:
  std::vector<Message> messages;

  void UserSays(const std::string& t) { messages.push_back(User(t)); }
  void AssistantSays(const std::string& t) { messages.push_back(Assistant({Text(t)})); }
  void Read(const std::string& path, const std::string& body) {
    std::string id = NextId();
    messages.push_back(Assistant({Call(id, "read", "{\"path\":" + Json(path) + "}")}));
    messages.push_back(ToolResult(id, "read", body));
  }
  void Write(const std::string& path, const std::string& content) {
    std::string id = NextId();
    messages.push_back(Assistant(
        {Call(id, "write", "{\"path\":" + Json(path) + ",\"content\":" + Json(content) + "}")}));
    messages.push_back(ToolResult(
        id, "write", "Successfully wrote " + std::to_string(content.size()) + " bytes to " + path));
  }
  void Edit(const std::string& path, const std::string& old_text, const std::string& new_text,
            const std::string& thought = "") {
    std::string id = NextId();
    std::vector<ContentBlock> blocks;
    if (!thought.empty()) blocks.push_back(Text(thought));
    blocks.push_back(Call(id, "edit",
                          "{\"path\":" + Json(path) + ",\"oldText\":" + Json(old_text) +
                              ",\"newText\":" + Json(new_text) + "}"));
    messages.push_back(Assistant(std::move(blocks)));
    messages.push_back(ToolResult(id, "edit", "Successfully replaced text in " + path + "."));
  }
  void Run(const std::string& command, const std::string& output, int exit_code) {
    std::string id = NextId();
    messages.push_back(
        Assistant({Thinking("Run it."), Call(id, "bash", "{\"command\":" + Json(command) + "}")}));
    std::string text = output;
    if (exit_code != 0) text += "\n\nCommand exited with code " + std::to_string(exit_code);
    messages.push_back(ToolResult(id, "bash", text, exit_code != 0));
  }

 private:
  std::string NextId() { return "toolu_" + std::to_string(++n_); }
  int n_ = 0;
};

inline std::string CargoNoise(int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    out += "   Compiling dep-crate-" + std::to_string(i) + " v0." + std::to_string(i % 9) + ".3\n";
  }
  return out;
}

// First half: goal, constraints, a decision, the build error and its fix, a
// preference that the second half revises.
inline void FirstHalf(Convo& c) {
  c.UserSays(
      "I'm building a CLI tool called logstat in Rust that parses nginx access logs and prints "
      "per-endpoint latency percentiles (p50, p95, p99).\n\nRequirements:\n"
      "- It must not use any async runtime.\n"
      "- Always keep the public API in src/lib.rs stable.\n"
      "- Prefer clap v4 for argument parsing.\n"
      "- Don't add dependencies beyond clap and serde without asking.");
  c.AssistantSays("Let me look at the current state of the crate first.");
  c.Read("Cargo.toml", "[package]\nname = \"logstat\"\nversion = \"0.1.0\"\n" + CargoNoise(20));
  c.Read("src/main.rs", SourceFile("main", 300));
  c.Read("src/lib.rs", SourceFile("lib", 200));
  c.AssistantSays(
      "I'll use a streaming line parser instead of loading the whole file because access logs "
      "can be several gigabytes. I decided to use a HashMap for the endpoint buckets because "
      "insertion order does not matter for the percentiles.");
  c.Write("src/parser.rs", SourceFile("parser", 120));
  c.Edit("src/main.rs", "fn main() {}", "fn main() { logstat::run() }");
  c.Run("cargo build",
        CargoNoise(60) +
            "error[E0425]: cannot find value `line_no` in this scope\n"
            "  --> src/parser.rs:42:17\n",
        101);
  c.Edit("src/parser.rs", "line_no", "line_number", "The variable is called line_number.");
  c.Run("cargo build", CargoNoise(60) + "    Finished dev [unoptimized + debuginfo] target(s)", 0);
  c.UserSays("Use tabs for indentation in the generated report.");
  c.Write("src/report.rs", SourceFile("report", 150));
  c.Run("cargo test",
        CargoNoise(30) +
            "test parser::tests::parses_quoted_referrer ... FAILED\n"
            "thread 'parser::tests::parses_quoted_referrer' panicked at 'assertion failed: "
            "left == right', src/parser.rs:88:9\n"
            "test result: FAILED. 12 passed; 2 failed; 0 ignored\n",
        101);
}

// Second half: the revisions, the fix, a new feature, an unresolved failure,
// and the stated next step.
inline void SecondHalf(Convo& c) {
  c.Edit("src/parser.rs", "split(' ')", "split_quoted()", "Quoted referrers contain spaces.");
  c.Run("cargo test", CargoNoise(30) + "test result: ok. 14 passed; 0 failed; 0 ignored", 0);
  c.UserSays("Actually, use spaces instead of tabs in the report, 4 of them.");
  c.Edit("src/report.rs", "\t", "    ");
  c.AssistantSays(
      "Switching to a BTreeMap instead of the HashMap because the report must be sorted by "
      "endpoint.");
  c.Edit("src/report.rs", "HashMap<String, Bucket>", "BTreeMap<String, Bucket>");
  c.UserSays(
      "Also add a --json flag. The JSON output must be valid JSON Lines, one object per "
      "endpoint.");
  c.Edit("src/main.rs", "struct Args {", "struct Args {\n    #[arg(long)]\n    json: bool,");
  c.Write("src/json_out.rs", SourceFile("json_out", 80));
  c.Run("cargo clippy -- -D warnings",
        CargoNoise(40) +
            "error: this `if` has identical blocks\n   --> src/json_out.rs:31:5\n"
            "error: could not compile `logstat` due to previous error\n",
        101);
  c.AssistantSays(
      "The --json flag works. Next, I'll fix the clippy warning about identical blocks in "
      "src/json_out.rs and then add an integration test for --json in tests/cli.rs.");
}

// FirstHalf + SecondHalf repeated until the messages hold more than `bytes`
// bytes of text and arguments.
inline Convo LargeConversation(int64_t bytes) {
  Convo c;
  while (true) {
    FirstHalf(c);
    SecondHalf(c);
    int64_t total = 0;
    for (const Message& m : c.messages) {
      total += static_cast<int64_t>(m.content_string.size());
      for (const ContentBlock& b : m.content) total += b.text.size() + b.arguments_json.size();
    }
    if (total > bytes) return c;
  }
}

}  // namespace compactor::summarize_test

#endif  // COMPACTOR_TESTS_SUPPORT_SAMPLE_CONVERSATION_H_
