// A free list that grows in chunks and never shrinks: per-operation state without a heap
// allocation per operation.
#pragma once

#include <memory>
#include <vector>

namespace ucharm::machine::detail {

template <class T>
class ChunkPool {
 public:
  T* take() {
    if (!free_) {
      chunks_.push_back(std::make_unique<T[]>(kChunk));
      for (int i = 0; i < kChunk; ++i) give(&chunks_.back()[i]);
    }
    T* t = free_;
    free_ = t->next_free;
    return t;
  }
  void give(T* t) {
    t->next_free = free_;
    free_ = t;
  }
  template <class F>
  void for_each(F&& f) {
    for (auto& c : chunks_)
      for (int i = 0; i < kChunk; ++i) f(c[i]);
  }

 private:
  static constexpr int kChunk = 64;
  T* free_ = nullptr;
  std::vector<std::unique_ptr<T[]>> chunks_;
};

}  // namespace ucharm::machine::detail
