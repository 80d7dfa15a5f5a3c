// Helpers the Env implementations share: error values and path pieces.
#ifndef COMPACTOR_SRC_ENV_ENV_UTIL_H_
#define COMPACTOR_SRC_ENV_ENV_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "compactor/status.h"

namespace compactor::internal {

// kNotFound "PATH: no such file" for ENOENT (then " (WHAT)" when `what` is
// not empty); otherwise kIoError "PATH: WHAT: <errno text>" ("PATH: <errno
// text>" when `what` is empty). Plain opens and stats pass an empty `what`.
Status ErrnoStatus(const std::string& path, std::string_view what, int error);

// The directory part of `path` ("." for a bare name, "/" for "/x").
// kFailedPrecondition "PATH: more than N bytes (the input limit)".
Status InputLimitError(const std::string& path, size_t max_bytes);

std::string DirName(const std::string& path);

// A temporary file name next to `path`: "<path>.tmp-<pid>-" and 6
// characters from `random` (the pid tells a person whose file it was; whether
// its owner is alive is told by the flock it holds, not by the pid).
std::string TempNameFor(const std::string& path, int64_t pid, uint64_t random);

// The prefix every temporary file name of `path` starts with: "<path>.tmp-".
std::string TempPrefixFor(const std::string& path);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_ENV_ENV_UTIL_H_
