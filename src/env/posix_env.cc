// Env::Default(): the POSIX implementation (Linux first; nothing here is
// Linux-only except MADV_* hints).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

#include "compactor/env.h"
#include "env/env_util.h"

namespace compactor {
namespace {

using internal::DirName;
using internal::ErrnoStatus;

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes now and reports close()'s error (delayed write errors show up here on NFS).
  int Close() {
    int r = ::close(fd_);
    fd_ = -1;
    return r;
  }
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

FileIdentity IdentityOf(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

FileKind KindOf(mode_t mode) {
  if (S_ISREG(mode)) return FileKind::kRegular;
  if (S_ISDIR(mode)) return FileKind::kDirectory;
  return FileKind::kOther;
}

Status WrongKind(const std::string& path, mode_t mode) {
  return Status::FailedPrecondition(path +
                                    (S_ISDIR(mode) ? ": is a directory" : ": not a regular file"));
}

// write() until everything is written (a short write continues where it stopped).
Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(path, "write", errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Allocates the blocks an append of `len` bytes at `end` needs before a byte
// is written: on a full disk (or over a quota) the append then fails whole
// instead of leaving part of an entry in the file. A filesystem that cannot
// preallocate (EOPNOTSUPP: some network and FUSE filesystems) falls back to
// the plain write, whose fragment the next append ends (docs/reliability.md).
// A writer that takes no lock may append in between and use up part of the
// reservation; then a short write is still possible, as without it.
Status ReserveAppend(int fd, off_t end, size_t len, const std::string& path) {
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, end, static_cast<off_t>(len)) == 0) return Status::Ok();
  if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
    return ErrnoStatus(path, "write", errno);
  return Status::Ok();
}

// Opens without blocking (a FIFO without a writer would block a plain open),
// then clears O_NONBLOCK so reads wait for data as usual.
Result<int> OpenForReading(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(path, "", errno);
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

// --- Truncation while mapped ------------------------------------------------
//
// Reading a page of a mapping past the end of a file that another process
// truncated raises SIGBUS, whose default action kills the process without a
// word. Mappings made by MapFile are registered in a fixed table the signal
// handler can read without locks; for a fault inside one, the handler maps
// fill pages over the lost range (the faulting read then resumes) and marks
// the mapping truncated, so the loader stops and fails with a clear error.
// Any other SIGBUS keeps its previous disposition.
//
// The fill is double quotes, not zeros: a JSON parser indexes a line's
// structure first and reads its strings afterwards, scanning each to its
// closing quote. When the line vanishes in between, a scan through zeros
// would run past the line (a parser buffer overflow, then a SEGV); a quote
// ends it at the first fill byte. The one page the kernel zero-fills instead
// (the partial page at the new end of the file) is bounded by the next page,
// which faults and gets quotes; the loader gives its parser room for that
// overrun (kMinParserCapacity in session.cc). Every mapping has one spare
// page past its end for the same reason: the scan stops there too.

struct MappingSlot {
  std::atomic<uintptr_t> begin{0};  // 0: free
  std::atomic<size_t> length{0};
  std::atomic<bool> truncated{false};
};
constexpr size_t kMappingSlots = 256;
MappingSlot g_mappings[kMappingSlots];
struct sigaction g_previous_sigbus;
// Fill pages are mapped this many bytes at a time from one shared memfd, so
// the few faults a stopping loader takes cost few mappings and no memory.
constexpr size_t kFillBytes = size_t{1} << 20;
int g_fill_fd = -1;  // a memfd of kFillBytes quotes; -1: zero pages instead

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Async-signal-safe: atomics, mmap, sigaction and raise only.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // raised by a fault, not sent by kill()
    for (MappingSlot& slot : g_mappings) {
      const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
      const size_t length = slot.length.load(std::memory_order_acquire);
      if (begin == 0 || addr < begin || addr >= begin + length) continue;
      const uintptr_t page = addr & ~(static_cast<uintptr_t>(PageSize()) - 1);
      const uintptr_t end = (begin + length + PageSize() - 1) & ~(PageSize() - 1);
      void* fill = g_fill_fd >= 0
                       ? mmap(reinterpret_cast<void*>(page), std::min(end - page, kFillBytes),
                              PROT_READ, MAP_PRIVATE | MAP_FIXED, g_fill_fd, 0)
                       : mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (fill == MAP_FAILED) break;  // cannot recover: die as before
      slot.truncated.store(true, std::memory_order_release);
      return;  // the faulting read is retried and sees zeros
    }
  }
  // Not ours: whatever was installed before handles it.
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 && g_previous_sigbus.sa_sigaction != nullptr) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN &&
      g_previous_sigbus.sa_handler != nullptr) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  // Default action: restore it and let the fault (or the signal) happen again.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (info->si_code <= 0) raise(SIGBUS);
}

