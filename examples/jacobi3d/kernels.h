// Jacobi3D kernels: the update of a box of cells, and copying a box to or from a
// contiguous buffer (halo pack/unpack). The CPU versions always exist; the CUDA versions
// are built with the CUDA toolkit and run when a GPU is present. No CUDA header here:
// streams travel as void* (a cudaStream_t).
#pragma once

#include <cstddef>

#include "grid.h"

namespace jacobi {

namespace cpu {
void update(const Shape& s, const double* in, double* out, const Box& b);
void pack(const Shape& s, const double* u, const Box& b, double* buf);
void unpack(const Shape& s, double* u, const Box& b, const double* buf);
}  // namespace cpu

namespace cuda {
// False where the program was built without CUDA or no GPU is visible.
bool available();
// Binds this PE to GPU (pe % count); idempotent.
void select_device(int pe);
// Device memory, zeroed by work queued on `stream`: later work on that stream sees the
// zeros, and synchronizing it makes them visible to everyone else. (A zeroing on the
// legacy default stream is not ordered with a non-blocking stream at all, and ran after
// the boundary values were copied in where PEs share a GPU.)
void* alloc(std::size_t bytes, void* stream);
void* alloc_host(std::size_t bytes);   // pinned host memory
void free(void* p);
void free_host(void* p);
void* stream_create();
void stream_destroy(void* stream);
void synchronize(void* stream);
void copy_to_host(void* dst, const void* src, std::size_t bytes, void* stream);
void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream);
void update(const Shape& s, const double* in, double* out, const Box& b, void* stream);
void pack(const Shape& s, const double* u, const Box& b, double* buf, void* stream);
void unpack(const Shape& s, double* u, const Box& b, const double* buf, void* stream);
}  // namespace cuda

}  // namespace jacobi
