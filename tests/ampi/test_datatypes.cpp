// Unit tests of runtime/ampi/datatype/ and ops.cpp: predefined and derived datatypes
// (sizes, bounds, pack/unpack), MPI_Pack/Unpack, reduction operations. Built from those
// sources (and checks.cpp) with a test double of the error reporter (errors.cpp), so no runtime is needed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "datatype/type.h"
#include "handles.h"
#include "heap.h"
#include "internal.h"

#include <ucharm/pup.h>

namespace ampi {
// From datatypes.cpp, not (yet) in internal.h.
void type_retain(MPI_Datatype t);
void type_release(MPI_Datatype t);
}  // namespace ampi

// ---- test double of the error reporter (errors.cpp) -----------------------------------------
// Records the error and returns its code, as under MPI_ERRORS_RETURN.
namespace {
struct ReportedError {
  int code = MPI_SUCCESS;
  std::string fn;
  std::string message;
};
ReportedError last_error;
}  // namespace

namespace ampi {
int error(MPI_Comm, int code, const char* fn, const char* fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  last_error = ReportedError{code, fn, text};
  return code;
}
// Datatype attributes live in comm/attributes.cpp (not built here): no type has any.
int type_attrs_copy(MPI_Datatype, MPI_Datatype, const char*) { return MPI_SUCCESS; }
int type_attrs_delete(MPI_Datatype) { return MPI_SUCCESS; }
[[noreturn]] void not_implemented(const char* fn) {
  std::fprintf(stderr, "%s is not implemented (test double)\n", fn);
  std::abort();
}
// heap.cpp (not built here: it interposes malloc): user ops run in the program's heap.
namespace heap {
thread_local CmiIsoSlice* g_active UCHARM_AMPI_HEAP_TLS = nullptr;
UserScope::UserScope(CmiIsoSlice* slice) : saved_(g_active) { g_active = slice; }
}  // namespace heap
// The calling "rank" (rank.cpp is not built here): each test thread says which it is.
thread_local int test_rank = 0;
int world_rank() { return test_rank; }
[[noreturn]] void outside_rank() {
  std::fprintf(stderr, "no datatype table for rank %d (test double)\n", test_rank);
  std::abort();
}
}  // namespace ampi

namespace {
// A rank's datatype and op tables (a CommTable holds them in the runtime), in a world of 8.
struct RankTables {
  explicit RankTables(int r) {
    ampi::HandleSpace::process().init(8);
    types = ampi::type_table_new(r);
    ops = ampi::op_table_new(r);
  }
  ampi::TypeTablePtr types;
  ampi::OpTablePtr ops;
};
RankTables rank0(0);  // the tests run as world rank 0
}  // namespace

namespace {

// Runs `call` and checks that it fails with `code`, reported once by `fn`.
#define EXPECT_MPI_ERROR(want_code, want_fn, call) \
  do {                                             \
    last_error = ReportedError{};                  \
    EXPECT_EQ((want_code), (call));                \
    EXPECT_EQ((want_code), last_error.code);       \
    EXPECT_EQ(std::string(want_fn), last_error.fn); \
    EXPECT_FALSE(last_error.message.empty());      \
  } while (0)

struct Bounds {
  MPI_Aint lb, extent, true_lb, true_extent;
  int size;
};

Bounds bounds(MPI_Datatype t) {
  Bounds b{};
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_get_extent(t, &b.lb, &b.extent));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_get_true_extent(t, &b.true_lb, &b.true_extent));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_size(t, &b.size));
  return b;
}

