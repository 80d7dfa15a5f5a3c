// The service API over real HTTP on loopback (docs/api.md): every endpoint,
// its error codes, the same JSON as the CLI's --json output on the same
// file, read-only sessions, the body limit, the token off loopback, and
// proxied conversations recorded into the store.
#include "serve/api.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "compactor/context.h"
#include "compactor/provider_api.h"
#include "compactor/store.h"
#include "serve/serve_fixture.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

const std::string kSessions = "/compactor/v1/sessions";

class ServeApiTest : public ServeFixture {
 protected:
  // The server with the service installed over store_ (and ro_ read-only).
  // `extra` sees the server once the service is installed (more hooks).
  void StartService(const std::function<void(ServeOptions&)>& adjust = {},
                    const std::function<void(serve::Server&)>& extra = {}) {
    StartProxy(
        [&](ServeOptions& o) {
          o.store = store_.path();
          o.sessions = {ro_.path()};
          if (adjust) adjust(o);
        },
        [this, extra](serve::Server& server) {
          auto svc = serve::SessionService::Install(server, server.options());
          ASSERT_TRUE(svc.ok()) << svc.status().ToString();
          service_ = std::move(svc).value();
          if (extra) extra(server);
        });
  }
  void Restart() {
    server_->Shutdown();
    server_.reset();
    service_.reset();
    StartService();
  }
  void TearDown() override {
    ServeFixture::TearDown();
    service_.reset();
  }

  // Waits until every request sent so far is complete (its log line follows
  // the recording hook), then until the recorder wrote what they queued.
  void Settle() {
    WaitLogs(sent_);
    service_->recorder().Flush();
  }

  RawResponse Get(const std::string& target) {
    ++sent_;
    auto r = Fetch(port_, "GET", target, {});
    EXPECT_TRUE(r.has_value()) << target;
    return r.value_or(RawResponse{});
  }
  RawResponse Post(const std::string& target, const std::string& body,
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("content-type", "application/json");
    ++sent_;
    auto r = Fetch(port_, "POST", target, headers, body);
    EXPECT_TRUE(r.has_value()) << target;
    return r.value_or(RawResponse{});
  }
  static std::string ErrorCode(const RawResponse& r) {
    auto j = Json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("error")) return "<no error object: " + r.body + ">";
    return j["error"]["code"].get<std::string>();
  }
  // A fixture session copied into the store; returns its path.
  std::string Copy(const std::string& fixture, const std::string& name) {
    return store_.Write(name, ReadFileOrDie(FixturePath(fixture)));
  }
  static std::string IdOf(const std::string& path) {
    auto s = Session::Open(path);
    EXPECT_TRUE(s.ok());
    return s.ok() ? (*s)->header().id : "";
  }
  // The CLI's --json output, without its newline.
  static std::string Cli(const std::vector<std::string>& args) {
    RunResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }

  TempDir store_, ro_;
  std::unique_ptr<serve::SessionService> service_;
  size_t sent_ = 0;
};

TEST_F(ServeApiTest, AnswersWithTheCliJsonOfTheSameFile) {
  std::string path = Copy("pi/compacted.v3.jsonl", "compacted.jsonl");
  std::string id = IdOf(path);
  StartService();
  const std::string base = kSessions + "/" + id;
  RawResponse stats = Get(base);
  EXPECT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body, Cli({"stats", path, "--json"}));
  EXPECT_EQ(Get(base + "/context").body, Cli({"context", path, "--json"}));
  EXPECT_EQ(Get(base + "/tree").body, Cli({"tree", path, "--json"}));
  EXPECT_EQ(Get(base + "/plan").body, Cli({"plan", path, "--json"}));
  EXPECT_EQ(Get(base + "/plan?keepRecentTokens=2000").body,
            Cli({"plan", path, "--json", "--keep-recent-tokens", "2000"}));
  // A leaf other than the file's.
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  std::string leaf((*s)->entry(3).id);
  EXPECT_EQ(Get(base + "/context?leaf=" + leaf).body,
            Cli({"context", path, "--json", "--leaf", leaf}));
  EXPECT_EQ(Get(base + "/tree?leaf=" + leaf).body, Cli({"tree", path, "--json", "--leaf", leaf}));
  EXPECT_EQ(Get(base + "?leaf=" + leaf).body, Cli({"stats", path, "--json", "--leaf", leaf}));
}

