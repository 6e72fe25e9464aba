// MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size for "external32"
// (MPI 3.1 §13.5.2): every basic element big-endian in a fixed size (MPI_LONG: 4 bytes,
// long double: IEEE binary128), whatever the host's layout.
#include "datatype/type.h"
#include "checks.h"

#include <array>
#include <cstring>
#include <limits>

namespace ampi::dt {
namespace {

// One field of a basic element: where it sits in memory, its native and external32 sizes,
// how it converts.
enum class Kind : unsigned char { Byte, Signed, Unsigned, Real, LongDouble };
struct Field {
  std::uint8_t at = 0, native = 0, ext = 0;
  Kind kind = Kind::Byte;
};
struct Form {
  Field f[2];
  int n = 0;  // fields; 0: no external32 form (MPI_UB, MPI_LB)
  std::size_t ext() const { return n == 0 ? 0 : f[0].ext + (n > 1 ? f[1].ext : 0); }
};

constexpr Form one(Kind k, std::size_t native, std::size_t ext) {
  Form r;
  r.f[0] = Field{0, static_cast<std::uint8_t>(native), static_cast<std::uint8_t>(ext), k};
  r.n = 1;
  return r;
}
// Two fields: a complex number's parts, a pair's value and index.
constexpr Form two(Kind k1, std::size_t n1, std::size_t e1, std::size_t at2, Kind k2, std::size_t n2, std::size_t e2) {
  Form r = one(k1, n1, e1);
  r.f[1] = Field{static_cast<std::uint8_t>(at2), static_cast<std::uint8_t>(n2), static_cast<std::uint8_t>(e2), k2};
  r.n = 2;
  return r;
}
template <class V>
constexpr Form pair_form(Kind k, std::size_t ext) {
  return two(k, sizeof(V), ext, offsetof(PairOf<V>, index), Kind::Signed, sizeof(int), 4);
}
template <class V>
constexpr Form complex_form(Kind k, std::size_t ext) {
  return two(k, sizeof(V), ext, sizeof(V), k, sizeof(V), ext);
}
template <class V>
constexpr Form twice_form(Kind k, std::size_t ext) {
  return two(k, sizeof(V), ext, sizeof(V), k, sizeof(V), ext);
}

constexpr std::array<Form, kPredefined> make_forms() {
  using K = Kind;
  std::array<Form, kPredefined> t{};
  for (MPI_Datatype b : {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_PACKED, MPI_C_BOOL, MPI_CXX_BOOL,
                         MPI_CHARACTER})
    t[b] = one(K::Byte, 1, 1);
  for (MPI_Datatype b : {MPI_SHORT, MPI_INT16_T, MPI_INTEGER2}) t[b] = one(K::Signed, 2, 2);
  for (MPI_Datatype b : {MPI_INT, MPI_INT32_T, MPI_INTEGER, MPI_INTEGER4, MPI_LOGICAL}) t[b] = one(K::Signed, 4, 4);
  for (MPI_Datatype b : {MPI_LONG_LONG_INT, MPI_INT64_T, MPI_INTEGER8, MPI_AINT, MPI_OFFSET, MPI_COUNT})
    t[b] = one(K::Signed, 8, 8);
  t[MPI_INT8_T] = t[MPI_INTEGER1] = one(K::Signed, 1, 1);
  t[MPI_UINT8_T] = one(K::Unsigned, 1, 1);
  t[MPI_UNSIGNED_SHORT] = t[MPI_UINT16_T] = one(K::Unsigned, 2, 2);
  t[MPI_UNSIGNED] = t[MPI_UINT32_T] = one(K::Unsigned, 4, 4);
  t[MPI_UNSIGNED_LONG_LONG] = t[MPI_UINT64_T] = one(K::Unsigned, 8, 8);
  t[MPI_LONG] = one(K::Signed, sizeof(long), 4);  // external32 longs are 4 bytes
  t[MPI_UNSIGNED_LONG] = one(K::Unsigned, sizeof(unsigned long), 4);
  t[MPI_WCHAR] = one(K::Unsigned, sizeof(wchar_t), 4);
  for (MPI_Datatype b : {MPI_FLOAT, MPI_REAL, MPI_REAL4}) t[b] = one(K::Real, 4, 4);
  for (MPI_Datatype b : {MPI_DOUBLE, MPI_DOUBLE_PRECISION, MPI_REAL8}) t[b] = one(K::Real, 8, 8);
  t[MPI_LONG_DOUBLE] = one(K::LongDouble, sizeof(long double), 16);
  for (MPI_Datatype b : {MPI_C_FLOAT_COMPLEX, MPI_COMPLEX, MPI_COMPLEX8, MPI_CXX_FLOAT_COMPLEX})
    t[b] = complex_form<float>(K::Real, 4);
  for (MPI_Datatype b : {MPI_C_DOUBLE_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_COMPLEX16, MPI_CXX_DOUBLE_COMPLEX})
    t[b] = complex_form<double>(K::Real, 8);
  t[MPI_C_LONG_DOUBLE_COMPLEX] = t[MPI_CXX_LONG_DOUBLE_COMPLEX] = complex_form<long double>(K::LongDouble, 16);
  t[MPI_FLOAT_INT] = pair_form<float>(K::Real, 4);
  t[MPI_DOUBLE_INT] = pair_form<double>(K::Real, 8);
  t[MPI_LONG_INT] = pair_form<long>(K::Signed, 4);
  t[MPI_2INT] = pair_form<int>(K::Signed, 4);
  t[MPI_SHORT_INT] = pair_form<short>(K::Signed, 2);
  t[MPI_LONG_DOUBLE_INT] = pair_form<long double>(K::LongDouble, 16);
  t[MPI_2REAL] = twice_form<float>(K::Real, 4);
  t[MPI_2DOUBLE_PRECISION] = twice_form<double>(K::Real, 8);
  t[MPI_2INTEGER] = twice_form<int>(K::Signed, 4);
  return t;
}
constexpr std::array<Form, kPredefined> kForms = make_forms();

static_assert(std::numeric_limits<long double>::digits == 64, "x87 80-bit long double expected");

// Big-endian bytes of the low `n` bytes of v.
void put_be(char* out, std::uint64_t v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[n - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint64_t get_be(const char* in, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}
std::uint64_t load_native(const char* p, std::size_t n) {  // little-endian host (x86-64)
  std::uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

// x87 80-bit (64-bit mantissa with its integer bit, 15-bit exponent) <-> binary128 (the same
// exponent and bias, 112-bit fraction): the fraction's top 63 bits are the mantissa's.
void ld_to_ext(const char* p, char* out) {
  std::uint64_t mant;
  std::uint16_t se;
  std::memcpy(&mant, p, 8);
  std::memcpy(&se, p + 8, 2);
  const std::uint64_t frac = mant & ~(std::uint64_t{1} << 63);
  put_be(out, (std::uint64_t{se} << 48) | (frac >> 15), 8);
  put_be(out + 8, frac << 49, 8);
}
void ld_from_ext(const char* in, char* p) {
  const std::uint64_t hi = get_be(in, 8), lo = get_be(in + 8, 8);
  const auto se = static_cast<std::uint16_t>(hi >> 48);
  std::uint64_t mant = ((hi & 0xffffffffffffULL) << 15) | (lo >> 49);
  if ((se & 0x7fff) != 0) mant |= std::uint64_t{1} << 63;  // normal, infinity, NaN
  std::memset(p, 0, sizeof(long double));
  std::memcpy(p, &mant, 8);
  std::memcpy(p + 8, &se, 2);
}

void to_ext(const Field& f, const char* p, char* out) {
  switch (f.kind) {
    case Kind::Byte: *out = *p; return;
    case Kind::LongDouble: ld_to_ext(p, out); return;
    default: put_be(out, load_native(p, f.native), f.ext); return;  // a longer native value is cut
  }
}
void from_ext(const Field& f, const char* in, char* p) {
  switch (f.kind) {
    case Kind::Byte: *p = *in; return;
    case Kind::LongDouble: ld_from_ext(in, p); return;
    default: {
      std::uint64_t v = get_be(in, f.ext);
      if (f.kind == Kind::Signed && f.native > f.ext && (v >> (8 * f.ext - 1)) & 1)
        v |= ~std::uint64_t{0} << (8 * f.ext);  // sign-extend a 4-byte long
      std::memcpy(p, &v, f.native);
    }
  }
}

// Walks the basic elements of `count` t's at `buf`, converting each to or from `ext`.
struct Walk {
  std::uintptr_t base;
  char* ext;
  bool pack;
};
void walk(void* ctx, std::ptrdiff_t off, std::size_t n, std::size_t reps, std::ptrdiff_t stride, MPI_Datatype b) {
  auto* w = static_cast<Walk*>(ctx);
  const Form& form = kForms[b];
  const std::ptrdiff_t unit = item_unit(b);
  for (std::size_t r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      char* e = at(w->base, off + static_cast<std::ptrdiff_t>(r) * stride + static_cast<std::ptrdiff_t>(i) * unit);
      for (int k = 0; k < form.n; ++k) {
        const Field& f = form.f[k];
        if (w->pack)
          to_ext(f, e + f.at, w->ext);
        else
          from_ext(f, w->ext, e + f.at);
        w->ext += f.ext;
      }
    }
}

void add_size(void* ctx, std::ptrdiff_t, std::size_t n, std::size_t reps, std::ptrdiff_t, MPI_Datatype b) {
  *static_cast<std::size_t*>(ctx) += n * reps * kForms[b].ext();
}

// The checks every external call shares; `bytes`: what `count` t's take in external32.
int check_external(const char* fn, const char* datarep, int count, MPI_Datatype t, std::size_t* bytes) {
  if (!datarep) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "datarep is a null pointer");
  if (std::strcmp(datarep, "external32") != 0)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "data representation \"%s\" is not supported (only \"external32\")",
                 datarep);
  if (count < 0) return error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "count is negative (%d)", count);
  if (int rc = check_committed(MPI_COMM_WORLD, fn, "datatype", t)) return rc;
  std::size_t one = 0;
  type_for_each_run(t, 1, add_size, &one);
  *bytes = one * static_cast<std::size_t>(count);
  return MPI_SUCCESS;
}

int check_room(const char* fn, const void* buf, MPI_Aint size, const MPI_Aint* position, std::size_t bytes,
               const char* buf_name, const char* size_name) {
  if (!position) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "position is a null pointer");
  if (size < 0 || *position < 0 || *position > size)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "position %ld is outside the buffer of %s %ld",
                 static_cast<long>(*position), size_name, static_cast<long>(size));
  const auto left = static_cast<std::size_t>(size - *position);
  if (bytes > left)
    return error(MPI_COMM_WORLD, MPI_ERR_TRUNCATE, fn, "the data take %zu bytes in external32; only %zu are left in %s",
                 bytes, left, buf_name);
  if (bytes > 0 && !buf) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "%s is a null pointer", buf_name);
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi::dt

