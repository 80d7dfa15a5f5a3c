// The pi oracle (tests/oracle/): pi 0.73.1 itself, run by node on session
// files. Tests compare Compactor with what it answers; docs/conformance.md.
#ifndef COMPACTOR_TESTS_SUPPORT_ORACLE_H_
#define COMPACTOR_TESTS_SUPPORT_ORACLE_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace compactor::testing {

struct OracleStatus {
  bool ready = false;
  // node (>= 20) or npm is missing: the only reason an oracle test skips.
  bool tool_missing = false;
  std::string message;  // one line: why not ready
};

// Installs pi into $COMPACTOR_ORACLE_HOME (default ~/.cache/compactor-oracle)
// on the first call of the process (tests/oracle/install.sh: a no-op once
// installed, safe when test processes run it at the same time) and reports
// whether the oracle can run. Thread-compatible; the result is cached.
const OracleStatus& Oracle();

// Runs `node tests/oracle/oracle.mjs args...` (see the top of oracle.mjs for
// the commands). REQUIRES: Oracle().ready.
RunResult RunOracle(const std::vector<std::string>& args);

// Appends a user turn after entry `parent_id` of the session file `path`, as
// an agent does after a compaction, then expects pi to load the file and
// build the context `compactor context` builds. `trace` names the case.
// REQUIRES: Oracle().ready.
void ExpectPiBuildsOurContextAfterATurn(const std::string& path, const std::string& parent_id,
                                        const std::string& trace);

}  // namespace compactor::testing

// Skips the current test when node or npm is missing; fails it when the
// oracle cannot be installed for another reason.
#define COMPACTOR_REQUIRE_ORACLE()                                                 \
  do {                                                                             \
    const ::compactor::testing::OracleStatus& compactor_oracle_status =            \
        ::compactor::testing::Oracle();                                            \
    if (compactor_oracle_status.tool_missing)                                      \
      GTEST_SKIP() << "pi oracle: " << compactor_oracle_status.message;            \
    ASSERT_TRUE(compactor_oracle_status.ready) << compactor_oracle_status.message; \
  } while (0)

#endif  // COMPACTOR_TESTS_SUPPORT_ORACLE_H_
