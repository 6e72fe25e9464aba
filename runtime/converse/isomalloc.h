// Isomalloc internals shared by isomalloc.cpp (region, slices, pack/unpack),
// isoheap.cpp (the allocator) and threads.cpp (migratable threads). Everything a slice
// needs in order to move lives inside the slice: SliceHeader is its first bytes, the free
// lists are addresses inside it, and a thread's record and stack are in it too.
#pragma once

#include <ucharm/converse.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ucharm::converse::iso {

inline constexpr std::uint64_t kSliceMagic = 0x75636861726d4953ull;  // "ucharmIS"
inline constexpr std::size_t kPage = 4096;
inline constexpr int kSmallBins = 64;   // exact sizes 16..1024 (index size/16)
inline constexpr int kBins = 128;       // then 4 bins per power of two
inline constexpr std::size_t kMinBlock = 32;
inline constexpr std::size_t kSmallMax = 1024;
// A free block this big (or bigger) gives its interior pages back (madvise), and the pack
// skips its interior: its bytes mean nothing.
inline constexpr std::size_t kReleaseBytes = 64 * 1024;

inline std::uintptr_t page_down(std::uintptr_t a) { return a & ~(kPage - 1); }
inline std::uintptr_t page_up(std::uintptr_t a) { return (a + kPage - 1) & ~(kPage - 1); }

// A heap block: 16 bytes of header, then the payload (16-aligned). Free blocks keep their
// list links in the payload.
struct Block {
  std::size_t prev_size;  // size of the block just below (0 for the first)
  std::size_t head;       // size | kInUse
  Block* next;            // free list (free blocks only)
  Block* prev;
};
inline constexpr std::size_t kInUse = 1;
inline constexpr std::size_t kHeaderBytes = 16;
inline std::size_t block_size(const Block* b) { return b->head & ~std::size_t{15}; }
inline bool in_use(const Block* b) { return b->head & kInUse; }

}  // namespace ucharm::converse::iso

// The slice's own header (its first bytes). Only addresses inside the slice and plain
// numbers: a byte copy at the same address in another process is the same heap.
struct CmiIsoSlice {
  std::uint64_t magic;
  std::int32_t id;
  std::uint32_t pad;
  std::uintptr_t base, end;        // the slice's address range
  std::uintptr_t heap_begin;       // the first block
  std::uintptr_t heap_top;         // blocks end here; above: unused heap space
  std::uintptr_t heap_committed;   // [base, heap_committed) is mapped read/write
  std::uintptr_t heap_limit;       // the heap never grows past this (stack reserve above)
  std::uintptr_t heap_high;        // highest heap_top since pages above it were given back
  std::size_t last_size;           // size of the block that ends at heap_top (0: none)
  std::uintptr_t stack_lo, stack_hi;  // the stack area (read/write), 0 while none
  std::uintptr_t stack_live;       // lowest stack byte that matters (set before a pack)
  void* thread;                    // the migratable thread's record, if any
  std::uint64_t used_bytes;        // bytes in allocated blocks, headers included
  std::uint64_t bitmap[2];         // bit i: bins[i] not empty
  ucharm::converse::iso::Block* bins[ucharm::converse::iso::kBins];
};

namespace ucharm::converse::iso {

// Heap (isoheap.cpp).
void heap_init(CmiIsoSlice* s);
void* heap_malloc(CmiIsoSlice* s, std::size_t n);
void* heap_calloc(CmiIsoSlice* s, std::size_t n);  // zeroed
void heap_free(CmiIsoSlice* s, void* p);
void* heap_realloc(CmiIsoSlice* s, void* p, std::size_t n);
void* heap_memalign(CmiIsoSlice* s, std::size_t align, std::size_t n);
std::size_t heap_usable(const void* p);
// Address ranges inside [heap_begin, heap_top) whose bytes mean nothing (free blocks'
// page-aligned interiors), sorted by address.
struct Range {
  std::uintptr_t lo, hi;
};
void heap_holes(const CmiIsoSlice* s, std::vector<Range>& out);
// Consistency check for tests: walks every block; returns an empty string or what is wrong.
std::string heap_check(const CmiIsoSlice* s);

// Region (isomalloc.cpp).
// Makes [lo, hi) read/write (fresh zero pages on first touch); false: out of memory.
bool commit(std::uintptr_t lo, std::uintptr_t hi);
// Gives pages back (they read as zero next time) but keeps them mapped read/write.
void discard(std::uintptr_t lo, std::uintptr_t hi);
// The stack area at the top of the slice, `bytes` long (rounded to pages), guard page below.
// nullptr-like failure: returns false with CmiIsomallocError set.
bool make_stack(CmiIsoSlice* s, std::size_t bytes);
// Process-local per-slice word (threads.cpp keeps the resume message here, reachable from
// this process's state: a leak checker sees it, and it never travels).
void*& local_word(const CmiIsoSlice* s);
void set_error(std::string msg);

}  // namespace ucharm::converse::iso
