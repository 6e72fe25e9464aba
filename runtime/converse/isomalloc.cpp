// Isomalloc: one region reserved at the same virtual address in every process, cut into
// equal slices (slice k for thread/rank k). A slice's heap and stack are at the same
// addresses wherever it is unpacked, so a byte copy of its used extents moves a heap with
// its pointers, and a suspended thread with its frames. Code and library addresses must
// match too: CmiIsomallocInit re-executes the program with address-space randomization
// off (docs/architecture.md, "Isomalloc: memory that moves").
#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "isomalloc.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace ucharm::converse::iso {

namespace {

constexpr std::uintptr_t kRegionBase = 0x200000000000ull;  // 32 TiB: far from brk, mmap and ASan's shadow
constexpr std::size_t kRegionMax = std::size_t{48} << 40;     // up to 80 TiB
constexpr std::uint32_t kPackVersion = 1;
constexpr std::uint64_t kPackMagic = 0x75636861726d5350ull;  // "ucharmSP"
constexpr const char* kReexecEnv = "UCHARM_ISOMALLOC_REEXEC";
constexpr const char* kMarkerEnv = "UCHARM_ISOMALLOC_REEXECED";

// Addresses that differ between processes unless the layout is fixed (no randomization,
// same binary and libraries).
enum LayoutItem { kExe, kLibc, kLibstdcxx, kUcharm, kTls, kLayoutItems };
constexpr const char* kLayoutNames[kLayoutItems] = {
    "the program's entry point", "libc (getpid)", "libstdc++ (std::terminate)",
    "libucharm-converse (CmiIsoSlicePack)", "thread-local storage (errno)"};

// Everything isomalloc knows in this process: one object, reached through process().
struct Process {
  bool initialized = false;
  bool reserved = false;
  bool fixed_layout = false;
  std::string why_not;  // why threads cannot move (empty: they can)
  std::string error;    // why set-up failed, for CmiIsomallocError
  std::uintptr_t base = kRegionBase;
  // Address space costs nothing until used: the region takes what lies free between 32T
  // and 80T (above: the program itself, at 0x555555554000 without randomization, and the
  // libraries), in 1024 slices of 48G, so that a rank's heap grants a block as large as
  // malloc would on a large machine.
  std::size_t region = kRegionMax;
  std::size_t slice = std::size_t{48} << 30;
  bool region_given = false;
  int count = 0;
  struct Local {
    bool live = false;
    void* word = nullptr;  // threads.cpp: the resume message
  };
  std::vector<Local> slices;
};

Process& process() {
  static Process p;
  return p;
}

// The last failure of a call on this thread (threads that share a slice heap may fail at
// once); the process's own error (set up, layout) shows where none is set.
thread_local std::string t_error;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::uint64_t stack_canary() {
#if defined(__x86_64__)
  std::uint64_t v;
  asm volatile("mov %%fs:0x28, %0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

void layout_here(std::uint64_t out[kLayoutItems]) {
  void (*term)() noexcept = &std::terminate;
  out[kExe] = getauxval(AT_ENTRY);
  out[kLibc] = addr(reinterpret_cast<void*>(&::getpid));
  out[kLibstdcxx] = addr(reinterpret_cast<void*>(term));
  out[kUcharm] = addr(reinterpret_cast<void*>(&CmiIsoSlicePack));
  out[kTls] = addr(&errno);
}

std::size_t stack_reserve(std::size_t slice) {
  std::size_t r = slice / 4;
  return r > (std::size_t{1} << 30) ? std::size_t{1} << 30 : r;
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "ucharm isomalloc: %s\n", msg.c_str());
  std::exit(1);
}

std::size_t parse_size(const char* name, const char* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  std::size_t mult = 1;
  if (end && *end) {
    switch (*end | 0x20) {
      case 'k': mult = std::size_t{1} << 10; break;
      case 'm': mult = std::size_t{1} << 20; break;
      case 'g': mult = std::size_t{1} << 30; break;
      case 't': mult = std::size_t{1} << 40; break;
      default: mult = 0;
    }
    if (end[1]) mult = 0;
  }
  if (errno || end == v || !mult || n == 0 || n > (std::size_t{1} << 47) / mult)
    usage_error(std::string("+") + name + "=" + v + ": expected a size in bytes (suffixes k, M, G, T)");
  return n * mult;
}

// Takes +isomalloc-region / +isomalloc-slice out of argv.
void parse_options(int& argc, char** argv, Process& p) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* names[] = {"isomalloc-region", "isomalloc-slice"};
    bool taken = false;
    for (int k = 0; k < 2; ++k) {
      std::size_t len = std::strlen(names[k]);
      if (a[0] != '+' || std::strncmp(a + 1, names[k], len) != 0) continue;
      const char* v = nullptr;
      if (a[1 + len] == '=') {
        v = a + 2 + len;
      } else if (a[1 + len] == '\0') {
        if (i + 1 >= argc) usage_error(std::string("+") + names[k] + " needs a value");
        v = argv[++i];
      } else {
        continue;
      }
      (k == 0 ? p.region : p.slice) = parse_size(names[k], v);
      if (k == 0) p.region_given = true;
      taken = true;
    }
    if (!taken) argv[out++] = argv[i];
  }
  argv[out] = nullptr;
  argc = out;
  if (p.slice % kPage || p.slice < (std::size_t{1} << 20))
    usage_error("+isomalloc-slice: a slice must be a multiple of 4096 and at least 1M");
  if (p.slice > kRegionMax) usage_error("+isomalloc-slice: at most 48T");
  if (!p.region_given) p.region -= p.region % p.slice;  // whole slices
  if (p.region % p.slice) usage_error("+isomalloc-region must be a multiple of +isomalloc-slice");
  if (p.region > kRegionMax) usage_error("+isomalloc-region: at most 48T");
}

