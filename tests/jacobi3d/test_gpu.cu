// Jacobi3D's CUDA helpers where the order of GPU work matters (built with CUDA; the
// tests skip where no GPU is visible).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels.h"

using namespace jacobi;

namespace {

// Spins until the host sets *flag, or `limit_ns` has passed (so that no mistake can hang
// the test): holds whatever stream it runs on busy for as long as the host wants.
__global__ void hold(const volatile int* flag, std::uint64_t limit_ns) {
  std::uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (!*flag && t - t0 < limit_ns);
}

}  // namespace

// Where PEs share a GPU, the zeroing of a new buffer was queued on the legacy default
// stream, which a non-blocking stream is not ordered with: it ran after the block's
// boundary values were copied in on the block's stream and wiped them (Jacobi3D
// --verify failed with 2 PEs on one GPU). Here the legacy stream is held busy while a
// buffer is allocated and filled on a non-blocking stream: the data must survive.
TEST(JacobiGpu, ZeroingOfANewBufferIsOrderedOnItsStream) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device visible (or no GPU driver)";
  cuda::select_device(0);
  void* s = cuda::stream_create();
  int* flag = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *flag = 0;
  int* dflag = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0), cudaSuccess);
  hold<<<1, 1>>>(dflag, 5'000'000'000ull);  // the legacy default stream, busy up to 5 s
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);

  constexpr std::size_t n = 1 << 16;
  auto* d = static_cast<double*>(cuda::alloc(n * sizeof(double), s));
  std::vector<double> h(n, 1.5);
  cuda::copy_to_device(d, h.data(), n * sizeof(double), s);
  cuda::synchronize(s);
  *reinterpret_cast<volatile int*>(flag) = 1;  // release the legacy stream
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<double> back(n, 0.0);
  cuda::copy_to_host(back.data(), d, n * sizeof(double), s);
  cuda::synchronize(s);
  std::size_t kept = 0;
  for (double v : back) kept += v == 1.5;
  EXPECT_EQ(kept, n) << "the buffer's zeroing ran after the data was copied in";

  cuda::free(d);
  cudaFreeHost(flag);
  cuda::stream_destroy(s);
}
