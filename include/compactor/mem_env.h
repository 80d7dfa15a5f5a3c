// An in-memory Env for tests and embedders: a file system that lives in the
// object, a clock that moves only when told (or when code sleeps), seeded
// random numbers, its own environment variables, and a small set of injected
// faults for testing what a writer does when the disk misbehaves, the process
// dies, or another process interferes. docs/env.md describes the model.
//
// The model, in short:
// - Paths are '/'-separated; a relative path is taken from "/". "/" always
//   exists; files are created only in existing directories. No symlinks.
// - Writes go to the file at once (other readers see them); what survives
//   Crash() is only what was synced: a file's bytes as of its last fsync, and
//   the directory entries as of the directory's last fsync. Directories
//   themselves are durable when created.
// - MapFile() returns the bytes as they are at that moment; later changes to
//   the file (by this Env or "another process") leave a mapping unchanged,
//   while Stat() reports the new identity.
// - Threads are real threads; HardwareThreads() is what the options say.
//
// Thread safety: all methods, including the control methods below, may be
// called from any thread. FileLock handles must not outlive their MemEnv
// (mappings may).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_MEM_ENV_H_
#define COMPACTOR_INCLUDE_COMPACTOR_MEM_ENV_H_

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compactor/env.h"

namespace compactor {

struct MemEnvOptions {
  // The wall clock's start: 2026-01-01T00:00:00.000Z.
  int64_t start_ms = 1767225600000;
  // Seed of Random64(); equal seeds give equal sequences.
  uint64_t seed = 1;
  // What HardwareThreads() reports.
  int hardware_threads = 2;
};

// Operations whose failure can be injected (MemEnv::FailNth).
enum class MemEnvOp {
  kWrite,        // one write() of file data (appends, a replacement's temporary file)
  kSync,         // fsync of a file or of a directory
  kRename,       // the rename of an atomic replacement
  kStartThread,  // StartThread (fails with kUnavailable)
};

// How often each kind of call happened (tests that check "read once").
struct MemEnvCounters {
  int64_t stats = 0, maps = 0, reads = 0, writes = 0, syncs = 0, renames = 0;
};

class MemEnv : public Env {
 public:
  // --- clock ---------------------------------------------------------------
  // Moves both clocks forward by `ms` (also what SleepMs does, instantly).
  virtual void AdvanceMs(int64_t ms) = 0;
  // Sets the wall clock (the monotonic clock does not jump).
  virtual void SetNowMs(int64_t ms) = 0;
  // Every SleepMs duration asked for so far, in order.
  virtual std::vector<int64_t> Sleeps() const = 0;

  // --- environment -----------------------------------------------------------
  virtual void SetEnvVar(const std::string& name, const std::string& value) = 0;
  virtual void UnsetEnvVar(const std::string& name) = 0;

  // --- faults ----------------------------------------------------------------
  // The n-th call of `op` from now (1 = the next) fails with errno `error`
  // (kIoError with its text; kUnavailable for kStartThread). One pending
  // fault per op; n <= 0 clears it.
  virtual void FailNth(MemEnvOp op, int n, int error = EIO) = 0;
  // The disk fills up after `bytes` more bytes of file data: the write that
  // crosses the limit stores what fits and the next fails with ENOSPC (as
  // write(2) does). AppendLines reserves its whole length first, as the
  // POSIX Env does with fallocate: when it does not fit, nothing is written.
  // nullopt: unlimited.
  virtual void SetDiskSpace(std::optional<uint64_t> bytes) = 0;
  // The n-th write from now stores only its first `keep` bytes and returns
  // that count, as write(2) may; the caller must write the rest.
  virtual void ShortWriteNth(int n, size_t keep) = 0;
  // The process dies and the machine restarts: every file goes back to its
  // last synced bytes, directory entries to their last synced state, locks
  // of this process are released. Pending faults are cleared. Handles
  // (FileLock, MappedFile) made before stay valid objects but no longer hold
  // anything.
  virtual void Crash() = 0;

  // --- another process ---------------------------------------------------------
  // Writes a whole file in place (same identity when it exists, new mtime),
  // creating its parent directories: how tests set up files. Durable at once;
  // no faults apply. Also "another process rewrote the file".
  virtual void SetFile(const std::string& path, const std::string& contents) = 0;
  // Another process appends to / truncates an existing file in place
  // (durable, no faults, no locks). kNotFound when it does not exist.
  virtual Status AppendByOther(const std::string& path, const std::string& bytes) = 0;
  virtual Status TruncateByOther(const std::string& path, uint64_t size) = 0;
  // Another process that opened a file before it was renamed away (or over)
  // appends to it: `inode` is FileIdentity::inode. kNotFound when no file of
  // that inode is left (neither at a path nor held open).
  virtual Status AppendByOtherToInode(uint64_t inode, const std::string& bytes) = 0;
  // Runs `hook(ms)` at every SleepMs (after the clocks moved, outside the
  // environment's mutex): what other processes do while this one waits.
  // Empty: none.
  virtual void SetSleepHook(std::function<void(int64_t)> hook) = 0;
  // Another process holds the sidecar lock of session `path` (shared or
  // exclusive) until ReleaseOther(path).
  virtual void HoldLockByOther(const std::string& path, bool exclusive) = 0;
  virtual void ReleaseOther(const std::string& path) = 0;

  virtual MemEnvCounters Counters() const = 0;
};

// A new, empty in-memory environment.
std::unique_ptr<MemEnv> NewMemEnv(const MemEnvOptions& options = {});

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_MEM_ENV_H_
