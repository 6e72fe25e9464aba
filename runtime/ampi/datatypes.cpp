// The datatype table, pack/unpack, MPI_Type_*, MPI_Pack/Unpack/Pack_size.
//
// A datatype is kept flattened, as two lists of runs in typemap order:
//  - items: runs of consecutive elements of one predefined type (pair types such as
//    MPI_DOUBLE_INT stay whole), for reduction operations and MPI_Get_elements;
//  - bytes: runs of bytes, for pack/unpack, merged across types where they touch, so a
//    contiguous type packs with one memcpy and a vector of doubles with one per block.
// A run may repeat at a fixed stride, so a vector of a million blocks is one run.
// Bounds follow MPI: lb/ub come from MPI_LB/MPI_UB markers or MPI_Type_create_resized when
// there are any (they are sticky: they carry into every type built from this one), else
// from the data, with a struct's extent padded to its strictest alignment like a C struct.
//
// Handles: the predefined types are one constant table; derived types live in one
// process-wide table (ranks in one process are user-level threads that create types
// concurrently; they never pass handles to each other). Lookups take no lock: the table is
// chunks that never move. A derived type is reference counted so that communication that
// still uses a type the program freed (legal in MPI) keeps it alive: see type_retain.
#include "internal.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

namespace ampi {

// Used by ops.cpp (declared there too; internal.h should list them).
MPI_Datatype type_uniform_basic(MPI_Datatype t);
// fn gets `reps` blocks of `n` consecutive items of `basic`, `stride` bytes apart from `offset` on.
using TypeRunFn = void (*)(void* ctx, std::ptrdiff_t offset, std::size_t n, std::size_t reps, std::ptrdiff_t stride,
                           MPI_Datatype basic);
void type_for_each_run(MPI_Datatype t, int count, TypeRunFn fn, void* ctx);
void type_retain(MPI_Datatype t);
void type_release(MPI_Datatype t);

namespace {

constexpr int kPredefined = UCHARM_MPI_PREDEFINED_TYPES;

// ---- predefined types ---------------------------------------------------------------------

// The C layout of MPI's pair types (MPI_DOUBLE_INT is struct { double; int; }).
template <class V>
struct PairOf {
  V value;
  int index;
};

struct Basic {
  const char* name = nullptr;
  std::size_t size = 0;         // MPI_Type_size: the bytes of data
  std::ptrdiff_t extent = 0;    // the C sizeof
  std::size_t align = 1;
  std::size_t part1 = 0;        // bytes of data at offset 0
  std::ptrdiff_t part2_at = 0;  // pair types: their int, part2 bytes at part2_at
  std::size_t part2 = 0;
  int elements = 1;  // basic elements (MPI_Get_elements counts a pair as two)
};

template <class T>
constexpr Basic plain(const char* name) {
  return Basic{name, sizeof(T), sizeof(T), alignof(T), sizeof(T), 0, 0, 1};
}

template <class V>
constexpr Basic pair(const char* name) {
  return Basic{name, sizeof(V) + sizeof(int), sizeof(PairOf<V>), alignof(PairOf<V>), sizeof(V),
               offsetof(PairOf<V>, index), sizeof(int), 2};
}

constexpr std::array<Basic, kPredefined> make_basics() {
  std::array<Basic, kPredefined> b{};
  b[MPI_DATATYPE_NULL] = Basic{"MPI_DATATYPE_NULL", 0, 0, 1, 0, 0, 0, 0};
  b[MPI_CHAR] = plain<char>("MPI_CHAR");
  b[MPI_SIGNED_CHAR] = plain<signed char>("MPI_SIGNED_CHAR");
  b[MPI_UNSIGNED_CHAR] = plain<unsigned char>("MPI_UNSIGNED_CHAR");
  b[MPI_BYTE] = plain<unsigned char>("MPI_BYTE");
  b[MPI_SHORT] = plain<short>("MPI_SHORT");
  b[MPI_UNSIGNED_SHORT] = plain<unsigned short>("MPI_UNSIGNED_SHORT");
  b[MPI_INT] = plain<int>("MPI_INT");
  b[MPI_UNSIGNED] = plain<unsigned>("MPI_UNSIGNED");
  b[MPI_LONG] = plain<long>("MPI_LONG");
  b[MPI_UNSIGNED_LONG] = plain<unsigned long>("MPI_UNSIGNED_LONG");
  b[MPI_LONG_LONG_INT] = plain<long long>("MPI_LONG_LONG_INT");
  b[MPI_UNSIGNED_LONG_LONG] = plain<unsigned long long>("MPI_UNSIGNED_LONG_LONG");
  b[MPI_FLOAT] = plain<float>("MPI_FLOAT");
  b[MPI_DOUBLE] = plain<double>("MPI_DOUBLE");
  b[MPI_LONG_DOUBLE] = plain<long double>("MPI_LONG_DOUBLE");
  b[MPI_WCHAR] = plain<wchar_t>("MPI_WCHAR");
  b[MPI_C_BOOL] = plain<bool>("MPI_C_BOOL");
  b[MPI_INT8_T] = plain<std::int8_t>("MPI_INT8_T");
  b[MPI_INT16_T] = plain<std::int16_t>("MPI_INT16_T");
  b[MPI_INT32_T] = plain<std::int32_t>("MPI_INT32_T");
  b[MPI_INT64_T] = plain<std::int64_t>("MPI_INT64_T");
  b[MPI_UINT8_T] = plain<std::uint8_t>("MPI_UINT8_T");
  b[MPI_UINT16_T] = plain<std::uint16_t>("MPI_UINT16_T");
  b[MPI_UINT32_T] = plain<std::uint32_t>("MPI_UINT32_T");
  b[MPI_UINT64_T] = plain<std::uint64_t>("MPI_UINT64_T");
  b[MPI_AINT] = plain<MPI_Aint>("MPI_AINT");
  b[MPI_OFFSET] = plain<MPI_Offset>("MPI_OFFSET");
  b[MPI_COUNT] = plain<MPI_Count>("MPI_COUNT");
  b[MPI_PACKED] = plain<unsigned char>("MPI_PACKED");
  b[MPI_FLOAT_INT] = pair<float>("MPI_FLOAT_INT");
  b[MPI_DOUBLE_INT] = pair<double>("MPI_DOUBLE_INT");
  b[MPI_LONG_INT] = pair<long>("MPI_LONG_INT");
  b[MPI_2INT] = pair<int>("MPI_2INT");
  b[MPI_SHORT_INT] = pair<short>("MPI_SHORT_INT");
  b[MPI_LONG_DOUBLE_INT] = pair<long double>("MPI_LONG_DOUBLE_INT");
  b[MPI_C_FLOAT_COMPLEX] = Basic{"MPI_C_FLOAT_COMPLEX", 2 * sizeof(float), 2 * sizeof(float),
                                 alignof(float), 2 * sizeof(float), 0, 0, 1};
  b[MPI_C_DOUBLE_COMPLEX] = Basic{"MPI_C_DOUBLE_COMPLEX", 2 * sizeof(double), 2 * sizeof(double),
                                  alignof(double), 2 * sizeof(double), 0, 0, 1};
  b[MPI_C_LONG_DOUBLE_COMPLEX] =
      Basic{"MPI_C_LONG_DOUBLE_COMPLEX", 2 * sizeof(long double), 2 * sizeof(long double),
            alignof(long double), 2 * sizeof(long double), 0, 0, 1};
  b[MPI_UB] = Basic{"MPI_UB", 0, 0, 1, 0, 0, 0, 0};
  b[MPI_LB] = Basic{"MPI_LB", 0, 0, 1, 0, 0, 0, 0};
  b[MPI_CXX_BOOL] = plain<bool>("MPI_CXX_BOOL");
  return b;
}

constexpr std::array<Basic, kPredefined> kBasics = make_basics();

// Checked once here so that a new predefined type in mpi.h.in cannot be left out.
constexpr bool all_named() {
  for (const Basic& b : kBasics)
    if (b.name == nullptr) return false;
  return true;
}
static_assert(all_named(), "a predefined datatype of mpi.h.in has no entry in make_basics()");
static_assert(kBasics[MPI_LONG_DOUBLE].size == 16 && kBasics[MPI_DOUBLE_INT].size == 12 &&
                  kBasics[MPI_DOUBLE_INT].extent == 16 && kBasics[MPI_2INT].size == 8,
              "x86-64 layout expected");

// ---- layouts ------------------------------------------------------------------------------

// `count` consecutive items of `basic` (bytes when in a bytes list) at `offset`, the whole
// block repeated `reps` times `stride` bytes apart.
struct Run {
  std::ptrdiff_t offset = 0;
  std::size_t count = 0;
  std::size_t reps = 1;
  std::ptrdiff_t stride = 0;
  MPI_Datatype basic = MPI_BYTE;
};

struct Layout {
  std::vector<Run> items;  // typed runs (basic = a predefined type)
  std::vector<Run> bytes;  // byte runs (basic = MPI_BYTE)
  std::size_t size = 0;
  long long elements = 0;  // basic elements in one element
  std::ptrdiff_t lb = 0, ub = 0, true_lb = 0, true_ub = 0;
  bool lb_marked = false, ub_marked = false;  // bounds set by markers or resized (sticky)
  bool lb_known = false, ub_known = false;    // has a bound an enclosing type must count
  std::size_t align = 1;
  bool contiguous = true;                    // one dense block of size bytes at lb
  MPI_Datatype uniform = MPI_DATATYPE_NULL;  // the one basic type of all items, if one

