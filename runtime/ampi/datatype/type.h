// The datatype representation (private to datatype/): predefined types, flattened layouts
// (runs), the Builder that makes them, and the per-rank handle tables.
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
// Handles: the predefined types are one constant table; derived types live in a table of
// the rank that made them (handles.h: the handle names the rank, so a handler finds the
// type without knowing whose thread runs; the table moves with the rank). A derived type is
// reference counted so that communication that still uses a type the program freed (legal
// in MPI) keeps it alive: see type_retain.
#pragma once

#include "internal.h"
#include "handles.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ampi::dt {

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

// MPI_2REAL and the like: two values of one type, for MINLOC / MAXLOC.
template <class V>
constexpr Basic twice(const char* name) {
  return Basic{name, 2 * sizeof(V), 2 * sizeof(V), alignof(V), sizeof(V), sizeof(V), sizeof(V), 2};
}

template <class V>
constexpr Basic complex_of(const char* name) {
  return Basic{name, 2 * sizeof(V), 2 * sizeof(V), alignof(V), 2 * sizeof(V), 0, 0, 1};
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
  // MPI_C_COMPLEX and MPI_C_FLOAT_COMPLEX are one type: it goes by the shorter name (MPICH's tests
  // ask MPI_Type_get_name for "MPI_C_COMPLEX" of either).
  b[MPI_C_FLOAT_COMPLEX] = complex_of<float>("MPI_C_COMPLEX");
  b[MPI_C_DOUBLE_COMPLEX] = complex_of<double>("MPI_C_DOUBLE_COMPLEX");
  b[MPI_C_LONG_DOUBLE_COMPLEX] = complex_of<long double>("MPI_C_LONG_DOUBLE_COMPLEX");
  b[MPI_UB] = Basic{"MPI_UB", 0, 0, 1, 0, 0, 0, 0};
  b[MPI_LB] = Basic{"MPI_LB", 0, 0, 1, 0, 0, 0, 0};
  b[MPI_CXX_BOOL] = plain<bool>("MPI_CXX_BOOL");
  b[MPI_CHARACTER] = plain<char>("MPI_CHARACTER");
  b[MPI_LOGICAL] = plain<int>("MPI_LOGICAL");
  b[MPI_INTEGER] = plain<int>("MPI_INTEGER");
  b[MPI_REAL] = plain<float>("MPI_REAL");
  b[MPI_DOUBLE_PRECISION] = plain<double>("MPI_DOUBLE_PRECISION");
  b[MPI_COMPLEX] = complex_of<float>("MPI_COMPLEX");
  b[MPI_DOUBLE_COMPLEX] = complex_of<double>("MPI_DOUBLE_COMPLEX");
  b[MPI_2REAL] = twice<float>("MPI_2REAL");
  b[MPI_2DOUBLE_PRECISION] = twice<double>("MPI_2DOUBLE_PRECISION");
  b[MPI_2INTEGER] = twice<int>("MPI_2INTEGER");
  b[MPI_INTEGER1] = plain<std::int8_t>("MPI_INTEGER1");
  b[MPI_INTEGER2] = plain<std::int16_t>("MPI_INTEGER2");
  b[MPI_INTEGER4] = plain<std::int32_t>("MPI_INTEGER4");
  b[MPI_INTEGER8] = plain<std::int64_t>("MPI_INTEGER8");
  b[MPI_REAL4] = plain<float>("MPI_REAL4");
  b[MPI_REAL8] = plain<double>("MPI_REAL8");
  b[MPI_COMPLEX8] = complex_of<float>("MPI_COMPLEX8");
  b[MPI_COMPLEX16] = complex_of<double>("MPI_COMPLEX16");
  b[MPI_CXX_FLOAT_COMPLEX] = complex_of<float>("MPI_CXX_FLOAT_COMPLEX");
  b[MPI_CXX_DOUBLE_COMPLEX] = complex_of<double>("MPI_CXX_DOUBLE_COMPLEX");
  b[MPI_CXX_LONG_DOUBLE_COMPLEX] = complex_of<long double>("MPI_CXX_LONG_DOUBLE_COMPLEX");
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
// Merges a repeated block whose stride equals its length into one block.
void normalize(Run& r, std::ptrdiff_t unit);
void append(std::vector<Run>& v, Run s, std::ptrdiff_t unit);
std::ptrdiff_t item_unit(MPI_Datatype basic);

// Appends `n` copies of the runs `src`, `ext` bytes apart, starting at `disp`.
void add_runs(std::vector<Run>& dst, const std::vector<Run>& src, std::ptrdiff_t disp, std::size_t n,
              std::ptrdiff_t ext, bool bytes);
void finish_flags(Layout& l);

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

Layout basic_layout(MPI_Datatype t);
Layout resized(Layout l, std::ptrdiff_t lb, std::ptrdiff_t extent);

// ---- the handle tables --------------------------------------------------------------------

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
  Type(const Type&) = delete;
  Type& operator=(const Type&) = delete;
  const Layout l;
  Recipe recipe;                    // set once, before the handle is given out
  const bool predefined;
  bool committed = false;
  bool freed = false;               // MPI_Type_free was called: the handle is gone
  int refs = 1;                     // the program's handle plus type_retain
  std::string name;                 // MPI_Type_set_name
};

