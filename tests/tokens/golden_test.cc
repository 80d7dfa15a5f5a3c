// Token ids identical to tiktoken's (npm tiktoken 1.0.22, OpenAI's own Rust
// code as WASM) on a corpus of English, code, JSON, CJK, emoji, whitespace
// runs, very long words, invalid UTF-8, random Unicode and real pi session
// text. Needs node and scripts/install_test_deps.sh; skips without them
// (fails under CI=true when node is present but the packages are not).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compactor/tokenizer.h"
#include "support/sample_corpus.h"
#include "support/test_util.h"
#include "tokens/support.h"

namespace compactor {
namespace {

namespace fs = std::filesystem;

void CollectStrings(const nlohmann::json& j, std::string* out) {
  if (j.is_string()) {
    *out += j.get_ref<const std::string&>();
    *out += '\n';
  } else if (j.is_structured()) {
    for (const auto& v : j) CollectStrings(v, out);
  }
}

// Session text: every line of the fixture sessions (tests/fixtures/pi) as raw
// JSON, and the string values inside it (unescaped prose, code, tool output).
std::vector<tokens::SampleDoc> FixtureDocs() {
  std::vector<tokens::SampleDoc> docs;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(compactor::testing::FixturePath("pi"))) {
    // The v1 originals are near-duplicates of their v3 migrations.
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".jsonl" && name.find(".v1.") == std::string::npos) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string line, strings;
    while (std::getline(in, line)) {
      docs.push_back({"fixture-line", line});
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;
      strings.clear();
      CollectStrings(j, &strings);
      if (!strings.empty()) docs.push_back({"fixture-text", strings});
    }
  }
  return docs;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 160)) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char b[8];
      snprintf(b, sizeof(b), "\\x%02X", c);
      out += b;
    }
  }
  return out;
}

class TokenizerGoldenTest : public ::testing::TestWithParam<Encoding> {};

TEST_P(TokenizerGoldenTest, IdsIdenticalToTiktokenWasm) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  if (!compactor::testing::HaveNode())
    GTEST_SKIP() << "node not found: golden comparison with tiktoken skipped";
  std::string deps = std::getenv("COMPACTOR_NODE_DEPS_DIR") ? std::getenv("COMPACTOR_NODE_DEPS_DIR")
                                                            : COMPACTOR_NODE_DEPS_DIR;
  if (!fs::exists(deps + "/node_modules/tiktoken/package.json")) {
    std::string msg = "npm tiktoken not installed in " + deps +
                      " (run scripts/install_test_deps.sh): golden comparison skipped";
    if (tokens::testing::InCi()) FAIL() << msg;
    GTEST_SKIP() << msg;
  }

  std::vector<tokens::SampleDoc> docs = tokens::SyntheticCorpus(2026);
  size_t synthetic = docs.size();
  for (auto& d : FixtureDocs()) docs.push_back(std::move(d));
  EXPECT_GT(docs.size(), synthetic + 1000) << "tests/fixtures/pi has too few lines";

  fs::path dir = fs::temp_directory_path() / ("compactor_golden_" + std::to_string(::getpid()) +
                                              "_" + std::string(EncodingName(GetParam())));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "in.bin", std::ios::binary);
    for (const auto& d : docs) {
      uint32_t len = static_cast<uint32_t>(d.text.size());
      out.write(reinterpret_cast<const char*>(&len), 4);
      out.write(d.text.data(), len);
    }
  }
  std::string cmd = "node '" + std::string(COMPACTOR_SOURCE_DIR) + "/tests/tokens/golden.mjs' '" +
                    deps + "' " + std::string(EncodingName(GetParam())) + " '" +
                    (dir / "in.bin").string() + "' '" + (dir / "out.bin").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir / "out.bin", std::ios::binary);
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);

  size_t off = 0, total_ids = 0, total_bytes = 0, mismatched = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    ASSERT_LE(off + 4, golden.size());
    uint32_t n;
    std::memcpy(&n, golden.data() + off, 4);
    off += 4;
    std::vector<uint32_t> want(n);
    std::memcpy(want.data(), golden.data() + off, 4 * size_t{n});
    off += 4 * size_t{n};
    std::vector<uint32_t> got = tok->Encode(docs[i].text);
    total_ids += n;
    total_bytes += docs[i].text.size();
    if (got != want) {
      size_t k = 0;
      while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
      ADD_FAILURE() << docs[i].kind << " doc " << i << ": first difference at id " << k << " (got "
                    << (k < got.size() ? std::to_string(got[k]) : "end") << ", want "
                    << (k < want.size() ? std::to_string(want[k]) : "end")
                    << ") in: " << Printable(docs[i].text);
      if (++mismatched > 10) break;
      continue;
    }
    EXPECT_EQ(tok->Count(docs[i].text), n) << docs[i].kind << " doc " << i;
  }
  EXPECT_EQ(off, golden.size());
  printf("%s: %zu documents, %zu bytes, %zu ids identical to tiktoken 1.0.22\n",
         std::string(EncodingName(GetParam())).c_str(), docs.size(), total_bytes, total_ids);
}

INSTANTIATE_TEST_SUITE_P(Encodings, TokenizerGoldenTest,
                         ::testing::Values(Encoding::kO200kBase, Encoding::kCl100kBase),
                         [](const auto& info) { return std::string(EncodingName(info.param)); });

}  // namespace
}  // namespace compactor