// Re-executes the program with randomization off unless it is off already. Returns only
// when no exec happened (or it failed); sets why_not when the layout is not fixed.
void fix_layout(char** argv, Process& p) {
  int pers = personality(0xffffffff);
  const char* marker = std::getenv(kMarkerEnv);
  bool reexeced = marker != nullptr;
  if (reexeced) unsetenv(kMarkerEnv);  // the programs it starts decide for themselves
  if (pers == -1) {
    p.why_not = std::string("personality() failed (") + std::strerror(errno) +
                "): cannot tell whether address-space randomization is on; run under `setarch -R`";
    return;
  }
  if (pers & ADDR_NO_RANDOMIZE) {
    p.fixed_layout = true;
    return;
  }
  const char* env = std::getenv(kReexecEnv);
  if (env && std::strcmp(env, "0") == 0) {
    p.why_not = "address-space randomization is on and UCHARM_ISOMALLOC_REEXEC=0 keeps the program from "
                "re-executing without it; run under `setarch -R` (or unset UCHARM_ISOMALLOC_REEXEC)";
    return;
  }
  if (reexeced) {
    p.why_not = "the program re-executed itself with ADDR_NO_RANDOMIZE but randomization is still on; run "
                "under `setarch -R`";
    return;
  }
  if (personality(static_cast<unsigned long>(pers) | ADDR_NO_RANDOMIZE) == -1) {
    p.why_not = std::string("personality(ADDR_NO_RANDOMIZE) failed (") + std::strerror(errno) +
                "): a seccomp profile may forbid it; run under `setarch -R`, or allow personality";
    return;
  }
  setenv(kMarkerEnv, "1", 1);
  execv("/proc/self/exe", argv);
  int e = errno;  // still here: the exec failed
  unsetenv(kMarkerEnv);
  personality(static_cast<unsigned long>(pers));
  p.why_not = std::string("re-executing /proc/self/exe without address-space randomization failed (") +
              std::strerror(e) + "); run under `setarch -R`";
}

