// --mode device: the CUDA kernels and the few device allocations the mode needs (built
// with CUDA into jacobi3d_kernels; without CUDA the calls stop the program, but the mode is
// refused before any is made). No CUDA header here: streams travel as void*.
#pragma once

#include <ucharm/device/window.cuh>  // ck::DeviceWindowHandle (plain C++ sees only the type)

#include "device_cells.h"

namespace jacobi::devmode {

// A block's links to its neighbours, passed to the kernels by value: per face, the device
// window (local: this side's ghost-receive buffer; remote: the neighbour's one for the
// opposite face), or has[f] == 0 where no neighbour is.
struct Links {
  ck::DeviceWindowHandle win[kFaces];
  int has[kFaces] = {0, 0, 0, 0, 0, 0};
};

// Priming step: copies the layers of `u` that each face sends (sends.box[f], empty where
// no neighbour) into half `half` of the neighbours' ghost buffers, then the grid's last
// CUDA block signals kPrimeRound on every link.
void launch_prime(const Shape& s, const double* u, const BoxList& sends, const Links& links, int half,
                  unsigned* counter, void* stream);

// The shell of iteration `it`: updates the cells of `shell` from `in` into `out`, reading
// ghosts from half read_half(it) of this side's buffers, writes each new boundary layer
// into half write_half(it) of the neighbour's buffer, then the grid's last CUDA block
// signals round `round` on every link and stores it + 1 into `*progress` (pinned, mapped).
void launch_shell(const Shape& s, const double* in, double* out, const BoxList& shell, const Links& links, long it,
                  std::uint64_t round, unsigned* counter, unsigned long long* progress, void* stream);

// The last-block-done counter (device memory, zeroed on `stream`).
unsigned* alloc_counter(void* stream);
void free_counter(unsigned* c);
// A progress word in pinned host memory mapped for the GPU, set to `initial`: the kernels
// write it, the host reads it without any CUDA call.
unsigned long long* alloc_progress(unsigned long long initial);
void free_progress(unsigned long long* p);

}  // namespace jacobi::devmode
