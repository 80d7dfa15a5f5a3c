// Scale-out: two `compactor serve` processes in front of one fake upstream,
// both recording into one PostgreSQL store (a real throwaway server: ctest
// ScaleOutDatabase). A bounded load generator drives many conversations
// through both, alternating server every turn (every third turn sent to
// both at once, a hedged retry), with a context window small
// enough that the proxy compacts. Then: one session per conversation, no
// message recorded twice or lost, no branch, each summarized prefix asked
// of the upstream once, every session exported builds the context its
// client sent last (after the recorded compaction).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/provider_api.h"
#include "compactor/session.h"
#include "serve/compact_requests.h"
#include "support/fake_upstream.h"
#include "support/http_client.h"
#include "support/pg_test_server.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kConversations = 8;
constexpr int kFirstTurn = 12;  // turns of history in the first request
constexpr int kLastTurn = 30;
constexpr int kWords = 120;
constexpr int kDrivers = 4;

// Conversation `c`'s request after `turns` turns: the agent request of the
// serve tests, its first prompt made the conversation's own (conversations
// must not share prefixes, or they would share summaries).
// Every text of `j` (message contents, text blocks, tool results) made
// conversation `c`'s own.
void MakeOwn(Json& j, const std::string& mark) {
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if ((key == "content" || key == "text") && value.is_string()) {
        value = mark + value.get<std::string>();
      } else {
        MakeOwn(value, mark);
      }
    }
  } else if (j.is_array()) {
    for (Json& v : j) MakeOwn(v, mark);
  }
}

std::string RequestOf(int c, int turns) {
  Json r = AnthropicRequest(turns, kWords);
  MakeOwn(r["messages"], "c" + std::to_string(c) + " ");
  return r.dump();
}

const std::vector<std::pair<std::string, std::string>> Headers(int c) {
  return {{"x-api-key", "dummy"},
          {"anthropic-version", "2023-06-01"},
          {"content-type", "application/json"},
          {"X-Claude-Code-Session-Id", "scale-" + std::to_string(c)}};
}

// The bodies the proxies sent upstream for conversation `c`'s last turn (two
// when the turn was hedged), summary requests left out.
std::vector<std::string> LastTurnSent(const FakeUpstream& upstream, int c) {
  const std::string mark = "c" + std::to_string(c) + " " + Filler(kLastTurn - 1 + 1000, kWords);
  std::vector<std::string> out;
  for (const UpstreamRecord& r : upstream.requests()) {
    if (r.Header("x-compactor-request") == "summary") continue;
    if (r.Header("x-claude-code-session-id") != "scale-" + std::to_string(c)) continue;
    if (r.body.find(mark) == std::string::npos) continue;
    out.push_back(r.body);
  }
  return out;
}

// Whether the recorded context is what one of `sent` carried: the messages
// it sent, the first of them the summary when the context starts with the
// recorded compaction.
bool ContextWasSentLast(const SessionContext& ctx, const std::vector<std::string>& sent) {
  const ProviderApi* api = FindProviderApi("anthropic");
  std::vector<std::string> recorded;
  for (const auto& m : ctx.messages) recorded.push_back(Json::parse(m.json()).dump());
  const bool summarized =
      !recorded.empty() && Json::parse(recorded[0]).value("role", "") == "compactionSummary";
  for (const std::string& body : sent) {
    auto request = api->ReadClientRequest(body);
    if (!request.ok() || request->items.empty()) continue;
    std::vector<std::string> messages;
    for (size_t i = summarized ? 1 : 0; i < request->items.size(); ++i)
      for (std::string& m : api->ClientItemMessages(*request, i))
        messages.push_back(Json::parse(m).dump());
    if (summarized) {
      // The summary's text is inside the first message sent.
      std::string text = Json::parse(recorded[0])["summary"].dump();
      text = text.substr(1, text.size() - 2);
      const std::string first = Json::parse(api->ClientItemMessages(*request, 0).at(0)).dump();
      if (first.find(text) == std::string::npos) continue;
      messages.insert(messages.begin(), recorded[0]);
    }
    if (messages == recorded) return true;
  }
  return false;
}