void reserve(Process& p) {
  void* m = mmap(reinterpret_cast<void*>(p.base), p.region, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  // A limit on address space (ulimit -v) refuses the default region: fewer slices of the
  // same size (every process must agree on the size, not on the count).
  while (m == MAP_FAILED && errno == ENOMEM && !p.region_given && p.region / 2 >= p.slice &&
         (p.region / 2) % p.slice == 0) {
    p.region /= 2;
    m = mmap(reinterpret_cast<void*>(p.base), p.region, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  }
  if (m == MAP_FAILED || addr(m) != p.base) {
    int e = errno;
    if (m != MAP_FAILED) munmap(m, p.region);  // a kernel without MAP_FIXED_NOREPLACE put it elsewhere
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "cannot reserve %zu bytes at %#lx (%s): something is mapped there; try a smaller "
                  "+isomalloc-region",
                  p.region, static_cast<unsigned long>(p.base),
                  m == MAP_FAILED ? std::strerror(e) : "the kernel placed it elsewhere");
    p.error = buf;
    std::fprintf(stderr, "ucharm isomalloc: %s; threads cannot migrate\n", buf);
    return;
  }
  p.reserved = true;
  p.count = static_cast<int>(p.region / p.slice);
  p.slices.assign(static_cast<std::size_t>(p.count), {});
}

CmiIsoSlice* slice_at(int id) {
  return reinterpret_cast<CmiIsoSlice*>(process().base + static_cast<std::uintptr_t>(id) * process().slice);
}

CmiIsoSlice* checked(const CmiIsoSlice* s, const char* who) {
  Process& p = process();
  if (!s || !p.reserved || addr(s) < p.base || addr(s) >= p.base + p.region || (addr(s) - p.base) % p.slice ||
      s->magic != kSliceMagic || !p.slices[static_cast<std::size_t>(s->id)].live) {
    std::fprintf(stderr, "ucharm isomalloc: %s: %p is not a live slice of this process\n", who,
                 static_cast<const void*>(s));
    std::abort();
  }
  return const_cast<CmiIsoSlice*>(s);
}

// Gives the slice's address range back to the reservation: no pages, no access.
void unmap_slice(std::uintptr_t lo, std::size_t bytes, const CmiIsoSlice* s) {
#if defined(__SANITIZE_ADDRESS__)
  // A suspended thread's frames left redzones poisoned; this range may hold a stack again.
  if (s && s->stack_lo) __asan_unpoison_memory_region(reinterpret_cast<void*>(s->stack_lo), s->stack_hi - s->stack_lo);
#else
  (void)s;
#endif
  mmap(reinterpret_cast<void*>(lo), bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
       0);
}

struct PackHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t id;
  std::uint64_t region_base, slice_bytes;
  std::uint64_t layout[kLayoutItems];
  std::uint64_t canary;
  std::uint32_t sender_fixed;
  std::uint32_t extents;
  std::uint64_t total;  // bytes of the whole pack
  std::uint64_t heap_committed, stack_lo, stack_hi;
};
struct Extent {
  std::uint64_t addr, len;
};

// The slice's bytes that matter: the heap up to its top minus free blocks' interiors,
// and the stack from its live end up.
std::vector<Range> extents_of(const CmiIsoSlice* s) {
  std::vector<Range> holes;
  heap_holes(s, holes);
  std::vector<Range> out;
  std::uintptr_t at = s->base;
  for (const Range& h : holes) {
    if (h.lo > at) out.push_back({at, h.lo});
    at = h.hi;
  }
  if (s->heap_top > at) out.push_back({at, s->heap_top});
  if (s->stack_lo) out.push_back({s->stack_live & ~std::uintptr_t{63}, s->stack_hi});
  return out;
}

std::size_t pack_size(const std::vector<Range>& ex) {
  std::size_t n = sizeof(PackHeader) + ex.size() * sizeof(Extent);
  for (const Range& r : ex) n += r.hi - r.lo;
  return n;
}

bool fail(const std::string& msg) {
  t_error = msg;
  return false;
}

}  // namespace