  std::ptrdiff_t extent() const { return ub - lb; }
};

// Merges a repeated block whose stride equals its length into one block.
void normalize(Run& r, std::ptrdiff_t unit) {
  if (r.reps > 1 && r.stride == static_cast<std::ptrdiff_t>(r.count) * unit) {
    r.count *= r.reps;
    r.reps = 1;
    r.stride = 0;
  }
}

// Appends `s` to `v`, merging it into the last run when it continues it (contiguously, or
// as one more repetition at the same stride). `unit` is the extent of one item.
void append(std::vector<Run>& v, Run s, std::ptrdiff_t unit) {
  normalize(s, unit);
  if (s.count == 0 || s.reps == 0) return;
  if (!v.empty()) {
    Run& b = v.back();
    if (b.basic == s.basic) {
      if (b.reps == 1 && s.reps == 1 && s.offset == b.offset + static_cast<std::ptrdiff_t>(b.count) * unit) {
        b.count += s.count;
        return;
      }
      if (b.count == s.count) {
        std::ptrdiff_t step = b.reps == 1 ? s.offset - b.offset : b.stride;
        if (s.offset == b.offset + static_cast<std::ptrdiff_t>(b.reps) * step && (s.reps == 1 || s.stride == step)) {
          b.stride = step;
          b.reps += s.reps;
          normalize(b, unit);
          return;
        }
      }
    }
  }
  v.push_back(s);
}

std::ptrdiff_t item_unit(MPI_Datatype basic) { return kBasics[basic].extent; }

// Appends `n` copies of the runs `src`, `ext` bytes apart, starting at `disp`.
void add_runs(std::vector<Run>& dst, const std::vector<Run>& src, std::ptrdiff_t disp, std::size_t n,
              std::ptrdiff_t ext, bool bytes) {
  auto unit = [bytes](const Run& r) { return bytes ? std::ptrdiff_t{1} : item_unit(r.basic); };
  if (src.size() == 1 && n > 1) {
    Run s = src[0];
    s.offset += disp;
    if (s.reps == 1) {
      s.reps = n;
      s.stride = ext;
      append(dst, s, unit(s));
      return;
    }
    if (s.stride * static_cast<std::ptrdiff_t>(s.reps) == ext) {
      s.reps *= n;
      append(dst, s, unit(s));
      return;
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    for (Run s : src) {
      s.offset += disp + static_cast<std::ptrdiff_t>(k) * ext;
      append(dst, s, unit(s));
    }
  }
}

// The flags that follow from the runs and bounds.
void finish_flags(Layout& l) {
  l.contiguous = l.size == 0 ||
                 (l.bytes.size() == 1 && l.bytes[0].reps == 1 && l.bytes[0].offset == l.lb &&
                  l.bytes[0].count == l.size && l.extent() == static_cast<std::ptrdiff_t>(l.size));
  l.uniform = l.items.empty() ? MPI_DATATYPE_NULL : l.items[0].basic;
  for (const Run& r : l.items)
    if (r.basic != l.uniform) l.uniform = MPI_DATATYPE_NULL;
}

// Builds a layout from components: `n` copies of a type at a displacement.
class Builder {
 public:
  // `n` copies of `c` at disp, disp + spacing, ... (spacing: c's extent unless given).
  void add(const Layout& c, std::ptrdiff_t disp, std::size_t n) { add(c, disp, n, c.extent()); }
  void add(const Layout& c, std::ptrdiff_t disp, std::size_t n, std::ptrdiff_t spacing) {
    if (n == 0) return;
    std::ptrdiff_t ext = spacing;
    std::ptrdiff_t last = disp + static_cast<std::ptrdiff_t>(n - 1) * ext;
    std::ptrdiff_t lo = std::min(disp, last), hi = std::max(disp, last);
    if (c.lb_marked) {
      lb_marked_min_ = lb_marked_ ? std::min(lb_marked_min_, lo + c.lb) : lo + c.lb;
      lb_marked_ = true;
    } else if (c.lb_known) {
      lb_min_ = has_lb_ ? std::min(lb_min_, lo + c.lb) : lo + c.lb;
      has_lb_ = true;
    }
    if (c.ub_marked) {
      ub_marked_max_ = ub_marked_ ? std::max(ub_marked_max_, hi + c.ub) : hi + c.ub;
      ub_marked_ = true;
    } else if (c.ub_known) {
      ub_max_ = has_ub_ ? std::max(ub_max_, hi + c.ub) : hi + c.ub;
      has_ub_ = true;
    }
    if (!c.bytes.empty()) {
      l_.true_lb = has_data_ ? std::min(l_.true_lb, lo + c.true_lb) : lo + c.true_lb;
      l_.true_ub = has_data_ ? std::max(l_.true_ub, hi + c.true_ub) : hi + c.true_ub;
      has_data_ = true;
      l_.align = std::max(l_.align, c.align);
    }
    l_.size += n * c.size;
    l_.elements += static_cast<long long>(n) * c.elements;
    add_runs(l_.items, c.items, disp, n, ext, false);
    add_runs(l_.bytes, c.bytes, disp, n, ext, true);
  }

  // `pad`: round the extent up to the alignment, as a C struct is (MPI_Type_create_struct
  // without markers).
  Layout finish(bool pad) {
    l_.lb_marked = lb_marked_;
    l_.ub_marked = ub_marked_;
    l_.lb_known = lb_marked_ || has_lb_;
    l_.ub_known = ub_marked_ || has_ub_;
    l_.lb = lb_marked_ ? lb_marked_min_ : has_lb_ ? lb_min_ : 0;
    l_.ub = ub_marked_ ? ub_marked_max_ : has_ub_ ? ub_max_ : 0;
    if (pad && !lb_marked_ && !ub_marked_ && has_data_) {
      auto a = static_cast<std::ptrdiff_t>(l_.align);
      std::ptrdiff_t rem = l_.extent() % a;
      if (rem < 0) rem += a;
      if (rem != 0) l_.ub += a - rem;
    }
    if (!has_data_) l_.true_lb = l_.true_ub = 0;
    finish_flags(l_);
    return std::move(l_);
  }

 private:
  Layout l_;
  bool lb_marked_ = false, ub_marked_ = false, has_lb_ = false, has_ub_ = false, has_data_ = false;
  std::ptrdiff_t lb_marked_min_ = 0, ub_marked_max_ = 0, lb_min_ = 0, ub_max_ = 0;
};

Layout basic_layout(MPI_Datatype t) {
  const Basic& b = kBasics[t];
  Layout l;
  l.size = b.size;
  l.elements = b.elements;
  l.align = b.align;
  if (t == MPI_UB) {
    l.ub_marked = l.ub_known = true;
  } else if (t == MPI_LB) {
    l.lb_marked = l.lb_known = true;
  } else if (t != MPI_DATATYPE_NULL) {
    l.lb_known = l.ub_known = true;
    l.ub = b.extent;
    l.items.push_back(Run{0, 1, 1, 0, t});
    append(l.bytes, Run{0, b.part1, 1, 0, MPI_BYTE}, 1);
    if (b.part2 != 0) append(l.bytes, Run{b.part2_at, b.part2, 1, 0, MPI_BYTE}, 1);
    l.true_ub = b.part2 != 0 ? b.part2_at + static_cast<std::ptrdiff_t>(b.part2) : static_cast<std::ptrdiff_t>(b.size);
  }
  finish_flags(l);
  return l;
}

Layout resized(Layout l, std::ptrdiff_t lb, std::ptrdiff_t extent) {
  l.lb = lb;
  l.ub = lb + extent;
  l.lb_marked = l.ub_marked = l.lb_known = l.ub_known = true;
  finish_flags(l);
  return l;
}

// ---- the handle table ---------------------------------------------------------------------

// How a derived type was made, for MPI_Type_get_envelope / MPI_Type_get_contents: the
// combiner and the constructor's arguments, in the order MPI lists them. The types named
// are retained while this type exists (the program may free them first).
struct Recipe {
  int combiner = MPI_COMBINER_NAMED;
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;
};

struct Type {
  explicit Type(Layout layout, bool pre = false) : l(std::move(layout)), predefined(pre) {}
  ~Type() {
    for (MPI_Datatype t : recipe.types) type_release(t);
  }
  Type(const Type&) = delete;
  Type& operator=(const Type&) = delete;
  const Layout l;
  Recipe recipe;                    // set once, before the handle is given out
  const bool predefined;
  bool committed = false;           // only the creating rank writes it
  std::atomic<bool> freed{false};   // MPI_Type_free was called: the handle is gone
  std::atomic<int> refs{1};         // the program's handle plus type_retain
  std::string name;                 // under Table::names_mutex
};

class Table {
 public:
  Table() {
    for (int t = 0; t < kPredefined; ++t) predefined_[t] = std::make_unique<Type>(basic_layout(t), true);
  }

  Type* find(MPI_Datatype h) const {
    if (h < kPredefined) return h > 0 ? predefined_[h].get() : nullptr;
    auto i = static_cast<std::size_t>(h - kPredefined);
    if (i >= kChunkSize * kChunks) return nullptr;
    Slot* chunk = chunks_[i / kChunkSize].load(std::memory_order_acquire);
    return chunk ? chunk[i % kChunkSize].load(std::memory_order_acquire) : nullptr;
  }

  // The new handle, or -1 when every handle is taken.
  MPI_Datatype add(std::unique_ptr<Type> t) {
    std::lock_guard<std::mutex> g(mutex_);
    std::size_t i;
    // Freed handles wait a while before reuse, so that a stale handle is usually caught.
    if (free_.size() > kReuseAfter || (next_ == kChunkSize * kChunks && !free_.empty())) {
      i = free_.front();
      free_.pop_front();
    } else if (next_ < kChunkSize * kChunks) {
      i = next_++;
    } else {
      return -1;
    }
    auto& chunk = chunks_[i / kChunkSize];
    if (chunk.load(std::memory_order_relaxed) == nullptr) chunk.store(new Slot[kChunkSize]{}, std::memory_order_release);
    chunk.load(std::memory_order_relaxed)[i % kChunkSize].store(t.release(), std::memory_order_release);
    return static_cast<MPI_Datatype>(i + kPredefined);
  }

  void remove(MPI_Datatype h) {
    Type* t;
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto i = static_cast<std::size_t>(h - kPredefined);
      t = chunks_[i / kChunkSize].load(std::memory_order_relaxed)[i % kChunkSize].exchange(nullptr);
      free_.push_back(i);
    }
    delete t;
  }

  // Whether `h` was ever given out (a handle not found now was freed).
  bool issued(MPI_Datatype h) {
    std::lock_guard<std::mutex> g(mutex_);
    return h >= kPredefined && static_cast<std::size_t>(h - kPredefined) < next_;
  }

  std::mutex names_mutex;

 private:
  using Slot = std::atomic<Type*>;
  static constexpr std::size_t kChunkSize = 4096;
  static constexpr std::size_t kChunks = 4096;  // 16M derived types at once
  static constexpr std::size_t kReuseAfter = 1024;
  std::unique_ptr<Type> predefined_[kPredefined];
  std::atomic<Slot*> chunks_[kChunks]{};
  std::mutex mutex_;
  std::deque<std::size_t> free_;
  std::size_t next_ = 0;
};

// Never destroyed: ranks may still use types while the process exits.
Table& table() {
  static Table* t = new Table;
  return *t;
}

// A type the program may name: predefined, or derived and not freed.
Type* live(MPI_Datatype h) {
  Type* t = table().find(h);
  return t && !t->freed.load(std::memory_order_relaxed) ? t : nullptr;
}

// Internal users (pack, unpack) may use a type the program freed while they hold it.
const Layout& layout(MPI_Datatype h) {
  if (Type* t = table().find(h)) return t->l;
  static const Layout empty;
  return empty;
}

// ---- pack and unpack ----------------------------------------------------------------------

// The address `off` bytes from `base`. Integer arithmetic: with MPI_BOTTOM (a null buffer)
// the displacements are absolute addresses.
inline char* at(std::uintptr_t base, std::ptrdiff_t off) {
  return reinterpret_cast<char*>(base + static_cast<std::uintptr_t>(off));
}

// Copies one run, with fixed-size copies for the common block lengths.
template <bool kPack>
inline void copy_run(const Run& r, std::uintptr_t base, char*& packed) {
  char* p = at(base, r.offset);
  auto fixed = [&](auto n) {
    for (std::size_t k = 0; k < r.reps; ++k, p += r.stride, packed += n) {
      if constexpr (kPack) std::memcpy(packed, p, n);
      else std::memcpy(p, packed, n);
    }
  };
  switch (r.count) {
    case 4: fixed(std::integral_constant<std::size_t, 4>{}); return;
    case 8: fixed(std::integral_constant<std::size_t, 8>{}); return;
    case 16: fixed(std::integral_constant<std::size_t, 16>{}); return;
    default:
      for (std::size_t k = 0; k < r.reps; ++k, p += r.stride, packed += r.count) {
        if constexpr (kPack) std::memcpy(packed, p, r.count);
        else std::memcpy(p, packed, r.count);
      }
  }
}

}  // namespace

// ---- internal interface -------------------------------------------------------------------

bool type_valid(MPI_Datatype t) { return live(t) != nullptr; }

bool type_committed(MPI_Datatype t) {
  Type* p = live(t);
  if (!p || t == MPI_UB || t == MPI_LB) return false;
  return p->predefined || p->committed;
}

namespace {
std::array<TypeFacts, kPredefined> make_predefined_facts() {
  std::array<TypeFacts, kPredefined> f{};
  for (int t = 0; t < kPredefined; ++t) {
    const Layout l = basic_layout(t);
    f[static_cast<std::size_t>(t)] = TypeFacts{l.size, l.lb, l.contiguous};
  }
  return f;
}
}  // namespace
// Filled when the library loads, before any rank runs.
const std::array<TypeFacts, UCHARM_MPI_PREDEFINED_TYPES> detail::predefined_facts = make_predefined_facts();

bool detail::derived_type_facts(MPI_Datatype t, TypeFacts& out) {
  Type* p = live(t);
  if (!p || t == MPI_UB || t == MPI_LB || !(p->predefined || p->committed)) return false;
  out.size = p->l.size;
  out.lb = p->l.lb;
  out.contiguous = p->l.contiguous;
  return true;
}

std::size_t type_size(MPI_Datatype t) { return layout(t).size; }
std::ptrdiff_t type_extent(MPI_Datatype t) { return layout(t).extent(); }
std::ptrdiff_t type_lb(MPI_Datatype t) { return layout(t).lb; }
bool type_contiguous(MPI_Datatype t) { return layout(t).contiguous; }
MPI_Datatype type_uniform_basic(MPI_Datatype t) { return layout(t).uniform; }

void type_pack(const void* buf, int count, MPI_Datatype t, void* out) {
  const Layout& l = layout(t);
  if (count <= 0 || l.size == 0) return;
  auto base = reinterpret_cast<std::uintptr_t>(buf);
  char* o = static_cast<char*>(out);
  if (l.contiguous) {
    std::memcpy(o, at(base, l.lb), static_cast<std::size_t>(count) * l.size);
    return;
  }
  for (int i = 0; i < count; ++i, base += static_cast<std::uintptr_t>(l.extent()))
    for (const Run& r : l.bytes) copy_run<true>(r, base, o);
}

void type_unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype t) {
  const Layout& l = layout(t);
  if (count <= 0 || l.size == 0) return;
  bytes = std::min(bytes, static_cast<std::size_t>(count) * l.size);
  auto base = reinterpret_cast<std::uintptr_t>(buf);
  char* p = const_cast<char*>(static_cast<const char*>(in));
  if (l.contiguous) {
    std::memcpy(at(base, l.lb), p, bytes);
    return;
  }
  std::size_t whole = bytes / l.size;  // elements that arrived whole
  for (std::size_t i = 0; i < whole; ++i, base += static_cast<std::uintptr_t>(l.extent()))
    for (const Run& r : l.bytes) copy_run<false>(r, base, p);
  std::size_t left = bytes - whole * l.size;
  for (const Run& r : l.bytes) {
    for (std::size_t k = 0; k < r.reps && left > 0; ++k) {
      std::size_t n = std::min(left, r.count);
      std::memcpy(at(base, r.offset + static_cast<std::ptrdiff_t>(k) * r.stride), p, n);
      p += n;
      left -= n;
    }
    if (left == 0) break;
  }
}

