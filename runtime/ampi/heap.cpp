// malloc, free and the rest, interposed for AMPI programs (heap.h). The loader executable
// links libucharm-ampi before libc, so these definitions are the ones every object in the
// process calls (glibc's own internal calls included: glibc supports replacing malloc).
// glibc's allocator stays reachable as __libc_malloc & co. AddressSanitizer builds replace
// malloc themselves (their interceptors come first): rank heaps then stay in glibc's heap
// and ranks cannot migrate (rank.cpp says so).
#include "heap.h"
#include "rank.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string_view>
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
std::atomic<bool> g_threads{false};

namespace {

// Slices hash onto these (two slices may share one: a little contention, never a wrong
// answer). A lock is held only for one slice heap operation.
struct alignas(64) LockWord {
  std::atomic<int> word{0};
};
LockWord g_locks[64];

void acquire(std::atomic<int>& w) {
  for (unsigned tries = 0; w.exchange(1, std::memory_order_acquire) != 0;) {
    while (w.load(std::memory_order_relaxed) != 0) {
      // The holder may share this core (threads inherit the PE's binding): yield soon.
      if (++tries < 64) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      } else {
        ::sched_yield();
      }
    }
  }
}

// Code of the OpenMP runtimes (libgomp, LLVM's libomp): their state (the thread pool, the
// cached team, per-thread control variables) belongs to the OS thread that runs a rank,
// which the PE's other ranks share and which stays when the rank moves, so it is allocated
// from glibc's heap even when a rank calls it. Found once, before any rank runs.
struct TextRange {
  std::uintptr_t lo, hi;
};
constexpr int kProcessCodeMax = 8;
TextRange g_process_code[kProcessCodeMax];
std::atomic<int> g_process_code_count{0};  // published after the ranges

// Set once either g_threads is or process code was found: until then the entry points take
// their shortest path (no lock, no caller check).
std::atomic<bool> g_careful{false};

std::string_view file_name(const char* path) {
  std::string_view p = path ? path : "";
  const std::size_t slash = p.find_last_of('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

int find_process_code(dl_phdr_info* info, std::size_t, void* count) {
  const std::string_view base = file_name(info->dlpi_name);
  if (!base.starts_with("libgomp.so") && !base.starts_with("libomp.so") && !base.starts_with("libiomp5.so"))
    return 0;
  int& n = *static_cast<int*>(count);
  for (int i = 0; i < info->dlpi_phnum && n < kProcessCodeMax; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    g_process_code[n++] = {lo, lo + ph.p_memsz};
  }
  return 0;
}

}  // namespace

std::atomic<int>* lock_slice(const CmiIsoSlice* slice) {
  const auto a = reinterpret_cast<std::uintptr_t>(slice);
  std::atomic<int>* w = &g_locks[((a >> 20) * 0x9e3779b97f4a7c15ull) >> 58].word;
  acquire(*w);
  return w;
}

UserScope::UserScope(CmiIsoSlice* slice) : saved_(g_active) {
  if (!slice)
    if (Rank* r = g_running.rank) slice = r->slice();
  g_active = slice;
}

namespace {
void scan_process_code() {
  if (g_process_code_count.load(std::memory_order_acquire) > 0) return;
  int n = 0;
  ::dl_iterate_phdr(find_process_code, &n);
  g_process_code_count.store(n, std::memory_order_release);
  if (n > 0) g_careful.store(true);
}

void prepare_process_once() {
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
  scan_process_code();
}
}  // namespace

void prepare_process() {
  // Once, whichever PE (a thread of this process) starts a rank first.
  static std::once_flag once;
  std::call_once(once, prepare_process_once);
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
[[maybe_unused]] void* out_of_memory() {
  errno = ENOMEM;
  return nullptr;
}

inline bool in_region(const void* p) { return p && CmiIsomallocContains(p); }

// Whether `caller` is code that keeps process state (g_process_code): its allocations are
// glibc's even while a rank runs.
[[gnu::noinline, maybe_unused]] bool process_code(const void* caller) {
  const int n = g_process_code_count.load(std::memory_order_acquire);
  const auto a = reinterpret_cast<std::uintptr_t>(caller);
  for (int i = 0; i < n; ++i)
    if (a >= g_process_code[i].lo && a < g_process_code[i].hi) return true;
  return false;
}
inline bool from_process_code(const void* caller) {
  return g_process_code_count.load(std::memory_order_relaxed) != 0 && process_code(caller);
}

// Whether a thread started from `caller` is one of the runtime's own (UCX's, PMIx's, the
// PEs'), which never touch a rank's memory.
bool runtime_thread_code(const void* caller) {
  Dl_info info;
  if (!::dladdr(caller, &info) || !info.dli_fname) return false;
  const std::string_view base = file_name(info.dli_fname);
  for (std::string_view lib : {"libucharm", "libucs.", "libucp.", "libuct", "libucm.", "libpmix.", "libevent",
                               "libhwloc.", "libcuda.", "libnvidia", "libcudart", "libcublas", "libcufft",
                               "libcurand", "libcusparse", "libcusolver", "libnccl", "libnvrtc", "libcupti"})
    if (base.starts_with(lib)) return true;
  return false;
}

// memalign's alignment rules, as glibc's: at least 16; any other value rounds up to the
// next power of two; 0 when none exists.
inline std::size_t memalign_alignment(std::size_t align) {
  if (align <= 16) return 16;
  if (align > (SIZE_MAX / 2 + 1)) return 0;
  return std::size_t{1} << (64 - __builtin_clzll(align - 1));
}

// While the slice allocator works (it may map pages, and UCX's memory hooks then run and
// allocate for themselves), allocations are glibc's: only the program's own go to its slice.
class InAllocator {
 public:
  InAllocator() : saved_(g_active) { g_active = nullptr; }
  ~InAllocator() { g_active = saved_; }
  InAllocator(const InAllocator&) = delete;
  InAllocator& operator=(const InAllocator&) = delete;
  CmiIsoSlice* saved() const { return saved_; }

 private:
  CmiIsoSlice* saved_;
};

}  // namespace

bool runtime_thread(const void* caller) { return runtime_thread_code(caller); }
// The program's libraries (an OpenMP runtime among them) are loaded when its first copy is,
// after prepare_process: looked for again then (once found, the table stays).
void find_process_code() { scan_process_code(); }
bool is_process_code(const void* caller) { return process_code(caller); }

void note_thread_start(CmiIsoSlice* active, const void* caller) {
  if (!g_threads.load(std::memory_order_relaxed) && (active || !runtime_thread_code(caller))) {
    g_threads.store(true);
    g_careful.store(true);
  }
}

}  // namespace ampi::heap

