// Every side effect of the library behind one interface: files (read-only
// mappings, whole-file reads, identity for "changed since read", locked
// appends of whole lines, atomic replacement, directories), the sidecar lock
// cooperating writers share, clocks and sleeping, random numbers, threads and
// environment variables. Option structs carry an `Env*` (null =
// Env::Default()); tests pass an in-memory Env (compactor/mem_env.h), which
// also injects faults. docs/env.md is the contract in prose.
//
// Thread safety: every Env method may be called from any thread at once;
// Env::Default() and NewMemEnv()'s environment are both safe for concurrent
// use. Returned objects (MappedFile, FileLock, Thread) belong to the caller and
// are not themselves thread-safe except where noted.
//
// Errors are Status values naming the path and, for system calls, the errno
// text: kNotFound for a missing file ("PATH: no such file"),
// kFailedPrecondition for a file of the wrong kind (a directory where a file
// is expected, a FIFO where a regular file is), kUnavailable for a lock held
// elsewhere past its timeout or no thread to be had, kIoError for the rest.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_ENV_H_
#define COMPACTOR_INCLUDE_COMPACTOR_ENV_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compactor/status.h"

namespace compactor {

// What a file is at one moment: equal identities mean "not changed since it
// was read" (same file, same size, same modification time). A rename over the
// path changes device/inode; an append or truncation changes size and mtime.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // nanoseconds since the epoch
  bool operator==(const FileIdentity&) const = default;
};

enum class FileKind {
  kRegular,
  kDirectory,
  kOther,  // FIFO, character or block device, socket
};

struct FileInfo {
  FileKind kind = FileKind::kRegular;
  FileIdentity identity;
  uint32_t mode = 0;  // permission bits (07777)
};

// The bytes of a whole file, read-only, as they were when it was opened: a
// memory map (a 1 GiB session costs no copy) or, where mapping is not
// possible, a copy. The bytes stay valid and unchanged while the object
// lives; they are NOT guaranteed to reflect later writes by others.
// Truncation by another process while the file is mapped: the POSIX Env
// catches the fault (SIGBUS) a read past the new end raises, maps pages of
// double quotes over the lost range (docs/env.md says why quotes) and marks
// the mapping truncated() instead of letting
// the process die; loaders check the mark and fail with "PATH: truncated by
// another process while it was read". (Writers that rewrite a session still
// replace it atomically, never truncate it.)
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  // The file's identity when it was opened (compare with Env::Stat later).
  const FileIdentity& identity() const { return identity_; }
  // A hint that bytes [offset, offset + len) will not be read again soon: a
  // mapping gives those pages back to the kernel. The bytes stay readable.
  virtual void Release(size_t offset, size_t len) const;
  // True once a read of this mapping found the file truncated by another
  // process: the bytes from the first lost page on read as zeros, so nothing
  // read from the mapping can be trusted. Thread-safe. Copies never are.
  virtual bool truncated() const { return false; }

 protected:
  MappedFile(const char* data, size_t size, const FileIdentity& identity)
      : data_(data), size_(size), identity_(identity) {}

 private:
  const char* data_;
  size_t size_;
  FileIdentity identity_;
};

// The suffix of the sidecar lock file of a session file: `<path>.lock`.
inline constexpr std::string_view kLockSuffix = ".lock";

struct LockOptions {
  // Exclusive (writers) or shared (readers that must not see a rewrite half done).
  bool exclusive = true;
  // How long to wait for a lock held elsewhere: < 0 waits as long as it
  // takes, 0 tries once, > 0 gives up after that many milliseconds.
  int64_t timeout_ms = -1;
};

// A held sidecar lock; the destructor releases it. Not copyable.
class FileLock {
 public:
  virtual ~FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // The lock file (`<session path>.lock`).
  virtual const std::string& path() const = 0;
  virtual bool exclusive() const = 0;

 protected:
  FileLock() = default;
};

// A regular file held open for reading (Env::OpenReadable). It stays the same
// file when another one is renamed over its path: a rewrite keeps the old
// session open this way to collect bytes appended to it by writers that opened
// it by path just before the rename. Not thread-safe.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;
  // The open file's identity now (its size grows with appends by anyone).
  virtual Result<FileIdentity> Identity() = 0;
  // Up to `max` bytes from `offset` (fewer at the end of the file; empty past it).
  virtual Result<std::string> ReadAt(uint64_t offset, size_t max) = 0;

 protected:
  ReadableFile() = default;
};