// A committed derived type, freed at the end of the test.
class Owned {
 public:
  explicit Owned(MPI_Datatype t) : t_(t) {
    EXPECT_GE(t_, UCHARM_MPI_PREDEFINED_TYPES);
    EXPECT_EQ(MPI_SUCCESS, PMPI_Type_commit(&t_));
  }
  ~Owned() {
    if (t_ != MPI_DATATYPE_NULL) PMPI_Type_free(&t_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  operator MPI_Datatype() const { return t_; }

 private:
  MPI_Datatype t_;
};

template <class T>
std::vector<T> pack(const void* buf, int count, MPI_Datatype t) {
  std::size_t bytes = static_cast<std::size_t>(count) * ampi::type_size(t);
  EXPECT_EQ(0u, bytes % sizeof(T));
  std::vector<T> out(bytes / sizeof(T));
  ampi::type_pack(buf, count, t, out.data());
  return out;
}

// ---- predefined types -----------------------------------------------------------------------

TEST(Datatypes, PredefinedSizesAndExtents) {
  struct Want {
    MPI_Datatype t;
    int size;
    MPI_Aint extent;
    const char* name;
  };
  const Want wants[] = {
      {MPI_CHAR, 1, 1, "MPI_CHAR"},
      {MPI_SIGNED_CHAR, 1, 1, "MPI_SIGNED_CHAR"},
      {MPI_UNSIGNED_CHAR, 1, 1, "MPI_UNSIGNED_CHAR"},
      {MPI_BYTE, 1, 1, "MPI_BYTE"},
      {MPI_SHORT, 2, 2, "MPI_SHORT"},
      {MPI_UNSIGNED_SHORT, 2, 2, "MPI_UNSIGNED_SHORT"},
      {MPI_INT, 4, 4, "MPI_INT"},
      {MPI_UNSIGNED, 4, 4, "MPI_UNSIGNED"},
      {MPI_LONG, 8, 8, "MPI_LONG"},
      {MPI_UNSIGNED_LONG, 8, 8, "MPI_UNSIGNED_LONG"},
      {MPI_LONG_LONG, 8, 8, "MPI_LONG_LONG_INT"},
      {MPI_UNSIGNED_LONG_LONG, 8, 8, "MPI_UNSIGNED_LONG_LONG"},
      {MPI_FLOAT, 4, 4, "MPI_FLOAT"},
      {MPI_DOUBLE, 8, 8, "MPI_DOUBLE"},
      {MPI_LONG_DOUBLE, 16, 16, "MPI_LONG_DOUBLE"},
      {MPI_WCHAR, 4, 4, "MPI_WCHAR"},
      {MPI_C_BOOL, 1, 1, "MPI_C_BOOL"},
      {MPI_INT8_T, 1, 1, "MPI_INT8_T"},
      {MPI_INT16_T, 2, 2, "MPI_INT16_T"},
      {MPI_INT32_T, 4, 4, "MPI_INT32_T"},
      {MPI_INT64_T, 8, 8, "MPI_INT64_T"},
      {MPI_UINT8_T, 1, 1, "MPI_UINT8_T"},
      {MPI_UINT16_T, 2, 2, "MPI_UINT16_T"},
      {MPI_UINT32_T, 4, 4, "MPI_UINT32_T"},
      {MPI_UINT64_T, 8, 8, "MPI_UINT64_T"},
      {MPI_AINT, 8, 8, "MPI_AINT"},
      {MPI_OFFSET, 8, 8, "MPI_OFFSET"},
      {MPI_COUNT, 8, 8, "MPI_COUNT"},
      {MPI_PACKED, 1, 1, "MPI_PACKED"},
      {MPI_FLOAT_INT, 8, 8, "MPI_FLOAT_INT"},
      {MPI_DOUBLE_INT, 12, 16, "MPI_DOUBLE_INT"},
      {MPI_LONG_INT, 12, 16, "MPI_LONG_INT"},
      {MPI_2INT, 8, 8, "MPI_2INT"},
      {MPI_SHORT_INT, 6, 8, "MPI_SHORT_INT"},
      {MPI_LONG_DOUBLE_INT, 20, 32, "MPI_LONG_DOUBLE_INT"},
      {MPI_C_FLOAT_COMPLEX, 8, 8, "MPI_C_COMPLEX"},
      {MPI_C_DOUBLE_COMPLEX, 16, 16, "MPI_C_DOUBLE_COMPLEX"},
      {MPI_C_LONG_DOUBLE_COMPLEX, 32, 32, "MPI_C_LONG_DOUBLE_COMPLEX"},
      {MPI_UB, 0, 0, "MPI_UB"},
      {MPI_LB, 0, 0, "MPI_LB"},
      {MPI_CXX_BOOL, 1, 1, "MPI_CXX_BOOL"},
      {MPI_CHARACTER, 1, 1, "MPI_CHARACTER"},
      {MPI_LOGICAL, 4, 4, "MPI_LOGICAL"},
      {MPI_INTEGER, 4, 4, "MPI_INTEGER"},
      {MPI_REAL, 4, 4, "MPI_REAL"},
      {MPI_DOUBLE_PRECISION, 8, 8, "MPI_DOUBLE_PRECISION"},
      {MPI_COMPLEX, 8, 8, "MPI_COMPLEX"},
      {MPI_DOUBLE_COMPLEX, 16, 16, "MPI_DOUBLE_COMPLEX"},
      {MPI_2REAL, 8, 8, "MPI_2REAL"},
      {MPI_2DOUBLE_PRECISION, 16, 16, "MPI_2DOUBLE_PRECISION"},
      {MPI_2INTEGER, 8, 8, "MPI_2INTEGER"},
      {MPI_INTEGER1, 1, 1, "MPI_INTEGER1"},
      {MPI_INTEGER2, 2, 2, "MPI_INTEGER2"},
      {MPI_INTEGER4, 4, 4, "MPI_INTEGER4"},
      {MPI_INTEGER8, 8, 8, "MPI_INTEGER8"},
      {MPI_REAL4, 4, 4, "MPI_REAL4"},
      {MPI_REAL8, 8, 8, "MPI_REAL8"},
      {MPI_COMPLEX8, 8, 8, "MPI_COMPLEX8"},
      {MPI_COMPLEX16, 16, 16, "MPI_COMPLEX16"},
      {MPI_CXX_FLOAT_COMPLEX, 8, 8, "MPI_CXX_FLOAT_COMPLEX"},
      {MPI_CXX_DOUBLE_COMPLEX, 16, 16, "MPI_CXX_DOUBLE_COMPLEX"},
      {MPI_CXX_LONG_DOUBLE_COMPLEX, 32, 32, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
  };
  EXPECT_EQ(UCHARM_MPI_PREDEFINED_TYPES - 1, static_cast<int>(std::size(wants)));
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    Bounds b = bounds(w.t);
    EXPECT_EQ(w.size, b.size);
    EXPECT_EQ(0, b.lb);
    EXPECT_EQ(w.extent, b.extent);
    EXPECT_EQ(w.extent, ampi::type_extent(w.t));
    EXPECT_TRUE(ampi::type_valid(w.t));
    EXPECT_EQ(w.t != MPI_UB && w.t != MPI_LB, ampi::type_committed(w.t));
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    EXPECT_EQ(MPI_SUCCESS, PMPI_Type_get_name(w.t, name, &len));
    EXPECT_STREQ(w.name, name);
    EXPECT_EQ(static_cast<int>(std::strlen(w.name)), len);
    EXPECT_EQ(w.name, ampi::type_name(w.t));
  }
  EXPECT_FALSE(ampi::type_valid(MPI_DATATYPE_NULL));
  EXPECT_FALSE(ampi::type_committed(MPI_DATATYPE_NULL));
  // The true extent of a pair ends at its int; SHORT_INT's data is not one block.
  EXPECT_EQ(12, bounds(MPI_DOUBLE_INT).true_extent);
  EXPECT_TRUE(ampi::type_contiguous(MPI_DOUBLE));
  EXPECT_TRUE(ampi::type_contiguous(MPI_2INT));
  EXPECT_FALSE(ampi::type_contiguous(MPI_DOUBLE_INT));
  EXPECT_FALSE(ampi::type_contiguous(MPI_SHORT_INT));
}

TEST(Datatypes, PairTypesPackWithoutPadding) {
  struct ShortInt {
    short v;
    int i;
  };
  ShortInt a[2];
  std::memset(a, 0x55, sizeof a);
  a[0] = {1, 2};
  a[1] = {3, 4};
  std::vector<unsigned char> packed(12);
  ampi::type_pack(a, 2, MPI_SHORT_INT, packed.data());
  short s;
  int i;
  std::memcpy(&s, &packed[0], 2);
  std::memcpy(&i, &packed[2], 4);
  EXPECT_EQ(1, s);
  EXPECT_EQ(2, i);
  std::memcpy(&s, &packed[6], 2);
  std::memcpy(&i, &packed[8], 4);
  EXPECT_EQ(3, s);
  EXPECT_EQ(4, i);
  ShortInt b[2];
  std::memset(b, 0x77, sizeof b);
  ampi::type_unpack(packed.data(), packed.size(), b, 2, MPI_SHORT_INT);
  EXPECT_EQ(3, b[1].v);
  EXPECT_EQ(4, b[1].i);
  unsigned char pad[2];
  std::memcpy(pad, reinterpret_cast<unsigned char*>(&b[0]) + 2, 2);
  EXPECT_EQ(0x77, pad[0]);  // the padding is not data: untouched
  EXPECT_EQ(0x77, pad[1]);
}

// ---- derived types --------------------------------------------------------------------------

TEST(Datatypes, VectorBoundsAndPackRoundTrip) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(3, 2, 4, MPI_DOUBLE, &raw));
  Owned v(raw);
  Bounds b = bounds(v);
  EXPECT_EQ(48, b.size);
  EXPECT_EQ(0, b.lb);
  EXPECT_EQ((2 * 4 + 2) * 8, b.extent);
  EXPECT_EQ(80, b.true_extent);
  EXPECT_FALSE(ampi::type_contiguous(v));

  std::vector<double> a(20);
  std::iota(a.begin(), a.end(), 0.0);
  // Two elements: the second starts one extent (10 doubles) later.
  std::vector<double> want = {0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19};
  EXPECT_EQ(want, pack<double>(a.data(), 2, v));
  std::vector<double> back(20, -1.0);
  ampi::type_unpack(want.data(), want.size() * sizeof(double), back.data(), 2, v);
  for (int i = 0; i < 20; ++i) EXPECT_EQ((i % 10) % 4 < 2 ? i : -1.0, back[i]) << i;

  // A vector whose blocks touch is one contiguous block.
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(4, 2, 2, MPI_INT, &raw));
  Owned dense(raw);
  EXPECT_TRUE(ampi::type_contiguous(dense));
  EXPECT_EQ(32, ampi::type_extent(dense));
}

