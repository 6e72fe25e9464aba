// Kernels and CUDA calls of the stream-ordered transfer test (stream_ordered_kernels.cu):
// plain functions, so the C++20 program needs no CUDA header of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sotest {

int device_count();  // 0 without a GPU
void set_device(int d);
// Loads this file's kernels now. Under CUDA's lazy loading (the default) a kernel's first
// launch loads its module, which waits for the whole context: with a stream waiting for this
// PE (an enqueued transfer), that wait never ends. So load them before enqueuing.
void preload();
void* device_alloc(std::size_t bytes);  // zeroed
void* host_alloc(std::size_t bytes);    // pinned, zeroed (kernels reach it through UVA)
void host_free(void* p);
void device_free(void* p);
void* stream_create();
void stream_destroy(void* s);
std::string stream_sync(void* s);  // "" or the CUDA error
// All asynchronous on `s`. Each waits about `delay_ns` first (a slow producer/consumer: a
// transfer that did not wait for it would see stale data).
// buf[k] = value + k for k < n
void launch_fill(void* s, std::uint64_t* buf, std::size_t n, std::uint64_t value, unsigned delay_ns);
// out[k] = in[k] + 1
void launch_reply(void* s, const std::uint64_t* in, std::uint64_t* out, std::size_t n, unsigned delay_ns);
// *errors += the k where buf[k] != value + k; then buf[k] = 0 (a stale re-read fails)
void launch_check(void* s, std::uint64_t* buf, std::size_t n, std::uint64_t value, int* errors);
int read_int(const int* d);  // synchronous

}  // namespace sotest