TEST_F(ServeApiTest, CompactAnswersLikeTheCliAndAppendsTheEntry) {
  std::string path = Copy("pi/long.v3.jsonl", "long.jsonl");
  TempDir other;
  std::string cli_path = other.Write("long.jsonl", ReadFileOrDie(path));
  std::string id = IdOf(path);
  StartService();
  RawResponse r = Post(kSessions + "/" + id + "/compact", R"({"strategy":"summary"})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json service = Json::parse(r.body);
  Json cli = Json::parse(Cli({"compact", cli_path, "--json", "--strategy", "summary"}));
  EXPECT_TRUE(service["compacted"].get<bool>());
  EXPECT_TRUE(service["written"].get<bool>());
  // Ids, timestamps and durations differ from run to run; everything else is the same.
  for (Json* j : {&service, &cli}) {
    j->erase("durationMs");
    j->erase("entryId");
    j->erase("entry");
  }
  EXPECT_EQ(service, cli);
  // The entry is in the session now: the context starts with its summary.
  Json ctx = Json::parse(Get(kSessions + "/" + id + "/context").body);
  EXPECT_EQ(ctx["messages"][0]["role"], "compactionSummary");
  // Query parameters work as well as a JSON body; dryRun writes nothing.
  auto before = ReadFileOrDie(path);
  RawResponse dry = Post(kSessions + "/" + id + "/compact?strategy=user-prompts&dryRun=true", "");
  EXPECT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(Json::parse(dry.body)["strategy"], "user-prompts");
  EXPECT_EQ(ReadFileOrDie(path), before);
  EXPECT_EQ(ErrorCode(Post(kSessions + "/" + id + "/compact?strategy=nosuch", "")),
            "invalid_argument");
  EXPECT_EQ(ErrorCode(Post(kSessions + "/" + id + "/compact", "[1,2]")), "invalid_argument");
}

TEST_F(ServeApiTest, EntriesAreAppendedAndTheirIdsReturned) {
  std::string path = Copy("pi/written.jsonl", "w.jsonl");
  std::string id = IdOf(path);
  StartService();
  RawResponse one =
      Post(kSessions + "/" + id + "/entries",
           R"({"type":"message","message":{"role":"user","content":"added one","timestamp":1}})");
  ASSERT_EQ(one.status, 201) << one.body;
  Json ids = Json::parse(one.body)["ids"];
  ASSERT_EQ(ids.size(), 1u);
  RawResponse two =
      Post(kSessions + "/" + id + "/entries",
           R"([{"type":"message","message":{"role":"user","content":"a","timestamp":1}},)"
           R"({"type":"label","targetId":")" +
               ids[0].get<std::string>() + R"(","label":"here"}])");
  ASSERT_EQ(two.status, 201) << two.body;
  Json ids2 = Json::parse(two.body)["ids"];
  ASSERT_EQ(ids2.size(), 2u);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->entry((*s)->size() - 1).id, ids2[1].get<std::string>());
  EXPECT_EQ((*s)->entry((*s)->size() - 1).parent_id, ids2[0].get<std::string>());
  EXPECT_EQ((*s)->entry((*s)->size() - 2).parent_id, ids[0].get<std::string>());
  Json ctx = Json::parse(Get(kSessions + "/" + id + "/context").body);
  EXPECT_EQ(ctx["messages"].back()["content"], "a");
  // Refusals: not JSON, no type, a header, a taken id.
  for (const char* bad : {"nope", R"({"x":1})", R"({"type":"session"})", "[]"}) {
    RawResponse r = Post(kSessions + "/" + id + "/entries", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(ErrorCode(r), "invalid_argument") << bad;
  }
  RawResponse dup = Post(kSessions + "/" + id + "/entries",
                         R"({"type":"custom","id":")" + ids[0].get<std::string>() + R"("})");
  EXPECT_EQ(dup.status, 400);
}