TEST(Datatypes, HvectorWithNegativeStride) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_hvector(3, 1, -16, MPI_INT, &raw));
  Owned h(raw);
  Bounds b = bounds(h);
  EXPECT_EQ(12, b.size);
  EXPECT_EQ(-32, b.lb);
  EXPECT_EQ(36, b.extent);
  EXPECT_EQ(-32, b.true_lb);
  std::vector<int> a(12);
  std::iota(a.begin(), a.end(), 0);
  EXPECT_EQ((std::vector<int>{8, 4, 0}), pack<int>(a.data() + 8, 1, h));
}

TEST(Datatypes, IndexedKeepsTypemapOrder) {
  const int lengths[] = {1, 2, 3};
  const int displs[] = {5, 0, 10};
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_indexed(3, lengths, displs, MPI_INT, &raw));
  Owned t(raw);
  Bounds b = bounds(t);
  EXPECT_EQ(24, b.size);
  EXPECT_EQ(0, b.lb);
  EXPECT_EQ(52, b.extent);
  std::vector<int> a(13);
  std::iota(a.begin(), a.end(), 100);
  std::vector<int> want = {105, 100, 101, 110, 111, 112};
  EXPECT_EQ(want, pack<int>(a.data(), 1, t));
  std::vector<int> back(13, 0);
  ampi::type_unpack(want.data(), 24, back.data(), 1, t);
  EXPECT_EQ((std::vector<int>{100, 101, 0, 0, 0, 105, 0, 0, 0, 0, 110, 111, 112}), back);

  // hindexed and indexed_block describe the same thing in bytes / with one length.
  const MPI_Aint hdispls[] = {20, 0, 40};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_hindexed(3, lengths, hdispls, MPI_INT, &raw));
  Owned h(raw);
  EXPECT_EQ(want, pack<int>(a.data(), 1, h));
  const int bdispls[] = {5, 0, 10};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_indexed_block(3, 1, bdispls, MPI_INT, &raw));
  Owned blk(raw);
  EXPECT_EQ((std::vector<int>{105, 100, 110}), pack<int>(a.data(), 1, blk));
}

struct S {
  char c;
  double d;
  int i;
};

MPI_Datatype struct_type(bool with_ub) {
  const int lengths[] = {1, 1, 1, 1};
  const MPI_Aint displs[] = {offsetof(S, c), offsetof(S, d), offsetof(S, i), 2 * sizeof(S)};
  const MPI_Datatype types[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_UB};
  MPI_Datatype t;
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_create_struct(with_ub ? 4 : 3, lengths, displs, types, &t));
  return t;
}

TEST(Datatypes, StructIsPaddedLikeC) {
  Owned t(struct_type(false));
  Bounds b = bounds(t);
  EXPECT_EQ(13, b.size);
  EXPECT_EQ(0, b.lb);
  EXPECT_EQ(static_cast<MPI_Aint>(sizeof(S)), b.extent);  // 24: padded to double's alignment
  EXPECT_EQ(static_cast<MPI_Aint>(offsetof(S, i) + sizeof(int)), b.true_extent);

  S a[3] = {{'a', 1.5, 10}, {'b', 2.5, 20}, {'c', 3.5, 30}};
  std::vector<char> packed(3 * 13);
  ampi::type_pack(a, 3, t, packed.data());
  S back[3];
  std::memset(back, 0, sizeof back);
  ampi::type_unpack(packed.data(), packed.size(), back, 3, t);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(a[k].c, back[k].c);
    EXPECT_EQ(a[k].d, back[k].d);
    EXPECT_EQ(a[k].i, back[k].i);
  }
  EXPECT_EQ(3, ampi::type_basic_elements(t, 13));
  EXPECT_EQ(2, ampi::type_basic_elements(t, 9));
  EXPECT_EQ(MPI_UNDEFINED, ampi::type_basic_elements(t, 5));
  EXPECT_EQ(8, ampi::type_basic_elements(t, 13 * 2 + 9));
}

TEST(Datatypes, UbAndLbMarkersSetBoundsAndStick) {
  Owned t(struct_type(true));
  Bounds b = bounds(t);
  EXPECT_EQ(13, b.size);
  EXPECT_EQ(0, b.lb);
  EXPECT_EQ(static_cast<MPI_Aint>(2 * sizeof(S)), b.extent);  // the marker, no padding
  MPI_Aint ub = 0;
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_ub(t, &ub));
  EXPECT_EQ(48, ub);

  // The marker carries into a type built from this one.
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(2, t, &raw));
  Owned two(raw);
  EXPECT_EQ(96, bounds(two).extent);

  // MPI_LB below the data, through the MPI-1 MPI_Type_struct.
  const int lengths[] = {1, 2};
  const MPI_Aint displs[] = {-8, 0};
  const MPI_Datatype types[] = {MPI_LB, MPI_INT};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_struct(2, lengths, displs, types, &raw));
  Owned lb(raw);
  Bounds c = bounds(lb);
  EXPECT_EQ(-8, c.lb);
  EXPECT_EQ(16, c.extent);
  EXPECT_EQ(0, c.true_lb);
  EXPECT_EQ(8, c.true_extent);
  MPI_Aint lbv = 1, ext = 0;
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_lb(lb, &lbv));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Type_extent(lb, &ext));
  EXPECT_EQ(-8, lbv);
  EXPECT_EQ(16, ext);

  // Markers win over the data even inside it: lb 4 and ub 4 around data [0, 8).
  const int lengths2[] = {1, 2, 1};
  const MPI_Aint displs2[] = {4, 0, 6};
  const MPI_Datatype types2[] = {MPI_LB, MPI_INT, MPI_UB};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_struct(3, lengths2, displs2, types2, &raw));
  Owned inside(raw);
  Bounds d = bounds(inside);
  EXPECT_EQ(4, d.lb);
  EXPECT_EQ(2, d.extent);
  EXPECT_EQ(0, d.true_lb);
  EXPECT_EQ(8, d.true_extent);
}

TEST(Datatypes, SubarrayInCAndFortranOrder) {
  const int sizes[] = {4, 5}, subsizes[] = {2, 3}, starts[] = {1, 2};
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &raw));
  Owned c(raw);
  Bounds b = bounds(c);
  EXPECT_EQ(24, b.size);
  EXPECT_EQ(0, b.lb);
  EXPECT_EQ(80, b.extent);  // the whole array
  EXPECT_EQ((1 * 5 + 2) * 4, b.true_lb);
  std::vector<int> a(20);
  std::iota(a.begin(), a.end(), 0);
  EXPECT_EQ((std::vector<int>{7, 8, 9, 12, 13, 14}), pack<int>(a.data(), 1, c));

  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &raw));
  Owned f(raw);
  // Dimension 0 varies fastest: element (i, j) is at i + 4 j.
  EXPECT_EQ((std::vector<int>{9, 10, 13, 14, 17, 18}), pack<int>(a.data(), 1, f));

  // 3-D, two elements back to back: the second is one whole array later.
  const int s3[] = {2, 3, 4}, sub3[] = {1, 2, 2}, st3[] = {1, 1, 2};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_subarray(3, s3, sub3, st3, MPI_ORDER_C, MPI_INT, &raw));
  Owned t3(raw);
  std::vector<int> a3(48);
  std::iota(a3.begin(), a3.end(), 0);
  std::vector<int> want = {12 + 4 + 2, 12 + 4 + 3, 12 + 8 + 2, 12 + 8 + 3};
  for (int k = 0; k < 4; ++k) want.push_back(want[static_cast<std::size_t>(k)] + 24);
  EXPECT_EQ(want, pack<int>(a3.data(), 2, t3));

  const int outside[] = {3, 0};  // rows 3 and 4 of 4
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_create_subarray",
                   PMPI_Type_create_subarray(2, sizes, subsizes, outside, MPI_ORDER_C, MPI_INT, &raw));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_create_subarray",
                   PMPI_Type_create_subarray(0, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &raw));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_create_subarray",
                   PMPI_Type_create_subarray(2, sizes, subsizes, starts, 7, MPI_INT, &raw));
}

