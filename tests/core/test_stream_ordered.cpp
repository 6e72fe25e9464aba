// Stream-ordered channel transfers (tests/core/stream_ordered.cpp) through ucharmrun: the
// misuse cases run everywhere (CI has no GPU); the GPU cases (StreamOrderedGpu.*) skip
// without a CUDA device.
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
  return run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "40", STREAM_ORDERED_PATH, mode}, 50, env);
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

TEST(StreamOrdered, SendBeforeTheChannelIsReadyIsAnError) {
  Result r = job(2, "notready");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out + r.err, "CkChannel::send_enqueue before the peer end's id has arrived")) << describe(r);
}

// Without CUDA (this build, this machine) or without a current context (a GPU machine: the
// program made no CUDA call), the reason is named.
TEST(StreamOrdered, WithoutCudaIsAClearError) {
  Result r = job(1, "nocontext");
  EXPECT_NE(r.code, 0) << describe(r);
  const std::string all = r.out + r.err;
  EXPECT_TRUE(has(all, "CmiChannelRecvEnqueue on CUDA stream")) << describe(r);
  EXPECT_TRUE(has(all, "CUDA is not available in this process") || has(all, "ucharm was built without CUDA") ||
              has(all, "no CUDA context is current on this PE"))
      << describe(r);
}

// Two PEs on two GPUs where there are two (on one otherwise).
TEST(StreamOrderedGpu, ChainTwoPes) {
  NEED_GPUS(1);
  Result r = job(2, "gpu");
  std::printf("two PEs on %d GPU(s): %.2f s\n%s", gpus() >= 2 ? 2 : 1, r.seconds, r.out.c_str());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "stream ordered ok")) << describe(r);
  EXPECT_TRUE(has(r.out, "0 stream operations still open")) << describe(r);
}

TEST(StreamOrderedGpu, ChainTwoPesSharingOneGpu) {
  NEED_GPUS(1);
  Result r = job(2, "gpu", {"SO_DEVICE=0"});
  std::printf("two PEs on one GPU: %.2f s\n", r.seconds);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "stream ordered ok")) << describe(r);
}

TEST(StreamOrderedGpu, ChainOnePe) {  // both ends in one process, both streams on one GPU
  NEED_GPUS(1);
  Result r = job(1, "gpu", {"SO_ROUNDS=200"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "stream ordered ok")) << describe(r);
}

// A send on a stream before the channel is ready takes its stream point at the call: the
// stream may be destroyed right after (the send leaves later, when the peer's id is in).
TEST(StreamOrderedGpu, SendOnAStreamBeforeTheChannelIsReady) {
  NEED_GPUS(1);
  for (int n : {1, 2}) {
    Result r = job(n, "early");
    EXPECT_EQ(r.code, 0) << n << " PEs: " << describe(r);
    EXPECT_TRUE(has(r.out, "early: 0 of")) << n << " PEs: " << describe(r);
    EXPECT_TRUE(has(r.out, "stream ordered ok")) << n << " PEs: " << describe(r);
  }
}

// The host-function fallback (as on a GPU without 64-bit stream memory operations).
TEST(StreamOrderedGpu, HostFunctionFallbackTwoPes) {
  NEED_GPUS(1);
  Result r = job(2, "gpu", {"UCHARM_STREAM_MEMOPS=0", "SO_ROUNDS=200"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "stream ordered ok")) << describe(r);
}

}  // namespace
