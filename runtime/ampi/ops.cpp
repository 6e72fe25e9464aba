// Reduction operations: the predefined ones, user ones (MPI_Op_create), MPI_Reduce_local.
//
// A predefined op on a type is one kernel per (op, basic type) pair, a typed loop chosen
// once per run of elements: no per-element switch. A derived type works when all its
// elements are one basic type (a vector of MPI_DOUBLE, a contiguous run of MPI_DOUBLE_INT);
// the kernel then runs over each of its runs of consecutive elements. User ops get the
// typed buffers and the type, as MPI says.
#include "internal.h"
#include "handles.h"
#include "heap.h"
#include "refs.h"

#include <ucharm/pup.h>

#include <array>
#include <complex>
#include <cstring>
#include <deque>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace ampi {

namespace {

constexpr int kPredefinedOps = UCHARM_MPI_PREDEFINED_OPS;
constexpr int kPredefinedTypes = UCHARM_MPI_PREDEFINED_TYPES;

// ---- element access -----------------------------------------------------------------------

// The C layout of a pair type (MPI_DOUBLE_INT is struct { double; int; }; MPI_2REAL's index
// is a float).
template <class V, class I = int>
struct Pair {
  V value;
  I index;
};

template <class T>
struct IsPair : std::false_type {};
template <class V, class I>
struct IsPair<Pair<V, I>> : std::true_type {};

// Loads and stores through memcpy: buffers inside a derived type need not be aligned. A
// pair is copied field by field, leaving its padding bytes alone.
template <class T>
inline T load(const char* p) {
  T v;
  if constexpr (IsPair<T>::value) {
    std::memcpy(&v.value, p + offsetof(T, value), sizeof v.value);
    std::memcpy(&v.index, p + offsetof(T, index), sizeof v.index);
  } else {
    std::memcpy(&v, p, sizeof v);
  }
  return v;
}

template <class T>
inline void store(char* p, const T& v) {
  if constexpr (IsPair<T>::value) {
    std::memcpy(p + offsetof(T, value), &v.value, sizeof v.value);
    std::memcpy(p + offsetof(T, index), &v.index, sizeof v.index);
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

// ---- the operations: f(in, inout) is the new inout ---------------------------------------

// Integer arithmetic wraps (as it does in C on the hardware) instead of being undefined.
template <class T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct Max {
  static constexpr MPI_Op id = MPI_MAX;
  template <class T>
  T operator()(T a, T b) const { return a > b ? a : b; }
};
struct Min {
  static constexpr MPI_Op id = MPI_MIN;
  template <class T>
  T operator()(T a, T b) const { return a < b ? a : b; }
};
struct Sum {
  static constexpr MPI_Op id = MPI_SUM;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    else return a + b;
  }
};
struct Prod {
  static constexpr MPI_Op id = MPI_PROD;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    else return a * b;
  }
};
struct Land {
  static constexpr MPI_Op id = MPI_LAND;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a != T{0} && b != T{0}); }
};
struct Lor {
  static constexpr MPI_Op id = MPI_LOR;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a != T{0} || b != T{0}); }
};
struct Lxor {
  static constexpr MPI_Op id = MPI_LXOR;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>((a != T{0}) != (b != T{0})); }
};
struct Band {
  static constexpr MPI_Op id = MPI_BAND;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct Bor {
  static constexpr MPI_Op id = MPI_BOR;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct Bxor {
  static constexpr MPI_Op id = MPI_BXOR;
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
// MPI's rule: on equal values the smaller index wins.
struct MinLoc {
  static constexpr MPI_Op id = MPI_MINLOC;
  template <class P>
  P operator()(P a, P b) const {
    if (a.value < b.value) return a;
    if (b.value < a.value) return b;
    return P{a.value, a.index < b.index ? a.index : b.index};
  }
};
struct MaxLoc {
  static constexpr MPI_Op id = MPI_MAXLOC;
  template <class P>
  P operator()(P a, P b) const {
    if (a.value > b.value) return a;
    if (b.value > a.value) return b;
    return P{a.value, a.index < b.index ? a.index : b.index};
  }
};
struct Replace {
  static constexpr MPI_Op id = MPI_REPLACE;
  template <class T>
  T operator()(T a, T) const { return a; }
};

// `reps` blocks of `n` consecutive elements, `stride` bytes apart (a vector's blocks).
using Kernel = void (*)(const char* in, char* inout, std::size_t n, std::size_t reps, std::ptrdiff_t stride);

template <class T, class F>
void kernel(const char* in, char* inout, std::size_t n, std::size_t reps, std::ptrdiff_t stride) {
  for (std::size_t k = 0; k < reps; ++k, in += stride, inout += stride) {
    const char* a = in;
    char* b = inout;
    for (std::size_t i = 0; i < n; ++i, a += sizeof(T), b += sizeof(T)) store<T>(b, F{}(load<T>(a), load<T>(b)));
  }
}

// ---- the table of kernels: [op][basic type], nullptr where MPI does not define the op ----

using Table = std::array<std::array<Kernel, kPredefinedTypes>, kPredefinedOps>;

template <class T, class... F>
constexpr void set(Table& t, MPI_Datatype d) {
  ((t[F::id][d] = &kernel<T, F>), ...);
  t[MPI_REPLACE][d] = &kernel<T, Replace>;
}

// MPI's groups of types (MPI 3.1, 5.9.2). MPI_CHAR and MPI_WCHAR count as integers, as in
// MPICH: programs use them so.
template <class T>
constexpr void integer(Table& t, MPI_Datatype d) {
  set<T, Max, Min, Sum, Prod, Land, Lor, Lxor, Band, Bor, Bxor>(t, d);
}
template <class T>
constexpr void floating(Table& t, MPI_Datatype d) {
  set<T, Max, Min, Sum, Prod>(t, d);
}
template <class T>
constexpr void complexes(Table& t, MPI_Datatype d) {
  set<T, Sum, Prod>(t, d);
}
// A C bool is one byte read as 0 / not 0 (a byte that is neither 0 nor 1 is no valid bool).
constexpr void logical(Table& t, MPI_Datatype d) {
  set<unsigned char, Land, Lor, Lxor>(t, d);
}
template <class V, class I = int>
constexpr void pair(Table& t, MPI_Datatype d) {
  set<Pair<V, I>, MinLoc, MaxLoc>(t, d);
}
// Fortran LOGICAL: a 4-byte int, 0 false.
constexpr void fortran_logical(Table& t, MPI_Datatype d) {
  set<int, Land, Lor, Lxor>(t, d);
}

constexpr Table make_table() {
  Table t{};
  integer<char>(t, MPI_CHAR);
  integer<signed char>(t, MPI_SIGNED_CHAR);
  integer<unsigned char>(t, MPI_UNSIGNED_CHAR);
  integer<short>(t, MPI_SHORT);
  integer<unsigned short>(t, MPI_UNSIGNED_SHORT);
  integer<int>(t, MPI_INT);
  integer<unsigned>(t, MPI_UNSIGNED);
  integer<long>(t, MPI_LONG);
  integer<unsigned long>(t, MPI_UNSIGNED_LONG);
  integer<long long>(t, MPI_LONG_LONG_INT);
  integer<unsigned long long>(t, MPI_UNSIGNED_LONG_LONG);
  integer<wchar_t>(t, MPI_WCHAR);
  integer<std::int8_t>(t, MPI_INT8_T);
  integer<std::int16_t>(t, MPI_INT16_T);
  integer<std::int32_t>(t, MPI_INT32_T);
  integer<std::int64_t>(t, MPI_INT64_T);
  integer<std::uint8_t>(t, MPI_UINT8_T);
  integer<std::uint16_t>(t, MPI_UINT16_T);
  integer<std::uint32_t>(t, MPI_UINT32_T);
  integer<std::uint64_t>(t, MPI_UINT64_T);
  integer<MPI_Aint>(t, MPI_AINT);
  integer<MPI_Offset>(t, MPI_OFFSET);
  integer<MPI_Count>(t, MPI_COUNT);
  floating<float>(t, MPI_FLOAT);
  floating<double>(t, MPI_DOUBLE);
  floating<long double>(t, MPI_LONG_DOUBLE);
  complexes<std::complex<float>>(t, MPI_C_FLOAT_COMPLEX);
  complexes<std::complex<double>>(t, MPI_C_DOUBLE_COMPLEX);
  complexes<std::complex<long double>>(t, MPI_C_LONG_DOUBLE_COMPLEX);
  logical(t, MPI_C_BOOL);
  logical(t, MPI_CXX_BOOL);
  set<unsigned char, Band, Bor, Bxor>(t, MPI_BYTE);
  set<unsigned char>(t, MPI_PACKED);
  pair<float>(t, MPI_FLOAT_INT);
  pair<double>(t, MPI_DOUBLE_INT);
  pair<long>(t, MPI_LONG_INT);
  pair<int>(t, MPI_2INT);
  pair<short>(t, MPI_SHORT_INT);
  pair<long double>(t, MPI_LONG_DOUBLE_INT);
  // The Fortran and C++ types of mpi.h, as their C twins.
  set<char>(t, MPI_CHARACTER);  // MPI defines no reduction on CHARACTER
  fortran_logical(t, MPI_LOGICAL);
  integer<int>(t, MPI_INTEGER);
  floating<float>(t, MPI_REAL);
  floating<double>(t, MPI_DOUBLE_PRECISION);
  complexes<std::complex<float>>(t, MPI_COMPLEX);
  complexes<std::complex<double>>(t, MPI_DOUBLE_COMPLEX);
  pair<float, float>(t, MPI_2REAL);
  pair<double, double>(t, MPI_2DOUBLE_PRECISION);
  pair<int, int>(t, MPI_2INTEGER);
  integer<std::int8_t>(t, MPI_INTEGER1);
  integer<std::int16_t>(t, MPI_INTEGER2);
  integer<std::int32_t>(t, MPI_INTEGER4);
  integer<std::int64_t>(t, MPI_INTEGER8);
  floating<float>(t, MPI_REAL4);
  floating<double>(t, MPI_REAL8);
  complexes<std::complex<float>>(t, MPI_COMPLEX8);
  complexes<std::complex<double>>(t, MPI_COMPLEX16);
  complexes<std::complex<float>>(t, MPI_CXX_FLOAT_COMPLEX);
  complexes<std::complex<double>>(t, MPI_CXX_DOUBLE_COMPLEX);
  complexes<std::complex<long double>>(t, MPI_CXX_LONG_DOUBLE_COMPLEX);
  return t;
}

constexpr Table kKernels = make_table();

constexpr const char* kOpNames[kPredefinedOps] = {
    "MPI_OP_NULL", "MPI_MAX",  "MPI_MIN",    "MPI_SUM",    "MPI_PROD",    "MPI_LAND",   "MPI_BAND", "MPI_LOR",
    "MPI_BOR",     "MPI_LXOR", "MPI_BXOR",   "MPI_MINLOC", "MPI_MAXLOC",  "MPI_REPLACE", "MPI_NO_OP"};

// ---- user operations ----------------------------------------------------------------------

struct UserOp {
  MPI_User_function* fn = nullptr;  // nullptr: a free slot
  bool commute = true;
  bool freed = false;  // MPI_Op_free was called: the handle is gone for the program
  int refs = 0;        // the program's handle (until freed) + pending operations using it
  bool large = false;  // MPI_Op_create_c: fn is an MPI_User_function_c (MPI_Count length)
};

}  // namespace

// A rank's user ops (handles.h: the handle names the rank, its CommTable owns the table).
// Only the rank's own PE touches it: no lock. Freed handles wait a while before reuse, so
// that a stale handle is usually caught as invalid.
class OpTable {
 public:
  explicit OpTable(int world_rank) : world_rank_(world_rank) {}
  int world_rank() const { return world_rank_; }

  // The new handle; MPI_OP_NULL when the rank has as many ops as it may.
  MPI_Op add(MPI_User_function* fn, bool commute, bool large = false) {
    const std::size_t cap = HandleSpace::process().capacity();
    std::size_t i;
    if (free_.size() > kReuseAfter || (ops_.size() >= cap && !free_.empty())) {
      i = free_.front();
      free_.pop_front();
    } else if (ops_.size() < cap) {
      i = ops_.size();
      ops_.emplace_back();
    } else {
      return MPI_OP_NULL;
    }
    ops_[i] = UserOp{fn, commute, false, 1, large};
    return static_cast<MPI_Op>(HandleSpace::process().encode(kPredefinedOps, world_rank_, i));
  }
  UserOp* at(std::size_t i) { return i < ops_.size() && ops_[i].fn ? &ops_[i] : nullptr; }
  // `delta` references (+1: a pending operation takes one; -1: it, or the program's
  // MPI_Op_free, lets go). The slot is free again when none is left.
  void add_ref(std::size_t i, int delta, bool free_handle) {
    UserOp* u = at(i);
    if (!u) return;
    if (free_handle) u->freed = true;
    if ((u->refs += delta) > 0) return;
    *u = UserOp{};
    free_.push_back(i);
  }

  // Function pointers as their bits: the program's code is at the same address after a move.
  void pup(PUP::er& p) {
    std::uint64_t n = ops_.size();
    p | n;
    if (p.isUnpacking()) {
      p.check_length(n, sizeof(std::uintptr_t) + 2 + sizeof(int), typeid(UserOp));
      ops_.assign(static_cast<std::size_t>(n), UserOp{});
    }
    for (UserOp& u : ops_) {
      auto bits = reinterpret_cast<std::uintptr_t>(u.fn);
      p | bits;
      u.fn = reinterpret_cast<MPI_User_function*>(bits);
      p | u.commute;
      p | u.freed;
      p | u.refs;
      p | u.large;
    }
    p | free_;
  }

 private:
  static constexpr std::size_t kReuseAfter = 64;
  int world_rank_;
  std::vector<UserOp> ops_;
  std::deque<std::size_t> free_;  // freed indices, least recently freed first
};

OpTablePtr op_table_new(int world_rank) {
  OpTablePtr t(new OpTable(world_rank));
  HandleSpace::process().at(world_rank).ops = t.get();
  return t;
}
void OpTableDeleter::operator()(OpTable* t) const {
  HandleSpace::Entry& e = HandleSpace::process().at(t->world_rank());
  if (e.ops == t) e.ops = nullptr;
  delete t;
}
void pup_ops(PUP::er& p, OpTable& t) { t.pup(p); }

namespace {
// The calling rank's table.
OpTable& my_ops() {
  OpTable* t = HandleSpace::process().at(world_rank()).ops;
  if (!t) outside_rank();
  return *t;
}

// A user op by handle, whoever's (a rank of this process); nullptr when none.
UserOp* user_op(MPI_Op op, OpTable** owner = nullptr, std::size_t* index = nullptr) {
  if (op < kPredefinedOps) return nullptr;
  std::size_t i;
  HandleSpace::Entry* e = HandleSpace::process().decode(op, kPredefinedOps, &i);
  if (!e || !e->ops) return nullptr;
  if (owner) *owner = e->ops;
  if (index) *index = i;
  return e->ops->at(i);
}

void op_ref(MPI_Op op, int delta, bool free_handle = false) {
  OpTable* t = nullptr;
  std::size_t i = 0;
  if (user_op(op, &t, &i)) t->add_ref(i, delta, free_handle);
}

bool predefined(MPI_Op op) { return op > MPI_OP_NULL && op < kPredefinedOps; }

// Integer addresses: with MPI_BOTTOM (a null buffer) the offsets are absolute addresses.
struct Apply {
  Kernel k;
  std::uintptr_t in, inout;
  const char* in_at(std::ptrdiff_t off) const { return reinterpret_cast<const char*>(in + static_cast<std::uintptr_t>(off)); }
  char* inout_at(std::ptrdiff_t off) const { return reinterpret_cast<char*>(inout + static_cast<std::uintptr_t>(off)); }
};

std::string op_name(MPI_Op op) {
  if (op >= 0 && op < kPredefinedOps) return kOpNames[op];
  return "user op " + std::to_string(op);
}

}  // namespace

bool op_valid(MPI_Op op) {
  if (predefined(op)) return true;
  const UserOp* u = user_op(op);
  return u && !u->freed;
}

void op_retain(MPI_Op op) { op_ref(op, +1); }
void op_release(MPI_Op op) { op_ref(op, -1); }

bool op_commutative(MPI_Op op) {
  if (op == MPI_REPLACE) return false;  // the order of the contributions decides the result
  if (predefined(op)) return true;
  const UserOp* u = user_op(op);
  return u ? u->commute : true;
}

bool op_defined_on(MPI_Op op, MPI_Datatype t) {
  if (!predefined(op) || op == MPI_NO_OP || op == MPI_REPLACE || type_size(t) == 0) return true;
  const MPI_Datatype basic = type_uniform_basic(t);
  return basic != MPI_DATATYPE_NULL && kKernels[op][basic] != nullptr;
}

int op_apply(MPI_Op op, const void* in, void* inout, int count, MPI_Datatype t) {
  if (!predefined(op)) {
    const UserOp* u = user_op(op);
    if (u == nullptr) return MPI_ERR_OP;
    // A copy: the function may create or free ops (the table may grow meanwhile).
    MPI_User_function* f = u->fn;
    if (count > 0) {
      heap::UserScope user(nullptr);  // the program's code: its allocations are the rank's
      if (u->large) {
        MPI_Count n = count;
        reinterpret_cast<MPI_User_function_c*>(f)(const_cast<void*>(in), inout, &n, &t);
      } else {
        f(const_cast<void*>(in), inout, &count, &t);
      }
    }
    return MPI_SUCCESS;
  }
  if (op == MPI_NO_OP || count <= 0 || type_size(t) == 0) return MPI_SUCCESS;
  MPI_Datatype basic = type_uniform_basic(t);
  if (basic == MPI_DATATYPE_NULL) {
    if (op != MPI_REPLACE) return MPI_ERR_OP;  // a mix of basic types
    // Replace copies whatever the types, run by run.
    Apply a{nullptr, reinterpret_cast<std::uintptr_t>(in), reinterpret_cast<std::uintptr_t>(inout)};
    type_for_each_run(
        t, count,
        [](void* ctx, std::ptrdiff_t off, std::size_t n, std::size_t reps, std::ptrdiff_t stride, MPI_Datatype b) {
          auto* on = static_cast<Apply*>(ctx);
          kKernels[MPI_REPLACE][b](on->in_at(off), on->inout_at(off), n, reps, stride);
        },
        &a);
    return MPI_SUCCESS;
  }
  Kernel k = kKernels[op][basic];
  if (k == nullptr) return MPI_ERR_OP;
  if (t == basic) {  // the common case: a predefined type, one loop
    k(static_cast<const char*>(in), static_cast<char*>(inout), static_cast<std::size_t>(count), 1, 0);
    return MPI_SUCCESS;
  }
  Apply a{k, reinterpret_cast<std::uintptr_t>(in), reinterpret_cast<std::uintptr_t>(inout)};
  type_for_each_run(
      t, count,
      [](void* ctx, std::ptrdiff_t off, std::size_t n, std::size_t reps, std::ptrdiff_t stride, MPI_Datatype) {
        auto* on = static_cast<Apply*>(ctx);
        on->k(on->in_at(off), on->inout_at(off), n, reps, stride);
      },
      &a);
  return MPI_SUCCESS;
}

}  // namespace ampi

// ---- the MPI functions --------------------------------------------------------------------

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

namespace {
// MPI_Op_create and MPI_Op_create_c: one body; `large`: user_fn takes an MPI_Count length.
int op_create(const char* fn, MPI_User_function* user_fn, bool large, int commute, MPI_Op* op) {
  if (!user_fn) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "user_fn is a null pointer");
  if (!op) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "op is a null pointer");
  const MPI_Op made = my_ops().add(user_fn, commute != 0, large);
  if (made == MPI_OP_NULL)
    return error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "too many operations exist at once (%zu per rank)",
                 HandleSpace::process().capacity());
  *op = made;
  return MPI_SUCCESS;
}
}  // namespace

