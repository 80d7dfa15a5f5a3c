// The binary vocabulary format (tokens/vocab_file.h): round trip, rejection
// of damaged files, the converter, and the relocatable search path.
#include "tokens/vocab_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/sample_corpus.h"
#include "support/test_util.h"
#include "tokens/bpe.h"
#include "tokens/sha256.h"
#include "tokens/support.h"

namespace compactor {
namespace {

namespace fs = std::filesystem;
using testing::VarsEnv;
using tokens::EncodingSpec;
using tokens::kNoRank;
using tokens::SampleRng;

// A made-up encoding: every byte, then random tokens of 2..40 bytes, with
// gaps (ranks without a token) here and there.
struct Synthetic {
  EncodingSpec spec;
  std::vector<std::string> tokens;
};

Synthetic MakeSynthetic(uint64_t seed, size_t extra) {
  SampleRng rng(seed);
  std::vector<std::string> by_rank;
  for (int b = 255; b >= 0; --b) by_rank.emplace_back(1, static_cast<char>(b));
  std::set<std::string> seen(by_rank.begin(), by_rank.end());
  while (by_rank.size() < 256 + extra) {
    if (rng.Below(50) == 0) {
      by_rank.emplace_back();  // a gap
      continue;
    }
    std::string t;
    size_t len = 2 + rng.Below(rng.Below(4) == 0 ? 39 : 9);
    while (t.size() < len) {
      // A small alphabet, so that tokens share prefixes and hash neighbours.
      t += static_cast<char>(rng.Below(3) == 0 ? rng.Below(256) : 'a' + rng.Below(6));
    }
    if (seen.insert(t).second) by_rank.push_back(t);
  }
  size_t count = 0;
  for (const auto& t : by_rank) count += !t.empty();
  EncodingSpec spec{Encoding::kCl100kBase,
                    "test_base",
                    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                    count,
                    {}};
  return {spec, by_rank};
}

// An 8-byte-aligned copy of file bytes (what a mapping gives).
struct Bytes {
  std::vector<uint64_t> words;
  size_t size = 0;
  explicit Bytes(std::string_view s) : words(s.size() / 8 + 1), size(s.size()) {
    std::memcpy(words.data(), s.data(), s.size());
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
};

std::string AsString(const tokens::VocabImage& image) {
  return std::string(reinterpret_cast<const char*>(image.data()), image.size());
}

Status ViewStatus(const EncodingSpec& spec, std::string_view file, bool check_tables) {
  Bytes b(file);
  return tokens::ViewVocabImage(spec, b.data(), b.size, check_tables).status();
}

// Rewrites the header of `file` after `change`, with a valid header checksum.
template <typename F>
std::string WithHeader(std::string file, F&& change) {
  tokens::VocabHeader h;
  std::memcpy(&h, file.data(), sizeof h);
  change(h);
  std::memcpy(file.data(), &h, sizeof h);
  h.header_checksum = tokens::VocabChecksum(reinterpret_cast<const uint8_t*>(file.data()) + 16,
                                            tokens::kVocabHeaderSize - 16);
  std::memcpy(file.data(), &h, sizeof h);
  return file;
}

TEST(VocabFileTest, RoundTripFindsEveryTokenAndNothingElse) {
  Synthetic syn = MakeSynthetic(1, 20000);
  auto image = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->size() % tokens::kVocabAlign, 0u);
  // Deterministic: the converter's output depends only on its input.
  auto again = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(AsString(*image), AsString(*again));

