// Kernels and CUDA timing of the device-window benchmark (device_window_lat_kernels.cu).
#pragma once

#include <cstddef>

#include <ucharm/device/window.cuh>

namespace dwbench {

int device_count();
void set_device(int d);
void* device_alloc(std::size_t bytes);
void* stream_create();
void stream_sync(void* s);
// Persistent one-thread ping-pong kernels, `warm` + `iters` exchanges of 8 B, flag values
// base+1...; the first side returns the GPU time of the timed `iters` (ns) in *ns_out
// (device memory). window: put_signal / wait; raw: a volatile store and poll of a word of
// the mapped buffers at `raw_off` (no data), own code beside window.cuh.
void launch_window_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int warm, int iters,
                            unsigned long long base, const void* src, unsigned long long* ns_out);
void launch_raw_pingpong(void* s, ck::DeviceWindowHandle h, std::size_t raw_off, bool first, int warm, int iters,
                         unsigned long long base, unsigned long long* ns_out);
unsigned long long read_u64(const unsigned long long* d);
// In this process: `hops` cudaMemcpyPeerAsync of `bytes` alternating GPU d0 -> d1 -> d0,
// chained by events (the host never waits between); microseconds per hop.
double peer_chain_us(int d0, int d1, std::size_t bytes, int hops);
// Bandwidth (GB/s, 1e9 B/s), `reps` transfers of `bytes` each, timed by events on `s`:
// a grid-wide kernel put into the peer's buffer; in this process, cudaMemcpyPeerAsync
// d0 -> d1.
double kernel_put_gbs(void* s, ck::DeviceWindowHandle h, const void* src, std::size_t bytes, int reps);
double memcpy_peer_gbs(int d0, int d1, std::size_t bytes, int reps);
// Events for timing host-enqueued work on `s` (put_on_stream).
struct Timer {
  void* start = nullptr;
  void* stop = nullptr;
};
Timer timer_start(void* s);
double timer_stop_ms(void* s, Timer& t);

}  // namespace dwbench