int PMPI_Op_create(MPI_User_function* user_fn, int commute, MPI_Op* op) {
  return op_create("MPI_Op_create", user_fn, false, commute, op);
}

int PMPI_Op_create_c(MPI_User_function_c* user_fn, int commute, MPI_Op* op) {
  return op_create("MPI_Op_create_c", reinterpret_cast<MPI_User_function*>(user_fn), true, commute, op);
}

int PMPI_Op_free(MPI_Op* op) {
  const char* fn = "MPI_Op_free";
  if (!op) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "op is a null pointer");
  if (predefined(*op))
    return error(MPI_COMM_WORLD, MPI_ERR_OP, fn, "%s is predefined and cannot be freed", kOpNames[*op]);
  if (!op_valid(*op)) return error(MPI_COMM_WORLD, MPI_ERR_OP, fn, "op %d is not a valid operation", *op);
  op_ref(*op, -1, true);  // pending reductions that use it keep it alive
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

int PMPI_Op_commutative(MPI_Op op, int* commute) {
  const char* fn = "MPI_Op_commutative";
  if (!op_valid(op)) return error(MPI_COMM_WORLD, MPI_ERR_OP, fn, "op %d is not a valid operation", op);
  if (!commute) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "commute is a null pointer");
  *commute = op_commutative(op) ? 1 : 0;
  return MPI_SUCCESS;
}

int PMPI_Reduce_local(const void* inbuf, void* inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) {
  const char* fn = "MPI_Reduce_local";
  if (count < 0) return error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "count is negative (%d)", count);
  if (!type_committed(datatype))
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is not a committed datatype", type_name(datatype).c_str());
  if (!op_valid(op)) return error(MPI_COMM_WORLD, MPI_ERR_OP, fn, "op %d is not a valid operation", op);
  if (count > 0 && (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE))
    return error(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not allowed here");
  if (op_apply(op, inbuf, inoutbuf, count, datatype) != MPI_SUCCESS)
    return error(MPI_COMM_WORLD, MPI_ERR_OP, fn, "%s is not defined on %s", op_name(op).c_str(),
                 type_name(datatype).c_str());
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