#if !defined(__SANITIZE_ADDRESS__)
using ampi::heap::from_process_code;
using ampi::heap::g_active;
using ampi::heap::InAllocator;
using ampi::heap::in_region;
using ampi::heap::memalign_alignment;
using ampi::heap::out_of_memory;
using ampi::heap::SliceLock;

namespace {

// Whether the slice path must check its caller or take the slice's lock (g_careful).
inline bool careful() { return ampi::heap::g_careful.load(std::memory_order_relaxed); }

// Runs a slice heap operation with glibc as the allocator meanwhile and, once threads of
// the program exist, under the slice's lock. The entry points call the slice heap directly
// until g_careful is set (their shortest path, as cheap as before there were locks); then
// these out-of-line paths, which also check the caller.
template <class Op>
inline auto in_slice(const CmiIsoSlice* s, Op op) {
  InAllocator in;
  if (!ampi::heap::g_threads.load(std::memory_order_relaxed)) [[likely]]
    return op();
  SliceLock lock(s);
  return op();
}

[[gnu::noinline]] void* slice_malloc(CmiIsoSlice* s, std::size_t n, const void* caller) {
  if (from_process_code(caller)) [[unlikely]]
    return __libc_malloc(n);
  void* p = in_slice(s, [&] { return CmiIsoMalloc(s, n); });
  return p ? p : out_of_memory();
}

[[gnu::noinline]] void* slice_calloc(CmiIsoSlice* s, std::size_t n, std::size_t size, const void* caller) {
  if (from_process_code(caller)) [[unlikely]]
    return __libc_calloc(n, size);
  void* p = in_slice(s, [&] { return CmiIsoCalloc(s, n, size); });
  return p ? p : out_of_memory();
}

// memalign as glibc's: any alignment, rounded up to a power of two (EINVAL past the
// largest).
[[gnu::noinline]] void* slice_memalign(CmiIsoSlice* s, std::size_t align, std::size_t n, const void* caller) {
  if (from_process_code(caller)) [[unlikely]]
    return __libc_memalign(align, n);
  const std::size_t a = memalign_alignment(align);
  if (a == 0) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = in_slice(s, [&] { return CmiIsoMemalign(s, a, n); });
  return p ? p : out_of_memory();
}

void* do_memalign(std::size_t align, std::size_t n, const void* caller) {
  if (CmiIsoSlice* s = g_active) [[unlikely]]
    return slice_memalign(s, align, n, caller);
  return __libc_memalign(align, n);
}

// A block of a slice, wherever it is freed. A block of a rank that left this process (a
// static destructor at exit): its pages are gone with it, and so is the block.
[[gnu::noinline]] void slice_free(void* p) {
  if (CmiIsoSlice* s = CmiIsoSliceOf(p)) in_slice(s, [&] { CmiIsoFree(s, p); });
}

// A block stays in the heap it came from (a rank's block resized by the runtime or by a
// thread of the program stays the rank's).
[[gnu::noinline]] void* slice_realloc(void* p, std::size_t n) {
  CmiIsoSlice* s = CmiIsoSliceOf(p);
  if (!s) return out_of_memory();
  if (n == 0) {
    in_slice(s, [&] { CmiIsoFree(s, p); });
    return nullptr;
  }
  void* q = in_slice(s, [&] { return CmiIsoRealloc(s, p, n); });
  return q ? q : out_of_memory();
}

void* do_realloc(void* p, std::size_t n, const void* caller) {
  if (!p) {
    if (CmiIsoSlice* s = g_active) [[unlikely]]
      return slice_malloc(s, n, caller);
    return __libc_malloc(n);
  }
  if (in_region(p)) [[unlikely]]
    return slice_realloc(p, n);
  return __libc_realloc(p, n);
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

void* malloc(std::size_t n) {
  if (CmiIsoSlice* s = g_active) [[unlikely]] {
    if (careful()) [[unlikely]]
      return slice_malloc(s, n, __builtin_return_address(0));
    InAllocator in;
    void* p = CmiIsoMalloc(s, n);
    return p ? p : out_of_memory();
  }
  return __libc_malloc(n);
}

void free(void* p) {
  if (in_region(p)) [[unlikely]] {
    if (careful()) [[unlikely]]
      return slice_free(p);
    InAllocator in;
    if (CmiIsoSlice* s = CmiIsoSliceOf(p)) CmiIsoFree(s, p);
    return;
  }
  __libc_free(p);
}

void* calloc(std::size_t n, std::size_t size) {
  if (CmiIsoSlice* s = g_active) [[unlikely]]
    return slice_calloc(s, n, size, __builtin_return_address(0));
  return __libc_calloc(n, size);
}

void* realloc(void* p, std::size_t n) { return do_realloc(p, n, __builtin_return_address(0)); }

void* reallocarray(void* p, std::size_t n, std::size_t size) {
  std::size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) return out_of_memory();
  return do_realloc(p, bytes, __builtin_return_address(0));
}

void* memalign(std::size_t align, std::size_t n) { return do_memalign(align, n, __builtin_return_address(0)); }

void* aligned_alloc(std::size_t align, std::size_t n) {
  return do_memalign(align, n, __builtin_return_address(0));
}

int posix_memalign(void** out, std::size_t align, std::size_t n) {
  // glibc's rule: a power of two times sizeof(void*).
  if (align % sizeof(void*) != 0 || (align & (align - 1)) != 0 || align == 0) return EINVAL;
  const int saved = errno;
  void* p = do_memalign(align, n, __builtin_return_address(0));
  if (!p) {
    const int e = errno;
    errno = saved;
    return e ? e : ENOMEM;
  }
  *out = p;
  errno = saved;
  return 0;
}

void* valloc(std::size_t n) {
  return do_memalign(static_cast<std::size_t>(::getpagesize()), n, __builtin_return_address(0));
}

void* pvalloc(std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(::getpagesize());
  if (n > SIZE_MAX - page) return out_of_memory();
  return do_memalign(page, (n + page - 1) / page * page, __builtin_return_address(0));
}

std::size_t malloc_usable_size(void* p) {
  if (in_region(p)) [[unlikely]] return CmiIsoSliceOf(p) ? CmiIsoUsableSize(p) : 0;
  using Fn = std::size_t (*)(void*);
  // glibc's own (the one this definition hides).
  static const Fn libc = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "malloc_usable_size"));
  return p && libc ? libc(p) : 0;
}

// pthread_create is interposed in threads.cpp (heap::note_thread_start).

}  // extern "C"
#pragma GCC visibility pop
#endif
