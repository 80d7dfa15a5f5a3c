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
#include "compactor/summarizer.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

const std::string kSessions = "/compactor/v1/sessions";

// A context's messages, each as compact JSON (defined below).
std::vector<std::string> Messages(const std::string& context_json);

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

  // The recorded session's context once it equals `want`, or as it is after
  // 10 s: records are written off the request path, and a request's log
  // line (what Settle waits for) can precede its record under a slow build.
  std::vector<std::string> RecordedContext(const std::string& id,
                                           const std::vector<std::string>& want) {
    std::vector<std::string> got;
    for (int i = 0; i < 500; ++i) {
      service_->recorder().Flush();
      got = Messages(Get(kSessions + "/" + id + "/context").body);
      if (got == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return got;
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

// GET .../export: the session file, whose context is the service's.
TEST_F(ServeApiTest, ExportAnswersTheSessionFile) {
  std::string path = Copy("pi/compacted.v3.jsonl", "compacted.jsonl");
  std::string id = IdOf(path);
  StartService();
  RawResponse r = Get(kSessions + "/" + id + "/export");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "application/x-ndjson");
  EXPECT_EQ(r.body, ReadFileOrDie(path));
  std::string exported = store_.Write("exported.jsonl.out", r.body);
  EXPECT_EQ(Cli({"context", exported, "--json"}), Get(kSessions + "/" + id + "/context").body);
  EXPECT_EQ(Get(kSessions + "/nosuch/export").status, 404);
}

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

// summarizer=upstream in the API: the serve's upstream writes the summary
// with the caller's own credentials, which go to the upstream only (not
// stored, not logged); without credentials the request is refused.
TEST_F(ServeApiTest, TheUpstreamSummarizerUsesTheCallersCredentialsOnly) {
  std::string path = Copy("pi/long.v3.jsonl", "long.jsonl");
  std::string id = IdOf(path);
  StartService();
  const std::string key = "sk-ant-caller-secret-4242";
  const std::string compact =
      kSessions + "/" + id + "/compact?summarizer=upstream&model=claude-test";
  RawResponse none = Post(compact, "");
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(ErrorCode(none), "credentials_required");
  EXPECT_EQ(ErrorCode(Post(compact + "&api=nosuch", "", {{"x-api-key", key}})), "invalid_argument");
  EXPECT_EQ(upstream_.request_count(), 0u);
  const std::string branch = kSessions + "/" + id + "/branch";
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  Json to = {{"to", std::string((*s)->entry(3).id)},
             {"summarize", true},
             {"summarizer", "upstream"},
             {"model", "claude-test"}};
  EXPECT_EQ(ErrorCode(Post(branch, to.dump())), "credentials_required");

  RawResponse r = Post(compact, "", {{"x-api-key", key}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Json::parse(r.body)["compacted"].get<bool>());
  ASSERT_GE(upstream_.request_count(), 1u);
  const UpstreamRecord up = upstream_.requests()[0];
  EXPECT_EQ(up.target, "/v1/messages");
  EXPECT_EQ(up.Header("x-api-key"), key);
  EXPECT_EQ(Json::parse(up.body)["model"], "claude-test");
  RawResponse b = Post(branch, to.dump(), {{"x-api-key", key}});
  EXPECT_EQ(b.status, 200) << b.body;
  Settle();
  EXPECT_EQ(ReadFileOrDie(path).find(key), std::string::npos) << "the key was stored";
  for (const std::string& l : logs()) EXPECT_EQ(l.find(key), std::string::npos) << l;
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

// An agent's request (it declares a tool: requests without tools are
// auxiliary and not recorded).
std::string AnthropicBody(const std::vector<std::pair<std::string, std::string>>& turns) {
  Json messages = Json::array();
  for (const auto& [role, text] : turns) messages.push_back({{"role", role}, {"content", text}});
  Json body = {
      {"model", "claude-test"}, {"max_tokens", 64}, {"system", "be brief"}, {"messages", messages}};
  body["tools"] = Json::array(
      {{{"name", "read"}, {"description", "read a file"}, {"input_schema", {{"type", "object"}}}}});
  return body.dump();
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
  EXPECT_EQ(RecordedContext(id, Normalized(Expected(body))), Normalized(Expected(body)));
  // The client rewrote its history (its own compaction): the session branches.
  std::vector<std::pair<std::string, std::string>> rewritten = {
      {"user", "first question"}, {"assistant", "answer 0"}, {"user", "[summary of the rest]"}};
  body = AnthropicBody(rewritten);
  ASSERT_EQ(Post("/v1/messages", body, headers).status, 200);
  Settle();
  EXPECT_EQ(RecordedContext(id, Normalized(Expected(body))), Normalized(Expected(body)));
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
  EXPECT_EQ(RecordedContext(id, Normalized(Expected(body))), Normalized(Expected(body)));
}

TEST_F(ServeApiTest, ACompactionSetOnTheExchangeIsRecorded) {
  // A stand-in for the compaction hook: it says it replaced the first two items.
  class Noting : public serve::ProxyHook {
   public:
    std::unique_ptr<serve::ExchangeHook> Begin(serve::Exchange& ex) override {
      ex.set_compaction(serve::ExchangeCompaction{2, "what came before", 500, 120, false});
      return nullptr;
    }
  };
  StartService({},
               [](serve::Server& server) { server.proxy().AddHook(std::make_shared<Noting>()); });
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

// An error answer still records the request (its messages were sent; no
// assistant reply came); an auxiliary request (no tools: a title, a quota
// check) of the same conversation is no session and no part of one.
TEST_F(ServeApiTest, ErrorAnswersAreRecordedAuxiliaryRequestsAreNot) {
  StartService();
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"anthropic-version", "2023-06-01"}, {"x-claude-code-session-id", "conv-err"}};
  ScriptedReply refused;
  refused.status = 529;
  refused.reason = "Overloaded";
  refused.headers = {{"content-type", "application/json"}};
  refused.pieces = {R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})"};
  upstream_.Push(refused);
  std::string body = AnthropicBody({{"user", "first question"}});
  RawResponse r = Post("/v1/messages", body, headers);
  ASSERT_EQ(r.status, 529) << r.body;
  std::string session = r.Header("x-compactor-session");
  EXPECT_FALSE(session.empty());
  // A title request of the same conversation: no tools, another system prompt.
  std::string title = Json{{"model", "claude-test"},
                           {"max_tokens", 32},
                           {"system", "write a title"},
                           {"messages", Json::array({{{"role", "user"}, {"content", "title?"}}})}}
                          .dump();
  RawResponse t = Post("/v1/messages", title, headers);
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_TRUE(t.Header("x-compactor-session").empty());
  Settle();
  Json list = Json::parse(Get(kSessions).body)["sessions"];
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_EQ(list[0]["id"], session);
  EXPECT_EQ(Messages(Get(kSessions + "/" + session + "/context").body), Normalized(Expected(body)));
  // The retry that succeeds continues the same session.
  ASSERT_EQ(Post("/v1/messages", body, headers).status, 200);
  Settle();
  EXPECT_EQ(Json::parse(Get(kSessions).body)["sessions"].size(), 1u);
  EXPECT_EQ(Messages(Get(kSessions + "/" + session + "/context").body), Normalized(Expected(body)));
}

// The upstream's usage is recorded with each answer (a compactor.usage
// custom entry, outside the context), as the upstream reported it: streamed
// or not.
TEST_F(ServeApiTest, TheUpstreamsUsageIsRecordedWithEachAnswer) {
  StartService();
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"anthropic-version", "2023-06-01"}, {"x-claude-code-session-id", "usage-1"}};
  RawResponse first = Post("/v1/messages", AnthropicRequest(2, 10).dump(), headers);
  ASSERT_EQ(first.status, 200) << first.body;
  const Json usage = Json::parse(first.body)["usage"];
  Json streamed = AnthropicRequest(3, 10);
  streamed["stream"] = true;
  ASSERT_EQ(Post("/v1/messages", streamed.dump(), headers).status, 200);
  Settle();
  const std::string id = first.Header("x-compactor-session");
  ASSERT_FALSE(id.empty());
  std::vector<Json> recorded;
  for (int i = 0; i < 500 && recorded.size() < 2; ++i) {
    service_->recorder().Flush();
    recorded.clear();
    std::string text = Get(kSessions + "/" + id + "/export").body;
    for (size_t b = 0, e; b < text.size(); b = e + 1) {
      e = text.find('\n', b);
      if (e == std::string::npos) e = text.size();
      Json entry = Json::parse(text.substr(b, e - b), nullptr, false);
      if (entry.is_object() && entry.value("customType", "") == "compactor.usage")
        recorded.push_back(entry["data"]);
    }
    if (recorded.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0]["inputTokens"], usage["input_tokens"]);
  EXPECT_EQ(recorded[0]["outputTokens"], usage["output_tokens"]);
  EXPECT_GT(recorded[1]["inputTokens"].get<int64_t>(), 0);
  EXPECT_GT(recorded[1]["outputTokens"].get<int64_t>(), 0);
  EXPECT_EQ(recorded[1]["model"], "claude-sonnet-4-5");
}