TEST_F(ServeApiTest, BranchMovesTheLeafLikeTheCli) {
  std::string path = Copy("pi/written.jsonl", "w.jsonl");
  TempDir other;
  std::string cli_path = other.Write("w.jsonl", ReadFileOrDie(path));
  std::string id = IdOf(path);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  std::string target((*s)->entry(2).id);
  StartService();
  RawResponse r = Post(kSessions + "/" + id + "/branch", R"({"to":")" + target + R"("})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json service = Json::parse(r.body);
  Json cli = Json::parse(Cli({"branch", cli_path, "--to", target, "--json"}));
  for (Json* j : {&service, &cli}) {
    j->erase("appended");
    j->erase("newLeafId");
  }
  EXPECT_EQ(service, cli);
  Json tree = Json::parse(Get(kSessions + "/" + id + "/tree").body);
  EXPECT_EQ(tree["leafId"], Json::parse(r.body)["newLeafId"]);
  EXPECT_EQ(ErrorCode(Post(kSessions + "/" + id + "/branch", "{}")), "invalid_argument");
  EXPECT_EQ(Post(kSessions + "/" + id + "/branch", R"({"to":"nosuchid"})").status / 100, 4);
}

TEST_F(ServeApiTest, ListsSessionsWithTheirReadOnlyFlag) {
  std::string mine = Copy("pi/written.jsonl", "w.jsonl");
  std::string theirs = ro_.Write("c.jsonl", ReadFileOrDie(FixturePath("pi/compacted.v3.jsonl")));
  StartService();
  RawResponse r = Get(kSessions);
  ASSERT_EQ(r.status, 200);
  Json list = Json::parse(r.body)["sessions"];
  ASSERT_EQ(list.size(), 2u);
  for (const Json& s : list) {
    bool ro = s["path"] == theirs;
    EXPECT_EQ(s["readOnly"], ro);
    EXPECT_EQ(s["id"], IdOf(ro ? theirs : mine));
    EXPECT_GT(s["entries"].get<int>(), 0);
    EXPECT_GT(s["sizeBytes"].get<int>(), 0);
    EXPECT_TRUE(s["lastActivity"].is_string());
    EXPECT_TRUE(s.contains("name") && s.contains("firstPrompt"));
  }
  // Reads work; writes are refused with 403 read_only and change nothing.
  std::string ro_id = IdOf(theirs);
  std::string before = ReadFileOrDie(theirs);
  EXPECT_EQ(Get(kSessions + "/" + ro_id + "/context").status, 200);
  for (const char* what : {"/entries", "/compact", "/branch"}) {
    RawResponse w =
        Post(kSessions + "/" + ro_id + std::string(what), R"({"type":"custom","to":"x"})");
    EXPECT_EQ(w.status, 403) << what << " " << w.body;
    EXPECT_EQ(ErrorCode(w), "read_only");
  }
  EXPECT_EQ(ReadFileOrDie(theirs), before);
}

TEST_F(ServeApiTest, ErrorsHaveTheirCodes) {
  StartService();
  RawResponse nf = Get(kSessions + "/no-such-session");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(ErrorCode(nf), "not_found");
  // Path traversal: ids that could name a path are refused before any lookup.
  for (const std::string& bad :
       {std::string(".."), std::string("..%2F..%2Fetc%2Fpasswd"), std::string(".hidden"),
        std::string("a%2Fb"), std::string(200, 'x')}) {
    RawResponse r = Get(kSessions + "/" + bad + "/context");
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(ErrorCode(r), "invalid_session_id") << bad;
  }
  RawResponse method = Fetch(port_, "DELETE", kSessions, {}).value_or(RawResponse{});
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(ErrorCode(method), "method_not_allowed");
  EXPECT_EQ(ErrorCode(Get("/compactor/v1/nothing-here")), "not_found");
  // A file that is not a session in the stateless endpoint.
  RawResponse bad = Post("/compactor/v1/compact", "this is not jsonl");
  EXPECT_EQ(bad.status, 422) << bad.body;
  EXPECT_EQ(ErrorCode(bad), "invalid_session");
}

TEST_F(ServeApiTest, TheBodyLimitIsA413) {
  std::string path = Copy("pi/written.jsonl", "w.jsonl");
  StartService([](ServeOptions& o) { o.max_body_bytes = 1024; });
  RawResponse r = Post(kSessions + "/" + IdOf(path) + "/entries",
                       R"({"type":"custom","data":")" + std::string(4000, 'x') + "\"}");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(ErrorCode(r), "request_too_large");
}