  // Through a file-like copy, not the builder's own buffer.
  Bytes file(AsString(*image));
  auto view = tokens::ViewVocabImage(syn.spec, file.data(), file.size, /*check_tables=*/true);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const tokens::RankTable& table = view->table;
  EXPECT_EQ(table.size(), syn.spec.ranks);
  size_t max_len = 0;
  for (size_t r = 0; r < syn.tokens.size(); ++r) {
    const std::string& t = syn.tokens[r];
    max_len = std::max(max_len, t.size());
    EXPECT_EQ(table.Bytes(static_cast<uint32_t>(r)), t) << r;
    if (t.empty()) continue;
    std::string padded = t + std::string(tokens::kReadPadding, '\0');
    ASSERT_EQ(table.Find(reinterpret_cast<const uint8_t*>(padded.data()), t.size()), r) << r;
  }
  EXPECT_EQ(view->max_token_len, max_len);
  EXPECT_TRUE(table.Bytes(static_cast<uint32_t>(syn.tokens.size())).empty());
  EXPECT_TRUE(table.Bytes(kNoRank).empty());
  std::set<std::string> all(syn.tokens.begin(), syn.tokens.end());
  SampleRng rng(2);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    size_t len = 2 + rng.Below(20);
    while (s.size() < len) s += static_cast<char>('a' + rng.Below(7));
    if (all.count(s)) continue;
    std::string padded = s + std::string(tokens::kReadPadding, '\0');
    ASSERT_EQ(table.Find(reinterpret_cast<const uint8_t*>(padded.data()), s.size()), kNoRank) << s;
  }
}

TEST(VocabFileTest, BuildRejectsDuplicateTokens) {
  Synthetic syn = MakeSynthetic(3, 100);
  syn.tokens.push_back(syn.tokens[300].empty() ? syn.tokens[301] : syn.tokens[300]);
  ++syn.spec.ranks;
  auto image = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  EXPECT_EQ(image.status().code(), StatusCode::kCorruption);
  EXPECT_NE(image.status().message().find("duplicate"), std::string::npos);
}

TEST(VocabFileTest, EveryTruncationAndChangedByteIsCorruption) {
  Synthetic syn = MakeSynthetic(4, 3000);
  auto image = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  ASSERT_TRUE(image.ok());
  const std::string good = AsString(*image);
  ASSERT_TRUE(ViewStatus(syn.spec, good, false).ok());
  ASSERT_TRUE(ViewStatus(syn.spec, good, true).ok());

  // Any change of size, with or without the table checksum.
  for (size_t size : {size_t{0}, size_t{1}, size_t{8}, size_t{16}, tokens::kVocabHeaderSize - 1,
                      tokens::kVocabHeaderSize, tokens::kVocabHeaderSize + 64, good.size() / 2,
                      good.size() - 64, good.size() - 8, good.size() - 1}) {
    for (bool check_tables : {false, true}) {
      Status s = ViewStatus(syn.spec, std::string_view(good).substr(0, size), check_tables);
      EXPECT_EQ(s.code(), StatusCode::kCorruption) << size << ": " << s.ToString();
    }
  }
  EXPECT_EQ(ViewStatus(syn.spec, good + std::string(64, '\0'), false).code(),
            StatusCode::kCorruption);

  // Every byte of the header (always checked), the first and last byte of
  // every section and random bytes anywhere (checked with the tables).
  std::vector<size_t> positions;
  for (size_t i = 0; i < tokens::kVocabHeaderSize; ++i) positions.push_back(i);
  tokens::VocabHeader h;
  std::memcpy(&h, good.data(), sizeof h);
  for (const auto& sec : h.sections) {
    positions.push_back(sec.offset);
    positions.push_back(sec.offset + sec.size - 1);
  }
  SampleRng rng(5);
  for (int i = 0; i < 300; ++i) positions.push_back(rng.Below(good.size()));
  positions.push_back(good.size() - 1);
  for (size_t pos : positions) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng.Below(255)));
    Status s = ViewStatus(syn.spec, bad, true);
    ASSERT_EQ(s.code(), StatusCode::kCorruption) << "byte " << pos << ": " << s.ToString();
    if (pos < tokens::kVocabHeaderSize) {
      s = ViewStatus(syn.spec, bad, false);
      ASSERT_EQ(s.code(), StatusCode::kCorruption) << "byte " << pos << ": " << s.ToString();
    }
  }
}

