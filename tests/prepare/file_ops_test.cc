#include "compactor/file_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Assistant(const std::string& blocks) {
  return R"({"role":"assistant","content":[)" + blocks +
         R"(],"api":"x","provider":"p","model":"m","stopReason":"toolUse","timestamp":1})";
}
std::string Call(const std::string& name, const std::string& args) {
  return R"({"type":"toolCall","id":"c","name":")" + name + R"(","arguments":)" + args + "}";
}

TEST(FileOpsTest, ReadWriteEditCallsOnly) {
  FileOps ops;
  ExtractFileOpsFromJson(
      Assistant(Call("read", R"({"path":"r.ts","offset":3})") + "," +
                Call("write", R"({"path":"w.ts","content":"x"})") + "," +
                Call("edit", R"({"path":"e.ts","oldText":"a","newText":"b"})") + "," +
                Call("bash", R"({"command":"cat b.ts","path":"bash.ts"})") + "," +
                Call("grep", R"({"path":"g.ts"})") + "," + Call("read", R"({"path":""})") + "," +
                Call("read", R"({"path":42})") + "," + Call("read", R"("not an object")") + "," +
                R"({"type":"text","text":"read path x"})"),
      ops);
  EXPECT_THAT(ops.read, ElementsAre("r.ts"));
  EXPECT_THAT(ops.written, ElementsAre("w.ts"));
  EXPECT_THAT(ops.edited, ElementsAre("e.ts"));
}

TEST(FileOpsTest, OtherRolesAndBrokenJsonAddNothing) {
  FileOps ops;
  ExtractFileOpsFromJson(
      R"({"role":"toolResult","toolName":"read","content":[{"type":"text","text":"x"}],)"
      R"("arguments":{"path":"no.ts"}})",
      ops);
  ExtractFileOpsFromJson(
      R"({"role":"user","content":[)" + Call("read", R"({"path":"u.ts"})") + "]}", ops);
  ExtractFileOpsFromJson("{not json", ops);
  ExtractFileOpsFromJson("", ops);
  EXPECT_THAT(ops.read, IsEmpty());
}

TEST(FileOpsTest, RepeatedKeysCountTheirLastOccurrence) {
  // JSON.parse keeps the last value of a repeated key, and so does pi's
  // extraction (the oracle test PiOracleTest.RepeatedKeysInToolCalls).
  FileOps ops;
  ExtractFileOpsFromJson(
      R"({"role":"user","content":[{"type":"toolCall","name":"read","arguments":{"path":"gone.ts"}}],)"
      R"("content":[)"
      R"({"type":"text","type":"toolCall","name":"bash","name":"read",)"
      R"("arguments":{"path":"third.ts"},"arguments":{"path":"first.ts","path":"second.ts"}},)"
      R"({"name":"edit","arguments":{"path":"e.ts","path":7},"type":"toolCall"},)"
      R"({"name":"edit","arguments":{"path":"w.ts"},"type":"toolCall","type":"text"}],)"
      R"("role":"assistant"})",
      ops);
  EXPECT_THAT(ops.read, ElementsAre("second.ts"));
  EXPECT_THAT(ops.edited, IsEmpty());
  FileOps none;
  ExtractFileOpsFromJson(R"({"role":"assistant","role":"user","content":[)" +
                             Call("read", R"({"path":"u.ts"})") + "]}",
                         none);
  EXPECT_THAT(none.read, IsEmpty());
}

TEST(FileOpsTest, ParsedMessageGivesTheSameResult) {
  std::string json = Assistant(Call("edit", R"({"path":"src/a b.ts"})") + "," +
                               Call("read", R"({"path":"docs/ü.md"})"));
  FileOps from_json, from_message;
  ExtractFileOpsFromJson(json, from_json);
  auto m = ParseMessage(json);
  ASSERT_TRUE(m.ok());
  ExtractFileOps(*m, from_message);
  EXPECT_EQ(from_json.read, from_message.read);
  EXPECT_EQ(from_json.edited, from_message.edited);
  EXPECT_THAT(from_message.edited, ElementsAre("src/a b.ts"));
  EXPECT_THAT(from_message.read, ElementsAre("docs/ü.md"));
}