TEST_F(ServeApiTest, TheTokenIsRequiredOffLoopback) {
  std::string path = Copy("pi/written.jsonl", "w.jsonl");
  StartService([](ServeOptions& o) {
    o.listen = "0.0.0.0:0";
    o.token = "tok-123";
  });
  const std::string target = kSessions + "/" + IdOf(path) + "/context";
  EXPECT_EQ(Get(target).status, 401);
  auto ok = Fetch(port_, "GET", target, {{"authorization", "Bearer tok-123"}});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Post(kSessions + "/" + IdOf(path) + "/entries", R"({"type":"custom"})").status, 401);
}

TEST_F(ServeApiTest, StatelessCompactStoresNothing) {
  std::string body = ReadFileOrDie(FixturePath("pi/long.v3.jsonl"));
  StartService();
  RawResponse r = Post("/compactor/v1/compact?strategy=summary", body);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_TRUE(j["compaction"]["compacted"].get<bool>());
  EXPECT_FALSE(j["compaction"]["written"].get<bool>());
  EXPECT_EQ(j["compaction"]["entry"]["type"], "compaction");
  EXPECT_EQ(j["context"]["messages"][0]["role"], "compactionSummary");
  EXPECT_EQ(j["context"]["leafId"], j["compaction"]["entryId"]);
  // The context is the one the session gets once the entry is appended.
  std::string appended = body + j["compaction"]["entry"].dump() + "\n";
  auto s = Session::FromString(appended, "appended");
  ASSERT_TRUE(s.ok());
  auto ctx = BuildSessionContext(**s);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(Json::parse(ContextToJson(*ctx))["messages"], j["context"]["messages"]);
  EXPECT_EQ(Names(Env::Default(), store_.path()), std::vector<std::string>{});
}

// --- recording ------------------------------------------------------------------

std::string AnthropicBody(const std::vector<std::pair<std::string, std::string>>& turns) {
  Json messages = Json::array();
  for (const auto& [role, text] : turns) messages.push_back({{"role", role}, {"content", text}});
  return Json{
      {"model", "claude-test"}, {"max_tokens", 64}, {"system", "be brief"}, {"messages", messages}}
      .dump();
}

// What the recorded context must be for a request body: its items as pi messages.
std::vector<std::string> Expected(const std::string& body) {
  const ProviderApi* api = FindProviderApi("anthropic");
  auto req = api->ReadClientRequest(body);
  EXPECT_TRUE(req.ok());
  std::vector<std::string> out;
  for (size_t i = 0; i < req->items.size(); ++i)
    for (std::string& m : api->ClientItemMessages(*req, i)) out.push_back(std::move(m));
  return out;
}

std::vector<std::string> Messages(const std::string& context_json) {
  std::vector<std::string> out;
  const Json context = Json::parse(context_json);  // outlives the loop over its member
  for (const Json& m : context["messages"]) out.push_back(m.dump());
  return out;
}

std::vector<std::string> Normalized(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const std::string& m : v) out.push_back(Json::parse(m).dump());
  return out;
}

TEST_F(ServeApiTest, ProxiedConversationsAreRecordedBranchedAndSurviveARestart) {
  StartService();
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"anthropic-version", "2023-06-01"}, {"x-claude-code-session-id", "conv-1"}};
  std::vector<std::pair<std::string, std::string>> turns = {{"user", "first question"}};
  std::string body;
  for (int i = 0; i < 3; ++i) {
    body = AnthropicBody(turns);
    RawResponse r = Post("/v1/messages", body, headers);
    ASSERT_EQ(r.status, 200) << r.body;
    turns.push_back({"assistant", "answer " + std::to_string(i)});
    turns.push_back({"user", "question " + std::to_string(i + 2)});
  }
  Settle();
  Json list = Json::parse(Get(kSessions).body)["sessions"];
  ASSERT_EQ(list.size(), 1u);
  std::string id = list[0]["id"];
  EXPECT_EQ(list[0]["firstPrompt"], "first question");
  EXPECT_EQ(Messages(Get(kSessions + "/" + id + "/context").body), Normalized(Expected(body)));
  // The client rewrote its history (its own compaction): the session branches.
  std::vector<std::pair<std::string, std::string>> rewritten = {
      {"user", "first question"}, {"assistant", "answer 0"}, {"user", "[summary of the rest]"}};
  body = AnthropicBody(rewritten);
  ASSERT_EQ(Post("/v1/messages", body, headers).status, 200);
  Settle();
  EXPECT_EQ(Messages(Get(kSessions + "/" + id + "/context").body), Normalized(Expected(body)));
  Json stats = Json::parse(Get(kSessions + "/" + id).body);
  EXPECT_EQ(stats["branchPoints"], 1);
  // Another conversation is another session; a restart keeps the index.
  ASSERT_EQ(Post("/v1/messages", AnthropicBody({{"user", "other"}}),
                 {{"anthropic-version", "2023-06-01"}, {"x-claude-code-session-id", "conv-2"}})
                .status,
            200);
  Restart();
  rewritten.push_back({"assistant", "ok"});
  rewritten.push_back({"user", "after the restart"});
  body = AnthropicBody(rewritten);
  ASSERT_EQ(Post("/v1/messages", body, headers).status, 200);
  Settle();
  EXPECT_EQ(Json::parse(Get(kSessions).body)["sessions"].size(), 2u);
  EXPECT_EQ(Messages(Get(kSessions + "/" + id + "/context").body), Normalized(Expected(body)));
}