std::string type_name(MPI_Datatype t) {
  Type* p = table().find(t);
  if (p == nullptr) return t == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : "invalid datatype " + std::to_string(t);
  std::string set;
  {
    std::lock_guard<std::mutex> g(table().names_mutex);
    set = p->name;
  }
  if (p->predefined) return set.empty() ? kBasics[t].name : set;
  std::string s = "derived datatype " + std::to_string(t);
  if (!set.empty()) s += " (" + set + ")";
  if (p->freed.load(std::memory_order_relaxed)) s += " (freed)";
  return s;
}

long long type_basic_elements(MPI_Datatype t, std::size_t bytes) {
  const Layout& l = layout(t);
  if (l.size == 0) return bytes == 0 ? 0 : MPI_UNDEFINED;
  long long n = static_cast<long long>(bytes / l.size) * l.elements;
  std::size_t left = bytes % l.size;
  for (const Run& r : l.items) {
    if (left == 0) break;
    const Basic& b = kBasics[r.basic];
    std::size_t run_bytes = r.count * r.reps * b.size;
    if (left >= run_bytes) {
      n += static_cast<long long>(r.count * r.reps) * b.elements;
      left -= run_bytes;
      continue;
    }
    n += static_cast<long long>(left / b.size) * b.elements;
    left %= b.size;
    if (left == b.part1 && b.part2 != 0) {  // the value of a pair without its index
      n += 1;
      left = 0;
    }
    break;
  }
  return left == 0 ? n : MPI_UNDEFINED;
}

