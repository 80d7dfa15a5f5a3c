// Every CPU kernel this build has and this CPU runs must give the same results
// as the baseline (fallback) code: the session index, the message estimate and
// the JSON string scan, on the same inputs.
#include "util/kernel.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compactor/estimate.h"
#include "compactor/kernel.h"
#include "compactor/session.h"
#include "util/utf8.h"

namespace compactor {
namespace {

// Restores the kernel in use when a test ends.
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = std::string(ActiveKernelName()); }
  void TearDown() override { ASSERT_TRUE(SelectKernel(saved_).ok()); }

  // Runs `fn` under every available kernel and expects the same string from each.
  template <typename F>
  void ExpectSameUnderEveryKernel(F fn, const std::string& what) {
    std::vector<std::string_view> kernels = AvailableKernels();
    ASSERT_FALSE(kernels.empty());
    ASSERT_TRUE(SelectKernel(kernels.back()).ok());  // the baseline
    const std::string want = fn();
    for (std::string_view k : kernels) {
      ASSERT_TRUE(SelectKernel(k).ok()) << k;
      ASSERT_EQ(ActiveKernelName(), k);
      EXPECT_EQ(fn(), want) << what << " under the " << k << " kernel";
    }
  }

 private:
  std::string saved_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Everything the index records about each entry, and what the loader reports.
std::string Digest(const Session& s) {
  std::ostringstream o;
  o.precision(17);
  for (const LoadWarning& w : s.warnings()) o << "warning " << w.ToString() << "\n";
  for (size_t i = 0; i < s.size(); ++i) {
    const Entry& e = s.entry(i);
    o << e.line << " " << e.type_name << " " << e.id << " <" << e.parent_id << "> " << e.timestamp
      << " " << e.timestamp_ms << " " << e.role_name << " " << e.provider << " " << e.model << " "
      << e.stop_reason << " " << e.has_usage << " " << e.usage.input << " " << e.usage.output << " "
      << e.usage.cache_read << " " << e.usage.cache_write << " " << e.usage.total_tokens << " "
      << e.first_kept_entry_id << " " << e.tokens_before << " " << e.from_id << " " << e.target_id
      << " " << e.label << " " << e.name << " " << e.thinking_level << " " << e.has_label
      << e.from_hook << e.summary_empty << " " << e.tool_call_blocks << " " << e.estimate << " "
      << s.MessageJson(i).size() << "\n";
    s.ForEachFileCall(i, [&](std::string_view tool, std::string_view path) {
      o << "  file " << tool << " " << path << "\n";
    });
  }
  if (auto leaf = s.Leaf()) o << "leaf " << *leaf << "\n";
  return o.str();
}

// A session whose strings exercise the vector paths: long bodies, escapes
// across 64-byte blocks, runs of backslashes, \u escapes, multi-byte text and
// a line with invalid UTF-8.
std::string SyntheticSession() {
  std::mt19937 rng(11);
  const char* pieces[] = {"a",        "\\n",  "\\\\",      "\\\"", "\\u00e9", "\\ud83d\\ude00",
                          "é",        "日本", "😀",         "\\/",  " ",       "\\t",
                          "\\\\\\\\", "x",    "0123456789"};
  auto text = [&](size_t n) {
    std::string t;
    while (t.size() < n) t += pieces[rng() % std::size(pieces)];
    return t;
  };
  std::string out =
      R"({"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"})"
      "\n";
  std::string parent = "null";
  for (int i = 0; i < 200; ++i) {
    std::string id = "e" + std::to_string(i);
    std::string msg;
    switch (i % 4) {
      case 0:
        msg = R"({"role":"user","content":")" + text(rng() % 300) + R"(","timestamp":1})";
        break;
      case 1:
        msg =
            R"({"role":"assistant","content":[{"type":"thinking","thinking":")" +
            text(rng() % 500) + R"("},{"type":"text","text":")" + text(rng() % 200) +
            R"("},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"src/)" +
            std::to_string(i) + R"(.cc","oldText":")" + text(rng() % 400) +
            R"(","n":[1,2.5,-3e2,true,null]}}],"usage":{"input":12,"output":3,"cacheRead":0,)"
            R"("cacheWrite":0,"totalTokens":15},"stopReason":"toolUse","provider":"p","model":"m"})";
        break;
      case 2:
        msg =
            R"({"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":")" +
            text(rng() % 2000) + R"("}],"isError":false})";
        break;
      default:
        msg = R"({"role":"bashExecution","command":")" + text(40) + R"(","output":")" +
              text(rng() % 800) + R"(","exitCode":0})";
    }
    out += R"({"type":"message","id":")" + id + R"(","parentId":)" + parent +
           R"(,"timestamp":"2025-01-01T00:00:0)" + std::to_string(i % 10) + R"(.000Z","message":)" +
           msg + "}\n";
    parent = "\"" + id + "\"";
  }
  out += R"({"type":"message","id":"bad","parentId":)" + parent +
         R"(,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"a)"
         "\xC3\x28\xE2\x82"
         R"(b"}})"
         "\n";
  return out;
}