// Without the table checksum a load reads only the header and two pages, so
// damaged tables can load: lookups must still stay inside the file and end.
TEST(VocabFileTest, GarbageTablesNeverCrashOrLoop) {
  Synthetic syn = MakeSynthetic(9, 3000);
  auto image = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  ASSERT_TRUE(image.ok());
  std::string file = AsString(*image);
  tokens::VocabHeader h;
  std::memcpy(&h, file.data(), sizeof h);
  SampleRng rng(10);
  for (int s : {tokens::kPairTable, tokens::kFilter, tokens::kShortTable, tokens::kLongTable,
                tokens::kOffsets, tokens::kBlob}) {
    for (size_t i = 0; i < h.sections[s].size; ++i) {
      file[h.sections[s].offset + i] = static_cast<char>(rng.Below(256));
    }
  }
  // Keep the two things a load does read: the end of the blob, and every
  // slot full (the worst case for probing: no empty slot ends a probe).
  uint32_t blob_end = static_cast<uint32_t>(h.sections[tokens::kBlob].size - tokens::kReadPadding);
  std::memcpy(file.data() + h.sections[tokens::kOffsets].offset + 4 * size_t{h.rank_count},
              &blob_end, 4);
  for (int s : {tokens::kShortTable, tokens::kLongTable}) {
    // The len field: bytes 12..15 of a short slot, 16..19 of a long one.
    size_t slot = s == tokens::kShortTable ? 16 : 24, len_at = s == tokens::kShortTable ? 12 : 16;
    for (size_t i = 0; i < h.sections[s].size; i += slot) {
      file[h.sections[s].offset + i + len_at] = 1;
    }
  }
  Bytes b(file);
  EXPECT_EQ(tokens::ViewVocabImage(syn.spec, b.data(), b.size, true).status().code(),
            StatusCode::kCorruption);
  auto view = tokens::ViewVocabImage(syn.spec, b.data(), b.size, false);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const tokens::RankTable& table = view->table;
  for (uint32_t r = 0; r < h.rank_count + 10; ++r) {
    std::string_view bytes = table.Bytes(r);
    ASSERT_LE(bytes.size(), h.sections[tokens::kBlob].size);
  }
  uint32_t starts[tokens::kSmallMergeMax + 1];
  std::vector<uint32_t> heap_starts;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    size_t len = 2 + rng.Below(tokens::kSmallMergeMax - 1);
    while (s.size() < len) s += static_cast<char>(rng.Below(256));
    std::string padded = s + std::string(tokens::kReadPadding, '\0');
    const auto* p = reinterpret_cast<const uint8_t*>(padded.data());
    (void)table.Find(p, 1 + rng.Below(len));
    ASSERT_LE(tokens::SmallMerge(table, p, len, starts), len);
    ASSERT_LE(tokens::HeapMerge(table, p, len, &heap_starts), len);
  }
}

TEST(VocabFileTest, HeaderChecksNameWhatIsWrong) {
  Synthetic syn = MakeSynthetic(6, 500);
  auto image = tokens::BuildVocabImage(syn.spec, syn.spec.sha256, syn.tokens);
  ASSERT_TRUE(image.ok());
  const std::string good = AsString(*image);
  // A header change with a valid checksum: the field check must fire.
  auto with = [&](auto&& change) { return ViewStatus(syn.spec, WithHeader(good, change), false); };
  auto expect = [](const Status& s, std::string_view words) {
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.ToString();
  };
  expect(with([](tokens::VocabHeader& h) { h.version = 2; }), "version 2");
  expect(with([](tokens::VocabHeader& h) { h.magic[0] = 'X'; }), "magic");
  expect(with([](tokens::VocabHeader& h) { h.encoding[0] = 'X'; }), "encoding");
  expect(with([](tokens::VocabHeader& h) { h.source_sha256[0] = 'f'; }), "sha256");
  expect(with([](tokens::VocabHeader& h) { ++h.token_count; }), "tokens");
  expect(with([](tokens::VocabHeader& h) { h.short_bits = 40; }), "table sizes");
  expect(with([](tokens::VocabHeader& h) { h.sections[tokens::kLongTable].offset += 64; }),
         "section");
  expect(with([](tokens::VocabHeader& h) { h.file_size += 64; }), "truncated");
  // The tables belong to one encoding.
  EncodingSpec other = syn.spec;
  other.name = "other_base";
  expect(ViewStatus(other, good, false), "encoding");
  EncodingSpec pinned = syn.spec;
  pinned.sha256 = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
  expect(ViewStatus(pinned, good, false), "sha256");
  std::string bad = good;
  bad[20] ^= 1;
  expect(ViewStatus(syn.spec, bad, false), "header checksum");
}