void type_for_each_run(MPI_Datatype t, int count, TypeRunFn fn, void* ctx) {
  const Layout& l = layout(t);
  if (count <= 0 || l.items.empty()) return;
  if (l.items.size() == 1 && l.items[0].reps == 1 &&
      static_cast<std::ptrdiff_t>(l.items[0].count) * item_unit(l.items[0].basic) == l.extent()) {
    fn(ctx, l.items[0].offset, l.items[0].count * static_cast<std::size_t>(count), 1, 0, l.items[0].basic);
    return;
  }
  for (int i = 0; i < count; ++i) {
    std::ptrdiff_t base = static_cast<std::ptrdiff_t>(i) * l.extent();
    for (const Run& r : l.items) fn(ctx, base + r.offset, r.count, r.reps, r.stride, r.basic);
  }
}

void type_retain(MPI_Datatype t) {
  if (t < kPredefined) return;
  if (Type* p = table().find(t)) p->refs.fetch_add(1, std::memory_order_relaxed);
}

void type_release(MPI_Datatype t) {
  if (t < kPredefined) return;
  Type* p = table().find(t);
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) table().remove(t);
}

namespace {

// ---- argument checks for the MPI functions ------------------------------------------------

int bad_type(MPI_Datatype t, const char* fn, const char* what) {
  Type* p = table().find(t);
  if (t == MPI_DATATYPE_NULL)
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is MPI_DATATYPE_NULL", what);
  if ((p && p->freed.load(std::memory_order_relaxed)) || (!p && table().issued(t)))
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s %d was freed with MPI_Type_free", what, t);
  return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s %d is not a datatype", what, t);
}

// MPI_SUCCESS when `t` names a type, else the error.
int check_type(MPI_Datatype t, const char* fn, const char* what = "datatype") {
  return live(t) ? MPI_SUCCESS : bad_type(t, fn, what);
}

int check_committed(MPI_Datatype t, const char* fn, MPI_Comm comm = MPI_COMM_WORLD) {
  if (!live(t)) return bad_type(t, fn, "datatype");
  if (t == MPI_UB || t == MPI_LB)
    return error(comm, MPI_ERR_TYPE, fn, "%s is a bound marker, not a datatype for data", kBasics[t].name);
  if (!type_committed(t))
    return error(comm, MPI_ERR_TYPE, fn, "%s is not committed: call MPI_Type_commit first", type_name(t).c_str());
  return MPI_SUCCESS;
}

int check_count(int count, const char* fn, const char* what = "count") {
  return count >= 0 ? MPI_SUCCESS : error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "%s is negative (%d)", what, count);
}

