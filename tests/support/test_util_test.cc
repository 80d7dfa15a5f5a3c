// The test helpers themselves, where a mistake would hide failures elsewhere.
#include "support/test_util.h"

#include <gtest/gtest.h>

#include <string>

namespace compactor::testing {
namespace {

TEST(RunProgram, AProgramThatStopsReadingItsStdinEarlyIsNoSignalForTheTest) {
  // 8 MiB cannot fit in a pipe: the helper's write meets a closed pipe, which
  // once killed the whole test binary with SIGPIPE.
  const std::string input(size_t{8} << 20, 'a');
  // The program closes its stdin and lives on, so the helper surely writes
  // to a pipe without a reader.
  RunResult r = RunProgram({"/bin/sh", "-c", "head -c 3; exec 0<&-; sleep 0.3; exit 3"}, input);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "aaa");
  // The child still gets SIGPIPE's default action: a writer to a closed pipe dies of it.
  RunResult child =
      RunProgram({"/bin/bash", "-c", "yes | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"});
  EXPECT_EQ(child.out, "141\n");  // 128 + SIGPIPE
}

}  // namespace
}  // namespace compactor::testing
