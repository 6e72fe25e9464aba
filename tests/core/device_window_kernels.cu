// Kernels of the device-window test program: every call of ucharm/device/window.cuh that
// a test needs, with its debug checks on.
#define UCHARM_DEVICE_WINDOW_CHECK 1
#include "device_window_kernels.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace dwtest {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "device_window test: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

__device__ unsigned char pattern(unsigned long long i, unsigned long long round, int side) {
  return static_cast<unsigned char>(i * 7 + round * 13 + side * 101);
}

__device__ void fill_group(unsigned char* p, unsigned long long n, unsigned long long round, int side) {
  for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) p[i] = pattern(i, round, side);
  __syncthreads();
}

__device__ void check_group(const unsigned char* p, unsigned long long n, unsigned long long round, int side,
                            int* errors) {
  int bad = 0;
  for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) bad += p[i] != pattern(i, round, side);
  if (bad) atomicAdd(errors, bad);
  __syncthreads();
}

// One block. Coop::Thread and Warp are called by thread 0 / warp 0 only: the rest of the
// block waits at the barriers of fill and check.
template <ck::device::Coop C>
__global__ void pingpong(ck::DeviceWindowHandle h, bool first, int rounds, unsigned long long bytes,
                         unsigned long long base, unsigned char* scratch, int* errors) {
  using ck::device::Coop;
  const int me = first ? 0 : 1;
  const bool active = C == Coop::Block || (C == Coop::Warp ? threadIdx.x < 32 : threadIdx.x == 0);
  for (int r = 1; r <= rounds; ++r) {
    const unsigned long long v = base + r;
    if (!first) {
      if (active) ck::device::wait<C>(h, v);
      __syncthreads();
      check_group(h.local, bytes, v, 0, errors);
    }
    fill_group(scratch, bytes, v, me);
    if (active) ck::device::put_signal<C>(h, 0, scratch, bytes, v);
    if (first) {
      if (active) ck::device::wait<C>(h, v);
      __syncthreads();
      check_group(h.local, bytes, v, 1, errors);
    }
  }
}

__global__ void fill_k(unsigned char* p, unsigned long long n, unsigned long long round, int side) {
  fill_group(p, n, round, side);
}
__global__ void check_k(const unsigned char* p, unsigned long long n, unsigned long long round, int side,
                        int* errors) {
  check_group(p, n, round, side, errors);
}
__global__ void wait_check_k(ck::DeviceWindowHandle h, unsigned long long value, unsigned long long offset,
                             unsigned long long n, unsigned long long round, int side, int* errors) {
  ck::device::wait<ck::device::Coop::Block>(h, value);
  check_group(ck::device::local<unsigned char>(h) + offset, n, round, side, errors);
}
__global__ void put_k(ck::DeviceWindowHandle h, unsigned long long offset, unsigned long long n, const void* src) {
  ck::device::put<ck::device::Coop::Thread>(h, offset, src, n);
}

}  // namespace

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
void set_device(int d) { check(cudaSetDevice(d), "cudaSetDevice"); }
void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  check(cudaMemset(p, 0, bytes), "cudaMemset");
  return p;
}
void device_free(void* p) { cudaFree(p); }
void* stream_create() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}
void stream_destroy(void* s) { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
std::string stream_sync(void* s) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(s));
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

void launch_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int rounds, std::size_t bytes, int coop,
                     unsigned long long base, void* scratch, int* errors) {
  auto st = static_cast<cudaStream_t>(s);
  auto sc = static_cast<unsigned char*>(scratch);
  using ck::device::Coop;
  if (coop == 0) pingpong<Coop::Thread><<<1, 128, 0, st>>>(h, first, rounds, bytes, base, sc, errors);
  else if (coop == 1) pingpong<Coop::Warp><<<1, 128, 0, st>>>(h, first, rounds, bytes, base, sc, errors);
  else pingpong<Coop::Block><<<1, 128, 0, st>>>(h, first, rounds, bytes, base, sc, errors);
  check(cudaGetLastError(), "launching the ping-pong kernel");
}
void launch_fill(void* s, void* src, std::size_t bytes, unsigned long long round, int side) {
  fill_k<<<1, 256, 0, static_cast<cudaStream_t>(s)>>>(static_cast<unsigned char*>(src), bytes, round, side);
  check(cudaGetLastError(), "launching fill");
}
void launch_check(void* s, const void* buf, std::size_t bytes, unsigned long long round, int side, int* errors) {
  check_k<<<1, 256, 0, static_cast<cudaStream_t>(s)>>>(static_cast<const unsigned char*>(buf), bytes, round, side,
                                                        errors);
  check(cudaGetLastError(), "launching check");
}
void launch_wait_check(void* s, ck::DeviceWindowHandle h, unsigned long long value, std::size_t offset,
                       std::size_t bytes, unsigned long long round, int side, int* errors) {
  wait_check_k<<<1, 256, 0, static_cast<cudaStream_t>(s)>>>(h, value, offset, bytes, round, side, errors);
  check(cudaGetLastError(), "launching wait_check");
}
void launch_put(void* s, ck::DeviceWindowHandle h, std::size_t offset, std::size_t bytes, const void* src) {
  put_k<<<1, 1, 0, static_cast<cudaStream_t>(s)>>>(h, offset, bytes, src);
  check(cudaGetLastError(), "launching put");
}
int read_int(const int* d) {
  int v = 0;
  check(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost), "reading a result");
  return v;
}

}  // namespace dwtest
