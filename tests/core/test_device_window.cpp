// Device windows (tests/core/device_window.cpp) through ucharmrun: the GPU cases skip
// without a CUDA device; the host-side misuse cases run everywhere.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, const std::string& mode, const std::vector<std::string>& env = {}) {
  return run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "60", DEVICE_WINDOW_PATH, mode}, 90, env);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
int gpus() {
  int n = 0;
#ifdef UCHARM_TEST_CUDA
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
#endif
  return n;
}
#define NEED_GPUS(k) \
  if (gpus() < (k)) GTEST_SKIP() << "needs " << (k) << " CUDA device(s); " << gpus() << " visible (or a build without CUDA)"

TEST(DeviceWindow, HostPointerIsRefusedAtExpose) {
  Result r = job(2, "hostptr");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "is not CUDA device memory")) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "device window between collection")) << describe(r);
}

TEST(DeviceWindow, ClosedWindowIsAnError) {
  Result r = job(1, "closed");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "CkDeviceWindow::signal_on_stream on a window that is closed")) << describe(r);
}

// Two PEs on two GPUs where there are two (on one otherwise: gpu-check's shared run).
TEST(DeviceWindowGpu, TwoPes) {
  NEED_GPUS(1);
  Result r = job(2, "gpu");
  std::printf("two PEs on %d GPU(s): %.2f s\n", gpus() >= 2 ? 2 : 1, r.seconds);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "device window ok")) << describe(r);
  EXPECT_TRUE(has(r.out, "CUDA IPC")) << describe(r);
}

TEST(DeviceWindowGpu, TwoPesSharingOneGpu) {
  NEED_GPUS(1);
  Result r = job(2, "gpu", {"DW_DEVICE=0"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "device window ok")) << describe(r);
  std::printf("two PEs on one GPU: %.2f s\n", r.seconds);
}

TEST(DeviceWindowGpu, OnePeSameProcess) {
  NEED_GPUS(1);
  Result r = job(1, "gpu");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "device window ok")) << describe(r);
  EXPECT_TRUE(has(r.out, "same process")) << describe(r);
}

TEST(DeviceWindowGpu, HandleBeforeMappedIsAnError) {
  NEED_GPUS(1);
  Result r = job(2, "notready");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "device_handle on the device window")) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "before it is mapped")) << describe(r);
}

TEST(DeviceWindowGpu, KernelPutOutOfRangeTraps) {
  NEED_GPUS(1);
  Result r = job(2, "kernel_oob");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "a device-window kernel failed")) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "put of 8 bytes at offset 1048572 is outside the peer's buffer of 1048576 bytes"))
      << describe(r);
}

TEST(DeviceWindowGpu, StreamPutOutOfRangeIsAnError) {
  NEED_GPUS(1);
  Result r = job(2, "stream_oob");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "put_on_stream of 1 bytes at offset 1048576 is outside the peer's buffer"))
      << describe(r);
}

}  // namespace
