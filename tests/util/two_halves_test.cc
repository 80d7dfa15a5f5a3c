#include "util/two_halves.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "compactor/mem_env.h"

namespace compactor::internal {
namespace {

TEST(TwoHalves, SplitsByWeightAndCoversEveryItemOnce) {
  // Item 0 weighs as much as the nine others together: it is a half alone.
  const std::vector<size_t> weight = {90, 10, 10, 10, 10, 10, 10, 10, 10, 10};
  std::vector<int> seen(weight.size(), 0);
  std::vector<std::pair<size_t, size_t>> halves(2);
  std::thread::id caller = std::this_thread::get_id(), second_thread;
  RunInTwoHalves(
      nullptr, weight.size(), true, [&](size_t i) { return weight[i]; },
      [&](size_t from, size_t to, int half) {
        halves[static_cast<size_t>(half)] = {from, to};
        if (half == 1) second_thread = std::this_thread::get_id();
        for (size_t i = from; i < to; ++i) ++seen[i];
      });
  EXPECT_EQ(halves[0], std::make_pair(size_t{0}, size_t{1}));
  EXPECT_EQ(halves[1], std::make_pair(size_t{1}, size_t{10}));
  EXPECT_NE(second_thread, caller);
  EXPECT_EQ(seen, std::vector<int>(weight.size(), 1));
}

TEST(TwoHalves, RunsEverythingHereWhenNotParallel) {
  int calls = 0;
  const std::thread::id caller = std::this_thread::get_id();
  RunInTwoHalves(
      nullptr, 5, false, [](size_t) { return size_t{1}; },
      [&](size_t from, size_t to, int half) {
        ++calls;
        EXPECT_EQ(from, 0u);
        EXPECT_EQ(to, 5u);
        EXPECT_EQ(half, 0);
        EXPECT_EQ(std::this_thread::get_id(), caller);
      });
  EXPECT_EQ(calls, 1);
}

// A throw on the worker reaches the caller (instead of std::terminate), and a
// throw here still waits for the worker before unwinding.
TEST(TwoHalves, ExceptionsOfEitherHalfReachTheCaller) {
  auto unit = [](size_t) { return size_t{1}; };
  EXPECT_THROW(RunInTwoHalves(nullptr, 4, true, unit,
                              [](size_t, size_t, int half) {
                                if (half == 1) throw std::runtime_error("worker");
                              }),
               std::runtime_error);
  std::atomic<bool> worker_done{false};
  try {
    RunInTwoHalves(nullptr, 4, true, unit, [&](size_t, size_t, int half) {
      if (half == 0) throw std::logic_error("caller");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      worker_done = true;
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "caller");
    EXPECT_TRUE(worker_done);  // joined before the exception left
  }
}

// The thread comes from the Env: when none can be had, everything runs here.
TEST(TwoHalves, RunsEverythingHereWhenTheEnvHasNoThread) {
  auto env = NewMemEnv();
  env->FailNth(MemEnvOp::kStartThread, 1);
  std::vector<std::pair<size_t, size_t>> ranges;
  const std::thread::id caller = std::this_thread::get_id();
  RunInTwoHalves(
      env.get(), 6, true, [](size_t) { return size_t{1}; },
      [&](size_t from, size_t to, int half) {
        EXPECT_EQ(half, 0);
        EXPECT_EQ(std::this_thread::get_id(), caller);
        ranges.emplace_back(from, to);
      });
  EXPECT_EQ(ranges, (std::vector<std::pair<size_t, size_t>>{{0, 6}}));
  // The next call gets its thread again.
  std::atomic<int> halves{0};
  RunInTwoHalves(
      env.get(), 6, true, [](size_t) { return size_t{1}; }, [&](size_t, size_t, int) { ++halves; });
  EXPECT_EQ(halves, 2);
}

}  // namespace
}  // namespace compactor::internal
