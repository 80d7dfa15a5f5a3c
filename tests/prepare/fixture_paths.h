// Locating the shared reference data (fixtures, pi oracle) from tests.
#ifndef COMPACTOR_TESTS_PREPARE_FIXTURE_PATHS_H_
#define COMPACTOR_TESTS_PREPARE_FIXTURE_PATHS_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace compactor::testing_paths {

// The `shared/` folder: $COMPACTOR_SHARED_DIR, <source>/shared, <source>/../shared
// or /work/shared; empty when none exists.
inline std::string SharedDir() {
  namespace fs = std::filesystem;
  std::string candidates[] = {
      std::getenv("COMPACTOR_SHARED_DIR") ? std::getenv("COMPACTOR_SHARED_DIR") : "",
      std::string(COMPACTOR_SOURCE_DIR) + "/shared",
      std::string(COMPACTOR_SOURCE_DIR) + "/../shared",
      "/work/shared",
  };
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (!c.empty() && fs::is_directory(c + "/fixtures", ec)) return c;
  }
  return "";
}

}  // namespace compactor::testing_paths

#endif  // COMPACTOR_TESTS_PREPARE_FIXTURE_PATHS_H_
