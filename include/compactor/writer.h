// Appending to session files and writing whole files safely, through the Env
// (compactor/env.h; docs/env.md).
//
// Appends follow pi's crash model: one write() per entry on an O_APPEND
// descriptor, while the session's sidecar lock `<path>.lock` is held
// exclusively so cooperating writers (the CLI, the runtime, `compactor serve`,
// the pi extension) never interleave; optional fsync. Whole-file rewrites are
// atomic: temp file in the same directory, fsync, keep a backup of the old
// file, rename over, fsync of the directory.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

struct AppendOptions {
  bool fsync = false;  // fsync after each append (pi never does)
  // How long to wait for the sidecar lock; < 0 waits as long as it takes.
  int64_t lock_timeout_ms = -1;
  Env* env = nullptr;  // null = Env::Default()
};

// Appends complete JSON lines (each without its trailing newline) to the
// existing file `path`. Each line is written by exactly one write() call while
// the exclusive sidecar lock `<path>.lock` is held. If the file does not end
// with a newline (a torn last line), a newline is written first so the new
// entry starts on its own line. kUnavailable when the lock stays held past
// lock_timeout_ms.
Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options = {});

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
