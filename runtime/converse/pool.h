// Message memory: size-class free lists in front of malloc, with a reference count in
// a prefix that never travels. Non-SMP: one pool per PE, no locks. Messages up to
// kMaxPooled bytes are recycled, so steady-state sends and receives allocate nothing
// from the heap. What the free lists keep is capped per class and in all (kKeepTotal),
// so a burst of large messages does not stay resident.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace ucharm::converse {

struct BlockPrefix {
  std::int32_t refcount;
  std::int16_t size_class;  // -1: not pooled
  std::int16_t unused;
  std::uint32_t capacity;   // bytes usable after the prefix (messages are < 4 GiB)
  std::int32_t link_src;    // a received message: the PE its flow-control credit goes to; else -1
};
static_assert(sizeof(BlockPrefix) == 16, "keeps messages 16-byte aligned");

inline BlockPrefix* prefix_of(void* msg) { return static_cast<BlockPrefix*>(msg) - 1; }

// Blocks of size class `cls` (of 2^(cls + min_shift) bytes) a free list keeps: ~32 MiB.
constexpr std::size_t pool_keep_limit(int cls, unsigned min_shift) {
  const std::size_t n = (std::size_t{32} << 20) >> (static_cast<unsigned>(cls) + min_shift);
  return n < 2 ? 2 : (n > 4096 ? 4096 : n);
}

class MsgPool {
 public:
  static constexpr unsigned kMinShift = 6;   // 64 B
  static constexpr unsigned kMaxShift = 26;  // 64 MiB
  static constexpr std::size_t kMaxPooled = std::size_t{1} << kMaxShift;
  static constexpr std::size_t kKeepTotal = std::size_t{96} << 20;
  // Keep up to ~32 MiB per class on the free list (at least 2, at most 4096 blocks):
  // large blocks are reused too, since a fresh multi-MiB malloc costs page faults.
  static constexpr std::size_t keep_limit(int cls) { return pool_keep_limit(cls, kMinShift); }

  MsgPool() = default;
  MsgPool(const MsgPool&) = delete;
  MsgPool& operator=(const MsgPool&) = delete;
  ~MsgPool() {
    for (FreeList& f : free_)
      while (BlockPrefix* b = f.head) {
        f.head = next_of(b);
        std::free(b);
      }
  }

  // The common cases (a block of a class on its free list; a block going back to it) are
  // a few instructions each: free lists are intrusive (the link lives in the free block's
  // payload) and the growth paths stay out of line.
  void* alloc(std::size_t bytes) {
    const int cls = class_of(bytes);
    if (cls >= 0) [[likely]] {
      FreeList& f = free_[static_cast<std::size_t>(cls)];
      if (BlockPrefix* b = f.head) [[likely]] {
        f.head = next_of(b);
        --f.count;
        kept_ -= b->capacity;
        b->refcount = 1;
        b->link_src = -1;
        return b + 1;
      }
    }
    return alloc_new(bytes, cls);
  }

  void release(void* msg) {
    BlockPrefix* b = prefix_of(msg);
    if (--b->refcount > 0) return;
    const int cls = b->size_class;
    if (cls >= 0) [[likely]] {
      FreeList& f = free_[static_cast<std::size_t>(cls)];
      if (f.count < kKeep[static_cast<std::size_t>(cls)] && kept_ + b->capacity <= kKeepTotal) [[likely]] {
        next_of(b) = f.head;
        f.head = b;
        ++f.count;
        kept_ += b->capacity;
        return;
      }
    }
    std::free(b);
  }

  static int class_of(std::size_t bytes) {
    if (bytes > kMaxPooled) return -1;
    unsigned shift = bytes <= (std::size_t{1} << kMinShift) ? kMinShift : std::bit_width(bytes - 1);
    return static_cast<int>(shift - kMinShift);
  }

 private:
  static constexpr std::size_t kClasses = kMaxShift - kMinShift + 1;
  struct FreeList {
    BlockPrefix* head = nullptr;
    std::uint32_t count = 0;
  };
  static constexpr std::array<std::uint32_t, kClasses> kKeep = [] {
    std::array<std::uint32_t, kClasses> k{};
    for (std::size_t c = 0; c < kClasses; ++c)
      k[c] = static_cast<std::uint32_t>(pool_keep_limit(static_cast<int>(c), kMinShift));
    return k;
  }();
  // A free block's payload (at least 64 bytes) holds the link to the next free block.
  static BlockPrefix*& next_of(BlockPrefix* b) { return *reinterpret_cast<BlockPrefix**>(b + 1); }

  [[gnu::noinline]] void* alloc_new(std::size_t bytes, int cls) {
    const std::size_t cap = cls >= 0 ? (std::size_t{1} << (cls + kMinShift)) : bytes;
    auto* b = static_cast<BlockPrefix*>(std::malloc(sizeof(BlockPrefix) + cap));
    if (!b) throw std::bad_alloc();
    b->size_class = static_cast<std::int16_t>(cls);
    b->capacity = static_cast<std::uint32_t>(cap);
    b->refcount = 1;
    b->link_src = -1;
    return b + 1;
  }

  std::array<FreeList, kClasses> free_{};
  std::size_t kept_ = 0;  // bytes on the free lists
};

}  // namespace ucharm::converse