int check_ptr(const void* p, const char* fn, const char* what) {
  return p ? MPI_SUCCESS : error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "%s is a null pointer", what);
}

int check_blocklengths(int count, const int* blocklengths, const char* fn) {
  for (int i = 0; i < count; ++i)
    if (blocklengths[i] < 0)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_blocklengths[%d] is negative (%d)", i, blocklengths[i]);
  return MPI_SUCCESS;
}

int new_handle(Layout l, Recipe r, MPI_Datatype* newtype, const char* fn) {
  auto t = std::make_unique<Type>(std::move(l));
  for (MPI_Datatype used : r.types) type_retain(used);
  t->recipe = std::move(r);
  MPI_Datatype h = table().add(std::move(t));
  if (h < 0) return error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "too many datatypes exist at once");
  *newtype = h;
  return MPI_SUCCESS;
}

// The checks every constructor makes on its oldtype and newtype.
int check_old_new(MPI_Datatype oldtype, MPI_Datatype* newtype, const char* fn) {
  if (int rc = check_type(oldtype, fn, "oldtype")) return rc;
  return check_ptr(newtype, fn, "newtype");
}

int make_vector(int count, int blocklength, std::ptrdiff_t stride_bytes, MPI_Datatype oldtype,
                MPI_Datatype* newtype, const char* fn, Recipe r) {
  if (int rc = check_count(count, fn)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  // One block, then `count` copies of it: a block that is one run stays one run.
  Builder blk;
  blk.add(layout(oldtype), 0, static_cast<std::size_t>(blocklength));
  Builder b;
  b.add(blk.finish(false), 0, static_cast<std::size_t>(count), stride_bytes);
  r.types = {oldtype};
  return new_handle(b.finish(false), std::move(r), newtype, fn);
}

template <class Disp>
int make_indexed(int count, const int* blocklengths, const Disp* displacements, std::ptrdiff_t unit,
                 MPI_Datatype oldtype, MPI_Datatype* newtype, const char* fn, int combiner) {
  if (int rc = check_count(count, fn)) return rc;
  if (count > 0) {
    if (int rc = check_ptr(blocklengths, fn, "array_of_blocklengths")) return rc;
    if (int rc = check_ptr(displacements, fn, "array_of_displacements")) return rc;
    if (int rc = check_blocklengths(count, blocklengths, fn)) return rc;
  }
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  const Layout& old = layout(oldtype);
  Builder b;
  for (int i = 0; i < count; ++i) b.add(old, static_cast<std::ptrdiff_t>(displacements[i]) * unit, blocklengths[i]);
  // MPI's argument order: count, then blocklength(s), then integer displacements; byte
  // displacements are addresses.
  Recipe r{combiner, {count}, {}, {oldtype}};
  if (combiner == MPI_COMBINER_INDEXED_BLOCK || combiner == MPI_COMBINER_HINDEXED_BLOCK)
    r.ints.push_back(count > 0 ? blocklengths[0] : 0);
  else r.ints.insert(r.ints.end(), blocklengths, blocklengths + count);
  for (int i = 0; i < count; ++i) {
    if (combiner == MPI_COMBINER_HINDEXED || combiner == MPI_COMBINER_HINDEXED_BLOCK)
      r.addrs.push_back(static_cast<MPI_Aint>(displacements[i]));
    else r.ints.push_back(static_cast<int>(displacements[i]));
  }
  return new_handle(b.finish(false), std::move(r), newtype, fn);
}

int make_struct(int count, const int* blocklengths, const MPI_Aint* displacements, const MPI_Datatype* types,
                MPI_Datatype* newtype, const char* fn) {
  if (int rc = check_count(count, fn)) return rc;
  if (count > 0) {
    if (int rc = check_ptr(blocklengths, fn, "array_of_blocklengths")) return rc;
    if (int rc = check_ptr(displacements, fn, "array_of_displacements")) return rc;
    if (int rc = check_ptr(types, fn, "array_of_types")) return rc;
    if (int rc = check_blocklengths(count, blocklengths, fn)) return rc;
  }
  for (int i = 0; i < count; ++i) {
    if (live(types[i])) continue;
    char what[48];
    std::snprintf(what, sizeof what, "array_of_types[%d]", i);
    return bad_type(types[i], fn, what);
  }
  if (int rc = check_ptr(newtype, fn, "newtype")) return rc;
  Builder b;
  for (int i = 0; i < count; ++i) b.add(layout(types[i]), displacements[i], blocklengths[i]);
  Recipe r{MPI_COMBINER_STRUCT, {count}, {displacements, displacements + count}, {types, types + count}};
  r.ints.insert(r.ints.end(), blocklengths, blocklengths + count);
  return new_handle(b.finish(true), std::move(r), newtype, fn);
}

int get_extent(MPI_Datatype t, MPI_Aint* lb, MPI_Aint* extent, bool true_extent, const char* fn) {
  if (int rc = check_type(t, fn)) return rc;
  if (int rc = check_ptr(lb, fn, true_extent ? "true_lb" : "lb")) return rc;
  if (int rc = check_ptr(extent, fn, true_extent ? "true_extent" : "extent")) return rc;
  const Layout& l = layout(t);
  *lb = true_extent ? l.true_lb : l.lb;
  *extent = true_extent ? l.true_ub - l.true_lb : l.extent();
  return MPI_SUCCESS;
}

// The one-value queries (MPI_Type_extent, _lb, _ub).
int get_bound(MPI_Datatype t, MPI_Aint* out, MPI_Aint (*pick)(const Layout&), const char* fn, const char* what) {
  if (int rc = check_type(t, fn)) return rc;
  if (int rc = check_ptr(out, fn, what)) return rc;
  *out = pick(layout(t));
  return MPI_SUCCESS;
}

// Pack (`pack`) and Unpack: `count` elements of `datatype` go into (or come out of) the packed
// buffer `packed` of `size` bytes at *position; `need` is the bytes they take there.
int check_pack(MPI_Comm comm, const char* fn, bool pack, int count, MPI_Datatype datatype, const void* packed, int size,
               const int* position, std::size_t* need) {
  const char* count_name = pack ? "incount" : "outcount";
  const char* size_name = pack ? "outsize" : "insize";
  if (count < 0) return error(comm, MPI_ERR_COUNT, fn, "%s is negative (%d)", count_name, count);
  if (int rc = check_committed(datatype, fn, comm)) return rc;
  if (!position) return error(comm, MPI_ERR_ARG, fn, "position is a null pointer");
  if (size < 0 || *position < 0 || *position > size)
    return error(comm, MPI_ERR_ARG, fn, "position %d is outside the buffer of %s %d", *position, size_name, size);
  *need = static_cast<std::size_t>(count) * type_size(datatype);
  const std::size_t left = static_cast<std::size_t>(size - *position);
  if (*need > left)
    return error(comm, MPI_ERR_TRUNCATE, fn, "%d x %s is %zu bytes; only %zu are left in the buffer (%s %d, position %d)",
                 count, type_name(datatype).c_str(), *need, left, size_name, size, *position);
  if (*need > 0 && !packed) return error(comm, MPI_ERR_ARG, fn, "%s is a null pointer", pack ? "outbuf" : "inbuf");
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi

// ---- the MPI functions --------------------------------------------------------------------

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_contiguous";
  if (int rc = check_count(count, fn)) return rc;
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  Builder b;
  b.add(layout(oldtype), 0, static_cast<std::size_t>(count));
  return new_handle(b.finish(false), Recipe{MPI_COMBINER_CONTIGUOUS, {count}, {}, {oldtype}}, newtype, fn);
}

int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_vector(count, blocklength, stride * ext, oldtype, newtype, "MPI_Type_vector",
                     Recipe{MPI_COMBINER_VECTOR, {count, blocklength, stride}, {}, {}});
}

