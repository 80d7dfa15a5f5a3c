#include "compactor/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "support/sample_corpus.h"
#include "support/test_util.h"
#include "tokens/bpe.h"
#include "tokens/sha256.h"
#include "tokens/support.h"
#include "util/utf8.h"

namespace compactor {
namespace {

using testing::VarsEnv;
using tokens::SampleRng;

TEST(TokenizerSha256Test, FipsVectors) {
  EXPECT_EQ(tokens::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(tokens::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(tokens::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(tokens::Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55/56/64 bytes) differ from each other.
  EXPECT_NE(tokens::Sha256Hex(std::string(55, 'x')), tokens::Sha256Hex(std::string(56, 'x')));
}

TEST(TokenizerUtf8Test, RepairsMaximalSubpartsLikeWhatwg) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(internal::ReplaceInvalidUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\x80"), r);
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xF0\x9F\x98"), r);  // truncated 4-byte: one
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xF0\x9F\x98x"), r + "x");
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xC0\xAF"), r + r);          // overlong: C0 never valid
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xED\xA0\x80"), r + r + r);  // surrogate
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(internal::ReplaceInvalidUtf8("\xE1\x80\xE1\x80"), r + r);
  EXPECT_EQ(internal::ReplaceInvalidUtf8("a\xFF"
                                         "b"),
            "a" + r + "b");
  EXPECT_EQ(internal::FindInvalidUtf8("plain ascii text, long enough for words"),
            std::string_view::npos);
  EXPECT_EQ(internal::FindInvalidUtf8("0123456789\xC3"), 10u);
}

TEST(TokenizerEncodingTest, Names) {
  EXPECT_EQ(EncodingName(Encoding::kO200kBase), "o200k_base");
  EXPECT_EQ(*ParseEncoding("o200k"), Encoding::kO200kBase);
  EXPECT_EQ(*ParseEncoding("cl100k_base"), Encoding::kCl100kBase);
  EXPECT_EQ(ParseEncoding("p50k").status().code(), StatusCode::kInvalidArgument);
}

TEST(TokenizerVocabTest, SearchOrderAndMissingVocabularyMessage) {
  VarsEnv no_vars;
  VocabOptions opts;
  opts.dir = "/nonexistent/explicit";
  opts.env = &no_vars;
  auto path = VocabSearchPath(opts);
  ASSERT_GE(path.size(), 2u);
  EXPECT_EQ(path[0], "/nonexistent/explicit");
  EXPECT_NE(path[1].find("share/compactor/vocab"), std::string::npos);

  VarsEnv with_var;
  with_var.vars[kVocabDirEnv] = "/nonexistent/from-env";
  opts.env = &with_var;
  path = VocabSearchPath(opts);
  EXPECT_EQ(path[1], "/nonexistent/from-env");
  // The process environment through Env::Default().
  setenv(kVocabDirEnv, "/nonexistent/from-process", 1);
  opts.env = nullptr;
  path = VocabSearchPath(opts);
  EXPECT_EQ(path[1], "/nonexistent/from-process");
  unsetenv(kVocabDirEnv);

  // With every directory missing the file, the error names them all and how
  // to install. Point the explicit dir at an empty one and check the message
  // (the later defaults may hold a real vocabulary, so load by FromTiktoken's
  // sibling path only when they are absent).
  auto dir = std::filesystem::temp_directory_path() / "compactor_vocab_empty";
  std::filesystem::create_directories(dir);
  opts.dir = dir.string();
  opts.env = &no_vars;
  auto t = Tokenizer::Load(Encoding::kO200kBase, opts);
  if (!t.ok()) {
    EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
    EXPECT_NE(t.status().message().find(dir.string()), std::string::npos);
    EXPECT_NE(t.status().message().find("install_vocab.sh"), std::string::npos);
    EXPECT_NE(t.status().message().find(kVocabDirEnv), std::string::npos);
  }
}

TEST(TokenizerVocabTest, RejectsModifiedFile) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, Encoding::kCl100kBase);
  // The source file next to the binary form the tokenizer was mapped from.
  auto source = std::filesystem::path(tok->source_path()).parent_path() / "cl100k_base.tiktoken";
  if (!std::filesystem::exists(source)) GTEST_SKIP() << "no " << source << " (an install tree)";
  std::ifstream in(source, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(tokens::Sha256Hex(content),
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7");
  std::string changed = content;
  changed[10] = changed[10] == 'A' ? 'B' : 'A';
  auto bad = Tokenizer::FromTiktoken(Encoding::kCl100kBase, changed);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("sha256"), std::string::npos);
  // Without the hash check the content checks still catch a broken file.
  auto truncated = Tokenizer::FromTiktoken(Encoding::kCl100kBase,
                                           std::string_view(content).substr(0, 5000), false);
  EXPECT_EQ(truncated.status().code(), StatusCode::kCorruption);
  // The wrong file for the encoding fails too.
  auto wrong = Tokenizer::FromTiktoken(Encoding::kO200kBase, content);
  EXPECT_EQ(wrong.status().code(), StatusCode::kCorruption);
  // A copy in an explicit directory is found first.
  auto dir = std::filesystem::temp_directory_path() / "compactor_vocab_copy";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "cl100k_base.cvocab");
  std::filesystem::copy_file(source, dir / "cl100k_base.tiktoken",
                             std::filesystem::copy_options::overwrite_existing);
  VocabOptions opts;
  opts.dir = dir.string();
  auto found = Tokenizer::Load(Encoding::kCl100kBase, opts);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ((*found)->source_path(), (dir / "cl100k_base.tiktoken").string());
  EXPECT_EQ((*found)->vocab_size(), 100256u);
}

TEST(TokenizerSharedTest, OneInstancePerEncodingAndOptions) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, Encoding::kCl100kBase);
  auto a = Tokenizer::Shared(Encoding::kCl100kBase);
  auto b = Tokenizer::Shared(Encoding::kCl100kBase);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ((*a)->encoding(), Encoding::kCl100kBase);
  VarsEnv no_vars;
  VocabOptions missing;
  missing.dir = "/nonexistent/compactor-vocab";
  missing.env = &no_vars;
  auto c = Tokenizer::Shared(Encoding::kCl100kBase, missing);
  // The explicit dir is absent, so the later defaults are searched: a
  // distinct instance (other options) of the same vocabulary, unless the
  // vocabulary is only reachable through the environment.
  if (c.ok()) {
    EXPECT_NE(c->get(), a->get());
    EXPECT_EQ((*c)->Count("hello world"), 2u);
  } else {
    EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  }
}

class TokenizerTest : public ::testing::TestWithParam<Encoding> {};

TEST_P(TokenizerTest, KnownIds) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  // Published tiktoken outputs.
  if (GetParam() == Encoding::kO200kBase) {
    EXPECT_EQ(tok->Encode("hello world"), (std::vector<uint32_t>{24912, 2375}));
    EXPECT_EQ(tok->vocab_size(), 199998u);
  } else {
    EXPECT_EQ(tok->Encode("hello world"), (std::vector<uint32_t>{15339, 1917}));
    EXPECT_EQ(tok->vocab_size(), 100256u);
  }
  EXPECT_TRUE(tok->Encode("").empty());
  EXPECT_EQ(tok->Count(""), 0u);
}