// A thread started by Env::StartThread. Join() waits for it to finish; the
// destructor joins when Join() was not called.
class Thread {
 public:
  virtual ~Thread() = default;
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  virtual void Join() = 0;

 protected:
  Thread() = default;
};

struct ReplaceOptions {
  // Keep the previous file as `<target><backup_suffix>` next to it (a hard
  // link, no copy; an older backup there is replaced). Empty: no backup.
  std::string backup_suffix;
  // Permission bits of a file that did not exist yet, before the process
  // umask applies. 0600 by default: session files may hold secrets.
  uint32_t create_mode = 0600;
};

class Env {
 public:
  Env() = default;
  virtual ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // The POSIX implementation: process-wide, thread-safe, never null, never destroyed.
  static Env* Default();

  // --- files ---------------------------------------------------------------

  // Kind, identity and permission bits of `path` (symlinks followed).
  // kNotFound when nothing is there.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;

  // Maps a regular file read-only. Never blocks on a FIFO or device: anything
  // but a regular file is refused (kFailedPrecondition "is a directory" /
  // "not a regular file"); read pipes and devices with ReadFile.
  virtual Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) = 0;

  // The whole content of a file (small files: settings, notes, facts; also
  // pipes and devices). The open never blocks: a FIFO without a writer reads
  // as empty. kFailedPrecondition "is a directory" for a directory.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Like ReadFile, but holds at most `max_bytes` in memory: more than that is
  // kFailedPrecondition "PATH: more than N bytes (the input limit)". Pipes,
  // FIFOs and devices have no size to check first; this bounds them (a
  // session from `<(cmd)`, raw text from stdin). The default implementation
  // reads the whole file and then checks; the POSIX Env stops reading.
  virtual Result<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes);

  // Opens a regular file for reading and keeps it open (ReadableFile). Never
  // blocks; anything but a regular file is refused (kFailedPrecondition).
  virtual Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) = 0;

  // Appends whole lines (each WITHOUT its newline) to an existing regular
  // file: one write() per line on an O_APPEND descriptor, so concurrent
  // readers never see two entries mixed. The bytes are written as given: this
  // call does not look at the file's tail (repairing a torn last line is the
  // writer's decision, writer.h, because only it can tell a torn line from a
  // write in progress by a writer that takes no lock). With `sync`, fsync
  // before returning. The caller holds the file's sidecar lock (LockSession)
  // when other writers may exist; this call does not take it. kNotFound when
  // the file does not exist, kFailedPrecondition when it is not a regular
  // file. On a failed write the file may end with part of a line.
  virtual Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                             bool sync) = 0;

  // Atomically replaces (or creates) `path` with `contents`: a temporary file
  // `<target>.tmp-<pid>-XXXXXX` in the same directory (flock-ed while it
  // exists, see RemoveStaleTemps), fsync, optional backup link, rename over `path`,
  // fsync of the directory. Readers see the old or the new file, never a mix;
  // after a crash the path holds one of the two. A symlink is followed and its
  // target replaced (the link stays a link). The old file's permission bits
  // (and owner, where the process may set it) are kept. A directory or other
  // non-regular target is refused (kFailedPrecondition). Bytes another process
  // appends to the old file after the caller read it are lost: callers that
  // rewrite a session hold its sidecar lock and compare identities.
  virtual Status ReplaceFile(const std::string& path, std::string_view contents,
                             const ReplaceOptions& options = {}) = 0;

  // Removes the temporary files a replacement of `path` (symlinks resolved)
  // left behind because its process died: `<target>.tmp-*` that no live
  // ReplaceFile is writing (a replacement holds an flock on its temporary
  // file until the rename; a dead process holds none). Returns the names
  // removed. Call it under the session's sidecar lock: a writer that took the
  // lock cannot be between creating and locking its temporary file then.
  virtual Result<std::vector<std::string>> RemoveStaleTemps(const std::string& path) = 0;

  // Removes a file (not a directory). kNotFound when it does not exist.
  virtual Status RemoveFile(const std::string& path) = 0;

  // Creates a directory and its missing parents (`mkdir -p`); OK when it exists.
  virtual Status CreateDirs(const std::string& path) = 0;

  // Names of the entries of a directory (no "." or ".."), sorted bytewise.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;

  // Takes the sidecar lock of `path` (an flock on `<path>.lock`, created with
  // mode 0644 when missing and never removed: removing it would let two
  // writers lock two different files). A symlinked session is resolved first,
  // so every name of one file shares one lock. Cooperating writers (the CLI, the
  // runtime, `compactor serve`, the pi extension) lock this file, not the
  // session itself, because a lock on the session stops protecting anything
  // once a rewrite renames a new file over it. Two handles conflict even
  // within one process (each has its own open file description).
  // kUnavailable when the lock is still held elsewhere after the timeout.
  virtual Result<std::unique_ptr<FileLock>> LockSession(const std::string& path,
                                                        const LockOptions& options = {}) = 0;

  // --- time ----------------------------------------------------------------

  // Wall clock: milliseconds since the Unix epoch.
  virtual int64_t NowMs() = 0;
  // A monotonic clock in microseconds (only differences mean anything).
  virtual int64_t MonotonicMicros() = 0;
  // Waits `ms` milliseconds; returns false as soon as `cancelled` (may be
  // empty) returns true, which is checked at least every 10 ms.
  virtual bool SleepMs(int64_t ms, const std::function<bool()>& cancelled) = 0;

  // --- randomness, threads, environment --------------------------------------

  // A uniformly random 64-bit value (not for cryptography).
  virtual uint64_t Random64() = 0;

  // Runs `fn` on a new thread. `fn` must not throw (as with std::thread, an
  // escaping exception terminates). kUnavailable when no thread can be had;
  // callers then do the work on their own thread.
  virtual Result<std::unique_ptr<Thread>> StartThread(std::function<void()> fn) = 0;
  // Number of hardware threads (at least 1).
  virtual int HardwareThreads() = 0;

  // An environment variable, or nullopt when it is not set.
  virtual std::optional<std::string> GetEnvVar(const std::string& name) = 0;
};

