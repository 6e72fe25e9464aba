// malloc, free and the rest, interposed for AMPI programs (heap.h). The loader executable
// links libucharm-ampi before libc, so these definitions are the ones every object in the
// process calls (glibc's own internal calls included: glibc supports replacing malloc).
// glibc's allocator stays reachable as __libc_malloc & co. AddressSanitizer builds replace
// malloc themselves (their interceptors come first): rank heaps then stay in glibc's heap
// and ranks cannot migrate (rank.cpp says so).
#include "heap.h"
#include "rank.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>

extern "C" {
void* __libc_malloc(std::size_t);
void __libc_free(void*);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace ampi::heap {

thread_local CmiIsoSlice* g_active UCHARM_AMPI_HEAP_TLS = nullptr;

UserScope::UserScope(CmiIsoSlice* slice) : saved_(g_active) {
  if (!slice)
    if (Rank* r = g_running.rank) slice = r->slice();
  g_active = slice;
}

void prepare_process() {
  static bool done = false;
  if (done) return;
  done = true;
  // A buffer for each standard stream now (setvbuf with _IOFBF allocates it), then the
  // mode glibc would have picked: line-buffered on a terminal.
  for (FILE* f : {stdin, stdout}) {
    std::setvbuf(f, nullptr, _IOFBF, 0);
    if (::isatty(::fileno(f))) std::setvbuf(f, nullptr, _IOLBF, 0);
  }
  ::tzset();
  // glibc keeps one error record per thread for dlopen/dlsym failures, allocated at the
  // first failure: have it now, so that a failure in a rank's code never puts it in a slice.
  (void)::dlsym(RTLD_DEFAULT, "ucharm_ampi_no_such_symbol");
  (void)::dlerror();
}

void release_process_state() {
  // A failed dl call in a rank's code (the CUDA runtime probing for a driver, say) leaves
  // glibc's per-thread error record in the rank's slice; the next dl call, wherever, frees
  // it: make that call while the slice is still here.
  RuntimeScope runtime;
  (void)::dlsym(RTLD_DEFAULT, "free");
}

namespace {

// Where a rank's allocation failed: as glibc does, ENOMEM and nullptr.
void* out_of_memory() {
  errno = ENOMEM;
  return nullptr;
}

inline bool in_region(const void* p) { return p && CmiIsomallocContains(p); }

// While the slice allocator works (it may map pages, and UCX's memory hooks then run and
// allocate for themselves), allocations are glibc's: only the program's own go to its slice.
class InAllocator {
 public:
  InAllocator() : saved_(g_active) { g_active = nullptr; }
  ~InAllocator() { g_active = saved_; }
  InAllocator(const InAllocator&) = delete;
  InAllocator& operator=(const InAllocator&) = delete;

 private:
  CmiIsoSlice* saved_;
};

}  // namespace

}  // namespace ampi::heap

#if !defined(__SANITIZE_ADDRESS__)
using ampi::heap::g_active;
using ampi::heap::InAllocator;
using ampi::heap::in_region;
using ampi::heap::out_of_memory;

#pragma GCC visibility push(default)
extern "C" {

void* malloc(std::size_t n) {
  if (CmiIsoSlice* s = g_active) [[unlikely]] {
    InAllocator in;
    void* p = CmiIsoMalloc(s, n);
    return p ? p : out_of_memory();
  }
  return __libc_malloc(n);
}

void free(void* p) {
  if (in_region(p)) [[unlikely]] {
    // A block of a rank that left this process (a static destructor at exit): its pages
    // are gone with it, and so is the block.
    InAllocator in;
    if (CmiIsoSlice* s = CmiIsoSliceOf(p)) CmiIsoFree(s, p);
    return;
  }
  __libc_free(p);
}

void* calloc(std::size_t n, std::size_t size) {
  if (CmiIsoSlice* s = g_active) [[unlikely]] {
    InAllocator in;
    void* p = CmiIsoCalloc(s, n, size);
    return p ? p : out_of_memory();
  }
  return __libc_calloc(n, size);
}

// A block stays in the heap it came from (a rank's block resized by the runtime stays the
// rank's).
void* realloc(void* p, std::size_t n) {
  if (!p) return malloc(n);
  if (in_region(p)) [[unlikely]] {
    InAllocator in;
    CmiIsoSlice* s = CmiIsoSliceOf(p);
    if (!s) return out_of_memory();
    if (n == 0) {
      CmiIsoFree(s, p);
      return nullptr;
    }
    void* q = CmiIsoRealloc(s, p, n);
    return q ? q : out_of_memory();
  }
  return __libc_realloc(p, n);
}

void* reallocarray(void* p, std::size_t n, std::size_t size) {
  std::size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) return out_of_memory();
  return realloc(p, bytes);
}

void* memalign(std::size_t align, std::size_t n) {
  if (CmiIsoSlice* s = g_active) [[unlikely]] {
    if (align > 4096 || (align & (align - 1)) != 0) {
      errno = EINVAL;
      return nullptr;
    }
    InAllocator in;
    void* p = CmiIsoMemalign(s, align < 16 ? 16 : align, n);
    return p ? p : out_of_memory();
  }
  return __libc_memalign(align, n);
}

void* aligned_alloc(std::size_t align, std::size_t n) { return memalign(align, n); }

int posix_memalign(void** out, std::size_t align, std::size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  const int saved = errno;
  void* p = memalign(align, n);
  if (!p) {
    const int e = errno;
    errno = saved;
    return e ? e : ENOMEM;
  }
  *out = p;
  return 0;
}

void* valloc(std::size_t n) { return memalign(static_cast<std::size_t>(::getpagesize()), n); }

void* pvalloc(std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(::getpagesize());
  return memalign(page, (n + page - 1) / page * page);
}

std::size_t malloc_usable_size(void* p) {
  if (in_region(p)) [[unlikely]] return CmiIsoSliceOf(p) ? CmiIsoUsableSize(p) : 0;
  using Fn = std::size_t (*)(void*);
  // glibc's own (the one this definition hides).
  static const Fn libc = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "malloc_usable_size"));
  return p && libc ? libc(p) : 0;
}

}  // extern "C"
#pragma GCC visibility pop
#endif