TEST(Datatypes, ResizedSetsTheStride) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_resized(MPI_INT, -4, 16, &raw));
  Owned r(raw);
  Bounds b = bounds(r);
  EXPECT_EQ(4, b.size);
  EXPECT_EQ(-4, b.lb);
  EXPECT_EQ(16, b.extent);
  EXPECT_EQ(0, b.true_lb);
  EXPECT_EQ(4, b.true_extent);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(3, r, &raw));
  Owned three(raw);
  Bounds c = bounds(three);
  EXPECT_EQ(-4, c.lb);
  EXPECT_EQ(48, c.extent);
  EXPECT_EQ(0, c.true_lb);
  EXPECT_EQ(36, c.true_extent);
  std::vector<int> a(12);
  std::iota(a.begin(), a.end(), 0);
  EXPECT_EQ((std::vector<int>{0, 4, 8}), pack<int>(a.data(), 1, three));
  // Sending `3 x resized` is the same as sending one `contiguous(3, resized)`.
  EXPECT_EQ((std::vector<int>{0, 4, 8}), pack<int>(a.data(), 3, r));
}

TEST(Datatypes, NestedTypesAndDup) {
  // A vector of a struct of a vector.
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(2, 1, 3, MPI_SHORT, &raw));
  Owned inner(raw);  // shorts 0 and 3; extent 8
  const int lengths[] = {2, 1};
  const MPI_Aint displs[] = {0, 16};
  const MPI_Datatype types[] = {inner, MPI_SHORT};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_struct(2, lengths, displs, types, &raw));
  Owned st(raw);  // shorts 0, 3, 4, 7, 8; extent 18
  EXPECT_EQ(18, ampi::type_extent(st));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(2, 1, 2, st, &raw));
  Owned outer(raw);
  std::vector<short> a(40);
  std::iota(a.begin(), a.end(), short{0});
  EXPECT_EQ((std::vector<short>{0, 3, 4, 7, 8, 18, 21, 22, 25, 26}), pack<short>(a.data(), 1, outer));

  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_dup(outer, &raw));
  Owned dup(raw);
  EXPECT_NE(static_cast<MPI_Datatype>(outer), static_cast<MPI_Datatype>(dup));
  EXPECT_EQ(pack<short>(a.data(), 1, outer), pack<short>(a.data(), 1, dup));
  // A dup of an uncommitted type is uncommitted; of a committed one, committed.
  MPI_Datatype unc, unc_dup;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(2, MPI_INT, &unc));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_dup(unc, &unc_dup));
  EXPECT_FALSE(ampi::type_committed(unc_dup));
  EXPECT_TRUE(ampi::type_committed(dup));
  PMPI_Type_free(&unc_dup);
  PMPI_Type_free(&unc);
}

TEST(Datatypes, PartialUnpackAndBasicElements) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(3, 2, 3, MPI_INT, &raw));
  Owned v(raw);  // ints 0 1 3 4 6 7
  std::vector<int> in = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  std::vector<int> out(20, -1);
  // 7 ints of 2 elements: the first whole, then one int of the second.
  ampi::type_unpack(in.data(), 7 * sizeof(int), out.data(), 2, v);
  EXPECT_EQ((std::vector<int>{10, 11, -1, 12, 13, -1, 14, 15, 16, -1, -1, -1}),
            std::vector<int>(out.begin(), out.begin() + 12));
  EXPECT_EQ(7, ampi::type_basic_elements(v, 28));
  EXPECT_EQ(MPI_UNDEFINED, ampi::type_basic_elements(v, 30));
  EXPECT_EQ(2, ampi::type_basic_elements(MPI_DOUBLE_INT, 12));
  EXPECT_EQ(1, ampi::type_basic_elements(MPI_DOUBLE_INT, 8));
  EXPECT_EQ(MPI_UNDEFINED, ampi::type_basic_elements(MPI_DOUBLE_INT, 10));
  EXPECT_EQ(5, ampi::type_basic_elements(MPI_DOUBLE_INT, 12 * 2 + 8));
  EXPECT_EQ(0, ampi::type_basic_elements(MPI_UB, 0));
}

TEST(Datatypes, LargeVectorPacksQuicklyAndCorrectly) {
  // A million blocks: the flattened form stays one repeated run.
  const int n = 1 << 20;
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(n, 1, 2, MPI_DOUBLE, &raw));
  Owned v(raw);
  std::vector<double> a(2 * static_cast<std::size_t>(n));
  std::iota(a.begin(), a.end(), 0.0);
  std::vector<double> packed = pack<double>(a.data(), 1, v);
  ASSERT_EQ(static_cast<std::size_t>(n), packed.size());
  for (int i = 0; i < n; i += 4099) EXPECT_EQ(2.0 * i, packed[static_cast<std::size_t>(i)]);
}

TEST(Datatypes, AbsoluteAddressesFromMpiBottom) {
  // A struct of absolute addresses, used with MPI_BOTTOM as the buffer.
  int x = 5;
  double y[2] = {1.5, 2.5};
  MPI_Aint ax, ay;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Get_address(&x, &ax));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Get_address(y, &ay));
  const int lengths[] = {1, 2};
  const MPI_Aint displs[] = {ax, ay};
  const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_struct(2, lengths, displs, types, &raw));
  Owned t(raw);
  char buf[20];
  int pos = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack(MPI_BOTTOM, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(20, pos);
  x = 0;
  y[0] = y[1] = 0;
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Unpack(buf, sizeof buf, &pos, MPI_BOTTOM, 1, t, MPI_COMM_WORLD));
  EXPECT_EQ(5, x);
  EXPECT_EQ(1.5, y[0]);
  EXPECT_EQ(2.5, y[1]);
  // Ops too: a vector of doubles at an absolute address.
  MPI_Datatype v;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_hvector(1, 2, 0, MPI_DOUBLE, &raw));
  const int one[] = {1};
  const MPI_Aint where[] = {ay};
  const MPI_Datatype vt[] = {raw};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_struct(1, one, where, vt, &v));
  PMPI_Type_free(&raw);
  Owned abs_v(v);
  double in[2] = {10, 20};
  // `in` relative to MPI_BOTTOM: the in buffer is offset by (in - y).
  MPI_Aint ain;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Get_address(in, &ain));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(reinterpret_cast<void*>(ain - ay), MPI_BOTTOM, 1, abs_v, MPI_SUM));
  EXPECT_EQ(11.5, y[0]);
  EXPECT_EQ(22.5, y[1]);
}

// ---- MPI_Pack / MPI_Unpack ------------------------------------------------------------------

