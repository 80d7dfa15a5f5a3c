#include "strategies/message_feed.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace compactor::internal {
namespace {

// `n` tool results of `chars` characters each (plus one message that is no
// object at `broken`, when given).
std::vector<ContextMessage> Messages(size_t n, size_t chars, size_t broken = SIZE_MAX) {
  std::vector<ContextMessage> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].entry_index = i;
    out[i].owned = i == broken ? "42"
                               : R"({"role":"toolResult","toolCallId":"c)" + std::to_string(i) +
                                     R"(","content":[{"type":"text","text":")" +
                                     std::string(chars, 'x') + R"("}]})";
  }
  return out;
}

void ExpectParsed(const std::vector<ContextMessage>& in, const std::vector<Message>& out,
                  size_t broken = SIZE_MAX) {
  ASSERT_EQ(in.size(), out.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == broken) {
      EXPECT_EQ(out[i].role, Role::kOther);
      EXPECT_TRUE(out[i].content.empty());
      continue;
    }
    EXPECT_EQ(out[i].tool_call_id, "c" + std::to_string(i)) << i;
    ASSERT_EQ(out[i].content.size(), 1u) << i;
  }
}

TEST(MessageFeed, ParsesEverythingInOrderShortAndLong) {
  for (size_t chars : {10u, 20000u}) {  // one thread, then two (over 4 MB)
    auto first = Messages(300, chars, 7);
    auto second = Messages(50, chars);
    MessageFeed feed({&first, &second});
    feed.ParseAll();
    ASSERT_EQ(feed.messages().size(), 350u);
    std::vector<Message> a(feed.messages().begin(), feed.messages().begin() + 300);
    ExpectParsed(first, a, 7);
    std::vector<Message> b(feed.messages().begin() + 300, feed.messages().end());
    ExpectParsed(second, b);
  }
}

TEST(MessageFeed, StreamsToAReaderThatWaits) {
  auto in = Messages(600, 20000, 100);  // ~12 MB: parsed on a worker
  MessageFeed feed({&in});
  feed.Start();
  for (size_t i = 0; i < in.size(); ++i) {
    feed.WaitFor(i + 1);
    const Message& m = feed.messages()[i];
    if (i == 100) {
      EXPECT_EQ(m.role, Role::kOther);
    } else {
      ASSERT_EQ(m.tool_call_id, "c" + std::to_string(i));
    }
  }
  feed.WaitFor(in.size() + 5);  // more than there are: returns when all are done
}

TEST(MessageFeed, StopsEarlyWhenTheReaderGivesUp) {
  auto in = Messages(2000, 20000);  // ~40 MB
  {
    MessageFeed feed({&in});
    feed.Start();
    feed.WaitFor(1);
  }  // the destructor stops the worker; the test ends instead of hanging
  SUCCEED();
}

}  // namespace
}  // namespace compactor::internal