TEST_F(ServeApiTest, ACompactionNotedByAnotherHookIsRecorded) {
  // A stand-in for the compaction hook: it says it replaced the first two items.
  class Noting : public serve::ProxyHook {
   public:
    explicit Noting(serve::RecordingHook* rec) : rec_(rec) {}
    std::unique_ptr<serve::ExchangeHook> Begin(serve::Exchange& ex) override {
      rec_->NoteCompaction(ex, 2, "what came before", 500, 120);
      return nullptr;
    }
    serve::RecordingHook* rec_;
  };
  StartService({}, [this](serve::Server& server) {
    server.proxy().AddHook(std::make_shared<Noting>(&service_->recording_hook()));
  });
  std::string body = AnthropicBody(
      {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}, {"user", "q3"}});
  ASSERT_EQ(Post("/v1/messages", body, {{"anthropic-version", "2023-06-01"}}).status, 200);
  Settle();
  Json list = Json::parse(Get(kSessions).body)["sessions"];
  ASSERT_EQ(list.size(), 1u);
  std::vector<std::string> ctx =
      Messages(Get(kSessions + "/" + list[0]["id"].get<std::string>() + "/context").body);
  std::vector<std::string> expected = Normalized(Expected(body));
  ASSERT_EQ(ctx.size(), expected.size() - 2 + 1);
  EXPECT_EQ(Json::parse(ctx[0])["role"], "compactionSummary");
  EXPECT_EQ(Json::parse(ctx[0])["summary"], "what came before");
  EXPECT_EQ(std::vector<std::string>(ctx.begin() + 1, ctx.end()),
            std::vector<std::string>(expected.begin() + 2, expected.end()));
}

// compactor serve killed with SIGKILL a second after its last request: the
// store holds every request and loads without a warning.
TEST(ServeRecordingKill, AKilledServerLosesNothingOlderThanASecond) {
  FakeUpstream upstream;
  ASSERT_TRUE(upstream.Start());
  TempDir store;
  ServeProcess p;
  ASSERT_TRUE(p.Start(COMPACTOR_CLI_PATH, {"serve", "--listen", "127.0.0.1:0", "--upstream",
                                           upstream.url(), "--store", store.path()}));
  std::string body;
  std::vector<std::pair<std::string, std::string>> turns = {{"user", "q0"}};
  for (int i = 0; i < 4; ++i) {
    body = AnthropicBody(turns);
    auto r =
        Fetch(p.port(), "POST", "/v1/messages",
              {{"content-type", "application/json"}, {"anthropic-version", "2023-06-01"}}, body);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200);
    turns.push_back({"assistant", "a" + std::to_string(i)});
    turns.push_back({"user", "q" + std::to_string(i + 1)});
  }
  std::this_thread::sleep_for(1200ms);
  p.Signal(SIGKILL);
  p.Wait(10s);
  DirectoryStoreOptions o;
  o.dir = store.path();
  auto s = NewDirectoryStore(o);
  ASSERT_TRUE(s.ok());
  auto list = (*s)->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  auto session = (*s)->Load((*list)[0].id);
  ASSERT_TRUE(session.ok());
  EXPECT_TRUE((*session)->warnings().empty());
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(Messages(ContextToJson(*ctx)), Normalized(Expected(body)))
      << ReadFileOrDie((*list)[0].path);
}

}  // namespace
}  // namespace compactor::testing