// The memfd of quotes for OnSigbus, or -1 when it cannot be made (the
// handler then maps zero pages, which stop no scan: see above).
int MakeFillFd() {
  const int fd = memfd_create("compactor-truncated-fill", MFD_CLOEXEC);
  if (fd < 0) return -1;
  const std::string quotes(size_t{1} << 16, '"');
  for (size_t off = 0; off < kFillBytes; off += quotes.size()) {
    if (pwrite(fd, quotes.data(), quotes.size(), static_cast<off_t>(off)) !=
        static_cast<ssize_t>(quotes.size())) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

void InstallSigbusHandlerOnce() {
  static const bool installed = [] {
    g_fill_fd = MakeFillFd();
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, &g_previous_sigbus) == 0;
  }();
  (void)installed;
}

// Files whose mapping was found truncated, for TruncatedMappedFiles().
std::mutex g_truncated_mu;
std::vector<std::string>& TruncatedPaths() {
  static auto* paths = new std::vector<std::string>();  // never destroyed
  return *paths;
}

// A registered slot for [data, data + size), or nullptr when the table is full.
MappingSlot* RegisterMapping(const char* data, size_t size) {
  InstallSigbusHandlerOnce();
  for (MappingSlot& slot : g_mappings) {
    uintptr_t expected = 0;
    if (slot.begin.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(data),
                                           std::memory_order_acq_rel)) {
      // Claimed; nothing reads the mapping before this returns, so the
      // handler seeing length 0 meanwhile matters not.
      slot.truncated.store(false, std::memory_order_release);
      slot.length.store(size, std::memory_order_release);
      return &slot;
    }
  }
  return nullptr;
}

// A read-only private mapping, unmapped on destruction; registered with the
// SIGBUS handler above while it lives.
class PosixMappedFile final : public MappedFile {
 public:
  // `mapped` bytes are mapped at `data` (the file's `size` plus the spare page).
  PosixMappedFile(const char* data, size_t size, size_t mapped, const FileIdentity& id,
                  MappingSlot* slot, std::string path)
      : MappedFile(data, size, id), mapped_(mapped), slot_(slot), path_(std::move(path)) {}
  ~PosixMappedFile() override {
    if (slot_ != nullptr) {
      if (truncated()) {
        std::lock_guard<std::mutex> lock(g_truncated_mu);
        TruncatedPaths().push_back(path_);
      }
      slot_->length.store(0, std::memory_order_release);
      slot_->begin.store(0, std::memory_order_release);
    }
    if (mapped_ > 0) munmap(const_cast<char*>(data()), mapped_);
  }
  bool truncated() const override {
    return slot_ != nullptr && slot_->truncated.load(std::memory_order_acquire);
  }
  void Release(size_t offset, size_t len) const override {
    if (size() == 0) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t begin = (offset + page - 1) / page * page;
    size_t end = std::min(offset + len, size()) / page * page;
    if (end > begin) madvise(const_cast<char*>(data()) + begin, end - begin, MADV_DONTNEED);
  }

