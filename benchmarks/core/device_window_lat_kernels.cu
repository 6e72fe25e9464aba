// Kernels and CUDA timing of the device-window benchmark (see device_window_lat.h).
#include "device_window_lat.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <chrono>
#include <cstdlib>

namespace dwbench {
namespace {

void ck_(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "device_window_lat: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void window_pp(ck::DeviceWindowHandle h, bool first, int warm, int iters, unsigned long long base,
                          const void* src, unsigned long long* ns_out) {
  unsigned long long t0 = 0;
  for (int i = 1; i <= warm + iters; ++i) {
    if (i == warm + 1) t0 = now_ns();
    const unsigned long long v = base + i;
    if (first) {
      ck::device::put_signal(h, 0, src, 8, v);
      ck::device::wait(h, v);
    } else {
      ck::device::wait(h, v);
      ck::device::put_signal(h, 0, src, 8, v);
    }
  }
  if (first) *ns_out = now_ns() - t0;
}

// Own flag ping-pong on the window's mapping: volatile store + system fence, volatile poll.
__global__ void raw_pp(volatile unsigned long long* mine, volatile unsigned long long* theirs, bool first, int warm,
                       int iters, unsigned long long base, unsigned long long* ns_out) {
  unsigned long long t0 = 0;
  for (int i = 1; i <= warm + iters; ++i) {
    if (i == warm + 1) t0 = now_ns();
    const unsigned long long v = base + i;
    if (first) {
      *theirs = v;
      __threadfence_system();
      while (*mine < v) {
      }
    } else {
      while (*mine < v) {
      }
      *theirs = v;
      __threadfence_system();
    }
  }
  if (first) *ns_out = now_ns() - t0;
}

__global__ void grid_put(ck::DeviceWindowHandle h, const void* src, unsigned long long bytes) {
  ck::device::put<ck::device::Coop::Grid>(h, 0, src, bytes);
}

}  // namespace

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
void set_device(int d) { ck_(cudaSetDevice(d), "cudaSetDevice"); }
void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  ck_(cudaMalloc(&p, bytes), "cudaMalloc");
  ck_(cudaMemset(p, 0, bytes), "cudaMemset");
  ck_(cudaDeviceSynchronize(), "cudaMemset");
  return p;
}
void* stream_create() {
  cudaStream_t s = nullptr;
  ck_(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}
void stream_sync(void* s) { ck_(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "a benchmark kernel"); }

void launch_window_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int warm, int iters,
                            unsigned long long base, const void* src, unsigned long long* ns_out) {
  window_pp<<<1, 1, 0, static_cast<cudaStream_t>(s)>>>(h, first, warm, iters, base, src, ns_out);
  ck_(cudaGetLastError(), "launching window_pp");
}
void launch_raw_pingpong(void* s, ck::DeviceWindowHandle h, std::size_t raw_off, bool first, int warm, int iters,
                         unsigned long long base, unsigned long long* ns_out) {
  auto mine = reinterpret_cast<unsigned long long*>(h.local + raw_off);
  auto theirs = reinterpret_cast<unsigned long long*>(h.remote + raw_off);
  raw_pp<<<1, 1, 0, static_cast<cudaStream_t>(s)>>>(mine, theirs, first, warm, iters, base, ns_out);
  ck_(cudaGetLastError(), "launching raw_pp");
}
unsigned long long read_u64(const unsigned long long* d) {
  unsigned long long v = 0;
  ck_(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost), "reading a result");
  return v;
}

