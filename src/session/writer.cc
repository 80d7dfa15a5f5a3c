#include "compactor/writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <unordered_set>

#include "compactor/js_json.h"

namespace compactor {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(path + ": " + what + ": " + std::strerror(errno));
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }());
  return rng;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

}  // namespace

Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Errno("open for append", path);
  FdCloser closer(fd);
  if (flock(fd, LOCK_EX) != 0) return Errno("lock", path);
  // A file that does not end with '\n' has a torn last line: start on a new line.
  struct stat st {};
  if (fstat(fd, &st) != 0) return Errno("stat", path);
  if (st.st_size > 0) {
    int rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
      char last = '\n';
      if (pread(rfd, &last, 1, st.st_size - 1) == 1 && last != '\n') {
        Status s = WriteAll(fd, "\n", path);
        if (!s.ok()) {
          ::close(rfd);
          return s;
        }
      }
      ::close(rfd);
    }
  }
  std::string buf;
  for (const std::string& line : lines) {
    buf.assign(line);
    buf.push_back('\n');
    // One write() per entry: with O_APPEND a reader never sees half of two entries mixed.
    COMPACTOR_RETURN_IF_ERROR(WriteAll(fd, buf, path));
  }
  if (options.fsync && ::fsync(fd) != 0) return Errno("fsync", path);
  flock(fd, LOCK_UN);
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       const RewriteOptions& options) {
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Errno("create temporary file", tmp);
  FdCloser closer(fd);
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed) fchmod(fd, st.st_mode & 07777);
  Status s = WriteAll(fd, contents, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Errno("fsync", tmp);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(closer.release());
  if (existed && options.keep_backup) {
    std::string backup = path + options.backup_suffix;
    ::unlink(backup.c_str());
    // A hard link keeps the old bytes under the backup name without copying them.
    if (::link(path.c_str(), backup.c_str()) != 0) {
      Status e = Errno("create backup", backup);
      ::unlink(tmp.c_str());
      return e;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status e = Errno("rename", tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  int dfd = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

std::string NewUuidV7() {
  uint64_t ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  uint8_t b[16];
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  uint64_t r1 = Rng()(), r2 = Rng()();
  for (int i = 6; i < 16; ++i) b[i] = static_cast<uint8_t>((i < 11 ? r1 : r2) >> (8 * (i % 8)));
  b[6] = static_cast<uint8_t>(0x70 | (b[6] & 0x0F));
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3F));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[b[i] >> 4]);
    s.push_back(kHex[b[i] & 15]);
  }
  return s;
}

std::string NewEntryId(const Session& session, const std::vector<std::string>& taken) {
  std::unordered_set<std::string_view> extra(taken.begin(), taken.end());
  for (int attempt = 0; attempt < 100; ++attempt) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(Rng()() & 0xffffffffu));
    std::string id(buf);
    if (!session.Find(id) && !extra.count(id)) return id;
  }
  return NewUuidV7();
}

std::string NowIsoTimestamp() {
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  return FormatIsoTimestamp(ms);
}

}  // namespace compactor
