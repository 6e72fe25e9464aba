// Kernels of the device-window test program (device_window_kernels.cu, built by nvcc
// with UCHARM_DEVICE_WINDOW_CHECK): plain functions, so the C++20 program needs no CUDA
// header of its own.
#pragma once

#include <cstddef>
#include <string>

#include <ucharm/device/window.cuh>

namespace dwtest {

int device_count();  // 0 without a GPU (or a build without CUDA)
void set_device(int d);
void* device_alloc(std::size_t bytes);
void device_free(void* p);
void* stream_create();
void stream_destroy(void* s);
// Waits for the stream; "" or the CUDA error it reports.
std::string stream_sync(void* s);
// Kernel ping-pong of `rounds` puts of `bytes` each way (put_signal / wait at the given
// cooperation level: 0 thread, 1 warp, 2 block), flag values base+1..base+rounds; every
// received payload is checked. Errors go to *errors (device int). Asynchronous on `s`.
void launch_pingpong(void* s, ck::DeviceWindowHandle h, bool first, int rounds, std::size_t bytes, int coop,
                     unsigned long long base, void* scratch, int* errors);
// Fills src with the pattern of (round, side) on `s`.
void launch_fill(void* s, void* src, std::size_t bytes, unsigned long long round, int side);
// Adds to *errors the bytes of buf that differ from the pattern of (round, side).
void launch_check(void* s, const void* buf, std::size_t bytes, unsigned long long round, int side, int* errors);
// A kernel that waits (kernel-side) for `value` and checks the pattern at `offset`.
void launch_wait_check(void* s, ck::DeviceWindowHandle h, unsigned long long value, std::size_t offset,
                       std::size_t bytes, unsigned long long round, int side, int* errors);
// A put of `bytes` at `offset` (out of range on purpose: the debug check traps).
void launch_put(void* s, ck::DeviceWindowHandle h, std::size_t offset, std::size_t bytes, const void* src);
int read_int(const int* d);  // copies a device int back (synchronous)

}  // namespace dwtest
