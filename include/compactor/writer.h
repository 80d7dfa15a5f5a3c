// Appending to session files and rewriting them without losing an entry,
// through the Env (compactor/env.h; docs/env.md). docs/reliability.md is the
// write protocol in prose.
//
// Appends follow pi's crash model: one write() per entry on an O_APPEND
// descriptor, while the session's sidecar lock `<path>.lock` is held
// exclusively so cooperating writers (the CLI, the runtime, `compactor serve`,
// the pi extension) never interleave; optional fsync. Whole-file rewrites of
// a session (RewriteSessionFile) hold the lock across read, rebuild and
// rename, carry over what writers that take no lock (pi) appended meanwhile,
// and watch the old file for a grace period after the rename. Entries
// computed from a session read earlier (compactions, branch summaries) are
// appended by AppendComputedLines, which re-checks the file under the lock.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// How long a last line without its newline must stay unchanged before a
// writer takes it for torn (a crashed writer's) and ends it with a newline.
// A younger one may be a write in progress by a writer that takes no lock:
// the kernel grows a file page by page during one write(), so a reader can
// see half of an entry that is still being written.
inline constexpr int64_t kDefaultTornTailGraceMs = 1000;

struct AppendOptions {
  bool fsync = false;  // fsync after each append (pi never does)
  // How long to wait for the sidecar lock; < 0 waits as long as it takes.
  int64_t lock_timeout_ms = -1;
  Env* env = nullptr;  // null = Env::Default()
  // See kDefaultTornTailGraceMs. Waiting happens only when the file does not
  // end with a newline; it ends early when the line is completed.
  int64_t torn_tail_grace_ms = kDefaultTornTailGraceMs;
};

// Appends complete JSON lines (each without its trailing newline) to the
// existing file `path`. Each line is written by exactly one write() call while
// the exclusive sidecar lock `<path>.lock` is held. If the file ends with a
// line without its newline that stays unchanged for torn_tail_grace_ms (a
// torn line), the first write starts with a newline so the new entry stands
// on its own line; a tail that is completed meanwhile needs none. Nothing is
// ever truncated: a failed write can leave part of a line, which the next
// append ends (readers skip it as a malformed line). kUnavailable when the
// lock stays held past lock_timeout_ms.
Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options = {});

// Appends entry lines to the file `session` was opened from, exactly as
// AppendLines does (sidecar lock, one write() per line, torn-tail repair),
// then brings `session` up to date with Session::Refresh: the new lines (and
// whatever another writer appended before them) are indexed from the last
// read offset, without reading the file again. Returns the refresh's result.
// An error from the append leaves `session` unchanged; an error from the
// refresh comes after the lines were written (a later Refresh reads them).
// REQUIRES: session != nullptr, opened from `session->path()`, and no other
// call on it runs concurrently (Session::Refresh).
Result<RefreshResult> AppendToSession(Session* session, const std::vector<std::string>& lines,
                                      const AppendOptions& options = {});

// Entries computed from a session read earlier. `recheck` is called, under
// the exclusive lock, with the session as it is now when the file's identity
// differs from `loaded` (nullopt: always); it returns the lines to append
// (for instance re-parented onto the current leaf) or an error, and then
// nothing is written. Otherwise as AppendLines.
using RecheckFn = std::function<Result<std::vector<std::string>>(const Session& now)>;
Status AppendComputedLines(const std::string& path, const std::optional<FileIdentity>& loaded,
                           const std::vector<std::string>& lines, const RecheckFn& recheck,
                           const AppendOptions& options = {});

struct SessionRewriteOptions {
  // Keep the previous file as `<path><backup_suffix>` (a hard link).
  bool keep_backup = true;
  std::string backup_suffix = ".bak";
  // How long to wait for the sidecar lock; < 0 waits as long as it takes.
  int64_t lock_timeout_ms = -1;
  // After the rename, how long the old file is watched for appends by
  // writers that opened it by path just before (pi opens the file for every
  // append). Rounds repeat while appends keep arriving (at most 4).
  int64_t grace_ms = 300;
  int64_t torn_tail_grace_ms = kDefaultTornTailGraceMs;
  Env* env = nullptr;  // null = Env::Default()
};

struct SessionRewriteResult {
  // Bytes other writers appended to the old file that were carried over:
  // before the rename (into the new file's text) and after it (appended).
  uint64_t carried_before_rename = 0;
  uint64_t carried_after_rename = 0;
  // Temporary files of dead processes that were removed first.
  std::vector<std::string> removed_temps;
};

// Rebuilds a session file from its bytes: `rebuild` gets the file's complete
// lines (up to and including its last newline) and returns the new text.
using RebuildFn = std::function<Result<std::string>(std::string_view old_bytes)>;

// Rewrites the session at `path` (a symlink is followed; anything but a
// regular file is refused) without losing what other writers append:
// exclusive sidecar lock; removal of dead processes' temporary files; the old
// file opened and kept open; `rebuild` over its complete lines; bytes
// appended meanwhile carried over; Env::ReplaceFile (owner and mode kept,
// fsync, backup link, rename, directory fsync); then, for grace_ms (and more
// rounds while appends arrive), whatever still reaches the old file is
// appended to the new one; the lock is released last. Writers that keep a
// descriptor of the old file open across the rename and append later cannot
// be followed by any rename: their entries reach only the old file (and the
// backup). kFailedPrecondition (nothing written) when the file is replaced by
// a writer that takes no lock while this one opens it; errors of `rebuild`
// are returned as they are, nothing written.
Result<SessionRewriteResult> RewriteSessionFile(const std::string& path, const RebuildFn& rebuild,
                                                const SessionRewriteOptions& options = {});

struct RewriteOptions {
  // Keep the previous contents as `<path><backup_suffix>` (overwriting an older backup).
  bool keep_backup = true;
  std::string backup_suffix = ".bak";
  Env* env = nullptr;  // null = Env::Default()
};

// Atomically replaces `path` with `contents` (temp file + fsync + rename, then
// fsync of the directory; Env::ReplaceFile). A new file gets mode 0600.
Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       const RewriteOptions& options = {});

// A fresh entry id: 8 lowercase hex characters not used by any entry of
// `session` nor in `taken` (pi's generateId; falls back to a 36-character UUID
// after 100 collisions). Random bits from `env` (null = Env::Default()).
std::string NewEntryId(const Session& session, const std::vector<std::string>& taken = {},
                       Env* env = nullptr);
// A random UUIDv7 string (session ids): `env`'s clock and random bits.
std::string NewUuidV7(Env* env = nullptr);
// `env`'s current time as pi writes entry timestamps: ISO-8601 UTC with
// milliseconds and "Z".
std::string NowIsoTimestamp(Env* env = nullptr);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_
