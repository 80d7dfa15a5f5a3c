// The web viewer's files and sign-in over real HTTP on loopback
// (docs/viewer.md): content types, the CSP, validators and caching, the
// cookie that stands for the token off loopback, and the viewer's API
// endpoints (entries/{entry}, outline, window) on the fixture session.
#include "serve/viewer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "compactor/session.h"
#include "serve/api.h"
#include "serve/serve_fixture.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using Json = nlohmann::json;
using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

class ViewerTest : public ServeFixture {
 protected:
  void StartService(const std::function<void(ServeOptions&)>& adjust = {}) {
    StartProxy(
        [&](ServeOptions& o) {
          o.store = store_.path();
          if (adjust) adjust(o);
        },
        [this](serve::Server& server) {
          auto svc = serve::SessionService::Install(server, server.options());
          ASSERT_TRUE(svc.ok()) << svc.status().ToString();
          service_ = std::move(svc).value();
        });
  }
  void TearDown() override {
    ServeFixture::TearDown();
    service_.reset();
  }
  RawResponse Get(const std::string& target, HeaderPairs headers = {}) {
    auto r = Fetch(port_, "GET", target, headers);
    EXPECT_TRUE(r.has_value()) << target;
    return r.value_or(RawResponse{});
  }
  RawResponse Post(const std::string& target, const std::string& body, HeaderPairs headers = {}) {
    headers.emplace_back("content-type", "application/json");
    auto r = Fetch(port_, "POST", target, headers, body);
    EXPECT_TRUE(r.has_value()) << target;
    return r.value_or(RawResponse{});
  }

  TempDir store_;
  std::unique_ptr<serve::SessionService> service_;
};

