// NewMemEnv(): the in-memory Env with injected faults (compactor/mem_env.h).
#include "compactor/mem_env.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <system_error>
#include <thread>

#include "env/env_util.h"

namespace compactor {
namespace {

using internal::ErrnoStatus;

// The umask applied to created files (the common default).
constexpr uint32_t kUmask = 022;
constexpr uint64_t kDevice = 1;
// The process id in this environment's temporary file names.
constexpr int64_t kPid = 1;

struct Node {
  uint64_t inode = 0;
  // The bytes now. Shared with mappings; a write while a mapping holds them
  // copies first, so a mapping never changes.
  std::shared_ptr<std::string> data = std::make_shared<std::string>();
  std::string synced;  // the bytes as of the last fsync
  uint32_t mode = 0644;
  int64_t mtime_ns = 0;
};

// "/a/b" from "a//b/./", "/x/../a/b": absolute, no empty, "." or ".." parts.
std::string Normalize(const std::string& path) {
  std::vector<std::string_view> parts;
  std::string_view rest = path;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (std::string_view p : parts) {
    out.push_back('/');
    out.append(p);
  }
  return out.empty() ? "/" : out;
}

std::string ParentOf(const std::string& norm) {
  size_t slash = norm.rfind('/');
  return slash == 0 ? "/" : norm.substr(0, slash);
}

class MemMappedFile final : public MappedFile {
 public:
  MemMappedFile(std::shared_ptr<const std::string> bytes, const FileIdentity& id)
      : MappedFile(bytes->data(), bytes->size(), id), bytes_(std::move(bytes)) {}

 private:
  std::shared_ptr<const std::string> bytes_;
};

class MemThread final : public Thread {
 public:
  explicit MemThread(std::thread t) : t_(std::move(t)) {}
  ~MemThread() override { Join(); }
  void Join() override {
    if (t_.joinable()) t_.join();
  }

 private:
  std::thread t_;
};

class MemEnvImpl;

// A file held open: the node, whatever is renamed over its path later.
class MemReadableFile final : public ReadableFile {
 public:
  MemReadableFile(MemEnvImpl* env, std::shared_ptr<Node> node)
      : env_(env), node_(std::move(node)) {}
  Result<FileIdentity> Identity() override;
  Result<std::string> ReadAt(uint64_t offset, size_t max) override;

 private:
  MemEnvImpl* env_;
  std::shared_ptr<Node> node_;
};

class MemFileLock final : public FileLock {
 public:
  MemFileLock(MemEnvImpl* env, std::string path, bool exclusive, uint64_t generation)
      : env_(env), path_(std::move(path)), exclusive_(exclusive), generation_(generation) {}
  ~MemFileLock() override;
  const std::string& path() const override { return path_; }
  bool exclusive() const override { return exclusive_; }

 private:
  MemEnvImpl* env_;
  std::string path_;
  bool exclusive_;
  uint64_t generation_;
};

class MemEnvImpl final : public MemEnv {
 public:
  explicit MemEnvImpl(const MemEnvOptions& o)
      : wall_ms_(o.start_ms), rng_(o.seed), hardware_threads_(std::max(1, o.hardware_threads)) {
    dirs_.insert("/");
  }

  // --- files ---------------------------------------------------------------

  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    ++counters_.stats;
    const std::string p = Normalize(path);
    FileInfo info;
    if (dirs_.count(p)) {
      info.kind = FileKind::kDirectory;
      info.identity.device = kDevice;
      info.mode = 0755;
      return info;
    }
    auto it = files_.find(p);
    if (it == files_.end()) return ErrnoStatus(path, "", ENOENT);
    info.identity = IdentityOf(*it->second);
    info.mode = it->second->mode;
    return info;
  }

  Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    ++counters_.maps;
    COMPACTOR_ASSIGN_OR_RETURN(Node * n, FindFile(path));
    return std::unique_ptr<MappedFile>(new MemMappedFile(n->data, IdentityOf(*n)));
  }