TEST(VocabFileTest, ChecksumSeesEveryWord) {
  std::string data(4096 + 24, '\0');
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  uint64_t base = tokens::VocabChecksum(p, data.size());
  std::set<uint64_t> sums{base};
  for (size_t i = 0; i < data.size(); i += 8) {
    data[i] = 1;
    sums.insert(tokens::VocabChecksum(p, data.size()));
    data[i] = 0;
  }
  EXPECT_EQ(sums.size(), 1 + data.size() / 8);
  EXPECT_NE(tokens::VocabChecksum(p, data.size() - 8), base);  // the length counts
}

// ---- The real vocabularies (skipped when not installed) ----

// The directory the tests' tokenizer came from.
std::string VocabDirOf(const Tokenizer& tok) {
  return fs::path(tok.source_path()).parent_path().string();
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class VocabRealTest : public ::testing::TestWithParam<Encoding> {};

TEST_P(VocabRealTest, TestsUseTheMappedForm) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  EXPECT_TRUE(tok->source_path().ends_with(tokens::kBinarySuffix))
      << "the tokenizer tests (golden included) should run on the binary form, but loaded "
      << tok->source_path() << " (build again: the build converts <build>/vocab)";
}

TEST_P(VocabRealTest, BinaryFileIsTheConvertedTiktokenAndEncodesTheSame) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  const EncodingSpec& spec = tokens::SpecOf(GetParam());
  fs::path dir = VocabDirOf(*tok);
  fs::path source = dir / (std::string(spec.name) + tokens::kTiktokenSuffix);
  fs::path binary = dir / (std::string(spec.name) + tokens::kBinarySuffix);
  if (!fs::exists(source) || !fs::exists(binary)) {
    GTEST_SKIP() << dir << " lacks the .tiktoken or the .cvocab (an install tree)";
  }
  std::string text = ReadAll(source);
  auto by_rank = tokens::ParseTiktoken(spec, text, true);
  ASSERT_TRUE(by_rank.ok()) << by_rank.status().ToString();
  auto image = tokens::BuildVocabImage(spec, spec.sha256, *by_rank);
  ASSERT_TRUE(image.ok());
  EXPECT_TRUE(AsString(*image) == ReadAll(binary)) << binary << " differs from a fresh conversion";

  VocabOptions opts;
  opts.dir = dir.string();
  VarsEnv no_vars;
  opts.env = &no_vars;
  auto mapped = Tokenizer::Load(GetParam(), opts);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ((*mapped)->source_path(), binary.string());
  auto parsed = Tokenizer::FromTiktoken(GetParam(), text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*mapped)->vocab_size(), (*parsed)->vocab_size());
  for (const auto& doc : tokens::SyntheticCorpus(91)) {
    ASSERT_EQ((*mapped)->Encode(doc.text), (*parsed)->Encode(doc.text)) << doc.kind;
  }
  for (uint32_t id = 0; id < (*parsed)->vocab_size() + 300; id += 7) {
    std::vector<uint32_t> one = {id};
    auto a = (*mapped)->Decode(one);
    auto b = (*parsed)->Decode(one);
    ASSERT_EQ(a.ok(), b.ok()) << id;
    if (a.ok()) {
      ASSERT_EQ(*a, *b) << id;
    }
  }
}

