// The slice heap: boundary-tagged blocks carved upward from the slice header, free blocks
// kept in 128 bins (64 exact small sizes, then 4 bins per power of two) with a bitmap, so a
// small malloc is a bin pop and a free coalesces with both neighbours in O(1). Every byte
// of metadata (headers, bins, bitmap) is inside the slice: copying the slice's used bytes
// to the same addresses elsewhere copies the heap.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "isomalloc.h"

namespace ucharm::converse::iso {

namespace {

[[noreturn]] void corrupt(const char* what, const void* p) {
  std::fprintf(stderr, "ucharm isomalloc: %s (pointer %p): heap corruption or a pointer not from this slice\n",
               what, p);
  std::abort();
}

Block* at(std::uintptr_t a) { return reinterpret_cast<Block*>(a); }
std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

int bin_index(std::size_t size) {
  if (size <= kSmallMax) return static_cast<int>(size / 16) - 1;  // 32 -> 1 ... 1024 -> 63
  int lg = std::bit_width(size) - 1;                              // >= 10
  int idx = kSmallBins + (lg - 10) * 4 + static_cast<int>((size >> (lg - 2)) & 3);
  return idx < kBins ? idx : kBins - 1;
}

void bin_insert(CmiIsoSlice* s, Block* b) {
  int i = bin_index(block_size(b));
  b->prev = nullptr;
  b->next = s->bins[i];
  if (b->next) b->next->prev = b;
  s->bins[i] = b;
  s->bitmap[i / 64] |= std::uint64_t{1} << (i % 64);
}

void bin_remove(CmiIsoSlice* s, Block* b) {
  int i = bin_index(block_size(b));
  if (b->prev)
    b->prev->next = b->next;
  else
    s->bins[i] = b->next;
  if (b->next) b->next->prev = b->prev;
  if (!s->bins[i]) s->bitmap[i / 64] &= ~(std::uint64_t{1} << (i % 64));
}

// The first non-empty bin after `i`, or -1.
int next_bin(const CmiIsoSlice* s, int i) {
  for (int j = i + 1; j < kBins;) {
    std::uint64_t word = s->bitmap[j / 64] >> (j % 64);
    if (word) return j + std::countr_zero(word);
    j = (j / 64 + 1) * 64;
  }
  return -1;
}

// Writes b's size and state and tells the block above it.
void set_block(CmiIsoSlice* s, Block* b, std::size_t size, bool used) {
  b->head = size | (used ? kInUse : 0);
  std::uintptr_t n = addr(b) + size;
  if (n < s->heap_top)
    at(n)->prev_size = size;
  else
    s->last_size = size;
}

std::size_t request(std::size_t n) {
  if (n > (std::size_t{1} << 60)) return 0;
  std::size_t r = (n + kHeaderBytes + 15) & ~std::size_t{15};
  return r < kMinBlock ? kMinBlock : r;
}

// Gives the pages above heap_top back once enough of them were used.
void trim(CmiIsoSlice* s) {
  std::uintptr_t lo = page_up(s->heap_top);
  if (s->heap_high > lo && s->heap_high - lo >= kReleaseBytes) {
    discard(lo, s->heap_high);
    s->heap_high = lo;
  }
}

// Frees the block (payload p's), coalescing with free neighbours and the top.
void release_block(CmiIsoSlice* s, Block* b) {
  std::size_t size = block_size(b);
  s->used_bytes -= size;
  if (size >= kReleaseBytes) discard(page_up(addr(b) + sizeof(Block)), page_down(addr(b) + size));
  std::uintptr_t n = addr(b) + size;
  if (n < s->heap_top && !in_use(at(n))) {
    bin_remove(s, at(n));
    size += block_size(at(n));
  }
  if (addr(b) != s->heap_begin) {
    Block* p = at(addr(b) - b->prev_size);
    if (!in_use(p)) {
      bin_remove(s, p);
      size += block_size(p);
      b = p;
    }
  }
  if (addr(b) + size == s->heap_top) {  // the top block: the heap shrinks
    s->heap_top = addr(b);
    s->last_size = addr(b) == s->heap_begin ? 0 : b->prev_size;
    trim(s);
    return;
  }
  set_block(s, b, size, false);
  bin_insert(s, b);
}

// Cuts b (in use) down to `req` bytes when the rest makes a block; the rest is freed.
void shrink(CmiIsoSlice* s, Block* b, std::size_t req) {
  std::size_t size = block_size(b);
  if (size - req < kMinBlock) return;
  set_block(s, b, req, true);
  Block* r = at(addr(b) + req);
  r->prev_size = req;
  set_block(s, r, size - req, true);
  release_block(s, r);
}

// A block of `req` bytes from the unused space above heap_top, or nullptr.
Block* from_top(CmiIsoSlice* s, std::size_t req) {
  if (req > s->heap_limit - s->heap_top) return nullptr;
  std::uintptr_t need = s->heap_top + req;
  if (need > s->heap_committed) {
    // Commit in steps of 1 MiB: fewer mprotect calls; untouched pages stay unbacked.
    std::uintptr_t want = (need + (std::uintptr_t{1} << 20) - 1) & ~((std::uintptr_t{1} << 20) - 1);
    if (want > s->heap_limit) want = s->heap_limit;
    if (!commit(s->heap_committed, want)) return nullptr;
    s->heap_committed = want;
  }
  Block* b = at(s->heap_top);
  b->prev_size = s->last_size;
  s->heap_top = need;
  if (need > s->heap_high) s->heap_high = need;
  set_block(s, b, req, true);
  return b;
}

// Takes b (free, in no bin) for `req` bytes: splits off and bins the rest.
void take(CmiIsoSlice* s, Block* b, std::size_t req) {
  std::size_t size = block_size(b);
  if (size - req >= kMinBlock) {
    set_block(s, b, req, true);
    Block* r = at(addr(b) + req);
    r->prev_size = req;
    set_block(s, r, size - req, false);
    bin_insert(s, r);
  } else {
    set_block(s, b, size, true);
  }
}

// Says once per process, on stderr, that a request is larger than a slice's heap can ever
// grow: the caller gets nullptr (malloc's ENOMEM), but the fix is an option to set.
void too_big(const CmiIsoSlice* s, std::size_t n) {
  std::string msg = "a block of " + std::to_string(n) + " bytes does not fit slice " + std::to_string(s->id) +
                    " (" + std::to_string(s->end - s->base) + " bytes; its heap may grow to " +
                    std::to_string(s->heap_limit - s->heap_begin) + " bytes, " + std::to_string(s->used_bytes) +
                    " of them in use)";
  static std::atomic<bool> said{false};
  if (!said.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr,
                 "ucharm isomalloc: %s: the allocation returns NULL (ENOMEM). Give every slice more room with "
                 "+isomalloc-slice=SIZE (and +isomalloc-region=SIZE, at most 48T, for one slice per rank or "
                 "thread)\n",
                 msg.c_str());
  set_error(std::move(msg));
}

Block* checked_block(const CmiIsoSlice* s, void* p, const char* who) {
  std::uintptr_t a = addr(p);
  if (a < s->heap_begin + kHeaderBytes || a >= s->heap_top || (a & 15)) corrupt(who, p);
  Block* b = at(a - kHeaderBytes);
  if (!in_use(b) || addr(b) + block_size(b) > s->heap_top || block_size(b) < kMinBlock) corrupt(who, p);
  return b;
}

}  // namespace

void heap_init(CmiIsoSlice* s) {
  s->heap_begin = (s->base + sizeof(CmiIsoSlice) + 15) & ~std::uintptr_t{15};
  s->heap_top = s->heap_high = s->heap_begin;
  s->last_size = 0;
  s->used_bytes = 0;
  s->bitmap[0] = s->bitmap[1] = 0;
  for (auto& b : s->bins) b = nullptr;
}

void* heap_malloc(CmiIsoSlice* s, std::size_t n) {
  std::size_t req = request(n);
  if (!req) return nullptr;
  int i = bin_index(req);
  Block* found = nullptr;
  if (i < kSmallBins) {
    found = s->bins[i];  // exact size
  } else {
    for (Block* b = s->bins[i]; b; b = b->next)  // first fit within the bin
      if (block_size(b) >= req) {
        found = b;
        break;
      }
  }
  if (!found) {
    int j = next_bin(s, i);
    if (j == kBins - 1) {
      for (Block* b = s->bins[j]; b; b = b->next)
        if (block_size(b) >= req) {
          found = b;
          break;
        }
    } else if (j >= 0) {
      found = s->bins[j];  // every block there is bigger than req
    }
  }
  Block* b;
  if (found) {
    bin_remove(s, found);
    take(s, found, req);
    b = found;
  } else {
    b = from_top(s, req);
    if (!b) {
      if (req > s->heap_limit - s->heap_top) too_big(s, n);
      return nullptr;
    }
  }
  s->used_bytes += block_size(b);
  return reinterpret_cast<char*>(b) + kHeaderBytes;
}

void* heap_calloc(CmiIsoSlice* s, std::size_t n) {
  // Bytes at or above heap_high were never written since their pages were last given back
  // (or mapped): they read as zero, and a large calloc from the top leaves them untouched.
  std::uintptr_t zero_from = s->heap_high;
  char* p = static_cast<char*>(heap_malloc(s, n));
  if (!p) return nullptr;
  std::uintptr_t end = addr(p) + n;
  std::uintptr_t dirty_end = std::min(end, std::max(zero_from, addr(p)));
  std::memset(p, 0, dirty_end - addr(p));
  return p;
}

void heap_free(CmiIsoSlice* s, void* p) {
  if (!p) return;
  release_block(s, checked_block(s, p, "free"));
}

void* heap_realloc(CmiIsoSlice* s, void* p, std::size_t n) {
  if (!p) return heap_malloc(s, n);
  Block* b = checked_block(s, p, "realloc");
  std::size_t req = request(n);
  if (!req) return nullptr;
  std::size_t size = block_size(b);
  if (req <= size) {
    shrink(s, b, req);
    return p;
  }
  std::uintptr_t n_addr = addr(b) + size;
  if (n_addr == s->heap_top) {  // the top block grows in place
    std::size_t more = req - size;
    if (more <= s->heap_limit - s->heap_top) {
      std::uintptr_t need = s->heap_top + more;
      bool ok = true;
      if (need > s->heap_committed) {
        std::uintptr_t want = (need + (std::uintptr_t{1} << 20) - 1) & ~((std::uintptr_t{1} << 20) - 1);
        if (want > s->heap_limit) want = s->heap_limit;
        ok = commit(s->heap_committed, want);
        if (ok) s->heap_committed = want;
      }
      if (ok) {
        s->heap_top = need;
        if (need > s->heap_high) s->heap_high = need;
        set_block(s, b, req, true);
        s->used_bytes += more;
        return p;
      }
    }
  } else if (!in_use(at(n_addr)) && size + block_size(at(n_addr)) >= req) {
    Block* nb = at(n_addr);
    std::size_t grown = size + block_size(nb);
    bin_remove(s, nb);
    set_block(s, b, grown, true);
    s->used_bytes += grown - size;
    shrink(s, b, req);
    return p;
  }
  void* q = heap_malloc(s, n);
  if (!q) return nullptr;
  std::memcpy(q, p, size - kHeaderBytes);
  release_block(s, b);
  return q;
}

void* heap_memalign(CmiIsoSlice* s, std::size_t align, std::size_t n) {
  if (align == 0 || (align & (align - 1)) || align > (std::size_t{1} << 46)) {
    set_error("CmiIsoMemalign: the alignment must be a power of two (at most 2^46), got " + std::to_string(align));
    return nullptr;
  }
  if (align <= 16) return heap_malloc(s, n);
  std::size_t req = request(n);
  if (!req || req > (std::size_t{1} << 60) - align) return nullptr;
  // Room for an aligned payload with a free block of at least kMinBlock in front of it.
  char* p = static_cast<char*>(heap_malloc(s, req + align + kMinBlock));
  if (!p) return nullptr;
  Block* b = at(addr(p) - kHeaderBytes);
  if (addr(p) % align) {
    // Leave a free block of at least kMinBlock in front of the aligned payload.
    std::uintptr_t a = (addr(p) + kMinBlock + align - 1) & ~(std::uintptr_t{align} - 1);
    std::size_t lead = a - kHeaderBytes - addr(b);
    std::size_t size = block_size(b);
    Block* nb = at(a - kHeaderBytes);
    set_block(s, b, lead, true);
    nb->prev_size = lead;
    set_block(s, nb, size - lead, true);
    release_block(s, b);
    b = nb;
    p = reinterpret_cast<char*>(a);
  }
  shrink(s, b, req);
  return p;
}

std::size_t heap_usable(const void* p) {
  return block_size(at(addr(p) - kHeaderBytes)) - kHeaderBytes;
}

void heap_holes(const CmiIsoSlice* s, std::vector<Range>& out) {
  std::size_t first = out.size();
  for (int i = bin_index(kReleaseBytes); i < kBins; ++i)
    for (const Block* b = s->bins[i]; b; b = b->next) {
      if (block_size(b) < kReleaseBytes) continue;
      std::uintptr_t lo = page_up(addr(b) + sizeof(Block)), hi = page_down(addr(b) + block_size(b));
      if (hi > lo) out.push_back({lo, hi});
    }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [](const Range& x, const Range& y) { return x.lo < y.lo; });
}