  Result<std::string> ReadFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    ++counters_.reads;
    COMPACTOR_ASSIGN_OR_RETURN(Node * n, FindFile(path));
    return *n->data;
  }

  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    ++counters_.reads;
    auto it = files_.find(Normalize(path));
    if (it == files_.end()) {
      if (dirs_.count(Normalize(path)))
        return Status::FailedPrecondition(path + ": is a directory");
      return ErrnoStatus(path, "", ENOENT);
    }
    return std::unique_ptr<ReadableFile>(new MemReadableFile(this, it->second));
  }

  // What MemReadableFile asks, under the environment's mutex.
  FileIdentity NodeIdentity(const Node& n) {
    std::lock_guard<std::mutex> l(mu_);
    return IdentityOf(n);
  }
  std::string NodeRead(const Node& n, uint64_t offset, size_t max) {
    std::lock_guard<std::mutex> l(mu_);
    if (offset >= n.data->size()) return {};
    return n.data->substr(static_cast<size_t>(offset), max);
  }

  Result<std::vector<std::string>> RemoveStaleTemps(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    // A replacement here is one step under the mutex: every temporary file
    // still present belongs to a process that died (or was set up by a test).
    const std::string prefix = internal::TempPrefixFor(Normalize(path));
    std::vector<std::string> removed;
    for (auto it = files_.lower_bound(prefix);
         it != files_.end() && it->first.starts_with(prefix);) {
      removed.push_back(it->first);
      it = files_.erase(it);
    }
    return removed;
  }

  Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                     bool sync) override {
    std::lock_guard<std::mutex> l(mu_);
    COMPACTOR_ASSIGN_OR_RETURN(Node * n, FindFile(path));
    if (lines.empty()) return Status::Ok();
    // As the POSIX Env's fallocate: on a full disk nothing is written. (A
    // short write, ShortWriteNth, still leaves part of an entry.)
    size_t total = 0;
    for (const std::string& line : lines) total += line.size() + 1;
    if (space_ && *space_ < total) return ErrnoStatus(path, "write", ENOSPC);
    std::string buf;
    for (const std::string& line : lines) {
      buf.assign(line);
      buf.push_back('\n');
      COMPACTOR_RETURN_IF_ERROR(WriteAll(n, buf, path));
    }
    if (sync) COMPACTOR_RETURN_IF_ERROR(SyncFile(n, path));
    return Status::Ok();
  }

  Status ReplaceFile(const std::string& path, std::string_view contents,
                     const ReplaceOptions& options) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string target = Normalize(path);
    if (dirs_.count(target)) return Status::FailedPrecondition(path + ": is a directory");
    const std::string tmp_name = internal::TempNameFor(path, kPid, rng_());
    const std::string tmp = Normalize(tmp_name);
    if (!dirs_.count(ParentOf(target))) return ErrnoStatus(path, "create temporary file", ENOENT);
    auto old = files_.find(target);
    auto node = NewNode();
    node->mode = old != files_.end() ? old->second->mode : (options.create_mode & 07777 & ~kUmask);
    files_[tmp] = node;
    Status s = WriteAll(node.get(), contents, path);  // as the POSIX Env: the target's name
    if (s.ok()) s = SyncFile(node.get(), tmp_name);
    if (!s.ok()) {
      files_.erase(tmp);
      return s;
    }
    if (old != files_.end() && !options.backup_suffix.empty()) {
      files_[target + options.backup_suffix] = old->second;  // a hard link: the same node
    }
    ++counters_.renames;
    if (int e = Hit(MemEnvOp::kRename)) {
      files_.erase(tmp);
      return ErrnoStatus(tmp_name, "rename", e);
    }
    files_[target] = node;
    files_.erase(tmp);
    return SyncDir(ParentOf(target));
  }

  Status RemoveFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string p = Normalize(path);
    if (dirs_.count(p)) return ErrnoStatus(path, "remove", EISDIR);
    if (files_.erase(p) == 0) return ErrnoStatus(path, "remove", ENOENT);
    return Status::Ok();
  }

  Status CreateDirs(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    return CreateDirsLocked(Normalize(path), path);
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string dir = Normalize(path);
    if (!dirs_.count(dir)) {
      if (files_.count(dir)) return ErrnoStatus(path, "list directory", ENOTDIR);
      return ErrnoStatus(path, "list directory", ENOENT);
    }
    std::set<std::string> names;
    auto add = [&](const std::string& p) {
      if (p != "/" && ParentOf(p) == dir) names.insert(p.substr(p.rfind('/') + 1));
    };
    for (const auto& [p, node] : files_) add(p);
    for (const std::string& d : dirs_) add(d);
    return std::vector<std::string>(names.begin(), names.end());
  }

  Result<std::unique_ptr<FileLock>> LockSession(const std::string& path,
                                                const LockOptions& options) override {
    std::unique_lock<std::mutex> l(mu_);
    const std::string lock_name = path + std::string(kLockSuffix);
    const std::string lock_path = Normalize(lock_name);
    if (!files_.count(lock_path)) {
      if (dirs_.count(lock_path)) return Status::FailedPrecondition(lock_name + ": is a directory");
      if (!dirs_.count(ParentOf(lock_path)))
        return ErrnoStatus(lock_name, "open lock file", ENOENT);
      files_[lock_path] = NewNode();
    }
    auto free = [&] { return Compatible(locks_[lock_path], options.exclusive); };
    if (options.timeout_ms < 0) {
      lock_cv_.wait(l, free);
    } else if (!lock_cv_.wait_for(l, std::chrono::milliseconds(options.timeout_ms), free)) {
      return Status::Unavailable(lock_name + ": locked by another writer (waited " +
                                 std::to_string(options.timeout_ms) + " ms)");
    }
    LockState& st = locks_[lock_path];
    if (options.exclusive) {
      st.exclusive = true;
    } else {
      ++st.shared;
    }
    return std::unique_ptr<FileLock>(
        new MemFileLock(this, lock_path, options.exclusive, generation_));
  }

  void Unlock(const std::string& lock_path, bool exclusive, uint64_t generation) {
    std::lock_guard<std::mutex> l(mu_);
    if (generation != generation_) return;  // released by Crash()
    LockState& st = locks_[lock_path];
    if (exclusive) {
      st.exclusive = false;
    } else if (st.shared > 0) {
      --st.shared;
    }
    lock_cv_.notify_all();
  }

  // --- time, randomness, threads, environment -------------------------------

  int64_t NowMs() override {
    std::lock_guard<std::mutex> l(mu_);
    return wall_ms_;
  }
  int64_t MonotonicMicros() override {
    std::lock_guard<std::mutex> l(mu_);
    return mono_us_;
  }
  bool SleepMs(int64_t ms, const std::function<bool()>& cancelled) override {
    std::function<void(int64_t)> hook;
    {
      std::lock_guard<std::mutex> l(mu_);
      sleeps_.push_back(ms);
      if (ms > 0) {
        wall_ms_ += ms;
        mono_us_ += ms * 1000;
      }
      hook = sleep_hook_;
    }
    if (hook) hook(ms);
    return !(cancelled && cancelled());
  }
  uint64_t Random64() override {
    std::lock_guard<std::mutex> l(mu_);
    return rng_();
  }
  Result<std::unique_ptr<Thread>> StartThread(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (int e = Hit(MemEnvOp::kStartThread))
        return Status::Unavailable(std::string("cannot start a thread: ") + std::strerror(e));
    }
    try {
      return std::unique_ptr<Thread>(new MemThread(std::thread(std::move(fn))));
    } catch (const std::system_error& e) {
      return Status::Unavailable(std::string("cannot start a thread: ") + e.what());
    }
  }
  int HardwareThreads() override { return hardware_threads_; }
  std::optional<std::string> GetEnvVar(const std::string& name) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = vars_.find(name);
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }

  // --- control ---------------------------------------------------------------

  void AdvanceMs(int64_t ms) override {
    std::lock_guard<std::mutex> l(mu_);
    wall_ms_ += ms;
    mono_us_ += ms * 1000;
  }
  void SetNowMs(int64_t ms) override {
    std::lock_guard<std::mutex> l(mu_);
    wall_ms_ = ms;
  }
  std::vector<int64_t> Sleeps() const override {
    std::lock_guard<std::mutex> l(mu_);
    return sleeps_;
  }
  void SetEnvVar(const std::string& name, const std::string& value) override {
    std::lock_guard<std::mutex> l(mu_);
    vars_[name] = value;
  }
  void UnsetEnvVar(const std::string& name) override {
    std::lock_guard<std::mutex> l(mu_);
    vars_.erase(name);
  }
  void FailNth(MemEnvOp op, int n, int error) override {
    std::lock_guard<std::mutex> l(mu_);
    Fault& f = faults_[static_cast<size_t>(op)];
    f.countdown = std::max(0, n);
    f.error = error;
  }
  void SetDiskSpace(std::optional<uint64_t> bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    space_ = bytes;
  }
  void ShortWriteNth(int n, size_t keep) override {
    std::lock_guard<std::mutex> l(mu_);
    short_countdown_ = std::max(0, n);
    short_keep_ = keep;
  }
  void Crash() override {
    std::lock_guard<std::mutex> l(mu_);
    files_ = durable_;
    std::set<Node*> seen;
    for (auto& [p, node] : files_) {
      if (seen.insert(node.get()).second) node->data = std::make_shared<std::string>(node->synced);
    }
    for (auto it = locks_.begin(); it != locks_.end();) {
      it->second.exclusive = false;
      it->second.shared = 0;
      it = it->second.other == 0 ? locks_.erase(it) : std::next(it);
    }
    ++generation_;
    for (Fault& f : faults_) f.countdown = 0;
    short_countdown_ = 0;
    space_.reset();
    lock_cv_.notify_all();
  }
  void SetFile(const std::string& path, const std::string& contents) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string p = Normalize(path);
    (void)CreateDirsLocked(ParentOf(p), path);
    auto& slot = files_[p];
    if (!slot) slot = NewNode();
    *MutableData(slot.get()) = contents;
    slot->synced = contents;
    slot->mtime_ns = NowNsLocked();
    durable_[p] = slot;
  }
  Status AppendByOther(const std::string& path, const std::string& bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    COMPACTOR_ASSIGN_OR_RETURN(Node * n, FindFile(path));
    MutableData(n)->append(bytes);
    n->synced = *n->data;
    n->mtime_ns = NowNsLocked();
    return Status::Ok();
  }
  Status AppendByOtherToInode(uint64_t inode, const std::string& bytes) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_inode_.find(inode);
    std::shared_ptr<Node> n = it == by_inode_.end() ? nullptr : it->second.lock();
    if (!n) return Status::NotFound("inode " + std::to_string(inode) + ": no such file");
    MutableData(n.get())->append(bytes);
    n->synced = *n->data;
    n->mtime_ns = NowNsLocked();
    return Status::Ok();
  }
  void SetSleepHook(std::function<void(int64_t)> hook) override {
    std::lock_guard<std::mutex> l(mu_);
    sleep_hook_ = std::move(hook);
  }
  Status TruncateByOther(const std::string& path, uint64_t size) override {
    std::lock_guard<std::mutex> l(mu_);
    COMPACTOR_ASSIGN_OR_RETURN(Node * n, FindFile(path));
    MutableData(n)->resize(size, '\0');
    n->synced = *n->data;
    n->mtime_ns = NowNsLocked();
    return Status::Ok();
  }
  void HoldLockByOther(const std::string& path, bool exclusive) override {
    std::lock_guard<std::mutex> l(mu_);
    locks_[Normalize(path + std::string(kLockSuffix))].other = exclusive ? 2 : 1;
  }
  void ReleaseOther(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    locks_[Normalize(path + std::string(kLockSuffix))].other = 0;
    lock_cv_.notify_all();
  }
  MemEnvCounters Counters() const override {
    std::lock_guard<std::mutex> l(mu_);
    return counters_;
  }

 private:
  struct Fault {
    int countdown = 0;  // 0: none pending
    int error = EIO;
  };
  struct LockState {
    int shared = 0;          // shared handles of this process
    bool exclusive = false;  // an exclusive handle of this process
    int other = 0;           // another process: 0 none, 1 shared, 2 exclusive
  };

  static bool Compatible(const LockState& st, bool exclusive) {
    if (st.exclusive || st.other == 2) return false;
    return !exclusive || (st.shared == 0 && st.other == 0);
  }

  int64_t NowNsLocked() const { return wall_ms_ * 1000000; }

  FileIdentity IdentityOf(const Node& n) const {
    return {kDevice, n.inode, static_cast<uint64_t>(n.data->size()), n.mtime_ns};
  }

  std::shared_ptr<Node> NewNode() {
    auto n = std::make_shared<Node>();
    n->inode = next_inode_++;
    by_inode_[n->inode] = n;
    n->mtime_ns = NowNsLocked();
    return n;
  }

  // The node's bytes, copied first when a mapping shares them.
  static std::string* MutableData(Node* n) {
    if (n->data.use_count() > 1) n->data = std::make_shared<std::string>(*n->data);
    return n->data.get();
  }

  // A regular file (kNotFound / kFailedPrecondition otherwise).
  Result<Node*> FindFile(const std::string& path) {
    const std::string p = Normalize(path);
    auto it = files_.find(p);
    if (it != files_.end()) return it->second.get();
    if (dirs_.count(p)) return Status::FailedPrecondition(path + ": is a directory");
    return ErrnoStatus(path, "", ENOENT);
  }

  // Returns the errno of the injected failure when this call is the one, else 0.
  int Hit(MemEnvOp op) {
    Fault& f = faults_[static_cast<size_t>(op)];
    if (f.countdown == 0 || --f.countdown > 0) return 0;
    return f.error;
  }

  // One write(2): how many bytes were stored, or the error.
  Result<size_t> WriteOnce(Node* n, std::string_view data, const std::string& path) {
    ++counters_.writes;
    if (int e = Hit(MemEnvOp::kWrite)) return ErrnoStatus(path, "write", e);
    size_t len = data.size();
    if (short_countdown_ > 0 && --short_countdown_ == 0) len = std::min(len, short_keep_);
    if (space_) {
      if (*space_ == 0 && len > 0) return ErrnoStatus(path, "write", ENOSPC);
      len = static_cast<size_t>(std::min<uint64_t>(len, *space_));
      *space_ -= len;
    }
    MutableData(n)->append(data.substr(0, len));
    n->mtime_ns = NowNsLocked();
    return len;
  }

  Status WriteAll(Node* n, std::string_view data, const std::string& path) {
    while (!data.empty()) {
      COMPACTOR_ASSIGN_OR_RETURN(size_t written, WriteOnce(n, data, path));
      data.remove_prefix(written);
    }
    return Status::Ok();
  }

  Status SyncFile(Node* n, const std::string& path) {
    ++counters_.syncs;
    if (int e = Hit(MemEnvOp::kSync)) return ErrnoStatus(path, "fsync", e);
    n->synced = *n->data;
    return Status::Ok();
  }

  // fsync of a directory: its entries as they are now survive a crash.
  Status SyncDir(const std::string& dir) {
    ++counters_.syncs;
    if (int e = Hit(MemEnvOp::kSync)) return ErrnoStatus(dir, "fsync directory", e);
    for (auto it = durable_.begin(); it != durable_.end();) {
      it = ParentOf(it->first) == dir ? durable_.erase(it) : std::next(it);
    }
    for (const auto& [p, node] : files_) {
      if (ParentOf(p) == dir) durable_[p] = node;
    }
    return Status::Ok();
  }

  Status CreateDirsLocked(const std::string& norm, const std::string& path) {
    for (size_t pos = 1; pos <= norm.size(); ++pos) {
      if (pos < norm.size() && norm[pos] != '/') continue;
      const std::string prefix = norm.substr(0, pos);
      if (files_.count(prefix)) return Status::FailedPrecondition(path + ": not a directory");
      dirs_.insert(prefix);
    }
    return Status::Ok();
  }

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_;    // the namespace now
  std::map<std::string, std::shared_ptr<Node>> durable_;  // as of the last directory syncs
  std::set<std::string> dirs_;
  std::map<uint64_t, std::weak_ptr<Node>> by_inode_;  // every node made, for AppendByOtherToInode
  std::function<void(int64_t)> sleep_hook_;
  std::map<std::string, LockState> locks_;  // by lock file path
  std::condition_variable lock_cv_;
  uint64_t generation_ = 0;  // bumped by Crash(): older lock handles hold nothing
  uint64_t next_inode_ = 2;
  int64_t wall_ms_;
  int64_t mono_us_ = 0;
  std::vector<int64_t> sleeps_;
  std::mt19937_64 rng_;
  const int hardware_threads_;
  std::map<std::string, std::string> vars_;
  std::array<Fault, 4> faults_{};
  std::optional<uint64_t> space_;
  int short_countdown_ = 0;
  size_t short_keep_ = 0;
  MemEnvCounters counters_;
};

MemFileLock::~MemFileLock() { env_->Unlock(path_, exclusive_, generation_); }

Result<FileIdentity> MemReadableFile::Identity() { return env_->NodeIdentity(*node_); }
Result<std::string> MemReadableFile::ReadAt(uint64_t offset, size_t max) {
  return env_->NodeRead(*node_, offset, max);
}

}  // namespace

std::unique_ptr<MemEnv> NewMemEnv(const MemEnvOptions& options) {
  return std::make_unique<MemEnvImpl>(options);
}

}  // namespace compactor
