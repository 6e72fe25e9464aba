// Built without the CUDA toolkit: --mode device is refused before any of these is called.
#include <cstdio>
#include <cstdlib>

#include "device_kernels.h"

namespace jacobi::devmode {
namespace {
[[noreturn]] void absent() {
  std::fprintf(stderr, "jacobi3d: built without CUDA; --mode device is not available\n");
  std::abort();
}
}  // namespace
void launch_prime(const Shape&, const double*, const BoxList&, const Links&, int, unsigned*, void*) { absent(); }
void launch_shell(const Shape&, const double*, double*, const BoxList&, const Links&, long, std::uint64_t, unsigned*,
                  unsigned long long*, void*) {
  absent();
}
unsigned* alloc_counter(void*) { absent(); }
void free_counter(unsigned*) {}
unsigned long long* alloc_progress(unsigned long long) { absent(); }
void free_progress(unsigned long long*) {}
}  // namespace jacobi::devmode
