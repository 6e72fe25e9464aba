#include "kernels.h"

namespace jacobi::cpu {

void update(const Shape& s, const double* in, double* out, const Box& b) {
  const std::size_t sy = s.sy(), sz = s.sz();
  for (int k = b.k0; k < b.k1; ++k)
    for (int j = b.j0; j < b.j1; ++j) {
      const std::size_t row = s.at(0, j, k);
      for (int i = b.i0; i < b.i1; ++i) out[row + i] = stencil(in, row + i, sy, sz);
    }
}

void pack(const Shape& s, const double* u, const Box& b, double* buf) {
  std::size_t n = 0;
  for (int k = b.k0; k < b.k1; ++k)
    for (int j = b.j0; j < b.j1; ++j)
      for (int i = b.i0; i < b.i1; ++i) buf[n++] = u[s.at(i, j, k)];
}

void unpack(const Shape& s, double* u, const Box& b, const double* buf) {
  std::size_t n = 0;
  for (int k = b.k0; k < b.k1; ++k)
    for (int j = b.j0; j < b.j1; ++j)
      for (int i = b.i0; i < b.i1; ++i) u[s.at(i, j, k)] = buf[n++];
}

}  // namespace jacobi::cpu

#ifndef JACOBI_CUDA
// Built without the CUDA toolkit: no GPU kernels; the program runs the CPU ones.
#include <cstdio>
#include <cstdlib>

namespace jacobi::cuda {
namespace {
[[noreturn]] void absent() {
  std::fprintf(stderr, "jacobi3d: built without CUDA; GPU kernels are not available\n");
  std::abort();
}
}  // namespace
bool available() { return false; }
void select_device(int) {}
void* alloc(std::size_t, void*) { absent(); }
void* alloc_host(std::size_t) { absent(); }
void free(void*) {}
void free_host(void*) {}
void* stream_create() { return nullptr; }
void stream_destroy(void*) {}
void synchronize(void*) {}
void copy_to_host(void*, const void*, std::size_t, void*) { absent(); }
void copy_to_device(void*, const void*, std::size_t, void*) { absent(); }
void update(const Shape&, const double*, double*, const Box&, void*) { absent(); }
void pack(const Shape&, const double*, const Box&, double*, void*) { absent(); }
void unpack(const Shape&, double*, const Box&, const double*, void*) { absent(); }
}  // namespace jacobi::cuda
#endif