TEST_P(VocabRealTest, LoadReportsDamagedFileAsCorruptionNamingIt) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, GetParam());
  const EncodingSpec& spec = tokens::SpecOf(GetParam());
  fs::path binary = fs::path(VocabDirOf(*tok)) / (std::string(spec.name) + tokens::kBinarySuffix);
  if (!fs::exists(binary)) GTEST_SKIP() << "no " << binary;
  const std::string good = ReadAll(binary);
  compactor::testing::TempDir tmp;
  std::string path = tmp.path() + "/" + std::string(spec.name) + tokens::kBinarySuffix;
  VocabOptions opts;
  opts.dir = tmp.path();
  VarsEnv no_vars;
  opts.env = &no_vars;
  std::vector<std::string> variants = {good.substr(0, good.size() / 3), good.substr(0, 100), "",
                                       good + "x", good.substr(0, good.size() - 64)};
  for (size_t pos : {size_t{0}, size_t{17}, size_t{40}, size_t{200}, size_t{300}}) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x20);
    variants.push_back(bad);
  }
  // The other encoding's file under this name.
  const EncodingSpec& other = tokens::SpecOf(
      GetParam() == Encoding::kO200kBase ? Encoding::kCl100kBase : Encoding::kO200kBase);
  variants.push_back(
      ReadAll(binary.parent_path() / (std::string(other.name) + tokens::kBinarySuffix)));
  for (const std::string& v : variants) {
    tmp.Write(std::string(spec.name) + tokens::kBinarySuffix, v);
    auto t = Tokenizer::Load(GetParam(), opts);
    ASSERT_FALSE(t.ok()) << v.size();
    EXPECT_EQ(t.status().code(), StatusCode::kCorruption) << t.status().ToString();
    EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().ToString();
  }
  // Damage inside the tables is not looked for at load (that would read the
  // whole file) and may change ids, but never crashes.
  std::string bad = good;
  for (size_t pos = tokens::kVocabHeaderSize + 4096; pos < bad.size(); pos += 4099)
    bad[pos] ^= 0x5A;
  tmp.Write(std::string(spec.name) + tokens::kBinarySuffix, bad);
  auto damaged = Tokenizer::Load(GetParam(), opts);
  if (damaged.ok()) {
    for (const auto& doc : tokens::SyntheticCorpus(5)) {
      std::vector<uint32_t> ids = (*damaged)->Encode(doc.text);
      EXPECT_EQ((*damaged)->Count(doc.text), ids.size());
      (void)(*damaged)->Decode(ids);
    }
  }
  // The binary file is preferred; a directory with only the source still works.
  fs::remove(path);
  fs::path source = fs::path(VocabDirOf(*tok)) / (std::string(spec.name) + tokens::kTiktokenSuffix);
  if (!fs::exists(source)) GTEST_SKIP() << "no " << source;
  fs::copy_file(source, tmp.path() + "/" + source.filename().string());
  auto t = Tokenizer::Load(GetParam(), opts);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->source_path().ends_with(tokens::kTiktokenSuffix));
  EXPECT_EQ((*t)->Encode("hello world"), tok->Encode("hello world"));
}

INSTANTIATE_TEST_SUITE_P(Encodings, VocabRealTest,
                         ::testing::Values(Encoding::kO200kBase, Encoding::kCl100kBase),
                         [](const auto& info) { return std::string(EncodingName(info.param)); });

// ---- The converter ----

