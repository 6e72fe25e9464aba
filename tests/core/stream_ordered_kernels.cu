// Kernels of the stream-ordered transfer test (stream_ordered_kernels.h).
#include "stream_ordered_kernels.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sotest {
namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "stream_ordered test: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

__device__ void delay(unsigned ns) {
  const long long t0 = clock64();
  // ~1.5-2 GHz: 2 cycles per ns is generous enough for "slow".
  while (clock64() - t0 < 2LL * ns) {
  }
}

__global__ void fill(std::uint64_t* buf, std::size_t n, std::uint64_t value, unsigned delay_ns) {
  if (threadIdx.x == 0 && blockIdx.x == 0) delay(delay_ns);
  __syncthreads();
  for (std::size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) buf[k] = value + k;
}

__global__ void reply(const std::uint64_t* in, std::uint64_t* out, std::size_t n, unsigned delay_ns) {
  if (threadIdx.x == 0 && blockIdx.x == 0) delay(delay_ns);
  __syncthreads();
  for (std::size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) out[k] = in[k] + 1;
}

__global__ void check(std::uint64_t* buf, std::size_t n, std::uint64_t value, int* errors) {
  for (std::size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    if (buf[k] != value + k) atomicAdd(errors, 1);
    buf[k] = 0;
  }
}

unsigned blocks(std::size_t n) { return static_cast<unsigned>(n < 256 * 64 ? (n + 255) / 256 : 64); }

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}
void set_device(int d) { ok(cudaSetDevice(d), "cudaSetDevice"); }
void preload() {
  cudaFuncAttributes a;
  ok(cudaFuncGetAttributes(&a, fill), "cudaFuncGetAttributes");
  ok(cudaFuncGetAttributes(&a, reply), "cudaFuncGetAttributes");
  ok(cudaFuncGetAttributes(&a, check), "cudaFuncGetAttributes");
}
void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  ok(cudaMalloc(&p, bytes), "cudaMalloc");
  ok(cudaMemset(p, 0, bytes), "cudaMemset");
  // cudaMemset runs on the legacy stream, which does not order the non-blocking streams'
  // work after it: wait for it here (before any stream waits for this PE).
  ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return p;
}
void device_free(void* p) { cudaFree(p); }
void* host_alloc(std::size_t bytes) {
  void* p = nullptr;
  ok(cudaMallocHost(&p, bytes), "cudaMallocHost");
  std::memset(p, 0, bytes);
  return p;
}
void host_free(void* p) { cudaFreeHost(p); }
void* stream_create() {
  cudaStream_t s = nullptr;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}
void stream_destroy(void* s) { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
std::string stream_sync(void* s) {
  const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(s));
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}
void launch_fill(void* s, std::uint64_t* buf, std::size_t n, std::uint64_t value, unsigned delay_ns) {
  fill<<<blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(buf, n, value, delay_ns);
  ok(cudaGetLastError(), "fill kernel");
}
void launch_reply(void* s, const std::uint64_t* in, std::uint64_t* out, std::size_t n, unsigned delay_ns) {
  reply<<<blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(in, out, n, delay_ns);
  ok(cudaGetLastError(), "reply kernel");
}
void launch_check(void* s, std::uint64_t* buf, std::size_t n, std::uint64_t value, int* errors) {
  check<<<blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(buf, n, value, errors);
  ok(cudaGetLastError(), "check kernel");
}
int read_int(const int* d) {
  int v = 0;
  ok(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return v;
}

}  // namespace sotest