TEST_P(TokenizerTest, CountEqualsEncodeSizeAndDecodeRoundTrips) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  for (const auto& doc : tokens::SyntheticCorpus(77)) {
    auto ids = tok->Encode(doc.text);
    ASSERT_EQ(tok->Count(doc.text), ids.size()) << doc.kind;
    // Twice: the second Count is served partly from the piece cache.
    ASSERT_EQ(tok->Count(doc.text), ids.size()) << doc.kind;
    auto back = tok->Decode(ids);
    ASSERT_TRUE(back.ok());
    std::string want = internal::FindInvalidUtf8(doc.text) == std::string_view::npos
                           ? doc.text
                           : internal::ReplaceInvalidUtf8(doc.text);
    ASSERT_EQ(*back, want) << doc.kind;
  }
}

TEST_P(TokenizerTest, DecodeSpecialAndUnknownIds) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  uint32_t eot = GetParam() == Encoding::kO200kBase ? 199999 : 100257;
  std::vector<uint32_t> ids = {eot};
  EXPECT_EQ(*tok->Decode(ids), "<|endoftext|>");
  // encode_ordinary: special text is ordinary text.
  EXPECT_GT(tok->Encode("<|endoftext|>").size(), 1u);
  ids = {5000000};
  EXPECT_EQ(tok->Decode(ids).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(TokenizerTest, HeapMergeEqualsArrayMerge) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  // The heap merge handles long pieces in production; here it must give the
  // array loop's exact parts on pieces short enough for both.
  SampleRng rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string piece;
    size_t len = 2 + rng.Below(tokens::kSmallMergeMax - 1);
    switch (i % 4) {
      case 0:
        while (piece.size() < len) piece += static_cast<char>('a' + rng.Below(26));
        break;
      case 1:
        while (piece.size() < len) piece += " \t\n="[rng.Below(4)];
        break;
      case 2:
        piece = tokens::SampleCjk(rng, len + 3);
        break;
      default:
        while (piece.size() < len) piece += static_cast<char>(rng.Below(256));
        break;
    }
    if (piece.size() < 2 || piece.size() > tokens::kSmallMergeMax) continue;
    std::string padded = piece + std::string(tokens::kReadPadding, '\0');
    const auto* p = reinterpret_cast<const uint8_t*>(padded.data());
    uint32_t small_starts[tokens::kSmallMergeMax + 1];
    std::vector<uint32_t> heap_starts;
    const tokens::RankTable& table = tokens::RankTableOf(*tok);
    size_t a = tokens::SmallMerge(table, p, piece.size(), small_starts);
    size_t b = tokens::HeapMerge(table, p, piece.size(), &heap_starts);
    ASSERT_EQ(a, b) << piece;
    for (size_t k = 0; k <= a; ++k) ASSERT_EQ(small_starts[k], heap_starts[k]) << piece;
  }
}

TEST_P(TokenizerTest, CountIsThreadSafe) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  SampleRng rng(12);
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) texts.push_back(tokens::BenchMixed(40000 + 1000 * i));
  std::vector<size_t> want;
  for (const auto& t : texts) want.push_back(tok->Encode(t).size());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (tok->Count(texts[(i + th) % texts.size()]) != want[(i + th) % texts.size()]) {
            ++failures[th];
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

INSTANTIATE_TEST_SUITE_P(Encodings, TokenizerTest,
                         ::testing::Values(Encoding::kO200kBase, Encoding::kCl100kBase),
                         [](const auto& info) { return std::string(EncodingName(info.param)); });

}  // namespace
}  // namespace compactor