using namespace ampi;
using namespace ampi::dt;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype, MPI_Aint* size) {
  const char* fn = "MPI_Pack_external_size";
  std::size_t bytes = 0;
  if (int rc = check_external(fn, datarep, incount, datatype, &bytes)) return rc;
  if (!size) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "size is a null pointer");
  *size = static_cast<MPI_Aint>(bytes);
  return MPI_SUCCESS;
}

int PMPI_Pack_external(const char datarep[], const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf,
                       MPI_Aint outsize, MPI_Aint* position) {
  const char* fn = "MPI_Pack_external";
  std::size_t bytes = 0;
  if (int rc = check_external(fn, datarep, incount, datatype, &bytes)) return rc;
  if (int rc = check_room(fn, outbuf, outsize, position, bytes, "outbuf", "outsize")) return rc;
  Walk w{reinterpret_cast<std::uintptr_t>(inbuf), static_cast<char*>(outbuf) + *position, true};
  type_for_each_run(datatype, incount, walk, &w);
  *position += static_cast<MPI_Aint>(bytes);
  return MPI_SUCCESS;
}

int PMPI_Unpack_external(const char datarep[], const void* inbuf, MPI_Aint insize, MPI_Aint* position, void* outbuf,
                         int outcount, MPI_Datatype datatype) {
  const char* fn = "MPI_Unpack_external";
  std::size_t bytes = 0;
  if (int rc = check_external(fn, datarep, outcount, datatype, &bytes)) return rc;
  if (int rc = check_room(fn, inbuf, insize, position, bytes, "inbuf", "insize")) return rc;
  Walk w{reinterpret_cast<std::uintptr_t>(outbuf), const_cast<char*>(static_cast<const char*>(inbuf)) + *position,
         false};
  type_for_each_run(datatype, outcount, walk, &w);
  *position += static_cast<MPI_Aint>(bytes);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