int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return make_vector(count, blocklength, stride, oldtype, newtype, "MPI_Type_hvector",
                     Recipe{MPI_COMBINER_HVECTOR, {count, blocklength}, {stride}, {}});
}

int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype* newtype) {
  return make_vector(count, blocklength, stride, oldtype, newtype, "MPI_Type_create_hvector",
                     Recipe{MPI_COMBINER_HVECTOR, {count, blocklength}, {stride}, {}});
}

int PMPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                      MPI_Datatype oldtype, MPI_Datatype* newtype) {
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_indexed(count, array_of_blocklengths, array_of_displacements, ext, oldtype, newtype,
                      "MPI_Type_indexed", MPI_COMBINER_INDEXED);
}

int PMPI_Type_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                       MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return make_indexed(count, array_of_blocklengths, array_of_displacements, 1, oldtype, newtype,
                      "MPI_Type_hindexed", MPI_COMBINER_HINDEXED);
}

int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                              const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype* newtype) {
  return make_indexed(count, array_of_blocklengths, array_of_displacements, 1, oldtype, newtype,
                      "MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED);
}

int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_indexed_block";
  if (int rc = check_count(count, fn)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  std::vector<int> lengths(static_cast<std::size_t>(count), blocklength);
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_indexed(count, lengths.data(), array_of_displacements, ext, oldtype, newtype, fn,
                      MPI_COMBINER_INDEXED_BLOCK);
}

int PMPI_Type_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                     const MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
  return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype,
                     "MPI_Type_struct");
}

int PMPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                            const MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
  return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype,
                     "MPI_Type_create_struct");
}

