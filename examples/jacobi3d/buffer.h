// A zeroed buffer of doubles in GPU memory, pinned host memory or ordinary host memory,
// shared by the chare program and the MPI one. GPU memory is zeroed on `stream` (the
// block's), so that the zeroing is ordered with the block's other work.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "kernels.h"

namespace jacobi {

class Buffer {
 public:
  enum class Kind { Host, Pinned, Device };
  Buffer() = default;
  Buffer(std::size_t count, Kind kind, void* stream = nullptr) : kind_(kind), count_(count) {
    if (kind == Kind::Device) {
      p_ = static_cast<double*>(cuda::alloc(bytes(), stream));
    } else if (kind == Kind::Pinned) {
      p_ = static_cast<double*>(cuda::alloc_host(bytes()));
      std::memset(p_, 0, bytes());
    } else {
      p_ = static_cast<double*>(std::calloc(count ? count : 1, sizeof(double)));
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(kind_, o.kind_);
    std::swap(count_, o.count_);
    return *this;
  }
  ~Buffer() {
    if (!p_) return;
    if (kind_ == Kind::Device) cuda::free(p_);
    else if (kind_ == Kind::Pinned) cuda::free_host(p_);
    else std::free(p_);
  }
  double* data() const { return p_; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(double); }

 private:
  double* p_ = nullptr;
  Kind kind_ = Kind::Host;
  std::size_t count_ = 0;
};

}  // namespace jacobi
