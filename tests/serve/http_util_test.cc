// The proxy's HTTP helpers (src/serve/http_util.h) and request-body decoding
// (src/serve/content_encoding.h).
#include "serve/http_util.h"

#include <gtest/gtest.h>

#include <string>

#include "serve/compress.h"
#include "serve/content_encoding.h"

namespace compactor::serve {
namespace {

using compactor::testing::Brotli;
using compactor::testing::Zlib;
using compactor::testing::Zstd;

const std::string kJson = R"({"model":"m","messages":[{"role":"user","content":"hello"}]})";

TEST(ContentEncoding, EveryCodingDecodes) {
  EXPECT_EQ(*DecodeContent("", kJson, 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("identity", kJson, 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("gzip", Zlib(kJson, 31), 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("x-gzip", Zlib(kJson, 31), 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("deflate", Zlib(kJson, 15), 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("deflate", Zlib(kJson, -15), 1 << 20), kJson);  // raw deflate
  EXPECT_EQ(*DecodeContent("br", Brotli(kJson), 1 << 20), kJson);
  EXPECT_EQ(*DecodeContent("zstd", Zstd(kJson), 1 << 20), kJson);
  // A list is undone last coding first.
  EXPECT_EQ(*DecodeContent("gzip, zstd", Zstd(Zlib(kJson, 31)), 1 << 20), kJson);
}

TEST(ContentEncoding, ErrorsNameTheirHttpStatus) {
  EXPECT_EQ(DecodeContent("compress", kJson, 1 << 20).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(DecodeContent("gzip", "not gzip at all", 1 << 20).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeContent("zstd", "not zstd", 1 << 20).status().code(),
            StatusCode::kInvalidArgument);
  // A bomb: 8 MiB of zeros in a few KiB stops at the limit.
  std::string zeros(8u << 20, '\0');
  for (const std::string& bomb : {Zlib(zeros, 31), Zstd(zeros), Brotli(zeros)}) {
    EXPECT_LT(bomb.size(), 64u << 10);
  }
  EXPECT_EQ(DecodeContent("gzip", Zlib(zeros, 31), 1 << 20).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeContent("zstd", Zstd(zeros), 1 << 20).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeContent("br", Brotli(zeros), 1 << 20).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(HttpUtil, HopByHopFieldsAndTheOnesConnectionNames) {
  HeaderList h = {{"Connection", "keep-alive, X-Foo"},
                  {"X-Foo", "1"},
                  {"Keep-Alive", "5"},
                  {"TE", "trailers"},
                  {"Trailer", "X-T"},
                  {"Upgrade", "h2c"},
                  {"Transfer-Encoding", "chunked"},
                  {"Proxy-Foo", "p"},
                  {"x-api-key", "k"},
                  {"anthropic-beta", "b"},
                  {"X-Bar", "kept"}};
  HeaderList out = EndToEnd(h);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "x-api-key");
  EXPECT_EQ(out[1].first, "anthropic-beta");
  EXPECT_EQ(out[2].first, "X-Bar");
}

TEST(HttpUtil, ListenAddressesAndLoopback) {
  auto a = ParseListen("127.0.0.1:8787");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8787);
  auto v6 = ParseListen("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", ":80", "host:x"}) {
    EXPECT_FALSE(ParseListen(bad).ok()) << bad;
  }
  for (const char* lo : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(lo)) << lo;
  }
  for (const char* not_lo : {"0.0.0.0", "::", "192.168.1.2", "10.0.0.1", "example.com"}) {
    EXPECT_FALSE(IsLoopbackHost(not_lo)) << not_lo;
  }
}

TEST(HttpUtil, UpstreamUrls) {
  EXPECT_EQ(*NormalizeUpstream("https://api.anthropic.com/"), "https://api.anthropic.com");
  EXPECT_EQ(*NormalizeUpstream("HTTP://127.0.0.1:9/prefix/"), "http://127.0.0.1:9/prefix");
  for (const char* bad :
       {"api.anthropic.com", "ftp://x", "http://", "http://x/?q=1", "http://a b"}) {
    EXPECT_FALSE(NormalizeUpstream(bad).ok()) << bad;
  }
  EXPECT_EQ(JoinUpstream("http://h:1/p", "/v1/messages?beta=true"),
            "http://h:1/p/v1/messages?beta=true");
  EXPECT_EQ(RedactUrl("https://user:secret@h/v1"), "https://***@h/v1");
  EXPECT_EQ(RedactUrl("https://h/v1?x=a@b"), "https://h/v1?x=a@b");
}

TEST(HttpUtil, SecretsAreRedacted) {
  std::string t = RedactTarget("/v1/models?key=sk-123&beta=true&access_token=t0k&x=1");
  EXPECT_EQ(t.find("sk-123"), std::string::npos) << t;
  EXPECT_EQ(t.find("t0k"), std::string::npos) << t;
  EXPECT_NE(t.find("beta=true"), std::string::npos) << t;
  EXPECT_NE(t.find("x=1"), std::string::npos) << t;
  HeaderList h = {{"Authorization", "Bearer sk-bearer"},
                  {"x-api-key", "sk-ant-key"},
                  {"anthropic-version", "2023-06-01"}};
  std::string text =
      RedactSecrets("failed with sk-bearer and sk-ant-key on 2023-06-01", CredentialsIn(h));
  EXPECT_EQ(text, "failed with [REDACTED] and [REDACTED] on 2023-06-01");
}

TEST(HttpUtil, SessionIdsCannotTraverse) {
  for (const char* ok : {"abc", "0193f0aa-1b2c-7def-8000-000000000001", "a.b_c-d"}) {
    EXPECT_TRUE(ValidSessionId(ok)) << ok;
  }
  for (const char* bad : {"", ".", "..", "../etc", "a/b", ".hidden", "a\\b", "a b", "a%2fb"}) {
    EXPECT_FALSE(ValidSessionId(bad)) << bad;
  }
  EXPECT_FALSE(ValidSessionId(std::string(129, 'a')));
  EXPECT_TRUE(ConstantTimeEquals("token", "token"));
  EXPECT_FALSE(ConstantTimeEquals("token", "tokem"));
  EXPECT_FALSE(ConstantTimeEquals("token", "token2"));
}

TEST(HttpUtil, RoutesAndErrorShapes) {
  EXPECT_EQ(ClassifyPath("/v1/messages").api, "anthropic");
  EXPECT_EQ(ClassifyPath("/v1/responses/compact").api, "openai-responses");
  EXPECT_EQ(ClassifyPath("/v1/chat/completions").api, "openai-chat");
  EXPECT_EQ(ClassifyPath("/compactor/v1/sessions").kind, RouteKind::kService);
  EXPECT_EQ(ClassifyPath("/compactorx").kind, RouteKind::kProxy);
  EXPECT_EQ(ClassifyPath("/healthz").kind, RouteKind::kHealth);
  EXPECT_EQ(ClassifyPath("/metrics").kind, RouteKind::kMetrics);
  EXPECT_EQ(ClassifyPath("/").kind, RouteKind::kProxy);
  EXPECT_EQ(ClassifyPath("/anything/else").label, "other");
  EXPECT_EQ(ErrorBody("anthropic", 502, "upstream_error", "m"),
            R"({"type":"error","error":{"type":"api_error","message":"m"}})");
  EXPECT_EQ(
      ErrorBody("openai-chat", 413, "request_too_large", "m"),
      R"({"error":{"message":"m","type":"invalid_request_error","param":null,"code":"request_too_large"}})");
  EXPECT_EQ(ErrorBody("", 404, "not_found", "m"),
            R"({"error":{"code":"not_found","message":"m"}})");
}

}  // namespace
}  // namespace compactor::serve
