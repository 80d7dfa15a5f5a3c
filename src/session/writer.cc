#include "compactor/writer.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <unordered_set>

#include "compactor/js_json.h"
#include "util/file.h"

namespace compactor {

namespace {

// Whether the file ends with a torn line: a last line without its newline
// that stayed unchanged (or whose modification time is older) for
// `grace_ms`. A tail still growing or completed meanwhile is no torn line.
Result<bool> TornTail(Env* env, ReadableFile* file, int64_t grace_ms) {
  const int64_t start_us = env->MonotonicMicros();
  uint64_t seen_size = UINT64_MAX;
  int64_t seen_since_us = start_us;
  for (;;) {
    COMPACTOR_ASSIGN_OR_RETURN(FileIdentity id, file->Identity());
    if (id.size == 0) return false;
    COMPACTOR_ASSIGN_OR_RETURN(std::string last, file->ReadAt(id.size - 1, 1));
    if (last == "\n") return false;
    const int64_t now_us = env->MonotonicMicros();
    if (id.size != seen_size) {
      seen_size = id.size;
      seen_since_us = now_us;
    }
    const int64_t age_ms = env->NowMs() - id.mtime_ns / 1000000;
    if (age_ms >= grace_ms || now_us - seen_since_us >= grace_ms * 1000) return true;
    env->SleepMs(std::min<int64_t>(5, grace_ms), {});
  }
}

// AppendLines with the sidecar lock already held.
Status AppendLocked(Env* env, const std::string& path, std::vector<std::string> lines, bool sync,
                    int64_t torn_grace_ms) {
  if (lines.empty()) return Status::Ok();
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, env->OpenReadable(path));
  COMPACTOR_ASSIGN_OR_RETURN(bool torn, TornTail(env, file.get(), torn_grace_ms));
  // The repair and the first entry in one write(): never a newline alone
  // that a crash could separate from its entry.
  if (torn) {
    // (Built anew rather than insert(0, ...): g++ 12 warns falsely there, GCC bug 105329.)
    std::string first(1, '\n');
    first += lines.front();
    lines.front() = std::move(first);
  }
  return env->AppendLines(path, lines, sync);
}

Result<std::unique_ptr<FileLock>> LockExclusive(Env* env, const std::string& path,
                                                int64_t timeout_ms) {
  // Refuse a missing or odd file before the lock file is created next to it.
  COMPACTOR_ASSIGN_OR_RETURN(FileInfo info, env->Stat(path));
  if (info.kind != FileKind::kRegular)
    return Status::FailedPrecondition(path + ": not a regular file; nothing written");
  LockOptions lock;
  lock.exclusive = true;
  lock.timeout_ms = timeout_ms;
  // The lock file, not the session: a rewrite renames a new session file over
  // the old one, and a lock on the old inode would then guard nothing.
  return env->LockSession(path, lock);
}

// The lines of `bytes` (which ends with a newline), without their newlines.
std::vector<std::string> SplitLines(std::string_view bytes) {
  std::vector<std::string> lines;
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    lines.emplace_back(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
  }
  return lines;
}

// After the rename: whatever reached the old file since `*done` is appended
// to the new one, for a grace period and more rounds while appends arrive.
Status FollowOldFile(Env* env, const std::string& path, ReadableFile* old, uint64_t* done,
                     const SessionRewriteOptions& o, SessionRewriteResult* result) {
  constexpr int kMaxRounds = 4;
  for (int round = 0; round < kMaxRounds; ++round) {
    env->SleepMs(o.grace_ms, {});
    COMPACTOR_ASSIGN_OR_RETURN(FileIdentity id, old->Identity());
    if (id.size <= *done) return Status::Ok();  // a quiet round: nobody is writing
    COMPACTOR_ASSIGN_OR_RETURN(std::string bytes, old->ReadAt(*done, id.size - *done));
    size_t complete = bytes.rfind('\n') + 1;  // 0 when there is none
    if (complete < bytes.size()) {
      // A partial last line: wait for it to be completed, or to be torn.
      COMPACTOR_ASSIGN_OR_RETURN(bool torn, TornTail(env, old, o.torn_tail_grace_ms));
      COMPACTOR_ASSIGN_OR_RETURN(id, old->Identity());
      COMPACTOR_ASSIGN_OR_RETURN(bytes, old->ReadAt(*done, id.size - *done));
      complete = torn ? bytes.size() : bytes.rfind('\n') + 1;
    }
    if (complete == 0) continue;
    std::string_view carried(bytes.data(), complete);
    std::vector<std::string> lines =
        SplitLines(carried.back() == '\n' ? carried : std::string(carried) + "\n");
    Status s = AppendLocked(env, path, std::move(lines), true, o.torn_tail_grace_ms);
    if (!s.ok()) {
      return Status::IoError(path + ": entries appended to the old file during the rewrite " +
                             "could not be carried over (" + s.message() + ")" +
                             (o.keep_backup ? "; they are in " + path + o.backup_suffix : ""));
    }
    *done += complete;
    result->carried_after_rename += complete;
  }
  return Status::Ok();
}

}  // namespace

Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options) {
  Env* env = EnvOrDefault(options.env);
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> held,
                             LockExclusive(env, path, options.lock_timeout_ms));
  (void)env->RemoveStaleTemps(path);  // best effort, as in RewriteSessionFile
  return AppendLocked(env, path, lines, options.fsync, options.torn_tail_grace_ms);
}

