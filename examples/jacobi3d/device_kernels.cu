// --mode device kernels: the shell update that writes the new boundary layers straight
// into the neighbours' ghost buffers (device windows) and signals them; see device_mode.h.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "device_kernels.h"

namespace jacobi::devmode {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "jacobi3d --mode device: %s failed: %s\n", what, cudaGetErrorString(e));
  std::fflush(stderr);
  std::abort();
}

constexpr int kThreads = 256;
unsigned blocks_for(std::size_t n) { return n ? static_cast<unsigned>((n + kThreads - 1) / kThreads) : 1; }

// The end of every kernel here (all threads call it): once all CUDA blocks have written
// their cells, the last one to finish signals `round` on every link. Each block's thread 0
// fences at system scope after the block barrier (so the block's remote stores come first)
// and counts itself in; the block that counts last fences again and signals (a release
// store of the flag: the neighbour's stream wait, or a kernel's wait, then sees every
// block's stores). One signal per link and round, however many blocks: flag values are
// round numbers. The counter is reset for the next kernel on this stream, which starts
// only after this one has ended.
__device__ void finish(unsigned* counter, const Links& links, unsigned long long round, unsigned long long* progress,
                       unsigned long long done) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();
  if (atomicAdd(counter, 1u) != gridDim.x - 1) return;
  *counter = 0;
  __threadfence_system();
  for (int f = 0; f < kFaces; ++f)
    if (links.has[f]) ck::device::signal(links.win[f], round);
  if (progress) *reinterpret_cast<volatile unsigned long long*>(progress) = done;
}

__global__ void prime_kernel(Shape s, const double* u, BoxList sends, Links links, int half, unsigned* counter) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (t < sends.count()) {
    int f = 0;
    while (t >= sends.off[f + 1]) ++f;
    int i, j, k;
    sends.box[f].cell(t - sends.off[f], i, j, k);
    double* dst = reinterpret_cast<double*>(links.win[f].remote) + half * face_count(s, f);
    dst[face_index(s, f, i, j, k)] = u[s.at(i, j, k)];
  }
  finish(counter, links, kPrimeRound, nullptr, 0);
}

__global__ void shell_kernel(Shape s, const double* in, double* out, BoxList shell, Links links, int rhalf, int whalf,
                             unsigned long long round, unsigned* counter, unsigned long long* progress,
                             unsigned long long done) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (t < shell.count()) {
    int i, j, k;
    shell.cell(t, i, j, k);
    Ghosts gh;
    for (int f = 0; f < kFaces; ++f)
      if (links.has[f]) gh.g[f] = reinterpret_cast<const double*>(links.win[f].local) + rhalf * face_count(s, f);
    const double v = stencil_ghosts(s, in, gh, i, j, k);
    out[s.at(i, j, k)] = v;
    for (int f = 0; f < kFaces; ++f)
      if (links.has[f] && on_layer(s, f, i, j, k))
        (reinterpret_cast<double*>(links.win[f].remote) + whalf * face_count(s, f))[face_index(s, f, i, j, k)] = v;
  }
  finish(counter, links, round, progress, done);
}

}  // namespace

void launch_prime(const Shape& s, const double* u, const BoxList& sends, const Links& links, int half,
                  unsigned* counter, void* stream) {
  prime_kernel<<<blocks_for(sends.count()), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(s, u, sends, links, half,
                                                                                              counter);
  check(cudaGetLastError(), "priming kernel launch");
}

void launch_shell(const Shape& s, const double* in, double* out, const BoxList& shell, const Links& links, long it,
                  std::uint64_t round, unsigned* counter, unsigned long long* progress, void* stream) {
  shell_kernel<<<blocks_for(shell.count()), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      s, in, out, shell, links, read_half(it), write_half(it), round, counter, progress,
      static_cast<unsigned long long>(it + 1));
  check(cudaGetLastError(), "shell kernel launch");
}

unsigned* alloc_counter(void* stream) {
  void* p = nullptr;
  check(cudaMalloc(&p, sizeof(unsigned)), "cudaMalloc (counter)");
  check(cudaMemsetAsync(p, 0, sizeof(unsigned), static_cast<cudaStream_t>(stream)), "cudaMemsetAsync (counter)");
  return static_cast<unsigned*>(p);
}
void free_counter(unsigned* c) { cudaFree(c); }

unsigned long long* alloc_progress(unsigned long long initial) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, sizeof(unsigned long long), cudaHostAllocMapped), "cudaHostAlloc (progress word)");
  *static_cast<unsigned long long*>(p) = initial;
  return static_cast<unsigned long long*>(p);
}
void free_progress(unsigned long long* p) { cudaFreeHost(p); }

}  // namespace jacobi::devmode
