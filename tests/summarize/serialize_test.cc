// Serialization goldens: the exact text pi 0.73.1 sends to its summarizer for
// the fixture preparations (tests/fixtures/pi/expected/*.json, from the pi
// oracle: preparation.serializedConversation / serializedTurnPrefix).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/file_ops.h"
#include "compactor/session.h"
#include "compactor/summarizer.h"
#include "support/test_messages.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using summarize_test::Assistant;
using summarize_test::Bash;
using summarize_test::Call;
using summarize_test::Text;
using summarize_test::ToolResult;
using summarize_test::User;

struct GoldenCase {
  std::string session;   // under tests/fixtures/
  std::string expected;  // under tests/fixtures/pi/expected/
};

// Rebuilds pi's messagesToSummarize / turnPrefixMessages from the golden
// preparation (cut indices are path indices) and the session's own context.
struct Prepared {
  std::vector<Message> history;
  std::vector<Message> prefix;
};

Prepared Prepare(const Session& s, const nlohmann::json& golden) {
  const auto& prep = golden["preparation"];
  ContextOptions o;
  o.leaf_id = golden["leafId"].get<std::string>();
  auto ctx = BuildSessionContext(s, o);
  if (!ctx.ok()) {
    ADD_FAILURE() << ctx.status().ToString();
    return {};
  }
  const std::vector<size_t>& path = ctx->path;
  std::vector<int64_t> pos(s.size(), -1);
  for (size_t i = 0; i < path.size(); ++i) pos[path[i]] = static_cast<int64_t>(i);
  // Boundary: the previous compaction's first kept entry (pi 0.73.1), else 0.
  int64_t boundary = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    const Entry& e = s.entry(path[i]);
    if (e.type == EntryType::kCompaction) {
      auto kept = s.Find(e.first_kept_entry_id);
      boundary = kept ? pos[*kept] : static_cast<int64_t>(i) + 1;
    }
  }
  int64_t first_kept = prep["firstKeptEntryIndexInPath"].get<int64_t>();
  int64_t turn_start = prep["turnStartIndexInPath"].get<int64_t>();
  bool split = prep["isSplitTurn"].get<bool>();
  int64_t history_end = split ? turn_start : first_kept;
  Prepared out;
  for (const ContextMessage& cm : ctx->messages) {
    if (cm.role == Role::kCompactionSummary) continue;
    int64_t p = pos[cm.entry_index];
    auto m = ParseMessage(cm.json());
    if (!m.ok()) {
      ADD_FAILURE() << m.status().ToString();
      return {};
    }
    if (p >= boundary && p < history_end) out.history.push_back(*m);
    if (split && p >= turn_start && p < first_kept) out.prefix.push_back(*m);
  }
  return out;
}

class SerializeGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(SerializeGolden, MatchesPiByteForByte) {
  std::string session_path = testing::FixturePath(GetParam().session);
  std::string expected_path = testing::FixturePath("pi/expected/" + GetParam().expected);
  auto golden = nlohmann::json::parse(testing::ReadFileOrDie(expected_path));
  auto s = Session::Open(session_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Prepared p = Prepare(**s, golden);
  const auto& prep = golden["preparation"];
  ASSERT_EQ(p.history.size(), prep["messagesToSummarize"].get<size_t>());
  ASSERT_EQ(p.prefix.size(), prep["turnPrefixMessages"].get<size_t>());

  std::string history = SerializeForSummary(p.history);
  std::string expected = prep["serializedConversation"].get<std::string>();
  ASSERT_EQ(history.size(), expected.size());
  EXPECT_TRUE(history == expected);
  EXPECT_EQ(SerializeForSummary(p.prefix), prep["serializedTurnPrefix"].get<std::string>());

  // The two-step form and the parts form agree with the one-pass form.
  EXPECT_EQ(SerializeConversation(ConvertToLlm(p.history)), history);
  std::string joined;
  for (const SerializedPart& part : SerializeForSummaryParts(p.history)) {
    if (!joined.empty()) joined += "\n\n";
    joined += part.text;
  }
  EXPECT_EQ(joined, history);

  // File lists of the preparation: tool calls of both spans (plus the seed of a
  // previous pi-generated compaction, which the policy layer supplies).
  FileOps ops;
  ExtractFileOps(p.history, ops);
  ExtractFileOps(p.prefix, ops);
  FileLists lists = ComputeFileLists(ops);
  auto expected_modified = prep["modifiedFiles"].get<std::vector<std::string>>();
  if (!prep["hasPreviousSummary"].get<bool>()) {
    EXPECT_EQ(lists.modified_files, expected_modified);
    EXPECT_EQ(lists.read_files, prep["readFiles"].get<std::vector<std::string>>());
  } else {
    for (const std::string& f : lists.modified_files) {
      EXPECT_NE(std::find(expected_modified.begin(), expected_modified.end(), f),
                expected_modified.end())
          << f;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, SerializeGolden,
    ::testing::Values(GoldenCase{"pi/written.jsonl", "written.before-compaction.k2000.json"},
                      GoldenCase{"pi/long.v3.jsonl", "long.k20000.json"},
                      GoldenCase{"pi/compacted.v3.jsonl", "compacted.k20000.json"}));

TEST(Serialize, ToolResultCutAt2000WithMarker) {
  std::string big(5000, 'x');
  std::vector<Message> msgs = {ToolResult("t1", "bash", big)};
  EXPECT_EQ(SerializeForSummary(msgs), "[Tool result]: " + std::string(2000, 'x') +
                                           "\n\n[... 3000 more characters truncated]");
  std::vector<Message> small = {ToolResult("t1", "bash", std::string(1500, 'y'))};
  EXPECT_EQ(SerializeForSummary(small), "[Tool result]: " + std::string(1500, 'y'));
  std::vector<Message> exact = {ToolResult("t1", "bash", std::string(2000, 'z'))};
  EXPECT_EQ(SerializeForSummary(exact), "[Tool result]: " + std::string(2000, 'z'));
}

TEST(Serialize, TruncationCountsUtf16Units) {
  // "é" is 1 unit (2 bytes); "😀" is 2 units (4 bytes).
  std::string e;
  for (int i = 0; i < 2001; ++i) e += "\xC3\xA9";
  std::string out = TruncateForSummary(e, 2000);
  EXPECT_EQ(out.substr(0, 4000), e.substr(0, 4000));
  EXPECT_EQ(out.substr(4000), "\n\n[... 1 more characters truncated]");
  // A surrogate pair straddling the cut is kept whole-or-nothing.
  std::string s = std::string(1999, 'a') + "\xF0\x9F\x98\x80" + "b";
  std::string cut = TruncateForSummary(s, 2000);
  EXPECT_EQ(cut, std::string(1999, 'a') + "\n\n[... 3 more characters truncated]");
  EXPECT_EQ(TruncateForSummary("short", 2000), "short");
}

TEST(Serialize, LongUserAndAssistantTextNeverTruncated) {
  std::string long_text(10000, 'u');
  std::vector<Message> msgs = {User(long_text), Assistant({Text(long_text)})};
  EXPECT_EQ(SerializeForSummary(msgs), "[User]: " + long_text + "\n\n[Assistant]: " + long_text);
}

TEST(Serialize, AssistantKindsInFixedOrder) {
  ContentBlock empty_thinking;
  empty_thinking.kind = ContentBlock::Kind::kThinking;
  empty_thinking.type = "thinking";
  std::vector<Message> msgs = {
      Assistant({Call("c1", "read", R"({"path":"a.ts"})"), Text("one"), empty_thinking, Text("two"),
                 Call("c2", "bash", R"({"command":"ls -la","timeout":5,"opts":{"x":[1,"y"]}})")})};
  EXPECT_EQ(SerializeForSummary(msgs),
            "[Assistant thinking]: \n\n[Assistant]: one\ntwo\n\n"
            "[Assistant tool calls]: read(path=\"a.ts\"); bash(command=\"ls -la\", timeout=5, "
            "opts={\"x\":[1,\"y\"]})");
}

TEST(Serialize, ToolCallArgumentsKeepJsonEscapesAndUnescapeKeys) {
  std::vector<Message> msgs = {Assistant(
      {Call("c1", "write", R"({"path":"a.txt","content":"l1\nl2 \"q\"","k\"ey":null})")})};
  EXPECT_EQ(SerializeForSummary(msgs),
            "[Assistant tool calls]: write(path=\"a.txt\", content=\"l1\\nl2 \\\"q\\\"\", "
            "k\"ey=null)");
  std::vector<Message> no_args = {Assistant({Call("c1", "noop", "")})};
  EXPECT_EQ(SerializeForSummary(no_args), "[Assistant tool calls]: noop()");
}

TEST(Serialize, UserBlocksJoinedWithoutSeparatorAndImagesDropped) {
  Message u = User("");
  u.content_is_string = false;
  ContentBlock img;
  img.kind = ContentBlock::Kind::kImage;
  img.type = "image";
  u.content = {Text("a"), img, Text("b")};
  std::vector<Message> msgs = {u, User("")};
  EXPECT_EQ(SerializeForSummary(msgs), "[User]: ab");
}

TEST(Serialize, BashExecutionTextExactlyAsPi) {
  EXPECT_EQ(BashExecutionText(Bash("npm test", "PASS\n", 0)), "Ran `npm test`\n```\nPASS\n\n```");
  EXPECT_EQ(BashExecutionText(Bash("make", "", 2)),
            "Ran `make`\n(no output)\n\nCommand exited with code 2");
  Message cancelled = Bash("sleep 100", "partial", 1);
  cancelled.cancelled = true;
  EXPECT_EQ(BashExecutionText(cancelled),
            "Ran `sleep 100`\n```\npartial\n```\n\n(command cancelled)");
  Message truncated = Bash("cat big", "tail", std::nullopt);
  truncated.truncated = true;
  truncated.full_output_path = "/tmp/out.txt";
  EXPECT_EQ(BashExecutionText(truncated),
            "Ran `cat big`\n```\ntail\n```\n\n[Output truncated. Full output: /tmp/out.txt]");
  Message excluded = Bash("secret", "x", 0);
  excluded.exclude_from_context = true;
  std::vector<Message> msgs = {excluded, Bash("ls", "a", 0)};
  EXPECT_EQ(SerializeForSummary(msgs), "[User]: Ran `ls`\n```\na\n```");
}

TEST(Serialize, SummariesAndCustomBecomeUserText) {
  Message branch;
  branch.role = Role::kBranchSummary;
  branch.summary = "B";
  Message compaction;
  compaction.role = Role::kCompactionSummary;
  compaction.summary = "C";
  Message custom;
  custom.role = Role::kCustom;
  custom.content_is_string = true;
  custom.content_string = "note";
  Message other;
  other.role = Role::kOther;
  other.content_is_string = true;
  other.content_string = "dropped";
  std::vector<Message> msgs = {branch, compaction, custom, other};
  std::string out = SerializeForSummary(msgs);
  EXPECT_NE(out.find("<summary>\nB</summary>"), std::string::npos) << out;
  EXPECT_NE(out.find("<summary>\nC\n</summary>"), std::string::npos) << out;
  EXPECT_NE(out.find("[User]: note"), std::string::npos);
  EXPECT_EQ(out.find("dropped"), std::string::npos);
  EXPECT_EQ(ConvertToLlm(msgs).size(), 3u);
}

TEST(FileOps, ExtractsOnlyReadWriteEditWithPath) {
  std::vector<Message> msgs = {
      Assistant({Call("1", "read", R"({"path":"b.ts"})"), Call("2", "write", R"({"path":"c.ts"})"),
                 Call("3", "edit", R"({"path":"a.ts","oldText":"x"})"),
                 Call("4", "bash", R"({"command":"cat d.ts","path":"d.ts"})"),
                 Call("5", "read", R"({"path":""})"), Call("6", "read", R"({"path":7})"),
                 Call("7", "read", R"({"path":"a.ts"})")}),
      User("read e.ts please"), ToolResult("1", "read", "contents")};
  FileOps ops;
  ExtractFileOps(msgs, ops);
  FileLists lists = ComputeFileLists(ops);
  EXPECT_EQ(lists.read_files, std::vector<std::string>({"b.ts"}));
  EXPECT_EQ(lists.modified_files, std::vector<std::string>({"a.ts", "c.ts"}));
  EXPECT_EQ(
      FormatFileOperations(lists),
      "\n\n<read-files>\nb.ts\n</read-files>\n\n<modified-files>\na.ts\nc.ts\n</modified-files>");
  EXPECT_EQ(FormatFileOperations(FileLists{}), "");
  EXPECT_EQ(FormatFileOperations(FileLists{{}, {"x"}}),
            "\n\n<modified-files>\nx\n</modified-files>");
}

TEST(FileOps, SeedsAndSortsInUtf16Order) {
  FileOps ops;
  std::vector<std::string> read = {"r.ts", "m.ts"};
  std::vector<std::string> modified = {"m.ts"};
  SeedFileOps(read, modified, ops);
  // U+FF5E (3 bytes) sorts after U+1F600 (4 bytes) in UTF-16, before it in UTF-8.
  ops.written.insert("\xEF\xBD\x9E");
  ops.written.insert("\xF0\x9F\x98\x80");
  ops.written.insert("B");
  ops.written.insert("a");
  FileLists lists = ComputeFileLists(ops);
  EXPECT_EQ(lists.read_files, std::vector<std::string>({"r.ts"}));
  EXPECT_EQ(lists.modified_files,
            std::vector<std::string>({"B", "a", "m.ts", "\xF0\x9F\x98\x80", "\xEF\xBD\x9E"}));
  EXPECT_TRUE(JsStringLess("abc", "abd"));
  EXPECT_TRUE(JsStringLess("ab", "abc"));
  EXPECT_FALSE(JsStringLess("abc", "abc"));
}

}  // namespace
}  // namespace compactor