int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                              const int array_of_starts[], int order, MPI_Datatype oldtype,
                              MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_subarray";
  if (ndims <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "ndims must be positive (%d)", ndims);
  if (int rc = check_ptr(array_of_sizes, fn, "array_of_sizes")) return rc;
  if (int rc = check_ptr(array_of_subsizes, fn, "array_of_subsizes")) return rc;
  if (int rc = check_ptr(array_of_starts, fn, "array_of_starts")) return rc;
  if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "order is %d, not MPI_ORDER_C or MPI_ORDER_FORTRAN", order);
  for (int d = 0; d < ndims; ++d) {
    int size = array_of_sizes[d], sub = array_of_subsizes[d], start = array_of_starts[d];
    if (size <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_sizes[%d] is %d, not positive", d, size);
    if (sub < 0 || sub > size)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_subsizes[%d] is %d, not in [0, %d]", d, sub, size);
    if (start < 0 || start > size - sub)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                   "array_of_starts[%d] is %d: the subarray [%d, %d) is not inside [0, %d)", d, start, start,
                   start + sub, size);
  }
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  const Layout& old = layout(oldtype);
  // Dimensions from the fastest-varying one out: stride[d] is the bytes between
  // consecutive indices of dimension d.
  std::vector<int> dims(static_cast<std::size_t>(ndims));
  for (int k = 0; k < ndims; ++k) dims[static_cast<std::size_t>(k)] = order == MPI_ORDER_C ? ndims - 1 - k : k;
  std::ptrdiff_t stride = old.extent(), offset = 0;
  Layout cur;
  for (int k = 0; k < ndims; ++k) {
    int d = dims[static_cast<std::size_t>(k)];
    Builder b;
    if (k == 0) {
      b.add(old, 0, static_cast<std::size_t>(array_of_subsizes[d]));
    } else {
      b.add(cur, 0, static_cast<std::size_t>(array_of_subsizes[d]), stride);
    }
    cur = b.finish(false);
    offset += static_cast<std::ptrdiff_t>(array_of_starts[d]) * stride;
    stride *= array_of_sizes[d];
  }
  Builder b;
  b.add(cur, offset, 1);
  // The subarray's extent is the whole array's (MPI defines it through create_resized).
  Recipe r{MPI_COMBINER_SUBARRAY, {ndims}, {}, {oldtype}};
  r.ints.insert(r.ints.end(), array_of_sizes, array_of_sizes + ndims);
  r.ints.insert(r.ints.end(), array_of_subsizes, array_of_subsizes + ndims);
  r.ints.insert(r.ints.end(), array_of_starts, array_of_starts + ndims);
  r.ints.push_back(order);
  return new_handle(resized(b.finish(false), 0, stride), std::move(r), newtype, fn);
}

int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_resized";
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  return new_handle(resized(layout(oldtype), lb, extent), Recipe{MPI_COMBINER_RESIZED, {}, {lb, extent}, {oldtype}},
                    newtype, fn);
}

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_dup";
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  Type* old = live(oldtype);
  bool committed = old->predefined || old->committed;
  if (int rc = new_handle(old->l, Recipe{MPI_COMBINER_DUP, {}, {}, {oldtype}}, newtype, fn)) return rc;
  table().find(*newtype)->committed = committed;  // MPI: the copy has the same committed state
  return MPI_SUCCESS;
}

int PMPI_Type_commit(MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_commit";
  if (int rc = check_ptr(datatype, fn, "datatype")) return rc;
  if (int rc = check_type(*datatype, fn)) return rc;
  Type* t = live(*datatype);
  if (!t->predefined) t->committed = true;
  return MPI_SUCCESS;
}

int PMPI_Type_free(MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_free";
  if (int rc = check_ptr(datatype, fn, "datatype")) return rc;
  if (int rc = check_type(*datatype, fn)) return rc;
  Type* t = live(*datatype);
  if (t->predefined)
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is predefined and cannot be freed", kBasics[*datatype].name);
  t->freed.store(true, std::memory_order_relaxed);
  type_release(*datatype);
  *datatype = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

int PMPI_Type_get_envelope(MPI_Datatype datatype, int* num_integers, int* num_addresses, int* num_datatypes,
                           int* combiner) {
  const char* fn = "MPI_Type_get_envelope";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(num_integers, fn, "num_integers")) return rc;
  if (int rc = check_ptr(num_addresses, fn, "num_addresses")) return rc;
  if (int rc = check_ptr(num_datatypes, fn, "num_datatypes")) return rc;
  if (int rc = check_ptr(combiner, fn, "combiner")) return rc;
  const Recipe& r = live(datatype)->recipe;
  *num_integers = static_cast<int>(r.ints.size());
  *num_addresses = static_cast<int>(r.addrs.size());
  *num_datatypes = static_cast<int>(r.types.size());
  *combiner = r.combiner;
  return MPI_SUCCESS;
}

int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                           int array_of_integers[], MPI_Aint array_of_addresses[],
                           MPI_Datatype array_of_datatypes[]) {
  const char* fn = "MPI_Type_get_contents";
  if (int rc = check_type(datatype, fn)) return rc;
  Type* t = live(datatype);
  if (t->predefined)
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is predefined (MPI_COMBINER_NAMED): it has no contents",
                 kBasics[datatype].name);
  const Recipe& r = t->recipe;
  if (max_integers < static_cast<int>(r.ints.size()) || max_addresses < static_cast<int>(r.addrs.size()) ||
      max_datatypes < static_cast<int>(r.types.size()))
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                 "the arrays are too small: %s needs %zu integers, %zu addresses and %zu datatypes "
                 "(MPI_Type_get_envelope says how many)",
                 type_name(datatype).c_str(), r.ints.size(), r.addrs.size(), r.types.size());
  if (!r.ints.empty())
    if (int rc = check_ptr(array_of_integers, fn, "array_of_integers")) return rc;
  if (!r.addrs.empty())
    if (int rc = check_ptr(array_of_addresses, fn, "array_of_addresses")) return rc;
  if (!r.types.empty())
    if (int rc = check_ptr(array_of_datatypes, fn, "array_of_datatypes")) return rc;
  std::copy(r.ints.begin(), r.ints.end(), array_of_integers);
  std::copy(r.addrs.begin(), r.addrs.end(), array_of_addresses);
  // MPI: a derived datatype comes back as a new handle the program frees; it is the same
  // type (layout, recipe, committed state), so decoding can go on from it.
  for (std::size_t i = 0; i < r.types.size(); ++i) {
    MPI_Datatype used = r.types[i];
    Type* u = table().find(used);
    if (u->predefined) {
      array_of_datatypes[i] = used;
      continue;
    }
    if (int rc = new_handle(u->l, u->recipe, &array_of_datatypes[i], fn)) return rc;
    table().find(array_of_datatypes[i])->committed = u->committed;
  }
  return MPI_SUCCESS;
}

int PMPI_Type_size(MPI_Datatype datatype, int* size) {
  const char* fn = "MPI_Type_size";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(size, fn, "size")) return rc;
  std::size_t s = type_size(datatype);
  *size = s > static_cast<std::size_t>(INT_MAX) ? MPI_UNDEFINED : static_cast<int>(s);
  return MPI_SUCCESS;
}

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count* size) {
  const char* fn = "MPI_Type_size_x";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(size, fn, "size")) return rc;
  *size = static_cast<MPI_Count>(type_size(datatype));
  return MPI_SUCCESS;
}

