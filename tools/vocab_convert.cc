// Converts the .tiktoken vocabularies into the binary form Tokenizer::Load
// maps (docs/tokenizers.md, "Binary vocabulary format"). A build tool: CMake
// runs it on <build>/vocab at every build; it is not installed and not part
// of the library's API.
//
//   compactor_vocab_convert [--skip-missing] SRC_DIR [OUT_DIR]
//
// For each encoding, SRC_DIR/<name>.tiktoken (its sha256 must be the pin) ->
// OUT_DIR/<name>.cvocab (OUT_DIR defaults to SRC_DIR), written to a
// temporary file and renamed, so a concurrent reader never sees half a file.
// An output newer than its source that passes the load checks is left alone,
// which makes the run at every build cost a few milliseconds. With
// --skip-missing a missing source is reported and skipped, so the build
// succeeds before scripts/install_vocab.sh has run. Exit 0 on success, 1 on
// any error (the message names the file), 2 on bad usage.
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compactor/tokenizer.h"
#include "tokens/vocab_file.h"
#include "util/file.h"

namespace {

namespace fs = std::filesystem;
using compactor::Encoding;
using compactor::Status;
namespace tokens = compactor::tokens;

// True when `out` is at least as new as `src` and loads.
bool UpToDate(const tokens::EncodingSpec& spec, const fs::path& src, const fs::path& out) {
  std::error_code ec;
  auto out_time = fs::last_write_time(out, ec);
  if (ec || out_time < fs::last_write_time(src, ec) || ec) return false;
  auto bytes = compactor::internal::FileBytes::Open(nullptr, out.string());
  return bytes.ok() && tokens::ViewVocabImage(spec, reinterpret_cast<const uint8_t*>(bytes->data()),
                                              bytes->size(), /*check_tables=*/true)
                           .ok();
}

Status WriteFileAtomically(const fs::path& path, const uint8_t* data, size_t size) {
  std::string name = ".";  // appended piecewise: g++ 12 warns falsely on "." + string (PR 105329)
  name += path.filename().string();
  name += ".tmp";
  name += std::to_string(::getpid());
  fs::path tmp = path.parent_path() / name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) return Status::IoError(tmp.string() + ": cannot write");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::IoError(path.string() + ": cannot rename into place");
  }
  return Status::Ok();
}

Status Convert(Encoding encoding, const fs::path& src_dir, const fs::path& out_dir,
               bool skip_missing) {
  const tokens::EncodingSpec& spec = tokens::SpecOf(encoding);
  fs::path src = src_dir / (std::string(spec.name) + tokens::kTiktokenSuffix);
  fs::path out = out_dir / (std::string(spec.name) + tokens::kBinarySuffix);
  if (!fs::is_regular_file(src)) {
    if (!skip_missing) return Status::NotFound(src.string() + ": no such file");
    std::printf("vocab_convert: no %s (install it with %s); the %s tokenizer is unavailable\n",
                src.c_str(), compactor::kInstallVocabCommand, std::string(spec.name).c_str());
    return Status::Ok();
  }
  if (UpToDate(spec, src, out)) return Status::Ok();
  COMPACTOR_ASSIGN_OR_RETURN(compactor::internal::FileBytes content,
                             compactor::internal::FileBytes::Open(nullptr, src.string()));
  // The converter always checks the pin: it is recorded in the output.
  auto by_rank = tokens::ParseTiktoken(spec, std::string_view(content.data(), content.size()),
                                       /*verify_sha256=*/true);
  if (!by_rank.ok())
    return Status(by_rank.status().code(), src.string() + ": " + by_rank.status().message());
  COMPACTOR_ASSIGN_OR_RETURN(tokens::VocabImage image,
                             tokens::BuildVocabImage(spec, spec.sha256, *by_rank));
  // What is written must load.
  auto view = tokens::ViewVocabImage(spec, image.data(), image.size(), /*check_tables=*/true);
  if (!view.ok())
    return Status::Internal("converted " + src.string() +
                            " does not load: " + view.status().message());
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  COMPACTOR_RETURN_IF_ERROR(WriteFileAtomically(out, image.data(), image.size()));
  std::printf("vocab_convert: wrote %s (%.1f MB)\n", out.c_str(), image.size() / 1e6);
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool skip_missing = false;
  if (!args.empty() && args[0] == "--skip-missing") {
    skip_missing = true;
    args.erase(args.begin());
  }
  if (args.empty() || args.size() > 2 || args[0].starts_with("-")) {
    std::fprintf(stderr, "usage: compactor_vocab_convert [--skip-missing] SRC_DIR [OUT_DIR]\n");
    return 2;
  }
  if constexpr (std::endian::native != std::endian::little) {
    std::fprintf(stderr, "vocab_convert: the binary vocabulary format is little-endian\n");
    return 1;
  }
  fs::path src_dir = args[0];
  fs::path out_dir = args.size() > 1 ? fs::path(args[1]) : src_dir;
  int rc = 0;
  for (Encoding e : {Encoding::kO200kBase, Encoding::kCl100kBase}) {
    Status s = Convert(e, src_dir, out_dir, skip_missing);
    if (!s.ok()) {
      std::fprintf(stderr, "vocab_convert: %s\n", s.ToString().c_str());
      rc = 1;
    }
  }
  return rc;
}
