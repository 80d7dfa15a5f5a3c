// `compactor serve` as a real process (through the compactor program, which
// runs compactor-serve): the listening line, draining on SIGTERM, refusals
// with their one-line errors and exit codes. Every wait is bounded.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_upstream.h"
#include "support/http_client.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;

// Count of '\n' in `s`.
size_t Lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ServeCli, PrintsTheListeningLineAndDrainsOnSigterm) {
  FakeUpstream upstream;
  ASSERT_TRUE(upstream.Start());
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.framing = ScriptedReply::Framing::kChunked;
  for (int i = 0; i < 6; ++i) r.pieces.push_back("data: {\"i\":" + std::to_string(i) + "}\n\n");
  r.piece_delay = 150ms;
  upstream.Push(r);
  ServeProcess p;
  TempDir store;  // serve creates and records into its store
  ASSERT_TRUE(p.Start(COMPACTOR_CLI_PATH, {"serve", "--listen", "127.0.0.1:0", "--upstream",
                                           upstream.url(), "--store", store.path()}));
  EXPECT_EQ(p.listening_line(), "listening on http://127.0.0.1:" + std::to_string(p.port()));
  RawClient c;
  ASSERT_TRUE(c.Connect(p.port()));
  ASSERT_TRUE(c.Send(RequestBytes("POST", "/v1/messages", {{"content-type", "application/json"}},
                                  R"({"model":"m","stream":true,"messages":[]})")));
  ASSERT_TRUE(upstream.WaitForRequests(1, 5s));
  p.Signal(SIGTERM);  // mid-stream: the answer must still arrive whole
  auto res = c.Read(false, {}, 10s);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, r.Body());
  EXPECT_EQ(p.Wait(10s), 0);
  std::string err = p.err();
  EXPECT_NE(err.find("POST /v1/messages 200 "), std::string::npos) << err;
  // New connections are refused once it has exited.
  RawClient late;
  EXPECT_FALSE(late.Connect(p.port()) && late.Send(RequestBytes("GET", "/healthz", {})) &&
               late.Read(false, {}, 2s));
}

struct Refusal {
  std::vector<std::string> args;
  std::vector<std::string> env;
  int code;
  std::string message;  // a part of the one line on stderr
};

TEST(ServeCli, RefusalsAreOneLineWithTheirExitCode) {
  std::vector<Refusal> cases = {
      {{"serve", "--listen", "127.0.0.1:0"}, {}, 2, "no upstream"},
      {{"serve", "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9"},
       {"COMPACTOR_SERVE_TOKEN="},
       2,
       "not a loopback address: set COMPACTOR_SERVE_TOKEN"},
      {{"serve", "--listen", "nonsense", "--upstream", "http://127.0.0.1:9"}, {}, 2, "--listen"},
      {{"serve", "--upstream", "ftp://x"}, {}, 2, "upstream"},
      {{"serve", "--upstream", "http://127.0.0.1:9", "--strategy", "nosuch"}, {}, 2, "--strategy"},
      // A strategy the proxy cannot express in a client's request.
      {{"serve", "--upstream", "http://127.0.0.1:9", "--strategy", "handoff"},
       {},
       2,
       "--strategy handoff: a handoff starts a new session"},
      {{"serve", "--upstream", "http://127.0.0.1:9", "--strategy", "mask-summary"},
       {},
       2,
       "--strategy mask-summary: mask-summary is stored as a compaction entry"},
      {{"serve", "--upstream", "http://127.0.0.1:9", "--strategy", "notes"},
       {},
       2,
       "--strategy notes: the notes strategy reads the agent's notes file"},
      {{"serve", "--upstream", "http://127.0.0.1:9", "--context-window", "-5"},
       {},
       2,
       "--context-window"},
      {{"serve", "--upstream", "http://127.0.0.1:9", "--settings", "/nonexistent/settings.json"},
       {},
       1,
       "settings"},
  };
  for (const Refusal& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    ServeProcess p;
    EXPECT_FALSE(p.Start(COMPACTOR_CLI_PATH, c.args, c.env));
    EXPECT_EQ(p.Wait(10s), c.code);
    std::string err = p.err();
    EXPECT_EQ(Lines(err), 1u) << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
}

TEST(ServeCli, AnAddressInUseIsAnError) {
  FakeUpstream upstream;
  ASSERT_TRUE(upstream.Start());
  ServeProcess p;
  TempDir store;  // not the default one in $HOME
  EXPECT_FALSE(p.Start(COMPACTOR_CLI_PATH,
                       {"serve", "--listen", "127.0.0.1:" + std::to_string(upstream.port()),
                        "--upstream", upstream.url(), "--store", store.path()}));
  EXPECT_EQ(p.Wait(10s), 1);
  EXPECT_NE(p.err().find("cannot listen on"), std::string::npos) << p.err();
}

}  // namespace
}  // namespace compactor::testing