std::string heap_check(const CmiIsoSlice* s) {
  std::size_t used = 0, free_blocks = 0, prev = 0;
  bool prev_free = false;
  for (std::uintptr_t a = s->heap_begin; a < s->heap_top;) {
    const Block* b = at(a);
    std::size_t size = block_size(b);
    if (size < kMinBlock || a + size > s->heap_top) return "bad block size at " + std::to_string(a);
    if (b->prev_size != prev) return "bad prev_size at " + std::to_string(a);
    if (in_use(b)) {
      used += size;
      prev_free = false;
    } else {
      if (prev_free) return "two free blocks side by side at " + std::to_string(a);
      ++free_blocks;
      prev_free = true;
    }
    prev = size;
    a += size;
  }
  if (prev_free) return "a free block touches the top";
  if (prev != s->last_size) return "last_size is wrong";
  if (used != s->used_bytes) return "used_bytes is wrong";
  std::size_t binned = 0;
  for (int i = 0; i < kBins; ++i) {
    bool bit = (s->bitmap[i / 64] >> (i % 64)) & 1;
    if (bit != (s->bins[i] != nullptr)) return "bitmap disagrees with bin " + std::to_string(i);
    for (const Block* b = s->bins[i]; b; b = b->next) {
      if (in_use(b) || bin_index(block_size(b)) != i) return "wrong block in bin " + std::to_string(i);
      ++binned;
    }
  }
  if (binned != free_blocks) return "free blocks missing from the bins";
  return {};
}

}  // namespace ucharm::converse::iso