bool commit(std::uintptr_t lo, std::uintptr_t hi) {
  if (hi <= lo) return true;
  // A fresh mapping in place of the reserved range (which holds no pages): the kernel counts
  // it as it counts malloc's own mappings, so a request the machine's overcommit policy
  // refuses fails here, as it would in glibc, instead of ending in the OOM killer later.
  void* m = mmap(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (m != MAP_FAILED) return true;
  int e = errno;
  // Some kernels unmap the old range before they refuse: reserve it again (NOREPLACE: a
  // no-op where it is still there).
  mmap(reinterpret_cast<void*>(lo), hi - lo, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  return fail("cannot commit " + std::to_string(hi - lo) + " bytes of slice memory: " + std::strerror(e));
}

void discard(std::uintptr_t lo, std::uintptr_t hi) {
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

bool make_stack(CmiIsoSlice* s, std::size_t bytes) {
  bytes = page_up(bytes);
  std::size_t most = stack_reserve(process().slice) - kPage;
  if (bytes > most)
    return fail("a migratable thread's stack of " + std::to_string(bytes) + " bytes does not fit its slice (" +
                std::to_string(most) + " at most; raise +isomalloc-slice)");
  if (s->thread) return fail("slice " + std::to_string(s->id) + " already holds a thread");
  if (s->stack_lo) {  // a finished thread's stack: give it back first
#if defined(__SANITIZE_ADDRESS__)
    __asan_unpoison_memory_region(reinterpret_cast<void*>(s->stack_lo), s->stack_hi - s->stack_lo);
#endif
    mmap(reinterpret_cast<void*>(s->stack_lo), s->stack_hi - s->stack_lo, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    s->stack_lo = s->stack_hi = s->stack_live = 0;
  }
  if (!commit(s->end - bytes, s->end)) return false;
  s->stack_lo = s->end - bytes;
  s->stack_hi = s->stack_live = s->end;
  return true;
}

void*& local_word(const CmiIsoSlice* s) { return process().slices[static_cast<std::size_t>(s->id)].word; }

void set_error(std::string msg) { t_error = std::move(msg); }

}  // namespace ucharm::converse::iso

using namespace ucharm::converse::iso;

bool CmiIsomallocInit(int& argc, char** argv) {
  Process& p = process();
  if (p.initialized) return p.reserved;
  p.initialized = true;
  fix_layout(argv, p);  // may exec: before argv changes, so the new image gets the same one
  parse_options(argc, argv, p);
  reserve(p);
  if (!p.why_not.empty()) {
    std::fprintf(stderr, "ucharm isomalloc: %s; threads cannot migrate\n", p.why_not.c_str());
    p.error = p.why_not;
  }
  return p.reserved;
}

bool CmiIsomallocReady() { return process().reserved; }
bool CmiIsomallocCanMigrate() { return process().reserved && process().fixed_layout; }
const char* CmiIsomallocError() {
  Process& p = process();
  if (!p.initialized) return "CmiIsomallocInit was not called at the start of main()";
  return t_error.empty() ? p.error.c_str() : t_error.c_str();
}
int CmiIsomallocNumSlices() { return process().count; }
std::size_t CmiIsomallocSliceBytes() { return process().slice; }

CmiIsoSlice* CmiIsomallocSlice(int id) {
  Process& p = process();
  if (!p.reserved) {
    if (p.initialized) return nullptr;  // error already says why
    t_error = "CmiIsomallocInit was not called at the start of main()";
    return nullptr;
  }
  if (id < 0 || id >= p.count) {
    fail("slice " + std::to_string(id) + " does not exist: " + std::to_string(p.count) +
         " slices (raise +isomalloc-region or lower +isomalloc-slice)");
    return nullptr;
  }
  if (p.slices[static_cast<std::size_t>(id)].live) {
    fail("slice " + std::to_string(id) + " is already in use in this process");
    return nullptr;
  }
  CmiIsoSlice* s = slice_at(id);
  std::uintptr_t lo = addr(s);
  if (!commit(lo, page_up(lo + sizeof(CmiIsoSlice)))) return nullptr;
  s->magic = kSliceMagic;
  s->id = id;
  s->base = lo;
  s->end = lo + p.slice;
  s->heap_limit = s->end - stack_reserve(p.slice);
  s->heap_committed = page_up(lo + sizeof(CmiIsoSlice));
  s->stack_lo = s->stack_hi = s->stack_live = 0;
  s->thread = nullptr;
  heap_init(s);
  p.slices[static_cast<std::size_t>(id)] = {true, nullptr};
  return s;
}

int CmiIsoSliceId(const CmiIsoSlice* s) { return checked(s, "CmiIsoSliceId")->id; }

bool CmiIsomallocContains(const void* ptr) {
  Process& p = process();
  return p.reserved && addr(ptr) >= p.base && addr(ptr) < p.base + p.region;
}

CmiIsoSlice* CmiIsoSliceOf(const void* ptr) {
  Process& p = process();
  if (!CmiIsomallocContains(ptr)) return nullptr;
  std::size_t id = (addr(ptr) - p.base) / p.slice;
  return p.slices[id].live ? slice_at(static_cast<int>(id)) : nullptr;
}

void* CmiIsoMalloc(CmiIsoSlice* s, std::size_t n) { return heap_malloc(checked(s, "CmiIsoMalloc"), n); }
void* CmiIsoCalloc(CmiIsoSlice* s, std::size_t n, std::size_t size) {
  if (size && n > SIZE_MAX / size) return nullptr;
  return heap_calloc(checked(s, "CmiIsoCalloc"), n * size);
}
void* CmiIsoRealloc(CmiIsoSlice* s, void* p, std::size_t n) {
  return heap_realloc(checked(s, "CmiIsoRealloc"), p, n);
}
void* CmiIsoMemalign(CmiIsoSlice* s, std::size_t align, std::size_t n) {
  return heap_memalign(checked(s, "CmiIsoMemalign"), align, n);
}
void CmiIsoFree(CmiIsoSlice* s, void* p) { heap_free(checked(s, "CmiIsoFree"), p); }
std::size_t CmiIsoUsableSize(const void* p) { return p ? heap_usable(p) : 0; }
std::size_t CmiIsoUsedBytes(const CmiIsoSlice* s) { return checked(s, "CmiIsoUsedBytes")->used_bytes; }
const char* CmiIsoSliceCheck(const CmiIsoSlice* s) {
  t_error = heap_check(checked(s, "CmiIsoSliceCheck"));
  return t_error.empty() ? nullptr : t_error.c_str();
}

std::size_t CmiIsoSlicePackSize(const CmiIsoSlice* s) {
  return pack_size(extents_of(checked(s, "CmiIsoSlicePackSize")));
}

std::size_t CmiIsoSlicePack(const CmiIsoSlice* s, void* dest) {
  checked(s, "CmiIsoSlicePack");
  Process& p = process();
  std::vector<Range> ex = extents_of(s);
  PackHeader h{};
  h.magic = kPackMagic;
  h.version = kPackVersion;
  h.id = s->id;
  h.region_base = p.base;
  h.slice_bytes = p.slice;
  layout_here(h.layout);
  h.canary = stack_canary();
  h.sender_fixed = p.fixed_layout;
  h.extents = static_cast<std::uint32_t>(ex.size());
  h.total = pack_size(ex);
  h.heap_committed = s->heap_committed;
  h.stack_lo = s->stack_lo;
  h.stack_hi = s->stack_hi;
  char* out = static_cast<char*>(dest);
  std::memcpy(out, &h, sizeof h);
  out += sizeof h;
  for (const Range& r : ex) {
    Extent e{r.lo, r.hi - r.lo};
    std::memcpy(out, &e, sizeof e);
    out += sizeof e;
  }
  for (const Range& r : ex) {
    std::memcpy(out, reinterpret_cast<const void*>(r.lo), r.hi - r.lo);
    out += r.hi - r.lo;
  }
  return h.total;
}

CmiIsoSlice* CmiIsoSliceUnpack(const void* src, std::size_t len) {
  Process& p = process();
  if (!p.reserved) {
    fail(std::string("cannot unpack a slice: isomalloc is not set up in this process (") + CmiIsomallocError() + ")");
    return nullptr;
  }
  PackHeader h;
  if (len < sizeof h) return fail("cannot unpack a slice: " + std::to_string(len) + " bytes are too few"), nullptr;
  std::memcpy(&h, src, sizeof h);
  if (h.magic != kPackMagic || h.version != kPackVersion)
    return fail("cannot unpack a slice: not a slice pack (or of another version)"), nullptr;
  if (h.total != len)
    return fail("cannot unpack a slice: the pack says " + std::to_string(h.total) + " bytes, got " +
                std::to_string(len)),
           nullptr;
  if (h.region_base != p.base || h.slice_bytes != p.slice)
    return fail("cannot unpack a slice: the sender's region or slice size differs (same +isomalloc-region "
                "and +isomalloc-slice on every process)"),
           nullptr;
  std::uint64_t here[kLayoutItems];
  layout_here(here);
  for (int i = 0; i < kLayoutItems; ++i)
    if (here[i] != h.layout[i]) {
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "cannot unpack slice %d: %s is at %#llx here but at %#llx in the sending process, so its "
                    "code and library addresses differ (%s); a thread from there would crash here",
                    h.id, kLayoutNames[i], static_cast<unsigned long long>(here[i]),
                    static_cast<unsigned long long>(h.layout[i]),
                    !p.fixed_layout ? p.why_not.c_str()
                    : !h.sender_fixed ? "the sender runs with address-space randomization"
                                      : "different binaries or libraries, or libraries loaded in another order");
      fail(buf);
      return nullptr;
    }
  if (!p.fixed_layout) {
    fail("cannot unpack a slice: " + p.why_not);
    return nullptr;
  }
  if (h.id < 0 || h.id >= p.count) return fail("cannot unpack a slice: bad slice id"), nullptr;
  auto& local = p.slices[static_cast<std::size_t>(h.id)];
  if (local.live)
    return fail("cannot unpack slice " + std::to_string(h.id) + ": it is already in use in this process"), nullptr;
  std::uintptr_t lo = p.base + static_cast<std::uintptr_t>(h.id) * p.slice, hi = lo + p.slice;
  const char* in = static_cast<const char*>(src) + sizeof h;
  std::size_t table = std::size_t{h.extents} * sizeof(Extent);
  if (table > len - sizeof h) return fail("cannot unpack a slice: truncated extent table"), nullptr;
  bool ok = h.heap_committed > lo && h.heap_committed <= hi &&
            (h.stack_lo == 0 || (h.stack_lo >= h.heap_committed && h.stack_lo < h.stack_hi && h.stack_hi <= hi));
  std::size_t data = 0;
  for (std::uint32_t i = 0; ok && i < h.extents; ++i) {
    Extent e;
    std::memcpy(&e, in + i * sizeof e, sizeof e);
    bool in_heap = e.addr >= lo && e.addr + e.len <= h.heap_committed;
    bool in_stack = h.stack_lo && e.addr >= h.stack_lo && e.addr + e.len <= h.stack_hi;
    ok = e.len <= p.slice && (in_heap || in_stack);
    data += e.len;
  }
  if (!ok || sizeof h + table + data != len) return fail("cannot unpack a slice: corrupt extent table"), nullptr;
  if (!commit(lo, h.heap_committed) || (h.stack_lo && !commit(h.stack_lo, h.stack_hi))) {
    unmap_slice(lo, p.slice, nullptr);
    return nullptr;
  }
#if defined(__SANITIZE_ADDRESS__)
  if (h.stack_lo) __asan_unpoison_memory_region(reinterpret_cast<void*>(h.stack_lo), h.stack_hi - h.stack_lo);
#endif
  const char* bytes = in + table;
  // Every byte of an extent is written now: huge pages make that one fault per 2 MiB
  // instead of 512 (page faults are most of an unpack's cost). Afterwards the heap goes
  // back to small pages, so that what it grows into later stays unbacked until touched.
  auto* heap = reinterpret_cast<void*>(lo);
  madvise(heap, h.heap_committed - lo, MADV_HUGEPAGE);
  for (std::uint32_t i = 0; i < h.extents; ++i) {
    Extent e;
    std::memcpy(&e, in + i * sizeof e, sizeof e);
    // Fault the pages in as one batch: cheaper than one fault per page during the copy.
    madvise(reinterpret_cast<void*>(page_down(e.addr)), page_up(e.addr + e.len) - page_down(e.addr),
            23 /* MADV_POPULATE_WRITE, Linux 5.14; older kernels refuse it harmlessly */);
    std::memcpy(reinterpret_cast<void*>(e.addr), bytes, e.len);
    bytes += e.len;
  }
  madvise(heap, h.heap_committed - lo, MADV_NOHUGEPAGE);
  auto* s = reinterpret_cast<CmiIsoSlice*>(lo);
  if (s->magic != kSliceMagic || s->id != h.id || s->base != lo) {
    unmap_slice(lo, p.slice, nullptr);
    return fail("cannot unpack a slice: its header did not arrive intact"), nullptr;
  }
  // Frames compiled with -fstack-protector hold the sender's canary; this process checks
  // its own. The words that equal the sender's (random, 56 bits) are those canaries.
  std::uint64_t mine = stack_canary();
  if (s->stack_lo && h.canary != mine && h.canary != 0) {
    auto* w = reinterpret_cast<std::uint64_t*>(s->stack_live & ~std::uintptr_t{63});
    auto* end = reinterpret_cast<std::uint64_t*>(s->stack_hi);
    for (; w < end; ++w)
      if (*w == h.canary) *w = mine;
  }
  local = {true, nullptr};
  return s;
}

void CmiIsoSliceRelease(CmiIsoSlice* s) {
  checked(s, "CmiIsoSliceRelease");
  Process& p = process();
  auto& local = p.slices[static_cast<std::size_t>(s->id)];
  std::uintptr_t lo = s->base;
  local = {};
  unmap_slice(lo, p.slice, s);
}