Result<RefreshResult> AppendToSession(Session* session, const std::vector<std::string>& lines,
                                      const AppendOptions& options) {
  COMPACTOR_RETURN_IF_ERROR(AppendLines(session->path(), lines, options));
  return session->Refresh();
}

Status AppendComputedLines(const std::string& path, const std::optional<FileIdentity>& loaded,
                           const std::vector<std::string>& lines, const RecheckFn& recheck,
                           const AppendOptions& options) {
  Env* env = EnvOrDefault(options.env);
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> held,
                             LockExclusive(env, path, options.lock_timeout_ms));
  (void)env->RemoveStaleTemps(path);  // best effort, as in RewriteSessionFile
  COMPACTOR_ASSIGN_OR_RETURN(FileInfo info, env->Stat(path));
  if (loaded && info.identity == *loaded)
    return AppendLocked(env, path, lines, options.fsync, options.torn_tail_grace_ms);
  LoadOptions load;
  load.env = env;
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> now, Session::Open(path, load));
  COMPACTOR_ASSIGN_OR_RETURN(std::vector<std::string> rechecked, recheck(*now));
  return AppendLocked(env, path, std::move(rechecked), options.fsync, options.torn_tail_grace_ms);
}

Result<SessionRewriteResult> RewriteSessionFile(const std::string& path, const RebuildFn& rebuild,
                                                const SessionRewriteOptions& o) {
  Env* env = EnvOrDefault(o.env);
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> held,
                             LockExclusive(env, path, o.lock_timeout_ms));
  SessionRewriteResult result;
  // Best effort: a directory that cannot be listed does not stop the rewrite.
  if (auto removed = env->RemoveStaleTemps(path); removed.ok())
    result.removed_temps = std::move(removed).value();
  // Kept open to the end: after the rename it is the only way to the old file.
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> old, env->OpenReadable(path));
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> map, env->MapFile(path));
  COMPACTOR_ASSIGN_OR_RETURN(FileIdentity old_id, old->Identity());
  if (old_id.inode != map->identity().inode || old_id.device != map->identity().device)
    return Status::FailedPrecondition(
        path +
        ": replaced by another process while it was opened for the rewrite; nothing written");
  // Only complete lines are rebuilt: a last line without its newline may be
  // an entry still being written; it is carried over once complete.
  std::string_view bytes(map->data(), map->size());
  uint64_t done = bytes.rfind('\n') + 1;  // 0 when there is none
  COMPACTOR_ASSIGN_OR_RETURN(std::string text, rebuild(bytes.substr(0, done)));
  // Rebuilt from fill bytes, the text would replace the file with nonsense.
  if (map->truncated()) return internal::TruncatedWhileRead(path, /*nothing_written=*/true);
  map.reset();
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  // What was appended since the mapping: complete lines go into the new text.
  COMPACTOR_ASSIGN_OR_RETURN(old_id, old->Identity());
  if (old_id.size > done) {
    COMPACTOR_ASSIGN_OR_RETURN(std::string more, old->ReadAt(done, old_id.size - done));
    const size_t complete = more.rfind('\n') + 1;
    text.append(more, 0, complete);
    done += complete;
    result.carried_before_rename += complete;
  }
  ReplaceOptions replace;
  if (o.keep_backup) replace.backup_suffix = o.backup_suffix;
  COMPACTOR_RETURN_IF_ERROR(env->ReplaceFile(path, text, replace));
  COMPACTOR_RETURN_IF_ERROR(FollowOldFile(env, path, old.get(), &done, o, &result));
  return result;
}

Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       const RewriteOptions& options) {
  ReplaceOptions replace;
  if (options.keep_backup) replace.backup_suffix = options.backup_suffix;
  return EnvOrDefault(options.env)->ReplaceFile(path, contents, replace);
}

std::string NewUuidV7(Env* env) {
  env = EnvOrDefault(env);
  const uint64_t ms = static_cast<uint64_t>(env->NowMs());
  uint8_t b[16];
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  const uint64_t r1 = env->Random64(), r2 = env->Random64();
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

std::string NewEntryId(const Session& session, const std::vector<std::string>& taken, Env* env) {
  env = EnvOrDefault(env);
  std::unordered_set<std::string_view> extra(taken.begin(), taken.end());
  for (int attempt = 0; attempt < 100; ++attempt) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(env->Random64() & 0xffffffffu));
    std::string id(buf);
    if (!session.Find(id) && !extra.count(id)) return id;
  }
  return NewUuidV7(env);
}

std::string NowIsoTimestamp(Env* env) { return FormatIsoTimestamp(EnvOrDefault(env)->NowMs()); }

}  // namespace compactor
