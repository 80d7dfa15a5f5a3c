// Appending to session files and writing whole files safely.
//
// Appends follow pi's crash model: one write() per entry on an O_APPEND
// descriptor, under an advisory lock (flock) so two writers cannot interleave;
// optional fsync. Whole-file rewrites are atomic: temp file in the same
// directory, fsync, keep a backup of the old file, rename over.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_
#define COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_

#include <string>
#include <string_view>
#include <vector>

#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

struct AppendOptions {
  bool fsync = false;  // fsync after each append (pi never does)
};

// Appends complete JSON lines (each without its trailing newline) to `path`.
// Each line is written by exactly one write() call while an exclusive flock is
// held. If the file does not end with a newline (a torn last line), a newline is
// written first so the new entry starts on its own line.
Status AppendLines(const std::string& path, const std::vector<std::string>& lines,
                   const AppendOptions& options = {});

struct RewriteOptions {
  // Keep the previous contents as `<path><backup_suffix>` (overwriting an older backup).
  bool keep_backup = true;
  std::string backup_suffix = ".bak";
};

// Atomically replaces `path` with `contents` (temp file + fsync + rename, then
// fsync of the directory).
Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       const RewriteOptions& options = {});

// A fresh entry id: 8 lowercase hex characters not used by any entry of
// `session` nor in `taken` (pi's generateId; falls back to a 36-character UUID
// after 100 collisions).
std::string NewEntryId(const Session& session, const std::vector<std::string>& taken = {});
// A random UUIDv7 string (session ids).
std::string NewUuidV7();
// Current time as pi writes entry timestamps: ISO-8601 UTC with milliseconds and "Z".
std::string NowIsoTimestamp();

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_WRITER_H_
