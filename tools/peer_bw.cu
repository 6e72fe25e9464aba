// cudaMemcpyPeerAsync bandwidth GPU0 -> GPU1 (the peer figure for the OSU bandwidth table):
// back-to-back copies on one stream, timed with events.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) { std::printf("peer_bw: needs 2 GPUs\n"); return 1; }
  cudaSetDevice(0);
  cudaDeviceEnablePeerAccess(1, 0);
  for (size_t size : {size_t(1) << 20, size_t(16) << 20, size_t(64) << 20}) {
    void *a, *b;
    cudaSetDevice(0); cudaMalloc(&a, size);
    cudaSetDevice(1); cudaMalloc(&b, size);
    cudaSetDevice(0);
    cudaStream_t s; cudaStreamCreate(&s);
    cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
    const int reps = 50;
    cudaMemcpyPeerAsync(b, 1, a, 0, size, s);
    cudaEventRecord(t0, s);
    for (int i = 0; i < reps; ++i) cudaMemcpyPeerAsync(b, 1, a, 0, size, s);
    cudaEventRecord(t1, s);
    cudaEventSynchronize(t1);
    float ms = 0; cudaEventElapsedTime(&ms, t0, t1);
    std::printf("cudaMemcpyPeer %zu bytes: %.1f MB/s\n", size, size * double(reps) / (ms * 1e-3) / 1e6);
    cudaFree(a); cudaSetDevice(1); cudaFree(b); cudaSetDevice(0);
  }
  return 0;
}
