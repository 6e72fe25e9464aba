// Coroutine entry methods through ucharmrun at 1, 2 and 4 PEs (tests/core/coroutines.cpp),
// and the user errors they can meet.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, const std::string& mode, double limit = 60) {
  return run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "50", COROUTINES_PATH, mode}, limit);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class Coroutines : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Coroutines, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, mode);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Core, Coroutines,
    ::testing::Combine(::testing::Values("future", "callback", "channel", "next", "broadcast", "destroy"),
                       ::testing::Values(1, 2, 4)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

TEST(CoroutineExamples, TutorialRing) {  // docs/programming-guide.md shows this program
  for (int n : {1, 2, 4}) {
    Result r = run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "50", TUTORIAL_COROUTINES_PATH}, 60);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "mean after 10 steps: 3.500000 (it stays 3.500000)")) << describe(r);
  }
}

TEST(CoroutineErrors, DestroyingAChareWithSuspendedCoroutinesWarns) {
  Result r = job(2, "destroy");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "was destroyed with 2 coroutine(s) suspended in co_await")) << describe(r);
}

TEST(CoroutineErrors, AnExceptionNamesTheEntryAndWhat) {
  Result r = job(2, "exception");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "an exception escaped coroutine entry method")) << describe(r);
  EXPECT_TRUE(has(r.err, "Main::run")) << describe(r);
  EXPECT_TRUE(has(r.err, "boom after a co_await")) << describe(r);
}

TEST(CoroutineErrors, MigratingWithASuspendedCoroutineIsRefused) {
  Result r = job(2, "migrate");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "cannot migrate: 1 coroutine(s) of it are suspended in co_await")) << describe(r);
}

}  // namespace