 private:
  size_t mapped_;      // 0 for an empty file
  MappingSlot* slot_;  // null for an empty file
  std::string path_;
};

// A file whose bytes were copied (mmap refused): the MappedFile view points into the copy.
class CopiedFile final : public MappedFile {
 public:
  CopiedFile(std::unique_ptr<std::string> bytes, const FileIdentity& id)
      : MappedFile(bytes->data(), bytes->size(), id), bytes_(std::move(bytes)) {}

 private:
  std::unique_ptr<std::string> bytes_;
};

Status ReadAll(int fd, const std::string& path, std::string* out) {
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(path, "read", errno);
    }
    if (n == 0) return Status::Ok();
    out->append(chunk, static_cast<size_t>(n));
  }
}

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(int fd, std::string path, bool exclusive)
      : fd_(fd), path_(std::move(path)), exclusive_(exclusive) {}
  ~PosixFileLock() override {
    flock(fd_.get(), LOCK_UN);  // closing would release it too; say it explicitly
  }
  const std::string& path() const override { return path_; }
  bool exclusive() const override { return exclusive_; }

 private:
  Fd fd_;
  std::string path_;
  bool exclusive_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Result<FileIdentity> Identity() override {
    struct stat st {};
    if (fstat(fd_.get(), &st) != 0) return ErrnoStatus(path_, "stat", errno);
    return IdentityOf(st);
  }
  Result<std::string> ReadAt(uint64_t offset, size_t max) override {
    std::string out;
    char chunk[1 << 16];
    while (out.size() < max) {
      const size_t want = std::min(sizeof chunk, max - out.size());
      ssize_t n = ::pread(fd_.get(), chunk, want, static_cast<off_t>(offset + out.size()));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path_, "read", errno);
      }
      if (n == 0) break;
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  Fd fd_;
  std::string path_;
};

class PosixThread final : public Thread {
 public:
  explicit PosixThread(std::thread t) : t_(std::move(t)) {}
  ~PosixThread() override { Join(); }
  void Join() override {
    if (t_.joinable()) t_.join();
  }

 private:
  std::thread t_;
};

// Follows symlinks at `path` to the file a write should replace (which may
// not exist yet). Relative link targets are relative to the link's directory.
Result<std::string> ResolveLinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return p;
      return ErrnoStatus(p, "stat", errno);
    }
    if (!S_ISLNK(st.st_mode)) return p;
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
    if (n < 0) return ErrnoStatus(p, "readlink", errno);
    target.resize(static_cast<size_t>(n));
    p = target.starts_with('/') ? target : DirName(p) + "/" + target;
  }
  return Status::IoError(path + ": too many levels of symbolic links");
}

class PosixEnv final : public Env {
 public:
  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(path, "", errno);
    FileInfo info;
    info.kind = KindOf(st.st_mode);
    info.identity = IdentityOf(st);
    info.mode = static_cast<uint32_t>(st.st_mode & 07777);
    return info;
  }

  Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    COMPACTOR_ASSIGN_OR_RETURN(int raw, OpenForReading(path));
    Fd fd(raw);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(path, "stat", errno);
    if (!S_ISREG(st.st_mode)) return WrongKind(path, st.st_mode);
    const FileIdentity id = IdentityOf(st);
    const size_t size = static_cast<size_t>(st.st_size);
    if (size == 0)
      return std::unique_ptr<MappedFile>(new PosixMappedFile("", 0, 0, id, nullptr, path));
    // One spare page past the file's last page: nothing reads it unless the
    // file is truncated meanwhile (see "Truncation while mapped").
    const size_t mapped = (size + PageSize() - 1) / PageSize() * PageSize() + PageSize();
    void* p = mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p != MAP_FAILED) {
      MappingSlot* slot = RegisterMapping(static_cast<const char*>(p), mapped);
      if (slot != nullptr) {
        madvise(p, size, MADV_SEQUENTIAL);
        return std::unique_ptr<MappedFile>(
            new PosixMappedFile(static_cast<const char*>(p), size, mapped, id, slot, path));
      }
      // Every slot taken: a mapping the handler cannot guard is not used.
      munmap(p, mapped);
    }
    // Some file systems cannot map: read the bytes instead.
    auto bytes = std::make_unique<std::string>();
    bytes->reserve(size);
    COMPACTOR_RETURN_IF_ERROR(ReadAll(fd.get(), path, bytes.get()));
    return std::unique_ptr<MappedFile>(new CopiedFile(std::move(bytes), id));
  }

  Result<std::string> ReadFile(const std::string& path) override {
    COMPACTOR_ASSIGN_OR_RETURN(int raw, OpenForReading(path));
    Fd fd(raw);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(path, "stat", errno);
    if (S_ISDIR(st.st_mode)) return WrongKind(path, st.st_mode);
    std::string out;
    if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
    COMPACTOR_RETURN_IF_ERROR(ReadAll(fd.get(), path, &out));
    return out;
  }

  Result<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes) override {
    COMPACTOR_ASSIGN_OR_RETURN(int raw, OpenForReading(path));
    Fd fd(raw);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(path, "stat", errno);
    if (S_ISDIR(st.st_mode)) return WrongKind(path, st.st_mode);
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes)
      return internal::InputLimitError(path, max_bytes);
