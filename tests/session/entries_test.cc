#include "compactor/entries.h"

#include <gtest/gtest.h>

#include "compactor/session.h"

namespace compactor {
namespace {

TEST(Entries, CompactionMatchesPiKeyOrderAndEscaping) {
  CompactionEntryFields f;
  f.summary = "## Goal\n\"quoted\"";
  f.first_kept_entry_id = "3158027b";
  f.tokens_before = 14035;
  f.details_json = R"({"readFiles":[],"modifiedFiles":["src/app.ts"]})";
  f.from_hook = false;
  std::string e = MakeCompactionEntry({"be4132ca", "34bed9f6", "2026-11-22T13:00:07.436Z"}, f);
  EXPECT_EQ(
      e,
      R"({"type":"compaction","id":"be4132ca","parentId":"34bed9f6","timestamp":"2026-11-22T13:00:07.436Z","summary":"## Goal\n\"quoted\"","firstKeptEntryId":"3158027b","tokensBefore":14035,"details":{"readFiles":[],"modifiedFiles":["src/app.ts"]},"fromHook":false})");
}

TEST(Entries, BranchSummaryCustomMessageAndHeader) {
  EXPECT_EQ(
      MakeBranchSummaryEntry({"d518159e", "be4132ca", "2026-11-22T13:00:07.436Z"},
                             {"be4132ca", "went elsewhere", "", std::nullopt, {}}),
      R"({"type":"branch_summary","id":"d518159e","parentId":"be4132ca","timestamp":"2026-11-22T13:00:07.436Z","fromId":"be4132ca","summary":"went elsewhere"})");
  EXPECT_EQ(
      MakeCustomMessageEntry({"98bbdf85", "2c0e3ec1", "2026-11-22T13:00:07.435Z"},
                             {"todo-extension", "\"Reminder\"", true, R"({"source":"todo"})", {}}),
      R"({"type":"custom_message","customType":"todo-extension","content":"Reminder","display":true,"details":{"source":"todo"},"id":"98bbdf85","parentId":"2c0e3ec1","timestamp":"2026-11-22T13:00:07.435Z"})");
  EXPECT_EQ(
      MakeSessionHeader({"u1", "2026-01-01T00:00:00.000Z", "/w", "/old.jsonl"}),
      R"({"type":"session","version":3,"id":"u1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","parentSession":"/old.jsonl"})");
  EXPECT_EQ(JsStringArray({"a", "b\"c"}), R"(["a","b\"c"])");
}

TEST(Entries, BuiltEntriesLoadBack) {
  std::string text =
      MakeSessionHeader({"u1", "2026-01-01T00:00:00.000Z", "/w", ""}) + "\n" +
      MakeMessageEntry({"m1", "", "2026-01-01T00:00:01.000Z"},
                       R"({"role":"user","content":"hi","timestamp":1})") +
      "\n" +
      MakeCompactionEntry({"c1", "m1", "2026-01-01T00:00:02.000Z"},
                          {"sum", "m1", 10, "", std::nullopt, {{"method", "\"summary\""}}}) +
      "\n";
  auto s = Session::FromString(text, "mem");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->size(), 2u);
  EXPECT_EQ((*s)->entry(1).type, EntryType::kCompaction);
  EXPECT_EQ((*s)->entry(1).first_kept_entry_id, "m1");
  EXPECT_EQ((*s)->FieldJson(1, "method"), "\"summary\"");
}

}  // namespace
}  // namespace compactor
