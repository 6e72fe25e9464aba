// The core megatest through ucharmrun at 1, 2 and 4 PEs, its error modes, and the
// examples that docs/programming-guide.md is built from.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

const std::string kRun = UCHARMRUN_PATH;

Result job(int n, const std::string& prog, std::vector<std::string> args, double limit = 60,
           const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {kRun, "-n", std::to_string(n), "--timeout", "50", prog};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit, env);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class Megatest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Megatest, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, MEGATEST_PATH, {mode});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);  // e.g. a device message nobody received
}

INSTANTIATE_TEST_SUITE_P(
    Core, Megatest,
    ::testing::Combine(::testing::Values("marshal", "chares", "groups", "arrays", "fifo", "priority",
                                         "callbacks", "reductions", "reductions_remote", "futures", "qd", "channels",
                                         "gpumsg"),
                       ::testing::Values(1, 2, 4)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

// Regressions for core defects (tests/core/fixes.cpp), at 1, 2, 4 and 8 PEs.
class Fixes : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Fixes, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, FIXES_PATH, {mode}, 90);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
}

// qd_reduction hung now and then at 8 PEs before the machine layer delivered every link
// in order (a 4 MiB partial overtaken and lost to QD's accounting); it runs at 16 too.
INSTANTIATE_TEST_SUITE_P(
    Core, Fixes,
    ::testing::Combine(::testing::Values("devbuf_reuse", "set_vector", "many_chares", "qd_reduction", "converse_handler"),
                       ::testing::Values(1, 2, 4, 8, 16)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

TEST(CoreUndelivered, MessagesForAnElementNeverInsertedAreReportedAtQuiescence) {
  for (int n : {1, 2, 4, 8}) {
    Result r = job(n, FIXES_PATH, {"undelivered"});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "undelivered ok")) << describe(r);
    EXPECT_TRUE(has(r.err, "2 message(s) for element (5) of collection")) << describe(r);
    EXPECT_TRUE(has(r.err, "which does not exist")) << describe(r);
    EXPECT_TRUE(has(r.err, "are buffered at quiescence")) << describe(r);
  }
}

// Raw broadcasts, futures with handlers, embedder maps and the exit hook (what the Python
// bindings are built on).
class Embedder : public ::testing::TestWithParam<int> {};
TEST_P(Embedder, RawBroadcastHandlerFuturesMapsAndExitHook) {
  const int n = GetParam();
  Result r = job(n, EMBEDDER_PATH, {}, 60);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "embedder ok")) << describe(r);
  for (int pe = 0; pe < n; ++pe)
    EXPECT_TRUE(has(r.out, "exit hook 0 on PE " + std::to_string(pe))) << describe(r);
}
INSTANTIATE_TEST_SUITE_P(Core, Embedder, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

TEST(CoreUndelivered, CanBeMadeAnError) {
  Result r = job(2, FIXES_PATH, {"undelivered"}, 60, {"UCHARM_UNDELIVERED=error"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(has(r.err, "quiescence with undelivered messages (UCHARM_UNDELIVERED=error)")) << describe(r);
  EXPECT_TRUE(has(r.err, "2 message(s) for element (5)")) << describe(r);
}

struct BadUse {
  const char* mode;
  const char* message;
};

class MegatestErrors : public ::testing::TestWithParam<BadUse> {};

TEST_P(MegatestErrors, ReportedClearly) {
  Result r = job(2, MEGATEST_PATH, {GetParam().mode}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(has(r.err, GetParam().message)) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Core, MegatestErrors,
    ::testing::Values(
        BadUse{"oob", "index (1, 2, 0) is outside the chare array's bounds (2, 2, 2)"},
        BadUse{"redmismatch", "contributors disagree"},
        BadUse{"getoutside", "Future::get would block outside a thread"},
        BadUse{"charecontribute", "contribute() is for group and array elements, not singleton chares"},
        BadUse{"cbtype", "Main::cb_value takes (std::__cxx11::basic_string"},
        BadUse{"chanidtwice", "channel id 9 collides on PE 0"},
        BadUse{"gpumsg_nodest", "left device argument 0 (1000 bytes) without a destination"}),
    [](const auto& info) { return std::string(info.param.mode); });

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

TEST(CoreGpu, ChannelsBetweenChareswithCudaBuffers) {
  int n = 0;
#ifdef UCHARM_TEST_CUDA
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
#endif
  if (n == 0) GTEST_SKIP() << "no CUDA device visible (or a build without CUDA)";
  for (int pes : {1, 2}) {
    for (std::string mode : {"channels", "gpumsg"}) {
      Result r = job(pes, MEGATEST_PATH, {mode, "cuda"});
      EXPECT_EQ(r.code, 0) << describe(r);
      EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
    }
  }
}

TEST(Core, CkExitCodeReachesTheLauncher) {
  Result r = job(2, MEGATEST_PATH, {"exit"});
  EXPECT_EQ(r.code, 5) << describe(r);
}

TEST(Examples, HelloReducesACountToMain) {
  for (int n : {1, 2, 4}) {
    Result r = job(n, HELLO_PATH, {"10"});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "All 10 elements said hello")) << describe(r);
  }
}

TEST(Examples, TutorialFutures) {
  for (int n : {1, 2, 4}) {
    Result r = job(n, TUTORIAL_PATH, {});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "sum of squares 0..99 = 328350")) << describe(r);
  }
}

}  // namespace
