// CUDA versions of the Jacobi3D kernels: one thread per cell of the box.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "kernels.h"

namespace jacobi::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "jacobi3d: %s failed: %s\n", what, cudaGetErrorString(e));
  std::fflush(stderr);
  std::abort();
}

cudaStream_t st(void* s) { return static_cast<cudaStream_t>(s); }

constexpr int kThreads = 256;
unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void update_kernel(Shape s, const double* in, double* out, Box b, std::size_t n) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (t >= n) return;
  int i, j, k;
  b.cell(t, i, j, k);
  const std::size_t c = s.at(i, j, k);
  out[c] = stencil(in, c, s.sy(), s.sz());
}

__global__ void pack_kernel(Shape s, const double* u, Box b, double* buf, std::size_t n) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (t >= n) return;
  int i, j, k;
  b.cell(t, i, j, k);
  buf[t] = u[s.at(i, j, k)];
}

__global__ void unpack_kernel(Shape s, double* u, Box b, const double* buf, std::size_t n) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (t >= n) return;
  int i, j, k;
  b.cell(t, i, j, k);
  u[s.at(i, j, k)] = buf[t];
}

}  // namespace

bool available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

void select_device(int pe) {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  check(cudaSetDevice(pe % n), "cudaSetDevice");
}

void* alloc(std::size_t bytes, void* s) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  check(cudaMemsetAsync(p, 0, bytes, st(s)), "cudaMemsetAsync");
  return p;
}
void* alloc_host(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMallocHost(&p, bytes ? bytes : 1), "cudaMallocHost");
  return p;
}
void free(void* p) { cudaFree(p); }
void free_host(void* p) { cudaFreeHost(p); }

void* stream_create() {
  cudaStream_t s = nullptr;
  // Non-blocking: the legacy default stream would also wait for the streams UCX uses.
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}
void stream_destroy(void* s) { cudaStreamDestroy(st(s)); }
void synchronize(void* s) { check(cudaStreamSynchronize(st(s)), "cudaStreamSynchronize"); }

void copy_to_host(void* dst, const void* src, std::size_t bytes, void* s) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st(s)), "cudaMemcpyAsync (to host)");
}
void copy_to_device(void* dst, const void* src, std::size_t bytes, void* s) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st(s)), "cudaMemcpyAsync (to device)");
}

void update(const Shape& s, const double* in, double* out, const Box& b, void* stream) {
  const std::size_t n = b.count();
  if (n) update_kernel<<<blocks_for(n), kThreads, 0, st(stream)>>>(s, in, out, b, n);
  check(cudaGetLastError(), "update kernel launch");
}
void pack(const Shape& s, const double* u, const Box& b, double* buf, void* stream) {
  const std::size_t n = b.count();
  if (n) pack_kernel<<<blocks_for(n), kThreads, 0, st(stream)>>>(s, u, b, buf, n);
  check(cudaGetLastError(), "pack kernel launch");
}
void unpack(const Shape& s, double* u, const Box& b, const double* buf, void* stream) {
  const std::size_t n = b.count();
  if (n) unpack_kernel<<<blocks_for(n), kThreads, 0, st(stream)>>>(s, u, b, buf, n);
  check(cudaGetLastError(), "unpack kernel launch");
}

}  // namespace jacobi::cuda
