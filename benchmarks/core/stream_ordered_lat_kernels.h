// CUDA side of benchmarks/core/stream_ordered_lat.cpp (stream_ordered_lat_kernels.cu): plain
// functions, so the C++20 program needs no CUDA header.
#pragma once

#include <cstdint>

namespace solat {

int device_count();
void set_device(int d);
// Loads the kernels now: under CUDA's lazy loading a first launch waits for the whole
// context, which never ends while a stream waits for this PE (an enqueued transfer).
void preload();
void* device_alloc(std::size_t bytes);  // zeroed
void* stream_create();
void* event_create();  // with timing
void event_record(void* e, void* s);
float event_ms(void* a, void* b);  // waits for b
void stream_sync(void* s);
// One thread adds 1 to *p: the "tiny kernel" of every hop.
void launch_bump(void* s, std::uint64_t* p);
std::uint64_t read_u64(const std::uint64_t* p);
// The peer figure: a chain of `iters` round trips between a stream on GPU a and one on GPU b
// (bump, cudaMemcpyPeerAsync of 8 B, event, the other stream waits on it; and back), all
// enqueued at once; returns one-way microseconds over the last iters - warm round trips.
double peer_chain_us(int dev_a, int dev_b, int iters, int warm);

}  // namespace solat
