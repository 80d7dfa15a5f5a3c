#include "util/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace compactor::internal {

FileBytes::FileBytes(FileBytes&& o) noexcept { *this = std::move(o); }

FileBytes& FileBytes::operator=(FileBytes&& o) noexcept {
  if (this != &o) {
    this->~FileBytes();
    mapped_ = o.mapped_;
    size_ = o.size_;
    buffer_ = std::move(o.buffer_);
    data_ = mapped_ ? o.data_ : buffer_.data();
    o.data_ = nullptr;
    o.size_ = 0;
    o.mapped_ = false;
  }
  return *this;
}

FileBytes::~FileBytes() {
  if (mapped_ && data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  mapped_ = false;
  data_ = nullptr;
}

Result<FileBytes> FileBytes::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IoError(path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status::IoError(path + ": " + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IoError(path + ": is a directory, not a session file");
  }
  FileBytes fb;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      ::close(fd);
      fb.data_ = static_cast<const char*>(p);
      fb.size_ = static_cast<size_t>(st.st_size);
      fb.mapped_ = true;
      madvise(p, fb.size_, MADV_SEQUENTIAL);
      return fb;
    }
  }
  // Pipes, character devices, empty files and mmap failures: read into memory.
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return Status::IoError(path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    fb.buffer_.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  fb.data_ = fb.buffer_.data();
  fb.size_ = fb.buffer_.size();
  return fb;
}

void FileBytes::Release(size_t offset, size_t len) const {
  if (!mapped_) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t begin = (offset + page - 1) / page * page;
  size_t end = (offset + len) / page * page;
  if (end > begin) madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

Result<std::string> ReadFile(const std::string& path) {
  COMPACTOR_ASSIGN_OR_RETURN(FileBytes fb, FileBytes::Open(path));
  return std::string(fb.data(), fb.size());
}

}  // namespace compactor::internal