TEST(Datatypes, PackUnpackWithPositions) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(2, 1, 2, MPI_INT, &raw));
  Owned v(raw);
  int n = 3;
  int vec[3] = {7, 8, 9};
  double d = 2.5;
  int size_n, size_v, size_d;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &size_n));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack_size(1, v, MPI_COMM_WORLD, &size_v));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack_size(1, MPI_DOUBLE, MPI_COMM_WORLD, &size_d));
  EXPECT_EQ(8, size_v);
  std::vector<char> buf(static_cast<std::size_t>(size_n + size_v + size_d));
  int pos = 0, total = static_cast<int>(buf.size());
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack(&n, 1, MPI_INT, buf.data(), total, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(4, pos);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack(vec, 1, v, buf.data(), total, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(12, pos);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack(&d, 1, MPI_DOUBLE, buf.data(), total, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(total, pos);

  int n2 = 0, vec2[3] = {0, 0, 0};
  double d2 = 0;
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Unpack(buf.data(), total, &pos, &n2, 1, MPI_INT, MPI_COMM_WORLD));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Unpack(buf.data(), total, &pos, vec2, 1, v, MPI_COMM_WORLD));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Unpack(buf.data(), total, &pos, &d2, 1, MPI_DOUBLE, MPI_COMM_WORLD));
  EXPECT_EQ(total, pos);
  EXPECT_EQ(3, n2);
  EXPECT_EQ(7, vec2[0]);
  EXPECT_EQ(0, vec2[1]);
  EXPECT_EQ(9, vec2[2]);
  EXPECT_EQ(2.5, d2);

  // The packed bytes are the data in MPI_PACKED / MPI_BYTE form.
  int ints[2] = {0, 0};
  std::memcpy(ints, buf.data() + 4, 8);
  EXPECT_EQ(7, ints[0]);
  EXPECT_EQ(9, ints[1]);
}

TEST(Datatypes, PackAndUnpackReportTruncation) {
  int a[4] = {1, 2, 3, 4};
  char buf[12];
  int pos = 4;
  EXPECT_MPI_ERROR(MPI_ERR_TRUNCATE, "MPI_Pack", PMPI_Pack(a, 3, MPI_INT, buf, 12, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(4, pos);  // unchanged
  EXPECT_NE(std::string::npos, last_error.message.find("12 bytes"));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Pack(a, 2, MPI_INT, buf, 12, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(12, pos);
  pos = 8;
  int out[4];
  EXPECT_MPI_ERROR(MPI_ERR_TRUNCATE, "MPI_Unpack", PMPI_Unpack(buf, 12, &pos, out, 2, MPI_INT, MPI_COMM_WORLD));
  EXPECT_EQ(8, pos);
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Pack", PMPI_Pack(a, 1, MPI_INT, buf, 12, nullptr, MPI_COMM_WORLD));
  pos = 13;
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Pack", PMPI_Pack(a, 1, MPI_INT, buf, 12, &pos, MPI_COMM_WORLD));
  pos = 0;
  EXPECT_MPI_ERROR(MPI_ERR_COUNT, "MPI_Pack", PMPI_Pack(a, -1, MPI_INT, buf, 12, &pos, MPI_COMM_WORLD));
  int size = 0;
  EXPECT_MPI_ERROR(MPI_ERR_COUNT, "MPI_Pack_size", PMPI_Pack_size(-2, MPI_INT, MPI_COMM_WORLD, &size));
}

// ---- handles and errors ---------------------------------------------------------------------

TEST(Datatypes, ArgumentErrors) {
  MPI_Datatype t;
  EXPECT_MPI_ERROR(MPI_ERR_COUNT, "MPI_Type_contiguous", PMPI_Type_contiguous(-1, MPI_INT, &t));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_contiguous", PMPI_Type_contiguous(1, MPI_DATATYPE_NULL, &t));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_contiguous", PMPI_Type_contiguous(1, 999999, &t));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_contiguous", PMPI_Type_contiguous(1, -5, &t));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_contiguous", PMPI_Type_contiguous(1, MPI_INT, nullptr));
  EXPECT_MPI_ERROR(MPI_ERR_COUNT, "MPI_Type_vector", PMPI_Type_vector(-1, 1, 1, MPI_INT, &t));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_vector", PMPI_Type_vector(1, -1, 1, MPI_INT, &t));
  const int bad_lengths[] = {1, -1};
  const int displs[] = {0, 1};
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_indexed", PMPI_Type_indexed(2, bad_lengths, displs, MPI_INT, &t));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_indexed", PMPI_Type_indexed(2, nullptr, displs, MPI_INT, &t));
  const int lengths[] = {1, 1};
  const MPI_Aint adispls[] = {0, 8};
  const MPI_Datatype types[] = {MPI_INT, MPI_DATATYPE_NULL};
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_create_struct", PMPI_Type_create_struct(2, lengths, adispls, types, &t));
  EXPECT_NE(std::string::npos, last_error.message.find("array_of_types[1]"));
  int size;
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_size", PMPI_Type_size(MPI_INT, nullptr));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_size", PMPI_Type_size(MPI_DATATYPE_NULL, &size));
  MPI_Datatype predefined = MPI_INT;
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_free", PMPI_Type_free(&predefined));
  EXPECT_EQ(MPI_INT, predefined);
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Type_commit", PMPI_Type_commit(nullptr));
}

TEST(Datatypes, UncommittedAndFreedTypes) {
  MPI_Datatype t;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(2, MPI_INT, &t));
  EXPECT_TRUE(ampi::type_valid(t));
  EXPECT_FALSE(ampi::type_committed(t));
  int a[2] = {1, 2};
  char buf[8];
  int pos = 0;
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Pack", PMPI_Pack(a, 1, t, buf, 8, &pos, MPI_COMM_WORLD));
  EXPECT_NE(std::string::npos, last_error.message.find("not committed"));
  MPI_Datatype kept = t;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_commit(&t));
  EXPECT_TRUE(ampi::type_committed(t));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Pack(a, 1, t, buf, 8, &pos, MPI_COMM_WORLD));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_free(&t));
  EXPECT_EQ(MPI_DATATYPE_NULL, t);
  EXPECT_FALSE(ampi::type_valid(kept));
  EXPECT_FALSE(ampi::type_committed(kept));
  int size;
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_size", PMPI_Type_size(kept, &size));
  EXPECT_NE(std::string::npos, last_error.message.find("freed"));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Type_free", PMPI_Type_free(&kept));
}

TEST(Datatypes, RetainedTypeOutlivesFree) {
  // Communication may still use a type the program has freed (MPI allows the free).
  MPI_Datatype t;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(2, 1, 2, MPI_INT, &t));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_commit(&t));
  MPI_Datatype h = t;
  ampi::type_retain(h);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_free(&t));
  EXPECT_FALSE(ampi::type_valid(h));
  int a[3] = {1, 2, 3};
  EXPECT_EQ((std::vector<int>{1, 3}), pack<int>(a, 1, h));
  ampi::type_release(h);
  EXPECT_FALSE(ampi::type_valid(h));
  EXPECT_EQ(0u, ampi::type_size(h));
}