#ifdef F_SETPIPE_SZ
    // A larger pipe buffer (Linux; best effort) lets the writer run ahead
    // instead of waking this reader every 64 KiB.
    if (S_ISFIFO(st.st_mode)) (void)fcntl(fd.get(), F_SETPIPE_SZ, 1 << 20);
#endif
    // Large reads straight into the result (no 64 KiB bounce buffer): a pipe
    // is then read as fast as a file. One byte more than the limit tells
    // "exactly the limit" from "more".
    std::string out;
    size_t used = 0;
    size_t chunk = size_t{1} << 20;
    for (;;) {
      if (out.size() - used < chunk) out.resize(used + chunk);
      const size_t want = std::min(out.size() - used, max_bytes - std::min(max_bytes, used) + 1);
      ssize_t n = ::read(fd.get(), out.data() + used, want);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path, "read", errno);
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
      if (used > max_bytes) return internal::InputLimitError(path, max_bytes);
      if (used == out.size() && chunk < (size_t{64} << 20)) chunk *= 2;
    }
    out.resize(used);
    return out;
  }

  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    COMPACTOR_ASSIGN_OR_RETURN(int raw, OpenForReading(path));
    Fd fd(raw);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(path, "stat", errno);
    if (!S_ISREG(st.st_mode)) return WrongKind(path, st.st_mode);
    return std::unique_ptr<ReadableFile>(new PosixReadableFile(fd.Release(), path));
  }

  Result<std::vector<std::string>> RemoveStaleTemps(const std::string& path) override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string target, ResolveLinks(path));
    const std::string dir = DirName(target);
    const std::string prefix = internal::TempPrefixFor(target.substr(target.rfind('/') + 1));
    Result<std::vector<std::string>> names = ListDir(dir);
    if (!names.ok()) return names.status();
    std::vector<std::string> removed;
    for (const std::string& name : *names) {
      if (!name.starts_with(prefix)) continue;
      const std::string full = dir + "/" + name;
      Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
      if (!fd.valid()) continue;  // gone already, or not ours to judge
      struct stat st {};
      if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      // A live ReplaceFile holds an exclusive flock on its temporary file.
      if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
      // Remove the name only while it is still this very file.
      struct stat now {};
      if (::lstat(full.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
        continue;
      if (::unlink(full.c_str()) == 0) removed.push_back(full);
    }
    return removed;
  }

  Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                     bool sync) override {
    // O_NONBLOCK: opening a FIFO without a reader fails instead of waiting.
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK));
    if (!fd.valid()) return ErrnoStatus(path, "open for append", errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus(path, "stat", errno);
    if (!S_ISREG(st.st_mode)) return WrongKind(path, st.st_mode);
    if (lines.empty()) return Status::Ok();
    size_t total = 0;
    for (const std::string& line : lines) total += line.size() + 1;
    COMPACTOR_RETURN_IF_ERROR(ReserveAppend(fd.get(), st.st_size, total, path));
    std::string buf;
    for (const std::string& line : lines) {
      buf.assign(line);
      buf.push_back('\n');
      // One write() per entry: with O_APPEND a reader never sees half of two entries mixed.
      COMPACTOR_RETURN_IF_ERROR(WriteAll(fd.get(), buf, path));
    }
    if (sync && ::fsync(fd.get()) != 0) return ErrnoStatus(path, "fsync", errno);
    if (fd.Close() != 0) return ErrnoStatus(path, "close", errno);
    return Status::Ok();
  }

  Status ReplaceFile(const std::string& path, std::string_view contents,
                     const ReplaceOptions& options) override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string target, ResolveLinks(path));
    struct stat st {};
    const bool existed = ::stat(target.c_str(), &st) == 0;
    if (!existed && errno != ENOENT) return ErrnoStatus(target, "stat", errno);
    if (existed && !S_ISREG(st.st_mode)) return WrongKind(target, st.st_mode);

    std::string tmp;
    Fd fd;
    for (int attempt = 0; attempt < 100 && !fd.valid(); ++attempt) {
      tmp = internal::TempNameFor(target, static_cast<int64_t>(::getpid()), Random64());
      fd = Fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                     static_cast<mode_t>(options.create_mode & 07777)));
      if (!fd.valid() && errno != EEXIST)
        return ErrnoStatus(target, "create temporary file", errno);
    }
    if (!fd.valid()) return ErrnoStatus(target, "create temporary file", EEXIST);
    // Held until the descriptor is closed: tells RemoveStaleTemps this file's
    // owner is alive (a killed process's flock is gone with it).
    (void)flock(fd.get(), LOCK_EX | LOCK_NB);
    auto fail = [&tmp](Status s) {
      ::unlink(tmp.c_str());
      return s;
    };
    if (existed) {
      // Keep the old file's owner (best effort: only root may give a file
      // away) and permission bits (not subject to the umask this way).
      if (fchown(fd.get(), st.st_uid, st.st_gid) != 0) {
        // Not permitted (only root may give a file away): checked below.
      }
      struct stat made {};
      if (fstat(fd.get(), &made) != 0) return fail(ErrnoStatus(tmp, "stat", errno));
      if (made.st_uid != st.st_uid || made.st_gid != st.st_gid) {
        // The rename would silently hand another user's file to this one.
        return fail(Status::FailedPrecondition(
            target + ": belongs to uid " + std::to_string(st.st_uid) + " gid " +
            std::to_string(st.st_gid) +
            ", which a rewrite by this user cannot keep; nothing written"));
      }
      if (fchmod(fd.get(), st.st_mode & 07777) != 0) return fail(ErrnoStatus(tmp, "chmod", errno));
    }
    // Named after the file being written (the temporary one is gone after).
    Status s = WriteAll(fd.get(), contents, target);
    if (!s.ok()) return fail(s);
    if (::fsync(fd.get()) != 0) return fail(ErrnoStatus(tmp, "fsync", errno));
    // The descriptor (and its flock) stays open until the rename is done.
    if (existed && !options.backup_suffix.empty()) {
      std::string backup = target + options.backup_suffix;
      if (::unlink(backup.c_str()) != 0 && errno != ENOENT)
        return fail(ErrnoStatus(backup, "remove old backup", errno));
      // A hard link keeps the old bytes under the backup name without copying them.
      if (::link(target.c_str(), backup.c_str()) != 0)
        return fail(ErrnoStatus(backup, "create backup", errno));
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) return fail(ErrnoStatus(tmp, "rename", errno));
    if (fd.Close() != 0) return ErrnoStatus(target, "close", errno);
    // The rename is durable only once the directory is synced.
    Fd dir(::open(DirName(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return ErrnoStatus(DirName(target), "open directory", errno);
    if (::fsync(dir.get()) != 0) return ErrnoStatus(DirName(target), "fsync directory", errno);
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus(path, "remove", errno);
    return Status::Ok();
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::InvalidArgument("create directory: empty path");
    for (size_t pos = 1; pos <= path.size(); ++pos) {
      if (pos < path.size() && path[pos] != '/') continue;
      const std::string prefix = path.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0777) == 0) continue;
      if (errno != EEXIST) return ErrnoStatus(prefix, "create directory", errno);
      struct stat st {};
      if (::stat(prefix.c_str(), &st) != 0) return ErrnoStatus(prefix, "stat", errno);
      if (!S_ISDIR(st.st_mode)) return Status::FailedPrecondition(prefix + ": not a directory");
    }
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return ErrnoStatus(path, "list directory", errno);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
      errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoStatus(path, "list directory", err);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::unique_ptr<FileLock>> LockSession(const std::string& path,
                                                const LockOptions& options) override {
    std::string target = path;
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) target = resolved;
    std::string lock_path = target + std::string(kLockSuffix);
    Fd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd.valid()) return ErrnoStatus(lock_path, "open lock file", errno);
    const int op = options.exclusive ? LOCK_EX : LOCK_SH;
    if (options.timeout_ms < 0) {
      while (flock(fd.get(), op) != 0) {
        if (errno != EINTR) return ErrnoStatus(lock_path, "lock", errno);
      }
    } else {
      // flock has no timeout: poll without blocking, backing off to 10 ms.
      const int64_t deadline = MonotonicMicros() + options.timeout_ms * 1000;
      int64_t wait_us = 500;
      while (flock(fd.get(), op | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) return ErrnoStatus(lock_path, "lock", errno);
        const int64_t left = deadline - MonotonicMicros();
        if (left <= 0) {
          return Status::Unavailable(lock_path + ": locked by another writer (waited " +
                                     std::to_string(options.timeout_ms) + " ms)");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(wait_us, left)));
        wait_us = std::min<int64_t>(wait_us * 2, 10000);
      }
    }
    struct stat st {};
    if (fstat(fd.get(), &st) == 0 && !S_ISREG(st.st_mode)) return WrongKind(lock_path, st.st_mode);
    return std::unique_ptr<FileLock>(
        new PosixFileLock(fd.Release(), std::move(lock_path), options.exclusive));
  }

  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  int64_t MonotonicMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  bool SleepMs(int64_t ms, const std::function<bool()>& cancelled) override {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (true) {
      if (cancelled && cancelled()) return false;
      auto now = std::chrono::steady_clock::now();
      if (now >= end) return true;
      // Slices of at most 10 ms keep cancellation prompt.
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(end - now, std::chrono::milliseconds(10)));
    }
  }

  uint64_t Random64() override {
    // One generator per thread: no lock on the id path, and no two threads
    // share a sequence (each is seeded from the OS).
    thread_local std::mt19937_64 rng([] {
      std::random_device rd;
      return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }());
    return rng();
  }

  Result<std::unique_ptr<Thread>> StartThread(std::function<void()> fn) override {
    try {
      return std::unique_ptr<Thread>(new PosixThread(std::thread(std::move(fn))));
    } catch (const std::system_error& e) {
      return Status::Unavailable(std::string("cannot start a thread: ") + e.what());
    }
  }

  int HardwareThreads() override {
    static const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return n;
  }

  std::optional<std::string> GetEnvVar(const std::string& name) override {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
};

}  // namespace

std::vector<std::string> TruncatedMappedFiles() {
  std::lock_guard<std::mutex> lock(g_truncated_mu);
  return TruncatedPaths();
}

Env* Env::Default() {
  static Env* env = new PosixEnv();  // never destroyed: usable from static destructors
  return env;
}

}  // namespace compactor