double peer_chain_us(int d0, int d1, std::size_t bytes, int hops) {
  int dev[2] = {d0, d1};
  void* buf[2];
  cudaStream_t s[2];
  cudaEvent_t ev[2];
  for (int k = 0; k < 2; ++k) {
    ck_(cudaSetDevice(dev[k]), "cudaSetDevice");
    if (d0 != d1) {
      cudaError_t e = cudaDeviceEnablePeerAccess(dev[1 - k], 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else ck_(e, "cudaDeviceEnablePeerAccess");
    }
    ck_(cudaMalloc(&buf[k], bytes), "cudaMalloc");
    ck_(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking), "cudaStreamCreate");
    ck_(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming), "cudaEventCreate");
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < hops; ++i) {
    const int a = i & 1, b = 1 - a;
    ck_(cudaSetDevice(dev[a]), "cudaSetDevice");
    ck_(cudaMemcpyPeerAsync(buf[b], dev[b], buf[a], dev[a], bytes, s[a]), "cudaMemcpyPeerAsync");
    ck_(cudaEventRecord(ev[a], s[a]), "cudaEventRecord");
    ck_(cudaSetDevice(dev[b]), "cudaSetDevice");
    ck_(cudaStreamWaitEvent(s[b], ev[a], 0), "cudaStreamWaitEvent");
  }
  for (int k = 0; k < 2; ++k) ck_(cudaStreamSynchronize(s[k]), "peer chain");
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  for (int k = 0; k < 2; ++k) {
    cudaSetDevice(dev[k]);
    cudaFree(buf[k]);
    cudaStreamDestroy(s[k]);
    cudaEventDestroy(ev[k]);
  }
  cudaSetDevice(d0);
  return us / hops;
}

Timer timer_start(void* s) {
  Timer t;
  cudaEvent_t a, b;
  ck_(cudaEventCreate(&a), "cudaEventCreate");
  ck_(cudaEventCreate(&b), "cudaEventCreate");
  ck_(cudaEventRecord(a, static_cast<cudaStream_t>(s)), "cudaEventRecord");
  t.start = a;
  t.stop = b;
  return t;
}
double timer_stop_ms(void* s, Timer& t) {
  auto a = static_cast<cudaEvent_t>(t.start), b = static_cast<cudaEvent_t>(t.stop);
  ck_(cudaEventRecord(b, static_cast<cudaStream_t>(s)), "cudaEventRecord");
  ck_(cudaEventSynchronize(b), "timed work");
  float ms = 0;
  ck_(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

double kernel_put_gbs(void* s, ck::DeviceWindowHandle h, const void* src, std::size_t bytes, int reps) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  auto st = static_cast<cudaStream_t>(s);
  grid_put<<<2 * sms, 1024, 0, st>>>(h, src, bytes);  // warm-up
  Timer t = timer_start(s);
  for (int r = 0; r < reps; ++r) grid_put<<<2 * sms, 1024, 0, st>>>(h, src, bytes);
  ck_(cudaGetLastError(), "launching grid_put");
  return bytes * double(reps) / (timer_stop_ms(s, t) * 1e6);
}

double memcpy_peer_gbs(int d0, int d1, std::size_t bytes, int reps) {
  void *a = nullptr, *b = nullptr;
  ck_(cudaSetDevice(d1), "cudaSetDevice");
  ck_(cudaMalloc(&b, bytes), "cudaMalloc");
  ck_(cudaSetDevice(d0), "cudaSetDevice");
  ck_(cudaMalloc(&a, bytes), "cudaMalloc");
  if (d0 != d1) {
    cudaError_t e = cudaDeviceEnablePeerAccess(d1, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    else ck_(e, "cudaDeviceEnablePeerAccess");
  }
  cudaStream_t s;
  ck_(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  ck_(cudaMemcpyPeerAsync(b, d1, a, d0, bytes, s), "cudaMemcpyPeerAsync");  // warm-up
  Timer t = timer_start(s);
  for (int r = 0; r < reps; ++r) ck_(cudaMemcpyPeerAsync(b, d1, a, d0, bytes, s), "cudaMemcpyPeerAsync");
  const double gbs = bytes * double(reps) / (timer_stop_ms(s, t) * 1e6);
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaSetDevice(d1);
  cudaFree(b);
  cudaSetDevice(d0);
  return gbs;
}

}  // namespace dwbench
