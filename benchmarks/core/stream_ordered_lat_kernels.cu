// CUDA side of the stream-ordered latency benchmark (stream_ordered_lat_kernels.h).
#include "stream_ordered_lat_kernels.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace solat {
namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "stream_ordered_lat: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

__global__ void bump(std::uint64_t* p) { *p += 1; }

}  // namespace

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
void set_device(int d) { ok(cudaSetDevice(d), "cudaSetDevice"); }
void preload() {
  cudaFuncAttributes a;
  ok(cudaFuncGetAttributes(&a, bump), "cudaFuncGetAttributes");
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
void* stream_create() {
  cudaStream_t s = nullptr;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}
void* event_create() {
  cudaEvent_t e = nullptr;
  ok(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}
void event_record(void* e, void* s) { ok(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)), "cudaEventRecord"); }
float event_ms(void* a, void* b) {
  ok(cudaEventSynchronize(static_cast<cudaEvent_t>(b)), "cudaEventSynchronize");
  float ms = 0;
  ok(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)), "cudaEventElapsedTime");
  return ms;
}
void stream_sync(void* s) { ok(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize"); }
void launch_bump(void* s, std::uint64_t* p) {
  bump<<<1, 1, 0, static_cast<cudaStream_t>(s)>>>(p);
  ok(cudaGetLastError(), "bump kernel");
}
std::uint64_t read_u64(const std::uint64_t* p) {
  std::uint64_t v = 0;
  ok(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return v;
}

double peer_chain_us(int dev_a, int dev_b, int iters, int warm) {
  int prev = 0;
  ok(cudaGetDevice(&prev), "cudaGetDevice");
  cudaStream_t s[2];
  cudaEvent_t ev[2], t0, t1;
  std::uint64_t* buf[2];
  const int dev[2] = {dev_a, dev_b};
  for (int i = 0; i < 2; ++i) {
    ok(cudaSetDevice(dev[i]), "cudaSetDevice");
    if (dev_a != dev_b) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(dev[1 - i], 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else ok(e, "cudaDeviceEnablePeerAccess");
    }
    ok(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), "cudaStreamCreate");
    ok(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming), "cudaEventCreate");
    ok(cudaMalloc(&buf[i], 8), "cudaMalloc");
    ok(cudaMemset(buf[i], 0, 8), "cudaMemset");
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the memset is not ordered before s[i]'s work
  }
  ok(cudaSetDevice(dev_a), "cudaSetDevice");
  ok(cudaEventCreate(&t0), "cudaEventCreate");
  ok(cudaEventCreate(&t1), "cudaEventCreate");
  for (int i = 0; i < iters; ++i) {
    if (i == warm) ok(cudaEventRecord(t0, s[0]), "cudaEventRecord");
    // a: bump, copy to b, signal; b waits, bumps, copies back, signals; a waits.
    ok(cudaSetDevice(dev_a), "cudaSetDevice");
    bump<<<1, 1, 0, s[0]>>>(buf[0]);
    ok(cudaMemcpyPeerAsync(buf[1], dev_b, buf[0], dev_a, 8, s[0]), "cudaMemcpyPeerAsync");
    ok(cudaEventRecord(ev[0], s[0]), "cudaEventRecord");
    ok(cudaSetDevice(dev_b), "cudaSetDevice");
    ok(cudaStreamWaitEvent(s[1], ev[0], 0), "cudaStreamWaitEvent");
    bump<<<1, 1, 0, s[1]>>>(buf[1]);
    ok(cudaMemcpyPeerAsync(buf[0], dev_a, buf[1], dev_b, 8, s[1]), "cudaMemcpyPeerAsync");
    ok(cudaEventRecord(ev[1], s[1]), "cudaEventRecord");
    ok(cudaStreamWaitEvent(s[0], ev[1], 0), "cudaStreamWaitEvent");
  }
  ok(cudaSetDevice(dev_a), "cudaSetDevice");
  ok(cudaEventRecord(t1, s[0]), "cudaEventRecord");
  ok(cudaEventSynchronize(t1), "cudaEventSynchronize");
  float ms = 0;
  ok(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
  std::uint64_t v = 0;
  ok(cudaMemcpy(&v, buf[0], 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (v != 2ull * static_cast<std::uint64_t>(iters)) std::fprintf(stderr, "peer chain: value %llu, expected %llu\n",
                                                                    static_cast<unsigned long long>(v), 2ull * iters);
  for (int i = 0; i < 2; ++i) {
    ok(cudaSetDevice(dev[i]), "cudaSetDevice");
    cudaStreamDestroy(s[i]);
    cudaEventDestroy(ev[i]);
    cudaFree(buf[i]);
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  ok(cudaSetDevice(prev), "cudaSetDevice");
  return ms * 1000.0 / (2.0 * (iters - warm));
}

}  // namespace solat
