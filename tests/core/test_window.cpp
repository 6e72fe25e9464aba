// One-sided windows (tests/core/window.cpp) through ucharmrun at 2, 4 and 8 PEs (8 PEs
// oversubscribe the CI machines), the out-of-range error, and CUDA buffers with a GPU.
#include <gtest/gtest.h>

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, std::vector<std::string> args) {
  std::vector<std::string> argv = {UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "100", WINDOW_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, 110);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class CoreWindow : public ::testing::TestWithParam<int> {};

TEST_P(CoreWindow, RingOfWindowsPasses) {
  const int n = GetParam();
  Result r = job(n, {"ring"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "ring ok: " + std::to_string(std::max(3, 2 * n)) + " elements, 1000 notified puts"))
      << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Pes, CoreWindow, ::testing::Values(2, 4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

TEST(CoreWindow, OutOfRangePutStopsTheJobNamingTheWindowOffsetLengthAndSize) {
  Result r = job(2, {"range"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "CkWindow::put on the window from collection")) << describe(r);
  EXPECT_TRUE(has(r.err, "element (0) to collection")) << describe(r);
  EXPECT_TRUE(has(r.err, "offset 72252 + length 16 bytes reaches past the end of the peer's 72256-byte buffer"))
      << describe(r);
  EXPECT_FALSE(has(r.out, "was not refused")) << describe(r);
}

TEST(CoreWindowGpu, RingWithCudaBuffers) {
  int devs = 0;
#ifdef UCHARM_TEST_CUDA
  if (cudaGetDeviceCount(&devs) != cudaSuccess) devs = 0;
#endif
  if (devs == 0) GTEST_SKIP() << "no CUDA device visible (or a build without CUDA)";
  for (int n : {1, 2}) {
    Result r = job(n, {"ring", "cuda"});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "(CUDA buffers)")) << describe(r);
  }
}

}  // namespace