// Messages built elsewhere (a provider's tool calls) carry arguments as the
// model wrote them: the last "path" counts, as JSON.parse keeps it, and text
// that is not JSON names no file.
TEST(FileOpsTest, MessageArgumentsAsWritten) {
  auto call = [](const std::string& name, const std::string& args) {
    ContentBlock b;
    b.kind = ContentBlock::Kind::kToolCall;
    b.tool_name = name;
    b.arguments_json = args;
    return b;
  };
  Message m;
  m.role = Role::kAssistant;
  m.content = {
      call("read", R"({"path":"first.ts","path":"last.ts"})"),
      call("read", R"({"path":"a.ts","path":7})"),
      call("read", R"({"path":"a\u0062.ts"})"),
      call("edit", R"({"path":"broken.ts")"),
      call("edit", R"({"path":"trailing.ts"} x)"),
      call("write", R"({"content":")" + std::string(100000, 'x') + R"(","path":"big.ts"})"),
      call("write", R"(["path","array.ts"])"),
      call("bash", R"({"path":"bash.ts"})")};
  FileOps ops;
  ExtractFileOps(m, ops);
  EXPECT_THAT(ops.read, ElementsAre("ab.ts", "last.ts"));
  EXPECT_THAT(ops.edited, IsEmpty());
  EXPECT_THAT(ops.written, ElementsAre("big.ts"));
  m.role = Role::kUser;
  FileOps none;
  ExtractFileOps(m, none);
  EXPECT_THAT(none.read, IsEmpty());
}

TEST(FileOpsTest, ModifiedFilesAreNotListedAsRead) {
  FileOps ops;
  ops.read = {"b.ts", "a.ts", "c.ts"};
  ops.written = {"c.ts"};
  ops.edited = {"d.ts", "b.ts"};
  FileLists lists = ComputeFileLists(ops);
  EXPECT_THAT(lists.read_files, ElementsAre("a.ts"));
  EXPECT_THAT(lists.modified_files, ElementsAre("b.ts", "c.ts", "d.ts"));
}

TEST(FileOpsTest, SortIsJavaScriptsUtf16Order) {
  // U+FF01 (one UTF-16 unit 0xFF01) sorts after U+1F600 (surrogates 0xD83D 0xDE00)
  // in JavaScript, although its UTF-8 bytes (EF ...) sort before F0 ...
  const std::string fullwidth = "\xEF\xBC\x81";
  const std::string emoji = "\xF0\x9F\x98\x80";
  EXPECT_TRUE(Utf16Less(emoji, fullwidth));
  EXPECT_FALSE(Utf16Less(fullwidth, emoji));
  EXPECT_TRUE(Utf16Less("a", "b"));
  EXPECT_TRUE(Utf16Less("a", "ab"));
  EXPECT_FALSE(Utf16Less("ab", "ab"));
  EXPECT_TRUE(Utf16Less("Z", "a"));
  FileOps ops;
  ops.read = {fullwidth, emoji, "z"};
  EXPECT_THAT(ComputeFileLists(ops).read_files, ElementsAre("z", emoji, fullwidth));
}

TEST(FileOpsTest, SeedFromDetails) {
  FileOps ops;
  SeedFileOpsFromDetails(R"({"readFiles":["r.ts",3],"modifiedFiles":["m.ts"],"x":1})", ops);
  EXPECT_THAT(ops.read, ElementsAre("r.ts"));
  EXPECT_THAT(ops.edited, ElementsAre("m.ts"));
  FileOps none;
  SeedFileOpsFromDetails(R"({"readFiles":"r.ts"})", none);
  SeedFileOpsFromDetails("null", none);
  SeedFileOpsFromDetails("", none);
  SeedFileOpsFromDetails("[1]", none);
  EXPECT_THAT(none.read, IsEmpty());
  EXPECT_THAT(none.edited, IsEmpty());
}

TEST(FileOpsTest, FooterFormatIsExact) {
  EXPECT_EQ(FormatFileOperations({}), "");
  EXPECT_EQ(FormatFileOperations({{"a.ts", "b.ts"}, {}}),
            "\n\n<read-files>\na.ts\nb.ts\n</read-files>");
  EXPECT_EQ(FormatFileOperations({{}, {"m.ts"}}), "\n\n<modified-files>\nm.ts\n</modified-files>");
  EXPECT_EQ(FormatFileOperations({{"a.ts"}, {"m.ts", "n.ts"}}),
            "\n\n<read-files>\na.ts\n</read-files>\n\n<modified-files>\nm.ts\nn.ts\n"
            "</modified-files>");
}

}  // namespace
}  // namespace compactor
