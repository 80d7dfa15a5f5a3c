#include "compactor/env.h"

#include <cstring>

#include "env/env_util.h"

namespace compactor {

Env::~Env() = default;

void MappedFile::Release(size_t /*offset*/, size_t /*len*/) const {}

Result<std::string> Env::ReadFileUpTo(const std::string& path, size_t max_bytes) {
  COMPACTOR_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  if (bytes.size() > max_bytes) return internal::InputLimitError(path, max_bytes);
  return bytes;
}

namespace internal {

Status ErrnoStatus(const std::string& path, std::string_view what, int error) {
  if (error == ENOENT) {
    return Status::NotFound(path + ": no such file" +
                            (what.empty() ? std::string() : " (" + std::string(what) + ")"));
  }
  std::string m = path + ": ";
  if (!what.empty()) {
    m += what;
    m += ": ";
  }
  m += std::strerror(error);
  return Status::IoError(std::move(m));
}

Status InputLimitError(const std::string& path, size_t max_bytes) {
  return Status::FailedPrecondition(path + ": more than " + std::to_string(max_bytes) +
                                    " bytes (the input limit)");
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string TempPrefixFor(const std::string& path) { return path + ".tmp-"; }

std::string TempNameFor(const std::string& path, int64_t pid, uint64_t random) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string name = TempPrefixFor(path) + std::to_string(pid) + "-";
  for (int i = 0; i < 6; ++i) {
    name.push_back(kChars[random % 62]);
    random /= 62;
  }
  return name;
}

}  // namespace internal
}  // namespace compactor
