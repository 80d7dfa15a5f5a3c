#include "util/file.h"

#include <utility>

namespace compactor::internal {

Result<FileBytes> FileBytes::Open(Env* env, const std::string& path, size_t max_stream_bytes) {
  env = EnvOrDefault(env);
  FileBytes fb;
  Result<FileInfo> info = env->Stat(path);
  if (!info.ok()) return info.status();
  if (info->kind == FileKind::kDirectory)
    return Status::IoError(path + ": is a directory, not a session file");
  if (info->kind == FileKind::kRegular) {
    Result<std::unique_ptr<MappedFile>> map = env->MapFile(path);
    if (map.ok()) {
      fb.map_ = std::move(map).value();
      return fb;
    }
    // Replaced by something else since the Stat (a FIFO, say): read it instead.
    if (map.status().code() != StatusCode::kFailedPrecondition) return map.status();
  }
  // Pipes and character devices (`<(cat file)`, /dev/stdin): read into memory.
  COMPACTOR_ASSIGN_OR_RETURN(fb.buffer_, env->ReadFileUpTo(path, max_stream_bytes));
  return fb;
}

std::optional<FileIdentity> FileBytes::identity() const {
  if (!map_) return std::nullopt;
  return map_->identity();
}

Status TruncatedWhileRead(const std::string& path, bool nothing_written) {
  return Status::IoError(path + ": truncated by another process while it was read" +
                         (nothing_written ? "; nothing written" : ""));
}

}  // namespace compactor::internal