TEST(Datatypes, NamesAndAddresses) {
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(4, MPI_DOUBLE, &raw));
  Owned t(raw);
  char name[MPI_MAX_OBJECT_NAME];
  int len = -1;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_name(t, name, &len));
  EXPECT_EQ(0, len);
  EXPECT_STREQ("", name);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_set_name(t, "quad"));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_name(t, name, &len));
  EXPECT_STREQ("quad", name);
  EXPECT_EQ(4, len);
  EXPECT_NE(std::string::npos, ampi::type_name(t).find("quad"));
  EXPECT_NE(std::string::npos, ampi::type_name(t).find(std::to_string(static_cast<MPI_Datatype>(t))));

  S s;
  MPI_Aint base, member;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Get_address(&s, &base));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Address(&s.i, &member));
  EXPECT_EQ(static_cast<MPI_Aint>(offsetof(S, i)), member - base);
  MPI_Count big = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_size_x(t, &big));
  EXPECT_EQ(32, big);
}

TEST(Datatypes, HandlesAreUniqueAcrossRanks) {
  // Each rank has its own table (threads stand for ranks 1-4 here): handles never collide,
  // and any code finds a type by its handle alone, whoever runs.
  const int threads = 4, per_thread = 2000;
  std::vector<std::vector<MPI_Datatype>> made(threads);
  std::vector<std::unique_ptr<RankTables>> tables;
  for (int k = 0; k < threads; ++k) tables.push_back(std::make_unique<RankTables>(k + 1));
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([k, &made] {
      ampi::test_rank = k + 1;
      for (int i = 0; i < per_thread; ++i) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (PMPI_Type_contiguous(k + 1, MPI_INT, &t) != MPI_SUCCESS) return;
        made[static_cast<std::size_t>(k)].push_back(t);
        if (i % 2 == 1) {  // free every other one again
          MPI_Datatype f = made[static_cast<std::size_t>(k)][static_cast<std::size_t>(i - 1)];
          if (PMPI_Type_free(&f) != MPI_SUCCESS) return;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  std::set<MPI_Datatype> live;
  for (int k = 0; k < threads; ++k) {
    ASSERT_EQ(static_cast<std::size_t>(per_thread), made[static_cast<std::size_t>(k)].size());
    for (int i = 1; i < per_thread; i += 2) {
      MPI_Datatype t = made[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)];
      EXPECT_TRUE(live.insert(t).second) << "handle " << t << " given twice";
      EXPECT_EQ(static_cast<std::size_t>(4 * (k + 1)), ampi::type_size(t));
    }
  }
  for (MPI_Datatype t : live) PMPI_Type_free(&t);
}


// ---- reduction operations -------------------------------------------------------------------

template <class T>
std::vector<T> reduce(MPI_Op op, MPI_Datatype t, std::vector<T> in, std::vector<T> inout) {
  last_error = ReportedError{};
  // As many elements of t as the vectors hold.
  int count = static_cast<int>(in.size() * sizeof(T) / static_cast<std::size_t>(ampi::type_extent(t)));
  EXPECT_EQ(MPI_SUCCESS, PMPI_Reduce_local(in.data(), inout.data(), count, t, op))
      << last_error.message;
  return inout;
}

TEST(Ops, ArithmeticOnIntegersAndFloats) {
  std::vector<int> a = {1, -5, 7, INT_MAX}, b = {3, -2, 7, 1};
  EXPECT_EQ((std::vector<int>{3, -2, 7, INT_MAX}), reduce(MPI_MAX, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{1, -5, 7, 1}), reduce(MPI_MIN, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{4, -7, 14, INT_MIN}), reduce(MPI_SUM, MPI_INT, a, b));  // wraps
  EXPECT_EQ((std::vector<int>{3, 10, 49, INT_MAX}), reduce(MPI_PROD, MPI_INT, a, b));

  std::vector<double> x = {1.5, -2.0, 0.25}, y = {2.0, -3.0, 4.0};
  EXPECT_EQ((std::vector<double>{2.0, -2.0, 4.0}), reduce(MPI_MAX, MPI_DOUBLE, x, y));
  EXPECT_EQ((std::vector<double>{1.5, -3.0, 0.25}), reduce(MPI_MIN, MPI_DOUBLE, x, y));
  EXPECT_EQ((std::vector<double>{3.5, -5.0, 4.25}), reduce(MPI_SUM, MPI_DOUBLE, x, y));
  EXPECT_EQ((std::vector<double>{3.0, 6.0, 1.0}), reduce(MPI_PROD, MPI_DOUBLE, x, y));

  std::vector<float> f = {1.0f, 2.0f}, g = {0.5f, 4.0f};
  EXPECT_EQ((std::vector<float>{1.5f, 6.0f}), reduce(MPI_SUM, MPI_FLOAT, f, g));
  std::vector<long double> l = {1.0L, 2.0L}, m = {3.0L, 0.5L};
  EXPECT_EQ((std::vector<long double>{3.0L, 2.0L}), reduce(MPI_MAX, MPI_LONG_DOUBLE, l, m));
  std::vector<unsigned char> u = {200, 3}, v = {100, 4};
  EXPECT_EQ((std::vector<unsigned char>{44, 7}), reduce(MPI_SUM, MPI_UNSIGNED_CHAR, u, v));
  std::vector<short> s = {300, -3}, t = {300, 4};
  EXPECT_EQ((std::vector<short>{static_cast<short>(90000), -12}), reduce(MPI_PROD, MPI_SHORT, s, t));
  std::vector<long long> p = {1LL << 40, 5}, q = {1, 6};
  EXPECT_EQ((std::vector<long long>{(1LL << 40) + 1, 11}), reduce(MPI_SUM, MPI_LONG_LONG, p, q));
  std::vector<std::uint64_t> w = {~0ull, 2}, z = {1, 3};
  EXPECT_EQ((std::vector<std::uint64_t>{~0ull, 3}), reduce(MPI_MAX, MPI_UINT64_T, w, z));
}

TEST(Ops, ComplexSumAndProduct) {
  using C = std::complex<double>;
  std::vector<C> a = {{1, 2}, {0, 1}}, b = {{3, -1}, {0, 1}};
  EXPECT_EQ((std::vector<C>{{4, 1}, {0, 2}}), reduce(MPI_SUM, MPI_C_DOUBLE_COMPLEX, a, b));
  EXPECT_EQ((std::vector<C>{{5, 5}, {-1, 0}}), reduce(MPI_PROD, MPI_C_DOUBLE_COMPLEX, a, b));
  using F = std::complex<float>;
  std::vector<F> c = {{1, 1}}, d = {{2, 3}};
  EXPECT_EQ((std::vector<F>{{3, 4}}), reduce(MPI_SUM, MPI_C_FLOAT_COMPLEX, c, d));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_MAX, c.data(), d.data(), 1, MPI_C_FLOAT_COMPLEX));
}

