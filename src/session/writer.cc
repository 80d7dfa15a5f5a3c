#include "compactor/writer.h"

#include <cstdio>
#include <unordered_set>

#include "compactor/js_json.h"

namespace compactor {

Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options) {
  Env* env = EnvOrDefault(options.env);
  // Refuse a missing or odd file before the lock file is created next to it.
  COMPACTOR_ASSIGN_OR_RETURN(FileInfo info, env->Stat(path));
  if (info.kind != FileKind::kRegular)
    return Status::FailedPrecondition(path + ": not a regular file");
  LockOptions lock;
  lock.exclusive = true;
  lock.timeout_ms = options.lock_timeout_ms;
  // The lock file, not the session: a rewrite renames a new session file over
  // the old one, and a lock on the old inode would then guard nothing.
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> held, env->LockSession(path, lock));
  return env->AppendLines(path, lines, options.fsync);
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