int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint* extent) {
  return get_bound(datatype, extent, [](const Layout& l) -> MPI_Aint { return l.extent(); }, "MPI_Type_extent",
                   "extent");
}

int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint* displacement) {
  return get_bound(datatype, displacement, [](const Layout& l) -> MPI_Aint { return l.lb; }, "MPI_Type_lb",
                   "displacement");
}

int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint* displacement) {
  return get_bound(datatype, displacement, [](const Layout& l) -> MPI_Aint { return l.ub; }, "MPI_Type_ub",
                   "displacement");
}

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent) {
  return get_extent(datatype, lb, extent, false, "MPI_Type_get_extent");
}

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint* true_lb, MPI_Aint* true_extent) {
  return get_extent(datatype, true_lb, true_extent, true, "MPI_Type_get_true_extent");
}

int PMPI_Type_set_name(MPI_Datatype datatype, const char* type_name) {
  const char* fn = "MPI_Type_set_name";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(type_name, fn, "type_name")) return rc;
  std::string name(type_name, strnlen(type_name, MPI_MAX_OBJECT_NAME - 1));  // MPI truncates
  std::lock_guard<std::mutex> g(table().names_mutex);
  live(datatype)->name = std::move(name);
  return MPI_SUCCESS;
}

int PMPI_Type_get_name(MPI_Datatype datatype, char* type_name, int* resultlen) {
  const char* fn = "MPI_Type_get_name";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(type_name, fn, "type_name")) return rc;
  if (int rc = check_ptr(resultlen, fn, "resultlen")) return rc;
  Type* t = live(datatype);
  std::string name;
  {
    std::lock_guard<std::mutex> g(table().names_mutex);
    name = t->name;
  }
  if (name.empty() && t->predefined) name = kBasics[datatype].name;  // a derived type's is ""
  std::size_t n = std::min<std::size_t>(name.size(), MPI_MAX_OBJECT_NAME - 1);
  std::memcpy(type_name, name.data(), n);
  type_name[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

int PMPI_Address(void* location, MPI_Aint* address) {
  if (int rc = check_ptr(address, "MPI_Address", "address")) return rc;
  *address = reinterpret_cast<MPI_Aint>(location);
  return MPI_SUCCESS;
}

int PMPI_Get_address(const void* location, MPI_Aint* address) {
  if (int rc = check_ptr(address, "MPI_Get_address", "address")) return rc;
  *address = reinterpret_cast<MPI_Aint>(location);
  return MPI_SUCCESS;
}

int PMPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize, int* position,
              MPI_Comm comm) {
  std::size_t need = 0;
  if (int rc = check_pack(comm, "MPI_Pack", true, incount, datatype, outbuf, outsize, position, &need)) return rc;
  type_pack(inbuf, incount, datatype, static_cast<char*>(outbuf) + *position);
  *position += static_cast<int>(need);
  return MPI_SUCCESS;
}

int PMPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount, MPI_Datatype datatype,
                MPI_Comm comm) {
  std::size_t need = 0;
  if (int rc = check_pack(comm, "MPI_Unpack", false, outcount, datatype, inbuf, insize, position, &need)) return rc;
  type_unpack(static_cast<const char*>(inbuf) + *position, need, outbuf, outcount, datatype);
  *position += static_cast<int>(need);
  return MPI_SUCCESS;
}

int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  const char* fn = "MPI_Pack_size";
  if (incount < 0) return error(comm, MPI_ERR_COUNT, fn, "incount is negative (%d)", incount);
  if (int rc = check_committed(datatype, fn, comm)) return rc;
  if (!size) return error(comm, MPI_ERR_ARG, fn, "size is a null pointer");
  std::size_t need = static_cast<std::size_t>(incount) * type_size(datatype);
  if (need > static_cast<std::size_t>(INT_MAX))
    return error(comm, MPI_ERR_COUNT, fn, "%d x %s is %zu bytes, more than an int can say", incount,
                 type_name(datatype).c_str(), need);
  *size = static_cast<int>(need);
  return MPI_SUCCESS;
}


// ---- MPI-3 additions -----------------------------------------------------------------------
int PMPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                    MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_hindexed_block";
  if (int rc = check_count(count, fn)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  std::vector<int> lengths(static_cast<std::size_t>(count), blocklength);
  return make_indexed(count, lengths.data(), array_of_displacements, 1, oldtype, newtype, fn,
                      MPI_COMBINER_HINDEXED_BLOCK);
}

int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count* lb, MPI_Count* extent) {
  MPI_Aint l = 0, e = 0;
  if (int rc = get_extent(datatype, &l, &e, false, "MPI_Type_get_extent_x")) return rc;
  if (lb) *lb = l;
  if (extent) *extent = e;
  return MPI_SUCCESS;
}

int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count* true_lb, MPI_Count* true_extent) {
  MPI_Aint l = 0, e = 0;
  if (int rc = get_extent(datatype, &l, &e, true, "MPI_Type_get_true_extent_x")) return rc;
  if (true_lb) *true_lb = l;
  if (true_extent) *true_extent = e;
  return MPI_SUCCESS;
}

int PMPI_Status_set_elements_x(MPI_Status* status, MPI_Datatype datatype, MPI_Count count) {
  const char* fn = "MPI_Status_set_elements_x";
  if (int rc = check_type(datatype, fn)) return rc;
  if (int rc = check_ptr(status, fn, "status")) return rc;
  status->ucharm_bytes = static_cast<long long>(type_size(datatype)) * count;
  return MPI_SUCCESS;
}

// The predefined C type of a type class and size (MPI_TYPECLASS_*), as Fortran's
// SELECTED_*_KIND helpers need.
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_match_size";
  if (int rc = check_ptr(datatype, fn, "datatype")) return rc;
  static constexpr MPI_Datatype kReal[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE};
  static constexpr MPI_Datatype kInt[] = {MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T};
  static constexpr MPI_Datatype kComplex[] = {MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX};
  auto pick = [&](const auto& list) -> int {
    for (MPI_Datatype t : list)
      if (static_cast<int>(type_size(t)) == size) {
        *datatype = t;
        return MPI_SUCCESS;
      }
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "no predefined type of class %d has size %d", typeclass, size);
  };
  switch (typeclass) {
    case MPI_TYPECLASS_REAL: return pick(kReal);
    case MPI_TYPECLASS_INTEGER: return pick(kInt);
    case MPI_TYPECLASS_COMPLEX: return pick(kComplex);
    default: return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "unknown type class %d", typeclass);
  }
}

}  // extern "C"
#pragma GCC visibility pop