// x-compactor-session names the recorded session: the API opens it, and its
// context is what the proxy sent upstream for the latest request (the
// proxy's summary as a compaction, then the messages it kept).
TEST_F(ServeApiTest, TheSessionHeaderOpensTheRecordedSessionWithTheContextSentUpstream) {
  StartService([](ServeOptions& o) {
    o.context_window = 12000;
    o.summarizer = "offline";
  });
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"anthropic-version", "2023-06-01"}, {"x-api-key", "dummy"}};
  std::string session;
  for (int turns : {30, 32}) {
    RawResponse r = Post("/v1/messages", AnthropicRequest(turns, 120).dump(), headers);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.Header("x-compactor-compacted").empty());
    if (!session.empty()) {
      EXPECT_EQ(r.Header("x-compactor-session"), session);
    }
    session = r.Header("x-compactor-session");
  }
  ASSERT_FALSE(session.empty());
  Settle();
  RawResponse stats = Get(kSessions + "/" + session);
  ASSERT_EQ(stats.status, 200) << stats.body;
  std::vector<std::string> ctx = Messages(Get(kSessions + "/" + session + "/context").body);
  // What went upstream last: the summary message, then the kept items.
  const ProviderApi* api = FindProviderApi("anthropic");
  auto sent = api->ReadClientRequest(upstream_.requests().back().body);
  ASSERT_TRUE(sent.ok());
  std::vector<std::string> kept;
  for (size_t i = 1; i < sent->items.size(); ++i)
    for (std::string& m : api->ClientItemMessages(*sent, i)) kept.push_back(Json::parse(m).dump());
  ASSERT_EQ(ctx.size(), kept.size() + 1);
  Json summary = Json::parse(ctx[0]);
  EXPECT_EQ(summary["role"], "compactionSummary");
  // (the summary's text inside the first message sent, both escaped alike)
  std::string escaped = summary["summary"].dump();
  escaped = escaped.substr(1, escaped.size() - 2);
  EXPECT_NE(Json::parse(api->ClientItemMessages(*sent, 0).at(0)).dump().find(escaped),
            std::string::npos);
  EXPECT_EQ(std::vector<std::string>(ctx.begin() + 1, ctx.end()), kept);
}

