// Kernels and CUDA calls of the Message Roofline benchmark (see roofline.h).
#include "roofline.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace rfbench {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "roofline: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One synchronization per round: n puts, then the signal; the second side waits for the
// first's signal, then answers with the same pattern. With a grid, every block copies its
// share of each message, then adds 1 to the peer's flag, and every block waits for the sum
// (a round's flag value is base + blocks * round), so no block starts a round before the
// peer's whole answer to the previous one is there.
__global__ void __launch_bounds__(1024, 1) put_pingpong(ck::DeviceWindowHandle h, bool first, int n, unsigned long long bytes, int warm,
                             int iters, unsigned long long base, const unsigned char* src, unsigned long long* ns_out) {
  using ck::device::Coop;
  const bool grid = gridDim.x > 1;
  const bool timer = blockIdx.x == 0 && threadIdx.x == 0;
  unsigned long long t0 = 0;
  for (int i = 1; i <= warm + iters; ++i) {
    if (timer && i == warm + 1) t0 = now_ns();
    const unsigned long long v = base + static_cast<unsigned long long>(gridDim.x) * i;
    if (!first) ck::device::wait<Coop::Block>(h, v);
    for (int k = 0; k < n; ++k) {
      const unsigned long long off = static_cast<unsigned long long>(k) * bytes;
      if (grid) ck::device::put<Coop::Grid>(h, off, src + off, bytes);
      else ck::device::put<Coop::Block>(h, off, src + off, bytes);
    }
    // put<> ended with __syncthreads: the block's writes are ordered before thread 0's signal.
    if (threadIdx.x == 0) {
      if (grid) ck::device::signal_add(h, 1);
      else ck::device::signal(h, v);
    }
    if (first) ck::device::wait<Coop::Block>(h, v);
  }
  if (first && timer) *ns_out = now_ns() - t0;
}

}  // namespace

int device_count(const char** why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount found none";
  return n;
}
void set_device(int d) { check(cudaSetDevice(d), "cudaSetDevice"); }
int multiprocessors(int d) {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d), "cudaDeviceGetAttribute");
  return sms;
}
void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  check(cudaMemset(p, 1, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaMemset");
  return p;
}
void device_free(void* p) noexcept {
  if (p) cudaFree(p);
}
void* stream_create() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}
void stream_sync(void* s) { check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "work on the stream"); }
void enable_peer_access(int peer) {
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the (non-sticky) error so later checks do not see it
    return;
  }
  check(e, "cudaDeviceEnablePeerAccess");
}
std::uint64_t read_u64(const std::uint64_t* d) {
  std::uint64_t v = 0;
  check(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost), "reading a result");
  return v;
}

void launch_put_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int blocks, int n, std::size_t bytes,
                         int warm, int iters, std::uint64_t base, const void* src, std::uint64_t* ns_out) {
  const int threads = blocks > 1 ? 1024 : 256;
  put_pingpong<<<blocks, threads, 0, static_cast<cudaStream_t>(s)>>>(
      h, first, n, bytes, warm, iters, base, static_cast<const unsigned char*>(src),
      reinterpret_cast<unsigned long long*>(ns_out));
  check(cudaGetLastError(), "launching put_pingpong");
}

void* event_create() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}
void event_destroy(void* e) noexcept {
  if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}
void event_record(void* e, void* s) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)), "cudaEventRecord");
}
double event_elapsed_us(void* a, void* b) {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(b)), "timed work");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)), "cudaEventElapsedTime");
  return ms * 1e3;
}

void memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t bytes, void* s) {
  check(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, static_cast<cudaStream_t>(s)), "cudaMemcpyPeerAsync");
}

}  // namespace rfbench
