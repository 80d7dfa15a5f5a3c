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
std::string DirName(const std::string& path);

// A temporary file name next to `path`: "<path>.tmp-" and 6 characters from `random`.
std::string TempNameFor(const std::string& path, uint64_t random);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_ENV_ENV_UTIL_H_