TEST(VocabConvertTest, ConvertsSkipsWhenUpToDateAndToleratesMissingSources) {
  compactor::testing::TempDir empty;
  auto r = compactor::testing::RunProgram({COMPACTOR_VOCAB_CONVERT_PATH, empty.path()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("o200k_base.tiktoken"), std::string::npos) << r.err;
  r = compactor::testing::RunProgram(
      {COMPACTOR_VOCAB_CONVERT_PATH, "--skip-missing", empty.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("install_vocab.sh"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(empty.path()));

  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, Encoding::kCl100kBase);
  fs::path dir = VocabDirOf(*tok);
  if (!fs::exists(dir / "cl100k_base.tiktoken")) GTEST_SKIP() << "no .tiktoken in " << dir;
  compactor::testing::TempDir src, out;
  fs::copy_file(dir / "cl100k_base.tiktoken", fs::path(src.path()) / "cl100k_base.tiktoken");
  r = compactor::testing::RunProgram(
      {COMPACTOR_VOCAB_CONVERT_PATH, "--skip-missing", src.path(), out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;
  fs::path made = fs::path(out.path()) / "cl100k_base.cvocab";
  EXPECT_TRUE(ReadAll(made) == ReadAll(dir / "cl100k_base.cvocab"));
  // Up to date: left alone.
  r = compactor::testing::RunProgram(
      {COMPACTOR_VOCAB_CONVERT_PATH, "--skip-missing", src.path(), out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
  // A damaged output is rewritten; a wrong source is refused.
  std::string damaged = ReadAll(made);
  damaged[damaged.size() / 2] ^= 1;
  out.Write("cl100k_base.cvocab", damaged);
  r = compactor::testing::RunProgram(
      {COMPACTOR_VOCAB_CONVERT_PATH, "--skip-missing", src.path(), out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(ReadAll(made) == ReadAll(dir / "cl100k_base.cvocab"));
  src.Write("cl100k_base.tiktoken", ReadAll(dir / "cl100k_base.tiktoken") + "\n");
  fs::remove(made);
  r = compactor::testing::RunProgram(
      {COMPACTOR_VOCAB_CONVERT_PATH, "--skip-missing", src.path(), out.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("sha256"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(made));
}

// ---- Relocatable search path ----

TEST(VocabSearchPathTest, RelativeToTheRunningExecutable) {
  VocabOptions opts;
  VarsEnv no_vars;
  opts.env = &no_vars;
  std::vector<std::string> path = VocabSearchPath(opts);
  fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  ASSERT_GE(path.size(), 2u);
  EXPECT_EQ(path[0], (exe_dir / ".." / "share/compactor/vocab").lexically_normal().string());
  EXPECT_EQ(path[1], (exe_dir / "vocab").string());
  std::set<std::string> unique(path.begin(), path.end());
  EXPECT_EQ(unique.size(), path.size());
}

// Runs a copy of the CLI with the environment variable unset.
compactor::testing::RunResult RunCopy(const std::string& exe, const std::string& file) {
  std::string saved = std::getenv(kVocabDirEnv) ? std::getenv(kVocabDirEnv) : "";
  unsetenv(kVocabDirEnv);
  auto r = compactor::testing::RunProgram(
      {exe, "tokens", file, "--text", "--tokenizer", "cl100k", "--json"});
  if (!saved.empty()) setenv(kVocabDirEnv, saved.c_str(), 1);
  return r;
}

TEST(VocabSearchPathTest, CopiedBinaryFindsItsDataInAnInstallOrBuildLayout) {
  COMPACTOR_LOAD_TOKENIZER_OR_SKIP(tok, Encoding::kCl100kBase);
  fs::path binary = fs::path(VocabDirOf(*tok)) / "cl100k_base.cvocab";
  if (!fs::exists(binary)) GTEST_SKIP() << "no " << binary;
  compactor::testing::TempDir prefix;
  std::string file = prefix.Write("six.txt", "hello!");
  fs::path bin = fs::path(prefix.path()) / "bin";
  fs::create_directories(bin);
  fs::copy_file(COMPACTOR_CLI_PATH, bin / "compactor");
  fs::permissions(bin / "compactor", fs::perms::owner_exec, fs::perm_options::add);

  // Without data next to it, the copy finds nothing (no path is compiled in)
  // and names where it looked.
  auto r = RunCopy((bin / "compactor").string(), file);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  fs::path share = fs::path(prefix.path()) / "share/compactor/vocab";
  EXPECT_NE(r.err.find(share.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((bin / "vocab").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("install_vocab.sh"), std::string::npos) << r.err;

  // An install tree: <prefix>/bin/compactor and <prefix>/share/compactor/vocab.
  fs::create_directories(share);
  fs::copy_file(binary, share / "cl100k_base.cvocab");
  r = RunCopy((bin / "compactor").string(), file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"], tok->Count("hello!"));
  EXPECT_EQ(j["tokenizer"], "cl100k");

  // A build tree: <dir>/compactor and <dir>/vocab; through a symlink too.
  fs::remove_all(share);
  fs::create_directories(bin / "vocab");
  fs::copy_file(binary, bin / "vocab" / "cl100k_base.cvocab");
  fs::create_symlink(bin / "compactor", fs::path(prefix.path()) / "link");
  for (const fs::path& exe : {bin / "compactor", fs::path(prefix.path()) / "link"}) {
    r = RunCopy(exe.string(), file);
    ASSERT_EQ(r.exit_code, 0) << exe << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"], tok->Count("hello!"));
  }
}

}  // namespace
}  // namespace compactor