std::vector<std::string> Sessions() {
  std::vector<std::string> out;
  const std::string dir = std::string(COMPACTOR_SOURCE_DIR) + "/tests/fixtures/pi/";
  for (const char* f : {"compacted.v1.jsonl", "compacted.v3.jsonl", "long.v1.jsonl",
                        "long.v3.jsonl", "written.jsonl"})
    out.push_back(ReadFile(dir + f));
  out.push_back(SyntheticSession());
  return out;
}

TEST_F(KernelTest, TheBaselineIsAlwaysAvailable) {
  std::vector<std::string_view> kernels = AvailableKernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_TRUE(kernels.back() == "fallback" || kernels.back() == "native") << kernels.back();
  EXPECT_FALSE(SelectKernel("no-such-kernel").ok());
  for (const internal::KernelTable* k : internal::CompiledKernels()) {
    if (!internal::KernelSupported(*k)) {
      EXPECT_FALSE(SelectKernel(k->name).ok()) << k->name;
    }
  }
}

TEST_F(KernelTest, SessionIndexIsTheSame) {
  int n = 0;
  for (const std::string& contents : Sessions()) {
    ASSERT_FALSE(contents.empty());
    for (bool estimate : {false, true}) {
      ExpectSameUnderEveryKernel(
          [&] {
            LoadOptions options;
            options.message_observer = estimate ? TokenEstimateObserver() : nullptr;
            auto s = Session::FromString(contents, "s.jsonl", options);
            return s.ok() ? Digest(**s) : "error: " + s.status().ToString();
          },
          "session " + std::to_string(n));
    }
    ++n;
  }
}

TEST_F(KernelTest, MessageEstimateIsTheSame) {
  for (const std::string& contents : Sessions()) {
    auto s = Session::FromString(contents, "s.jsonl", LoadOptions());
    ASSERT_TRUE(s.ok());
    for (size_t i = 0; i < (*s)->size(); ++i) {
      std::string json((*s)->MessageJson(i));
      if (json.empty()) continue;
      ExpectSameUnderEveryKernel([&] { return std::to_string(EstimateMessageTokens(json)); },
                                 json.substr(0, 80));
    }
  }
}

TEST_F(KernelTest, JsonStringScanIsTheSame) {
  std::mt19937 rng(5);
  const char alphabet[] = {'a', '\\', 'u', '/', '"', '\n', '\x01', '\xC3', '\xA9', '\xF0', ' '};
  for (int round = 0; round < 300; ++round) {
    std::string body(rng() % 300, ' ');
    for (char& c : body) c = alphabet[rng() % sizeof(alphabet)];
    ExpectSameUnderEveryKernel(
        [&] {
          internal::JsonStringBodyScan r = internal::ScanJsonStringBody(body);
          return std::to_string(r.units) + " " + std::to_string(r.escapes) + " " +
                 std::to_string(r.u_escapes) + " " + std::to_string(r.slash_escapes) + " " +
                 std::to_string(r.controls) + " " + std::to_string(r.long_runs);
        },
        "body of " + std::to_string(body.size()) + " bytes");
  }
}

}  // namespace
}  // namespace compactor