// An Env that forwards every call to another: derive from it to change a few
// calls (say, environment variables) and keep the rest. `target` must outlive
// the wrapper.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    return target_->MapFile(path);
  }
  Result<std::string> ReadFile(const std::string& path) override { return target_->ReadFile(path); }
  Result<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes) override {
    return target_->ReadFileUpTo(path, max_bytes);
  }
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return target_->OpenReadable(path);
  }
  Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                     bool sync) override {
    return target_->AppendLines(path, lines, sync);
  }
  Result<std::vector<std::string>> RemoveStaleTemps(const std::string& path) override {
    return target_->RemoveStaleTemps(path);
  }
  Status ReplaceFile(const std::string& path, std::string_view contents,
                     const ReplaceOptions& options = {}) override {
    return target_->ReplaceFile(path, contents, options);
  }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  Result<std::unique_ptr<FileLock>> LockSession(const std::string& path,
                                                const LockOptions& options = {}) override {
    return target_->LockSession(path, options);
  }
  int64_t NowMs() override { return target_->NowMs(); }
  int64_t MonotonicMicros() override { return target_->MonotonicMicros(); }
  bool SleepMs(int64_t ms, const std::function<bool()>& cancelled) override {
    return target_->SleepMs(ms, cancelled);
  }
  uint64_t Random64() override { return target_->Random64(); }
  Result<std::unique_ptr<Thread>> StartThread(std::function<void()> fn) override {
    return target_->StartThread(std::move(fn));
  }
  int HardwareThreads() override { return target_->HardwareThreads(); }
  std::optional<std::string> GetEnvVar(const std::string& name) override {
    return target_->GetEnvVar(name);
  }

 private:
  Env* target_;
};

// Paths of files Env::Default() mapped that were found truncated by another
// process while mapped (their MappedFile has been destroyed since), in the
// order found. Programs that print bytes of a mapping after loading it check
// this before reporting success (the CLI does). Thread-safe.
std::vector<std::string> TruncatedMappedFiles();

// `env`, or Env::Default() when it is null: what every option struct's
// `Env* env = nullptr` means.
inline Env* EnvOrDefault(Env* env) { return env != nullptr ? env : Env::Default(); }

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_ENV_H_