TEST(ScaleOutDatabase, TwoServersOneStoreLoseAndRepeatNothing) {
  std::string why;
  auto base = TestPgUri(&why);
  if (!base) {
    if (std::getenv("CI") != nullptr) FAIL() << why;
    GTEST_SKIP() << "no PostgreSQL test server: " << why;
  }
  const std::string uri = FreshDatabase(*base, &why);
  ASSERT_FALSE(uri.empty()) << why;
  const auto started = std::chrono::steady_clock::now();

  FakeUpstream upstream;
  ASSERT_TRUE(upstream.Start());
  TempDir dir;
  const std::string settings =
      dir.Write("settings.json", R"({"serve":{"markSummaryRequests":true}})");
  ServeProcess servers[2];
  for (ServeProcess& p : servers) {
    ASSERT_TRUE(p.Start(COMPACTOR_CLI_PATH,
                        {"serve", "--listen", "127.0.0.1:0", "--upstream", upstream.url(),
                         "--store", uri, "--context-window", "12000", "--settings", settings}))
        << p.err();
  }

  // The load: each driver owns conversations c = d, d + kDrivers, ...; turn
  // t of a conversation goes to server t % 2.
  std::atomic<int> failures{0};
  std::mutex mu;
  std::map<int, std::string> session_of;  // conversation -> x-compactor-session
  std::vector<std::thread> drivers;
  for (int d = 0; d < kDrivers; ++d) {
    drivers.emplace_back([&, d] {
      for (int t = kFirstTurn; t <= kLastTurn; ++t) {
        for (int c = d; c < kConversations; c += kDrivers) {
          // Every third turn goes to both at once (a client's hedged retry):
          // both servers want the same summary at the same moment.
          const std::string body = RequestOf(c, t);
          std::optional<RawResponse> hedge;
          std::thread other;
          if (t % 3 == 0)
            other = std::thread([&] {
              hedge = Fetch(servers[(t + 1) % 2].port(), "POST", "/v1/messages", Headers(c), body);
            });
          auto res = Fetch(servers[t % 2].port(), "POST", "/v1/messages", Headers(c), body);
          if (other.joinable()) {
            other.join();
            if (!hedge || hedge->status != 200) ++failures;
          }
          if (!res || res->status != 200) {
            ++failures;
            continue;
          }
          std::lock_guard<std::mutex> lock(mu);
          session_of[c] = res->Header("x-compactor-session");
        }
      }
    });
  }
  for (auto& t : drivers) t.join();
  ASSERT_EQ(failures.load(), 0) << servers[0].err() << servers[1].err();

  // Recording is asynchronous (batches of 200 ms): wait, bounded, until
  // every conversation's session holds its last request's messages.
  const size_t expected_messages = 3 * kLastTurn;
  std::map<int, std::unique_ptr<Session>> sessions;
  for (int attempt = 0; attempt < 100; ++attempt) {
    sessions.clear();
    bool all = true;
    for (int c = 0; c < kConversations; ++c) {
      auto res = Fetch(servers[c % 2].port(), "GET",
                       "/compactor/v1/sessions/" + session_of[c] + "/export", {});
      if (!res || res->status != 200) {
        all = false;
        break;
      }
      EXPECT_EQ(res->Header("content-type"), "application/x-ndjson");
      if (const char* dump = std::getenv("SCALE_OUT_DUMP"))
        (void)Env::Default()->ReplaceFile(std::string(dump) + "/c" + std::to_string(c) + ".jsonl",
                                          res->body);
      auto s = Session::FromString(res->body, session_of[c]);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      size_t messages = 0;
      for (const Entry& e : (*s)->entries()) messages += e.type == EntryType::kMessage ? 1 : 0;
      if (messages < expected_messages) all = false;
      sessions[c] = std::move(s).value();
    }
    if (all) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(sessions.size(), static_cast<size_t>(kConversations));

  // One session per conversation: the list holds exactly them.
  auto list = Fetch(servers[0].port(), "GET", "/compactor/v1/sessions", {});
  ASSERT_TRUE(list && list->status == 200);
  EXPECT_EQ(Json::parse(list->body)["sessions"].size(), static_cast<size_t>(kConversations));

  int compacted = 0;
  for (auto& [c, s] : sessions) {
    size_t messages = 0;
    std::set<std::string> ids;
    for (const Entry& e : s->entries()) {
      messages += e.type == EntryType::kMessage ? 1 : 0;
      ids.insert(std::string(e.id));
    }
    EXPECT_EQ(messages, expected_messages) << "conversation " << c << ": lost or repeated";
    EXPECT_EQ(ids.size(), s->size()) << c;
    EXPECT_EQ(s->Roots().size(), 1u) << c;
    size_t branch_points = 0;
    for (const auto& children : s->Children()) branch_points += children.size() > 1 ? 1 : 0;
    EXPECT_EQ(branch_points, 0u) << "conversation " << c << " branched";
    // The context: what the client sent last, after the recorded compaction.
    auto ctx = BuildSessionContext(*s);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ASSERT_FALSE(ctx->messages.empty());
    const std::string last(ctx->messages.back().json());
    EXPECT_NE(last.find(Filler(kLastTurn - 1 + 1000, kWords)), std::string::npos) << c;
    bool has_compaction = false;
    for (size_t i : ctx->path) has_compaction |= s->entry(i).type == EntryType::kCompaction;
    if (has_compaction) {
      ++compacted;
      EXPECT_LT(ctx->messages.size(), expected_messages) << c;
    } else {
      EXPECT_EQ(ctx->messages.size(), expected_messages) << c;
    }
    EXPECT_TRUE(ContextWasSentLast(*ctx, LastTurnSent(upstream, c))) << "conversation " << c;
  }
  EXPECT_GT(compacted, 0) << "the window never made the proxy compact: the test proves nothing";

  // Each prefix summarized once: no two summary requests alike.
  std::map<std::string, int> asked;
  int summaries = 0;
  for (const UpstreamRecord& r : upstream.requests()) {
    if (r.Header("x-compactor-request") != "summary") continue;
    ++summaries;
    ++asked[r.body];
  }
  EXPECT_GT(summaries, 0);
  for (const auto& [body, n] : asked) EXPECT_EQ(n, 1) << "a prefix summarized " << n << " times";
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("scale-out: %d conversations x %d turns, %d summary requests, %d compacted, %.1f s\n",
              kConversations, kLastTurn - kFirstTurn + 1, summaries, compacted, seconds);
  for (ServeProcess& p : servers) {
    p.Signal(SIGTERM);
    EXPECT_EQ(p.Wait(10s), 0);
    EXPECT_EQ(p.err().find("warning: recording"), std::string::npos) << p.err();
  }
}

}  // namespace
}  // namespace compactor::testing