TEST(Ops, LogicalAndBitwise) {
  std::vector<int> a = {0, 0, 5, 5}, b = {0, 3, 0, 3};
  EXPECT_EQ((std::vector<int>{0, 0, 0, 1}), reduce(MPI_LAND, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{0, 1, 1, 1}), reduce(MPI_LOR, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{0, 1, 1, 0}), reduce(MPI_LXOR, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{0, 0, 0, 1}), reduce(MPI_BAND, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{0, 3, 5, 7}), reduce(MPI_BOR, MPI_INT, a, b));
  EXPECT_EQ((std::vector<int>{0, 3, 5, 6}), reduce(MPI_BXOR, MPI_INT, a, b));

  bool p[4] = {false, false, true, true}, q[4] = {false, true, false, true};
  bool r[4];
  std::copy(q, q + 4, r);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(p, r, 4, MPI_C_BOOL, MPI_LAND));
  EXPECT_EQ((std::vector<bool>{false, false, false, true}), std::vector<bool>(r, r + 4));
  std::copy(q, q + 4, r);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(p, r, 4, MPI_C_BOOL, MPI_LOR));
  EXPECT_EQ((std::vector<bool>{false, true, true, true}), std::vector<bool>(r, r + 4));
  std::copy(q, q + 4, r);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(p, r, 4, MPI_CXX_BOOL, MPI_LXOR));
  EXPECT_EQ((std::vector<bool>{false, true, true, false}), std::vector<bool>(r, r + 4));

  std::vector<unsigned char> x = {0xF0, 0x0F}, y = {0xFF, 0x01};
  EXPECT_EQ((std::vector<unsigned char>{0xF0, 0x01}), reduce(MPI_BAND, MPI_BYTE, x, y));
  EXPECT_EQ((std::vector<unsigned char>{0xFF, 0x0F}), reduce(MPI_BOR, MPI_BYTE, x, y));
  EXPECT_EQ((std::vector<unsigned char>{0x0F, 0x0E}), reduce(MPI_BXOR, MPI_BYTE, x, y));
  std::vector<std::uint16_t> m = {0x1234}, n = {0x00FF};
  EXPECT_EQ((std::vector<std::uint16_t>{0x0034}), reduce(MPI_BAND, MPI_UINT16_T, m, n));
}

TEST(Ops, MinlocMaxlocTakeTheSmallerIndexOnTies) {
  struct DI {
    double v;
    int i;
  };
  DI in[4] = {{1.0, 7}, {5.0, 2}, {3.0, 9}, {3.0, 1}};
  DI io[4] = {{2.0, 3}, {5.0, 4}, {3.0, 4}, {3.0, 4}};
  // io reduced with in by `op` gives these values and indices.
  auto expect_reduced = [&](MPI_Op op, const std::array<double, 4>& val, const std::array<int, 4>& idx) {
    DI a[4];
    std::copy(io, io + 4, a);
    ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(in, a, 4, MPI_DOUBLE_INT, op));
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(val[static_cast<std::size_t>(k)], a[k].v) << k;
      EXPECT_EQ(idx[static_cast<std::size_t>(k)], a[k].i) << k;
    }
  };
  expect_reduced(MPI_MINLOC, {1.0, 5.0, 3.0, 3.0}, {7, 2, 4, 1});
  expect_reduced(MPI_MAXLOC, {2.0, 5.0, 3.0, 3.0}, {3, 2, 4, 1});

  std::vector<int> two_in = {4, 10, 4, 10}, two_io = {4, 11, 6, 0};
  EXPECT_EQ((std::vector<int>{4, 10, 4, 10}), reduce(MPI_MINLOC, MPI_2INT, two_in, two_io));
  EXPECT_EQ((std::vector<int>{4, 10, 6, 0}), reduce(MPI_MAXLOC, MPI_2INT, two_in, two_io));

  struct SI {
    short v;
    int i;
  };
  SI sin[1] = {{-3, 5}}, sio[1] = {{-3, 6}};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(sin, sio, 1, MPI_SHORT_INT, MPI_MAXLOC));
  EXPECT_EQ(-3, sio[0].v);
  EXPECT_EQ(5, sio[0].i);
  struct LDI {
    long double v;
    int i;
  };
  LDI lin[1] = {{2.0L, 8}}, lio[1] = {{1.0L, 0}};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(lin, lio, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC));
  EXPECT_EQ(2.0L, lio[0].v);
  EXPECT_EQ(8, lio[0].i);
  struct FI {
    float v;
    int i;
  };
  FI fin[1] = {{2.0f, 8}}, fio[1] = {{2.0f, 3}};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(fin, fio, 1, MPI_FLOAT_INT, MPI_MINLOC));
  EXPECT_EQ(3, fio[0].i);
}

TEST(Ops, ReplaceAndNoOp) {
  std::vector<int> a = {1, 2}, b = {3, 4};
  EXPECT_EQ(a, reduce(MPI_REPLACE, MPI_INT, a, b));
  EXPECT_EQ(b, reduce(MPI_NO_OP, MPI_INT, a, b));
  // Replace works on a mix of basic types too.
  Owned st(struct_type(false));
  S in[1] = {{'x', 9.5, 3}}, io[1] = {{'y', 1.0, 4}};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(in, io, 1, st, MPI_REPLACE));
  EXPECT_EQ('x', io[0].c);
  EXPECT_EQ(9.5, io[0].d);
  EXPECT_EQ(3, io[0].i);
  int commute = -1;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_commutative(MPI_SUM, &commute));
  EXPECT_EQ(1, commute);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_commutative(MPI_REPLACE, &commute));
  EXPECT_EQ(0, commute);
}

TEST(Ops, PredefinedOpsOnDerivedTypesOfOneBasicType) {
  // A vector of doubles: the op touches only the vector's elements.
  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(2, 2, 3, MPI_DOUBLE, &raw));
  Owned v(raw);
  std::vector<double> in(10), io(10, 100.0);
  std::iota(in.begin(), in.end(), 0.0);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(in.data(), io.data(), 2, v, MPI_SUM));
  // Element 0 covers 0 1 3 4; element 1 starts one extent (5 doubles) later: 5 6 8 9.
  EXPECT_EQ((std::vector<double>{100, 101, 100, 103, 104, 105, 106, 100, 108, 109}), io);

  // A contiguous run of pairs: MAXLOC applies pairwise.
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(2, MPI_2INT, &raw));
  Owned pairs(raw);
  std::vector<int> a = {5, 1, 0, 7}, b = {5, 0, 1, 8};
  EXPECT_EQ((std::vector<int>{5, 0, 1, 8}), reduce(MPI_MAXLOC, pairs, a, b));
}

TEST(Ops, UnsupportedCombinationsGiveErrOp) {
  double d[2] = {1, 2}, e[2] = {3, 4};
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_BAND, d, e, 2, MPI_DOUBLE));
  EXPECT_EQ(3.0, e[0]);  // untouched
  EXPECT_MPI_ERROR(MPI_ERR_OP, "MPI_Reduce_local", PMPI_Reduce_local(d, e, 2, MPI_DOUBLE, MPI_BAND));
  EXPECT_NE(std::string::npos, last_error.message.find("MPI_BAND"));
  EXPECT_NE(std::string::npos, last_error.message.find("MPI_DOUBLE"));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_SUM, d, e, 1, MPI_DOUBLE_INT));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_MINLOC, d, e, 1, MPI_DOUBLE));
  bool p = true, q = false;
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_MAX, &p, &q, 1, MPI_C_BOOL));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_SUM, d, e, 1, MPI_PACKED));
  // A struct of mixed basic types has no predefined op but MPI_REPLACE.
  Owned st(struct_type(false));
  S s1[1] = {{'a', 1, 2}}, s2[1] = {{'b', 3, 4}};
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_SUM, s1, s2, 1, st));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(MPI_OP_NULL, d, e, 1, MPI_DOUBLE));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(12345, d, e, 1, MPI_DOUBLE));
  EXPECT_MPI_ERROR(MPI_ERR_OP, "MPI_Reduce_local", PMPI_Reduce_local(d, e, 1, MPI_DOUBLE, MPI_OP_NULL));
  EXPECT_MPI_ERROR(MPI_ERR_COUNT, "MPI_Reduce_local", PMPI_Reduce_local(d, e, -1, MPI_DOUBLE, MPI_SUM));
  EXPECT_MPI_ERROR(MPI_ERR_TYPE, "MPI_Reduce_local", PMPI_Reduce_local(d, e, 1, MPI_DATATYPE_NULL, MPI_SUM));
}