TEST_F(ViewerTest, ServesTheEmbeddedFilesWithTypesCspAndValidators) {
  StartService();
  RawResponse page = Get("/compactor/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.Header("content-security-policy").find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page.Header("content-security-policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page.Header("x-content-type-options"), "nosniff");
  EXPECT_EQ(page.Header("cache-control"), "no-cache");
  EXPECT_NE(page.body.find("role=\"tree\""), std::string::npos);
  EXPECT_EQ(page.body.find("@BUILD_TAG@"), std::string::npos);
  // The page links its assets with the build tag: those are immutable.
  std::string etag = page.Header("etag");
  ASSERT_GT(etag.size(), 2u);
  std::string tag = etag.substr(1, etag.size() - 2);
  EXPECT_NE(page.body.find("viewer.js?v=" + tag), std::string::npos);
  RawResponse js = Get("/compactor/assets/viewer.js?v=" + tag);
  ASSERT_EQ(js.status, 200);
  EXPECT_EQ(js.Header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.Header("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_NE(js.body.find("'use strict'"), std::string::npos);
  EXPECT_EQ(Get("/compactor/assets/viewer.css").Header("content-type"), "text/css; charset=utf-8");
  EXPECT_EQ(Get("/compactor/assets/viewer.css", {{"if-none-match", etag}}).status, 304);
  EXPECT_EQ(Get("/compactor/assets/nothing.js").status, 404);
  EXPECT_EQ(Get("/compactor").status, 200);
}

TEST_F(ViewerTest, TheFilesAreTheSourcesCompiledIn) {
  for (const char* name : {"index.html", "viewer.js", "viewer.css"}) {
    bool found = false;
    for (const serve::EmbeddedFile& f : serve::ViewerFiles()) {
      if (f.name != name) continue;
      found = true;
      EXPECT_EQ(f.body,
                ReadFileOrDie(std::string(COMPACTOR_SOURCE_DIR) + "/src/serve/viewer/" + name));
    }
    EXPECT_TRUE(found) << name;
  }
}

TEST_F(ViewerTest, OffLoopbackTheSignInSetsAStrictHttpOnlyCookie) {
  StartService([](ServeOptions& o) {
    o.listen = "0.0.0.0:0";
    o.token = "tok-viewer-1";
  });
  EXPECT_EQ(Get("/compactor/").status, 200);  // the page holds no data
  EXPECT_EQ(Get("/compactor/v1/sessions").status, 401);
  EXPECT_EQ(Post("/compactor/v1/login", R"({"token":"nope"})").status, 401);
  RawResponse ok = Post("/compactor/v1/login", R"({"token":"tok-viewer-1"})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  std::string cookie = ok.Header("set-cookie");
  EXPECT_NE(cookie.find("compactor_token=tok-viewer-1"), std::string::npos);
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(Get("/compactor/v1/sessions", {{"cookie", "a=b; compactor_token=tok-viewer-1"}}).status,
            200);
  EXPECT_EQ(Get("/compactor/v1/sessions", {{"cookie", "compactor_token=tok-viewer-2"}}).status,
            401);
  EXPECT_NE(Post("/compactor/v1/logout", "").Header("set-cookie").find("Max-Age=0"),
            std::string::npos);
}

TEST_F(ViewerTest, OnLoopbackNoSignInIsNeeded) {
  StartService();
  RawResponse r = Post("/compactor/v1/login", "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"required":false})");
  EXPECT_FALSE(r.HasHeader("set-cookie"));
}

TEST_F(ViewerTest, EntryOutlineAndWindowDescribeTheSession) {
  std::string path = store_.Write("w.jsonl", ReadFileOrDie(FixturePath("pi/written.jsonl")));
  StartService([](ServeOptions& o) { o.context_window = 100000; });
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  const std::string base = "/compactor/v1/sessions/" + (*s)->header().id;

  RawResponse entry = Get(base + "/entries/297d32c3");
  ASSERT_EQ(entry.status, 200) << entry.body;
  Json e = Json::parse(entry.body);
  EXPECT_EQ(e["type"], "compaction");
  EXPECT_EQ(e["firstKeptEntryId"], "e7ee6207");
  EXPECT_EQ(Get(base + "/entries/00000000").status, 404);

  Json outline = Json::parse(Get(base + "/outline").body);
  ASSERT_EQ(outline["entries"].size(), (*s)->size());
  for (size_t i = 0; i < (*s)->size(); ++i) {
    EXPECT_EQ(outline["entries"][i]["id"], std::string((*s)->entry(i).id));
    EXPECT_LE(outline["entries"][i]["text"].get<std::string>().size(), 160u);
  }
  EXPECT_EQ(outline["entries"][0]["text"], "anthropic/claude-sonnet-4-5");
  EXPECT_EQ(outline["entries"][2]["text"],
            "Please read src/tokenize.ts and fix the off-by-one in the scanner loop.");
  EXPECT_EQ(outline["entries"][3]["text"], R"([thinking] read({"path":"src/tokenize.ts"}))");

  Json w = Json::parse(Get(base + "/window").body);
  EXPECT_EQ(w["contextWindow"], 100000);
  EXPECT_EQ(w["compactionId"], "297d32c3");
  EXPECT_GT(w["summaryTokens"].get<int64_t>(), 0);
  EXPECT_GT(w["keptTokens"].get<int64_t>(), 0);
  EXPECT_GT(w["newTokens"].get<int64_t>(), 0);
  EXPECT_EQ(w["totalTokens"].get<int64_t>(), w["summaryTokens"].get<int64_t>() +
                                                 w["keptTokens"].get<int64_t>() +
                                                 w["newTokens"].get<int64_t>());
  // Before the compaction nothing is summarized; the sum is the path's.
  Json early = Json::parse(Get(base + "/window?leaf=98f39a1d&contextWindow=5000").body);
  EXPECT_EQ(early["contextWindow"], 5000);
  EXPECT_EQ(early["summaryTokens"], 0);
  EXPECT_EQ(early["compactionId"], nullptr);
}

}  // namespace
}  // namespace compactor::testing
