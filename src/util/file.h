// Read-only file bytes: a private memory map for regular files (so a 1 GiB
// session costs no copy), a heap buffer for pipes and other streams.
#ifndef COMPACTOR_SRC_UTIL_FILE_H_
#define COMPACTOR_SRC_UTIL_FILE_H_

#include <cstddef>
#include <string>

#include "compactor/status.h"

namespace compactor::internal {

class FileBytes {
 public:
  FileBytes() = default;
  FileBytes(FileBytes&& o) noexcept;
  FileBytes& operator=(FileBytes&& o) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  // Errors: kNotFound (no such file), kIoError (a directory, unreadable).
  static Result<FileBytes> Open(const std::string& path);

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // Tells the kernel the mapped range [offset, offset+len) will not be needed
  // soon, so resident memory stays bounded while a large file is scanned once.
  // The bytes stay readable (they are paged in again on access).
  void Release(size_t offset, size_t len) const;

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string buffer_;
};

// Reads a whole file (small files: settings, notes).
Result<std::string> ReadFile(const std::string& path);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_UTIL_FILE_H_
