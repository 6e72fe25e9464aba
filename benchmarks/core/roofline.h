// CUDA side of the Message Roofline benchmark (roofline_kernels.cu): plain functions, so
// roofline.cpp (C++20) needs no CUDA header. Errors stop the process naming the call.
#pragma once

#include <cstddef>
#include <cstdint>

#include <ucharm/device/window.cuh>  // the handle type only, outside nvcc

namespace rfbench {

// Visible CUDA devices; 0 with the runtime's reason in *why where there are none.
int device_count(const char** why);
void set_device(int d);
int multiprocessors(int d);
void* device_alloc(std::size_t bytes);  // zeroed
void device_free(void* p) noexcept;
void* stream_create();
void stream_sync(void* s);
void enable_peer_access(int peer);  // from the current device; "already enabled" is fine
std::uint64_t read_u64(const std::uint64_t* d);

// Persistent ping-pong kernel of the device window (see roofline_kernels.cu): each of
// warm + iters rounds, n puts of `bytes` (message k at offset k * bytes of `src` and of
// the peer's buffer) and one signal; the side that is not `first` waits first and
// answers. `blocks` == 1: one block of 256 threads (put<Block>, signal of base + round);
// more: a grid of 1024-thread blocks (put<Grid>, each block adds 1: base + blocks *
// round), needs peer atomics and blocks that are all resident. The first side writes
// the GPU time (ns) of the last `iters` rounds to *ns_out.
void launch_put_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int blocks, int n, std::size_t bytes,
                         int warm, int iters, std::uint64_t base, const void* src, std::uint64_t* ns_out);

// Events with timing, for work enqueued on a stream.
void* event_create();
void event_destroy(void* e) noexcept;
void event_record(void* e, void* s);
double event_elapsed_us(void* a, void* b);  // waits for b

// One cudaMemcpyPeerAsync on `s`.
void memcpy_peer_async(void* dst, int dst_dev, const void* src, int src_dev, std::size_t bytes, void* s);

}  // namespace rfbench