// The predefined types: one constant table for the process (their names, which a rank may
// set, are kept per rank in its TypeTable).
const Type* predefined_type(MPI_Datatype h);

// A rank's derived datatypes (handles.h: the handle says whose; the rank's CommTable owns
// it). Only the rank's own PE touches it (its thread, its handlers): no lock.
class TypeTable {
 public:
  explicit TypeTable(int world_rank) : world_rank_(world_rank) {}
  TypeTable(const TypeTable&) = delete;
  TypeTable& operator=(const TypeTable&) = delete;

  Type* at(std::size_t i) const { return i < slots_.size() ? slots_[i].get() : nullptr; }
  // The new handle, or -1 when this rank has as many types as it may.
  MPI_Datatype add(std::unique_ptr<Type>&& t);  // t is left alone on failure
  // Drops a reference of index i; the last one frees the slot (and releases the types its
  // recipe names).
  void release(std::size_t i);
  // Whether index i was ever given out (a handle not found now was freed).
  bool issued(std::size_t i) const { return i < slots_.size(); }
  int world_rank() const { return world_rank_; }
  // Names the rank gave predefined types (MPI_Type_set_name on MPI_INT), by handle.
  std::vector<std::pair<MPI_Datatype, std::string>> predefined_names;
  // The types MPI_Type_create_f90_integer/real/complex gave: (combiner, p, r, handle) each,
  // so the same parameters give the same type (constructors.cpp).
  std::vector<int> f90_types;
  void pup(PUP::er& p);

 private:
  static constexpr std::size_t kReuseAfter = 1024;  // freed handles wait: stale ones are caught
  int world_rank_;
  std::vector<std::unique_ptr<Type>> slots_;  // by index; grows, the Types never move
  std::deque<std::size_t> free_;              // freed indices, least recently freed first
};

// The calling rank's table (table.cpp).
TypeTable& mine();
// Any type by handle, whoever's: predefined, or a derived type of a rank of this process
// (freed by the program but still held included); nullptr when none.
inline Type* find(MPI_Datatype h) {
  if (h < kPredefined) return h > 0 ? const_cast<Type*>(predefined_type(h)) : nullptr;
  std::size_t i;
  HandleSpace::Entry* e = HandleSpace::process().decode(h, kPredefined, &i);
  return e && e->types ? e->types->at(i) : nullptr;
}
// A type the program may name: predefined, or derived and not freed.
Type* live(MPI_Datatype h);
// Internal users (pack, unpack) may use a type the program freed while they hold it.
const Layout& layout(MPI_Datatype h);
// A new handle of the calling rank for a derived type made of `l` (retaining the types `r` names).
int new_handle(Layout l, Recipe r, MPI_Datatype* newtype, const char* fn);

// The bytes of the first `elements` basic elements of a sequence of h's (pack.cpp).
long long bytes_of_elements(MPI_Datatype h, long long elements);

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

}  // namespace ampi::dt
