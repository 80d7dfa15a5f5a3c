// Read-only bytes of a session file through the Env: a mapping for regular
// files (so a 1 GiB session costs no copy), a copy for pipes and devices.
#ifndef COMPACTOR_SRC_UTIL_FILE_H_
#define COMPACTOR_SRC_UTIL_FILE_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "compactor/env.h"
#include "compactor/status.h"

namespace compactor::internal {

// The error of a read that another process cut short by truncating the file
// (MappedFile::truncated): kIoError "PATH: truncated by another process while
// it was read", then "; nothing written" for a writer that gave up.
Status TruncatedWhileRead(const std::string& path, bool nothing_written);

// The default bound on bytes read from a pipe, FIFO or device (1 GiB).
inline constexpr size_t kDefaultMaxStreamBytes = size_t{1} << 30;

class FileBytes {
 public:
  FileBytes() = default;
  FileBytes(FileBytes&& o) noexcept = default;
  FileBytes& operator=(FileBytes&& o) noexcept = default;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  // Errors: kNotFound "PATH: no such file", kIoError for a directory ("PATH:
  // is a directory, not a session file") or an unreadable file.
  // Pipes, FIFOs and devices are read into memory, at most `max_stream_bytes`
  // (more: kFailedPrecondition "PATH: more than N bytes (the input limit)");
  // regular files are mapped whatever their size.
  static Result<FileBytes> Open(Env* env, const std::string& path,
                                size_t max_stream_bytes = kDefaultMaxStreamBytes);

  const char* data() const { return map_ ? map_->data() : buffer_.data(); }
  size_t size() const { return map_ ? map_->size() : buffer_.size(); }
  // The file's identity when it was opened; nullopt for pipes and devices.
  std::optional<FileIdentity> identity() const;
  // Tells the kernel the mapped range [offset, offset+len) will not be needed
  // soon, so resident memory stays bounded while a large file is scanned once.
  // The bytes stay readable (they are paged in again on access).
  // True once another process truncated the mapped file while it was read
  // (MappedFile::truncated): the bytes cannot be trusted.
  bool truncated() const { return map_ && map_->truncated(); }
  void Release(size_t offset, size_t len) const {
    if (map_) map_->Release(offset, len);
  }

 private:
  std::unique_ptr<MappedFile> map_;
  std::string buffer_;  // pipes and devices
};

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_FILE_H_