// inout = in * 10 + inout: not commutative, so the argument order shows.
struct UserCall {
  int calls = 0;
  int len = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};
UserCall user_call;

void digits(void* in, void* inout, int* len, MPI_Datatype* type) {
  user_call.calls++;
  user_call.len = *len;
  user_call.type = *type;
  int n = *len * (*type == MPI_INT ? 1 : 2);
  for (int i = 0; i < n; ++i) static_cast<int*>(inout)[i] += 10 * static_cast<int*>(in)[i];
}

TEST(Ops, UserOpGetsTypedBuffersCountAndType) {
  MPI_Op op;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_create(&digits, 0, &op));
  EXPECT_GE(op, UCHARM_MPI_PREDEFINED_OPS);
  EXPECT_TRUE(ampi::op_valid(op));
  EXPECT_FALSE(ampi::op_commutative(op));
  int commute = -1;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_commutative(op, &commute));
  EXPECT_EQ(0, commute);

  user_call = {};
  std::vector<int> a = {1, 2, 3}, b = {4, 5, 6};
  EXPECT_EQ((std::vector<int>{14, 25, 36}), reduce(op, MPI_INT, a, b));
  EXPECT_EQ(1, user_call.calls);
  EXPECT_EQ(3, user_call.len);
  EXPECT_EQ(MPI_INT, user_call.type);

  MPI_Datatype raw;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(2, MPI_INT, &raw));
  Owned two(raw);
  user_call = {};
  std::vector<int> c = {1, 2, 3, 4}, d = {0, 0, 0, 0};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(c.data(), d.data(), 2, two, op));
  EXPECT_EQ((std::vector<int>{10, 20, 30, 40}), d);
  EXPECT_EQ(2, user_call.len);
  EXPECT_EQ(static_cast<MPI_Datatype>(two), user_call.type);

  MPI_Op commuting;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_create(&digits, 1, &commuting));
  EXPECT_NE(op, commuting);
  EXPECT_TRUE(ampi::op_commutative(commuting));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_free(&commuting));

  MPI_Op kept = op;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_free(&op));
  EXPECT_EQ(MPI_OP_NULL, op);
  EXPECT_FALSE(ampi::op_valid(kept));
  EXPECT_EQ(MPI_ERR_OP, ampi::op_apply(kept, a.data(), b.data(), 3, MPI_INT));
  EXPECT_MPI_ERROR(MPI_ERR_OP, "MPI_Op_free", PMPI_Op_free(&kept));
  MPI_Op sum = MPI_SUM;
  EXPECT_MPI_ERROR(MPI_ERR_OP, "MPI_Op_free", PMPI_Op_free(&sum));
  EXPECT_MPI_ERROR(MPI_ERR_ARG, "MPI_Op_create", PMPI_Op_create(nullptr, 1, &op));
}

TEST(Datatypes, RankTablesPackAndUnpack) {
  // Rank 7's types and ops through pup_types / pup_ops into fresh tables, as a move does.
  ampi::test_rank = 7;
  RankTables r7(7);
  MPI_Datatype vec, res, gone, dup;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_vector(3, 2, 4, MPI_INT, &vec));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_create_resized(vec, -4, 64, &res));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_commit(&res));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_contiguous(5, MPI_DOUBLE, &gone));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_commit(&gone));
  const MPI_Datatype held = gone;
  ampi::type_retain(held);  // a pending operation's
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_free(&gone));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_dup(res, &dup));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_set_name(dup, "dup of res"));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_set_name(MPI_INT, "rank 7's int"));
  MPI_Op op;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_create(&digits, 0, &op));

  auto pack_all = [&](std::vector<char>& buf) {
    PUP::er s = PUP::er::sizer();
    ampi::pup_types(s, *r7.types);
    ampi::pup_ops(s, *r7.ops);
    buf.resize(s.size());
    PUP::er p = PUP::er::packer(buf.data(), buf.size());
    ampi::pup_types(p, *r7.types);
    ampi::pup_ops(p, *r7.ops);
  };
  std::vector<char> before, after;
  pack_all(before);
  RankTables fresh(7);  // takes over rank 7's handles, empty
  EXPECT_FALSE(ampi::type_valid(res));
  PUP::er u = PUP::er::unpacker(before.data(), before.size());
  ampi::pup_types(u, *fresh.types);
  ampi::pup_ops(u, *fresh.ops);
  EXPECT_EQ(before.size(), u.size());
  r7.types = std::move(fresh.types);
  r7.ops = std::move(fresh.ops);
  pack_all(after);
  EXPECT_EQ(before, after);  // nothing lost, nothing added

  EXPECT_TRUE(ampi::type_committed(res));
  EXPECT_FALSE(ampi::type_committed(vec));
  EXPECT_EQ(24u, ampi::type_size(res));
  EXPECT_EQ(64, ampi::type_extent(res));
  EXPECT_EQ(-4, ampi::type_lb(res));
  int ni, na, nd, comb;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_envelope(dup, &ni, &na, &nd, &comb));
  EXPECT_EQ(MPI_COMBINER_DUP, comb);
  int ints[1];
  MPI_Aint addrs[1];
  MPI_Datatype types[1];
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_contents(dup, 0, 0, 1, ints, addrs, types));
  EXPECT_EQ(ampi::type_extent(res), ampi::type_extent(types[0]));  // a new handle of res's type
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_free(&types[0]));
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_name(dup, name, &len));
  EXPECT_STREQ("dup of res", name);
  ASSERT_EQ(MPI_SUCCESS, PMPI_Type_get_name(MPI_INT, name, &len));
  EXPECT_STREQ("rank 7's int", name);
  EXPECT_FALSE(ampi::type_valid(held));  // freed, still held: answered, then gone
  EXPECT_TRUE(ampi::type_freed(held));
  EXPECT_EQ(40u, ampi::type_size(held));
  ampi::type_release(held);
  EXPECT_EQ(0u, ampi::type_size(held));
  int a[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_EQ((std::vector<int>{0, 1, 4, 5, 8, 9}), pack<int>(a, 1, res));
  std::vector<int> x = {1, 2}, y = {3, 4};
  user_call = {};
  ASSERT_EQ(MPI_SUCCESS, PMPI_Reduce_local(x.data(), y.data(), 2, MPI_INT, op));
  EXPECT_EQ(1, user_call.calls);
  EXPECT_FALSE(ampi::op_commutative(op));
  ASSERT_EQ(MPI_SUCCESS, PMPI_Op_free(&op));
  for (MPI_Datatype* t : {&vec, &res, &dup}) ASSERT_EQ(MPI_SUCCESS, PMPI_Type_free(t));
  ampi::test_rank = 0;
}

}  // namespace