// The proxy's conversation table is bounded (serve.maxConversations, LRU):
// an evicted conversation that comes back finds its summary in the store's
// summary cache: no new summary, the identical bytes upstream (its prompt
// cache still hits).
TEST_F(ServeApiTest, AnEvictedConversationFindsItsSummaryInTheStore) {
  StartService([](ServeOptions& o) {
    o.context_window = 12000;
    o.max_conversations = 1;
  });
  auto is_summary = [](const UpstreamRecord& r) {
    return r.body.find(SummarizationSystemPrompt().substr(0, 40)) != std::string::npos;
  };
  auto client_requests = [&] {
    std::vector<UpstreamRecord> out;
    for (const UpstreamRecord& r : upstream_.requests())
      if (!is_summary(r)) out.push_back(r);
    return out;
  };
  auto send = [&](const std::string& conversation) {
    RawResponse r = Post("/v1/messages", AnthropicRequest(30, 120).dump(),
                         {{"anthropic-version", "2023-06-01"},
                          {"x-api-key", "dummy"},
                          {"x-claude-code-session-id", conversation}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.Header("x-compactor-compacted").empty()) << conversation;
  };
  send("conv-a");
  const size_t summaries = upstream_.request_count() - client_requests().size();
  EXPECT_GE(summaries, 1u);
  send("conv-b");  // evicts conv-a (another conversation, the same content)
  send("conv-a");  // back: its summary comes from the store
  std::vector<UpstreamRecord> sent = client_requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[2].body, sent[0].body);
  EXPECT_EQ(upstream_.request_count() - sent.size(), summaries)
      << "conv-b reused the cached summary of the same prefix, and conv-a found it again";
  EXPECT_NE(Get("/metrics").body.find("compactor_summary_cache_hits_total 2"), std::string::npos);
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
